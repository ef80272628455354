"""Issue 24: a consumer created at a start sequence or time in the middle of a stream learns its
pending count without counting the slots of the start's page (steps counted, not timed; embedded
server).

A file store's page is a block (~130,000 slots at 1M small messages), and the count of the live
messages from the start on (`SeqQueries._live_from`, the consumer's ``num_pending``) counted the
slots on the shorter side of the start in that page — a C count, but one that grows with the
block and loads the page if it was evicted: ~0.3 ms of a ``by_start_time`` create at 1M
messages (bench ``--dim deletes``). nats-server's ``NumPending`` answers ``LastSeq - sseq + 1``
when the stream has no deleted sequence; here a page with no dead slot is counted by its counts
(`seqquery.FULL_PAGES`), and the stream without deletes as nats-server does. The switch off
counts the slots: both give the same pending counts, with deletes in the start's page and without.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded

from pyjetstream.server.jetstream.store import MemoryStore, StoreConfig, seqquery


async def _publish(nc: RawClient, first: int, last: int) -> None:
    inbox = nc.new_inbox()
    sub = nc.subscribe(inbox + ".*")
    for i in range(first, last):
        nc.publish(f"d.{i % 100}", b"x" * 16, f"{inbox}.{i}")
        if (i - first) % 2000 == 1999:
            await sub.collect(2000, timeout=60)
    rest = (last - first) % 2000
    if rest:
        await sub.collect(rest, timeout=60)
    sub.unsubscribe()


def _rfc3339(ns: int) -> str:
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 1_000_000_000)) + f".{ns % 1_000_000_000:09d}Z"
    )


async def _start_steps(n: int, deletes: int = 0) -> tuple[int, list[int]]:
    """A file stream of ``n`` messages (``deletes`` of them removed in its second half): the
    index's slots scanned by 4 consumer creates starting at its middle, by time and by sequence,
    and their pending counts."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("D", ["d.>"], storage="file")
            await _publish(nc, 0, n // 2)
            await asyncio.sleep(0.002)
            mid = _rfc3339(time.time_ns())
            await asyncio.sleep(0.002)
            await _publish(nc, n // 2, n)
            for seq in random.Random(n).sample(range(n // 2 + 2, n), deletes):
                ok = await nc.api("$JS.API.STREAM.MSG.DELETE.D", {"seq": seq, "no_erase": True})
                assert ok.get("success"), ok
            index: Any = server.jetstream.streams["D"].store._index
            before = index.steps
            pending: list[int] = []
            starts: list[dict[str, Any]] = [
                {"deliver_policy": "by_start_time", "opt_start_time": mid},
                {"deliver_policy": "by_start_sequence", "opt_start_seq": n // 2 + 1},
                {"deliver_policy": "by_start_sequence", "opt_start_seq": n // 2 + n // 4},
                {"deliver_policy": "by_start_sequence", "opt_start_seq": n - 1},
            ]
            for i, start in enumerate(starts):
                info = await nc.add_consumer("D", f"c{i}", **start)
                assert "error" not in info, info
                pending.append(info["num_pending"])
            return index.steps - before, pending
        finally:
            await nc.close()


async def test_a_start_in_the_middle_counts_no_slots() -> None:
    small = await _start_steps(4_000)
    large = await _start_steps(40_000)
    assert small[0] == large[0] == 0, (small, large)
    assert small[1] == [2_000, 2_000, 1_001, 2] and large[1] == [20_000, 20_000, 10_001, 2]


async def test_pending_counts_on_equal_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """With deleted sequences after the start (the start's page counted by its slots) and
    without: the same pending counts with the switch on and off."""
    for deletes in (0, 300):
        on = await _start_steps(6_000, deletes)
        with monkeypatch.context() as m:
            m.setattr(seqquery, "FULL_PAGES", False)
            off = await _start_steps(6_000, deletes)
        assert on[1] == off[1], (deletes, on, off)
        assert on[0] <= off[0]
        if deletes:
            assert on[1][0] == 3_000 - deletes and on[0] > 0  # (the slots counted: the page has deletes)
        else:
            assert off[0] > 0 == on[0]


@pytest.mark.parametrize("switch", [True, False])
def test_live_from_matches_a_count_of_the_live_messages(
    monkeypatch: pytest.MonkeyPatch, switch: bool
) -> None:
    """The memory store's pages (16,384 slots each), with deletes in some pages and not others,
    at the start and inside: the pending count from every start is the live messages from it."""
    monkeypatch.setattr(seqquery, "FULL_PAGES", switch)
    rng = random.Random(7)
    store = MemoryStore(StoreConfig())
    n = 50_000
    for i in range(n):
        store.store_msg(f"s.{i % 7}", b"", b"x")
    live = set(range(1, n + 1))
    for deleted in (range(3, 5), range(20_000, 20_100), rng.sample(range(40_000, n), 500)):
        for seq in deleted:
            store.remove_msg(seq)
            live.discard(seq)
        ordered = sorted(live)
        for start in [1, 2, 6, 16_384, 16_385, 19_999, 20_050, 30_000, 40_001, 45_000, n - 1, n]:
            expected = len(ordered) - next((i for i, s in enumerate(ordered) if s >= start), len(ordered))
            assert store.num_pending(start)[0] == expected, (start, switch)
