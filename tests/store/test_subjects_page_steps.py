"""STREAM.INFO's ``subjects_filter`` pages from the store (`IndexedStore.subjects_sorted_page`,
issue 24, dimension 1): once a listing's order is kept (`SubjectTable.name_order`), a page costs
its own size whatever the number of subjects, and nothing is sorted again until a subject comes
or goes. Counted, not timed: the index's ``steps`` (subjects a page visits) and the table's
``order_sorts`` (ids sorted), at two sizes. The memo (`_index.SORTED_MEMO`) gives the pages the
general path gives, and the base class's sort of every subject (nats-server's ``SubjectsTotals``
sorted) is the oracle.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, MemoryStore, StoreConfig
from pyjetstream.server.jetstream.store import _index as index_module
from pyjetstream.server.jetstream.store.base import MessageStore
from pyjetstream.server.jetstream.store.indexed import IndexedStore

SIZES = (1_000, 10_000)
PAGE = 100


def scattered(subjects: int) -> MemoryStore:
    """One message on each of ``subjects`` subjects ``s.<n>``, stored in a random order (so id
    order and name order differ), and one on ``t.<n>`` for a tenth of them."""
    store = MemoryStore(StoreConfig())
    order = list(range(subjects))
    random.Random(subjects).shuffle(order)
    for n in order:
        store.store_msg(f"s.{n}", b"", b"x")
        if n % 10 == 0:
            store.store_msg(f"t.{n}", b"", b"x")
    return store


def counters(store: IndexedStore) -> tuple[int, int]:
    index = store._index
    return index.steps, index.subjects.order_sorts


def oracle(store: IndexedStore, filt: str, offset: int, limit: int) -> tuple[int, list[tuple[str, int]]]:
    """The page as the base class makes it: every matching subject's total, sorted by name."""
    total, page, in_order = MessageStore.subjects_sorted_page(store, filt, offset, limit)
    assert in_order
    return total, list(page.items())


def answer(store: IndexedStore, filt: str, offset: int, limit: int) -> tuple[int, list[tuple[str, int]]]:
    total, page, in_order = store.subjects_sorted_page(filt, offset, limit)
    return total, list(page.items()) if in_order else sorted(page.items())


def per_page_steps(subjects: int) -> tuple[float, int]:
    """Pages of 100 after the first, over the ``s.*`` subjects: (steps a page, ids sorted)."""
    store = scattered(subjects)
    assert answer(store, "s.*", 0, PAGE) == oracle(store, "s.*", 0, PAGE)
    steps, sorts = counters(store)
    assert sorts == subjects  # the first page of several sorts them now, once
    pages = 5
    for i in range(1, pages + 1):
        total, page, in_order = store.subjects_sorted_page("s.*", i * PAGE, PAGE)
        assert total == subjects and in_order and len(page) == PAGE
    after_steps, after_sorts = counters(store)
    return (after_steps - steps) / pages, after_sorts - sorts


def test_a_page_costs_its_size_not_the_subjects() -> None:
    (small, small_sorts), (large, large_sorts) = (per_page_steps(n) for n in SIZES)
    assert small == large == PAGE, (small, large)
    assert small_sorts == large_sorts == 0


def test_a_listing_asked_again_is_not_sorted_again() -> None:
    """A one-page listing: the first ask is every match in id order (the encoder sorts it), the
    second sorts the ids and keeps them, the next ones are a slice, one step a subject listed."""
    per: list[int] = []
    for n in SIZES:
        store = scattered(n)
        total, first, in_order = store.subjects_sorted_page("s.>", 0, 100_000)
        assert (total, in_order, counters(store)[1]) == (n, False, 0)
        total, second, in_order = store.subjects_sorted_page("s.>", 0, 100_000)
        assert (total, in_order, counters(store)[1]) == (n, True, n)
        assert list(second.items()) == sorted(first.items()) == oracle(store, "s.>", 0, 100_000)[1]
        steps, sorts = counters(store)
        for _ in range(3):
            assert store.subjects_sorted_page("s.>", 0, 100_000) == (n, second, True)
        after_steps, after_sorts = counters(store)
        assert after_sorts == sorts
        per.append((after_steps - steps) // 3)
    assert per == list(SIZES)  # a step a subject listed, no more


def test_a_subject_that_comes_or_goes_is_in_the_next_page() -> None:
    store = scattered(1_000)
    for _ in range(2):
        store.subjects_sorted_page("s.*", 0, PAGE)
    store.store_msg("s.0000", b"", b"x")  # sorts right after s.0
    total, page, in_order = store.subjects_sorted_page("s.*", 0, 3)
    assert (total, list(page), in_order) == (1_001, ["s.0", "s.0000", "s.1"], True)
    store.purge_ex("s.0")
    assert answer(store, "s.*", 0, 3) == (1_000, [("s.0000", 1), ("s.1", 1), ("s.10", 1)])
    store.store_msg("s.1", b"", b"x")  # a count changes, not the subjects: the order is kept
    sorts = counters(store)[1]
    assert answer(store, "s.*", 0, 2) == (1_000, [("s.0000", 1), ("s.1", 2)])
    assert counters(store)[1] == sorts


def _apply(stores: list[IndexedStore], rng: random.Random, step: int) -> None:
    """One random change, the same on every store."""
    roll = rng.random()
    for store in stores:
        state = random.Random(step)  # (the same choices for each store)
        if roll < 0.6:
            store.store_msg(f"{state.choice('ab')}.{state.randrange(300)}.{state.randrange(3)}", b"", b"x")
        elif roll < 0.8:
            last = store.state().last_seq
            if last:
                store.remove_msg(state.randrange(1, last + 1))
        else:
            store.purge_ex(f"{state.choice('ab')}.{state.randrange(300)}.>")


@pytest.mark.parametrize("kind", ["memory", "file"])
def test_memo_on_gives_the_pages_of_memo_off(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same changes and questions on two stores, one with `SORTED_MEMO` off for its answers:
    the same totals and pages as each other and as the oracle (every matching subject sorted)."""

    def make(name: str) -> IndexedStore:
        if kind == "memory":
            return MemoryStore(StoreConfig())
        return FileStore(FileStoreConfig(str(tmp_path / name)), StoreConfig())

    on, off = make("on"), make("off")
    rng = random.Random(24)
    filters = [">", "a.>", "b.*.1", "a.7.*", "*.*.2", "a.7.1"]
    for step in range(3_000):
        _apply([on, off], rng, step)
        if step % 7 == 0:
            filt, offset, limit = rng.choice(filters), rng.choice([0, 0, 3, 50, 400]), rng.choice([1, 10, 100_000])
            for _ in range(rng.choice([1, 2, 3])):  # asked again: from the memo
                expected = oracle(on, filt, offset, limit)
                assert answer(on, filt, offset, limit) == expected, (step, filt, offset, limit)
                monkeypatch.setattr(index_module, "SORTED_MEMO", False)
                assert answer(off, filt, offset, limit) == expected, (step, filt, offset, limit)
                monkeypatch.setattr(index_module, "SORTED_MEMO", True)
    for store in (on, off):
        store.stop()
