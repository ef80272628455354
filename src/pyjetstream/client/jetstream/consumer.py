"""``PullConsumer``: a handle on one consumer of a stream, to receive messages and read its info.

Receiving follows nats.go's simplified API (ADR-37):

- ``fetch(n)`` / ``fetch_bytes(b)`` / ``fetch_no_wait(n)``: one pull request, a [`MessageBatch`][];
- ``next()``: a single message;
- ``consume(handler)``: continuous, pre-buffered pulling into a handler ([`ConsumeContext`][]);
- ``messages()``: the same as an async iterator ([`MessagesContext`][]).

Each of them takes the priority-group options of a pull (ADR-42, 2.11+): ``group``, and
``min_pending`` / ``min_ack_pending`` (overflow) or ``priority`` (prioritized, 2.12+). On a
pinned-client consumer the handle keeps the pin id it was given (``pin_id``) for its next pulls.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.durations import Duration, seconds, seconds_or_none
from pyjetstream.client.errors import TimeoutError
from pyjetstream.client.jetstream.consume import (
    ConsumeContext,
    ConsumeErrorHandler,
    MessageHandler,
    MessagesContext,
)
from pyjetstream.client.jetstream.errors import HandlerRequired, InvalidOption
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.pull import (
    DEFAULT_EXPIRES,
    DEFAULT_FETCH_MAX_WAIT,
    DEFAULT_NO_WAIT_GUARD,
    FETCH_HEARTBEAT,
    FETCH_HEARTBEAT_MIN_WAIT,
    MAX_BYTES_BATCH,
    MessageBatch,
    PinState,
    PriorityOptions,
    PullOptions,
    PullSession,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.models import ConsumerInfo


class ConsumerHandle:
    """What every consumer handle answers, pull or push (nats.go's ``Consumer`` / ``PushConsumer``
    share ``Info`` and ``CachedInfo``): its names and its info."""

    def __init__(self, js: JetStream, stream: str, info: ConsumerInfo) -> None:
        self._js = js
        self._stream = stream
        self._name = info.name
        self._info = info

    @property
    def name(self) -> str:
        return self._name

    @property
    def stream_name(self) -> str:
        return self._stream

    async def info(self) -> ConsumerInfo:
        """Fresh info from the server (also refreshes ``cached_info``)."""
        self._info = await self._js._consumer_info(self._stream, self._name)
        return self._info

    def cached_info(self) -> ConsumerInfo:
        """The info from the last server call, without a round trip."""
        return self._info


class PullConsumer(ConsumerHandle):
    """A pull consumer (nats.go ``jetstream.Consumer``); get one from ``JetStream``/``Stream`` methods."""

    def __init__(self, js: JetStream, stream: str, info: ConsumerInfo) -> None:
        super().__init__(js, stream, info)
        self._next_subject = js.api.consumer_msg_next(stream, info.name)
        self._pin = PinState()

    @property
    def pin_id(self) -> str:
        """The pin id of this handle's pinned priority group ("" when not pinned)."""
        return self._pin.id

    # --- one-shot pulls --------------------------------------------------------------------------

    async def fetch(
        self,
        batch: int,
        *,
        max_wait: Duration = DEFAULT_FETCH_MAX_WAIT,
        heartbeat: Duration | None = None,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> MessageBatch:
        """Up to ``batch`` messages in one request, waiting at most ``max_wait`` seconds for them.

        Heartbeats (5 s) are requested for waits of 10 s and more unless ``heartbeat`` says otherwise
        (0 disables them); two missed heartbeats end the batch with [`NoHeartbeat`][pyjetstream.client.jetstream.errors.NoHeartbeat].
        Waits are seconds (``int`` or ``float``) or a ``timedelta``, as every duration of the API.
        """
        if batch <= 0:
            raise InvalidOption("batch must be positive")
        prio = await self._priority(group, min_pending, min_ack_pending, priority)
        return await self._fetch(batch, 0, seconds(max_wait), seconds_or_none(heartbeat), prio)

    async def fetch_bytes(
        self,
        max_bytes: int,
        *,
        max_wait: Duration = DEFAULT_FETCH_MAX_WAIT,
        heartbeat: Duration | None = None,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> MessageBatch:
        """Messages up to ``max_bytes`` in total (as the server counts them) in one request."""
        if max_bytes <= 0:
            raise InvalidOption("max_bytes must be positive")
        prio = await self._priority(group, min_pending, min_ack_pending, priority)
        return await self._fetch(MAX_BYTES_BATCH, max_bytes, seconds(max_wait), seconds_or_none(heartbeat), prio)

    async def fetch_no_wait(
        self,
        batch: int,
        *,
        max_wait: Duration = DEFAULT_NO_WAIT_GUARD,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> MessageBatch:
        """Up to ``batch`` of the messages available right now (``no_wait``); ``max_wait`` only guards
        against a server that never answers."""
        if batch <= 0:
            raise InvalidOption("batch must be positive")
        prio = await self._priority(group, min_pending, min_ack_pending, priority)
        return await MessageBatch(
            self._js.nc,
            self._next_subject,
            batch=batch,
            no_wait=True,
            guard=seconds(max_wait),
            priority=prio,
            pin=self._pin,
        )._start()

    async def _priority(
        self,
        group: str | None,
        min_pending: int | None,
        min_ack_pending: int | None,
        priority: int | None,
    ) -> PriorityOptions | None:
        """The pull's priority-group options, checked against the server's API level."""
        prio = PriorityOptions.build(group, min_pending, min_ack_pending, priority)
        if prio is not None:
            for feature in prio.features:
                await self._js.require(feature)
        return prio

    async def _fetch(
        self,
        batch: int,
        max_bytes: int,
        max_wait: float,
        heartbeat: float | None,
        prio: PriorityOptions | None,
    ) -> MessageBatch:
        if max_wait <= 0:
            raise InvalidOption("max_wait must be positive")
        if heartbeat is None:
            heartbeat = FETCH_HEARTBEAT if max_wait >= FETCH_HEARTBEAT_MIN_WAIT else 0.0
        if heartbeat < 0 or max_wait < 2 * heartbeat:
            raise InvalidOption("max_wait should be at least 2 times the heartbeat")
        return await MessageBatch(
            self._js.nc,
            self._next_subject,
            batch=batch,
            max_bytes=max_bytes,
            expires=max_wait,
            heartbeat=heartbeat,
            priority=prio,
            pin=self._pin,
        )._start()

    async def next(
        self,
        *,
        max_wait: Duration = DEFAULT_FETCH_MAX_WAIT,
        heartbeat: Duration | None = None,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> JetStreamMsg:
        """The next message; ``TimeoutError`` if none arrives within ``max_wait`` seconds."""
        batch = await self.fetch(
            1,
            max_wait=max_wait,
            heartbeat=heartbeat,
            group=group,
            min_pending=min_pending,
            min_ack_pending=min_ack_pending,
            priority=priority,
        )
        async for msg in batch:
            return msg
        if batch.error is not None:
            raise batch.error
        raise TimeoutError(f"no message within {seconds(max_wait)}s")

    # --- continuous pulling --------------------------------------------------------------------------

    def _session_factory(
        self, opts: PullOptions, prio: PriorityOptions | None = None
    ) -> Callable[[Callable[[JetStreamMsg], None], Callable[[Exception, bool], None]], PullSession]:
        def make(
            on_msg: Callable[[JetStreamMsg], None], on_error: Callable[[Exception, bool], None]
        ) -> PullSession:
            return PullSession(self._js.nc, self._next_subject, opts, on_msg, on_error, prio, self._pin)

        return make

    async def consume(
        self,
        handler: MessageHandler,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        expiry: Duration = DEFAULT_EXPIRES,
        threshold_messages: int | None = None,
        threshold_bytes: int | None = None,
        heartbeat: Duration | None = None,
        error_handler: ConsumeErrorHandler | None = None,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> ConsumeContext:
        """Receive messages continuously into ``handler`` (a plain or ``async`` function).

        Keeps up to ``max_messages`` (default 500) or ``max_bytes`` requested, re-pulling when less than
        ``threshold_messages``/``threshold_bytes`` (default half) is pending; each pull request expires
        after ``expiry`` seconds and asks for heartbeats every ``heartbeat`` seconds (default half the
        expiry, at most 30 s). ``error_handler(consume_context, exc)`` hears about missed heartbeats
        and status errors; a deleted consumer stops the context. ``group`` … ``priority``: the
        priority-group options of every pull.
        """
        if handler is None:
            raise HandlerRequired()
        prio = await self._priority(group, min_pending, min_ack_pending, priority)
        opts = PullOptions.build(
            max_messages=max_messages,
            max_bytes=max_bytes,
            expiry=seconds(expiry),
            threshold_messages=threshold_messages,
            threshold_bytes=threshold_bytes,
            heartbeat=seconds_or_none(heartbeat),
        )
        return await ConsumeContext(self._session_factory(opts, prio), handler, error_handler)._start()

    async def messages(
        self,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        expiry: Duration = DEFAULT_EXPIRES,
        threshold_messages: int | None = None,
        threshold_bytes: int | None = None,
        heartbeat: Duration | None = None,
        err_on_missing_heartbeat: bool = True,
        group: str | None = None,
        min_pending: int | None = None,
        min_ack_pending: int | None = None,
        priority: int | None = None,
    ) -> MessagesContext:
        """Continuous, pre-buffered pulling as an iterator: ``await it.next()`` / ``async for msg in it``.

        Same options as [`consume`][]; ``max_messages=1`` fetches one by one (work queues).
        """
        prio = await self._priority(group, min_pending, min_ack_pending, priority)
        opts = PullOptions.build(
            max_messages=max_messages,
            max_bytes=max_bytes,
            expiry=seconds(expiry),
            threshold_messages=threshold_messages,
            threshold_bytes=threshold_bytes,
            heartbeat=seconds_or_none(heartbeat),
        )
        return await MessagesContext(self._session_factory(opts, prio), err_on_missing_heartbeat)._start()

    def __repr__(self) -> str:
        return f"<PullConsumer stream={self._stream!r} name={self._name!r}>"
