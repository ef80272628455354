"""A full disk or an I/O error while writing (issue #15), with a failing file layer put in place of
the block writes: the failed write is taken back whole (the state counts only what is stored, a
partly written record is cut), the error says why (``ErrInsufficientResources`` → 10023), the store
keeps working once the disk has room again, and a restart finds exactly what was acknowledged,
with nothing reported as lost."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ErrInsufficientResources,
    ErrStoreWrite,
    FileStore,
    FileStoreConfig,
    StoreConfig,
    blockfiles,
)

from .conftest import crash


class Disk:
    """The block writes, failing while ``full`` (after writing ``partial`` bytes of a call)."""

    def __init__(self) -> None:
        self.full = False
        self.partial = 0
        self.code = errno.ENOSPC

    def pwrite(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> int:
        if not self.full:
            return os.pwrite(fd, data, offset)
        if self.partial:
            n = os.pwrite(fd, memoryview(data)[: self.partial], offset)
            self.partial = 0
            return n
        raise OSError(self.code, os.strerror(self.code))


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    d = Disk()
    monkeypatch.setattr(blockfiles._io, "pwrite", d.pwrite)
    yield d


def reopen(path: Path, store: FileStore, **fcfg: object) -> FileStore:
    crash(store)
    return FileStore(FileStoreConfig(str(path), **fcfg), StoreConfig())  # type: ignore[arg-type]


def state_of(store: FileStore) -> tuple[int, int, int]:
    st = store.state()
    return st.msgs, st.first_seq, st.last_seq


def test_failed_batch_is_taken_back(tmp_path: Path, disk: Disk) -> None:
    s = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig())
    for i in range(5):
        s.store_msg("a", b"", b"%d" % i)
    disk.full = True
    with pytest.raises(ErrInsufficientResources, match="insufficient resources"):
        with s.batch():
            for i in range(3):
                s.store_msg("b", b"", b"x%d" % i)
    assert state_of(s) == (5, 1, 5)
    assert s.subjects_totals() == {"a": 5}
    disk.full = False
    assert s.store_msg("b", b"", b"after")[0] == 6
    s2 = reopen(tmp_path, s)
    assert state_of(s2) == (6, 1, 6)
    assert s2.load_msg(6).data == b"after"
    assert s2.state().lost is None
    s2.stop()


def test_partly_written_record_is_cut_and_not_lost(tmp_path: Path, disk: Disk) -> None:
    s = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig())
    s.store_msg("a", b"", b"kept")
    disk.full, disk.partial = True, 20
    with pytest.raises(ErrInsufficientResources):
        s.store_msg("a", b"", b"y" * 100)
    assert state_of(s) == (1, 1, 1)
    s2 = reopen(tmp_path, s)
    assert state_of(s2) == (1, 1, 1)
    assert s2.state().lost is None
    s2.stop()


def test_failure_across_new_blocks(tmp_path: Path, disk: Disk) -> None:
    s = FileStore(FileStoreConfig(str(tmp_path), block_size=1024), StoreConfig())
    for i in range(10):
        s.store_msg("a", b"", b"%d" % i * 20)
    blocks = sorted(os.listdir(tmp_path / "msgs"))
    disk.full = True
    disk.code = errno.EIO
    with pytest.raises(ErrStoreWrite):
        with s.batch():
            for _ in range(40):
                s.store_msg("b", b"", b"z" * 100)
    assert state_of(s) == (10, 1, 10)
    assert sorted(os.listdir(tmp_path / "msgs")) == blocks
    disk.full = False
    # An I/O error (not a full disk) freezes the store's writes, as nats-server's fileStore.werr:
    # reads keep working; a store opened again writes.
    assert s.write_error is not None
    with pytest.raises(ErrStoreWrite, match="write failed"):
        s.store_msg("c", b"", b"refused")
    with pytest.raises(ErrStoreWrite):
        s.skip_msg()
    assert s.load_msg(10).subject == "a"
    assert state_of(s) == (10, 1, 10)
    s2 = reopen(tmp_path, s, block_size=1024)
    assert s2.write_error is None
    with s2.batch():
        for _ in range(40):
            s2.store_msg("c", b"", b"w" * 100)
    assert state_of(s2) == (50, 1, 50)
    s2 = reopen(tmp_path, s2, block_size=1024)
    assert state_of(s2) == (50, 1, 50)
    assert s2.subjects_totals() == {"a": 10, "c": 40}
    assert s2.state().lost is None
    s2.stop()


def test_full_disk_does_not_freeze(tmp_path: Path, disk: Disk) -> None:
    s = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig())
    s.store_msg("a", b"", b"1")
    disk.full = True
    with pytest.raises(ErrInsufficientResources):
        s.store_msg("a", b"", b"2")
    assert s.write_error is None
    disk.full = False
    assert s.store_msg("a", b"", b"3")[0] == 2
    s.stop()
