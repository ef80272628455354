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
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import msgspec

from pyjetstream.api import PubAckResponse
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.client.msg import HeadersArg
from pyjetstream.spark.errors import PublishError

__all__ = ["PublishStats", "Publisher"]

_decoder = msgspec.json.Decoder(PubAckResponse)


@dataclass
class PublishStats:
    published: int = 0  # acknowledged messages
    duplicates: int = 0  # acknowledged as duplicates (already in the stream)
    retries: int = 0  # re-sends after an ack timeout
    first_seq: int = 0
    last_seq: int = 0


NO_RESPONDERS_WAIT = 0.25  # nats.go's RetryWait: a 503 is tried again after this (a stream leader may be moving)


class _InFlight:
    __slots__ = ("attempts", "data", "deadline", "headers", "no_responders", "subject")

    def __init__(self, subject: str, data: bytes, headers: HeadersArg | None, deadline: float) -> None:
        self.subject = subject
        self.data = data
        self.headers = headers
        self.deadline = deadline
        self.attempts = 1
        self.no_responders = False  # the last attempt was answered 503 (no stream, for now)


class Publisher:
    def __init__(self, nc: Client, *, window: int, ack_timeout: float, retries: int) -> None:
        self.nc = nc
        self.window = window
        self.ack_timeout = ack_timeout
        self.retries = retries
        self.stats = PublishStats()
        self._inflight: dict[int, _InFlight] = {}
        self._next = 0
        self._prefix = ""
        self._sub: Subscription | None = None
        self._room = asyncio.Event()
        self._error: PublishError | None = None
        self._low_water = window // 2

    async def start(self) -> None:
        self._prefix = self.nc.new_inbox() + "."
        self._sub = await self.nc.subscribe(self._prefix + "*", cb=self._on_ack)

    async def publish_many(self, messages: Iterable[tuple[str, bytes, HeadersArg | None]]) -> None:
        """Send messages, waiting for acks whenever ``window`` of them are unacknowledged."""
        inflight = self._inflight
        window = self.window
        for subject, data, headers in messages:
            if len(inflight) >= window:
                # Refill only once half the window is acked: one wake-up per many acks, not per ack.
                await self._wait(lambda: len(inflight) <= self._low_water)
            if self._error is not None:
                raise self._error
            token = self._next
            self._next = token + 1
            entry = _InFlight(subject, data, headers, time.monotonic() + self.ack_timeout)
            inflight[token] = entry
            self._send(token, entry)

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

    def _send(self, token: int, entry: _InFlight) -> None:
        self.nc.publish_nowait(
            entry.subject, entry.data, reply=self._prefix + str(token), headers=entry.headers
        )

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

    def _time_to_next_deadline(self) -> float:
        if not self._inflight:
            return self.ack_timeout
        oldest = next(iter(self._inflight.values()))  # dict order = send order, re-sends go last
        return max(0.01, oldest.deadline - time.monotonic())

    def _resend_expired(self) -> None:
        now = time.monotonic()
        expired = [(t, e) for t, e in self._inflight.items() if e.deadline <= now]
        for token, entry in expired:
            if entry.attempts > self.retries and entry.no_responders:
                self._fail(entry, "no stream matches the subject")
                return
            if entry.attempts > self.retries:
                self._error = PublishError(
                    f"no JetStream ack for a publish to {entry.subject!r} after {entry.attempts} attempts "
                    f"of {self.ack_timeout}s each"
                )
                return
            entry.attempts += 1
            entry.deadline = now + self.ack_timeout
            self.stats.retries += 1
            # Move to the end so the dict stays ordered by deadline.
            del self._inflight[token]
            self._inflight[token] = entry
            self._send(token, entry)

    def _on_ack(self, msg: Msg) -> None:
        try:
            token = int(msg.subject[len(self._prefix) :])
        except ValueError:
            return
        entry = self._inflight.pop(token, None)
        if entry is None:
            return  # the ack of an earlier attempt already came
        if not msg.data:
            status = msg.status
            if status == 503:
                # No responders: no stream takes the subject — or, in a cluster, none does while its
                # leader is being elected. Tried again after a short wait, as nats.go's publish does,
                # within the same retry budget; still refused at the end, it fails the task.
                entry.no_responders = True
                entry.deadline = time.monotonic() + NO_RESPONDERS_WAIT
                self._inflight[token] = entry
                self._room.set()
                return
            self._fail(entry, f"{status} {msg.description}")
            return
        try:
            ack = _decoder.decode(msg.data)
        except msgspec.DecodeError:
            self._fail(entry, f"invalid PubAck {msg.data[:200]!r}")
            return
        if ack.error is not None:
            self._fail(entry, f"{ack.error.description} (error {ack.error.err_code})")
            return
        stats = self.stats
        stats.published += 1
        if ack.duplicate:
            stats.duplicates += 1
        elif not stats.first_seq or ack.seq < stats.first_seq:
            stats.first_seq = ack.seq
        stats.last_seq = max(stats.last_seq, ack.seq)
        if len(self._inflight) <= self._low_water:
            self._room.set()

    def _fail(self, entry: _InFlight, text: str) -> None:
        if self._error is None:
            self._error = PublishError(f"JetStream refused a publish to {entry.subject!r}: {text}")
        self._room.set()
