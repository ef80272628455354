"""Issue 24, dimension 5 (a NAK's redelivery among 100,000 pending): reads out of order in a sealed
block take a small ``pread`` each until the block has taken `LOAD_AFTER` of them, then the block is
read whole once and kept (`BlockCache`, nats-server's block cache), in bounded memory — counted,
not timed. A record erased or a block rewritten in place is never read from a stale copy."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig
from pyjetstream.server.jetstream.store.base import ErrStoreMsgNotFound
from pyjetstream.server.jetstream.store.blockcache import LOAD_AFTER, BlockCache
from pyjetstream.server.jetstream.store.blockfiles import BlockFiles

BLOCK = 64 * 1024  # ~1,500 messages a block


def filled(d: Path, n: int) -> FileStore:
    s = FileStore(FileStoreConfig(str(d), block_size=BLOCK), StoreConfig())
    with s.batch():
        for i in range(n):
            s.store_msg(f"m.{i % 20}", b"", b"payload-%06d" % i)
    return s


def backend(s: FileStore) -> BlockFiles:
    b = s._backend
    assert isinstance(b, BlockFiles)
    return b


def cache(s: FileStore) -> BlockCache:
    return backend(s)._whole


def first_block_seqs(s: FileStore) -> range:
    b = backend(s)
    return range(b._firsts[0], b._firsts[1])


def test_random_reads_in_a_sealed_block_load_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = filled(tmp_path, 10_000)
    try:
        seqs = list(first_block_seqs(s))
        rng = random.Random(1)
        preads = 0
        pread = os.pread

        def counted(fd: int, n: int, off: int) -> bytes:
            nonlocal preads
            preads += 1
            return pread(fd, n, off)

        monkeypatch.setattr(os, "pread", counted)
        for k in range(2_000):
            seq = rng.choice(seqs)
            assert s.load_msg(seq).data == b"payload-%06d" % (seq - 1), k
        c = cache(s)
        assert c.loads == 1
        assert preads <= LOAD_AFTER + 5  # (a few hit the last small read's page: no pread)
        # a run read (a consumer's redeliveries) takes the same copy
        picked = sorted(rng.sample(seqs, 50), reverse=True)
        assert [m[4] for m in s.load_msgs(picked)] == [b"payload-%06d" % (q - 1) for q in picked]
        assert c.loads == 1
    finally:
        s.stop()


def test_the_cache_stays_within_its_bytes(tmp_path: Path) -> None:
    s = filled(tmp_path, 30_000)
    try:
        c = cache(s)
        c.limit = 3 * BLOCK
        b = backend(s)
        rng = random.Random(2)
        sealed = len(b._firsts) - 1
        assert sealed >= 10
        for _ in range(3):
            for j in range(sealed):
                lo, hi = b._firsts[j], b._firsts[j + 1]
                for _ in range(LOAD_AFTER + 5):
                    seq = rng.randrange(lo, hi)
                    assert s.load_msg(seq).data == b"payload-%06d" % (seq - 1)
                assert c.bytes <= c.limit
        assert c.loads >= 2 * sealed  # blocks loaded again after they were let go
    finally:
        s.stop()


def test_scattered_reads_do_not_load_blocks(tmp_path: Path) -> None:
    """Gets spread evenly over many blocks take a page each, however many: no block is read whole
    (each would be read again and again for a few records)."""
    s = filled(tmp_path, 30_000)
    try:
        rng = random.Random(3)
        for _ in range(5_000):
            seq = rng.randrange(1, 29_000)
            assert s.load_msg(seq).data == b"payload-%06d" % (seq - 1)
        assert cache(s).loads == 0
    finally:
        s.stop()


@pytest.mark.parametrize("change", ["erase", "compact"])
def test_a_changed_block_is_not_read_from_its_old_copy(tmp_path: Path, change: str) -> None:
    s = filled(tmp_path, 10_000)
    try:
        seqs = list(first_block_seqs(s))
        rng = random.Random(4)
        for _ in range(4 * LOAD_AFTER):
            s.load_msg(rng.choice(seqs))
        c = cache(s)
        assert c.loads == 1
        victim = seqs[10]
        blk = backend(s).blocks[0]
        written = blk.written
        if change == "erase":
            assert s.erase_msg(victim)
        else:
            for seq in seqs[: len(seqs) * 3 // 4]:  # most of the block: it is compacted in place
                s.remove_msg(seq)
            s.flush()
            assert blk.written < written  # rewritten in place: every record moved
        assert blk not in c._blocks
        with pytest.raises(ErrStoreMsgNotFound):
            s.load_msg(victim)
        for seq in seqs[-50:]:
            assert s.load_msg(seq).data == b"payload-%06d" % (seq - 1)
    finally:
        s.stop()


def test_gets_over_a_few_more_blocks_than_it_holds_do_not_thrash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gets spread evenly over a few more sealed blocks than the cache holds (1M messages: 6
    blocks of 8 MiB, 4 kept) each take more than one read in eight: every block asks to be read
    whole, and each load evicted a block that had not yet paid for its own (an 8 MiB read every
    ~230 gets, 29-39 µs a get). A kept block is let go only once it took a hit per
    `PAYBACK_BYTES` of it (or went unread for a while): the loads stay a few per payback's worth
    of hits."""
    from pyjetstream.server.jetstream.store import blockcache

    monkeypatch.setattr(blockcache, "PAYBACK_BYTES", 512)  # 128 hits for a 64 KiB block
    s = filled(tmp_path, 10_000)
    try:
        c = cache(s)
        c.limit = 3 * BLOCK
        b = backend(s)
        assert len(b._firsts) - 1 >= 5
        rng = random.Random(5)
        for _ in range(12_000):
            seq = rng.randrange(1, b._firsts[-1])
            assert s.load_msg(seq).data == b"payload-%06d" % (seq - 1)
        assert c.bytes <= c.limit
        assert c.hits > 4_000 and c.refused > 0
        assert c.loads <= 3 + c.hits // 128, (c.loads, c.hits)
    finally:
        s.stop()
