"""Pull consumers: ``CONSUMER.MSG.NEXT`` requests, the waiting queue and the statuses requesters get.

`PullDelivery` mirrors nats-server ``consumer.go`` ``processNextMsgRequest``,
``nextWaiting``, ``processWaiting`` and ``releaseAnyPendingRequests``; `WaitQueue` and
`WaitingRequest` are its ``waitQueue`` and ``waitingRequest``. A request asks for ``batch``
messages (optionally capped by ``max_bytes``) to be sent to its reply subject until ``expires``.
Requests are served round robin: one that still wants more moves to the back of the queue after
each message. The request body is decoded by `pyjetstream.api.codec.decode_pull_request`
and every status line comes from `pyjetstream.api.headers`, byte for byte nats-server's
(``409 Batch Completed`` is ⟨2.10+⟩).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from pyjetstream.api.codec import PullRequestError, decode_pull_request
from pyjetstream.api.enums import PriorityPolicy
from pyjetstream.api.headers import (
    Status,
    heartbeat_block,
    pending_status_block,
    status_block,
)
from pyjetstream.api.models_consumer import PullRequest
from pyjetstream.server.jetstream.api_level import required_level_refused
from pyjetstream.server.jetstream.priority_groups import PriorityGroups

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.host import Connection

__all__ = ["PullDelivery", "WaitQueue", "WaitingRequest"]

NO_MESSAGES = status_block(Status.NO_MESSAGES)
REQUESTS_PENDING = status_block(Status.REQUESTS_PENDING)
MAX_WAITING_EXCEEDED = status_block(Status.MAX_WAITING_EXCEEDED)
PUSH_BASED = status_block(Status.PUSH_BASED)
CONSUMER_DELETED = status_block(Status.CONSUMER_DELETED)
REQUIRED_API_LEVEL = status_block(Status.REQUIRED_API_LEVEL)


# The pull request bodies decoded last (`_decoded`), at most `_DECODED_MAX`.
_DECODED: dict[bytes, tuple[PullRequest, bool]] = {}
_DECODED_MAX = 256
_DECODED_BODY_MAX = 512  # bytes: a request's JSON is ~40-200
_PRIORITIZED = PriorityPolicy.PRIORITIZED  # (an enum member looked up once, not per request)
_heappush = heapq.heappush


def _decoded(body: bytes) -> tuple[PullRequest, bool]:
    """A pull request's body decoded (`decode_pull_request`, which raises `PullRequestError`),
    and whether it is a JSON object (only those carry priority group fields).

    Why a cache: a client asks with the same body again and again (the same batch and expiry
    from every ``fetch``), and its decoding was a sixth of what queueing a waiting request cost.
    The requests it returns are shared, so they are only read (`WaitingRequest` copies what
    it keeps); a bad body is decoded (and refused) each time."""
    got = _DECODED.get(body)
    if got is None:
        got = (decode_pull_request(body), body.lstrip()[:1] == b"{")
        if len(body) <= _DECODED_BODY_MAX:  # (a large body, valid but padded, is not kept)
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[body] = got
    return got


class WaitingRequest:
    """One pull request waiting for messages (``waitingRequest``)."""

    __slots__ = (
        "checked",
        "delivered",
        "expires",
        "gone",
        "group",
        "hb",
        "hbn",
        "hbt",
        "max_bytes",
        "min_ack_pending",
        "min_pending",
        "n",
        "no_wait",
        "pin_id",
        "priority",
        "received",
        "reply",
    )

    def __init__(
        self,
        reply: str,
        batch: int,
        max_bytes: int,
        expires: float,
        no_wait: bool,
        hb: float,
        req: PullRequest | None = None,
        now: float = 0.0,
    ) -> None:
        if not now:  # (`PullDelivery.process_request` passes the time it read)
            now = time.monotonic()
        self.reply = reply
        self.n = batch  # messages still wanted
        self.delivered = 0
        self.max_bytes = max_bytes  # bytes still allowed (0 = no limit)
        self.expires = expires  # monotonic deadline, 0 = none
        self.no_wait = no_wait
        self.hb = hb  # heartbeat interval in seconds (0 = none)
        self.hbt = now + hb if hb else 0.0  # next heartbeat due
        self.hbn = 0  # its entry in the wait queue's heartbeat heap
        self.received = now
        self.checked = -1  # the delivery pass that last saw interest in ``reply``
        self.gone = False  # left the queue from inside it (``WaitQueue.kill``) or from its head
        # ⟨2.11+⟩ priority groups (see priority_groups.py)
        if req is None:
            self.group = self.pin_id = ""
            self.min_pending = self.min_ack_pending = 0
            # ``prioritized``: lower goes first; a request without one sorts last (Go's MaxInt32)
            self.priority = 2**31 - 1
        else:
            self.group = req.group
            self.min_pending = req.min_pending
            self.min_ack_pending = req.min_ack_pending
            self.pin_id = req.id
            self.priority = req.priority

    def timeout_status(self) -> bytes:
        return pending_status_block(Status.REQUEST_TIMEOUT, self.n, self.max_bytes)


class WaitQueue:
    """The bounded FIFO of waiting requests (``waitQueue``), capacity ``max_waiting``.

    nats-server walks every waiting request whenever its delivery loop goes idle
    (``processWaiting``: expiry, heartbeats, interest), so with 10,000 requests waiting each
    delivered message costs a walk over all of them. Here their deadlines are kept in two heaps
    (expiry and heartbeat, `due`): what is due is popped, nothing else is looked at. A
    request that leaves from inside the queue (expired, ended by the end of the stream) is
    marked ``gone`` (`kill`) and dropped when it comes to the head, or when the gone
    outnumber the others (the deque is rebuilt); heap entries of requests that are done are
    dropped as they come up, or all at once when they outnumber the requests. Interest in a
    reply subject is checked when a request comes up (``PullDelivery.next_waiting``) and by the
    full walk (`PullDelivery.process_waiting`: info, a full queue, inactivity).

    ``steps`` counts the requests looked at by walks, heap pops and rebuilds: the step counter
    the complexity tests read.
    """

    __slots__ = ("_exp", "_hbs", "_n", "_no_wait", "_q", "capacity", "dead", "last", "steps", "total")

    def __init__(self, capacity: int) -> None:
        self._q: deque[WaitingRequest] = deque()
        self.capacity = capacity
        self.last = time.monotonic()  # last request received (inactivity tracking)
        self.dead = 0  # requests in ``_q`` that are gone (left from inside the queue)
        self._exp: list[tuple[float, int, WaitingRequest]] = []  # (expires, n, request)
        self._hbs: list[tuple[float, int, WaitingRequest]] = []  # (next heartbeat, n, request)
        self._no_wait: list[WaitingRequest] = []  # the no_wait requests (the end of the stream ends them)
        self._n = 0
        self.steps = 0
        # Messages the requests in the queue still want (what a delivery pass may read ahead;
        # gone ones not counted): a running count, kept by every change of a request's ``n`` here.
        self.total = 0

    def __len__(self) -> int:
        return len(self._q) - self.dead

    def __bool__(self) -> bool:
        return len(self._q) > self.dead

    def __iter__(self) -> Iterator[WaitingRequest]:
        return (wr for wr in self._q if not wr.gone)

    def is_full(self) -> bool:
        return len(self._q) - self.dead >= self.capacity

    def add(self, wr: WaitingRequest) -> bool:
        if len(self._q) - self.dead >= self.capacity:
            return False
        self._q.append(wr)
        self._track(wr)
        return True

    def add_prioritized(self, wr: WaitingRequest) -> bool:
        """⟨2.12+⟩ ``addPrioritized``: behind every request of the same or a lower priority."""
        if len(self._q) - self.dead >= self.capacity:
            return False
        self._insert_sorted(wr)
        self._track(wr)
        return True

    def _track(self, wr: WaitingRequest) -> None:
        """A request joined: its deadlines into the heaps (rebuilt when mostly stale)."""
        self.last = wr.received
        self.total += wr.n
        n = self._n = self._n + 1
        stale = 2 * (len(self._q) - self.dead) + 64  # (a list longer than this is rebuilt)
        if wr.expires:
            if len(self._exp) > stale:
                self._exp = self._rebuilt(self._exp)
            _heappush(self._exp, (wr.expires, n, wr))
        if wr.hbt:
            if len(self._hbs) > stale:
                self._hbs = self._rebuilt(self._hbs)
            wr.hbn = n
            _heappush(self._hbs, (wr.hbt, n, wr))
        if wr.no_wait:
            if len(self._no_wait) > stale:
                self._no_wait = [w for w in self._no_wait if not w.gone and w.n > 0]
            self._no_wait.append(wr)

    def _rebuilt(
        self, heap: list[tuple[float, int, WaitingRequest]]
    ) -> list[tuple[float, int, WaitingRequest]]:
        self.steps += len(heap)
        hb = heap is self._hbs
        kept = [e for e in heap if _current(e, hb)]
        heapq.heapify(kept)
        return kept

    def _insert_sorted(self, wr: WaitingRequest) -> None:
        q = self._q
        for i, other in enumerate(q):
            if other.priority > wr.priority:
                self.steps += i
                q.insert(i, wr)
                return
        self.steps += len(q)
        q.append(wr)

    def cycle(self) -> None:
        """Move the head request to the back, untouched (it is passed over this time)."""
        self._q.rotate(-1)

    def pop(self, prioritized: bool = False) -> WaitingRequest:
        """Account one delivery to the head request; it moves to the back if it wants more
        (``prioritized``: nats-server's ``popAndRequeue``, behind its own priority level)."""
        q = self._q
        wr = q[0]
        if not prioritized:
            self.take_head(wr)
            return wr
        wr.delivered += 1
        wr.n -= 1
        self.total -= 1
        if wr.n <= 0:
            q.popleft()
        else:
            if wr.hb:
                wr.hbt = time.monotonic() + wr.hb
            if len(q) > 1 and q[-1] is not wr:
                q.popleft()
                self._insert_sorted(wr)
        return wr

    def take_head(self, wr: WaitingRequest, k: int = 1) -> None:
        """Account one delivery to ``wr``, the head request (nats-server ``popAndRequeue``): it
        leaves the queue when it wants no more, else goes to the back. The one place a delivery
        is counted to a request (`pop`, ``PullDelivery.next_waiting``, the delivery
        loop's runs). A request with heartbeats gets its next one an interval after this
        delivery (``nextWaiting`` resets ``wr.hbt``). ``k`` deliveries at once (at most
        ``wr.n``) where ``wr`` is the only request, so that it is the head for each of them
        (``DeliveryPass.frame_run``'s run to a lone request)."""
        wr.delivered += k
        wr.n -= k
        self.total -= k
        q = self._q
        if wr.n <= 0:
            q.popleft()
            return
        if wr.hb:
            wr.hbt = time.monotonic() + wr.hb
        if len(q) > 1:
            q.popleft()
            q.append(wr)

    def take_run(self, k: int) -> None:
        """Account ``k`` deliveries to the requests of the queue in turn, as ``k`` calls of
        `take_head` would (nats-server's ``popAndRequeue`` round robin: the head takes one and
        goes to the back while it wants more), where every request of the queue took its
        messages as is (``DeliveryPass.take``, at most ``k`` of what they all want): whole
        rounds first (each request still wanting one), then the first requests of a last,
        partial round, which go to the back. Steps per request, not per message."""
        q = self._q
        if len(q) == 1:
            self.take_head(q[0], k)
            return
        reqs = [wr for wr in q if not wr.gone]
        gone = [wr for wr in q if wr.gone]  # (left from inside the queue meanwhile: dropped at the head)
        given = [0] * len(reqs)
        live = list(range(len(reqs)))
        left = k
        while live and left >= len(live):  # whole rounds, up to the first request to be done
            rounds = min(min(reqs[i].n - given[i] for i in live), left // len(live))
            for i in live:
                given[i] += rounds
            left -= rounds * len(live)
            live = [i for i in live if reqs[i].n > given[i]]
        for i in live[:left]:  # a partial round: these go to the back
            given[i] += 1
        order = live[left:] + live[:left]
        self.steps += len(reqs)
        now = time.monotonic()
        for wr, n in zip(reqs, given, strict=True):
            wr.delivered += n
            wr.n -= n
            if n and wr.hb:
                wr.hbt = now + wr.hb
        self.total -= k
        q.clear()
        q.extend(reqs[i] for i in order if reqs[i].n > 0)
        q.extend(gone)

    def remove_head(self) -> None:
        """The head request leaves (a status ended it, or nobody listens any more)."""
        wr = self._q.popleft()
        wr.gone = True
        self.total -= wr.n

    def drop_gone_head(self) -> bool:
        """Drop the head if it is gone (it left from inside the queue); whether it was."""
        q = self._q
        if q and q[0].gone:
            q.popleft()
            self.dead -= 1
            return True
        return False

    def kill(self, wr: WaitingRequest) -> None:
        """``wr`` leaves from wherever it is in the queue: marked gone, dropped when it comes to
        the head (all gone ones at once when they are the most)."""
        wr.gone = True
        wr.checked = -2  # never "seen this pass": the delivery's common case passes it over
        self.dead += 1
        self.total -= wr.n
        q = self._q
        if self.dead > 32 and 2 * self.dead > len(q):
            self.steps += len(q)
            self._q = deque(w for w in q if not w.gone)
            self.dead = 0

    def due(self, now: float) -> tuple[list[WaitingRequest], list[WaitingRequest]]:
        """The requests whose expiry has come, and those whose heartbeat is due (still waiting)."""
        expired: list[WaitingRequest] = []
        exp = self._exp
        while exp and exp[0][0] <= now:
            wr = heapq.heappop(exp)[2]
            self.steps += 1
            if not wr.gone and wr.n > 0:
                expired.append(wr)
        beats: list[WaitingRequest] = []
        hbs = self._hbs
        while hbs and hbs[0][0] <= now:
            _, n, wr = heapq.heappop(hbs)
            self.steps += 1
            if not _current((0.0, n, wr), True) or (wr.expires and wr.expires <= now):
                continue  # (an entry replaced by a later one, or of a request that is done)
            if wr.hbt > now:  # a delivery moved it on
                self.beat_again(wr)
                continue
            beats.append(wr)
        return expired, beats

    def beat_again(self, wr: WaitingRequest) -> None:
        """``wr``'s next heartbeat (``wr.hbt``) goes into the heap."""
        self._n += 1
        wr.hbn = self._n
        heapq.heappush(self._hbs, (wr.hbt, self._n, wr))

    def take_no_wait(self) -> list[WaitingRequest]:
        """The no_wait requests still waiting (the end of the stream looks at them)."""
        waiting = [wr for wr in self._no_wait if not wr.gone and wr.n > 0]
        self.steps += len(self._no_wait)
        self._no_wait = waiting
        return waiting

    def next_deadline(self) -> float:
        """The earliest expiry or heartbeat of the requests still waiting (0: none)."""
        best = 0.0
        for heap in (self._exp, self._hbs):
            hb = heap is self._hbs
            while heap and not _current(heap[0], hb):
                heapq.heappop(heap)
                self.steps += 1
            if heap and (not best or heap[0][0] < best):
                best = heap[0][0]
        return best

    def retain(self, keep: list[WaitingRequest]) -> None:
        """After a full walk: only ``keep`` stays (the others are gone)."""
        kept = {id(wr) for wr in keep}
        for wr in self._q:
            if id(wr) not in kept:
                wr.gone = True
        self._q = deque(keep)
        self.dead = 0
        self.total = sum(wr.n for wr in keep)

    def clear(self) -> list[WaitingRequest]:
        items = [wr for wr in self._q if not wr.gone]
        for wr in self._q:
            wr.gone = True
        self._q.clear()
        self.dead = self.total = 0
        self._exp.clear()
        self._hbs.clear()
        self._no_wait.clear()
        return items


def _current(entry: tuple[float, int, WaitingRequest], hb: bool) -> bool:
    """A heap entry of a request still waiting (a heartbeat entry: its latest)."""
    wr = entry[2]
    return not wr.gone and wr.n > 0 and (not hb or entry[1] == wr.hbn)


class PullDelivery:
    """The pull side of a consumer: requests in, the waiting queue, its timer, statuses out."""

    __slots__ = ("_lwqic", "_wtmr", "_wtmr_at", "consumer", "priority", "statuses", "waiting")

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        cfg = consumer.cfg
        self.waiting = WaitQueue(cfg.max_waiting if not cfg.deliver_subject else 0)
        self._wtmr: asyncio.TimerHandle | None = None
        self._wtmr_at = 0.0
        self.priority = PriorityGroups(consumer)
        self.statuses = 0  # statuses sent (the delivery pass notices one sent while it reads ahead)
        self._lwqic = 0.0  # monotonic time of the last full walk (nats-server ``lwqic``)

    def stop(self) -> None:
        if self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None
        self.priority.stop()

    # --- requests ------------------------------------------------------------------------------

    def on_request(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Connection | None
    ) -> None:
        """The ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` subscriber."""
        if not reply or self.consumer.closed:
            return
        if self.consumer.cfg.deliver_subject:
            self.send_status(reply, PUSH_BASED)
            return
        # processNextMsgReq: after the push check, before parsing (most requests carry no header)
        if hdr and required_level_refused(hdr):
            self.send_status(reply, REQUIRED_API_LEVEL)
            return
        self.process_request(reply, payload)

    def send_status(self, reply: str, hdr: bytes) -> None:
        self.statuses += 1
        self.consumer.server.publish_internal(reply, b"", hdr=hdr)

    def process_request(self, reply: str, body: bytes) -> None:
        """``processNextMsgRequest``: validate a pull request and queue it."""
        consumer = self.consumer
        if consumer.closed:
            return
        cfg = consumer.cfg
        if cfg.deliver_subject:
            self.send_status(reply, PUSH_BASED)
            return
        try:
            req, is_json = _decoded(body)
        except PullRequestError as exc:
            self.send_status(reply, status_block(Status.bad_request(str(exc))))
            return
        if cfg.max_batch > 0 and req.batch > cfg.max_batch:
            self.send_status(reply, status_block(Status.max_request_batch(cfg.max_batch)))
            return
        if req.expires and cfg.max_expires > 0 and req.expires > cfg.max_expires:
            self.send_status(reply, status_block(Status.max_request_expires(cfg.max_expires)))
            return
        if req.max_bytes > 0 and cfg.max_bytes > 0 and req.max_bytes > cfg.max_bytes:
            self.send_status(reply, status_block(Status.max_request_max_bytes(cfg.max_bytes)))
            return
        # Only a JSON request carries priority group fields (nats-server checks them then).
        group_req: PullRequest | None = req if is_json else None
        if group_req is not None:
            refused = self.priority.check_request(group_req)
            if refused is not None:
                self.send_status(reply, refused)
                return
        waiting = self.waiting
        now = time.monotonic()  # (one clock read a request: the walks below read their own)
        if waiting.is_full() and now - self._lwqic > 1.0:
            # Try to make room: requests whose requester went away leave. At most once a
            # second, as nats-server (each walk looks at every request).
            self.process_waiting(eos=False)
            now = time.monotonic()
        if req.no_wait:
            msgs_pending = consumer.num_pending() + len(consumer.state.rdq)
            if msgs_pending == 0 and not req.expires:
                waiting.last = now
                self.send_status(reply, NO_MESSAGES)
                return
            # (the walk only ever finds fewer wanted than the running count: no walk when that fits)
            if 0 < msgs_pending < waiting.total and msgs_pending < self.process_waiting(eos=False):
                waiting.last = time.monotonic()
                self.send_status(reply, REQUESTS_PENDING)
                return
        expires = now + req.expires / 1e9 if req.expires else 0.0
        hb = req.idle_heartbeat
        wr = WaitingRequest(reply, req.batch, req.max_bytes, expires, req.no_wait, hb / 1e9, group_req, now)
        if cfg.priority_policy == _PRIORITIZED:
            added = waiting.add_prioritized(wr)
        else:
            added = waiting.add(wr)
        if not added:
            # With heartbeats a client waits for them instead of re-requesting in a hot loop.
            if not hb:
                self.send_status(reply, MAX_WAITING_EXCEEDED)
            return
        if expires and (not self._wtmr or expires < self._wtmr_at):
            self._arm(expires)
        if wr.hbt and (not self._wtmr or wr.hbt < self._wtmr_at):
            self._arm(wr.hbt)
        consumer.kick()

    def next_waiting(
        self, size: int, current_pass: int, groups: PriorityGroups | None, prioritized: bool
    ) -> WaitingRequest | None:
        """``nextWaiting``: the request the next message (of ``size`` bytes) goes to.

        Interest in a reply subject is looked up once per delivery pass (``current_pass``).
        With a priority policy (``groups``, given once per pass by the delivery loop) some
        requests are passed over (overflow thresholds, pins).
        """
        waiting = self.waiting
        q = waiting._q  # (its own module's queue: read directly, once per message)
        if q and groups is None:
            # The common case first (once per message): the head request, already seen with
            # interest this pass, no byte limit, not expired: the loop below would take it as is.
            wr = q[0]
            if (
                wr.checked == current_pass
                and wr.max_bytes <= 0
                and not prioritized
                and (not wr.expires or time.monotonic() < wr.expires)
            ):
                waiting.take_head(wr)
                return wr
        cycled = 0
        while q:
            if waiting.drop_gone_head():
                continue
            wr = q[0]
            if not wr.expires or time.monotonic() < wr.expires:
                claimed = False
                if groups is not None:
                    pinned_before = groups.pin_id
                    verdict = groups.passes_over(wr, not pinned_before)
                    if verdict == 1:
                        waiting.cycle()
                        cycled += 1
                        if cycled >= len(waiting):
                            return None
                        continue
                    if verdict == 2:
                        waiting.remove_head()
                        continue
                    claimed = not pinned_before and bool(groups.pin_id)
                if wr.max_bytes > 0:
                    if size <= wr.max_bytes:
                        wr.max_bytes -= size
                        if wr.max_bytes == 0:
                            waiting.total -= wr.n - 1
                            wr.n = 1  # deliver this one, then the request is done
                    else:
                        self.send_status(
                            wr.reply, pending_status_block(Status.MAX_BYTES_EXCEEDED, wr.n, wr.max_bytes)
                        )
                        if claimed and groups is not None:
                            groups.release_claim()
                        waiting.remove_head()
                        continue
                if wr.checked == current_pass or self.consumer.server.reply_interest(wr.reply):
                    wr.checked = current_pass
                    return waiting.pop(prioritized)
            else:
                self.send_status(wr.reply, wr.timeout_status())
            waiting.remove_head()
        return None

    def batch_completed(self, reply: str, remaining_bytes: int) -> None:
        """⟨2.10+⟩ the batch is full but the request still allowed bytes."""
        self.send_status(reply, pending_status_block(Status.BATCH_COMPLETED, 0, remaining_bytes))

    def expire_due(self, eos: bool) -> None:
        """What is due now, without a walk over the waiting requests (the part of nats-server's
        ``processWaiting`` that time and the end of the stream decide): expired requests get
        ``408``, heartbeats go out, and with ``eos`` (end of stream) ``no_wait`` requests end
        with ``404 No Messages``; the timer is set for the next deadline."""
        waiting = self.waiting
        if not waiting:
            self._disarm()
            return
        now = time.monotonic()
        expired, beats = waiting.due(now)
        for wr in expired:
            self.send_status(wr.reply, wr.timeout_status())
            waiting.kill(wr)
        if beats:
            reply_interest = self.consumer.server.reply_interest
            hb = heartbeat_block(*self.consumer.delivery.heartbeat_seqs())
            for wr in beats:
                if not reply_interest(wr.reply):
                    waiting.kill(wr)
                    continue
                self.send_status(wr.reply, hb)
                wr.hbt = now + wr.hb
                waiting.beat_again(wr)
            if waiting:  # nats-server's loop goes round after its heartbeats (getNextMsg)
                self.consumer.kick()
        if eos:
            for wr in waiting.take_no_wait():
                if not wr.expires or wr.delivered > 0:
                    self.send_status(wr.reply, NO_MESSAGES)
                    waiting.kill(wr)
        self._arm_next()

    def process_waiting(self, eos: bool) -> int:
        """``processWaiting``: walk every waiting request — expire, drop the uninterested,
        heartbeat; returns batches wanted. For what must look at all of them (info's
        ``num_waiting``, a full queue, a no_wait request's room, inactivity); a delivery pass
        and the timer take `expire_due`.

        ``eos`` (end of stream) also ends ``no_wait`` requests (``404 No Messages``).
        """
        waiting = self.waiting
        if not waiting:
            return 0
        now = self._lwqic = time.monotonic()
        reply_interest = self.consumer.server.reply_interest
        keep: list[WaitingRequest] = []
        wanted = 0
        changed = False
        for wr in waiting:
            waiting.steps += 1
            if wr.expires and now >= wr.expires:
                self.send_status(wr.reply, wr.timeout_status())
                changed = True
                continue
            if eos and wr.no_wait and (not wr.expires or wr.delivered > 0):
                # ⟨2.11+⟩ the end of the stream ends a no_wait request with 404, as if it had
                # been refused at once (only one with expires that got nothing keeps waiting).
                self.send_status(wr.reply, NO_MESSAGES)
                changed = True
                continue
            if not reply_interest(wr.reply):
                changed = True
                continue
            wanted += wr.n
            if wr.hbt and now >= wr.hbt:
                self.send_status(wr.reply, heartbeat_block(*self.consumer.delivery.heartbeat_seqs()))
                wr.hbt = now + wr.hb
                waiting.beat_again(wr)
            keep.append(wr)
        if changed or waiting.dead:
            waiting.retain(keep)
        self._arm_next()
        return wanted

    def release_all(self) -> None:
        """The consumer is being deleted: tell every waiting request (``releaseAnyPendingRequests``)."""
        for wr in self.waiting.clear():
            self.send_status(wr.reply, CONSUMER_DELETED)

    def signal_shutdown(self) -> int:
        """The server is shutting down: tell every waiting request with ``409 Server Shutdown`` and
        what it still wanted (nats-server ``signalPullConsumers``, one status per reply subject as
        its ``pendingRequests`` map), so a client pulls again once it has reconnected instead of
        waiting for an expiry the restarted server knows nothing of. Returns statuses sent."""
        pending = {wr.reply: wr for wr in self.waiting}
        for reply, wr in pending.items():
            self.send_status(reply, pending_status_block(Status.SERVER_SHUTDOWN, wr.n, wr.max_bytes))
        return len(pending)

    # --- the waiting timer ---------------------------------------------------------------------

    def _arm_next(self) -> None:
        """The timer for the earliest expiry or heartbeat of the waiting requests (none: off)."""
        fexp = self.waiting.next_deadline()
        if fexp:
            self._arm(fexp)
        else:
            self._disarm()

    def _disarm(self) -> None:
        if self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None

    def _arm(self, when: float) -> None:
        if self._wtmr is not None:
            if self._wtmr_at == when:
                return
            self._wtmr.cancel()
        self._wtmr_at = when
        self._wtmr = self.consumer.loop.call_later(max(when - time.monotonic(), 0.001), self._on_timer)

    def _on_timer(self) -> None:
        self._wtmr = None
        if self.consumer.closed:
            return
        self.expire_due(eos=True)
        if self.waiting:
            self.consumer.kick()
