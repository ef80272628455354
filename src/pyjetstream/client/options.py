"""Client options and the server pool (explicit URLs plus servers discovered from INFO).

URL forms accepted (as nats.go/nats-py): ``nats://host:port``, ``tls://host:port``, ``host:port``,
``host`` (port 4222), ``[::1]:4222``, with credentials ``nats://user:pass@host`` or ``nats://token@host``;
``ws://host:port/path`` and ``wss://…`` for a server's WebSocket listener (ports 80 and 443 by
default, as nats.go; `websocket`). A comma-separated string is a list of URLs.
"""

from __future__ import annotations

import random
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from pyjetstream.client.auth import Credentials

DEFAULT_URL = "nats://127.0.0.1:4222"
DEFAULT_PORT = 4222
# Bytes buffered while disconnected: nats.go's ReconnectBufSize (nats-py uses 2 MiB).
DEFAULT_PENDING_SIZE = 8 * 1024 * 1024
DEFAULT_SUB_PENDING_MSGS_LIMIT = 512 * 1024
DEFAULT_SUB_PENDING_BYTES_LIMIT = 64 * 1024 * 1024
# Jitter added to each reconnect wait so that a fleet of clients does not reconnect in lock step.
RECONNECT_JITTER = 0.1
RECONNECT_JITTER_TLS = 1.0

ErrorCallback = Callable[[Exception], Awaitable[None] | None]
EventCallback = Callable[[], Awaitable[None] | None]

# scheme → (TLS, WebSocket)
_SCHEMES = {"nats": (False, False), "tls": (True, False), "ws": (False, True), "wss": (True, True)}


@dataclass(slots=True)
class ServerAddress:
    """One entry of the server pool, with its reconnect bookkeeping."""

    host: str
    port: int
    tls: bool = False
    websocket: bool = False  # ws:// or wss:// (`pyjetstream.client.websocket`)
    path: str = "/"  # the WebSocket upgrade's path
    user: str | None = None
    password: str | None = None
    token: str | None = None
    implicit: bool = False  # learned from INFO connect_urls
    reconnects: int = 0
    last_attempt: float = 0.0
    did_connect: bool = False
    last_auth_error: str = ""

    @property
    def hostport(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    @property
    def url(self) -> str:
        if self.websocket:
            path = "" if self.path == "/" else self.path
            return f"{'wss' if self.tls else 'ws'}://{self.hostport}{path}"
        return f"{'tls' if self.tls else 'nats'}://{self.hostport}"


def parse_server_url(url: str, *, implicit: bool = False) -> ServerAddress:
    url = url.strip()
    if "://" not in url:
        url = "nats://" + url
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEMES:
        raise ValueError(
            f"unsupported URL scheme {parts.scheme!r} in {url!r} (use nats://, tls://, ws:// or wss://)"
        )
    tls, websocket = _SCHEMES[scheme]
    host = parts.hostname
    if not host:
        raise ValueError(f"no host in server URL {url!r}")
    try:
        default = (443 if tls else 80) if websocket else DEFAULT_PORT
        port = parts.port or default
    except ValueError as exc:
        raise ValueError(f"bad port in server URL {url!r}") from exc
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    token = None
    if user is not None and password is None:
        # nats://token@host: a lone userinfo part is a token (nats.go, nats-py).
        token, user = user, None
    return ServerAddress(
        host=host,
        port=port,
        tls=tls,
        websocket=websocket,
        path=(parts.path or "/") if websocket else "/",
        user=user,
        password=password,
        token=token,
        implicit=implicit,
    )


def split_servers(servers: str | list[str] | tuple[str, ...]) -> list[str]:
    if isinstance(servers, str):
        servers = servers.split(",")
    urls = [s.strip() for s in servers if s and s.strip()]
    if not urls:
        raise ValueError("no server URL given")
    return urls


class ServerPool:
    """The servers to (re)connect to: explicit ones first, discovered ones appended."""

    def __init__(self, urls: list[str], randomize: bool) -> None:
        self.servers = [parse_server_url(u) for u in urls]
        if randomize:
            random.shuffle(self.servers)
        self.current: ServerAddress | None = None

    def __len__(self) -> int:
        return len(self.servers)

    def __iter__(self):
        return iter(list(self.servers))

    def next_candidates(self) -> list[ServerAddress]:
        """Servers in reconnect order: the one we just lost goes last."""
        order = [s for s in self.servers if s is not self.current]
        if self.current is not None and self.current in self.servers:
            order.append(self.current)
        return order

    def remove(self, server: ServerAddress) -> None:
        if server in self.servers:
            self.servers.remove(server)

    def add_discovered(self, connect_urls: list[str], randomize: bool) -> list[str]:
        """Add servers from INFO ``connect_urls``; returns the URLs that were new."""
        known = {s.hostport for s in self.servers}
        added: list[str] = []
        tls = self.current.tls if self.current is not None else False
        # A WebSocket client learns the servers' WebSocket URLs (nats-server sends those instead).
        websocket = self.current.websocket if self.current is not None else False
        fresh: list[ServerAddress] = []
        for raw in connect_urls:
            try:
                server = parse_server_url(raw, implicit=True)
            except ValueError:
                continue
            if server.hostport in known:
                continue
            server.tls = server.tls or tls
            server.websocket = server.websocket or websocket
            if self.current is not None:
                # Discovered servers are cluster peers: they take the credentials that got us in.
                server.user, server.password = self.current.user, self.current.password
                server.token = self.current.token
            known.add(server.hostport)
            fresh.append(server)
            added.append(server.url)
        if randomize:
            random.shuffle(fresh)
        self.servers.extend(fresh)
        return added


@dataclass(slots=True)
class ClientOptions:
    """Everything ``connect()`` accepts; see ``pyjetstream.client.connect`` for the meaning of each."""

    servers: list[str] = field(default_factory=lambda: [DEFAULT_URL])
    name: str | None = None
    user: str | None = None
    password: str | None = None
    token: str | None = None
    nkeys_seed: str | bytes | Path | None = None
    user_credentials: str | bytes | Path | None = None
    tls: ssl.SSLContext | None = None
    tls_hostname: str | None = None
    connect_timeout: float = 2.0
    reconnect: bool = True
    max_reconnect_attempts: int = 60
    reconnect_time_wait: float = 2.0
    reconnect_jitter: float | None = None
    dont_randomize: bool = False
    ping_interval: float = 120.0
    max_outstanding_pings: int = 2
    no_echo: bool = False
    verbose: bool = False
    pedantic: bool = False
    inbox_prefix: str = "_INBOX"
    pending_size: int = DEFAULT_PENDING_SIZE
    error_cb: ErrorCallback | None = None
    disconnected_cb: EventCallback | None = None
    reconnected_cb: EventCallback | None = None
    closed_cb: EventCallback | None = None
    discovered_server_cb: EventCallback | None = None
    drain_timeout: float = 30.0

    def credentials_for(self, server: ServerAddress) -> Credentials:
        """URL userinfo wins over the options, as in nats.go."""
        if server.user is not None:
            return Credentials(user=server.user, password=server.password)
        if server.token is not None:
            return Credentials(token=server.token)
        return Credentials(
            user=self.user,
            password=self.password,
            token=self.token,
            nkeys_seed=self.nkeys_seed,
            user_credentials=self.user_credentials,
        )

    def jitter(self, tls: bool) -> float:
        if self.reconnect_jitter is not None:
            return self.reconnect_jitter
        return RECONNECT_JITTER_TLS if tls else RECONNECT_JITTER
