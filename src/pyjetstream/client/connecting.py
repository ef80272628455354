"""A client's connection life: the initial connect over the server pool, the handshake (INFO,
TLS upgrade, CONNECT + PING), the replay once connected, keepalive PINGs, and reconnecting."""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import ssl
import time
from collections import deque

from pyjetstream.client.core import (
    ClientCore,
    Status,
)
from pyjetstream.client.errors import (
    AuthorizationError,
    ConnectionClosedError,
    NatsError,
    NoServersError,
    StaleConnectionError,
    why_not_connected,
)
from pyjetstream.client.handshake import Handshake, connect_fields, wants_tls
from pyjetstream.client.options import ServerAddress
from pyjetstream.client.transport import WireProtocol
from pyjetstream.protocol import PING, ClientSideParser, encode_connect


class Connector(ClientCore):
    """Connecting, keepalive and reconnecting."""

    async def _connect(self) -> None:
        """Initial connect: one pass over the pool."""
        self._loop = asyncio.get_running_loop()
        self._status = Status.CONNECTING
        errors: list[str] = []
        auth_error: AuthorizationError | None = None
        for server in list(self._pool):
            try:
                await self._attempt(server)
            except AuthorizationError as exc:
                auth_error = exc
                errors.append(f"{server.url}: {exc}")
                continue
            except (OSError, NatsError, builtins.TimeoutError, ssl.SSLError) as exc:
                errors.append(f"{server.url}: {why_not_connected(exc)}")
                continue
            self._on_connected(server)
            return
        self._status = Status.CLOSED
        if auth_error is not None:
            raise auth_error
        if len(errors) == 1:
            raise NoServersError(f"could not connect to {errors[0]}")
        raise NoServersError("could not connect to any server: " + "; ".join(errors))

    async def _attempt(self, server: ServerAddress) -> None:
        """Open a connection to ``server`` and complete the handshake (or raise, leaving nothing open)."""
        server.last_attempt = time.monotonic()
        try:
            async with asyncio.timeout(self._opts.connect_timeout):
                await self._open(server)
        except builtins.TimeoutError as exc:
            self._drop_attempt()
            raise TimeoutError(f"timed out after {self._opts.connect_timeout:g}s") from exc
        except BaseException:
            self._drop_attempt()
            raise

    def _drop_attempt(self) -> None:
        proto = self._proto
        self._hs = None
        self._proto = None
        if proto is not None and proto.transport is not None:
            proto.transport.abort()

    async def _open(self, server: ServerAddress) -> None:
        loop = self._loop
        assert loop is not None
        self._parser = ClientSideParser()
        self._parser.frame_sids = self._frame_sids
        self._parser.msg_run_sids = self._msg_run_sids
        self._parser.frame_scan = self._frame_scan
        hs = self._hs = Handshake(loop)
        proto = WireProtocol(self)  # type: ignore[arg-type]  # (a Client)
        self._proto = proto
        opts = self._opts
        if server.websocket:
            # Deferred: only ws:// and wss:// connections need wsproto.
            from pyjetstream.client.websocket import open_websocket

            # TLS from the first byte for wss://, or for ws:// with a context given (as nats:// + tls=).
            ctx = (opts.tls or ssl.create_default_context()) if server.tls or opts.tls is not None else None
            await open_websocket(loop, proto, server, ctx, opts.tls_hostname)
        else:
            await loop.create_connection(lambda: proto, server.host, server.port)
        info = await hs.info
        self._pool.current = server
        self._process_info(info, initial=True)
        if wants_tls(opts, server, info):
            ctx = opts.tls or ssl.create_default_context()
            assert proto.transport is not None
            transport = await loop.start_tls(
                proto.transport,
                proto,
                ctx,
                server_hostname=opts.tls_hostname or server.host,
                ssl_handshake_timeout=opts.connect_timeout,
            )
            if transport is None:  # pragma: no cover - only when the loop is closing
                raise ConnectionClosedError("TLS upgrade failed")
            proto.connection_made(transport)
        assert proto.transport is not None
        proto.transport.write(encode_connect(connect_fields(opts, server, info)) + PING)
        await hs.pong

    def _on_connected(self, server: ServerAddress) -> None:
        """Handshake done: replay subscriptions, buffered publishes and waiting flushes, in that order."""
        proto = self._proto
        assert proto is not None and proto.transport is not None
        self._hs = None
        self._transport = proto.transport
        self._status = Status.CONNECTED
        self._fatal_error = None
        self._pings_outstanding = 0
        self._write_paused = False
        server.did_connect = True
        server.reconnects = 0
        server.last_auth_error = ""
        self._pool.current = server
        out = self._subs.replay()
        out += self._wbuf
        # Keepalive PINGs of the old connection are moot; flushes still waiting get a fresh PING.
        waiting: deque[asyncio.Future[None] | None] = deque(
            f for f in self._pongs if f is not None and not f.done()
        )
        self._pongs = waiting
        out += PING * len(waiting)
        self._wbuf = bytearray()
        if out:
            self._transport.write(out)
        self._arm_ping_timer()

    # ===================================================================== keepalive

    def _arm_ping_timer(self) -> None:
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        if self._opts.ping_interval > 0:
            self._ping_timer = self._loop.call_later(self._opts.ping_interval, self._ping_tick)  # type: ignore[union-attr]

    def _ping_tick(self) -> None:
        self._ping_timer = None
        if self._transport is None or self._status is Status.CLOSED:
            return
        self._pings_outstanding += 1
        if self._pings_outstanding > self._opts.max_outstanding_pings:
            self._report_error(StaleConnectionError("server did not answer our PINGs"))
            self._abort(self._proto)
            return
        self._pongs.append(None)
        self._wbuf += PING
        self._flush_writes()
        self._arm_ping_timer()

    # ===================================================================== disconnect / reconnect

    def _abort(self, proto: WireProtocol | None) -> None:
        """Drop the socket now; ``connection_lost`` then decides between reconnect and close."""
        if proto is not None and proto.transport is not None:
            proto.transport.abort()

    def _connection_lost(self, proto: WireProtocol, exc: Exception | None) -> None:
        if proto is not self._proto:
            return
        self._proto = None
        if self._hs is not None:
            self._hs.fail(ConnectionError(f"connection lost during handshake: {exc}"))
            return
        was_connected = self._transport is not None
        self._transport = None
        self._set_writable()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
            self._ping_timer = None
        if self._status is Status.CLOSED or not was_connected:
            return
        if self._fatal_error is not None:
            # Already reported when the -ERR arrived.
            self._track(asyncio.ensure_future(self._close(None)))
        elif self._opts.reconnect and not self.is_draining:
            self._status = Status.RECONNECTING
            self._fire(self._opts.disconnected_cb)
            self._reconnect_task = self._loop.create_task(self._reconnect_loop())  # type: ignore[union-attr]
        else:
            self._track(asyncio.ensure_future(self._close(None)))

    async def _reconnect_loop(self) -> None:
        """Try servers as the reconnect policy hands them out until one completes the handshake."""
        policy = self._reconnect_policy
        last_error: Exception | None = None
        async with contextlib.aclosing(
            policy.attempts(lambda: self._status is Status.RECONNECTING)
        ) as servers:
            async for server in servers:
                try:
                    await self._attempt(server)
                except AuthorizationError as exc:
                    last_error = exc
                    self._report_error(exc)
                    policy.auth_failed(server, exc)
                    continue
                except (OSError, NatsError, builtins.TimeoutError, ssl.SSLError) as exc:
                    last_error = exc
                    continue
                if self._status is not Status.RECONNECTING:
                    self._drop_attempt()
                    return
                self.reconnects += 1
                self._on_connected(server)
                self._reconnect_task = None
                self._fire(self._opts.reconnected_cb)
                return
        if self._status is Status.RECONNECTING:
            self._reconnect_task = None
            why = why_not_connected(last_error) if last_error is not None else "no server left to try"
            err = NoServersError(f"no server reachable after reconnect attempts (last error: {why})")
            await self._close(err)
