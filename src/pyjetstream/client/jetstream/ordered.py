"""Ordered consumers (ADR-17, pull flavour of nats.go's ``jetstream.OrderedConsumer``).

An ordered consumer delivers a stream's messages strictly in order, without acks, and survives the
loss of its server-side consumer. Underneath is an ephemeral pull consumer named ``<nuid>_<serial>``
(``ack_policy: none``, memory storage, one replica, ``inactive_threshold`` 5 min). The client tracks
the last consumer sequence it delivered; a gap, missed heartbeats, or the consumer being deleted
make it delete that consumer and create ``<nuid>_<serial+1>`` starting at the stream sequence after
the last one delivered (``by_start_sequence``), then carry on — the application sees no gap and no
duplicate.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from pyjetstream.api.durations import Duration, Seconds, seconds, seconds_or_none, to_ns
from pyjetstream.api.enums import AckPolicy, ConsumerAction, DeliverPolicy, ReplayPolicy
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.client.errors import ConnectionClosedError, NatsError, TimeoutError
from pyjetstream.client.inbox import next_nuid
from pyjetstream.client.jetstream.consume import (
    ConsumeContext,
    ConsumeErrorHandler,
    MessageHandler,
    MessagesContext,
    is_async_callable,
    run_callback,
)
from pyjetstream.client.jetstream.errors import (
    ConsumerDeleted,
    ConsumerNotFound,
    MsgIteratorClosed,
    NoHeartbeat,
    OrderConsumerUsedAsConsume,
    OrderConsumerUsedAsFetch,
    OrderedConsumerConcurrentRequests,
    OrderedConsumerNotCreated,
    OrderedConsumerReset,
)
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.pull import (
    DEFAULT_EXPIRES,
    DEFAULT_FETCH_MAX_WAIT,
    DEFAULT_NO_WAIT_GUARD,
    MessageBatch,
)

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.consumer import PullConsumer
    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.models import ConsumerInfo

logger = logging.getLogger("pyjetstream.client.jetstream")

ORDERED_INACTIVE_THRESHOLD = 300.0  # seconds (nats.go: 5 min)
RESET_BACKOFF_START = 0.1
RESET_BACKOFF_MAX = 5.0
CATCH_UP_CHECK = 0.05  # idle time after which a watcher asks the server whether it has caught up
_RESET_ERRORS = (NoHeartbeat, ConsumerDeleted, ConsumerNotFound)


@dataclass
class OrderedConsumerConfig:
    """Configuration of an ordered consumer (nats.go ``OrderedConsumerConfig``).

    ``inactive_threshold``: seconds (an ``int``, a ``float`` or a ``timedelta``; read back as
    seconds). ``max_reset_attempts`` 0 means unlimited attempts to recreate the consumer after a
    failure.
    """

    filter_subjects: list[str] = field(default_factory=list)
    deliver_policy: DeliverPolicy = DeliverPolicy.ALL
    opt_start_seq: int = 0
    opt_start_time: NanoTime | datetime | None = None
    replay_policy: ReplayPolicy = ReplayPolicy.INSTANT
    inactive_threshold: Duration = ORDERED_INACTIVE_THRESHOLD
    headers_only: bool = False
    max_reset_attempts: int = 0
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.inactive_threshold = Seconds(self.inactive_threshold)


class OrderedConsumer:
    """Same receiving methods as [`PullConsumer`][]; get one with ``js.ordered_consumer(stream)``.

    Use it either for fetches or for one ``consume``/``messages`` at a time, not both.
    """

    def __init__(self, js: JetStream, stream: str, config: OrderedConsumerConfig) -> None:
        self._js = js
        self._stream = stream
        self._cfg = config
        self._prefix = next_nuid()
        self._serial = 0
        self._current: PullConsumer | None = None
        self.stream_seq = 0  # stream sequence of the last message delivered
        self.consumer_seq = 0  # consumer sequence of the last message delivered (current consumer)
        self._mode = ""
        self._fetch: _OrderedBatch | None = None
        self._active: OrderedConsumeContext | OrderedMessagesContext | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def stream_name(self) -> str:
        return self._stream

    @property
    def name(self) -> str:
        """The current server-side consumer's name (``""`` before the first use)."""
        return self._current.name if self._current is not None else ""

    @property
    def serial(self) -> int:
        return self._serial

    async def info(self) -> ConsumerInfo:
        """The underlying consumer's info, as the server has it now."""
        if self._current is None:
            raise OrderedConsumerNotCreated()
        return await self._current.info()

    def cached_info(self) -> ConsumerInfo:
        """The underlying consumer's info as last received (no request)."""
        if self._current is None:
            raise OrderedConsumerNotCreated()
        return self._current.cached_info()

    # --- the server-side consumer ---------------------------------------------------------------------

    def _consumer_config(self) -> ConsumerConfig:
        cfg = self._cfg
        start_time = cfg.opt_start_time
        if isinstance(start_time, datetime):
            start_time = NanoTime.from_datetime(start_time)
        config = ConsumerConfig(
            name=f"{self._prefix}_{self._serial}",
            ack_policy=AckPolicy.NONE,
            inactive_threshold=to_ns(cfg.inactive_threshold or ORDERED_INACTIVE_THRESHOLD),
            num_replicas=1,
            mem_storage=True,
            headers_only=cfg.headers_only,
            metadata=dict(cfg.metadata),
        )
        if len(cfg.filter_subjects) == 1:
            config.filter_subject = cfg.filter_subjects[0]
        else:
            config.filter_subjects = list(cfg.filter_subjects)
        if self.stream_seq:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = self.stream_seq + 1
        else:
            config.deliver_policy = cfg.deliver_policy
            config.opt_start_seq = cfg.opt_start_seq
            config.opt_start_time = start_time
            config.replay_policy = cfg.replay_policy
        return config

    async def _reset(self, *, initial: bool = False) -> PullConsumer:
        """Replace the server-side consumer, resuming after the last delivered stream sequence."""
        old = self._current
        if old is not None:
            self._delete_soon(old.name)
        attempt = 0
        while True:
            self._serial += 1
            try:
                self._current = await self._js._upsert_consumer(
                    self._stream, self._consumer_config(), ConsumerAction.CREATE_OR_UPDATE
                )
            except (NatsError, OSError) as exc:
                if initial or isinstance(exc, ConnectionClosedError):
                    raise
                attempt += 1
                limit = self._cfg.max_reset_attempts
                if limit > 0 and attempt >= limit:
                    raise OrderedConsumerReset(
                        f"recreating ordered consumer failed {attempt} times: {exc}"
                    ) from exc
                await asyncio.sleep(min(RESET_BACKOFF_START * 2 ** (attempt - 1), RESET_BACKOFF_MAX))
                continue
            self.consumer_seq = 0
            return self._current

    def _delete_soon(self, name: str) -> None:
        async def delete() -> None:
            with contextlib.suppress(NatsError, OSError):
                await self._js.delete_consumer(self._stream, name)

        task = asyncio.get_running_loop().create_task(delete())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _accept(self, msg: JetStreamMsg) -> bool:
        """Advance the cursor if ``msg`` is the next one; False on a gap (the caller resets)."""
        meta = msg.metadata()
        if meta.consumer_seq != self.consumer_seq + 1:
            return False
        self.consumer_seq = meta.consumer_seq
        self.stream_seq = meta.stream_seq
        return True

    def _set_mode(self, mode: str) -> None:
        if self._mode and self._mode != mode:
            raise OrderConsumerUsedAsConsume() if self._mode == "consume" else OrderConsumerUsedAsFetch()
        self._mode = mode

    # --- fetch ---------------------------------------------------------------------------------------

    async def fetch(
        self, batch: int, *, max_wait: Duration = DEFAULT_FETCH_MAX_WAIT, heartbeat: Duration | None = None
    ) -> _OrderedBatch:
        """Up to ``batch`` messages, in order (as [`PullConsumer.fetch`][pyjetstream.client.jetstream.consumer.PullConsumer.fetch])."""
        return await self._start_fetch(lambda c: c.fetch(batch, max_wait=max_wait, heartbeat=heartbeat))

    async def fetch_bytes(
        self, max_bytes: int, *, max_wait: Duration = DEFAULT_FETCH_MAX_WAIT, heartbeat: Duration | None = None
    ) -> _OrderedBatch:
        """Messages up to ``max_bytes`` in all, in order (as `PullConsumer.fetch_bytes`)."""
        return await self._start_fetch(
            lambda c: c.fetch_bytes(max_bytes, max_wait=max_wait, heartbeat=heartbeat)
        )

    async def fetch_no_wait(self, batch: int, *, max_wait: Duration = DEFAULT_NO_WAIT_GUARD) -> _OrderedBatch:
        """What is available now, up to ``batch``, in order (as `PullConsumer.fetch_no_wait`)."""
        return await self._start_fetch(lambda c: c.fetch_no_wait(batch, max_wait=max_wait))

    async def next(
        self, *, max_wait: Duration = DEFAULT_FETCH_MAX_WAIT, heartbeat: Duration | None = None
    ) -> JetStreamMsg:
        """The next message in order (as `PullConsumer.next`)."""
        batch = await self.fetch(1, max_wait=max_wait, heartbeat=heartbeat)
        async for msg in batch:
            return msg
        if batch.error is not None:
            raise batch.error
        raise TimeoutError(f"no message within {seconds(max_wait)}s")

    async def _start_fetch(self, start: Callable[[PullConsumer], Any]) -> _OrderedBatch:
        self._set_mode("fetch")
        if self._fetch is not None and not self._fetch.done:
            raise OrderedConsumerConcurrentRequests()
        # Every fetch gets a fresh consumer that starts after the last message handed out.
        consumer = await self._reset(initial=True)
        self._fetch = _OrderedBatch(self, await start(consumer))
        return self._fetch

    # --- continuous ------------------------------------------------------------------------------------

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
    ) -> OrderedConsumeContext:
        """Like [`PullConsumer.consume`][], in order, recreating the consumer when needed."""
        self._check_idle()
        self._set_mode("consume")
        expiry_s, heartbeat_s = seconds(expiry), seconds_or_none(heartbeat)
        options = dict(
            max_messages=max_messages,
            max_bytes=max_bytes,
            expiry=expiry_s,
            threshold_messages=threshold_messages,
            threshold_bytes=threshold_bytes,
            heartbeat=heartbeat_s if heartbeat_s is not None else _ordered_heartbeat(expiry_s),
        )
        ctx = OrderedConsumeContext(self, handler, options, error_handler)
        self._active = ctx
        await ctx._start()
        return ctx

    async def messages(
        self,
        *,
        max_messages: int | None = None,
        max_bytes: int | None = None,
        expiry: Duration = DEFAULT_EXPIRES,
        threshold_messages: int | None = None,
        threshold_bytes: int | None = None,
        heartbeat: Duration | None = None,
    ) -> OrderedMessagesContext:
        """Like [`PullConsumer.messages`][], in order, recreating the consumer when needed."""
        self._check_idle()
        self._set_mode("consume")
        expiry_s, heartbeat_s = seconds(expiry), seconds_or_none(heartbeat)
        options = dict(
            max_messages=max_messages,
            max_bytes=max_bytes,
            expiry=expiry_s,
            threshold_messages=threshold_messages,
            threshold_bytes=threshold_bytes,
            heartbeat=heartbeat_s if heartbeat_s is not None else _ordered_heartbeat(expiry_s),
        )
        ctx = OrderedMessagesContext(self, options)
        self._active = ctx
        await ctx._start()
        return ctx

    def _check_idle(self) -> None:
        if self._active is not None and not self._active.stopped:
            raise OrderedConsumerConcurrentRequests()

    def _stopped(self) -> None:
        """The active context stopped: remove the server-side consumer too."""
        if self._current is not None:
            self._delete_soon(self._current.name)
            self._current = None

    def __repr__(self) -> str:
        return f"<OrderedConsumer stream={self._stream!r} name={self.name!r}>"


async def next_or_caught_up(
    consumer: OrderedConsumer, messages: OrderedMessagesContext, timeout: float | None
) -> JetStreamMsg | None:
    """The next message, or ``None`` once the server confirms every message so far was delivered.

    Watchers end their initial values when a message says nothing is pending after it. nats-server
    2.9 sometimes overstates that count by one for wildcard filters (measured: about one watch in
    three), so when nothing arrives for a moment the consumer's info settles it: nothing pending
    and nothing delivered beyond what we received.
    """
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        wait = CATCH_UP_CHECK if deadline is None else min(CATCH_UP_CHECK, max(0.0, deadline - loop.time()))
        try:
            return await messages.next(wait)
        except TimeoutError:
            if deadline is not None and loop.time() >= deadline:
                raise
        info = await consumer.info()
        if (
            info.num_pending == 0
            and info.delivered.consumer_seq == consumer.consumer_seq
            and not messages.pending
        ):
            return None


def _ordered_heartbeat(expiry: float) -> float:
    return 5.0 if expiry >= 10.0 else expiry / 2


class _OrderedBatch:
    """A fetch of an ordered consumer: the underlying batch, advancing the consumer's cursor."""

    def __init__(self, owner: OrderedConsumer, batch: MessageBatch) -> None:
        self._owner = owner
        self._batch = batch
        self._gap = False

    @property
    def error(self) -> Exception | None:
        return self._batch.error

    @property
    def done(self) -> bool:
        return self._batch.done or self._gap

    def __aiter__(self) -> _OrderedBatch:
        return self

    async def __anext__(self) -> JetStreamMsg:
        if self._gap:
            raise StopAsyncIteration
        msg = await self._batch.__anext__()
        if not self._owner._accept(msg):
            # A gap inside one fetch: end it here; the next fetch resumes after the last good one.
            self._gap = True
            raise StopAsyncIteration
        return msg

    def messages(self) -> _OrderedBatch:
        return self

    async def collect(self) -> list[JetStreamMsg]:
        return [msg async for msg in self]


class OrderedConsumeContext:
    """``consume`` of an ordered consumer: survives consumer resets; ``stop()`` ends it."""

    def __init__(
        self,
        owner: OrderedConsumer,
        handler: MessageHandler,
        options: dict[str, Any],
        error_handler: ConsumeErrorHandler | None,
    ) -> None:
        self._owner = owner
        self._handler = handler
        self._async = is_async_callable(handler)
        self._options = options
        self._error_handler = error_handler
        self._inner: ConsumeContext | None = None
        self._resetting = False
        self.stopped = False
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def _start(self) -> None:
        consumer = await self._owner._reset(initial=True)
        await self._attach(consumer)

    async def _attach(self, consumer: PullConsumer) -> None:
        serial = self._owner.serial
        self._inner = await consumer.consume(
            self._wrap(serial), error_handler=self._inner_error(serial), **self._options
        )

    def _wrap(self, serial: int) -> MessageHandler:
        owner = self._owner
        handler = self._handler

        def admit(msg: JetStreamMsg) -> bool:
            if self.stopped or serial != owner.serial:
                return False
            if not owner._accept(msg):
                self._trigger_reset(serial)
                return False
            return True

        if self._async:

            async def async_wrapper(msg: JetStreamMsg) -> None:
                if admit(msg):
                    await handler(msg)  # type: ignore[misc]

            return async_wrapper

        def wrapper(msg: JetStreamMsg) -> Any:
            if admit(msg):
                return handler(msg)
            return None

        return wrapper

    def _inner_error(self, serial: int) -> Callable[[ConsumeContext, Exception], None]:
        def on_error(_ctx: ConsumeContext, exc: Exception) -> None:
            if isinstance(exc, _RESET_ERRORS):
                self._trigger_reset(serial)
            self._report(exc)

        return on_error

    def _report(self, exc: Exception) -> None:
        if self._error_handler is not None:
            run_callback(self._error_handler, self, exc)
        elif not isinstance(exc, _RESET_ERRORS):
            logger.error("ordered consume: %s", exc)

    def _trigger_reset(self, serial: int) -> None:
        if self.stopped or self._resetting or serial != self._owner.serial:
            return
        self._resetting = True
        task = asyncio.get_running_loop().create_task(self._do_reset())
        self._owner._tasks.add(task)
        task.add_done_callback(self._owner._tasks.discard)

    async def _do_reset(self) -> None:
        try:
            if self._inner is not None:
                self._inner.stop()
            try:
                consumer = await self._owner._reset()
            except (NatsError, OSError) as exc:
                self._report(exc if isinstance(exc, OrderedConsumerReset) else OrderedConsumerReset(str(exc)))
                self.stop()
                return
            if self.stopped:
                self._owner._stopped()
                return
            await self._attach(consumer)
        finally:
            self._resetting = False

    def stop(self) -> None:
        """Stop delivering to the handler."""
        if self.stopped:
            return
        self.stopped = True
        if self._inner is not None:
            self._inner.stop()
        self._owner._stopped()
        if not self._closed.done():
            self._closed.set_result(None)

    async def drain(self) -> None:
        """Stop pulling, and let the handler finish the messages already received."""
        if self._inner is not None and not self.stopped:
            await self._inner.drain()
        self.stop()

    async def wait_closed(self) -> None:
        """Return once the consume loop has ended."""
        await asyncio.shield(self._closed)

    @property
    def is_closed(self) -> bool:
        return self.stopped

    async def __aenter__(self) -> OrderedConsumeContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()


class OrderedMessagesContext:
    """``messages`` of an ordered consumer: ``await it.next()`` / ``async for``; survives resets."""

    def __init__(self, owner: OrderedConsumer, options: dict[str, Any]) -> None:
        self._owner = owner
        self._options = options
        self._inner: MessagesContext | None = None
        self._draining = False
        self.stopped = False

    async def _start(self) -> None:
        consumer = await self._owner._reset(initial=True)
        self._inner = await consumer.messages(**self._options)

    async def _reset(self) -> None:
        if self._inner is not None:
            self._inner.stop()
        try:
            consumer = await self._owner._reset()
        except OrderedConsumerReset:
            self.stop()
            raise
        self._inner = await consumer.messages(**self._options)

    async def next(self, timeout: Duration | None = None) -> JetStreamMsg:
        """The next message in stream order (``TimeoutError`` after ``timeout`` if given)."""
        timeout = seconds_or_none(timeout)
        while True:
            if self.stopped or self._inner is None:
                raise MsgIteratorClosed()
            inner = self._inner
            try:
                msg = await inner.next(timeout)
            except _RESET_ERRORS:
                await self._reset()
                continue
            except MsgIteratorClosed:
                if self.stopped or self._draining:
                    self.stop()
                    raise
                await self._reset()
                continue
            if self._owner._accept(msg):
                return msg
            await self._reset()

    def __aiter__(self) -> OrderedMessagesContext:
        return self

    async def __anext__(self) -> JetStreamMsg:
        try:
            return await self.next()
        except MsgIteratorClosed:
            raise StopAsyncIteration from None

    @property
    def pending(self) -> int:
        """Messages received and not yet returned by ``next``."""
        return self._inner.pending if self._inner is not None else 0

    def stop(self) -> None:
        """Stop the iterator at once (`drain` hands out what was received first)."""
        if self.stopped:
            return
        self.stopped = True
        if self._inner is not None:
            self._inner.stop()
        self._owner._stopped()

    async def drain(self) -> None:
        """Stop pulling; ``next`` hands out what was received, then raises ``MsgIteratorClosed``."""
        self._draining = True
        if self._inner is not None:
            await self._inner.drain()

    async def __aenter__(self) -> OrderedMessagesContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
