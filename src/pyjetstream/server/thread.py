"""Run the server in a background thread, for synchronous code (tests, notebooks, Spark drivers).

::

    with ServerThread(jetstream=True, store_dir=tmp) as srv:
        print(srv.client_url)          # nats://127.0.0.1:PORT, ready for clients

``start()`` returns once the server is ready (or raises what made it fail); ``stop()`` shuts it
down gracefully and joins the thread. The server runs on its own event loop (uvloop when
installed); use `call` to run a coroutine function on it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pyjetstream.server.options import ServerOptions
from pyjetstream.server.server import Server

__all__ = ["ServerThread", "new_event_loop"]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when uvloop is installed, else asyncio's default."""
    try:
        import uvloop  # optional (not on Windows): imported only to make a loop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class ServerThread:
    """A [`Server`][pyjetstream.server.server.Server] on a daemon thread with its own event loop."""

    def __init__(self, options: ServerOptions | None = None, **overrides: Any) -> None:
        self.server = Server(options, **overrides)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._stop: asyncio.Event | None = None

    # --- the server's addresses, once started
    @property
    def client_url(self) -> str:
        return self.server.client_url

    url = client_url

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def http_port(self) -> int:
        return self.server.http_port

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None, "not started"
        return self._loop

    def start(self, timeout: float = 30.0) -> ServerThread:
        """Start the server on its thread and wait until it accepts clients; returns ``self``."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name="pyjetstream-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the server did not start in time")
        if self._error is not None:
            self._thread.join()
            self._thread = None
            raise self._error
        return self

    def _run(self) -> None:
        loop = new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        await self._stop.wait()
        await self.server.shutdown()

    def call(self, fn: Callable[[], Awaitable[T]], timeout: float | None = None) -> T:
        """Run ``await fn()`` on the server's loop and return its result."""

        async def run() -> T:
            return await fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Shut the server down gracefully and join its thread."""
        thread = self._thread
        if thread is None:
            return
        if self._loop is not None and self._stop is not None and thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        thread.join(timeout)
        self._thread = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
