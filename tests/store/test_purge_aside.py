"""A purge of a large file store renames its old blocks aside and a thread removes them (nats-server's
``purge`` renames its msgs directory and removes it out of band): unlinking gigabytes frees their
extents in the caller, seconds of a held event loop (2 GiB of 8 MiB blocks: ~150 ms of CPU and
~3 s of wall time on the development machine). What a stop leaves aside goes at the next open."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from tests.store.test_block_cache import BLOCK, filled

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, blockfiles


def aside_dirs(d: Path) -> list[Path]:
    return [p for p in d.iterdir() if p.name.startswith(".msgs.deleted.")]


def wait_gone(d: Path) -> None:
    deadline = time.monotonic() + 30
    while aside_dirs(d):
        assert time.monotonic() < deadline, aside_dirs(d)
        time.sleep(0.02)


@pytest.mark.parametrize("later", [True, False])
def test_a_purge_removes_every_old_block(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, later: bool) -> None:
    """Both ways end in the same store: the old blocks and their indexes gone, the purge's answer
    and state the same, the messages after it stored and read back after a restart."""
    monkeypatch.setattr(blockfiles, "REMOVE_LATER_BYTES", 0 if later else 1 << 62)
    unlinks = 0
    unlink = os.unlink

    def counted(path: str, *a: object, **k: object) -> None:
        nonlocal unlinks
        if threading.current_thread() is threading.main_thread() and str(path).endswith((".blk", ".idx")):
            unlinks += 1
        unlink(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", counted)
    s = filled(tmp_path, 20_000)
    msgs = tmp_path / "msgs"
    old = {p.name for p in msgs.iterdir() if p.suffix in (".blk", ".idx")}
    assert len(old) > 20
    assert s.purge() == 20_000
    if later:
        assert unlinks == 0  # renamed aside, not unlinked by the caller
    else:
        assert unlinks >= len(old)
    s.store_msg("m.x", b"", b"after")
    wait_gone(tmp_path)
    assert not old & {p.name for p in msgs.iterdir()}
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (1, 20_001, 20_001)
    s.stop()
    s = FileStore(FileStoreConfig(str(tmp_path), block_size=BLOCK), StoreConfig())
    try:
        st = s.state()
        assert (st.msgs, st.first_seq, st.last_seq) == (1, 20_001, 20_001)
        assert s.load_msg(20_001).data == b"after"
    finally:
        s.stop()


def test_an_aside_directory_a_stop_left_goes_at_the_next_open(tmp_path: Path) -> None:
    s = filled(tmp_path, 100)
    s.stop()
    left = tmp_path / ".msgs.deleted.0123456789ab"
    left.mkdir()
    (left / "1.blk").write_bytes(b"x" * 1000)
    s = FileStore(FileStoreConfig(str(tmp_path), block_size=BLOCK), StoreConfig())
    try:
        wait_gone(tmp_path)
        assert s.state().msgs == 100
    finally:
        s.stop()
