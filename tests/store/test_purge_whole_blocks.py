"""A filtered purge drops a sealed block whose every live message goes whole (issue 24, dimension 4:
bench_scale's "purge the middle (filter)" of 1M messages between two runs of another subject): the
block's page leaves by its resident subject counts, neither loaded nor listed, the block file is
unlinked without tombstones (nats-server's ``purgeEx`` removes a block it empties). Counted in
``SeqIndex.steps`` / ``loads``, no timing; the stores it leaves are those of the one-by-one path
(``indexed.WHOLE_PAGES`` off), also after a clean stop and a ``kill -9``."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, MemoryStore, MessageStore, StoreConfig
from pyjetstream.server.jetstream.store import indexed as indexed_mod
from pyjetstream.server.jetstream.store.filestore import FileStoreConfig

from .conftest import crash
from .test_bulk_purge import picture

EDGE = 200


def _fill(store: MessageStore, mid: int) -> None:
    for subjects in (["g.edge"] * EDGE, ["g.mid"] * mid, ["g.edge"] * EDGE):
        with store.batch():
            store.store_run(subjects, [b""] * len(subjects), [b"x" * 16] * len(subjects))


def _blocks(d: Path) -> int:
    return sum(name.endswith(".blk") for name in os.listdir(d / "msgs"))


def _options(d: Path) -> FileStoreConfig:
    # Blocks of ~60 messages; two pages' slots resident: most pages are evicted.
    return FileStoreConfig(str(d), block_size=4096, cache_slots=128)


def _purge_middle(d: Path, mid: int) -> tuple[int, int, int]:
    """``(slots stepped, pages loaded, blocks before)`` of a purge of ``mid`` messages of
    g.mid between two runs of g.edge."""
    store = FileStore(_options(d), StoreConfig())
    _fill(store, mid)
    index = store._index
    blocks = _blocks(d)
    steps, loads = index.steps, index.loads
    assert store.purge_ex("g.mid") == mid
    steps, loads = index.steps - steps, index.loads - loads
    per_block = (mid + 2 * EDGE) // blocks
    assert _blocks(d) <= 2 * (EDGE // per_block + 2)  # (g.mid's own blocks are gone)
    st = store.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_deleted) == (2 * EDGE, 1, mid + 2 * EDGE, mid)
    assert store.subjects_totals(">") == {"g.edge": 2 * EDGE}
    store.stop()
    return steps, loads, blocks


def test_purge_of_whole_blocks_does_not_touch_their_slots(tmp_path: Path) -> None:
    """Only the two blocks g.mid shares with g.edge are looked at (loaded, their slots scanned);
    each block of g.mid alone is one step and goes without a load: ten times the messages, the
    same loads and slot steps, plus one step per block."""
    small = _purge_middle(tmp_path / "small", 3_000)
    large = _purge_middle(tmp_path / "large", 30_000)
    per_block = 3_400 // small[2]  # (messages a block holds)
    assert large[1] == small[1]
    for steps, _, blocks in (small, large):
        assert steps <= blocks + 4 * per_block
    assert large[0] < 30_000 // 50


def _build(store: MessageStore, rng: random.Random) -> None:
    for _ in range(12):
        subject = rng.choice(["a", "b", "c.1", "c.2"])
        n = rng.choice([1, 5, 40, 150])
        with store.batch():
            store.store_run([subject] * n, [b""] * n, [b"p%d" % rng.randrange(99)] * n)
    for seq in rng.sample(range(1, store.state().last_seq + 1), 20):
        store.remove_msg(seq)


PURGES = [("b", 0, 0), ("c.*", 0, 0), ("a", 0, 30), ("c.>", 400, 0), ("a", 0, 0), ("b", 0, 1)]


def _stores(kind: str, d: Path) -> MessageStore:
    if kind == "memory":
        return MemoryStore(StoreConfig(), page_slots=16)
    return FileStore(
        FileStoreConfig(str(d), block_size=1024, compact_min_bytes=256, cache_slots=32), StoreConfig()
    )


@pytest.mark.parametrize("kind", ["memory", "file"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_whole_pages_leave_what_one_by_one_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, seed: int
) -> None:
    """Random runs of a few subjects (pages of one subject, of several, the stream's first among
    them), purges with and without keep and a sequence bound, on both switches; then a restart."""
    whole, single = _stores(kind, tmp_path / "w"), _stores(kind, tmp_path / "o")
    _build(whole, random.Random(seed))
    _build(single, random.Random(seed))
    rng = random.Random(seed)
    for subject, seq, keep in rng.sample(PURGES, len(PURGES)):
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", True)
        got = whole.purge_ex(subject, seq, keep)
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", False)
        assert single.purge_ex(subject, seq, keep) == got, (subject, seq, keep)
        assert picture(whole) == picture(single), (subject, seq, keep)
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", True)
        got = whole.purge_subjects(["a", "b"], keep=3)
        monkeypatch.setattr(indexed_mod, "WHOLE_PAGES", False)
        assert single.purge_subjects(["a", "b"], keep=3) == got
        _build(whole, random.Random(seed + 100))
        _build(single, random.Random(seed + 100))
        assert picture(whole) == picture(single), (subject, seq, keep)
    if kind == "file":
        before = picture(whole)
        crash(whole) if seed % 2 else whole.stop()
        again = _stores(kind, tmp_path / "w")
        try:
            assert picture(again) == before
        finally:
            again.stop()
        single.stop()
