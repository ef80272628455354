"""Damage a user's disk can do to a file store (issue #15): a truncated, garbled or missing index
snapshot, flipped bytes inside a block, a block file deleted under a running store. Recovery keeps
every intact message, reports exactly what was lost (``lost``, as nats-server's LostStreamData),
and never raises."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import ErrStoreMsgNotFound, FileStore, FileStoreConfig, StoreConfig

from .conftest import crash

SNAP = os.path.join("msgs", "index.db")  # the stream state


def open_fs(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=1024, compact_min_bytes=1 << 30), StoreConfig())


def blocks(d: Path) -> list[Path]:
    return sorted((d / "msgs").glob("*.blk"), key=lambda p: int(p.stem))


def filled(d: Path, n: int = 100) -> FileStore:
    s = open_fs(d)
    for i in range(n):
        s.store_msg(f"s.{i % 3}", b"", b"msg-%03d" % i * 5)
    return s


def present(s: FileStore, last: int) -> list[int]:
    out = []
    for seq in range(1, last + 1):
        try:
            s.load_msg(seq)
            out.append(seq)
        except ErrStoreMsgNotFound:
            pass
    return out


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbled", "empty"])
def test_bad_snapshot_falls_back_to_blocks(tmp_path: Path, damage: str) -> None:
    d = tmp_path / "s"
    s = filled(d)
    s.remove_msg(10)
    before = (s.state(deleted_details=True), s.subjects_totals())
    s.stop()
    snap = d / SNAP
    assert snap.exists()
    data = snap.read_bytes()
    if damage == "missing":
        snap.unlink()
    elif damage == "truncated":
        snap.write_bytes(data[: len(data) // 2])
    elif damage == "garbled":
        mid = len(data) // 2
        snap.write_bytes(data[:mid] + bytes(b ^ 0xFF for b in data[mid : mid + 8]) + data[mid + 8 :])
    else:
        snap.write_bytes(b"")
    s2 = open_fs(d)
    assert (s2.state(deleted_details=True), s2.subjects_totals()) == before
    assert s2.state().lost is None
    assert s2.store_msg("s.0", b"", b"after")[0] == 101
    s2.stop()


def test_flipped_bytes_in_several_blocks(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    crash(s)
    files = blocks(d)
    assert len(files) >= 4
    for blk in (files[0], files[2]):
        data = bytearray(blk.read_bytes())
        # Flip bytes in the middle of the block's payload area.
        pos = len(data) // 2
        for k in range(3):
            data[pos + k] ^= 0x5A
        blk.write_bytes(bytes(data))
    s2 = open_fs(d)
    st = s2.state()
    assert st.lost is not None and st.lost.msgs
    lost_expected = set(st.lost.msgs)
    kept = present(s2, 100)
    # Every message is either kept intact or reported lost; never both, never silently gone.
    assert set(kept) | lost_expected == set(range(1, 101))
    assert not set(kept) & lost_expected
    for seq in kept:
        assert s2.load_msg(seq).data == b"msg-%03d" % (seq - 1) * 5
    assert st.msgs == len(kept)
    assert s2.store_msg("s.0", b"", b"after")[0] == 101
    s2.stop()


def test_block_deleted_under_running_store(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    files = blocks(d)
    assert len(files) >= 3
    victim = files[1]
    victim.unlink()
    # The running store keeps serving (reads of the gone block fail or still see the open file).
    for seq in (1, 100):
        assert s.load_msg(seq).subject.startswith("s.")
    s.store_msg("s.0", b"", b"more")
    s.stop()
    s2 = open_fs(d)
    st = s2.state()
    kept = present(s2, 101)
    lost = set(st.lost.msgs) if st.lost is not None else set()
    assert lost, "the messages of the deleted block are reported lost"
    assert set(kept) | lost == set(range(1, 102))
    assert not set(kept) & lost
    assert st.msgs == len(kept) and st.last_seq == 101
    s2.stop()


def test_block_deleted_while_stopped(tmp_path: Path) -> None:
    # After a clean stop the snapshot lists the blocks; a block gone since is reported. (After a
    # kill -9 the block's index names them: test_block_index.py.)
    d = tmp_path / "s"
    s = filled(d)
    s.stop()
    files = blocks(d)
    files[1].unlink()
    s2 = open_fs(d)
    st = s2.state()
    kept = present(s2, 100)
    lost = set(st.lost.msgs) if st.lost is not None else set()
    assert lost and set(kept) | lost == set(range(1, 101)) and not set(kept) & lost
    assert (st.first_seq, st.last_seq, st.msgs) == (1, 100, len(kept))
    s2.stop()
