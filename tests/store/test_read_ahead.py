"""A sealed block's read-ahead (BlockFiles._read_sealed): a reader walking forward reads the block
in large windows, a read out of order (a NAK's redelivery, a get by sequence) reads a page, not
the 256 KiB window — counted in bytes asked of the OS, no timing."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import blockfiles
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

    def counting(off: int, plen: int, last: int) -> bytes:
        data = real(off, plen, last)
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
