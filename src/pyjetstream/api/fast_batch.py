"""Fast-ingest batch publish (ADR-50, 2.14+): the ``$FI`` reply-subject grammar and the flow messages.

A message of a fast batch carries its batch in its reply subject:
``<prefix>.<batch id>.<initial flow>.<gap mode>.<batch seq>.<operation>.$FI`` — gap mode ``fail``
or ``ok``, operation 0 start (seq 1), 1 append (seq > 1), 2 commit, 3 commit at end-of-batch (this
message not stored; seq > 1), 4 ping. The server answers on that reply subject with flow messages
(``{"type":"ack","seq":N,"msgs":M}``: stored up to N, ack again every M messages;
``{"type":"gap","last_seq":E,"seq":C}``; ``{"type":"err","seq":N,"error":{…}}``) and, at the commit,
a PubAck with ``"batch"`` and ``"count"``. Mirrors nats-server ``getFastBatch`` and the
``BatchFlowAck`` / ``BatchFlowGap`` / ``BatchFlowErr`` types (stream.go).
"""

from __future__ import annotations

from msgspec import Struct

from ._wire import WireStruct, always
from .models_common import ApiError

__all__ = [
    "FAST_BATCH_SUFFIX",
    "BatchFlowAck",
    "BatchFlowErr",
    "BatchFlowGap",
    "FastBatchReply",
    "InvalidFastBatch",
    "fast_batch_reply",
    "is_fast_batch_reply",
    "parse_fast_batch_reply",
]

FAST_BATCH_SUFFIX = ".$FI"
GAP_FAIL = "fail"
GAP_OK = "ok"
OP_START, OP_APPEND, OP_COMMIT, OP_COMMIT_EOB, OP_PING = 0, 1, 2, 3, 4
DEFAULT_FLOW = 10
MAX_FLOW = 65535
_MAX_UINT64 = (1 << 64) - 1


class InvalidFastBatch(ValueError):
    """A ``…$FI`` reply subject that does not follow the grammar (error 10206)."""


class FastBatchReply(Struct):
    """A fast-ingest batch publish's reply subject, parsed (ADR-50 ``$FI`` grammar, see the module's docstring)."""

    id: str
    seq: int
    flow: int
    gap_ok: bool
    commit: bool
    commit_eob: bool
    ping: bool


def is_fast_batch_reply(reply: str) -> bool:
    return len(reply) > len(FAST_BATCH_SUFFIX) and reply.endswith(FAST_BATCH_SUFFIX)


def _go_int(text: str) -> int:
    """nats-server's ``parseInt64``: digits only, else -1."""
    return int(text) if text and text.isascii() and text.isdigit() else -1


def parse_fast_batch_reply(
    reply: str, heads: dict[str, tuple[str, int, bool]] | None = None
) -> FastBatchReply:
    """The batch a ``…$FI`` reply subject names; raises `InvalidFastBatch`.

    ``heads`` caches the part every message of a batch repeats (``<prefix>.<batch id>.<flow>.<gap>.``
    → id, flow, gap ok): a server parses the sequence and operation of each message and looks the
    rest up (the caller bounds the cache)."""
    end = len(reply) - len(FAST_BATCH_SUFFIX)
    o = reply.rfind(".", 0, end)
    if o < 0:
        raise InvalidFastBatch(reply)
    op = _go_int(reply[o + 1 : end])
    if op < OP_START or op > OP_PING:
        raise InvalidFastBatch(reply)
    ping = op == OP_PING
    commit_eob = op == OP_COMMIT_EOB
    commit = commit_eob or op == OP_COMMIT
    p, o = o, reply.rfind(".", 0, o)
    if o < 0:
        raise InvalidFastBatch(reply)
    seq = _go_int(reply[o + 1 : p])
    if seq <= 0 or seq >= _MAX_UINT64:
        raise InvalidFastBatch(reply)
    if (seq == 1 and commit_eob) or (op == OP_START and seq != 1) or (op == OP_APPEND and seq <= 1):
        raise InvalidFastBatch(reply)
    if heads is None:
        batch_id, flow, gap_ok = _parse_head(reply, o)
    else:
        head = reply[: o + 1]
        known = heads.get(head)
        if known is None:
            known = heads[head] = _parse_head(reply, o)
        batch_id, flow, gap_ok = known
    return FastBatchReply(batch_id, seq, flow, gap_ok, commit, commit_eob, ping)


def _parse_head(reply: str, o: int) -> tuple[str, int, bool]:
    """Batch id, flow and gap mode from the reply subject's part before the dot at ``o``."""
    p, o = o, reply.rfind(".", 0, o)
    if o < 0:
        raise InvalidFastBatch(reply)
    gap = reply[o + 1 : p]
    if gap not in (GAP_FAIL, GAP_OK):
        raise InvalidFastBatch(reply)
    p, o = o, reply.rfind(".", 0, o)
    if o < 0:
        raise InvalidFastBatch(reply)
    flow = _go_int(reply[o + 1 : p])
    flow = DEFAULT_FLOW if flow <= 0 else min(flow, MAX_FLOW)
    p, o = o, reply.rfind(".", 0, o)
    if o < 0:
        raise InvalidFastBatch(reply)
    return reply[o + 1 : p], flow, gap == GAP_OK


def fast_batch_reply(prefix: str, batch_id: str, flow: int, gap_ok: bool, seq: int, op: int) -> str:
    """The reply subject of one message of a fast batch."""
    gap = GAP_OK if gap_ok else GAP_FAIL
    return f"{prefix}.{batch_id}.{flow}.{gap}.{seq}.{op}{FAST_BATCH_SUFFIX}"


def fast_batch_reply_parts(prefix: str, batch_id: str, flow: int, gap_ok: bool, op: int) -> tuple[str, str]:
    """`fast_batch_reply` around the batch sequence: ``head + str(seq) + tail`` (for framing
    a run of a batch's messages at once)."""
    gap = GAP_OK if gap_ok else GAP_FAIL
    return f"{prefix}.{batch_id}.{flow}.{gap}.", f".{op}{FAST_BATCH_SUFFIX}"


class BatchFlowAck(WireStruct):
    type: str = always("ack")
    seq: int = always(0)
    msgs: int = always(0)


class BatchFlowGap(WireStruct):
    type: str = always("gap")
    last_seq: int = always(0)
    seq: int = always(0)


class BatchFlowErr(WireStruct):
    type: str = always("err")
    seq: int = always(0)
    error: ApiError | None = always(None)
