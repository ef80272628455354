"""Complexity guards on the embedded server (issue 24, dimension 1): what a KV watch, ``keys()``,
a wildcard-filtered push consumer and a watched bucket's updates cost the stream's index, counted
in steps (``SeqIndex.steps``: slots scanned and subjects visited; ``SubjectTree.steps``: tree
entries visited) at two sizes of state — ten times the keys or subjects — never in time; and the
subject comparisons of a stream create's overlap check beside 100 and 1,000 streams.

Embedded only and in-process (the counters are the server's own); the same operations are
behaviour-tested against both targets elsewhere (tests/client_js KV, tests/jetstream consumers).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import nats
import pytest
from nats.js.api import AckPolicy, ConsumerConfig
from tests.jetstream.scale_steps import count_calls

from pyjetstream.server.server import Server

SIZES = (1_000, 10_000)


@asynccontextmanager
async def embedded() -> AsyncIterator[tuple[Server, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1")
        await server.start()
        nc = await nats.connect(server.client_url)
        try:
            yield server, nc
        finally:
            await nc.close()
            await server.shutdown()


def index_steps(server: Server, stream: str) -> int:
    """Slots scanned, subjects and pages visited by the stream's index."""
    index = server.jetstream_engines()[0].streams[stream].store._index
    return int(index.steps + index.subjects.tree.steps + index.visits)


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float = 30.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.02)


async def fill(nc: Any, js: Any, stream: str, subjects: list[str]) -> None:
    for i, subject in enumerate(subjects):
        await nc.publish(subject, b"v")
        if i % 2_000 == 1_999:
            await nc.flush()
    await nc.flush()

    async def stored() -> bool:
        return bool((await js.stream_info(stream)).state.last_seq >= len(subjects))

    await wait_for(stored)


async def kv_read_steps(keys: int) -> tuple[float, float]:
    """Steps per key of ``keys()`` and of a ``watchall()`` read to its end, over ``keys`` keys."""
    async with embedded() as (server, nc):
        js = nc.jetstream()
        await js.create_key_value(bucket="B", history=1)
        kv = await js.key_value("B")
        await fill(nc, js, "KV_B", [f"$KV.B.k{i}" for i in range(keys)])
        before = index_steps(server, "KV_B")
        assert len(await kv.keys()) == keys
        keys_steps = (index_steps(server, "KV_B") - before) / keys
        before = index_steps(server, "KV_B")
        watcher = await kv.watchall()
        seen = 0
        async for entry in watcher:
            if entry is None:
                break
            seen += 1
        await watcher.stop()
        assert seen == keys
        return keys_steps, (index_steps(server, "KV_B") - before) / keys


async def test_kv_keys_and_watch_steps_do_not_grow_with_keys() -> None:
    (keys_small, watch_small), (keys_large, watch_large) = [await kv_read_steps(n) for n in SIZES]
    # O(keys) per request (one visit per key: the filter's subjects, the pending count), nothing
    # per key beyond that.
    assert keys_large <= 1.5 * keys_small + 1 and keys_large < 6, (keys_small, keys_large)
    assert watch_large <= 1.5 * watch_small + 1 and watch_large < 6, (watch_small, watch_large)


async def push_steps(subjects: int, msgs: int = 20_000) -> float:
    """Steps per message of a push consumer filtered to half of ``subjects`` subjects."""
    async with embedded() as (server, nc):
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await fill(nc, js, "S", [f"s.{'ab'[i % 2]}.{i % subjects}" for i in range(msgs)])
        got = 0
        done = asyncio.Event()

        async def on_msg(msg: Any) -> None:
            nonlocal got
            got += 1
            if got == msgs // 2:
                done.set()

        inbox = nc.new_inbox()
        await nc.subscribe(inbox, cb=on_msg)
        before = index_steps(server, "S")
        cfg = ConsumerConfig(deliver_subject=inbox, ack_policy=AckPolicy.NONE, filter_subject="s.a.>")
        await js.add_consumer("S", cfg)
        await asyncio.wait_for(done.wait(), 60)
        return (index_steps(server, "S") - before) / got


async def test_wildcard_push_consumer_steps_do_not_grow_with_subjects() -> None:
    small, large = [await push_steps(n) for n in SIZES]
    assert large <= 1.5 * small and large < 8, (small, large)


async def updates_steps(keys: int, puts: int = 1_000) -> float:
    """Steps per put of updates to existing keys (history 1: each removes the key's older
    message) while a watcher receives them: num pending is kept, not recounted (each removal
    used to make every delivery pass recount it over all the keys)."""
    async with embedded() as (server, nc):
        js = nc.jetstream()
        await js.create_key_value(bucket="B", history=1)
        kv = await js.key_value("B")
        await fill(nc, js, "KV_B", [f"$KV.B.k{i}" for i in range(keys)])
        watcher = await kv.watchall()
        async for entry in watcher:
            if entry is None:
                break
        before = index_steps(server, "KV_B")
        for i in range(puts):
            await nc.publish(f"$KV.B.k{i}", b"w")
        await nc.flush()
        seen = 0
        async for _entry in watcher:
            seen += 1
            if seen == puts:
                break
        used = index_steps(server, "KV_B") - before
        consumer = next(iter(server.jetstream_engines()[0].streams["KV_B"].consumers.values()))
        assert consumer.num_pending() == 0
        await watcher.stop()
        return used / puts


async def test_watched_bucket_updates_do_not_recount_pending() -> None:
    small, large = [await updates_steps(n) for n in SIZES]
    assert large <= 1.5 * small + 1 and large < 8, (small, large)


async def request_steps(subjects: int) -> tuple[float, float, float]:
    """Steps per request of STREAM.INFO with a wildcard ``subjects_filter`` and of a direct get's
    ``multi_last``, each matching 10 subjects, and per message of a pull consumer and a
    multi-filter push consumer (a tenth of the stream each), over ``subjects`` subjects."""
    async with embedded() as (server, nc):
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["k.>"], allow_direct=True)
        groups = subjects // 10
        await fill(nc, js, "S", [f"k.{i % 10}.{(i // 10) % groups}" for i in range(20_000)])
        before = index_steps(server, "S")
        for j in range(50):
            info = await js.stream_info("S", subjects_filter=f"k.*.{j % groups}")
            assert info.state.subjects is not None and len(info.state.subjects) == 10
        info_steps = (index_steps(server, "S") - before) / 50
        before = index_steps(server, "S")
        for j in range(50):
            inbox = nc.new_inbox()
            sub = await nc.subscribe(inbox)
            body = json.dumps({"multi_last": [f"k.*.{j % groups}"]}).encode()
            await nc.publish("$JS.API.DIRECT.GET.S", body, reply=inbox)
            for _ in range(11):  # ten messages and the end-of-batch status
                await sub.next_msg(10)
            await sub.unsubscribe()
        multi_steps = (index_steps(server, "S") - before) / 50
        before = index_steps(server, "S")
        psub = await js.pull_subscribe("k.3.*", durable="P", config=ConsumerConfig(ack_policy=AckPolicy.NONE))
        got = 0
        while got < 2_000:
            got += len(await psub.fetch(500, timeout=10))
        pull_steps = (index_steps(server, "S") - before) / got
        return info_steps, multi_steps, pull_steps


async def test_requests_and_pull_steps_do_not_grow_with_subjects() -> None:
    small, large = [await request_steps(n) for n in SIZES]
    for what, a, b in zip(("info", "multi_last", "pull"), small, large, strict=True):
        assert b <= 1.5 * a + 2, (what, small, large)


async def overlap_tests(streams: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Subject comparisons (``subjects_overlap``) of one stream create beside ``streams`` streams:
    with a plain subject, and with a wildcard one (nats-server's loop over every stream)."""
    from pyjetstream.server.jetstream import api_stream

    async with embedded() as (_server, nc):
        for i in range(streams):
            body = json.dumps({"name": f"S{i}", "subjects": [f"s.{i}"], "storage": "memory"}).encode()
            assert b'"error"' not in (await nc.request(f"$JS.API.STREAM.CREATE.S{i}", body, timeout=30)).data
        counts = []
        with count_calls(monkeypatch, api_stream, "subjects_overlap") as calls:
            for name, subject in (("P", "p.1"), ("W", "w.*")):
                calls.clear()
                body = json.dumps({"name": name, "subjects": [subject], "storage": "memory"}).encode()
                assert b'"error"' not in (await nc.request(f"$JS.API.STREAM.CREATE.{name}", body, timeout=30)).data
                counts.append(calls["subjects_overlap"])
        monkeypatch.undo()
        return counts[0], counts[1]


async def test_stream_create_with_plain_subjects_does_not_compare_every_stream(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream create's overlap check compares no subject with the others' beside 100 or 1,000
    streams, plain or wildcard (`stream_index.StreamIndex`: none can collide). Without the index
    a plain subject is matched in the sublist (no comparison with the others), and only a
    wildcard subject is compared with every stream."""
    from pyjetstream.server.jetstream import stream_index

    assert await overlap_tests(100, monkeypatch) == await overlap_tests(1000, monkeypatch) == (0, 0)
    monkeypatch.setattr(stream_index, "INDEXED", False)
    plain_small, wild_small = await overlap_tests(100, monkeypatch)
    monkeypatch.setattr(stream_index, "INDEXED", False)  # (overlap_tests undoes the patches)
    plain_large, wild_large = await overlap_tests(1000, monkeypatch)
    assert plain_small == plain_large == 0
    assert (wild_small, wild_large) == (100 + 1, 1000 + 1)  # (every stream, P too)


async def _pages(nc: Any, subject: str, key: str, name: Callable[[Any], str]) -> list[str]:
    """Every page of a listing, each asked from where the last one ended."""
    got: list[str] = []
    while True:
        page = json.loads((await nc.request(subject, json.dumps({"offset": len(got)}).encode(), timeout=30)).data)
        got += [name(item) for item in page[key] or []]
        if len(got) >= page["total"]:
            return got


async def listing_sorts(streams: int) -> tuple[int, list[str], list[str]]:
    """Sorts of the account's streams while every ``STREAM.NAMES`` and ``STREAM.LIST`` page of
    ``streams`` streams is asked (twice over), and the names the pages gave."""
    async with embedded() as (server, nc):
        for i in range(streams):
            body = json.dumps({"name": f"S{i}", "subjects": [f"s.{i}"], "storage": "memory"}).encode()
            assert b'"error"' not in (await nc.request(f"$JS.API.STREAM.CREATE.S{i}", body, timeout=30)).data
        engine = server.jetstream
        before = engine.streams_sorted
        names: list[str] = []
        listed: list[str] = []
        for _ in range(2):
            names = await _pages(nc, "$JS.API.STREAM.NAMES", "streams", lambda n: n)
            listed = await _pages(nc, "$JS.API.STREAM.LIST", "streams", lambda info: info["config"]["name"])
        return engine.streams_sorted - before, names, listed


async def test_stream_listing_sorts_once_per_change() -> None:
    """A ``STREAM.NAMES`` / ``LIST`` page costs its own size: the streams are sorted once per
    change of streams, not per page (the streams row ``STREAM.LIST paging`` grew 2.26x from 1,000
    to 10,000 streams, nats-server 1.49x: each page sorted them all)."""
    for streams in (300, 3000):  # (pages of 256 and 1,024: 2 and 12 LIST pages)
        sorts, names, listed = await listing_sorts(streams)
        assert sorts == 1, (streams, sorts)
        assert names == listed == sorted(f"S{i}" for i in range(streams))
