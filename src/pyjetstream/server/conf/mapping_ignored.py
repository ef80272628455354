"""What nats-server checks inside the blocks pyjetstream keeps raw (cluster, gateway, leafnodes, mqtt)
that ``-t`` fails on: its durations given as bare numbers, its high authorization timeouts.

The blocks themselves are not applied (a single node has no routes, gateways, leaf nodes or MQTT);
without these checks ``serve -t`` would accept a file nats-server refuses, e.g.
``cluster { ping_interval: 20 }`` ("ping_interval should be converted to a duration").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.server.conf.converters import Invalid
from pyjetstream.server.conf.mapping_base import BlockMapper
from pyjetstream.server.conf.nodes import Node

# nats-server's parseDuration calls in parseCluster, parseGateway, parseLeafNodes and parseMQTT:
# each key (lower case, with its aliases) -> the name its text uses.
_DURATIONS: dict[str, dict[str, str]] = {
    "cluster": {"ping_interval": "ping_interval", "write_deadline": "write_deadline"},
    "gateway": {"write_deadline": "write_deadline"},
    "leafnodes": {
        "reconnect": "reconnect",
        "reconnect_delay": "reconnect",
        "reconnect_interval": "reconnect",
        "dial_timeout": "dial_timeout",
        "write_deadline": "write_deadline",
    },
    "mqtt": {
        "ack_wait": "ack_wait",
        "ackwait": "ack_wait",
        "js_api_timeout": "js_api_timeout",
        "api_timeout": "js_api_timeout",
        "consumer_inactive_threshold": "consumer_inactive_threshold",
        "consumer_auto_cleanup": "consumer_inactive_threshold",
    },
}
_DURATIONS["leaf"] = _DURATIONS["leafnodes"]
# parseRemoteLeafNodes: these name the key as written.
_REMOTE_DURATIONS = ("first_info_timeout", "dial_timeout")
# Blocks whose "authorization" nats-server reads with parseAuthorization (texts by block).
_AUTHORIZATION = {
    "cluster": "authorization",
    "gateway": "authorization",
    "leafnodes": "leafnode authorization",
    "leaf": "leafnode authorization",
}
#: nats-server routeMaxPingInterval: a longer cluster ping_interval is reset to it, with a warning.
ROUTE_MAX_PING_INTERVAL = 30.0


class IgnoredBlocks(BlockMapper):
    """``check_ignored``: nats-server's duration and timeout checks of a block kept raw."""

    if TYPE_CHECKING:  # provided by AuthKeys in the combined Mapper

        def auth_timeout(self, node: Node, key: str, block: str = "authorization") -> float: ...

    def check_ignored(self, key: str, node: Node) -> None:
        kind = key.lower()
        if kind not in _DURATIONS or not isinstance(node.value, dict):
            return
        names = _DURATIONS[kind]
        for sub, value in node.value.items():
            try:
                if sub.lower() in names:
                    seconds = self.legacy_duration(value, sub, names[sub.lower()])
                    if kind == "cluster" and sub.lower() == "ping_interval":
                        self._route_ping(value, seconds)
                elif sub.lower() in ("authorization", "authentication") and kind in _AUTHORIZATION:
                    self._authorization(value, _AUTHORIZATION[kind])
                elif sub.lower() == "remotes" and kind in ("leafnodes", "leaf"):
                    self._remotes(value)
            except Invalid as exc:
                self.errors.append(self.issue(exc.node, exc.message))

    def _route_ping(self, node: Node, seconds: float) -> None:
        if seconds > ROUTE_MAX_PING_INTERVAL:
            self.nats_warning(node, None, "Cluster 'ping_interval' will reset to 30s which is the max for routes")

    def _authorization(self, node: Node, block: str) -> None:
        if isinstance(node.value, dict):
            for sub, value in node.value.items():
                if sub.lower() == "timeout":
                    self.auth_timeout(value, sub, block)

    def _remotes(self, node: Node) -> None:
        if not isinstance(node.value, list):
            return
        for remote in node.value:
            if isinstance(remote.value, dict):
                for sub, value in remote.value.items():
                    if sub.lower() in _REMOTE_DURATIONS:
                        try:
                            self.legacy_duration(value, sub, sub)
                        except Invalid as exc:
                            self.errors.append(self.issue(exc.node, exc.message))
