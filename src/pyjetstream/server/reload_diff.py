"""What a configuration reload changes, and what it refuses: nats-server's ``diffOptions``
(``server/reload.go``), over the options pyjetstream has.

`diff_options` walks the options in the order of nats-server's ``Options`` struct and returns one
`Change` per option that changed (its ``Reloaded: …`` line, in nats-server's words, and what
applying it takes), or raises `ReloadError` at the first option that cannot change while the
server runs — ``config reload not supported for <Go field>: old=<v>, new=<v>``, Go's ``%v`` of
the values. As there, ``users`` and ``accounts`` always count as changed (their lines are logged
on every reload). pyjetstream reloads an account's users, not its other settings (imports,
exports, limits, JetStream): such a change is refused with a line that says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api.timefmt import format_go_duration

if TYPE_CHECKING:
    from pyjetstream.server.options import ServerOptions
    from pyjetstream.server.server import Server

__all__ = ["Change", "ReloadError", "diff_options", "friendly_bytes", "go_value"]


class ReloadError(Exception):
    """The reload is refused: nothing was applied (nats-server's ``Reload`` error)."""


@dataclass
class Change:
    """One changed option: ``line`` is logged when it is applied; ``kinds`` say what the server
    must redo once every change is applied (``logging``, ``trace``, ``auth``, ``jetstream``,
    ``info``, ``pid_file``, ``ports_file``, ``max_connections``, ``parser``, ``tls``, ``js_limits``)."""

    name: str
    line: str
    kinds: frozenset[str] = field(default_factory=frozenset)


def go_value(value: Any) -> str:
    """Go's ``%v`` of an option value: ``true``, ``2``, ``0.5``, ``[a b]``, ``<nil>``."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, list | tuple):
        return "[" + " ".join(go_value(v) for v in value) + "]"
    if isinstance(value, msgspec.Struct):  # (a block of the options: `options.TLSOptions`, ...)
        return "{" + " ".join(go_value(getattr(value, name)) for name in value.__struct_fields__) + "}"
    return str(value)


def _duration(seconds: float) -> str:
    return format_go_duration(round(seconds * 1e9))


def friendly_bytes(n: int) -> str:
    """nats-server ``friendlyBytes``: ``512 B``, ``1.50 KB``, ``17.66 GB`` (powers of 1024)."""
    if n < 1024:
        return f"{n} B"
    exp = int(math.log(n) / math.log(1024))
    return f"{n / 1024**exp:.2f} {'KMGTPE'[exp - 1]}B"


# Options that reload with a line of their own: our field -> (Go field, line format, kinds).
# The value goes into ``{}`` (durations and booleans as Go prints them).
_RELOADED: dict[str, tuple[str, str, frozenset[str]]] = {
    "client_advertise": ("ClientAdvertise", "Reload: client_advertise = {}", frozenset({"info"})),
    "trace": ("Trace", "Reloaded: trace = {}", frozenset({"logging", "trace"})),
    "debug": ("Debug", "Reloaded: debug = {}", frozenset({"logging"})),
    "trace_verbose": ("TraceVerbose", "Reloaded: trace_verbose = {}", frozenset({"logging", "trace"})),
    "logtime": ("Logtime", "Reloaded: logtime = {}", frozenset({"logging"})),
    "logtime_utc": ("LogtimeUTC", "Reloaded: logtime_utc = {}", frozenset({"logging"})),
    "max_connections": ("MaxConn", "Reloaded: max_connections = {}", frozenset({"max_connections"})),
    "ping_interval": ("PingInterval", "Reloaded: ping_interval = {}", frozenset()),
    "ping_max": ("MaxPingsOut", "Reloaded: ping_max = {}", frozenset()),
    "auth_timeout": ("AuthTimeout", "Reloaded: authorization timeout = {}", frozenset({"auth"})),
    "max_control_line": ("MaxControlLine", "Reloaded: max_control_line = {}", frozenset({"parser"})),
    "max_payload": ("MaxPayload", "Reloaded: max_payload = {}", frozenset({"parser", "info"})),
    "pid_file": ("PidFile", "Reloaded: pid_file = {}", frozenset({"pid_file"})),
    "ports_file_dir": ("PortsFileDir", "Reloaded: ports_file_dir = {}", frozenset({"ports_file"})),
    "logfile": ("LogFile", "Reloaded: log_file = {}", frozenset({"logging"})),
    "write_deadline": ("WriteDeadline", "Reloaded: write_deadline = {}", frozenset()),
    "max_traced_msg_len": ("MaxTracedMsgLen", "Reloaded: max_traced_msg_len = {}", frozenset()),
}
_AUTH_LINES = {
    "nkeys": "Reloaded: authorization nkey users",
    "username": "Reloaded: authorization username",
    "password": "Reloaded: authorization password",
    "token": "Reloaded: authorization token",
}
_DURATIONS = {"ping_interval", "write_deadline"}
# The rest, in nats-server's Options order: our field -> its Go name (a change is refused).
_REFUSED = {
    "server_name": "ServerName", "host": "Host", "no_header_support": "NoHeaderSupport",
    "max_subscriptions": "MaxSubs", "max_sub_tokens": "MaxSubTokens", "no_system_account": "NoSystemAccount",
    "http_host": "HTTPHost", "http_port": "HTTPPort", "http_base_path": "HTTPBasePath",
    "https_port": "HTTPSPort", "max_pending": "MaxPending", "jetstream_domain": "JetStreamDomain",
    "jetstream_limits": "JetStreamLimits", "jetstream_max_buffered_msgs": "StreamMaxBufferedMsgs",
    "jetstream_max_buffered_size": "StreamMaxBufferedSize", "sync_interval": "SyncInterval",
    "sync_always": "SyncAlways", "default_js_domain": "JsAccDefaultDomain", "websocket": "Websocket", "log_size_limit": "LogSizeLimit",
    "log_max_num": "LogMaxFiles", "allow_non_tls": "AllowNonTLS", "lame_duck_duration": "LameDuckDuration",
    "lame_duck_grace_period": "LameDuckGracePeriod", "operator_jwts": "TrustedOperators",
}  # fmt: skip
# The order nats-server walks them in (its Options struct), ours in between where they fall.
_ORDER = (
    "server_name", "host", "port", "client_advertise", "trace", "debug", "trace_verbose", "no_header_support",
    "logtime", "logtime_utc", "max_connections", "max_subscriptions", "max_sub_tokens", "nkeys", "users",
    "accounts", "no_auth_user", "system_account", "no_system_account", "username", "password", "token",
    "ping_interval", "ping_max", "http_host", "http_port", "http_base_path", "https_port", "auth_timeout",
    "max_control_line", "max_payload", "max_pending", "jetstream", "jetstream_strict", "max_memory_store",
    "max_file_store", "jetstream_domain", "jetstream_limits", "jetstream_max_buffered_msgs",
    "jetstream_max_buffered_size", "store_dir", "sync_interval", "sync_always", "default_js_domain", "websocket", "pid_file",
    "ports_file_dir", "logfile", "log_size_limit", "log_max_num", "tls", "allow_non_tls", "write_deadline",
    "lame_duck_duration", "lame_duck_grace_period", "max_traced_msg_len", "operator_jwts", "resolver",
    "server_tags",
)  # fmt: skip


# Options whose values Go prints as durations.
_GO_DURATIONS = {"LameDuckDuration", "LameDuckGracePeriod", "SyncInterval"}


def _refuse(go_name: str, old: Any, new: Any) -> ReloadError:
    if go_name in _GO_DURATIONS:
        old, new = _duration(old), _duration(new)
    elif isinstance(old, dict):  # Go's %v of a map: its keys sorted
        old, new = (f"map[{' '.join(f'{k}:{v}' for k, v in sorted(m.items()))}]" for m in (old, new))
    return ReloadError(f"config reload not supported for {go_name}: old={go_value(old)}, new={go_value(new)}")


def diff_options(server: Server, old: ServerOptions, new: ServerOptions) -> list[Change]:
    """nats-server ``diffOptions``: the changes, in its order, or `ReloadError`."""
    changes: list[Change] = []
    js = _JetStreamDiff(server, new)
    for name in _ORDER:
        before, after = getattr(old, name), getattr(new, name)
        if name in ("users", "accounts"):  # always "changed" (nats-server compares no further)
            changes.extend(_accounts_or_users(name, old, new))
            continue
        if before == after:
            continue
        if name == "pid_file" and not after:  # nats-server: nothing to write, nothing said
            continue
        if name in _RELOADED:
            _, text, kinds = _RELOADED[name]
            value = _duration(after) if name in _DURATIONS else go_value(after)
            changes.append(Change(name, text.format(value), kinds))
        elif name in _AUTH_LINES:
            changes.append(Change(name, _AUTH_LINES[name], frozenset({"auth"})))
        elif name in _REFUSED:
            raise _refuse(_REFUSED[name], before, after)
        else:
            changes.extend(_special(server, name, before, after, new, js))
    js.check()
    return changes


def _accounts_or_users(name: str, old: ServerOptions, new: ServerOptions) -> list[Change]:
    if name == "users":
        return [Change("users", "Reloaded: authorization users", frozenset({"auth"}))]
    # Users and mappings are reloaded (nats-server configureAccounts: shallowCopy takes the mappings).
    before = {a.name: msgspec.structs.replace(a, users=[], nkeys=[], mappings={}) for a in old.accounts}
    after = {a.name: msgspec.structs.replace(a, users=[], nkeys=[], mappings={}) for a in new.accounts}
    if before != after:
        changed = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
        raise ReloadError(
            f"config reload not supported for Accounts: account {changed[0]!r} changed "
            "(pyjetstream reloads the users and mappings of accounts, not their other settings)"
        )
    return [Change("accounts", "Reloaded: accounts", frozenset({"auth"}))]


def _special(server: Server, name: str, before: Any, after: Any, new: ServerOptions, js: _JetStreamDiff) -> list[Change]:
    """The options nats-server decides case by case."""
    if name == "port":
        if after in (-1, 0) or after == server.port:  # a random port keeps the one bound
            return []
        raise _refuse("Port", server.port, after)
    if name == "no_auth_user":
        if before and not after and before not in {u.username for u in new.users}:
            return []
        raise _refuse("NoAuthUser", before, after)
    if name == "system_account":
        # "" is the default $SYS: nats-server accepts only its default going back to unset.
        raise _refuse("SystemAccount", before or "$SYS", after)
    if name == "jetstream_strict":
        raise _refuse("NoJetStreamStrict", not before, not after)
    if name == "jetstream":
        js.enable = after
        return [Change(name, "Reloaded: JetStream", frozenset({"jetstream"}))]
    if name in ("max_memory_store", "max_file_store", "store_dir"):
        return js.limit(name, before, after)
    if name == "tls":
        return _tls_changes(before, after)
    if name == "resolver":
        if not before or not after:
            raise ReloadError("config reload does not support moving to or from an account resolver")
        return [Change("accounts", "Reloaded: accounts", frozenset({"auth"}))]
    if name == "server_tags":
        return [Change(name, "Reloaded: tags", frozenset())]
    raise _refuse(name, before, after)  # pragma: no cover - every _ORDER name is handled above


def _tls_changes(before: Any, after: Any) -> list[Change]:
    """nats-server's TLS options: the TLS config itself (``tls = enabled``), its timeout, pinned
    certificates and handshake-first reload; ``verify_and_map`` (TLSMap) and the rate limit do not."""
    if before is None or after is None:
        return [Change("tls", f"Reloaded: tls = {'disabled' if after is None else 'enabled'}", frozenset({"tls", "info"}))]
    if before.verify_and_map != after.verify_and_map:
        raise _refuse("TLSMap", before.verify_and_map, after.verify_and_map)
    if before.connection_rate_limit != after.connection_rate_limit:
        raise _refuse("TLSRateLimit", before.connection_rate_limit, after.connection_rate_limit)
    out = []
    config = ("cert_file", "key_file", "ca_file", "verify", "insecure", "cipher_suites", "curve_preferences")
    if any(getattr(before, k) != getattr(after, k) for k in config):
        out.append(Change("tls", "Reloaded: tls = enabled", frozenset({"tls", "info"})))
    if before.timeout != after.timeout:
        out.append(Change("tls", f"Reloaded: tls timeout = {go_value(after.timeout)}", frozenset()))
    if before.pinned_certs != after.pinned_certs:
        out.append(Change("tls", f"Reloaded: {len(after.pinned_certs)} pinned_certs", frozenset()))
    if before.handshake_first != after.handshake_first:
        out.append(Change("tls", f"Reloaded: Client TLS handshake first: {go_value(after.handshake_first)}", frozenset()))
    return out


class _JetStreamDiff:
    """nats-server's JetStream rules: limits may grow, not shrink, nor go from automatic to set;
    the store directory may not change while JetStream runs (unless it is being turned off)."""

    def __init__(self, server: Server, new: ServerOptions) -> None:
        self.running = server.jetstream_enabled
        self.enable = new.jetstream
        self.limits_unset = False
        self.store_dir_cleared = False

    def limit(self, name: str, before: Any, after: Any) -> list[Change]:
        if not self.running:
            return []
        if name == "store_dir":
            if after:
                raise ReloadError("config reload not supported for jetstream storage directory")
            self.store_dir_cleared = True
            return []
        if before > 0 and after > before:
            label = "max_mem_store" if name == "max_memory_store" else "max_file_store"
            line = f"Reloaded: JetStream {label} = {friendly_bytes(after)}"
            return [Change(name, line, frozenset({"js_limits"}))]
        if before > 0 and after <= 0:
            self.limits_unset = True
            return []
        if before <= 0 < after:
            raise ReloadError("config reload not supported for jetstream dynamic max memory and store")
        raise ReloadError("config reload not supported for decreasing jetstream max memory and store")

    def check(self) -> None:
        if self.enable:
            if self.limits_unset:
                raise ReloadError("config reload not supported for jetstream max memory and max store")
            if self.store_dir_cleared:
                raise ReloadError("config reload not supported for jetstream storage dir")
