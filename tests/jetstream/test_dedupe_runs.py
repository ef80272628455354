"""``DedupeWindow``'s run methods (a read's publishes with message ids, ``StreamIngest.ingest_run``)
answer and record exactly what ``lookup`` / ``record`` one message at a time do."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target

from pyjetstream.server.jetstream.dedupe import DedupeWindow

HOUR = 3_600_000_000_000


def _one_by_one(window: DedupeWindow, msg_ids: list[str], first: int, tss: list[int]) -> None:
    for k, (msg_id, ts) in enumerate(zip(msg_ids, tss, strict=False)):
        if msg_id:
            window.record(msg_id, first + k, ts)


@pytest.mark.parametrize(
    "msg_ids",
    [["a", "b", "c"], ["a", "b", "a"], ["a", "", "b"], ["", ""], ["old", "x"], ["x", "old", "x"]],
)
def test_record_run_is_record_one_by_one(msg_ids: list[str]) -> None:
    run, one = DedupeWindow(HOUR), DedupeWindow(HOUR)
    for w in (run, one):
        w.record("old", 1, 5)
        w.record("other", 2, 6)
    tss = [10 + k for k in range(len(msg_ids))]
    assert run.record_run(msg_ids, 3, tss) == any(msg_ids)
    _one_by_one(one, msg_ids, 3, tss)
    assert list(run._ids.items()) == list(one._ids.items())
    assert run._order == one._order
    # (stopped by a failed write: only the stored ones)
    run2, one2 = DedupeWindow(HOUR), DedupeWindow(HOUR)
    run2.record_run(msg_ids, 3, tss[:1])
    _one_by_one(one2, msg_ids, 3, tss[:1])
    assert list(run2._ids.items()) == list(one2._ids.items())


def test_duplicates_are_what_lookups_in_turn_find() -> None:
    window = DedupeWindow(HOUR)
    window.record("old", 7, time.time_ns())
    assert window.duplicates(["a", "b", ""]) == []
    assert window.duplicates(["a", "old", "b"]) == [(1, 7)]
    # a repeat: 0 (a duplicate once "a" is stored), or the window's sequence for a repeated old id
    assert window.duplicates(["a", "b", "a", "old", "old", ""]) == [(2, 0), (3, 7), (4, 7)]
    assert window.duplicates(["", "", "a"]) == []
    expired = DedupeWindow(1)
    expired.record("old", 7, 1)
    assert expired.duplicates(["old", "a"]) == []  # outside the window: not a duplicate
    assert expired.duplicates(["old", "a", "old"]) == [(2, 0)]


def test_expiry_walks_arrival_order_and_passes_over_re_recorded_ids() -> None:
    window = DedupeWindow(10)
    window.record("a", 1, 1)
    window.record("b", 2, 2)
    window.record("a", 3, 3)  # recorded again (its first entry is stale now)
    window.record("c", 4, 4)
    assert window.expire(now=12) == 13  # b went; a (at 3) is the next to go
    assert window.lookup("a", now=12) == 3
    assert window.lookup("b", now=12) is None
    assert window.expire(now=13) == 14  # a went; c is next
    assert (len(window), window.lookup("c", now=13)) == (1, 4)
    assert window.expire(now=100) is None
    assert len(window) == 0


def test_forget_after_drops_what_a_failed_write_took_back() -> None:
    window = DedupeWindow(HOUR)
    for seq, msg_id in enumerate(["a", "b", "c", "b"], start=1):
        window.record(msg_id, seq, seq)
    window.forget_after(2)
    assert [window.lookup(i, now=10) for i in "abc"] == [1, None, None]
    window.record("d", 3, 3)
    assert window.lookup("d", now=10) == 3


def test_a_long_window_is_compacted_as_it_expires() -> None:
    window = DedupeWindow(1000)
    window.record_run([f"id{i}" for i in range(5000)], 1, list(range(5000)))
    assert window.expire(now=4000) == 4001  # ids at 0 to 3000 went
    assert len(window) == 1999
    assert len(window._order) < 5000  # the expired front was cut off
    assert window.lookup("id3000", now=4000) is None
    assert window.lookup("id3001", now=4000) == 3002
    window.forget_after(4000)
    assert window.lookup("id3999", now=4000) == 4000
    assert window.lookup("id4000", now=4000) is None


def _lookup_steps(n: int) -> tuple[int, int, int]:
    """A window of ``n`` ids, half of them older than the window: (arrivals passed by the first
    lookup that finds an id, arrivals passed by 1,000 more lookups and a read's duplicates, ids left)."""
    window = DedupeWindow(HOUR)
    now = time.time_ns()
    half = n // 2
    window.record_run([f"id{i}" for i in range(n)], 1, [now - 2 * HOUR] * half + [now] * (n - half))
    assert window.lookup(f"id{n - 1}", now) == n  # the old half expires first: each passed once
    first = window._head
    for i in range(1000):
        window.lookup(f"id{half + i % half}", now)
    window.duplicates([f"id{half + i}" for i in range(256)])
    return first, window._head - first, len(window)


def test_a_lookup_costs_no_walk_of_the_window() -> None:
    """Issue 24 dim 8: a duplicate's lookup is one dict probe, whatever the number of ids; the
    ids that left the window are passed once each, by the first lookup after they left."""
    assert _lookup_steps(1000) == (500, 0, 500)
    assert _lookup_steps(100_000) == (50_000, 0, 50_000)


@pytest.fixture
async def raw(server: Target) -> AsyncIterator[RawNats]:
    client = await RawNats.connect(server.url)
    yield client
    await client.close()


async def _pub(client: RawNats, msg_id: str) -> dict[str, Any]:
    return (await client.request("d.x", b"x", hdr=headers(("Nats-Msg-Id", msg_id)), timeout=10)).json()


async def test_an_id_is_a_duplicate_until_it_leaves_the_window(raw: RawNats) -> None:
    """Both targets: an id inside the window is answered with its first sequence — alone and in
    a read's run —, and stored again once the window has passed it."""
    create = {"name": "D", "subjects": ["d.>"], "duplicate_window": 500_000_000}
    created = (await raw.request("$JS.API.STREAM.CREATE.D", json.dumps(create).encode(), timeout=10)).json()
    assert "error" not in created, created
    assert await _pub(raw, "a") == {"stream": "D", "seq": 1}
    assert await _pub(raw, "a") == {"stream": "D", "seq": 1, "duplicate": True}
    hdr = {k: headers(("Nats-Msg-Id", k)) for k in "ab"}
    answers = await raw.request_pipelined([("d.x", b"2", True, hdr["b"]), ("d.x", b"3", True, hdr["a"]), ("d.x", b"4", True, hdr["b"])])
    assert [a.json() if a else None for a in answers] == [
        {"stream": "D", "seq": 2},
        {"stream": "D", "seq": 1, "duplicate": True},
        {"stream": "D", "seq": 2, "duplicate": True},
    ]
    deadline = time.monotonic() + 20
    for _ in range(1000):  # (until the window passed "a", 0.5 s after it was stored)
        answer = await _pub(raw, "a")
        if not answer.get("duplicate") or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    assert answer == {"stream": "D", "seq": 3}
