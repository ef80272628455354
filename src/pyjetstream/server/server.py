"""The embedded NATS server: listener, routing, lifecycle and the internal API JetStream builds on.

Usage::

    async with Server(jetstream=True, store_dir="/tmp/js") as srv:   # any ServerOptions field
        nc = await nats.connect(srv.client_url)

Internal API (for the JetStream engine in ``pyjetstream.server.jetstream``; all of it must be
called on the server's event loop):

``server.subscribe_internal(subject, callback, queue="") -> InternalSub``
    ``callback(subject, reply, hdr, payload, client)`` runs synchronously in the routing path for
    every matching publish: ``subject``/``reply`` are ``str``, ``hdr`` is the raw header block
    (``bytes``) or ``None``, ``payload`` is ``bytes`` and ``client`` is the publishing
    :class:`ClientConnection` (``None`` for :meth:`publish_internal`). Internal subscriptions are
    interest like client ones (no-responders does not fire) and join queue groups.
    ``InternalSub.unsubscribe()`` removes it. An exception in a callback is logged, not raised.

``server.publish_internal(subject, payload, reply="", hdr=None, show_subject=None) -> bool``
    Routes a message from the server itself to every matching subscription, client and internal.
    With ``show_subject`` the MSG/HMSG line names that subject instead of the routed one (the sid
    is still that of the subscription that matched ``subject``): this is how a stored message is
    delivered to a deliver subject/pull inbox under its original subject. Internal callbacks get
    the shown subject too (what a client would see on the MSG line). Returns whether any
    subscription received it.

``server.has_interest(subject, clients_only=False) -> bool`` /
``server.interest_count(subject, clients_only=False) -> int``
    Whether / how many subscriptions (queue members included) match a literal subject.

``server.on_interest_change(callback) -> Callable[[], None]``
    ``callback(sub: Subscription, added: bool)`` after any subscription is added or removed;
    returns a function that unregisters it.

Also exposed: ``options``, ``server_id``, ``server_name``, ``loop``, ``logger``, ``clients``
(cid → ClientConnection, each with in/out msgs/bytes), ``monitor_handlers`` (path → async
``handler(query: dict[str, str]) -> dict``; add ``/jsz`` there), ``jetstream`` (the engine or
``None``) and ``jetstream_enabled``.

When ``options.jetstream`` is set, :meth:`start` runs ``JetStreamEngine(self).start()`` from
``pyjetstream.server.jetstream.engine`` before accepting clients, and :meth:`shutdown` awaits its
``stop()`` after the clients are drained. Engine hooks used by monitoring:
``engine.varz() -> dict`` (the ``jetstream`` object of ``/varz``) and
``engine.healthz(query) -> str | None`` (a problem makes ``/healthz`` answer 503).

Client TLS (``options.tls``) works as in nats-server: INFO in the clear with ``tls_required``,
then the client's handshake (``tls.timeout``); a failed handshake closes without an ``-ERR``.
``handshake_first`` puts the handshake before INFO; ``allow_non_tls`` advertises ``tls_available``
and lets clients that do not start a handshake stay in the clear; ``verify`` asks for a client
certificate, ``verify_and_map`` maps it to a user, ``pinned_certs`` restricts which ones
(:mod:`pyjetstream.server.tls`).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import platform
import random
import ssl
import time
from collections.abc import Callable
from typing import Any

from pyjetstream.api.versioning import JS_API_LEVEL
from pyjetstream.server.accounts import GLOBAL_ACCOUNT, SYSTEM_ACCOUNT, Account
from pyjetstream.server.auth import Authenticator, new_nonce
from pyjetstream.server.client import ClientConnection, ClosedReason
from pyjetstream.server.ids import new_server_id
from pyjetstream.server.imports import link_imports
from pyjetstream.server.jetstream import monitoring
from pyjetstream.server.jwt_auth import ClaimsUpdates, OperatorTrust, account_config
from pyjetstream.server.log import get_logger
from pyjetstream.server.monitor import MonitorServer, closed_record
from pyjetstream.server.msgtrace import DEST_HDR_B as TRACE_DEST
from pyjetstream.server.msgtrace import MIN_TRACED_HDR, TracedCallback, has_trace_parent
from pyjetstream.server.options import RANDOM_PORT, AccountJetStreamLimits, ServerOptions
from pyjetstream.server.sublist import Sublist
from pyjetstream.server.subscription import Subscription
from pyjetstream.server.sys_imports import SystemImports
from pyjetstream.server.sys_requests import SystemRequests
from pyjetstream.server.version import SERVER_VERSION

__all__ = [
    "SERVER_VERSION",
    "InternalCallback",
    "InternalSub",
    "RunCallback",
    "Server",
]

#: What a frame's control line and CR LFs add, at most, to its subject, reply, sid, header block and
#: payload (``HMSG`` and five separators, two ten-digit sizes, two CR LFs): a run's deliveries are
#: counted against a connection's pending limit with this bound (``Server._route_one``).
_FRAME_SLACK = 40
_find = bytes.find

#: nats-server keeps this many closed connections for ``/connz?state=closed``.
MAX_CLOSED_CLIENTS = 10_000
#: On shutdown, wait this long for clients to take their pending data before cutting them.
SHUTDOWN_DRAIN_TIMEOUT = 2.0

InternalCallback = Callable[[str, str, bytes | None, bytes, ClientConnection | None], None]
#: ``run(subjects, replies, hdrs, payloads, client)``: the messages of one client read that reached
#: this subscription, in order — message *i* is ``(subjects[i], replies[i], hdrs[i], payloads[i])``
#: as ``callback`` would get it one by one (``hdrs[i]`` None for a PUB), ``client`` the publisher.
#: The one run interface of internal subscriptions (a stream's ingest, a consumer's acks).
RunCallback = Callable[
    [list[str], list[str], list["bytes | None"], list[bytes], "ClientConnection | None"], None
]


class InternalSub(Subscription):
    """A subscription owned by the server itself (see ``Server.subscribe_internal``).

    ``traced`` is the callback a traced message goes to instead (``msgtrace.TracedCallback``:
    the trace first), for the subscriptions whose work shows in a trace event (a stream's ingest,
    the import forwarders); without it a traced message reaches ``callback`` as any other.
    ``run`` (:data:`RunCallback`) takes, in one call, each stretch of a read's messages that
    reached it alone in a row (``Server.route_msgs``); without it each reaches ``callback``."""

    __slots__ = ("account", "run", "traced")

    def __init__(
        self,
        account: Account,
        subject: str,
        sid: str,
        queue: str,
        callback: InternalCallback,
        traced: TracedCallback | None = None,
        run: RunCallback | None = None,
    ) -> None:
        super().__init__(subject, sid, queue, client=None, callback=callback)
        self.account = account
        self.traced = traced
        self.run = run

    def unsubscribe(self) -> None:
        if not self.closed:
            self.closed = True
            self.account.remove_subscription(self)


class Server:
    """A single-node NATS server on asyncio. ``Server(options, **overrides)``.

    Without ``options`` the server listens on 127.0.0.1 on a random port (it is meant to be
    embedded); pass ServerOptions or ``port=4222`` for a fixed one. Overrides are ServerOptions
    field names; ``options`` is copied, and checked (OptionsError) when the server starts.
    """

    def __init__(self, options: ServerOptions | None = None, **overrides: Any) -> None:
        if options is None:
            opts = ServerOptions(host="127.0.0.1", port=RANDOM_PORT)
        else:
            opts = options.copy()
        for key, value in overrides.items():
            if not hasattr(opts, key):
                raise TypeError(f"unknown server option {key!r}")
            setattr(opts, key, value)
        self.options = opts
        self.server_id = new_server_id()
        self.server_name = opts.server_name or self.server_id
        self.logger = get_logger()
        self.trace = opts.trace or opts.trace_verbose
        self.authenticator = Authenticator(opts)
        #: Accounts by name: ``$G`` (users without an account), ``$SYS`` and the configured ones.
        self.accounts: dict[str, Account] = {}
        #: The system imports of every account (``sys_imports``), set up by start().
        self.system_imports: SystemImports | None = None
        self.global_account = self._add_account(GLOBAL_ACCOUNT)
        self.system_account: Account | None = None
        self._configure_accounts()
        self.clients: dict[int, ClientConnection] = {}
        self.closed_clients: collections.deque[tuple[dict[str, Any], dict[str, Any]]] = collections.deque(
            maxlen=MAX_CLOSED_CLIENTS
        )
        self.monitor_handlers: dict[str, Callable[[dict[str, str]], Any]] = {}
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # set by start()
        # --- stats
        self.start_wall_ns = time.time_ns()
        self.config_load_time_ns = self.start_wall_ns
        self.total_connections = 0
        # Message counts of connections that are gone; live ones count on the connection.
        self._closed_in_msgs = 0
        self._closed_in_bytes = 0
        self._closed_out_msgs = 0
        self._closed_out_bytes = 0
        self.slow_consumers = 0
        self.stale_connections = 0  # ping timeouts (varz stale_connections)
        self.stalled_clients = 0  # producer stalls by a full consumer (varz stalled_clients)
        #: The sequence of the server's events (nats-server ``s.sys.seq``): message traces.
        self.event_seq = 0
        self.http_req_stats: dict[str, int] = {}
        # --- internals
        self._cid = 0
        self._isid = 0
        self._listener: asyncio.Server | None = None
        self._ws_listener: asyncio.Server | None = None
        self.ws_port = 0
        self._monitor: Any = None
        self._info_prefix = b""
        self._ports_file = ""
        self._running = False
        self._shutdown_started = False
        self._done: asyncio.Event | None = None
        self._draining: set[ClientConnection] = set()
        self._drained = asyncio.Event()
        self.port = 0
        self.http_port = 0
        #: The TLS context for client connections (from options.tls), set by start().
        self.ssl_context: ssl.SSLContext | None = None
        #: While a client's read is processed (:meth:`begin_read`): the connections given output
        #: during it, flushed when it is done (nats-server ``client.pcd``); ``None`` between reads.
        self.pcd: list[ClientConnection] | None = None
        self.reads = 0  # client reads processed (begin_read): tells one read from the next
        #: What must run when the read is processed, before that flush (:meth:`after_read`).
        self._read_end: list[Callable[[], None]] = []
        #: The queue-group pick's randomness (``queue_seed``: repeatable).
        self._rng: Any = random if opts.queue_seed is None else random.Random(opts.queue_seed)

    # ------------------------------------------------------------------ addresses

    @property
    def _connect_host(self) -> str:
        host = self.options.host
        if host in ("", "0.0.0.0"):
            return "127.0.0.1"
        if host == "::":
            return "[::1]"
        return f"[{host}]" if ":" in host else host

    @property
    def client_url(self) -> str:
        """``nats://host:port`` for clients (a wildcard bind address becomes loopback)."""
        return f"nats://{self._connect_host}:{self.port}"

    url = client_url

    @property
    def monitor_url(self) -> str:
        return f"http://{self._connect_host}:{self.http_port}" if self.http_port else ""

    @property
    def sublist(self) -> Sublist:
        """The global account's sublist (the whole server's when no accounts are configured)."""
        return self.global_account.sublist

    @property
    def jetstream(self) -> Any:
        """A JetStream engine for server-wide questions: the global account's, else the first
        account's that has one; ``None`` when JetStream is off."""
        if self.global_account.jetstream is not None:
            return self.global_account.jetstream
        engines = self.jetstream_engines()
        return engines[0] if engines else None

    @property
    def jetstream_enabled(self) -> bool:
        return self.jetstream is not None

    def jetstream_engines(self) -> list[Any]:
        """Every account's engine, in account order."""
        return [a.jetstream for a in self.accounts.values() if a.jetstream is not None]

    # ------------------------------------------------------------------- accounts

    def _add_account(self, name: str, config: Any = None) -> Account:
        account = Account(self, name, config)
        self.accounts[name] = account
        if self.system_imports is not None:  # an account learnt of after start (operator mode)
            self.system_imports.register(account)
        return account

    def _configure_accounts(self) -> None:
        """Accounts of the config, and the system account (nats-server ``configureAccounts``)."""
        opts = self.options
        for config in opts.accounts:
            if config.name not in self.accounts:
                self._add_account(config.name, config)
        trust = self.authenticator.trust
        if trust is not None:  # operator mode: the accounts the resolver knows, by public key

            for pub in list(trust.accounts):
                claims = trust.account_claims(pub)
                if claims is not None:
                    self._add_account(pub, account_config(pub, claims))
        if not opts.no_system_account:
            name = opts.system_account or (trust.system_account if trust is not None else "") or SYSTEM_ACCOUNT
            self.system_account = self.accounts.get(name) or self._add_account(name)
            self.system_account.is_system = True

    def lookup_account(self, name: str) -> Account:
        """The account a user belongs to (``""``: the global account)."""
        account = self.accounts.get(name or GLOBAL_ACCOUNT)
        if account is None:  # operator mode: an account the resolver learnt of
            account = self._add_account(name)
        return account

    def account_claims_updated(self, pub: str, claims: dict[str, Any]) -> None:
        """A newer account JWT arrived (``CLAIMS.UPDATE``): apply its limits, start its JetStream,
        and close the connections of users it revokes (nats-server ``updateAccountClaims``)."""

        config = account_config(pub, claims)
        account = self.accounts.get(pub)
        if account is None:
            account = self._add_account(pub, config)
            if self.options.jetstream and not config.jetstream:
                account.answer_jetstream_disabled()
        else:
            account.config = config
            account.trace_dest, account.trace_sampling = config.msg_trace_dest, config.msg_trace_sampling
        account.updated_ns = time.time_ns()
        if config.jetstream and config.jetstream_limits is not None:
            if account.jetstream is not None:
                account.js_limits = config.jetstream_limits
                account.jetstream.limits = config.jetstream_limits
            elif self.options.jetstream and not account.is_system:
                account.stop_disabled_api()
                self.loop.create_task(account.enable_jetstream(config.jetstream_limits))
        nats = claims.get("nats") or {}
        for conn in list(self.clients.values()):
            identity = conn.identity
            if conn.account is account and identity is not None:
                if OperatorTrust.revoked(nats, identity.user, identity.issued_at):
                    conn.revoked()

    def _global_account_only(self) -> bool:
        """nats-server's ``globalAccountOnly``: no account but ``$G`` and the system account."""
        if self.authenticator.trust is not None:
            return False
        return all(a is self.global_account or a is self.system_account for a in self.accounts.values())

    @property
    def running(self) -> bool:
        return self._running

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Server:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Start everything and return once clients can connect (nats-server's "Server is ready")."""
        if self._running:
            return
        self.options.validate()
        self.loop = asyncio.get_running_loop()
        self._done = asyncio.Event()
        opts = self.options
        log = self.logger
        log.info("Starting nats-server")
        log.info("  Version:  %s (pyjetstream)", SERVER_VERSION)
        log.info("  Name:     %s", self.server_name)
        log.info("  ID:       %s", self.server_id)
        if opts.config_file:
            log.info("Using configuration file: %s", opts.config_file)
        for warning in opts.warnings:
            log.warning("%s", warning)
        try:
            if opts.monitor_bind_port is not None:
                self._monitor = MonitorServer(self)
                self.http_port = await self._monitor.start(opts.monitor_host, opts.monitor_bind_port)
                log.info("Starting http monitor on %s:%d", opts.monitor_host, self.http_port)
            if opts.tls is not None:
                self.ssl_context = self._tls_context()
            if opts.jetstream:
                await self._start_jetstream()
            link_imports(self.accounts)
            if self.authenticator.trust is not None and self.system_account is not None:
                ClaimsUpdates(self, self.system_account).subscribe()
            if self.system_account is not None:  # $SYS.REQ.* (nats server list/report/request)
                self.system_imports = SystemImports(self, self.system_account)
                self.system_imports.start()
                SystemRequests(self, self.system_account).subscribe()
            tls_first: dict[str, Any] = {}
            if self.ssl_context is not None and opts.tls is not None and opts.tls.handshake_first:
                # handshake_first: TLS from the first byte, done by the event loop before the
                # connection is handed over (no ClientHello can reach the NATS parser).
                tls_first = {"ssl": self.ssl_context, "ssl_handshake_timeout": opts.tls.timeout}
            self._listener = await self.loop.create_server(
                lambda: ClientConnection(self),
                host=opts.host or None,
                port=opts.bind_port,
                reuse_address=True,
                backlog=1024,
                **tls_first,
            )
        except BaseException:
            await self._stop_services()
            raise
        sock = self._listener.sockets[0]
        self.port = sock.getsockname()[1]
        self._build_info()
        if opts.websocket is not None and opts.websocket.port != 0:
            await self._start_websocket()
        log.info("Listening for client connections on %s:%d", opts.host, self.port)
        if self.ssl_context is not None:
            log.info("TLS required for client connections")
        self._write_process_files()
        self._running = True
        log.info("Server is ready")

    async def _start_websocket(self) -> None:
        """The ``websocket {}`` listener (nats-server ``startWebsocketServer``)."""

        # Deferred: start-up time (wsproto and h11 cost ~50 ms to import; only a websocket listener needs them).
        from pyjetstream.server.websocket import start_websocket_listener

        ws = self.options.websocket
        assert ws is not None
        try:
            self._ws_listener = await start_websocket_listener(self, ws)
        except BaseException:
            await self._stop_services()
            raise
        self.ws_port = self._ws_listener.sockets[0].getsockname()[1]
        scheme = "wss" if ws.tls is not None else "ws"
        self.logger.info("Listening for websocket clients on %s://%s:%d", scheme, ws.host, self.ws_port)
        if ws.tls is None:
            self.logger.warning("Websocket not configured with TLS. DO NOT USE IN PRODUCTION!")

    @property
    def websocket_url(self) -> str:
        """``ws://host:port`` of the websocket listener ("" without one)."""
        ws = self.options.websocket
        if not self.ws_port or ws is None:
            return ""
        return f"{'wss' if ws.tls is not None else 'ws'}://{self._connect_host}:{self.ws_port}"

    def _tls_context(self) -> ssl.SSLContext:
        tls = self.options.tls
        assert tls is not None
        return tls.server_context()

    async def _start_jetstream(self) -> None:
        """JetStream for the accounts that have it (nats-server ``configAllJetStreamAccounts``):
        the global account alone when no accounts are configured, else each account with a
        ``jetstream`` block; every other account answers the API with 10039."""

        for account in self.accounts.values():
            config = account.config
            if self._global_account_only():
                enabled = account is self.global_account
                limits = AccountJetStreamLimits()
            else:
                enabled = config is not None and config.jetstream and not account.is_system
                limits = (config.jetstream_limits if config is not None else None) or AccountJetStreamLimits()
            if enabled:
                await account.enable_jetstream(limits)
            else:
                account.answer_jetstream_disabled()
        if self.jetstream_engines():

            async def jsz(query: dict[str, str]) -> dict[str, Any]:
                return monitoring.jsz_server(self, query)

            self.monitor_handlers["/jsz"] = jsz

    async def shutdown(self) -> None:
        """Stop accepting, drain clients (flush their pending data, then close), stop JetStream."""
        if self._shutdown_started:
            if self._done is not None:
                await self._done.wait()
            return
        self._shutdown_started = True
        self.logger.info("Initiating Shutdown...")
        if self._listener is not None:
            self._listener.close()
        if self._ws_listener is not None:
            self._ws_listener.close()
        clients = list(self.clients.values())
        for conn in clients:
            conn.close(ClosedReason.SHUTDOWN)
        await self._wait_transports_closed(clients)
        if self._listener is not None:
            try:
                await asyncio.wait_for(self._listener.wait_closed(), SHUTDOWN_DRAIN_TIMEOUT)
            except TimeoutError:
                pass
        await self._stop_services()
        self._remove_ports_file()
        self._running = False
        self.logger.info("Server Exiting..")
        if self._done is not None:
            self._done.set()

    stop = shutdown

    async def _wait_transports_closed(self, clients: list[ClientConnection]) -> None:
        """Give closing connections time to write what they still hold, then cut the rest."""
        self._draining = {c for c in clients if not c.lost}
        self._drained = asyncio.Event()
        if self._draining:
            try:
                await asyncio.wait_for(self._drained.wait(), SHUTDOWN_DRAIN_TIMEOUT)
            except TimeoutError:
                pass
        for conn in clients:
            if not conn.lost and conn.transport is not None:
                conn.transport.abort()

    def connection_gone(self, conn: ClientConnection) -> None:
        """Called by a connection once its socket is closed (connection_lost)."""
        if conn in self._draining:
            self._draining.discard(conn)
            if not self._draining:
                self._drained.set()

    async def _stop_services(self) -> None:
        for account in self.accounts.values():
            await account.stop_jetstream()
        if self._monitor is not None:
            await self._monitor.stop()
            self._monitor = None

    async def wait_closed(self) -> None:
        """Return once [`shutdown`][pyjetstream.server.server.Server.shutdown] has finished."""
        assert self._done is not None, "server not started"
        await self._done.wait()

    async def serve_forever(self) -> None:
        """Start the server and return once it has shut down."""
        await self.start()
        await self.wait_closed()

    # ------------------------------------------------------------- process files

    def _write_process_files(self) -> None:
        opts = self.options
        if opts.pid_file:
            with open(opts.pid_file, "w", encoding="utf-8") as fh:
                fh.write(str(os.getpid()))
        if opts.ports_file_dir:
            ports: dict[str, list[str]] = {"nats": [f"nats://{self._connect_host}:{self.port}"]}
            if self.http_port:
                ports["monitoring"] = [self.monitor_url]
            if self.ws_port:
                ports["websocket"] = [self.websocket_url]
            # nats-server names it after itself whatever the binary is called (``nats-server_<pid>.ports``),
            # and test harnesses look for exactly that name.
            path = os.path.join(opts.ports_file_dir, f"nats-server_{os.getpid()}.ports")
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(ports, fh, separators=(",", ":"))
            os.replace(tmp, path)  # readers poll for the file: it must appear complete
            self._ports_file = path

    def _remove_ports_file(self) -> None:
        if self._ports_file:
            try:
                os.remove(self._ports_file)
            except OSError:
                pass
            self._ports_file = ""

    # ------------------------------------------------------------------- clients

    def next_cid(self) -> int:
        self._cid += 1
        return self._cid

    def register_client(self, conn: ClientConnection) -> bool:
        """Add a new connection; False when max_connections is reached."""
        if self._shutdown_started or len(self.clients) >= self.options.max_connections:
            return False
        self.clients[conn.cid] = conn
        self.total_connections += 1
        return True

    def unregister_client(self, conn: ClientConnection) -> None:
        if self.clients.pop(conn.cid, None) is not None:
            self._closed_in_msgs += conn.in_msgs
            self._closed_in_bytes += conn.in_bytes
            self._closed_out_msgs += conn.out_msgs
            self._closed_out_bytes += conn.out_bytes
            conn.account.connection_gone(conn)
            self.closed_clients.append(closed_record(conn))

    def message_totals(self) -> tuple[int, int, int, int]:
        """Server-wide ``(in_msgs, in_bytes, out_msgs, out_bytes)`` of client connections."""
        in_msgs, in_bytes = self._closed_in_msgs, self._closed_in_bytes
        out_msgs, out_bytes = self._closed_out_msgs, self._closed_out_bytes
        for conn in self.clients.values():
            in_msgs += conn.in_msgs
            in_bytes += conn.in_bytes
            out_msgs += conn.out_msgs
            out_bytes += conn.out_bytes
        return in_msgs, in_bytes, out_msgs, out_bytes

    def _build_info(self) -> None:
        opts = self.options
        info: dict[str, Any] = {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "version": SERVER_VERSION,
            "proto": 1,
            "go": f"python{platform.python_version()}",
            "host": opts.host,
            "port": self.port,
            "headers": not opts.no_header_support,
        }
        if self.authenticator.info_auth_required:
            info["auth_required"] = True
        if self.ssl_context is not None:
            if opts.allow_non_tls:
                info["tls_available"] = True
            else:
                info["tls_required"] = True
            if opts.tls is not None and opts.tls.verify:
                info["tls_verify"] = True
        info["max_payload"] = opts.max_payload
        if self.jetstream is not None:
            info["jetstream"] = True
        text = json.dumps(info, separators=(",", ":"))
        self._info_prefix = ("INFO " + text[:-1] + ',"client_id":').encode()

    def info_for(self, conn: ClientConnection) -> bytes:
        """The INFO line for one client (nats-server ends it with ``} \\r\\n``)."""
        tail = f'{conn.cid},"client_ip":{json.dumps(conn.ip)}'
        if self.authenticator.uses_nonce:
            conn.nonce = new_nonce()
            tail += f',"nonce":"{conn.nonce}"'
        if self.jetstream is not None and JS_API_LEVEL:
            tail += f',"api_lvl":{JS_API_LEVEL}'  # nats-server Info.JSApiLevel (omitempty)
        return self._info_prefix + (tail + "} \r\n").encode()

    # ------------------------------------------------------------- subscriptions

    def add_subscription(self, sub: Subscription) -> None:
        """Index a subscription in the global account (raises SublistError for an invalid subject)."""
        self.global_account.add_subscription(sub)

    def remove_subscription(self, sub: Subscription) -> None:
        self.global_account.remove_subscription(sub)

    def on_interest_change(self, callback: Callable[[Subscription, bool], None]) -> Callable[[], None]:
        return self.global_account.on_interest_change(callback)

    # -------------------------------------------------------------- internal API

    def subscribe_internal(
        self,
        subject: str,
        callback: InternalCallback,
        queue: str = "",
        account: Account | None = None,
        traced: TracedCallback | None = None,
        run: RunCallback | None = None,
    ) -> InternalSub:
        """An internal subscription in ``account`` (default: the global account); ``traced``
        takes traced messages, ``run`` a read's messages in one call (see :class:`InternalSub`)."""
        self._isid += 1
        acc = account or self.global_account
        sub = InternalSub(acc, subject, str(self._isid), queue, callback, traced, run)
        acc.add_subscription(sub)
        return sub

    def publish_internal(
        self,
        subject: str,
        payload: bytes,
        reply: str = "",
        hdr: bytes | None = None,
        show_subject: str | None = None,
    ) -> bool:
        return self.route(subject, reply, hdr, payload, None, show_subject)

    def begin_read(self) -> bool:
        """A client's read is about to be processed: collect the connections it gives output to
        (``pcd``) instead of scheduling their flushes. False when a read is already being
        processed (the outer one ends it)."""
        if self.pcd is not None:
            return False
        self.pcd = []
        self.reads += 1
        return True

    def end_read(self) -> None:
        """The read is processed: run what waited for it (:meth:`after_read`: a file stream's
        writes of the read, then their PubAcks), then write every connection's output at once
        (nats-server ``flushClients`` at the end of ``readLoop``) — a publisher's PubAck leaves
        in the turn its PUB came in, not one event-loop turn later."""
        try:
            self._run_read_ends()
        finally:
            pcd, self.pcd = self.pcd, None
            self._flush_pcd(pcd or [])

    def _run_read_ends(self) -> None:
        logger = self.logger
        while self._read_end:
            ends, self._read_end = self._read_end, []
            for end in ends:
                try:
                    end()
                except Exception:  # as the loop would for a callback: one failure stops nothing else
                    logger.exception("internal error at the end of a read")

    def _flush_pcd(self, pcd: list[ClientConnection]) -> None:
        for conn in pcd:
            try:
                conn.flush_out()
            except Exception:
                self.logger.exception("internal error writing to %s", conn.log_prefix)

    def current_read(self) -> int:
        """The number of the client read being processed (tells one read from the next), 0
        outside one: a stream writes the first publish of a read alone (``StreamIngest.on_msg``)."""
        return self.reads if self.pcd is not None else 0

    def after_read(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the client read being processed is done (before the output it
        made is written: :meth:`end_read`), or — outside a read (a timer, an internal
        publish) — at the end of this event-loop turn."""
        if self.pcd is not None:
            self._read_end.append(callback)
        else:
            self.loop.call_soon(callback)

    def publish_replies(self, replies: list[tuple[str, bytes]], account: Account | None = None) -> None:
        """:meth:`publish_internal` ``(subject, payload)`` of each pair, in order (a stream's
        PubAcks of one read): routed together (:meth:`route_msgs`), as one by one."""
        n = len(replies)
        if n == 1:
            self.route(replies[0][0], "", None, replies[0][1], None, None, account)
            return
        subjects = [r[0] for r in replies]
        payloads = [r[1] for r in replies]
        self.route_msgs(subjects, [""] * n, [None] * n, payloads, None, account)

    def lone_receiver(self, subject: str, account: Account | None = None) -> Subscription | None:
        """The client subscription a server publish to ``subject`` reaches when it reaches exactly
        one (no queue group, no internal subscriber, no second match): what :meth:`route` would
        hand to ``ClientConnection.deliver``. A consumer's delivery pass looks its destination
        up once and frames each message straight onto that connection (``deliver``, then
        :meth:`count_matches`); a receiver closed meanwhile sends it back through :meth:`route`.
        The match is not counted here (see ``count_matches``)."""
        sl = (account or self.global_account).sublist
        result = sl.cache.get(subject)
        if result is None:
            result = sl.match(subject)
            sl.matches -= 1  # (match counted it; the deliveries count themselves)
        psubs, qsubs = result
        if qsubs or len(psubs) != 1:
            return None
        sub = psubs[0]
        return sub if sub.client is not None and not sub.closed else None

    def count_matches(self, n: int) -> None:
        """``n`` deliveries went to a :meth:`lone_receiver` without :meth:`route` (its statistics)."""
        self.global_account.sublist.matches += n

    def has_interest(self, subject: str, clients_only: bool = False) -> bool:
        return self.global_account.has_interest(subject, clients_only)

    def interest_count(self, subject: str, clients_only: bool = False) -> int:
        return self.global_account.interest_count(subject, clients_only)

    # ------------------------------------------------------------------- routing

    def route(
        self,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        client: ClientConnection | None,
        show_subject: str | None = None,
        account: Account | None = None,
    ) -> bool:
        """Deliver one message to every matching subscription; True if anyone received it.

        nats-server ``processMsgResults``: look the subject up in ``account``'s sublist (by default
        the publishing client's account, the global account for the server's own publishes; one
        cache hit on the hot path), pick one member per queue group, and hand the message to each
        receiver — a client connection's :meth:`ClientConnection.deliver` (which frames it into
        its own buffer) or an internal subscription's callback. ``client`` is the publisher
        (``None`` for the server).
        """
        if account is None:
            account = client.account if client is not None else self.global_account
        psubs, qsubs = account.sublist.match(subject)
        if qsubs:
            psubs = psubs + self._pick_queue_members(qsubs, client)
        elif len(psubs) == 1:
            # The common case (a subscriber, a reply inbox, a pull inbox; internally a stream's
            # subject, a consumer's acks, an API request): no loop.
            sub = psubs[0]
            conn = sub.client
            if not sub.closed:
                if conn is None:
                    sub.delivered += 1
                    try:
                        sub.callback(subject if show_subject is None else show_subject, reply, hdr, payload, client)
                    except Exception:
                        self.logger.exception("internal subscription callback for %r failed", sub.subject)
                    return True
                if conn.deliver(sub, subject, reply, hdr, payload, client, show_subject):
                    return True
                if reply and client is not None and client.no_responders:
                    self.no_responders(client, reply, subject)
                return False
        delivered = False
        for sub in psubs:
            # A closed connection has closed all its subscriptions, so sub.closed covers both.
            if sub.closed:
                continue
            conn = sub.client
            if conn is None:
                delivered = True
                sub.delivered += 1
                try:
                    sub.callback(
                        subject if show_subject is None else show_subject, reply, hdr, payload, client
                    )
                except Exception:
                    self.logger.exception("internal subscription callback for %r failed", sub.subject)
                continue
            if conn.deliver(sub, subject, reply, hdr, payload, client, show_subject):
                delivered = True
        if not delivered and reply and client is not None and client.no_responders:
            self.no_responders(client, reply, subject)
        return delivered

    def route_msgs(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
        account: Account | None = None,
    ) -> int:
        """Route a run of messages — a read's publishes of ``client`` (a :class:`PubRun`), or the
        server's own (``client`` None: a stream's PubAcks) — as :meth:`route` routes each in
        turn; returns how many were routed: all, or fewer when one closed or stalled ``client``
        (the caller holds the rest, as after a stall in :meth:`route`).

        nats-server batches at the receiver (``processMsgResults`` per message, then
        ``flushClients`` once per read); here, in the same order, with one lookup per distinct
        subject (the sublist's cache): a connection's deliveries are collected and framed into its
        buffer in one call (``ClientConnection.frame_msgs``); an internal subscription with a
        ``run`` takes each stretch of messages that reach it alone in a row in one call
        (:meth:`_run_stretch`). Anything that may act on another connection at once — an
        internal callback, a run, a traced message, an auto-unsubscribe — is a cut: what was
        collected before it is framed first, so every connection receives the bytes of
        per-message routing. A delivery that may pass a connection's pending limit (an early
        write, a slow-consumer cut) or stall the producer is an event: what was collected is
        framed there and the checks are made in receiver order, as ``ClientConnection._queued``
        makes them per message."""
        if account is None:
            account = client.account if client is not None else self.global_account
        sl = account.sublist
        cache = sl.cache
        match = sl.match
        pending: dict[ClientConnection, list[Any]] = {}  # connection -> [room, sub, i, sub, i ...]
        events: list[ClientConnection] = []  # this message's connections to check (_frame_pending)
        stretch: Any = None  # the internal subscription taking messages lo..i-1 (a run)
        lo = hits = 0
        n = len(payloads)
        traced_too = client is not None and bool(client.account.trace_dest)
        i = 0
        try:
            while i < n:
                subject = subjects[i]
                result = cache.get(subject)
                if result is None:
                    result = match(subject)
                else:
                    hits += 1
                psubs, qsubs = result
                hdr = hdrs[i]
                traced = (
                    hdr is not None
                    and client is not None
                    and len(hdr) >= MIN_TRACED_HDR
                    and (_find(hdr, TRACE_DEST) >= 0 or (traced_too and has_trace_parent(hdr)))
                )  # may be traced (msgtrace.may_be_traced): routed on its own, in its place
                run_sub: Any = None
                if not traced:
                    if qsubs:
                        psubs = psubs + self._pick_queue_members(qsubs, client)
                    if len(psubs) == 1:
                        run_sub = psubs[0]
                        if run_sub is stretch:
                            i += 1
                            continue
                        if run_sub.client is not None or run_sub.run is None or run_sub.closed:
                            run_sub = None
                # A cut: the stretch before this message takes its run first.
                if stretch is not None:
                    self._run_stretch(stretch, lo, i, subjects, replies, hdrs, payloads, client)
                    stretch = None
                    if client is not None and client.closed:
                        return i
                if run_sub is not None:  # an internal subscription that takes runs: a stretch starts
                    if pending:
                        pending = self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                    stretch = run_sub
                    lo = i
                    i += 1
                    continue
                if traced:
                    hits -= 1  # (the trace's route looks it up again)
                    if pending:
                        pending = self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                    publisher: Any = client
                    if not publisher._traced_pub(subject, replies[i], hdr, payloads[i], False):
                        # not processed (as on the per-message path, which does not count it)
                        publisher.in_msgs -= 1
                        publisher.in_bytes -= len(hdr) + len(payloads[i])  # type: ignore[arg-type]
                else:
                    pending = self._route_one(i, psubs, pending, events, subjects, replies, hdrs, payloads, client)
                    if events:
                        pending = self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                i += 1
                if client is not None and (client.closed or client.stalled):
                    if pending:  # (what this message's later receivers were given)
                        self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                    return i
            if stretch is not None:
                self._run_stretch(stretch, lo, n, subjects, replies, hdrs, payloads, client)
            if pending:
                self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
            return n
        finally:
            sl.matches += hits

    def _route_one(
        self,
        i: int,
        psubs: tuple[Subscription, ...],
        pending: dict[ClientConnection, list[Any]],
        events: list[ClientConnection],
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
    ) -> dict[ClientConnection, list[Any]]:
        """:meth:`route_msgs` for message ``i`` and its receivers ``psubs`` (queue members
        picked): each connection's delivery collected in ``pending`` (``[room, sub, i ...]``, the
        bytes ``room`` left before the connection's pending limit, counted with an upper bound of
        each frame's size), a connection whose delivery may pass it or stall the producer added
        to ``events``; an internal callback, an auto-unsubscribe or a no-responders answer in
        their place. Returns ``pending`` (a new one after a cut). What :meth:`route` +
        ``ClientConnection.deliver`` decide per delivery is decided here (no echo, deliver
        permissions, the delivered count and auto-unsubscribe); the framing is the
        connection's (``frame_msgs``)."""
        subject = subjects[i]
        reply = replies[i]
        hdr = hdrs[i]
        delivered = False
        bound = -1
        for sub in psubs:
            if sub.closed:
                continue
            conn = sub.client
            if conn is None:
                if pending:
                    pending = self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                delivered = True
                sub.delivered += 1
                try:
                    sub.callback(subject, reply, hdr, payloads[i], client)
                except Exception:
                    self.logger.exception("internal subscription callback for %r failed", sub.subject)
                continue
            if conn is client and not conn.echo:  # type: ignore[union-attr]
                continue
            deliver_filter = conn.deliver_filter
            if deliver_filter is not None and not deliver_filter.deliver_allowed(subject, reply, sub.queue or ""):
                continue
            delivered = True
            if sub.max_msgs:  # auto-unsubscribe: removed before its last message is framed, as deliver does
                if pending:
                    pending = self._frame_pending(pending, events, subjects, replies, hdrs, payloads, client)
                sub.delivered += 1
                if sub.delivered >= sub.max_msgs:
                    conn.remove_sub(sub)
            else:
                sub.delivered += 1
            if bound < 0:
                payload = payloads[i]
                bound = len(payload) + len(subject) + len(reply) + _FRAME_SLACK
                if hdr is not None:
                    bound += len(hdr)
            items = pending.get(conn)
            if items is None:
                items = pending[conn] = [conn.pending_limit - conn.out_size]
                if conn.write_paused and client is not None and client.may_stall(conn):
                    events.append(conn)
            room = items[0] = items[0] - bound - len(sub.sid_b)
            items.append(sub)
            items.append(i)
            if room < 0 and conn not in events:
                events.append(conn)
        if not delivered and reply and client is not None and client.no_responders:
            frame = self._no_responders_frame(client, reply, subject)
            if frame:
                items = pending.get(client)
                if items is None:
                    items = pending[client] = [client.pending_limit - client.out_size]
                items[0] -= len(frame)
                items.append(None)
                items.append(frame)
                if items[0] < 0 and client not in events:
                    events.append(client)
        return pending

    def _frame_pending(
        self,
        pending: dict[ClientConnection, list[Any]],
        events: list[ClientConnection],
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
    ) -> dict[ClientConnection, list[Any]]:
        """Frame what :meth:`_route_one` collected, each connection's in one call, then make the
        checks of the connections in ``events``, in order (``ClientConnection.frames_checked``:
        an early write, a slow-consumer cut, a producer stall); returns a new, empty collection."""
        for conn, items in pending.items():
            conn.frame_msgs(items, subjects, replies, hdrs, payloads)
        if events:
            for conn in events:
                conn.frames_checked(client)
            events.clear()
        return {}

    def _run_stretch(
        self,
        sub: InternalSub,
        lo: int,
        hi: int,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: ClientConnection | None,
    ) -> None:
        """Messages ``lo`` to ``hi`` (not included) reached ``sub`` alone, in a row: its ``run``
        takes them in one call (``callback`` a lone one), as :meth:`route` would hand each."""
        sub.delivered += hi - lo
        try:
            if hi - lo == 1:
                sub.callback(subjects[lo], replies[lo], hdrs[lo], payloads[lo], client)
            elif lo == 0 and hi == len(payloads):
                sub.run(subjects, replies, hdrs, payloads, client)  # type: ignore[misc]
            else:
                sub.run(subjects[lo:hi], replies[lo:hi], hdrs[lo:hi], payloads[lo:hi], client)  # type: ignore[misc]
        except Exception:
            self.logger.exception("internal subscription callback for %r failed", sub.subject)

    def _pick_queue_members(
        self, qsubs: tuple[tuple[Subscription, ...], ...], client: ClientConnection | None
    ) -> tuple[Subscription, ...]:
        """One member per queue group, at random (``queue_seed``: repeatably), skipping ones that
        cannot take the message."""
        picked = []
        randrange = self._rng.randrange
        for group in qsubs:
            n = len(group)
            start = randrange(n) if n > 1 else 0
            for k in range(n):
                sub = group[(start + k) % n]
                conn = sub.client
                if sub.closed or (
                    conn is not None and (conn.closed or (client is not None and conn is client and not client.echo))
                ):
                    continue
                picked.append(sub)
                break
        return tuple(picked)

    def _no_responders_frame(self, client: ClientConnection, reply: str, subject: str) -> bytes:
        """The 503 that tells a requester nobody listens on ``subject`` (nats-server
        ``processMsgResults``): ``HMSG <reply> <sid> <n> <n>`` + ``NATS/1.0 503`` +
        ``Nats-Subject: <subject>``, for its own subscription to ``reply``; b"" when it has none."""
        psubs, _ = client.account.sublist.match(reply)
        for sub in psubs:
            if sub.client is client:
                hdr = b"NATS/1.0 503\r\nNats-Subject: %b\r\n\r\n" % subject.encode()
                return b"HMSG %b %b %d %d\r\n%b\r\n" % (reply.encode(), sub.sid_b, len(hdr), len(hdr), hdr)
        return b""

    def no_responders(self, client: ClientConnection, reply: str, subject: str = "") -> None:
        """Tell a requester nobody listens on ``subject`` (:meth:`_no_responders_frame`)."""
        frame = self._no_responders_frame(client, reply, subject)
        if frame:
            client.enqueue(frame)
