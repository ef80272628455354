"""Publishing into streams: the expectation headers, PubAck decoding and pipelined async publishes.

Synchronous publish is a request/reply over the core client's muxed inbox, retried on no-responders
(ADR-22: 250 ms wait, 2 retries) to ride out stream leader changes.

Async publish pipelines: every publish goes out with reply subject ``<inbox>.<token>`` on **one**
wildcard subscription, and the PubAck that comes back resolves the future registered under that
token. At most ``max_pending`` publishes are in flight; beyond that ``publish_async`` either waits for
room (backpressure, optionally at most ``stall_wait`` seconds) or fails at once with
[`TooManyStalledMsgs`][]. A single periodic sweep fails acks that do not come within ``ack_timeout``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

import msgspec

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.codec import decode_pub_ack
from pyjetstream.api.durations import Duration, seconds, to_ns
from pyjetstream.api.headers import (
    EXPECTED_LAST_MSG_ID,
    EXPECTED_LAST_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE,
    EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT,
    EXPECTED_STREAM,
    MSG_ID,
    SCHEDULE,
    SCHEDULE_SOURCE,
    SCHEDULE_TARGET,
    SCHEDULE_TIME_ZONE,
    SCHEDULE_TTL,
    TTL,
)
from pyjetstream.api.models_msg import PubAck
from pyjetstream.api.timefmt import format_go_duration
from pyjetstream.client.errors import ConnectionClosedError, NatsError, TimeoutError
from pyjetstream.client.jetstream.consume import run_callback
from pyjetstream.client.jetstream.errors import (
    AsyncPublishTimeout,
    InvalidJSAck,
    InvalidOption,
    NoStreamResponse,
    TooManyStalledMsgs,
    api_exception,
)
from pyjetstream.protocol import HeaderBlock

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client
    from pyjetstream.client.msg import Msg

logger = logging.getLogger("pyjetstream.client.jetstream")

DEFAULT_RETRY_WAIT = 0.25
DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_MAX_PENDING = 4000
DEFAULT_ACK_TIMEOUT = 30.0
SWEEP_INTERVAL = 0.5

Headers = dict[str, str | list[str]]
AsyncErrorHandler = Callable[[Any, "PublishedMsg", Exception], Awaitable[None] | None]


TTL_NEVER = "never"

# nats.go's predefined schedules (for ``MsgSchedule(cron=...)``).
SCHEDULE_YEARLY = "@yearly"
SCHEDULE_MONTHLY = "@monthly"
SCHEDULE_WEEKLY = "@weekly"
SCHEDULE_DAILY = "@daily"
SCHEDULE_HOURLY = "@hourly"


def go_duration(value: Duration | str, what: str = "duration") -> str:
    """A duration as nats-server parses it in headers: a Go duration string (``"1m30s"``)."""
    if isinstance(value, str):
        return value
    ns = to_ns(value)
    if ns <= 0:
        raise InvalidOption(f"{what} must be positive")
    return format_go_duration(ns)


@dataclass(frozen=True, slots=True)
class MsgSchedule:
    """A message schedule (ADR-51; nats.go ``WithSchedule*``): publish to a schedule subject of a
    stream with ``allow_msg_schedules`` and the server publishes the body to ``target`` — once
    ``at`` a time, ``every`` interval (≥ 1 s) or on a ``cron`` expression (6 fields or
    ``SCHEDULE_HOURLY`` …, optionally in ``time_zone``). ``source`` publishes the last message of
    that subject instead of the body; ``ttl`` (a duration or ``"never"``) is the produced messages'
    TTL."""

    target: str
    at: datetime | None = None
    every: Duration | None = None
    cron: str | None = None
    time_zone: str | None = None
    source: str | None = None
    ttl: Duration | str | None = None

    def __post_init__(self) -> None:
        if not self.target:
            raise InvalidOption("schedule target subject cannot be empty")
        if sum(x is not None for x in (self.at, self.every, self.cron)) != 1:
            raise InvalidOption("a schedule needs exactly one of at, every and cron")
        if self.every is not None and seconds(self.every) < 1:
            raise InvalidOption("schedule interval must be at least 1s")
        if self.cron is not None and not self.cron:
            raise InvalidOption("cron expression cannot be empty")
        if self.time_zone is not None and self.cron is None:
            raise InvalidOption("a schedule time zone needs a cron expression")

    @property
    def expression(self) -> str:
        """The ``Nats-Schedule`` value."""
        if self.at is not None:
            at = self.at if self.at.tzinfo is not None else self.at.replace(tzinfo=UTC)
            return "@at " + at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.every is not None:
            return "@every " + go_duration(self.every)
        assert self.cron is not None
        return self.cron

    @property
    def feature(self) -> Feature:
        """``@at`` is 2.12's; intervals, cron, time zones and sources came with 2.14."""
        if self.at is not None and self.time_zone is None and self.source is None:
            return Feature.SCHEDULES
        return Feature.SCHEDULE_CRON

    def headers(self) -> list[tuple[str, str]]:
        out = [(SCHEDULE, self.expression), (SCHEDULE_TARGET, self.target)]
        if self.source is not None:
            out.append((SCHEDULE_SOURCE, self.source))
        if self.ttl is not None:
            out.append((SCHEDULE_TTL, go_duration(self.ttl, "schedule TTL")))
        if self.time_zone is not None:
            out.append((SCHEDULE_TIME_ZONE, self.time_zone))
        return out


def publish_features(
    ttl: object, schedule: MsgSchedule | None, expect_last_subject: str | None
) -> list[Feature]:
    """The API-level features a publish with these options needs (none for a plain publish)."""
    out: list[Feature] = []
    if ttl is not None:
        out.append(Feature.MSG_TTL)
    if schedule is not None:
        out.append(schedule.feature)
    if expect_last_subject is not None:
        out.append(Feature.EXPECTED_LAST_SUBJECT_FILTER)
    return out


class PublishedMsg(NamedTuple):
    """What an async publish sent (given to the error handler, e.g. to publish it again)."""

    subject: str
    data: bytes
    headers: Headers | None


def publish_headers(
    headers: Mapping[str, str | Iterable[str]] | HeaderBlock | None,
    *,
    msg_id: str | None = None,
    expect_stream: str | None = None,
    expect_last_sequence: int | None = None,
    expect_last_sequence_per_subject: int | None = None,
    expect_last_msg_id: str | None = None,
    expect_last_subject: str | None = None,
    ttl: Duration | str | None = None,
    schedule: MsgSchedule | None = None,
) -> Headers | None:
    """User headers plus the JetStream publish options (``None`` when there are none).

    ``expect_last_subject`` makes ``expect_last_sequence_per_subject`` apply to the last message on
    that subject filter (2.11+) instead of the published subject."""
    out: Headers | None = None
    if headers is not None:
        if isinstance(headers, HeaderBlock):
            out = {name: list(values) for name, values in headers.headers.items()}
        else:
            out = {name: value if isinstance(value, str) else list(value) for name, value in headers.items()}
    extra: list[tuple[str, str]] = []
    if msg_id is not None:
        extra.append((MSG_ID, msg_id))
    if expect_stream is not None:
        extra.append((EXPECTED_STREAM, expect_stream))
    if expect_last_sequence is not None:
        extra.append((EXPECTED_LAST_SEQUENCE, str(expect_last_sequence)))
    if expect_last_sequence_per_subject is not None:
        extra.append((EXPECTED_LAST_SUBJECT_SEQUENCE, str(expect_last_sequence_per_subject)))
    if expect_last_msg_id is not None:
        extra.append((EXPECTED_LAST_MSG_ID, expect_last_msg_id))
    if expect_last_subject is not None:
        if not expect_last_subject:
            raise InvalidOption("subject cannot be empty")
        if expect_last_sequence_per_subject is None:
            raise InvalidOption("expect_last_subject needs expect_last_sequence_per_subject")
        extra.append((EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT, expect_last_subject))
    if ttl is not None:
        extra.append((TTL, go_duration(ttl, "ttl")))
    if schedule is not None:
        extra.extend(schedule.headers())
    if extra:
        if out is None:
            out = {}
        out.update(extra)
    return out


def headers_of(msg: Msg) -> Headers | None:
    """The headers of a core message as a publishable mapping (every value kept)."""
    block = msg.header_block
    if block is None or not block.headers:
        return None
    return {name: list(values) for name, values in block.headers.items()}


def pub_ack_from_reply(msg: Msg) -> PubAck:
    """Decode a PubAck reply, raising the matching error (server errors by err_code)."""
    if msg.is_no_responders():
        raise NoStreamResponse()
    try:
        resp = decode_pub_ack(msg.data)
    except msgspec.DecodeError:
        raise InvalidJSAck() from None
    if resp.error is not None:
        raise api_exception(resp.error)
    if not resp.stream:
        raise InvalidJSAck()
    return PubAck(
        stream=resp.stream,
        seq=resp.seq,
        domain=resp.domain,
        duplicate=resp.duplicate,
        val=resp.val,
        batch=resp.batch,
        count=resp.count,
    )


class PubAckFuture(asyncio.Future[PubAck]):
    """The future of an async publish; ``await`` it for the [`PubAck`][]. ``msg`` is what was sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop, subject: str, data: bytes, headers: Headers | None):
        super().__init__(loop=loop)
        self.subject = subject
        self.data = data
        self.headers = headers
        self.deadline = 0.0
        self.retries = 0

    @property
    def msg(self) -> PublishedMsg:
        return PublishedMsg(self.subject, self.data, self.headers)


class AsyncPublisher:
    """The async-publish machinery of one JetStream context."""

    def __init__(
        self,
        owner: Any,
        nc: Client,
        *,
        max_pending: int = DEFAULT_MAX_PENDING,
        backpressure: bool = True,
        stall_wait: float | None = None,
        ack_timeout: float = DEFAULT_ACK_TIMEOUT,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        retry_wait: float = DEFAULT_RETRY_WAIT,
        error_handler: AsyncErrorHandler | None = None,
    ) -> None:
        if max_pending <= 0:
            raise ValueError("max_pending must be positive")
        self._owner = owner
        self._nc = nc
        self.max_pending = max_pending
        self.backpressure = backpressure
        self.stall_wait = stall_wait
        self.ack_timeout = ack_timeout
        self.retry_attempts = retry_attempts
        self.retry_wait = retry_wait
        self.error_handler = error_handler
        self._prefix = ""
        self._prefix_len = 0
        self._sub_ready = False
        self._token = 0
        self._pending: dict[str, PubAckFuture] = {}  # insertion order = send order (for the sweep)
        self._room_waiters: deque[asyncio.Future[None]] = deque()
        self._complete_waiters: list[asyncio.Future[None]] = []
        self._sweep_handle: asyncio.TimerHandle | None = None

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def _ensure_subscription(self) -> None:
        if self._sub_ready:
            return
        prefix = self._nc.new_inbox() + "."
        await self._nc.subscribe(prefix + "*", cb=self._on_reply)
        self._prefix, self._prefix_len = prefix, len(prefix)
        self._sub_ready = True

    async def publish(
        self, subject: str, data: bytes, headers: Headers | None, stall_wait: float | None
    ) -> PubAckFuture:
        if len(self._pending) >= self.max_pending:
            await self._wait_for_room(self.stall_wait if stall_wait is None else stall_wait)
        if not self._sub_ready:
            await self._ensure_subscription()
        loop = asyncio.get_running_loop()
        self._token += 1
        token = str(self._token)
        fut = PubAckFuture(loop, subject, data, headers)
        fut.deadline = loop.time() + self.ack_timeout
        self._nc.publish_nowait(subject, data, reply=self._prefix + token, headers=headers)
        self._pending[token] = fut
        if self._sweep_handle is None:
            self._sweep_handle = loop.call_later(SWEEP_INTERVAL, self._sweep)
        await self._nc.wait_writable()
        return fut

    async def _wait_for_room(self, stall_wait: float | None) -> None:
        if not self.backpressure:
            raise TooManyStalledMsgs()
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(stall_wait):
                while len(self._pending) >= self.max_pending:
                    waiter: asyncio.Future[None] = loop.create_future()
                    self._room_waiters.append(waiter)
                    try:
                        await waiter
                    finally:
                        if not waiter.done():
                            waiter.cancel()
        except builtins.TimeoutError:
            raise TooManyStalledMsgs() from None

    # --- acks --------------------------------------------------------------------------------------

    def _on_reply(self, msg: Msg) -> None:
        token = msg.subject[self._prefix_len :]
        fut = self._pending.get(token)
        if fut is None:
            return
        if (
            msg.is_no_responders()
            and (self.retry_attempts < 0 or fut.retries < self.retry_attempts)
        ):
            # No stream (yet): publish again after a pause, like the synchronous publish.
            fut.retries += 1
            loop = asyncio.get_running_loop()
            del self._pending[token]
            fut.deadline = loop.time() + self.retry_wait + self.ack_timeout
            self._pending[token] = fut
            loop.call_later(self.retry_wait, self._republish, token, fut)
            return
        del self._pending[token]
        if not fut.done():
            try:
                fut.set_result(pub_ack_from_reply(msg))
            except NatsError as exc:
                self._fail(fut, exc)
        self._released()

    def _republish(self, token: str, fut: PubAckFuture) -> None:
        if self._pending.get(token) is not fut or fut.done():
            return
        try:
            self._nc.publish_nowait(fut.subject, fut.data, reply=self._prefix + token, headers=fut.headers)
        except NatsError as exc:
            del self._pending[token]
            self._fail(fut, exc)
            self._released()

    def _fail(self, fut: PubAckFuture, exc: Exception) -> None:
        if fut.done():
            return
        fut.set_exception(exc)
        handler = self.error_handler
        if handler is not None:
            fut.exception()  # the handler takes responsibility: no "exception never retrieved" noise
            run_callback(handler, self._owner, fut.msg, exc)

    def _released(self) -> None:
        """After futures left ``_pending``: wake publishers waiting for room and completion waiters."""
        free = self.max_pending - len(self._pending)
        waiters = self._room_waiters
        while waiters and free > 0:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                free -= 1
        if not self._pending and self._complete_waiters:
            for waiter in self._complete_waiters:
                if not waiter.done():
                    waiter.set_result(None)
            self._complete_waiters.clear()

    def _sweep(self) -> None:
        """Fail the acks that are overdue (in send order, so it stops at the first one that is not)."""
        self._sweep_handle = None
        loop = asyncio.get_running_loop()
        now = loop.time()
        closed = self._nc.is_closed
        expired: list[tuple[str, PubAckFuture]] = []
        for token, fut in self._pending.items():
            if not closed and fut.deadline > now:
                break
            expired.append((token, fut))
        for token, fut in expired:
            del self._pending[token]
            self._fail(fut, ConnectionClosedError("connection closed") if closed else AsyncPublishTimeout())
        if expired:
            self._released()
        if self._pending:
            self._sweep_handle = loop.call_later(SWEEP_INTERVAL, self._sweep)

    async def complete(self, timeout: float | None = None) -> None:
        """Until every async publish sent so far got its ack (or failed)."""
        if not self._pending:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._complete_waiters.append(waiter)
        try:
            async with asyncio.timeout(timeout):
                await asyncio.shield(waiter)
        except builtins.TimeoutError:
            raise TimeoutError(
                f"{len(self._pending)} async publishes still pending after {timeout}s"
            ) from None

    def fail_all(self, exc: Exception) -> None:
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            self._fail(fut, exc)
        self._released()
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
