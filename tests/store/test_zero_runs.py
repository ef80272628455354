"""Issue 24, a consumer across an interior gap (bench ``--dim gaps``: 10,000 / 100,000 / 1,000,000
deleted sequences between two runs of 1,000 messages): stepping over a run of dead slots costs the
same whatever the run's length, counted, not timed, on an embedded server.

A file store's page is a block (~160,000 slots of small messages), and a filtered purge leaves the
dead slots of its messages in the block that holds the first live ones. A consumer's read-ahead
finds the next live slot after them with `_index.next_nonzero`, which stripped the zero bytes of
ever larger chunks (``bytes.lstrip(b"\\0")``: each byte tested against the argument, ~14 ns a slot):
2.3 ms for that block's dead run at 1,000,000, once for every consumer crossing it, ~1.2 µs of each
of its 2,000 deliveries. Now (`_index.ZERO_CHUNKS`) the chunks are compared with zeros (``memcmp``)
and only the chunk that holds a live slot is halved down to 64 slots, whose bytes are stripped:
``_index.stripped`` (the bytes stripped) is the same for a dead run of 2,000 and of 60,000 slots
(a few 64-slot pieces a crossing; off: the whole run). nats-server's ``firstMatching`` steps over a
block's deleted sequences one by one (``dmap.Exists``); the pages a gap spans whole are skipped by
their counts on both servers (`SeqQueries._pages_up`, nats-server's blocks).
"""

from __future__ import annotations

import random
from array import array
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded, pub_frame, publish_in_one_write
from tests.support.steps import counting

from pyjetstream.server.jetstream.store import _index

STORE_DIR = "/jetstream/store/"


async def _across(gap: int) -> tuple[int, int, list[int]]:
    """A file stream of 1,000 messages, ``gap`` more purged, 1,000 more; a push consumer from the
    start reads all 2,000: the bytes stripped, the store's trace events and the sequences it got."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("G", ["g.>"], storage="file")
            edge = [pub_frame("g.edge", b"x" * 16)] * 1000
            await publish_in_one_write(server, edge)
            await publish_in_one_write(server, [pub_frame("g.mid", b"x" * 16)] * gap)
            await publish_in_one_write(server, edge)
            purged = await nc.api("$JS.API.STREAM.PURGE.G", {"filter": "g.mid"})
            assert purged.get("purged") == gap, purged
            store: Any = server.jetstream.streams["G"].store
            assert len(store._index.pages) == 1  # (the dead run inside one page, the case counted)
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox)
            before = _index.stripped
            with counting(where=lambda frame: STORE_DIR in frame.f_code.co_filename) as steps:
                await nc.add_consumer("G", "across", deliver_subject=inbox, ack_policy="none")
                got = await sub.collect(2000, timeout=60)
            return _index.stripped - before, steps.count, [m.stream_seq for m in got]
        finally:
            await nc.close()


async def test_a_consumer_crosses_a_dead_run_in_the_same_steps_whatever_its_length() -> None:
    small_bytes, small_steps, small_seqs = await _across(2_000)
    large_bytes, large_steps, large_seqs = await _across(60_000)
    assert small_seqs == [*range(1, 1001), *range(3001, 4001)]
    assert large_seqs == [*range(1, 1001), *range(61_001, 62_001)]
    # (a few 64-slot pieces a crossing: where the halving ends depends on where the live slot lies)
    assert max(small_bytes, large_bytes) <= 4 * 4 * _index._STRIP_MAX, (small_bytes, large_bytes)
    # (the chunks compared: 256, 1,024, 4,096 slots, then 16,384 each — a few more for the longer run)
    assert large_steps < small_steps + 100, (small_steps, large_steps)  # (12,955 / 12,997)


async def test_off_the_dead_run_is_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_index, "ZERO_CHUNKS", False)
    small_bytes, _, _ = await _across(2_000)
    large_bytes, _, seqs = await _across(60_000)
    assert seqs == [*range(1, 1001), *range(61_001, 62_001)]
    assert small_bytes >= 4 * 2_000 and large_bytes >= 4 * 60_000, (small_bytes, large_bytes)


def _arrays(rng: random.Random) -> list[array[int]]:
    out = []
    for n in (0, 1, 7, 9, 64, 65, 300, 5_000, 70_000, 200_000):
        for live in (0, 1, 2, 5, 40):
            a = array("I", bytes(4 * n))
            for _ in range(live if n else 0):
                a[rng.randrange(n)] = rng.choice([1, 255, 256, 1 << 24, 2**32 - 1])
            out.append(a)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_scans_answer_as_the_stripped_ones_and_as_a_walk(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    for a in _arrays(rng):
        n = len(a)
        live = [i for i, v in enumerate(a) if v]
        for _ in range(12):
            lo = rng.randrange(n + 1)
            hi = rng.randrange(lo, n + 1)
            inside = [i for i in live if lo <= i < hi]
            want = (inside[0] if inside else -1, inside[-1] if inside else -1)
            for on in (True, False):
                monkeypatch.setattr(_index, "ZERO_CHUNKS", on)
                got = (_index.next_nonzero(a, lo, hi), _index.prev_nonzero(a, lo, hi))
                assert got == want, (on, n, lo, hi, got, want)
            a.append(0)  # (no buffer left exported by a scan)
            a.pop()
