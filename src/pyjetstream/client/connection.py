"""The core NATS client: one connection, publish/subscribe/request, flush, drain, reconnect.

Ordering is the point of this module. Every byte we send — PUB, SUB, UNSUB, PING — goes through one
write buffer (``_wbuf``) in call order, and the buffer goes to the socket in order. So ``flush()``'s
PING is on the wire after every SUB and PUB issued before it, and its PONG (the server answers PINGs
in order) proves the server processed them all. (nats-py writes its flush PING ahead of still-buffered
SUBs; a subscriber could then miss messages published right after ``subscribe(); flush()``.)

Write coalescing: writes append to ``_wbuf``. The first publish of an event-loop turn goes to the
socket at once (request/reply latency); what follows in the same turn accumulates and one ``call_soon``
callback hands it over at the end of the turn, or as soon as it reaches ``WRITE_CHUNK`` — so a burst of
publishes becomes a few large writes. When the transport's own buffer passes its high-water mark,
``await publish()`` waits for it to drain.

While disconnected, publishes stay in ``_wbuf`` (up to ``pending_size``); SUB/UNSUB are not buffered
but rebuilt from the subscription table on reconnect: CONNECT, then every SUB (with the remaining
auto-unsubscribe count), then the buffered publishes, then one PING per ``flush()`` still waiting.

`Client` is made of its parts, each a mixin over the shared state (`pyjetstream.client.core` says why
mixins): `write_path` (publishing and the write buffer), `subscribing` (SUB/UNSUB, the frame and run
readers, a subscription's drain), `read_path` (what the server sends), `connecting` (connect,
handshake, keepalive, reconnect); here: the state itself, the properties, flush, request, drain and
close — what spans the parts.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import inspect
import logging
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from pyjetstream.api.durations import Duration, seconds, seconds_or_none
from pyjetstream.client.connecting import Connector
from pyjetstream.client.core import Status
from pyjetstream.client.errors import (
    ConnectionClosedError,
    DrainTimeoutError,
    NatsError,
    TimeoutError,
)
from pyjetstream.client.inbox import NUID
from pyjetstream.client.msg import HeadersArg, Msg
from pyjetstream.client.options import (
    DEFAULT_PENDING_SIZE,
    DEFAULT_URL,
    ClientOptions,
    ErrorCallback,
    EventCallback,
    ServerPool,
    split_servers,
)
from pyjetstream.client.read_path import Reader
from pyjetstream.client.reconnect import ReconnectPolicy
from pyjetstream.client.request_mux import RequestMux, expire
from pyjetstream.client.sub_table import SubscriptionTable
from pyjetstream.client.subscribing import Subscriber
from pyjetstream.client.write_path import Writer
from pyjetstream.protocol import (
    MAX_PAYLOAD,
    PING,
    ClientSideParser,
)

logger = logging.getLogger("pyjetstream.client")


class Client(Writer, Subscriber, Reader, Connector):
    """A NATS connection. Create it with ``await pyjetstream.client.connect(...)``."""

    def __init__(self, options: ClientOptions) -> None:
        self._opts = options
        self._pool = ServerPool(options.servers, randomize=not options.dont_randomize)
        self._status = Status.DISCONNECTED
        self._loop = None
        self._proto = None
        # The transport user writes go to: set only once the handshake completed (None while reconnecting).
        self._transport = None
        self._parser = ClientSideParser()
        self._frame_sids = set()
        self._parser.frame_sids = self._frame_sids
        self._msg_run_sids = set()
        self._parser.msg_run_sids = self._msg_run_sids
        self._frame_scan = None
        self._hs = None
        self._server_info = {}
        self._max_payload = MAX_PAYLOAD
        self._wbuf = bytearray()
        self._flush_scheduled = False
        self._write_paused = False
        self._writable = None
        self._pongs = deque()
        self._pings_outstanding = 0
        self._ping_timer = None
        self._subs = SubscriptionTable()
        self._valid_subjects = {}
        self._nuid = NUID()
        self._requests = RequestMux(self)
        self._reconnect_policy = ReconnectPolicy(options, self._pool)
        self._fatal_error = None
        self._reconnect_task = None
        self._closing = None
        self._tasks = set()
        self._last_error = None
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0
        self.reconnects = 0
        self.errors_received = 0

    # ===================================================================== properties

    @property
    def is_connected(self) -> bool:
        return self._transport is not None and self._status in (
            Status.CONNECTED,
            Status.DRAINING_SUBS,
            Status.DRAINING_PUBS,
        )

    @property
    def is_closed(self) -> bool:
        return self._status is Status.CLOSED

    @property
    def is_reconnecting(self) -> bool:
        return self._status is Status.RECONNECTING

    @property
    def is_draining(self) -> bool:
        return self._status in (Status.DRAINING_SUBS, Status.DRAINING_PUBS)

    @property
    def status(self) -> Status:
        return self._status

    @property
    def connected_url(self) -> str | None:
        current = self._pool.current
        return current.url if current is not None and self.is_connected else None

    @property
    def servers(self) -> list[str]:
        """Every URL in the server pool, discovered ones included."""
        return [s.url for s in self._pool]

    @property
    def discovered_servers(self) -> list[str]:
        return [s.url for s in self._pool if s.implicit]

    @property
    def server_info(self) -> dict[str, Any]:
        """The latest INFO from the server (a copy)."""
        return dict(self._server_info)

    @property
    def max_payload(self) -> int:
        return self._max_payload

    @property
    def client_id(self) -> int | None:
        return self._server_info.get("client_id")

    @property
    def last_error(self) -> Exception | None:
        return self._last_error

    @property
    def stats(self) -> dict[str, int]:
        return {
            "in_msgs": self.in_msgs,
            "out_msgs": self.out_msgs,
            "in_bytes": self.in_bytes,
            "out_bytes": self.out_bytes,
            "reconnects": self.reconnects,
            "errors_received": self.errors_received,
        }

    @property
    def pending_data_size(self) -> int:
        """Bytes buffered by the client and not yet handed to the socket."""
        return len(self._wbuf)

    @property
    def options(self) -> ClientOptions:
        return self._opts

    def new_inbox(self) -> str:
        """A unique subject under ``inbox_prefix``, for replies."""
        return f"{self._opts.inbox_prefix}.{self._nuid.next()}"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ===================================================================== request / reply

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: Duration = 2.0,
        headers: HeadersArg | None = None,
    ) -> Msg:
        """Publish a request and wait for the first reply, over the client's one muxed inbox.

        Raises ``NoRespondersError`` when nobody subscribes to ``subject``, ``TimeoutError`` when no
        reply comes within ``timeout`` (seconds or a ``timedelta``).
        """
        if timeout.__class__ is not float:
            timeout = seconds(timeout)
        return await self._requests.request(subject, payload, timeout, headers)

    # ===================================================================== flush / rtt

    async def flush(self, timeout: Duration = 10.0) -> None:
        """Wait until the server has processed everything sent before this call (PING → PONG).

        Called while reconnecting, the PING goes out once the connection is back (after the
        re-sent subscriptions and buffered publishes), still within ``timeout``.
        """
        timeout = seconds(timeout)
        if self._status is Status.CLOSED:
            raise ConnectionClosedError("connection closed")
        fut: asyncio.Future[None] = self._loop.create_future()  # type: ignore[union-attr]
        self._pongs.append(fut)
        if self._transport is not None:
            self._wbuf += PING
            self._flush_writes()
        timer = self._loop.call_later(timeout, expire, fut, f"flush timed out after {timeout}s")  # type: ignore[union-attr]
        try:
            await fut
        finally:
            timer.cancel()

    async def rtt(self, timeout: Duration = 10.0) -> float:
        """Round-trip time to the server in seconds (one PING/PONG)."""
        start = time.perf_counter()
        await self.flush(timeout)
        return time.perf_counter() - start

    # ===================================================================== drain / close

    async def drain(self) -> None:
        """Unsubscribe everything, process what was already received, flush publishes, then close.

        Raises ``DrainTimeoutError`` (after closing) when this takes longer than ``drain_timeout``.
        """
        if self._status is Status.CLOSED:
            return
        if self.is_draining:
            if self._closing is None:
                self._closing = self._loop.create_future()  # type: ignore[union-attr]
            await asyncio.shield(self._closing)
            return
        if self._status is Status.RECONNECTING:
            await self.close()
            return
        timeout = self._opts.drain_timeout
        deadline = time.monotonic() + timeout
        error: NatsError | None = None
        self._status = Status.DRAINING_SUBS
        try:
            subs = [s for s in self._subs.values() if s is not self._requests.subscription]
            async with asyncio.timeout(timeout):
                await self._drain_subs(subs, timeout)
                self._status = Status.DRAINING_PUBS
                await self.flush(max(0.0, deadline - time.monotonic()))
        except (builtins.TimeoutError, TimeoutError):
            error = DrainTimeoutError(f"drain did not finish within {timeout}s")
        except NatsError as exc:
            error = exc
        await self._close(error)
        if isinstance(error, DrainTimeoutError):
            raise error

    async def close(self) -> None:
        """Send what is buffered, close the connection and stop every subscription."""
        await self._close(None)

    async def _close(self, error: Exception | None) -> None:
        loop = self._loop or asyncio.get_running_loop()
        if self._status is Status.CLOSED:
            if self._closing is not None:
                await asyncio.shield(self._closing)
            return
        was_connected = self._transport is not None
        self._status = Status.CLOSED
        if self._closing is None:
            self._closing = loop.create_future()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
            self._ping_timer = None
        task = self._reconnect_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._reconnect_task = None
        proto, transport = self._proto, self._transport
        if transport is not None and self._wbuf:
            transport.write(bytes(self._wbuf))
        self._wbuf = bytearray()
        self._transport = None
        self._proto = None
        self._hs = None
        self._set_writable()
        if proto is not None and proto.transport is not None:
            proto.transport.close()  # sends what the transport still buffers, then closes
            with contextlib.suppress(builtins.TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(2.0):
                    await asyncio.shield(proto.closed)
        closed = ConnectionClosedError("connection closed")
        for fut in self._pongs:
            if fut is not None and not fut.done():
                fut.set_exception(closed)
        self._pongs.clear()
        self._requests.fail_all(closed)
        self._subs.abort_all(closed)
        if error is not None:
            self._report_error(error)
        if was_connected:
            self._fire(self._opts.disconnected_cb)
        self._fire(self._opts.closed_cb)
        if not self._closing.done():
            self._closing.set_result(None)
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=5.0)

    # ===================================================================== callbacks

    def _fire(self, cb: Callable[..., Awaitable[None] | None] | None, *args: Any) -> None:
        if cb is None:
            return
        try:
            result = cb(*args)
        except Exception:
            logger.exception("error in client callback %r", cb)
            return
        if result is not None and inspect.isawaitable(result):
            self._track(asyncio.ensure_future(result))

    def _track(self, fut: asyncio.Future[Any]) -> None:
        self._tasks.add(fut)
        fut.add_done_callback(self._task_done)

    def _task_done(self, fut: asyncio.Future[Any]) -> None:
        self._tasks.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            logger.error("error in client callback task", exc_info=fut.exception())

    def _report_error(self, exc: Exception) -> None:
        self._last_error = exc
        if self._opts.error_cb is None:
            logger.error("nats: %s", exc)
            return
        self._fire(self._opts.error_cb, exc)


_DURATIONS = ("connect_timeout", "reconnect_time_wait", "ping_interval", "drain_timeout")


def _client_options(args: dict[str, Any]) -> ClientOptions:
    """[`connect`][pyjetstream.client.connection.connect]'s arguments (its parameters are
    ``ClientOptions``' fields): the servers split, the durations in seconds."""
    args = dict(args, servers=split_servers(args["servers"]))
    for key in _DURATIONS:
        args[key] = seconds(args[key])
    args["reconnect_jitter"] = seconds_or_none(args["reconnect_jitter"])
    return ClientOptions(**args)


async def connect(
    servers: str | list[str] = DEFAULT_URL,
    *,
    name: str | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
    nkeys_seed: str | bytes | Path | None = None,
    user_credentials: str | bytes | Path | None = None,
    tls: ssl.SSLContext | None = None,
    tls_hostname: str | None = None,
    connect_timeout: Duration = 2.0,
    reconnect: bool = True,
    max_reconnect_attempts: int = 60,
    reconnect_time_wait: Duration = 2.0,
    reconnect_jitter: Duration | None = None,
    dont_randomize: bool = False,
    ping_interval: Duration = 120.0,
    max_outstanding_pings: int = 2,
    no_echo: bool = False,
    verbose: bool = False,
    pedantic: bool = False,
    inbox_prefix: str = "_INBOX",
    pending_size: int = DEFAULT_PENDING_SIZE,
    error_cb: ErrorCallback | None = None,
    disconnected_cb: EventCallback | None = None,
    reconnected_cb: EventCallback | None = None,
    closed_cb: EventCallback | None = None,
    discovered_server_cb: EventCallback | None = None,
    drain_timeout: Duration = 30.0,
) -> Client:
    """Connect to NATS and return a ready ``Client``.

    ``servers``: one URL, a comma-separated string or a list (``nats://``, ``tls://``; credentials may
    be in the URL: ``nats://user:pass@host``, ``nats://token@host``). The pool is shuffled unless
    ``dont_randomize``; servers announced in INFO ``connect_urls`` are added to it.

    Auth: ``token``; ``user``/``password``; ``nkeys_seed`` (seed string or file); ``user_credentials``
    (a ``.creds`` file path or its text: user JWT + seed). nkey/JWT auth signs the server's nonce.

    TLS: ``tls`` (an ``SSLContext``), a ``tls://`` URL, or a server that requires TLS upgrades the
    connection after INFO (with the default context when none is given); ``tls_hostname`` overrides
    the name verified.

    Reconnect: on connection loss, servers are tried in turn, each at most ``max_reconnect_attempts``
    times in a row (-1: forever), waiting ``reconnect_time_wait`` plus a random jitter (default 0.1 s,
    1 s for TLS) between attempts on the same server. Up to ``pending_size`` bytes of publishes are
    kept meanwhile and sent after the subscriptions are restored.

    Durations (``connect_timeout``, ``reconnect_time_wait``, ``ping_interval``, ``drain_timeout``, and
    every ``timeout`` of the client) are seconds, an ``int`` or a ``float``, or a ``timedelta``.

    Keepalive: a PING every ``ping_interval`` seconds; ``max_outstanding_pings`` unanswered ones mean
    the connection is stale (reconnect). Callbacks (plain or async functions): ``error_cb(exc)``,
    ``disconnected_cb()``, ``reconnected_cb()``, ``closed_cb()``, ``discovered_server_cb()``.
    """
    options = _client_options(locals())
    client = Client(options)
    await client._connect()
    return client
