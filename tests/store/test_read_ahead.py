"""A sealed block's read-ahead (BlockFiles._read_sealed): a reader walking forward reads the block
in large windows, a read out of order (a NAK's redelivery, a get by sequence) reads a page, not
the 256 KiB window — counted in bytes asked of the OS, no timing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import blockfiles, run_reader
from pyjetstream.server.jetstream.store.base import StoreConfig
from pyjetstream.server.jetstream.store.filestore import FileStore, FileStoreConfig

MSGS = 12_000
PAYLOAD = b"x" * 100


@pytest.fixture
def store(tmp_path: Path) -> FileStore:
    fs = FileStore(FileStoreConfig(directory=str(tmp_path / "s"), block_size=1 << 19), StoreConfig(name="S"))
    for i in range(MSGS):
        fs.store_msg(f"r.{i % 7}", b"", PAYLOAD)
    fs.store_msg("r.last", b"", PAYLOAD)  # (sequences up to MSGS are in sealed blocks)
    return fs


def _bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    asked: list[int] = []
    pread = blockfiles.os.pread

    def counting(fd: int, n: int, off: int) -> bytes:
        asked.append(n)
        return pread(fd, n, off)

    monkeypatch.setattr(blockfiles.os, "pread", counting)
    return asked


def test_random_reads_take_a_page_each(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    assert len(store._backend.blocks) > 1
    asked = _bytes_read(monkeypatch)
    rng = random.Random(7)
    seqs = [rng.randrange(1, MSGS) for _ in range(300)]
    for seq in seqs:
        assert store.load_msg(seq).data == PAYLOAD
    windows = sum(1 for n in asked if n > blockfiles.SMALL_READ)
    assert len(asked) <= len(seqs) and windows <= len(seqs) // 50  # (one landing in the last page read)


def test_a_forward_walk_reads_each_byte_about_once(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _bytes_read(monkeypatch)
    for seq in range(1, MSGS):
        store.load_msg(seq)
    sealed = sum(blk.written for blk in store._backend.blocks[:-1])
    # one small read where each block starts, then windows of READ_AHEAD
    assert sum(asked) <= sealed + len(store._backend.blocks) * (blockfiles.SMALL_READ + blockfiles.READ_AHEAD)
    assert len(asked) <= 2 * (sealed // blockfiles.READ_AHEAD + 2 * len(store._backend.blocks))


def _mirror_copied(store: FileStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    copied: list[int] = []
    backend = store._backend
    real = backend.mirror_window

    def counting(off: int, plen: int, last: int, limit: int = blockfiles.READ_AHEAD) -> bytes:
        data = real(off, plen, last, limit)
        copied.append(len(data))
        return data

    monkeypatch.setattr(backend, "mirror_window", counting)
    return copied


@pytest.mark.parametrize("step", [1, 2, 50])
def test_a_run_copies_what_it_reads_of_the_active_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    """The active block's records are read from a copy of its mirror (`read_run`): a dense run (every
    message, every other) copies its span about once; a sparse one (a redelivery run: one in 50)
    copies each record it reads, not the span between them — counted in bytes copied."""
    fs = FileStore(FileStoreConfig(directory=str(tmp_path / "s"), block_size=1 << 22), StoreConfig(name="S"))
    for i in range(4000):
        fs.store_msg(f"r.{i % 7}", b"", PAYLOAD)
    assert len(fs._backend.blocks) == 1
    copied = _mirror_copied(fs, monkeypatch)
    seqs = list(range(1, 4001, step))
    assert [m[4] for m in fs.load_msgs(seqs)] == [PAYLOAD] * len(seqs)
    record = fs._backend.blocks[0].written // 4000  # (about: the subjects are all as long)
    if step < 4:
        assert sum(copied) <= record * (seqs[-1] - seqs[0] + 1) + blockfiles.READ_AHEAD
        assert len(copied) <= 2 + record * 4000 // blockfiles.READ_AHEAD
    else:
        assert sum(copied) <= 2 * record * len(seqs)


def _tenth_read(fs: FileStore) -> list[tuple[str, int, int, bytes, bytes]]:
    """What a consumer on ``k.3.*`` reads of the store, in read-ahead runs of 250 (its pass's)."""
    out: list[tuple[str, int, int, bytes, bytes]] = []
    seq = 1
    while run := fs.load_next_msgs("k.3.*", seq, 250, 1 << 20):
        out.extend(run)
        seq = run[-1][1] + 1
    return out


@pytest.mark.parametrize("msgs", [4_000, 40_000])
def test_a_sparse_run_copies_a_window_per_few_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, msgs: int
) -> None:
    """A consumer on a tenth of the subjects reads every tenth small record of the active block: its
    runs copy a window per ~`run_reader.SPARSE_REACH` bytes, not one per record (calls of
    `BlockFiles.mirror_window` per message read: ~0.12 at 4,000 and 40,000 messages, 1 before),
    and no more bytes than the span they read plus a window each."""
    fs = FileStore(FileStoreConfig(directory=str(tmp_path / "s"), block_size=1 << 23), StoreConfig(name="S"))
    for i in range(msgs):
        fs.store_msg(f"k.{i % 10}.{i // 10}", b"", b"x" * 16)
    assert len(fs._backend.blocks) == 1
    copied = _mirror_copied(fs, monkeypatch)
    got = _tenth_read(fs)
    assert len(got) == msgs // 10
    assert len(copied) <= len(got) // 4
    record = fs._backend.blocks[0].written // msgs
    assert sum(copied) <= record * msgs + len(copied) * record


@pytest.mark.parametrize("big", [False, True])
def test_sparse_reach_on_equals_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, big: bool) -> None:
    """The same messages with `run_reader.SPARSE_REACH` on and off (0: each record alone), records
    of mixed lengths (some longer than the reach), a tenth, every message and every 50th read."""
    fs = FileStore(FileStoreConfig(directory=str(tmp_path / "s"), block_size=1 << 24), StoreConfig(name="S"))
    rng = random.Random(11)
    for i in range(6_000):
        size = rng.choice((0, 16, 300, 5_000 if big else 40))
        fs.store_msg(f"k.{i % 10}.{i // 10}", b"NATS/1.0\r\nA: b\r\n\r\n" if i % 3 == 0 else b"", b"y" * size)
    seqs = list(range(1, 6_001, 50))
    on = (_tenth_read(fs), fs.load_msgs(seqs), fs.load_next_msgs(">", 1, 6_000, 1 << 30))
    monkeypatch.setattr(run_reader, "SPARSE_REACH", 0)
    off = (_tenth_read(fs), fs.load_msgs(seqs), fs.load_next_msgs(">", 1, 6_000, 1 << 30))
    assert on == off
    assert len(on[0]) == 600 and len(on[1]) == 120
