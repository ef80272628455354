"""Pull requests and what answers them (ADR-37, nats.go ``jetstream/pull.go``).

A pull request is a publish to ``$JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer>`` whose reply subject
(an inbox we subscribe to) receives the messages and, with an empty payload, statuses:
``100`` heartbeat, ``404``/``408`` the request ended (``Nats-Pending-Messages``/``-Bytes`` tell what it
did not deliver), ``409`` various (``Consumer Deleted`` and ``Consumer is push based`` are terminal),
``400`` bad request, ``503`` nobody answered (the consumer does not exist), ⟨2.11+⟩ ``423`` the pull's
pin id is not the priority group's pinned client.

Priority groups (ADR-42): a pull names its ``group`` (and ``min_pending`` / ``min_ack_pending`` for
overflow, ``priority`` for prioritized); on a pinned-client consumer the messages carry
``Nats-Pin-Id``, which the consumer handle keeps (`PinState`) and sends with its next pulls.
A 423 drops the kept id: the next pull competes for the pin again (nats.go does the same).

- [`MessageBatch`][] (``fetch``): one request, one inbox; ends on the batch count/bytes, on the
  first end status, on missed heartbeats or on a client-side guard timer.
- `PullSession` (``consume``/``messages``): one inbox for the session's lifetime; keeps up to
  ``max_messages``/``max_bytes`` requested ("pending") and re-pulls when what is pending drops below
  the thresholds. A message stops being pending once handed to the application.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.codec import encode
from pyjetstream.api.durations import to_ns
from pyjetstream.api.headers import PENDING_BYTES, PENDING_MESSAGES, PIN_ID
from pyjetstream.api.models_consumer import PullRequest
from pyjetstream.api.pull_status import PullStatus, classify_pull_status
from pyjetstream.client.errors import NatsError
from pyjetstream.client.jetstream.errors import (
    BadRequest,
    ConsumerDeleted,
    ConsumerIsPushBased,
    ConsumerLeadershipChanged,
    ConsumerNotFound,
    InvalidOption,
    MaxBytesExceeded,
    NoHeartbeat,
    PinIdMismatch,
    PullStatusError,
)
from pyjetstream.client.jetstream.msg import JetStreamMsg

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client
    from pyjetstream.client.msg import Msg
    from pyjetstream.client.subscription import Subscription

DEFAULT_FETCH_MAX_WAIT = 30.0
FETCH_HEARTBEAT = 5.0  # fetches of at least FETCH_HEARTBEAT_MIN_WAIT get heartbeats (nats.go)
FETCH_HEARTBEAT_MIN_WAIT = 10.0
FETCH_GUARD = 1.0  # client-side wait beyond the server's expiry before giving up on a fetch
DEFAULT_NO_WAIT_GUARD = 5.0
DEFAULT_MAX_MESSAGES = 500
DEFAULT_EXPIRES = 30.0
MAX_BYTES_BATCH = 1_000_000  # batch size when only max_bytes limits a consume (nats.go)
ORDERED_HEARTBEAT = 5.0
MAX_HEARTBEAT = 30.0
YIELD_EVERY = 64  # messages handed out back to back before giving the loop a turn
TICK = 1.0  # how often a session checks heartbeats and reconnects (at most)


class StatusKind(enum.Enum):
    HEARTBEAT = "heartbeat"  # 100: nothing to do but note the activity
    END = "end"  # the request ended without error (404, 408, 409 max bytes / batch completed)
    ERROR = "error"  # something to report; the session goes on
    TERMINAL = "terminal"  # the consumer cannot serve pulls any more
    NO_RESPONDERS = "no_responders"  # 503: nobody listens on MSG.NEXT (consumer gone)


def classify_status(status: int, description: str) -> tuple[StatusKind, Exception | None]:
    """What a pull status means to the client (the kind from `api.pull_status.classify_pull_status`)."""
    kind = classify_pull_status(status, description)
    if kind is PullStatus.HEARTBEAT:
        return StatusKind.HEARTBEAT, None
    if kind is PullStatus.END or kind is PullStatus.BATCH_COMPLETED:
        return StatusKind.END, None
    if kind is PullStatus.MAX_BYTES:
        return StatusKind.END, MaxBytesExceeded(description)
    if kind is PullStatus.CONSUMER_DELETED:
        return StatusKind.TERMINAL, ConsumerDeleted(description)
    if kind is PullStatus.PUSH_BASED:
        return StatusKind.TERMINAL, ConsumerIsPushBased(description)
    if kind is PullStatus.LEADERSHIP_CHANGE:
        return StatusKind.ERROR, ConsumerLeadershipChanged(description)
    if kind is PullStatus.CONFLICT:
        return StatusKind.ERROR, PullStatusError(description, code=409)
    if kind is PullStatus.BAD_REQUEST:
        return StatusKind.TERMINAL, BadRequest(description or "bad request", code=400)
    if kind is PullStatus.NO_RESPONDERS:
        return StatusKind.NO_RESPONDERS, ConsumerNotFound("no responders: consumer not found", code=503)
    if kind is PullStatus.PIN_ID_MISMATCH:
        return StatusKind.ERROR, PinIdMismatch(description or None)
    return StatusKind.ERROR, PullStatusError(description or f"status {status}", code=status)


def pending_from_status(raw: Msg) -> tuple[int, int]:
    """``Nats-Pending-Messages`` / ``Nats-Pending-Bytes`` of an end status (0 when absent)."""
    block = raw.header_block
    if block is None:
        return 0, 0
    try:
        msgs = int(block.get(PENDING_MESSAGES) or 0)
        nbytes = int(block.get(PENDING_BYTES) or 0)
    except ValueError:
        return 0, 0
    return msgs, nbytes


def status_of(raw: Msg) -> int:
    """The status of a status message, 0 for a user message (which always has a payload or no status)."""
    if raw.raw_headers is None or raw.data:
        return 0
    return raw.status


def unsubscribe_soon(sub: Subscription | None) -> None:
    """Unsubscribe from synchronous code (a message callback, ``stop()``), right away.

    The UNSUB must be queued before anything the caller publishes next: a publish that overtook it
    would be delivered to a pull request we no longer listen to (and wait for its ack timeout).
    """
    if sub is None or sub.is_closed:
        return
    with contextlib.suppress(NatsError):
        sub.unsubscribe_nowait()


def send_now(nc: Client) -> None:
    """Hand what the client buffered to the socket now, not at the end of this loop turn.

    A re-pull is issued while a large read is being processed; waiting for the end of that read
    (hundreds of messages) before sending it empties the pre-buffer and stalls the stream (measured:
    ~45k -> ~75k msgs/s consumed with acks). The core client only flushes per loop turn, so this uses
    ``send_buffered`` for that.
    """
    nc.send_buffered()


@dataclass(frozen=True, slots=True)
class PriorityOptions:
    """A pull's priority-group fields (ADR-42; nats.go ``PullPriorityGroup`` / ``PullMinPending`` /
    ``PullMinAckPending`` / ``PullPrioritized``)."""

    group: str
    min_pending: int = 0
    min_ack_pending: int = 0
    priority: int = 0

    @classmethod
    def build(
        cls,
        group: str | None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> PriorityOptions | None:
        if group is None:
            if min_pending is not None or min_ack_pending is not None or priority is not None:
                raise InvalidOption("min_pending, min_ack_pending and priority need a priority group")
            return None
        if not group:
            raise InvalidOption("priority group cannot be empty")
        if (min_pending or 0) < 0 or (min_ack_pending or 0) < 0:
            raise InvalidOption("min_pending and min_ack_pending cannot be negative")
        if priority is not None and not 0 <= priority <= 9:
            raise InvalidOption("priority must be between 0 and 9")
        return cls(group, min_pending or 0, min_ack_pending or 0, priority or 0)

    @property
    def features(self) -> tuple[Feature, ...]:
        return (Feature.PRIORITY_GROUPS, Feature.PRIORITIZED) if self.priority else (Feature.PRIORITY_GROUPS,)


class PinState:
    """The pin id a consumer handle holds for its pinned priority group (empty: not pinned)."""

    __slots__ = ("id",)

    def __init__(self) -> None:
        self.id = ""

    def note(self, raw: Msg) -> None:
        """Keep the ``Nats-Pin-Id`` a delivered message carries."""
        block = raw.header_block
        if block is not None:
            pin = block.get(PIN_ID)
            if pin:
                self.id = pin


def _encode_request(
    batch: int,
    *,
    expires: float = 0.0,
    max_bytes: int = 0,
    no_wait: bool = False,
    heartbeat: float = 0.0,
    priority: PriorityOptions | None = None,
    pin: PinState | None = None,
) -> bytes:
    request = PullRequest(
        batch=batch,
        expires=to_ns(expires) if expires else 0,
        max_bytes=max_bytes,
        no_wait=no_wait,
        idle_heartbeat=to_ns(heartbeat) if heartbeat else 0,
    )
    if priority is not None:
        request.group = priority.group
        request.min_pending = priority.min_pending
        request.min_ack_pending = priority.min_ack_pending
        request.priority = priority.priority
        if pin is not None:
            request.id = pin.id
    return encode(request)


# --- fetch ------------------------------------------------------------------------------------------


class MessageBatch:
    """The result of one ``fetch``: ``async for msg in batch``; ``batch.error`` once it is done.

    Messages are yielded as they arrive; iteration ends when the batch is complete, the request
    expired (no error), or failed (``error`` set, e.g. [`ConsumerDeleted`][], [`NoHeartbeat`][]).
    """

    def __init__(
        self,
        nc: Client,
        subject: str,
        *,
        batch: int,
        max_bytes: int = 0,
        expires: float = 0.0,
        heartbeat: float = 0.0,
        no_wait: bool = False,
        guard: float = DEFAULT_NO_WAIT_GUARD,
        priority: PriorityOptions | None = None,
        pin: PinState | None = None,
    ) -> None:
        self._nc = nc
        self._priority = priority
        self._pin = pin if priority is not None else None
        self._subject = subject
        self._batch = batch
        self._max_bytes = max_bytes
        self._expires = expires
        self._heartbeat = heartbeat
        self._no_wait = no_wait
        self._guard = guard
        self._buf: deque[JetStreamMsg] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._sub: Subscription | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._hb_timer: asyncio.TimerHandle | None = None
        self._last_activity = 0.0
        self._activity = 0
        self._seen_activity = 0
        self._received = 0
        self._received_bytes = 0
        self._done = False
        self._handed = 0
        self.error: Exception | None = None

    async def _start(self) -> MessageBatch:
        loop = asyncio.get_running_loop()
        nc = self._nc
        inbox = nc.new_inbox()
        self._sub = await nc.subscribe(inbox, cb=self._on_msg)
        request = _encode_request(
            self._batch,
            expires=0.0 if self._no_wait else self._expires,
            max_bytes=self._max_bytes,
            no_wait=self._no_wait,
            heartbeat=self._heartbeat,
            priority=self._priority,
            pin=self._pin,
        )
        nc.publish_nowait(self._subject, request, reply=inbox)
        self._last_activity = loop.time()
        wait = self._guard if self._no_wait else self._expires + FETCH_GUARD
        self._timer = loop.call_later(wait, self._finish, None)
        if self._heartbeat:
            self._hb_timer = loop.call_later(self._heartbeat / 2, self._check_heartbeat)
        return self

    @property
    def done(self) -> bool:
        """No more messages will arrive (some may still be waiting to be iterated)."""
        return self._done

    def _on_msg(self, raw: Msg) -> None:
        if self._done:
            return
        self._activity += 1
        status = status_of(raw)
        if status:
            kind, exc = classify_status(status, raw.description)
            if kind is StatusKind.HEARTBEAT:
                return
            if isinstance(exc, PinIdMismatch) and self._pin is not None:
                self._pin.id = ""
            self._finish(None if kind is StatusKind.END else exc)
            return
        if self._pin is not None:
            self._pin.note(raw)
        msg = JetStreamMsg(raw, self._nc)
        self._buf.append(msg)
        self._received += 1
        self._wake()
        if self._max_bytes:
            self._received_bytes += msg.size
        if self._received >= self._batch or (self._max_bytes and self._received_bytes >= self._max_bytes):
            self._finish(None)

    def _check_heartbeat(self) -> None:
        self._hb_timer = None
        if self._done:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        if self._activity != self._seen_activity:
            self._seen_activity = self._activity
            self._last_activity = now
        if now - self._last_activity > 2 * self._heartbeat:
            self._finish(NoHeartbeat())
        else:
            self._hb_timer = loop.call_later(self._heartbeat / 2, self._check_heartbeat)

    def _finish(self, error: Exception | None) -> None:
        if self._done:
            return
        self._done = True
        self.error = error
        for timer in (self._timer, self._hb_timer):
            if timer is not None:
                timer.cancel()
        unsubscribe_soon(self._sub)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def __aiter__(self) -> MessageBatch:
        return self

    async def __anext__(self) -> JetStreamMsg:
        while not self._buf:
            if self._done:
                raise StopAsyncIteration
            waiter = self._waiter
            if waiter is None or waiter.done():
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            await waiter
        self._handed += 1
        if self._handed % YIELD_EVERY == 0:
            await asyncio.sleep(0)  # let acks written meanwhile go out (see consume.YIELD_EVERY)
        return self._buf.popleft()

    def messages(self) -> MessageBatch:
        """nats.go's ``Messages()``: the batch itself is the async iterator."""
        return self

    async def collect(self) -> list[JetStreamMsg]:
        """Every message of the batch, as a list (check ``error`` afterwards)."""
        return [msg async for msg in self]


# --- continuous pulling -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PullOptions:
    """Options of ``consume``/``messages`` after defaulting (seconds for times)."""

    max_messages: int
    max_bytes: int
    expires: float
    heartbeat: float
    threshold_messages: int
    threshold_bytes: int

    @classmethod
    def build(
        cls,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        expiry: float = DEFAULT_EXPIRES,
        threshold_messages: int | None = None,
        threshold_bytes: int | None = None,
        heartbeat: float | None = None,
        ordered: bool = False,
    ) -> PullOptions:
        """Defaults as nats.go: 500 messages; with only ``max_bytes`` a 1,000,000 batch limited by
        bytes; thresholds half the limits; heartbeat half the expiry capped at 30 s (ordered: 5 s)."""
        if max_messages is not None and max_messages <= 0:
            raise InvalidOption("max_messages must be positive")
        if max_bytes is not None and max_bytes <= 0:
            raise InvalidOption("max_bytes must be positive")
        if expiry <= 0:
            raise InvalidOption("expiry must be positive")
        if max_messages is None:
            max_messages = MAX_BYTES_BATCH if max_bytes else DEFAULT_MAX_MESSAGES
        max_bytes = max_bytes or 0
        if heartbeat is None:
            if ordered:
                heartbeat = ORDERED_HEARTBEAT if expiry >= 2 * ORDERED_HEARTBEAT else expiry / 2
            else:
                heartbeat = min(expiry / 2, MAX_HEARTBEAT)
        if heartbeat < 0 or heartbeat > expiry / 2:
            raise InvalidOption("heartbeat must be at most half of the expiry")
        if threshold_messages is None:
            threshold_messages = math.ceil(max_messages / 2)
        if threshold_bytes is None:
            threshold_bytes = math.ceil(max_bytes / 2)
        if threshold_messages > max_messages or (max_bytes and threshold_bytes > max_bytes):
            raise InvalidOption("thresholds cannot exceed the limits")
        return cls(max_messages, max_bytes, expiry, heartbeat, threshold_messages, threshold_bytes)


class PullSession:
    """Continuous pulling for one consumer over one inbox (the engine of ``consume``/``messages``).

    ``on_msg(msg)`` receives each user message; the owner calls `msg_done` once the application
    has it (that is when it stops being "pending" and a re-pull may follow). ``on_error(exc, terminal)``
    receives status errors and missed heartbeats; after a terminal error the session is closed.
    """

    def __init__(
        self,
        nc: Client,
        subject: str,
        opts: PullOptions,
        on_msg: Callable[[JetStreamMsg], None],
        on_error: Callable[[Exception, bool], None],
        priority: PriorityOptions | None = None,
        pin: PinState | None = None,
    ) -> None:
        self._nc = nc
        self._subject = subject
        self.opts = opts
        self._priority = priority
        self._pin = pin if priority is not None else None
        self._on_msg = on_msg
        self._on_error = on_error
        self._inbox = ""
        self._sub: Subscription | None = None
        self._tick_handle: asyncio.TimerHandle | None = None
        self._last_activity = 0.0
        self._activity = 0
        self._seen_activity = 0
        self._reconnects = 0
        self.pending_msgs = 0
        self.pending_bytes = 0
        self.delivered = 0
        self.closed = False
        self.draining = False

    async def start(self) -> None:
        nc = self._nc
        self._inbox = nc.new_inbox()
        self._sub = await nc.subscribe(self._inbox, cb=self._on_raw)
        self._reconnects = nc.reconnects
        loop = asyncio.get_running_loop()
        self._last_activity = loop.time()
        self._pull(self.opts.max_messages, self.opts.max_bytes)
        self._schedule_tick()

    # --- pulling -----------------------------------------------------------------------------------

    def _pull(self, batch: int, max_bytes: int) -> None:
        opts = self.opts
        request = _encode_request(
            batch,
            expires=opts.expires,
            max_bytes=max_bytes,
            heartbeat=opts.heartbeat,
            priority=self._priority,
            pin=self._pin,
        )
        try:
            self._nc.publish_nowait(self._subject, request, reply=self._inbox)
        except NatsError as exc:
            self._on_error(exc, False)
            return
        send_now(self._nc)
        self.pending_msgs += batch
        self.pending_bytes += max_bytes

    def check_pending(self) -> None:
        """Re-pull when what is pending fell below a threshold (nats.go ``checkPending``)."""
        if self.closed or self.draining:
            return
        opts = self.opts
        if self.pending_msgs >= opts.threshold_messages and (
            not opts.max_bytes or self.pending_bytes >= opts.threshold_bytes
        ):
            return
        batch = opts.max_messages - self.pending_msgs
        max_bytes = opts.max_bytes - self.pending_bytes if opts.max_bytes else 0
        if batch <= 0 or (opts.max_bytes and max_bytes <= 0):
            return
        self._pull(batch, max_bytes)

    def msg_done(self, msg: JetStreamMsg) -> None:
        """The application has ``msg``: it is no longer pending."""
        self.pending_msgs -= 1
        self.delivered += 1
        if self.opts.max_bytes:
            self.pending_bytes -= msg.size
        if self.pending_msgs < self.opts.threshold_messages or self.opts.max_bytes:
            self.check_pending()

    def reset_pending(self) -> None:
        self.pending_msgs = 0
        self.pending_bytes = 0

    # --- receiving ---------------------------------------------------------------------------------

    def _on_raw(self, raw: Msg) -> None:
        if self.closed:
            return
        self._activity += 1  # cheaper than reading the clock per message; the tick reads it
        if raw.raw_headers is not None and not raw.data:
            status = raw.status
            if status:
                self._on_status(raw, status)
                return
        if self._pin is not None:
            self._pin.note(raw)
        self._on_msg(JetStreamMsg(raw, self._nc))

    def _on_status(self, raw: Msg, status: int) -> None:
        kind, exc = classify_status(status, raw.description)
        if kind is StatusKind.HEARTBEAT:
            return
        left_msgs, left_bytes = pending_from_status(raw)
        if left_msgs or left_bytes:
            self.pending_msgs = max(0, self.pending_msgs - left_msgs)
            if self.opts.max_bytes:
                self.pending_bytes = max(0, self.pending_bytes - left_bytes)
        if kind is StatusKind.END:
            self.check_pending()
            return
        assert exc is not None
        if kind is StatusKind.TERMINAL:
            self.stop()
            self._on_error(exc, True)
            return
        if kind is StatusKind.NO_RESPONDERS or isinstance(exc, ConsumerLeadershipChanged | PinIdMismatch):
            # Nothing of what we asked for will come: the heartbeat check re-pulls (no busy loop on 503).
            self.reset_pending()
        if isinstance(exc, PinIdMismatch) and self._pin is not None:
            self._pin.id = ""  # compete for the pin again with the next pull
        self._on_error(exc, False)
        if isinstance(exc, ConsumerLeadershipChanged | PinIdMismatch):
            self.check_pending()

    # --- heartbeats and reconnects --------------------------------------------------------------------

    def _schedule_tick(self) -> None:
        interval = min(TICK, self.opts.heartbeat / 2) if self.opts.heartbeat else TICK
        self._tick_handle = asyncio.get_running_loop().call_later(interval, self._tick)

    def _tick(self) -> None:
        self._tick_handle = None
        if self.closed:
            return
        loop = asyncio.get_running_loop()
        now = loop.time()
        hb = self.opts.heartbeat
        if self._activity != self._seen_activity:
            self._seen_activity = self._activity
            self._last_activity = now
        if self._nc.reconnects != self._reconnects:
            # Pull requests do not survive a reconnect reliably: start over (nats.go does the same).
            self._reconnects = self._nc.reconnects
            self._last_activity = now
            self.reset_pending()
            self.check_pending()
        elif hb and now - self._last_activity > 2 * hb:
            self._last_activity = now
            self.reset_pending()
            self._on_error(NoHeartbeat(), False)
            self.check_pending()
        if not self.closed:
            self._schedule_tick()

    # --- ending ----------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop now: unsubscribe; nothing more is delivered."""
        if self.closed:
            return
        self.closed = True
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None
        unsubscribe_soon(self._sub)

    async def drain(self) -> None:
        """Stop pulling, let messages already sent to us arrive, then stop."""
        if self.closed:
            return
        self.draining = True
        sub = self._sub
        if sub is not None and not sub.is_closed:
            with contextlib.suppress(NatsError):
                await sub.drain()
        self.stop()
