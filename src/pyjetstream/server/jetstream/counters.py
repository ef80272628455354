"""Counter streams (ADR-49, ``allow_msg_counter``): what a publish with ``Nats-Incr`` becomes.

Mirrors the counter steps of nats-server's ``processJetStreamMsg``: the header checks done
first (`check_incr`), then, just before storing, the new total from the subject's last
message (`apply_incr`). A message sourced from another counter stream adds the change of
that origin's total since the last one taken, remembered per origin stream and subject in
``Nats-Counter-Sources``.
"""

from __future__ import annotations

from pyjetstream.api import counters
from pyjetstream.api import errors as E
from pyjetstream.api.models_common import ApiError
from pyjetstream.protocol.headers import get_header, set_header
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, ErrStoreMsgNotFound, MessageStore

HDR_INCR = b"Nats-Incr"
HDR_COUNTER_SOURCES = b"Nats-Counter-Sources"
HDR_STREAM_SOURCE = b"Nats-Stream-Source"
# Headers an increment cannot be combined with (nats-server's "incompatible headers").
_INCOMPATIBLE = (
    b"Nats-Rollup",
    b"Nats-Expected-Stream",
    b"Nats-Expected-Last-Msg-Id",
    b"Nats-Expected-Last-Subject-Sequence-Subject",
    b"Nats-Expected-Last-Sequence",
    b"Nats-Expected-Last-Subject-Sequence",
)


def check_incr(hdr: bytes, payload: bytes, allowed: bool) -> tuple[int | None, ApiError | None]:
    """``(increment or None when absent, error)`` for a published (not sourced) message."""
    raw = get_header(hdr, HDR_INCR)
    if not raw:
        return None, None
    try:
        incr = counters.parse_incr(raw.decode())
    except (ValueError, UnicodeDecodeError):
        return None, E.JSMessageIncrInvalidErr()
    if not allowed:
        return incr, E.JSMessageIncrDisabledErr()
    if payload:
        return incr, E.JSMessageIncrPayloadErr()
    if any(get_header(hdr, name) for name in _INCOMPATIBLE):
        return incr, E.JSMessageIncrInvalidErr()
    return incr, None


def sourced_incr(hdr: bytes) -> tuple[int | None, ApiError | None]:
    """The increment a sourced message carries (stored verbatim unless this is a counter)."""
    raw = get_header(hdr, HDR_INCR)
    if not raw:
        return None, None
    try:
        return counters.parse_incr(raw.decode()), None
    except (ValueError, UnicodeDecodeError):
        return None, E.JSMessageIncrInvalidErr()


def apply_incr(
    store: MessageStore, subject: str, hdr: bytes, payload: bytes, incr: int
) -> tuple[bytes, bytes, int] | ApiError:
    """``(headers, body, total)`` to store for an increment on ``subject``, or 10172 when the
    subject's last message or a sourced body is not a counter."""
    total = 0
    sources: counters.CounterSources = {}
    try:
        last = store.load_last_msg(subject)
    except (ErrStoreMsgNotFound, ErrStoreEOF):
        last = None
    if last is not None:
        try:
            total = counters.decode_value(last.data)
            if last.hdr:
                raw = get_header(last.hdr, HDR_COUNTER_SOURCES)
                if raw:
                    sources = counters.decode_sources(raw)
        except ValueError:
            return E.JSMessageCounterBrokenErr()
    origin = get_header(hdr, HDR_STREAM_SOURCE) if hdr else None
    if origin:
        # A sourced counter: add what the origin's total moved by since we last took it.
        fields = origin.decode(errors="replace").split(" ")
        origin_subject = fields[4] if len(fields) >= 5 else subject
        try:
            sourced = counters.decode_value(payload)
        except ValueError:
            return E.JSMessageCounterBrokenErr()
        per_subject = sources.setdefault(fields[0], {})
        previous = per_subject.get(origin_subject, "")
        per_subject[origin_subject] = str(sourced)
        incr = sourced - (int(previous) if previous.lstrip("+-").isdigit() else 0)
        hdr = set_header(hdr, HDR_INCR, str(incr).encode())
    total += incr
    if sources:
        hdr = set_header(hdr, HDR_COUNTER_SOURCES, counters.encode_sources(sources).encode())
    return hdr, counters.encode_value(total), total
