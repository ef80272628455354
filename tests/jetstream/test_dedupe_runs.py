"""``DedupeWindow``'s run methods (a read's publishes with message ids, ``StreamIngest.ingest_run``)
answer and record exactly what ``lookup`` / ``record`` one message at a time do."""

from __future__ import annotations

import time

import pytest

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
