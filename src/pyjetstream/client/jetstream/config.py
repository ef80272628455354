"""The stream and consumer configs as the Python API takes them (durations in seconds).

``StreamConfig`` is `pyjetstream.client.jetstream.models.StreamConfig`;
``ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT, ack_wait=30)`` builds a
`pyjetstream.client.jetstream.models.ConsumerConfig`, taking ``durable`` for the wire's
``durable_name`` (nats.go's field name). Every duration is seconds — an ``int``, a ``float`` or
a ``timedelta`` — and reads back as seconds (`pyjetstream.api.durations`); times take a
``datetime``. ``isinstance(x, ConsumerConfig)`` is true for the model's instances.
"""

from __future__ import annotations

from typing import Any

from pyjetstream.client.jetstream import models

StreamConfig = models.StreamConfig


class _ModelFactory(type):
    """Metaclass: calling the class builds the model; isinstance/attributes defer to it."""

    _model: type
    _aliases: dict[str, str]

    def __call__(cls, **fields: Any) -> Any:
        for alias, wire_name in cls._aliases.items():
            value = fields.pop(alias, None)
            if value is not None:
                if fields.get(wire_name, value) != value:
                    raise ValueError(f"{alias} and {wire_name} differ")
                fields[wire_name] = value
        return cls._model(**fields)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls._model)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls._model)

    def __getattr__(cls, name: str) -> Any:
        return getattr(cls._model, name)


class ConsumerConfig(metaclass=_ModelFactory):
    """Build a `pyjetstream.client.jetstream.models.ConsumerConfig` (``durable=`` accepted;
    durations in seconds or ``timedelta``)."""

    _model = models.ConsumerConfig
    _aliases = {"durable": "durable_name"}


__all__ = ["ConsumerConfig", "StreamConfig"]
