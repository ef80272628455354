"""Parsing the values users type: durations, sizes, headers, metadata, sequences or times.

Spellings follow the nats CLI: durations are Go durations plus ``d``/``w``/``M``/``y`` units
(``1d12h``, ``1w``); sizes take 1024-based units (``1K``, ``5MB``, ``2GiB``) and ``-1`` for
unlimited; headers are ``Name:Value``; metadata is ``key=value``. Every failure is a
`UsageError` naming the flag.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from pyjetstream.cli.errors import UsageError

__all__ = [
    "INT64_MAX",
    "parse_duration",
    "parse_duration_seconds",
    "parse_headers",
    "parse_int",
    "parse_metadata",
    "parse_size",
    "parse_start",
]

# nats-server keeps sizes, counts and durations (nanoseconds) in int64s: a larger value is refused.
INT64_MAX = (1 << 63) - 1

_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3_600 * 1_000_000_000,
    "d": 86_400 * 1_000_000_000,
    "w": 7 * 86_400 * 1_000_000_000,
    "M": 30 * 86_400 * 1_000_000_000,
    "y": 365 * 86_400 * 1_000_000_000,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h|d|w|M|y)")
_UNLIMITED = {"", "-1", "0", "unlimited", "inf", "none"}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kb": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mb": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gb": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tb": 1 << 40,
    "tib": 1 << 40,
    "p": 1 << 50,
    "pb": 1 << 50,
    "pib": 1 << 50,
}


def parse_duration(text: str, *, what: str = "duration", unlimited_ok: bool = False) -> int:
    """``1h30m``, ``2d``, ``500ms`` → nanoseconds. With ``unlimited_ok``, ``-1``/``0``/``unlimited`` → 0."""
    s = text.strip()
    if unlimited_ok and s.lower() in _UNLIMITED:
        return 0
    if s == "0":
        return 0
    pos, total = 0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise UsageError(
                f"invalid {what} {text!r}: use a number with a unit such as 500ms, 30s, 5m, 1h, 2d"
            )
        total += int(float(m.group(1)) * _NS[m.group(2)])
        pos = m.end()
    if pos == 0:
        raise UsageError(f"invalid {what} {text!r}: use a number with a unit such as 500ms, 30s, 5m, 1h, 2d")
    if total > INT64_MAX:
        raise UsageError(f"invalid {what} {text!r}: too long (at most about 292 years, 9223372036854775807ns)")
    return total


def parse_duration_seconds(text: str, *, what: str = "duration") -> float:
    seconds = parse_duration(text, what=what) / 1e9
    if seconds <= 0:
        raise UsageError(f"{what} must be positive, got {text!r}")
    return seconds


def parse_size(text: str | int, *, what: str = "size") -> int:
    """``1024``, ``1K``, ``5MB``, ``2GiB`` (all 1024-based, as the nats CLI) → bytes; ``-1`` stays -1."""
    if isinstance(text, int):
        return text
    s = text.strip()
    if s in ("-1", "unlimited"):
        return -1
    m = _SIZE.match(s)
    unit = m and _SIZE_UNITS.get(m.group(2).lower())
    if m is None or unit is None:
        raise UsageError(f"invalid {what} {text!r}: use a byte count such as 1024, 512K, 5MB or 2GiB")
    # Whole numbers exactly (a float would round 2**63 down into range).
    size = int(m.group(1)) * unit if m.group(1).isdigit() else int(float(m.group(1)) * unit)
    if size > INT64_MAX:
        raise UsageError(f"invalid {what} {text!r}: too large (at most {INT64_MAX} bytes, 8 EiB)")
    return size


def parse_int(text: str | None, *, what: str, low: int = -INT64_MAX - 1, high: int = INT64_MAX) -> int | None:
    """A whole number from a flag (``None`` stays ``None``), refused when outside ``low``..``high``
    (by default the int64 range nats-server keeps counts in)."""
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"invalid {what} {text!r}: not a whole number") from None
    if not low <= value <= high:
        raise UsageError(f"invalid {what} {text!r}: out of range ({low} to {high})")
    return value


def parse_headers(items: Iterable[str] | None, *, what: str = "--header") -> dict[str, list[str]]:
    """``["A:1", "A:2", "B: x"]`` → ``{"A": ["1", "2"], "B": ["x"]}`` (value whitespace trimmed)."""
    headers: dict[str, list[str]] = {}
    for item in items or ():
        name, sep, value = item.partition(":")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"invalid {what} {item!r}: use Name:Value")
        headers.setdefault(name, []).append(value.strip())
    return headers


def parse_metadata(items: Iterable[str] | None, *, what: str = "--metadata") -> dict[str, str]:
    meta: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"invalid {what} {item!r}: use key=value")
        meta[key.strip()] = value
    return meta


def parse_start(text: str, *, what: str = "--deliver") -> tuple[str, int | None, int | None]:
    """A start position: ``all``, ``last``, ``new``, ``last_per_subject``/``subject``, a stream
    sequence (``100``) or a duration ago (``1h``) / RFC3339 time.

    Returns ``(policy, start_seq, start_time_ns)`` with the wire deliver-policy name.
    """
    s = text.strip().lower()
    named = {
        "all": "all",
        "last": "last",
        "new": "new",
        "subject": "last_per_subject",
        "last_per_subject": "last_per_subject",
        "last-per-subject": "last_per_subject",
    }
    if s in named:
        return named[s], None, None
    if s.isdigit():
        seq = int(s)
        if seq < 1:
            raise UsageError(f"invalid {what} {text!r}: sequences start at 1")
        return "by_start_sequence", seq, None
    try:
        ago = parse_duration(text, what=what)
    except UsageError:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.api import parse_time

        try:
            return "by_start_time", None, parse_time(text.strip())
        except ValueError:
            raise UsageError(
                f"invalid {what} {text!r}: use all, last, new, subject, a sequence, a duration or an RFC3339 time"
            ) from None
    return "by_start_time", None, time.time_ns() - ago


def parse_until(text: str, *, what: str = "until") -> datetime:
    """A pause end, as the nats CLI takes it: a duration from now (``1h``), an RFC3339 time, or
    ``YYYY-MM-DD HH:MM[:SS]`` in UTC."""
    s = text.strip()
    try:
        return datetime.now(UTC) + timedelta(microseconds=parse_duration(s, what=what) / 1000)
    except UsageError:
        pass
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import parse_time

    try:
        return datetime.fromtimestamp(parse_time(s) / 1e9, UTC)
    except ValueError:
        pass
    for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"):
        try:
            return datetime.strptime(s, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise UsageError(f"invalid {what} {text!r}: use a duration (1h) or a time (2030-01-02 15:04 or RFC3339)")
