"""A removal in a sealed block writes its tombstone into the active block (issue 24: a random
``STREAM.MSG.DELETE`` over 1M file-stored messages cost more where the message lay in a sealed
block, whose own file took the tombstone — a second file written, and scanned by a restart after
a crash). nats-server's ``removeMsgFromBlock`` writes every removal's tombstone into its last
block (``lmb.writeTombstone``), ``rebuildState`` applies a later block's tombstones to earlier
blocks, and ``removeMsgBlock`` keeps a block while it holds tombstones for earlier blocks'
messages (``numPriorTombs``). Counted, not timed: the files and bytes a removal writes and what it
reads, at two sizes; restarts after a clean stop and a ``kill -9`` keep removed messages removed
whichever of the two blocks is compacted or removed first; the store left equals the one
`blockfiles.TOMBSTONES_IN_LAST_BLOCK` off leaves, over random operations and restarts."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ErrInvalidSequence,
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    StoreConfig,
    blockfiles,
)

from .conftest import crash, observed_state
from .test_remove_spanned import _evicted, _fill, _open, _resident


def _picture(store: FileStore) -> tuple[object, ...]:
    return observed_state(store, pending_filter="d.*")


def _fresh_active(store: FileStore) -> None:
    """Messages until a new active block starts: the removals' tombstones fit in it."""
    blocks = store._backend.blocks
    n = len(blocks)
    seq = store.state().last_seq
    while len(blocks) == n:
        seq += 1
        store.store_msg("d.9", b"", b"x", ts=seq)


def _writes(monkeypatch: pytest.MonkeyPatch, store: FileStore, seqs: list[int]) -> tuple[list[str], int, int]:
    """The files written (one entry per ``pwrite``), the bytes written and the ``pread``s of
    block files, over the removal of ``seqs``."""
    paths: list[str] = []
    nbytes = [0]
    reads = [0]
    pwrite, pread = blockfiles._io.pwrite, os.pread

    def counting_write(fd: int, data: bytes, off: int) -> int:
        paths.append(os.path.basename(os.readlink(f"/proc/self/fd/{fd}")))
        nbytes[0] += len(data)
        return pwrite(fd, data, off)

    def counting_read(fd: int, n: int, off: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".blk"):
            reads[0] += 1
        return pread(fd, n, off)

    monkeypatch.setattr(blockfiles._io, "pwrite", counting_write)
    monkeypatch.setattr(os, "pread", counting_read)
    try:
        for seq in seqs:
            assert store.remove_msg(seq)
    finally:
        monkeypatch.setattr(blockfiles._io, "pwrite", pwrite)
        monkeypatch.setattr(os, "pread", pread)
    return paths, nbytes[0], reads[0]


def test_a_removal_writes_the_active_block_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``pwrite`` a removal, of its one tombstone (31 bytes), into the active block, whether
    the message lies in an evicted page or a resident sealed one; block reads a removal (the
    record's span) at most one: the same at 20k and 200k messages."""
    for msgs in (20_000, 200_000):
        store = _open(tmp_path / f"s{msgs}", cache_slots=8_000)
        try:
            _fill(store, msgs)
            evicted = _evicted(store, msgs, 100)
            resident = _resident(store, msgs, 100)
            assert len(evicted) == len(resident) == 100
            _fresh_active(store)
            active = os.path.basename(store._backend.blocks[-1].path)
            for seqs in (evicted, resident):
                paths, nbytes, reads = _writes(monkeypatch, store, seqs)
                assert paths == [active] * len(seqs), (msgs, set(paths))
                assert nbytes == 31 * len(seqs)
                assert reads <= len(seqs), (msgs, reads)
            assert len(store._backend.blocks[-1].priors) == 2 * 200
        finally:
            store.stop()


def _removed_in_sealed(tmp_path: Path) -> tuple[FileStore, list[int]]:
    """A store of a few dozen small blocks and 60 messages removed from the sealed ones."""
    store = FileStore(FileStoreConfig(str(tmp_path / "s"), block_size=2048, compact_min_bytes=512), StoreConfig())
    for i in range(1, 1_001):
        store.store_msg(f"d.{i % 7}", b"", b"p%04d" % i, ts=i)
    last_sealed = store._backend.blocks[-1].first_seq - 1
    gone = random.Random(5).sample(range(2, last_sealed), 60)
    for seq in gone:
        assert store.remove_msg(seq)
    return store, gone


@pytest.mark.parametrize("how", ["stop", "crash", "sync-then-crash"])
def test_removals_in_sealed_blocks_survive_a_restart(tmp_path: Path, how: str) -> None:
    """The removed stay removed and the others as they were after a clean stop, a ``kill -9``,
    and a ``kill -9`` after a sync wrote the stream state with half of them (the other half in
    the active block only): their sealed blocks' files were never written to."""
    store, gone = _removed_in_sealed(tmp_path)
    if how == "sync-then-crash":
        store.sync()
        for seq in range(1, store._backend.blocks[-1].first_seq, 3):
            if seq not in gone and store.remove_msg(seq):
                gone.append(seq)
    before = _picture(store)
    sealed = {b.path: b.written for b in store._backend.blocks[:-1]}
    assert all(os.path.getsize(p) == n for p, n in sealed.items())
    store.stop() if how == "stop" else crash(store)
    again = FileStore(FileStoreConfig(str(tmp_path / "s"), block_size=2048, compact_min_bytes=512), StoreConfig())
    try:
        assert _picture(again) == before
        for seq in gone:
            with pytest.raises(ErrStoreMsgNotFound):
                again.load_msg(seq)
    finally:
        again.stop()


def _open_small(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=1024, compact_min_bytes=256), StoreConfig())


@pytest.mark.parametrize("order", ["tombstones-first", "records-first"])
def test_compaction_keeps_a_tombstone_while_its_record_is_on_disk(tmp_path: Path, order: str) -> None:
    """Message 5 (block 1) removed: its tombstone goes into the active block. That block, once
    sealed and emptied of its own messages, is rewritten with the tombstone alone, not unlinked,
    while block 1 still holds the record (``numPriorTombs``); once block 1 is compacted (or the
    other way round) the tombstone's block goes. A ``kill -9`` after each step brings message 5
    back in neither order."""
    d = tmp_path / "s"
    store = _open_small(d)
    for i in range(1, 61):
        store.store_msg("a" if i % 2 else "b", b"", b"x" * 40, ts=i)
    backend = store._backend
    assert backend._block_for(5) is backend.blocks[0]
    store.remove_msg(5)
    holder = backend.blocks[-1]
    assert list(holder.priors) == [5, 1]
    lo = holder.first_seq
    for i in range(61, 81):  # (the holder is sealed)
        store.store_msg("c", b"", b"x" * 40, ts=i)
    hi = backend._block_end(holder)
    block1 = [s for s in range(2, backend._firsts[1]) if s != 5]

    def crashed_copy(k: int) -> None:
        """What a ``kill -9`` now leaves (everything written is in the files: a copy of them)."""
        before = _picture(store)
        copy = tmp_path / f"copy{k}"
        shutil.copytree(d, copy)
        again = _open_small(copy)
        try:
            with pytest.raises(ErrStoreMsgNotFound):
                again.load_msg(5)
            assert _picture(again) == before
        finally:
            again.stop()

    steps = [range(lo, hi), block1] if order == "tombstones-first" else [block1, range(lo, hi)]
    for k, seqs in enumerate(steps):
        for seq in seqs:
            store.remove_msg(seq)
        crashed_copy(k)
        if k == 0 and order == "tombstones-first":
            assert os.path.exists(holder.path)  # (emptied, kept for the tombstone block 1 still needs)
            assert os.path.getsize(holder.path) < 100
        if k == 1:
            assert not os.path.exists(holder.path)
    before = _picture(store)
    crash(store)
    store = _open_small(d)
    assert _picture(store) == before
    store.stop()


def _random_ops(box: list[FileStore], rng: random.Random, steps: int, restart: object) -> None:
    """``steps`` random operations on ``box[0]`` (a restart puts the store opened again there)."""
    seq_ts = [box[0].state().last_seq]
    for _ in range(steps):
        store = box[0]
        op = rng.random()
        last = store.state().last_seq
        if op < 0.45:
            n = rng.choice([1, 3, 20])
            for _ in range(n):
                seq_ts[0] += 1
                store.store_msg(f"d.{rng.randrange(5)}", b"", b"v" * rng.randrange(1, 60), ts=seq_ts[0])
        elif op < 0.8 and last:
            for _ in range(rng.choice([1, 4, 15])):
                store.remove_msg(rng.randrange(1, last + 1), erase=rng.random() < 0.1)
        elif op < 0.84 and last:
            store.compact(rng.randrange(1, last + 2))
        elif op < 0.87 and last:
            at = rng.randrange(max(1, last - 30), last + 1)
            with contextlib.suppress(ErrInvalidSequence):  # (a removed one)
                store.truncate(at)
        elif op < 0.89:
            store.purge_ex(f"d.{rng.randrange(5)}")
        else:
            restart(rng.random() < 0.5)  # type: ignore[operator]


@pytest.mark.parametrize("seed", range(6))
def test_tombstones_in_the_last_block_leave_what_own_block_tombstones_leave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Random stores, removals (some secure), compactions, truncates, subject purges, clean and
    ``kill -9`` restarts, once with `TOMBSTONES_IN_LAST_BLOCK` on and once off (the same seed):
    the same messages, state and subjects after each restart and at the end."""
    pictures: dict[bool, list[tuple[object, ...]]] = {}
    for on in (True, False):
        monkeypatch.setattr(blockfiles, "TOMBSTONES_IN_LAST_BLOCK", on)
        d = tmp_path / f"s{on}"
        box = [_open_small(d)]
        seen: list[tuple[object, ...]] = []

        def restart(clean: bool, box: list[FileStore] = box, d: Path = d, seen: list[tuple[object, ...]] = seen) -> None:
            box[0].stop() if clean else crash(box[0])
            box[0] = _open_small(d)
            seen.append(_picture(box[0]))

        _random_ops(box, random.Random(seed), 120, restart)
        restart(False)
        box[0].stop()
        pictures[on] = seen
    assert pictures[True] == pictures[False]


def test_a_vouched_blocks_tombstones_reach_a_block_read_again(tmp_path: Path) -> None:
    """Message ``s`` of block X removed (its tombstone in block Y), Y sealed, the stream state
    written (it vouches for X and Y); then a per-subject trim's tombstone changes X's file and a
    ``kill -9``: the restart reads X again (a scan: its index predates the removal) and not Y,
    whose tombstones the state lists — ``s`` stays removed."""
    d = tmp_path / "s"

    def open_store() -> FileStore:
        fcfg = FileStoreConfig(str(d), block_size=1024, compact_min_bytes=1 << 20)
        return FileStore(fcfg, StoreConfig(max_msgs_per_subject=2))

    store = open_store()
    store.store_msg("u.1", b"", b"x", ts=1)
    store.store_msg("k", b"", b"k1", ts=2)
    store.store_msg("k", b"", b"k2", ts=3)
    for i in range(4, 41):
        store.store_msg(f"u.{i}", b"", b"x" * 40, ts=i)
    backend = store._backend
    x = backend.blocks[0]
    s = x.first_seq + 5
    assert backend._block_for(s) is x and x is not backend.blocks[-1]
    store.remove_msg(s)
    y = backend.blocks[-1]
    assert list(y.priors) == [s, 1]
    for i in range(41, 81):
        store.store_msg(f"u.{i}", b"", b"x" * 40, ts=i)
    assert y is not backend.blocks[-1]
    store.sync()  # (the state: X and Y as they are now)
    x_size = os.path.getsize(x.path)
    store.store_msg("k", b"", b"k3", ts=81)  # (trims k1 in X: a lazy tombstone there)
    store.remove_msg(backend.blocks[-1].first_seq)  # (a removal: the lazy tombstone is written)
    assert os.path.getsize(x.path) > x_size
    before = _picture(store)
    crash(store)
    again = open_store()
    try:
        with pytest.raises(ErrStoreMsgNotFound):
            again.load_msg(s)
        assert _picture(again) == before
    finally:
        again.stop()


def test_the_state_lists_priors_as_arrays() -> None:
    """The stream state carries each block's priors as two arrays (not its JSON header), read back
    by block number; a header that listed them (43a1200's states) is read too."""
    from array import array

    from pyjetstream.server.jetstream.store import prior_tombs
    from pyjetstream.server.jetstream.store.blockindex import _Block

    blocks = [_Block(i, 100 * i, f"{i}.blk", 0) for i in (1, 2, 3)]
    blocks[1].priors = array("Q", [5, 1, 7, 3])
    blocks[2].priors = array("Q", [150, 1])
    arrays = prior_tombs.state_arrays(blocks)
    assert list(arrays["x_blocks"]) == [2, 2, 3, 1]
    assert prior_tombs.state_rows(arrays) == {2: [5, 1, 7, 3], 3: [150, 1]}
    assert prior_tombs.state_rows({}, [[4, 9, 1]]) == {4: [9, 1]}
    with pytest.raises(ValueError):
        prior_tombs.state_rows({"x_blocks": array("Q", [2, 3]), "x_pairs": array("Q", [5, 1])})


def test_a_crash_restart_loads_each_page_once_for_the_tombstones(tmp_path: Path) -> None:
    """After a clean stop, 400 random removals in sealed blocks (their tombstones in the active
    block alone), then ``kill -9``: the restart applies them in sequence order, so each page they
    name is loaded once (and once more to count its block's live bytes) — at 400 removals as at 40
    (in the order written, one a removal: a 1M-message store's restart after 10,000 took 30-50 s)."""

    def loads_after(removals: int) -> tuple[int, int]:
        d = tmp_path / f"s{removals}"
        fcfg = FileStoreConfig(str(d), block_size=4096, cache_slots=128)
        store = FileStore(fcfg, StoreConfig())
        for i in range(1, 3_001):
            store.store_msg(f"d.{i % 5}", b"", b"p%04d" % i, ts=i)
        store.stop()
        store = FileStore(fcfg, StoreConfig())
        sealed = store._backend.blocks[-1].first_seq - 1
        for seq in random.Random(removals).sample(range(2, sealed), removals):
            assert store.remove_msg(seq)
        before = _picture(store)
        crash(store)
        again = FileStore(fcfg, StoreConfig())
        loads = again._index.loads
        assert _picture(again) == before
        blocks = len(again._backend.blocks)
        again.stop()
        return loads, blocks

    few, _ = loads_after(40)
    many, blocks = loads_after(400)
    assert many <= 2 * blocks and many <= few + 25, (few, many, blocks)
