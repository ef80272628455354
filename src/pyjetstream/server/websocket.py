"""WebSocket clients (nats-server ``websocket.go``): NATS inside WebSocket frames, for nats.ws and
nats.js's WebSocket transport in browsers and Node.

The framing, the HTTP upgrade and permessage-deflate are wsproto's (a sans-IO library, so it fits
the server's asyncio Protocols); what is NATS-specific is here: nats-server's origin checks
(``same_origin``, ``allowed_origins``; a request without an Origin header is accepted, as RFC 6455
§1.6 and nats-server do), the handshake timeout, and the hand-over to an ordinary
`ClientConnection`, which sees a transport whose ``write`` sends binary messages. Every NATS
byte a client sends arrives in binary (or text) messages and goes to the same parser as TCP input.
"""

from __future__ import annotations

import asyncio
import logging
from email.utils import formatdate
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from wsproto import ConnectionState, ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    Request,
    TextMessage,
)
from wsproto.extensions import Extension, PerMessageDeflate
from wsproto.utilities import RemoteProtocolError

from pyjetstream.protocol.ws_transport import MessageTransport
from pyjetstream.server.client import ClientConnection

if TYPE_CHECKING:
    from pyjetstream.server.options import WebSocketOptions
    from pyjetstream.server.server import Server

__all__ = ["WebSocketConnection", "start_websocket_listener"]

_HTTP_TEXT = {400: b"Bad Request", 403: b"Forbidden", 405: b"Method Not Allowed"}


def _host_port(hostport: str, tls: bool) -> tuple[str, str]:
    """nats-server ``wsGetHostAndPort``: the port defaults by scheme, the host is compared lowercased."""
    host, sep, port = hostport.rpartition(":")
    if not sep or "]" in port:  # no port (an IPv6 literal's colons are inside brackets)
        return hostport.lower(), "443" if tls else "80"
    return host.lower(), port


class WebSocketConnection(asyncio.Protocol):
    """One WebSocket connection: the HTTP upgrade, then a NATS client inside the frames."""

    def __init__(self, server: Server, opts: WebSocketOptions) -> None:
        self.server = server
        self.opts = opts
        self.ws = WSConnection(ConnectionType.SERVER)
        self.transport: Any = None
        self.client: ClientConnection | None = None
        self._handshake_timer: asyncio.TimerHandle | None = None
        self.peer = ""

    # ------------------------------------------------------------ asyncio hooks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else ""
        self._handshake_timer = self.server.loop.call_later(self.opts.handshake_timeout, self._handshake_expired)

    def data_received(self, data: bytes) -> None:
        try:
            self.ws.receive_data(data)
        except RemoteProtocolError as exc:
            self._handshake_error(str(exc))
            if exc.event_hint is not None and self.ws.state is ConnectionState.CONNECTING:
                # nats-server ``wsUpgrade``: 405 for a method other than GET, 400 for the rest
                self._reject(405 if "method" in str(exc).lower() else 400)
            else:
                self.transport.close()
            return
        for event in self.ws.events():
            if isinstance(event, BytesMessage):
                if self.client is not None:
                    self.client.data_received(bytes(event.data))
            elif isinstance(event, TextMessage):
                if self.client is not None:
                    self.client.data_received(event.data.encode())
            elif isinstance(event, Request):
                self._upgrade(event)
            elif isinstance(event, Ping):
                self.transport.write(self.ws.send(event.response()))
            elif isinstance(event, CloseConnection):
                if self.ws.state is ConnectionState.REMOTE_CLOSING:
                    self.transport.write(self.ws.send(event.response()))
                self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_timer()
        if self.client is not None:
            self.client.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.client is not None:
            self.client.pause_writing()

    def resume_writing(self) -> None:
        if self.client is not None:
            self.client.resume_writing()

    def eof_received(self) -> bool:
        return False

    # ---------------------------------------------------------------- handshake

    def _upgrade(self, request: Request) -> None:
        self._cancel_timer()
        reason = self._check_origin(request)
        if reason:
            self._handshake_error(f"origin not allowed: {reason}")
            self._reject(403)
            return
        extensions: list[Extension] = [PerMessageDeflate()] if self.opts.compression else []
        self.transport.write(self.ws.send(AcceptConnection(extensions=extensions)))
        self.client = ClientConnection(self.server)
        self.client.websocket = True
        self.client.connection_made(MessageTransport(self, self.transport))  # type: ignore[arg-type]

    def _check_origin(self, request: Request) -> str:
        """nats-server ``checkOrigin``: "" when allowed, else why not."""
        opts = self.opts
        if not opts.same_origin and not opts.allowed_origins:
            return ""
        headers = {name.lower(): value for name, value in request.extra_headers}
        origin = (headers.get(b"origin") or headers.get(b"sec-websocket-origin") or b"").decode("latin-1")
        if not origin:
            return ""
        parts = urlsplit(origin)
        if not parts.scheme or not parts.netloc:
            return f"invalid origin {origin!r}"
        oh, op = _host_port(parts.netloc, parts.scheme == "https")
        if opts.same_origin:
            rh, rp = _host_port(request.host, opts.tls is not None)
            if (oh, op) != (rh, rp):
                return "not same origin"
        if opts.allowed_origins:
            for allowed in opts.allowed_origins:
                a = urlsplit(allowed)
                ah, ap = _host_port(a.netloc, a.scheme == "https")
                if ah == oh and a.scheme == parts.scheme and ap == op:
                    return ""
            return "not in the allowed list"
        return ""

    def _reject(self, status: int) -> None:
        """An HTTP error, as Go's ``http.Error`` writes it (nats-server ``wsReturnHTTPError``), then close.

        Written directly rather than through wsproto's RejectConnection, whose status line has no
        reason phrase ("HTTP/1.1 403 " where nats-server says "HTTP/1.1 403 Forbidden")."""
        text = _HTTP_TEXT.get(status, b"Error")
        body = text + b"\n"
        self.transport.write(
            b"HTTP/1.1 %d %s\r\n" % (status, text)
            + b"Content-Type: text/plain; charset=utf-8\r\n"
            + b"Sec-Websocket-Version: 13\r\n"
            + b"X-Content-Type-Options: nosniff\r\n"
            + b"Date: %s\r\n" % formatdate(usegmt=True).encode()
            + b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body)
            + body
        )
        self.transport.close()

    def _handshake_expired(self) -> None:
        self._handshake_timer = None
        if self.client is None:
            self._handshake_error("timeout")
            self.transport.close()

    def _handshake_error(self, reason: str) -> None:
        self.server.logger.log(logging.ERROR, "%s - websocket handshake error: %s", self.peer, reason)

    def _cancel_timer(self) -> None:
        if self._handshake_timer is not None:
            self._handshake_timer.cancel()
            self._handshake_timer = None

    # ------------------------------------------------------------------ writing

    def send_binary(self, data: bytes) -> None:
        if self.ws.state is ConnectionState.OPEN and not self.transport.is_closing():
            self.transport.write(self.ws.send(BytesMessage(data=data)))

    def close(self) -> None:
        if self.ws.state is ConnectionState.OPEN and not self.transport.is_closing():
            try:
                self.transport.write(self.ws.send(CloseConnection(code=1000)))
            except Exception:
                pass
        self.transport.close()


async def start_websocket_listener(server: Server, opts: WebSocketOptions) -> asyncio.Server:
    """Listen on ``opts.host:opts.port`` (``-1``: a random port), with TLS when ``opts.tls`` is set."""
    ssl_context = opts.tls.server_context() if opts.tls is not None else None
    return await server.loop.create_server(
        lambda: WebSocketConnection(server, opts),
        host=opts.host or None,
        port=0 if opts.port == -1 else opts.port,
        ssl=ssl_context,
        reuse_address=True,
        backlog=1024,
    )
