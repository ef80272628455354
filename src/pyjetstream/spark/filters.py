"""Filter pushdown: turn Spark's filters on the message columns into read bounds.

- ``subject`` = / IN / STARTSWITH('a.b.') become consumer filter subjects (exact: Spark does
  not re-check them);
- ``sequence`` comparisons, = and IN narrow the sequence range (exact, except IN which only
  bounds the range and is re-checked by Spark);
- ``timestamp`` comparisons narrow the range through the stream's time index (the server
  finds the first message at or after a time); Spark re-checks them, as store times are µs
  in Spark but ns in the stream;
- ``stream`` = other than the configured stream makes the read empty.

Everything else stays with Spark.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql.datasource import (
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.spark.options import datetime_to_ns

__all__ = ["ReadBounds", "push_filters"]


@dataclass
class ReadBounds:
    """What the filters leave to read: sequences ``first_seq..last_seq``, store times
    ``[start_time_ns, end_time_ns)`` and the filter subjects (``None``: those of the options)."""

    first_seq: int = 1
    last_seq: int | None = None
    start_time_ns: int | None = None
    end_time_ns: int | None = None  # exclusive
    subjects: tuple[str, ...] | None = None
    empty: bool = False
    pushed: list[str] = field(default_factory=list)

    def at_least_seq(self, seq: int) -> None:
        self.first_seq = max(self.first_seq, seq)

    def at_most_seq(self, seq: int) -> None:
        self.last_seq = seq if self.last_seq is None else min(self.last_seq, seq)

    def from_time(self, ns: int) -> None:
        self.start_time_ns = ns if self.start_time_ns is None else max(self.start_time_ns, ns)

    def before_time(self, ns: int) -> None:
        self.end_time_ns = ns if self.end_time_ns is None else min(self.end_time_ns, ns)

    def only_subjects(self, subjects: Iterable[str]) -> None:
        wanted = tuple(dict.fromkeys(subjects))
        if self.subjects is not None:
            wanted = tuple(s for s in wanted if any(subject_matches(p, s) for p in self.subjects))
        self.subjects = wanted
        if not wanted:
            self.empty = True


def _us(value: datetime) -> int:
    """A Spark timestamp filter value as whole microseconds."""
    return datetime_to_ns(value) // 1000


def push_filters(
    filters: list[Filter], stream: str, option_subjects: tuple[str, ...], bounds: ReadBounds
) -> list[Filter]:
    """Apply what can be applied to ``bounds``; return the filters Spark must still evaluate."""
    if option_subjects:
        bounds.subjects = option_subjects
    remaining: list[Filter] = []
    for flt in filters:
        attribute: tuple[str, ...] = getattr(flt, "attribute", ())  # every pyspark Filter has one
        column = attribute[0] if len(attribute) == 1 else None
        if column == "subject" and _push_subject(flt, bounds, bool(option_subjects)):
            bounds.pushed.append(repr(flt))
            continue
        if column == "sequence":
            exact = _push_sequence(flt, bounds)
            if exact is not None:
                bounds.pushed.append(repr(flt))
                if exact:
                    continue
        if column == "timestamp" and _push_timestamp(flt, bounds):
            bounds.pushed.append(repr(flt))
        if column == "stream" and isinstance(flt, EqualTo):
            if flt.value != stream:
                bounds.empty = True
            bounds.pushed.append(repr(flt))
            continue
        remaining.append(flt)
    return remaining


def _push_subject(flt: Filter, bounds: ReadBounds, has_option_subjects: bool) -> bool:
    if isinstance(flt, EqualTo) and isinstance(flt.value, str):
        bounds.only_subjects([flt.value])
        return True
    if isinstance(flt, In) and all(isinstance(v, str) for v in flt.value):
        bounds.only_subjects(flt.value)
        return True
    if (
        isinstance(flt, StringStartsWith)
        and not has_option_subjects
        and bounds.subjects is None
        and flt.value.endswith(".")
        and len(flt.value) > 1
        and "*" not in flt.value
        and ">" not in flt.value
    ):
        # 'orders.' covers exactly the subjects 'orders.>' matches.
        bounds.subjects = (flt.value + ">",)
        return True
    return False


def _push_sequence(flt: Filter, bounds: ReadBounds) -> bool | None:
    """True: fully applied; False: bounds narrowed but Spark must re-check; None: not applied."""
    value = getattr(flt, "value", None)
    if isinstance(flt, In):
        seqs = [v for v in flt.value if isinstance(v, int)]
        if len(seqs) != len(flt.value) or not seqs:
            return None
        bounds.at_least_seq(min(seqs))
        bounds.at_most_seq(max(seqs))
        return False
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if isinstance(flt, EqualTo):
        bounds.at_least_seq(value)
        bounds.at_most_seq(value)
    elif isinstance(flt, GreaterThan):
        bounds.at_least_seq(value + 1)
    elif isinstance(flt, GreaterThanOrEqual):
        bounds.at_least_seq(value)
    elif isinstance(flt, LessThan):
        bounds.at_most_seq(value - 1)
    elif isinstance(flt, LessThanOrEqual):
        bounds.at_most_seq(value)
    else:
        return None
    return True


def _push_timestamp(flt: Filter, bounds: ReadBounds) -> bool:
    value = getattr(flt, "value", None)
    if not isinstance(value, datetime):
        return False
    us = _us(value)
    if isinstance(flt, GreaterThan):
        bounds.from_time((us + 1) * 1000)
    elif isinstance(flt, GreaterThanOrEqual):
        bounds.from_time(us * 1000)
    elif isinstance(flt, LessThan):
        bounds.before_time(us * 1000)
    elif isinstance(flt, LessThanOrEqual):
        bounds.before_time((us + 1) * 1000)
    elif isinstance(flt, EqualTo):
        bounds.from_time(us * 1000)
        bounds.before_time((us + 1) * 1000)
    else:
        return False
    return True
