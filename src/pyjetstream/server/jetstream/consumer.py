"""A JetStream consumer: its delivery state, the delivery loop and its info (nats-server ``consumer.go``).

State follows nats-server's names: ``sseq`` is the next stream sequence to consider, ``dseq`` the
next delivery sequence, ``adflr``/``asflr`` the ack floor (delivery/stream), ``pending`` the
delivered-but-unacked messages (stream seq → (delivery seq, delivery time ns)), ``rdc`` the
redelivery counts and ``rdq`` the redelivery queue (an ordered dict used as an ordered set).

Delivery runs on the event loop: ``_kick`` schedules one ``_run`` pass, which hands out up to
``DELIVER_BATCH`` messages and schedules itself again if more could go. Everything a message needs
on the way out is pre-built (ack reply prefix, filter matcher), so a delivery is one store read, one
f-string and one ``publish_internal``. Acks, pull requests, push specifics and persistence live in
the mixins (``acks.py``, ``pull_delivery.py``, ``push_delivery.py``, ``consumer_persistence.py``).
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api.enums import AckPolicy, DeliverPolicy, ReplayPolicy, RetentionPolicy
from pyjetstream.api.models_consumer import ConsumerConfig, ConsumerInfo, SequenceInfo
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.acks import AckProcessing
from pyjetstream.server.jetstream.consumer_config import filters_of, sample_frequency
from pyjetstream.server.jetstream.consumer_persistence import StatePersistence, encode_consumer_meta
from pyjetstream.server.jetstream.pull_delivery import PullDelivery
from pyjetstream.server.jetstream.push_delivery import PushDelivery
from pyjetstream.server.jetstream.store.base import (
    ConsumerStoreBase,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    StoredMsg,
    StoreError,
)
from pyjetstream.server.jetstream.subject_filter import SubjectFilter

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["Consumer"]

# Messages handed out per loop pass before yielding (lets sockets drain and acks come in).
DELIVER_BATCH = 512
# Why a delivery pass stopped.
_STOP_IDLE, _STOP_EOF, _STOP_MAX_PENDING = 0, 1, 2


class Consumer(AckProcessing, PullDelivery, PushDelivery, StatePersistence):
    """One consumer of a stream; made by ``consumer_create.add_consumer`` or at a restart by
    ``consumer_recovery.recover_consumers``, then ``start()``-ed."""

    def __init__(
        self,
        stream: Stream,
        cfg: ConsumerConfig,
        name: str,
        created: int,
        store: ConsumerStoreBase | None,
    ) -> None:
        self.stream = stream
        self.engine = stream.engine
        self.server = stream.server
        self.loop = stream.server.loop
        self.name = name
        self.cfg = cfg
        self.created = created
        self.store = store
        self.closed = False
        self.retention = stream.cfg.retention
        # --- delivery state
        self.sseq = 1
        self.dseq = 1
        self.adflr = 0
        self.asflr = 0
        self.pending: dict[int, tuple[int, int]] = {}
        self.rdc: dict[int, int] = {}
        self.rdq: dict[int, None] = {}
        self.lss: list[int] = []  # deliver last per subject: the sequences still to send
        self.lss_resume = 0
        self.npc = 0  # num pending (matching msgs at/after sseq)
        self.npf = 0  # the stream seq npc is valid through
        # last_per_subject counts subjects, not messages: recount lazily after new messages.
        self._lps = cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        self._npc_dirty = False
        self.ldt = 0  # last delivery (ns)
        self.lat = 0  # last ack (ns)
        self.filter = SubjectFilter(filters_of(cfg))
        self.sfreq = sample_frequency(cfg)
        self._ack_prefix = f"$JS.ACK.{stream.name}.{name}."
        self._kick_scheduled = False
        self._pass = 0
        self._delay_handle: Any = None
        self._undo: tuple[int, int, int] = (0, 0, 0)  # (source, seq, previous sseq) of the last fetch
        self._subs: list[Any] = []
        # removal detection for num pending (limits streams: every new seq is a stored msg)
        self._np_msgs = 0
        self._np_last = 0
        # replay original
        self._replay = cfg.replay_policy == ReplayPolicy.ORIGINAL
        self._replay_lseq = 0
        self._lts = 0
        self._init_persistence()
        self._init_acks()
        self._init_pull()
        self._init_push()

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def is_pull(self) -> bool:
        return not self.cfg.deliver_subject

    @property
    def is_durable(self) -> bool:
        return bool(self.cfg.durable_name)

    def start(self) -> None:
        """Restore or select the starting position, subscribe, and start delivering."""
        if self.store is not None and self.store.has_state():
            self._apply_stored_state()
        else:
            self._select_starting_seq()
            self._dirty()
            # As nats-server reports it: the ack floor stays 0 until the first ack (or, for
            # AckNone, the first delivery), whatever the starting position.
            self.asflr = 0
        self._stream_num_pending()
        if self._replay:
            self._replay_lseq = self.stream.store.fast_state().last_seq
        server = self.server
        stream, name = self.stream.name, self.name
        # nats-server subscribes ``$JS.ACK.<S>.<C>.*.*.*.*.*``; ``>`` matches the same acks with one
        # trie step instead of five (every ack subject is unique, so none is a cache hit) and
        # _on_ack answers the other shapes as no subscription would.
        self._subs.append(server.subscribe_internal(f"$JS.ACK.{stream}.{name}.>", self._on_ack))
        self._subs.append(
            server.subscribe_internal(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}", self._on_pull_request)
        )
        if self.is_pull:
            self._start_pull()
        else:
            self._start_push()
        self._kick()

    def stop(self, delete: bool = False, advisory: bool = False) -> None:
        """Stop delivering; with ``delete`` also drop the persisted state (and tell pull waiters)."""
        if self.closed:
            return
        if delete and advisory:
            advisories.consumer_action(self.engine, self.stream.name, self.name, "delete")
        if delete and self.is_pull:
            self._release_waiting()
        self.closed = True
        for sub in self._subs:
            sub.unsubscribe()
        self._subs.clear()
        self._stop_acks()
        self._stop_pull()
        self._stop_push()
        if self._delay_handle is not None:
            self._delay_handle.cancel()
            self._delay_handle = None
        self._close_store(delete)
        if delete:
            self.stream.remove_consumer(self.name)

    def delete(self) -> None:
        """Delete with the advisory (API delete, inactivity)."""
        self.stop(delete=True, advisory=True)

    def update_config(self, cfg: ConsumerConfig) -> None:
        """Apply an already validated update (``updateConfig``)."""
        old = self.cfg
        if cfg.deliver_subject != old.deliver_subject:
            self._update_deliver_subject(cfg.deliver_subject)
        if cfg.ack_wait != old.ack_wait and self._ptmr is not None:
            self._arm_pending_timer(0.1)
        if cfg.rate_limit_bps != old.rate_limit_bps:
            self._set_rate_limit(cfg.rate_limit_bps)
        self.cfg = cfg
        self.sfreq = sample_frequency(cfg)
        if filters_of(cfg) != filters_of(old):
            self.filter = SubjectFilter(filters_of(cfg))
        if cfg.inactive_threshold != old.inactive_threshold:
            self._update_inactive_threshold()
        if self.store is not None:
            with contextlib.suppress(StoreError, OSError):
                self.store.write_meta(encode_consumer_meta(self.name, cfg, self.created))
        self._stream_num_pending()
        self._kick()

    # --- the Stream contract -----------------------------------------------------------------

    def matches_subject(self, subject: str) -> bool:
        return self.filter.matches(subject)

    def signal_new(self, seq: int, subject: str) -> None:
        """A message was stored (``seq == 0``: something changed, re-check)."""
        if self.closed:
            return
        if seq == 0:
            self._stream_num_pending()
            self._kick()
            return
        if not self.filter.matches(subject):
            return
        if seq > self.npf:
            if self._lps:
                self._npc_dirty = True
            else:
                self.npc += 1
        if seq < self.sseq:
            return
        if (self.active if self.cfg.deliver_subject else self.waiting) and not self._kick_scheduled:
            self._kick()

    def needs_ack(self, seq: int, subject: str) -> bool:
        """Interest retention: does this consumer still need ``seq``? (``needAck``)."""
        if not self.filter.match_all and not self.filter.matches(subject):
            return False
        if seq <= self.asflr:
            return False
        if self.cfg.ack_policy == AckPolicy.EXPLICIT and seq < self.sseq:
            return seq in self.pending
        return True

    def on_stream_purged(self, first_seq: int) -> None:
        """Messages below ``first_seq`` are gone (purge, expiry): skip them (``purge``)."""
        if self.closed:
            return
        if self.sseq < first_seq:
            self.sseq = first_seq
        if self.asflr < first_seq:
            self.asflr = first_seq - 1
            for seq in [s for s in self.pending if s <= self.asflr]:
                dseq = self.pending.pop(seq)[0]
                if dseq > self.adflr:
                    self.adflr = dseq
                    if self.adflr > self.dseq:
                        self.dseq = self.adflr
                self.rdc.pop(seq, None)
        if not self.pending:
            self.rdc.clear()
        for seq in [s for s in self.rdq if s < self.sseq and s not in self.pending]:
            del self.rdq[seq]
        if self.lss:
            self.lss = [s for s in self.lss if s >= first_seq]
            if not self.lss:
                self.sseq = max(self.sseq, self.lss_resume)
        self._dirty()
        self._stream_num_pending()
        self._kick()

    # --- starting position -------------------------------------------------------------------

    def _select_starting_seq(self) -> None:
        """``selectStartingSeqNo``."""
        cfg = self.cfg
        store = self.stream.store
        state = store.fast_state()
        policy = cfg.deliver_policy
        if cfg.opt_start_seq == 0:
            if policy == DeliverPolicy.ALL:
                sseq = state.first_seq
            elif policy == DeliverPolicy.LAST:
                sseq = state.last_seq
                if not self.filter.match_all:
                    sseq = max(store.filtered_state(1, f).last for f in self.filter.filters)
            elif policy == DeliverPolicy.LAST_PER_SUBJECT:
                lasts: set[int] = set()
                for f in self.filter.store_filters():
                    lasts.update(ss.last for ss in store.subjects_state(f).values())
                if lasts:
                    self.lss = sorted(lasts)
                    self.lss_resume = state.last_seq
                    sseq = self.lss[0]
                else:
                    sseq = state.last_seq
            elif cfg.opt_start_time is not None:
                sseq = store.get_seq_from_time(int(cfg.opt_start_time))
            else:
                sseq = state.last_seq + 1
        else:
            sseq = cfg.opt_start_seq
        if state.first_seq == 0:
            sseq = 1
        elif sseq < state.first_seq:
            sseq = state.first_seq
        elif sseq > state.last_seq:
            sseq = state.last_seq + 1
        self.sseq = sseq
        self.dseq = 1
        self.adflr = 0
        self.asflr = sseq - 1

    # --- num pending -------------------------------------------------------------------------

    def _stream_num_pending(self) -> int:
        """Recount ``npc`` from the store (``streamNumPending``)."""
        store = self.stream.store
        lps = self.cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        total = 0
        through = 0
        for f in self.filter.store_filters():
            n, valid = store.num_pending(self.sseq, f, lps)
            total += n
            through = max(through, valid)
        state = store.fast_state()
        self._npc_dirty = False
        self.npc = total
        self.npf = max(through, state.last_seq)
        self._np_msgs = state.msgs
        self._np_last = state.last_seq
        return total

    def _check_removed(self) -> None:
        """Recount pending if messages were removed behind our back (limits, deletes).

        In a limits stream every new sequence is a stored message, so any shortfall between the
        messages we saw arrive and what the store holds means something was removed.
        """
        if self._npc_dirty:
            self._stream_num_pending()
            return
        if self.retention != RetentionPolicy.LIMITS:
            return
        state = self.stream.store.fast_state()
        if state.msgs != self._np_msgs + (state.last_seq - self._np_last):
            self._stream_num_pending()

    def num_pending(self) -> int:
        if self._npc_dirty:
            self._stream_num_pending()
        return self.npc if self.npc > 0 else 0

    def _check_num_pending(self) -> int:
        """The count reported in info: recounted from the store, so it is always exact."""
        self._stream_num_pending()
        return self.num_pending()

    # --- delivery loop -----------------------------------------------------------------------

    def _kick(self) -> None:
        if not self._kick_scheduled and not self.closed:
            self._kick_scheduled = True
            self.loop.call_soon(self._run)

    def _next_msg(self) -> tuple[StoredMsg | None, int, int]:
        """The next message to deliver and its delivery count (``getNextMsg``).

        Returns ``(msg, dc, stop_reason)``; ``msg`` is None when nothing can go now.
        Redeliveries come first, then the last-per-subject list, then new messages.
        """
        store = self.stream.store
        rdq = self.rdq
        while rdq:
            seq = next(iter(rdq))
            del rdq[seq]
            dc = self.rdc.get(seq, 0) + 2
            self.rdc[seq] = dc - 1
            maxdc = self.cfg.max_deliver
            if 0 < maxdc < dc:
                self._max_deliveries_exceeded(seq, dc)
                continue
            try:
                msg = store.load_msg(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                # Gone from the stream (limits, delete): nothing left to redeliver.
                self._drop_pending(seq)
                continue
            self._undo = (1, seq, 0)
            return msg, dc, _STOP_IDLE
        maxp = self.cfg.max_ack_pending
        if maxp > 0 and len(self.pending) >= maxp:
            return None, 0, _STOP_MAX_PENDING
        prev = self.sseq
        if self.lss:
            seq = self.lss.pop(0)
            if not self.lss:
                self.sseq = self.lss_resume
            try:
                msg = store.load_msg(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                return self._next_msg()
            if seq >= self.sseq:
                self.sseq = seq + 1
            self._undo = (2, seq, prev)
            return msg, 1, _STOP_IDLE
        single = self.filter.single
        try:
            if single is not None:
                msg, seq = store.load_next_msg(single, self.sseq)
            else:
                msg, seq = self._load_next_multi()
        except ErrStoreEOF:
            self._at_eof()
            return None, 0, _STOP_EOF
        self.sseq = seq + 1
        self._undo = (3, seq, prev)
        return msg, 1, _STOP_IDLE

    def _load_next_multi(self) -> tuple[StoredMsg, int]:
        """The first message at/after sseq matching any of several filters."""
        store = self.stream.store
        best: tuple[StoredMsg, int] | None = None
        for f in self.filter.filters:
            try:
                found = store.load_next_msg(f, self.sseq)
            except ErrStoreEOF:
                continue
            if best is None or found[1] < best[1]:
                best = found
        if best is None:
            raise ErrStoreEOF()
        return best

    def _unget(self) -> None:
        """Put the last fetched message back (no destination, or a replay/rate delay)."""
        source, seq, prev = self._undo
        if source == 1:
            n = self.rdc.get(seq, 0) - 1
            if n > 0:
                self.rdc[seq] = n
            else:
                self.rdc.pop(seq, None)
            self.rdq = {seq: None, **self.rdq}
        elif source == 2:
            self.lss.insert(0, seq)
            self.sseq = prev
        elif source == 3:
            self.sseq = prev
        self._undo = (0, 0, 0)

    def _run(self) -> None:
        """One delivery pass: hand out what can go now, then wait for a kick.

        The loop is the hot path: locals instead of attributes, one clock read per pass (a pass
        lasts milliseconds), and new messages fetched inline; redeliveries, last-per-subject
        lists and several filters go through ``_next_msg``.
        """
        self._kick_scheduled = False
        if self.closed or self._delay_handle is not None:
            return
        self._check_removed()
        cfg = self.cfg
        push = bool(cfg.deliver_subject)
        track = cfg.ack_policy != AckPolicy.NONE
        ack_none_interest = not track and self.retention != RetentionPolicy.LIMITS
        headers_only = cfg.headers_only
        maxp = cfg.max_ack_pending if track else 0
        publish = self.server.publish_internal
        prefix = self._ack_prefix
        load_next = self.stream.store.load_next_msg
        single = self.filter.single
        now = time.time_ns()
        self._pass += 1  # requests' interest is checked once per pass (it cannot change within one)
        stop = _STOP_IDLE
        budget = DELIVER_BATCH
        delivered = 0
        while True:
            if budget <= 0:
                break
            if push:
                if not self.active or (self.maxpb and self.pbytes > self.maxpb):
                    break
            elif not self.waiting:
                break
            if self.rdq or self.lss or single is None or (maxp > 0 and len(self.pending) >= maxp):
                msg, dc, stop = self._next_msg()
                if msg is None:
                    break
            else:
                prev = self.sseq
                try:
                    msg, _ = load_next(single, prev)
                except ErrStoreEOF:
                    self._at_eof()
                    stop = _STOP_EOF
                    break
                self.sseq = msg.seq + 1
                self._undo = (3, msg.seq, prev)
                dc = 1
            if self._replay and self._replay_delay(msg):
                budget = 0
                break
            seq = msg.seq
            dseq = self.dseq
            if dc == 1:
                self.npc -= 1
            npc = self.npc
            ack = f"{prefix}{dc}.{seq}.{dseq}.{msg.ts}.{npc if npc > 0 else 0}"
            hdr: bytes | None = msg.hdr or None
            payload = msg.data
            if headers_only:
                hdr = _headers_only(hdr, len(payload))
                payload = b""
            if push:
                dest = self.dsubj
                size = len(dest) + len(ack) + (len(hdr) if hdr else 0) + len(payload)
                if self.rate is not None and self._rate_delay(size):
                    self._unget_counted(dc)
                    budget = 0
                    break
            else:
                size = len(msg.subject) + len(ack) + (len(hdr) if hdr else 0) + len(payload)
                wr = self._next_waiting(size)
                if wr is None:
                    self._unget_counted(dc)
                    stop = _STOP_IDLE
                    break
                dest = wr.reply
                if wr.n > 0 and wr.hb:
                    wr.hbt = time.monotonic() + wr.hb
            self.dseq = dseq + 1
            ok = publish(dest, payload, ack, hdr, msg.subject)
            if track:
                self.pending[seq] = (dseq, now)  # (an internal subscriber may have acked meanwhile)
                if self._ptmr is None:
                    self._arm_pending_timer(self._ack_wait_s(0))
            else:
                self.adflr = dseq
                self.asflr = seq
            if push:
                if self.maxpb:
                    self._after_push_delivery(size)
            elif wr.n <= 0 and wr.max_bytes > 0:
                self._send_batch_completed(dest, wr.max_bytes)
            if ack_none_interest:
                self.stream.ack_msg(seq)
            if not ok:
                self._did_not_deliver(seq)
            delivered += 1
            budget -= 1
        if delivered:
            self.ldt = now
            self._last_delivery = time.monotonic()
            if self.dthresh and not push:
                self.waiting.last = self._last_delivery
            self._dirty()
        if budget <= 0:
            if self._delay_handle is None:
                self._kick()  # more may be waiting: continue after other work had a turn
            return
        # Idle: nothing more can go now.
        if stop == _STOP_EOF:
            self._check_num_pending_on_eof()
        if self._replay and self.sseq > self._replay_lseq:
            self._replay = False
        if not push:
            self._process_waiting(eos=stop != _STOP_MAX_PENDING)

    def _at_eof(self) -> None:
        """Nothing matches after sseq: the consumer has looked at the whole stream."""
        last = self.stream.store.fast_state().last_seq
        if last >= self.sseq:
            self.sseq = last + 1

    def _unget_counted(self, dc: int) -> None:
        if dc == 1:
            self.npc += 1
        self._unget()

    def _check_num_pending_on_eof(self) -> None:
        state = self.stream.store.fast_state()
        if self.sseq > state.last_seq and self.npc != 0:
            self.npc = 0
            self.npf = state.last_seq

    def _replay_delay(self, msg: StoredMsg) -> bool:
        """``replay_policy: original``: wait the original gap before this message."""
        lts = self._lts
        self._lts = msg.ts
        if lts and msg.ts - lts > 1_000_000:
            self._unget()
            self._delay((msg.ts - lts) / 1e9)
            return True
        return False

    def _delay(self, seconds: float) -> None:
        def resume() -> None:
            self._delay_handle = None
            self._run()

        self._delay_handle = self.loop.call_later(seconds, resume)

    def _did_not_deliver(self, seq: int) -> None:
        """Nobody received a delivery (``didNotDeliver``)."""
        if self.cfg.deliver_subject:
            self._update_delivery_interest(self._has_delivery_interest())
        elif seq in self.pending and seq not in self.rdq:
            self.rdq[seq] = None
            self._kick()

    def _drop_pending(self, seq: int) -> None:
        """A pending message disappeared from the stream: stop tracking it."""
        p = self.pending.pop(seq, None)
        self.rdc.pop(seq, None)
        if p is not None and not self.pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1

    # --- persistence ---------------------------------------------------------------------------

    # --- info --------------------------------------------------------------------------------

    def info(self) -> ConsumerInfo:
        """``ConsumerInfo`` as nats-server reports it (``infoWithSnap``)."""
        num_waiting = 0
        if self.is_pull:
            self._process_waiting(eos=False)
            num_waiting = len(self.waiting)
        return ConsumerInfo(
            stream_name=self.stream.name,
            name=self.name,
            created=NanoTime(self.created),
            config=self.cfg,
            delivered=SequenceInfo(
                consumer_seq=self.dseq - 1,
                stream_seq=self.sseq - 1,
                last_active=NanoTime(self.ldt) if self.ldt else None,
            ),
            ack_floor=SequenceInfo(
                consumer_seq=self.adflr,
                stream_seq=self.asflr,
                last_active=NanoTime(self.lat) if self.lat else None,
            ),
            num_ack_pending=len(self.pending),
            num_redelivered=len(self.rdc),
            num_waiting=num_waiting,
            num_pending=self._check_num_pending(),
            push_bound=bool(self.cfg.deliver_subject) and self.active,
            ts=NanoTime(time.time_ns()),
        )


def _headers_only(hdr: bytes | None, size: int) -> bytes:
    """Drop the payload, add ``Nats-Msg-Size`` (``convertToHeadersOnly``)."""
    base = hdr[:-2] if hdr else b"NATS/1.0\r\n"
    return base + b"Nats-Msg-Size: %d\r\n\r\n" % size
