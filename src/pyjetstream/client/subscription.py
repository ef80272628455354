"""Subscriptions: delivery to a callback or to an async iterator, pending limits, auto-unsubscribe.

Delivery modes:
- plain-function callback: called right as the message is read (the event loop is single-threaded, so
  running it in a separate task would only add a task switch per batch);
- ``async def`` callback: run by the subscription's own task, one message at a time, in order;
- no callback: ``async for msg in sub.messages`` / ``await sub.next_msg(timeout)``;
- frames callback (``Client.subscribe_frames``): header-carrying messages in whole runs as raw frames,
  ``cb(buf, offsets)``, no [`Msg`][] per message (a bulk reader's path).

Messages wait in a deque bounded by ``pending_msgs_limit`` / ``pending_bytes_limit``; beyond that they
are dropped and a ``SlowConsumerError`` goes to the client's ``error_cb`` (once per slow episode, like nats.go).
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import inspect
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from pyjetstream.api.durations import Duration, seconds
from pyjetstream.client.errors import (
    BadSubscriptionError,
    ConnectionClosedError,
    SlowConsumerError,
    TimeoutError,
)
from pyjetstream.client.msg import Msg

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client

MsgCallback = Callable[[Msg], Awaitable[None] | None]
# ``cb(buf, offsets)``: frames in ``buf``, three offsets each (header start, payload start, payload end).
FramesCallback = Callable[[bytes, Any], None]  # (buffer, flat offsets: a list, or a numpy array)
RunsCallback = Callable[[list[bytes], list[bytes]], None]  # (subjects, payloads)


def _is_async_callable(fn: object) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


class Subscription:
    """A subscription on one connection; created by ``Client.subscribe``."""

    def __init__(
        self,
        client: Client,
        sid: int,
        subject: str,
        queue: str,
        cb: MsgCallback | None,
        max_msgs: int,
        pending_msgs_limit: int,
        pending_bytes_limit: int,
    ) -> None:
        self._client = client
        self.sid = sid
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._async_cb = cb is not None and _is_async_callable(cb)
        self._sync_cb = cb if cb is not None and not self._async_cb else None
        self._max = max_msgs
        self._pending_msgs_limit = pending_msgs_limit if pending_msgs_limit > 0 else 1 << 62
        self._pending_bytes_limit = pending_bytes_limit if pending_bytes_limit > 0 else 1 << 62
        self._pending: deque[Msg] = deque()
        self._pending_bytes = 0
        self._waiter: asyncio.Future[None] | None = None
        self._received = 0  # messages the server delivered (what UNSUB <max> counts)
        self._delivered = 0  # messages handed to the callback / iterator
        self._dropped = 0
        self._slow = False
        self._closed = False  # no more messages will be queued
        self._close_error: Exception | None = None
        self._draining = False
        self._task: asyncio.Task[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._frames_cb: FramesCallback | None = None
        self._runs_cb: RunsCallback | None = None
        if self._async_cb:
            self._task = asyncio.get_running_loop().create_task(self._run_async_callback())

    # --- public -----------------------------------------------------------------------------

    @property
    def messages(self) -> Subscription:
        """``async for msg in sub.messages``: ends when the subscription is unsubscribed or drained."""
        if self._cb is not None:
            raise BadSubscriptionError("messages iterator is not available on a callback subscription")
        return self

    def __aiter__(self) -> Subscription:
        return self.messages

    async def __anext__(self) -> Msg:
        try:
            return await self._next(None)
        except (BadSubscriptionError, ConnectionClosedError):
            raise StopAsyncIteration from None

    async def next_msg(self, timeout: Duration | None = 1.0) -> Msg:
        """The next message; raises ``TimeoutError`` when none arrives within ``timeout`` (seconds or
        a ``timedelta``; ``None``: wait as long as it takes)."""
        if self._cb is not None:
            raise BadSubscriptionError("next_msg is not available on a callback subscription")
        if timeout.__class__ is not float and timeout is not None:
            timeout = seconds(timeout)
        return await self._next(timeout)

    async def unsubscribe(self, limit: int = 0) -> None:
        """Stop now (``limit=0``), or after ``limit`` messages in total have been received."""
        self._client._unsubscribe(self, limit)

    def unsubscribe_nowait(self, limit: int = 0) -> None:
        """``unsubscribe`` for synchronous code: the UNSUB is queued before anything sent after it."""
        self._client._unsubscribe(self, limit)

    async def drain(self) -> None:
        """Unsubscribe, but first process every message the server already sent."""
        await self._client._drain_subscription(self)

    @property
    def max_msgs(self) -> int:
        return self._max

    @property
    def pending_msgs(self) -> int:
        return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def delivered(self) -> int:
        """Messages handed to the callback or the iterator so far."""
        return self._delivered

    @property
    def received(self) -> int:
        """Messages the server delivered to this subscription (including dropped ones)."""
        return self._received

    @property
    def dropped(self) -> int:
        return self._dropped

    @property
    def is_closed(self) -> bool:
        return self._closed

    def __repr__(self) -> str:
        queue = f" queue={self.queue!r}" if self.queue else ""
        return f"<Subscription sid={self.sid} subject={self.subject!r}{queue}>"

    # --- called by the client -----------------------------------------------------------------

    def _deliver(self, msg: Msg) -> bool:
        """Queue (or run the callback on) one message. Returns False once the max count is reached."""
        self._received += 1
        if self._closed:
            return True
        cb = self._sync_cb
        if cb is not None:
            self._delivered += 1
            try:
                result = cb(msg)
                if result is not None and inspect.isawaitable(result):
                    # A plain function that returned a coroutine: run it, report its errors.
                    self._client._track(asyncio.ensure_future(result))
            except Exception as exc:
                self._client._report_error(exc)
        else:
            size = len(msg.data)
            if len(self._pending) >= self._pending_msgs_limit or (
                self._pending_bytes + size > self._pending_bytes_limit
            ):
                self._dropped += 1
                if not self._slow:
                    self._slow = True
                    self._client._report_error(SlowConsumerError(self.subject, self.sid, self._dropped))
            else:
                self._slow = False
                self._pending.append(msg)
                self._pending_bytes += size
                waiter = self._waiter
                if waiter is not None:
                    self._waiter = None
                    if not waiter.done():
                        waiter.set_result(None)
        return not (self._max and self._received >= self._max)

    def _deliver_frames(self, buf: bytes, offsets: Any) -> None:
        """Hand a run of raw frames to the frames callback (``Client.subscribe_frames``)."""
        n = len(offsets) // 3
        self._received += n
        if self._closed or self._frames_cb is None:
            return
        self._delivered += n
        try:
            self._frames_cb(buf, offsets)
        except Exception as exc:
            self._client._report_error(exc)

    def _deliver_msg_run(self, subjects: list[bytes], payloads: list[bytes]) -> None:
        """Hand a run of reply-less messages to the runs callback (``Client.subscribe_runs``)."""
        n = len(payloads)
        self._received += n
        if self._closed or self._runs_cb is None:
            return
        self._delivered += n
        try:
            self._runs_cb(subjects, payloads)
        except Exception as exc:
            self._client._report_error(exc)

    def _finish(self, error: Exception | None = None) -> None:
        """No more messages will be queued; what is pending is still delivered."""
        if self._closed:
            return
        self._closed = True
        self._close_error = error
        self._wake()
        self._check_drained()

    def _abort(self, error: Exception | None = None) -> None:
        """Stop delivery now, dropping what is pending (``unsubscribe()`` and ``close()``)."""
        self._pending.clear()
        self._pending_bytes = 0
        self._finish(error)
        self._check_drained()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def _wait_drained(self) -> None:
        """Until every queued message went to the callback/iterator (after ``_finish``)."""
        if self._is_drained():
            return
        if self._drained is None:
            self._drained = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._drained)

    def _is_drained(self) -> bool:
        if self._pending:
            return False
        return self._task is None or self._task.done()

    def _check_drained(self) -> None:
        if self._closed and self._drained is not None and not self._drained.done() and self._is_drained():
            self._drained.set_result(None)

    # --- consumer side -------------------------------------------------------------------------

    async def _next(self, timeout: float | None) -> Msg:
        while not self._pending:
            if self._closed:
                raise self._closed_exception()
            waiter = self._waiter
            if waiter is None or waiter.done():
                waiter = self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await asyncio.shield(waiter)
                else:
                    async with asyncio.timeout(timeout):
                        await asyncio.shield(waiter)
            except builtins.TimeoutError as exc:
                raise TimeoutError(f"no message on {self.subject!r} within {timeout}s") from exc
        msg = self._pending.popleft()
        self._pending_bytes -= len(msg.data)
        self._delivered += 1
        if self._closed and not self._pending:
            self._check_drained()
        return msg

    def _closed_exception(self) -> Exception:
        if isinstance(self._close_error, ConnectionClosedError):
            return self._close_error
        return BadSubscriptionError(f"subscription {self.sid} on {self.subject!r} is closed")

    async def _run_async_callback(self) -> None:
        cb = self._cb
        assert cb is not None
        pending = self._pending
        try:
            while True:
                while not pending:
                    if self._closed:
                        return
                    waiter = self._waiter = asyncio.get_running_loop().create_future()
                    await waiter
                msg = pending.popleft()
                self._pending_bytes -= len(msg.data)
                self._delivered += 1
                try:
                    await cb(msg)  # type: ignore[misc]
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    self._client._report_error(exc)
        finally:
            self._task = None
            self._check_drained()
