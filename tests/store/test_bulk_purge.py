"""A subject purge of many messages removes them at once (``IndexedStore._remove_seqs``: the index's
``remove_seqs``, the backend's ``remove_many``, sealed pages of nothing else whole: ``remove_pages``);
with the switches off (``_BULK_MIN``, ``WHOLE_PAGES``) each goes one by one. Both must leave the
same store: state, subjects, every message, pending counts, and the same after a restart of a file
store."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from msgspec.structs import replace

from pyjetstream.server.jetstream.store import FileStore, MessageStore, StoreConfig, seqbulk
from pyjetstream.server.jetstream.store import indexed as indexed_mod

from .conftest import StoreFactory, crash, file_options

SUBJECTS = ["a.1", "a.2", "a.3", "b.1", "b.2", "c"]
PURGES = [("a.1", 0, 0), ("a.*", 0, 5), ("b.>", 700, 0), (">", 0, 0), ("c", 0, 1), ("a.>", 0, 0), ("b.2", 0, 3)]


def picture(store: MessageStore) -> tuple[object, ...]:
    st = replace(store.state(deleted_details=True), first_ts=0, last_ts=0)  # (two clocks)
    msgs = [m[1] for m in store.load_next_msgs(">", 1, 1 << 30, 1 << 62)]
    pending = [store.num_pending(s, f)[0] for f in (">", "a.>", "b.*", "c") for s in (1, 300, 900)]
    return st, store.subjects_state(">"), msgs, pending


def build(store: MessageStore, seed: int) -> None:
    rng = random.Random(seed)
    for i in range(1_200):
        store.store_msg(rng.choice(SUBJECTS), b"", b"m%d" % i)
    for seq in rng.sample(range(1, 1_201), 100):
        store.remove_msg(seq)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bulk_purge_equals_one_by_one(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    bulk, single = make_store(), make_store()
    build(bulk, seed)
    build(single, seed)
    rng = random.Random(seed)
    for subject, seq, keep in rng.sample(PURGES, len(PURGES)):
        if subject == ">":
            continue  # (a purge of everything is the store's own bulk path either way)
        monkeypatch.setattr(indexed_mod, "_BULK_MIN", 64)
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", True)
        got = bulk.purge_ex(subject, seq, keep)
        monkeypatch.setattr(indexed_mod, "_BULK_MIN", 1 << 62)
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", False)
        assert single.purge_ex(subject, seq, keep) == got, (subject, seq, keep)
        assert picture(bulk) == picture(single), (subject, seq, keep)
        for i in range(20):
            s = SUBJECTS[i % len(SUBJECTS)]
            assert bulk.store_msg(s, b"", b"n")[0] == single.store_msg(s, b"", b"n")[0]


@pytest.mark.parametrize("kind", ["file", "file-small"])
@pytest.mark.parametrize("how", ["stop", "crash"])
def test_bulk_purge_survives_restart(tmp_path: Path, kind: str, how: str) -> None:
    """A clean stop (the index snapshot) and a kill -9 (the blocks scanned: the run tombstones)."""
    d = tmp_path / "s"
    store = FileStore(file_options(kind, d), StoreConfig())
    build(store, 9)
    assert indexed_mod._BULK_MIN < store.subjects_totals("a.1")["a.1"]
    store.purge_ex("a.1")
    store.purge_ex("b.>", keep=2)
    for i in range(100):  # a run of neighbours, then purged whole
        store.store_msg("r", b"", b"%d" % i)
    store.purge_ex("r")
    before = picture(store)
    if how == "stop":
        store.stop()
    else:
        crash(store)
    store = FileStore(file_options(kind, d), StoreConfig())
    try:
        assert picture(store) == before
    finally:
        store.stop()


@pytest.mark.parametrize("seed", [4, 5])
def test_oldest_of_finds_the_oldest_matching(make_store: StoreFactory, seed: int) -> None:
    """`seqbulk.oldest_of` against the stored messages: few and many subjects (each page asked
    for each, or for its own), pages of nothing else, dense and sparse ones, a limit and a count."""
    rng = random.Random(seed)
    store = make_store()
    many = [f"m.{k}" for k in range(20)]
    for i in range(2_000):
        subject = "z" if rng.random() < 0.01 else "run" if 700 <= i < 1_100 else rng.choice(many)
        store.store_msg(subject, b"", b"m%d" % i)
    for seq in rng.sample(range(1, 2_001), 200):
        store.remove_msg(seq)
    live = [(m[1], m[0]) for m in store.load_next_msgs(">", 1, 1 << 30, 1 << 62)]
    index = store._index  # type: ignore[attr-defined]
    last = store.state().last_seq
    for want in (["z"], ["run"], ["m.1"], ["m.1", "z"], many[:12], [*many, "z", "run"]):
        sids = [index.subjects.ids[s] for s in want]
        for n, limit in ((1 << 30, last), (7, last), (1 << 30, 900), (300, 1_500), (1, 1)):
            expected = [seq for seq, s in live if s in want and seq <= limit][:n]
            assert seqbulk.oldest_of(index, sids, n, limit) == expected, (want, n, limit)
