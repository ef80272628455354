"""Units of the config format: size suffixes of numbers, Go durations, storage-size strings."""

from __future__ import annotations

import re

# Size suffixes of unquoted numbers (nats-server conf/parse.go).
SIZE_SUFFIXES: dict[str, int] = {"": 1}
for _i, _letter in enumerate("kmgtpe", start=1):
    SIZE_SUFFIXES[_letter] = 1000**_i
    for _tail in ("b", "i", "ib"):
        SIZE_SUFFIXES[_letter + _tail] = 1024**_i


_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,  # both micro signs, as Go accepts
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
# Compiled on first use (re's cache), not at import: a server whose config has neither does not pay
# for them at start (issue 24).
_DURATION_PART = r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)"
_STORAGE_SIZE = r"(?i)\s*(-?[0-9]+)\s*([KMGT])(?:i?B)?\s*"


def parse_duration(text: str) -> float:
    """Go's ``time.ParseDuration`` ("1h30m", "300ms", "-1.5s"), in seconds.

    Raises ValueError with Go's message, e.g. ``time: invalid duration "x"``.
    """
    s = text
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    while s:
        m = re.match(_DURATION_PART, s)
        assert m is not None
        whole, frac, unit = m.group(1), m.group(2), m.group(3)
        if not whole and not frac:
            raise ValueError(f'time: invalid duration "{text}"')
        if not unit:
            raise ValueError(f'time: missing unit in duration "{text}"')
        if unit not in _DURATION_UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{text}"')
        number = float(f"{whole or '0'}.{frac or '0'}")
        total += number * _DURATION_UNITS[unit]
        s = s[m.end() :]
    return sign * total


def parse_storage_size(text: str) -> int:
    """nats-server's storage-size strings ("1G", "512MB"): K, M, G, T are powers of 1024; "" is 0.

    Raises ValueError when the text has no such suffix.
    """
    if text == "":
        return 0
    m = re.fullmatch(_STORAGE_SIZE, text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) << (10 * ("KMGT".index(m.group(2).upper()) + 1))
