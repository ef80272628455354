"""``ws://`` and ``wss://`` servers: the NATS byte stream inside WebSocket frames (RFC 6455).

nats.go's ``websocket.go`` client side: an HTTP/1.1 upgrade on the server's WebSocket listener
(``websocket {}`` in nats-server's config), then the ordinary protocol, each write one binary
message (masked, as a client must), each received message's payload fed to the parser as if it
came from TCP. ``wss://`` runs TLS from the first byte, before the upgrade; there is no TLS
upgrade after INFO as on a ``tls://`` connection. The connection above sees a
`WireProtocol` like any other, whose ``transport`` is a
`pyjetstream.protocol.ws_transport.MessageTransport`: nothing else in the client knows about WebSocket.

The framing and the upgrade are wsproto's (sans-IO, the same library the embedded server uses
on its side). Compression (permessage-deflate) is not asked for: the server then sends plain
frames, which nats-server does unless the client asks.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING, Any

from wsproto import ConnectionState, ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    BytesMessage,
    CloseConnection,
    Ping,
    RejectConnection,
    RejectData,
    Request,
    TextMessage,
)
from wsproto.utilities import LocalProtocolError, RemoteProtocolError

from pyjetstream.client.errors import NatsError
from pyjetstream.protocol.ws_transport import MessageTransport

if TYPE_CHECKING:
    from pyjetstream.client.options import ServerAddress
    from pyjetstream.client.transport import WireProtocol

__all__ = ["WebSocketError", "open_websocket"]


class WebSocketError(NatsError):
    """The server refused the WebSocket upgrade (an HTTP status instead of 101) or broke the framing."""


class _Upgrade(asyncio.Protocol):
    """The socket's protocol for a WebSocket connection: the upgrade, then frames in and out.

    Until the server accepts the upgrade, ``accepted`` is pending; from then on every message's
    payload goes to the inner NATS protocol (``inner``) in order.
    """

    def __init__(self, inner: WireProtocol, server: ServerAddress) -> None:
        self.inner = inner
        self.server = server
        self.ws = WSConnection(ConnectionType.CLIENT)
        self.raw: asyncio.Transport | None = None
        self.accepted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._rejection: tuple[int, bytes] | None = None
        self._frames: MessageTransport | None = None

    # ------------------------------------------------------------ asyncio hooks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.raw = transport  # type: ignore[assignment]
        host = self.server.hostport
        request = Request(host=host, target=self.server.path or "/")
        self.raw.write(self.ws.send(request))  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        try:
            self.ws.receive_data(data)
            for event in self.ws.events():
                self._event(event)
        except (RemoteProtocolError, LocalProtocolError) as exc:
            self._fail(WebSocketError(f"WebSocket protocol error from {self.server.url}: {exc}"))

    def _event(self, event: Any) -> None:
        if isinstance(event, BytesMessage):
            self.inner.data_received(bytes(event.data))
        elif isinstance(event, TextMessage):
            self.inner.data_received(event.data.encode())
        elif isinstance(event, AcceptConnection):
            assert self.raw is not None
            self._frames = MessageTransport(self, self.raw)
            self.inner.connection_made(self._frames)  # type: ignore[arg-type]  # a Transport in all but name
            if not self.accepted.done():
                self.accepted.set_result(None)
        elif isinstance(event, Ping):
            self._send(event.response())
        elif isinstance(event, CloseConnection):
            if self.ws.state is ConnectionState.REMOTE_CLOSING:
                self._send(event.response())
            if self.raw is not None:
                self.raw.close()
        elif isinstance(event, RejectConnection):
            self._rejection = (event.status_code, b"")
            if not event.has_body:
                self._reject()
        elif isinstance(event, RejectData):
            assert self._rejection is not None
            self._rejection = (self._rejection[0], self._rejection[1] + bytes(event.data))
            if event.body_finished:
                self._reject()

    def _reject(self) -> None:
        status, body = self._rejection or (0, b"")
        text = body.decode("utf-8", "replace").strip()
        detail = f": {text}" if text else ""
        self._fail(WebSocketError(f"{self.server.url} refused the WebSocket upgrade (HTTP {status}){detail}"))

    def _fail(self, exc: Exception) -> None:
        if not self.accepted.done():
            self.accepted.set_exception(exc)
        if self.raw is not None:
            self.raw.abort()

    def eof_received(self) -> bool:
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.accepted.done():
            self.accepted.set_exception(
                exc or WebSocketError(f"{self.server.url} closed the connection during the WebSocket upgrade")
            )
        if self._frames is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._frames is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self._frames is not None:
            self.inner.resume_writing()

    # ------------------------------------------------------------------ writing

    def _send(self, event: Any) -> None:
        if self.raw is not None and not self.raw.is_closing():
            self.raw.write(self.ws.send(event))

    def send_binary(self, data: bytes) -> None:
        if self.ws.state is ConnectionState.OPEN:
            self._send(BytesMessage(data=data))

    def close(self) -> None:
        if self.ws.state is ConnectionState.OPEN:
            try:
                self._send(CloseConnection(code=1000))
            except LocalProtocolError:
                pass
        if self.raw is not None:
            self.raw.close()


async def open_websocket(
    loop: asyncio.AbstractEventLoop,
    inner: WireProtocol,
    server: ServerAddress,
    tls: ssl.SSLContext | None,
    server_hostname: str | None,
) -> None:
    """Connect to ``server`` (a ``ws://`` or ``wss://`` address) and complete the upgrade; from then
    on ``inner`` receives the NATS bytes and its ``transport`` sends them as binary messages.

    ``tls``: the context for ``wss://`` (the socket is TLS from the start), None for ``ws://``."""
    conn = _Upgrade(inner, server)
    kwargs: dict[str, Any] = {}
    if tls is not None:
        kwargs = {"ssl": tls, "server_hostname": server_hostname or server.host}
    await loop.create_connection(lambda: conn, server.host, server.port, **kwargs)
    try:
        await conn.accepted
    except BaseException:
        if conn.raw is not None:
            conn.raw.abort()
        raise
