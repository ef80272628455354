"""Fast-ingest batch publish (ADR-50, 2.14+): ``allow_batched`` and the ``$FI`` reply subjects.

Unlike an atomic batch, a fast batch stores every message as it arrives (each checked as a single
publish); what the batch adds is ordering (gaps detected, refused with gap mode ``fail`` or
reported and skipped with ``ok``), server-paced flow control instead of one PubAck per message
(an ``ack`` flow message every N stored messages, N ramping up to the publisher's flow value and
shared out between concurrent batches: 500 over the open batches) and one PubAck with ``batch`` /
``count`` at the commit. The grammar and the flow messages are `pyjetstream.api.fast_batch`.
Mirrors nats-server's ``processJetStreamFastBatchMsg`` (stream.go) and the ``fastBatch`` methods
of jetstream_batching.go, on a single server where each message is stored before the next one is
looked at (so nothing is ever "pending" between two messages).

Limits: ``jetstream { limits { batch { max_inflight_per_stream (1000), max_inflight_total (50000),
timeout (10 s) } } }``; an idle batch is forgotten after the timeout.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api.codec import finish_batch_pub_ack
from pyjetstream.api.enums import DiscardPolicy
from pyjetstream.api.fast_batch import (
    FAST_BATCH_SUFFIX,
    OP_APPEND,
    BatchFlowAck,
    BatchFlowErr,
    BatchFlowGap,
    FastBatchReply,
    InvalidFastBatch,
    parse_fast_batch_reply,
)
from pyjetstream.api.models_common import ApiError
from pyjetstream.protocol.headers import get_header, remove_header
from pyjetstream.server.jetstream.api_level import REQUIRED_API_LEVEL, required_level_refused
from pyjetstream.server.jetstream.batch_atomic import (
    Duplicate,
    Refused,
    StagedDiff,
    check_message,
    store_checked,
)
from pyjetstream.server.jetstream.batching import (
    BatchLimits,
    OpenBatches,
    batched_msg_refused,
    stored_subject,
)
from pyjetstream.server.jetstream.ingest_rules import (
    MAX_HEADER_SIZE,
    msg_id_in,
    only_id_headers,
    wrong_stream,
)

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

MAX_BATCH_ID_LEN = 64
DEFAULT_MAX_INFLIGHT_PER_STREAM = 1000  # streamDefaultMaxFastBatchInflightPerStream
DEFAULT_MAX_INFLIGHT_TOTAL = 50_000
DEFAULT_TIMEOUT = 10.0
# max_msgs does not apply to a fast batch.
DEFAULT_LIMITS = BatchLimits(0, DEFAULT_MAX_INFLIGHT_PER_STREAM, DEFAULT_MAX_INFLIGHT_TOTAL, DEFAULT_TIMEOUT)
MAX_ACK_MESSAGES = 500  # shared out between the stream's open fast batches
MAX_CACHED_HEADS = 4 * DEFAULT_MAX_INFLIGHT_PER_STREAM
_APPEND = f".{OP_APPEND}"


@dataclass
class _Fast:
    """One open fast-ingest batch: its gap mode, flow-ack cadence and the sequences taken and stored."""

    gap_ok: bool
    max_ack_messages: int
    ack_messages: int = 1
    lseq: int = 0  # highest batch sequence taken
    sseq: int = 0  # last stream sequence stored
    pseq: int = 0  # last batch sequence stored
    fseq: int = 0  # batch sequence of the last flow ack
    pending: int = 0
    commit: bool = False
    timer: asyncio.TimerHandle | None = None
    deadline: float = 0.0  # the idle timeout's end (OpenBatches.arm)


class FastBatches:
    """The open fast batches of one stream (the ``fast`` half of nats-server's ``batching``)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        limits = BatchLimits.from_options(stream.server.options, DEFAULT_LIMITS)
        self.batches: OpenBatches[_Fast] = OpenBatches(stream, "fast", limits)  # an idle batch is forgotten
        # The reply subjects' batch part (``<prefix>.<id>.<flow>.<gap>.``) parsed once per batch.
        self._heads: dict[str, tuple[str, int, bool]] = {}

    # --- lifecycle ------------------------------------------------------------------------
    def clear(self) -> None:
        self.batches.clear()
        self._heads.clear()

    # --- replies --------------------------------------------------------------------------
    def _send(self, reply: str, data: bytes) -> None:
        self.stream.writes.respond(reply, data)

    def _error(self, reply: str, error: ApiError) -> None:
        if not self.stream.cfg.no_ack:
            self._send(reply, self.stream.ingest.error(error))

    def _flow(self, reply: str, b: _Fast, seq: int) -> None:
        self._send(reply, codec.encode(BatchFlowAck(seq=seq, msgs=b.ack_messages)))

    def _pub_ack(self, reply: str, b: _Fast, batch_id: str) -> None:
        self._send(reply, finish_batch_pub_ack(self.stream.ingest.ack_prefix, b.sseq, batch_id, b.lseq))

    def _commit(self, b: _Fast, batch_id: str, reply: str) -> bool:
        """``fastBatchCommit``: answer the PubAck now if everything is stored (True), else later."""
        b.commit = True
        if b.lseq == b.pseq:
            self.batches.remove(batch_id)
            self._pub_ack(reply, b, batch_id)
            return True
        return False

    def _check_flow(self, b: _Fast, reply: str) -> bool:
        """``checkFlowControl``: an ack every ``ack_messages`` stored messages, pacing the publisher."""
        am = b.ack_messages
        if b.pseq < b.fseq + am:
            return False
        b.fseq += (b.pseq - b.fseq) // am * am
        max_ack = min(max(1, MAX_ACK_MESSAGES // max(1, len(self.batches))), b.max_ack_messages)
        if b.ack_messages < max_ack:
            b.ack_messages = min(b.ack_messages * 2, max_ack)
        elif b.ack_messages > max_ack:
            b.ack_messages = max(b.ack_messages // 2, max_ack)
        self._flow(reply, b, b.fseq)
        return True

    # --- one message ----------------------------------------------------------------------
    def process(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        if hdr and self._append(subject, reply, hdr, payload):
            return None
        stream = self.stream
        cfg = stream.cfg
        hdr = hdr or b""
        first_error = batched_msg_refused(stream, hdr, payload)
        if first_error is not None:
            return self._error(reply, first_error)
        if not cfg.allow_batched:
            return self._error(reply, E.JSBatchPublishDisabledErr())
        heads = self._heads
        if len(heads) > MAX_CACHED_HEADS:
            heads.clear()
        try:
            batch = parse_fast_batch_reply(reply, heads)
        except InvalidFastBatch:
            return self._error(reply, E.JSBatchPublishInvalidPatternErr())
        if len(batch.id) > MAX_BATCH_ID_LEN:
            return self._error(reply, E.JSBatchPublishInvalidBatchIDErr())
        b = self.batches.get(batch.id)
        if b is None:
            if batch.seq != 1:
                return self._error(reply, E.JSBatchPublishUnknownBatchIDErr())
            if self.batches.full():
                return self._error(reply, E.JSBatchPublishTooManyInflight())
            b = self.batches.add(batch.id, _Fast(gap_ok=batch.gap_ok, max_ack_messages=batch.flow))
            b.ack_messages = 1 if len(self.batches) > 1 else min(MAX_ACK_MESSAGES, batch.flow)
        if hdr and get_header(hdr, REQUIRED_API_LEVEL) is not None:
            if required_level_refused(hdr):
                self.batches.remove(batch.id)
                return self._error(reply, E.JSRequiredApiLevelErr())
            hdr = remove_header(hdr, REQUIRED_API_LEVEL)
        self.batches.arm(batch.id, b)
        if batch.ping:
            return self._ping(b, batch, reply)
        if b.commit:
            return None  # committing after an error: the publisher waits for the PubAck
        b.lseq += 1
        if b.lseq != batch.seq:
            if batch.seq > b.lseq:
                self._send(reply, codec.encode(BatchFlowGap(last_seq=b.lseq, seq=batch.seq)))
            if b.gap_ok and batch.seq > b.lseq:
                b.lseq = batch.seq
            else:
                b.lseq -= 1
                self._commit(b, batch.id, reply)
                return None
        if batch.commit:
            if batch.commit_eob:
                b.lseq -= 1
                if b.pending == 0:
                    b.pseq = b.lseq
            self._commit(b, batch.id, reply)
            if batch.commit_eob:
                return None
        if batch.seq == 1 and not cfg.no_ack and not batch.commit:
            self._flow(reply, b, 0)
        self._store(b, batch, subject, reply, hdr, payload)
        return None

    def _append(self, subject: str, reply: str, hdr: bytes, payload: bytes) -> bool:
        """The common message of a fast batch in one step: the next append (operation 1) of an
        open batch of this publisher, to a ``simple`` stream (``StreamIngest.configure``)
        without discard-new limits, untraced, whose only ``Nats-`` headers are a message id and
        an expected stream, not a duplicate. Whether all that holds is decided without changing
        anything (False: `process` takes it, with every check); then the same steps as
        `process` and `_store` in the same order: arm the idle timer, take the
        sequence, store (``StreamIngest.commit``), pace the publisher."""
        stream = self.stream
        cfg = stream.cfg
        if (
            not stream.ingest.simple
            or stream.ingest.trace is not None
            or not cfg.allow_batched
            or cfg.discard == DiscardPolicy.NEW
        ):
            return False
        end = len(reply) - len(FAST_BATCH_SUFFIX)
        o = end - 2
        if reply[o:end] != _APPEND:
            return False
        p = reply.rfind(".", 0, o)
        head = self._heads.get(reply[: p + 1])
        if head is None:
            return False
        batch_id = head[0]
        b = self.batches.get(batch_id)
        if b is None or b.commit or b.pending:
            return False
        seq = b.lseq + 1
        if seq < 2 or reply[p + 1 : o] != str(seq):
            return False
        if len(hdr) > MAX_HEADER_SIZE or not only_id_headers(hdr) or len(hdr) + len(payload) > stream.ingest.max_size:
            return False
        if stream.engine.check_account_limits(cfg.storage) is not None or wrong_stream(hdr, stream.ingest.name_b):
            return False
        msg_id = msg_id_in(hdr)
        if msg_id and stream.dedupe.lookup(msg_id) is not None:
            return False
        self.batches.arm(batch_id, b)
        b.lseq = seq
        result = stream.ingest.commit(subject, hdr, payload, msg_id)
        if type(result) is not int:
            self._error(reply, result)  # type: ignore[arg-type]
            return True
        b.sseq = result
        b.pseq = seq
        self._check_flow(b, reply)
        return True

    def _ping(self, b: _Fast, batch: FastBatchReply, reply: str) -> None:
        send_flow = True
        if batch.seq > b.lseq:
            self._send(reply, codec.encode(BatchFlowGap(last_seq=b.lseq + 1, seq=batch.seq + 1)))
            if b.gap_ok:
                b.lseq = batch.seq
                if b.pending == 0:
                    b.pseq = b.lseq
                send_flow = not self._check_flow(b, reply)
            elif self._commit(b, batch.id, reply):
                send_flow = False
        if send_flow:
            self._flow(reply, b, b.fseq)

    def _store(self, b: _Fast, batch: FastBatchReply, subject: str, reply: str, hdr: bytes, payload: bytes) -> None:
        stream = self.stream
        csubject = stored_subject(stream, subject)
        try:
            checked = check_message(stream, StagedDiff(), csubject, hdr, payload, None)
        except Duplicate as dup:
            if b.pending == 0:
                b.pseq = batch.seq
                self._check_flow(b, reply)
            if not batch.commit:
                return
            if not b.gap_ok and b.lseq == 1:
                self.batches.remove(batch.id)
                prefix = stream.ingest.ack_prefix
                self._send(reply, finish_batch_pub_ack(prefix, dup.seq, batch.id, batch.seq, duplicate=True))
                return
            self._commit(b, batch.id, reply)
            return
        except Refused as refused:
            if not b.gap_ok and b.lseq == 1:
                self.batches.remove(batch.id)
                return self._error(reply, refused.error)
            self._send(reply, codec.encode(BatchFlowErr(seq=batch.seq, error=refused.error)))
            if b.gap_ok and not batch.commit:
                return None
            b.lseq -= 1
            if b.pending == 0:
                b.pseq = b.lseq
            self._commit(b, batch.id, reply)
            return None
        b.pending += 1
        result = store_checked(stream, checked)
        b.pending -= 1
        if isinstance(result, ApiError):
            return self._error(reply, result)
        b.sseq = result
        b.pseq = b.lseq  # nothing else is pending on a single server
        if b.lseq == b.pseq and b.commit:
            self.batches.remove(batch.id)
            self._pub_ack(reply, b, batch.id)
            return None
        self._check_flow(b, reply)
        return None
