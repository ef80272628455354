"""A stream sourcing many streams (issue 24, bench_scale's ``--dim nsources``): naming each source's origin
consumer counts the stream's source names once per config, not once per source (``sourcing._sourced_twice``:
the whole list was walked for each feed's name — at its start, its create and its delete — so a stream
sourcing n streams cost O(n²), ~3 million steps at 1,000). Counted on an embedded server in this process
(``sourcing.names_counted``); the names are the same with ``sourcing.COUNT_ONCE`` off (duplicate origins
with different filters included)."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import embedded

from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.jetstream import sourcing
from pyjetstream.server.jetstream.sourcing import source_consumer_name

TIMEOUT = 30.0  # (a loaded machine: nats-py's default request timeout is 0.5 s)


async def _names_walked(n: int) -> int:
    """Source names walked while a stream sourcing ``n`` streams is created and catches up."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            for i in range(n):
                cfg = {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "memory"}
                await nc.request(f"$JS.API.STREAM.CREATE.O{i}", json.dumps(cfg).encode(), timeout=TIMEOUT)
                await nc.request(f"o.{i}.x", b"1", timeout=TIMEOUT)
            before = sourcing.names_counted
            agg = {"name": "AGG", "sources": [{"name": f"O{i}"} for i in range(n)], "storage": "memory"}
            await nc.request("$JS.API.STREAM.CREATE.AGG", json.dumps(agg).encode(), timeout=TIMEOUT)
            for _ in range(300):
                info = json.loads((await nc.request("$JS.API.STREAM.INFO.AGG", b"", timeout=TIMEOUT)).data)
                if info["state"]["messages"] == n:
                    break
                await nc.flush()
            assert info["state"]["messages"] == n
            return sourcing.names_counted - before
        finally:
            await nc.close()


async def test_source_names_are_counted_once_per_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (20, 200):
        walked = await _names_walked(n)
        assert walked <= 2 * n, (n, walked)  # (the list walked once or twice, not once per source)
    monkeypatch.setattr(sourcing, "COUNT_ONCE", False)
    assert await _names_walked(20) >= 20 * 20  # (off: the whole list for each source's name)


def test_the_names_are_the_same_with_the_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    account = SimpleNamespace(name="$G")
    stream: Any = SimpleNamespace(name="AGG", engine=SimpleNamespace(server=account, domain=""))
    sources = [StreamSource(name=f"O{i % 7}", filter_subject=f"o.{i}.>") for i in range(30)]
    sources += [StreamSource(name=f"P{i}") for i in range(5)]
    on = [source_consumer_name(stream, s, sources) for s in sources]
    monkeypatch.setattr(sourcing, "COUNT_ONCE", False)
    off = [source_consumer_name(stream, s, sources) for s in sources]
    assert on == off and len(set(on)) == 30 + 1  # (a shared origin's sources a name each; the others one)
