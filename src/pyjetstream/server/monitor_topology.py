"""Monitoring of what a single node has no more of than nats-server on one node: routes,
gateways, leaf nodes and Raft groups (``/routez``, ``/gatewayz``, ``/leafz``, ``/raftz``), and
of the process itself (``/ipqueuesz``, ``/debug/vars``).

Exporters (prometheus-nats-exporter, surveyor) poll these on every server they are given, so a
404 breaks them; nats-server 2.15.1 on one node answers each with an empty shape, which is what
these return (``server/monitor.go``: ``Routez``, ``Gatewayz``, ``Leafz``, ``HandleRaftz``,
``Ipqueuesz``, and Go's ``expvar`` handler). Query parameters are decoded as there, and a bad
boolean is the same 400 text.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api.enums import RetentionPolicy
from pyjetstream.api.timefmt import format_time

if TYPE_CHECKING:
    from pyjetstream.server.server import Server

__all__ = ["RawResponse", "go_bool", "topology_handlers"]


class RawResponse:
    """A body written as it is (``/debug/vars``, ``/ipqueuesz``: Go formats them its own way)."""

    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.body = body
        self.content_type = content_type


def go_bool(query: dict[str, str], key: str) -> bool:
    """Go's ``decodeBool``: ``strconv.ParseBool`` of the parameter (absent: false); anything else is
    a 400 with Go's words."""
    text = query.get(key, "")
    if text == "":
        return False
    if text in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if text in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    # Deferred: monitor imports this module for its handlers (and a bad value is rare: no import per call).
    from pyjetstream.server.monitor import MonitorError

    raise MonitorError(
        400, f"Error decoding boolean for '{key}': strconv.ParseBool: parsing \"{text}\": invalid syntax", decoding=True
    )


def _go_subs(query: dict[str, str]) -> None:
    """Go's ``decodeSubs``: ``subs=detail`` or a boolean."""
    if query.get("subs", "").lower() != "detail":
        go_bool(query, "subs")


def _now() -> str:
    return format_time(time.time_ns())


def _routez(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``Routez``: no routes (a single node); cluster permissions are not configurable here."""
    _go_subs(query)
    return {
        "server_id": server.server_id,
        "server_name": server.server_name,
        "now": _now(),
        "num_routes": 0,
        "routes": [],
    }


def _gatewayz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``Gatewayz`` with gateways off: no name, host or port, empty maps."""
    _go_subs(query)
    go_bool(query, "accs")
    return {"server_id": server.server_id, "now": _now(), "outbound_gateways": {}, "inbound_gateways": {}}


def _leafz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``Leafz``: no leaf node connections."""
    go_bool(query, "subs")
    return {"server_id": server.server_id, "now": _now(), "leafnodes": 0, "leafs": []}


def _raftz(server: Server, query: dict[str, str]) -> dict[str, Any]:
    """``HandleRaftz``: a server that is not clustered has registered no Raft node."""
    # Deferred: monitor imports this module for its handlers.
    from pyjetstream.server.monitor import MonitorError

    raise MonitorError(404, "No Raft nodes registered")


def ipqueue_names(server: Server) -> list[str]:
    """The names nats-server gives its internal queues, for what this server runs: the system
    account's (nats-server always has one), the JetStream API's, and per stream and consumer
    (``newIPQueue`` in server.go, sendq.go, jetstream_api.go, stream.go, consumer.go)."""
    names = ["SendQ", "System recvQ", "System recvQ Pings", "System sendQ", "delayed API responses"]
    engines = server.jetstream_engines()
    if engines:
        names += ["JetStream API queue", "JetStream API info queue"]
    for engine in engines:
        for stream in list(engine.streams.values()):
            cfg = stream.cfg
            pfx = f"[ACC:{engine.account_name}] stream "
            names += [f"{pfx}'{cfg.name}' {q}" for q in ("messages", "direct gets", "obs", "sendQ")]
            if cfg.retention != RetentionPolicy.LIMITS:
                names.append(f"{pfx}'{cfg.name}' acks")
            if cfg.mirror is not None:
                names.append(f"{pfx}mirror '{cfg.name}' of '{cfg.mirror.name}' msgs")
            if cfg.sources:
                names.append(f"{pfx}sources '{cfg.name}' msgs")
            for consumer in list(stream.consumers.values()):
                cpfx = f"[ACC:{engine.account_name}] consumer '{consumer.name}' on stream '{cfg.name}' "
                names.append(cpfx + "ackMsgs")
                if consumer.is_pull:
                    names.append(cpfx + "pull requests")
    return names


def _ipqueuesz(server: Server, query: dict[str, str]) -> RawResponse:
    """``Ipqueuesz``: each queue's ``pending`` (with ``all``, empty ones too; ``queues``: a name
    filter). Work here is handed over without queues, so none is ever pending: without ``all``
    the answer is ``{}``, as on an idle nats-server. Go indents this one with three spaces."""
    show_all = go_bool(query, "all")
    name_filter = query.get("queues", "")
    queues: dict[str, dict[str, int]] = {}
    if show_all:
        for name in ipqueue_names(server):
            if not name_filter or name_filter in name:
                queues[name] = {"pending": 0}
    body = json.dumps(dict(sorted(queues.items())), indent=3, ensure_ascii=False)
    return RawResponse(body.encode())


# Go's runtime size classes (runtime.MemStats.BySize), as nats-server 2.15.1's /debug/vars lists them.
_SIZE_CLASSES = (
    0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320, 352, 384,
    416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792, 2048, 2304, 2688, 3072,
    3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240, 10880, 12288, 13568,
    14336, 16384, 18432,
)  # fmt: skip


def _memstats() -> dict[str, Any]:
    """Go's ``runtime.MemStats`` keys with what a Python process can tell: the resident set for
    the sizes of the heap and of memory from the OS, live allocated blocks for the objects, the
    collector's runs; what has no Python meaning (Go's span and cache pools, pause history) is 0."""
    # Deferred: monitor imports this module for its handlers.
    from pyjetstream.server.monitor import _rss_bytes

    rss = _rss_bytes()
    blocks = sys.getallocatedblocks()
    runs = sum(gen.get("collections", 0) for gen in gc.get_stats())
    stats: dict[str, Any] = {
        "Alloc": rss, "TotalAlloc": rss, "Sys": rss, "Lookups": 0, "Mallocs": blocks, "Frees": 0,
        "HeapAlloc": rss, "HeapSys": rss, "HeapIdle": 0, "HeapInuse": rss, "HeapReleased": 0,
        "HeapObjects": blocks, "StackInuse": 0, "StackSys": 0, "MSpanInuse": 0, "MSpanSys": 0,
        "MCacheInuse": 0, "MCacheSys": 0, "BuckHashSys": 0, "GCSys": 0, "OtherSys": 0, "NextGC": 0,
        "LastGC": 0, "PauseTotalNs": 0, "PauseNs": [0] * 256, "PauseEnd": [0] * 256, "NumGC": runs,
        "NumForcedGC": 0, "GCCPUFraction": 0, "EnableGC": gc.isenabled(), "DebugGC": False,
        "BySize": [{"Size": size, "Mallocs": 0, "Frees": 0} for size in _SIZE_CLASSES],
    }  # fmt: skip
    return stats


def _debug_vars(server: Server, query: dict[str, str]) -> RawResponse:
    """Go's ``expvar.Handler`` (nats-server's ``/debug/vars``): ``cmdline`` and ``memstats``, one
    compact value per line, as Go writes them."""
    cmdline = json.dumps(list(sys.orig_argv), separators=(",", ":"))  # Go: os.Args
    memstats = json.dumps(_memstats(), separators=(",", ":"))
    body = f'{{\n"cmdline": {cmdline},\n"memstats": {memstats}\n}}\n'
    return RawResponse(body.encode(), "application/json; charset=utf-8")


def topology_handlers() -> dict[str, Any]:
    """path → ``fn(server, query)`` for `pyjetstream.server.monitor.MonitorServer`."""
    return {
        "/routez": _routez,
        "/gatewayz": _gatewayz,
        "/leafz": _leafz,
        "/raftz": _raftz,
        "/ipqueuesz": _ipqueuesz,
        "/debug/vars": _debug_vars,
    }

