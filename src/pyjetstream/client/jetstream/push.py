"""``PushConsumer``: the simplified API's push consumers (nats.go ``jetstream/push.go``).

A push consumer has a ``deliver_subject``: the server sends its messages there on its own, to every
subscriber (or one per ``deliver_group``). ``consume(handler)`` subscribes and hands each message to
the handler (plain functions right away, ``async`` ones one at a time, in order). Status messages
on that subject are handled here: ``100 Idle Heartbeat`` is activity (two missed intervals report
[`NoHeartbeat`][]), ``100 FlowControl Request`` is answered at once (the server pauses delivery
until it is), ``409 Consumer Deleted`` ends the consume. One consume at a time per handle.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections import deque
from typing import TYPE_CHECKING

from pyjetstream.api.pull_status import PullStatus, classify_pull_status
from pyjetstream.client.errors import NatsError
from pyjetstream.client.jetstream.consume import MessageHandler, is_async_callable, run_callback
from pyjetstream.client.jetstream.consumer import ConsumerHandle
from pyjetstream.client.jetstream.errors import (
    ConsumerAlreadyConsuming,
    ConsumerDeleted,
    ConsumerLeadershipChanged,
    HandlerRequired,
    NoHeartbeat,
)
from pyjetstream.client.jetstream.msg import JetStreamMsg

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.models import ConsumerInfo
    from pyjetstream.client.msg import Msg
    from pyjetstream.client.subscription import Subscription

class PushConsumer(ConsumerHandle):
    """A push consumer (nats.go ``jetstream.PushConsumer``); get one from ``create_push_consumer`` /
    ``push_consumer`` on the context or a stream."""

    def __init__(self, js: JetStream, stream: str, info: ConsumerInfo) -> None:
        super().__init__(js, stream, info)
        self._active: PushConsumeContext | None = None

    async def consume(
        self,
        handler: MessageHandler,
        *,
        error_handler: Callable[[PushConsumeContext, Exception], Awaitable[None] | None] | None = None,
    ) -> PushConsumeContext:
        """Receive the consumer's messages into ``handler`` until ``stop()`` / ``drain()``;
        ``error_handler(ctx, exc)`` hears about missed heartbeats, a leader change and a deleted
        consumer (which ends the consume)."""
        if handler is None:
            raise HandlerRequired()
        if self._active is not None and not self._active.is_closed:
            raise ConsumerAlreadyConsuming()
        ctx = PushConsumeContext(self, handler, error_handler)
        await ctx._start()
        self._active = ctx
        return ctx

    def __repr__(self) -> str:
        return f"<PushConsumer stream={self._stream!r} name={self._name!r}>"


class PushConsumeContext:
    """A running push ``consume``: ``stop()`` ends it now, ``await drain()`` after what was received."""

    def __init__(
        self,
        consumer: PushConsumer,
        handler: MessageHandler,
        error_handler: Callable[[PushConsumeContext, Exception], Awaitable[None] | None] | None,
    ) -> None:
        self._consumer = consumer
        self._nc = consumer._js.nc
        self._handler = handler
        self._error_handler = error_handler
        self._async = is_async_callable(handler)
        self._queue: deque[JetStreamMsg] = deque()
        self._wakeup = asyncio.Event()
        self._tasks: set[asyncio.Future[None]] = set()
        self._sub: Subscription | None = None
        self._task: asyncio.Task[None] | None = None
        self._hb_handle: asyncio.TimerHandle | None = None
        cfg = consumer.cached_info().config
        self._heartbeat = float(cfg.idle_heartbeat)  # the info's durations are seconds
        self._activity = 0
        self._seen = 0
        self._stopped = False
        self._draining = False
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def _start(self) -> None:
        cfg = self._consumer.cached_info().config
        self._sub = await self._nc.subscribe(cfg.deliver_subject, cfg.deliver_group, cb=self._on_msg)
        if self._async:
            self._task = asyncio.get_running_loop().create_task(self._worker())
        if self._heartbeat:
            self._arm_heartbeat()

    # --- receiving -----------------------------------------------------------------------------------

    def _on_msg(self, raw: Msg) -> None:
        if self._stopped:
            return
        self._activity += 1
        if raw.raw_headers is not None and not raw.data and raw.status:
            self._on_status(raw)
            return
        msg = JetStreamMsg(raw, self._nc)
        if self._async:
            self._queue.append(msg)
            self._wakeup.set()
            return
        try:
            result = self._handler(msg)
        except Exception as exc:
            self._report(exc)
            return
        if inspect.isawaitable(result):  # a plain function that returned a coroutine
            task = asyncio.ensure_future(result)
            self._tasks.add(task)
            task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Future[None]) -> None:
        self._tasks.discard(task)
        exc = None if task.cancelled() else task.exception()
        if isinstance(exc, Exception):
            self._report(exc)

    def _on_status(self, raw: Msg) -> None:
        status, description = raw.status, raw.description
        if status == 100:
            if raw.reply and "flowcontrol" in description.lower().replace(" ", ""):
                with contextlib.suppress(NatsError):
                    self._nc.publish_nowait(raw.reply, b"")  # the server waits for this answer
            return
        kind = classify_pull_status(status, description)
        if kind is PullStatus.CONSUMER_DELETED:
            self._report(ConsumerDeleted(description))
            self.stop()
        elif kind is PullStatus.LEADERSHIP_CHANGE:
            self._report(ConsumerLeadershipChanged(description))

    async def _worker(self) -> None:
        try:
            while True:
                while not self._queue:
                    if self._stopped or self._draining:
                        return
                    self._wakeup.clear()
                    await self._wakeup.wait()
                if self._stopped:
                    return
                msg = self._queue.popleft()
                try:
                    await self._handler(msg)  # type: ignore[misc]
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._report(exc)
        finally:
            self._task = None
            self._set_closed()

    # --- heartbeats ---------------------------------------------------------------------------------

    def _arm_heartbeat(self) -> None:
        self._hb_handle = asyncio.get_running_loop().call_later(2 * self._heartbeat, self._check_heartbeat)

    def _check_heartbeat(self) -> None:
        self._hb_handle = None
        if self._stopped:
            return
        if self._activity == self._seen:
            self._report(NoHeartbeat())
        self._seen = self._activity
        self._arm_heartbeat()

    def _report(self, exc: Exception) -> None:
        if self._error_handler is not None:
            run_callback(self._error_handler, self, exc)

    # --- ending ----------------------------------------------------------------------------------------

    @property
    def is_closed(self) -> bool:
        return self._closed.done()

    def stop(self) -> None:
        """Stop now: unsubscribe; messages not yet handled are dropped (the server redelivers them)."""
        if self._stopped:
            return
        self._stopped = True
        self._queue.clear()
        if self._hb_handle is not None:
            self._hb_handle.cancel()
            self._hb_handle = None
        sub = self._sub
        if sub is not None and not sub.is_closed:
            with contextlib.suppress(NatsError):
                sub.unsubscribe_nowait()
        self._wakeup.set()
        if self._task is None:
            self._set_closed()

    async def drain(self) -> None:
        """Unsubscribe, hand every message already received to the handler, then stop."""
        sub = self._sub
        if sub is not None and not sub.is_closed:
            with contextlib.suppress(NatsError):
                await sub.drain()
        self._draining = True  # the worker returns once the queue is empty
        self._wakeup.set()
        if self._task is not None:
            await self.wait_closed()
        self.stop()
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Return once the consume loop has ended."""
        await asyncio.shield(self._closed)

    def _set_closed(self) -> None:
        if not self._closed.done():
            self._closed.set_result(None)

    async def __aenter__(self) -> PushConsumeContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
        await self.wait_closed()
