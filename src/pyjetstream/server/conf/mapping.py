"""Top-level keys to [`ServerOptions`][]; ``load_config`` and ``config_to_options``."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from pyjetstream._hashes import sha256
from pyjetstream.server.conf.converters import (
    Invalid,
    as_bool,
    as_duration,
    as_host_port,
    as_int,
    as_storage_size,
    as_str,
    as_strings,
    go_type,
)
from pyjetstream.server.conf.errors import ConfigError, ConfigIssue
from pyjetstream.server.conf.mapping_accounts import AccountKeys
from pyjetstream.server.conf.mapping_base import Handler
from pyjetstream.server.conf.mapping_ignored import IgnoredBlocks
from pyjetstream.server.conf.mapping_jetstream import JetStreamKeys
from pyjetstream.server.conf.mapping_subjects import parse_mappings
from pyjetstream.server.conf.mapping_tls import TLSKeys
from pyjetstream.server.conf.mapping_websocket import WebSocketKeys
from pyjetstream.server.conf.nodes import Node, plain, wrap_plain
from pyjetstream.server.conf.parser import parse_tree, read_config_file
from pyjetstream.server.options import DEFAULT_HOST, DEFAULT_PORT, ServerOptions

_INT32_MAX = (1 << 31) - 1

# Top-level keys nats-server knows that pyjetstream ignores (warning, raw value kept).
_IGNORED_TOP_LEVEL = {
    "cluster": "clustering (the embedded server is a single node)",
    "gateway": "gateways",
    "leaf": "leaf nodes",
    "leafnodes": "leaf nodes",
    "mqtt": "MQTT",
    "ocsp": "OCSP stapling",
    "ocsp_cache": "OCSP stapling",
    "syslog": "syslog logging",
    "remote_syslog": "syslog logging",
    "prof_port": "the profiling port",
    "prof_block_rate": "the profiling port",
    "connect_error_reports": "route/gateway/leaf error reports",
    "reconnect_error_reports": "route/gateway/leaf error reports",
    "disable_sublist_cache": "the sublist cache switch",
    "no_sublist_cache": "the sublist cache switch",
    "server_metadata": "server metadata",
    "proxies": "trusted proxies",
    "no_fast_producer_stall": "the fast-producer stall switch",
    "default_sentinel": "the JWT default sentinel",
    "proxy_protocol": "the PROXY protocol",
    "write_timeout": "the write-timeout policy",
    "feature_flags": "feature flags",
    "max_closed_clients": "a configurable closed-connections history",
}
# Keys whose silent omission would weaken security: refused with an error.
_REFUSED_TOP_LEVEL = {
    key: "this part of operator/JWT mode is not supported by pyjetstream "
    "(use operator with a MEMORY or full resolver)"
    for key in (
        "root",
        "roots",
        "resolver_tls",
        "resolver_pinned_accounts",
        "trusted",
        "trusted_keys",
    )
}


def _client_port(node: Node, key: str) -> int:
    port = as_int(node, key)
    return DEFAULT_PORT if port == 0 else port  # nats-server: 0 means the default port


def _int32(node: Node, key: str) -> int:
    value = as_int(node, key)
    if value > _INT32_MAX:
        raise Invalid(node, f"{key} value is too big")
    return value


def _sub_tokens(node: Node, key: str) -> int:
    value = as_int(node, key)
    if value > 255:
        raise Invalid(node, f"{key} value is too big")
    if value <= 0:
        raise Invalid(node, f"{key} value can not be negative")
    return value


def _server_name(node: Node, key: str) -> str:
    name = as_str(node, key)
    if " " in name:
        raise Invalid(node, "server name cannot contain spaces")  # nats-server ErrServerNameHasSpaces
    return name


def _lame_duck_duration(node: Node, key: str) -> float:
    value = as_duration(node, key)
    if value < 30:
        raise Invalid(node, f"invalid lame_duck_duration of {node.value}, minimum is 30 seconds")
    return value


def _grace_period(node: Node, key: str) -> float:
    value = as_duration(node, key)
    if value < 0:
        raise Invalid(node, "invalid lame_duck_grace_period, needs to be positive")
    return value


class Mapper(AccountKeys, JetStreamKeys, TLSKeys, WebSocketKeys, IgnoredBlocks):
    """The whole configuration: the top-level keys, with each block handed to its mixin."""

    def apply(self, tree: dict[str, Node], validate: bool = True) -> None:
        spec: dict[str, Handler] = {
            "listen": self.listen,
            "port": ("port", _client_port),
            "host|net": ("host", lambda n, k: as_str(n, k) or DEFAULT_HOST),
            "server_name": ("server_name", _server_name),
            "client_advertise": ("client_advertise", as_str),
            "http": self.http,
            "https": self.https,
            "http_port|monitor_port": ("http_port", as_int),
            "https_port": ("https_port", as_int),
            "http_base_path": ("http_base_path", as_str),
            "jetstream": self.jetstream,
            "store_dir|storedir": self.store_dir,
            "authorization": self.authorization,
            "no_auth_user": ("no_auth_user", as_str),
            "accounts": self.accounts,
            "operator|operators|root_operator|root_operators": self.operator,
            "resolver|account_resolver|accounts_resolver": self.resolver,
            "resolver_preload": self.resolver_preload,
            "system_account|system": ("system_account", as_str),
            "no_system_account|no_system|no_sys_acc": ("no_system_account", as_bool),
            "max_payload": ("max_payload", _int32),
            "max_control_line": ("max_control_line", _int32),
            "max_pending": ("max_pending", as_int),
            "max_connections|max_conn": ("max_connections", as_int),
            "max_subscriptions|max_subs": ("max_subscriptions", as_int),
            "max_sub_tokens|max_subscription_tokens": ("max_sub_tokens", _sub_tokens),
            "ping_interval": ("ping_interval", self.legacy_duration),
            "ping_max": ("ping_max", as_int),
            "write_deadline": ("write_deadline", self.legacy_duration),
            "lame_duck_duration": ("lame_duck_duration", _lame_duck_duration),
            "lame_duck_grace_period": ("lame_duck_grace_period", _grace_period),
            "disable_short_first_ping": ("disable_short_first_ping", as_bool),
            "no_header_support": ("no_header_support", as_bool),
            "debug": ("debug", as_bool),
            "trace": ("trace", as_bool),
            "trace_verbose": self.trace_verbose,
            "trace_headers": self.trace_headers,
            "logtime": ("logtime", as_bool),
            "logtime_utc": ("logtime_utc", as_bool),
            "logfile|log_file": ("logfile", as_str),
            "logfile_size_limit|log_size_limit": ("log_size_limit", as_storage_size),
            "logfile_max_num|log_max_num": ("log_max_num", as_int),
            "max_traced_msg_len": ("max_traced_msg_len", as_int),
            "pidfile|pid_file": ("pid_file", as_str),
            "ports_file_dir": ("ports_file_dir", as_str),
            "server_tags": ("server_tags", as_strings),
            "tls": self.tls,
            "allow_non_tls": ("allow_non_tls", as_bool),
            "websocket|ws": self.websocket,
            "mappings|maps": self.mappings,
            "default_js_domain": self.default_js_domain,
            "|".join(_IGNORED_TOP_LEVEL): self.ignored,
            "|".join(_REFUSED_TOP_LEVEL): self.refused,
        }
        self.each(tree, spec)
        o = self.o
        if o.tls is not None and not self.auth_timeout_set:
            o.auth_timeout = o.tls.timeout + 1.0  # nats-server's default with TLS
        if validate:
            for problem in o.problems():
                self.errors.append(ConfigIssue(problem, self.filename))

    def ignored(self, key: str, node: Node) -> None:
        self.o.unsupported[key] = plain(node)
        what = _IGNORED_TOP_LEVEL[key.lower()]
        self.warn(node, f'"{key}" ignored: {what} is not supported by pyjetstream')
        self.check_ignored(key, node)

    def mappings(self, key: str, node: Node) -> None:
        """The global account's mappings (nats-server adds a ``$G`` account holding them)."""
        self.o.mappings.update(parse_mappings(self, node))

    def default_js_domain(self, key: str, node: Node) -> None:
        """``default_js_domain { <account>: <domain> }`` (nats-server ``processConfigFileLine``):
        a map of strings; a value of another type is its Go panic."""
        if not isinstance(node.value, dict):
            raise Invalid(node, f"error default_js_domain config: unsupported type {go_type(node.value)}")
        out: dict[str, str] = {}
        for account, value in node.value.items():
            if not isinstance(value.value, str):
                raise Invalid(node, f"interface conversion: interface {{}} is {go_type(value.value)}, not string")
            out[account] = value.value
        self.o.default_js_domain = out

    def refused(self, key: str, node: Node) -> None:
        self.error(node, f'"{key}": {_REFUSED_TOP_LEVEL[key.lower()]}')

    def listen(self, key: str, node: Node) -> None:
        host, port = as_host_port(node, key)
        self.o.host = host or DEFAULT_HOST
        self.o.port = DEFAULT_PORT if port == 0 else port

    def http(self, key: str, node: Node) -> None:
        host, self.o.http_port = as_host_port(node, key)
        if host is not None:
            self.o.http_host = host

    def https(self, key: str, node: Node) -> None:
        host, self.o.https_port = as_host_port(node, key)
        if host is not None:
            self.o.http_host = host

    def trace_verbose(self, key: str, node: Node) -> None:
        self.o.trace_verbose = self.o.trace = as_bool(node, key)

    def trace_headers(self, key: str, node: Node) -> None:
        # nats-server traces only message headers with it; it turns tracing on as ``trace`` does.
        self.o.trace = as_bool(node, key)


#: nats-server's warning for a configuration file without any value.
EMPTY_CONFIG = "config has no values or is empty"


def _apply_tree(
    tree: dict[str, Node], base: ServerOptions | None, strict: bool, filename: str, validate: bool = True
) -> ServerOptions:
    """A copy of ``base`` (or the defaults) with the tree applied; raises ConfigError."""
    opts = ServerOptions() if base is None else base.copy()
    if filename:
        opts.config_file = filename
    mapper = Mapper(opts, strict, filename)
    if not tree and filename:
        # nats-server processConfigFile: a warning, fatal only for -t (like every warning there).
        opts.warnings.append(f"{filename}: {EMPTY_CONFIG}")
        opts.check_warnings.append(f"{filename}: {EMPTY_CONFIG}")
    mapper.apply(tree, validate)
    if mapper.errors:
        raise ConfigError(mapper.nats_warnings + mapper.errors)
    return opts


def config_to_options(
    config: Mapping[str, Any],
    *,
    base: ServerOptions | None = None,
    strict: bool = True,
    filename: str = "",
) -> ServerOptions:
    """Map a parsed configuration (``parse``'s result, or any plain dict) to options.

    ``base`` (copied, not modified) supplies values the configuration does not set.
    Raises ConfigError listing every problem; non-fatal findings go to ``warnings``.
    """
    node = wrap_plain(dict(config), filename)
    return _apply_tree(node.value, base, strict, filename)


def load_config(
    path: str,
    *,
    base: ServerOptions | None = None,
    strict: bool = True,
    environ: Mapping[str, str] | None = None,
    validate: bool = True,
) -> ServerOptions:
    """Read a NATS configuration file into ServerOptions (raises ConfigError).

    ``validate=False`` leaves out the start-up checks of the options as a whole
    (`ServerOptions.problems`: nats-server's validateOptions), which nats-server makes after the
    command line is applied and ``-t`` does not make at all."""
    tree = parse_tree(read_config_file(path), path, os.environ if environ is None else environ)
    opts = _apply_tree(tree, base, strict, path, validate)
    opts.config_digest = config_digest(plain(tree))
    return opts


def config_digest(config: Mapping[str, Any]) -> str:
    """nats-server conf.configDigest: sha256 over the parsed map as Go's json.Encoder writes it
    (sorted keys, no spaces, HTML-escaped, trailing newline); /varz reports it."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return "sha256:" + sha256((text + "\n").encode()).hexdigest()
