"""A stream's ingest: what becomes of a message published on its subjects (nats-server
``processInboundJetStreamMsg`` and ``processJetStreamMsg``, stream.go).

Every check a publish meets runs here in nats-server's order (`StreamIngest.process`: sealed,
size, subject transform, the headers — counter increment, expected stream, TTL, expected last
sequences, schedule, source header, message id, expected last id, roll-up, header size —, counter
total, then `StreamIngest.commit`: interest, account limits, TTL validity, the store, and what
follows a store); the rules other ways in share are ``ingest_rules.py``'s. There are two ways in:
one message (`StreamIngest.on_msg`, traced: `StreamIngest.on_traced`), from the subscription's
per-message callback, and a run (`StreamIngest.ingest_run`: ``ingest_run.py``), the messages of
one client read that reached the stream, in order, stored a stretch at a time where every check
is known to pass, each other message through `StreamIngest.process` in its place.

Messages copied in by a mirror or a source take `StreamIngest.process_sourced`, messages the
server itself produces `StreamIngest.store_internal`: the same commit, without the publisher's
preconditions or a PubAck.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from operator import add
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api.codec import encode_pub_ack_error, finish_pub_ack, pub_ack_prefix
from pyjetstream.api.counters import counter_pub_ack
from pyjetstream.api.enums import RetentionPolicy, StorageType
from pyjetstream.api.fast_batch import FAST_BATCH_SUFFIX, is_fast_batch_reply
from pyjetstream.api.gojson import go_quote
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.ttl import message_ttl
from pyjetstream.protocol.headers import append_headers, get_header, remove_header, set_header
from pyjetstream.protocol.subjects import compile_filter
from pyjetstream.server.jetstream import counters
from pyjetstream.server.jetstream.dedupe import msg_id_of
from pyjetstream.server.jetstream.ingest import IngestLimits, too_many_requests
from pyjetstream.server.jetstream.ingest_rules import (
    ID_HEADERS,
    ID_TTL_HEADERS,
    MAX_HEADER_SIZE,
    batched,
    expected_last_subject_seq,
    expected_seq,
    inert_too,
    max_size,
    msg_id_in,
    only_id_headers,
    rollup_in,
    rollup_refused,
    rollup_taken,
    wrong_stream,
)
from pyjetstream.server.jetstream.ingest_run import Run
from pyjetstream.server.jetstream.schedules import HDR_SCHEDULER, Found, check_publish
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
    from pyjetstream.server.jetstream.republish import Republisher
    from pyjetstream.server.jetstream.stream import Stream

HDR_EXPECTED_LAST_SEQ = H.EXPECTED_LAST_SEQUENCE.encode()
HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ = H.EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT.encode()
HDR_EXPECTED_LAST_MSG_ID = H.EXPECTED_LAST_MSG_ID.encode()
#: The line start every ``Nats-Expected-Last-*`` header has (``get_header`` is case-sensitive):
#: a block without it skips their four lookups.
EXPECTED_LAST_LINE = b"\r\nNats-Expected-Last"
HDR_STREAM_SOURCE = H.STREAM_SOURCE.encode()
HDR_REQUEST_INFO = H.REQUEST_INFO.encode()
HDR_TTL = H.TTL.encode()
HDR_BATCH_ID = H.BATCH_ID.encode()
HDR_SCHEDULE_ANY = H.SCHEDULE.encode()  # also the start of Nats-Schedule-*, Nats-Scheduler
HDR_TRACE_DEST = H.MSG_TRACE_DEST.encode()
TRACE_DISABLED = H.MSG_TRACE_DEST_DISABLED.encode()
NS_PER_S = 1_000_000_000
#: Header names a copy's `commit` acts on (the duplicate window, a roll-up, a TTL): a run of copies
#: holding any (case-sensitive, as ``get_header`` reads them) goes one by one.
SOURCED_ONE_BY_ONE = (b"Nats-Msg-Id", b"Nats-Rollup", b"Nats-TTL")
#: How nats-server words a traced message refused for its size (``ErrMaxPayload``).
MAX_PAYLOAD_TEXT = "maximum payload exceeded"
#: An interest stream's run takes stretches too, each cut before a message no consumer wants
#: (`Run._wanted`: `commit`'s interest check, one consumer-index lookup a change of subject); that message
#: goes through `process`, which skips it. Off: every publish into an interest stream goes through
#: `process` alone (half the work-queue stream's rate with the same consumers: issue 24's
#: ``--dim consumers``, 2.3× nats-server's CPU a publish).
INTEREST_STRETCHES = True


class _Answered:
    """A publish the header checks settled (refused, or a duplicate): ``answer`` (None: none)."""

    __slots__ = ("answer",)

    def __init__(self, answer: bytes | None) -> None:
        self.answer = answer


#: What the header checks pass on: the block to store, message id, TTL, counter increment, roll-up,
#: and the block's schedule headers when the schedule checks read them (`schedules.check_publish`).
_Checked = tuple[bytes, str, int | None, int | None, bytes, Found | None]


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
        path may take a stretch (``stretches``: of nats-server's checks only the size, expected
        stream, duplicate, interest and limit checks can apply — not sealed, no counters, republish
        only where a run holds the writes, interest retention with ``INTEREST_STRETCHES``, each
        stretch cut before a message no consumer wants; ``simple``: none of these, nor an input
        transform or schedules)."""
        stream = self.stream
        cfg = stream.cfg
        st = cfg.subject_transform
        self.transform = SubjectTransform.compile(st.src, st.dest) if st and st.dest else None
        rp = cfg.republish
        # nats-server: no destination means no republish transform (NewSubjectTransform returns nil).
        self.republish = SubjectTransform.compile(rp.src or ">", rp.dest) if rp and rp.dest else None
        self.republisher: Republisher | None = None
        if self.republish is not None:
            # Deferred: a start whose streams do not republish does not import it (issue 24).
            from pyjetstream.server.jetstream.republish import Republisher

            self.republisher = Republisher(stream, self.republish)
        self.interest = cfg.retention == RetentionPolicy.INTEREST
        plain = not (
            cfg.sealed
            or self.transform is not None
            or cfg.allow_msg_counter
            or self.interest
            or self.republish is not None
        )
        self.simple = plain and stream.schedules is None
        # A run's stretches (``ingest_run.py``) go through a schedules stream too: of a message
        # without a schedule header a schedule needs only that it ends one on its subject
        # (``MsgSchedules.on_stored``), which the stretch does for all its subjects at once.
        # Where no limit but the per-subject one can remove a subject's last message mid-stretch
        # (it keeps the newest), a stretch knows each subject's last sequence as it stands: it
        # may take Nats-Expected-Last-Subject-Sequence (KV create / update: `Run._expected`) and
        # republish (`Run._republish`: each copy's Nats-Last-Sequence).
        # An input transform too: a stretch takes each message under its transformed subject
        # (`Run._slice`, as `process` checks and stores it).
        lasts_known = cfg.max_msgs <= 0 and cfg.max_bytes <= 0
        self.stretches = not (cfg.sealed or cfg.allow_msg_counter or (self.interest and not INTEREST_STRETCHES)) and (
            self.republish is None
            or (lasts_known and cfg.storage == StorageType.FILE)  # (the run holds the writes: `Run._republish`)
        )
        self.expect_stretches = self.stretches and lasts_known
        # Schedules themselves too, where their roll-up is taken (``Run._schedules``), and a
        # firing's messages (`store_internal_run`); off with the server's ``runs`` (then each
        # goes through `process` / `store_internal`).
        self.schedule_stretches = (
            plain and stream.schedules is not None and stream.server.options.runs and rollup_refused(cfg, b"sub") is None
        )
        self.memory = cfg.storage == StorageType.MEMORY
        self.max_size = max_size(cfg)
        # A run's stretch takes a valid Nats-TTL where the stream allows TTLs, unless a
        # subject delete marker TTL may raise it (commit's floor: `_before_store`), and the
        # headers nothing here reads (a republished copy's: `inert_too`).
        self.stretch_lines = inert_too(ID_TTL_HEADERS if cfg.allow_msg_ttl else ID_HEADERS)
        self.ttl_floor = cfg.subject_delete_marker_ttl // NS_PER_S if cfg.max_msgs_per_subject != 1 else 0
        #: The stream's subjects as compiled filters (a schedule's target and source must be one).
        self.subject_filters = tuple(compile_filter(s) for s in cfg.subjects)
        self.ack_prefix = pub_ack_prefix(cfg.name, stream.engine.domain)
        self.name_b = cfg.name.encode()

    # --- ways in ------------------------------------------------------------------------------
    def on_msg(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: object) -> None:
        """One publish. The first of a client read to a file stream (a synchronous publisher's
        only one) is written alone and answered at once; the others of the read are held in one
        store batch until the read is done (``write_batch.py``)."""
        if self.stream.closed:
            return
        if len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self.ingest_max and (
            self.queue_refuses(subject, reply, hdr, payload)
        ):
            return
        writes = self.writes
        if not writes.holding and not self.memory:
            self.hold_unless_first(reply, hdr)
        answer = self.process(subject, reply, hdr, payload)
        if answer is not None and reply:
            writes.respond(reply, answer)

    def hold_unless_first(self, reply: str, hdr: bytes | None) -> None:
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
        else:
            Run(subjects, replies, hdrs, payloads, self).ingest_all()

    def queue_refuses(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bool:
        """nats-server's ingest queue limit (``ingest.py``): a message larger than it is dropped,
        answered ``429`` (at once: it overtakes earlier PubAcks, as nats-server's does)."""
        if len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) <= self.ingest_max:
            return False
        if not self.limits.refuses(subject, reply, hdr, payload):
            return False
        if reply:
            too_many, body = too_many_requests(self.stream.name)
            self.stream.server.publish_internal(reply, body, hdr=too_many)
        return True

    # --- the run path ---------------------------------------------------------------------------
    # --- the checks -------------------------------------------------------------------------------
    def process(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bytes | None:
        """Store one published message; return the PubAck bytes (``None``: nothing to answer).
        The checks run in nats-server's order (``processJetStreamMsg``)."""
        stream = self.stream
        if reply and reply.endswith(FAST_BATCH_SUFFIX) and is_fast_batch_reply(reply):  # batch_fast.py
            stream.fast.process(subject, reply, hdr, payload)
            return None
        if hdr and hdr.find(HDR_BATCH_ID) >= 0:
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
        if (len(hdr) if hdr else 0) + len(payload) > self.max_size:
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        if self.transform is not None:  # 2.10: the input transform applies before anything else
            subject = self.transformed(subject)
        if hdr:
            checked = self._check_headers(subject, hdr, payload, can_respond)
            if isinstance(checked, _Answered):
                return checked.answer
            hdr, msg_id, ttl, incr, rollup, found = checked
        else:
            hdr, msg_id, ttl, incr, rollup, found = b"", "", 0, None, b"", None
        total = 0
        if cfg.allow_msg_counter:
            if incr is None:
                return self._refuse(E.JSMessageIncrMissingErr(), can_respond)
            counted = counters.apply_incr(stream.store, subject, hdr, payload, incr)
            if not isinstance(counted, tuple):
                return self._refuse(counted, can_respond)
            hdr, payload, total = counted
        if len(hdr) + len(payload) > self.max_size:
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        seq = self.commit(subject, hdr, payload, msg_id, rollup, ttl=ttl, found=found)
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
        full = not only_id_headers(hdr)
        ttl: int | None = 0
        incr: int | None = None
        rollup = b""
        found: Found | None = None
        if full:
            hdr = remove_header(hdr, HDR_REQUEST_INFO)
            if hdr.find(counters.HDR_INCR) >= 0:
                incr, incr_error = counters.check_incr(hdr, payload, cfg.allow_msg_counter)
                if incr_error is not None:
                    return _Answered(self._refuse(incr_error, can_respond))
        if wrong_stream(hdr, self.name_b):
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
            if hdr.find(HDR_SCHEDULE_ANY) >= 0:
                hdr, schedule_error, found = check_publish(stream, subject, hdr)
                if schedule_error is not None:
                    return _Answered(self._refuse(schedule_error, can_respond))
            if hdr.find(HDR_STREAM_SOURCE) >= 0 and get_header(hdr, HDR_STREAM_SOURCE):  # only sourcing may stamp it (2.15)
                return _Answered(self._refuse(E.JSMessageSourceHdrNotAllowedErr(), can_respond))
        msg_id = msg_id_in(hdr)
        if msg_id:
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
        if len(hdr) > MAX_HEADER_SIZE and len(hdr) + len(payload) <= self.max_size:
            return _Answered(self._refuse(E.JSStreamHeaderExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT))
        return hdr, msg_id, ttl, incr, rollup, found

    def _check_expected(self, subject: str, hdr: bytes, can_respond: bool) -> _Answered | None:
        """``Nats-Expected-Last-Subject-Sequence`` (2.12+: on the subject or filter named by
        ``…-Subject``) and ``Nats-Expected-Last-Sequence``."""
        if hdr.find(EXPECTED_LAST_LINE) < 0:
            return None
        stream = self.stream
        want = expected_last_subject_seq(hdr)
        if want is not None:
            on = get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ)
            last = stream.last_seq_on_subject(on.decode(errors="replace") if on else subject)
            if last != want:
                text = f"last sequence by subject mismatch: {want} vs {last}"
                return _Answered(self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text))
        elif get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ):
            return _Answered(self._refuse(E.JSStreamExpectedLastSeqPerSubjectInvalid(), can_respond))
        want = expected_seq(get_header(hdr, HDR_EXPECTED_LAST_SEQ))
        if want is not None:
            last = stream.store.fast_state().last_seq
            if last != want:
                text = f"last sequence mismatch: {want} vs {last}"
                return _Answered(self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text))
        return None

    def _check_last_id_and_rollup(self, hdr: bytes, can_respond: bool) -> bytes | _Answered:
        """``Nats-Expected-Last-Msg-Id``, then ``Nats-Rollup`` (its value, lower-cased)."""
        want_id = get_header(hdr, HDR_EXPECTED_LAST_MSG_ID) if hdr.find(EXPECTED_LAST_LINE) >= 0 else None
        if want_id:
            last_id = self.dedupe.last_id()
            want = msg_id_of(want_id)
            if want != last_id:
                text = f"last msgid mismatch: {go_quote(want)} vs {go_quote(last_id)}"
                return _Answered(self._refuse(E.JSStreamWrongLastMsgIDErrF(id=last_id), can_respond, text))
        rollup = rollup_in(hdr)
        refused = rollup_refused(self.stream.cfg, rollup) if rollup else None
        if refused is not None:
            return _Answered(self._refuse(refused[0], can_respond, refused[1]))
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

    def store_error(self, exc: StoreError) -> ApiError:
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
        found: Found | None = None,
    ) -> int | ApiError:
        """Interest, account limits, store, then what follows a store; the sequence or the error
        (0: a trace-only message, checked but not stored). ``ttl`` is the message's ``Nats-TTL``
        in seconds (None: invalid, refused with 10165); ``found``: its schedule headers, when the
        checks have read them (else the schedules read them, where the stream has schedules). The steps only a TTL, a roll-up, a trace or
        a config beyond ``simple`` can need are looked at only when one of them is there."""
        stream = self.stream
        cfg = stream.cfg
        store = stream.store
        engine = stream.engine
        more = not self.simple or ttl != 0 or rollup or self.trace is not None
        # nats-server's order: a message no consumer wants is skipped before the account limits
        # and the TTL's validity are looked at (a rollup still purges what it rolls up).
        if more and self.interest and not stream.has_interest_for(subject):
            return self._skip(subject, msg_id, rollup)
        limit_error = engine.check_account_limits(cfg.storage, store.record_size(len(subject), len(hdr), len(payload)))
        if limit_error is not None:
            return limit_error
        republish_to: str | None = None
        last_on_subject = stored_ttl = 0
        if more:
            before = self._before_store(subject, hdr, ttl)
            if not isinstance(before, tuple):
                return before
            hdr, stored_ttl, republish_to, last_on_subject = before
        try:
            seq, ts = store.store_msg(subject, hdr, payload, ts, stored_ttl)
        except StoreError as exc:
            return self.store_error(exc)
        engine.note_write(cfg.storage, len(hdr) + len(payload) + len(subject))
        schedules = stream.schedules
        ended = schedules.on_stored(seq, subject, hdr, ts, found) if more and schedules is not None else ""
        if msg_id:
            self.dedupe.record(msg_id, seq, ts)
        else:
            self.dedupe.last = ""
        if more:
            if rollup:
                stream.purge(subject=subject if rollup == b"sub" else "", keep=1)
            if ended:  # a Nats-Schedule-Next: purge message ends its schedule
                stream.purge(subject=ended)
            if republish_to is not None and self.republisher is not None:
                self.republisher.one(republish_to, subject, seq, ts, last_on_subject, hdr, payload)
        if stored_ttl or cfg.max_age:
            stream.watch_expiry(ts, stored_ttl)
        if stream.consumers:
            self.writes.signal(seq, subject)
        return seq

    def _before_store(
        self, subject: str, hdr: bytes, ttl: int | None
    ) -> tuple[bytes, int, str | None, int] | ApiError | int:
        """`commit`'s steps between the limits and the store, where there is more to do than store:
        the TTL's validity (10165) and its floor at the subject delete markers' TTL, the trace's
        event (0: trace-only, not stored), the republish destination and the subject's last
        sequence before this message. Returns the block and TTL to store with, and those two."""
        if ttl is None:
            return E.JSMessageTTLInvalidErr()
        if 0 < ttl < self.ttl_floor:
            # A TTL shorter than the markers' could expire a marker's subject unseen.
            ttl = self.ttl_floor
            hdr = append_headers(remove_header(hdr, HDR_TTL), [("Nats-TTL", str(ttl))])
        trace = self.trace
        if trace is not None:
            trace.jetstream_stored(subject, False)
            if trace.only:
                return 0  # traced only: checked, not stored, not acknowledged
        republish_to = self.republish.match_and_apply(subject) if self.republish is not None else None
        last_on_subject = self.stream.last_seq_on_subject(subject) if republish_to is not None else 0
        return hdr, ttl, republish_to, last_on_subject

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
            msg_id = msg_id_in(hdr)
            if msg_id and not seq and self.dedupe.lookup(msg_id) is not None:
                return None
            rollup = rollup_taken(cfg, hdr)
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
        if len(hdr) + len(payload) > self.max_size:
            return E.JSStreamMessageExceedsMaximumErr()
        self.writes.hold_for_read()
        result = self.commit(subject, hdr, payload, msg_id, rollup, ts or None, ttl)
        return None if type(result) is int else result  # type: ignore[return-value]

    def process_sourced_run(
        self,
        subjects: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        seqs: list[int] | None = None,
        stamps: list[int] | None = None,
    ) -> tuple[int, ApiError | None] | None:
        """`process_sourced` for each copy of a feed's run in turn (``sourcing.py``: a mirror's
        ``seqs`` and ``stamps`` are the origin's, None for a source's), stored in one pass
        (``store_run``) where `commit` would do nothing for any of them but store it and tell the
        consumers: a config a run's stretch takes and nothing but the store's hook, no trace, no
        copy with a message id (the duplicate window), a roll-up or a TTL, none too large, a
        mirror's sequences next in line, room for all (``room_for_run``, ``run_fits``). Returns
        None when that is not so (the feed gives them to `process_sourced` one by one), else
        ``(copies stored, the error that kept the next one out)`` — a write that failed, as
        `commit` answers it; the rest were not looked at (the feed starts over from there)."""
        if not self._sourced_run_ok(subjects, hdrs, payloads, seqs):
            return None
        stream = self.stream
        store = stream.store
        storage = stream.cfg.storage
        n = len(subjects)
        records = sum(map(store.record_size, map(len, subjects), map(len, hdrs), map(len, payloads)))
        largest = max(map(add, map(len, hdrs), map(len, payloads)))
        self.writes.hold_for_read()  # as `process_sourced` holds before each commit
        if not stream.engine.room_for_run(storage, n, records) or not store.run_fits(subjects, largest, records):
            return None
        first, tss, error = store.store_run(subjects, hdrs, payloads, None, stamps)
        done = len(tss)
        if done:
            subs = subjects[:done]
            size = sum(map(len, subs)) + sum(map(len, hdrs[:done])) + sum(map(len, payloads[:done]))
            stream.engine.note_writes(storage, done, size)
            self.dedupe.last = ""
            if stream.cfg.max_age:
                stream.watch_expiry(0, 0)
            if stream.consumers:
                self.writes.signal_run(first, subs)
        return done, None if error is None else self.store_error(error)

    def _sourced_run_ok(
        self, subjects: list[str], hdrs: list[bytes], payloads: list[bytes], seqs: list[int] | None
    ) -> bool:
        """Whether `process_sourced_run` may store the copies in one pass (see there)."""
        stream = self.stream
        if len(subjects) < 2 or not self.simple or self.trace is not None or stream.closed:
            return False
        if seqs is not None:
            start = stream.store.fast_state().last_seq + 1
            if seqs != list(range(start, start + len(seqs))):
                return False
        blocks = b"".join(hdrs)
        if blocks and (
            any(name in blocks for name in SOURCED_ONE_BY_ONE) or max(map(len, hdrs)) > MAX_HEADER_SIZE
        ):
            return False
        return max(map(add, map(len, hdrs), map(len, payloads))) <= self.max_size

    def store_internal(self, subject: str, hdr: bytes, payload: bytes, found: Found | None = None) -> int | ApiError:
        """Store a message the server itself produces (a subject delete marker, a scheduled
        message — with its schedule headers, ``found``): nats-server's ``processJetStreamMsg``
        with ``sourced`` set, so the publisher's checks are skipped; its roll-up and TTL headers
        apply."""
        stream = self.stream
        cfg = stream.cfg
        if stream.closed or cfg.sealed:
            return E.JSStreamSealedErr()
        return self.commit(subject, hdr, payload, "", rollup_taken(cfg, hdr), ttl=message_ttl(hdr), found=found)

    def store_internal_run(self, produced: list[tuple[str, bytes, bytes, Found]]) -> None:
        """`store_internal` for each message of ``produced`` in turn (a firing's, with their
        schedule headers: `MsgSchedules._run`), stored in one pass (``store_run``) when nothing
        but the store and the schedules' hook applies to them — a config a run's stretch takes,
        no roll-up or TTL, room for all (``room_for_run``, ``run_fits``) and no
        target one of the schedules they end (whose purge would take it) — else one by one.
        Then, as after each store: the hook, the purge of the schedules the messages end (their
        removals together: `Stream.purge_subjects`), the consumers told."""
        stream = self.stream
        store = stream.store
        subs = [target for target, _, _, _ in produced]
        hdrs = [hdr for _, hdr, _, _ in produced]
        datas = [data for _, _, data, _ in produced]
        records = sum(map(store.record_size, map(len, subs), map(len, hdrs), map(len, datas)))
        largest = max(map(len, hdrs)) + max(map(len, datas)) if produced else 0
        if (
            not produced
            or not self._internal_run_ok(subs, hdrs, produced)
            or not stream.engine.room_for_run(stream.cfg.storage, len(subs), records)
            or not store.run_fits(subs, largest, records)
        ):
            for target, hdr, payload, found in produced:
                self.store_internal(target, hdr, payload, found)
            return
        first, tss, error = store.store_run(subs, hdrs, datas, None)
        done = len(tss)
        if done:
            stream.engine.note_writes(
                stream.cfg.storage,
                done,
                sum(map(len, subs[:done])) + sum(map(len, hdrs[:done])) + sum(map(len, datas[:done])),
            )
            self._after_internal_run(first, produced[:done], tss)
        for target, hdr, payload, found in produced[done + 1 :] if error is not None else ():
            self.store_internal(target, hdr, payload, found)

    def store_markers(self, subjects: list[str], hdr: bytes, ttl: int) -> None:
        """`store_internal` of a subject delete marker (header block ``hdr``, TTL ``ttl``) on each
        of ``subjects`` — one expiry pass's (`Stream._write_markers`) —, in one pass where nothing
        but the store, the roll-ups and the consumers' signal applies to them: a config a run's
        stretch takes (``simple``), no trace, room for all (``room_for_run``, ``run_fits``) — one
        ``store_run`` with their TTLs, their subjects' roll-ups purged together
        (`Stream.purge_subjects`, as a firing's ended schedules) — else one by one. nats-server's
        ``handleRemovalOrSdm`` hands each marker to ``processJetStreamMsg``."""
        stream = self.stream
        store = stream.store
        n = len(subjects)
        records = sum(store.record_size(len(subject), len(hdr), 0) for subject in subjects)
        if (
            not self.simple
            or self.trace is not None
            or stream.closed
            or not stream.engine.room_for_run(stream.cfg.storage, n, records)
            or not store.run_fits(subjects, len(hdr), records)
        ):
            for subject in subjects:
                self.store_internal(subject, hdr, b"")
            return
        first, tss, error = store.store_run(subjects, [hdr] * n, [b""] * n, [ttl] * n)
        done = len(tss)
        if done:
            stored = subjects[:done]
            stream.engine.note_writes(stream.cfg.storage, done, sum(map(len, stored)) + done * len(hdr))
            if rollup_taken(stream.cfg, hdr) == b"sub":
                stream.purge_subjects(stored, keep=1)
            self.dedupe.last = ""
            stream.watch_expiry(tss[0], ttl)
            if stream.consumers:
                self.writes.signal_run(first, stored)
        for subject in subjects[done + 1 :] if error is not None else ():
            self.store_internal(subject, hdr, b"")

    def _internal_run_ok(
        self, subs: list[str], hdrs: list[bytes], produced: list[tuple[str, bytes, bytes, Found]]
    ) -> bool:
        """Whether `store_internal_run` may store ``produced`` in one pass (see there)."""
        if not self.schedule_stretches or self.trace is not None or self.stream.closed:
            return False
        blocks = b"".join(hdrs)
        if blocks.find(b"Nats-TTL:") >= 0 or blocks.find(b"Nats-Rollup:") >= 0:
            return False
        ended = {found.get(HDR_SCHEDULER, b"").decode(errors="replace") for _, _, _, found in produced}
        return ended.isdisjoint(subs)

    def _after_internal_run(
        self, first: int, produced: list[tuple[str, bytes, bytes, Found]], tss: Sequence[int]
    ) -> None:
        """`commit`'s steps after each store, for the messages of `store_internal_run` stored
        from ``first`` on."""
        stream = self.stream
        schedules = stream.schedules
        if schedules is not None:
            on_stored = schedules.on_stored
            ended = [on_stored(first + i, target, hdr, tss[i], found) for i, (target, hdr, _, found) in enumerate(produced)]
            if any(ended):  # a Nats-Schedule-Next: purge message ends its schedule
                stream.purge_subjects([subject for subject in ended if subject])
        self.dedupe.last = ""
        if stream.cfg.max_age:
            stream.watch_expiry(0, 0)
        if stream.consumers:
            self.writes.signal_run(first, [target for target, _, _, _ in produced])
