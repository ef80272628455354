"""Pull consumers: ``CONSUMER.MSG.NEXT`` requests, the waiting queue and the statuses requesters get.

:class:`PullDelivery` mirrors nats-server ``consumer.go`` ``processNextMsgRequest``,
``nextWaiting``, ``processWaiting`` and ``releaseAnyPendingRequests``; :class:`WaitQueue` and
:class:`WaitingRequest` are its ``waitQueue`` and ``waitingRequest``. A request asks for ``batch``
messages (optionally capped by ``max_bytes``) to be sent to its reply subject until ``expires``.
Requests are served round robin: one that still wants more moves to the back of the queue after
each message. The request body is decoded by :func:`pyjetstream.api.codec.decode_pull_request`
and every status line comes from :mod:`pyjetstream.api.headers`, byte for byte nats-server's
(``409 Batch Completed`` is ⟨2.10+⟩).
"""

from __future__ import annotations

import asyncio
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
from pyjetstream.server.jetstream.priority_groups import PriorityGroups

if TYPE_CHECKING:
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.jetstream.consumer import Consumer

__all__ = ["PullDelivery", "WaitQueue", "WaitingRequest"]

NO_MESSAGES = status_block(Status.NO_MESSAGES)
REQUESTS_PENDING = status_block(Status.REQUESTS_PENDING)
MAX_WAITING_EXCEEDED = status_block(Status.MAX_WAITING_EXCEEDED)
PUSH_BASED = status_block(Status.PUSH_BASED)
CONSUMER_DELETED = status_block(Status.CONSUMER_DELETED)


class WaitingRequest:
    """One pull request waiting for messages (``waitingRequest``)."""

    __slots__ = (
        "checked",
        "delivered",
        "expires",
        "group",
        "hb",
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
    ) -> None:
        now = time.monotonic()
        self.reply = reply
        self.n = batch  # messages still wanted
        self.delivered = 0
        self.max_bytes = max_bytes  # bytes still allowed (0 = no limit)
        self.expires = expires  # monotonic deadline, 0 = none
        self.no_wait = no_wait
        self.hb = hb  # heartbeat interval in seconds (0 = none)
        self.hbt = now + hb if hb else 0.0  # next heartbeat due
        self.received = now
        self.checked = -1  # the delivery pass that last saw interest in ``reply``
        # ⟨2.11+⟩ priority groups (see priority_groups.py)
        self.group = req.group if req is not None else ""
        self.min_pending = req.min_pending if req is not None else 0
        self.min_ack_pending = req.min_ack_pending if req is not None else 0
        self.pin_id = req.id if req is not None else ""
        # ``prioritized``: lower goes first; a request without one sorts last (Go's MaxInt32)
        self.priority = req.priority if req is not None else 2**31 - 1

    def timeout_status(self) -> bytes:
        return pending_status_block(Status.REQUEST_TIMEOUT, self.n, self.max_bytes)


class WaitQueue:
    """The bounded FIFO of waiting requests (``waitQueue``), capacity ``max_waiting``."""

    __slots__ = ("_q", "capacity", "last")

    def __init__(self, capacity: int) -> None:
        self._q: deque[WaitingRequest] = deque()
        self.capacity = capacity
        self.last = time.monotonic()  # last request received (inactivity tracking)

    def __len__(self) -> int:
        return len(self._q)

    def __bool__(self) -> bool:
        return bool(self._q)

    def __iter__(self) -> Iterator[WaitingRequest]:
        return iter(self._q)

    def wanted(self) -> int:
        """Messages the waiting requests still want (what a delivery pass may read ahead)."""
        return sum(wr.n for wr in self._q)

    def is_full(self) -> bool:
        return len(self._q) >= self.capacity

    def add(self, wr: WaitingRequest) -> bool:
        if len(self._q) >= self.capacity:
            return False
        self._q.append(wr)
        self.last = wr.received
        return True

    def add_prioritized(self, wr: WaitingRequest) -> bool:
        """⟨2.12+⟩ ``addPrioritized``: behind every request of the same or a lower priority."""
        if len(self._q) >= self.capacity:
            return False
        self._insert_sorted(wr)
        self.last = wr.received
        return True

    def _insert_sorted(self, wr: WaitingRequest) -> None:
        q = self._q
        for i, other in enumerate(q):
            if other.priority > wr.priority:
                q.insert(i, wr)
                return
        q.append(wr)

    def cycle(self) -> None:
        """Move the head request to the back, untouched (it is passed over this time)."""
        self._q.rotate(-1)

    def peek(self) -> WaitingRequest | None:
        return self._q[0] if self._q else None

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
        if wr.n <= 0:
            q.popleft()
        elif len(q) > 1 and q[-1] is not wr:
            q.popleft()
            self._insert_sorted(wr)
        return wr

    def take_head(self, wr: WaitingRequest) -> None:
        """Account one delivery to ``wr``, the head request (nats-server ``popAndRequeue``): it
        leaves the queue when it wants no more, else goes to the back. The one place a delivery
        is counted to a request (:meth:`pop`, ``PullDelivery.next_waiting``, the delivery
        loop's runs)."""
        wr.delivered += 1
        wr.n -= 1
        q = self._q
        if wr.n <= 0:
            q.popleft()
        elif len(q) > 1:
            q.popleft()
            q.append(wr)

    def remove_head(self) -> None:
        self._q.popleft()

    def retain(self, keep: list[WaitingRequest]) -> None:
        self._q = deque(keep)

    def clear(self) -> list[WaitingRequest]:
        items = list(self._q)
        self._q.clear()
        return items


class PullDelivery:
    """The pull side of a consumer: requests in, the waiting queue, its timer, statuses out."""

    __slots__ = ("_wtmr", "_wtmr_at", "consumer", "priority", "statuses", "waiting")

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        cfg = consumer.cfg
        self.waiting = WaitQueue(cfg.max_waiting if not cfg.deliver_subject else 0)
        self._wtmr: asyncio.TimerHandle | None = None
        self._wtmr_at = 0.0
        self.priority = PriorityGroups(consumer)
        self.statuses = 0  # statuses sent (the delivery pass notices one sent while it reads ahead)

    def stop(self) -> None:
        if self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None
        self.priority.stop()

    # --- requests ------------------------------------------------------------------------------

    def on_request(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: ClientConnection | None
    ) -> None:
        """The ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` subscriber."""
        if not reply or self.consumer.closed:
            return
        if self.consumer.cfg.deliver_subject:
            self.send_status(reply, PUSH_BASED)
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
            req = decode_pull_request(body)
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
        group_req: PullRequest | None = req if body.lstrip()[:1] == b"{" else None
        if group_req is not None:
            refused = self.priority.check_request(group_req)
            if refused is not None:
                self.send_status(reply, refused)
                return
        waiting = self.waiting
        if waiting.is_full():
            self.process_waiting(eos=False)
        if req.no_wait:
            msgs_pending = consumer.num_pending() + len(consumer.state.rdq)
            if msgs_pending == 0 and not req.expires:
                waiting.last = time.monotonic()
                self.send_status(reply, NO_MESSAGES)
                return
            if msgs_pending > 0 and msgs_pending < self.process_waiting(eos=False):
                waiting.last = time.monotonic()
                self.send_status(reply, REQUESTS_PENDING)
                return
        now = time.monotonic()
        expires = now + req.expires / 1e9 if req.expires else 0.0
        batch, max_bytes, no_wait, hb = req.batch, req.max_bytes, req.no_wait, req.idle_heartbeat
        wr = WaitingRequest(reply, batch, max_bytes, expires, no_wait, hb / 1e9, group_req)
        prioritized = cfg.priority_policy == PriorityPolicy.PRIORITIZED
        added = waiting.add_prioritized(wr) if prioritized else waiting.add(wr)
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
                            wr.n = 1  # deliver this one, then the request is done
                    else:
                        self.send_status(
                            wr.reply, pending_status_block(Status.MAX_BYTES_EXCEEDED, wr.n, wr.max_bytes)
                        )
                        if claimed and groups is not None:
                            groups.release_claim()
                        waiting.remove_head()
                        continue
                if wr.checked == current_pass or self.consumer.server.has_interest(wr.reply):
                    wr.checked = current_pass
                    return waiting.pop(prioritized)
            else:
                self.send_status(wr.reply, wr.timeout_status())
            waiting.remove_head()
        return None

    def batch_completed(self, reply: str, remaining_bytes: int) -> None:
        """⟨2.10+⟩ the batch is full but the request still allowed bytes."""
        self.send_status(reply, pending_status_block(Status.BATCH_COMPLETED, 0, remaining_bytes))

    def process_waiting(self, eos: bool) -> int:
        """``processWaiting``: expire, drop the uninterested, heartbeat; returns batches wanted.

        ``eos`` (end of stream) also ends ``no_wait`` requests (``404 No Messages``).
        """
        waiting = self.waiting
        if not waiting:
            return 0
        now = time.monotonic()
        has_interest = self.consumer.server.has_interest
        st = self.consumer.state
        keep: list[WaitingRequest] = []
        wanted = 0
        fexp = 0.0
        changed = False
        for wr in waiting:
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
            if not has_interest(wr.reply):
                changed = True
                continue
            wanted += wr.n
            if wr.hbt:
                if now >= wr.hbt:
                    self.send_status(wr.reply, heartbeat_block(st.dseq - 1, st.sseq - 1))
                    wr.hbt = now + wr.hb
                if not fexp or wr.hbt < fexp:
                    fexp = wr.hbt
            if wr.expires and (not fexp or wr.expires < fexp):
                fexp = wr.expires
            keep.append(wr)
        if changed:
            waiting.retain(keep)
        if fexp:
            self._arm(fexp)
        elif self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None
        return wanted

    def release_all(self) -> None:
        """The consumer is being deleted: tell every waiting request (``releaseAnyPendingRequests``)."""
        for wr in self.waiting.clear():
            self.send_status(wr.reply, CONSUMER_DELETED)

    # --- the waiting timer ---------------------------------------------------------------------

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
        self.process_waiting(eos=True)
        if self.waiting:
            self.consumer.kick()
