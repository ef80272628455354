"""JetStream in the HTTP monitoring endpoints: ``/jsz``, the ``jetstream`` part of ``/varz``, ``/healthz``.

Field names and shapes are nats-server's (``server/monitor.go`` ``JSInfo``/``AccountDetail``);
models are encoded with the shared codec so times and omitted fields look the same.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from pyjetstream.api.codec import to_builtins
from pyjetstream.api.enums import StorageType
from pyjetstream.api.timefmt import format_time
from pyjetstream.server.jetstream import server_jetstream
from pyjetstream.server.version import JS_API_LEVEL

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.stream import Stream

GLOBAL_ACCOUNT = "$G"
#: A stream's state shown by ``/jsz`` is made builtins (its two times formatted through the codec's
#: hook: ~40% of a stream listed) once per change of the state, not at every request that lists it
#: (`shown_state`); off: at every request.
STATE_SHOWN_ONCE = True
_MEMORY, _FILE = StorageType.MEMORY, StorageType.FILE  # (an enum member's lookup costs ~0.2 µs)
# nats-server reports an unreserved account as the uint64 max.
UNRESERVED = 18446744073709551615


def _config(engine: JetStreamEngine) -> dict[str, Any]:
    """nats-server JetStreamConfig (omit-empty), in its field order."""
    config: dict[str, Any] = {
        "max_memory": engine.max_memory,
        "max_storage": engine.max_storage,
        "store_dir": str(engine.store_dir),
        "sync_interval": round(engine.sync_interval * 1e9),
    }
    if engine.sync_always:
        config["sync_always"] = True
    if engine.domain:
        config["domain"] = engine.domain
    if engine.strict:
        config["strict"] = True
    return config


def _limits(engine: JetStreamEngine) -> dict[str, Any]:
    """nats-server JSLimitOpts (omit-empty): the server-wide ``jetstream { limits {} }``."""
    limits = getattr(engine.server.options, "jetstream_limits", None)
    out: dict[str, Any] = {}
    if limits is not None:
        for key, value in (
            ("max_request_batch", limits.max_request_batch),
            ("max_ack_pending", limits.max_ack_pending),
            ("max_ha_assets", limits.max_ha_assets),
            ("max_duplicate_window", round(limits.duplicate_window * 1e9)),
            ("max_batch_inflight_per_stream", limits.batch_max_inflight_per_stream),
            ("max_batch_inflight_total", limits.batch_max_inflight_total),
            ("max_batch_size", limits.batch_max_msgs),
            ("max_batch_timeout", round(limits.batch_timeout * 1e9)),
        ):
            if value:
                out[key] = value
    out["default_max_consumers"] = engine.default_max_consumers()
    return out


def _stats(engines: list[JetStreamEngine]) -> dict[str, Any]:
    """nats-server ``JetStreamStats`` over the engines: each one's usage, reservations (running
    sums: no pass over the streams) and API counts, read in one pass."""
    memory = storage = reserved_memory = reserved_storage = total = errors = 0
    for engine in engines:
        used = engine.usage()
        memory += used[0]
        storage += used[1]
        reserved_memory += engine.reserved(_MEMORY)
        reserved_storage += engine.reserved(_FILE)
        total += engine.api_total
        errors += engine.api_errors
    return _stats_dict(memory, storage, reserved_memory, reserved_storage, total, errors, len(engines))


def _stats_dict(
    memory: int, storage: int, reserved_memory: int, reserved_storage: int, total: int, errors: int, accounts: int
) -> dict[str, Any]:
    return {
        "memory": memory,
        "storage": storage,
        "reserved_memory": reserved_memory,
        "reserved_storage": reserved_storage,
        "accounts": accounts,
        "ha_assets": 0,
        "api": {"level": JS_API_LEVEL, "total": total, "errors": errors},
    }


def varz(engine: JetStreamEngine) -> dict[str, Any]:
    """``/varz``'s and STATSZ's ``jetstream``: the stats of every account's engine (the server's
    running sums, `ServerJetStream.stats`: nats-server's ``js.usageStats``; with `TOTALS` off, or
    an engine alone, each engine's read in turn)."""
    totals = engine.totals
    if totals is None:
        stats = _stats([engine])
    elif server_jetstream.TOTALS:
        stats = _stats_dict(*totals.stats(), len(totals.engines))
    else:
        stats = _stats(list(totals.engines.values()))
    return {"config": _config(engine), "stats": stats, "limits": _limits(engine)}


class Listing(Protocol):
    """What a ``/jsz`` answer reads of its parameters, decoded once a request by the server
    (`pyjetstream.server.monitor.jsz_options`: nats-server's ``JSzOptions``), not read again at each
    stream and consumer listed."""

    @property
    def account(self) -> str: ...
    @property
    def accounts(self) -> bool: ...
    @property
    def streams(self) -> bool: ...
    @property
    def consumers(self) -> bool: ...
    @property
    def config(self) -> bool: ...
    @property
    def direct_consumers(self) -> bool: ...
    @property
    def offset(self) -> int: ...
    @property
    def limit(self) -> int: ...
    @property
    def raft(self) -> bool: ...


def _reserved(limit: int) -> int:
    return limit if limit >= 0 else UNRESERVED


def jsz(engines: JetStreamEngine | list[JetStreamEngine], options: Listing) -> dict[str, Any]:
    """nats-server ``Jsz``: the server's totals, then each account's ``accountDetail`` asked for."""
    if not isinstance(engines, list):
        engines = [engines]
    first = engines[0]
    streams = [s for e in engines for s in e.streams.values()]
    # nats-server JSInfo: the embedded JetStreamStats first, then the rest in its field order.
    out: dict[str, Any] = {
        **_stats(engines),
        "server_id": first.server.server_id,
        "now": format_time(time.time_ns()),
        "config": _config(first),
        "limits": _limits(first),
        "streams": len(streams),
        "consumers": sum(s.csl.public for s in streams),  # (its streams' states' counts: not the direct ones)
        "messages": 0,
        "bytes": 0,
    }
    if options.raft:  # (Go's omitempty; a stream or consumer without a group leads itself)
        out = _with_leaders(out)
    messages = size = 0
    for stream in streams:  # (each stream's two totals read once: nats-server's loop over them)
        msgs, used = stream.store.totals()
        messages += msgs
        size += used
    out["messages"], out["bytes"] = messages, size
    details = [_account_detail(e, options) for e in _listed(engines, options)]
    if details:
        out["account_details"] = details
    out["total"] = len(engines)  # JetStream-enabled accounts
    return out


def _with_leaders(out: dict[str, Any]) -> dict[str, Any]:
    """``JSInfo`` with ``raft``: ``streams_leader`` after ``streams``, ``consumers_leader`` after
    ``consumers`` — on one server, every stream and public consumer (none has a Raft group)."""
    shown: dict[str, Any] = {}
    for key, value in out.items():
        shown[key] = value
        if key in ("streams", "consumers") and value:
            shown[key + "_leader"] = value
    return shown


def _listed(engines: list[JetStreamEngine], options: Listing) -> list[JetStreamEngine]:
    """The accounts ``Jsz`` details: the one ``acc`` names if it has JetStream, else with
    ``accounts`` a page of them sorted by name (``offset``, ``limit``; a limit below 0: all)."""
    if options.account:
        named = [e for e in engines if e.account_name == options.account]
        if named:
            return named[:1]
    if not options.accounts:
        return []
    if options.limit < 0:
        return engines
    ordered = sorted(engines, key=_account_name)
    return ordered[options.offset : options.offset + options.limit]


def _account_name(engine: JetStreamEngine) -> str:
    return engine.account_name


def _account_detail(engine: JetStreamEngine, options: Listing) -> dict[str, Any]:
    """nats-server ``accountDetail``: the account's stats and, with ``streams``, each stream's detail
    in the order of their names (`JetStreamEngine.streams_by_name`, sorted once per change)."""
    name = engine.account_name
    detail: dict[str, Any] = {
        "name": name,
        "id": name,
        **_stats([engine]),
        "reserved_memory": _reserved(engine.limits.max_memory),
        "reserved_storage": _reserved(engine.limits.max_store),
        "accounts": 0,
    }
    detail["api"]["level"] = 0  # nats-server: no level per account
    if options.streams:
        leader = engine.server.server.server_name  # (nats-server's clusterInfo of a stream alone: Leader s.Name())
        detail["stream_detail"] = [_stream_detail(s, leader, options) for s in engine.streams_by_name()]
    return detail


def _stream_detail(stream: Stream, leader: str, options: Listing) -> dict[str, Any]:
    """nats-server ``StreamDetail``: the stream's name, creation time (formatted once,
    `Stream.created_text`), config if asked, state and, with ``consumers``, the info of each public
    consumer (``getPublicConsumers``: not a mirror's or a source's on its origin) in the order of
    their names (`ConsumerIndex.public_names`, sorted once per change), without its config unless
    asked (nats-server clears it)."""
    detail: dict[str, Any] = {"name": stream.name, "created": stream.created_text, "cluster": {"leader": leader}}
    if options.config:
        detail["config"] = to_builtins(stream.cfg)
    detail["state"] = shown_state(stream)  # (its config and state alone: not a whole StreamInfo)
    if options.consumers:
        listed = _consumer_details(stream, stream.csl.public_names(), options)
        if listed:  # (Go's omitempty: a stream without consumers has none)
            detail["consumer_detail"] = listed
        if options.direct_consumers:
            direct = sorted(n for n, c in stream.consumers.items() if c.cfg.direct)
            listed = _consumer_details(stream, direct, options)
            if listed:
                detail["direct_consumer_detail"] = listed
    if stream.sourcing is not None:  # (nats-server's ``mirrorInfo``, ``sourcesInfo``)
        mirror, sources = stream.sourcing.mirror_info(), stream.sourcing.sources_info()
        if mirror is not None:
            detail["mirror"] = to_builtins(mirror)
        if sources:
            detail["sources"] = to_builtins(sources)
    return detail


def _consumer_details(stream: Stream, names: list[str], options: Listing) -> list[dict[str, Any]]:
    """Each named consumer's info, without its config unless asked (nats-server clears it)."""
    consumers = stream.consumers
    listed = []
    for name in names:
        info = to_builtins(consumers[name].info())
        if not options.config:
            del info["config"]
        listed.append(info)
    return listed


def shown_state(stream: Stream) -> dict[str, Any]:
    """The stream's state (`Stream.state`) as builtins: the ones made for the state shown last
    (`Stream.shown_state`) while the state is equal to it (a msgspec struct's ``==``, field by field,
    in C), else made now (`STATE_SHOWN_ONCE`). A poll of ``/jsz?streams=1`` finds most streams as it
    left them. Each answer gets its own dict; one holding a container (``lost``) is not kept."""
    state = stream.state()
    shown = stream.shown_state
    if shown is not None and STATE_SHOWN_ONCE and shown[0] == state:
        return dict(shown[1])
    made: dict[str, Any] = to_builtins(state)
    if state.lost is None:  # (the rest are numbers and strings: a dict's copy copies it whole)
        stream.shown_state = (state, made)
        return dict(made)
    return made


def healthz(engine: JetStreamEngine, query: dict[str, str]) -> str | None:
    """A problem text when JetStream is not healthy (nats-server answers 503 with it), else None."""
    if not engine.started:
        return "JetStream not enabled"
    return None
