"""Options of the embedded server, with nats-server's defaults.

One struct, [`ServerOptions`][], is what the server runs on. It is filled
programmatically, from a NATS configuration file (`pyjetstream.server.conf`)
or from nats-server-compatible command-line flags
(`pyjetstream.cli.serve_args`). Field names follow the configuration-file
keys; durations are seconds as ``float`` (nats-server uses ``time.Duration``).

Defaults are nats-server 2.9.10's (``server/const.go``, ``setBaselineOptions``),
with the 2.10 JetStream sync policy (``sync_interval: 2m`` / ``"always"``).
"""

from __future__ import annotations

import copy
import os
import re
import ssl
from typing import Any

import msgspec
from msgspec import field

from pyjetstream.api.jwt import public_key_bytes
from pyjetstream.protocol.subjects import is_valid_subject

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_PORT",
    "RANDOM_PORT",
    "Account",
    "AccountExport",
    "AccountImport",
    "AccountJetStreamLimits",
    "AccountLimits",
    "JetStreamLimits",
    "NkeyUser",
    "OptionsError",
    "Permissions",
    "ResponsePermission",
    "ServerOptions",
    "SubjectPermission",
    "TLSOptions",
    "User",
    "is_bcrypt_hash",
    "password_matches",
]

DEFAULT_HOST = "0.0.0.0"
DEFAULT_PORT = 4222
#: ``-p -1`` / ``port: -1``: bind an ephemeral port (nats-server's RANDOM_PORT).
RANDOM_PORT = -1
#: The conventional monitoring port (monitoring is off unless a port is given).
DEFAULT_HTTP_PORT = 8222

MAX_PAYLOAD_SIZE = 1024 * 1024  # MAX_PAYLOAD_SIZE, 1 MiB
MAX_CONTROL_LINE_SIZE = 4096
MAX_PENDING_SIZE = 64 * 1024 * 1024
DEFAULT_MAX_CONNECTIONS = 64 * 1024
DEFAULT_PING_INTERVAL = 120.0
DEFAULT_PING_MAX_OUT = 2
DEFAULT_WRITE_DEADLINE = 10.0  # DEFAULT_FLUSH_DEADLINE
AUTH_TIMEOUT = 2.0
TLS_TIMEOUT = 2.0
DEFAULT_LAME_DUCK_DURATION = 120.0
DEFAULT_LAME_DUCK_GRACE_PERIOD = 10.0
#: nats-server 2.10 ``defaultSyncInterval``: file-store data is fsynced this often.
DEFAULT_SYNC_INTERVAL = 120.0
#: ``allow_responses: true`` means one reply within two minutes (DEFAULT_ALLOW_RESPONSE_*).
DEFAULT_ALLOW_RESPONSE_MAX_MSGS = 1
DEFAULT_ALLOW_RESPONSE_EXPIRATION = 120.0
#: Connection types a user may be restricted to (``allowed_connection_types``).
CONNECTION_TYPES = frozenset({"STANDARD", "WEBSOCKET", "LEAFNODE", "MQTT", "IN_PROCESS"})


class OptionsError(ValueError):
    """Options that the server cannot run with (raised by [`ServerOptions.validate`][])."""


# --------------------------------------------------------------------------- auth



def default_store_dir() -> str:
    """Where JetStream keeps its files when ``store_dir`` is not set: ``<temp dir>/nats``, as
    nats-server's ``filepath.Join(os.TempDir(), JetStreamStoreDir)``."""
    import tempfile  # Deferred: a start with a store_dir does not load tempfile (nor shutil, random).

    return os.path.join(tempfile.gettempdir(), "nats")


class SubjectPermission(msgspec.Struct, kw_only=True):
    """Allow/deny subject lists; ``None`` means "not restricted by this list"."""

    allow: list[str] | None = None
    deny: list[str] | None = None


class ResponsePermission(msgspec.Struct, kw_only=True):
    """``allow_responses``: may publish to reply subjects of requests received."""

    max_msgs: int = DEFAULT_ALLOW_RESPONSE_MAX_MSGS  # negative = unlimited
    expires: float = DEFAULT_ALLOW_RESPONSE_EXPIRATION  # seconds; negative = never


class Permissions(msgspec.Struct, kw_only=True):
    """A user's publish, subscribe and response permissions (nats-server ``Permissions``)."""

    publish: SubjectPermission | None = None
    subscribe: SubjectPermission | None = None
    response: ResponsePermission | None = None


class User(msgspec.Struct, kw_only=True):
    """A user/password identity. ``password`` may be a bcrypt hash (``$2a$...``)."""

    username: str
    password: str = ""
    permissions: Permissions | None = None
    #: Account the user belongs to; "" is the global account ``$G``.
    account: str = ""
    #: Upper-case connection types (see CONNECTION_TYPES); ``None`` = any.
    allowed_connection_types: list[str] | None = None

    def password_matches(self, given: str) -> bool:
        return password_matches(self.password, given)


class NkeyUser(msgspec.Struct, kw_only=True):
    """An NKey identity (public user key ``U...``); authenticated by nonce signature."""

    nkey: str
    permissions: Permissions | None = None
    account: str = ""
    allowed_connection_types: list[str] | None = None


_BCRYPT_RE = re.compile(r"^\$2[abxy]?\$\d{2}\$.+")


def is_bcrypt_hash(secret: str) -> bool:
    """True for bcrypt-hashed passwords/tokens, as nats-server recognises them."""
    return bool(_BCRYPT_RE.match(secret))


def password_matches(stored: str, given: str) -> bool:
    """Compare a configured password or token with what a client sent.

    Bcrypt hashes are verified with bcrypt; plain secrets in constant time.
    """
    if is_bcrypt_hash(stored):
        import bcrypt  # a declared dependency; imported lazily because it is slow to load

        try:
            return bcrypt.checkpw(given.encode(), stored.encode())
        except ValueError:
            return False
    import hmac  # deferred: only a password check needs it (a server's start imports no hashlib)

    return hmac.compare_digest(stored.encode(), given.encode())


# ---------------------------------------------------------------------- accounts


class AccountJetStreamLimits(msgspec.Struct, kw_only=True):
    """Per-account JetStream limits (``accounts { A { jetstream { ... } } }``); -1 = unlimited."""

    max_memory: int = -1
    max_store: int = -1
    max_streams: int = -1
    max_consumers: int = -1
    max_ack_pending: int = -1
    max_bytes_required: bool = False  # a stream must set max_bytes (10113)
    memory_max_stream_bytes: int = -1  # the largest max_bytes of one memory stream (10122; <= 0: none)
    store_max_stream_bytes: int = -1  # the same for file streams
    cluster_traffic: str = ""  # clustered only: "system" (default) or "owner"
    #: An account JWT's ``tiered_limits``: limits per tier ("R1", "R3"…) instead of the fields
    #: above, which then do not apply (nats-server ``jsAccount.limits`` without the "" tier).
    tiers: dict[str, AccountJetStreamLimits] = field(default_factory=dict)

    def select(self, replicas: int) -> AccountJetStreamLimits | None:
        """nats-server ``jsAccount.selectLimits``: the plain limits, or the tier of a stream of
        ``replicas`` (0 is R1); None when the account has tiers but not that one (10120)."""
        if not self.tiers:
            return self
        return self.tiers.get(f"R{max(1, replicas)}")


class AccountLimits(msgspec.Struct, kw_only=True):
    """Per-account connection limits (``limits {}``); 0 = server default, -1 = unlimited."""

    max_connections: int = 0
    max_subscriptions: int = 0
    max_payload: int = 0
    max_leafnodes: int = 0


class AccountExport(msgspec.Struct, kw_only=True):
    """One entry of an account's ``exports``: a stream or a service subject others may import."""

    kind: str  # "stream" | "service"
    subject: str
    #: Accounts allowed to import it; empty = public.
    accounts: list[str] = field(default_factory=list)
    #: Services: "singleton" (one reply), "stream" or "chunked" (any number of replies).
    response_type: str = "singleton"
    #: Services: how long a requester's reply mapping stays for streamed responses (seconds).
    response_threshold: float = 120.0
    #: Services: a traced request is still traced in the exporting account (``allow_trace``).
    allow_trace: bool = False


class AccountImport(msgspec.Struct, kw_only=True):
    """One entry of an account's ``imports``: ``subject`` of ``account`` seen here as ``to``."""

    kind: str  # "stream" | "service"
    account: str
    subject: str
    #: Local subject (service: what clients here publish to; stream: what they receive on).
    to: str = ""
    #: Streams: a prefix put before the exported subject (``prefix.subject``).
    prefix: str = ""
    #: Streams: a traced message is still traced past the import (``allow_trace``).
    allow_trace: bool = False
    #: Services: the exporter learns who asks — the requester's full client info in
    #: ``Nats-Request-Info``, not only its account (``share``).
    share: bool = False


class MapDest(msgspec.Struct, kw_only=True, frozen=True):
    """One destination of a subject mapping (nats-server ``MapDest``): the subject a publish is
    mapped to, its weight (percent, 0-100) and the cluster it is scoped to ("" = any).

    Immutable, so a copy of the options shares it (`__deepcopy__`: deep-copying 10,000 mappings'
    destinations was ~15 µs a mapping of a start) and a built mapping is found by it
    (`pyjetstream.server.mappings.CACHE_BUILT`)."""

    subject: str
    weight: int = 100
    cluster: str = ""

    def __deepcopy__(self, memo: dict[int, Any]) -> MapDest:
        return self


#: Subject mappings as configured: source subject -> its destinations, in the order written.
Mappings = dict[str, list[MapDest]]


class Account(msgspec.Struct, kw_only=True):
    """An account from the ``accounts {}`` block; its users are also in ServerOptions.users."""

    name: str
    nkey: str = ""
    users: list[User] = field(default_factory=list)
    nkeys: list[NkeyUser] = field(default_factory=list)
    jetstream: bool = False
    jetstream_limits: AccountJetStreamLimits | None = None
    default_permissions: Permissions | None = None
    limits: AccountLimits = field(default_factory=AccountLimits)
    exports: list[AccountExport] = field(default_factory=list)
    imports: list[AccountImport] = field(default_factory=list)
    #: ``msg_trace`` (``trace_dest``): where messages with a sampled ``traceparent`` are traced,
    #: and the percentage sampled (1-100; 0 with a destination means 100).
    msg_trace_dest: str = ""
    msg_trace_sampling: int = 0
    #: ``mappings`` (``maps``): how this account's publishes are mapped (`pyjetstream.server.mappings`).
    mappings: Mappings = field(default_factory=dict)
    #: Account features pyjetstream does not implement, raw.
    unsupported: dict[str, Any] = field(default_factory=dict)


# --------------------------------------------------------------------------- TLS


class TLSOptions(msgspec.Struct, kw_only=True):
    """The ``tls {}`` block (or ``--tls*`` flags): TLS on the client port."""

    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    #: Require and verify client certificates.
    verify: bool = False
    #: verify, and map the certificate's subject to a user.
    verify_and_map: bool = False
    insecure: bool = False
    timeout: float = TLS_TIMEOUT
    #: Go cipher-suite names as written in the file (informational for OpenSSL).
    cipher_suites: list[str] = field(default_factory=list)
    curve_preferences: list[str] = field(default_factory=list)
    #: Lower-case hex SHA-256 of accepted client certificates' SubjectPublicKeyInfo.
    pinned_certs: list[str] = field(default_factory=list)
    #: 2.10: TLS handshake before the INFO line.
    handshake_first: bool = False
    connection_rate_limit: int = 0

    def server_context(self) -> ssl.SSLContext:
        """An SSLContext for the listening side (raises OSError/ssl.SSLError on bad files)."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # as nats-server
        ctx.load_cert_chain(self.cert_file, self.key_file)
        if self.ca_file:
            ctx.load_verify_locations(cafile=self.ca_file)
        if self.verify or self.verify_and_map:
            ctx.verify_mode = ssl.CERT_REQUIRED
        return ctx


class WebSocketOptions(msgspec.Struct, kw_only=True):
    """The ``websocket {}`` block (nats-server ``WebsocketOpts``): a listener for browser and Node
    clients (nats.ws, nats.js's WebSocket transport) speaking NATS inside WebSocket frames."""

    host: str = DEFAULT_HOST
    port: int = 0  # 0: no listener; -1: a random port
    advertise: str = ""
    no_tls: bool = False  # nats-server refuses a plain-text listener unless this says so
    tls: TLSOptions | None = None
    same_origin: bool = False  # the Origin header must match the request's Host
    allowed_origins: list[str] = field(default_factory=list)  # else only these origins
    compression: bool = False  # permessage-deflate, when the client offers it
    handshake_timeout: float = 2.0  # seconds for the HTTP upgrade


# --------------------------------------------------------------------- JetStream


#: nats-server 2.15's default ``limits { default_max_consumers }`` (what 0 stands for).
DEFAULT_MAX_CONSUMERS = 1000


class JetStreamLimits(msgspec.Struct, kw_only=True):
    """Server-wide JetStream limits (2.10 ``jetstream { limits {} }``); 0 = not limited."""

    max_ack_pending: int = 0
    max_ha_assets: int = 0
    max_request_batch: int = 0
    duplicate_window: float = 0.0  # seconds
    #: ⟨2.15⟩ consumers per stream when neither the stream nor the account sets max_consumers:
    #: 0 = nats-server's default (DEFAULT_MAX_CONSUMERS), -1 = unlimited.
    default_max_consumers: int = 0
    # ⟨2.12+⟩ limits { batch { max_msgs, max_inflight_per_stream, max_inflight_total, timeout } }
    batch_max_msgs: int = 0
    batch_max_inflight_per_stream: int = 0
    batch_max_inflight_total: int = 0
    batch_timeout: float = 0.0  # seconds

    def effective_default_max_consumers(self) -> int:
        """The per-stream consumer default in force (-1 = none), as /jsz ``limits`` reports it."""
        return self.default_max_consumers or DEFAULT_MAX_CONSUMERS


# ------------------------------------------------------------------ the options


class ServerOptions(msgspec.Struct, kw_only=True):
    """Everything the embedded server runs with. Defaults are nats-server's."""

    # Where these options came from (``-c``); "" when built in code.
    config_file: str = ""
    #: nats-server's configDigest of that file ("sha256:<hex>"); "" without a file (varz config_digest).
    config_digest: str = ""

    # --- identity and listeners
    #: "" = the server generates one (its server id), like nats-server.
    server_name: str = ""
    host: str = DEFAULT_HOST
    #: Client port. RANDOM_PORT (-1) or 0 bind an ephemeral port (see bind_port). The
    #: config-file and flag parsers map nats-server's "0 means 4222" before storing.
    port: int = DEFAULT_PORT
    client_advertise: str = ""
    #: Monitoring bind host; "" = same as ``host``.
    http_host: str = ""
    #: Monitoring port: 0 = off, -1 = ephemeral.
    http_port: int = 0
    #: HTTPS monitoring port (accepted; the server decides whether it serves it).
    https_port: int = 0
    http_base_path: str = ""
    #: The dashboard at ``/`` on the monitoring port may change state (purge, delete a message,
    #: pause a consumer, put a key): ``--dashboard-write``. Loopback peers only, whatever this says.
    dashboard_write: bool = False
    #: Serve the dashboard to peers other than loopback ones (``--dashboard-remote``); without it
    #: they get nats-server's plain root page.
    dashboard_remote: bool = False

    # --- JetStream
    jetstream: bool = False
    #: "" = ``<tmp>/nats`` like nats-server; data lives in ``<store_dir>/jetstream``
    #: (see jetstream_dir).
    store_dir: str = ""
    #: Bytes; -1 = automatic (nats-server: 75% of RAM / of free disk, 1 TB cap).
    max_memory_store: int = -1
    max_file_store: int = -1
    jetstream_domain: str = ""
    #: ``default_js_domain``: account -> the domain its ``$JS.API`` requests go to when it has no
    #: JetStream of its own (mappings added to the account; nats-server ``JsAccDefaultDomain``).
    default_js_domain: dict[str, str] = field(default_factory=dict)
    #: Seconds between fsyncs of file-store data (2.10 default 2 min).
    sync_interval: float = DEFAULT_SYNC_INTERVAL
    #: ``sync_interval: always``: fsync every write before acknowledging it.
    sync_always: bool = False
    #: 2.11 ingest queue limits per stream; 0 = unlimited (2.9/2.10 behaviour).
    jetstream_max_buffered_size: int = 0
    jetstream_max_buffered_msgs: int = 0
    #: 2.11+ strict API: a request with an unknown field is refused (10025); ``strict: false``
    #: ignores unknown fields as older servers did.
    jetstream_strict: bool = True
    jetstream_limits: JetStreamLimits = field(default_factory=JetStreamLimits)

    # --- protocol limits
    max_payload: int = MAX_PAYLOAD_SIZE
    max_control_line: int = MAX_CONTROL_LINE_SIZE
    max_pending: int = MAX_PENDING_SIZE
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_subscriptions: int = 0  # per connection; 0 = unlimited
    max_sub_tokens: int = 0  # 0 = unlimited

    # --- timers (seconds)
    ping_interval: float = DEFAULT_PING_INTERVAL
    ping_max: int = DEFAULT_PING_MAX_OUT
    write_deadline: float = DEFAULT_WRITE_DEADLINE
    #: Skip the short (~2 s) first PING after CONNECT used to measure RTT.
    disable_short_first_ping: bool = False
    lame_duck_duration: float = DEFAULT_LAME_DUCK_DURATION
    lame_duck_grace_period: float = DEFAULT_LAME_DUCK_GRACE_PERIOD

    # --- authentication / authorization
    username: str = ""
    #: Plain text or a bcrypt hash (``$2a$...``).
    password: str = ""
    #: ``authorization { token }`` / ``--auth``; plain or bcrypt.
    token: str = ""
    users: list[User] = field(default_factory=list)
    nkeys: list[NkeyUser] = field(default_factory=list)
    #: ``authorization { default_permissions }`` (already applied to users without any).
    default_permissions: Permissions | None = None
    #: Identity used for clients that send no credentials; must name a user or nkey.
    no_auth_user: str = ""
    auth_timeout: float = AUTH_TIMEOUT
    accounts: list[Account] = field(default_factory=list)
    #: The top-level ``mappings`` (``maps``): the global account's subject mappings.
    mappings: Mappings = field(default_factory=dict)
    #: Operator mode (decentralized JWT auth): the trusted operator JWTs.
    operator_jwts: list[str] = field(default_factory=list)
    #: ``MEMORY``, ``FULL`` (the ``nats`` resolver with a directory) or ``""`` (none).
    resolver: str = ""
    resolver_dir: str = ""
    resolver_allow_delete: bool = False
    #: Account public key → account JWT, known at start.
    resolver_preload: dict[str, str] = field(default_factory=dict)
    system_account: str = ""
    no_system_account: bool = False

    # --- TLS
    tls: TLSOptions | None = None
    allow_non_tls: bool = False
    websocket: WebSocketOptions | None = None

    # --- logging
    debug: bool = False
    trace: bool = False
    trace_verbose: bool = False
    logtime: bool = True
    logtime_utc: bool = False
    #: "" = log to stderr.
    logfile: str = ""
    log_size_limit: int = 0
    log_max_num: int = 0
    max_traced_msg_len: int = 0  # 0 = unlimited

    # --- process files
    pid_file: str = ""
    #: Write ``<dir>/<executable>_<pid>.ports`` with the bound URLs.
    ports_file_dir: str = ""

    # --- misc
    server_tags: list[str] = field(default_factory=list)
    no_header_support: bool = False

    # --- pyjetstream's own (not nats-server settings)
    #: Route a read's publishes together (``Server.route_msgs``: one lookup per distinct subject,
    #: each receiver given its messages in one call). Off: every publish takes the per-message
    #: path (``Server.route``), which the run path equals byte for byte (tests/server's
    #: differential test). Default from ``PYJETSTREAM_RUNS`` (``0`` = off), so that a server in a
    #: subprocess can be started either way.
    runs: bool = field(default_factory=lambda: os.environ.get("PYJETSTREAM_RUNS", "1") != "0")
    #: Seed of the queue-group member pick (None: the ``random`` module, as nats-server picks at
    #: random). A seed makes the picks repeatable: the same traffic goes to the same members.
    queue_seed: int | None = None
    #: Non-fatal findings from the config file/flags (deprecated forms, ignored keys).
    warnings: list[str] = field(default_factory=list)
    #: Those of ``warnings`` that nats-server itself gives for the file (a duration as a bare
    #: number, a high authorization timeout, an empty file): ``-t`` fails on them, as there.
    check_warnings: list[str] = field(default_factory=list)
    #: nats-server settings pyjetstream does not implement (cluster, leafnodes, ...), raw.
    unsupported: dict[str, Any] = field(default_factory=dict)

    # ------------------------------------------------------------- derived values

    @property
    def bind_port(self) -> int:
        """The port to bind the client listener to (0 = let the OS choose)."""
        return 0 if self.port in (RANDOM_PORT, 0) else self.port

    @property
    def monitor_host(self) -> str:
        return self.http_host or self.host

    @property
    def monitor_bind_port(self) -> int | None:
        """Port for the HTTP monitor listener, 0 = ephemeral, None = monitoring off."""
        if self.http_port == 0:
            return None
        return 0 if self.http_port == RANDOM_PORT else self.http_port

    @property
    def jetstream_dir(self) -> str:
        """Directory holding JetStream data: ``<store_dir or <tmp>/nats>/jetstream``."""
        return os.path.join(self.store_dir or default_store_dir(), "jetstream")

    @property
    def auth_required(self) -> bool:
        return bool(self.username or self.token or self.users or self.nkeys or self.operator_jwts)

    def copy(self) -> ServerOptions:
        """An independent copy (nested lists and dicts copied too)."""
        return copy.deepcopy(self)

    # ----------------------------------------------------------------- checking

    def validate(self) -> None:
        """Raise OptionsError for options nats-server refuses at start-up."""
        problems = self.problems()
        if problems:
            raise OptionsError("; ".join(problems))

    def _default_js_domain_problems(self) -> list[str]:
        """nats-server ``validateJetStreamOptions``'s checks of ``default_js_domain``, in its
        order (it reports the first): without an operator each name is a configured account (or
        ``$G``) without JetStream unless its domain is empty; with one, an account public key;
        never the system account; a domain that makes ``$JS.<domain>.API`` a valid subject."""
        out: list[str] = []
        if not self.default_js_domain:
            return out
        accounts = {a.name: a for a in self.accounts}
        for name, domain in self.default_js_domain.items():
            if self.operator_jwts:
                key = public_key_bytes(name)
                if key is None or key[0] != 0:  # nkeys PrefixByteAccount
                    out.append(
                        f'default_js_domain contains account name "{name}", which is not a valid public account nkey'
                    )
            elif name != "$G" and name not in accounts:
                out.append(f'in non operator mode, `default_js_domain` references non existing account "{name}"')
            elif name in accounts and accounts[name].jetstream and domain:
                out.append(f'default_js_domain contains account name "{name}" with enabled JetStream')
        system = self.system_account or "$SYS"
        for name, domain in self.default_js_domain.items():
            if name == system:
                out.append(f'system account "{name}" can not be in default_js_domain')
            elif domain and not is_valid_subject(f"$JS.{domain}.API"):
                out.append(f'default_js_domain contains account "{name}" with invalid domain name "{domain}"')
        return out

    def problems(self) -> list[str]:
        """Every reason these options cannot be used (empty when they can)."""
        out: list[str] = []
        for name in ("port", "http_port", "https_port"):
            value = getattr(self, name)
            if not RANDOM_PORT <= value <= 65535:
                out.append(f"{name} {value} is out of range (-1 for a random port, 0-65535)")
        if self.max_payload <= 0:
            out.append(f"max_payload ({self.max_payload}) must be positive")
        if self.max_pending > 0 and self.max_payload > self.max_pending:
            out.append(
                f"max_payload ({self.max_payload}) cannot be higher than max_pending ({self.max_pending})"
            )
        if self.max_control_line <= 0:
            out.append(f"max_control_line ({self.max_control_line}) must be positive")
        if self.ping_interval <= 0:
            out.append("ping_interval must be positive")
        if self.ping_max <= 0:
            out.append("ping_max must be positive")
        if self.write_deadline <= 0:
            out.append("write_deadline must be positive")
        if self.sync_interval <= 0:
            out.append("sync_interval must be positive")
        if self.token and (self.username or self.password):
            out.append("Cannot have a user/pass and token")
        if self.jetstream_domain:
            if any(c in self.jetstream_domain for c in ".*> \t\r\n"):
                out.append(
                    f"invalid domain name: {self.jetstream_domain!r} may not contain ., *, > or whitespace"
                )
        out.extend(self._default_js_domain_problems()[:1])
        if self.no_auth_user:
            known = {u.username for u in self.users} | {n.nkey for n in self.nkeys}
            if not known:
                out.append(f'no_auth_user: "{self.no_auth_user}" present, but users/nkeys are not defined')
            elif self.no_auth_user not in known:
                out.append(
                    f'no_auth_user: "{self.no_auth_user}" not present as user or nkey in '
                    "authorization block or account configuration"
                )
        if self.tls is not None and not (self.tls.cert_file and self.tls.key_file):
            out.append("TLS requires both a certificate (cert_file) and a private key (key_file)")
        ws = self.websocket
        if ws is not None and ws.port != 0:
            if not RANDOM_PORT <= ws.port <= 65535:
                out.append(f"websocket port {ws.port} is out of range (-1 for a random port, 0-65535)")
            if ws.tls is None and not ws.no_tls:
                out.append("websocket requires TLS configuration")
            for origin in ws.allowed_origins:
                if "://" not in origin:
                    out.append(f"unable to parse allowed origin: {origin!r}")
        return out
