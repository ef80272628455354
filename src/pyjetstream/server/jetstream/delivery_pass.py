"""One delivery pass's state and its per-message loops (nats-server ``consumer.go``
``deliverMsg``), compiled with mypyc (``pyjetstream._compiled``) — the only part of the delivery
path whose CPU per message a profile showed compiling pays for (the ack reply's numbers formatted
natively: a push consumer's CPU per delivered message in process 1.28 -> 0.96 µs).

`DeliveryPass` is what a pass (``DeliveryLoop.run`` in `delivery_loop`) reads once and carries from
run to run, the receiver its frames go to, `DeliveryPass.frame_run` (a run where no message needs
a look of its own) and `DeliveryPass.send` (one message's last step, for ``_deliver_msgs``). It
imports only the standard library and `protocol.writers` (the compiled group is closed); what the
config's enums decide comes in as flags; the per-run bookkeeping that needs the consumer's other
components stays in `delivery_loop` (``framed``, ``frame_rest``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from pyjetstream.protocol.writers import CRLF, append_hmsg, append_msg, hmsg_prefix, msg_prefix

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop
    from pyjetstream.server.jetstream.host import Receiver, Sink
    from pyjetstream.server.jetstream.pull_delivery import WaitQueue
    from pyjetstream.server.jetstream.push_delivery import PushDelivery
    from pyjetstream.server.jetstream.store.base import MsgTuple

__all__ = [
    "DELIVER_BATCH", "FAN_OUT", "FRAME_HEADERS_ONLY", "HAND_RUNS", "STOP_EOF", "STOP_IDLE", "STOP_MAX_PENDING",
    "DeliveryPass", "headers_only",
]

# Messages handed out per loop pass before yielding (lets sockets drain and acks come in).
DELIVER_BATCH = 512
# A payload up to this size goes into its frame's control line's bytes (one part, not three).
_INLINE = 512
# Why a delivery pass stopped.
STOP_IDLE, STOP_EOF, STOP_MAX_PENDING = 0, 1, 2
# ``DeliveryPass.send``'s answers: (delivered, the rest of a read-ahead run is to be read again).
_SENT, _SENT_CUT, _NOT_SENT = (True, False), (True, True), (False, True)
# The longest wait queue whose requests take a run's messages in turn without a look each (a
# longer one: the head request's, one at a time; looking at every request per run would cost
# what nats-server's walk over them does).
_QUEUE_HELD = 8
#: A headers-only consumer's new messages framed by `DeliveryPass.frame_run` like any other's,
#: each turned into its headers-only form there (`headers_only`); False: each goes through
#: ``DeliveryLoop._deliver_msgs`` (the differential test shows both send the same frames).
FRAME_HEADERS_ONLY = True
#: A destination several client subscriptions (and nothing else) receive gets each message handed
#: to each of them by the pass (`DeliveryPass.fan_out`, the receivers looked up once), the
#: messages read in runs; False: each message routed alone (``publish_internal``), read one at a
#: time (the differential test shows both send the same frames).
FAN_OUT = True
#: A run of new messages to an internal receiver that takes runs (``Subscription.takes_runs``: a
#: mirror's or source's feed) is handed to it in one call with its numbers (`DeliveryPass.hand_run`),
#: where ``DeliveryLoop._deliver_msgs`` formatted each one's ack reply for its callback, which parsed
#: it back; False: one by one (the differential test shows the feeds store the same either way).
HAND_RUNS = True


class DeliveryPass:
    """What one delivery pass (``DeliveryLoop.run``) reads once and carries from run to run: the
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
        "client_receivers",
        "conn",
        "current_pass",
        "delivered",
        "dest",
        "fc_room",
        "frames_only",
        "groups",
        "headers_only",
        "held",
        "hpfx",
        "hsub",
        "left",
        "lone_receiver",
        "maxp",
        "mpfx",
        "msub",
        "now",
        "pbytes",
        "pinned",
        "prefix",
        "prefix1",
        "prioritized",
        "publish_internal",
        "push",
        "push_size",
        "replay",
        "room",
        "routed",
        "rsub",
        "rsubs",
        "runs",
        "single",
        "statuses",
        "stop",
        "taken",
        "taker",
        "track",
    )

    def __init__(
        self,
        consumer: Consumer,
        current_pass: int,
        replay: bool,
        runs: bool,
        track: bool,
        ack_none_interest: bool,
        priority: tuple[bool, bool, bool],
    ) -> None:
        """``track``: acks are tracked (not AckNone); ``ack_none_interest``: AckNone on a stream
        that is not limits-retained; ``priority``: (a priority policy, pinned client,
        prioritized) — what the config's enums say, read by the loop (`DeliveryLoop.new_pass`)."""
        cfg = consumer.cfg
        ps = consumer.push
        self.push = push = bool(cfg.deliver_subject)
        self.track = track
        self.ack_none_interest = ack_none_interest
        self.replay = replay  # (turned off only after a pass)
        self.maxp: int = cfg.max_ack_pending if track else 0
        grouped, self.pinned, self.prioritized = priority
        self.groups = consumer.pull.priority if grouped else None
        # (sizes for flow control, rate limits and max_bytes count the ack subject as a str)
        self.push_size = push and (ps.rate is not None or ps.maxpb > 0)
        prefix: bytes = consumer.ack_prefix.encode()
        self.prefix = prefix
        self.prefix1 = prefix + b"1."  # a first delivery's ack subject: the count is always 1
        self.ack_adj = len(prefix) - len(consumer.ack_prefix)
        self.single = consumer.filter.single
        self.now: int = time.time_ns()  # one clock read per pass (a pass lasts milliseconds)
        self.current_pass = current_pass
        self.statuses: int = consumer.pull.statuses
        self.budget = DELIVER_BATCH
        self.delivered = 0
        self.routed = 0  # deliveries routed (the others went straight to the one receiver)
        self.stop = STOP_IDLE
        self.runs = runs
        self.headers_only: bool = cfg.headers_only
        self.frames_only = (
            runs
            and (ps.rate is None if push else self.groups is None)
            and (FRAME_HEADERS_ONLY or not cfg.headers_only)
            and not self.replay
            and not self.ack_none_interest
        )
        self.lone_receiver = consumer.server.lone_receiver
        self.client_receivers = consumer.server.client_receivers
        self.publish_internal = consumer.server.publish_internal
        self.dest = ""
        self.rsub: Receiver | None = None
        self.rsubs: tuple[Receiver, ...] = ()  # several receivers, when there is no lone one
        self.conn: Sink | None = None
        self.taker: Any = None
        self.room = 0
        self.acc = self.acc_msgs = self.acc_bytes = 0
        self.fc_room = self.pbytes = 0  # flow control's counting in a run (`counted`)
        self.held = False  # the pull requests take a run's messages in turn (`take`)
        self.taken = self.left = 0
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
        (``FrameSink.takes_frames``), takes frames into its sink's ``out`` in order, accounted for
        in one ``FrameSink.count`` call (`account`) whenever they pass ``room`` (where
        ``deliver`` would write early), when the receiver changes and at the end of the pass.
        Without a lone receiver, the client subscriptions when only they (two or more) receive
        ``dest`` (``Server.client_receivers``, `fan_out`)."""
        self.account()
        self.dest = dest
        rsub = self.rsub = self.lone_receiver(dest)
        self.rsubs = self.client_receivers(dest) if rsub is None and FAN_OUT else ()
        sink = rsub.sink if rsub is not None else None
        conn = self.conn = sink if sink is not None and sink.takes_frames(rsub) else None
        self.room = conn.room() if conn is not None else 0
        # (an internal receiver's taker of runs: `hand_run`)
        self.taker = rsub.takes_runs if HAND_RUNS and rsub is not None and rsub.client is None else None
        self.msub = self.hsub = ""

    def frame_run(self, loop: DeliveryLoop, run: list[MsgTuple]) -> bool:
        """``DeliveryLoop._deliver_msgs`` for a run of new messages where none of its per-message
        rules but flow control and headers-only apply (``frames_only``: no rate limit, replay,
        interest-stream AckNone or priority groups; off with ``ServerOptions.runs``): per message
        its headers-only form (`headers_only`, for such a consumer), the ack reply, the frame into
        the receiver's connection and the flow-control window; the
        next sequence, the counters, the pending entries (`PendingArray.add_run`), the index or
        AckNone floor once per run (``loop.framed``). Frames past the receiver's room are accounted for there (`early`:
        the early write, maybe a slow-consumer cut; the rest of the run is then read again).

        A pull consumer's message goes to the head request when ``PullDelivery.next_waiting``
        would take it as is (`_head_taking`); from the first message that is not that case on,
        the run goes to ``_deliver_msgs`` (``loop.frame_rest``). False: no request is left."""
        c, p = loop.consumer, self
        conn, rsub = p.conn, p.rsub
        assert conn is not None and rsub is not None
        # (the types of the loop's locals, for the compiled module: native ints, bytes, list appends)
        out: list[bytes] = conn.out
        sid_b: bytes = rsub.sid_b
        subject: str
        seq: int
        ts: int
        hdr: bytes
        payload: bytes
        headers: bool = conn.headers
        msub, mpfx, hsub, hpfx, prefix1 = p.msub, p.mpfx, p.hsub, p.hpfx, p.prefix1
        acc, acc_bytes, room = p.acc, p.acc_bytes, p.room
        dseq: int = c.state.dseq
        first = start = dseq
        npc: int = c.npc
        pull = not p.push
        # flow control: each message counted in the window as ``_deliver_msgs`` counts it
        fc, ps, dlen, alen = p.push_size, c.push, len(p.dest) - p.ack_adj, 0
        if fc:
            p.fc_room, p.pbytes = ps.fc_room(), ps.pbytes
        waiting = c.pull.waiting
        q = waiting._q
        only: bool = p.headers_only
        for subject, seq, ts, hdr, payload in run:
            if pull and not p.take(waiting, q):
                p.msub, p.mpfx, p.hsub, p.hpfx, p.acc, p.acc_bytes = msub, mpfx, hsub, hpfx, acc, acc_bytes
                return loop.frame_rest(p, run, first - start, dseq - start, npc, bool(q))
            npc -= 1
            if only:
                hdr, payload = headers_only(hdr, len(payload)), b""
            if hdr and headers:
                if subject is not hsub:
                    hsub, hpfx = subject, hmsg_prefix(subject.encode(), sid_b)
                ack = b"%b%d.%d.%d.%d" % (prefix1, seq, dseq, ts, npc if npc > 0 else 0)
                alen = len(ack)
                acc += append_hmsg(out, hpfx, ack, hdr, payload)
                acc_bytes += len(hdr) + len(payload)
            else:
                if subject is not msub:
                    msub, mpfx = subject, msg_prefix(subject.encode(), sid_b)
                size = len(payload)
                llen = _frame_msg(out, mpfx, prefix1, seq, dseq, ts, npc if npc > 0 else 0, payload)
                acc += llen + size + 2
                acc_bytes += size
                if fc:  # (the ack reply's length: the line without its prefix and " <size>\r\n")
                    alen = llen - len(mpfx) - 3 - len(str(size))
            dseq += 1
            alive = True
            if acc > room:  # where deliver would write early (and maybe cut the receiver)
                p.acc, p.acc_bytes = acc, acc_bytes
                loop.framed(p, run, first - start, dseq - start, npc)
                alive = p.early()  # (False: the receiver was cut, the rest of the run goes the routed way)
                first, acc, acc_bytes, room = dseq, 0, 0, p.room
                out = conn.out  # (the early write took the list: a new one takes what follows)
            # a flow-control request went out (the rest is read again), the window is full, a cut
            if (fc and p.counted(ps, dlen + alen + len(hdr) + len(payload))) or not alive:
                break
        p.msub, p.mpfx, p.hsub, p.hpfx, p.acc, p.acc_bytes = msub, mpfx, hsub, hpfx, acc, acc_bytes
        if fc:
            ps.pbytes = p.pbytes
        if pull:
            p.settle(waiting)
        if dseq != first:
            loop.framed(p, run, first - start, dseq - start, npc)
        return not pull or bool(q)

    def hand_run(self, loop: DeliveryLoop, run: list[MsgTuple]) -> bool:
        """``DeliveryLoop._deliver_msgs`` for a push consumer's run of new messages to an internal
        receiver that takes runs (``taker``, a mirror's or source's feed: ``frames_only``, no
        headers-only): handed to it in calls of many — ``taker(consumer, msgs, dseq, npc)``, message
        *i* delivered as ``dseq + i`` with ``max(npc - i - 1, 0)`` pending, what its ack reply would
        say — with the state's sequences, counters and pending entries moved as for those framed
        (``loop.framed``). Flow control counts each message as ``_deliver_msgs`` does (its ack
        reply's length included); the message that passes the window's free room is handed with
        those before it first, then ``PushDelivery.after_delivery`` looks at it, as it looks after
        that message's delivery (a request out or the window full: the rest of the run is read
        again). A receiver closed meanwhile gets no more (the rest goes the routed way)."""
        c, p = loop.consumer, self
        rsub = p.rsub
        assert rsub is not None
        taker = p.taker
        name: str = c.name
        prefix1: bytes = p.prefix1
        seq: int
        ts: int
        hdr: bytes
        payload: bytes
        dseq: int = c.state.dseq
        npc: int = c.npc
        start = dseq - 1  # (the last one handed)
        fc, ps, dlen = p.push_size, c.push, len(p.dest) - p.ack_adj
        room, pbytes = (ps.fc_room(), ps.pbytes) if fc else (0, 0)
        i = 0
        n = len(run)
        while i < n:
            _, seq, ts, hdr, payload = run[i]
            npc -= 1
            i += 1
            dseq += 1
            if not fc:
                continue
            ack = b"%b%d.%d.%d.%d" % (prefix1, seq, dseq - 1, ts, npc if npc > 0 else 0)
            size = dlen + len(ack) + len(hdr) + len(payload)
            if size <= room:
                room -= size
                pbytes += size
                continue
            k = dseq - 1 - start  # (this one and those before it since the last handed)
            taker(name, run[i - k : i], start + 1, npc + k)
            rsub.delivered += k
            loop.framed(p, run, i - k, i, npc)
            start = dseq - 1
            ps.pbytes = pbytes
            if ps.after_delivery(size) or ps.pbytes > ps.maxpb or rsub.closed:
                return True
            room, pbytes = ps.fc_room(), ps.pbytes
        k = dseq - 1 - start
        if k:
            taker(name, run[n - k :], start + 1, npc + k)
            rsub.delivered += k
            loop.framed(p, run, n - k, n, npc)
            if fc:
                ps.pbytes = pbytes
        return True

    def take(self, waiting: WaitQueue, q: Any) -> bool:
        """`frame_run`'s next message goes to the pull requests of the queue (``q``), when
        ``PullDelivery.next_waiting`` would take it as is (`_queue_taking`; False: it would not).
        When every request in the queue would, they take the run's messages in turn
        (``popAndRequeue``'s round robin) without a look each: they are counted here (``held``:
        how many the queue takes, ``taken``, ``left``) and accounted in one
        ``WaitQueue.take_run`` (`settle`) at the end of the run, as a push consumer's run is;
        else each one is accounted as taken by the head request (``WaitQueue.take_head``)."""
        if self.left > 0:
            self.left -= 1
            self.taken += 1
            return True
        self.settle(waiting)
        held = _queue_taking(q, self.dest, self.current_pass)
        if held == 0:
            return False
        if held > 1:
            self.held, self.taken, self.left = True, 1, held - 1
        else:
            waiting.take_head(q[0])
        return True

    def settle(self, waiting: WaitQueue) -> None:
        """Account the messages `take` counted to the queue's requests (``WaitQueue.take_run``)."""
        if self.held:
            waiting.take_run(self.taken)
            self.held, self.taken, self.left = False, 0, 0

    def counted(self, ps: PushDelivery, size: int) -> bool:
        """Flow control for a message of ``size`` bytes framed by `frame_run`: counted in the pass
        while nothing else is due (``fc_room``, from ``PushDelivery.fc_room``: the window's
        ``pbytes`` written back at the run's end), else ``PushDelivery.after_delivery`` — True
        when a request went out or the window is full (the run stops there)."""
        if size <= self.fc_room:
            self.fc_room -= size
            self.pbytes += size
            return False
        ps.pbytes = self.pbytes
        stop = ps.after_delivery(size) or ps.pbytes > ps.maxpb
        self.fc_room, self.pbytes = ps.fc_room(), ps.pbytes
        return stop

    def send(self, subject: str, ack: bytes, hdr: bytes, payload: bytes) -> tuple[bool, bool]:
        """Deliver one message (``hdr`` b"": none) to ``dest`` (``deliverMsg``'s last step): framed
        onto the receiver's connection when the pass may (``FrameSink.deliver``'s framing, none of
        its per-message checks applying, accounted for with the others), else handed to the
        receiver's ``deliver`` (an internal subscriber, a connection that checks each message),
        else routed (``publish_internal``: no one receiver, or it went away). An internal receiver
        (``takes_deliveries``: a mirror's or source's feed) gets its callback called, as `route` calls
        it with the stream's subject shown. Returns (delivered,
        cut): cut when the rest of a read-ahead run is to be read again (routed, receiver cut).
        Several client receivers (``rsubs``) get it from `fan_out`."""
        conn, rsub = self.conn, self.rsub
        if rsub is None and self.rsubs:
            return self.fan_out(subject, ack, hdr, payload)
        if rsub is None or rsub.closed:
            self.routed += 1
            ok = self.publish_internal(self.dest, payload, ack.decode(), hdr or None, subject)
            return _SENT_CUT if ok else _NOT_SENT
        if conn is None:
            client = rsub.client
            if client is None:  # an internal subscription that takes deliveries (a mirror's feed)
                rsub.delivered += 1
                rsub.callback(subject, ack.decode(), hdr or None, payload, None)
                return _SENT_CUT if rsub.closed else _SENT
            ok = client.deliver(rsub, self.dest, ack.decode(), hdr or None, payload, None, subject)
            return (_SENT_CUT if rsub.closed else _SENT) if ok else _NOT_SENT
        if hdr and conn.headers:
            if subject is not self.hsub:
                self.hsub, self.hpfx = subject, hmsg_prefix(subject.encode(), rsub.sid_b)
            self.acc += append_hmsg(conn.out, self.hpfx, ack, hdr, payload)
            self.acc_bytes += len(hdr) + len(payload)
        else:
            if subject is not self.msub:
                self.msub, self.mpfx = subject, msg_prefix(subject.encode(), rsub.sid_b)
            self.acc += append_msg(conn.out, self.mpfx, ack, payload)
            self.acc_bytes += len(payload)
        self.acc_msgs += 1
        if self.acc > self.room and not self.early():
            return _SENT_CUT
        return _SENT

    def fan_out(self, subject: str, ack: bytes, hdr: bytes, payload: bytes) -> tuple[bool, bool]:
        """`send` to several client receivers (``rsubs``): each one's ``FrameSink.deliver``, in the
        sublist's order, as `Router.route` hands a server publish to each (nats-server
        ``processMsgResults``). A receiver closed meanwhile (a slow consumer cut, an
        auto-unsubscribe) is skipped, as `route` skips it, and has the receivers looked up again
        (`receiver`: those left, a lone one, or none and each message routed) and the rest of the
        run read again. As `send`'s other ways, a message no one took (no echo, deliver
        permissions) has the rest of the run read again too."""
        reply = ack.decode()
        block = hdr or None
        dest = self.dest
        ok = cut = False
        for rsub in self.rsubs:
            if rsub.closed:
                cut = True
                continue
            if rsub.client.deliver(rsub, dest, reply, block, payload, None, subject):  # type: ignore[union-attr]
                ok = True
            if rsub.closed:
                cut = True
        if cut:
            self.receiver(dest)
        return ok, cut or not ok

    def early(self) -> bool:
        """The frames passed ``room``: account for them now (where ``FrameSink.deliver`` would
        write early). False: that cut the receiver (a slow consumer; what follows is routed)."""
        self.account()
        conn, rsub = self.conn, self.rsub
        assert conn is not None and rsub is not None
        if rsub.closed:
            self.conn = None
            return False
        self.room = conn.room()
        return True

    def account(self) -> None:
        """The frames appended since the last call: ``FrameSink.count`` (their
        counts, the flush, an early write or a slow-consumer cut)."""
        if self.conn is not None and self.acc:
            self.conn.count(self.rsub, self.acc_msgs, self.acc_bytes, self.acc)
        self.acc = self.acc_msgs = self.acc_bytes = 0


def headers_only(hdr: bytes, size: int) -> bytes:
    """A message's headers-only form: its header block with ``Nats-Msg-Size`` added (the payload
    is dropped: nats-server ``convertToHeadersOnly``)."""
    base = hdr[:-2] if hdr else b"NATS/1.0\r\n"
    return base + b"Nats-Msg-Size: %d\r\n\r\n" % size


def _frame_msg(out: list[bytes], mpfx: bytes, prefix1: bytes, seq: int, dseq: int, ts: int, npc: int, payload: bytes) -> int:
    """``append_msg``'s frame of a first delivery, the control line and its ack reply in one format
    (a small payload in it too: one part for the write's join, not three); the control line's length."""
    size = len(payload)
    if size <= _INLINE:
        frame = b"%b%b%d.%d.%d.%d %d\r\n%b\r\n" % (mpfx, prefix1, seq, dseq, ts, npc, size, payload)
        out.append(frame)
        return len(frame) - size - 2
    line = b"%b%b%d.%d.%d.%d %d\r\n" % (mpfx, prefix1, seq, dseq, ts, npc, size)
    out.append(line)
    out.append(payload)
    out.append(CRLF)
    return len(line)


def _queue_taking(q: Any, dest: str, current_pass: int) -> int:
    """How many messages the pull requests of the wait queue ``q`` take in a row as
    ``PullDelivery.next_waiting``'s common case would take each: 0 when the head request would
    not be taken as is, 1 when only it would, else (every request of a short queue would) what
    they all still want. A request is taken as is when it is still waiting, its reply is the
    pass's receiver, it has no byte limit and has not expired. Its interest need not be looked
    up: the pass's receiver is a live subscription on that very reply subject (``frame_run``
    frames onto its connection), so it is marked seen this pass, as ``next_waiting`` would.

    Why once per run, not per message: a run's frames reach the connection together when it
    ends, so a request whose expiry falls inside the run (microseconds) is one the run had
    framed for before it expired; the clock is read once here."""
    if not q:
        return 0
    now = time.monotonic()
    long = len(q) > _QUEUE_HELD  # (the head alone, as one request, looked at per message)
    wanted = 0
    i = 0
    for wr in q:
        stale = wr.gone or wr.reply != dest or wr.max_bytes > 0 or (wr.expires and now >= wr.expires)
        if stale:
            return 1 if i > 0 else 0  # (the head alone, or not even it)
        wr.checked = current_pass
        if long:
            return 1
        wanted += wr.n
        i += 1
    return wanted
