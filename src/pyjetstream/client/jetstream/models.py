"""The configs and infos as the Python API has them: every duration in seconds.

These are the wire models of `pyjetstream.api` (same fields, same order, same JSON) with
each duration field typed `pyjetstream.api.durations.Seconds` instead of integer
nanoseconds. A user builds them with seconds (``int`` or ``float``) or a ``timedelta`` —
``StreamConfig(name="S", max_age=60)``, ``ConsumerConfig(ack_wait=timedelta(seconds=30))`` — and
reads seconds back (``info.config.max_age == 60.0``); the JSON codec writes integer
nanoseconds. The client sends a wire model as it is (the CLI builds those from Go duration
flags) and returns these for every stream, consumer and pause it reports.

The duration fields, by model (the one list; the docs' config reference reads it):
`DURATION_FIELDS`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import msgspec

from pyjetstream.api import codec, models_common, models_consumer, models_stream, responses
from pyjetstream.api._wire import always, always_new
from pyjetstream.api.durations import Seconds
from pyjetstream.api.enums import AckPolicy
from pyjetstream.api.timefmt import NanoTime

if TYPE_CHECKING:
    Secs = float  # a type checker sees seconds as float (Seconds is one)
else:
    Secs = Seconds

__all__ = [
    "DURATION_FIELDS",
    "ClusterInfo",
    "ConsumerConfig",
    "ConsumerInfo",
    "ConsumerPauseResponse",
    "DesiredClusterInfo",
    "PeerInfo",
    "StreamConfig",
    "StreamConsumerLimits",
    "StreamInfo",
    "StreamSourceInfo",
    "from_wire",
    "normalize",
    "to_wire",
]

_ZERO = Seconds.from_ns(0)
T = TypeVar("T")


class _SecondsModel:
    """``__post_init__`` makes every duration field a `Seconds` (from seconds or a
    ``timedelta``) and every time field a `NanoTime` (from a ``datetime``)."""

    __slots__ = ()
    _DURATIONS: ClassVar[tuple[str, ...]] = ()
    _DURATION_LISTS: ClassVar[tuple[str, ...]] = ()
    _TIMES: ClassVar[tuple[str, ...]] = ()
    _NESTED: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        normalize(self)


def normalize(model: Any) -> None:
    """Make ``model``'s durations `Seconds` again (a field may have been set to a plain
    number of seconds since it was built); the client calls it before encoding."""
    for name in model._DURATIONS:
        value = getattr(model, name)
        if type(value) is not Seconds:
            setattr(model, name, Seconds(value))
    for name in model._DURATION_LISTS:
        values = getattr(model, name)
        if any(type(v) is not Seconds for v in values):
            setattr(model, name, [Seconds(v) for v in values])
    for name in model._TIMES:
        value = getattr(model, name)
        if isinstance(value, datetime):
            setattr(model, name, NanoTime.from_datetime(value))
    for name in model._NESTED:  # a wire model given for a part: its ints are ns, as the wire's
        value = getattr(model, name)
        if type(value) in _SECONDS_OF:
            setattr(model, name, from_wire(value))


# --- streams ---------------------------------------------------------------------------------------


class StreamConsumerLimits(_SecondsModel, models_stream.StreamConsumerLimits):
    """Defaults for the stream's consumers; ``inactive_threshold`` in seconds."""

    _DURATIONS = ("inactive_threshold",)

    inactive_threshold: Secs = _ZERO  # type: ignore[assignment]


class StreamConfig(_SecondsModel, models_stream.StreamConfig):
    """A stream's configuration (nats-server ``StreamConfig``); ``max_age``, ``duplicate_window``
    and ``subject_delete_marker_ttl`` in seconds (an ``int``, a ``float`` or a ``timedelta``)."""

    _DURATIONS = ("max_age", "duplicate_window", "subject_delete_marker_ttl")
    _NESTED = ("consumer_limits",)

    max_age: Secs = always(_ZERO)  # type: ignore[assignment]
    duplicate_window: Secs = _ZERO  # type: ignore[assignment]
    consumer_limits: StreamConsumerLimits = always_new(StreamConsumerLimits)
    subject_delete_marker_ttl: Secs = _ZERO  # type: ignore[assignment]


class StreamSourceInfo(_SecondsModel, models_stream.StreamSourceInfo):
    """A mirror's or source's progress; ``active``: seconds since it was last heard from (-1: never)."""

    _DURATIONS = ("active",)

    active: Secs = always(_ZERO)  # type: ignore[assignment]


class PeerInfo(_SecondsModel, models_common.PeerInfo):
    """A replica; ``active``: seconds since it was last seen."""

    _DURATIONS = ("active",)

    active: Secs = always(_ZERO)  # type: ignore[assignment]


class DesiredClusterInfo(models_common.DesiredClusterInfo):
    replicas: list[PeerInfo] = []  # type: ignore[assignment]


class ClusterInfo(models_common.ClusterInfo):
    replicas: list[PeerInfo] = []  # type: ignore[assignment]
    desired: DesiredClusterInfo | None = None


class StreamInfo(models_stream.StreamInfo):
    """A stream's configuration and state, durations in seconds."""

    config: StreamConfig = always_new(StreamConfig)
    cluster: ClusterInfo | None = None
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] = []  # type: ignore[assignment]


# --- consumers -------------------------------------------------------------------------------------


class ConsumerConfig(_SecondsModel, models_consumer.ConsumerConfig):
    """A consumer's configuration (nats-server ``ConsumerConfig``); ``ack_wait``, ``backoff``,
    ``max_expires``, ``idle_heartbeat``, ``inactive_threshold`` and ``priority_timeout`` in
    seconds (an ``int``, a ``float`` or a ``timedelta``); ``opt_start_time`` and ``pause_until``
    take a ``datetime``.

    ``ack_policy`` defaults to ``explicit``, as in nats.go's ``jetstream`` package (its
    ``AckExplicitPolicy`` is the zero value) and nats-py, so ``msg.ack()`` counts unless the
    consumer asks for ``none``; the server's own default (a request without the field, the wire
    model `pyjetstream.api.ConsumerConfig`) stays ``none``. Ordered consumers are ``none``."""

    _DURATIONS = ("ack_wait", "max_expires", "idle_heartbeat", "inactive_threshold", "priority_timeout")
    _DURATION_LISTS = ("backoff",)
    _TIMES = ("opt_start_time", "pause_until")

    ack_policy: AckPolicy = always(AckPolicy.EXPLICIT)
    ack_wait: Secs = _ZERO  # type: ignore[assignment]
    backoff: list[Secs] = []  # type: ignore[assignment]
    max_expires: Secs = _ZERO  # type: ignore[assignment]
    idle_heartbeat: Secs = _ZERO  # type: ignore[assignment]
    inactive_threshold: Secs = _ZERO  # type: ignore[assignment]
    priority_timeout: Secs = _ZERO  # type: ignore[assignment]


class ConsumerInfo(_SecondsModel, models_consumer.ConsumerInfo):
    """A consumer's configuration and state; ``pause_remaining`` in seconds."""

    _DURATIONS = ("pause_remaining",)

    config: ConsumerConfig = always_new(ConsumerConfig)
    cluster: ClusterInfo | None = None
    pause_remaining: Secs = _ZERO  # type: ignore[assignment]


class ConsumerPauseResponse(_SecondsModel, responses.ConsumerPauseResponse):
    """The answer to a pause or resume: ``paused``, ``pause_until``, ``pause_remaining`` (seconds)."""

    _DURATIONS = ("pause_remaining",)

    pause_remaining: Secs = _ZERO  # type: ignore[assignment]


DURATION_FIELDS: dict[str, tuple[str, ...]] = {
    cls.__name__: cls._DURATIONS + cls._DURATION_LISTS
    for cls in (
        StreamConfig,
        StreamConsumerLimits,
        StreamSourceInfo,
        PeerInfo,
        ConsumerConfig,
        ConsumerInfo,
        ConsumerPauseResponse,
    )
}
"""Every duration field of the models, by model name: seconds in Python, integer ns on the wire."""

_SECONDS_OF: dict[type, type] = {
    models_stream.StreamConsumerLimits: StreamConsumerLimits,
    models_stream.StreamConfig: StreamConfig,
    models_stream.StreamInfo: StreamInfo,
    models_consumer.ConsumerConfig: ConsumerConfig,
    models_consumer.ConsumerInfo: ConsumerInfo,
    responses.ConsumerPauseResponse: ConsumerPauseResponse,
}


# Off: `from_wire` takes the general path only (the differential test compares the two).
FROM_ATTRIBUTES = True


def from_wire(model: Any) -> Any:
    """A wire model (durations in ns) as its seconds model; one already in seconds as it is.

    Read attribute by attribute (``msgspec.convert(from_attributes=True)``): the general path, the
    model to builtins and back, formats every time as RFC 3339 and parses it again, ~60% of the
    client's CPU for a stream listing (bench/bench_client_scale.py ``--dim listing``). A model
    that path cannot take goes the general way."""
    target = _SECONDS_OF.get(type(model))
    if target is None:
        return model
    if FROM_ATTRIBUTES:
        try:
            return msgspec.convert(model, target, from_attributes=True, dec_hook=_from_attribute)
        except msgspec.ValidationError:
            pass
    return codec.convert(codec.to_builtins(model), target)


def _from_attribute(tp: type, value: Any) -> Any:
    """A wire model's value for a seconds model's field: a time as it is, integer ns as `Seconds`
    (zero as the models' own zero default, so an encoder that leaves defaults out still does)."""
    if type(value) is tp:
        return value
    if tp is Seconds and type(value) is int:
        return _ZERO if value == 0 else Seconds.from_ns(value)
    raise TypeError(f"cannot convert {type(value).__name__} to {tp}")  # msgspec: a ValidationError


def to_wire(model: T) -> T:
    """What the client encodes: a seconds model with its durations made `Seconds` (the
    codec writes their ns); a wire model as it is."""
    if isinstance(model, msgspec.Struct):
        for name in model.__struct_fields__:
            value = getattr(model, name)
            if isinstance(value, _SecondsModel):
                to_wire(value)
        if isinstance(model, _SecondsModel):
            normalize(model)
    return model
