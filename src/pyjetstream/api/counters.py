"""Counters (ADR-49, nats-server 2.12+): the wire shapes of a counter stream.

A counter message is published with ``Nats-Incr: <signed integer>`` and an empty body; the
stream stores ``{"val":"<total>"}`` (arbitrary precision, as Go's ``big.Int``) and answers
with the total in the PubAck's ``val``. A stream that sources counters keeps, per origin stream
and subject, the last total it took in ``Nats-Counter-Sources`` (a JSON object of objects).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pyjetstream.api import codec

#: Go ``big.Int.SetString(s, 10)``: an optional sign, then decimal digits.
_BIG_INT = re.compile(r"[+-]?[0-9]+")

CounterSources = dict[str, dict[str, str]]


def parse_incr(value: str) -> int:
    """The increment of a ``Nats-Incr`` value; ValueError when it is not an integer."""
    if not _BIG_INT.fullmatch(value):
        raise ValueError(f"invalid counter increment {value!r}")
    return int(value)


def encode_value(total: int) -> bytes:
    """The stored body: ``{"val":"<total>"}``."""
    return b'{"val":"%d"}' % total


def _go_field(doc: dict[str, Any], name: str) -> Any:
    """Go's json field lookup: the exact key, else the first that matches case-insensitively."""
    if name in doc:
        return doc[name]
    for key, value in doc.items():
        if key.casefold() == name:
            return value
    return None


def decode_value(body: bytes) -> int:
    """The total in a stored counter body (0 when it has none); ValueError when it does not
    decode as nats-server's ``CounterValue``."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("counter body is not JSON") from exc
    if doc is None:
        return 0
    if not isinstance(doc, dict):
        raise ValueError("counter body is not an object")
    val = _go_field(doc, "val")
    if val is None:
        return 0
    if not isinstance(val, str):
        raise ValueError("counter value is not a string")
    return int(val) if _BIG_INT.fullmatch(val) else 0


def decode_sources(value: bytes) -> CounterSources:
    """A ``Nats-Counter-Sources`` value; ValueError when it is not an object of string objects."""
    try:
        doc = json.loads(value)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError("counter sources are not JSON") from exc
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not all(
        isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in doc.values() if v is not None
    ):
        raise ValueError("counter sources are not an object of objects")
    return {k: dict(v or {}) for k, v in doc.items()}


def encode_sources(sources: CounterSources) -> str:
    """Go's ``json.Marshal`` of the map: keys sorted, compact, Go's escaping."""
    ordered = {k: dict(sorted(v.items())) for k, v in sorted(sources.items())}
    return codec.encode(ordered).decode()


def counter_pub_ack(prefix: bytes, seq: int, total: int) -> bytes:
    """A counter stream's PubAck: the stream's PubAck with the total, e.g.
    ``{"stream":"C", "seq":3,"val":"42"}`` (nats-server appends ``,"val":%q}``)."""
    return b'%s%d,"val":"%d"}' % (prefix, seq, total)
