"""A JetStream consumer: the delivery loop, its lifecycle and its info (nats-server ``consumer.go``).

A ``Consumer`` is composed of one object per concept, each in its own file:

- ``state`` — :class:`~pyjetstream.server.jetstream.delivery_state.DeliveryState`: sequences,
  ack floors, pending acks, redelivery counts and queue (ack, nak, redeliver, purge, ...).
- ``acks`` — :class:`~pyjetstream.server.jetstream.acks.AckProcessor`: the ack subscriber, the
  ack-wait / backoff timer and the ack advisories.
- ``pull`` — :class:`~pyjetstream.server.jetstream.pull_delivery.PullDelivery`: pull requests,
  the waiting queue and their statuses.
- ``push`` — :class:`~pyjetstream.server.jetstream.push_delivery.PushDelivery`: deliver-subject
  interest, idle heartbeats, flow control and the rate limit.
- ``writer`` — :class:`~pyjetstream.server.jetstream.consumer_persistence.StateWriter`: the
  persisted state.

The consumer itself picks the starting position, counts pending messages, runs the delivery
loop, deletes itself when inactive, and reports its info. Delivery runs on the event loop:
``kick`` schedules one ``_run`` pass, which hands out up to ``DELIVER_BATCH`` messages and
schedules itself again if more could go. Everything a message needs on the way out is pre-built
(ack reply prefix, filter matcher, the receiver), a pass goes in runs (``_gather`` the next
messages, ``_frame_run`` or ``_deliver_msgs`` them, mirroring ``getNextMsg`` / ``deliverMsg``), and
a new message to a client receiver is one bytes format for its control line with the ack reply
and three appends to the receiver's output (see ``_run``).
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api import subjects as S
from pyjetstream.api.advisories import ConsumerPauseAdvisory
from pyjetstream.api.codec import encode, go_json_error
from pyjetstream.api.enums import AckPolicy, DeliverPolicy, PriorityPolicy, ReplayPolicy, RetentionPolicy
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_consumer import ConsumerConfig, ConsumerInfo, SequenceInfo
from pyjetstream.api.responses import ConsumerResetResponse
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime
from pyjetstream.api.versioning import with_dynamic
from pyjetstream.protocol.headers import get_header
from pyjetstream.protocol.writers import CRLF, append_hmsg, append_msg, hmsg_prefix, msg_prefix
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.acks import AckProcessor
from pyjetstream.server.jetstream.api_level import required_level_refused
from pyjetstream.server.jetstream.consumer_config import filters_of, sample_frequency
from pyjetstream.server.jetstream.consumer_persistence import StateWriter
from pyjetstream.server.jetstream.delivery_state import DeliveryState
from pyjetstream.server.jetstream.pull_delivery import PullDelivery
from pyjetstream.server.jetstream.push_delivery import PushDelivery
from pyjetstream.server.jetstream.store.base import (
    ConsumerState,
    ConsumerStoreBase,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    MsgTuple,
    StoredMsg,
)
from pyjetstream.server.jetstream.subject_filter import SubjectFilter

if TYPE_CHECKING:
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.jetstream.stream import Stream
    from pyjetstream.server.server import InternalSub
    from pyjetstream.server.subscription import Subscription

__all__ = ["Consumer"]

# Messages handed out per loop pass before yielding (lets sockets drain and acks come in).
DELIVER_BATCH = 512
# A pass reads new messages ahead in runs of at most this many messages / bytes (the last one
# may pass the byte cap): reading further than a pass delivers would be wasted.
READ_AHEAD = 128
READ_AHEAD_BYTES = 1 << 20
_STREAM_IDENTITY = H.STREAM_IDENTITY.encode()  # ⟨2.15⟩ echoed on a reset that asks for it
# Why a delivery pass stopped.
_STOP_IDLE, _STOP_EOF, _STOP_MAX_PENDING = 0, 1, 2
# nats-server adds up to a second of jitter to the inactivity threshold of pull consumers.
_JITTER_MIN, _JITTER_MAX = 0.1, 1.0


class Consumer:
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
        # (annotated: the component objects read these in their __init__, inside an import cycle)
        self.cfg: ConsumerConfig = cfg
        self.created = created
        self.closed = False
        self.retention: RetentionPolicy = stream.cfg.retention
        self.state: DeliveryState = DeliveryState()
        # num pending: matching messages at/after sseq, valid through stream seq npf
        self.npc = 0
        self.npf = 0
        # last_per_subject counts subjects, not messages: recount lazily after new messages.
        self._lps = cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        self._npc_dirty = False
        # removal detection for num pending (limits streams: every new seq is a stored msg)
        self._np_msgs = 0
        self._np_last = 0
        self.filter = SubjectFilter(filters_of(cfg))
        self.sfreq = sample_frequency(cfg)
        self.ack_prefix: str = f"$JS.ACK.{stream.name}.{name}."
        self._kick_scheduled = False
        self._pass = 0
        self._delay_handle: asyncio.TimerHandle | None = None
        self._undo: tuple[int, int, int] = (0, 0, 0)  # (source, seq, previous sseq) of the last fetch
        self._subs: list[InternalSub] = []
        # replay original
        self._replay = cfg.replay_policy == ReplayPolicy.ORIGINAL
        self._replay_lseq = 0
        self._lts = 0
        # inactivity: the delete timer and its period (seconds, 0 = never)
        self._dtmr: asyncio.TimerHandle | None = None
        self.dthresh = 0.0
        # ⟨2.11+⟩ pause: the timer that resumes delivery at ``cfg.pause_until``
        self._uptmr: asyncio.TimerHandle | None = None
        self.writer = StateWriter(self, store)
        self.acks = AckProcessor(self)
        self.pull = PullDelivery(self)
        self.push = PushDelivery(self)
        self.update_inactive_threshold(start=False)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def is_pull(self) -> bool:
        return not self.cfg.deliver_subject

    @property
    def is_durable(self) -> bool:
        return bool(self.cfg.durable_name)

    def start(self, restored: ConsumerState | None = None) -> None:
        """Restore or select the starting position, subscribe, and start delivering
        (``restored``: the state a stream restore brings)."""
        stored = restored if restored is not None else self.writer.stored_state()
        if stored is not None:
            self.state.restore(stored)
            if self.state.pending:
                if self.cfg.ack_policy == AckPolicy.FLOW_CONTROL:
                    # No ack wait: what was not acknowledged before the restart goes out again.
                    self.state.redeliver_all(time.time_ns())
                else:
                    # Check pending soon after a restart: whatever was due while down is due now.
                    self.acks.arm(min(0.5, self.acks.ack_wait_s(0)))
        else:
            self._select_starting_seq()
            self.dirty()
        self._stream_num_pending()
        if self._replay:
            self._replay_lseq = self.stream.store.fast_state().last_seq
        server = self.server
        stream, name = self.stream.name, self.name
        # nats-server subscribes ``$JS.ACK.<S>.<C>.*.*.*.*.*``; ``>`` matches the same acks with one
        # trie step instead of five (every ack subject is unique, so none is a cache hit) and
        # on_ack answers the other shapes as no subscription would.
        # An AckNone consumer has no ack subscription at all: an ack with a reply gets the core
        # 503 no-responders answer, as from nats-server.
        if self.cfg.ack_policy not in (AckPolicy.NONE, AckPolicy.FLOW_CONTROL):
            self._subs.append(
                server.subscribe_internal(
                    f"$JS.ACK.{stream}.{name}.>", self.acks.on_ack, acks=self.acks.on_ack_run
                )
            )
        self._subs.append(
            server.subscribe_internal(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}", self.pull.on_request)
        )
        self._subs.append(
            server.subscribe_internal(f"$JS.API.CONSUMER.RESET.{stream}.{name}", self._on_reset_request)
        )
        if self.is_pull:
            if self.dthresh:
                self.start_inactivity_timer(self.dthresh)
        else:
            self.push.start()
        self._update_pause_state()
        self.kick()

    def stop(self, delete: bool = False, advisory: bool = False) -> None:
        """Stop delivering; with ``delete`` also drop the persisted state (and tell pull waiters)."""
        if self.closed:
            return
        if delete and advisory:
            advisories.consumer_action(self.engine, self.stream.name, self.name, "delete")
        if delete and self.is_pull:
            self.pull.release_all()
        self.closed = True
        for sub in self._subs:
            sub.unsubscribe()
        self._subs.clear()
        self.acks.stop()
        self.pull.stop()
        self.stop_inactivity_timer()
        self.push.stop()
        if self._uptmr is not None:
            self._uptmr.cancel()
            self._uptmr = None
        if self._delay_handle is not None:
            self._delay_handle.cancel()
            self._delay_handle = None
        self.writer.close(delete)
        if delete:
            self.stream.remove_consumer(self.name)

    def delete(self) -> None:
        """Delete with the advisory (API delete, inactivity)."""
        self.stop(delete=True, advisory=True)

    def update_config(self, cfg: ConsumerConfig) -> None:
        """Apply an already validated update (``updateConfig``)."""
        old = self.cfg
        if cfg.deliver_subject != old.deliver_subject:
            self.push.update_deliver_subject(cfg.deliver_subject)
        if cfg.ack_wait != old.ack_wait and self.acks.ptmr is not None:
            self.acks.arm(0.1)
        if cfg.rate_limit_bps != old.rate_limit_bps:
            self.push.set_rate_limit(cfg.rate_limit_bps)
        self.cfg = cfg
        self.acks.configure()
        self.sfreq = sample_frequency(cfg)
        if filters_of(cfg) != filters_of(old):
            self.filter = SubjectFilter(filters_of(cfg))
        if cfg.inactive_threshold != old.inactive_threshold:
            self.update_inactive_threshold()
        if (cfg.pause_until or ZERO_TIME) != (old.pause_until or ZERO_TIME):
            self._update_pause_state()
            self.send_pause_advisory()
        self.writer.write_meta()
        self._stream_num_pending()
        self.kick()

    def dirty(self) -> None:
        """The delivery state changed: persist it soon."""
        self.writer.dirty()

    # --- the Stream contract -----------------------------------------------------------------

    def matches_subject(self, subject: str) -> bool:
        return self.filter.matches(subject)

    def signal_new(self, seq: int, subject: str) -> None:
        """A message was stored (``seq == 0``: something changed, re-check)."""
        if self.closed:
            return
        if seq == 0:
            self._stream_num_pending()
            self.kick()
            return
        if not self.filter.matches(subject):
            return
        if seq > self.npf:
            self.npc += 1  # (also for last_per_subject: only the starting set is per subject)
        if seq < self.state.sseq:
            return
        if (self.push.active if self.cfg.deliver_subject else self.pull.waiting) and not self._kick_scheduled:
            self.kick()

    def needs_ack(self, seq: int, subject: str) -> bool:
        """Interest retention: does this consumer still need ``seq``? (``needAck``)."""
        if not self.filter.match_all and not self.filter.matches(subject):
            return False
        return self.state.needs(seq, self.cfg.ack_policy == AckPolicy.EXPLICIT)

    def on_stream_purged(self, first_seq: int) -> None:
        """Messages below ``first_seq`` are gone (purge, expiry): skip them (``purge``)."""
        if self.closed:
            return
        self.state.purge(first_seq, time.time_ns())
        self.dirty()
        self._stream_num_pending()
        self.kick()

    # --- starting position -------------------------------------------------------------------

    def _select_starting_seq(self) -> None:
        """``selectStartingSeqNo``."""
        cfg = self.cfg
        store = self.stream.store
        state = store.fast_state()
        policy = cfg.deliver_policy
        st = self.state
        if cfg.opt_start_seq == 0:
            if policy == DeliverPolicy.ALL:
                sseq = state.first_seq
            elif policy == DeliverPolicy.LAST:
                sseq = state.last_seq
                if not self.filter.match_all:
                    sseq = max(store.filtered_state(1, f).last for f in self.filter.filters)
            elif policy == DeliverPolicy.LAST_PER_SUBJECT and self.stream.cfg.max_msgs_per_subject == 1:
                sseq = state.first_seq  # every message is the last of its subject
            elif policy == DeliverPolicy.LAST_PER_SUBJECT:
                lasts: set[int] = set()
                for f in self.filter.store_filters():
                    lasts.update(ss.last for ss in store.subjects_state(f).values())
                if lasts:
                    st.lss = sorted(lasts)
                    st.lss_resume = state.last_seq
                    sseq = st.lss[0]
                else:
                    sseq = state.last_seq
            elif cfg.opt_start_time is not None:
                sseq = store.get_seq_from_time(int(cfg.opt_start_time))
            else:
                sseq = state.last_seq + 1
        else:
            sseq = cfg.opt_start_seq
        # 2.11+: an explicit opt_start_seq beyond the stream is kept (it waits for that sequence).
        if state.first_seq == 0 and cfg.opt_start_seq == 0:
            sseq = 1
        elif sseq > state.last_seq and cfg.opt_start_seq == 0:
            sseq = state.last_seq + 1
        elif sseq < state.first_seq:
            sseq = state.first_seq
        st.start_at(sseq)

    # --- num pending -------------------------------------------------------------------------

    def _stream_num_pending(self) -> int:
        """Recount ``npc`` from the store (``streamNumPending``)."""
        store = self.stream.store
        lps = self.cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        total = 0
        through = 0
        sseq = self.state.sseq
        for f in self.filter.store_filters():
            n, valid = store.num_pending(sseq, f, lps)
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
        """``checkNumPending``: the running count for info, never more than the stream could hold
        from sseq on."""
        if self._npc_dirty:
            self._stream_num_pending()
        state = self.stream.store.fast_state()
        sseq = self.state.sseq
        if sseq > state.last_seq:
            self.npc = 0
        elif self.npc > 0:
            self.npc = min(self.npc, state.msgs, state.last_seq - sseq + 1)
        return self.num_pending()

    # --- delivery loop -----------------------------------------------------------------------

    def kick(self) -> None:
        """Something may be deliverable: run a delivery pass soon (once)."""
        if not self._kick_scheduled and not self.closed:
            self._kick_scheduled = True
            self.loop.call_soon(self._run)

    def _next_msg(self) -> tuple[StoredMsg | None, int, int]:
        """The next message to deliver and its delivery count (``getNextMsg``).

        Returns ``(msg, dc, stop_reason)``; ``msg`` is None when nothing can go now.
        Redeliveries come first, then the last-per-subject list, then new messages.
        """
        store = self.stream.store
        st = self.state
        while st.rdq:
            nxt = st.next_redelivery()
            assert nxt is not None
            seq, dc = nxt
            maxdc = self.cfg.max_deliver
            if 0 < maxdc < dc:
                self.acks.max_deliveries_exceeded(seq, dc)
                continue
            try:
                msg = store.load_msg(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                # Gone from the stream (limits, delete): nothing left to redeliver.
                st.drop(seq)
                continue
            self._undo = (1, seq, 0)
            return msg, dc, _STOP_IDLE
        maxp = self.cfg.max_ack_pending
        if maxp > 0 and len(st.pending) >= maxp:
            return None, 0, _STOP_MAX_PENDING
        prev = st.sseq
        if st.lss:
            seq = st.lss.pop(0)
            if not st.lss:
                st.sseq = st.lss_resume
            try:
                msg = store.load_msg(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF):
                return self._next_msg()
            if seq >= st.sseq:
                st.sseq = seq + 1
            self._undo = (2, seq, prev)
            return msg, 1, _STOP_IDLE
        single = self.filter.single
        try:
            if single is not None:
                msg, seq = store.load_next_msg(single, st.sseq)
            else:
                msg, seq = self._load_next_multi()
        except ErrStoreEOF:
            self._at_eof()
            return None, 0, _STOP_EOF
        st.sseq = seq + 1
        self._undo = (3, seq, prev)
        return msg, 1, _STOP_IDLE

    def _load_next_multi(self) -> tuple[StoredMsg, int]:
        """The first message at/after sseq matching any of several filters."""
        store = self.stream.store
        best: tuple[StoredMsg, int] | None = None
        sseq = self.state.sseq
        for f in self.filter.filters:
            try:
                found = store.load_next_msg(f, sseq)
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
        st = self.state
        if source == 1:
            st.unget_redelivery(seq)
        elif source == 2:
            st.lss.insert(0, seq)
            st.sseq = prev
        elif source == 3:
            st.sseq = prev
        self._undo = (0, 0, 0)

    def _run(self) -> None:
        """One delivery pass: one turn of nats-server's ``loopAndGatherMsgs``, handing out what
        can go now, then waiting for a kick.

        The pass goes in runs: ``_gather`` gets the next messages (``getNextMsg``: a redelivery
        or a last-per-subject message alone, mostly new messages read ahead in a run), and one of
        two loops delivers them (``deliverMsg`` for each): ``_frame_run`` when nothing needs a look
        per message (new messages framed straight into the receiver's connection), else
        ``_deliver_msgs``. Calls are per run, never per message: the loops keep what they use in
        locals (a :class:`_Pass` carries it from run to run) and write the state's fields (next
        sequence, delivery sequence, pending entries) themselves. ``_end_pass`` does what follows.
        """
        self._kick_scheduled = False
        if self.closed or self._delay_handle is not None:
            return
        if self._uptmr is not None and self.paused_for() > 0:
            # Paused: nothing goes out, but pull requests still expire and get heartbeats.
            if self.is_pull:
                self.pull.process_waiting(eos=True)
            return
        self._check_removed()
        p = _Pass(self)
        try:
            while p.budget > 0 and self._can_send(p):
                run, dc, ahead = self._gather(p)
                if not run:
                    break
                if p.frames_only and ahead and p.conn is not None:
                    go_on = self._frame_run(p, run)
                else:
                    go_on = self._deliver_msgs(p, run, dc, ahead)
                if not go_on:
                    break
        finally:
            p.account()
        self._end_pass(p)

    def _can_send(self, p: _Pass) -> bool:
        """A push consumer has interest and flow-control room; a pull consumer a waiting request."""
        if p.push:
            ps = self.push
            return ps.active and not (ps.maxpb and ps.pbytes > ps.maxpb)
        return bool(self.pull.waiting)

    def _gather(self, p: _Pass) -> tuple[list[MsgTuple], int, bool]:
        """The next messages to deliver: ``getNextMsg`` for a run, as ``(messages, delivery
        count, ahead)``; empty when nothing can go now (``p.stop`` says why).

        A redelivery, the next last-per-subject message, a message under several filters and
        anything past ``max_ack_pending`` go through ``_next_msg``, one at a time (it moves the
        next sequence itself). Otherwise new messages are read ahead (``ahead``: the next sequence
        follows each as it goes out) in a run of as many as the pass, the ``max_ack_pending`` room
        and the waiting pull requests can take — one where each must be looked at before the next
        is read (no receiver to frame onto yet, AckNone on an interest stream, replay).
        """
        st = self.state
        maxp = p.maxp
        if st.rdq or st.lss or p.single is None or (maxp > 0 and len(st.pending) >= maxp):
            msg, dc, p.stop = self._next_msg()
            return ([] if msg is None else [msg]), dc, False
        if p.rsub is None or p.ack_none_interest or p.replay:
            want = 1
        else:
            budget = p.budget
            want = budget if budget < READ_AHEAD else READ_AHEAD
            if maxp > 0 and maxp - len(st.pending) < want:
                want = maxp - len(st.pending)
            if not p.push:
                want = max(min(want, self.pull.waiting.wanted()), 1)
        run = self.stream.store.load_next_msgs(p.single, st.sseq, want, READ_AHEAD_BYTES)
        if not run:
            self._at_eof()
            p.stop = _STOP_EOF
        return run, 1, True

    def _frame_run(self, p: _Pass, run: list[MsgTuple]) -> bool:
        """``deliverMsg`` for a run of new messages to a receiver that takes frames, when no
        message needs a look of its own (``_Pass.frames_only``: no rate limit, flow control,
        headers-only, replay, interest-stream AckNone or priority groups): per message the ack
        reply, the frame into the connection's output and the pending entry; the next sequence,
        the counters and the AckNone floor once per run (``_framed``). The frames are accounted for
        as in ``_deliver_msgs``, when they pass the receiver's room (the early write, maybe a
        slow-consumer cut: then the rest of the run goes the routed way, read again).

        A pull consumer's message goes to the head request as ``PullDelivery.next_waiting``'s
        common case takes it (the request's count, the requeue behind the others, its heartbeat
        deadline), inline; a message that is not that case (another receiver, a byte limit, a
        request to check or expired) and the rest of the run go to ``_deliver_msgs``. False: no
        request is left (the pass ends)."""
        st = self.state
        conn, rsub = p.conn, p.rsub
        assert conn is not None and rsub is not None
        out = conn.out
        append = out.append
        headers = conn.headers
        prefix1 = p.prefix1
        msub, mpfx, hsub, hpfx = p.msub, p.mpfx, p.hsub, p.hpfx
        acc, acc_bytes, room = p.acc, p.acc_bytes, p.room
        track = p.track
        pending = st.pending if track else None
        now = p.now
        dseq = first = start = st.dseq
        npc = self.npc
        seq = 0
        pull = not p.push
        q = self.pull.waiting._q
        dest, current_pass = p.dest, p.current_pass
        monotonic = time.monotonic
        for subject, seq, ts, hdr, payload in run:
            if pull:
                wr = q[0] if q else None
                if (
                    wr is None
                    or wr.reply != dest
                    or wr.checked != current_pass
                    or wr.max_bytes > 0
                    or (wr.expires and monotonic() >= wr.expires)
                ):
                    # Not next_waiting's common case: what went out so far, then the rest the long way.
                    p.msub, p.mpfx, p.hsub, p.hpfx = msub, mpfx, hsub, hpfx
                    p.acc, p.acc_bytes = acc, acc_bytes
                    if dseq != first:
                        self._framed(p, run[dseq - start - 1][1], dseq, npc, dseq - first, track)
                        p.acc_msgs += dseq - first
                    if wr is None:
                        return False
                    return self._deliver_msgs(p, run[dseq - start :], 1, True)
                wr.delivered += 1
                wr.n -= 1
                if wr.n <= 0:
                    q.popleft()
                elif len(q) > 1:
                    q.popleft()
                    q.append(wr)
                if wr.n > 0 and wr.hb:
                    wr.hbt = monotonic() + wr.hb
            npc -= 1
            if hdr and headers:
                if subject is not hsub:
                    hsub, hpfx = subject, hmsg_prefix(subject.encode(), rsub.sid_b)
                ack = b"%b%d.%d.%d.%d" % (prefix1, seq, dseq, ts, npc if npc > 0 else 0)
                acc += append_hmsg(out, hpfx, ack, hdr, payload)
                acc_bytes += len(hdr) + len(payload)
            else:
                if subject is not msub:
                    msub, mpfx = subject, msg_prefix(subject.encode(), rsub.sid_b)
                # append_msg's frame, with the control line and the ack reply in one format
                size = len(payload)
                line = b"%b%b%d.%d.%d.%d %d\r\n" % (mpfx, prefix1, seq, dseq, ts, npc if npc > 0 else 0, size)
                append(line)
                append(payload)
                append(CRLF)
                acc += len(line) + size + 2
                acc_bytes += size
            if pending is not None:
                pending[seq] = (dseq, now)
            dseq += 1
            if acc > room:  # where deliver would write early (and maybe cut the receiver)
                self._framed(p, seq, dseq, npc, dseq - first, track)
                conn.frames_queued(rsub, p.acc_msgs + dseq - first, acc_bytes, acc)
                first = dseq
                p.acc_msgs = acc = acc_bytes = 0
                if rsub.closed:
                    p.acc = p.acc_bytes = 0
                    p.conn = None
                    return True
                room = p.room = conn.frames_room()
                out = conn.out  # (the early write took the list: a new one takes what follows)
                append = out.append
        p.msub, p.mpfx, p.hsub, p.hpfx = msub, mpfx, hsub, hpfx
        p.acc, p.acc_bytes = acc, acc_bytes
        if dseq != first:
            self._framed(p, seq, dseq, npc, dseq - first, track)
            p.acc_msgs += dseq - first
        return not pull or bool(q)

    def _framed(self, p: _Pass, seq: int, dseq: int, npc: int, n: int, track: bool) -> None:
        """``_frame_run``'s ``n`` deliveries up to stream sequence ``seq`` went out: the state's
        next sequences and num pending, the AckNone floor or the ack timer, the pass's counters."""
        st = self.state
        st.sseq = seq + 1
        st.dseq = dseq
        self.npc = npc
        if not track:
            st.delivered_none(seq, dseq - 1)
        elif self.acks.ptmr is None:
            self.acks.arm_if_idle()
        p.delivered += n
        p.direct += n
        p.budget -= n

    def _deliver_msgs(self, p: _Pass, run: list[MsgTuple], dc: int, ahead: bool) -> bool:
        """``deliverMsg`` for each message of a run, everything checked per message: the ack
        reply (with the delivery count ``dc`` of a redelivery), headers-only, the rate limit or the
        pull request that takes it (``nextWaiting``), the pinned-client header, then the frame onto
        the receiver's connection (or its ``deliver``, or the routed way when there is no one
        receiver), the pending entry or AckNone floor, flow control, a pull request's completion.

        Anything that may publish (a pull status, a flow-control request, a routed delivery, a
        receiver cut as a slow consumer) drops the rest of a read-ahead run, so the next message is
        read after it. Returns False when the pass ends here (no interest or flow-control room, no
        request, a rate or replay delay)."""
        st = self.state
        ps = self.push
        pull = self.pull
        waiting = pull.waiting
        acks = self.acks
        push, track, replay, pinned = p.push, p.track, p.replay, p.pinned
        headers_only = self.cfg.headers_only
        prefix, prefix1, ack_adj = p.prefix, p.prefix1, p.ack_adj
        now = p.now
        dest, rsub, conn, room = p.dest, p.rsub, p.conn, p.room
        acc, acc_msgs, acc_bytes = p.acc, p.acc_msgs, p.acc_bytes
        msub, mpfx, hsub, hpfx = p.msub, p.mpfx, p.hsub, p.hpfx
        delivered = direct = 0
        size = 0
        prev = 0
        wr = None
        go_on = True
        try:
            for subject, seq, ts, mhdr, payload in run:
                drop = False  # the rest of the run is to be read again after this message
                if ahead:
                    prev = st.sseq  # (``_undo`` is set from it only before an ``_unget``)
                    st.sseq = seq + 1
                if replay:
                    if ahead:
                        self._undo = (3, seq, prev)
                    if self._replay_delay(ts):
                        p.budget = 0
                        return False
                dseq = st.dseq
                if dc == 1:
                    npc = self.npc = self.npc - 1
                    ack = b"%b%d.%d.%d.%d" % (prefix1, seq, dseq, ts, npc if npc > 0 else 0)
                else:
                    npc = self.npc
                    ack = b"%b%d.%d.%d.%d.%d" % (prefix, dc, seq, dseq, ts, npc if npc > 0 else 0)
                hdr: bytes | None = mhdr or None
                if headers_only:
                    hdr = _headers_only(hdr, len(payload))
                    payload = b""
                if push:
                    if p.push_size:
                        size = len(dest) + len(ack) - ack_adj + (len(hdr) if hdr else 0) + len(payload)
                        if ps.rate is not None and ps.rate_delay(size):
                            if ahead:
                                self._undo = (3, seq, prev)
                            self._unget_counted(dc)
                            p.budget = 0
                            return False
                else:
                    size = len(subject) + len(ack) - ack_adj + (len(hdr) if hdr else 0) + len(payload)
                    wr = pull.next_waiting(size, p.current_pass, p.groups, p.prioritized)
                    if pull.statuses != p.statuses:  # a request expired or was over its max_bytes
                        p.statuses = pull.statuses
                        drop = True
                    if wr is None:
                        if ahead:
                            self._undo = (3, seq, prev)
                        self._unget_counted(dc)
                        p.stop = _STOP_IDLE
                        return False
                    if wr.reply != dest:
                        p.acc, p.acc_msgs, p.acc_bytes = acc, acc_msgs, acc_bytes
                        p.receiver(wr.reply)
                        dest, rsub, conn, room = p.dest, p.rsub, p.conn, p.room
                        acc = acc_msgs = acc_bytes = 0
                        msub = hsub = ""
                    if pinned:
                        # ⟨2.11+⟩ every delivery of a pinned group names the pin
                        base = hdr[:-2] if hdr else b"NATS/1.0\r\n"
                        hdr = base + pull.priority.header_value() + b"\r\n"
                    if wr.n > 0 and wr.hb:
                        wr.hbt = time.monotonic() + wr.hb
                st.dseq = dseq + 1
                ok = True
                if rsub is None or rsub.closed:
                    ok = self.server.publish_internal(dest, payload, ack.decode(), hdr, subject)
                    drop = True
                elif conn is not None:
                    # ``ClientConnection.deliver``'s framing, without its per-message checks
                    # (none apply: see ``takes_frames``) and with the accounting per run.
                    if hdr is not None and conn.headers:
                        if subject is not hsub:
                            hsub, hpfx = subject, hmsg_prefix(subject.encode(), rsub.sid_b)
                        acc += append_hmsg(conn.out, hpfx, ack, hdr, payload)
                        acc_bytes += len(hdr) + len(payload)
                    else:
                        if subject is not msub:
                            msub, mpfx = subject, msg_prefix(subject.encode(), rsub.sid_b)
                        acc += append_msg(conn.out, mpfx, ack, payload)
                        acc_bytes += len(payload)
                    acc_msgs += 1
                    direct += 1
                    if acc > room:  # where deliver would write early (and maybe cut the receiver)
                        conn.frames_queued(rsub, acc_msgs, acc_bytes, acc)
                        acc = acc_msgs = acc_bytes = 0
                        if rsub.closed:
                            drop = True
                            conn = p.conn = None
                        else:
                            room = p.room = conn.frames_room()
                else:
                    ok = rsub.client.deliver(rsub, dest, ack.decode(), hdr, payload, None, subject)
                    direct += 1
                    if rsub.closed:
                        drop = True
                if track:
                    st.pending[seq] = (dseq, now)  # (an internal subscriber may have acked meanwhile)
                    if acks.ptmr is None:
                        acks.arm_if_idle()
                else:
                    st.delivered_none(seq, dseq)
                if push:
                    if ps.maxpb:
                        fcid = ps.fcid
                        ps.after_delivery(size)
                        if ps.fcid != fcid:  # a flow-control request went out
                            drop = True
                elif wr is not None and wr.n <= 0 and wr.max_bytes > 0:
                    pull.batch_completed(dest, wr.max_bytes)
                    drop = True
                if p.ack_none_interest:
                    self.stream.ack_msg(seq)
                if not ok:
                    self._did_not_deliver(seq)
                    drop = True
                delivered += 1
                if drop:
                    break
                if push:
                    if not ps.active or (ps.maxpb and ps.pbytes > ps.maxpb):
                        go_on = False
                        break
                elif not waiting._q:  # (``WaitQueue.__bool__`` without its call, once per message)
                    go_on = False
                    break
        finally:
            p.acc, p.acc_msgs, p.acc_bytes = acc, acc_msgs, acc_bytes
            p.msub, p.mpfx, p.hsub, p.hpfx = msub, mpfx, hsub, hpfx
            p.delivered += delivered
            p.direct += direct
            p.budget -= delivered
        return go_on

    def _end_pass(self, p: _Pass) -> None:
        """After a pass: count the direct deliveries as matches, note the activity, persist the
        state soon; then run again soon when the pass ran out of budget, or, idle, settle num
        pending at the end of the stream, end a replay and answer the pull requests that wait."""
        st = self.state
        ps = self.push
        if p.direct:
            self.server.count_matches(p.direct)
        if p.delivered:
            st.ldt = p.now
            ps.last_delivery = time.monotonic()
            if self.dthresh and not p.push:
                self.pull.waiting.last = ps.last_delivery
            self.dirty()
        if p.budget <= 0:
            if self._delay_handle is None:
                self.kick()  # more may be waiting: continue after other work had a turn
            return
        # Idle: nothing more can go now.
        if p.stop == _STOP_EOF:
            self._check_num_pending_on_eof()
        if self._replay and st.sseq > self._replay_lseq:
            self._replay = False
        if not p.push:
            self.pull.process_waiting(eos=p.stop != _STOP_MAX_PENDING)

    def _at_eof(self) -> None:
        """Nothing matches after sseq. ⟨2.11+⟩ sseq stays just past the last delivered message
        (nats-server 2.9 moved it past the end of the stream)."""

    def _unget_counted(self, dc: int) -> None:
        if dc == 1:
            self.npc += 1
        self._unget()

    def _check_num_pending_on_eof(self) -> None:
        state = self.stream.store.fast_state()
        if self.state.sseq > state.last_seq and self.npc != 0:
            self.npc = 0
            self.npf = state.last_seq

    def _replay_delay(self, ts: int) -> bool:
        """``replay_policy: original``: wait the original gap before the message stored at ``ts``."""
        lts = self._lts
        self._lts = ts
        if lts and ts - lts > 1_000_000:
            self._unget()
            self.delay((ts - lts) / 1e9)
            return True
        return False

    def delay(self, seconds: float) -> None:
        """Pause delivery for ``seconds`` (replay original, rate limit), then run a pass."""

        def resume() -> None:
            self._delay_handle = None
            self._run()

        self._delay_handle = self.loop.call_later(seconds, resume)

    def _did_not_deliver(self, seq: int) -> None:
        """Nobody received a delivery (``didNotDeliver``)."""
        if self.cfg.deliver_subject:
            self.push.update_interest(self.push.has_interest())
        elif self.state.redeliver_if_pending(seq):
            self.kick()

    # --- reset ⟨2.14+⟩ ---------------------------------------------------------------------------

    def _on_reset_request(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: ClientConnection | None
    ) -> None:
        """``processResetReq``: ``$JS.API.CONSUMER.RESET.<S>.<C>`` is the consumer's own
        subscription (so a missing consumer gets 503 no responders). ``{"seq": N}`` restarts at
        N, an empty body at the ack floor; the reply is the ConsumerInfo with ``reset_seq``."""
        if not reply or self.closed:
            return
        response = ConsumerResetResponse()
        if required_level_refused(hdr):
            response.error = E.JSRequiredApiLevelErr()
            self.server.publish_internal(reply, encode(response))
            return
        # A reset that names an expected stream identity (a durable source, ADR-60) is not
        # refused on a mismatch: the reply carries the identity, and the source decides.
        identity = self.stream.identity if hdr and get_header(hdr, _STREAM_IDENTITY) is not None else ""
        try:
            seq = self.reset(_reset_seq(payload))
        except JetStreamApiError as exc:
            response.error = exc.error
        else:
            info = self.info()
            # As a create or info reply: the server's _nats.ver / _nats.level in the metadata.
            info.config = msgspec.structs.replace(info.config, metadata=with_dynamic(info.config.metadata))
            response = ConsumerResetResponse.from_payload(info, reset_seq=seq)
        if identity and response.error is None:
            rhdr = b"NATS/1.0\r\n%s: %s\r\n\r\n" % (_STREAM_IDENTITY, identity.encode())
            self.server.publish_internal(reply, encode(response), hdr=rhdr)
            return
        self.server.publish_internal(reply, encode(response))

    def reset(self, seq: int) -> int:
        """``resetStartingSeq``: the sequence delivery restarts from; raises 10204 when the
        deliver policy does not allow it."""
        cfg = self.cfg
        if seq == 0:
            seq = self.state.asflr + 1
        elif cfg.deliver_policy == DeliverPolicy.ALL:
            pass
        elif cfg.deliver_policy == DeliverPolicy.BY_START_SEQUENCE:
            if seq < cfg.opt_start_seq:
                raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="below start seq"))
        elif cfg.deliver_policy == DeliverPolicy.BY_START_TIME and cfg.opt_start_time is not None:
            if seq < self.stream.store.get_seq_from_time(int(cfg.opt_start_time)):
                raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="below start time"))
        else:
            raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="not allowed"))
        seq = max(seq, 1)
        self.state.reset_to(seq)
        self.writer.reset(seq - 1)
        if self.retention == RetentionPolicy.INTEREST:
            # What this consumer skipped may now be needed by nobody (checkStateForInterestStream).
            self.stream.check_interest_state()
        self._stream_num_pending()
        self.dirty()
        self.kick()
        return seq

    # --- pause ⟨2.11+⟩ ----------------------------------------------------------------------------

    def paused_for(self) -> int:
        """Nanoseconds until ``pause_until`` (0: not paused)."""
        until = self.cfg.pause_until
        if until is None or until == ZERO_TIME:
            return 0
        return max(until - time.time_ns(), 0)

    def _update_pause_state(self) -> None:
        """``updatePauseState``: while ``pause_until`` is ahead, a timer resumes delivery then."""
        if self._uptmr is not None:
            self._uptmr.cancel()
            self._uptmr = None
        remaining = self.paused_for()
        if remaining <= 0 or self.closed:
            return
        self._uptmr = self.loop.call_later(remaining / 1e9, self._resume)

    def _resume(self) -> None:
        """The pause deadline passed: advise and deliver again."""
        remaining = self.paused_for()
        if remaining > 0:
            # The wall clock ran behind the loop's timer: wait the rest. (Read once: a second
            # read in _update_pause_state could find it over and then schedule nothing, leaving
            # a push consumer, which nothing else kicks, paused for good.)
            self._uptmr = self.loop.call_later(remaining / 1e9, self._resume)
            return
        self._uptmr = None
        if self.closed:
            return
        self.send_pause_advisory()
        self.kick()

    def send_pause_advisory(self) -> None:
        """``sendPauseAdvisoryLocked``: ``$JS.EVENT.ADVISORY.CONSUMER.PAUSE.<S>.<C>``."""
        until = self.cfg.pause_until
        advisories.publish(
            self.engine,
            S.advisory_consumer_pause(self.stream.name, self.name),
            ConsumerPauseAdvisory(
                stream=self.stream.name,
                consumer=self.name,
                paused=self.paused_for() > 0,
                pause_until=NanoTime(until) if until is not None else ZERO_TIME,
            ),
        )

    # --- inactivity ----------------------------------------------------------------------------

    def update_inactive_threshold(self, start: bool = True) -> None:
        """``updateInactiveThreshold``: the delete timer's period (with nats-server's jitter)."""
        threshold = self.cfg.inactive_threshold / 1e9
        if threshold > 0:
            if not self.cfg.deliver_subject:
                threshold += random.uniform(_JITTER_MIN, _JITTER_MAX)
            self.dthresh = threshold
        else:
            self.dthresh = 0.0
        if start:
            self.stop_inactivity_timer()
            if self.dthresh and (not self.cfg.deliver_subject or not self.push.active):
                self.start_inactivity_timer(self.dthresh)

    def start_inactivity_timer(self, delay: float) -> None:
        self.stop_inactivity_timer()
        self._dtmr = self.loop.call_later(max(delay, 0.001), self._delete_not_active)

    def stop_inactivity_timer(self) -> None:
        if self._dtmr is not None:
            self._dtmr.cancel()
            self._dtmr = None

    def inactivity_timer_running(self) -> bool:
        return self._dtmr is not None

    def suppress_deletion(self) -> None:
        """Ack activity keeps the consumer alive."""
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self._dtmr is not None:
                self.start_inactivity_timer(self.dthresh)
        else:
            self.pull.waiting.last = time.monotonic()

    def _delete_not_active(self) -> None:
        """``deleteNotActive``: delete unless interest or activity came back meanwhile."""
        self._dtmr = None
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self.push.active:
                return
        else:
            waiting = self.pull.waiting
            elapsed = time.monotonic() - waiting.last
            if elapsed <= self.cfg.inactive_threshold / 1e9:
                self.start_inactivity_timer(self.dthresh - elapsed)
                return
            self.pull.process_waiting(eos=True)
            if waiting:
                self.start_inactivity_timer(self.dthresh)
                return
        self.delete()

    # --- info --------------------------------------------------------------------------------

    def info(self) -> ConsumerInfo:
        """``ConsumerInfo`` as nats-server reports it (``infoWithSnap``)."""
        num_waiting = 0
        if self.is_pull:
            self.pull.process_waiting(eos=False)
            num_waiting = len(self.pull.waiting)
        st = self.state
        pause_remaining = self.paused_for()
        return ConsumerInfo(
            stream_name=self.stream.name,
            name=self.name,
            created=NanoTime(self.created),
            config=self.cfg,
            delivered=SequenceInfo(
                consumer_seq=st.dseq - 1,
                stream_seq=st.sseq - 1,
                last_active=NanoTime(st.ldt) if st.ldt else None,
            ),
            ack_floor=SequenceInfo(
                consumer_seq=st.adflr,
                stream_seq=st.asflr,
                last_active=NanoTime(st.lat) if st.lat else None,
            ),
            num_ack_pending=len(st.pending),
            num_redelivered=len(st.rdc),
            num_waiting=num_waiting,
            num_pending=self._check_num_pending(),
            push_bound=bool(self.cfg.deliver_subject) and self.push.active,
            paused=pause_remaining > 0,
            pause_remaining=pause_remaining,
            ts=NanoTime(time.time_ns()),
            priority_groups=self.pull.priority.state(),
        )


class _Pass:
    """What one delivery pass (``Consumer._run``) reads once and carries from run to run: the
    consumer's settings for the pass, its budget and counters, and the receiver the frames go to
    with the frames not accounted for yet. The run loops load what they use into locals and
    store it back (attribute accesses per run, not per message)."""

    __slots__ = (
        "acc",
        "acc_bytes",
        "acc_msgs",
        "ack_adj",
        "ack_none_interest",
        "budget",
        "conn",
        "current_pass",
        "delivered",
        "dest",
        "direct",
        "frames_only",
        "groups",
        "hpfx",
        "hsub",
        "lone_receiver",
        "maxp",
        "mpfx",
        "msub",
        "now",
        "pinned",
        "prefix",
        "prefix1",
        "prioritized",
        "push",
        "push_size",
        "replay",
        "room",
        "rsub",
        "single",
        "statuses",
        "stop",
        "track",
    )

    def __init__(self, consumer: Consumer) -> None:
        cfg = consumer.cfg
        ps = consumer.push
        self.push = push = bool(cfg.deliver_subject)
        self.track = track = cfg.ack_policy != AckPolicy.NONE
        self.ack_none_interest = not track and consumer.retention != RetentionPolicy.LIMITS
        self.replay = consumer._replay  # (turned off only after a pass)
        self.maxp = cfg.max_ack_pending if track else 0
        policy = cfg.priority_policy
        self.pinned = policy == PriorityPolicy.PINNED_CLIENT
        self.groups = consumer.pull.priority if policy != PriorityPolicy.NONE else None
        self.prioritized = policy == PriorityPolicy.PRIORITIZED
        # (sizes for flow control, rate limits and max_bytes count the ack subject as a str)
        self.push_size = push and (ps.rate is not None or ps.maxpb > 0)
        self.prefix = prefix = consumer.ack_prefix.encode()
        self.prefix1 = prefix + b"1."  # a first delivery's ack subject: the count is always 1
        self.ack_adj = len(prefix) - len(consumer.ack_prefix)
        self.single = consumer.filter.single
        self.now = time.time_ns()  # one clock read per pass (a pass lasts milliseconds)
        consumer._pass += 1  # requests' interest is checked once per pass (it cannot change within one)
        self.current_pass = consumer._pass
        self.statuses = consumer.pull.statuses
        self.budget = DELIVER_BATCH
        self.delivered = 0
        self.direct = 0  # deliveries framed straight onto the receiver's connection
        self.stop = _STOP_IDLE
        self.frames_only = (
            (not self.push_size if push else self.groups is None)
            and not cfg.headers_only
            and not self.replay
            and not self.ack_none_interest
        )
        self.lone_receiver = consumer.server.lone_receiver
        self.dest = ""
        self.rsub: Subscription | None = None
        self.conn: ClientConnection | None = None
        self.room = 0
        self.acc = self.acc_msgs = self.acc_bytes = 0
        self.msub = self.hsub = ""  # the stream subjects of the cached MSG / HMSG prefixes
        self.mpfx = self.hpfx = b""
        if push:
            self.receiver(ps.dsubj)

    def receiver(self, dest: str) -> None:
        """Deliveries go to ``dest`` from here on (push: the pass's deliver subject; pull: each
        request's reply subject). Its one receiving subscription is looked up once
        (``Server.lone_receiver``) instead of routing every message: nothing in a pass can
        subscribe, and a receiver that goes away meanwhile is closed, which sends the message the
        routed way. Its connection, when the pass may frame onto it itself
        (``ClientConnection.takes_frames``), takes frames into ``conn.out`` in order, accounted for
        in one ``frames_queued`` call (:meth:`account`) whenever they pass ``room`` (where
        ``deliver`` would write early), when the receiver changes and at the end of the pass."""
        self.account()
        self.dest = dest
        rsub = self.rsub = self.lone_receiver(dest)
        conn = self.conn = rsub.client if rsub is not None and rsub.client.takes_frames(rsub) else None
        self.room = conn.frames_room() if conn is not None else 0
        self.msub = self.hsub = ""

    def account(self) -> None:
        """The frames appended since the last call: ``ClientConnection.frames_queued`` (their
        counts, the flush, an early write or a slow-consumer cut)."""
        if self.conn is not None and self.acc:
            self.conn.frames_queued(self.rsub, self.acc_msgs, self.acc_bytes, self.acc)  # type: ignore[arg-type]
        self.acc = self.acc_msgs = self.acc_bytes = 0


def _reset_seq(payload: bytes) -> int:
    """The ``seq`` of a ``CONSUMER.RESET`` body (empty: 0); Go's decoding errors as 10025."""
    if not payload:
        return 0
    try:
        doc = json.loads(payload)
    except json.JSONDecodeError as exc:
        raise JetStreamApiError(_invalid_json(go_json_error(exc))) from None
    except ValueError:
        raise JetStreamApiError(_invalid_json("invalid JSON")) from None
    if not isinstance(doc, dict):
        raise JetStreamApiError(
            _invalid_json(
                f"json: cannot unmarshal {_go_type(doc)} into Go value of type server.JSApiConsumerResetRequest"
            )
        )
    value = {str(k).lower(): v for k, v in doc.items()}.get("seq", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JetStreamApiError(
            _invalid_json(
                f"json: cannot unmarshal {_go_type(value)} into Go struct field "
                "JSApiConsumerResetRequest.seq of type uint64"
            )
        )
    return value


def _go_type(value: object) -> str:
    """How Go's decoder names a JSON value in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return f"number {value}" if isinstance(value, int) and value < 0 else "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _invalid_json(reason: str) -> ApiError:
    return ApiError(code=400, err_code=10025, description=f"invalid JSON: {reason}")


def _headers_only(hdr: bytes | None, size: int) -> bytes:
    """Drop the payload, add ``Nats-Msg-Size`` (``convertToHeadersOnly``)."""
    base = hdr[:-2] if hdr else b"NATS/1.0\r\n"
    return base + b"Nats-Msg-Size: %d\r\n\r\n" % size
