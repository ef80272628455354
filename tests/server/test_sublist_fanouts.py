"""``/subsz``'s fanout figures are kept as the match cache changes, not found by walking it.

nats-server's ``Sublist.Stats`` walks its cache (at most 1,024 entries) for the average and
largest fanout at every ``/subsz``; ours holds up to 4,096, so the sublist keeps the sum, the largest
fanout and how many cached results have it as results are cached, invalidated, evicted and cleared
(`Sublist.fanouts`), walking the cache only when the last result of the largest fanout has left.
Counted here: a ``/subsz`` on the embedded server visits no cache entry at two sizes of the cache
(a dict that counts what is read of it), and the kept figures equal the walked ones
(`Sublist.walk_fanouts`, what switch ``sublist.RUNNING_FANOUTS`` off reports) after any churn.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from pyjetstream import Server
from pyjetstream.server import sublist
from pyjetstream.server.sublist import CACHE_MAX, CACHE_SCAN_MAX, Sublist, merged_stats
from pyjetstream.server.subscription import Subscription

CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"name":"fanouts"}\r\n'


class _CountingCache(dict[str, Any]):
    """A match cache that counts the entries read by walking it (its lookups stay dict's own)."""

    read = 0

    def values(self) -> Any:
        _CountingCache.read += len(self)
        return super().values()

    def items(self) -> Any:
        _CountingCache.read += len(self)
        return super().items()

    def keys(self) -> Any:
        _CountingCache.read += len(self)
        return super().keys()

    def __iter__(self) -> Iterator[str]:
        _CountingCache.read += len(self)
        return super().__iter__()


def _agree(sl: Sublist) -> None:
    assert sl.fanouts() == sl.walk_fanouts()


def _churn(rng: random.Random, steps: int) -> Sublist:
    """Random subscribes, unsubscribes and matches over a small subject space (literal, ``*``,
    ``>``, leading wildcards, queue groups), the kept fanouts checked after every step."""
    sl = Sublist()
    live: list[Subscription] = []
    forms = ["a.{0}", "a.*", "a.{0}.>", "*.{0}", ">", "b.{0}.c", "b.*.c", "a.{0}"]
    for n in range(steps):
        roll = rng.random()
        if roll < 0.3 or not live:
            subject = rng.choice(forms).format(rng.randrange(6))
            queue = rng.choice(["", "", "", "q1", "q2"])
            sub = Subscription(subject, str(n), queue=queue)
            sl.insert(sub)
            live.append(sub)
        elif roll < 0.5:
            assert sl.remove(live.pop(rng.randrange(len(live))))
        else:
            sl.match(rng.choice(["a.{0}", "a.{0}.x", "b.{0}.c", "c.{0}", "a.{0}.x.y"]).format(rng.randrange(6)))
        _agree(sl)
    return sl


@pytest.mark.parametrize("seed", range(6))
def test_kept_fanouts_are_the_walked_ones_through_churn(seed: int) -> None:
    _churn(random.Random(seed), 1500)


def test_kept_fanouts_through_eviction_and_clearing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache evicted (more subjects than ``CACHE_MAX``) and cleared (a leading-wildcard
    subscription with more than ``CACHE_SCAN_MAX`` cached), the statistics the same either way."""
    sl = Sublist()
    subs = [Subscription(f"e.{i % 50}", f"p{i}") for i in range(120)]
    subs += [Subscription(f"e.{i % 7}", f"q{i}", queue=f"g{i % 3}") for i in range(30)]
    for sub in subs:
        sl.insert(sub)
    for i in range(CACHE_MAX + 1500):  # evicted once
        sl.match(f"e.{i % 60}" if i % 5 == 0 else f"e.x{i}")
        if i % 997 == 0:
            _agree(sl)
    assert "e.x1" not in sl.cache  # (evicted)
    _agree(sl)
    assert len(sl.cache) > CACHE_SCAN_MAX
    wild = Subscription("*.3", "w")
    sl.insert(wild)  # clears the cache
    assert not sl.cache
    _agree(sl)
    for i in range(100):
        sl.match(f"e.{i}")
    sl.remove(wild)
    _agree(sl)
    on = merged_stats([sl])
    monkeypatch.setattr(sublist, "RUNNING_FANOUTS", False)
    assert merged_stats([sl]) == on


def test_a_walk_only_when_the_largest_fanout_leaves() -> None:
    sl = Sublist()
    wide = [Subscription("w.x", f"w{i}") for i in range(5)]
    for sub in [*wide, Subscription("n.x", "n")]:
        sl.insert(sub)
    sl.match("w.x")
    sl.match("n.x")
    for _ in range(3):
        assert sl.fanouts() == (6, 5)
    sl.match("other")
    assert sl.fanout_walks == 0
    sl.remove(wide[0])  # invalidates w.x, the only result of fanout 5
    assert sl.fanouts() == (1, 1) and sl.fanout_walks == 1
    sl.match("w.x")
    assert sl.fanouts() == (5, 4) and sl.fanout_walks == 1


@pytest.fixture
async def monitored(tmp_path: Path) -> AsyncIterator[Server]:
    async with Server(port=-1, http_port=-1, jetstream=True, store_dir=str(tmp_path)) as server:
        yield server


async def _subscribe_and_publish(port: int, first: int, last: int) -> asyncio.StreamWriter:
    """A connection subscribed to ``f.<first..last-1>`` (two on each even one), each published to."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    await reader.readuntil(b"\r\n")  # INFO
    frames = [f"SUB f.{i} {i}\r\n".encode() for i in range(first, last)]
    frames += [f"SUB f.{i} x{i}\r\n".encode() for i in range(first, last, 2)]
    frames += [f"PUB f.{i} 2\r\nhi\r\n".encode() for i in range(first, last)]
    writer.write(CONNECT + b"".join(frames) + b"PING\r\n")
    await reader.readuntil(b"PONG\r\n")
    return writer


async def test_subsz_visits_no_cache_entry(monitored: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 100 and 2,000 cached subjects a ``/subsz`` reads no cache entry (the walk read them
    all); switch off, the same body."""
    subsz = monitored.monitor_handlers["/subsz"]
    writers = []
    visited = []
    for size in (100, 2000):
        writers.append(await _subscribe_and_publish(monitored.port, size // 20 if writers else 0, size))
        account = monitored.accounts["$G"]
        cache = account.sublist.cache = _CountingCache(account.sublist.cache)
        assert len(cache) >= size
        _CountingCache.read = 0
        kept = subsz({})
        visited.append(_CountingCache.read)
        assert kept["max_fanout"] == 2 and kept["num_cache"] == len(cache)
        monkeypatch.setattr(sublist, "RUNNING_FANOUTS", False)
        walked = subsz({})
        monkeypatch.setattr(sublist, "RUNNING_FANOUTS", True)
        assert _CountingCache.read >= len(cache)  # (the counter sees a walk)
        assert {**walked, "now": ""} == {**kept, "now": ""}
        account.sublist.cache = dict(cache)
    assert visited == [0, 0]
    assert monitored.accounts["$G"].sublist.fanout_walks == 0
    for writer in writers:
        writer.close()
