"""Friendlier constructors for the shared config models (they return the models themselves).

``ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT, ack_wait=timedelta(seconds=30))``
builds a `pyjetstream.api.ConsumerConfig`: ``durable`` is accepted for the wire's
``durable_name`` (nats.go's field name), and duration fields accept a ``timedelta`` as well as int
nanoseconds; times accept a ``datetime``. ``StreamConfig`` does the same for the stream model.
``isinstance(x, ConsumerConfig)`` is true for the shared model's instances.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from pyjetstream.api import models_consumer, models_stream
from pyjetstream.api.timefmt import NanoTime, timedelta_to_ns

_CONSUMER_DURATIONS = frozenset(
    {"ack_wait", "max_expires", "idle_heartbeat", "inactive_threshold", "priority_timeout"}
)
_STREAM_DURATIONS = frozenset({"max_age", "duplicate_window", "subject_delete_marker_ttl"})
_TIMES = frozenset({"opt_start_time", "pause_until"})


def _convert(fields: dict[str, Any], durations: frozenset[str]) -> dict[str, Any]:
    for key, value in fields.items():
        if key in durations and isinstance(value, timedelta):
            fields[key] = timedelta_to_ns(value)
        elif key == "backoff" and value:
            fields[key] = [timedelta_to_ns(v) if isinstance(v, timedelta) else v for v in value]
        elif key in _TIMES and isinstance(value, datetime):
            fields[key] = NanoTime.from_datetime(value)
    return fields


class _ModelFactory(type):
    """Metaclass: calling the class builds the shared model; isinstance/attributes defer to it."""

    _model: type
    _durations: frozenset[str]
    _aliases: dict[str, str]

    def __call__(cls, **fields: Any) -> Any:
        for alias, wire_name in cls._aliases.items():
            value = fields.pop(alias, None)
            if value is not None:
                if fields.get(wire_name, value) != value:
                    raise ValueError(f"{alias} and {wire_name} differ")
                fields[wire_name] = value
        return cls._model(**_convert(fields, cls._durations))

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._model)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._model)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._model, name)


class ConsumerConfig(metaclass=_ModelFactory):
    """Build a `pyjetstream.api.ConsumerConfig` (``durable=`` and ``timedelta`` accepted)."""

    _model = models_consumer.ConsumerConfig
    _durations = _CONSUMER_DURATIONS
    _aliases = {"durable": "durable_name"}


class StreamConfig(metaclass=_ModelFactory):
    """Build a `pyjetstream.api.StreamConfig` (``timedelta`` accepted for durations)."""

    _model = models_stream.StreamConfig
    _durations = _STREAM_DURATIONS
    _aliases: dict[str, str] = {}


__all__ = ["ConsumerConfig", "StreamConfig"]
