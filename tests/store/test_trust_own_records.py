"""A consumer's read-ahead (`BlockFiles.read_run`) and a read of one message (`load_msg`:
`BlockFiles._record`) skip the CRC of records this process wrote (`_Block.ours`, nats-server's
``cbit``): the same messages come back as with every CRC checked
(``FileStoreConfig.trust_own_records`` off), the CRC is computed only for blocks found on disk.
A damaged record in a block found on disk is still dropped and listed lost: test_damage_matrix
reads through the run path too."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from tests.jetstream.scale_steps import count_calls

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, blockfiles
from pyjetstream.server.jetstream.store.base import MsgTuple, StoredMsg, StoreError

HDR = b"NATS/1.0\r\nX-K: %d\r\n\r\n"
TS0 = 1_800_000_000 * 10**9  # (timestamps given: the two stores' reads compare whole tuples)


def open_fs(d: Path, trust: bool) -> FileStore:
    cfg = FileStoreConfig(str(d), block_size=2048, compact_min_bytes=1 << 30, trust_own_records=trust)
    return FileStore(cfg, StoreConfig())


def write(s: FileStore, rnd: random.Random, n: int) -> None:
    for _ in range(n):
        k = rnd.randrange(50)
        hdr = HDR % k if rnd.random() < 0.3 else b""
        payload = rnd.randbytes(rnd.choice((0, 1, 16, 100, 700)))
        s.store_msg(f"t.{k % 7}.{'xy'[k % 2]}", hdr, payload, ts=TS0 + s.state().last_seq)
    for _ in range(n // 10):
        s.remove_msg(rnd.randrange(1, s.state().last_seq + 1))


def every_read(s: FileStore) -> list[list[MsgTuple] | list[StoredMsg | None]]:
    last = s.state().last_seq
    return [
        s.load_next_msgs(">", 1, last, 1 << 30),
        s.load_next_msgs("t.*.x", 3, 50, 1 << 30),
        s.load_next_msgs_multi(["t.1.y", "t.4.>"], 1, last, 4000),
        s.load_msgs(range(1, last + 1, 3)),
        [get(s, seq) for seq in range(1, last + 2)],
    ]


def reopened_with_writes(tmp_path: Path, seed: int) -> tuple[FileStore, int]:
    """A trusting store with 200 messages written, stopped and reopened, then 200 more written: the
    first in blocks found on disk, the last in blocks this process wrote; and its last sequence at
    the reopen."""
    rnd = random.Random(seed)
    d = tmp_path / "s"
    s = open_fs(d, True)
    write(s, rnd, 200)
    s.stop()
    s = open_fs(d, True)
    old_last = s.state().last_seq
    write(s, rnd, 200)
    return s, old_last


def get(s: FileStore, seq: int) -> StoredMsg | None:
    try:
        return s.load_msg(seq)
    except StoreError:
        return None


@pytest.mark.parametrize("seed", range(4))
def test_trusted_reads_equal_checked_reads(tmp_path: Path, seed: int) -> None:
    """The same writes (with removals and a reopen between them) into two stores, one trusting
    its own records and one checking every CRC: every read agrees, before the reopen (all blocks
    ours), after it (blocks found on disk) and after more writes (both kinds)."""
    stores = {trust: open_fs(tmp_path / str(trust), trust) for trust in (True, False)}
    rnds = {trust: random.Random(seed) for trust in stores}
    for step in range(3):
        for trust, s in stores.items():
            write(s, rnds[trust], 300)
        assert every_read(stores[True]) == every_read(stores[False]), f"step {step}"
        if step == 0:
            for trust, s in stores.items():
                s.stop()
                stores[trust] = open_fs(tmp_path / str(trust), trust)
            assert every_read(stores[True]) == every_read(stores[False]), "reopened"
    for s in stores.values():
        s.stop()


def test_only_blocks_found_on_disk_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step count: the CRC is computed once per record of the blocks found on disk, never for
    records written since the open; with the switch off, for every record."""
    s, old_last = reopened_with_writes(tmp_path, 7)
    last = s.state().last_seq
    # The records this process wrote: from the first block it started (the active block found
    # on disk took the first writes after the open, and is checked).
    mine = next(b.first_seq for b in s._backend.blocks if b.ours)
    found = len(s.load_msgs(range(old_last + 1, mine)))
    with count_calls(monkeypatch, blockfiles, "_crc32") as calls:
        new = len(s.load_next_msgs(">", old_last + 1, last, 1 << 30))
        assert new > 100 and calls["_crc32"] == found
        calls.clear()
        everything = s.load_next_msgs(">", 1, last, 1 << 30)
        assert calls["_crc32"] == sum(1 for m in everything if m[1] < mine) > 100
        s._backend.trust_own = False
        calls.clear()
        assert len(s.load_next_msgs(">", old_last + 1, last, 1 << 30)) == new and calls["_crc32"] == new
    s.stop()


def test_a_get_checks_only_blocks_found_on_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step count for `load_msg` (a direct or STREAM.MSG get): one CRC per record read from a
    block found on disk, none for records this process wrote; with the switch off, one each."""
    s, _ = reopened_with_writes(tmp_path, 11)
    mine = next(b.first_seq for b in s._backend.blocks if b.ours)
    with count_calls(monkeypatch, blockfiles, "_crc32") as calls:
        got = [m for m in (get(s, seq) for seq in range(1, s.state().last_seq + 1)) if m is not None]
        found = sum(1 for m in got if m.seq < mine)
        assert len(got) - found > 100 and found > 50
        assert calls["_crc32"] == found
        s._backend.trust_own = False
        calls.clear()
        assert [get(s, m.seq) for m in got] == got and calls["_crc32"] == len(got)
    s.stop()
