"""A blocking facade over the asyncio client: the same names, no ``await`` (scripts, Spark executors).

    from pyjetstream.client.jetstream import sync

    with sync.connect("nats://127.0.0.1:4222") as nc:
        js = nc.jetstream()
        stream = js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        js.publish("ORDERS.new", b"hello")
        consumer = stream.create_or_update_consumer(ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT))
        for msg in consumer.fetch(10):
            msg.ack()

Each connection runs its own event loop in a daemon thread; every method call is sent to that loop
and the calling thread blocks on the result. Results that are client objects (streams, consumers,
messages, batches, watchers, futures) come back wrapped the same way; async iterators become plain
iterators. Callbacks (``consume`` handlers, error handlers) are plain functions: they run in a worker
thread, one at a time, and may call the blocking methods (``msg.ack()``) themselves.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar, cast

from pyjetstream.api.durations import Duration, seconds_or_none
from pyjetstream.client.connection import Client
from pyjetstream.client.connection import connect as _connect
from pyjetstream.client.jetstream.consume import is_async_callable
from pyjetstream.client.jetstream.context import JetStream

T = TypeVar("T")

_PROXIED_MODULE_PREFIX = "pyjetstream.client"


class LoopThread:
    """An event loop running in a daemon thread, and blocking calls into it."""

    def __init__(self, name: str = "pyjetstream-sync") -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()
        self._ready.wait()
        self.executor = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"{name}-cb")

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._ready.set)
        self.loop.run_forever()

    def run(self, awaitable: Awaitable[T], timeout: float | None = None) -> T:
        """Run ``awaitable`` on the loop and wait for its result here."""
        if threading.current_thread() is self.thread:
            raise RuntimeError("blocking call from the event-loop thread itself (use the async API there)")

        async def runner() -> T:
            return await awaitable

        return asyncio.run_coroutine_threadsafe(runner(), self.loop).result(timeout)

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call ``fn`` on the loop (awaiting its result if it is awaitable) and return the result."""

        async def runner() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
            return result

        if threading.current_thread() is self.thread:
            raise RuntimeError("blocking call from the event-loop thread itself (use the async API there)")
        return asyncio.run_coroutine_threadsafe(runner(), self.loop).result()

    def close(self) -> None:
        """Stop the event loop and join its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.executor.shutdown(wait=False)
        self.loop.close()


_NEEDS_PROXY: dict[type, bool] = {}


def _needs_proxy(cls: type) -> bool:
    """Client classes with coroutine methods or async iteration (plain data classes pass as they are);
    the answer is cached per class."""
    known = _NEEDS_PROXY.get(cls)
    if known is None:
        known = _NEEDS_PROXY[cls] = _class_needs_proxy(cls)
    return known


def _class_needs_proxy(cls: type) -> bool:
    if not cls.__module__.startswith(_PROXIED_MODULE_PREFIX) or issubclass(cls, BaseException):
        return False
    if hasattr(cls, "__aiter__") or hasattr(cls, "__anext__"):
        return True
    return any(
        inspect.iscoroutinefunction(getattr(cls, name, None))
        or inspect.isasyncgenfunction(getattr(cls, name, None))
        for name in dir(cls)
        if not name.startswith("__")
    )


def _is_client_object(value: object) -> bool:
    return _needs_proxy(cast(Any, type(value)))


def wrap(value: Any, rt: LoopThread) -> Any:
    """Wrap a result for the calling thread: client objects and async iterators become blocking."""
    if isinstance(value, asyncio.Future):
        return SyncFuture(value, rt)
    if inspect.isasyncgen(value):
        return SyncIterator(value, rt)
    if _is_client_object(value):
        return SyncProxy(value, rt)
    if isinstance(value, list):
        return [wrap(v, rt) if _is_client_object(v) else v for v in value]
    return value


def _adapt_callback(cb: Callable[..., Any], rt: LoopThread) -> Callable[..., Awaitable[Any]]:
    """A plain callback, made an async one that runs it in a worker thread with wrapped arguments."""

    async def adapted(*args: Any) -> Any:
        wrapped = [wrap(a, rt) for a in args]
        return await rt.loop.run_in_executor(rt.executor, lambda: cb(*wrapped))

    return adapted


def _adapt_args(
    args: tuple[Any, ...], kwargs: dict[str, Any], rt: LoopThread
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    def adapt(value: Any) -> Any:
        if isinstance(value, SyncProxy):
            return value._obj
        if callable(value) and not isinstance(value, type) and not is_async_callable(value):
            return _adapt_callback(value, rt)
        return value

    return tuple(adapt(a) for a in args), {k: adapt(v) for k, v in kwargs.items()}


class SyncProxy:
    """A blocking view of an asyncio client object: methods block, results are wrapped."""

    __slots__ = ("_obj", "_rt")

    def __init__(self, obj: Any, rt: LoopThread) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_rt", rt)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._obj, name)
        if callable(attr) and not isinstance(attr, type):
            rt = self._rt

            def method(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = _adapt_args(args, kwargs, rt)
                result = rt.call(attr, *args, **kwargs)
                return wrap(result, rt)

            method.__name__ = name
            method.__doc__ = getattr(attr, "__doc__", None)
            return method
        return wrap(attr, self._rt)

    def __iter__(self) -> Iterator[Any]:
        obj = self._obj
        if not hasattr(obj, "__anext__") and not hasattr(obj, "__aiter__"):
            raise TypeError(f"{type(obj).__name__} is not iterable")
        iterator = obj.__aiter__() if hasattr(obj, "__aiter__") else obj
        return iter(SyncIterator(iterator, self._rt))

    def __enter__(self) -> SyncProxy:
        # ``with`` means what ``async with`` means on the asyncio object (batch publishers check the
        # server and subscribe in ``__aenter__``, commit or discard in ``__aexit__``).
        aenter = getattr(self._obj, "__aenter__", None)
        if aenter is not None:
            result = self._rt.call(aenter)
            if result is not self._obj:
                return wrap(result, self._rt)
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        aexit = getattr(self._obj, "__aexit__", None)
        if aexit is not None:
            self._rt.call(aexit, exc_type, exc, tb)
            return
        stop = getattr(self._obj, "stop", None)
        if stop is not None:
            self._rt.call(stop)

    def __repr__(self) -> str:
        return f"<sync {self._obj!r}>"


class SyncIterator:
    """An async iterator driven from the calling thread."""

    def __init__(self, aiterator: Any, rt: LoopThread) -> None:
        self._it = aiterator
        self._rt = rt

    def __iter__(self) -> SyncIterator:
        return self

    def __next__(self) -> Any:
        try:
            item = self._rt.run(self._it.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None
        return wrap(item, self._rt)


class SyncFuture:
    """The future of an async publish, waited on from the calling thread."""

    def __init__(self, fut: asyncio.Future[Any], rt: LoopThread) -> None:
        self._fut = fut
        self._rt = rt

    def result(self, timeout: Duration | None = None) -> Any:
        """The PubAck, waiting at most ``timeout`` (seconds or a ``timedelta``) if given."""
        timeout = seconds_or_none(timeout)

        async def wait() -> Any:
            return await asyncio.shield(self._fut)

        return self._rt.run(wait(), timeout)

    def done(self) -> bool:
        """True once the acknowledgement (or an error) has arrived."""
        return self._fut.done()

    @property
    def msg(self) -> Any:
        return getattr(self._fut, "msg", None)


class SyncClient(SyncProxy):
    """A blocking core connection; ``jetstream()`` gives the blocking JetStream context."""

    __slots__ = ()

    def jetstream(self, **options: Any) -> SyncProxy:
        """Same options as [`pyjetstream.client.jetstream.jetstream`][pyjetstream.client.jetstream.jetstream]."""
        _, options = _adapt_args((), options, self._rt)
        return SyncProxy(JetStream(self._obj, **options), self._rt)

    def close(self) -> None:
        """Close the connection and stop its event-loop thread."""
        rt: LoopThread = self._rt
        if not rt.loop.is_closed():
            try:
                rt.run(self._obj.close(), timeout=10)
            finally:
                rt.close()

    def __enter__(self) -> SyncClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(servers: str | list[str] = "nats://127.0.0.1:4222", **options: Any) -> SyncClient:
    """Connect (blocking); same options as [`pyjetstream.client.connect`][pyjetstream.client.connect]."""
    rt = LoopThread()
    try:
        client: Client = rt.run(_connect(servers, **options))
    except BaseException:
        rt.close()
        raise
    return SyncClient(client, rt)


def jetstream(nc: SyncClient, **options: Any) -> SyncProxy:
    """The blocking JetStream context of a blocking connection (``nc.jetstream(**options)``)."""
    return nc.jetstream(**options)


__all__ = ["LoopThread", "SyncClient", "SyncFuture", "SyncIterator", "SyncProxy", "connect", "jetstream"]
