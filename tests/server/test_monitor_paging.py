"""Monitoring at scale: a page costs the page, ``/varz`` walks no connection, and an indented body is
the bytes ``json.dumps`` makes.

``/connz`` sorts every connection by the one value asked for and describes only the page's (nats-server
describes them all before it sorts), ``/subsz?subs=1`` details only the page's subscriptions, ``/varz``
reads the server's message totals (`sink.Totals`, counted as each connection counts its own) instead of
summing the connections': counted here at two sizes of the state, on the embedded server in process.
`monitor.indented_json` (switch `monitor.FORMAT_INDENT`) gives every endpoint's body the bytes of
``json.dumps(indent=2)``.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls

from pyjetstream import Server
from pyjetstream.server import monitor

CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"name":"pager"}\r\nPING\r\n'


async def _connections(port: int, count: int, subs: int) -> list[asyncio.StreamWriter]:
    """``count`` raw connections, the i-th with ``subs`` subscriptions and ``i % 7`` messages sent to itself."""
    writers = []
    for i in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        await reader.readuntil(b"\r\n")  # INFO
        frames = [f"SUB p.{i}.{j} {j}\r\n".encode() for j in range(subs)]
        frames += [f"PUB p.{i}.0 2\r\nhi\r\n".encode()] * (i % 7)
        writer.write(CONNECT + b"".join(frames) + b"PING\r\n")
        await reader.readuntil(b"PONG\r\n")
        writers.append(writer)
    return writers


@pytest.fixture
async def monitored(tmp_path: Path) -> AsyncIterator[Server]:
    async with Server(port=-1, http_port=-1, jetstream=True, store_dir=str(tmp_path)) as server:
        yield server


async def _get(server: Server, path: str, query: dict[str, str]) -> Any:
    return server.monitor_handlers[path](query)


@pytest.mark.parametrize("sort", ["cid", "msgs_from", "subs", "idle", "rtt"])
async def test_a_connz_page_describes_only_its_connections(
    monitored: Server, monkeypatch: pytest.MonkeyPatch, sort: str
) -> None:
    counts = []
    writers: list[asyncio.StreamWriter] = []
    with count_calls(monkeypatch, monitor, "connection_info") as described:  # (called by its module name)
        for size in (20, 200):
            writers += await _connections(monitored.port, size - len(writers), 3)
            described.clear()
            page = await _get(monitored, "/connz", {"sort": sort, "offset": "7", "limit": "5", "subs": "1"})
            assert page["total"] == size and page["num_connections"] == 5
            counts.append(described["connection_info"])
    assert counts == [5, 5]  # every connection's before: 20 and 200
    for writer in writers:
        writer.close()


async def test_connz_pages_make_the_whole_listing(monitored: Server) -> None:
    """Pages of three, open and closed connections, each sort: the listing of one page of all. The
    last four made are closed: a closed connection's uptime stops, an open one's grows, and one
    made earlier than a closed one is always up longer (with the first four closed, an open one
    made later could pass a closed one between two pages)."""
    writers = await _connections(monitored.port, 12, 2)
    for writer in writers[8:]:
        writer.close()
    deadline = asyncio.get_running_loop().time() + 10
    while len(monitored.closed_clients) < 4:  # (each close is seen on a later turn of the loop)
        assert asyncio.get_running_loop().time() < deadline, len(monitored.closed_clients)
        await asyncio.sleep(0.01)
    for sort in ("cid", "start", "subs", "msgs_from", "bytes_from", "last", "uptime", "reason", "stop"):
        state = "closed" if sort in ("reason", "stop") else "any"
        whole = await _get(monitored, "/connz", {"sort": sort, "state": state, "limit": "100"})
        cids = [c["cid"] for c in whole["connections"]]
        paged: list[int] = []
        for offset in range(0, len(cids), 3):
            page = await _get(
                monitored, "/connz", {"sort": sort, "state": state, "offset": str(offset), "limit": "3"}
            )
            paged += [c["cid"] for c in page["connections"]]
        assert paged == cids, sort
    one = await _get(monitored, "/connz", {"cid": str(whole["connections"][0]["cid"]), "state": "any"})
    assert [c["cid"] for c in one["connections"]] == cids[:1]
    for writer in writers[:8]:
        writer.close()


async def test_a_subsz_page_details_only_its_subscriptions(
    monitored: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    counts = []
    writers: list[asyncio.StreamWriter] = []
    with count_calls(monkeypatch, monitor, "_sub_detail") as detailed:
        for size in (10, 100):
            writers += await _connections(monitored.port, size - len(writers), 20)
            detailed.clear()
            page = await _get(monitored, "/subsz", {"subs": "1", "offset": "50", "limit": "5"})
            assert page["total"] >= size * 20 and len(page["subscriptions_list"]) == 5
            counts.append(detailed["_sub_detail"])
    assert counts == [5, 5]  # every subscription's before: ~200 and ~2,000
    everything = await _get(monitored, "/subsz", {"subs": "1", "limit": "100000"})
    offset_50 = await _get(monitored, "/subsz", {"subs": "1", "offset": "50", "limit": "5"})
    assert offset_50["subscriptions_list"] == everything["subscriptions_list"][50:55]
    for writer in writers:
        writer.close()


EDGES: list[Any] = [
    [0.0, -0.0, 1.0, 1e16, 1e-5, 1e-7, 0.1, 1.7976931348623157e308, 5e-324, 123456.789e10],
    {"a": [], "b": {}, "c": [[], {}], "d": None, "e": True, "f": False, "g": 18446744073709551615},
    {"s": '\x00\x01\x1f\x7f\u2028é"\\/\b\f\n\r\t<>& : , [ ] { }', "é": "ü", "n": -(2**63), "big": 2**70},
    {2: "int key", 1.5: "float key", True: "bool key", None: "None key"},
    {"nan": math.nan, "inf": [math.inf, -math.inf]},  # not JSON: json.dumps' words, the slow way
    (1, (2, 3)),
    # msgspec's compact floats differ from repr here (no exponent below 1e-4, none with "+"): json's way.
    {"x": 0.00005, "y": [-2.5e-05, 1e21], "z": {"w": -0.00001}},
    -0.00001,
    {"looks like a float": "0.00001 1e5 null", "q": [None, 1.25]},
    # a digit then "e" inside strings (a hex digest; the text just before a float) is no float: msgspec's way
    {"config_digest": "sha256:3e4b0e98a7e1e2e3e4e5e6e7e8e9e0e1", "id": "x1e5", "neg": "-1e5", "colon": ":3e4"},
    {"a": [1e16, "2e3"], "b": -2.5e-07, "c": [0, 1.5e300], "d": "9e9"},
    1e16,
    [1e-07],
]


@pytest.mark.parametrize("body", EDGES)
def test_indented_json_is_json_dumps(body: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = monitor.indented_json(body)
    monkeypatch.setattr(monitor, "FORMAT_INDENT", False)
    assert fast == monitor.indented_json(body) == json.dumps(body, indent=2, ensure_ascii=False).encode()


@pytest.mark.parametrize("body", [*EDGES, {"ascii": "".join(map(chr, range(128))), "rtt": "986.522µs", "astral": "😀\U0010ffff"}])
def test_compact_json_is_json_dumps(body: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The system account's compact answers: msgspec's bytes where they are json.dumps' (ASCII, DEL
    escaped, floats as repr), json's elsewhere — the same bytes with `COMPACT_MSGSPEC` off."""
    fast = monitor.compact_json(body)
    monkeypatch.setattr(monitor, "COMPACT_MSGSPEC", False)
    assert fast == monitor.compact_json(body) == json.dumps(body, separators=(",", ":")).encode()


PATHS: list[tuple[str, dict[str, str]]] = [
    ("/varz", {}),
    ("/connz", {"subs": "detail", "auth": "1", "state": "any"}),
    ("/connz", {"subs": "1", "sort": "msgs_to"}),
    ("/subsz", {"subs": "1"}),
    ("/accountz", {"acc": "$G"}),
    ("/jsz", {"accounts": "1", "streams": "1", "consumers": "1", "config": "1"}),
    ("/healthz", {}),
]


async def test_every_endpoint_body_is_the_same_with_the_switch_off(
    monitored: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The differential: each endpoint's answer (JetStream state, open and closed connections) encoded
    with `FORMAT_INDENT` on and off."""
    writers = await _connections(monitored.port, 6, 3)
    writers[0].close()
    nc = await nats.connect(monitored.client_url)
    for name in ("ONE", "TWO"):
        config = {"name": name, "subjects": [f"{name}.>"], "description": "é \u2028 <&>"}
        assert (
            b'"error"'
            not in (await nc.request(f"$JS.API.STREAM.CREATE.{name}", json.dumps(config).encode())).data
        )
        await nc.publish(f"{name}.x", b"1")
        for i in range(3):
            body = {"stream_name": name, "config": {"durable_name": f"c{i}", "ack_policy": "explicit"}}
            reply = await nc.request(f"$JS.API.CONSUMER.CREATE.{name}.c{i}", json.dumps(body).encode())
            assert b'"error"' not in reply.data
    await nc.flush()
    await asyncio.sleep(0.1)
    for path, query in PATHS:
        answer = await _get(monitored, path, query)
        body = answer.body if isinstance(answer, monitor.JSONResponse) else answer
        fast = monitor.indented_json(body)
        with monkeypatch.context() as off:
            off.setattr(monitor, "FORMAT_INDENT", False)
            assert monitor.indented_json(body) == fast, path
        assert json.loads(fast) == json.loads(json.dumps(body)), path
    await nc.close()
    for writer in writers[1:]:
        writer.close()


class _CountingClients(dict[int, Any]):
    """``Server.clients`` counting the walks over it (what a request that sums the connections makes)."""

    walks = 0

    def values(self) -> Any:
        type(self).walks += 1
        return super().values()

    def items(self) -> Any:
        type(self).walks += 1
        return super().items()

    def __iter__(self) -> Any:
        type(self).walks += 1
        return super().__iter__()


async def test_varz_totals_walk_no_connection(monitored: Server) -> None:
    """``/varz``'s message totals are the server's `Traffic`, kept as each connection counts: a
    request walks none of the connections (it walked them all, ~0.7 µs each)."""
    monitored.clients = _CountingClients(monitored.clients)
    writers: list[asyncio.StreamWriter] = []
    walks = []
    for size in (10, 100):
        writers += await _connections(monitored.port, size - len(writers), 2)
        _CountingClients.walks = 0
        varz = await _get(monitored, "/varz", {})
        assert varz["connections"] == size
        walks.append(_CountingClients.walks)
    assert walks == [0, 0]
    for writer in writers:
        writer.close()


async def _talk(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frames: bytes) -> None:
    writer.write(frames + b"PING\r\n")
    await reader.readuntil(b"PONG\r\n")


async def test_varz_totals_count_every_message_of_open_and_closed_connections(monitored: Server) -> None:
    """The totals against what was sent: connection i subscribes to ``t.i`` and ``all``, publishes to
    ``t.<i+1>`` one at a time (each its own read: a lone publish's delivery) and as runs (a read's
    publishes routed as one run), and to ``all``; half of them close, the rest publish again."""
    n = 8
    conns = []
    for i in range(n):
        reader, writer = await asyncio.open_connection("127.0.0.1", monitored.port)
        await reader.readuntil(b"\r\n")
        await _talk(reader, writer, CONNECT + f"SUB t.{i} 1\r\nSUB all 2\r\n".encode())
        conns.append((reader, writer))
    sent_msgs = sent_bytes = delivered = delivered_bytes = 0

    async def publish(i: int, subject: str, payload: bytes, one_by_one: bool, receivers: int) -> None:
        nonlocal sent_msgs, sent_bytes, delivered, delivered_bytes
        frame = f"PUB {subject} {len(payload)}\r\n".encode() + payload + b"\r\n"
        if one_by_one:
            await _talk(*conns[i], frame)
        else:
            await _talk(*conns[i], frame * 5)
        count = 1 if one_by_one else 5
        sent_msgs, sent_bytes = sent_msgs + count, sent_bytes + count * len(payload)
        delivered, delivered_bytes = (
            delivered + count * receivers,
            delivered_bytes + count * receivers * len(payload),
        )

    async def round_of(alive: list[int]) -> None:
        for i in alive:
            target = (i + 1) % n
            await publish(i, f"t.{target}", b"x" * (i + 1), True, 1 if target in alive else 0)
            await publish(i, f"t.{target}", b"yy", False, 1 if target in alive else 0)
            await publish(i, "all", b"z" * 3, i % 2 == 0, len(alive))

    await round_of(list(range(n)))
    closed = len(monitored.closed_clients)
    for i in range(0, n, 2):
        conns[i][1].close()
    deadline = asyncio.get_running_loop().time() + 10
    while len(monitored.closed_clients) < closed + n // 2:  # (else a publish may still reach one)
        assert asyncio.get_running_loop().time() < deadline, len(monitored.closed_clients)
        await asyncio.sleep(0.01)
    alive = list(range(1, n, 2))
    await round_of(alive)
    for i in alive:  # every delivery written and read back before the totals are read
        await _talk(*conns[i], b"")
    totals = monitored.message_totals()
    assert totals == (sent_msgs, sent_bytes, delivered, delivered_bytes)
    varz = await _get(monitored, "/varz", {})
    assert (varz["in_msgs"], varz["in_bytes"], varz["out_msgs"], varz["out_bytes"]) == totals
    for i in alive:
        conns[i][1].close()


def test_varz_reads_its_memory_from_one_held_descriptor() -> None:
    """``/proc/self/statm`` is opened once (then read with pread), and again only in a forked child."""
    first = monitor._rss_bytes()
    fd = monitor._STATM[0]
    assert first > 0 and monitor._rss_bytes() > 0
    assert monitor._STATM[0] == fd


def test_the_date_header_is_the_current_seconds() -> None:
    before = time.strftime("Date: %a, %d %b %Y %H:%M:%S GMT\r\n", time.gmtime())
    stamp = monitor._http_date()
    after = time.strftime("Date: %a, %d %b %Y %H:%M:%S GMT\r\n", time.gmtime())
    assert stamp in (before, after)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (0.9, "0s"), (62, "1m2s"), (10_862, "3h1m2s"), (172_805, "2d0h0m5s"), (34_560_003, "1y35d0h0m3s")],
)
def test_uptime_strings_are_nats_servers_and_the_cache_is_bounded(
    seconds: float, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nats-server's ``myUptime``; the strings of whole seconds are kept, at most `_UPTIMES_MAX`."""
    monkeypatch.setattr(monitor, "_UPTIMES_MAX", 3)
    monkeypatch.setattr(monitor, "_UPTIMES", {})
    assert monitor.uptime_string(seconds) == monitor.uptime_string(seconds) == text
    for extra in range(5):
        monitor.uptime_string(1000 + extra)
    assert len(monitor._UPTIMES) <= 3


async def test_jsz_makes_no_stream_state_for_its_totals(monitored: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/jsz``'s ``messages`` and ``bytes``, and the account's usage (``memory``, ``storage``), are the
    stores' `totals()`, not a ``fast_state()`` a stream."""
    from pyjetstream.server.jetstream.store.indexed import IndexedStore

    nc = await nats.connect(monitored.client_url)
    for i in range(3):
        config = {"name": f"T{i}", "subjects": [f"t{i}.>"]}
        await nc.request(f"$JS.API.STREAM.CREATE.T{i}", json.dumps(config).encode())
        for _ in range(i + 1):
            await nc.request(f"t{i}.x", b"hello")
    with count_calls(monkeypatch, IndexedStore, "fast_state") as states:
        body = await _get(monitored, "/jsz", {})
    assert states["fast_state"] == 0
    assert (body["streams"], body["messages"]) == (3, 6) and body["bytes"] > 0 and body["storage"] > 0
    await nc.close()


def test_a_hex_digest_is_no_float() -> None:
    """A digit then ``e`` inside a string (``/varz``'s ``config_digest``, in ~9 of 10 servers) keeps
    msgspec's encoding (it sent every such body the json way); a float's exponent does not."""
    import msgspec

    digest = {"config_digest": "sha256:a3e4b0e98a7e1e2e", "server_id": "N3E4", "n": 12}
    assert not monitor._maybe_not_repr(msgspec.json.encode(digest))
    for body in ({"a": 1e16}, [2.5e-07], 1e16, {"a": [0, -3e-09]}, {"s": "x", "f": 1.5e300}):
        assert monitor._maybe_not_repr(msgspec.json.encode(body)), body
