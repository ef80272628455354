"""A stream's ingest: what becomes of a message published on its subjects (nats-server
``processInboundJetStreamMsg`` and ``processJetStreamMsg``, stream.go).

Every check a publish meets is written here once, in nats-server's order (`StreamIngest.process`:
sealed, size, subject transform, the headers — counter increment, expected stream, TTL, expected
last sequences, schedule, source header, message id, expected last id, roll-up, header size —,
counter total, then `StreamIngest.commit`: interest, account limits, TTL validity, the store,
and what follows a store). There are two ways in:

- one message: `StreamIngest.on_msg` (traced: `StreamIngest.on_traced`), from the
  subscription's per-message callback;
- a run: `StreamIngest.ingest_run`, the messages of one client read that reached the
  stream, in order. It looks for stretches of messages that every check passes for without a
  lookup beyond the duplicate window — the stream's config leaves nothing else to check
  (``simple``: not sealed, no transform, counters, interest retention, republish or schedules),
  and each message is within the size limits, not a fast batch's, and has no header block or one
  whose only ``Nats-`` headers are ``Nats-Msg-Id`` and this stream as ``Nats-Expected-Stream``
  (recognised generically: a block parsed once, the next ones compared with it around the id) —
  and stores each such stretch in one pass (``MessageStore.store_run``, after ``run_fits`` and the
  account's ``room_for_run``), its ids recorded and its PubAcks formatted together
  (`StreamIngest._commit_stretch`). Any other message, and a duplicate, goes through
  `StreamIngest.process` in its place, so each message gets what it would one by one.

Messages copied in by a mirror or a source take `StreamIngest.process_sourced`, messages the
server itself produces `StreamIngest.store_internal`: the same commit, without the
publisher's preconditions or a PubAck.
"""

from __future__ import annotations

import time
from operator import add
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api.codec import encode_pub_ack_error, finish_pub_ack, pub_ack_prefix, pub_acks
from pyjetstream.api.constants import MAX_HEADER_SIZE
from pyjetstream.api.counters import counter_pub_ack
from pyjetstream.api.enums import RetentionPolicy, StorageType
from pyjetstream.api.fast_batch import FAST_BATCH_SUFFIX, is_fast_batch_reply
from pyjetstream.api.gojson import go_quote
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.msgtrace import MSG_TRACE_DEST, MSG_TRACE_DEST_DISABLED
from pyjetstream.api.ttl import message_ttl
from pyjetstream.protocol.headers import append_headers, get_header, remove_header, set_header
from pyjetstream.server.jetstream import counters
from pyjetstream.server.jetstream.dedupe import msg_id_of
from pyjetstream.server.jetstream.ingest import IngestLimits, too_many_requests
from pyjetstream.server.jetstream.schedules import check_publish
from pyjetstream.server.jetstream.store.base import (
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    StoreError,
)
from pyjetstream.server.subject_transform import SubjectTransform

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.host import Trace
    from pyjetstream.server.jetstream.stream import Stream

HDR_MSG_ID = H.MSG_ID.encode()
HDR_EXPECTED_STREAM = H.EXPECTED_STREAM.encode()
HDR_EXPECTED_LAST_SEQ = H.EXPECTED_LAST_SEQUENCE.encode()
HDR_EXPECTED_LAST_SUBJ_SEQ = H.EXPECTED_LAST_SUBJECT_SEQUENCE.encode()
HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ = H.EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT.encode()
HDR_EXPECTED_LAST_MSG_ID = H.EXPECTED_LAST_MSG_ID.encode()
HDR_STREAM_SOURCE = H.STREAM_SOURCE.encode()
HDR_ROLLUP = H.ROLLUP.encode()
HDR_REQUEST_INFO = H.REQUEST_INFO.encode()
HDR_TTL = H.TTL.encode()
HDR_BATCH_ID = H.BATCH_ID.encode()
HDR_SCHEDULE_ANY = H.SCHEDULE.encode()  # also the start of Nats-Schedule-*, Nats-Scheduler
HDR_TRACE_DEST = MSG_TRACE_DEST.encode()
TRACE_DISABLED = MSG_TRACE_DEST_DISABLED.encode()
NATS_PREFIX = H.NATS_PREFIX
#: A block whose only ``Nats-`` headers are these skips the checks of every other header.
ID_HEADERS = H.header_lines(H.MSG_ID, H.EXPECTED_STREAM)
_ID_LINE = ID_HEADERS[0]
NS_PER_S = 1_000_000_000
#: How nats-server words a traced message refused for its size (``ErrMaxPayload``).
MAX_PAYLOAD_TEXT = "maximum payload exceeded"


def batched(reply: str, hdr: bytes | None) -> bool:
    """Whether a publish may be part of a fast batch (its reply) or an atomic one (its headers):
    the batch takes it (``batch_fast.py``, ``batch_atomic.py``), never a stretch of a run nor
    a write of its own (`StreamIngest.process` looks closer)."""
    return reply.endswith(FAST_BATCH_SUFFIX) or (hdr is not None and HDR_BATCH_ID in hdr)


def _parse_uint(value: bytes | None) -> int | None:
    """An expected-sequence header: None when absent or empty; a value that is not a number is
    nats-server's ``parseInt64`` -1, which never equals a sequence (so the check fails)."""
    if not value:
        return None
    return int(value) if value.isdigit() else -1


class _Answered:
    """A publish the header checks settled (refused, or a duplicate): ``answer`` (None: none)."""

    __slots__ = ("answer",)

    def __init__(self, answer: bytes | None) -> None:
        self.answer = answer


#: What the header checks pass on: the block to store, message id, TTL, counter increment, roll-up.
_Checked = tuple[bytes, str, int | None, int | None, bytes]


class StreamIngest:
    """A stream's ingest (see the module docstring)."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.writes = stream.writes
        self.dedupe = stream.dedupe
        self.limits = IngestLimits(stream.server.options)
        self.ingest_max = self.limits.max_size or 1 << 62  # bytes a message may bring (ingest.py)
        #: The trace of the message being processed, if it is traced (`on_traced`).
        self.trace: Trace | None = None
        self._read = 0  # the client read whose first publish was written alone (on_msg)
        self.configure()

    def configure(self) -> None:
        """What the config decides once (not per message): the transforms, and whether the run
        path may take a stretch (``simple``: of nats-server's checks only the size, expected
        stream, duplicate and limit checks can apply — not sealed, no input transform, counters,
        republish or schedules, and messages not kept by interest)."""
        stream = self.stream
        cfg = stream.cfg
        st = cfg.subject_transform
        self.transform = SubjectTransform.compile(st.src, st.dest) if st and st.dest else None
        rp = cfg.republish
        # nats-server: no destination means no republish transform (NewSubjectTransform returns nil).
        self.republish = SubjectTransform.compile(rp.src or ">", rp.dest) if rp and rp.dest else None
        self.interest = cfg.retention == RetentionPolicy.INTEREST
        self.simple = not (
            cfg.sealed
            or self.transform is not None
            or cfg.allow_msg_counter
            or self.interest
            or self.republish is not None
            or stream.schedules is not None
        )
        self.memory = cfg.storage == StorageType.MEMORY
        self.ack_prefix = pub_ack_prefix(cfg.name, stream.engine.domain)
        self._name = cfg.name.encode()

    # --- ways in ------------------------------------------------------------------------------
    def on_msg(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: object) -> None:
        """One publish. The first of a client read to a file stream (a synchronous publisher's
        only one) is written alone and answered at once; the others of the read are held in one
        store batch until the read is done (``write_batch.py``)."""
        if self.stream.closed:
            return
        if len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self.ingest_max and (
            self._queue_refuses(subject, reply, hdr, payload)
        ):
            return
        writes = self.writes
        if not writes.holding and not self.memory:
            self._hold_unless_first(reply, hdr)
        answer = self.process(subject, reply, hdr, payload)
        if answer is not None and reply:
            writes.respond(reply, answer)

    def _hold_unless_first(self, reply: str, hdr: bytes | None) -> None:
        """A file stream's publish while nothing is held: the first of a client read (not a
        batch's) is written alone; any other starts holding the writes until the read is done."""
        read = self.stream.server.current_read()
        if read and read != self._read and not batched(reply, hdr):
            self._read = read
        else:
            self.writes.hold_for_read()

    def on_traced(
        self, trace: Trace, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: object
    ) -> None:
        """A traced publish (nats-server ``processInboundJetStreamMsg`` with a trace): a ``js``
        event, completed by the checks; a delivered message is stored with its trace turned off
        (``Nats-Trace-Dest: trace disabled``) so that its deliveries are not traced again, and a
        trace-only one goes through every check but is neither stored nor acknowledged."""
        trace.jetstream(self.stream.name)
        if trace.only and batched(reply, hdr):
            return  # a batch is staged as a whole: a trace-only part of one is not taken
        if hdr is not None and not trace.only:
            hdr = set_header(hdr, HDR_TRACE_DEST, TRACE_DISABLED)
        self.trace = trace
        try:
            self.on_msg(subject, reply, hdr, payload, client)
        finally:
            self.trace = None

    def ingest_run(
        self, subjects: list[str], replies: list[str], hdrs: list[bytes | None], payloads: list[bytes], client: object
    ) -> None:
        """The messages of one client read that reached the stream, in order: equal in effect to
        `on_msg` for each (nats-server has no such path: ``processInboundJetStreamMsg`` runs
        per message). Stretches that every check passes for are stored in one pass; any other
        message goes through `process` in its place. The writes are held as one by one holds
        them (`_first_of_read`), so consumers see the messages and publishers get their PubAcks
        at the same points of the read (the router's differential test compares the bytes each
        client receives)."""
        if len(subjects) == 1:
            self.on_msg(subjects[0], replies[0], hdrs[0], payloads[0], client)
            return
        stream = self.stream
        run = _Run(subjects, replies, hdrs, payloads, self)
        k = self._first_of_read(run)
        n = run.n
        while k < n and not stream.closed:
            if self.simple and self.trace is None and not batched(replies[k], hdrs[k]):
                end, ids = self._stretch(run, k)
                if end > k:
                    self._store_stretch(run, k, end, ids)
                    k = end
                    continue
            self._one(subjects[k], replies[k], hdrs[k], payloads[k])
            k += 1

    def _first_of_read(self, run: _Run) -> int:
        """`on_msg`'s rule for the run's first publishes while a file stream holds nothing: the
        first of the read written alone (one refused by the ingest queue is not it), then the
        writes held until the read is done. Returns the first publish left to the run."""
        writes = self.writes
        k = 0
        while k < run.n and not writes.holding and not self.memory and not self.stream.closed:
            subject, reply, hdr, payload = run.subjects[k], run.replies[k], run.hdrs[k], run.payloads[k]
            if len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self.ingest_max and (
                self._queue_refuses(subject, reply, hdr, payload)
            ):
                k += 1
                continue
            self._hold_unless_first(reply, hdr)
            if writes.holding:
                break
            answer = self.process(subject, reply, hdr, payload)
            if answer is not None and reply:
                writes.respond(reply, answer)
            k += 1
        return k

    def _one(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        """A message of a run that is not part of a stretch: `on_msg`'s work (the run holds
        the writes)."""
        if len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self.ingest_max and (
            self._queue_refuses(subject, reply, hdr, payload)
        ):
            return
        answer = self.process(subject, reply, hdr, payload)
        if answer is not None and reply:
            self.writes.respond(reply, answer)

    def _queue_refuses(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bool:
        """nats-server's ingest queue limit (``ingest.py``): a message larger than it is dropped,
        answered ``429`` (at once: it overtakes earlier PubAcks, as nats-server's does). Called
        for a message larger than ``ingest_max``."""
        if not self.limits.refuses(subject, reply, hdr, payload):
            return False
        if reply:
            too_many, body = too_many_requests(self.stream.name)
            self.stream.server.publish_internal(reply, body, hdr=too_many)
        return True

    # --- the run path ---------------------------------------------------------------------------
    def _stretch(self, run: _Run, k: int) -> tuple[int, list[str]]:
        """How far from ``k`` the messages are ones every check of `process` passes for
        without a lookup (see the module docstring), and their message ids (``""``: none)."""
        n = run.n
        if run.within_limits and run.no_nats:  # no header with anything to check, within the limits
            return n, [""] * (n - k)
        hdrs = run.hdrs
        raws: list[bytes] = []
        add = raws.append
        block = head = tail = b""  # the block compared with: whole (no id), or around its id
        lh = lt = 0
        i = k
        while i < n:
            hdr = hdrs[i]
            if hdr is None or hdr == block:
                add(b"")
            elif lh and hdr.startswith(head) and hdr.endswith(tail) and len(hdr) >= lh + lt:
                add(hdr[lh : len(hdr) - lt])
            elif NATS_PREFIX not in hdr:  # no header with anything to check
                add(b"")
            else:
                shape = self._block_shape(hdr)
                if shape is None:
                    break
                block, head, tail, raw = shape
                lh, lt = len(head), len(tail)
                add(raw)
            if not run.within_limits and not self._within_limits(run, i):
                raws.pop()
                break
            i += 1
        ids = _ids_of(raws)
        return k + len(ids), ids

    def _within_limits(self, run: _Run, i: int) -> bool:
        """Whether message ``i`` of a run is within the size limits (the ingest queue's, the
        stream's max_msg_size, the header block's) and not a fast batch's."""
        hdr = run.hdrs[i]
        hl = len(hdr) if hdr is not None else 0
        size = hl + len(run.payloads[i])
        reply = run.replies[i]
        return (
            hl <= MAX_HEADER_SIZE
            and size <= run.max_size
            and size + len(run.subjects[i]) + len(reply) <= self.ingest_max
            and not reply.endswith(FAST_BATCH_SUFFIX)
        )

    def _block_shape(self, hdr: bytes) -> tuple[bytes, bytes, bytes, bytes] | None:
        """A header block the run path may take — its only ``Nats-`` headers a message id and
        this stream as the expected one — as ``(block, head, tail, id)``: ``block`` itself when
        it has no id (the next blocks equal to it are the same case), else ``head + id + tail``
        with the id's raw value; ``None`` for any other block (`process` takes it)."""
        if not H.only_these_nats_headers(hdr, ID_HEADERS):
            return None
        expected = get_header(hdr, HDR_EXPECTED_STREAM)
        if expected and expected != self._name:
            return None
        at = hdr.find(_ID_LINE)
        if at < 0:
            return hdr, b"", b"", b""
        start = at + len(_ID_LINE)
        end = hdr.find(b"\r\n", start)
        if end < 0:
            return None
        return b"", hdr[:start], hdr[end:], hdr[start:end]

    def _store_stretch(self, run: _Run, lo: int, hi: int, ids: list[str]) -> None:
        """A stretch (`_stretch`) cut before each duplicate (of an earlier message, or of
        one before it in the stretch): the pieces stored in one pass each, the duplicates
        answered by `process` (which finds them as one by one would)."""
        with_ids = ids.count("") < len(ids)
        dups = self.dedupe.duplicates(ids) if with_ids else []
        start = lo
        for i, _ in [*dups, (hi - lo, 0)]:
            at = lo + i
            if at > start:
                self._commit_stretch(run, start, at, ids[start - lo : at - lo] if with_ids else None)
            if at < hi:
                run.one(at)
            start = at + 1

    def _commit_stretch(self, run: _Run, lo: int, hi: int, ids: list[str] | None) -> None:
        """`commit` for each message ``lo`` to ``hi`` (none a duplicate; ``ids``: their
        message ids, ``None``: none has one), with its PubAck, in one pass when nothing can refuse
        or trim one of them (the account's room: ``room_for_run``; the store's limits:
        ``run_fits``), else one by one. A write that fails stops the pass: the message it failed
        for is answered with the error (the earlier ones' PubAcks become it too:
        ``WriteBatch.store_failed``) and the rest go one by one."""
        stream = self.stream
        store = stream.store
        engine = stream.engine
        storage = stream.cfg.storage
        n = hi - lo
        subs, blocks, datas, sizes = run.slice(lo, hi)
        # What commit's checks count, summed: each record_size(len(subject), len(hdr), len(payload)).
        base = store.record_size(0, 0, 0)
        with_hdr = n - blocks.count(b"") if run.nones < run.n else 0
        records = n * base + with_hdr * (store.record_size(0, 1, 0) - base - 1) + sizes
        largest = max(map(add, map(len, blocks), map(len, datas))) if stream.cfg.max_msg_size > 0 else 0
        if not engine.room_for_run(storage, n, records) or not store.run_fits(subs, largest, records):
            for k in range(lo, hi):
                run.one(k)
            return
        first, tss, error = store.store_run(subs, blocks, datas)
        done = len(tss)
        if done:
            if done < n:
                sizes = sum(map(len, subs[:done])) + sum(map(len, blocks[:done])) + sum(map(len, datas[:done]))
            engine.note_writes(storage, done, sizes)
            if ids is not None:
                self.dedupe.record_run(ids, first, tss)
            else:
                self.dedupe.last = ""
            if stream.cfg.max_age:
                stream.watch_expiry(0, 0)
            if stream.consumers:
                self.writes.signal_run(first, subs[:done] if done < n else subs)
            if not stream.cfg.no_ack:
                self._ack_stretch(run.replies[lo : lo + done], first)
        if error is not None:
            failed = lo + done
            result = self._store_error(error)
            if run.replies[failed] and not stream.cfg.no_ack:
                self.writes.respond(run.replies[failed], self.error(result))
            for k in range(failed + 1, hi):
                run.one(k)

    def _ack_stretch(self, replies: list[str], first: int) -> None:
        """The PubAcks of messages stored from ``first`` on, formatted together, to those with a
        reply."""
        acks = pub_acks(self.ack_prefix, first, len(replies))
        if "" in replies:
            self.writes.respond_all([(reply, ack) for reply, ack in zip(replies, acks, strict=True) if reply])
        else:
            self.writes.respond_all(list(zip(replies, acks, strict=True)))

    # --- the checks -------------------------------------------------------------------------------
    def process(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bytes | None:
        """Store one published message; return the PubAck bytes (``None``: nothing to answer).
        The checks run in nats-server's order (``processJetStreamMsg``)."""
        stream = self.stream
        if reply and reply.endswith(FAST_BATCH_SUFFIX) and is_fast_batch_reply(reply):  # batch_fast.py
            stream.fast.process(subject, reply, hdr, payload)
            return None
        if hdr and HDR_BATCH_ID in hdr:
            batch_id = get_header(hdr, HDR_BATCH_ID)
            if batch_id:  # an atomic batch (batch_atomic.py) stages and checks on its own
                return stream.atomic.process(batch_id.decode(), subject, reply, hdr, payload)
        cfg = stream.cfg
        can_respond = bool(reply) and not cfg.no_ack
        if cfg.sealed:
            return self._refuse(E.JSStreamSealedErr(), can_respond)
        # 2.15.1 checks max_msg_size on the message as sent before any header (verified: a
        # too-big message with a bad Nats-Expected-Stream, Nats-TTL, Nats-Schedule... gets 10054);
        # a counter's rewritten message is checked again below.
        if 0 <= cfg.max_msg_size < (len(hdr) if hdr else 0) + len(payload):
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        if self.transform is not None:  # 2.10: the input transform applies before anything else
            subject = self.transformed(subject)
        checked: _Checked = (b"", "", 0, None, b"")
        if hdr:
            result = self._check_headers(subject, hdr, payload, can_respond)
            if isinstance(result, _Answered):
                return result.answer
            checked = result
        hdr, msg_id, ttl, incr, rollup = checked
        total = 0
        if cfg.allow_msg_counter:
            if incr is None:
                return self._refuse(E.JSMessageIncrMissingErr(), can_respond)
            counted = counters.apply_incr(stream.store, subject, hdr, payload, incr)
            if not isinstance(counted, tuple):
                return self._refuse(counted, can_respond)
            hdr, payload, total = counted
        if 0 <= cfg.max_msg_size < len(hdr) + len(payload):
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        seq = self.commit(subject, hdr, payload, msg_id, rollup, ttl=ttl)
        if not can_respond or seq == 0:  # 0: a trace-only message (not stored)
            return None
        if type(seq) is not int:
            return self.error(seq)  # type: ignore[arg-type]
        if cfg.allow_msg_counter:
            return counter_pub_ack(self.ack_prefix, seq, total)
        return finish_pub_ack(self.ack_prefix, seq)

    def _check_headers(self, subject: str, hdr: bytes, payload: bytes, can_respond: bool) -> _Checked | _Answered:
        """`process`'s checks of a header block, in nats-server 2.15's order (expectations,
        schedules, the source header, dedupe, last msg id, roll-up, header size). A block whose
        only ``Nats-`` headers are a message id and an expected stream skips the checks of the
        headers it cannot hold."""
        stream = self.stream
        cfg = stream.cfg
        full = not H.only_these_nats_headers(hdr, ID_HEADERS)
        ttl: int | None = 0
        incr: int | None = None
        rollup = b""
        if full:
            hdr = remove_header(hdr, HDR_REQUEST_INFO)
            if counters.HDR_INCR in hdr:
                incr, incr_error = counters.check_incr(hdr, payload, cfg.allow_msg_counter)
                if incr_error is not None:
                    return _Answered(self._refuse(incr_error, can_respond))
        expected = get_header(hdr, HDR_EXPECTED_STREAM)
        if expected and expected != self._name:
            return _Answered(self._refuse(E.JSStreamNotMatchErr(), can_respond, "expected stream does not match"))
        if full:
            # TTL'd messages are refused entirely where TTLs are off (an invalid TTL is not
            # a TTL here: it gets 10165 later, after the account limits, as in nats-server).
            ttl = message_ttl(hdr)
            if ttl and not cfg.allow_msg_ttl:
                return _Answered(self._refuse(E.JSMessageTTLDisabledErr(), can_respond, "message TTL disabled"))
            refused = self._check_expected(subject, hdr, can_respond)
            if refused is not None:
                return refused
            if HDR_SCHEDULE_ANY in hdr:
                hdr, schedule_error = check_publish(stream, subject, hdr)
                if schedule_error is not None:
                    return _Answered(self._refuse(schedule_error, can_respond))
            if get_header(hdr, HDR_STREAM_SOURCE):  # only sourcing may stamp it (2.15)
                return _Answered(self._refuse(E.JSMessageSourceHdrNotAllowedErr(), can_respond))
        msg_id = ""
        raw_id = get_header(hdr, HDR_MSG_ID)
        if raw_id:
            msg_id = msg_id_of(raw_id)
            seq = self.dedupe.lookup(msg_id)
            if seq is not None:
                if self.trace is not None:
                    self.trace.jetstream_error("msgid is duplicate")
                return _Answered(finish_pub_ack(self.ack_prefix, seq, True) if can_respond else None)
        if full:
            last_and_rollup = self._check_last_id_and_rollup(hdr, can_respond)
            if isinstance(last_and_rollup, _Answered):
                return last_and_rollup
            rollup = last_and_rollup
        # (max_msg_size is checked first, in process, as nats-server does.)
        if len(hdr) > MAX_HEADER_SIZE and not 0 <= cfg.max_msg_size < len(hdr) + len(payload):
            return _Answered(self._refuse(E.JSStreamHeaderExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT))
        return hdr, msg_id, ttl, incr, rollup

    def _check_expected(self, subject: str, hdr: bytes, can_respond: bool) -> _Answered | None:
        """``Nats-Expected-Last-Subject-Sequence`` (2.12+: on the subject or filter named by
        ``…-Subject``) and ``Nats-Expected-Last-Sequence``."""
        stream = self.stream
        want = _parse_uint(get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ))
        if want is not None:
            on = get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ)
            last = stream.last_seq_on_subject(on.decode(errors="replace") if on else subject)
            if last != want:
                text = f"last sequence by subject mismatch: {want} vs {last}"
                return _Answered(self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text))
        elif get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ):
            return _Answered(self._refuse(E.JSStreamExpectedLastSeqPerSubjectInvalid(), can_respond))
        want = _parse_uint(get_header(hdr, HDR_EXPECTED_LAST_SEQ))
        if want is not None:
            last = stream.store.fast_state().last_seq
            if last != want:
                text = f"last sequence mismatch: {want} vs {last}"
                return _Answered(self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text))
        return None

    def _check_last_id_and_rollup(self, hdr: bytes, can_respond: bool) -> bytes | _Answered:
        """``Nats-Expected-Last-Msg-Id``, then ``Nats-Rollup`` (its value, lower-cased)."""
        cfg = self.stream.cfg
        want_id = get_header(hdr, HDR_EXPECTED_LAST_MSG_ID)
        if want_id:
            last_id = self.dedupe.last_id()
            want = msg_id_of(want_id)
            if want != last_id:
                text = f"last msgid mismatch: {go_quote(want)} vs {go_quote(last_id)}"
                return _Answered(self._refuse(E.JSStreamWrongLastMsgIDErrF(id=last_id), can_respond, text))
        rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower()
        if rollup:
            if not cfg.allow_rollup_hdrs or cfg.deny_purge:
                err = E.JSStreamRollupFailedF(err="rollup not permitted")
                return _Answered(self._refuse(err, can_respond, "rollup not permitted"))
            if rollup not in (b"sub", b"all"):
                text = f"rollup value invalid: {go_quote(rollup.decode(errors='replace'))}"
                return _Answered(self._refuse(E.JSStreamRollupFailedF(err=text), can_respond, text))
        return rollup

    def transformed(self, subject: str) -> str:
        """The subject a message is checked and stored under: the stream's input transform
        applied where it matches."""
        transform = self.transform
        if transform is not None:
            out = transform.match_and_apply(subject)
            if out is not None:
                return out
        return subject

    # --- answers ----------------------------------------------------------------------------------
    def error(self, error: ApiError) -> bytes:
        """The PubAck of a refused or failed publish."""
        return encode_pub_ack_error(self.stream.name, error)

    def _refuse(self, error: ApiError, can_respond: bool, trace_text: str = "") -> bytes | None:
        """A refused publish: its PubAck error (when it can be answered), and the error of a
        traced message's ``js`` event — as nats-server's ``processJetStreamMsg`` returns it
        (``trace_text`` where that is not the API error's own text)."""
        if self.trace is not None:
            self.trace.jetstream_error(trace_text or f"{error.description} ({error.err_code})")
        return self.error(error) if can_respond else None

    def _store_error(self, exc: StoreError) -> ApiError:
        """The PubAck error of a message the store refused: its limits, or a failed write."""
        if isinstance(exc, (ErrMaxMsgs, ErrMaxBytes, ErrMaxMsgsPerSubject, ErrMsgTooLarge)):
            return E.JSStreamStoreFailedF(err=str(exc))
        return self.writes.store_failed(exc)

    # --- the commit -------------------------------------------------------------------------------
    def commit(
        self,
        subject: str,
        hdr: bytes,
        payload: bytes,
        msg_id: str,
        rollup: bytes = b"",
        ts: int | None = None,
        ttl: int | None = 0,
    ) -> int | ApiError:
        """Interest, account limits, store, then what follows a store; the sequence or the error
        (0: a trace-only message, checked but not stored). ``ttl`` is the message's ``Nats-TTL``
        in seconds (None: invalid, refused with 10165)."""
        stream = self.stream
        cfg = stream.cfg
        store = stream.store
        engine = stream.engine
        # nats-server's order: a message no consumer wants is skipped before the account limits
        # and the TTL's validity are looked at (a rollup still purges what it rolls up).
        if self.interest and not stream.has_interest_for(subject):
            return self._skip(subject, msg_id, rollup)
        limit_error = engine.check_account_limits(
            cfg.storage, store.record_size(len(subject), len(hdr), len(payload))
        )
        if limit_error is not None:
            return limit_error
        if ttl:
            sdm_ttl = cfg.subject_delete_marker_ttl // NS_PER_S
            if ttl is not None and 0 < ttl < sdm_ttl and cfg.max_msgs_per_subject != 1:
                # A TTL shorter than the markers' could expire a marker's subject unseen.
                ttl = sdm_ttl
                hdr = append_headers(remove_header(hdr, HDR_TTL), [("Nats-TTL", str(ttl))])
        elif ttl is None:
            return E.JSMessageTTLInvalidErr()
        trace = self.trace
        if trace is not None:
            trace.jetstream_stored(subject, False)
            if trace.only:
                return 0  # traced only: checked, not stored, not acknowledged
        republish_to = self.republish.match_and_apply(subject) if self.republish is not None else None
        last_on_subject = stream.last_seq_on_subject(subject) if republish_to is not None else 0
        try:
            seq, ts = store.store_msg(subject, hdr, payload, ts, ttl)
        except StoreError as exc:
            return self._store_error(exc)
        engine.note_write(cfg.storage, len(hdr) + len(payload) + len(subject))
        schedules = stream.schedules
        if schedules is not None:
            schedules.on_stored(seq, subject, hdr, ts)
        self.dedupe.record(msg_id, seq, ts)
        if rollup:
            stream.purge(subject=subject if rollup == b"sub" else "", keep=1)
        if schedules is not None and HDR_SCHEDULE_ANY in hdr:
            ended = schedules.purge_target(hdr)
            if ended:
                stream.purge(subject=ended)
        if republish_to is not None:
            stream.republish_msg(republish_to, subject, seq, ts, last_on_subject, hdr, payload)
        if ttl or cfg.max_age:
            stream.watch_expiry(ts, ttl)
        if stream.consumers:
            self.writes.signal(seq, subject)
        return seq

    def _skip(self, subject: str, msg_id: str, rollup: bytes) -> int:
        """A message an interest stream's consumers do not want: its sequence is used up, its id
        remembered, its roll-up applied (nats-server ``processJetStreamMsg``)."""
        stream = self.stream
        trace = self.trace
        if trace is not None:
            trace.jetstream_stored(subject, True)
            if trace.only:
                return 0
        seq = stream.store.skip_msg()
        self.dedupe.record(msg_id, seq, time.time_ns())
        if rollup:
            stream.purge(subject=subject if rollup == b"sub" else "")
        return seq

    # --- what is not published --------------------------------------------------------------------
    def process_sourced(
        self, subject: str, hdr: bytes | None, payload: bytes, seq: int = 0, ts: int = 0
    ) -> ApiError | None:
        """Store a message a mirror or a source copied from another stream (``sourcing.py``).

        As nats-server does since 2.10.14 (sources) and 2.11 (mirrors), the publisher's
        preconditions are not checked again (the origin did) and there is no PubAck. A mirror
        passes the origin's ``seq`` and ``ts``, which the copy keeps: this stream must end at
        ``seq - 1`` and does not de-duplicate. A source's copy takes the next sequence and is
        dropped when its ``Nats-Msg-Id`` is inside the duplicate window. Roll-up headers purge only
        where this stream allows roll-ups. Returns the error that kept the message out (``None``:
        stored, or dropped as a duplicate).
        """
        stream = self.stream
        cfg = stream.cfg
        if stream.closed or cfg.sealed:
            return E.JSStreamSealedErr()
        if seq and stream.store.fast_state().last_seq != seq - 1:
            return E.JSStreamSequenceNotMatchErr()
        if not seq:
            subject = self.transformed(subject)
        msg_id = ""
        rollup = b""
        ttl: int | None = 0
        if hdr:
            raw_id = get_header(hdr, HDR_MSG_ID)
            if raw_id:
                msg_id = msg_id_of(raw_id)
                if not seq and self.dedupe.lookup(msg_id) is not None:
                    return None
            if cfg.allow_rollup_hdrs and not cfg.deny_purge:
                rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower()
                if rollup not in (b"sub", b"all"):
                    rollup = b""
            if len(hdr) > MAX_HEADER_SIZE:
                return E.JSStreamHeaderExceedsMaximumErr()
            ttl = message_ttl(hdr)
        else:
            hdr = b""
        if cfg.allow_msg_counter:
            incr, incr_error = counters.sourced_incr(hdr) if hdr else (None, None)
            if incr_error is not None:
                return incr_error
            if incr is None:
                return E.JSMessageIncrMissingErr()
            counted = counters.apply_incr(stream.store, subject, hdr, payload, incr)
            if not isinstance(counted, tuple):
                return counted
            hdr, payload, _total = counted
        if 0 <= cfg.max_msg_size < len(hdr) + len(payload):
            return E.JSStreamMessageExceedsMaximumErr()
        self.writes.hold_for_read()
        result = self.commit(subject, hdr, payload, msg_id, rollup, ts or None, ttl)
        return None if type(result) is int else result  # type: ignore[return-value]

    def store_internal(self, subject: str, hdr: bytes, payload: bytes) -> int | ApiError:
        """Store a message the server itself produces (a subject delete marker, a scheduled
        message): nats-server's ``processJetStreamMsg`` with ``sourced`` set, so the publisher's
        checks are skipped; its roll-up and TTL headers apply."""
        stream = self.stream
        cfg = stream.cfg
        if stream.closed or cfg.sealed:
            return E.JSStreamSealedErr()
        rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower() if hdr else b""
        if rollup not in (b"sub", b"all") or not cfg.allow_rollup_hdrs or cfg.deny_purge:
            rollup = b""
        return self.commit(subject, hdr, payload, "", rollup, ttl=message_ttl(hdr))


class _Run:
    """One run being ingested (`StreamIngest.ingest_run`): its messages and what is known of
    them as a whole, with C-speed passes once per run — how many have no header block, their
    sizes summed, and whether every one is within the size limits and not a fast batch's (else
    that is checked per message)."""

    __slots__ = (
        "hdr_bytes",
        "hdrs",
        "ingest",
        "max_size",
        "n",
        "no_nats",
        "nones",
        "payload_bytes",
        "payloads",
        "replies",
        "subject_bytes",
        "subjects",
        "within_limits",
    )

    def __init__(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        ingest: StreamIngest,
    ) -> None:
        self.subjects = subjects
        self.replies = replies
        self.hdrs = hdrs
        self.payloads = payloads
        self.ingest = ingest
        self.n = len(subjects)
        self.nones = hdrs.count(None)
        self.subject_bytes = sum(map(len, subjects))
        self.payload_bytes = sum(map(len, payloads))
        blocks = b"".join(filter(None, hdrs)) if self.nones < self.n else b""
        self.hdr_bytes = len(blocks)
        #: No header block has a ``Nats-`` header (none to check: the common case of other headers).
        self.no_nats = H.NATS_PREFIX not in blocks
        max_size = ingest.stream.cfg.max_msg_size
        self.max_size = max_size if max_size >= 0 else 1 << 62
        joined = "\n".join(replies)
        self.within_limits = FAST_BATCH_SUFFIX + "\n" not in joined + "\n" and self._sizes_within(len(joined))

    def _sizes_within(self, reply_bytes: int) -> bool:
        """Whether every message is within the ingest queue's, the stream's and the header
        block's size limits: the run's totals when they are (the common case), else its largest."""
        hdr_bytes = self.hdr_bytes
        largest_hdr = hdr_bytes if hdr_bytes <= MAX_HEADER_SIZE else max(map(len, filter(None, self.hdrs)))
        if largest_hdr > MAX_HEADER_SIZE:
            return False
        total = self.subject_bytes + reply_bytes + hdr_bytes + self.payload_bytes
        if total <= self.max_size and total <= self.ingest.ingest_max:
            return True
        largest = largest_hdr + max(map(len, self.payloads))
        return largest <= self.max_size and (
            largest + max(map(len, self.subjects)) + max(map(len, self.replies)) <= self.ingest.ingest_max
        )

    def one(self, i: int) -> None:
        """Message ``i`` through the per-message path (``StreamIngest._one``)."""
        self.ingest._one(self.subjects[i], self.replies[i], self.hdrs[i], self.payloads[i])

    def slice(self, lo: int, hi: int) -> tuple[list[str], list[bytes], list[bytes], int]:
        """Messages ``lo`` to ``hi``: subjects, header blocks (``b""``: none), payloads, and the
        sum of their lengths."""
        if lo == 0 and hi == self.n:
            subjects, payloads = self.subjects, self.payloads
            size = self.subject_bytes + self.payload_bytes + self.hdr_bytes
        else:
            subjects, payloads = self.subjects[lo:hi], self.payloads[lo:hi]
            size = -1
        if self.nones == self.n:
            blocks = [b""] * (hi - lo)
        elif not self.nones:
            blocks = self.hdrs[lo:hi]  # type: ignore[assignment]  # (no None in it)
        else:
            blocks = [h or b"" for h in self.hdrs[lo:hi]]
        if size < 0:
            size = sum(map(len, subjects)) + sum(map(len, blocks)) + sum(map(len, payloads))
        return subjects, blocks, payloads, size


def _ids_of(raws: list[bytes]) -> list[str]:
    """The message ids of a stretch (raw values between a block's ``Nats-Msg-Id:`` and its line's
    end; empty: none) as `msg_id_of` of ``get_header``'s value, for as many as are
    one line without ``Nats-`` (a value compared around, not parsed, could hide another line:
    the stretch ends before it). One join, check and decode for the lot in the common case."""
    joined = b"\n".join(raws)
    if b"\r" in joined or b"Nats-" in joined or joined.count(b"\n") != len(raws) - 1:
        for i, raw in enumerate(raws):
            if b"\r" in raw or b"\n" in raw or b"Nats-" in raw:
                raws = raws[:i]
                break
        joined = b"\n".join(raws)
        if not raws:
            return []
    if b" " not in joined and b"\t" not in joined:
        return msg_id_of(joined).split("\n")
    return [msg_id_of(raw.strip(b" \t")) for raw in raws]
