"""Durations in the Python API: seconds (int or float) or a ``timedelta`` in, seconds out;
integer nanoseconds on the wire.

Go marshals ``time.Duration`` as integer nanoseconds, and the wire models
(`models_stream`, `models_consumer`) keep those ints: the server computes with them,
to the nanosecond, as nats-server does. The Python API — the configs a user builds, the infos
the client returns, every call that takes a wait or an age — speaks seconds, as nats-py does:
``ConsumerConfig(ack_wait=30)`` is thirty seconds, ``ack_wait=timedelta(seconds=30)`` the same,
and ``info.config.ack_wait`` reads back ``30.0``.

This module is the one place that converts: `to_ns` on the way to the wire (exact for
ints and timedeltas, rounded to the nearest ns for floats) and `Seconds.from_ns` on the
way back. A duration read back is a `Seconds`: a ``float`` of seconds that keeps its
exact nanoseconds, so a config read from a server and sent back (``update_stream(info.config)``)
carries exactly what the server holds, even where a float of seconds could not say it.
"""

from __future__ import annotations

import math
from datetime import timedelta
from typing import TypeAlias

from .timefmt import NS_PER_S, ns_to_timedelta, timedelta_to_ns

__all__ = ["Duration", "Seconds", "seconds", "seconds_or_none", "to_ns"]

Duration: TypeAlias = float | timedelta
"""What a duration may be given as: seconds (an ``int`` or a ``float``) or a ``timedelta``."""


class Seconds(float):
    """A duration in seconds that remembers its exact nanoseconds (``.ns``).

    It is a ``float`` (``Seconds(30) == 30``, arithmetic gives plain floats); ``.timedelta``
    gives it as a ``timedelta`` (to the microsecond). Build one from any `Duration`
    (``Seconds(1.5)``, ``Seconds(timedelta(minutes=2))``) or from nanoseconds
    (``Seconds.from_ns(1_500_000_000)``).
    """

    __slots__ = ("ns",)
    ns: int

    def __new__(cls, value: Duration = 0) -> Seconds:
        return cls.from_ns(to_ns(value))

    @classmethod
    def from_ns(cls, ns: int) -> Seconds:
        """The duration of ``ns`` nanoseconds (as the wire has it)."""
        self = float.__new__(cls, ns / NS_PER_S)
        self.ns = int(ns)
        return self

    @property
    def timedelta(self) -> timedelta:
        """As a ``timedelta`` (sub-microsecond digits truncated)."""
        return ns_to_timedelta(self.ns)

    def __reduce__(self) -> tuple[object, tuple[int]]:
        return (Seconds.from_ns, (self.ns,))


def to_ns(value: Duration) -> int:
    """A duration as the wire has it: integer nanoseconds.

    ``int`` seconds and ``timedelta`` convert exactly, a ``float`` to the nearest nanosecond, a
    `Seconds` gives back its own nanoseconds. Anything else (a ``bool``, a string, NaN or
    an infinity) is refused: a duration given in the wrong unit must not pass silently.
    """
    if isinstance(value, Seconds):
        return value.ns
    if isinstance(value, bool):
        raise TypeError(f"a duration is seconds (int or float) or a timedelta, not {value!r}")
    if isinstance(value, int):
        return value * NS_PER_S
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"not a duration: {value!r}")
        return round(value * NS_PER_S)
    if isinstance(value, timedelta):
        return timedelta_to_ns(value)
    raise TypeError(f"a duration is seconds (int or float) or a timedelta, not {type(value).__name__} {value!r}")


#: (a tuple: ``int | float`` would build a union object at each call, and `seconds` runs at each
#: ``next()`` of a message iterator)
_NUMBERS = (int, float)


def seconds(value: Duration) -> float:
    """A duration as a plain ``float`` of seconds (for waits and timeouts on this side)."""
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, _NUMBERS):
        raise TypeError(f"a duration is seconds (int or float) or a timedelta, not {type(value).__name__} {value!r}")
    return float(value)


def seconds_or_none(value: Duration | None) -> float | None:
    """`seconds`, with ``None`` (no limit, or the default) kept."""
    return None if value is None else seconds(value)
