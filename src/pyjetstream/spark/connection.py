"""Connections from Spark tasks: one per task, driven by a private event loop.

Spark calls ``read``/``write`` synchronously in a Python worker process and consumes or
produces an iterator, so each task owns an event loop that it runs step by step
(`TaskLoop`): between two steps the loop is idle and the task is free to hand an
Arrow batch to Spark. No thread is involved, so there is no GIL ping-pong on the hot path.

The first `TaskLoop` of a reused Spark Python worker also freezes the worker's heap
(`worker_heap.freeze_worker_heap`: see there why).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from pyjetstream.client import Client, connect
from pyjetstream.spark.options import ConnectOptions
from pyjetstream.spark.worker_heap import freeze_worker_heap

__all__ = ["TaskLoop", "connect_kwargs", "open_client", "ssl_context"]

T = TypeVar("T")


def ssl_context(opts: ConnectOptions) -> ssl.SSLContext | None:
    """A client TLS context from the TLS options; ``None`` when none is given (a ``tls://`` URL
    or a server requiring TLS still gets the default context from the client)."""
    if not opts.wants_tls:
        return None
    ctx = ssl.create_default_context(cafile=opts.tls_ca_file)
    if opts.tls_cert_file:
        ctx.load_cert_chain(opts.tls_cert_file, opts.tls_key_file)
    if opts.tls_insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    return ctx


def connect_kwargs(opts: ConnectOptions) -> dict[str, Any]:
    """Keyword arguments for [`pyjetstream.client.connect`][pyjetstream.client.connect] (also usable for the client API)."""
    kwargs: dict[str, Any] = {
        "name": opts.name,
        "connect_timeout": opts.connect_timeout,
        # A task is short-lived: fail fast rather than retry for minutes; Spark retries the task.
        "max_reconnect_attempts": 3,
        "reconnect_time_wait": 0.5,
    }
    if opts.user is not None:
        kwargs["user"] = opts.user
        kwargs["password"] = opts.password
    if opts.token is not None:
        kwargs["token"] = opts.token
    if opts.creds is not None:
        kwargs["user_credentials"] = opts.creds
    if opts.nkey_seed is not None:
        kwargs["nkeys_seed"] = opts.nkey_seed
    ctx = ssl_context(opts)
    if ctx is not None:
        kwargs["tls"] = ctx
    if opts.tls_hostname is not None:
        kwargs["tls_hostname"] = opts.tls_hostname
    return kwargs


async def open_client(opts: ConnectOptions) -> Client:
    return await connect(list(opts.servers), **connect_kwargs(opts))


class TaskLoop:
    """A private event loop run one coroutine at a time (``run``), closed with ``close``."""

    def __init__(self) -> None:
        factory = _loop_factory()
        freeze_worker_heap()  # before this task's own objects exist
        self._loop = factory()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.run_until_complete(coro)

    def close(self) -> None:
        loop = self._loop
        if loop.is_closed():
            return
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()

    def __enter__(self) -> TaskLoop:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop
    return uvloop.new_event_loop
