"""The system account's monitoring requests: ``$SYS.REQ.SERVER.PING`` (statistics), and
``$SYS.REQ.SERVER.PING.<KIND>`` / ``$SYS.REQ.SERVER.<id>.<KIND>`` for ``VARZ``, ``CONNZ``,
``SUBSZ``, ``JSZ``, ``HEALTHZ``, ``ACCOUNTZ``, ``ROUTEZ``, ``GATEWAYZ``, ``LEAFZ``, ``IPQUEUESZ``,
``RAFTZ``, ``EXPVARZ``, ``STATSZ``, ``IDZ`` — what ``nats server list|report|request`` send
(nats-server ``events.go``: ``initEventTracking``, ``zReq``, ``statszReq``, ``filterRequest``).

Each answer is the HTTP endpoint's (the same ``server.monitor_handlers`` that serve ``/varz`` …,
the request's ``*Options`` JSON turned into that endpoint's query), wrapped as nats-server's
``ServerAPIResponse``: ``{"server": ServerInfo, "data": …}`` or ``{"server": …, "error": {code,
description}}``; the statistics answer is ``{"server": …, "statsz": ServerStats}``. A request is
answered in the callback that received it — the requester's read, whose end writes the answer —
since every endpoint answers at once (`ANSWER_IN_READ`); the ``ServerInfo`` header's JSON is made
once for what it says of the server and only its ``seq`` and ``time`` written per answer
(`_InfoHeader`, as nats-server's ``internalSendLoop`` fills the fields it read once). A request whose
``EventFilterOptions`` (``server_name``, ``cluster``, ``host``, ``tags``, ``domain``; substring unless
``exact_match``) do not select this server gets no answer. Only users of the system account can
send them directly.

The account-scoped requests ``$SYS.REQ.ACCOUNT.<acc>.<KIND>`` (``CONNZ``, ``STATZ``, ``SUBSZ``,
``LEAFZ``, ``INFO``), ``$SYS.REQ.ACCOUNT.PING.STATZ``, ``$SYS.REQ.USER.<acc>.INFO`` and
``$SYS.DEBUG.SUBSCRIBERS`` are answered too (``monAccSrvc``, ``userInfoReq``, ``debugSubscribers``):
every account reaches the first ones through its system imports (`pyjetstream.server.sys_imports`),
so an ordinary user's ``$SYS.REQ.SERVER.PING.CONNZ`` lists its own account's connections.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api.timefmt import format_go_duration, format_time
from pyjetstream.protocol.headers import get_header
from pyjetstream.protocol.subjects import is_subset, is_valid_literal_subject, subject_matches
from pyjetstream.server.msgtrace import DEFAULT_FEATURE_FLAGS
from pyjetstream.server.sys_imports import CLIENT_INFO_HDR
from pyjetstream.server.sys_options import ACCOUNT_KINDS, SERVER_KINDS, option_type_error
from pyjetstream.server.version import SERVER_VERSION

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.options import Permissions
    from pyjetstream.server.server import Server

__all__ = ["SystemRequests", "server_info"]

#: Answer a request in the callback that received it (the requester's read): every endpoint's
#: handler answers at once. Off: in a later turn of the event loop (as a task per request did
#: until session 14, ~15 µs of a request's ~70); the same answers (tests/server/test_sys_requests.py).
ANSWER_IN_READ = True

# KIND → the monitoring path whose handler answers it.
_PATHS = {
    "VARZ": "/varz", "CONNZ": "/connz", "SUBSZ": "/subsz", "JSZ": "/jsz", "HEALTHZ": "/healthz",
    "ACCOUNTZ": "/accountz", "ROUTEZ": "/routez", "GATEWAYZ": "/gatewayz", "LEAFZ": "/leafz",
    "IPQUEUESZ": "/ipqueuesz", "RAFTZ": "/raftz", "EXPVARZ": "/debug/vars",
}  # fmt: skip
# Per KIND: request option (nats-server's *Options JSON name) → the endpoint's query parameter.
_QUERY = {
    "CONNZ": {"sort": "sort", "auth": "auth", "offset": "offset", "limit": "limit", "cid": "cid", "user": "user",
              "acc": "acc", "filter_subject": "_filter_subject", "mqtt_client": "mqtt_client"},
    "SUBSZ": {"offset": "offset", "limit": "limit", "account": "acc", "test": "test"},
    "JSZ": {"account": "acc", "accounts": "accounts", "streams": "streams", "consumer": "consumers",
            "direct_consumer": "direct-consumers", "config": "config", "leader_only": "leader-only", "offset": "offset",
            "limit": "limit", "raft": "raft", "stream_leader_only": "stream-leader-only"},
    "ACCOUNTZ": {"account": "acc"},
    "HEALTHZ": {"js-enabled-only": "js-enabled-only", "js-server-only": "js-server-only", "account": "account",
                "stream": "stream", "consumer": "consumer", "details": "details"},
    "ROUTEZ": {}, "LEAFZ": {"account": "acc"}, "GATEWAYZ": {"name": "gw_name", "account_name": "acc_name"},
    "IPQUEUESZ": {"all": "all", "filter": "queues"}, "RAFTZ": {"account": "acc", "group": "group"},
}  # fmt: skip
_CONNZ_STATES = {0: "open", 1: "closed", 2: "all"}
# ServerCapability: JetStream enabled, binary stream snapshots, account NRG (nats-server events.go).
_JS_ENABLED, _BINARY_SNAPSHOT, _ACCOUNT_NRG = 1, 2, 4


#: The kinds ``$SYS.REQ.SERVER.PING.<KIND>`` / ``$SYS.REQ.SERVER.<id>.<KIND>`` answer here (nats-server's
#: ``monSrvc``): ``STATSZ`` the statistics, as the bare PING; ``IDZ`` the server's id; ``PROFILEZ``
#: nats-server's answers for what it cannot profile (`_profilez`).
_SERVER_KINDS = ("STATSZ", "IDZ", "PROFILEZ", *_PATHS)
#: Go's runtime profiles (``pprof.Lookup``): a name among them is one nats-server would write.
_GO_PROFILES = frozenset({"goroutine", "threadcreate", "heap", "allocs", "block", "mutex"})


class _Skip(Exception):
    """nats-server ``errSkipZreq``: this server has nothing to say (no answer at all)."""


# The account-scoped kinds (``$SYS.REQ.ACCOUNT.<acc>.<KIND>``) answered here, and the query each
# passes to its endpoint for that account (nats-server ``monAccSrvc``).
_ACCOUNT_KINDS = ("CONNZ", "STATZ", "SUBSZ", "LEAFZ", "INFO")


class SystemRequests:
    """The internal subscriptions of the system account that answer monitoring requests."""

    def __init__(self, server: Server, system: Account) -> None:
        self.server = server
        self.system = system
        self._monitor: Any = None  # pyjetstream.server.monitor, once a request needs it
        self._header = _InfoHeader()

    def _handlers(self) -> dict[str, Any]:
        """``server.monitor_handlers``, the HTTP endpoints' handlers (monitor.py builds them,
        without their listener) at the first request that needs one: a server start imports
        only what its options use, and the monitoring code is not used until asked."""
        self._monitoring()
        return self.server.monitor_handlers

    def _monitoring(self) -> Any:
        """The monitor module, imported (and its handlers registered) at the first request."""
        if self._monitor is None:
            from pyjetstream.server import monitor  # Deferred: see `_handlers`.

            monitor.MonitorServer(self.server)  # fills server.monitor_handlers (setdefault); starts nothing
            self._monitor = monitor
        return self._monitor

    def subscribe(self) -> None:
        """Answer from now on, as nats-server's ``initEventTracking`` does: the server's requests
        (for users of the system account), the account-scoped ones (which every account reaches
        through its system imports, `pyjetstream.server.sys_imports`), user info and the
        subscriber count."""
        system = self.system
        system.subscribe_internal("$SYS.REQ.SERVER.PING", self.on_request)
        # One subscription per kind answered, as nats-server's ``monSrvc``: another kind has no
        # responders (a 503 to the requester, not a wait for an answer that never comes).
        for kind in _SERVER_KINDS:
            system.subscribe_internal(f"$SYS.REQ.SERVER.PING.{kind}", self.on_request)
        system.subscribe_internal(f"$SYS.REQ.SERVER.{self.server.server_id}.*", self.on_request)
        for kind in _ACCOUNT_KINDS:
            system.subscribe_internal(f"$SYS.REQ.ACCOUNT.*.{kind}", self.on_account_request)
        system.subscribe_internal("$SYS.REQ.ACCOUNT.PING.STATZ", self.on_account_request)
        system.subscribe_internal("$SYS.REQ.USER.*.INFO", self.on_user_info)
        system.subscribe_internal("$SYS.DEBUG.SUBSCRIBERS", self.on_debug_subscribers)

    def _answer(self, reply: str, payload: bytes, answer: Any, types: tuple[dict[str, Any], str]) -> None:
        """`_z` now, in the requester's read (`ANSWER_IN_READ`), else in a later turn of the loop."""
        if ANSWER_IN_READ:
            self._z(reply, payload, answer, types)
        else:
            asyncio.get_running_loop().call_soon(self._z, reply, payload, answer, types)

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        kind = "STATSZ" if subject == "$SYS.REQ.SERVER.PING" else subject.rsplit(".", 1)[-1]
        if kind not in _SERVER_KINDS:
            return
        if kind == "IDZ":  # nats-server ``idzReq``: the bare ServerID, no options, no filters
            server = self.server
            idz = {"name": server.server_name, "host": server.options.host, "id": server.server_id}
            self.system.publish_internal(reply, json.dumps(idz, separators=(",", ":")).encode())
            return
        self._answer(reply, payload, lambda options: self._server_kind(kind, options), (SERVER_KINDS, kind))

    def on_account_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        """``$SYS.REQ.ACCOUNT.<acc>.<KIND>`` (and ``$SYS.REQ.ACCOUNT.PING.STATZ``: every account)."""
        if not reply:
            return
        tokens = subject.split(".")
        if len(tokens) != 5:
            return
        name, kind = tokens[3], tokens[4]
        types = (ACCOUNT_KINDS, kind)
        self._answer(reply, payload, lambda options: self._account_kind(subject, name, kind, options), types)

    def _z(self, reply: str, payload: bytes, answer: Any, types: tuple[dict[str, Any], str]) -> None:
        """nats-server ``zReq``: the request's options (a 400 when they do not decode into the kind's
        struct: `pyjetstream.server.sys_options`), the server filters, then the answer (``data``), a
        500 with the reason, or nothing (`_Skip`). Every request is answered (or skipped on purpose)."""
        options: dict[str, Any] = {}
        if payload:
            try:
                options = json.loads(payload) or {}
                error = option_type_error(types[0], types[1], payload)
                if error is None and not isinstance(options, dict):
                    error = "json: cannot unmarshal into Go value of type options"
            except ValueError as exc:
                error = str(exc)
            if error is not None:
                self._respond(reply, {"error": {"code": 400, "description": error}})
                return
            if not self._selected(options):
                return
        try:
            body = answer(options)
        except _Skip:
            return
        except Exception as exc:  # a bug here must not leave the requester waiting
            self.server.logger.exception("system request failed")
            body = {"error": {"code": 500, "description": str(exc)}}
        self._respond(reply, body, floats=_PATHS.get(types[1]) not in self._monitoring().FLOATLESS)

    def _server_kind(self, kind: str, options: dict[str, Any]) -> dict[str, Any]:
        if kind == "STATSZ":
            return {"statsz": self._monitoring().statsz(self.server)}
        if kind == "PROFILEZ":
            return {"data": _profilez(options)}
        return self._endpoint(kind, options)

    def _account_kind(self, subject: str, name: str, kind: str, options: dict[str, Any]) -> dict[str, Any]:
        """nats-server ``monAccSrvc`` (and the ``ACCOUNT.PING.STATZ`` handler): the kind for one account."""
        # Deferred: the account monitoring helpers are only needed here.
        from pyjetstream.server.monitor_accounts import account_detail, account_stats

        if kind == "STATZ":
            if subject != "$SYS.REQ.ACCOUNT.PING.STATZ":
                if name == "PING":  # the account-ping handler answers this one
                    raise _Skip
                options = {**options, "accounts": [name]}
            unused = bool(options.get("include_unused"))
            stats = account_stats(self.server, list(options.get("accounts") or []), unused)
            if not stats and not unused:
                raise _Skip
            return {"data": {"server_id": self.server.server_id, "now": format_time(time.time_ns()),
                             "account_statz": stats}}  # fmt: skip
        if kind == "INFO":
            account = self.server.accounts.get(name)
            if account is None:
                return {"error": {"code": 500, "description": f"Account {name} does not exist"}}
            return {"data": account_detail(self.server, account)}
        if kind == "SUBSZ":
            options = {**options, "subscriptions": True}
        return self._endpoint(kind, {**options, "acc": name, "account": name})

    def on_user_info(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        """nats-server ``userInfoReq``: who asked (the ``Nats-Request-Info`` its system import added)."""
        if not reply:
            return
        info = _request_info(hdr)
        if info is None:
            self._respond(reply, {"error": {"code": 400}})
            return
        name = str(info.get("acc") or "")
        data: dict[str, Any] = {"user": info.get("user", ""), "account": name}
        if name in self.server.accounts:
            data["account_name"] = name
        conn = self.server.clients.get(int(info.get("id") or 0))
        perms = self.server.authenticator.permissions.get(conn.user) if conn is not None else None
        if perms is not None:
            data["permissions"] = _public_permissions(perms)
        self._respond(reply, {"data": data})

    def on_debug_subscribers(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        """nats-server ``debugSubscribers``: how many clients subscribe to a subject (and queue) in
        the requester's account."""
        if not reply or client is None:
            return
        info = _request_info(hdr) if hdr else {}
        if info is None:
            return
        account = self.server.accounts.get(str(info.get("svc") or info.get("acc") or "")) or client.account
        args = payload.decode(errors="replace").strip().split(" ")
        subject_, queue = args[0], (args[1] if len(args) > 1 else None)
        count = 0
        for sub in account.sublist.all_subscriptions():
            if sub.client is None or (queue is not None and sub.queue != queue):
                continue
            if subject_matches(sub.subject, subject_) if is_valid_literal_subject(subject_) else is_subset(sub.subject, subject_):
                count += 1
        self.system.publish_internal(reply, str(count).encode())

    def _endpoint(self, kind: str, options: dict[str, Any]) -> dict[str, Any]:
        monitor = self._monitoring()
        handler = self.server.monitor_handlers[_PATHS[kind]]
        try:
            data = handler(_query(kind, options))
        except monitor.MonitorError as exc:
            if exc.text.startswith(monitor.SKIPPED):  # nats-server zReq: errSkipZreq is no answer
                raise _Skip from None
            if kind == "RAFTZ" and exc.status == 404:  # nats-server Raftz: no group, an empty map
                return {"data": {}}
            return {"error": {"code": 500, "description": exc.text.strip()}}
        status = 200
        if isinstance(data, monitor.JSONResponse):
            status, data = data.status, data.body
        elif not isinstance(data, dict):  # a body Go formats its own way (/ipqueuesz, /debug/vars)
            data = json.loads(data.body)
            if kind == "EXPVARZ":  # nats-server ExpvarzStatus: the two expvars, in its order
                data = {"memstats": data["memstats"], "cmdline": data["cmdline"]}
        if kind == "HEALTHZ":  # nats-server HealthStatus.StatusCode, after status: dropped over HTTP only
            data = {"status": data["status"], "status_code": status, **data}
        return {"data": data}

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

    def _respond(self, reply: str, body: dict[str, Any], account: Account | None = None, floats: bool = True) -> None:
        """``{"server": ServerInfo, **body}`` (``ServerAPIResponse``) to ``reply``: the header from
        `_InfoHeader`, the body encoded by ``monitor.compact_json`` (``floats``: False when the body
        cannot hold one, ``monitor.FLOATLESS``) — the bytes of the whole encoded at once (a dict's
        JSON is its members' JSON joined)."""
        compact_json = self._monitoring().compact_json
        server = self.server
        server.event_seq += 1
        head = self._header.prefix(server, compact_json)
        rest = compact_json(body, floats)
        tail = b"}" if rest == b"{}" else b"}," + rest[1:]
        out = b"%s%d,\"time\":\"%s\"%s" % (head, server.event_seq, format_time(time.time_ns()).encode(), tail)
        (account or self.system).publish_internal(reply, out)


class _InfoHeader:
    """The JSON of a system message's ``{"server": ServerInfo`` up to its ``seq``, made once for what
    it says of the server (`_server_fields`) and again only when that changes (a reload): nats-server's
    ``internalSendLoop`` reads them once and writes each message's ``seq`` and ``time``. ``made``:
    how many times it was made (tests count it)."""

    def __init__(self) -> None:
        self.key: tuple[Any, ...] | None = None
        self.head = b""
        self.made = 0

    def prefix(self, server: Server, encode: Any) -> bytes:
        options = server.options
        key = (server.server_name, options.host, server.server_id, options.jetstream_domain,
               tuple(options.server_tags), server.jetstream_enabled)  # fmt: skip
        if key != self.key:
            fields = encode({"server": {**_server_fields(server), "seq": 0}})
            self.head = fields[: fields.rindex(b"0")]  # '{"server":{…,"seq":'
            self.key = key
            self.made += 1
        return self.head


def _server_fields(server: Server) -> dict[str, Any]:
    """nats-server's ``ServerInfo`` but its ``seq`` and ``time``: name, host, id, domain, version, tags,
    feature flags, JetStream and capability flags."""
    info: dict[str, Any] = {"name": server.server_name, "host": server.options.host, "id": server.server_id}
    if server.options.jetstream_domain:
        info["domain"] = server.options.jetstream_domain
    tags = list(server.options.server_tags)
    # feature_flags: nats-server 2.14+ stamps its merged flags on every ServerInfo (as message traces).
    info.update({"ver": SERVER_VERSION, **({"tags": tags} if tags else {}), "feature_flags": dict(DEFAULT_FEATURE_FLAGS)})
    flags = (_JS_ENABLED | _BINARY_SNAPSHOT | _ACCOUNT_NRG) if server.jetstream_enabled else 0  # nats-server: 0 without
    info.update({"jetstream": server.jetstream_enabled, "flags": flags})
    return info


def server_info(server: Server) -> dict[str, Any]:
    """nats-server's ``ServerInfo`` of a system message (its send loop fills it): name, host, id,
    version, tags, feature flags, JetStream and capability flags, the event's sequence and time."""
    server.event_seq += 1
    return {**_server_fields(server), "seq": server.event_seq, "time": format_time(time.time_ns())}


def _request_info(hdr: bytes | None) -> dict[str, Any] | None:
    """The ``Nats-Request-Info`` (nats-server ``ClientInfo``) of a request, None if unreadable."""
    raw = get_header(hdr or b"", CLIENT_INFO_HDR)
    try:
        info = json.loads(raw) if raw else {}
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def _public_permissions(perms: Permissions) -> dict[str, Any]:
    """nats-server ``publicPermissions``' JSON: the user's publish/subscribe lists and responses."""
    out: dict[str, Any] = {}
    for key, rule in (("publish", perms.publish), ("subscribe", perms.subscribe)):
        if rule is not None:
            out[key] = {k: v for k, v in (("allow", rule.allow), ("deny", rule.deny)) if v}
    if perms.response is not None:
        out["responses"] = {"max": perms.response.max_msgs, "ttl": int(perms.response.expires * 1e9)}
    return out


def _profilez(options: dict[str, Any]) -> dict[str, Any]:
    """nats-server ``profilez`` (``ProfilezStatus``): Go's runtime profiles, which a Python server
    has none of — nats-server's errors for a missing name, a CPU duration out of range and an
    unknown profile, and for a profile it would write, the error of a profile that could not be."""
    name = str(options.get("name") or "")
    if not name:
        return {"profile": None, "error": "Profile name not specified"}
    if name == "cpu":
        ns = int(options.get("duration") or 0)
        if ns <= 0 or ns > 15_000_000_000:
            return {"profile": None, "error": f"Duration {format_go_duration(ns)} should be between 0s and 15s"}
    elif name not in _GO_PROFILES:
        return {"profile": None, "error": f"Profile {json.dumps(name)} not found"}
    return {"profile": None, "error": f"Profile {json.dumps(name)} error: no Go runtime profiles in pyjetstream"}


def _query(kind: str, options: dict[str, Any]) -> dict[str, str]:
    """A request's options as the endpoint's query (nats-server decodes both into the same *Options)."""
    query: dict[str, str] = {}
    for key, param in _QUERY.get(kind, {}).items() if options else ():  # (none: nothing to carry)
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
