"""``consume`` (messages to a handler) and ``messages`` (an iterator), both over a `PullSession`.

Handlers may be plain functions (run as each message is read, on the event loop) or ``async``
functions (run one at a time, in order, by the context's own task). Either way a message counts as
pending until its handler returned, so at most ``max_messages`` are buffered client-side.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from pyjetstream.api.durations import Duration, seconds_or_none
from pyjetstream.client.errors import TimeoutError
from pyjetstream.client.jetstream.errors import ConsumerNotFound, MsgIteratorClosed, NoHeartbeat
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.pull import PullSession

logger = logging.getLogger("pyjetstream.client.jetstream")

# Give the event loop a turn every this many messages handled back to back: the acks written meanwhile
# go out and new messages are read. Without it a full buffer is processed before any ack leaves, and
# the server, at max_ack_pending, stops delivering until then (a stall per buffer, measured).
YIELD_EVERY = 64

MessageHandler = Callable[[JetStreamMsg], Awaitable[None] | None]
ConsumeErrorHandler = Callable[["ConsumeContext", Exception], Awaitable[None] | None]


def is_async_callable(fn: object) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


def run_callback(cb: Callable[..., Any], *args: Any) -> None:
    """Call a plain or async callback from synchronous code, logging what it raises."""
    try:
        result = cb(*args)
    except Exception:
        logger.exception("error in callback %r", cb)
        return
    if inspect.isawaitable(result):
        task = asyncio.ensure_future(result)
        task.add_done_callback(_log_task_error)


def _log_task_error(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        logger.error("error in callback task", exc_info=task.exception())


class ConsumeContext:
    """A running ``consume``: ``stop()`` ends it now, ``await drain()`` after what was received."""

    def __init__(
        self,
        session_factory: Callable[
            [Callable[[JetStreamMsg], None], Callable[[Exception, bool], None]], PullSession
        ],
        handler: MessageHandler,
        error_handler: ConsumeErrorHandler | None,
    ) -> None:
        self._handler = handler
        self._error_handler = error_handler
        self._async = is_async_callable(handler)
        self._queue: deque[JetStreamMsg] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._stopping = False
        self.session = session_factory(self._deliver, self._on_error)

    async def _start(self) -> ConsumeContext:
        await self.session.start()
        if self._async:
            self._task = asyncio.get_running_loop().create_task(self._worker())
        return self

    # --- delivery ----------------------------------------------------------------------------------

    def _deliver(self, msg: JetStreamMsg) -> None:
        if self._async:
            self._queue.append(msg)
            waiter = self._waiter
            if waiter is not None:
                self._waiter = None
                if not waiter.done():
                    waiter.set_result(None)
            return
        try:
            result = self._handler(msg)
            if inspect.isawaitable(result):
                asyncio.ensure_future(result).add_done_callback(self._handler_task_done)
        except Exception as exc:
            self._report(exc)
        self.session.msg_done(msg)

    def _handler_task_done(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._report(task.exception())  # type: ignore[arg-type]

    async def _worker(self) -> None:
        queue = self._queue
        handler = self._handler
        session = self.session
        handled = 0
        try:
            while True:
                while not queue:
                    if session.closed or (self._stopping and not session.draining):
                        return
                    self._waiter = asyncio.get_running_loop().create_future()
                    await self._waiter
                if self._stopping and not session.draining:
                    return
                msg = queue.popleft()
                try:
                    await handler(msg)  # type: ignore[misc]
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._report(exc)
                session.msg_done(msg)
                handled += 1
                if handled % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
        finally:
            self._task = None
            self._set_closed()

    def _on_error(self, exc: Exception, terminal: bool) -> None:
        self._report(exc)
        if terminal:
            self.stop()

    def _report(self, exc: Exception) -> None:
        if self._error_handler is None:
            if isinstance(exc, NoHeartbeat):
                logger.warning("consume: %s", exc)
            else:
                logger.error("consume: %s", exc, exc_info=exc if exc.__traceback__ else None)
            return
        run_callback(self._error_handler, self, exc)

    # --- ending ------------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop consuming now (messages buffered but not yet handled are dropped; they get redelivered)."""
        self._stopping = True
        self.session.stop()
        self._wake_worker()
        if self._task is None:
            self._set_closed()

    async def drain(self) -> None:
        """Stop pulling, handle every message already received, then stop."""
        self._stopping = True
        await self.session.drain()
        self._wake_worker()
        if self._task is None:
            self._set_closed()
        await asyncio.shield(self._closed)

    async def wait_closed(self) -> None:
        """Until the context is stopped (by ``stop``/``drain`` or a terminal error)."""
        await asyncio.shield(self._closed)

    @property
    def is_closed(self) -> bool:
        return self._closed.done()

    def _wake_worker(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _set_closed(self) -> None:
        if not self._closed.done():
            self._closed.set_result(None)

    async def __aenter__(self) -> ConsumeContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()


class MessagesContext:
    """``await it.next()`` or ``async for msg in it``; ``stop()`` ends it, ``await drain()`` first
    hands out what was received. Errors (missed heartbeats, a deleted consumer) are raised by ``next``;
    after ``stop`` it raises [`MsgIteratorClosed`][] (and ``async for`` ends)."""

    def __init__(
        self,
        session_factory: Callable[
            [Callable[[JetStreamMsg], None], Callable[[Exception, bool], None]], PullSession
        ],
        err_on_missing_heartbeat: bool = True,
    ) -> None:
        self._buf: deque[JetStreamMsg] = deque()
        self._errors: deque[Exception] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._err_on_missing_heartbeat = err_on_missing_heartbeat
        self._stopped = False
        self._handed = 0
        self.session = session_factory(self._deliver, self._on_error)

    async def _start(self) -> MessagesContext:
        await self.session.start()
        return self

    def _deliver(self, msg: JetStreamMsg) -> None:
        self._buf.append(msg)
        self._wake()

    def _on_error(self, exc: Exception, terminal: bool) -> None:
        # Like nats.go's Next: only what the iterator cannot recover from by itself is raised
        # (terminal statuses, a missing consumer, missed heartbeats unless turned off).
        if isinstance(exc, NoHeartbeat):
            if not self._err_on_missing_heartbeat:
                return
        elif not terminal and not isinstance(exc, ConsumerNotFound):
            return
        self._errors.append(exc)
        if terminal:
            self._stopped = True
            self._buf.clear()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def next(self, timeout: Duration | None = None) -> JetStreamMsg:
        """The next message (waits for one; ``TimeoutError`` after ``timeout`` — seconds or a
        ``timedelta`` — if given)."""
        timeout = seconds_or_none(timeout)
        while True:
            if self._errors:
                raise self._errors.popleft()
            if self._buf:
                msg = self._buf.popleft()
                self.session.msg_done(msg)
                self._handed += 1
                if self._handed % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
                return msg
            if self._stopped or self.session.closed:
                raise MsgIteratorClosed()
            waiter = self._waiter
            if waiter is None or waiter.done():
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            if timeout is None:
                await waiter
            else:
                try:
                    async with asyncio.timeout(timeout):
                        await asyncio.shield(waiter)
                except builtins.TimeoutError:
                    raise TimeoutError(f"no message within {timeout}s") from None

    def __aiter__(self) -> MessagesContext:
        return self

    async def __anext__(self) -> JetStreamMsg:
        try:
            return await self.next()
        except MsgIteratorClosed:
            raise StopAsyncIteration from None

    def stop(self) -> None:
        """Stop now: buffered messages are dropped (they get redelivered)."""
        self._stopped = True
        self._buf.clear()
        self.session.stop()
        self._wake()

    async def drain(self) -> None:
        """Stop pulling; ``next`` still returns what was received, then raises ``MsgIteratorClosed``."""
        await self.session.drain()
        self._wake()

    @property
    def pending(self) -> int:
        """Messages received and not yet returned by ``next``."""
        return len(self._buf)

    async def __aenter__(self) -> MessagesContext:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()
