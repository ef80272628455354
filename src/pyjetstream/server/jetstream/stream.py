"""A stream: captures messages published on its subjects into its store (nats-server ``stream.go``).

Inbound publishes arrive synchronously from the router (an internal subscription per subject) and
go through ``process_inbound`` in nats-server's order: sealed, expected stream, duplicate id,
expected last subject sequence, expected last sequence, expected last msg id, rollup, size
limits, account limits, interest, store, dedupe record, rollup purge, republish, PubAck, signal
consumers. Messages copied in by a mirror or a source (``sourcing.py``) take
``process_sourced`` instead: the same path without the publisher's preconditions or a PubAck.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api import subjects as S
from pyjetstream.api.advisories import StreamWriteErrorAdvisory
from pyjetstream.api.codec import encode_pub_ack_error, finish_pub_ack, pub_ack_prefix, pub_acks
from pyjetstream.api.counters import counter_pub_ack
from pyjetstream.api.enums import RetentionPolicy, StorageType
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.fast_batch import FAST_BATCH_SUFFIX, is_fast_batch_reply
from pyjetstream.api.gojson import go_quote
from pyjetstream.api.headers import EXPECTED_STREAM, MSG_ID, header_lines, only_these_nats_headers
from pyjetstream.api.models_common import ApiError, LostStreamData
from pyjetstream.api.models_stream import StreamConfig, StreamInfo, StreamState
from pyjetstream.api.msgtrace import MSG_TRACE_DEST, MSG_TRACE_DEST_DISABLED
from pyjetstream.api.names import stream_identity
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime, format_time, parse_time
from pyjetstream.api.ttl import marker_ttl, message_ttl
from pyjetstream.protocol.headers import append_headers, get_header, remove_header, set_header
from pyjetstream.protocol.subjects import is_subset, subjects_overlap
from pyjetstream.server.jetstream import advisories, counters
from pyjetstream.server.jetstream.batch_atomic import BATCH_ID as HDR_BATCH_ID
from pyjetstream.server.jetstream.batch_atomic import AtomicBatches, recover_partial_batch
from pyjetstream.server.jetstream.batch_fast import FastBatches
from pyjetstream.server.jetstream.consumer_config import filters_of
from pyjetstream.server.jetstream.consumer_index import ConsumerIndex
from pyjetstream.server.jetstream.dedupe import DedupeWindow
from pyjetstream.server.jetstream.direct_get import DirectGet
from pyjetstream.server.jetstream.ingest import IngestLimits, too_many_requests
from pyjetstream.server.jetstream.schedules import MsgSchedules, check_publish
from pyjetstream.server.jetstream.sourcing import StreamSourcing
from pyjetstream.server.jetstream.store.base import (
    ErrInsufficientResources,
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    MessageStore,
    StoreConfig,
    StoreError,
)
from pyjetstream.server.subject_transform import SubjectTransform

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.msgtrace import MsgTrace

HDR_MSG_ID = b"Nats-Msg-Id"
HDR_EXPECTED_STREAM = b"Nats-Expected-Stream"
HDR_EXPECTED_LAST_SEQ = b"Nats-Expected-Last-Sequence"
HDR_EXPECTED_LAST_SUBJ_SEQ = b"Nats-Expected-Last-Subject-Sequence"
HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ = b"Nats-Expected-Last-Subject-Sequence-Subject"
HDR_EXPECTED_LAST_MSG_ID = b"Nats-Expected-Last-Msg-Id"
HDR_STREAM_SOURCE = b"Nats-Stream-Source"
HDR_ROLLUP = b"Nats-Rollup"
HDR_REQUEST_INFO = b"Nats-Request-Info"
HDR_TTL = b"Nats-TTL"
HDR_SCHEDULE_ANY = b"Nats-Schedule"  # also the start of Nats-Schedule-*, Nats-Scheduler
HDR_MARKER_REASON = b"Nats-Marker-Reason"
HDR_KV_OPERATION = b"KV-Operation"
HDR_TRACE_DEST = MSG_TRACE_DEST.encode()
# A block whose only Nats- headers are these (a Spark write's) takes _process_with_id.
ID_HEADERS = header_lines(MSG_ID, EXPECTED_STREAM)
TRACE_DISABLED = MSG_TRACE_DEST_DISABLED.encode()
# The header block of a Spark row (``spark/msgid.py``): this, the id, then ``Stream._id_tail``.
ID_BLOCK_HEAD = b"NATS/1.0\r\nNats-Msg-Id: "
ID_BLOCK_HEAD_LEN = len(ID_BLOCK_HEAD)
NS_PER_S = 1_000_000_000
DEDUPE_MIN_FIRE_NS = 50_000_000  # the duplicate window's timer fires at most this often
MAX_HEADER_SIZE = 65535
#: How nats-server words a traced message refused for its size (``ErrMaxPayload``).
MAX_PAYLOAD_TEXT = "maximum payload exceeded"


def _parse_uint(value: bytes | None) -> int | None:
    """An expected-sequence header: None when absent or empty; a value that is not a number is
    nats-server's ``parseInt64`` -1, which never equals a sequence (so the check fails)."""
    if not value:
        return None
    return int(value) if value.isdigit() else -1


def is_subject_delete_marker(hdr: bytes) -> bool:
    """nats-server ``isSubjectDeleteMarker``: a marker the server wrote, or a KV purge."""
    return bool(get_header(hdr, HDR_MARKER_REASON)) or get_header(hdr, HDR_KV_OPERATION) == b"PURGE"


def store_config_for(cfg: StreamConfig) -> StoreConfig:
    return StoreConfig(
        name=cfg.name,
        max_msgs=cfg.max_msgs,
        max_bytes=cfg.max_bytes,
        max_age=cfg.max_age,
        max_msgs_per_subject=cfg.max_msgs_per_subject,
        max_msg_size=cfg.max_msg_size,
        discard=str(cfg.discard),
        discard_new_per_subject=cfg.discard_new_per_subject,
        first_seq=cfg.first_seq,
        compression=str(cfg.compression or "none"),
    )


def _msg_ids(raws: list[bytes]) -> list[str]:
    """The ``Nats-Msg-Id`` values of Spark rows' header blocks (``raws[i]``: what lies between
    ``ID_BLOCK_HEAD`` and the expected stream's line; empty: no id), as ``get_header`` reads
    them, for as many as are one line of ASCII without ``Nats-`` (the rest are left to
    ``process_inbound``): one check and one decode for the lot when all are (the common case)."""
    joined = b"\n".join(raws)
    if (
        b"\r" not in joined
        and b"Nats-" not in joined
        and joined.isascii()
        and joined.count(b"\n") == len(raws) - 1
    ):
        if b" " not in joined and b"\t" not in joined:
            return joined.decode().split("\n")
        return [raw.strip(b" \t").decode() for raw in raws]
    ids = []
    for raw in raws:
        if b"\n" in raw or b"\r" in raw or b"Nats-" in raw or not raw.isascii():
            break
        ids.append(raw.strip(b" \t").decode())
    return ids


class Stream:
    def __init__(self, engine: JetStreamEngine, cfg: StreamConfig, store: MessageStore, created: int) -> None:
        self.engine = engine
        self.server = engine.server
        self._srv = engine.server.server  # the Server itself: its read in progress (pcd, reads)
        self._read = -1  # Server.reads of the read whose first plain publish was written alone
        self.cfg = cfg
        self.store = store
        self.created = created
        self.consumers: dict[str, Any] = {}
        #: The consumers by filter subject: who a stored message, an interest check or an ack reaches.
        self.csl = ConsumerIndex()
        self.closed = False
        self._subs: list[Any] = []
        self._direct_subs: list[Any] = []
        self._dedupe = DedupeWindow(cfg.duplicate_window or 1)
        self._last_msg_id = ""
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._expiry_at: int | None = None  # unix ns the expiry timer is set for
        self.schedules: MsgSchedules | None = None  # with allow_msg_schedules (schedules.py)
        self._write_error_logged = -1e9  # monotonic time of the last write-failure log line
        self._frozen = False  # an I/O error froze the store's writes (said once: _write_error)
        self._transform: SubjectTransform | None = None
        self._republish: SubjectTransform | None = None
        # One store batch per client read (per event-loop turn outside one: Server.after_read):
        # every publish of the read is written to the OS together when the read is processed,
        # and only then acknowledged (and shown to consumers) — the PubAcks written on the
        # publisher's socket right after (Server.end_read), in the turn the publishes came in.
        self._batch: contextlib.AbstractContextManager[None] | None = None
        self._acks: list[tuple[str, bytes]] = []
        self._signals: list[tuple[int, str]] = []
        self._ack_prefix = pub_ack_prefix(cfg.name, engine.domain)
        # The two header blocks a Spark row of this stream has (:meth:`_store_id_run`): after the
        # id (``ID_BLOCK_HEAD``), and without one (``deriveMsgId=false``).
        self._id_tail = b"\r\nNats-Expected-Stream: %b\r\n\r\n" % cfg.name.encode()
        self._stream_block = b"NATS/1.0" + self._id_tail
        self._memory = cfg.storage == StorageType.MEMORY
        self._ingest = IngestLimits(self.server.options)
        self._ingest_max = self._ingest.max_size or 1 << 62  # bytes a message may bring (ingest.py)
        self.atomic = AtomicBatches(self)
        self.fast = FastBatches(self)
        self._plain = False  # a header-less publish may take _process_plain (_configure_fast_path)
        self._configure_transforms()
        self.sourcing = StreamSourcing(self)
        #: The trace of the message being processed, if it is traced (``_on_traced``).
        self._trace: MsgTrace | None = None

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.cfg.name

    def start(self) -> None:
        self._subscribe_inbound()
        # ``mirror_direct`` answers for the origin's name, once caught up (sourcing.py), not ours.
        if self.cfg.allow_direct:
            self._subscribe_direct()
        recover_partial_batch(self)
        # A recovered stream rebuilds its de-duplication window on first need (nats-server's
        # ``ddloaded``): scanning every message inside the window would slow every restart.
        self._dedupe_loaded = not self.store.fast_state().msgs
        self._schedule_expiry()
        self.sourcing.start()
        if self.cfg.allow_msg_schedules:
            self.schedules = MsgSchedules(self)
            self.schedules.rebuild()
        self._configure_fast_path()

    def _subscribe_inbound(self) -> None:
        """An internal subscription per subject: publishes one by one, traced ones, and the
        messages of a read that reached it in a row (``Server.route_msgs``, ``InternalSub.run``)."""
        for subject in self.cfg.subjects:
            self._subs.append(
                self.server.subscribe_internal(
                    subject,
                    self._on_inbound,
                    traced=self._on_traced,
                    run=self._on_inbound_msgs,
                )
            )

    def _subscribe_direct(self) -> None:

        direct = DirectGet(self)
        prefix = f"$JS.API.DIRECT.GET.{self.name}"
        self._direct_subs = [
            self.server.subscribe_internal(prefix, direct.on_request, queue="_sys_"),
            self.server.subscribe_internal(prefix + ".>", direct.on_last_by_subject, queue="_sys_"),
        ]

    def _unsubscribe(self, subs: list[Any]) -> None:
        for sub in subs:
            sub.unsubscribe()
        subs.clear()

    def stop(self, delete: bool = False) -> None:
        """Stop capturing and (with ``delete``) remove the store. Consumers are stopped first."""
        if self.closed:
            return
        self._end_batch()
        self.closed = True
        self.sourcing.stop(delete=delete)
        if self.schedules is not None:
            self.schedules.stop()
        for consumer in list(self.consumers.values()):
            consumer.stop(delete=delete, advisory=delete, stream_deleted=delete)
        self.consumers.clear()
        self.csl.clear()
        self._unsubscribe(self._subs)
        self._unsubscribe(self._direct_subs)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.atomic.clear()
        self.fast.clear()
        if delete:
            self.store.delete()
        else:
            self.store.stop()

    def _configure_transforms(self) -> None:
        st = self.cfg.subject_transform
        self._transform = SubjectTransform.compile(st.src, st.dest) if st and st.dest else None
        rp = self.cfg.republish
        # nats-server: no destination means no republish transform (NewSubjectTransform returns nil).
        self._republish = SubjectTransform.compile(rp.src or ">", rp.dest) if rp and rp.dest else None
        self._configure_fast_path()

    def _configure_fast_path(self) -> None:
        """Decide once per config (not per message) whether a header-less publish can take
        :meth:`_process_plain`: of nats-server's ``processJetStreamMsg`` checks only the size and
        account limits can apply to it when the stream is not sealed, has no input transform,
        counters, republish or schedules, and does not keep messages by interest."""
        cfg = self.cfg
        self._plain = not (
            cfg.sealed
            or self._transform is not None
            or cfg.allow_msg_counter
            or cfg.retention == RetentionPolicy.INTEREST
            or self._republish is not None
            or self.schedules is not None
        )

    def update(self, cfg: StreamConfig) -> None:
        """Apply an already validated config."""
        old = self.cfg
        self.cfg = cfg
        if old.subjects != cfg.subjects:
            self._unsubscribe(self._subs)
            self._subscribe_inbound()
        if old.allow_direct != cfg.allow_direct:
            if cfg.allow_direct:
                self._subscribe_direct()
            else:
                self._unsubscribe(self._direct_subs)
        self._dedupe.window_ns = cfg.duplicate_window or 1
        if not cfg.allow_atomic:
            self.atomic.clear()
        if not cfg.allow_batched:
            self.fast.clear()
        self._configure_transforms()
        self.store.update_config(store_config_for(cfg))
        self.persist_meta()
        self._schedule_expiry()
        self.sourcing.update(old, cfg)
        if cfg.allow_msg_schedules and self.schedules is None:
            self.schedules = MsgSchedules(self)
            self.schedules.rebuild()
            self._configure_fast_path()
        self._signal_all_consumers()

    @property
    def identity(self) -> str:
        """⟨2.15+⟩ ``Nats-Stream-Identity``: a hash of the creation time (``mset.identity``)."""
        return stream_identity(self.created)

    def persist_meta(self) -> None:
        self.store.write_meta(encode_stream_meta(self.cfg, self.created))

    # --- inbound publishes -------------------------------------------------------------------

    def _on_inbound(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if self.closed:
            return
        if (
            len(payload) + len(subject) + len(reply) + (len(hdr) if hdr else 0) > self._ingest_max
            and self._ingest.refuses(subject, reply, hdr, payload)
        ):
            if reply:
                too_many, body = too_many_requests(self.name)
                self.server.publish_internal(reply, body, hdr=too_many)
            return
        if self._memory:  # nothing to write: acknowledge at once
            if hdr is None and self._plain and not reply.endswith(FAST_BATCH_SUFFIX):
                result = self._process_plain(subject, payload)
                if reply and not self.cfg.no_ack:
                    self.server.publish_internal(reply, self._plain_ack(result))
                return
            response = self.process_inbound(subject, reply, hdr, payload)
            if response is not None and reply:
                self.server.publish_internal(reply, response)
            return
        plain = hdr is None and self._plain and not reply.endswith(FAST_BATCH_SUFFIX)
        if self._batch is None:
            srv = self._srv
            if plain and srv.pcd is not None and srv.reads != self._read:
                # The first plain publish of a client read (a synchronous publisher's only one):
                # written alone (a lone store_msg writes before it returns) and answered at
                # once, as the memory path; more of the same read are batched below.
                self._read = srv.reads
                result = self._process_plain(subject, payload)
                if reply and not self.cfg.no_ack:
                    self.server.publish_internal(reply, self._plain_ack(result))
                return
            self._batch = self.store.batch()
            self._batch.__enter__()
            self.server.after_read(self._end_batch)
        if plain:
            result = self._process_plain(subject, payload)
            if reply and not self.cfg.no_ack:
                self._acks.append((reply, self._plain_ack(result)))
            return
        response = self.process_inbound(subject, reply, hdr, payload)
        if response is not None and reply:
            self._acks.append((reply, response))

    def _on_traced(
        self, trace: MsgTrace, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """A traced publish (nats-server ``processInboundJetStreamMsg`` with a trace): a ``js``
        event, completed by the checks; a delivered message is stored with its trace turned off
        (``Nats-Trace-Dest: trace disabled``) so that its deliveries are not traced again, and a
        trace-only one goes through every check but is neither stored nor acknowledged."""
        trace.jetstream(self.name)
        if trace.only and (HDR_BATCH_ID in (hdr or b"") or reply.endswith(FAST_BATCH_SUFFIX)):
            return  # a batch is staged as a whole: a trace-only part of one is not taken
        if hdr is not None and not trace.only:
            hdr = set_header(hdr, HDR_TRACE_DEST, TRACE_DISABLED)
        self._trace = trace
        try:
            self._on_inbound(subject, reply, hdr, payload, client)
        finally:
            self._trace = None

    def _on_inbound_msgs(
        self, subjects: list[str], replies: list[str], hdrs: list[bytes | None], payloads: list[bytes], client: Any
    ) -> None:
        """The router's run (``InternalSub.run``: a read's publishes that reached this stream, in
        order): each stretch of header-less publishes to one subject takes :meth:`_on_inbound_run`,
        each stretch with headers :meth:`_on_inbound_hrun`, a lone one :meth:`_on_inbound`.
        (route's adapter onto the stream's run paths, until ``ingest_run`` replaces them.)"""
        n = len(payloads)
        k = 0
        while k < n:
            if self.closed:
                return
            j = k + 1
            if hdrs[k] is None:
                subject = subjects[k]
                while j < n and hdrs[j] is None and subjects[j] == subject:
                    j += 1
                if j - k > 1:
                    self._on_inbound_run(subject, replies[k:j], payloads[k:j], client)
                else:
                    self._on_inbound(subject, replies[k], None, payloads[k], client)
            else:
                while j < n and hdrs[j] is not None:
                    j += 1
                self._on_inbound_hrun(subjects, replies, hdrs, payloads, k, j, client)  # type: ignore[arg-type]
            k = j

    def _on_inbound_run(self, subject: str, replies: list[str], payloads: list[bytes], client: Any) -> None:
        """:meth:`_on_inbound` for header-less publishes to ``subject`` that one read of a
        connection brought in a row (their replies and payloads, from :meth:`_on_inbound_msgs`) — a
        pipelining publisher. Where the stream takes the plain path and nothing can refuse or
        trim a message (:meth:`_store_plain_run`), they are stored in one pass and their PubAcks
        routed together; else one by one. Either way each message gets what
        :meth:`_on_inbound` gives it, in order (nats-server has no such path:
        ``processInboundJetStreamMsg`` runs per message)."""
        if self.closed:
            return
        done = 0
        if (
            self._plain
            and max(map(len, payloads)) + len(subject) + len(max(replies, key=len)) <= self._ingest_max
            and FAST_BATCH_SUFFIX + "\n" not in "\n".join(replies) + "\n"
        ):
            done = self._store_plain_run(subject, replies, payloads)
        on_inbound = self._on_inbound
        for k in range(done, len(payloads)):
            on_inbound(subject, replies[k], None, payloads[k], client)

    def _store_plain_run(self, subject: str, replies: list[str], payloads: list[bytes]) -> int:
        """:meth:`_process_plain` for each message of a run, with its PubAck, in one pass —
        only when every check it makes is known to pass for all of them (the size limit, the
        account limits: ``JetStreamEngine.room_for_run``, the store's limits: ``run_fits``);
        else nothing is done. Returns how many messages were dealt with (the rest go one by
        one): all, or up to and including the one a failed write stopped at — the messages
        before it acknowledged (and taken back with the batch: ``_store_failed``), it answered
        with the error, as one by one."""
        cfg = self.cfg
        store = self.store
        n = len(payloads)
        largest = max(map(len, payloads))
        if 0 <= cfg.max_msg_size < largest:
            return 0
        if not self._memory and self._batch is None:
            self._batch = store.batch()
            self._batch.__enter__()
            self.server.after_read(self._end_batch)
        sizes = sum(map(len, payloads))
        records = n * store.record_size(len(subject), 0, 0) + sizes
        storage = cfg.storage
        engine = self.engine
        subjects = [subject] * n
        if not engine.room_for_run(storage, n, records) or not store.run_fits(subjects, largest, records):
            return 0
        first, tss, error = store.store_run(subjects, [b""] * n, payloads)
        done = len(tss)
        if done:
            if done < n:
                sizes = sum(map(len, payloads[:done]))
            engine.note_writes(storage, done, sizes + done * len(subject))
            self._last_msg_id = ""
            if cfg.max_age and "expiry" not in self._timers:
                self._schedule_expiry()
            if self.consumers:
                if self._batch is not None:
                    self._signals.extend(zip(range(first, first + done), [subject] * done, strict=True))
                else:
                    for seq in range(first, first + done):
                        self._signal_consumers(seq, subject)
            if not cfg.no_ack:
                acks = pub_acks(self._ack_prefix, first, done)
                answers = [(reply, ack) for reply, ack in zip(replies, acks, strict=False) if reply]
                if self._batch is not None:
                    self._acks.extend(answers)
                elif answers:
                    self.server.publish_replies(answers)
        if error is None:
            return n
        result = self._store_error(error)
        if replies[done] and not cfg.no_ack:
            self.respond(replies[done], self._error(result))
        return done + 1

    def _on_inbound_hrun(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        lo: int,
        hi: int,
        client: Any,
    ) -> None:
        """:meth:`_on_inbound` for publishes ``lo`` to ``hi`` of a read's run of publishes with
        headers (from :meth:`_on_inbound_msgs`) — the Spark sink's rows. Those with a Spark row's header
        block take :meth:`_store_id_run` together; any other goes to :meth:`_on_inbound` in its
        place, so each message gets what :meth:`_on_inbound` gives it, in order (nats-server has
        no such path: ``processInboundJetStreamMsg`` runs per message)."""
        k = lo
        on_inbound = self._on_inbound
        tail = self._id_tail
        stream_block = self._stream_block
        while k < hi:
            if self.closed:
                return
            hdr = hdrs[k]
            if (
                self._plain
                and self._trace is None
                and (hdr == stream_block or (hdr.startswith(ID_BLOCK_HEAD) and hdr.endswith(tail)))
                and not replies[k].endswith(FAST_BATCH_SUFFIX)
            ):  # (a first look: a fast or atomic batch's rows go on at once)
                k = self._store_id_run(subjects, replies, hdrs, payloads, k, hi)
                if k >= hi:
                    return
            on_inbound(subjects[k], replies[k], hdrs[k], payloads[k], client)
            k += 1

    def _store_id_run(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        k: int,
        hi: int,
    ) -> int:
        """:meth:`_process_with_id` (with :meth:`_on_inbound`'s ingest check before it) for each
        message from ``k`` on whose header block is exactly a Spark row's — ``NATS/1.0``, a
        ``Nats-Msg-Id`` (one line of ASCII without ``Nats-``) or none, ``Nats-Expected-Stream:
        <this stream>`` — and that nothing else could refuse before the store (not a fast batch's,
        within the ingest, message and header size limits); their PubAcks in order. The messages
        between two duplicates are committed together (:meth:`_commit_id_run`); a duplicate is
        answered as :meth:`_process_with_id` answers it. Returns the index of the first message
        it did not take (``hi``: all): the caller hands that one to :meth:`_on_inbound`, which
        answers it as nats-server would (a wrong expected stream, a header block of another
        shape...)."""
        cfg = self.cfg
        if not self._memory and self._batch is None:
            self._batch = self.store.batch()
            self._batch.__enter__()
            self.server.after_read(self._end_batch)
        answers: list[tuple[str, bytes]] = []  # a memory stream's PubAcks (else the read's: _acks)
        respond = not cfg.no_ack
        max_size = cfg.max_msg_size
        ingest_max = self._ingest_max
        tail = self._id_tail
        tail_len = len(tail)
        shortest = ID_BLOCK_HEAD_LEN + tail_len
        stream_block = self._stream_block
        dedupe = self._dedupe
        while k < hi:
            # The stretch: from k up to the first message that is not a Spark row.
            start = k
            raws: list[bytes] = []
            add_raw = raws.append
            largest = 0
            while k < hi:
                hdr = hdrs[k]
                hlen = len(hdr)
                if hdr == stream_block:
                    add_raw(b"")
                elif hlen >= shortest and hdr.startswith(ID_BLOCK_HEAD) and hdr.endswith(tail):
                    add_raw(hdr[ID_BLOCK_HEAD_LEN : hlen - tail_len])
                else:
                    break
                reply = replies[k]
                size = hlen + len(payloads[k])
                if (
                    reply.endswith(FAST_BATCH_SUFFIX)
                    or size + len(subjects[k]) + len(reply) > ingest_max
                    or 0 <= max_size < size
                    or hlen > MAX_HEADER_SIZE
                ):
                    raws.pop()
                    break
                if size > largest:
                    largest = size
                k += 1
            if k == start:
                break
            ids = _msg_ids(raws)
            if len(ids) < k - start:  # an id of another shape: the stretch ends before it
                k = start + len(ids)
                if not ids:
                    break
            # ... and before the first duplicate (of an earlier message, or of one in the stretch).
            if ids.count("") < len(ids) and not self._dedupe_loaded:
                self._rebuild_dedupe()
            cut, dup = dedupe.first_duplicate(ids)
            if cut:  # (a repeat of an id in the stretch is looked up again once it is stored)
                if cut < len(ids):
                    del ids[cut:]
                k = start + cut
                rows = subjects[start:k], replies[start:k], hdrs[start:k], payloads[start:k]
                taken = self._commit_id_run(*rows, ids, largest, answers)
                k = start + taken
            elif dup:  # the first message is a duplicate: answered as _process_with_id does
                k = start
                if respond and replies[k]:
                    (answers if self._batch is None else self._acks).append(
                        (replies[k], finish_pub_ack(self._ack_prefix, dup, True))
                    )
                k += 1
            else:  # (not reached: an id is a repeat only of one before it)
                k = start
                break
        if answers:
            self.server.publish_replies(answers)
        return k

    def _commit_id_run(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        ids: list[str],
        largest: int,
        answers: list[tuple[str, bytes]],
    ) -> int:
        """:meth:`_commit_plain` for each of a stretch of Spark rows (none a duplicate, of an
        earlier one or of another in the stretch: ``_store_id_run``), with its PubAck — in one
        pass (``IndexedStore.store_hrun``) when every check it makes is known to pass for all of
        them (the account limits: ``JetStreamEngine.room_for_run``; the store's:
        ``hrun_fits``), else one by one. Returns how many messages were dealt with: all, or up
        to and including the one a failed write stopped at (answered with the error, as one by
        one). PubAcks go to the read's (``_acks``) while a store batch is open, else to
        ``answers``."""
        cfg = self.cfg
        store = self.store
        engine = self.engine
        storage = cfg.storage
        n = len(payloads)
        sizes = sum(map(len, subjects)) + sum(map(len, hdrs)) + sum(map(len, payloads))
        # Each record as _commit_plain's check counts it (size_base + size_hdr + the lengths).
        records = n * (store.record_size(0, 1, 0) - 1) + sizes
        if (
            not engine.room_for_run(storage, n, records)
            or not "".join(subjects).isascii()  # (the store counts a subject's UTF-8 bytes)
            or not store.run_fits(subjects, largest, records)
        ):
            return self._commit_id_each(subjects, replies, hdrs, payloads, ids, answers)
        first, tss, error = store.store_run(subjects, hdrs, payloads)
        done = len(tss)
        if done:
            if done < n:
                sizes = sum(map(len, subjects[:done])) + sum(map(len, hdrs[:done])) + sum(map(len, payloads[:done]))
            engine.note_writes(storage, done, sizes)
            if self._dedupe.record_run(ids, first, tss) and "dedupe" not in self._timers:
                self._schedule_dedupe_expiry()
            self._last_msg_id = ids[done - 1]
            if cfg.max_age and "expiry" not in self._timers:
                self._schedule_expiry()
            if self.consumers:
                if self._batch is not None:
                    self._signals.extend(zip(range(first, first + done), subjects, strict=False))
                else:
                    for seq, subject in zip(range(first, first + done), subjects, strict=False):
                        self._signal_consumers(seq, subject)
            if not cfg.no_ack:
                acks = pub_acks(self._ack_prefix, first, done)
                (answers if self._batch is None else self._acks).extend(
                    [(reply, ack) for reply, ack in zip(replies, acks, strict=False) if reply]
                )
        if error is None:
            return n
        result = self._store_error(error)
        if replies[done] and not cfg.no_ack:
            (answers if self._batch is None else self._acks).append((replies[done], self._error(result)))
        return done + 1

    def _commit_id_each(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes],
        payloads: list[bytes],
        ids: list[str],
        answers: list[tuple[str, bytes]],
    ) -> int:
        """:meth:`_commit_id_run` one message at a time (:meth:`_commit_plain` each: a limit may
        bite mid-stretch); returns how many were dealt with (all)."""
        commit = self._commit_plain
        respond = not self.cfg.no_ack
        ack_prefix = self._ack_prefix
        for subject, reply, hdr, payload, msg_id in zip(subjects, replies, hdrs, payloads, ids, strict=True):
            result = commit(subject, hdr, payload, msg_id)
            if respond and reply:
                ack = finish_pub_ack(ack_prefix, result) if type(result) is int else self._error(cast(ApiError, result))
                # (re-read: a failed write replaces the read's PubAcks, _store_failed)
                (answers if self._batch is None else self._acks).append((reply, ack))
        return len(payloads)

    def _end_batch(self) -> None:
        """Commit the read's (or turn's) writes (to the OS; fsync with ``sync: always``), then
        acknowledge — as nats-server's file store, which writes each record to the OS before
        ``processJetStreamMsg`` answers (flush in place, ``fs.fip``: ``AsyncFlush`` is off by
        default)."""
        batch, self._batch = self._batch, None
        if batch is not None:
            try:
                batch.__exit__(None, None, None)
            except (StoreError, OSError) as exc:
                self._batch_failed(exc)
                return
        acks, self._acks = self._acks, []
        if acks:
            self.server.publish_replies(acks)
        if self._signals:
            signals, self._signals = self._signals, []
            self._signal_run(signals)

    def _batch_failed(self, exc: Exception) -> None:
        """The turn's writes failed (disk full, I/O error): the store took them back, so every
        publish of the turn is answered with the error at once (10023 when the disk is full, as
        nats-server) and nothing of it is shown to consumers or remembered as a duplicate."""
        error = self._write_error(exc)
        self._dedupe.forget_after(self.store.fast_state().last_seq)
        acks, self._acks = self._acks, []
        self._signals.clear()
        response = self._error(error)
        publish = self.server.publish_internal
        for reply, _ in acks:
            publish(reply, response)

    def _write_error(self, exc: Exception) -> ApiError:
        """The PubAck error for a failed write; logged at most once every 10 s per stream.

        An I/O error (not a full disk) froze the store (``store.write_error``, nats-server's
        ``setWriteErrLocked``): said once, with one log line and an advisory; from then on
        every publish is answered with the error (nats-server leaves it unanswered) while
        reads, consumers and the API keep working, until the server restarts."""
        werr = self.store.write_error
        if werr is not None:
            if not self._frozen:
                self._frozen = True
                engine = self.engine
                self.server.logger.error(
                    "JetStream stream '%s > %s' critical write error: %s", engine.account_name, self.name, werr
                )
                advisories.publish(
                    engine,
                    S.advisory_stream_write_error(self.name),
                    StreamWriteErrorAdvisory(stream=self.name, error=str(werr)),
                )
            return E.JSStreamStoreFailedF(err=str(exc))
        now = time.monotonic()
        if now - self._write_error_logged >= 10.0:
            self._write_error_logged = now
            self.server.logger.error("JetStream failed to write stream '%s': %s", self.name, exc)
        if isinstance(exc, ErrInsufficientResources):
            return E.JSInsufficientResourcesErr()
        return E.JSStreamStoreFailedF(err=str(exc))

    def respond(self, reply: str, data: bytes) -> None:
        """Answer a publish in order with the PubAcks: after this turn's writes reach the OS
        when a store batch is open, else now."""
        if self._batch is not None:
            self._acks.append((reply, data))
        else:
            self.server.publish_internal(reply, data)

    def _error(self, error: ApiError) -> bytes:
        return encode_pub_ack_error(self.name, error)

    def _refuse(self, error: ApiError, can_respond: bool, trace_text: str = "") -> bytes | None:
        """A refused publish: its PubAck error (when it can be answered), and the error of a
        traced message's ``js`` event — as nats-server's ``processJetStreamMsg`` returns it
        (``trace_text`` where that is not the API error's own text)."""
        if self._trace is not None:
            self._trace.jetstream_error(trace_text or f"{error.description} ({error.err_code})")
        return self._error(error) if can_respond else None

    def _pub_ack(self, seq: int, duplicate: bool = False) -> bytes:
        return finish_pub_ack(self._ack_prefix, seq, duplicate)

    def process_inbound(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bytes | None:
        """Store one published message; return the PubAck bytes (``None``: nothing to answer).

        The checks run in nats-server's order (``processJetStreamMsg``).
        """
        if reply and reply.endswith(FAST_BATCH_SUFFIX) and is_fast_batch_reply(reply):  # batch_fast.py
            self.fast.process(subject, reply, hdr, payload)
            return None
        if hdr and HDR_BATCH_ID in hdr:
            batch_id = get_header(hdr, HDR_BATCH_ID)
            if batch_id:  # an atomic batch (batch_atomic.py) stages and checks on its own
                return self.atomic.process(batch_id.decode(), subject, reply, hdr, payload)
        if hdr and self._plain and self._trace is None and only_these_nats_headers(hdr, ID_HEADERS):
            return self._process_with_id(subject, reply, hdr, payload)
        cfg = self.cfg
        can_respond = bool(reply) and not cfg.no_ack
        if cfg.sealed:
            return self._refuse(E.JSStreamSealedErr(), can_respond)
        # 2.15.1 checks max_msg_size on the message as sent before any header (verified: a
        # too-big message with a bad Nats-Expected-Stream, Nats-TTL, Nats-Schedule... gets 10054);
        # a counter's rewritten message is checked again below.
        if 0 <= cfg.max_msg_size < (len(hdr) if hdr else 0) + len(payload):
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        if self._transform is not None:  # 2.10: the input transform applies before anything else
            transformed = self._transform.match_and_apply(subject)
            if transformed is not None:
                subject = transformed
        msg_id = ""
        rollup = b""
        ttl: int | None = 0
        incr: int | None = None
        store = self.store
        if hdr:
            hdr = remove_header(hdr, HDR_REQUEST_INFO)
            if counters.HDR_INCR in hdr:
                incr, incr_error = counters.check_incr(hdr, payload, cfg.allow_msg_counter)
                if incr_error is not None:
                    return self._refuse(incr_error, can_respond)
            expected = get_header(hdr, HDR_EXPECTED_STREAM)
            if expected and expected.decode() != self.name:
                return self._refuse(E.JSStreamNotMatchErr(), can_respond, "expected stream does not match")
            # TTL'd messages are refused entirely where TTLs are off (an invalid TTL is not
            # a TTL here: it gets 10165 later, after the account limits, as in nats-server).
            ttl = message_ttl(hdr)
            if ttl and not cfg.allow_msg_ttl:
                return self._refuse(E.JSMessageTTLDisabledErr(), can_respond, "message TTL disabled")
            # nats-server 2.15's order: expectations, schedules, the source header, dedupe, last
            # msg id, rollup.
            want = _parse_uint(get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ))
            if want is not None:
                # 2.12+: Nats-Expected-Last-Subject-Sequence-Subject names the subject (or filter).
                on = get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ)
                last = self._last_seq_on_subject(on.decode(errors="replace") if on else subject)
                if last != want:
                    text = f"last sequence by subject mismatch: {want} vs {last}"
                    return self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text)
            elif get_header(hdr, HDR_EXPECTED_LAST_SUBJ_SEQ_SUBJ):
                err = E.JSStreamExpectedLastSeqPerSubjectInvalid()
                return self._refuse(err, can_respond)
            want = _parse_uint(get_header(hdr, HDR_EXPECTED_LAST_SEQ))
            if want is not None:
                last = store.fast_state().last_seq
                if last != want:
                    text = f"last sequence mismatch: {want} vs {last}"
                    return self._refuse(E.JSStreamWrongLastSequenceErrF(seq=last), can_respond, text)
            if HDR_SCHEDULE_ANY in hdr:
                hdr, schedule_error = check_publish(self, subject, hdr)
                if schedule_error is not None:
                    return self._refuse(schedule_error, can_respond)
            if get_header(hdr, HDR_STREAM_SOURCE):  # only sourcing may stamp it (2.15)
                return self._refuse(E.JSMessageSourceHdrNotAllowedErr(), can_respond)
            raw_id = get_header(hdr, HDR_MSG_ID)
            if raw_id:
                msg_id = raw_id.decode()
                if not self._dedupe_loaded:
                    self._rebuild_dedupe()
                seq = self._dedupe.lookup(msg_id)
                if seq is not None:
                    if self._trace is not None:
                        self._trace.jetstream_error("msgid is duplicate")
                    return self._pub_ack(seq, duplicate=True) if can_respond else None
            want_id = get_header(hdr, HDR_EXPECTED_LAST_MSG_ID)
            if want_id and not self._dedupe_loaded:
                self._rebuild_dedupe()
            if want_id and want_id.decode() != self._last_msg_id:
                text = f"last msgid mismatch: {go_quote(want_id.decode())} vs {go_quote(self._last_msg_id)}"
                return self._refuse(E.JSStreamWrongLastMsgIDErrF(id=self._last_msg_id), can_respond, text)
            rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower()
            if rollup:
                if not cfg.allow_rollup_hdrs or cfg.deny_purge:
                    err = E.JSStreamRollupFailedF(err="rollup not permitted")
                    return self._refuse(err, can_respond, "rollup not permitted")
                if rollup not in (b"sub", b"all"):
                    text = f"rollup value invalid: {go_quote(rollup.decode(errors='replace'))}"
                    return self._refuse(E.JSStreamRollupFailedF(err=text), can_respond, text)
            size = len(hdr) + len(payload)
            # (max_msg_size is checked first, below, as nats-server does.)
            if len(hdr) > MAX_HEADER_SIZE and not 0 <= cfg.max_msg_size < size:
                return self._refuse(E.JSStreamHeaderExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        else:
            hdr = b""
            size = len(payload)
        total = 0
        if cfg.allow_msg_counter:
            if incr is None:
                return self._refuse(E.JSMessageIncrMissingErr(), can_respond)
            counted = counters.apply_incr(store, subject, hdr, payload, incr)
            if not isinstance(counted, tuple):
                return self._refuse(counted, can_respond)
            hdr, payload, total = counted
            size = len(hdr) + len(payload)
        if 0 <= cfg.max_msg_size < size:
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        result = self._commit(subject, hdr, payload, size, msg_id, rollup, ttl=ttl)
        if not can_respond or result == 0:  # 0: a trace-only message (not stored)
            return None
        if type(result) is not int:
            return self._error(result)  # type: ignore[arg-type]
        if cfg.allow_msg_counter:
            return counter_pub_ack(self._ack_prefix, result, total)
        return self._pub_ack(result)

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
        cfg = self.cfg
        if self.closed or cfg.sealed:
            return E.JSStreamSealedErr()
        if seq and self.store.fast_state().last_seq != seq - 1:
            return E.JSStreamSequenceNotMatchErr()
        if not seq and self._transform is not None:
            transformed = self._transform.match_and_apply(subject)
            if transformed is not None:
                subject = transformed
        msg_id = ""
        rollup = b""
        ttl: int | None = 0
        if hdr:
            raw_id = get_header(hdr, HDR_MSG_ID)
            if raw_id:
                msg_id = raw_id.decode()
                if not seq:
                    if not self._dedupe_loaded:
                        self._rebuild_dedupe()
                    if self._dedupe.lookup(msg_id) is not None:
                        return None
            if cfg.allow_rollup_hdrs and not cfg.deny_purge:
                rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower()
                if rollup not in (b"sub", b"all"):
                    rollup = b""
            if len(hdr) > MAX_HEADER_SIZE:
                return E.JSStreamHeaderExceedsMaximumErr()
            ttl = message_ttl(hdr)
            size = len(hdr) + len(payload)
        else:
            hdr = b""
            size = len(payload)
        if cfg.allow_msg_counter:
            incr, incr_error = counters.sourced_incr(hdr) if hdr else (None, None)
            if incr_error is not None:
                return incr_error
            if incr is None:
                return E.JSMessageIncrMissingErr()
            counted = counters.apply_incr(self.store, subject, hdr, payload, incr)
            if not isinstance(counted, tuple):
                return counted
            hdr, payload, _total = counted
            size = len(hdr) + len(payload)
        if 0 <= cfg.max_msg_size < size:
            return E.JSStreamMessageExceedsMaximumErr()
        if not self._memory and self._batch is None:
            self._batch = self.store.batch()
            self._batch.__enter__()
            self.server.after_read(self._end_batch)
        result = self._commit(subject, hdr, payload, size, msg_id, rollup, ts or None, ttl)
        return None if type(result) is int else result  # type: ignore[return-value]

    def _process_plain(self, subject: str, payload: bytes) -> int | ApiError:
        """:meth:`process_inbound` + :meth:`_commit` for a header-less publish to a stream whose
        config leaves nothing else to check (``_plain``, decided by ``_configure_fast_path``):
        the size limit, the account limits, the store, then expiry and consumers — the same
        steps in the same order, without the branches that cannot apply."""
        if 0 <= self.cfg.max_msg_size < len(payload):
            return E.JSStreamMessageExceedsMaximumErr()
        return self._commit_plain(subject, b"", payload, "")

    def _process_with_id(self, subject: str, reply: str, hdr: bytes, payload: bytes) -> bytes | None:
        """:meth:`process_inbound` for a ``_plain`` stream and an untraced message whose only
        ``Nats-`` headers are ``Nats-Msg-Id`` and ``Nats-Expected-Stream`` (every row a Spark
        write sends): the size limit, the expected stream, the duplicate window, the header size,
        then :meth:`_commit_plain` — the same checks in the same order, without looking up each
        header the block does not hold."""
        cfg = self.cfg
        can_respond = bool(reply) and not cfg.no_ack
        size = len(hdr) + len(payload)
        if 0 <= cfg.max_msg_size < size:
            return self._refuse(E.JSStreamMessageExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        expected = get_header(hdr, HDR_EXPECTED_STREAM)
        if expected and expected.decode() != self.name:
            return self._refuse(E.JSStreamNotMatchErr(), can_respond, "expected stream does not match")
        msg_id = ""
        raw_id = get_header(hdr, HDR_MSG_ID)
        if raw_id:
            msg_id = raw_id.decode()
            if not self._dedupe_loaded:
                self._rebuild_dedupe()
            seq = self._dedupe.lookup(msg_id)
            if seq is not None:
                return self._pub_ack(seq, duplicate=True) if can_respond else None
        if len(hdr) > MAX_HEADER_SIZE:  # (max_msg_size, checked first, passed above)
            return self._refuse(E.JSStreamHeaderExceedsMaximumErr(), can_respond, MAX_PAYLOAD_TEXT)
        result = self._commit_plain(subject, hdr, payload, msg_id)
        if not can_respond:
            return None
        if type(result) is not int:
            return self._error(result)  # type: ignore[arg-type]
        return self._pub_ack(result)

    def _commit_plain(self, subject: str, hdr: bytes, payload: bytes, msg_id: str) -> int | ApiError:
        """:meth:`_commit` for a ``_plain`` stream and an untraced message without TTL, roll-up
        or schedule (no interest retention, republish, schedules or trace to look at): the
        account limits, the store, the message id, then expiry and consumers — the same steps in
        the same order. Also the store step of a fast batch's messages (``batch_fast.py``)."""
        cfg = self.cfg
        store = self.store
        engine = self.engine
        storage = cfg.storage
        limit_error = engine.check_account_limits(
            storage, store.record_size(len(subject), len(hdr), len(payload))
        )
        if limit_error is not None:
            return limit_error
        try:
            seq, ts = store.store_msg(subject, hdr, payload, None, 0)
        except StoreError as exc:
            return self._store_error(exc)
        engine.note_write(storage, len(hdr) + len(payload) + len(subject))
        self._last_msg_id = msg_id
        if msg_id:
            self._dedupe.record(msg_id, seq, ts)
            if "dedupe" not in self._timers:
                self._schedule_dedupe_expiry()
        if cfg.max_age and "expiry" not in self._timers:
            self._schedule_expiry()
        if self.consumers:
            self._signal_stored(seq, subject)
        return seq

    def _plain_ack(self, result: int | ApiError) -> bytes:
        return finish_pub_ack(self._ack_prefix, result) if isinstance(result, int) else self._error(result)

    def _store_error(self, exc: StoreError) -> ApiError:
        """The PubAck error of a message the store refused: its limits, or a failed write."""
        if isinstance(exc, (ErrMaxMsgs, ErrMaxBytes, ErrMaxMsgsPerSubject, ErrMsgTooLarge)):
            return E.JSStreamStoreFailedF(err=str(exc))
        return self._store_failed(exc)

    def _store_failed(self, exc: StoreError) -> ApiError:
        """A write failed (the store took the turn's appends back): the PubAck error, and the
        turn's earlier PubAcks become it too."""
        self._dedupe.forget_after(self.store.fast_state().last_seq)
        error = self._write_error(exc)
        if self._batch is not None and self._acks:
            # The store took back this turn's earlier appends too: so are their PubAcks.
            response = self._error(error)
            self._acks = [(reply, response) for reply, _ in self._acks]
            self._signals.clear()
        return error

    def _commit(
        self,
        subject: str,
        hdr: bytes,
        payload: bytes,
        size: int,
        msg_id: str,
        rollup: bytes,
        ts: int | None = None,
        ttl: int | None = 0,
    ) -> int | ApiError:
        """Account limits, interest, store, then what follows a store; the sequence or the error.

        ``ttl`` is the message's ``Nats-TTL`` in seconds (None: invalid, refused with 10165)."""
        cfg = self.cfg
        store = self.store
        engine = self.engine
        storage = cfg.storage
        # nats-server's order: a message no consumer wants is skipped before the account limits
        # and the TTL's validity are looked at (a rollup still purges what it rolls up).
        if cfg.retention == RetentionPolicy.INTEREST and not self._has_interest_for(subject):
            trace = self._trace
            if trace is not None:
                trace.jetstream_stored(subject, True)
                if trace.only:
                    return 0
            seq = store.skip_msg()
            self._last_msg_id = msg_id
            if msg_id:
                self._dedupe.record(msg_id, seq, time.time_ns())
                self._schedule_dedupe_expiry()
            if rollup == b"sub":
                self.purge(subject=subject)
            elif rollup:
                self.purge()
            return seq
        limit_error = engine.check_account_limits(
            storage, store.record_size(len(subject), len(hdr) if hdr else 0, len(payload))
        )
        if limit_error is not None:
            return limit_error
        if ttl is None:
            return E.JSMessageTTLInvalidErr()
        sdm_ttl = cfg.subject_delete_marker_ttl // NS_PER_S
        if 0 < ttl < sdm_ttl and cfg.max_msgs_per_subject != 1:
            # A TTL shorter than the markers' could expire a marker's subject unseen.
            ttl = sdm_ttl
            hdr = append_headers(remove_header(hdr, HDR_TTL), [("Nats-TTL", str(ttl))])

        trace = self._trace
        if trace is not None:
            trace.jetstream_stored(subject, False)
            if trace.only:
                return 0  # traced only: checked, not stored, not acknowledged
        republish_to = self._republish.match_and_apply(subject) if self._republish is not None else None
        last_on_subject = self._last_seq_on_subject(subject) if republish_to is not None else 0
        try:
            seq, ts = store.store_msg(subject, hdr, payload, ts, ttl)
        except (ErrMaxMsgs, ErrMaxBytes, ErrMaxMsgsPerSubject, ErrMsgTooLarge) as exc:
            return E.JSStreamStoreFailedF(err=str(exc))
        except StoreError as exc:
            return self._store_failed(exc)
        engine.note_write(storage, size + len(subject))
        schedules = self.schedules
        if schedules is not None:
            schedules.on_stored(seq, subject, hdr, ts)
        self._last_msg_id = msg_id
        if msg_id:
            self._dedupe.record(msg_id, seq, ts)
            self._schedule_dedupe_expiry()
        if rollup == b"sub":
            self.purge(subject=subject, keep=1)
        elif rollup:
            self.purge(keep=1)
        if schedules is not None and hdr and HDR_SCHEDULE_ANY in hdr:
            ended = schedules.purge_target(hdr)
            if ended:
                self.purge(subject=ended)
        if republish_to is not None:
            self._republish_msg(republish_to, subject, seq, ts, last_on_subject, hdr, payload)
        if ttl and ttl > 0:
            if self._expiry_at is None or ts + ttl * NS_PER_S < self._expiry_at:
                self._schedule_expiry()
        elif cfg.max_age and "expiry" not in self._timers:
            self._schedule_expiry()
        if self.consumers:
            self._signal_stored(seq, subject)
        return seq

    def _last_seq_on_subject(self, subject: str) -> int:
        try:
            return self.store.load_last_msg(subject).seq
        except (ErrStoreMsgNotFound, ErrStoreEOF):
            return 0

    def _has_interest_for(self, subject: str) -> bool:
        """Interest retention: does some consumer's filter take ``subject`` (``csl.HasInterest``)."""
        return self.csl.has_interest(subject)

    def _republish_msg(
        self, dest: str, subject: str, seq: int, ts: int, last: int, hdr: bytes | None, payload: bytes
    ) -> None:
        """At-most-once copy to the republish destination with nats-server 2.10's headers
        (``Nats-Time-Stamp`` is 2.10's addition; 2.9 sends the other four)."""
        rp = self.cfg.republish
        assert rp is not None
        lines = [
            f"Nats-Stream: {self.name}",
            f"Nats-Subject: {subject}",
            f"Nats-Sequence: {seq}",
            f"Nats-Time-Stamp: {format_time(ts)}",
            f"Nats-Last-Sequence: {last}",
        ]
        if rp.headers_only:
            lines.append(f"Nats-Msg-Size: {len(payload)}")
        base = hdr if hdr else b"NATS/1.0\r\n\r\n"
        new_hdr = base[:-2] + "".join(line + "\r\n" for line in lines).encode() + b"\r\n"
        self.server.publish_internal(dest, b"" if rp.headers_only else payload, hdr=new_hdr)

    # --- consumers ---------------------------------------------------------------------------

    def _signal_stored(self, seq: int, subject: str) -> None:
        """Tell the consumers about a stored message: at the end of the read (or turn) when its
        writes are batched (they must not see it before it reached the OS), else now."""
        if self._batch is not None:
            self._signals.append((seq, subject))
        else:
            self._signal_consumers(seq, subject)

    def _signal_consumers(self, seq: int, subject: str) -> None:
        """``signalConsumers``: the consumers whose filter takes ``subject`` (``csl.Match``)."""
        for consumer in self.csl.match(subject):
            consumer.signal_new(seq, subject)

    def _signal_run(self, signals: list[tuple[int, str]]) -> None:
        """:meth:`_signal_consumers` for the stored messages of a read (``(seq, subject)`` each),
        one lookup per change of subject."""
        match = self.csl.match
        last = ""
        consumers: tuple[Any, ...] = ()
        for seq, subject in signals:
            if subject != last:
                last, consumers = subject, match(subject)
            for consumer in consumers:
                try:
                    consumer.signal_new(seq, subject)
                except Exception:  # one consumer's failure must not starve the others
                    self.server.logger.exception("consumer '%s' failed on new messages", consumer.name)

    def _removed(self, seq: int, subject: str) -> None:
        """The store removed one message (``storeUpdates`` with ``md == -1``): each consumer whose
        filter takes its subject counts it out of num pending (``decStreamPending``) instead of
        recounting."""
        for consumer in self.csl.match(subject):
            consumer.dec_stream_pending(seq, subject)

    def _signal_all_consumers(self) -> None:
        for consumer in list(self.consumers.values()):
            consumer.signal_new(0, "")

    def add_consumer(self, consumer: Any) -> None:
        self.consumers[consumer.name] = consumer
        self.csl.add(consumer)
        self.store.on_removed = self._removed

    def remove_consumer(self, name: str) -> None:
        consumer = self.consumers.pop(name, None)
        if consumer is not None:
            self.csl.remove(consumer)
        if not self.consumers:
            self.store.on_removed = None
        if self.cfg.retention != RetentionPolicy.LIMITS:
            self.check_interest_state()

    def consumer_filters_changed(self, consumer: Consumer) -> None:
        """An update changed a consumer's filters (``swapSigSubs``)."""
        if self.consumers.get(consumer.name) is consumer:
            self.csl.refilter(consumer)

    def ack_msg(self, seq: int) -> None:
        """A consumer acknowledged ``seq``: remove it when the retention policy says so."""
        retention = self.cfg.retention
        if retention == RetentionPolicy.LIMITS or self.closed:
            return
        if retention == RetentionPolicy.INTEREST:
            try:
                subject = self.store.subject_for_seq(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                return
            # Only the consumers whose filter takes the subject can still need it (nats-server
            # asks every consumer, ``checkForInterestWithSubject``; the others answer no).
            for consumer in self.csl.match(subject):
                if consumer.needs_ack(seq, subject):
                    return
        if self.store.remove_msg(seq):
            self.engine.account_usage_changed()

    def check_interest_state(self) -> None:
        """After consumers went away: drop messages no remaining consumer needs (interest/workqueue)."""
        if self.cfg.retention == RetentionPolicy.LIMITS or self.closed:
            return
        state = self.store.fast_state()
        if not state.msgs:
            return
        if not self.consumers and self.cfg.retention == RetentionPolicy.INTEREST:
            self.store.purge()
            self.engine.account_usage_changed()
            return
        if self.cfg.retention == RetentionPolicy.WORKQUEUE:
            return
        seq = state.first_seq
        removed = False
        while seq <= state.last_seq:
            try:
                msg, seq = self.store.load_next_msg(">", seq)
            except ErrStoreEOF:
                break
            if not any(c.needs_ack(seq, msg.subject) for c in self.csl.match(msg.subject)):
                removed = self.store.remove_msg(seq) or removed
            seq += 1
        if removed:
            self.engine.account_usage_changed()

    # --- purge, get, delete ------------------------------------------------------------------

    def purge(self, subject: str = "", seq: int = 0, keep: int = 0) -> int:

        if subject or seq or keep:
            purged = self.store.purge_ex(subject, seq, keep)
        else:
            purged = self.store.purge()
        state = self.store.fast_state()
        first = state.first_seq
        if subject:
            first = self.store.filtered_state(state.first_seq, subject).first or first
        for consumer in list(self.consumers.values()):
            # nats-server: a subject purge moves only consumers whose filter lies inside it.
            filters = filters_of(consumer.cfg)
            if not subject or (filters and all(is_subset(f, subject) for f in filters)):
                consumer.on_stream_purged(first)
        self.engine.account_usage_changed()
        return purged

    def delete_msg(self, seq: int, erase: bool) -> bool:
        removed = self.store.erase_msg(seq) if erase else self.store.remove_msg(seq)
        if removed:
            self.engine.account_usage_changed()
        return removed

    # --- info --------------------------------------------------------------------------------

    def state(self, subjects_filter: str = "", deleted_details: bool = False) -> StreamState:
        st = self.store.state(deleted_details=deleted_details)
        result = StreamState(
            messages=st.msgs,
            bytes=st.bytes,
            first_seq=st.first_seq,
            first_ts=NanoTime(st.first_ts) if st.first_ts else ZERO_TIME,
            last_seq=st.last_seq,
            last_ts=NanoTime(st.last_ts) if st.last_ts else ZERO_TIME,
            num_subjects=st.num_subjects,
            num_deleted=st.num_deleted,
            deleted=list(st.deleted or []) if deleted_details else [],
            # Direct consumers (a mirror's or a source's, on its origin) are not counted.
            consumer_count=self.csl.public,
        )
        if st.lost is not None and st.lost.msgs:
            result.lost = LostStreamData(msgs=list(st.lost.msgs), bytes=st.lost.bytes)
        if subjects_filter:
            result.subjects = self.store.subjects_totals(subjects_filter)
        return result

    def info(self, subjects_filter: str = "", deleted_details: bool = False) -> StreamInfo:
        return StreamInfo(
            config=self.cfg,
            created=NanoTime(self.created),
            state=self.state(subjects_filter, deleted_details),
            domain=self.engine.domain,
            mirror=self.sourcing.mirror_info(),
            sources=self.sourcing.sources_info(),
            ts=NanoTime(time.time_ns()),
        )

    def matches(self, subject_filter: str) -> bool:
        """Whether any of the stream's subjects overlaps the filter (STREAM.NAMES ``subject``)."""

        return any(subjects_overlap(subject_filter, s) for s in self.cfg.subjects)

    # --- timers ------------------------------------------------------------------------------

    def _schedule(self, name: str, when_ns: int | None, callback: Callable[[], None]) -> None:
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()
        if when_ns is None or self.closed:
            return
        delay = max(0.0, (when_ns - time.time_ns()) / 1e9)
        self._timers[name] = self.server.loop.call_later(delay, callback)

    def _schedule_expiry(self) -> None:
        """Wake up when the next message reaches max_age or its TTL."""
        self._expiry_at = self.store.next_expiry()
        self._schedule("expiry", self._expiry_at, self._expire)

    def _expire(self) -> None:
        self._timers.pop("expiry", None)
        self._expiry_at = None
        if self.closed:
            return
        handler = self._expire_with_marker if self.cfg.subject_delete_marker_ttl > 0 else None
        if self.store.expire_msgs(expire=handler):
            self.engine.account_usage_changed()
            # Only a consumer with something below the new first message has anything to drop
            # (the store told the others of each removal, or of a bulk one, already).
            first = self.store.fast_state().first_seq
            for consumer in list(self.consumers.values()):
                st = consumer.state
                if st.asflr < first - 1 or st.sseq < first:
                    consumer.on_stream_purged(first)
        self._schedule_expiry()

    def _expire_with_marker(self, seq: int, subject: str, last: bool) -> None:
        """An expired message that is the last on its subject leaves a subject delete marker
        (ADR-43, nats-server ``handleRemovalOrSdm``): a new message with ``Nats-Marker-Reason:
        MaxAge``, the configured marker TTL, and a subject roll-up that removes the expired one.
        A marker that expires in turn is only removed."""
        if not last:
            return
        try:
            hdr = self.store.load_msg(seq).hdr
        except StoreError:
            return
        if hdr and is_subject_delete_marker(hdr):
            return
        sdm_ttl = self.cfg.subject_delete_marker_ttl // NS_PER_S
        marker = (
            b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: %s\r\nNats-Rollup: sub\r\n\r\n"
            % marker_ttl(sdm_ttl).encode()
        )
        self.store_internal(subject, marker, b"")

    def store_internal(self, subject: str, hdr: bytes, payload: bytes) -> int | ApiError:
        """Store a message the server itself produces (a subject delete marker, a scheduled
        message): nats-server's ``processJetStreamMsg`` with ``sourced`` set, so the publisher's
        checks are skipped; its roll-up and TTL headers apply."""
        if self.closed or self.cfg.sealed:
            return E.JSStreamSealedErr()
        rollup = (get_header(hdr, HDR_ROLLUP) or b"").lower() if hdr else b""
        if rollup not in (b"sub", b"all") or not self.cfg.allow_rollup_hdrs or self.cfg.deny_purge:
            rollup = b""
        ttl = message_ttl(hdr)
        return self._commit(subject, hdr, payload, len(hdr) + len(payload), "", rollup, ttl=ttl)

    def _schedule_dedupe_expiry(self) -> None:
        if "dedupe" not in self._timers:
            self._schedule("dedupe", time.time_ns() + self._dedupe.window_ns, self._expire_dedupe)

    def _expire_dedupe(self) -> None:
        """Forget the ids that left the window; come back for the next one, but not sooner than
        50 ms (nats-server ``purgeMsgIds``): a timer per id would be a timer per publish."""
        self._timers.pop("dedupe", None)
        nxt = self._dedupe.expire()
        if nxt is not None:
            nxt = max(nxt, time.time_ns() + DEDUPE_MIN_FIRE_NS)
        self._schedule("dedupe", nxt, self._expire_dedupe)

    def duplicate_of(self, msg_id: str) -> int | None:
        """The sequence a ``Nats-Msg-Id`` inside the duplicate window was stored at, if any."""
        if not self._dedupe_loaded:
            self._rebuild_dedupe()
        return self._dedupe.lookup(msg_id)

    def _rebuild_dedupe(self) -> None:
        """After a restart: rebuild the window from the stored messages that are still inside it."""
        self._dedupe_loaded = True
        state = self.store.fast_state()
        if not state.msgs or not self.cfg.duplicate_window:
            return
        since = time.time_ns() - self.cfg.duplicate_window
        seq = self.store.get_seq_from_time(since)
        while seq <= state.last_seq:
            try:
                msg, seq = self.store.load_next_msg(">", seq)
            except ErrStoreEOF:
                break
            if msg.hdr:
                msg_id = get_header(msg.hdr, HDR_MSG_ID)
                if msg_id:
                    self._dedupe.record(msg_id.decode(), seq, msg.ts)
            seq += 1
        try:
            last = self.store.load_msg(state.last_seq)
            raw = get_header(last.hdr, HDR_MSG_ID) if last.hdr else None
            self._last_msg_id = raw.decode() if raw else ""
        except (ErrStoreMsgNotFound, ErrStoreEOF):
            pass
        if len(self._dedupe):
            self._schedule_dedupe_expiry()


class StreamMeta(msgspec.Struct):
    """What a file store persists about its stream (``meta.inf``): the config and creation time."""

    config: StreamConfig
    created: str


def encode_stream_meta(cfg: StreamConfig, created: int) -> bytes:
    # The API codec: it knows the config's times (a mirror's or source's opt_start_time).
    return codec.encode(StreamMeta(config=cfg, created=format_time(created)), go_escape=False)


def decode_stream_meta(data: bytes) -> tuple[StreamConfig, int]:

    meta = codec.decode(data, StreamMeta)
    return meta.config, parse_time(meta.created)


__all__ = ["JetStreamApiError", "Stream", "decode_stream_meta", "encode_stream_meta", "store_config_for"]
