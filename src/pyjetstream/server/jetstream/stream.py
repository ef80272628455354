"""A stream: captures messages published on its subjects into its store (nats-server ``stream.go``).

The stream is composed, not mixed in: its ingest (``stream_ingest.py``: every check of a publish, in
nats-server's order, for one message and for a read's run of them; mirrors' and sources' copies;
messages the server produces), the writes it holds until they reached the OS (``write_batch.py``),
its message ids (``dedupe.py``), atomic and fast batches, sourcing, direct gets and schedules each
live in their own module. What is here: the lifecycle and config updates, the consumers, purge,
removal and expiry (with the subject delete markers of ADR-43), and the stream's info (republish is
``republish.py``'s).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api import codec
from pyjetstream.api.enums import RetentionPolicy
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import LostStreamData
from pyjetstream.api.models_stream import StreamConfig, StreamInfo, StreamState
from pyjetstream.api.names import stream_identity
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime, format_time, parse_time
from pyjetstream.api.ttl import marker_ttl
from pyjetstream.protocol.headers import get_header
from pyjetstream.protocol.subjects import has_wildcard, is_subset, subjects_overlap
from pyjetstream.server.jetstream.consumer_config import filters_of
from pyjetstream.server.jetstream.consumer_index import ConsumerIndex
from pyjetstream.server.jetstream.dedupe import StreamDedupe
from pyjetstream.server.jetstream.schedules import MsgSchedules
from pyjetstream.server.jetstream.store.base import (
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    MessageStore,
    StoreConfig,
    StoreError,
)
from pyjetstream.server.jetstream.stream_ingest import StreamIngest
from pyjetstream.server.jetstream.write_batch import WriteBatch

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.batch_atomic import AtomicBatches
    from pyjetstream.server.jetstream.batch_fast import FastBatches
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.sourcing import StreamSourcing

HDR_MARKER_REASON = b"Nats-Marker-Reason"
HDR_KV_OPERATION = b"KV-Operation"
NS_PER_S = 1_000_000_000
#: A removed consumer's interest check looks only at what that consumer still needed (above its
#: ack floor, not acked); off: at every message of the stream (see `Stream.remove_consumer`).
INTEREST_CHECK_FROM_FLOOR = True
#: Expiry passes at most every 250 ms (nats-server ``resetAgeChk``'s floor).
EXPIRY_MIN_INTERVAL_NS = 250_000_000
#: An expiry pass tells only the consumers with pending acks below the new first message; off:
#: also those behind it with none (each then moved, written and recounted at every pass).
EXPIRY_SKIPS_IDLE = True
#: An expiry pass looks only at the consumers that may hold pending acks (`Stream.acking`), not at
#: every consumer: with ``EXPIRY_SKIPS_IDLE`` no other has anything to drop. Off: at every consumer
#: (a pass beside 10,000 idle consumers walked them all: ~8 µs of CPU a message expired at ~5k/s, in process).
EXPIRY_LOOKS_AT_ACKING = True
#: A config update tells every consumer to recount and look again only when it changed what the
#: stream holds (a lowered limit removed messages) or its retention (nats-server's update touches the
#: consumers for a retention change alone); off: after every update (each consumer's pending recounted:
#: a description change beside 10,000 consumers took ~7 ms, growing with them).
UPDATE_SIGNALS_CHANGES_ONLY = True
#: A stream's creation time is formatted once, at the first ask (`Stream.created_text`: a
#: ``/jsz?streams=1`` shows it for every stream at every request); off: at every ask.
CREATED_TEXT_ONCE = True


def is_subject_delete_marker(hdr: bytes) -> bool:
    """nats-server ``isSubjectDeleteMarker``: a marker the server wrote, or a KV purge."""
    return bool(get_header(hdr, HDR_MARKER_REASON)) or get_header(hdr, HDR_KV_OPERATION) == b"PURGE"


@functools.lru_cache(maxsize=16)
def _marker(ttl: int) -> bytes:
    """The header block of a subject delete marker with a TTL of ``ttl`` seconds (formatted once
    per TTL, not per expired message)."""
    return (
        b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: %s\r\nNats-Rollup: sub\r\n\r\n"
        % marker_ttl(ttl).encode()
    )


def _new_sourcing(stream: Stream) -> StreamSourcing:
    """The stream's mirror or sources (``sourcing.py``, imported here: a start whose streams have
    neither does not load it, issue 24)."""
    from pyjetstream.server.jetstream.sourcing import StreamSourcing

    return StreamSourcing(stream)


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


class Stream:
    def __init__(self, engine: JetStreamEngine, cfg: StreamConfig, store: MessageStore, created: int) -> None:
        self.engine = engine
        self.server = engine.server
        self.cfg = cfg
        self.store = store
        self.created = created
        self._created_text: str | None = None  # (`created_text`)
        #: The state a ``/jsz`` last showed and its builtins (`monitoring.shown_state`, which owns it).
        self.shown_state: tuple[StreamState, dict[str, Any]] | None = None
        #: ``(seq, subject)`` of the expired messages whose markers the expiry pass writes.
        self._marked: list[tuple[int, str]] = []
        self.consumers: dict[str, Any] = {}
        #: The consumers by filter subject: who a stored message, an interest check or an ack reaches.
        self.csl = ConsumerIndex()
        self.interest_checked = 0  # messages an interest check looked at (a step count)
        #: The consumers that may hold pending acks (`note_pending`: a superset, kept in the order
        #: they came; an expiry pass drops those it finds with none), what an expiry pass looks at.
        self.acking: dict[Consumer, None] = {}
        self.expiry_passes = 0  # expiry passes that removed messages, and the consumers they
        self.expiry_looked = 0  # looked at afterwards (step counts)
        self.closed = False
        self._subs: list[Any] = []
        self._direct_subs: list[Any] = []
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._expiry_at: int | None = None  # unix ns the expiry timer is set for
        self._expired_at = 0  # unix ns the last expiry pass started
        self.schedules: MsgSchedules | None = None  # with allow_msg_schedules (schedules.py)
        self.dedupe = StreamDedupe(store, cfg.duplicate_window, self.server.loop.call_later)
        self.writes = WriteBatch(self)
        # The batch machinery is made on a stream's first batch (`atomic`, `fast`): a restart or a
        # stream without batches does not import it (issue 24, tests/server/test_startup_imports.py).
        self._atomic: AtomicBatches | None = None
        self._fast: FastBatches | None = None
        self.ingest = StreamIngest(self)
        # A mirror's or sources' feeds (sourcing.py), made when the config has them: a stream
        # without them (a restart of one) does not import that module (issue 24).
        self.sourcing: StreamSourcing | None = None
        if cfg.mirror is not None or cfg.sources:
            self.sourcing = _new_sourcing(self)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.cfg.name

    @property
    def created_text(self) -> str:
        """The creation time as the wire writes it (RFC3339Nano), formatted at the first ask only: it
        never changes, and a ``/jsz?streams=1`` shows it for every stream at every request."""
        text = self._created_text
        if text is None or not CREATED_TEXT_ONCE:
            text = self._created_text = format_time(self.created)
        return text

    @property
    def atomic(self) -> AtomicBatches:
        if self._atomic is None:
            from pyjetstream.server.jetstream.batch_atomic import AtomicBatches

            self._atomic = AtomicBatches(self)
        return self._atomic

    @property
    def fast(self) -> FastBatches:
        if self._fast is None:
            from pyjetstream.server.jetstream.batch_fast import FastBatches

            self._fast = FastBatches(self)
        return self._fast

    def start(self) -> None:
        self._subscribe_inbound()
        # ``mirror_direct`` answers for the origin's name, once caught up (sourcing.py), not ours.
        if self.cfg.allow_direct:
            self._subscribe_direct()
        if self.cfg.allow_atomic:
            from pyjetstream.server.jetstream.batch_atomic import recover_partial_batch

            recover_partial_batch(self)
        self._schedule_expiry()
        if self.sourcing is not None:
            self.sourcing.start()
        if self.cfg.allow_msg_schedules:
            self.schedules = MsgSchedules(self)
            self.schedules.rebuild()
        self.ingest.configure()

    def _subscribe_inbound(self) -> None:
        """An internal subscription per subject: publishes one by one, traced ones, and a read's
        runs (``StreamIngest.ingest_run``, the router's ``InternalSub.run``)."""
        ingest = self.ingest
        for subject in self.cfg.subjects:
            self._subs.append(
                self.server.subscribe_internal(
                    subject, ingest.on_msg, traced=ingest.on_traced, run=ingest.ingest_run
                )
            )

    def _subscribe_direct(self) -> None:
        # Deferred: a start whose streams do not allow direct gets does not import it (issue 24).
        from pyjetstream.server.jetstream.direct_get import DirectGet

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
        self.writes.end()
        self.closed = True
        if self.sourcing is not None:
            self.sourcing.stop(delete=delete)
        if self.schedules is not None:
            self.schedules.stop()
        for consumer in list(self.consumers.values()):
            consumer.stop(delete=delete, advisory=delete, stream_deleted=delete)
        self.consumers.clear()
        self.csl.clear()
        self.acking.clear()
        self._unsubscribe(self._subs)
        self._unsubscribe(self._direct_subs)
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self.dedupe.stop()
        self._clear_batches(atomic=True, fast=True)
        if delete:
            self.store.delete()
        else:
            self.store.stop()

    def _clear_batches(self, *, atomic: bool, fast: bool) -> None:
        """Drop the open batches of the kinds given (of those made: see `atomic`, `fast`)."""
        if atomic and self._atomic is not None:
            self._atomic.clear()
        if fast and self._fast is not None:
            self._fast.clear()

    def update(self, cfg: StreamConfig) -> None:
        """Apply an already validated config (`UPDATE_SIGNALS_CHANGES_ONLY`: the consumers are told
        when it changed the stream's messages or retention)."""
        old = self.cfg
        held = self._held()
        self.cfg = cfg
        self.engine.stream_index.replace(self.name, old, cfg)
        if old.subjects != cfg.subjects:
            self._unsubscribe(self._subs)
            self._subscribe_inbound()
        if old.allow_direct != cfg.allow_direct:
            if cfg.allow_direct:
                self._subscribe_direct()
            else:
                self._unsubscribe(self._direct_subs)
        self.dedupe.configure(cfg.duplicate_window)
        self._clear_batches(atomic=not cfg.allow_atomic, fast=not cfg.allow_batched)
        self.ingest.configure()
        self.store.update_config(store_config_for(cfg))
        self.persist_meta()
        self._schedule_expiry()
        if self.sourcing is None and cfg.sources:  # (a mirror cannot be added)
            self.sourcing = _new_sourcing(self)
        if self.sourcing is not None:
            self.sourcing.update(old, cfg)
        if cfg.allow_msg_schedules and self.schedules is None:
            self.schedules = MsgSchedules(self)
            self.schedules.rebuild()
            self.ingest.configure()
        if not UPDATE_SIGNALS_CHANGES_ONLY or old.retention != cfg.retention or self._held() != held:
            self._signal_all_consumers()

    def _held(self) -> tuple[int, int, int, int]:
        """What the stream holds, as far as its consumers' positions and counts go."""
        state = self.store.fast_state()
        return state.msgs, state.first_seq, state.last_seq, state.num_deleted

    @property
    def identity(self) -> str:
        """⟨2.15+⟩ ``Nats-Stream-Identity``: a hash of the creation time (``mset.identity``)."""
        return stream_identity(self.created)

    def persist_meta(self) -> None:
        self.store.write_meta(encode_stream_meta(self.cfg, self.created))

    # --- what ingest asks of the stream ------------------------------------------------------

    def last_seq_on_subject(self, subject: str) -> int:
        """The last sequence on a subject or filter, 0: none (``MessageStore.last_seq_on``: from
        the index, the message is not read)."""
        return self.store.last_seq_on(subject)

    def has_interest_for(self, subject: str) -> bool:
        """Interest retention: does some consumer's filter take ``subject`` (``csl.HasInterest``)."""
        return self.csl.has_interest(subject)

    # --- consumers ---------------------------------------------------------------------------

    def signal_consumers(self, seq: int, subject: str) -> None:
        """``signalConsumers``: the consumers whose filter takes ``subject`` (``csl.Match``)."""
        for consumer in self.csl.match(subject):
            consumer.signal_matched(seq)

    def signal_stored(self, signals: list[tuple[int, str]]) -> None:
        """`signal_consumers` for stored messages (``(seq, subject)`` each; ``WriteBatch``:
        once their writes reached the OS), one lookup per change of subject."""
        match = self.csl.match
        last = ""
        consumers: tuple[Any, ...] = ()
        for seq, subject in signals:
            if subject != last:
                last, consumers = subject, match(subject)
            for consumer in consumers:
                try:
                    consumer.signal_matched(seq)
                except Exception:  # one consumer's failure must not starve the others
                    self.server.logger.exception("consumer '%s' failed on new messages", consumer.name)

    def _removed(self, seq: int, subject: str) -> None:
        """The store removed one message (``storeUpdates`` with ``md == -1``): each consumer whose
        filter takes its subject counts it out of num pending (``decStreamPending``) instead of
        recounting."""
        for consumer in self.csl.match(subject):
            consumer.dec_stream_pending(seq, subject)

    def note_pending(self, consumer: Consumer) -> None:
        """The consumer holds pending acks (a delivery pass left some, or a restore brought some):
        the expiry passes look at it until they find it holds none (`_expired_acks`)."""
        self.acking[consumer] = None

    def _signal_all_consumers(self) -> None:
        for consumer in list(self.consumers.values()):
            consumer.signal_new(0, "")

    def add_consumer(self, consumer: Any) -> None:
        self.consumers[consumer.name] = consumer
        self.csl.add(consumer)
        self.store.on_removed = self._removed

    def remove_consumer(self, name: str) -> None:
        """A consumer left: on an interest stream, what it alone still needed goes. A stored message
        is one some consumer needs (none needed: not stored, or removed at its last ack), so only
        the messages above the leaving consumer's ack floor that it had not acked can have lost
        their last taker; they are the ones looked at (`INTEREST_CHECK_FROM_FLOOR`), not the whole
        stream — a caught-up consumer's delete looked at 200,000 messages, ~480 ms of CPU
        (nats-server's ``checkInterestState`` walks each consumer's range since its last check)."""
        consumer = self.consumers.pop(name, None)
        if consumer is not None:
            self.csl.remove(consumer)
            self.acking.pop(consumer, None)
        if not self.consumers:
            self.store.on_removed = None
        if self.cfg.retention != RetentionPolicy.LIMITS:
            self.check_interest_state(consumer if INTEREST_CHECK_FROM_FLOOR else None)

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
            self.engine.usage_dropped()

    def check_interest_state(self, gone: Consumer | None = None) -> None:
        """After consumers went away (``gone``: the one that did, whose needs bound the walk:
        `interest_check.lost_interest`): drop messages no remaining consumer needs
        (interest/workqueue); without ``gone`` every message is looked at. ``interest_checked``
        counts the messages looked at."""
        if not self._interest_walk():
            return
        from pyjetstream.server.jetstream import interest_check  # (at the first walk: a start needs none)

        if gone is not None:
            removed = interest_check.lost_interest(self, gone, gone.state.asflr + 1, 1 << 63, gone.needs_ack)
        else:
            removed = self._whole_interest_walk()
        if removed:
            self.engine.account_usage_changed()

    def check_interest_skipped(self, consumer: Consumer, lo: int, hi: int) -> None:
        """A ``CONSUMER.RESET`` moved ``consumer`` past ``lo``..``hi`` (its old ack floor up to
        its new start): of those, drop what nobody needs now (nats-server
        ``checkStateForInterestStream`` after ``resetStartingSeq``: the consumer's skipped range,
        not the stream)."""
        from pyjetstream.server.jetstream import interest_check

        if self._interest_walk() and interest_check.lost_interest(self, consumer, lo, hi, None):
            self.engine.account_usage_changed()

    def _interest_walk(self) -> bool:
        """Whether an interest check has messages to look at; an interest stream left without
        consumers is purged here."""
        if self.cfg.retention == RetentionPolicy.LIMITS or self.closed:
            return False
        if not self.store.fast_state().msgs:
            return False
        if not self.consumers and self.cfg.retention == RetentionPolicy.INTEREST:
            self.store.purge()
            self.engine.account_usage_changed()
            return False
        return self.cfg.retention != RetentionPolicy.WORKQUEUE

    def _whole_interest_walk(self) -> bool:
        """Every message looked at, each removed when no consumer needs it."""
        state = self.store.fast_state()
        removed = False
        seq = state.first_seq
        while seq <= state.last_seq:
            try:
                msg, seq = self.store.load_next_msg(">", seq)
            except ErrStoreEOF:
                break
            self.interest_checked += 1
            if not any(c.needs_ack(seq, msg.subject) for c in self.csl.match(msg.subject)):
                removed = self.store.remove_msg(seq) or removed
            seq += 1
        return removed

    # --- purge, get, delete ------------------------------------------------------------------

    def purge(self, subject: str = "", seq: int = 0, keep: int = 0) -> int:
        """Purge (all, a subject, up to a sequence, keeping some); tell the consumers concerned.

        A subject purge that removed nothing (the roll-up of a new subject: a schedule, a KV
        purge) changes nobody; one of a literal subject concerns only the consumers filtered to
        exactly it (those the consumer index gives for it)."""
        if subject or seq or keep:
            purged = self.store.purge_ex(subject, seq, keep)
            if subject and not purged:
                return 0
        else:
            purged = self.store.purge()
        literal = bool(subject) and not has_wildcard(subject)
        self._tell_purged(list(self.csl.match(subject) if literal else self.consumers.values()), subject)
        self.engine.usage_dropped()  # (a purge only frees: the cached usage is an upper bound)
        return purged

    def _tell_purged(self, consumers: list[Consumer], subject: str) -> None:
        """nats-server ``purgeLocked``: a purge moves the consumers whose filters lie inside the
        purged subject (all of them for a whole purge) past what it removed; a consumer whose
        filter is wider than the subject (no filter: widest) drops the pending acks of the
        messages it removed (``isWider``); the others are not touched."""
        first = stream_first = 0  # (each looked up once, when a consumer is to be told)
        for consumer in consumers:
            filters = filters_of(consumer.cfg)
            if not subject or (filters and all(is_subset(f, subject) for f in filters)):
                first = first or self._first_after_purge(subject)
                consumer.on_stream_purged(first, reset=True)
            elif not filters or any(is_subset(subject, f) for f in filters):
                stream_first = stream_first or self.store.fast_state().first_seq
                consumer.on_stream_purged(stream_first, wider=True, reset=True)

    def purge_subjects(self, subjects: list[str], keep: int = 0) -> int:
        """`purge` of each of the literal ``subjects`` (keeping its newest ``keep``: a stretch of
        schedules' roll-ups; a firing's ended schedules: nats-server
        ``processJetStreamMsgWithRollup`` purges each), the store's removals done together."""
        purged = self.store.purge_subjects(subjects, keep)
        if purged:
            for subject in subjects:
                self._tell_purged(list(self.csl.match(subject)), subject)
            self.engine.usage_dropped()
        return purged

    def _first_after_purge(self, subject: str) -> int:
        """Where a purge leaves a consumer: the subject's first message left (``subject``:
        a subject purge), else the stream's."""
        state = self.store.fast_state()
        if subject:  # (nothing left on the subject: past the stream's last, as nats-server)
            return self.store.filtered_state(state.first_seq, subject).first or state.last_seq + 1
        return state.first_seq

    def delete_msg(self, seq: int, erase: bool) -> bool:
        removed = self.store.erase_msg(seq) if erase else self.store.remove_msg(seq)
        if removed:
            self.engine.usage_dropped()
        return removed

    # --- info --------------------------------------------------------------------------------

    def state(self, subjects_filter: str = "", deleted_details: bool = False) -> StreamState:
        store = self.store  # (without the deleted list its `fast_state`: one call fewer a /jsz stream listed)
        st = store.state(deleted_details=True) if deleted_details else store.fast_state()
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
            mirror=self.sourcing.mirror_info() if self.sourcing is not None else None,
            sources=self.sourcing.sources_info() if self.sourcing is not None else [],
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

    def watch_expiry(self, ts: int, ttl: int | None) -> None:
        """A message was stored at ``ts`` with a ``Nats-TTL`` of ``ttl`` seconds (0: none): make
        sure the expiry timer wakes up for it (or for max_age)."""
        if ttl and ttl > 0:
            if self._expiry_at is None or ts + ttl * NS_PER_S < self._expiry_at:
                self._schedule_expiry()
        elif self.cfg.max_age and "expiry" not in self._timers:
            self._schedule_expiry()

    def _schedule_expiry(self) -> None:
        """Wake up when the next message reaches max_age or its TTL, but not sooner than
        `EXPIRY_MIN_INTERVAL_NS` after the last pass (nats-server ``resetAgeChk``: "make sure we
        aren't firing too often": a steady publisher into a ``max_age`` stream woke a pass per
        message, each with its own commit and its look at the consumers)."""
        at = self.store.next_expiry()
        if at is not None:
            at = max(at, self._expired_at + EXPIRY_MIN_INTERVAL_NS)
        self._expiry_at = at
        self._schedule("expiry", at, self._expire)

    def _expire(self) -> None:
        self._timers.pop("expiry", None)
        self._expiry_at = None
        self._expired_at = time.time_ns()
        if self.closed:
            return
        handler = self._expire_with_marker if self.cfg.subject_delete_marker_ttl > 0 else None
        if handler is not None:
            # The markers of one expiry are written (and shown to consumers) together, as a
            # read's publishes are: one commit, not one per marker.
            self.writes.hold_for_read()
        self._marked = []
        removed = 0
        try:
            removed = self.store.expire_msgs(expire=handler)
        finally:  # (what the handler took has no TTL left: its marker now, whatever stopped the pass)
            if self._marked:
                removed += self._write_markers()
        if removed:
            self.engine.account_usage_changed()
            # Only a consumer with pending acks below the new first message has anything to drop
            # (the store told the others of each removal, or of a bulk one, already). One that
            # is behind with none keeps its position, as nats-server's (whose ``checkAckFloor``
            # drops such pending acks within a minute): its next read skips what is gone.
            self._expired_acks(self.store.fast_state().first_seq)
        self._schedule_expiry()

    def _expired_acks(self, first: int) -> None:
        """After an expiry pass: each consumer with pending acks whose ack floor is below the new
        first message drops what is gone (`Consumer.on_stream_purged`). Only those in `acking` can
        hold any (`EXPIRY_LOOKS_AT_ACKING`): what a pass costs depends on the consumers that took
        messages, not on every consumer of the stream — nats-server tells only the consumers whose
        filter takes each expired message (``storeUpdates`` → ``decStreamPending``). One found
        with none leaves `acking` (a delivery that leaves some puts it back, `note_pending`)."""
        skip_idle = EXPIRY_SKIPS_IDLE
        looks = skip_idle and EXPIRY_LOOKS_AT_ACKING
        acking = self.acking
        consumers = list(acking if looks else self.consumers.values())
        self.expiry_passes += 1
        self.expiry_looked += len(consumers)
        for consumer in consumers:
            st = consumer.state
            if not st.pending and looks:
                del acking[consumer]
            elif st.asflr < first - 1 and (st.pending or not skip_idle):
                consumer.on_stream_purged(first)

    def _expire_with_marker(self, seq: int, subject: str, last: bool) -> bool:
        """An expired message that is the last on its subject leaves a subject delete marker
        (ADR-43, nats-server ``handleRemovalOrSdm``): a new message with ``Nats-Marker-Reason:
        MaxAge``, the configured marker TTL, and a subject roll-up that removes the expired one —
        taken here (True: the store leaves it), written with the pass's others (`_write_markers`).
        A marker that expires in turn is only removed."""
        if not last:
            return False
        try:
            hdr = self.store.load_msg(seq).hdr
        except StoreError:
            return False
        if hdr and is_subject_delete_marker(hdr):
            return False
        self._marked.append((seq, subject))
        return True

    def _write_markers(self) -> int:
        """The markers of the expiry pass's messages `_expire_with_marker` took, written together
        (`StreamIngest.store_markers`), each rolling its expired message up; one whose marker
        could not be written is removed as its expiry (as before a marker of its own). Returns
        how many expired messages went."""
        marked, self._marked = self._marked, []
        ttl = self.cfg.subject_delete_marker_ttl // NS_PER_S
        self.ingest.store_markers([subject for _, subject in marked], _marker(ttl), ttl)
        for seq, _ in marked:
            self.store.remove_msg(seq)  # (False: its roll-up took it)
        return len(marked)


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
