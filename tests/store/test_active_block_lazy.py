"""A restart reads the active block into its mirror when something first needs it
(`BlockFiles.active_bytes`, as nats-server loads a block's cache on first use), not at the open:
counted in reads of the block (`BlockFiles.mirror_loads`), not timed, at two sizes of the block;
what is read, written, removed and recovered after it (a clean stop, a crash) is what an eager
read gave."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.store.conftest import crash

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig
from pyjetstream.server.jetstream.store.base import ErrStoreMsgNotFound
from pyjetstream.server.jetstream.store.blockfiles import BlockFiles


def _open(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d)), StoreConfig(name="S"))


def _backend(s: FileStore) -> BlockFiles:
    b = s._backend
    assert isinstance(b, BlockFiles)
    return b


def _messages(s: FileStore) -> list[tuple[str, bytes]]:
    st = s.state()
    out = []
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            m = s.load_msg(seq)
        except ErrStoreMsgNotFound:
            continue
        out.append((m.subject, m.data))
    return out


@pytest.mark.parametrize("n", [200, 5_000])
def test_a_restart_reads_the_active_block_when_first_needed(tmp_path: Path, n: int) -> None:
    s = _open(tmp_path)
    with s.batch():
        for i in range(n):
            s.store_msg(f"m.{i % 10}", b"", b"payload-%06d" % i)
    s.stop()

    s = _open(tmp_path)
    b = _backend(s)
    assert len(b.blocks) == 1  # (all of them in the active block)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (n, 1, n)
    assert b.mirror_loads == 0  # (opened, its state asked: the block not read)
    assert s.load_msg(n).data == b"payload-%06d" % (n - 1)
    assert b.mirror_loads == 1
    s.store_msg("m.new", b"", b"after")
    s.remove_msg(2)
    assert b.mirror_loads == 1  # (read once)
    expected = _messages(s)
    s.stop()

    s = _open(tmp_path)
    assert _messages(s) == expected and _backend(s).mirror_loads == 1  # (the reads of the check)
    s.stop()


@pytest.mark.parametrize("first", ["write", "remove", "read"])
def test_what_follows_a_lazy_restart_survives_a_crash(tmp_path: Path, first: str) -> None:
    """The first thing after the restart is a write, a removal (its tombstone goes into the active
    block) or a read; then more writes, then ``kill -9``: the recovered messages are those written."""
    s = _open(tmp_path)
    for i in range(300):
        s.store_msg("a", b"", b"x%d" % i)
    s.stop()

    s = _open(tmp_path)
    assert _backend(s).mirror_loads == 0
    if first == "write":
        s.store_msg("b", b"", b"first")
    elif first == "remove":
        s.remove_msg(5)
    else:
        assert s.load_msg(7).data == b"x6"
    for i in range(50):
        s.store_msg("c", b"", b"y%d" % i)
    s.remove_msg(100)
    expected = _messages(s)
    crash(s)

    s = _open(tmp_path)
    assert _backend(s).mirror_loads == 0  # (the crash recovery reads the block its own way)
    assert _messages(s) == expected
    s.stop()
