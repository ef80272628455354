"""The ``websocket {}`` block (alias ``ws``), as nats-server's ``parseWebsocket``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.server.conf.converters import (
    Invalid,
    as_bool,
    as_host_port,
    as_int,
    as_map,
    as_str,
    as_strings,
    go_type,
)
from pyjetstream.server.conf.mapping_base import BlockMapper
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.units import parse_duration
from pyjetstream.server.options import WebSocketOptions

# Per-listener authentication overrides: ignoring them could let websocket clients in with less
# than the configuration asks for, so they are refused, not ignored.
_REFUSED = ("username", "user", "password", "pass", "token", "no_auth_user", "jwt_cookie", "users", "nkeys")


class WebSocketKeys(BlockMapper):
    """``websocket { port, host, listen, no_tls, tls, same_origin, allowed_origins, compression, ... }``."""

    if TYPE_CHECKING:  # provided by TLSKeys in the combined Mapper

        def tls(self, key: str, node: Node) -> None: ...

    def websocket(self, key: str, node: Node) -> None:
        ws = WebSocketOptions()

        def listen(k: str, n: Node) -> None:
            host, ws.port = as_host_port(n, k)
            if host is not None:
                ws.host = host

        def handshake_timeout(k: str, n: Node) -> None:
            ws.handshake_timeout = _handshake_timeout(n)

        def ping_interval(k: str, n: Node) -> None:
            # nats-server 2.11+: pings to WebSocket clients; checked as there, the server's
            # ping_interval still applies here.
            self.legacy_duration(n, k)

        def tls(k: str, n: Node) -> None:
            saved = self.o.tls
            self.tls(k, n)  # TLSKeys: checks the block and loads the certificate pair
            ws.tls, self.o.tls = self.o.tls, saved

        def refused(k: str, n: Node) -> None:
            self.error(n, f'"websocket.{k}": per-listener authentication is not supported by pyjetstream')

        def accepted(k: str, n: Node) -> None:
            pass  # browser/proxy details nats-server uses that do not change what is accepted

        self.each(
            as_map(node, key),
            {
                "listen": listen,
                "port": ("port", as_int),
                "host|net": ("host", as_str),
                "advertise": ("advertise", as_str),
                "no_tls": ("no_tls", as_bool),
                "tls": tls,
                "same_origin": ("same_origin", as_bool),
                "allowed_origins|allowed_origin|allow_origins|allow_origin|origins|origin": (
                    "allowed_origins",
                    lambda n, k: [n.value] if isinstance(n.value, str) else as_strings(n, k),
                ),
                "compression": ("compression", as_bool),
                "handshake_timeout": handshake_timeout,
                "ping_interval": ping_interval,
                "auth_timeout|headers|token_cookie|user_cookie|pass_cookie|no_auth_user_cookie": accepted,
                "|".join(_REFUSED): refused,
            },
            ws,
        )
        self.o.websocket = ws


def _handshake_timeout(node: Node) -> float:
    """nats-server parseWebsocket: an integer is seconds (no warning, unlike parseDuration), a
    string a Go duration (its error text alone); any other type is refused."""
    value = node.value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise Invalid(node, str(exc)) from None
    raise Invalid(node, f"error parsing handshake timeout: unsupported type {go_type(value)}")
