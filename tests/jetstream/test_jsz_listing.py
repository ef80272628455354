"""``/jsz`` listings: what a stream or a consumer listed costs stays the same as the streams and consumers
grow, and every ``/jsz`` body is what ``json.dumps`` makes without the float scan.

A ``/jsz?streams=1`` of 100 streams cost ~11 µs of server CPU a stream listed against nats-server's ~7
(docs/benchmarks.md): its query read again at each stream and consumer, the creation time formatted at
every request, the state's builtins made again when it had not changed, the streams sorted through a key
function, each consumer's info made with a whole `StreamState` of its stream for two numbers, and the
body's compact JSON scanned for floats it cannot hold.
Counted here (Python trace events, `tests.support.steps`) at two sizes, on the embedded server in
process; the bodies are compared with the switches off.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec.inspect as mi
import nats
import pytest
from tests.server.test_sys_requests_steps import _floats_or_nones
from tests.support.steps import steps_of

from pyjetstream import Server
from pyjetstream.api.models_consumer import ConsumerInfo
from pyjetstream.api.models_stream import StreamConfig, StreamState
from pyjetstream.server import monitor
from pyjetstream.server.jetstream import monitoring
from pyjetstream.server.jetstream import stream as stream_module

QUERIES: list[dict[str, str]] = [
    {},
    {"accounts": "true"},
    {"streams": "1"},
    {"streams": "1", "config": "1"},
    {"consumers": "1"},
    {"consumers": "true", "config": "true"},
    {"acc": "$G", "consumers": "1", "config": "1"},
]


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    async with Server(port=-1, http_port=-1, jetstream=True, store_dir=str(tmp_path)) as server:
        yield server


async def _request(nc: Any, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=10)).data)
    assert "error" not in reply, (subject, reply)
    return reply


async def _streams(nc: Any, first: int, last: int, consumers: int = 0) -> None:
    """Streams ``J<first>`` … ``J<last - 1>`` of three messages, each with ``consumers`` durables."""
    for s in range(first, last):
        await _request(nc, f"$JS.API.STREAM.CREATE.J{s}", {"name": f"J{s}", "subjects": [f"j.{s}.>"]})
        for i in range(3):
            await nc.request(f"j.{s}.{i}", b"x", timeout=10)
        await _durables(nc, f"J{s}", 0, consumers)


async def _durables(nc: Any, stream: str, first: int, last: int) -> None:
    for i in range(first, last):
        config = {"durable_name": f"d{i}", "ack_policy": "explicit"}
        await _request(nc, f"$JS.API.CONSUMER.CREATE.{stream}.d{i}", {"stream_name": stream, "config": config})


def _listing_steps(server: Server, query: dict[str, str]) -> int:
    """The trace events of one ``/jsz`` answer (its handler; the encoding is C), after one to warm
    the time formats' caches."""
    handler = server.monitor_handlers["/jsz"]
    handler(dict(query))
    return steps_of(lambda: handler(dict(query)))


async def test_a_stream_listed_costs_the_same_at_10_and_100_streams(server: Server) -> None:
    """``/jsz?streams=1``: the steps a stream listed (beyond an empty listing's) at 10 and at 100
    streams: 80 and 80, where they were 128 (the query read twice a stream, the creation time
    formatted, the sort's key function, the store's state through `IndexedStore.state`, the state's
    builtins made again — its two times through the codec's hook — when it had not changed)."""
    nc = await nats.connect(server.client_url)
    query = {"streams": "1"}
    empty = _listing_steps(server, query)
    per = []
    for first, last in ((0, 10), (10, 100)):
        await _streams(nc, first, last)
        per.append((_listing_steps(server, query) - empty) / last)
    assert per[1] <= per[0] * 1.03, per
    assert per[1] <= 90, per  # (the stream's state made and compared with the one shown last)
    await nc.close()


async def test_a_consumer_listed_costs_the_same_at_10_and_100_consumers(server: Server) -> None:
    """``/jsz?consumers=1`` (and with ``config``): the steps a consumer listed at 10 and at 100
    consumers of a stream: 125 and 125, where they were 152 — each consumer's info read a whole
    `StreamState` of its stream for its last sequence and count, the query was read again and the
    consumers sorted through a key function."""
    nc = await nats.connect(server.client_url)
    await _streams(nc, 0, 1)
    for query in ({"consumers": "1"}, {"consumers": "1", "config": "1"}):
        empty = _listing_steps(server, query)
        per = []
        for first, last in ((0, 10), (10, 100)):
            await _durables(nc, "J0", first, last)
            per.append((_listing_steps(server, query) - empty) / last)
        assert per[1] <= per[0] * 1.03, (query, per)
        assert per[1] <= 135, (query, per)  # (Consumer.info, its times through the codec's hook)
        for i in range(100):
            await _request(nc, f"$JS.API.CONSUMER.DELETE.J0.d{i}", {})
    await nc.close()


def _float_types(t: Any, where: str, seen: set[type]) -> list[str]:
    """Where a type (a model's, recursively) admits a float (or anything: ``Any``)."""
    if isinstance(t, mi.StructType):
        if t.cls in seen:
            return []
        seen.add(t.cls)
        return [w for f in t.fields for w in _float_types(f.type, f"{t.cls.__name__}.{f.name}", seen)]
    if isinstance(t, (mi.FloatType, mi.AnyType, mi.DecimalType)):
        return [where]
    inner = [getattr(t, a) for a in ("item_type", "key_type", "value_type") if hasattr(t, a)]
    inner += list(getattr(t, "types", ()) or getattr(t, "item_types", ()))
    return [w for i in inner for w in _float_types(i, where, seen)]


def test_the_models_jsz_shows_hold_no_float() -> None:
    """What lets ``/jsz`` skip the float scan (`monitor.FLOATLESS`): the models it shows — a stream's
    config and state, a consumer's info — admit no float anywhere (times are RFC3339 strings and
    durations integers of nanoseconds), so no NaN; its own fields are integers and strings."""
    assert "/jsz" in monitor.FLOATLESS
    seen: set[type] = set()
    for model in (StreamConfig, StreamState, ConsumerInfo):
        assert _float_types(mi.type_info(model), model.__name__, seen) == [], model
    assert len(seen) > 10  # (the walk reached the nested models)


async def test_every_jsz_shape_is_json_dumps_without_the_float_scan(server: Server) -> None:
    """Every ``/jsz`` shape — accounts, streams with their configs (metadata, a mirror, sources,
    republish, memory storage, text that is not ASCII), consumers pull and push, paused, with back-off,
    priority groups, pending acks — holds no float and no None, so its compact ($SYS) and indented
    (HTTP) JSON made without the scan are ``json.dumps``'."""
    nc = await nats.connect(server.client_url)
    origin = {"name": "ORIGIN", "subjects": ["o.>"], "metadata": {"b": "2", "a": "1"}, "description": "é <&> \u2028",
              "republish": {"src": "o.>", "dest": "re.>"}, "max_age": 3_600_000_000_000}  # fmt: skip
    await _request(nc, "$JS.API.STREAM.CREATE.ORIGIN", origin)
    await _request(nc, "$JS.API.STREAM.CREATE.MIRROR", {"name": "MIRROR", "mirror": {"name": "ORIGIN"}})
    sourced = {"name": "SRC", "storage": "memory", "sources": [{"name": "ORIGIN", "filter_subject": "o.a"}]}
    await _request(nc, "$JS.API.STREAM.CREATE.SRC", sourced)
    for i in range(5):
        await nc.request(f"o.{'ab'[i % 2]}", b"x", timeout=10)
    consumers = [
        {"durable_name": "pull", "ack_policy": "explicit", "backoff": [1_000_000_000, 2_000_000_000], "max_deliver": 5,
         "filter_subjects": ["o.a", "o.b"], "metadata": {"k": "v"}},
        {"durable_name": "paused", "ack_policy": "explicit", "pause_until": "2099-01-01T00:00:00Z"},
        {"durable_name": "grouped", "ack_policy": "explicit", "priority_policy": "pinned_client",
         "priority_groups": ["g"], "priority_timeout": 60_000_000_000},
        {"durable_name": "push", "deliver_subject": "pushed", "ack_policy": "none", "idle_heartbeat": 5_000_000_000,
         "flow_control": True},
    ]  # fmt: skip
    for config in consumers:
        await _request(nc, f"$JS.API.CONSUMER.CREATE.ORIGIN.{config['durable_name']}", {"stream_name": "ORIGIN", "config": config})
    inbox = await nc.subscribe("pulled")
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.ORIGIN.pull", b'{"batch": 2}', reply="pulled")
    for _ in range(2):  # (two acks pending)
        await inbox.next_msg(timeout=10)
    handler = server.monitor_handlers["/jsz"]
    for query in QUERIES:
        body = handler(dict(query))
        assert _floats_or_nones(body) == [], (query, _floats_or_nones(body))
        assert monitor.compact_json(body, floats=False) == json.dumps(body, separators=(",", ":")).encode(), query
        assert monitor.indented_json(body, floats=False) == json.dumps(body, indent=2, ensure_ascii=False).encode()
    listed = handler({"consumers": "1", "config": "1"})["account_details"][0]["stream_detail"]
    assert [s["name"] for s in listed] == ["MIRROR", "ORIGIN", "SRC"]
    assert [c["name"] for c in listed[1]["consumer_detail"]] == ["grouped", "paused", "pull", "push"]
    metadata = listed[1]["config"]["metadata"]
    assert list(metadata) == sorted(metadata) and {"a", "b"} <= set(metadata)  # (Go's map order)
    await nc.close()


def _without_now(body: dict[str, Any]) -> dict[str, Any]:
    """A ``/jsz`` body without the times of its making (its ``now``, each consumer info's ``ts``)."""
    for account in body.get("account_details", ()):
        for stream in account.get("stream_detail", ()):
            for consumer in stream.get("consumer_detail", ()):
                consumer["ts"] = ""
    return {**body, "now": ""}


async def test_a_listing_is_the_same_with_the_kept_parts_off(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential of what a listing keeps: `Stream.created_text` (switch
    `stream.CREATED_TEXT_ONCE`) and the state's builtins (`monitoring.shown_state`, switch
    `monitoring.STATE_SHOWN_ONCE`) — each listing the same with the switches on and off, as messages
    come, are removed and purged between listings, and the creation time the one a stream's info gives."""
    nc = await nats.connect(server.client_url)
    await _streams(nc, 0, 3, consumers=1)
    handler = server.monitor_handlers["/jsz"]
    info = await _request(nc, "$JS.API.STREAM.INFO.J1", {})
    changes = [("j.1.x", {}), ("$JS.API.STREAM.MSG.DELETE.J0", {"seq": 2}), ("$JS.API.STREAM.PURGE.J2", {}), ("", {})]
    for subject, body in changes:
        for query in QUERIES:
            on = handler(dict(query))
            with monkeypatch.context() as off:
                off.setattr(stream_module, "CREATED_TEXT_ONCE", False)
                off.setattr(monitoring, "STATE_SHOWN_ONCE", False)
                assert _without_now(on) == _without_now(handler(dict(query))), (subject, query)
            if "account_details" in on and "stream_detail" in on["account_details"][0]:
                assert on["account_details"][0]["stream_detail"][1]["created"] == info["created"]
        if subject:
            await nc.request(subject, json.dumps(body).encode(), timeout=10)
    state = handler({"streams": "1"})["account_details"][0]["stream_detail"]
    assert [s["state"]["messages"] for s in state] == [2, 4, 0]
    state[0]["state"]["messages"] = -1  # (an answer's dict is its own)
    assert handler({"streams": "1"})["account_details"][0]["stream_detail"][0]["state"]["messages"] == 2
    await nc.close()
