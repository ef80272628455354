"""Interior deletes: runs of deleted sequences longer than a page of the index (``pages``: the
memory store's pages of ``MEM_PAGE`` sequences, the file store's blocks) left by every kind of
removal — one by one, a subject purge, a compact, skips, a truncate, limits — and what every query
answers across them, checked against a plain model (seq -> subject), on every store kind and after
restarts.
"""

from __future__ import annotations

import random
from itertools import pairwise
from pathlib import Path

import pytest

from pyjetstream.protocol.subjects import compile_filter
from pyjetstream.server.jetstream.store import (
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    FileStore,
    MessageStore,
    StoreConfig,
)
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.store.seqindex import MEM_PAGE as PAGE

from .conftest import StoreFactory, crash, file_options

FILTERS = [">", "a.>", "a.1", "b.*", "a.*", "c"]


def check(store: MessageStore, model: dict[int, str], rng: random.Random) -> None:
    st = store.state(deleted_details=True)
    assert st.msgs == len(model)
    if model:
        first = min(model)
        assert st.first_seq == first
        assert st.num_deleted == (st.last_seq - first + 1 - len(model))
        assert st.deleted == [s for s in range(first, st.last_seq + 1) if s not in model]
    starts = sorted({1, st.first_seq, st.last_seq, *(rng.randint(1, st.last_seq + 2) for _ in range(12))})
    seqs = sorted(model)
    for filt in FILTERS:
        match = compile_filter(filt)
        on = [s for s in seqs if match(model[s])]
        for start in starts:
            after = [s for s in on if s >= start]
            want = after[0] if after else None
            try:
                got: int | None = store.load_next_msg(filt, start)[1]
            except ErrStoreEOF:
                got = None
            assert got == want, (filt, start)
            run = [m[1] for m in store.load_next_msgs(filt, start, 50, 1 << 20)]
            assert run == after[:50], (filt, start)
            assert store.num_pending(start, filt)[0] == len(after), (filt, start)
            prev = [s for s in on if s <= start]
            try:
                got_prev: int | None = store.load_prev_msg(start, filt).seq
            except ErrStoreMsgNotFound:
                got_prev = None
            assert got_prev == (max(prev) if prev else None), (filt, start)
        if model:
            try:
                got_last: int | None = store.load_last_msg(filt).seq
            except ErrStoreMsgNotFound:
                got_last = None
            assert got_last == (on[-1] if on else None), filt


def fill(store: MessageStore, model: dict[int, str], n: int, rng: random.Random, subject: str = "") -> None:
    for _ in range(n):
        subj = subject or rng.choice(["a.1", "a.2", "b.x", "b.y", "c"])
        seq, _ = store.store_msg(subj, b"", b"p")
        model[seq] = subj


@pytest.mark.parametrize("seed", [1, 2])
def test_queries_across_long_runs_of_deletes(make_store: StoreFactory, store_kind: str, seed: int) -> None:
    if store_kind == "file-small":
        pytest.skip("the pages are the index's, alike in every kind; 1 KiB blocks make this 15 s")
    rng = random.Random(seed)
    store = make_store()
    model: dict[int, str] = {}
    fill(store, model, 300, rng)
    # One by one, in the middle: more than two pages of one subject, then of mixed ones.
    start = store.state().last_seq + 1
    fill(store, model, 2 * PAGE + 100, rng, subject="a.1")
    fill(store, model, 50, rng)
    for seq in range(start + 10, start + 2 * PAGE + 90):
        assert store.remove_msg(seq)
        del model[seq]
    if store_kind.startswith("memory"):
        assert _page_dropped(store)  # a page wholly dead is not there any more
    check(store, model, rng)
    # A subject purge leaving a page-long hole, skips, and a compact of the front.
    fill(store, model, PAGE + 200, rng, subject="g")
    fill(store, model, 30, rng)
    store.purge_ex("g")
    for seq in [s for s, subj in model.items() if subj == "g"]:
        del model[seq]
    last = store.state().last_seq
    store.skip_msgs(last + 1, PAGE + 7)
    fill(store, model, 40, rng)
    check(store, model, rng)
    cut = sorted(model)[100]
    store.compact(cut)
    for seq in [s for s in model if s < cut]:
        del model[seq]
    check(store, model, rng)
    # The tail goes: a truncate back to a live message before the last hole.
    keep = sorted(model)[-41]
    store.truncate(keep)
    for seq in [s for s in model if s > keep]:
        del model[seq]
    fill(store, model, 20, rng)
    check(store, model, rng)


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_pages_are_counted_again_after_a_restart(tmp_path: Path, how: str) -> None:
    rng = random.Random(7)
    d = tmp_path / "s"
    store = FileStore(file_options("file", d), _cfg())
    model: dict[int, str] = {}
    fill(store, model, 100, rng)
    start = store.state().last_seq + 1
    fill(store, model, 3 * PAGE, rng, subject="b.x")
    fill(store, model, 100, rng)
    for seq in range(start, start + 3 * PAGE):
        store.remove_msg(seq)
        del model[seq]
    if how == "stop":
        store.stop()
    else:
        crash(store)
    store = FileStore(file_options("file", d), _cfg())
    try:
        check(store, model, rng)
        fill(store, model, 10, rng)
        for seq in sorted(model)[50:60]:
            store.remove_msg(seq)
            del model[seq]
        check(store, model, rng)
    finally:
        store.stop()


def _cfg() -> StoreConfig:
    return StoreConfig()


def _page_dropped(store: MessageStore) -> bool:
    """Whether the index has a hole between two pages (a dead page dropped)."""
    assert isinstance(store, IndexedStore)
    pages = store._index.pages
    return any(a.first + a.n < b.first for a, b in pairwise(pages))
