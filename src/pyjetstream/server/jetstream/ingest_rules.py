"""The rules of a publish that more than one way in applies — a single publish
(`StreamIngest.process`), a run's stretch (``ingest_run.py``), an atomic batch's commit and a fast
batch's message (``batch_atomic.py``, ``batch_fast.py``), a mirror's or a source's copy
(`StreamIngest.process_sourced`) — each written once. The sequences they are applied in are
nats-server's, which differ between ``processJetStreamMsg`` and ``checkMsgHeadersPreClusteredProposal``,
and stay with each way in.
"""

from __future__ import annotations

import functools

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api.constants import MAX_HEADER_SIZE
from pyjetstream.api.fast_batch import FAST_BATCH_SUFFIX
from pyjetstream.api.gojson import go_quote
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.protocol.headers import get_header
from pyjetstream.server.jetstream.dedupe import msg_id_of

__all__ = [
    "EXPECT_LAST_SUBJ_HEADERS",
    "ID_HEADERS",
    "ID_TTL_HEADERS",
    "INERT_HEADERS",
    "INERT_IN_STRETCH",
    "MAX_HEADER_SIZE",
    "NATS_PREFIX",
    "batched",
    "expected_last_subject_seq",
    "expected_seq",
    "inert_too",
    "max_size",
    "msg_id_in",
    "only_id_headers",
    "rollup_in",
    "rollup_refused",
    "rollup_taken",
    "wrong_stream",
]

HDR_MSG_ID = H.MSG_ID.encode()
HDR_EXPECTED_STREAM = H.EXPECTED_STREAM.encode()
HDR_ROLLUP = H.ROLLUP.encode()
HDR_BATCH_ID = H.BATCH_ID.encode()
NATS_PREFIX = H.NATS_PREFIX
#: A block whose only ``Nats-`` headers are these holds nothing any other header check looks at.
ID_HEADERS = H.header_lines(H.MSG_ID, H.EXPECTED_STREAM)
#: What a run's stretch may take where the stream allows TTLs: `ID_HEADERS` and ``Nats-TTL``.
ID_TTL_HEADERS = (*ID_HEADERS, *H.header_lines(H.TTL))
#: Headers that say where a message came from and that neither `StreamIngest.process` nor
#: nats-server's ``processJetStreamMsg`` reads: what a republished copy (``Nats-Last-Sequence``,
#: ``Nats-Msg-Size`` when headers only), a direct get's answer or a message copied from one carries.
#: A run's stretch takes a block holding them besides its own (`inert_too`), as ``process`` would
#: store it unchanged.
INERT_HEADERS = H.header_lines(H.STREAM, H.SUBJECT, H.SEQUENCE, H.TIME_STAMP, H.LAST_SEQUENCE, H.MSG_SIZE)
#: False: a block with an `INERT_HEADERS` header ends a run's stretch (each such message then goes
#: through `StreamIngest.process`); the differential test proves both store and answer alike.
INERT_IN_STRETCH = True


def inert_too(lines: tuple[bytes, ...]) -> tuple[bytes, ...]:
    """A stretch's header lines (`ID_HEADERS`, `ID_TTL_HEADERS`) with `INERT_HEADERS`, unless
    `INERT_IN_STRETCH` is off."""
    return (*lines, *INERT_HEADERS) if INERT_IN_STRETCH else lines

#: A block a run's expectation stretch may take has this as its only ``Nats-`` header
#: (`ingest_run.Run._expected`): the check of a KV create or update.
EXPECT_LAST_SUBJ_HEADERS = H.header_lines(H.EXPECTED_LAST_SUBJECT_SEQUENCE)
HDR_EXPECTED_LAST_SUBJ_SEQ = H.EXPECTED_LAST_SUBJECT_SEQUENCE.encode()


def expected_seq(value: bytes | None) -> int | None:
    """An expected-sequence header: None when absent or empty; a value that is not a number is
    nats-server's ``parseInt64`` -1, which never equals a sequence (so the check fails)."""
    if not value:
        return None
    return int(value) if value.isdigit() else -1


def expected_last_subject_seq(hdr: bytes) -> int | None:
    """A block's ``Nats-Expected-Last-Subject-Sequence`` (`expected_seq`): what both the
    per-message check (`StreamIngest.process`) and a run's stretch (`Run._expected`) compare
    with the subject's last sequence."""
    return expected_seq(get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ))


def batched(reply: str, hdr: bytes | None) -> bool:
    """Whether a publish may be part of a fast batch (its reply) or an atomic one (its headers):
    the batch takes it, never a stretch of a run nor a write of its own
    (`StreamIngest.process` looks closer)."""
    return reply.endswith(FAST_BATCH_SUFFIX) or (hdr is not None and hdr.find(HDR_BATCH_ID) >= 0)


#: ``only_id_headers(hdr)``: whether a block's only ``Nats-`` headers are a message id and an
#: expected stream (then no other header check has anything to look at).
only_id_headers = functools.partial(H.only_these_nats_headers, lines=ID_HEADERS)


def max_size(cfg: StreamConfig) -> int:
    """The most a message may bring, its header block and payload together (``max_msg_size``,
    10054; -1: no limit) — read once per config, compared per message."""
    return cfg.max_msg_size if cfg.max_msg_size >= 0 else 1 << 62


def wrong_stream(hdr: bytes, name: bytes) -> bool:
    """``Nats-Expected-Stream`` names another stream (10060)."""
    expected = get_header(hdr, HDR_EXPECTED_STREAM)
    return bool(expected) and expected != name


def msg_id_in(hdr: bytes) -> str:
    """The block's ``Nats-Msg-Id`` as the duplicate window keys it (``""``: none)."""
    raw = get_header(hdr, HDR_MSG_ID)
    return msg_id_of(raw) if raw else ""


def rollup_in(hdr: bytes) -> bytes:
    """The block's ``Nats-Rollup``, lower-cased (``b""``: none)."""
    return (get_header(hdr, HDR_ROLLUP) or b"").lower()


def rollup_refused(cfg: StreamConfig, rollup: bytes) -> tuple[ApiError, str] | None:
    """A roll-up the stream does not take (10068): not permitted, or neither ``sub`` nor
    ``all``; with the words a traced message's event gives."""
    if not cfg.allow_rollup_hdrs or cfg.deny_purge:
        return E.JSStreamRollupFailedF(err="rollup not permitted"), "rollup not permitted"
    if rollup not in (b"sub", b"all"):
        text = f"rollup value invalid: {go_quote(rollup.decode(errors='replace'))}"
        return E.JSStreamRollupFailedF(err=text), text
    return None


def rollup_taken(cfg: StreamConfig, hdr: bytes | None) -> bytes:
    """The roll-up a message the publisher's checks do not apply to (a mirror's or a source's
    copy, the server's own) carries out: its value where the stream takes it, else none."""
    rollup = rollup_in(hdr) if hdr else b""
    return rollup if rollup and rollup_refused(cfg, rollup) is None else b""
