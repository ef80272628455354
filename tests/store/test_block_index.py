"""Per-block indexes (``msgs/<n>.idx``, issue #14): a sealed block's slots are saved beside it,
so a restart after ``kill -9`` loads them and scans only the active block. An index that does
not match its block byte for byte is not trusted (the block is scanned); an index whose block
is gone reports the block's messages lost."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig

from .conftest import crash, observed_state

TTL_HDR = b"NATS/1.0\r\nNats-TTL: %d\r\n\r\n"


def open_fs(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=1024, compact_min_bytes=1 << 30), StoreConfig())


def blocks(d: Path) -> list[Path]:
    return sorted((d / "msgs").glob("*.blk"), key=lambda p: int(p.stem))


def indexes(d: Path) -> list[Path]:
    return sorted((d / "msgs").glob("*.idx"), key=lambda p: int(p.stem))


everything = partial(observed_state, pending_filter="s.*", ttls=True)


def filled(d: Path, n: int = 120) -> FileStore:
    s = open_fs(d)
    for i in range(n):
        hdr = TTL_HDR % 3600 if i % 7 == 0 else b""
        s.store_msg(f"s.{i % 4}", hdr, b"msg-%03d" % i * 4, ttl=3600 if i % 7 == 0 else 0)
    return s


def test_sealed_blocks_have_indexes_and_a_crash_restart_matches(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    n_blocks = len(blocks(d))
    assert n_blocks > 4
    assert [p.stem for p in indexes(d)] == [p.stem for p in blocks(d)[:-1]]
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    assert s2.state().lost is None
    # The active block is written to again: its index (none here) never outlives that.
    assert blocks(d)[-1].stem not in {p.stem for p in indexes(d)}
    assert s2.store_msg("s.0", b"", b"after")[0] == 121
    before = everything(s2)
    crash(s2)
    s3 = open_fs(d)
    assert everything(s3) == before
    s3.stop()


def test_changes_to_sealed_blocks_after_their_index(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    s.remove_msg(20)  # a tombstone in a sealed block: its index is stale
    s.erase_msg(33)  # same size, in place: the index must not bring it back
    s.remove_msg(1)  # the first message: a floor in the active block
    s.compact(5)
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    assert s2.state().lost is None
    st = s2.state()
    assert st.first_seq == 5 and 20 in (st.deleted or s2.state(deleted_details=True).deleted)
    before = everything(s2)
    s2.sync()  # writes fresh indexes for the blocks scanned at start
    crash(s2)
    s3 = open_fs(d)
    assert everything(s3) == before
    s3.stop()


def test_index_that_disagrees_with_its_block_is_not_trusted(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    before = everything(s)
    crash(s)
    idx = indexes(d)
    shutil.copyfile(idx[0], idx[1])  # another block's index under this block's name
    idx[2].write_bytes(idx[2].read_bytes()[:40])  # torn
    data = bytearray(idx[3].read_bytes())
    data[len(data) // 2] ^= 0xFF  # flipped
    idx[3].write_bytes(bytes(data))
    s2 = open_fs(d)
    assert everything(s2) == before
    assert s2.state().lost is None
    s2.stop()


def test_block_deleted_before_a_crash_is_reported_lost(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    crash(s)
    victim = blocks(d)[2]
    victim.unlink()  # its index stays: the messages it held are known
    s2 = open_fs(d)
    st = s2.state()
    kept = {m.seq for m in everything(s2)[2]}  # type: ignore[attr-defined]
    assert st.lost is not None and st.lost.msgs and st.lost.bytes > 0
    assert kept | set(st.lost.msgs) == set(range(1, 121)) and not kept & set(st.lost.msgs)
    assert not (d / "msgs" / f"{victim.stem}.idx").exists()
    s2.stop()


def test_subject_ids_reused_across_restarts(tmp_path: Path) -> None:
    # A subject's id is freed when its last message goes and taken by a new subject; block
    # indexes written before and after then disagree on what the id means.
    d = tmp_path / "s"
    s = open_fs(d)
    for i in range(30):
        s.store_msg("a" if i < 15 else "b", b"", b"x" * 60)
    crash(s)
    s = open_fs(d)
    assert s.purge_ex("a") == 15
    for i in range(40):
        s.store_msg(f"c.{i % 3}", b"", b"y" * 60)
    s.store_msg("a", b"", b"again")
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    assert s2.subjects_totals() == {"b": 15, "c.0": 14, "c.1": 13, "c.2": 13, "a": 1}
    assert s2.load_next_msg("c.1", 1)[0].subject == "c.1"
    s2.stop()


def test_ttls_in_sealed_blocks_survive_a_crash(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = filled(d)
    ttls = s.msg_ttls()
    assert len(ttls) == 18 and min(ttls) == 1
    crash(s)
    s2 = open_fs(d)
    assert s2.msg_ttls() == ttls
    s2.stop()


def test_many_subjects_and_a_block_rewritten(tmp_path: Path) -> None:
    # More subjects than the per-subject fast path handles; a compacted block gets a new index.
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d), block_size=2048, compact_min_bytes=64), StoreConfig())
    for i in range(300):
        s.store_msg(f"k.{i % 40}", b"", b"v%03d" % i * 3)
    for seq in range(30, 60):
        s.remove_msg(seq)  # most of a sealed block: it is rewritten
    before = everything(s)
    crash(s)
    s2 = FileStore(FileStoreConfig(str(d), block_size=2048, compact_min_bytes=64), StoreConfig())
    assert everything(s2) == before
    assert s2.num_pending(1, "k.1")[0] == sum(1 for m in before[2] if m.subject == "k.1")  # type: ignore[attr-defined]
    s2.stop()


def test_blocks_scanned_at_start_get_indexes_again(tmp_path: Path) -> None:
    # Indexes lost (or never written) are written again: at the next sync, also after a clean
    # restart from the snapshot, so a later crash does not scan those blocks.
    d = tmp_path / "s"
    s = filled(d)
    crash(s)
    for idx in indexes(d):
        idx.unlink()
    s = open_fs(d)  # scans every block
    s.stop()  # writes their indexes, then the snapshot
    assert [p.stem for p in indexes(d)] == [p.stem for p in blocks(d)[:-1]]
    for idx in indexes(d)[:3]:
        idx.unlink()
    s = open_fs(d)  # from the snapshot
    s.sync()
    assert [p.stem for p in indexes(d)] == [p.stem for p in blocks(d)[:-1]]
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    s2.stop()


def _roll_steps(d: Path, stored: int, more: int) -> tuple[int, int]:
    """TTL entries the block index writes look at while ``more`` TTL'd messages are stored after
    ``stored`` of them (blocks sealing on the way), and how many messages a block holds."""
    s = open_fs(d)
    for i in range(stored):
        s.store_msg(f"s.{i % 4}", TTL_HDR % 3600, b"x" * 40, ttl=3600)
    per_block = stored // max(len(blocks(d)) - 1, 1)
    s._backend.ttl_steps = 0  # type: ignore[attr-defined]
    for i in range(more):
        s.store_msg(f"s.{i % 4}", TTL_HDR % 3600, b"x" * 40, ttl=3600)
    steps = s._backend.ttl_steps  # type: ignore[attr-defined]
    s.stop()
    return steps, per_block


def test_a_block_index_looks_at_its_own_ttls_only(tmp_path: Path) -> None:
    """Sealing a block writes the TTLs of its messages, not of every TTL'd message in the store
    (it sorted them all at each roll: O(TTL'd messages) per block)."""
    small, per_block = _roll_steps(tmp_path / "a", 100, 60)
    large, _ = _roll_steps(tmp_path / "b", 3000, 60)
    assert per_block > 3
    assert small <= 60 + per_block and large <= 60 + per_block, (small, large, per_block)
