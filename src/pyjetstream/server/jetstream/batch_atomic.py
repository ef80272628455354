"""Atomic batch publish (ADR-50, 2.12+): ``Nats-Batch-Id`` / ``Nats-Batch-Sequence`` / ``Nats-Batch-Commit``.

A stream with ``allow_atomic`` stages the messages of a batch (sequence 1, 2, … with no gap) and
stores nothing until the message carrying ``Nats-Batch-Commit: 1`` (store it too) or ``eob``
(commit what was staged, not this message). The commit first runs every message's checks against
the stream as it will be (expected sequences, duplicate ids, roll-ups, discard-new limits); if
any fails, nothing is stored. Then every message is stored in one store batch and one PubAck
answers, with ``"batch"`` and ``"count"``. A staged message with a reply subject gets an empty
reply. Mirrors nats-server's ``processJetStreamAtomicBatchMsg`` (stream.go) and
``checkMsgHeadersPreClusteredProposal`` (jetstream_batching.go) on a single server.

Limits (``jetstream { limits { batch { max_msgs, max_inflight_per_stream, max_inflight_total,
timeout } } }``): 1000 messages a batch, 50 open batches a stream, 1000 a server, 10 s without a
message abandons a batch (advisory ``$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.<stream>``).

Crash safety: staged messages live in memory until the commit (nats-server also drops staged,
uncommitted batches when it restarts). The commit is written in one store batch and acknowledged
only after it reached the OS; if a ``kill -9`` cuts that write, the stream's tail ends inside a
batch (a message with ``Nats-Batch-Sequence`` but no ``Nats-Batch-Commit``), and recovery removes
that partial batch (`recover_partial_batch`) — nothing half-committed, nothing acknowledged
lost. (nats-server, which also kept the staged copy on disk, completes such a batch instead.)
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api import subjects as S
from pyjetstream.api.advisories import StreamBatchAbandonedAdvisory
from pyjetstream.api.codec import finish_batch_pub_ack
from pyjetstream.api.constants import MAX_HEADER_SIZE
from pyjetstream.api.enums import DiscardPolicy, StorageType
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.ttl import message_ttl
from pyjetstream.protocol.headers import get_header, remove_header
from pyjetstream.server.jetstream import advisories, counters
from pyjetstream.server.jetstream.api_level import REQUIRED_API_LEVEL, required_level_refused
from pyjetstream.server.jetstream.batching import (
    BatchLimits,
    OpenBatches,
    batched_msg_refused,
    stored_subject,
)
from pyjetstream.server.jetstream.ingest_rules import (
    msg_id_in,
    rollup_in,
    rollup_refused,
    wrong_stream,
)
from pyjetstream.server.jetstream.schedules import check_publish
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, ErrStoreMsgNotFound, StoreError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

BATCH_ID = H.BATCH_ID.encode()
BATCH_SEQUENCE = H.BATCH_SEQUENCE.encode()
BATCH_COMMIT = H.BATCH_COMMIT.encode()
_HDR_SCHEDULE_ANY = H.SCHEDULE.encode()  # also the start of Nats-Schedule-*, Nats-Scheduler
MAX_BATCH_ID_LEN = 64

# nats-server's defaults (stream.go streamDefaultMaxAtomicBatch…, streamDefaultMaxBatchTimeout).
DEFAULT_MAX_MSGS = 1000
DEFAULT_MAX_INFLIGHT_PER_STREAM = 50
DEFAULT_MAX_INFLIGHT_TOTAL = 1000
DEFAULT_TIMEOUT = 10.0

# Abandon reasons (jetstream_events.go BatchAbandonReason).
TIMEOUT, LARGE, INCOMPLETE, UNSUPPORTED = "timeout", "large", "incomplete", "unsupported"


DEFAULT_LIMITS = BatchLimits(DEFAULT_MAX_MSGS, DEFAULT_MAX_INFLIGHT_PER_STREAM, DEFAULT_MAX_INFLIGHT_TOTAL, DEFAULT_TIMEOUT)


# A staged message: subject, header block, payload (a tuple: a batch stages up to 1000 of them).
_Staged = tuple[str, bytes, bytes]


@dataclass
class _Batch:
    """One open atomic batch: its staged messages, last batch sequence and idle timer."""

    lseq: int = 0
    msgs: list[_Staged] = field(default_factory=list)
    timer: asyncio.TimerHandle | None = None
    deadline: float = 0.0  # the idle timeout's end (OpenBatches.arm)


@dataclass
class _Inflight:
    """A subject's messages and bytes the batch stages (nats-server ``batchStagedDiff``'s ``inflight``)."""

    ops: int = 0
    bytes: int = 0


@dataclass
class StagedDiff:
    """What the batch would change, for the checks of its later messages (batchStagedDiff)."""

    msg_ids: set[str] = field(default_factory=set)
    inflight: dict[str, _Inflight] = field(default_factory=dict)
    expected_per_subject: dict[str, int] = field(default_factory=dict)


@dataclass
class Checked:
    """A batched message once its checks passed, with what they found (id, roll-up, TTL, increment)."""

    subject: str
    hdr: bytes
    payload: bytes
    msg_id: str
    rollup: bytes
    ttl: int | None = 0
    incr: int | None = None


class Refused(Exception):
    def __init__(self, error: ApiError) -> None:
        super().__init__(error.description)
        self.error = error


class Duplicate(Refused):
    """The message's ``Nats-Msg-Id`` was stored at ``seq`` inside the duplicate window."""

    def __init__(self, seq: int) -> None:
        super().__init__(E.JSAtomicPublishContainsDuplicateMessageErr())
        self.seq = seq


def _parse_uint(value: bytes | None) -> int | None:
    """Go's parseUint64 of a header value: digits only, else absent."""
    if not value or not value.isdigit():
        return None
    return int(value)


class AtomicBatches:
    """The open atomic batches of one stream (the ``atomic`` half of nats-server's ``batching``)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        limits = BatchLimits.from_options(stream.server.options, DEFAULT_LIMITS)
        self.batches: OpenBatches[_Batch] = OpenBatches(stream, "atomic", limits, self._expire)
        self.limits = limits

    # --- lifecycle ----------------------------------------------------------------------
    def clear(self) -> None:
        """Drop every open batch (stream deleted or stopped, or ``allow_atomic`` turned off)."""
        self.batches.clear()

    def _expire(self, batch_id: str) -> None:
        if batch_id in self.batches:
            self.batches.remove(batch_id)
            self._abandoned(batch_id, TIMEOUT)

    def _abandoned(self, batch_id: str, reason: str) -> None:
        stream = self.stream
        advisories.publish(
            stream.engine,
            S.advisory_stream_batch_abandoned(stream.name),
            StreamBatchAbandonedAdvisory(stream=stream.name, batch=batch_id, reason=reason),
        )

    # --- one message ----------------------------------------------------------------------
    def process(self, batch_id: str, subject: str, reply: str, hdr: bytes, payload: bytes) -> bytes | None:
        """Handle one message of a batch; the reply to send (``None``: nothing; ``b""``: staged)."""
        stream = self.stream
        cfg = stream.cfg
        can_respond = bool(reply) and not cfg.no_ack

        def refuse(error: ApiError) -> bytes | None:
            return stream.ingest.error(error) if can_respond else None

        first_error = batched_msg_refused(stream, hdr, payload)
        if first_error is not None:
            return refuse(first_error)
        if not cfg.allow_atomic:
            return refuse(E.JSAtomicPublishDisabledErr())
        if len(batch_id) > MAX_BATCH_ID_LEN:
            return refuse(E.JSAtomicPublishInvalidBatchIDErr())
        batch_seq = _parse_uint(get_header(hdr, BATCH_SEQUENCE))
        if batch_seq is None:
            return refuse(E.JSAtomicPublishMissingSeqErr())
        commit_value = get_header(hdr, BATCH_COMMIT)
        commit = commit_value is not None
        commit_eob = commit_value == b"eob"
        commit_invalid = commit and not commit_eob and commit_value != b"1"
        limits = self.limits

        batch = self.batches.get(batch_id)
        if batch is None:
            if batch_seq != 1:
                size = batch_seq - 1 if commit_eob else batch_seq
                if size > limits.max_msgs:
                    return refuse(E.JSAtomicPublishTooLargeBatchErrF(size=limits.max_msgs))
                return refuse(E.JSAtomicPublishIncompleteBatchErr())
            if self.batches.full():
                return refuse(E.JSAtomicPublishTooManyInflight())
            batch = self.batches.add(batch_id, _Batch())
        if commit_invalid:
            self.batches.remove(batch_id)
            return refuse(E.JSAtomicPublishInvalidBatchCommitErr())
        if get_header(hdr, REQUIRED_API_LEVEL) is not None:
            if required_level_refused(hdr):
                self.batches.remove(batch_id)
                self._abandoned(batch_id, UNSUPPORTED)
                return refuse(E.JSRequiredApiLevelErr())
            hdr = remove_header(hdr, REQUIRED_API_LEVEL)
        batch.lseq += 1
        if batch.lseq != batch_seq or (batch_seq == 1 and commit_eob):
            self.batches.remove(batch_id)
            self._abandoned(batch_id, INCOMPLETE)
            return refuse(E.JSAtomicPublishIncompleteBatchErr())
        size = batch_seq - 1 if commit_eob else batch_seq
        if size > limits.max_msgs:
            self.batches.remove(batch_id)
            self._abandoned(batch_id, LARGE)
            return refuse(E.JSAtomicPublishTooLargeBatchErrF(size=limits.max_msgs))
        if not commit_eob:
            batch.msgs.append((subject, hdr, payload))
        if not commit:
            self.batches.arm(batch_id, batch)
            return b"" if can_respond else None  # "persisted, waiting for the commit"

        # The commit: check every message against the stream as it will be, then store them all.
        self.batches.remove(batch_id)
        try:
            checked = self._check_all(batch.msgs)
        except Refused as refused:
            return refuse(refused.error)
        if commit_eob:  # the last stored message carries the normal commit header
            last = checked[-1]
            last.hdr = last.hdr[:-2] + b"Nats-Batch-Commit: 1\r\n\r\n"
        seq = 0
        for msg in checked:
            result = store_checked(stream, msg)
            if isinstance(result, ApiError):
                return refuse(result)
            seq = result
        if not can_respond:
            return None
        return finish_batch_pub_ack(stream.ingest.ack_prefix, seq, batch_id, len(checked))

    # --- the commit's checks ----------------------------------------------------------------
    def _check_all(self, msgs: list[_Staged]) -> list[Checked]:
        stream = self.stream
        diff = StagedDiff()
        base_last = stream.store.fast_state().last_seq
        out = []
        for index, (subject, hdr, payload) in enumerate(msgs):
            subject = stored_subject(stream, subject)
            if get_header(hdr, _EXPECTED_LAST_MSG_ID):
                raise Refused(E.JSAtomicPublishUnsupportedHeaderBatchErr(header=H.EXPECTED_LAST_MSG_ID))
            out.append(check_message(stream, diff, subject, hdr, payload, base_last + index))
        return out




def check_message(
    stream: Stream, diff: StagedDiff, subject: str, hdr: bytes, payload: bytes, clseq: int | None
) -> Checked:
    """One message's checks before it is stored (nats-server's ``checkMsgHeadersPreClusteredProposal``,
    in its order); ``clseq`` is the stream's last sequence as it will be before this message (None:
    the store's last sequence, read only if a header asks for it).
    Raises `Refused` (`Duplicate` for a ``Nats-Msg-Id`` already stored)."""
    cfg = stream.cfg
    msg_id = ""
    rollup = b""
    ttl: int | None = 0
    incr: int | None = None
    raw_rollup: bytes | None = None
    if len(hdr) > MAX_HEADER_SIZE:
        raise Refused(E.JSStreamHeaderExceedsMaximumErr())
    if not hdr or H.only_these_nats_headers(hdr, _SIMPLE_HEADERS):
        # The checks below that a header can trigger, for a block whose only Nats- headers are a
        # message id, an expected stream and batch headers (what a Spark write sends): the same
        # steps in the same order, without a lookup per header that is not there.
        if hdr:
            if wrong_stream(hdr, stream.ingest.name_b):
                raise Refused(E.JSStreamNotMatchErr())
            msg_id = _check_msg_id(stream, diff, hdr)
        if cfg.allow_msg_counter:
            raise Refused(E.JSMessageIncrMissingErr())
    else:
        hdr, msg_id, ttl, incr, rollup, raw_rollup = _check_headers(stream, diff, subject, hdr, payload, clseq)
    if cfg.storage == StorageType.MEMORY:  # memStoreMsgSizeRaw / fileStoreMsgSizeRaw
        overhead = 16
    else:
        overhead = 34 if hdr else 30
    entry = diff.inflight.setdefault(subject, _Inflight())
    entry.ops += 1
    entry.bytes += len(subject) + len(hdr) + len(payload) + overhead
    if cfg.discard == DiscardPolicy.NEW:
        if cfg.max_msgs > 0 or cfg.max_bytes > 0:
            state = stream.store.fast_state()
            msgs = state.msgs + sum(i.ops for i in diff.inflight.values())
            size = state.bytes + sum(i.bytes for i in diff.inflight.values())
            if cfg.max_msgs > 0 and msgs > cfg.max_msgs:
                raise Refused(E.JSStreamStoreFailedF(err="maximum messages exceeded"))
            if cfg.max_bytes > 0 and size > cfg.max_bytes:
                raise Refused(E.JSStreamStoreFailedF(err="maximum bytes exceeded"))
        if cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0 and not raw_rollup:
            total = stream.store.subjects_totals(subject).get(subject, 0) + entry.ops
            if total > cfg.max_msgs_per_subject:
                raise Refused(E.JSStreamStoreFailedF(err="maximum messages per subject exceeded"))
    return Checked(subject, hdr, payload, msg_id, rollup, ttl, incr)


_SIMPLE_HEADERS = H.header_lines(H.MSG_ID, H.EXPECTED_STREAM, H.BATCH_ID, H.BATCH_SEQUENCE, H.BATCH_COMMIT)
_EXPECTED_LAST_MSG_ID = H.EXPECTED_LAST_MSG_ID.encode()


def _check_msg_id(stream: Stream, diff: StagedDiff, hdr: bytes) -> str:
    """The message id's checks: not twice in the batch, not stored inside the duplicate window."""
    msg_id = msg_id_in(hdr)
    if not msg_id:
        return ""
    if msg_id in diff.msg_ids:
        raise Refused(E.JSAtomicPublishContainsDuplicateMessageErr())
    stored = stream.dedupe.lookup(msg_id)
    if stored is not None:
        raise Duplicate(stored)
    diff.msg_ids.add(msg_id)
    return msg_id


def _check_headers(
    stream: Stream, diff: StagedDiff, subject: str, hdr: bytes, payload: bytes, clseq: int | None
) -> tuple[bytes, str, int | None, int | None, bytes, bytes | None]:
    """`check_message`'s header checks in full: the block (a schedule may rewrite it), the
    message id, TTL, counter increment, roll-up and the raw roll-up value."""
    cfg = stream.cfg
    rollup = b""
    ttl: int | None = 0
    incr: int | None = None
    if hdr and hdr.find(counters.HDR_INCR) >= 0:
        incr, incr_error = counters.check_incr(hdr, payload, cfg.allow_msg_counter)
        if incr_error is not None:
            raise Refused(incr_error)
    if wrong_stream(hdr, stream.ingest.name_b):
        raise Refused(E.JSStreamNotMatchErr())
    if hdr:
        ttl = message_ttl(hdr)
        if ttl != 0 and not cfg.allow_msg_ttl:
            raise Refused(E.JSMessageTTLDisabledErr())
        if ttl is None:
            raise Refused(E.JSMessageTTLInvalidErr())
    msg_id = _check_msg_id(stream, diff, hdr)
    source_error = getattr(E, "JSMessageSourceHdrNotAllowedErr", None)
    if source_error is not None and get_header(hdr, H.STREAM_SOURCE.encode()) is not None:
        raise Refused(source_error())
    if cfg.allow_msg_counter and incr is None:
        raise Refused(E.JSMessageIncrMissingErr())

    expected = _parse_uint(get_header(hdr, H.EXPECTED_LAST_SEQUENCE.encode()))
    if expected is not None and clseq is None:
        clseq = stream.store.fast_state().last_seq
    if expected is not None and expected != clseq:
        raise Refused(E.JSStreamWrongLastSequenceErrF(seq=clseq))
    if expected is not None and diff.inflight:
        raise Refused(E.JSStreamWrongLastSequenceConstantErr())
    per_subject = _parse_uint(get_header(hdr, H.EXPECTED_LAST_SUBJECT_SEQUENCE.encode()))
    override = get_header(hdr, H.EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT.encode())
    if per_subject is not None:
        seq_subject = override.decode() if override else subject
        if seq_subject in diff.inflight:
            raise Refused(E.JSStreamWrongLastSequenceConstantErr())
        known = diff.expected_per_subject.get(seq_subject)
        if known is not None:
            if known != per_subject:
                raise Refused(E.JSStreamWrongLastSequenceErrF(seq=known))
        else:
            try:
                last = stream.store.load_last_msg(seq_subject).seq
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                last = 0
            except (StoreError, OSError):
                raise Refused(E.JSStreamWrongLastSequenceErrF(seq=0)) from None
            if last != per_subject:
                raise Refused(E.JSStreamWrongLastSequenceErrF(seq=last))
            diff.expected_per_subject[seq_subject] = last
    elif override:
        raise Refused(E.JSStreamExpectedLastSeqPerSubjectInvalid())
    if hdr and hdr.find(_HDR_SCHEDULE_ANY) >= 0:
        hdr, schedule_error, _ = check_publish(stream, subject, hdr)
        if schedule_error is not None:
            raise Refused(schedule_error)

    rollup = rollup_in(hdr)
    if rollup:
        refused = rollup_refused(cfg, rollup)
        if refused is not None:
            raise Refused(refused[0])
        # A batch's own roll-up rules: not over what the batch itself stores.
        if rollup == b"sub" and subject in diff.inflight:
            raise Refused(E.JSStreamRollupFailedF(err="batch rollup sub invalid"))
        if rollup == b"all" and diff.inflight:
            raise Refused(E.JSStreamRollupFailedF(err="batch rollup all invalid"))
    return hdr, msg_id, ttl, incr, rollup, rollup or None


def store_checked(stream: Stream, msg: Checked) -> int | ApiError:
    """Store a checked message as a publish would: a counter increment becomes the new total
    (read from the store, so increments earlier in the same batch count), the TTL applies."""
    hdr, payload = msg.hdr, msg.payload
    if stream.cfg.allow_msg_counter and msg.incr is not None:
        counted = counters.apply_incr(stream.store, msg.subject, hdr, payload, msg.incr)
        if not isinstance(counted, tuple):
            return counted
        hdr, payload, _ = counted
    return stream.ingest.commit(msg.subject, hdr, payload, msg.msg_id, msg.rollup, ttl=msg.ttl)


def recover_partial_batch(stream: Stream) -> int:
    """After a restart: remove an atomic batch whose commit a crash cut short (its last stored
    message has a batch sequence but no commit header). Returns how many messages went."""
    if not stream.cfg.allow_atomic:
        return 0
    store = stream.store
    try:
        last = store.load_last_msg(">")
    except (StoreError, OSError):
        return 0
    hdr = last.hdr or b""
    if not hdr or get_header(hdr, BATCH_ID) is None or get_header(hdr, BATCH_COMMIT) is not None:
        return 0
    batch_seq = _parse_uint(get_header(hdr, BATCH_SEQUENCE))
    if not batch_seq:
        return 0
    first = last.seq - batch_seq + 1
    keep = first - 1
    try:
        store.truncate(keep)
    except (StoreError, OSError) as exc:
        stream.server.logger.error(
            "JetStream could not remove the partial batch of stream '%s': %s", stream.name, exc
        )
        return 0
    stream.server.logger.warning(
        "JetStream removed a partial batch write of stream '%s' (seq %d to %d)", stream.name, first, last.seq
    )
    return batch_seq
