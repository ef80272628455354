"""``DedupeWindow``'s run methods (a read's Spark rows, ``Stream._store_id_run``) answer and record
exactly what ``lookup`` / ``record`` one message at a time do."""

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


def test_first_duplicate_finds_what_lookups_in_turn_find() -> None:
    window = DedupeWindow(HOUR)
    window.record("old", 7, time.time_ns())
    assert window.first_duplicate(["a", "b", ""]) == (3, 0)
    assert window.first_duplicate(["a", "old", "b"]) == (1, 7)
    assert window.first_duplicate(["a", "b", "a", "old"]) == (2, 0)  # a repeat: once "a" is stored
    assert window.first_duplicate(["", "", "a"]) == (3, 0)
    expired = DedupeWindow(1)
    expired.record("old", 7, 1)
    assert expired.first_duplicate(["old", "a"]) == (2, 0)  # outside the window: not a duplicate
