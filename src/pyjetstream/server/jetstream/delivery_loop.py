"""A consumer's delivery loop: the passes that hand messages out (nats-server ``consumer.go``
``loopAndGatherMsgs``, ``getNextMsg`` and ``deliverMsg``).

It is a consumer's outbound hot path (per run and per message; the inbound one, acks, is
`acks`), kept apart from `consumer` (lifecycle, starting position, num pending, pause,
reset, inactivity, info) so that each can be read whole.
`DeliveryLoop` is the consumer's ``delivery`` component and owns what lives from pass to
pass: the scheduled flag (``kick``), the pass counter, the delay of a rate limit or an original
replay, and the last fetch to put back. `DeliveryPass` (`delivery_pass`, compiled) is one
pass's own state — the settings read once, the budget and counters, the receiver the frames go
to — with the per-message loop of a run that needs no look per message (``frame_run``).

A pass goes in runs, with calls per run and none per message (bench/README.md, "The delivery
pass in runs"): ``_gather`` the next messages, ``DeliveryPass.frame_run`` or ``_deliver_msgs`` them, then
``_end_pass``. The run loops keep what they use in locals and write the fields of the state they
advance themselves — `DeliveryState`'s next
sequence, delivery sequence and pending entries, the consumer's num pending — rather than call
their owners' methods per message; everything else goes through the owning component
(``pull``, ``push``, ``acks``, the consumer).
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pyjetstream.api.enums import AckPolicy, PriorityPolicy, ReplayPolicy, RetentionPolicy
from pyjetstream.server.jetstream.delivery_pass import (
    DELIVER_BATCH,
    STOP_EOF,
    STOP_IDLE,
    STOP_MAX_PENDING,
    DeliveryPass,
    headers_only,
)
from pyjetstream.server.jetstream.pending_index import run_seqs, seqs_of
from pyjetstream.server.jetstream.store.base import MsgTuple

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.pull_delivery import WaitingRequest

__all__ = ["DeliveryLoop", "DeliveryPass"]

# A pass reads new messages ahead in runs of at most this many messages / bytes (the last one
# may pass the byte cap): reading further than a pass delivers would be wasted. A pass's whole
# budget (``DELIVER_BATCH``) in one run: each run costs a store walk, a read and the pass's
# calls per run (runs of 128: ~0.03 µs more per delivered message, push on ``pc.>`` in process).
READ_AHEAD = DELIVER_BATCH
READ_AHEAD_BYTES = 1 << 20
# The delivery counts of a run of first deliveries (``_deliver_msgs`` zips a run with its counts).
_FIRSTS = itertools.repeat(1)
#: A pass whose next sequence is past the stream's last finds the end without a store read
#: (`DeliveryLoop._gather`): a pass that delivered the one new message (a source's origin consumer
#: when a publish is spread over many origins: each message a pass of its own) read the store twice,
#: the message and then nothing. Off: the read that finds nothing.
EOF_UNREAD = True
#: A push consumer's idle heartbeat runs no delivery pass when one would find nothing and change
#: nothing (`DeliveryLoop.at_rest`); off: every heartbeat is followed by a pass, as nats-server's loop
#: goes round after one.
REST_UNPASSED = True


class DeliveryLoop:
    """A consumer's delivery loop (``consumer.delivery``): ``kick`` schedules one [`run`][pyjetstream.client.jetstream.sync.LoopThread.run]
    pass, which hands out up to ``DELIVER_BATCH`` messages and schedules itself again if more
    could go."""

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.scheduled = False  # a pass is scheduled (``kick``)
        self.passes = 0  # pull requests' interest is checked once per pass (``WaitingRequest.checked``)
        self._delay_handle: asyncio.TimerHandle | None = None
        #: The stream sequence past the end of the stream when a pass last found nothing more
        #: (``getNextMsg`` at EOF); the heartbeats' position when beyond the next sequence.
        self.looked = 0
        # The next sequence before the last read-ahead message was taken (None: nothing to put back;
        # a redelivery run is put back whole by ``_rd_settle``).
        self._undo: int | None = None
        self._lss_taken: list[int] = []  # the last-per-subject run being delivered (``_lss_settle``)
        self._rd_taken: list[int] = []  # the redelivery run being delivered (``_rd_settle``)
        self._sent = 0  # how many of the last run ``_deliver_msgs`` sent (the rest were not taken)
        # replay original: until the stream's last sequence at the start, the original gaps
        self._replay = consumer.cfg.replay_policy == ReplayPolicy.ORIGINAL
        self._replay_lseq = 0
        self._lts = 0
        # ``ServerOptions.runs`` off: one message read and delivered at a time, by `_deliver_msgs`
        # alone (nats-server's ``getNextMsg`` + ``deliverMsg``), which the differential tests
        # compare with the runs and ``DeliveryPass.frame_run``.
        self._runs = bool(getattr(consumer.server.options, "runs", True))

    def start(self) -> None:
        """At the consumer's start: an original replay lasts up to the stream's last message now."""
        if self._replay:
            self._replay_lseq = self.consumer.stream.store.fast_state().last_seq

    def stop(self) -> None:
        """The consumer stopped: no delayed pass."""
        if self._delay_handle is not None:
            self._delay_handle.cancel()
            self._delay_handle = None

    def kick(self) -> None:
        """Something may be deliverable: run a delivery pass soon (once)."""
        if not self.scheduled and not self.consumer.closed:
            self.scheduled = True
            self.consumer.loop.call_soon(self.run)

    def at_rest(self) -> bool:
        """Whether a pass now would hand nothing out and change nothing: no redelivery, no
        ``last_per_subject`` start set, no original replay still going, num pending counted at 0
        (after what `Consumer.check_removed` would recount) and the next sequence past the
        stream's last, so `_gather` would find the end unread and `_at_eof` and
        `Consumer.check_num_pending_on_eof` would move nothing. Why: a push consumer's idle
        heartbeat asks for a pass (nats-server's loop goes round after one), and a stream sourcing
        1,000 streams has 1,000 origin consumers sending one a second, ~45% of whose cost was
        that empty pass (its `DeliveryPass` made, the store asked for its last sequence, twice)."""
        c = self.consumer
        st = c.state
        if st.rdq or st.lss or self._replay:
            return False
        c.check_removed()
        return c.npc == 0 and st.sseq > c.stream.store.last_seq()

    def run(self) -> None:
        """One delivery pass: one turn of nats-server's ``loopAndGatherMsgs``, handing out what
        can go now, then waiting for a kick.

        The pass goes in runs: ``_gather`` gets the next messages (``getNextMsg``: the due
        redeliveries, a last-per-subject start set, new messages read ahead, each in runs), and one of
        two loops delivers them (``deliverMsg`` for each): ``DeliveryPass.frame_run`` when nothing needs a look
        per message (new messages framed straight into the receiver's connection; ``hand_run`` handed to an
        internal receiver that takes runs, a mirror's or source's feed), else ``_deliver_msgs``. Calls are per run, never per message: the loops keep what they use in
        locals (a `DeliveryPass` carries it from run to run) and write the state's fields (next
        sequence, delivery sequence, pending entries) themselves. ``_end_pass`` does what follows.
        """
        self.scheduled = False
        c = self.consumer
        if c.closed or self._delay_handle is not None:
            return
        if c.uptmr is not None and c.paused_for() > 0:
            # Paused: nothing goes out, but pull requests still expire and get heartbeats.
            if c.is_pull:
                c.pull.expire_due(eos=True)
            return
        c.check_removed()
        self.passes += 1
        p = self.new_pass()
        try:
            while p.budget > 0 and self._can_send(p):
                run, dcs, ahead = self._gather(p)
                if not run:
                    break
                if p.frames_only and ahead and p.conn is not None:
                    go_on = p.frame_run(self, run)
                elif p.frames_only and ahead and p.taker is not None and p.push and not p.headers_only:
                    go_on = p.hand_run(self, run)
                else:
                    go_on = self._deliver_msgs(p, run, dcs, ahead)
                if self._lss_taken:
                    self._lss_settle()
                if self._rd_taken:
                    self._rd_settle()
                if not go_on:
                    break
        finally:
            p.account()
        self._end_pass(p)

    def _can_send(self, p: DeliveryPass) -> bool:
        """A push consumer has interest and flow-control room; a pull consumer a waiting request."""
        c = self.consumer
        if p.push:
            ps = c.push
            return ps.active and not (ps.maxpb and ps.pbytes > ps.maxpb)
        return bool(c.pull.waiting)

    def new_pass(self) -> DeliveryPass:
        """A pass's state, with what the consumer's config enums decide for it (read here: the
        compiled `DeliveryPass` names no `api` module)."""
        c = self.consumer
        cfg = c.cfg
        track = cfg.ack_policy != AckPolicy.NONE
        policy = cfg.priority_policy
        priority = (
            policy != PriorityPolicy.NONE,
            policy == PriorityPolicy.PINNED_CLIENT,
            policy == PriorityPolicy.PRIORITIZED,
        )
        interest = not track and c.retention != RetentionPolicy.LIMITS
        p = DeliveryPass(c, self.passes, self._replay, self._runs, track, interest, priority)
        q = c.pull.waiting._q
        if q and p.groups is None and p.runs:
            # A pull pass starts at the head request's reply, where `_request_for` would move it for the
            # first message: that message is then read with the rest of the run and framed with them
            # (``frame_run``), not read alone and handed to the general loop before the run is read
            # (a fetch of one message went that way every time: ~10 µs more per fetch).
            p.receiver(q[0].reply)
        return p

    def _gather(self, p: DeliveryPass) -> tuple[list[MsgTuple], Iterable[int], bool]:
        """The next messages to deliver: ``getNextMsg`` for a run, as ``(messages, their delivery
        counts, ahead)``; empty when nothing can go now (``p.stop`` says why).

        Redeliveries come first, taken off the queue as a run (``AckProcessor.redeliveries``:
        counted, ``max_deliver`` applied, read in one store call; `_rd_settle` puts back what
        did not go). At ``max_ack_pending`` no new message goes; a ``last_per_subject`` start set
        is read in runs (``_lss_run``). Otherwise new messages are
        read ahead (``ahead``: the next sequence follows each as it goes out), under one filter or
        several (``load_next_msgs_multi``: one walk). A run holds as many as the pass, the
        ``max_ack_pending`` room (new messages) and the waiting pull requests can take — one where
        each must be looked at before the next is read (no receiver to frame onto yet, AckNone on
        an interest stream, replay, runs off).
        """
        c = self.consumer
        st = c.state
        maxp = p.maxp
        one = (p.rsub is None and not p.rsubs) or p.ack_none_interest or p.replay or not p.runs
        if st.rdq:
            want = 1 if one else self._want(p, 0)
            rd, dcs = c.acks.redeliveries(want)
            if rd:
                self._undo = None  # (the whole run is put back by ``_rd_settle``)
                self._rd_taken = [m[1] for m in rd]
                return rd, dcs, False
        if maxp > 0 and st.pending.n >= maxp:
            p.stop = STOP_MAX_PENDING
            return [], _FIRSTS, False
        want = 1 if one else self._want(p, maxp - st.pending.n if maxp > 0 else 0)
        if st.lss:
            lss_run = self._lss_run(want)
            if lss_run:
                return lss_run, _FIRSTS, True
        if EOF_UNREAD and st.sseq > c.stream.store.last_seq():
            run = []  # (what the store's read answers there)
        elif p.single is not None:
            run = c.stream.store.load_next_msgs(p.single, st.sseq, want, READ_AHEAD_BYTES)
        else:
            run = c.stream.store.load_next_msgs_multi(c.filter.filters, st.sseq, want, READ_AHEAD_BYTES)
        if not run:
            self._at_eof()
            p.stop = STOP_EOF
        return run, _FIRSTS, True

    def _want(self, p: DeliveryPass, room: int) -> int:
        """How many messages a run may hold: the pass's budget, at most ``READ_AHEAD``, at most
        ``room`` (> 0: what ``max_ack_pending`` leaves), at most what the waiting pull requests
        ask for (at least one)."""
        budget = p.budget
        want = budget if budget < READ_AHEAD else READ_AHEAD
        if 0 < room < want:
            want = room
        if not p.push:
            want = max(min(want, self.consumer.pull.waiting.total), 1)
        return want

    def _rd_settle(self) -> None:
        """After a redelivery run: what did not go out (the run cut short, a message put back)
        returns to the head of the redelivery queue, in order, uncounted."""
        taken, self._rd_taken = self._rd_taken, []
        if self._sent < len(taken):
            self.consumer.state.unget_redeliveries(taken[self._sent :])

    def _lss_run(self, want: int) -> list[MsgTuple]:
        """The next messages of a ``last_per_subject`` start (``o.lss``), up to ``want`` read in
        one store call (``load_msgs``) rather than one pass step each; they go out as a read-ahead
        run does (the next sequence follows each), and `_lss_settle` puts back what did not
        go. Sequences removed since the start are dropped; when none is left the consumer goes on
        from where the start set ended (``lss_resume``)."""
        st = self.consumer.state
        lss = st.lss
        store = self.consumer.stream.store
        while lss:
            run = store.load_msgs([lss.popleft() for _ in range(min(want, len(lss)))])
            if run:
                self._lss_taken = [m[1] for m in run]
                return run
        st.sseq = max(st.sseq, st.lss_resume)
        return []

    def _lss_settle(self) -> None:
        """After a ``last_per_subject`` run went out: what was not delivered (at or after the next
        sequence: a run cut short, a message put back) returns to the front of ``lss``; once it is
        empty the consumer goes on from ``lss_resume``."""
        taken, self._lss_taken = self._lss_taken, []
        st = self.consumer.state
        sseq = st.sseq
        back = [seq for seq in taken if seq >= sseq]
        if back:
            st.lss.extendleft(reversed(back))
        if not st.lss:
            st.sseq = max(sseq, st.lss_resume)

    def framed(self, p: DeliveryPass, run: list[MsgTuple], i: int, j: int, npc: int) -> None:
        """``DeliveryPass.frame_run`` framed ``run[i:j]``: the state's next sequences and num pending, the
        pending acks (the run's at once) and their index or the AckNone floor, the ack timer, the
        pass's counters."""
        c = self.consumer
        st = c.state
        n = j - i
        seq = run[j - 1][1]
        dseq = st.dseq = st.dseq + n
        st.sseq = seq + 1
        c.npc = npc
        if not p.track:
            st.delivered_none(seq, dseq - 1)
        else:
            first = run[i][1]  # (``run_seqs`` inlined: a range when the sequences follow each other)
            seqs = range(first, seq + 1) if seq - first == n - 1 else run_seqs(run, i, j)
            st.pending.add_run(seqs, dseq - n, p.now)
            st.index.delivered(p.now, seqs, st)
            if c.acks.ptmr is None:
                c.acks.arm_if_idle()
        p.acc_msgs += n
        p.delivered += n
        p.budget -= n

    def frame_rest(self, p: DeliveryPass, run: list[MsgTuple], i: int, k: int, npc: int, more: bool) -> bool:
        """``DeliveryPass.frame_run`` met a message that is not the head request's common case, ``run[k]``:
        what went out since ``run[i]``, then (``more``: a request waits) the rest of the run the
        general way. False: no request is left."""
        if k != i:
            self.framed(p, run, i, k, npc)
        return more and self._deliver_msgs(p, run[k:], _FIRSTS, True)

    def _deliver_msgs(self, p: DeliveryPass, run: list[MsgTuple], dcs: Iterable[int], ahead: bool) -> bool:
        """``deliverMsg`` for each message of a run, every rule looked at per message: the
        replay delay (`_replay_waits`), the ack reply (``dcs``: each one's delivery count),
        headers-only, the rate limit (`_rate_waits`) or the pull request that takes it
        (`_request_for`), the delivery (``DeliveryPass.send``), the pending entry or AckNone floor
        (and an interest stream's ack), flow control, a batch completed by its byte limit, a
        message nobody took.

        Anything that may publish drops the rest of a run, read again after it (``_sent``: how
        many went out; a redelivery run's rest is put back by `_rd_settle`). False: the pass ends
        here (no interest, flow-control room or request; a rate or replay delay)."""
        c = self.consumer
        st, ps, pull = c.state, c.push, c.pull
        waiting = pull.waiting
        push, track, replay, now = p.push, p.track, p.replay, p.now
        only, sized, ack_adj = c.cfg.headers_only, not p.push or p.push_size, p.ack_adj
        delivered = prev = 0
        firsts: list[int] = []  # the first deliveries' stream sequences (one index entry per run)
        again: list[int] = []  # the redeliveries' (one index entry per run)
        send = p.send
        try:
            for (subject, seq, ts, hdr, payload), dc in zip(run, dcs, strict=False):  # (_FIRSTS: endless)
                if ahead:
                    prev = st.sseq
                    st.sseq = seq + 1
                if replay and self._replay_waits(p, ts, prev, ahead):
                    return False
                dseq = st.dseq
                if dc == 1:
                    npc = c.npc = c.npc - 1
                    ack = b"%b%d.%d.%d.%d" % (p.prefix1, seq, dseq, ts, npc if npc > 0 else 0)
                else:
                    npc = c.npc
                    ack = b"%b%d.%d.%d.%d.%d" % (p.prefix, dc, seq, dseq, ts, npc if npc > 0 else 0)
                if only:
                    hdr, payload = headers_only(hdr, len(payload)), b""
                # (flow control, rate limits and max_bytes count the ack subject as a str)
                size = len(p.dest if push else subject) + len(ack) - ack_adj + len(hdr) + len(payload) if sized else 0
                wr, drop = None, False
                if push:
                    if ps.rate is not None and self._rate_waits(p, size, prev, dc, ahead):
                        return False
                else:
                    wr = pull.next_waiting(size, p.current_pass, p.groups, p.prioritized)
                    if wr is None or wr.reply != p.dest or p.pinned or pull.statuses != p.statuses:
                        wr, hdr, drop = self._request_for(p, wr, hdr, prev, dc, ahead)
                        if wr is None:
                            return False
                st.dseq = dseq + 1
                ok, cut = send(subject, ack, hdr, payload)
                if not track:
                    st.delivered_none(seq, dseq)
                    if p.ack_none_interest:
                        c.stream.ack_msg(seq)
                elif dc == 1:
                    st.pending[seq] = (dseq, now)  # (an internal subscriber may have acked meanwhile)
                    firsts.append(seq)
                else:
                    again.append(seq)
                if push:
                    if ps.maxpb and ps.after_delivery(size):  # a flow-control request went out
                        cut = True
                elif wr is not None and wr.n <= 0 and wr.max_bytes > 0:
                    pull.batch_completed(p.dest, wr.max_bytes)
                    cut = True
                if not ok:
                    self._did_not_deliver(seq)
                delivered += 1
                if cut or drop:
                    break
                if (not ps.active or (ps.maxpb and ps.pbytes > ps.maxpb)) if push else not waiting._q:
                    return False
        finally:
            self._sent = delivered
            if delivered:
                self._delivered(p, delivered, firsts, again)
        return True

    def _delivered(self, p: DeliveryPass, n: int, firsts: list[int], again: list[int]) -> None:
        """`_deliver_msgs` delivered ``n`` messages (``firsts``: the first deliveries among them,
        ``again`` the redeliveries): the pending acks' index, the ack timer, the pass's counters."""
        c = self.consumer
        if firsts:
            c.state.delivered(p.now, seqs_of(firsts))
        if again:
            c.acks.redelivered(p.now, again)
        if p.track and c.acks.ptmr is None:
            c.acks.arm_if_idle()
        p.delivered += n
        p.budget -= n

    def _replay_waits(self, p: DeliveryPass, ts: int, prev: int, ahead: bool) -> bool:
        """``replay_policy: original``: the message stored at ``ts`` waits its original gap (it
        is put back and the pass ends)."""
        if ahead:
            self._undo = prev
        if self._replay_delay(ts):
            p.budget = 0
            return True
        return False

    def _rate_waits(self, p: DeliveryPass, size: int, prev: int, dc: int, ahead: bool) -> bool:
        """``rate_limit_bps``: the message of ``size`` bytes must wait (it is put back and the pass
        ends; it resumes after the wait)."""
        if not self.consumer.push.rate_delay(size):
            return False
        if ahead:
            self._undo = prev
        self._unget_counted(dc)
        p.budget = 0
        return True

    def _request_for(
        self, p: DeliveryPass, wr: WaitingRequest | None, hdr: bytes, prev: int, dc: int, ahead: bool
    ) -> tuple[WaitingRequest | None, bytes, bool]:
        """What follows ``nextWaiting`` for a pull consumer's message when it is not the common
        case: with a request ``wr``, the pass's receiver moved to its reply subject and a pinned
        group's header added to ``hdr``; without, the message put back and the pass idle (None).
        The last item: a status went out meanwhile (an expired request, one over its max_bytes),
        so the rest of the run is read again after this message."""
        pull = self.consumer.pull
        drop = pull.statuses != p.statuses
        p.statuses = pull.statuses
        if wr is None:
            if ahead:
                self._undo = prev
            self._unget_counted(dc)
            p.stop = STOP_IDLE
            return None, hdr, drop
        if wr.reply != p.dest:
            p.receiver(wr.reply)
        if p.pinned:
            # ⟨2.11+⟩ every delivery of a pinned group names the pin
            hdr = (hdr[:-2] if hdr else b"NATS/1.0\r\n") + pull.priority.header_value() + b"\r\n"
        return wr, hdr, drop

    def _end_pass(self, p: DeliveryPass) -> None:
        """After a pass: count the direct deliveries as matches, note the activity, persist the
        state soon; then run again soon when the pass ran out of budget, or, idle, settle num
        pending at the end of the stream, end a replay and answer the pull requests that wait."""
        c = self.consumer
        st = c.state
        ps = c.push
        if p.delivered > p.routed:
            c.server.count_matches(p.delivered - p.routed)
        if p.delivered:
            st.ldt = p.now
            ps.last_delivery = time.monotonic()
            if c.dthresh and not p.push:
                c.pull.waiting.last = ps.last_delivery
            c.dirty()
            if st.pending:
                c.stream.note_pending(c)
        if p.budget <= 0:
            if self._delay_handle is None:
                self.kick()  # more may be waiting: continue after other work had a turn
            return
        # Idle: nothing more can go now.
        if p.stop == STOP_EOF:
            c.check_num_pending_on_eof()
        if self._replay and st.sseq > self._replay_lseq:
            self._replay = False
        if not p.push:
            c.pull.expire_due(eos=p.stop != STOP_MAX_PENDING)

    def _at_eof(self) -> None:
        """Nothing matches after sseq: the consumer has looked at the whole stream. nats-server's
        ``getNextMsg`` moves its position past the end on ``ErrStoreEOF`` (the store answers the
        stream's last sequence), and its idle heartbeats, push or pull, name that position in
        ``Nats-Last-Stream``: a filtered consumer's say the stream's last sequence, not the last
        delivery's. 2.15.1's consumer info still reports the last delivered message, and a pull
        consumer goes on from there, so the position is kept apart (``looked``). A pass only
        gets here with somewhere to deliver (a bound push consumer, a waiting pull request), as
        nats-server's loop calls ``getNextMsg``."""
        last = self.consumer.stream.store.last_seq()
        if last >= self.consumer.state.sseq:
            self.looked = last + 1

    def heartbeat_seqs(self) -> tuple[int, int]:
        """``sendIdleHeartbeat``'s ``Nats-Last-Consumer`` and ``Nats-Last-Stream``: the next
        delivery and stream sequences less one, the stream's past the end once a pass found
        nothing more (``looked``)."""
        st = self.consumer.state
        return st.dseq - 1, (self.looked if self.looked > st.sseq else st.sseq) - 1

    def _unget(self) -> None:
        """Put the last fetched message back (no destination, or a replay/rate delay)."""
        if self._undo is not None:  # (a read-ahead message: the next sequence goes back)
            self.consumer.state.sseq = self._undo
            self._undo = None

    def _unget_counted(self, dc: int) -> None:
        """`_unget` a message whose num pending was counted down (a first delivery)."""
        if dc == 1:
            self.consumer.npc += 1
        self._unget()

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
            self.run()

        self._delay_handle = self.consumer.loop.call_later(seconds, resume)

    def _did_not_deliver(self, seq: int) -> None:
        """Nobody received a delivery (``didNotDeliver``)."""
        c = self.consumer
        if c.cfg.deliver_subject:
            c.push.update_interest(c.push.has_interest())
        elif c.state.redeliver_if_pending(seq):
            self.kick()
