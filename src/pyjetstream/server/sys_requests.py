"""The system account's monitoring requests: ``$SYS.REQ.SERVER.PING`` (statistics), and
``$SYS.REQ.SERVER.PING.<KIND>`` / ``$SYS.REQ.SERVER.<id>.<KIND>`` for ``VARZ``, ``CONNZ``,
``SUBSZ``, ``JSZ``, ``HEALTHZ``, ``ACCOUNTZ``, ``ROUTEZ``, ``GATEWAYZ``, ``LEAFZ``, ``IPQUEUESZ``,
``RAFTZ``, ``EXPVARZ``, ``STATSZ``, ``IDZ`` — what ``nats server list|report|request`` send
(nats-server ``events.go``: ``initEventTracking``, ``zReq``, ``statszReq``, ``filterRequest``).

Each answer is the HTTP endpoint's (the same ``server.monitor_handlers`` that serve ``/varz`` …,
the request's ``*Options`` JSON turned into that endpoint's query), wrapped as nats-server's
``ServerAPIResponse``: ``{"server": ServerInfo, "data": …}`` or ``{"server": …, "error": {code,
description}}``; the statistics answer is ``{"server": …, "statsz": ServerStats}``. A request whose
``EventFilterOptions`` (``server_name``, ``cluster``, ``host``, ``tags``, ``domain``; substring unless
``exact_match``) do not select this server gets no answer. Only users of the system account can
send them (nats-server also imports ``CONNZ`` into every account, scoped to it: not done here, as
internal subscriptions would show in each account's ``/subsz``; a service import would be the way).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api.timefmt import format_time
from pyjetstream.server.version import SERVER_VERSION

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = ["SystemRequests"]

# KIND → the monitoring path whose handler answers it.
_PATHS = {
    "VARZ": "/varz", "CONNZ": "/connz", "SUBSZ": "/subsz", "JSZ": "/jsz", "HEALTHZ": "/healthz",
    "ACCOUNTZ": "/accountz", "ROUTEZ": "/routez", "GATEWAYZ": "/gatewayz", "LEAFZ": "/leafz",
    "IPQUEUESZ": "/ipqueuesz", "RAFTZ": "/raftz", "EXPVARZ": "/debug/vars",
}  # fmt: skip
# Per KIND: request option (nats-server's *Options JSON name) → the endpoint's query parameter.
_QUERY = {
    "CONNZ": {"sort": "sort", "auth": "auth", "offset": "offset", "limit": "limit", "cid": "cid", "user": "user",
              "acc": "acc", "filter_subject": "filter_subject", "mqtt_client": "mqtt_client"},
    "SUBSZ": {"offset": "offset", "limit": "limit", "account": "acc", "test": "test"},
    "JSZ": {"account": "acc", "accounts": "accounts", "streams": "streams", "consumer": "consumers",
            "config": "config", "leader_only": "leader-only", "offset": "offset", "limit": "limit", "raft": "raft"},
    "ACCOUNTZ": {"account": "acc"},
    "HEALTHZ": {"js-enabled-only": "js-enabled-only", "js-server-only": "js-server-only", "account": "account",
                "stream": "stream", "consumer": "consumer", "details": "details"},
    "ROUTEZ": {}, "LEAFZ": {"account": "acc"}, "GATEWAYZ": {"name": "gw_name", "account_name": "acc_name"},
    "IPQUEUESZ": {"all": "all", "filter": "queues"}, "RAFTZ": {"account": "acc", "group": "group"},
}  # fmt: skip
_CONNZ_STATES = {0: "open", 1: "closed", 2: "all"}
# ServerCapability: JetStream enabled, binary stream snapshots, account NRG (nats-server events.go).
_JS_ENABLED, _BINARY_SNAPSHOT, _ACCOUNT_NRG = 1, 2, 4


class SystemRequests:
    """The internal subscriptions of the system account that answer monitoring requests."""

    def __init__(self, server: Server, system: Account) -> None:
        self.server = server
        self.system = system
        self._seq = 0
        self._tasks: set[asyncio.Task[None]] = set()

    def subscribe(self) -> None:
        """Answer from now on — when someone can ask: the system account has users (it is configured
        in ``accounts {}``) or comes from an operator. The implicit ``$SYS`` of a plain server has none,
        and its subscription counts stay those of a server without these answers."""
        # Deferred: the HTTP endpoints' handlers, without their listener (monitor.py builds them).
        from pyjetstream.server.monitor import MonitorServer

        if self.system.config is None and self.server.authenticator.trust is None:
            return
        MonitorServer(self.server)  # fills server.monitor_handlers (setdefault); starts nothing
        for subject in ("$SYS.REQ.SERVER.PING", "$SYS.REQ.SERVER.PING.*", f"$SYS.REQ.SERVER.{self.server.server_id}.*"):
            self.system.subscribe_internal(subject, self.on_request)

    async def _answer_account_connz(self, name: str, reply: str, payload: bytes, account: Account) -> None:
        """CONNZ of account ``name``'s connections only (nats-server ``accountConnz``), paged after;
        the answer is published in ``account``."""
        try:
            options = json.loads(payload) if payload.strip() else {}
        except ValueError as exc:
            self._respond(reply, {"error": {"code": 400, "description": str(exc)}}, account)
            return
        if not isinstance(options, dict) or not self._selected(options):
            return
        offset, limit = int(options.get("offset") or 0), int(options.get("limit") or 1024)
        everything = {**options, "offset": 0, "limit": 1 << 30, "auth": True}
        answer = await self._endpoint("CONNZ", everything)
        data = answer.get("data")
        if data is not None:
            mine = [c for c in data["connections"] if c.get("account", "$G") == name]
            if not options.get("auth"):
                for c in mine:
                    c.pop("authorized_user", None)
                    c.pop("account", None)
            page = mine[offset : offset + limit]
            data.update(connections=page, num_connections=len(page), total=len(mine), offset=offset, limit=limit)
        self._respond(reply, answer, account)

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        kind = "STATSZ" if subject == "$SYS.REQ.SERVER.PING" else subject.rsplit(".", 1)[-1]
        if kind not in _PATHS and kind not in ("STATSZ", "IDZ"):
            return
        task = asyncio.get_running_loop().create_task(self._answer(kind, reply, payload))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _answer(self, kind: str, reply: str, payload: bytes) -> None:
        try:
            options = json.loads(payload) if payload.strip() else {}
            if not isinstance(options, dict):
                raise ValueError("json: cannot unmarshal into Go value of type options")
        except ValueError as exc:
            self._respond(reply, {"error": {"code": 400, "description": str(exc)}})
            return
        if not self._selected(options):
            return
        if kind == "CONNZ" and options.get("acc"):  # the endpoint does not filter by account
            await self._answer_account_connz(options["acc"], reply, payload, self.system)
        elif kind == "STATSZ":
            self._respond(reply, {"statsz": await self._statsz()})
        elif kind == "IDZ":
            self._respond(reply, {"data": {"name": self.server.server_name, "host": self.server.options.host,
                                           "id": self.server.server_id}})  # fmt: skip
        else:
            self._respond(reply, await self._endpoint(kind, options))

    async def _endpoint(self, kind: str, options: dict[str, Any]) -> dict[str, Any]:
        # Deferred: only monitoring requests need these.
        from pyjetstream.server.monitor import JSONResponse, MonitorError

        handler = self.server.monitor_handlers.get(_PATHS[kind])
        if handler is None:  # /jsz without JetStream
            return {"error": {"code": 503, "description": "JetStream not enabled"}}
        try:
            data = await handler(_query(kind, options))
        except MonitorError as exc:
            return {"error": {"code": exc.status, "description": exc.text.strip()}}
        if isinstance(data, JSONResponse):
            data = data.body
        return {"data": data}

    async def _statsz(self) -> dict[str, Any]:
        """nats-server ``ServerStats`` from what ``/varz`` says."""
        varz = await self.server.monitor_handlers["/varz"]({})
        stats = {
            "start": varz["start"], "mem": varz["mem"], "cores": varz["cores"], "cpu": varz["cpu"],
            "connections": varz["connections"], "total_connections": varz["total_connections"],
            "active_accounts": sum(1 for a in self.server.accounts.values() if getattr(a, "num_clients", 0)) or 1,
            "subscriptions": varz["subscriptions"],
            "sent": {"msgs": varz["out_msgs"], "bytes": varz["out_bytes"]},
            "sent_to_clients": {"msgs": varz.get("out_client_msgs", 0), "bytes": varz.get("out_client_bytes", 0)},
            "received": {"msgs": varz["in_msgs"], "bytes": varz["in_bytes"]},
            "received_from_clients": {"msgs": varz.get("in_client_msgs", 0), "bytes": varz.get("in_client_bytes", 0)},
            "slow_consumers": varz["slow_consumers"], "active_servers": 1,
        }  # fmt: skip
        js = varz.get("jetstream") or {}
        if js.get("config"):
            stats["jetstream"] = {k: js[k] for k in ("config", "stats", "limits") if k in js}
        stats["gomaxprocs"] = varz.get("gomaxprocs", varz["cores"])
        return stats

    def _selected(self, options: dict[str, Any]) -> bool:
        """nats-server ``filterRequest``: does this server answer?"""
        server = self.server
        exact = bool(options.get("exact_match"))
        # A single server: no cluster name (a request naming one selects nothing).
        for key, mine in (("server_name", server.server_name), ("cluster", ""), ("host", server.options.host)):
            wanted = options.get(key) or ""
            if wanted and not (mine == wanted if exact else wanted in (mine or "")):
                return False
        tags = set(server.options.server_tags)
        if options.get("tags") and not set(options["tags"]) <= tags:
            return False
        domain = options.get("domain") or ""
        return not domain or domain == server.options.jetstream_domain

    def _respond(self, reply: str, body: dict[str, Any], account: Account | None = None) -> None:
        server = self.server
        self._seq += 1
        info: dict[str, Any] = {"name": server.server_name, "host": server.options.host, "id": server.server_id}
        if server.options.jetstream_domain:
            info["domain"] = server.options.jetstream_domain
        tags = list(server.options.server_tags)
        info.update({"ver": SERVER_VERSION, **({"tags": tags} if tags else {})})
        flags = _BINARY_SNAPSHOT | _ACCOUNT_NRG | (_JS_ENABLED if server.jetstream_enabled else 0)
        info.update({"jetstream": server.jetstream_enabled, "flags": flags, "seq": self._seq,
                     "time": format_time(time.time_ns())})  # fmt: skip
        out = json.dumps({"server": info, **body}, separators=(",", ":")).encode()
        (account or self.system).publish_internal(reply, out)


def _query(kind: str, options: dict[str, Any]) -> dict[str, str]:
    """A request's options as the endpoint's query (nats-server decodes both into the same *Options)."""
    query: dict[str, str] = {}
    for key, param in _QUERY.get(kind, {}).items():
        value = options.get(key)
        if value in (None, "", False, 0) and not (key == "details" and value is False):
            continue
        query[param] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    if kind == "CONNZ":
        if options.get("subscriptions_detail"):
            query["subs"] = "detail"
        elif options.get("subscriptions"):
            query["subs"] = "1"
        query["state"] = _CONNZ_STATES.get(int(options.get("state") or 0), "open")
    elif kind in ("SUBSZ", "ROUTEZ", "LEAFZ", "GATEWAYZ"):
        if options.get("subscriptions_detail"):
            query["subs"] = "detail"
        elif options.get("subscriptions"):
            query["subs"] = "1"
    return query
