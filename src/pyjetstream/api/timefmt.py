"""Times and durations as JetStream puts them on the wire.

Times: nats-server marshals Go ``time.Time``, i.e. RFC3339 with up to nine fractional
digits, trailing fractional zeros trimmed (``time.RFC3339Nano``), UTC with ``Z``; the zero
time is ``0001-01-01T00:00:00Z``. Python's ``datetime`` stops at microseconds, so the
models keep times as `NanoTime`: an ``int`` of nanoseconds since the Unix epoch
(UTC) that encodes/decodes as that string. The Go zero time is the exact instant of
year 1 (`ZERO_TIME`), not 0, so every value round-trips byte for byte.

Durations: Go ``time.Duration`` marshals as an integer of nanoseconds, so the models keep
plain ``int`` ns. Helpers convert to/from seconds and ``timedelta``, and format/parse Go's
duration strings (``1m30s``), which appear in pull-status texts and ``-NAK 5s``.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta
from typing import Self

__all__ = [
    "NS_PER_MS",
    "NS_PER_S",
    "NS_PER_US",
    "ZERO_TIME",
    "NanoTime",
    "format_go_duration",
    "format_time",
    "ns_to_seconds",
    "ns_to_timedelta",
    "parse_go_duration",
    "parse_time",
    "seconds_to_ns",
    "timedelta_to_ns",
]

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
NS_PER_S = 1_000_000_000
_SECONDS_PER_DAY = 86_400
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()

# RFC3339 as Go's time.Parse(time.RFC3339, …) accepts it: optional fraction of any length
# (Go keeps nanoseconds and drops further digits), 'Z' or a ±hh:mm offset.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))\Z"
)


class NanoTime(int):
    """A Go ``time.Time`` as Unix nanoseconds (UTC); JSON form is RFC3339Nano.

    Behaves as an ``int`` (comparisons, arithmetic, hashing); arithmetic results are plain
    ``int``. ``str()`` stays the integer; use `isoformat` for the wire string.
    """

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> Self:
        """Parse an RFC3339 time string (any offset) exactly, to the nanosecond."""
        return cls(parse_time(text))

    @classmethod
    def now(cls) -> Self:
        return cls(time.time_ns())

    @classmethod
    def from_datetime(cls, dt: datetime) -> Self:
        """Convert an aware ``datetime`` (naive ones are taken as UTC)."""
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        delta = dt - datetime(1970, 1, 1, tzinfo=UTC)
        return cls(
            (delta.days * _SECONDS_PER_DAY + delta.seconds) * NS_PER_S + delta.microseconds * NS_PER_US
        )

    @classmethod
    def from_seconds(cls, seconds: float) -> Self:
        return cls(round(seconds * NS_PER_S))

    @property
    def is_zero(self) -> bool:
        """True for Go's zero time (``0001-01-01T00:00:00Z``), which means "unset"."""
        return self == ZERO_TIME

    def isoformat(self) -> str:
        """RFC3339Nano UTC, exactly as Go marshals it."""
        return format_time(self)

    def to_datetime(self) -> datetime:
        """Aware UTC ``datetime``; sub-microsecond digits are truncated."""
        seconds, ns = divmod(int(self), NS_PER_S)
        return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=ns // NS_PER_US)

    __str__ = int.__repr__  # str()/f-strings give the integer (safe in ack subjects)

    def __repr__(self) -> str:
        try:
            return f"NanoTime({format_time(self)!r})"
        except ValueError:  # outside years 1..9999
            return f"NanoTime({int(self)})"


ZERO_TIME = NanoTime((date(1, 1, 1).toordinal() - _EPOCH_ORDINAL) * _SECONDS_PER_DAY * NS_PER_S)
"""Go's zero ``time.Time``: -62135596800 s relative to the Unix epoch."""


# The whole seconds of UTC times parsed lately, by their text (``YYYY-MM-DDTHH:MM:SS``; at most
# `_SECONDS_MAX`, then started again): a listing's infos carry times of the same seconds (every
# stream's or consumer's created, first and last times, the info's own), and the whole parse
# costs ~3-4 µs (half a client's ``list_streams`` CPU at 1,000 streams).
_PARSED: dict[str, int] = {}

#: `parse_time` of a ``Z`` time whose seconds it parsed lately takes them from `_PARSED` and
#: reads the fraction alone. Only a string the full parse accepted puts its seconds there, and
#: the fraction is checked as the pattern checks it (decimal digits); False: every time is
#: parsed whole (the differential test in tests/api/test_timefmt.py turns it off).
SECONDS_SEEN = True


def parse_time(text: str) -> int:
    """RFC3339 string → Unix nanoseconds. Raises ``ValueError`` like Go's parser would."""
    if SECONDS_SEEN and text[-1:] == "Z":
        seconds = _PARSED.get(text[:19])
        if seconds is not None:
            n = len(text)
            if n == 20:
                return seconds * NS_PER_S
            frac = text[20:-1]
            if text[19] == "." and frac.isdecimal():
                return seconds * NS_PER_S + int(frac[:9].ljust(9, "0"))
    m = _RFC3339.match(text)
    if m is None:
        raise ValueError(f"invalid RFC3339 time: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    if hour > 23 or minute > 59 or second > 59:
        raise ValueError(f"time out of range: {text!r}")
    days = date(year, month, day).toordinal() - _EPOCH_ORDINAL  # validates the calendar date
    frac = m.group(7)
    ns = int(frac[:9].ljust(9, "0")) if frac else 0
    offset = 0
    if m.group(9):
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            raise ValueError(f"time zone offset out of range: {text!r}")
        offset = (oh * 3600 + om * 60) * (1 if m.group(9) == "+" else -1)
    seconds = days * _SECONDS_PER_DAY + hour * 3600 + minute * 60 + second - offset
    if m.group(8) == "Z":
        if len(_PARSED) >= _SECONDS_MAX:
            _PARSED.clear()
        _PARSED[text[:19]] = seconds
    return seconds * NS_PER_S + ns


# The date and clock of whole seconds formatted lately, with the fraction's dot (at most
# `_SECONDS_MAX`, then started again): a stream's messages cluster in time, and a get, a
# stream's info or a consumer's deliveries format times of the same seconds over and over. A
# hit costs ~0.4 µs, the whole formatting ~1.3 (a `STREAM.MSG.GET` spent ~6% of its server CPU
# here). The fraction is %-formatted after the cached text: an f-string's ``{frac:09d}`` (its
# format spec parsed each time) and the join cost ~870 more instructions a call (callgrind).
_SECONDS: dict[int, str] = {}
_SECONDS_MAX = 4096


def format_time(ns: int) -> str:
    """Unix nanoseconds → RFC3339Nano UTC with trailing fractional zeros trimmed."""
    seconds, frac = divmod(ns, NS_PER_S)
    base = _SECONDS.get(seconds)
    if base is None:
        base = _date_clock(seconds, ns) + "."
        if len(_SECONDS) >= _SECONDS_MAX:
            _SECONDS.clear()
        _SECONDS[seconds] = base
    if frac:
        return base + ("%09d" % frac).rstrip("0") + "Z"  # noqa: UP031  (cheaper than a format spec)
    return base[:-1] + "Z"


def _date_clock(seconds: int, ns: int) -> str:
    days, secs = divmod(seconds, _SECONDS_PER_DAY)
    ordinal = days + _EPOCH_ORDINAL
    if not 1 <= ordinal <= 3652059:  # date.max.toordinal()
        raise ValueError(f"time outside years 1..9999: {ns}")
    d = date.fromordinal(ordinal)
    hh, rem = divmod(secs, 3600)
    mm, ss = divmod(rem, 60)
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{hh:02d}:{mm:02d}:{ss:02d}"


# --- durations ---------------------------------------------------------------------------


def seconds_to_ns(seconds: float) -> int:
    """Seconds (int or float) → integer nanoseconds, rounded to the nearest ns."""
    return round(seconds * NS_PER_S)


def ns_to_seconds(ns: int) -> float:
    return ns / NS_PER_S


def timedelta_to_ns(td: timedelta) -> int:
    return (td.days * _SECONDS_PER_DAY + td.seconds) * NS_PER_S + td.microseconds * NS_PER_US


def ns_to_timedelta(ns: int) -> timedelta:
    """Nanoseconds → ``timedelta`` (sub-microsecond part truncated toward zero)."""
    sign = -1 if ns < 0 else 1
    return sign * timedelta(microseconds=abs(ns) // NS_PER_US)


def _frac(value: int, digits: int) -> str:
    """value / 10**digits printed with the fraction's trailing zeros trimmed (Go fmtFrac)."""
    whole, frac = divmod(value, 10**digits)
    if not frac:
        return str(whole)
    return f"{whole}.{frac:0{digits}d}".rstrip("0")


def format_go_duration(ns: int) -> str:
    """Go ``time.Duration.String()``: ``0s``, ``150ms``, ``1.5µs``, ``1h0m0s``, ``-2m3.5s``."""
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u < NS_PER_S:
        if u < NS_PER_US:
            return f"{sign}{u}ns"
        if u < NS_PER_MS:
            return f"{sign}{_frac(u, 3)}µs"
        return f"{sign}{_frac(u, 6)}ms"
    out = _frac(u % (60 * NS_PER_S), 9) + "s"
    minutes = u // (60 * NS_PER_S)
    if minutes:
        out = f"{minutes % 60}m{out}"
        hours = minutes // 60
        if hours:
            out = f"{hours}h{out}"
    return sign + out


_GO_UNITS = {
    "ns": 1,
    "us": NS_PER_US,
    "µs": NS_PER_US,  # U+00B5 micro sign
    "μs": NS_PER_US,  # U+03BC greek mu
    "ms": NS_PER_MS,
    "s": NS_PER_S,
    "m": 60 * NS_PER_S,
    "h": 3600 * NS_PER_S,
}
_GO_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?([a-zµμ]+)")


def parse_go_duration(text: str) -> int:
    """Go ``time.ParseDuration``: ``"1h2m3.5s"``, ``"-1.5ms"``, ``"0"`` → nanoseconds."""
    s = text
    sign = 1
    if s[:1] in ("-", "+"):
        sign = -1 if s[0] == "-" else 1
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(s):
        m = _GO_DURATION_PART.match(s, pos)
        if m is None or (not m.group(1) and not m.group(2)):
            raise ValueError(f"invalid duration {text!r}")
        unit = _GO_UNITS.get(m.group(3))
        if unit is None:
            raise ValueError(f"unknown unit {m.group(3)!r} in duration {text!r}")
        whole = int(m.group(1) or 0) * unit
        frac_digits = m.group(2) or ""
        frac = int(frac_digits) * unit // 10 ** len(frac_digits) if frac_digits else 0
        total += whole + frac
        pos = m.end()
    if total > 2**63 - 1:
        raise ValueError(f"invalid duration {text!r}")
    return sign * total
