"""Per-message TTL (``Nats-TTL``, ADR-43): the header's value grammar, as nats-server's
``parseMessageTTL`` (server/stream.go) reads it.

``never`` (any case) is -1: the message never expires, not even by the stream's max_age. A Go
duration (``"90s"``, ``"1h30m"``) must be at least one second and is truncated to whole
seconds; otherwise the value must be a plain number of seconds. Anything else is invalid
(nats-server error 10165). 0 means no TTL.
"""

from __future__ import annotations

from functools import lru_cache

from pyjetstream.api.headers import TTL
from pyjetstream.api.timefmt import format_go_duration, parse_go_duration
from pyjetstream.protocol.headers import get_header

NS_PER_S = 1_000_000_000
NEVER = -1
_TTL_HEADER = TTL.encode()


@lru_cache(maxsize=256)
def parse_message_ttl(value: str) -> int:
    """Seconds (> 0), `NEVER`, or 0 for an empty value; ValueError when invalid. Cached: a
    stream's publishers and its delete markers repeat a few values (it was read twice per
    message, by the stream and by the file store's block index)."""
    if not value:
        return 0
    if value.lower() == "never":
        return NEVER
    try:
        ns = parse_go_duration(value)
    except ValueError:
        # Go's parseInt64: decimal digits only, anything else is a parse failure (-1).
        if not value.isascii() or not value.isdigit():
            raise ValueError(f"invalid per-message TTL {value!r}") from None
        return int(value)
    if ns < NS_PER_S:
        raise ValueError(f"invalid per-message TTL {value!r}")
    return ns // NS_PER_S


def marker_ttl(seconds: int) -> str:
    """The ``Nats-TTL`` a subject delete marker carries: Go's ``time.Duration`` text (``"5m0s"``)."""
    return format_go_duration(seconds * NS_PER_S)


def message_ttl(hdr: bytes) -> int | None:
    """The ``Nats-TTL`` of an encoded header block in seconds (0: none, `NEVER`); None when
    invalid (nats-server ``getMessageTTL``). The stream's publish path and the atomic batch's
    checks both read it here."""
    if hdr.find(_TTL_HEADER) < 0:
        return 0
    raw = get_header(hdr, _TTL_HEADER)
    if not raw:
        return 0
    try:
        return parse_message_ttl(raw.decode())
    except (ValueError, UnicodeDecodeError):
        return None
