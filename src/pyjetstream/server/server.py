"""The embedded NATS server: listener, routing, lifecycle and the internal API JetStream builds on.

Usage:

    async with Server(jetstream=True, store_dir="/tmp/js") as srv:   # any ServerOptions field
        nc = await nats.connect(srv.client_url)

Internal API (for the JetStream engine in ``pyjetstream.server.jetstream``; all of it must be
called on the server's event loop):

``server.subscribe_internal(subject, callback, queue="") -> InternalSub``
    ``callback(subject, reply, hdr, payload, client)`` runs synchronously in the routing path for
    every matching publish: ``subject``/``reply`` are ``str``, ``hdr`` is the raw header block
    (``bytes``) or ``None``, ``payload`` is ``bytes`` and ``client`` is the publishing
    `ClientConnection` (``None`` for `publish_internal`). Internal subscriptions are
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
(cid → ClientConnection, each with in/out msgs/bytes), ``monitor_handlers`` (path →
``handler(query: dict[str, str]) -> dict``, a plain function; add ``/jsz`` there), ``jetstream`` (the engine or
``None``) and ``jetstream_enabled``.

When ``options.jetstream`` is set, `start` runs ``JetStreamEngine(self).start()`` from
``pyjetstream.server.jetstream.engine`` before accepting clients, and [`shutdown`][pyjetstream.server.server.Server.shutdown] awaits its
``stop()`` after the clients are drained. Engine hooks used by monitoring:
``engine.varz() -> dict`` (the ``jetstream`` object of ``/varz``) and
``engine.healthz(query) -> str | None`` (a problem makes ``/healthz`` answer 503).

Client TLS (``options.tls``) works as in nats-server: INFO in the clear with ``tls_required``,
then the client's handshake (``tls.timeout``); a failed handshake closes without an ``-ERR``.
``handshake_first`` puts the handshake before INFO; ``allow_non_tls`` advertises ``tls_available``
and lets clients that do not start a handshake stay in the clear; ``verify`` asks for a client
certificate, ``verify_and_map`` maps it to a user, ``pinned_certs`` restricts which ones
(`pyjetstream.server.tls`).
"""

from __future__ import annotations

import asyncio
import collections
import importlib
import json
import os
import socket
import ssl
import sys
import time
from collections.abc import Callable
from typing import Any

from pyjetstream.api.timefmt import format_go_duration
from pyjetstream.api.versioning import JS_API_LEVEL
from pyjetstream.server.accounts import GLOBAL_ACCOUNT, SYSTEM_ACCOUNT, Account
from pyjetstream.server.auth import Authenticator, new_nonce
from pyjetstream.server.client import ClientConnection, ClosedReason
from pyjetstream.server.ids import new_server_id
from pyjetstream.server.imports import link_imports
from pyjetstream.server.jetstream.server_jetstream import ServerJetStream
from pyjetstream.server.log import get_logger
from pyjetstream.server.msgtrace import TracedCallback
from pyjetstream.server.options import RANDOM_PORT, AccountJetStreamLimits, ServerOptions
from pyjetstream.server.router import Router
from pyjetstream.server.sink import Totals
from pyjetstream.server.sublist import Sublist
from pyjetstream.server.subscription import InternalSub, Subscription
from pyjetstream.server.sys_imports import SystemImports
from pyjetstream.server.sys_requests import SystemRequests
from pyjetstream.server.version import SERVER_VERSION

__all__ = [
    "SERVER_VERSION",
    "InternalCallback",
    "InternalSub",
    "RunCallback",
    "Server",
    "listen_at",
]

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
        self.js = ServerJetStream()  # the JetStream accounts' engines, their usage summed (``s.js``)
        #: The system imports of every account (``sys_imports``), set up by start().
        self.system_imports: SystemImports | None = None
        self.global_account = self._add_account(GLOBAL_ACCOUNT)
        if opts.mappings:  # the top-level ``mappings``: the global account's
            self.global_account.set_mappings(opts.mappings)
        self.system_account: Account | None = None
        #: Accounts with a connected client (`join_account`): STATSZ's ``active_accounts``.
        self.active_accounts = 0
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
        # The client connections' message totals, gone ones' included, counted as each connection
        # counts its own (a read's publishes; each sink's deliveries): /varz reads them in place.
        self.totals = Totals()
        self.subscriptions = 0  # in every account's sublist (`Account.add_subscription`): /varz, STATSZ
        self.slow_consumers = 0
        self.stale_connections = 0  # ping timeouts (varz stale_connections)
        self.stalled_clients = 0  # producer stalls by a full consumer (varz stalled_clients)
        #: The sequence of the server's events (nats-server ``s.sys.seq``): message traces.
        self.event_seq = 0
        self.http_req_stats: dict[str, int] = {}
        # --- internals
        self._cid = self._isid = 0
        self._listener: asyncio.Server | None = None
        self._ws_listener: asyncio.Server | None = None
        self.ws_port = 0
        self._monitor: Any = None
        self._info_prefix = b""
        self._ports_file = ""
        self._running = False
        self._shutdown_started = False
        #: Lame duck mode: no new clients, the others closed over lame_duck_duration (`lame_duck_mode`).
        self.ldm = False
        self._reload_lock = asyncio.Lock()
        self._quit = asyncio.Event()
        self._done: asyncio.Event | None = None
        self._draining: set[ClientConnection] = set()
        self._drained = asyncio.Event()
        self.port = self.http_port = 0
        #: The TLS context for client connections (from options.tls), set by start().
        self.ssl_context: ssl.SSLContext | None = None
        #: While a client's read is processed (:meth:`begin_read`): the connections given output
        #: during it, flushed when it is done (nats-server ``client.pcd``); ``None`` between reads.
        self.pcd: list[ClientConnection] | None = None
        self.reads = 0  # client reads processed (begin_read): tells one read from the next
        #: What must run when the read is processed, before that flush (:meth:`after_read`).
        self._read_end: list[Callable[[], None]] = []
        #: The write deadline as a slow consumer's log line names it (Go's duration format).
        self.write_deadline_text = format_go_duration(int(opts.write_deadline * 1e9))
        #: Routing (`Router`): `route` one message, `route_msgs` a run, `no_responders`.
        self.router = Router(self)
        self.route = self.router.route
        self.route_msgs = self.router.route_msgs
        self.no_responders = self.router.no_responders

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
        return self.js.first()

    @property
    def jetstream_enabled(self) -> bool:
        return self.jetstream is not None

    def jetstream_engines(self) -> list[Any]:
        """Every account's engine, in the order they started (account order)."""
        return list(self.js.engines.values())

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
        if opts.default_js_domain:  # nats-server Start's warning
            self.logger.warning(
                "The option `default_js_domain` is a temporary backwards compatibility measure and will be removed"
            )
        for config in opts.accounts:
            if config.name not in self.accounts:
                self._add_account(config.name, config)
        trust = self.authenticator.trust
        if trust is not None:  # operator mode: the accounts the resolver knows, by public key
            # Deferred: start-up imports only what the options use (operator mode's JWT claims).
            from pyjetstream.server.jwt_auth import account_config

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
        # Deferred: start-up imports only what the options use (operator mode's JWT claims).
        from pyjetstream.server.jwt_auth import OperatorTrust, account_config

        config = account_config(pub, claims)
        account = self.accounts.get(pub)
        if account is None:
            account = self._add_account(pub, config)
            if self.options.jetstream and not config.jetstream:
                account.answer_jetstream_disabled()
        else:
            account.config = config
            account.trace_dest, account.trace_sampling = config.msg_trace_dest, config.msg_trace_sampling
            account.set_mappings(config.mappings)
        account.updated_ns = time.time_ns()
        if config.jetstream and config.jetstream_limits is not None:
            if account.jetstream is not None:
                account.js_limits = config.jetstream_limits
                account.jetstream.set_limits(config.jetstream_limits)
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

    @property
    def shutting_down(self) -> bool:
        return self._shutdown_started

    def shutdown_event(self) -> asyncio.Event:
        """Set when [`shutdown`][pyjetstream.server.server.Server.shutdown] begins (nats-server's quitCh)."""
        return self._quit

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
            digest = f" ({opts.config_digest})" if opts.config_digest else ""
            log.info("Using configuration file: %s%s", opts.config_file, digest)
        for warning in opts.warnings:
            log.warning("%s", warning)
        try:
            if opts.monitor_bind_port is not None:
                # Deferred: start-up imports only what the options use (the monitoring port).
                from pyjetstream.server.monitor import MonitorServer

                self._monitor = MonitorServer(self)
                self.http_port = await self._monitor.start(opts.monitor_host, opts.monitor_bind_port)
                log.info("Starting http monitor on %s:%d", opts.monitor_host, self.http_port)
            if opts.tls is not None:
                self.ssl_context = self._tls_context()
            if opts.jetstream:
                await self.start_jetstream()
            link_imports(self.accounts)
            if self.authenticator.trust is not None and self.system_account is not None:
                from pyjetstream.server.jwt_auth import ClaimsUpdates  # Deferred: operator mode only.

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
                lambda: ClientConnection(self), backlog=1024, **listen_at(opts.host, opts.bind_port), **tls_first
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
        self.write_pid_file()
        self._write_ports_file()
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

    async def start_jetstream(self) -> None:
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

            def jsz(query: dict[str, str]) -> dict[str, Any]:
                # Deferred: start-up imports only what it uses (a monitoring request); then found in
                # sys.modules (a `from` import of it costs ~1 µs a request).
                name = "pyjetstream.server.monitor"
                monitor: Any = sys.modules.get(name) or importlib.import_module(name)
                return monitor.jsz_enabled(self, query)

            self.monitor_handlers["/jsz"] = jsz

    async def shutdown(self) -> None:
        """Stop accepting, drain clients (flush their pending data, then close), stop JetStream."""
        if self._shutdown_started:
            if self._done is not None:
                await self._done.wait()
            return
        self._shutdown_started = True
        self._quit.set()
        self.logger.info("Initiating Shutdown...")
        self.stop_listening()
        for engine in self.jetstream_engines():
            engine.signal_pull_consumers()  # before the clients go: their 409s are flushed as they close
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

    def stop_listening(self) -> None:
        """Close the client and websocket listeners: a new connection is refused."""
        if self._listener is not None:
            self._listener.close()
        if self._ws_listener is not None:
            self._ws_listener.close()

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

    async def stop_jetstream(self, disable: bool = True) -> None:
        """Stop every account's JetStream, as nats-server's ``shutdownJetStream`` (shutdown, lame
        duck mode: ``disable=False`` keeps the stopped engines for what is asked of them after)
        and ``DisableJetStream`` (a reload turning it off) do."""
        if not any(e.started for e in self.jetstream_engines()):
            return
        self.logger.info("Initiating JetStream Shutdown...")
        for account in self.accounts.values():
            await account.stop_jetstream()
            if disable and account.jetstream is not None:
                self.js.remove(account.jetstream)
                account.jetstream = None
                account.stop_disabled_api()
        if disable:

            def jsz_off(query: dict[str, str]) -> dict[str, Any]:
                from pyjetstream.server.monitor import jsz_disabled  # Deferred: start-up imports.

                return jsz_disabled(self, query)

            self.monitor_handlers["/jsz"] = jsz_off  # nats-server answers /jsz without JetStream too
        self.logger.info("JetStream Shutdown")

    async def reload(self, options: ServerOptions) -> None:
        """Run with ``options`` from now on, as far as a running server can (nats-server
        ``ReloadOptions``: `pyjetstream.server.reload`); `ReloadError` when it cannot, nothing changed."""
        # Deferred: start-up imports only what the options use (a reload is a signal away).
        from pyjetstream.server.reload import reload_options

        async with self._reload_lock:
            await reload_options(self, options)

    async def lame_duck_mode(self) -> None:
        """Stop accepting clients, tell them, close them over ``lame_duck_duration``, then shut down
        (nats-server ``lameDuckMode``: `pyjetstream.server.lame_duck`)."""
        from pyjetstream.server.lame_duck import lame_duck_mode  # Deferred: start-up imports.

        await lame_duck_mode(self)

    async def _stop_services(self) -> None:
        await self.stop_jetstream(disable=False)
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

    def write_pid_file(self) -> None:
        if self.options.pid_file:
            with open(self.options.pid_file, "w", encoding="utf-8") as fh:
                fh.write(str(os.getpid()))

    def rewrite_ports_file(self) -> None:
        """``ports_file_dir`` changed (a reload): the ports file moves there."""
        self._remove_ports_file()
        self._write_ports_file()

    def _write_ports_file(self) -> None:
        opts = self.options
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

    def join_account(self, conn: ClientConnection) -> None:
        """A connection connected (its CONNECT taken) is one of its account's clients (nats-server
        ``registerWithAccount``): an account with a client is active, `active_accounts` kept as that
        changes (STATSZ reads it), and an account's connections are found without a walk of all."""
        account = conn.account
        if not account.clients:
            self.active_accounts += 1
        account.clients.add(conn)

    def unregister_client(self, conn: ClientConnection) -> None:
        account = conn.account
        if conn in account.clients:
            account.clients.discard(conn)
            if not account.clients:
                self.active_accounts -= 1
        if self.clients.pop(conn.cid, None) is not None:
            account.connection_gone(conn)
            from pyjetstream.server.monitor import closed_record  # Deferred: start-up imports.

            self.closed_clients.append(closed_record(conn))

    def message_totals(self) -> tuple[int, int, int, int]:
        """Server-wide ``(in_msgs, in_bytes, out_msgs, out_bytes)`` of client connections, the gone
        ones' included: kept as they count (`sink.Totals`), not summed over the connections."""
        t = self.totals
        return t.in_msgs, t.in_bytes, t.out_msgs, t.out_bytes

    def _build_info(self) -> None:
        """The INFO every client is sent (its start; per client: `info_for`)."""
        opts = self.options
        info: dict[str, Any] = {
            "server_id": self.server_id,
            "server_name": self.server_name,
            "version": SERVER_VERSION,
            "proto": 1,
            "go": f"python{sys.version.split()[0]}",  # (platform.python_version(): its import costs)
            "host": opts.host,
            "port": self.port,
            "headers": not opts.no_header_support,
            **self.security_flags(),
        }
        info["max_payload"] = opts.max_payload
        if self.jetstream is not None:
            info["jetstream"] = True
        text = json.dumps(info, separators=(",", ":"))
        self._info_prefix = ("INFO " + text[:-1] + ',"client_id":').encode()

    rebuild_info = _build_info  # after a reload

    def security_flags(self) -> dict[str, bool]:
        """What INFO says of authentication and TLS (``auth_required``, ``tls_available`` or
        ``tls_required``, ``tls_verify``), each only when true; ``/varz`` copies them from it as
        nats-server's ``updateVarzConfigReloadableFields`` copies ``info``'s (but ``tls_available``)."""
        opts = self.options
        flags: dict[str, bool] = {}
        if self.authenticator.info_auth_required:
            flags["auth_required"] = True
        if self.ssl_context is not None:
            flags["tls_available" if opts.allow_non_tls else "tls_required"] = True
            if opts.tls is not None and opts.tls.verify:
                flags["tls_verify"] = True
        return flags

    def async_info(self, conn: ClientConnection, ldm: bool = False) -> bytes:
        """An INFO to a connected client (nats-server ``generateClientInfoJSON``): no nonce;
        ``ldm`` the lame duck mode flag."""
        tail = f'{conn.cid},"client_ip":{json.dumps(conn.ip)}'
        if ldm:
            tail += ',"ldm":true'
        if self.jetstream is not None and JS_API_LEVEL:
            tail += f',"api_lvl":{JS_API_LEVEL}'
        return self._info_prefix + (tail + "} \r\n").encode()

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
        no_shadows: bool = False,
        takes_deliveries: bool = False,
        takes_runs: Any = None,
    ) -> InternalSub:
        """An internal subscription in ``account`` (default: the global account); ``traced``
        takes traced messages, ``run`` a read's messages in one call (see `InternalSub`);
        ``no_shadows``: a service import's, of which no stream import makes a shadow;
        ``takes_deliveries`` and ``takes_runs``: see `Subscription`. Both are set before the subscription is added,
        so a stream import's shadow of it (made as it is added) copies what it is."""
        self._isid += 1
        acc = account or self.global_account
        sub = InternalSub(acc, subject, str(self._isid), queue, callback, traced, run)
        sub.no_shadows = no_shadows
        sub.takes_deliveries = takes_deliveries
        sub.takes_runs = takes_runs
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
        """The read is processed: run what waited for it (`after_read`: a file stream's
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
        made is written: `end_read`), or — outside a read (a timer, an internal
        publish) — at the end of this event-loop turn."""
        if self.pcd is not None:
            self._read_end.append(callback)
        else:
            self.loop.call_soon(callback)

    def publish_replies(self, replies: list[tuple[str, bytes]], account: Account | None = None) -> None:
        """`publish_internal` ``(subject, payload)`` of each pair, in order (a stream's PubAcks of
        one read): routed together (`Router.route_msgs`), as one by one."""
        n = len(replies)
        if n == 1:
            self.route(replies[0][0], "", None, replies[0][1], None, None, account)
            return
        subjects = [r[0] for r in replies]
        payloads = [r[1] for r in replies]
        self.route_msgs(subjects, [""] * n, [None] * n, payloads, None, account)

    def publish_run(
        self, subjects: list[str], hdrs: list[bytes | None], payloads: list[bytes], account: Account | None = None
    ) -> None:
        """`publish_internal` of each message (no reply), in order (a stream's republished copies of
        a stretch): routed together (`Router.route_msgs`), as one by one."""
        n = len(subjects)
        if n == 1:
            self.route(subjects[0], "", hdrs[0], payloads[0], None, None, account)
            return
        self.route_msgs(subjects, [""] * n, hdrs, payloads, None, account)

    def lone_receiver(self, subject: str, account: Account | None = None) -> Subscription | None:
        """`Router.lone_receiver`: the one client subscription a server publish would reach."""
        return self.router.lone_receiver(subject, account or self.global_account)

    def client_receivers(self, subject: str, account: Account | None = None) -> tuple[Subscription, ...]:
        """`Router.client_receivers`: the client subscriptions (two or more, nothing else) a server
        publish would reach."""
        return self.router.client_receivers(subject, account or self.global_account)

    def count_matches(self, n: int) -> None:
        """``n`` deliveries went to a `lone_receiver` (or `client_receivers`) without `route` (its
        statistics)."""
        self.global_account.sublist.matches += n

    def has_interest(self, subject: str, clients_only: bool = False) -> bool:
        return self.global_account.has_interest(subject, clients_only)

    def interest_count(self, subject: str, clients_only: bool = False) -> int:
        return self.global_account.interest_count(subject, clients_only)


def listen_at(host: str, port: int) -> dict[str, Any]:
    """Where a listener (the clients', the monitoring port's) listens, as ``create_server``'s keyword
    arguments: a socket already bound to a literal address (`_bound_socket`), else ``host`` (None for
    every address) and ``port`` for the event loop to resolve, with address reuse."""
    bound = _bound_socket(host, port)
    return {"sock": bound} if bound else {"host": host or None, "port": port, "reuse_address": True}


def _bound_socket(host: str, port: int) -> socket.socket | None:
    """A listener's socket bound to ``host`` when it is a literal IP address (None for a name or no
    host: the event loop resolves those), as ``create_server`` binds it (address reuse; an IPv6
    socket only IPv6).

    Why: ``create_server`` resolves even a literal address with ``host.encode("idna")``, which
    imports the IDNA codec with ``unicodedata`` and ``stringprep`` (~5 ms of a ~100 ms start)."""
    if not host:
        return None
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            reason = (exc.strerror or str(exc)).lower()
            raise OSError(exc.errno, f"error while attempting to bind on address {(host, port)!r}: {reason}") from None
        return sock
    return None
