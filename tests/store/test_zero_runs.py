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
import tempfile
from array import array
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded, pub_frame, publish_in_one_write
from tests.support.steps import counting

from pyjetstream.server.jetstream.store import _index
from pyjetstream.server.jetstream.store.base import StoreConfig
from pyjetstream.server.jetstream.store.filestore import FileStore, FileStoreConfig

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


@pytest.mark.parametrize("seed", range(4))
def test_find_value_answers_the_same_with_the_dead_runs_stepped_over(
    monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """`_index.SKIP_DEAD_RUNS` on = off = a walk, `find_value` and `rfind_value`, for values that
    are there, that are not, and 0 (a dead slot, which a recovery looks for: never stepped over)."""
    rng = random.Random(seed)
    for a in _arrays(rng):
        n = len(a)
        for _ in range(12):
            lo = rng.randrange(n + 1)
            hi = rng.randrange(lo, n + 1)
            present = [v for v in a[lo:hi] if v][:1]
            for value in {0, 7, *present, *[v for v in a[lo:hi] if v][-1:]}:
                want = next((i for i in range(lo, hi) if a[i] == value), -1)
                last = next((i for i in range(hi - 1, lo - 1, -1) if a[i] == value), -1)
                for on in (True, False):
                    monkeypatch.setattr(_index, "SKIP_DEAD_RUNS", on)
                    assert _index.find_value(a, value, lo, hi) == want, (on, n, lo, hi, value)
                    assert _index.rfind_value(a, value, lo, hi) == last, (on, n, lo, hi, value)
            a.append(0)
            a.pop()


def _next_after_gap(gap: int, block_size: int) -> tuple[int, int, int]:
    """A file store of 1,000 ``g.edge``, ``gap`` ``g.mid`` purged, 1,000 ``g.edge`` in blocks of
    ``block_size``: the next ``g.edge`` from the gap's start (a ``next_by_subj`` get, twice), the
    slots `find_value` handed its searches for the second, and the store's pages."""
    with tempfile.TemporaryDirectory() as tmp:
        store = FileStore(FileStoreConfig(tmp, block_size=block_size), StoreConfig(name="G"))
        try:
            for subject, n in (("g.edge", 1000), ("g.mid", gap), ("g.edge", 1000)):
                for _ in range(n):
                    store.store_msg(subject, b"", b"x" * 16)
            assert store.purge_ex("g.mid") == gap
            first = store.load_next_msg("g.edge", 1001)[1]
            before = _index.searched
            assert store.load_next_msg("g.edge", 1001)[1] == first
            return first, _index.searched - before, len(store._index.pages)
        finally:
            store.stop()


def test_a_get_after_a_gap_does_not_search_the_dead_run_that_starts_a_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The next ``g.edge`` after 1M purged ``g.mid`` lies in a block that starts with ~33,000 of
    their dead slots (the gap's tail): each get searched them (``--dim gaps``, ~40 µs a get at 1M,
    3 µs at 100k, where the gap ended inside the first block). Now the search starts after them;
    with the switch off it goes over them. (Small blocks here: the gap's tail starts a block at
    both sizes.)"""
    block = 64 * 1024  # (~1,600 slots of these messages a block: the gap's tail starts the last one)
    small = _next_after_gap(20_000, block)
    large = _next_after_gap(200_000, block)
    assert small[0] == 21_001 and large[0] == 201_001, (small, large)
    assert small[2] > 2 and large[2] > 2  # (the gap spans blocks: the case counted)
    # Only the live slots after the run, in the block that holds them (where that block's edge
    # falls depends on the gap): none of the dead ones.
    assert max(small[1], large[1]) <= 1_000, (small, large)
    monkeypatch.setattr(_index, "SKIP_DEAD_RUNS", False)
    off = _next_after_gap(200_000, block)
    assert off[0] == 201_001 and off[1] > large[1], (off, large)
