"""The connection handshake: wait for INFO, send CONNECT + PING, wait for the PONG.

The client drives it (``Client._open``); this module holds what the handshake is made of: the
futures it waits on and the CONNECT fields it sends, which depend only on the options, the server
address and the server's INFO.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pyjetstream.client.options import ClientOptions, ServerAddress

try:
    from importlib.metadata import version as _pkg_version

    CLIENT_VERSION = _pkg_version("pyjetstream")
except Exception:  # pragma: no cover - running from a source tree without metadata
    CLIENT_VERSION = "0.0.0"
CLIENT_LANG = "python-pyjetstream"


class Handshake:
    """Futures the handshake waits on: the server's first INFO, then the PONG answering CONNECT+PING."""

    __slots__ = ("info", "pong")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.info: asyncio.Future[dict[str, Any]] = loop.create_future()
        self.pong: asyncio.Future[None] = loop.create_future()

    def fail(self, exc: BaseException) -> None:
        # Fail only the future being awaited, so no exception is left unretrieved.
        for fut in (self.info, self.pong):
            if not fut.done():
                fut.set_exception(exc)
                return


def wants_tls(opts: ClientOptions, server: ServerAddress, info: dict[str, Any]) -> bool:
    """A TLS upgrade after INFO: when the URL says ``tls://``, the options carry a context, or the
    server requires it. Never on a WebSocket: ``wss://`` is TLS from the first byte (nats-server's
    INFO to a ``wss://`` client says ``tls_required`` all the same)."""
    if server.websocket:
        return False
    return bool(server.tls or opts.tls is not None or info.get("tls_required"))


def connect_fields(opts: ClientOptions, server: ServerAddress, info: dict[str, Any]) -> dict[str, Any]:
    """The CONNECT message's JSON fields for this server (credentials sign INFO's nonce)."""
    headers = bool(info.get("headers"))
    connect: dict[str, Any] = {
        "verbose": opts.verbose,
        "pedantic": opts.pedantic,
        "tls_required": server.tls if server.websocket else wants_tls(opts, server, info),
        "lang": CLIENT_LANG,
        "version": CLIENT_VERSION,
        "protocol": 1,
        "echo": not opts.no_echo,
        "headers": headers,
        "no_responders": headers,
    }
    if opts.name:
        connect["name"] = opts.name
    connect.update(opts.credentials_for(server).connect_fields(info.get("nonce")))
    return connect
