"""Pipelined JetStream publishing for one write task: a bounded window of unacked messages.

Every message goes out with reply subject ``<inbox>.<n>`` on one wildcard subscription, so
up to ``window`` publishes are in flight on the connection while their PubAcks stream back.
A message whose ack does not come within ``ack_timeout`` is sent again, unchanged (same
``Nats-Msg-Id``, so the stream stores it once), up to ``retries`` times. A refusal by the
server (an error PubAck, or no stream for the subject) fails the task at once, with the
server's own message.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

import msgspec

from pyjetstream.api import PubAckResponse
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.client.msg import HeadersArg
from pyjetstream.spark.errors import PublishError

__all__ = ["PublishStats", "Publisher"]

_decoder = msgspec.json.Decoder(PubAckResponse)

Message = tuple[str, bytes, HeadersArg | None]


@dataclass
class PublishStats:
    published: int = 0  # acknowledged messages
    duplicates: int = 0  # acknowledged as duplicates (already in the stream)
    retries: int = 0  # re-sends after an ack timeout
    first_seq: int = 0
    last_seq: int = 0


NO_RESPONDERS_WAIT = 0.25  # nats.go's RetryWait: a 503 is tried again after this (a stream leader may be moving)


class _Due:
    """When the acks of some in-flight messages are due: one per send (the run of tokens sent at
    once) rather than an object and a deadline per message. ``done`` is how many of ``tokens``
    (from the front) are known to be settled, so each token is looked at once while the oldest
    send is waited on."""

    __slots__ = ("deadline", "done", "order", "tokens")

    def __init__(self, deadline: float, order: int, tokens: Sequence[int]) -> None:
        self.deadline = deadline
        self.order = order
        self.tokens = tokens
        self.done = 0

    def __lt__(self, other: _Due) -> bool:
        return (self.deadline, self.order) < (other.deadline, other.order)


class Publisher:
    """The in-flight messages are ``token -> (subject, data, headers)``; their deadlines are one
    `_Due` per send, in a heap by deadline. A token re-sent (after a timeout or a 503) is
    owned by its newest `_Due` (``_owner``, only for re-sent tokens), so an older one that
    still lists it leaves it alone."""

    def __init__(self, nc: Client, *, window: int, ack_timeout: float, retries: int) -> None:
        self.nc = nc
        self.window = window
        self.ack_timeout = ack_timeout
        self.retries = retries
        self.stats = PublishStats()
        self._inflight: dict[int, Message] = {}
        self._due: list[_Due] = []  # a heap
        self._order = 0
        self._attempts: dict[int, int] = {}  # re-sent tokens: attempts so far (absent: 1)
        self._owner: dict[int, _Due] = {}  # re-sent tokens: their newest deadline
        self._no_responders: set[int] = (
            set()
        )  # tokens whose last attempt was answered 503 (no stream, for now)
        self._next = 0
        self._prefix = ""
        self._sub: Subscription | None = None
        self._room = asyncio.Event()
        self._error: PublishError | None = None
        self._low_water = window // 2

    async def start(self) -> None:
        self._prefix = self.nc.new_inbox() + "."
        self._sub = await self.nc.subscribe_runs(self._prefix + "*", self._on_acks, self._on_ack)

    async def publish_many(self, messages: Iterable[Message]) -> None:
        """Send messages, waiting for acks whenever ``window`` of them are unacknowledged: each
        time there is room, as many as fit go out in one run ([`Client.publish_requests_nowait`][pyjetstream.client.connection.Client.publish_requests_nowait])."""
        inflight = self._inflight
        window = self.window
        rows = iter(messages)
        while True:
            room = window - len(inflight)
            if room <= 0:
                # Refill only once half the window is acked: one wake-up per many acks, not per ack.
                await self._wait(lambda: len(inflight) <= self._low_water)
                continue
            if self._error is not None:
                raise self._error
            run = list(islice(rows, room))
            if not run:
                return
            first = self._next
            tokens = range(first, first + len(run))
            self._next = first + len(run)
            self.nc.publish_requests_nowait(run, self._prefix, tokens)
            inflight.update(zip(tokens, run, strict=True))
            self._push_due(tokens)
            if len(run) < room:
                return

    async def flush(self) -> PublishStats:
        """Wait until every message is acknowledged (re-sending as needed)."""
        self._low_water = 0
        while self._inflight:
            await self._wait(lambda: not self._inflight)
        if self._error is not None:
            raise self._error
        await self.nc.flush()
        return self.stats

    async def close(self) -> None:
        if self._sub is not None and not self.nc.is_closed:
            await self._sub.unsubscribe()
        self._sub = None

    def _push_due(self, tokens: Sequence[int], delay: float = 0.0) -> _Due:
        self._order += 1
        due = _Due(time.monotonic() + (delay or self.ack_timeout), self._order, tokens)
        heapq.heappush(self._due, due)
        return due

    async def _wait(self, ready: Callable[[], bool]) -> None:
        """Until ``ready()`` (acks arrive) — re-sending what timed out meanwhile."""
        while not ready():
            if self._error is not None:
                raise self._error
            self._room.clear()
            try:
                await asyncio.wait_for(self._room.wait(), self._time_to_next_deadline())
            except TimeoutError:
                self._resend_expired()
        if self._error is not None:
            raise self._error

    def _pending(self, due: _Due) -> bool:
        """Whether ``due`` still has a token in flight that it owns (moving ``done`` past the rest)."""
        tokens = due.tokens
        inflight = self._inflight
        owner = self._owner
        i = due.done
        n = len(tokens)
        while i < n:
            token = tokens[i]
            if token in inflight and (not owner or owner.get(token, due) is due):
                break
            i += 1
        due.done = i
        return i < n

    def _time_to_next_deadline(self) -> float:
        heap = self._due
        while heap and not self._pending(heap[0]):
            heapq.heappop(heap)
        if not heap:
            return self.ack_timeout
        return max(0.01, heap[0].deadline - time.monotonic())

    def _resend_expired(self) -> None:
        now = time.monotonic()
        heap = self._due
        inflight = self._inflight
        owner = self._owner
        attempts = self._attempts
        resend: list[int] = []
        while heap and heap[0].deadline <= now:
            due = heapq.heappop(heap)
            for token in due.tokens[due.done :]:
                if token not in inflight or owner.get(token, due) is not due:
                    continue
                tries = attempts.get(token, 1)
                if tries > self.retries:
                    subject = inflight[token][0]
                    if token in self._no_responders:
                        self._fail(subject, "no stream matches the subject")
                    else:
                        self._error = PublishError(
                            f"no JetStream ack for a publish to {subject!r} after {tries} attempts "
                            f"of {self.ack_timeout}s each"
                        )
                    return
                attempts[token] = tries + 1
                resend.append(token)
        if resend:
            self.stats.retries += len(resend)
            self.nc.publish_requests_nowait([inflight[t] for t in resend], self._prefix, resend)
            due = self._push_due(resend)
            for token in resend:
                owner[token] = due

    def _on_acks(self, subjects: list[bytes], payloads: list[bytes]) -> None:
        """The PubAcks of a received chunk (``Client.subscribe_runs``: no [`Msg`][] each)."""
        inflight = self._inflight
        skip = len(self._prefix)
        acked = self._acked
        for i in range(len(payloads)):
            try:
                token = int(subjects[i][skip:])
            except ValueError:
                continue
            message = inflight.pop(token, None)
            if message is not None:  # (None: the ack of an earlier attempt already came)
                acked(token, message, payloads[i])
        if len(inflight) <= self._low_water:
            self._room.set()

    def _on_ack(self, msg: Msg) -> None:
        """A reply that does not come in a run: a status (503: no stream), or one split across reads."""
        try:
            token = int(msg.subject[len(self._prefix) :])
        except ValueError:
            return
        message = self._inflight.pop(token, None)
        if message is None:
            return  # the ack of an earlier attempt already came
        if not msg.data:
            status = msg.status
            if status == 503:
                # No responders: no stream takes the subject — or, in a cluster, none does while its
                # leader is being elected. Tried again after a short wait, as nats.go's publish does,
                # within the same retry budget; still refused at the end, it fails the task.
                self._no_responders.add(token)
                self._inflight[token] = message
                self._owner[token] = self._push_due([token], NO_RESPONDERS_WAIT)
                self._room.set()
                return
            self._fail(message[0], f"{status} {msg.description}")
            return
        self._acked(token, message, msg.data)
        if len(self._inflight) <= self._low_water:
            self._room.set()

    def _acked(self, token: int, message: Message, data: bytes) -> None:
        """A PubAck (or the server's refusal) for ``token``, no longer in flight."""
        if self._owner:
            self._owner.pop(token, None)
            self._attempts.pop(token, None)
            self._no_responders.discard(token)
        try:
            ack = _decoder.decode(data)
        except msgspec.DecodeError:
            self._fail(message[0], f"invalid PubAck {data[:200]!r}")
            return
        if ack.error is not None:
            self._fail(message[0], f"{ack.error.description} (error {ack.error.err_code})")
            return
        stats = self.stats
        stats.published += 1
        seq = ack.seq
        if ack.duplicate:
            stats.duplicates += 1
        elif not stats.first_seq or seq < stats.first_seq:
            stats.first_seq = seq
        if seq > stats.last_seq:
            stats.last_seq = seq

    def _fail(self, subject: str, text: str) -> None:
        if self._error is None:
            self._error = PublishError(f"JetStream refused a publish to {subject!r}: {text}")
        self._room.set()
