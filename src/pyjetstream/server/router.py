"""Routing: which subscriptions a published message reaches, and handing it to each (nats-server
``processMsgResults`` and ``deliverMsg``).

Two entries, one rule set:

- `Router.route`: one message — the general per-message path, and the spec of the other;
- `Router.route_msgs`: a run of messages (a read's `PubRun`, or the server's own: a stream's
  PubAcks), routed as `Router.route` routes each in turn, batched at the receivers as nats-server
  batches them (each receiving client's buffer takes its messages, then is flushed once per read):
  one lookup per distinct subject (the sublist's match cache), each connection's deliveries framed
  into its `FrameSink` in one call, each stretch of messages that reach an internal subscription
  alone in a row handed to its one ``run`` callback.

Order is kept: every connection receives the bytes per-message routing gives it. What may act on
another connection at once — an internal subscription's callback or run (an API reply, a
re-routing import, a consumer's ack advisory), a traced message, an auto-unsubscribe (its interest
callbacks) — is a *cut*: the deliveries collected before it are framed first. A delivery that may
pass a connection's pending limit (an early write, a slow-consumer cut) or stall the producer is an
*event*: what was collected is framed there and the checks are made in receiver order, where
per-message delivery makes them. A stream's PubAcks and a consumer's deliveries, which their
receivers defer to the end of the read or to a later loop turn, keep that order by themselves.
``ServerOptions.runs`` off makes every publish take `Router.route` (the differential test proves
the two equal).
"""

from __future__ import annotations

import random
from bisect import bisect_right
from typing import TYPE_CHECKING, Any, Final

from pyjetstream.protocol.headers import encode_headers, may_be_traced

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.sink import FrameSink
    from pyjetstream.server.sublist import MatchResult, Sublist
    from pyjetstream.server.subscription import Subscription

__all__ = ["Router"]

#: What a frame's control line and CR LFs add, at most, to its subject, reply, sid, header block and
#: payload (``HMSG`` and five separators, two ten-digit sizes, two CR LFs): a run's deliveries are
#: counted against a connection's pending limit with this bound.
FRAME_SLACK: Final = 40


class Router:
    """The server's routing (see the module docstring); ``server`` for its logger, its global
    account (the server's own publishes) and ``queue_seed``."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.logger = server.logger
        seed = server.options.queue_seed
        #: The queue-group pick's randomness (``queue_seed``: repeatable).
        self.rng: Any = random if seed is None else random.Random(seed)
        #: Segments delivered part by part against a connection's room (`_Run.end_segment`'s
        #: bisection; the complexity tests read it).
        self.tight_segments = 0
        #: Messages of a run routed one by one (`_Run.route_one`; the complexity tests read it: a
        #: queue segment's messages are not).
        self.lone_msgs = 0
        #: Queue group members a queue segment's picks looked at (`_Run.slot_of`; the complexity
        #: tests read it: one per pick whatever the group's size, more only past members that cannot
        #: take the message).
        self.members_looked_at = 0
        #: Queue segments started (`_Run.queue_plan`): each one's number stamps the connections
        #: its picks land on (`FrameSink.queue_stamp`).
        self.queue_segments = 0

    # ------------------------------------------------------------------ one message

    def route(
        self,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        client: ClientConnection | None,
        show_subject: str | None = None,
        account: Account | None = None,
    ) -> bool:
        """Deliver one message to every matching subscription; True if anyone received it.

        nats-server ``processMsgResults``: look the subject up in ``account``'s sublist (by default
        the publishing client's account, the global account for the server's own publishes; one
        cache hit on the hot path), pick one member per queue group, and hand the message to each
        receiver — a client connection's `FrameSink.deliver` (which frames it into its buffer) or
        an internal subscription's callback. ``client`` is the publisher (None for the server)."""
        if account is None:
            account = client.account if client is not None else self.server.global_account
        psubs, qsubs = account.sublist.match(subject)
        if qsubs:
            psubs = psubs + self.pick_queue_members(qsubs, client)
        elif len(psubs) == 1:
            # The common case (a subscriber, a reply inbox, a pull inbox; internally a stream's
            # subject, a consumer's acks, an API request): no loop.
            sub = psubs[0]
            if not sub.closed:
                sink = sub.sink
                if sink is None:
                    if show_subject is None:
                        self._callback(sub, subject, reply, hdr, payload, client)
                    else:
                        self._shown(sub, subject, show_subject, reply, hdr, payload, client)
                    return True
                if sink.deliver(sub, subject, reply, hdr, payload, client, show_subject):
                    return True
                if reply and client is not None and client.no_responders:
                    self.no_responders(client, reply, subject)
                return False
        delivered = False
        for sub in psubs:
            # A closed connection has closed all its subscriptions, so sub.closed covers both.
            if sub.closed:
                continue
            sink = sub.sink
            if sink is None:
                delivered = True
                if show_subject is None:
                    self._callback(sub, subject, reply, hdr, payload, client)
                else:
                    self._shown(sub, subject, show_subject, reply, hdr, payload, client)
            elif sink.deliver(sub, subject, reply, hdr, payload, client, show_subject):
                delivered = True
        if not delivered and reply and client is not None and client.no_responders:
            self.no_responders(client, reply, subject)
        return delivered

    def _callback(
        self, sub: Subscription, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        sub.delivered += 1
        try:
            sub.callback(subject, reply, hdr, payload, client)
        except Exception:
            self.logger.exception("internal subscription callback for %r failed", sub.subject)

    def _shown(
        self, sub: Subscription, subject: str, show: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """A message routed on ``subject`` and shown as ``show`` (a consumer's delivery: its deliver
        or reply subject, the stream's subject) to an internal subscription: an import forwarder
        (``reroute``) takes both — it routes on, in the other account, by ``subject``, as
        nats-server's ``processMsgResults`` keeps ``c.pa.deliver`` through stream imports and
        ``processServiceImport`` — any other callback the shown subject."""
        reroute = sub.reroute
        if reroute is None:
            self._callback(sub, show, reply, hdr, payload, client)
            return
        sub.delivered += 1
        try:
            reroute(subject, show, reply, hdr, payload, client)
        except Exception:
            self.logger.exception("internal subscription callback for %r failed", sub.subject)

    # ------------------------------------------------------------------ a run

    def route_msgs(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
        account: Account | None = None,
    ) -> int:
        """Route a run of messages — a read's publishes of ``client``, or the server's own
        (``client`` None) — as `route` routes each in turn (see the module docstring); returns how
        many were routed: all, or fewer when one closed or stalled ``client`` (the caller holds
        the rest, as after a stall in `route`)."""
        if account is None:
            account = client.account if client is not None else self.server.global_account
        run = _Run(self, subjects, replies, hdrs, payloads, client)
        sl = account.sublist
        try:
            return run.route(sl)
        finally:
            sl.matches += run.hits

    def pick_queue_members(
        self, qsubs: tuple[tuple[Subscription, ...], ...], client: ClientConnection | None
    ) -> tuple[Subscription, ...]:
        """One member per queue group, at random (``queue_seed``: repeatably), skipping ones that
        cannot take the message."""
        picked = []
        rand = self.rng.random
        for group in qsubs:
            n = len(group)
            start = int(rand() * n) if n > 1 else 0
            for k in range(n):
                sub = group[(start + k) % n]
                conn = sub.client
                if sub.closed or (
                    conn is not None and (conn.closed or (client is not None and conn is client and not client.echo))
                ):
                    continue
                picked.append(sub)
                break
        return tuple(picked)

    def no_responders_frame(self, client: ClientConnection, reply: str, subject: str) -> bytes:
        """The 503 that tells a requester nobody listens on ``subject`` (nats-server
        ``processMsgResults``): ``HMSG <reply> <sid> <n> <n>`` + ``NATS/1.0 503`` +
        ``Nats-Subject: <subject>``, for its own subscription to ``reply``; b"" when it has none."""
        psubs, _ = client.account.sublist.match(reply)
        for sub in psubs:
            if sub.client is client:
                # api.headers.no_responders_block's bytes; the compiled group imports only itself
                hdr = encode_headers({"Nats-Subject": subject}, status=503)
                return b"HMSG %b %b %d %d\r\n%b\r\n" % (reply.encode(), sub.sid_b, len(hdr), len(hdr), hdr)
        return b""

    def no_responders(self, client: ClientConnection, reply: str, subject: str = "") -> None:
        """Tell a requester nobody listens on ``subject`` (`no_responders_frame`)."""
        frame = self.no_responders_frame(client, reply, subject)
        if frame:
            client.enqueue(frame)

    def lone_receiver(self, subject: str, account: Account) -> Subscription | None:
        """The client subscription a server publish to ``subject`` reaches when it reaches exactly
        one (no queue group, no internal subscriber, no second match): what `route` would hand to
        `FrameSink.deliver`. A consumer's delivery pass looks its destination up once and frames
        each message straight onto that connection; a receiver closed meanwhile sends it back
        through `route`. The match is not counted here (the deliveries count themselves). An
        internal subscription that ``takes_deliveries`` (a mirror's or source's feed) is such a
        receiver too: the pass reads its messages in runs and calls its callback for each, as
        `route` would."""
        psubs, qsubs = _uncounted_match(subject, account)
        if qsubs or len(psubs) != 1:
            return None
        sub = psubs[0]
        return sub if (sub.client is not None or sub.takes_deliveries) and not sub.closed else None

    def client_receivers(self, subject: str, account: Account) -> tuple[Subscription, ...]:
        """The client subscriptions a server publish to ``subject`` reaches when it reaches two or
        more and nothing else (no queue group, no internal subscription, none closed): those
        `route` hands the message to in turn, each through its `FrameSink.deliver`; else none. A
        consumer's delivery pass whose destination has no `lone_receiver` looks them up once and
        hands each message to each itself, its messages read in runs — routed, each message
        would be read alone, since a route may reach an internal subscriber whose callback changes
        the stream. The match is not counted here (the deliveries count themselves)."""
        psubs, qsubs = _uncounted_match(subject, account)
        if qsubs or len(psubs) < 2:
            return ()
        for sub in psubs:
            if sub.client is None or sub.closed:
                return ()
        return psubs


def _uncounted_match(subject: str, account: Account) -> MatchResult:
    """``account``'s match of ``subject``, left out of its sublist's match count: a delivery pass's
    look at its destination (`Router.lone_receiver`, `Router.client_receivers`), whose deliveries
    count themselves."""
    sl = account.sublist
    result = sl.cache.get(subject)
    if result is None:
        result = sl.match(subject)
        sl.matches -= 1
    return result


class _Bound:
    """``acc[k] + k * extra``: the bound of the first ``k`` frames of a segment, each ``extra``
    bytes of sid and slack more (a key for `bisect_right`)."""

    __slots__ = ("acc", "extra")

    def __init__(self, acc: list[int], extra: int) -> None:
        self.acc = acc
        self.extra = extra

    def __call__(self, k: int) -> int:
        return self.acc[k] + k * self.extra


class _Slot:
    """A connection in a queue segment (`_Run.queue_plan`): the room left there, and its members'
    picks in message order — ``runs`` is ``[sub, -1, picks, sub, -1, picks ...]`` (a
    `FrameSink.frame_items` item per run of picks for one member), ``last`` the member of the last
    run. Members of one connection (of one group or of several) share its slot, so their frames
    leave in the order per-message routing gives them, whichever member each message picks."""

    __slots__ = ("last", "picks", "room", "runs", "sink")

    def __init__(self, sink: Any, room: int) -> None:
        self.sink = sink
        self.room = room
        self.runs: list[Any] = []
        self.last: Any = None
        self.picks: list[int] = []


#: A member a pick cannot land on (closed, or the producer's own without echo): the pick walks on.
_SKIP: Final = _Slot(None, 0)


class _Run:
    """One `Router.route_msgs` call: the run, and what was collected for its receivers.

    The messages are taken in *segments*: consecutive messages whose lookups gave the same result
    (the sublist shares one result object between subjects with the same receivers) reach the same
    subscriptions, so what `Router.route` + `FrameSink.deliver` decide per delivery is decided
    once for the segment (`plan`) and each connection is given the segment as one range. A
    segment reaching only queue groups is a *queue segment* (`queue_plan`): each message's members
    are picked as it comes, with `Router.pick_queue_members`' draws, and kept per connection in
    message order (several members of one connection included: a run of frames with varying sids
    is still one call, in the order per-message routing frames them). A segment whose deliveries
    need a decision per message (an internal subscription among several receivers, an
    auto-unsubscribe, deliver permissions, a stall) goes message by message (`route_one`); an
    internal subscription that alone takes a segment's messages gets them as one stretch
    (`run_stretch`)."""

    __slots__ = (
        "bytes",
        "client",
        "events",
        "groups",
        "hdrs",
        "hits",
        "payloads",
        "pending",
        "picked",
        "producer",
        "rand",
        "replies",
        "router",
        "slots",
        "stamp",
        "subjects",
        "traced_too",
    )

    def __init__(
        self,
        router: Router,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
    ) -> None:
        self.router = router
        self.subjects = subjects
        self.replies = replies
        self.hdrs = hdrs
        self.payloads = payloads
        self.client = client
        #: The publisher's sink (read once: a connection's sink is made with it and never changes;
        #: a compiled read of ``client.sink`` is a generic attribute look-up per segment).
        self.producer: FrameSink | None = client.sink if client is not None else None
        #: Each receiving connection's deliveries so far: ``[room, sub, lo, hi, sub, lo, hi ...]``
        #: (messages ``lo`` to ``hi`` for ``sub``; ``sub`` None: ``lo`` is a frame of bytes; ``lo`` -1:
        #: ``hi`` lists the messages picked for a queue group member), the
        #: bytes ``room`` left before its pending limit (counted with an upper bound of each frame).
        self.pending: dict[FrameSink, list[Any]] = {}
        #: This message's connections whose checks are due (`frame_pending`), in receiver order.
        self.events: list[FrameSink] = []
        self.hits = 0  # lookups the match cache answered (added to the sublist's count)
        self.bytes = 0  # the current segment's frame bound, less each subscription's sid
        self.traced_too = client is not None and bool(client.account.trace_dest)
        #: A queue segment's groups (`queue_plan`): ``[n, group, table, ...]`` (empty: no queue
        #: segment), ``table`` made by the first pick that meets a member who cannot take the
        #: message (`walk`); its number (`Router.queue_segments`), its connections' `_Slot` in
        #: order, and the members picked for the message being picked with their slots
        #: (``[sub, slot, ...]``).
        self.groups: list[Any] = []
        self.stamp = 0
        self.slots: list[_Slot] = []
        self.picked: list[Any] = []
        self.rand: Any = None

    def route(self, sl: Sublist) -> int:
        """Route every message in turn (see `Router.route_msgs` and the class docstring); ``sl`` is
        typed, so that compiled its match cache is read as a dict, not by a generic method call."""
        subjects = self.subjects
        replies = self.replies
        hdrs = self.hdrs
        payloads = self.payloads
        client = self.client
        cache = sl.cache
        segment: Any = None  # the lookup result of messages lo..i-1, when they form a segment
        plan: list[Any] = []  # its deliveries: sink, sub, sink, sub ...
        stretch: Any = None  # or the internal subscription that alone takes them
        lo = 0
        n = len(payloads)
        i = 0
        while True:
            if i < n:
                subject = subjects[i]
                result: Any = cache.get(subject)  # (psubs, qsubs)
                if result is None:
                    result = sl.match(subject)
                else:
                    self.hits += 1
                hdr = hdrs[i]
                traced = hdr is not None and client is not None and self.may_be_traced(hdr)
                if result is segment and not traced:  # the same receivers as the message before
                    if self.groups:  # a queue segment: this message's members picked
                        i += 1
                        if self.pick(i - 1):  # the segment was cut after it (see `pick`)
                            segment = None
                            if self.halted():
                                return i
                        continue
                    if stretch is None:
                        self.bytes += len(payloads[i]) + len(subject) + len(replies[i]) + (0 if hdr is None else len(hdr))
                    i += 1
                    continue
            if segment is not None:  # a cut: the segment before this message is delivered first
                end = self.end_segment(stretch, plan, lo, i)
                segment = stretch = None
                if self.halted():
                    return end
                if end < i:  # delivered up to a pending limit: the rest is looked at again
                    self.hits -= i - end + (i < n)
                    i = end
                    continue
            if i == n:
                break
            psubs, qsubs = result
            if not traced and not qsubs:
                stretch = self.stretch_taker(psubs)
                if stretch is not None or self.plan(psubs, plan):
                    segment = result
                    lo = i
                    self.bytes = len(payloads[i]) + len(subject) + len(replies[i]) + (0 if hdr is None else len(hdr))
                    i += 1
                    continue
            # A queue segment when the next message may join it (its subject repeats): a lone
            # message's members are picked as `Router.route` picks them, without the plan's tables.
            if qsubs and not traced and not psubs and i + 1 < n and subjects[i + 1] == subject:
                self.queue_plan(qsubs)
                segment = result  # a queue segment starts: its members picked message by message
                self.hits -= 1  # (message i is looked up again)
                continue
            if traced:
                self.traced(i)
            else:
                if qsubs:
                    psubs = psubs + self.router.pick_queue_members(qsubs, client)
                self.route_one(i, psubs)
                if self.events:
                    self.frame_pending()
            i += 1
            if self.halted():
                if self.pending:  # (what this message's later receivers were given)
                    self.frame_pending()
                return i
        if self.pending:
            self.frame_pending()
        return n

    def stretch_taker(self, psubs: tuple[Subscription, ...]) -> Any:
        """The internal subscription that takes runs when it alone receives the messages: a
        stretch starts (what was collected before is framed first); else None."""
        taker = psubs[0] if len(psubs) == 1 else None
        if taker is None or taker.sink is not None or taker.run is None or taker.closed:
            return None
        if self.pending:
            self.frame_pending()
        return taker

    def halted(self) -> bool:
        """Whether the publisher closed or was stalled (the caller holds the rest of the run).
        Closed is read from its sink, whose ``closed`` `ClientConnection.close` sets with its own:
        a native read, where the connection's is a generic attribute look-up per segment."""
        producer, client = self.producer, self.client
        return producer is not None and client is not None and (producer.closed or client.stalled)

    def queue_plan(self, qsubs: tuple[tuple[Subscription, ...], ...]) -> None:
        """Set up a queue segment for messages whose lookup gave only ``qsubs``: nothing looked at
        per member here, and each pick looks at the member it lands on (`slot_of`), as
        nats-server's ``processMsgResults`` does per message — so a message to a group of 1,000
        costs what one to a group of 10 does, and a read's picks to 1,000 members make no more
        objects than to 10."""
        groups: list[Any] = []
        for group in qsubs:
            groups.append(len(group))
            groups.append(group)
            groups.append(None)
        self.groups = groups
        self.slots = []
        router = self.router
        router.queue_segments += 1
        self.stamp = router.queue_segments
        if self.rand is None:
            self.rand = router.rng.random

    def slot_of(self, sub: Subscription) -> _Slot | None:
        """Where a pick that lands on ``sub`` goes: its connection's `_Slot` in this segment (made
        with the room left there when the segment first picks a member of it: nats-server's
        per-client ``pcd`` entry), None when its delivery needs a decision per message (as
        `plan`: an internal member, auto-unsubscribe, deliver permissions, a stall), or `_SKIP`
        when it cannot take the message (closed, or the producer's own without echo:
        `Router.pick_queue_members` walks past it)."""
        self.router.members_looked_at += 1
        client = self.client
        conn = sub.client
        if sub.closed or (
            conn is not None and (conn.closed or (client is not None and conn is client and not client.echo))
        ):
            return _SKIP
        sink = sub.sink
        if sink is None or sub.max_msgs:
            return None
        if sink.queue_stamp == self.stamp:
            return sink.queue_slot
        sink.queue_stamp = self.stamp
        slot: _Slot | None = None
        if sink.deliver_filter is None and not (sink.write_paused and client is not None and client.may_stall(sink.conn)):
            items = self.pending.get(sink)
            slot = _Slot(sink, items[0] if items is not None else sink.limit - sink.size)
            self.slots.append(slot)
        sink.queue_slot = slot
        return slot

    def walk(self, k: int, start: int) -> tuple[Any, _Slot | None]:
        """The member of group ``k`` (its index in `groups`) a pick starting at ``start`` lands on
        when that one cannot take the message, and its slot (`slot_of`; (None, `_SKIP`): nobody
        can): `Router.pick_queue_members`' walk on from it, going round. Kept in the group's table
        for every start the walk passed, so the walks of a segment cost the group's size at most."""
        groups = self.groups
        group: tuple[Subscription, ...] = groups[k + 1]
        n = len(group)
        table: list[Any] | None = groups[k + 2]
        if table is None:
            table = groups[k + 2] = [None] * n
        landed: Any = None
        end = n
        for j in range(1, n):
            idx = (start + j) % n
            known = table[idx]
            if known is not None:
                landed = known
                end = j
                break
            sub = group[idx]
            if self.slot_of(sub) is not _SKIP:
                landed = sub
                end = j + 1
                break
        for j in range(end):
            table[(start + j) % n] = landed if landed is not None else False
        if landed is None or landed is False:
            return None, _SKIP
        return landed, self.slot_of(landed)

    def pick(self, i: int) -> bool:
        """Message ``i`` of a queue segment to one member per group, picked as
        `Router.pick_queue_members` picks (the same draws), added to its connection's picks in
        the order per-message routing frames them (message by message, group by group). True
        when the segment ends with it: a connection may pass its pending limit with it (an event,
        `end_queue`), or a member it picked needs a decision per message, or nobody takes it and the
        publisher wants a no-responders answer (the segment ends before it and it is routed alone,
        `route_one`, with these picks)."""
        groups = self.groups
        rand = self.rand
        picked = self.picked
        picked.clear()
        alone = False
        for k in range(0, len(groups), 3):
            n: int = groups[k]
            start = int(rand() * n) if n > 1 else 0
            group: tuple[Subscription, ...] = groups[k + 1]
            sub: Any = group[start]
            slot = self.slot_of(sub)
            if slot is _SKIP:
                sub, slot = self.walk(k, start)
                if slot is _SKIP:
                    continue
            if slot is None:
                alone = True
            picked.append(sub)
            picked.append(slot)
        if not picked:
            client = self.client
            if not (self.replies[i] and client is not None and client.no_responders):
                return False  # (nobody takes it, and nobody is told)
        if alone or not picked:
            self.end_queue()
            self.route_one(i, tuple(picked[0::2]))
            if self.events:
                self.frame_pending()
            return True
        hdr = self.hdrs[i]
        size = len(self.payloads[i]) + len(self.subjects[i]) + len(self.replies[i]) + (0 if hdr is None else len(hdr))
        cut = False
        for j in range(0, len(picked), 2):
            member: Subscription = picked[j]
            into: _Slot = picked[j + 1]
            member.delivered += 1
            if into.last is member:
                into.picks.append(i)
            else:  # another member of this connection: a run of its own
                into.last = member
                picks = into.picks = [i]
                into.runs += (member, -1, picks)
            into.room -= size + len(member.sid_b) + FRAME_SLACK
            if into.room < 0:
                cut = True
                if into.sink not in self.events:
                    self.events.append(into.sink)
        if cut:
            self.end_queue()
        return cut

    def end_queue(self) -> None:
        """A queue segment ends: each connection's runs of picks to it, and what was collected
        framed when a pick may pass a pending limit (`frame_pending`)."""
        pending = self.pending
        for slot in self.slots:
            sink = slot.sink
            sink.queue_slot = None  # (its picks are handed over below)
            runs = slot.runs
            if not runs:
                continue
            items = pending.get(sink)
            if items is None:
                items = pending[sink] = [slot.room]
            else:
                items[0] = slot.room
            items += runs
        self.slots = []
        self.groups = []
        if self.events:
            self.frame_pending()

    def may_be_traced(self, hdr: bytes) -> bool:
        """msgtrace.may_be_traced: a header block that may ask for a trace."""
        return may_be_traced(hdr, self.traced_too)

    def plan(self, psubs: tuple[Subscription, ...], plan: list[Any]) -> bool:
        """The deliveries of a message to ``psubs`` into ``plan`` (sink, sub, ...), when the same
        for every message of a segment: client subscriptions without auto-unsubscribe, on
        connections without deliver permissions, that would not stall the producer, one per
        connection; a closed one or the producer's own without echo skipped, as `route_one` skips them. False when a
        delivery needs a decision per message (or nobody receives the messages while the
        publisher wants no-responders answers)."""
        plan.clear()
        client = self.client
        producer = self.producer
        for sub in psubs:
            if sub.closed:
                continue
            sink = sub.sink
            if sink is None or sub.max_msgs or sink.deliver_filter is not None:
                plan.clear()
                return False
            if not sink.echo and sink is producer:
                continue
            if (sink.write_paused and client is not None and client.may_stall(sink.conn)) or sink in plan:
                # (a connection with two of these subscriptions takes each message twice in a row)
                plan.clear()
                return False
            plan.append(sink)
            plan.append(sub)
        if plan or client is None or not client.no_responders:
            return True
        return False

    def end_segment(self, stretch: Any, plan: list[Any], lo: int, hi: int) -> int:
        """Messages ``lo`` to ``hi`` (not included) formed a segment: handed to the internal
        subscription that takes them (``stretch``), or to each connection of ``plan`` as one
        range — in parts where the deliveries may take a connection past its pending limit: each
        part ends with the message that may, and what was collected is framed and checked there
        (`frame_pending`, the checks in receiver order). Returns where the segment's delivery
        ended: ``hi``, or after such a message when the checks changed who takes the rest (a
        stall, a slow-consumer cut: the caller looks at the rest again)."""
        if stretch is not None:
            self.run_stretch(stretch, lo, hi)
            return hi
        if self.groups:
            self.end_queue()
            return hi
        if len(plan) == 2 and self.add_range(plan[0], plan[1], lo, hi):
            return hi
        pending = self.pending
        count = hi - lo
        tight = False
        for k in range(0, len(plan), 2):
            sink = plan[k]
            items = pending.get(sink)
            room = items[0] if items is not None else sink.limit - sink.size
            if self.bytes + count * (len(plan[k + 1].sid_b) + FRAME_SLACK) > room:
                tight = True
        if not tight:
            self.add_ranges(plan, lo, hi, self.bytes)
            return hi
        # Where each connection's room runs out: prefix sums of the frames' bounds.
        self.router.tight_segments += 1
        acc = self.prefix_bounds(lo, hi)
        start = 0
        while start < count:
            cut = count
            pending = self.pending
            for k in range(0, len(plan), 2):
                sink = plan[k]
                extra = len(plan[k + 1].sid_b) + FRAME_SLACK
                items = pending.get(sink)
                room = items[0] if items is not None else sink.limit - sink.size
                base = acc[start] + start * extra
                if acc[count] + count * extra - base > room:
                    # the first end whose frames pass the room (the bound grows with the end)
                    end = bisect_right(range(count + 1), room + base, start + 1, count + 1, key=_Bound(acc, extra))
                    cut = min(cut, end)
            self.add_ranges(plan, lo + start, lo + cut, acc[cut] - acc[start])
            if cut == count:
                if self.events:
                    # The segment's last message may pass a limit: checked there, as in a longer
                    # segment's part (else every later segment of the read would be checked
                    # against the spent room, a bisection per message, until the read ends).
                    self.frame_pending()
                return hi
            self.frame_pending()
            client = self.client
            if client is not None and (client.closed or client.stalled):
                return lo + cut
            if not self.plan(tuple(plan[1::2]), plan):  # the checks changed who takes the rest
                return lo + cut
            start = cut
        return hi

    def add_range(self, sink: FrameSink, sub: Subscription, lo: int, hi: int) -> bool:
        """`add_ranges` for a segment that reaches one connection, when its room takes the whole
        segment — the room looked up once (a publisher cycling over one connection's
        subscriptions makes a segment of each message). False, nothing done: the caller checks
        the segment part by part."""
        count = hi - lo
        bound = self.bytes + count * (len(sub.sid_b) + FRAME_SLACK)
        items = self.pending.get(sink)
        if items is None:
            room = sink.limit - sink.size
            if bound > room:
                return False
            self.pending[sink] = [room - bound, sub, lo, hi]
        elif bound > items[0]:
            return False
        else:
            items[0] -= bound
            if len(items) > 1 and items[-3] is sub and items[-1] == lo:
                items[-1] = hi  # (the range before, for the same subscription, goes on)
            else:
                items.append(sub)
                items.append(lo)
                items.append(hi)
        sub.delivered += count
        return True

    def add_ranges(self, plan: list[Any], lo: int, hi: int, bound: int) -> None:
        """Messages ``lo`` to ``hi`` (frames bound ``bound`` bytes without the sids and the
        slack) to each connection of ``plan`` as one range; a connection they may take past its
        pending limit is an event (the caller frames and checks)."""
        pending = self.pending
        events = self.events
        for k in range(0, len(plan), 2):
            sink = plan[k]
            sub = plan[k + 1]
            sub.delivered += hi - lo
            items = pending.get(sink)
            if items is None:
                items = pending[sink] = [sink.limit - sink.size]
            items[0] -= bound + (hi - lo) * (len(sub.sid_b) + FRAME_SLACK)
            if items[0] < 0 and sink not in events:
                events.append(sink)
            if len(items) > 1 and items[-3] is sub and items[-1] == lo:
                items[-1] = hi  # (the range before, for the same subscription, goes on)
            else:
                items.append(sub)
                items.append(lo)
                items.append(hi)

    def prefix_bounds(self, lo: int, hi: int) -> list[int]:
        """The frames' bounds of messages ``lo`` to ``hi`` without sids and slack, summed: entry
        ``k`` is the bound of the first ``k``."""
        acc = [0]
        total = 0
        hdrs = self.hdrs
        for i in range(lo, hi):
            hdr = hdrs[i]
            total += len(self.payloads[i]) + len(self.subjects[i]) + len(self.replies[i]) + (0 if hdr is None else len(hdr))
            acc.append(total)
        return acc

    def traced(self, i: int) -> None:
        """A message that may be traced: routed by the publisher's trace path, in its place."""
        self.hits -= 1  # (the trace's route looks it up again)
        if self.pending:
            self.frame_pending()
        publisher: Any = self.client
        hdr: Any = self.hdrs[i]
        if not publisher.traced_pub(self.subjects[i], self.replies[i], hdr, self.payloads[i], False):
            # not processed (as on the per-message path, which does not count it)
            publisher.took(-1, -(len(hdr) + len(self.payloads[i])))

    def route_one(self, i: int, psubs: tuple[Subscription, ...]) -> None:
        """Message ``i`` to its receivers ``psubs`` (queue members picked): each connection's
        delivery collected in `pending`, a connection whose delivery may pass its pending limit or
        stall the producer added to `events`; an internal callback, an auto-unsubscribe or a
        no-responders answer in their place. What `Router.route` + `FrameSink.deliver` decide per
        delivery is decided here (no echo, deliver permissions, the delivered count and
        auto-unsubscribe); the framing is the connection's (`FrameSink.frame_items`)."""
        self.router.lone_msgs += 1
        subject = self.subjects[i]
        reply = self.replies[i]
        hdr = self.hdrs[i]
        client = self.client
        producer = self.producer
        delivered = False
        bound = -1
        for sub in psubs:
            if sub.closed:
                continue
            sink = sub.sink
            if sink is None:
                if self.pending:
                    self.frame_pending()
                delivered = True
                self.router._callback(sub, subject, reply, hdr, self.payloads[i], client)
                continue
            if not sink.echo and sink is producer:
                continue
            deliver_filter = sink.deliver_filter
            if deliver_filter is not None and not deliver_filter.deliver_allowed(subject, reply, sub.queue or ""):
                continue
            delivered = True
            if sub.max_msgs:  # auto-unsubscribe: removed before its last message is framed, as deliver does
                if self.pending:
                    self.frame_pending()
                sub.delivered += 1
                if sub.delivered >= sub.max_msgs:
                    sink.conn.remove_sub(sub)
            else:
                sub.delivered += 1
            if bound < 0:
                bound = len(self.payloads[i]) + len(subject) + len(reply) + FRAME_SLACK
                if hdr is not None:
                    bound += len(hdr)
            self.collect(sink, sub, i, bound + len(sub.sid_b))
        if not delivered and reply and client is not None and client.no_responders:
            frame = self.router.no_responders_frame(client, reply, subject)
            if frame:
                self.collect(client.sink, None, frame, len(frame))

    def collect(self, sink: FrameSink, sub: Any, item: Any, size: int) -> None:
        """One delivery (``sub`` None: ``item`` is a frame of bytes) for ``sink``, at most ``size``
        bytes: an event when the connection may pass its pending limit with it or, new in this
        collection, when the producer would be stalled by it."""
        items = self.pending.get(sink)
        if items is None:
            items = self.pending[sink] = [sink.limit - sink.size]
            client = self.client
            if sink.write_paused and sub is not None and client is not None and client.may_stall(sink.conn):
                self.events.append(sink)
        room = items[0] = items[0] - size
        items.append(sub)
        items.append(item)
        items.append(item + 1 if sub is not None else 0)
        if room < 0 and sink not in self.events:
            self.events.append(sink)

    def frame_pending(self) -> None:
        """Frame what was collected, each connection's in one call, then make the checks of the
        connections in `events`, in order (`FrameSink.check`: an early write, a slow-consumer cut,
        a producer stall)."""
        pending = self.pending
        self.pending = {}
        for sink, items in pending.items():
            sink.frame_items(items, self.subjects, self.replies, self.hdrs, self.payloads)
        events = self.events
        if events:
            for sink in events:
                sink.check(self.client)
            events.clear()

    def run_stretch(self, sub: Any, lo: int, hi: int) -> None:
        """Messages ``lo`` to ``hi`` (not included) reached ``sub`` alone, in a row: its ``run``
        takes them in one call (``callback`` a lone one), as `Router.route` would hand each."""
        if hi - lo == 1:
            self.router._callback(
                sub, self.subjects[lo], self.replies[lo], self.hdrs[lo], self.payloads[lo], self.client
            )
            return
        sub.delivered += hi - lo
        try:
            if lo == 0 and hi == len(self.payloads):
                sub.run(self.subjects, self.replies, self.hdrs, self.payloads, self.client)
            else:
                sub.run(
                    self.subjects[lo:hi], self.replies[lo:hi], self.hdrs[lo:hi], self.payloads[lo:hi], self.client
                )
        except Exception:
            self.router.logger.exception("internal subscription callback for %r failed", sub.subject)
