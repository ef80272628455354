"""HTTP monitoring (``http_port`` / ``-m``): ``/varz``, ``/connz``, ``/subsz``, ``/healthz``,
``/accountz``, and from `monitor_topology` ``/routez``, ``/gatewayz``, ``/leafz``, ``/raftz``,
``/ipqueuesz``, ``/debug/vars``.

JSON field names, defaults and error texts are nats-server 2.9's (``server/monitor.go``); bodies
are indented with two spaces as nats-server's ``json.MarshalIndent`` does. The HTTP side is a
small asyncio HTTP/1.1 server (keep-alive; a request's body is read and dropped) — monitoring is not a
hot path and needs no dependency. Around the handlers it does what Go's ``ServeMux`` does for
nats-server: any method (HEAD answered without a body), endpoints matched exactly under
``http_base_path``, a path that is not clean redirected (307) to the clean one.

``/`` and ``/dashboard/…`` are the dashboard's (`pyjetstream.server.dashboard`) for the peers it
serves; the rest, and ``/`` for any other peer, answer as nats-server's.

Endpoints are looked up in ``server.monitor_handlers`` (path → ``handler(query) -> dict``, a plain
function: every answer is made at once, so the system account's requests are answered in the read
that brought them, `pyjetstream.server.sys_requests`), so the JetStream engine adds ``/jsz`` with
``server.monitor_handlers["/jsz"] = handler``. A handler raises `MonitorError` for an HTTP error with
a plain-text body.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import posixpath
import re
import resource
import time
from functools import partial
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

import msgspec

from pyjetstream.api.timefmt import format_go_duration, format_time
from pyjetstream.protocol.subjects import is_valid_literal_subject, subject_matches, subjects_overlap
from pyjetstream.server.monitor_accounts import accountz, accstatz
from pyjetstream.server.monitor_topology import RawResponse, go_bool, topology_handlers
from pyjetstream.server.sublist import merged_stats
from pyjetstream.server.version import SERVER_VERSION

if TYPE_CHECKING:
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.dashboard import Dashboard
    from pyjetstream.server.server import Server

__all__ = [
    "JSONResponse",
    "MonitorError",
    "MonitorServer",
    "closed_record",
    "connection_info",
    "statsz",
    "uptime_string",
]

# Monitoring bodies indented by msgspec.json.format over json's compact C encoding (`indented_json`);
# off: json.dumps(indent=2), the same bytes ~5 times slower (tests/server/test_monitor_paging.py).
FORMAT_INDENT = True
# The system account's compact answers made by msgspec where the bytes are json.dumps' (`compact_json`);
# off: json.dumps (tests/server/test_monitor_paging.py).
COMPACT_MSGSPEC = True
# The endpoints whose bodies hold no float and no None — integers, strings, booleans, lists and
# dicts of them — so their compact JSON skips `_maybe_not_repr` (`compact_json`'s ``floats``): a
# ConnInfo's fields are (tests/server/test_sys_requests_steps.py walks every /connz shape). The scan
# was ~18% of a $SYS.REQ.SERVER.PING.CONNZ of 1,000 connections (py-spy): four passes over ~300 KB.
# /jsz: its own integers and strings and the API models' builtins, whose types hold no float
# (tests/jetstream/test_jsz_listing.py walks them and every /jsz shape); the scan was ~2 µs of each
# stream's ~10 in a /jsz?streams=1, more of a consumer's with its config.
FLOATLESS = frozenset({"/connz", "/jsz"})
# Off: every body scanned (`compact_json`).
SKIP_FLOAT_SCAN = True
# The server's subscriptions read from its running count (`Server.subscriptions`); off: every
# account's sublist count summed (tests/server/test_accounts_scale.py).
SUBSCRIPTIONS_COUNTED = True
DEFAULT_CONNZ_LIMIT = 1024
DEFAULT_SUBSZ_LIMIT = 1024
_MAX_REQUEST_HEAD = 64 * 1024
# The paths nats-server counts in /varz http_req_stats (its handlers' httpReqStats[...]++), under
# the name it counts them by; /ipqueuesz, /raftz, /debug/vars are not counted there.
_COUNTED = {
    p: p for p in ("/", "/varz", "/connz", "/routez", "/gatewayz", "/leafz", "/subsz", "/accstatz", "/accountz")
} | {"/jsz": "/jsz", "/healthz": "/healthz", "/subscriptionsz": "/subsz"}
# The handlers that decode their parameters before counting (a bad one is not counted).
_DECODE_FIRST = frozenset({"/connz", "/routez"})

_REASONS = {
    200: "OK",
    307: "Temporary Redirect",
    400: "Bad Request",
    404: "Not Found",
    503: "Service Unavailable",
}


class MonitorError(Exception):
    """An HTTP error answer: ``status`` with ``text`` as a text/plain body. ``decoding``: a query
    parameter nats-server could not decode (``decodeBool``, ``decodeInt`` …) — for the endpoints
    that decode before counting the request (``/connz``, ``/routez``), not counted."""

    def __init__(self, status: int, text: str, decoding: bool = False) -> None:
        super().__init__(text)
        self.status = status
        self.text = text
        self.decoding = decoding


class JSONResponse:
    """A JSON body with a status other than 200 (e.g. ``/healthz`` 503)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body


# ------------------------------------------------------------------------ formatting


def _ns(seconds: float) -> int:
    return int(seconds * 1_000_000_000)


def _time(wall_ns: int) -> str:
    return format_time(wall_ns)


def _mono_to_wall_ns(conn: ClientConnection, mono: float) -> int:
    return conn.start_wall_ns + int((mono - conn.start) * 1_000_000_000)


# The uptime strings of whole seconds made lately (a /connz of every connection makes two a
# connection, mostly of the same few seconds); at most `_UPTIMES_MAX`, then started again.
_UPTIMES: dict[int, str] = {}
_UPTIMES_MAX = 4096


def uptime_string(seconds: float) -> str:
    """nats-server's ``myUptime``: ``5s``, ``1m2s``, ``3h1m2s``, ``2d3h1m2s``, ``1y2d3h1m2s``."""
    secs = int(seconds)
    text = _UPTIMES.get(secs)
    if text is None:
        if len(_UPTIMES) >= _UPTIMES_MAX:
            _UPTIMES.clear()
        text = _UPTIMES[secs] = _uptime_text(secs)
    return text


def _uptime_text(secs: int) -> str:
    mins, hrs, days = secs // 60, secs // 3600, secs // 86400
    years = days // 365
    if years:
        return f"{years}y{days % 365}d{hrs % 24}h{mins % 60}m{secs % 60}s"
    if days:
        return f"{days}d{hrs % 24}h{mins % 60}m{secs % 60}s"
    if hrs:
        return f"{hrs}h{mins % 60}m{secs % 60}s"
    if mins:
        return f"{mins}m{secs % 60}s"
    return f"{secs}s"


def _seconds(value: float) -> float | int:
    """Seconds as Go marshals a float64: ``2`` rather than ``2.0``."""
    return int(value) if float(value).is_integer() else value


#: The query key `pyjetstream.server.sys_requests` passes a CONNZ request's ``filter_subject`` in.
FILTER_SUBJECT = "_filter_subject"
_GO_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = 1 << 63


def _query_int(query: dict[str, str], key: str, default: int, unsigned: bool = False) -> int:
    """Go's ``decodeInt`` (``strconv.Atoi``) or, ``unsigned``, ``decodeUint64`` (``ParseUint``)."""
    text = query.get(key, "")
    if text == "":
        return default
    kind, fn = ("uint64", "strconv.ParseUint") if unsigned else ("int", "strconv.Atoi")
    why = "invalid syntax"
    if _GO_INT.fullmatch(text) and not (unsigned and text[0] in "+-"):
        value = int(text)
        if (0 <= value < 2 * _INT64) if unsigned else (-_INT64 <= value < _INT64):
            return value
        why = "value out of range"
    raise MonitorError(400, f"Error decoding {kind} for '{key}': {fn}: parsing \"{text}\": {why}", decoding=True)


def _decode_subs(query: dict[str, str]) -> str:
    """Go's ``decodeSubs``: ``"detail"``, ``"1"`` (a true boolean) or ``""``."""
    if query.get("subs", "").lower() == "detail":
        return "detail"
    return "1" if go_bool(query, "subs") else ""


# ----------------------------------------------------------------------------- /connz


def connection_info(conn: ClientConnection, subs: str = "", auth: bool = False, now: float = 0.0) -> dict[str, Any]:
    """One ``/connz`` connection (``ConnInfo``), as of ``now`` (``time.monotonic()``; 0: read here)
    or of its close: the fields that never change copied from what the connection keeps for it
    (`_Kept`), the rest set in nats-server's order, what is omitted when empty only when set; the
    texts of its last activity and RTT made again only when they changed (an idle connection's are
    the same at each ``/connz``). A ``/connz`` of every connection is this once a connection
    (~3-6 µs of nats-server's CPU a connection)."""
    start, last = conn.start, conn.last_activity
    end_mono = conn.stop or now or time.monotonic()
    kept = conn.connz_kept
    if kept is None:
        kept = conn.connz_kept = _Kept(conn)
    info = kept.head.copy()
    if last != kept.last:
        kept.last, kept.last_text = last, format_time(_mono_to_wall_ns(conn, last))
    info["last_activity"] = kept.last_text
    if conn.stop_wall_ns:
        info["stop"] = format_time(conn.stop_wall_ns)
        info["reason"] = conn.close_reason
    rtt = _rtt(conn)
    if rtt != kept.rtt:
        kept.rtt, kept.rtt_text = rtt, format_go_duration(_ns(rtt))
    info["rtt"] = kept.rtt_text
    up, idle = end_mono - start, end_mono - last
    info["uptime"] = _UPTIMES.get(int(up)) or uptime_string(up if up > 0 else 0.0)
    info["idle"] = _UPTIMES.get(int(idle)) or uptime_string(idle if idle > 0 else 0.0)
    sink = conn.sink  # (its counts read in place: the connection's properties are the same reads)
    info["pending_bytes"] = sink.pending()
    info["in_msgs"] = sink.in_msgs
    info["out_msgs"] = sink.msgs
    info["in_bytes"] = sink.in_bytes
    info["out_bytes"] = sink.bytes
    if conn.stalls:
        info["stalls"] = conn.stalls  # producers stalled by this consumer (omit-empty)
    info["subscriptions"] = len(conn.subs)
    if conn.name:
        info["name"] = conn.name
    if conn.lang:
        info["lang"] = conn.lang
    if conn.version:
        info["version"] = conn.version
    if auth:
        if conn.user:
            info["authorized_user"] = conn.user
        if conn.account.name != "$G":  # nats-server: the account under auth, unless the global one
            info["account"] = conn.account.name
    if subs and conn.subs:
        if subs == "detail":
            info["subscriptions_list_detail"] = [_sub_detail(s, conn.cid) for s in conn.subs.values()]
        else:
            info["subscriptions_list"] = [s.subject for s in conn.subs.values()]
    return info


class _Kept:
    """What a connection keeps for `connection_info` (``ClientConnection.connz_kept``): its ``ConnInfo``
    fields that never change (cid, kind, type, ip, port, start), and its last activity and RTT with
    their texts (Go's ``Duration.String()`` of an RTT cost ~1.5 µs a connection)."""

    __slots__ = ("head", "last", "last_text", "rtt", "rtt_text")

    def __init__(self, conn: ClientConnection) -> None:
        self.head: dict[str, Any] = {
            "cid": conn.cid,
            "kind": "Client",
            "type": "websocket" if conn.websocket else "nats",  # nats-server clientTypeStringMap
            "ip": conn.ip,
            "port": conn.port,
            "start": format_time(conn.start_wall_ns),
        }
        self.last, self.last_text = -1.0, ""
        self.rtt, self.rtt_text = -1.0, ""


def _sub_detail(sub: Any, cid: int, account: bool = False) -> dict[str, Any]:
    detail: dict[str, Any] = {}
    if account:
        owner = sub.client.account if sub.client is not None else getattr(sub, "account", None)
        detail["account"] = owner.name if owner is not None else "$G"
        # nats-server getNameTag: the account JWT's name, else the account name (as /accountz's name_tag).
        detail["account_tag"] = detail["account"]
    detail["subject"] = sub.subject
    if sub.queue:
        detail["qgroup"] = sub.queue
    detail["sid"] = sub.sid
    detail["msgs"] = sub.delivered
    if sub.max_msgs:
        detail["max"] = sub.max_msgs
    detail["cid"] = cid
    return detail


# Direction per nats-server SortOpt: cid and start ascending, the rest descending.
_SORTS: dict[str, bool] = {
    "cid": False,
    "start": False,
    "subs": True,
    "pending": True,
    "msgs_to": True,
    "msgs_from": True,
    "bytes_to": True,
    "bytes_from": True,
    "last": True,
    "idle": True,
    "uptime": True,
    "stop": True,
    "reason": False,
    "rtt": True,
}


def _rtt(conn: ClientConnection) -> float:
    """The measured RTT; until a server PING was answered, nats-server shows the time from
    connecting to the client's last activity."""
    return conn.rtt or max(0.0, conn.last_activity - conn.start)


# The sort options that are a connection's attribute (nats-server's Sort* types).
_SORT_ATTRS = {
    "cid": "cid",
    "start": "start",
    "msgs_to": "out_msgs",
    "msgs_from": "in_msgs",
    "bytes_to": "out_bytes",
    "bytes_from": "in_bytes",
    "last": "last_activity",
    "stop": "stop_wall_ns",
    "reason": "close_reason",
}


def _sort_value(conn: ClientConnection, sort: str, end: float) -> Any:
    """A connection's value for one sort option, ``end`` its close or now."""
    attr = _SORT_ATTRS.get(sort)
    if attr is not None:
        return getattr(conn, attr)
    if sort == "subs":
        return len(conn.subs)
    if sort == "pending":
        return conn.pending_bytes()
    if sort == "idle":
        return end - conn.last_activity
    if sort == "uptime":
        return end - conn.start
    return _rtt(conn)


def _sort_keys(conn: ClientConnection, now: float) -> dict[str, Any]:
    """Every sort value of a connection (what a closed one keeps for ``/connz?state=closed``)."""
    end = conn.stop or now
    return {sort: _sort_value(conn, sort, end) for sort in _SORTS}


def closed_record(conn: ClientConnection) -> tuple[dict[str, Any], dict[str, Any]]:
    """What ``/connz?state=closed`` keeps of a connection once it is gone (its subscriptions
    both ways, its account and user in the keys for the filters)."""
    keys = _sort_keys(conn, time.monotonic())
    keys["acc"], keys["user"] = conn.account.name, conn.user
    info = connection_info(conn, "1", auth=True)
    if conn.subs:
        info["subscriptions_list_detail"] = [_sub_detail(s, conn.cid) for s in conn.subs.values()]
    return keys, info


def _connz_options(query: dict[str, str]) -> dict[str, Any]:
    """nats-server ``HandleConnz``'s decoding, in its order (an error here is not counted), then
    ``Connz``'s checks of the options (counted)."""
    sort = query.get("sort", "")
    auth = go_bool(query, "auth")
    subs = _decode_subs(query)
    offset = _query_int(query, "offset", 0)
    limit = _query_int(query, "limit", 0)
    cid = _query_int(query, "cid", 0, unsigned=True)
    state = query.get("state", "").lower() or "open"
    if state not in ("open", "closed", "any", "all"):
        raise MonitorError(400, f"Error decoding state for {query['state']}", decoding=True)
    sort = sort or "cid"
    if sort not in _SORTS:
        raise MonitorError(400, f"invalid sorting option: {sort}")
    if sort in ("stop", "reason") and state != "closed":
        raise MonitorError(400, f"sort by {sort} only valid on closed connections")
    acc = query.get("acc", "")
    # ConnzOptions.FilterSubject: the system request's option (HTTP's /connz has no such parameter).
    filter_subject = query.get(FILTER_SUBJECT, "")
    if filter_subject == ">":
        filter_subject = ""
    if filter_subject and not acc:
        raise MonitorError(400, "filter by subject only valid with account filtering")
    return {"sort": sort, "auth": auth, "subs": subs, "offset": max(0, offset),
            "limit": limit if limit > 0 else DEFAULT_CONNZ_LIMIT, "cid": cid, "state": state,
            "acc": acc, "user": query.get("user", ""), "filter": filter_subject}  # fmt: skip


def _connz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """nats-server ``Connz``: open and/or closed connections, filtered by ``cid``, ``acc``
    (``filter_subject`` with it), ``user``; sorted and paged. ``total`` is nats-server's: the
    account's connections (the ``user`` and subject filters do not reduce it)."""
    o = _connz_options(query)
    acc, user, cid, state, subs, auth = o["acc"], o["user"], o["cid"], o["state"], o["subs"], o["auth"]
    empty = {"server_id": server.server_id, "now": _time(time.time_ns()), "num_connections": 0, "total": 0,
             "offset": o["offset"], "limit": 1 if cid else o["limit"], "connections": []}  # fmt: skip
    if acc and acc not in server.accounts:
        return {**empty, "server_id": "", "connections": None}
    opened = [c for c in server.clients.values() if not acc or c.account.name == acc]
    closed = list(server.closed_clients) if state != "open" else []
    if acc:
        closed = [(k, i) for k, i in closed if k["acc"] == acc]
    total = (len(opened) if state != "closed" else 0) + len(closed)
    if state == "closed":
        opened = []
    if cid:
        found = [server.clients[cid]] if state != "closed" and cid in server.clients else []
        opened, closed = found, ([] if found else [(k, i) for k, i in closed if i["cid"] == cid])
    else:
        opened = [c for c in opened if not user or c.user == user]
        if o["filter"]:
            opened = [c for c in opened if any(subjects_overlap(o["filter"], s.subject) for s in c.subs.values())]
    # Sorted by the one value asked for, then only the page's connections described (nats-server
    # describes every one before it sorts: a page of 10 among 1,000 connections cost what 1,000 did).
    now, sort = time.monotonic(), o["sort"]
    rows: list[tuple[Any, ClientConnection | dict[str, Any]]]
    rows = [(_sort_value(c, sort, c.stop or now), c) for c in opened]
    rows += [(keys[sort], record) for keys, record in closed if not user or keys["user"] == user]
    if not rows:
        return {**empty, "total": total}
    rows.sort(key=itemgetter(0), reverse=_SORTS[sort])
    page = [_described(item, subs, auth, now) for _, item in rows[o["offset"] : o["offset"] + empty["limit"]]]
    return {**empty, "num_connections": len(page), "total": total, "connections": page}


def _described(item: ClientConnection | dict[str, Any], subs: str, auth: bool, now: float) -> dict[str, Any]:
    """A page's ``ConnInfo``: an open connection's as of ``now``, a closed one's record with only what was asked."""
    if not isinstance(item, dict):
        return connection_info(item, subs, auth, now)
    info = dict(item)
    if subs != "1":
        info.pop("subscriptions_list", None)
    if subs != "detail":
        info.pop("subscriptions_list_detail", None)
    if not auth:
        info.pop("authorized_user", None)
        info.pop("account", None)
    return info


# ------------------------------------------------------------------------ /varz etc.


_last_cpu = [time.monotonic(), sum(os.times()[:2])]


def _cpu_percent() -> float:
    now = time.monotonic()
    used = sum(os.times()[:2])
    elapsed = now - _last_cpu[0]
    pct = 100.0 * (used - _last_cpu[1]) / elapsed if elapsed > 0 else 0.0
    _last_cpu[0], _last_cpu[1] = now, used
    return round(pct, 2)


# /proc/self/statm held open and read with pread (~1 µs) rather than opened at each /varz (~10 µs):
# [descriptor, the pid it was opened by] — a forked child opens its own.
_STATM = [-1, 0]
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes() -> int:
    """The resident set, nats-server's ``pse.ProcUsage`` memory (``/proc/self/statm``'s second field)."""
    try:
        if _STATM[1] != os.getpid():
            _STATM[0], _STATM[1] = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC), os.getpid()
        return int(os.pread(_STATM[0], 128, 0).split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError, AttributeError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# nats-server's runtime.NumCPU(), read once as Go reads it at start (os.cpu_count() costs ~3 µs).
_CORES = os.cpu_count() or 1


class _Varz:
    """``/varz`` of one server (its handler): nats-server's ``Varz``, whose configuration fields
    it makes once (``createVarz``) and again at a reload (``updateVarzConfigReloadableFields``),
    each request filling only the runtime ones (``updateVarzRuntimeFields``). Here the fields
    before ``jetstream`` and the three after it are made again when the options object, a
    listener's port, the security flags or the config load time differ from the last request's
    (``made`` counts it); the rest is read at each request. A ``$SYS.REQ.SERVER.PING.VARZ`` cost
    2.1x nats-server's CPU when every field was made per request."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.made = 0
        self._options: Any = None
        self._key: tuple[Any, ...] = ()
        self._head: dict[str, Any] = {}
        self._mid: dict[str, Any] = {}

    def __call__(self, query: dict[str, str]) -> dict[str, Any]:
        server = self.server
        opts = server.options
        flags = server.security_flags()
        key = (server.port, server.http_port, *flags, server.config_load_time_ns)
        if opts is not self._options or key != self._key:
            self._configured(flags)
            self._options, self._key = opts, key
            self.made += 1
        now = time.time_ns()
        in_msgs, in_bytes, out_msgs, out_bytes = server.message_totals()
        varz: dict[str, Any] = {
            **self._head,
            "jetstream": _jetstream_varz(server),
            **self._mid,
            "now": _time(now),
            "uptime": uptime_string((now - server.start_wall_ns) / 1e9),
            "mem": _rss_bytes(), "cores": _CORES, "gomaxprocs": _CORES, "cpu": _cpu_percent(),
            "connections": len(server.clients), "total_connections": server.total_connections,
            "routes": 0, "remotes": 0, "leafnodes": 0,
            # Every connection here is a client (no routes, gateways or leafnodes), so the
            # client-only counters 2.11+ adds equal the totals.
            "in_msgs": in_msgs, "in_bytes": in_bytes, "in_client_msgs": in_msgs, "in_client_bytes": in_bytes,
            "out_msgs": out_msgs, "out_bytes": out_bytes, "out_client_msgs": out_msgs, "out_client_bytes": out_bytes,
            "slow_consumers": server.slow_consumers, "stale_connections": server.stale_connections,
            "stalled_clients": server.stalled_clients,
            "subscriptions": _subscriptions(server),
            "http_req_stats": dict(server.http_req_stats),
            "config_load_time": _time(server.config_load_time_ns),
            "config_digest": opts.config_digest,
        }  # fmt: skip
        if opts.server_tags:
            varz["tags"] = list(opts.server_tags)
        # nats-server's per-kind breakdowns: only client connections exist here.
        varz["slow_consumer_stats"] = _per_kind(server.slow_consumers)
        varz["stale_connection_stats"] = _per_kind(server.stale_connections)
        # No disk I/O semaphore (nats-server's dios) exists here, so nothing ever waits on one.
        varz["disk_io_wait_stats"] = {"waiters": 0, "waits": 0, "wait_time": 0, "max_wait_time": 0}
        return varz

    def _configured(self, flags: dict[str, bool]) -> None:
        """The configuration's fields, in nats-server's order: those before ``jetstream`` and the
        three after it."""
        server, opts = self.server, self.server.options
        self._head = {
            "server_id": server.server_id,
            "server_name": server.server_name,
            "version": _version(),
            "proto": 1,
            "go": _go(),
            "host": opts.host,
            "port": server.port,
            **{k: v for k, v in flags.items() if k != "tls_available"},
            "max_connections": opts.max_connections,
            "ping_interval": _ns(opts.ping_interval),
            "ping_max": opts.ping_max,
            "http_host": opts.monitor_host,
            "http_port": server.http_port,
            "http_base_path": opts.http_base_path,
            "https_port": opts.https_port,
            "auth_timeout": _seconds(opts.auth_timeout),
            "max_control_line": opts.max_control_line,
            "max_payload": opts.max_payload,
            "max_pending": opts.max_pending,
            "cluster": {},
            "gateway": {},
            "leaf": {},
            "mqtt": {},
            "websocket": {},
        }
        self._mid = {
            "tls_timeout": _seconds(opts.tls.timeout if opts.tls is not None else 2.0),
            "write_deadline": _ns(opts.write_deadline),
            "start": _time(server.start_wall_ns),
        }


def statsz(server: Server) -> dict[str, Any]:
    """nats-server ``ServerStats`` (``$SYS.REQ.SERVER.PING[.STATSZ]``): what `_varz` says of the same
    things, read from the same places, without building the rest of ``/varz`` (its ~60 fields of
    configuration: a STATSZ cost ~2x nats-server's CPU when it was made from a whole ``/varz``).
    Every connection is a client, so the ``*_clients`` counts are the totals (as in ``/varz``)."""
    in_msgs, in_bytes, out_msgs, out_bytes = server.message_totals()
    stats: dict[str, Any] = {
        "start": _time(server.start_wall_ns), "mem": _rss_bytes(), "cores": _CORES, "cpu": _cpu_percent(),
        "connections": len(server.clients), "total_connections": server.total_connections,
        "active_accounts": _active_accounts(server),
        "subscriptions": _subscriptions(server),
        "sent": {"msgs": out_msgs, "bytes": out_bytes}, "sent_to_clients": {"msgs": out_msgs, "bytes": out_bytes},
        "received": {"msgs": in_msgs, "bytes": in_bytes},
        "received_from_clients": {"msgs": in_msgs, "bytes": in_bytes},
        "slow_consumers": server.slow_consumers, "active_servers": 1,
    }  # fmt: skip
    js = _jetstream_varz(server)
    if js.get("config"):
        stats["jetstream"] = {k: js[k] for k in ("config", "stats", "limits") if k in js}
    stats["gomaxprocs"] = _CORES  # (as /varz: Go's GOMAXPROCS is its NumCPU)
    return stats


def _active_accounts(server: Server) -> int:
    """Accounts with a client (nats-server ``activeAccounts``): the system account always, as its
    internal client makes it one there; an account's JetStream client does not count."""
    sys_account = server.system_account
    return server.active_accounts + (1 if sys_account is not None and not sys_account.clients else 0)


def _subscriptions(server: Server) -> int:
    """Every account's subscriptions: ``/varz`` and STATSZ. Counted as they come and go
    (`Server.subscriptions`), where nats-server sums its accounts' (``numSubscriptions``): a
    STATSZ beside 10,000 accounts summed 10,000 sublists' counts (`SUBSCRIPTIONS_COUNTED` off)."""
    if SUBSCRIPTIONS_COUNTED:
        return server.subscriptions
    return sum(a.sublist.count for a in server.accounts.values())


def _per_kind(clients: int) -> dict[str, int]:
    """nats-server SlowConsumersStats / StaleConnectionStats: counts by connection kind."""
    return {"clients": clients, "routes": 0, "gateways": 0, "leafs": 0}


def _jetstream_varz(server: Server) -> dict[str, Any]:
    engine = server.jetstream
    provider = getattr(engine, "varz", None) if engine is not None else None
    if provider is None:
        return {}
    try:
        return dict(provider())
    except Exception:
        server.logger.exception("JetStream varz failed")
        return {}


def _version() -> str:

    return SERVER_VERSION


def _go() -> str:

    return f"python{platform.python_version()}"


def _subsz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """nats-server ``Subsz``: the sublist statistics of every account (or of ``acc``), with
    ``subs`` their subscriptions (``test``: those a publish to that subject would reach), paged."""
    detail = go_bool(query, "subs")
    offset = max(0, _query_int(query, "offset", 0))
    limit = _query_int(query, "limit", DEFAULT_SUBSZ_LIMIT)
    if limit <= 0:
        limit = DEFAULT_SUBSZ_LIMIT
    test = query.get("test", "")
    if test and not is_valid_literal_subject(test):
        raise MonitorError(400, f"invalid test subject, must be valid publish subject: {test}")
    acc = query.get("acc", "")
    if acc:  # (one account by name, as nats-server's lookupAccount: not a pass over all of them)
        one = server.accounts.get(acc)
        accounts = [one] if one is not None else []
    else:
        accounts = list(server.accounts.values())
    out: dict[str, Any] = {"server_id": server.server_id, "now": _time(time.time_ns())}
    out.update(merged_stats([a.sublist for a in accounts]))
    out.update({"total": 0, "offset": offset, "limit": limit})
    if detail:
        subs = [s for a in accounts for s in a.sublist.all_subscriptions()]
        if test:
            subs = [s for s in subs if subject_matches(s.subject, test)]
        subs.sort(key=lambda s: (s.subject, s.sid))
        out["total"] = len(subs)
        page = subs[offset : offset + limit]  # only the page described (nats-server describes all of them)
        if page:
            out["subscriptions_list"] = [
                _sub_detail(s, s.client.cid if s.client is not None else 0, account=True) for s in page
            ]
    return out


def _healthz(server: Server, query: dict[str, str]) -> dict[str, Any] | JSONResponse:
    for key in ("js-enabled", "js-enabled-only", "js-server-only", "js-meta-only", "details"):
        go_bool(query, key)  # nats-server HandleHealthz decodes these first (a 400 with Go's words)
    engine = server.jetstream
    checker = getattr(engine, "healthz", None) if engine is not None else None
    if checker is not None:
        problem = checker(query)
        if problem:
            return JSONResponse(503, {"status": "unavailable", "error": str(problem)})
    return {"status": "ok"}


#: nats-server ``errSkipZreq``'s text: a filter this server does not pass (a $SYS request gets no answer).
SKIPPED = "filtered response"


class JszOptions(NamedTuple):
    """nats-server's ``JSzOptions`` as `jsz_options` decodes them: what a ``/jsz`` answer reads of its
    parameters, decoded once a request (not at each stream and consumer listed)."""

    account: str  # ``acc``
    accounts: bool  # (``streams`` without ``acc`` lists the accounts too: ``Jsz``'s default)
    streams: bool  # (``consumers`` lists the streams too)
    consumers: bool
    config: bool
    leader_only: bool
    direct_consumers: bool = False  # (with ``consumers``: a mirror's or a source's, on its origin)
    offset: int = 0  # the accounts listed: sorted by name, from ``offset``
    limit: int = 1024  # (at most; 0 asks for ``Jsz``'s default, 1024; below 0, all, unsorted)
    raft: bool = False
    stream_leader_only: bool = False  # (one server leads every stream it has: nothing left out)


def jsz_options(query: dict[str, str]) -> JszOptions:
    """``HandleJsz``'s decoding, in its order (the first parameter Go cannot decode is the 400, in its
    words: `go_bool`, ``strconv.ParseBool``; `_query_int`), then ``Jsz``'s defaults."""
    accounts = go_bool(query, "accounts")
    streams = go_bool(query, "streams")
    consumers = go_bool(query, "consumers")
    direct = go_bool(query, "direct-consumers")
    config = go_bool(query, "config")
    offset = _query_int(query, "offset", 0)
    limit = _query_int(query, "limit", 0)
    leader_only = go_bool(query, "leader-only")
    raft = go_bool(query, "raft")
    stream_leader_only = go_bool(query, "stream-leader-only")
    account = query.get("acc", "")
    streams = streams or consumers
    return JszOptions(
        account, accounts or (streams and not account), streams, consumers, config, leader_only, direct,
        max(offset, 0), limit or 1024, raft, stream_leader_only,
    )  # fmt: skip


def jsz_enabled(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``/jsz`` of a server with JetStream: its parameters decoded (`jsz_options`), then the engine's
    answer over every JetStream account (`pyjetstream.server.jetstream.monitoring.jsz`)."""
    from pyjetstream.server.jetstream import monitoring  # Deferred: JetStream's, imported at the first /jsz.

    return monitoring.jsz(server.jetstream_engines(), jsz_options(query))


def jsz_disabled(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``/jsz`` of a server without JetStream (nats-server ``HandleJsz`` → ``Jsz``): the parameters
    decoded as there, then ``disabled`` with zero statistics; ``leader-only`` is filtered out (a
    400 over HTTP, no answer to a $SYS request), as there is no JetStream leader."""
    if jsz_options(query).leader_only:
        raise MonitorError(400, f"{SKIPPED}: not leader")
    return {
        "memory": 0, "storage": 0, "reserved_memory": 0, "reserved_storage": 0, "accounts": 0, "ha_assets": 0,
        "api": {"level": 0, "total": 0, "errors": 0}, "server_id": server.server_id, "now": _time(time.time_ns()),
        "disabled": True, "config": {"max_memory": 0, "max_storage": 0},
        "streams": 0, "consumers": 0, "messages": 0, "bytes": 0, "total": 0,
    }  # fmt: skip


# ---------------------------------------------------------------------- HTTP server


class _Request:
    """An HTTP/1.x request head; its body (``Content-Length`` or chunked) is read and dropped."""

    def __init__(self, method: str, target: str, version: str, headers: dict[str, str]) -> None:
        self.method = method
        self.target = target
        self.headers = headers
        connection = headers.get("connection", "").lower()
        self.keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"

    @classmethod
    def parse(cls, head: bytes) -> _Request | None:
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split()
        if len(parts) != 3:
            return None
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        return cls(parts[0], parts[1], parts[2], headers)

    async def skip_body(self, reader: asyncio.StreamReader) -> None:
        """Keep the connection in step with the client: what a request carries is not used."""
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                        pass
                    return
                await reader.readexactly(size + 2)
        length = int(self.headers.get("content-length", "0") or 0)
        while length > 0:
            chunk = await reader.read(min(length, 65536))
            if not chunk:
                raise asyncio.IncompleteReadError(b"", length)
            length -= len(chunk)



def dashboard_path(path: str) -> bool:
    """Whether ``path`` (under ``http_base_path``) is the dashboard's: ``/`` and ``/dashboard/…``."""
    return path == "/" or path.startswith("/dashboard/")


class MonitorServer:
    """The monitoring listener; ``server.monitor_handlers`` decides what each path returns."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self._listener: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._dashboard: Dashboard | None = None  # made at its first path (`dashboard`)
        handlers = server.monitor_handlers
        handlers.setdefault("/varz", _Varz(server))
        handlers.setdefault("/connz", partial(_connz, server))
        handlers.setdefault("/subsz", partial(_subsz, server))
        handlers.setdefault("/subscriptionsz", handlers["/subsz"])
        handlers.setdefault("/healthz", partial(_healthz, server))
        handlers.setdefault("/accountz", partial(accountz, server))
        handlers.setdefault("/accstatz", partial(accstatz, server))
        handlers.setdefault("/jsz", partial(jsz_disabled, server))  # the engine's when JetStream runs
        for path, fn in topology_handlers().items():
            handlers.setdefault(path, partial(fn, server))

    @property
    def dashboard(self) -> Dashboard:
        """The dashboard, made when one of its paths is first asked for: its package (the page's
        views, the KV and object-store layouts, ``importlib.resources``) was a twelfth of the
        instructions of a start with a monitoring port, and most of those never serve a page."""
        if self._dashboard is None:
            from pyjetstream.server.dashboard import Dashboard  # Deferred: see the docstring.

            self._dashboard = Dashboard(self.server, self._write)
        return self._dashboard

    async def start(self, host: str, port: int) -> int:
        # A literal address bound as the client listener binds it (no IDNA codec imported to resolve it).
        from pyjetstream.server.server import listen_at

        self._listener = await asyncio.start_server(self._serve, **listen_at(host, port))
        return self._listener.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.gather(*self._tasks, return_exceptions=True)
            self._listener = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                    request = _Request.parse(head)
                    if request is not None:
                        await request.skip_body(reader)
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError, ValueError):
                    return
                if request is None:
                    self._write(writer, 400, "text/plain; charset=utf-8", b"400 Bad Request", False)
                    keep_alive = False
                else:
                    keep_alive = await self._answer(request, writer)
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            return
        finally:
            self._tasks.discard(task)
            writer.close()

    def _count(self, path: str) -> None:
        name = _COUNTED.get(path)
        if name is not None:
            stats = self.server.http_req_stats
            stats[name] = stats.get(name, 0) + 1

    async def _answer(self, request: _Request, writer: asyncio.StreamWriter) -> bool:
        """Any method, as nats-server's handlers (Go's mux routes by path only); HEAD without the body."""
        keep_alive, head_only = request.keep_alive, request.method == "HEAD"
        target = request.target
        if target.startswith("/"):  # origin form: "//x" is a path here, not a host (urlsplit's reading)
            raw_path, _, raw_query = target.partition("?")
        else:
            url = urlsplit(target)
            raw_path, raw_query = url.path, url.query
        clean = go_clean_path(raw_path)
        if clean != raw_path:
            self._redirect(writer, request.method, clean + (f"?{raw_query}" if raw_query else ""), keep_alive)
            return keep_alive
        path = endpoint_path(self.server.options.http_base_path, clean)
        query: dict[str, str] = {}
        for key, value in parse_qsl(raw_query, keep_blank_values=True):
            query.setdefault(key, value)  # Go's Query().Get: the first value
        handler = self.server.monitor_handlers.get(path) if path is not None else None
        if path is not None and dashboard_path(path):
            served = await self.dashboard.answer(request.method, path, query, request.headers, writer, keep_alive)
            if served is not None:
                if path == "/":
                    self._count(path)
                return served
        if path == "/":
            self._count(path)
            body = _root_page(self.server).encode()
            self._write(writer, 200, "text/html; charset=utf-8", body, keep_alive, head_only)
            return keep_alive
        if path is None or handler is None:  # Go's http.NotFound
            self._write(writer, 404, "text/plain; charset=utf-8", b"404 page not found\n", keep_alive, head_only,
                        extra=("X-Content-Type-Options: nosniff",))  # fmt: skip
            return keep_alive
        # nats-server counts most requests first; /connz and /routez once their parameters decoded.
        counted_first = path not in _DECODE_FIRST
        if counted_first:
            self._count(path)
        status = 200
        try:
            result = handler(query)
        except MonitorError as exc:
            if not counted_first and not exc.decoding:
                self._count(path)
            self._write(writer, exc.status, "text/plain; charset=utf-8", exc.text.encode(), keep_alive, head_only)
            return keep_alive
        except Exception:
            self.server.logger.exception("monitoring handler for %s failed", path)
            self._write(writer, 500, "text/plain; charset=utf-8", b"internal error", keep_alive, head_only)
            return keep_alive
        if not counted_first:
            self._count(path)
        if isinstance(result, RawResponse):
            self._write(writer, 200, result.content_type, result.body, keep_alive, head_only, cors=True)
            return keep_alive
        if isinstance(result, JSONResponse):
            status, result = result.status, result.body
        if path == "/healthz":
            body = json.dumps(result, separators=(",", ":")).encode()
        else:
            body = indented_json(result, path not in FLOATLESS)
        callback = query.get("callback")
        if callback:  # nats-server supports JSONP
            body = callback.encode() + b"(" + body + b")"
        self._write(writer, status, "application/json", body, keep_alive, head_only, cors=True)
        return keep_alive

    def _redirect(self, writer: asyncio.StreamWriter, method: str, location: str, keep_alive: bool) -> None:
        """Go's ServeMux for a path that is not clean (``//``, ``.``, ``..``): a 307 to the cleaned path
        (``http.Redirect``: an HTML body for GET only, its content type for GET and HEAD)."""
        html = method in ("GET", "HEAD")
        body = f'<a href="{_html_escape(location)}">Temporary Redirect</a>.\n\n'.encode() if method == "GET" else b""
        self._write(writer, 307, "text/html; charset=utf-8" if html else None, body, keep_alive,
                    head_only=method == "HEAD", extra=(f"Location: {location}",))  # fmt: skip

    @staticmethod
    def _write(
        writer: asyncio.StreamWriter,
        status: int,
        content_type: str | None,
        body: bytes,
        keep_alive: bool,
        head_only: bool = False,
        cors: bool = False,
        extra: tuple[str, ...] = (),
    ) -> None:
        """One response; ``head_only`` (a HEAD request): the headers a GET would have, never a body
        (else the body would be read as the next response). A 307 to HEAD has no length, as Go's."""
        head = f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        if cors:
            head += "Access-Control-Allow-Origin: *\r\n"  # nats-server's ResponseHandler
        if content_type:
            head += f"Content-Type: {content_type}\r\n"
        for line in extra:
            head += line + "\r\n"
        head += _http_date()
        if not (head_only and status == 307):
            head += f"Content-Length: {len(body)}\r\n"
        if not keep_alive:
            head += "Connection: close\r\n"
        writer.write((head + "\r\n").encode() + (b"" if head_only else body))


# The Date header of the current second, made once a second (strftime and gmtime cost ~4 µs a response).
_DATE: list[Any] = [-1, ""]


def _http_date() -> str:
    """``Date: <RFC 1123 GMT>\\r\\n`` as Go's net/http writes it, for the current second."""
    now = int(time.time())
    if now != _DATE[0]:
        _DATE[0], _DATE[1] = now, time.strftime("Date: %a, %d %b %Y %H:%M:%S GMT\r\n", time.gmtime(now))
    return str(_DATE[1])


def indented_json(body: Any, floats: bool = True) -> bytes:
    """``json.dumps(body, indent=2, ensure_ascii=False)``, made by ``msgspec.json.encode`` (compact)
    and ``msgspec.json.format`` (the indentation): with ``indent`` set, ``json`` encodes in Python, ~5
    times slower — a ``/jsz?consumers=1`` of 10,000 consumers (5.7 MB) took ~0.4 s of it — and even
    its compact C encoder costs ~9× msgspec's (24 against 2.7 µs a ``/varz``). The same bytes: msgspec
    writes every string and integer as ``json`` does and a float as ``repr`` does except where it
    uses no exponent below 1e-4 (``0.00001``) or writes one without ``+`` (``1e16``), and NaN as
    ``null``; a body whose compact text could hold one of those (`_NOT_REPR`), or that msgspec
    refuses, is encoded compact by ``json``'s C encoder (`_maybe_not_repr`; not scanned with ``floats``
    False: `compact_json`'s rule). A body that is not JSON (``NaN``) goes the slow way, as does every
    body with `FORMAT_INDENT` off."""
    if FORMAT_INDENT:
        compact: bytes | None
        try:
            compact = msgspec.json.encode(body)
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            compact = None  # (json's encoder says what it thinks of it)
        if compact is None or ((floats or not SKIP_FLOAT_SCAN) and _maybe_not_repr(compact)):
            compact = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        try:
            return msgspec.json.format(compact, indent=2)
        except msgspec.DecodeError:  # NaN or Infinity: json.dumps' own words for them
            pass
    return json.dumps(body, indent=2, ensure_ascii=False).encode()


def compact_json(body: Any, floats: bool = True) -> bytes:
    """``json.dumps(body, separators=(",", ":")).encode()`` — ASCII, as json writes by default — made
    by ``msgspec.json.encode`` where the bytes are the same: `indented_json`'s rule (`_maybe_not_repr`),
    with DEL and what is not ASCII (msgspec writes them raw; only inside strings) escaped as json
    escapes them: µ (every ``rtt`` in µs) by one ``bytes.replace``, the rest by `_json_escape`
    (``\\u00b5``, a surrogate pair above U+FFFF). The system account's answers (``sys_requests``): a ``$SYS.REQ.SERVER.PING.CONNZ`` of
    1,000 connections spent ~14 ms of its ~22 in json's C encoder, ~2 in msgspec's. ``floats``
    False: the caller knows the body holds no float and no None (`FLOATLESS`), so msgspec's text is
    json's without `_maybe_not_repr`'s four passes over it (with `SKIP_FLOAT_SCAN`).
    `COMPACT_MSGSPEC` off: json always."""
    if COMPACT_MSGSPEC:
        try:
            compact = msgspec.json.encode(body)
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError):
            compact = b""  # (json's encoder says what it thinks of it)
        if compact and not ((floats or not SKIP_FLOAT_SCAN) and _maybe_not_repr(compact)):
            if not compact.isascii():  # µ first (every rtt under a millisecond): one replace, not a match each
                compact = compact.replace(_MICRO, _MICRO_ESCAPED)
            if compact.isascii() and compact.find(b"\x7f") < 0:
                return compact
            return _NOT_ASCII_OR_DEL.sub(_json_escape, compact.decode()).encode()
    return json.dumps(body, separators=(",", ":")).encode()


_NOT_ASCII_OR_DEL = re.compile("[^\x00-\x7e]")
_MICRO, _MICRO_ESCAPED = "\u00b5".encode(), b"\\u00b5"  # (json's ensure_ascii escape of µ)


def _json_escape(match: re.Match[str]) -> str:
    """json's ``ensure_ascii`` escape of one character: ``\\uXXXX``, a surrogate pair above U+FFFF."""
    code = ord(match.group())
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 | code >> 10:04x}\\u{0xDC00 | code & 0x3FF:04x}"
    return f"\\u{code:04x}"


_DIGITS_AS_0 = bytes.maketrans(b"123456789", b"000000000")


#: What compact JSON may hold just before a number: ``:`` ``,`` ``[`` (bytes as ints).
_BEFORE_NUMBER = frozenset(b":,[")
#: What a number holds before its exponent, its digits made ``0`` (bytes as ints).
_IN_MANTISSA = frozenset(b"0.-")


def _maybe_not_repr(compact: bytes) -> bool:
    """Whether msgspec's compact text may differ from json's: a float with an exponent (``2.5e-7``:
    a digit then ``e``), one below 1e-4 written without (``0.00001``), a ``null`` (None, or NaN /
    ±Infinity). Searches, not a regular expression (``[0-9]e`` scans at ~10 µs a KB,
    ``bytes.translate`` and ``find`` at ~1). A digit then ``e`` is a float's only where it ends a
    mantissa that starts a value (`_float_at`): a hex digest (``/varz``'s ``config_digest`` holds
    one in ~9 of 10 servers) no longer sends a body the json way; ``null`` and ``0.0000`` inside a
    string still do (they only cost)."""
    if compact.find(b"null") >= 0 or compact.find(b"0.0000") >= 0:
        return True
    digits = compact.translate(_DIGITS_AS_0)
    at = digits.find(b"0e")
    while at >= 0:
        if _float_at(digits, at):
            return True
        at = digits.find(b"0e", at + 2)
    return False


def _float_at(digits: bytes, at: int) -> bool:
    """Whether the ``0e`` at ``at`` (digits made ``0``) ends the mantissa of a number value: back
    over digits, ``.`` and ``-`` to the start of the text or to a ``:``, ``,`` or ``[`` (in a string
    it reaches a letter or a quote, short of one — a string like ``":3e4"`` counts: json's way,
    which only costs)."""
    start = at
    while start > 0 and digits[start - 1] in _IN_MANTISSA:
        start -= 1
    return start == 0 or digits[start - 1] in _BEFORE_NUMBER


def go_clean_path(path: str) -> str:
    """Go's ``http.cleanPath``: ``path.Clean`` with a leading slash, keeping a trailing one."""
    if not path:
        return "/"
    cleaned = posixpath.normpath("/" + path.lstrip("/"))
    if path.endswith("/") and cleaned != "/":
        cleaned += "/"
    return cleaned


def endpoint_path(base_path: str, path: str) -> str | None:
    """The endpoint a clean request path names under nats-server's ``http_base_path`` (its
    ``basePath``: every endpoint registered at ``path.Join(base, endpoint)``, matched exactly by Go's
    mux), "/" for the root page; None when nothing is registered there (a 404: a trailing slash, a
    path outside the base, the base with a slash after it)."""
    base = posixpath.normpath("/" + base_path.lstrip("/")) if base_path else "/"
    if base == "/":
        return path
    if path == base:
        return "/"
    if path.startswith(base + "/") and len(path) > len(base) + 1 and not path.endswith("/"):
        return path[len(base) :]
    return None


def _html_escape(text: str) -> str:
    """net/http's ``htmlEscape``: its five characters, in its words."""
    return text.translate(_HTML_ESCAPES)


_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


def _root_page(server: Server) -> str:
    links = "".join(f'<a href=".{p}">{p.lstrip("/")}</a>\n' for p in sorted(server.monitor_handlers))
    return (
        '<html lang="en"><head><title>pyjetstream monitoring</title></head><body>\n'
        f"<h3>pyjetstream (nats-server {_version()} compatible)</h3>\n{links}</body></html>\n"
    )
