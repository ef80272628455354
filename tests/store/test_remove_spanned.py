"""A removal in an evicted index page finds its record as a random get does — in its sealed
block's span (the bytes between the offsets of every 64th record, `IndexPeeks.note_locs`) — and
removes it where it was found (issue 24: a random ``STREAM.MSG.DELETE`` over 1M messages peeked
the slot with its subject id from the block's index file, three small reads, then read the
record; nats-server's ``removeMsg`` reads the one message of the block it loads). Counted, not
timed: reads of index files and of block files per removal at two sizes; the switches
`remove_one.BY_SPAN` and `remove_one.PEEK_IN_PAGE` off give the same stored state, after a
restart and after a crash; a payload holding a whole valid record of the removed sequence is
not what an erase overwrites."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, remove_one
from pyjetstream.server.jetstream.store._records import KIND_MSG, append_record

from .conftest import crash, observed_state

SUBJECTS = 10
RUN = 500


def _open(path: Path, cache_slots: int = 1000, compression: str = "none") -> FileStore:
    fcfg = FileStoreConfig(str(path), block_size=32 * 1024, cache_slots=cache_slots)
    return FileStore(fcfg, StoreConfig(name="S", compression=compression))  # type: ignore[arg-type]


def _fill(store: FileStore, msgs: int) -> None:
    subjects = [f"d.{i % SUBJECTS}" for i in range(RUN)]
    hdrs = [b"NATS/1.0\r\nA: b\r\n\r\n" if i % 3 == 0 else b"" for i in range(RUN)]
    for i in range(0, msgs, RUN):  # (given timestamps: two stores filled alike are equal)
        store.store_run(subjects, hdrs, [b"x" * (i % 7 + 1)] * RUN, stamps=range(i + 1, i + RUN + 1))


def _evicted(store: FileStore, msgs: int, k: int) -> list[int]:
    """``k`` random sequences of evicted pages, none its subject's first or last."""
    index = store._index
    table = index.subjects
    out = []
    for seq in random.Random(msgs).sample(range(2, msgs), 4 * k):
        p = index._covering(seq)
        if p is not None and not p.loaded and p is not index.tail:
            sid = table.ids[f"d.{(seq - 1) % RUN % SUBJECTS}"]
            if seq not in (table.first[sid], table.last[sid]):
                out.append(seq)
    return out[:k]


def _resident(store: FileStore, msgs: int, k: int) -> list[int]:
    """``k`` random sequences of sealed pages in memory (loaded, not the active block's)."""
    index = store._index
    seqs = [s for s in random.Random(2).sample(range(2, msgs), 12_000) if index._covering(s).loaded]
    return [s for s in seqs if index._covering(s) is not index.tail][:k]


def _reads_per_removal(monkeypatch: pytest.MonkeyPatch, store: FileStore, seqs: list[int]) -> tuple[float, float]:
    """``pread`` calls per removal into index files (``.idx``) and into block files."""
    counts = {"idx": 0, "blk": 0}
    pread = os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        counts["idx" if os.readlink(f"/proc/self/fd/{fd}").endswith(".idx") else "blk"] += 1
        return pread(fd, n, off)

    loads = store._index.loads
    monkeypatch.setattr(os, "pread", counting)
    try:
        assert all(store.remove_msg(s) for s in seqs)
    finally:
        monkeypatch.setattr(os, "pread", pread)
    assert store._index.loads == loads  # (no page loaded)
    return counts["idx"] / len(seqs), counts["blk"] / len(seqs)


@pytest.mark.parametrize("by_span", [True, False])
def test_a_removal_reads_its_span_and_no_index_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_span: bool
) -> None:
    """At 20k and 200k messages (~40 and ~400 blocks of 32 KiB, a thousand slots resident), a
    removal of a random message of an evicted page reads no index file and at most one stretch
    of its block (none where the read-ahead window or the block cache holds it). Off, the
    slot is peeked with its subject id from the index file: reads there too."""
    monkeypatch.setattr(remove_one, "BY_SPAN", by_span)
    per = []
    for msgs in (20_000, 200_000):
        store = _open(tmp_path / f"s{msgs}")
        try:
            _fill(store, msgs)
            seqs = _evicted(store, msgs, 300)
            assert len(seqs) == 300
            per.append(_reads_per_removal(monkeypatch, store, seqs))
            assert not any(store.remove_msg(s) for s in seqs[:20])  # gone: nothing to remove
        finally:
            store.stop()
    if by_span:
        assert all(idx == 0 and blk <= 1.0 for idx, blk in per), per
    else:
        assert all(idx >= 1.0 for idx, _blk in per), per


@pytest.mark.parametrize(("switch", "compression"), [("BY_SPAN", "none"), ("BY_SPAN", "s2"), ("PEEK_IN_PAGE", "none")])
def test_span_removals_equal_slot_removals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switch: str, compression: str
) -> None:
    """The same removals (every third a secure erase) with `remove_one.BY_SPAN` (or
    `remove_one.PEEK_IN_PAGE`) on and off leave the same stored state: at once, after a restart,
    and after more removals and a crash. Compressed records too: a removal by span counts the
    payload's length decompressed (`BlockFiles.read_located`), as a read of it does."""
    msgs = 20_000
    seqs = [*random.Random(5).sample(range(2, msgs), 2000), 1]
    stores = {on: _open(tmp_path / str(on), compression=compression) for on in (True, False)}
    for store in stores.values():
        if compression == "none":
            _fill(store, msgs)
        else:  # (one by one: a compressed store's run across a block's end is not indexed whole)
            for i in range(msgs):
                hdr = b"NATS/1.0\r\nA: b\r\n\r\n" if i % 3 == 0 else b""
                store.store_msg(f"d.{i % RUN % SUBJECTS}", hdr, b"x" * (i % 7 + 1), ts=i + 1)

    def remove(seq: int, erase: bool) -> None:
        got = []
        for on, store in stores.items():
            monkeypatch.setattr(remove_one, switch, on)
            got.append(store.remove_msg(seq, erase))
        assert got[0] == got[1]

    def pictures() -> list[tuple[object, ...]]:
        return [observed_state(store, "d.1") for store in stores.values()]

    for i, seq in enumerate(seqs):
        remove(seq, i % 3 == 0)
    first, second = pictures()
    assert first == second
    for on, store in stores.items():
        store.stop()
        stores[on] = _open(tmp_path / str(on), compression=compression)
    assert pictures() == [first, first]
    for i, seq in enumerate(random.Random(6).sample(range(2, msgs), 600)):
        remove(seq, i % 2 == 0)
    want = pictures()
    assert want[0] == want[1]
    for on, store in stores.items():
        crash(store)
        stores[on] = _open(tmp_path / str(on), compression=compression)
    try:
        assert pictures() == want
    finally:
        for store in stores.values():
            store.stop()


def test_an_erase_passes_over_a_payload_holding_its_record(tmp_path: Path) -> None:
    """Each message's payload holds a whole valid record (sequence, kind, length, CRC) of the
    next message, just before the real one: the span's search meets the copy first, and only
    the walk from the span's start over the records' lengths tells it lies inside another
    record (before, a get of an evicted page answered the copy's bytes). Every third message is
    erased from its evicted page (too few for its block to be rewritten); every get answers
    what was stored, before and after the erases and after a restart."""
    store = _open(tmp_path / "s", cache_slots=200)
    n = 4_000
    want = {}
    for seq in range(1, n + 1):
        fake = bytearray()
        append_record(fake, KIND_MSG, seq + 1, 7, f"f.{seq % 20}".encode(), 0, b"y" * 24)
        want[seq] = bytes(fake)
        store.store_msg(f"f.{seq % 20}", b"", want[seq])
    try:
        index = store._index
        assert all(store.load_msg(s).data == want[s] for s in range(1, n + 1))
        erased = [s for s in range(41, n - 40, 3) if not index._covering(s).loaded]
        assert len(erased) > 800 and store._backend.peeks._spans
        for seq in erased:
            assert store.remove_msg(seq, True)
        assert index.loads == 0
        kept = [s for s in range(1, n + 1) if s not in set(erased)]
        assert all(store.load_msg(s).data == want[s] for s in kept)
        assert not store._backend.damaged and store.state().msgs == len(kept)
        store.stop()
        store = _open(tmp_path / "s", cache_slots=200)
        assert all(store.load_msg(s).data == want[s] for s in kept)
        assert store.state().msgs == len(kept) and not store.state().lost
    finally:
        store.stop()


def test_a_sealed_removal_flushes_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A removal from a sealed block hands its tombstone to the OS in one flush of pending writes
    per removal (the commit's; the maintenance pass after it flushed again, with nothing pending,
    when it rewrote and unlinked nothing) and one more for a secure erase (its tombstone must
    reach the OS before the overwrite): at 20k and 200k messages, resident and evicted pages.
    (Tombstones into their own sealed blocks, as an erase's: into the active block a removal
    takes the commit's one write, `tests/store/test_tombstones_last_block.py`.)"""
    from pyjetstream.server.jetstream.store import blockfiles
    from pyjetstream.server.jetstream.store.blockfiles import BlockFiles

    monkeypatch.setattr(blockfiles, "TOMBSTONES_IN_LAST_BLOCK", False)

    calls = [0]
    flush = BlockFiles.flush_writes

    def counting(self: BlockFiles) -> None:
        calls[0] += 1
        flush(self)

    for msgs in (20_000, 200_000):
        store = _open(tmp_path / f"s{msgs}", cache_slots=8_000)
        try:
            _fill(store, msgs)
            seqs = _evicted(store, msgs, 100)
            resident = _resident(store, msgs, 100)
            assert len(seqs) == len(resident) == 100
            monkeypatch.setattr(BlockFiles, "flush_writes", counting)
            for erase, want in ((False, 1), (True, 2)):
                for group in (seqs[:50], resident[:50]) if not erase else (seqs[50:], resident[50:]):
                    calls[0] = 0
                    assert all(store.remove_msg(s, erase) for s in group)
                    assert calls[0] == want * len(group), (msgs, erase, calls[0])
            monkeypatch.setattr(BlockFiles, "flush_writes", flush)
        finally:
            store.stop()


@pytest.mark.parametrize("load", [False, True])
def test_removals_read_no_block_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, load: bool) -> None:
    """Random removals from evicted pages read their spans, not their blocks whole into the block
    cache (`blockfiles.REMOVALS_LOAD_BLOCKS`, off): no block loaded at 20k and 200k messages,
    however many removals a block takes. On, a block taking more than the cache's ``load_after``
    reads out of order is read whole, as for gets."""
    from pyjetstream.server.jetstream.store import blockfiles

    monkeypatch.setattr(blockfiles, "REMOVALS_LOAD_BLOCKS", load)
    for msgs in (20_000, 200_000):
        store = _open(tmp_path / f"s{msgs}")
        try:
            _fill(store, msgs)
            cache = store._backend._whole
            cache.load_after = 4  # (blocks of ~800 messages: a few removals each)
            seqs = _evicted(store, msgs, 400)
            assert all(store.remove_msg(s) for s in seqs)
            assert (cache.loads > 0) if load else (cache.loads == 0), (msgs, cache.loads)
        finally:
            store.stop()
