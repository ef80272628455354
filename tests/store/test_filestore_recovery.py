"""File store persistence: clean restart, crash restart, torn tails, corruption, compaction."""

from __future__ import annotations

import os
import threading
from functools import partial
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ConsumerState,
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    SequencePair,
    StoreConfig,
)
from pyjetstream.server.jetstream.store._records import BLOCK_HDR_LEN, REC_OVERHEAD

from .conftest import crash, observed_state

SNAP = os.path.join("msgs", "index.db")  # the stream state


def open_fs(d: Path, block_size: int = 1024, **limits: object) -> FileStore:
    cfg = StoreConfig(**limits)  # type: ignore[arg-type]
    return FileStore(FileStoreConfig(str(d), block_size=block_size, compact_min_bytes=256), cfg)


everything = partial(observed_state, pending_filter="a.*")


def block_files(d: Path) -> list[Path]:
    return sorted((d / "msgs").glob("*.blk"), key=lambda p: int(p.stem))


def busy_store(d: Path) -> FileStore:
    s = open_fs(d)
    for i in range(120):
        s.store_msg(f"a.{i % 5}", b"NATS/1.0\r\nI: %d\r\n\r\n" % i if i % 3 == 0 else b"", b"m%03d" % i * 4)
    for seq in (1, 2, 7, 50, 51, 52, 99):
        s.remove_msg(seq)
    s.erase_msg(60)
    s.skip_msg()
    s.store_msg("b", b"", b"tail")
    s.purge_ex("a.4", keep=2)
    return s


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_restart_restores_everything(tmp_path: Path, how: str) -> None:
    d = tmp_path / "s"
    s = busy_store(d)
    before = everything(s)
    assert len(block_files(d)) > 1
    if how == "stop":
        s.stop()
        assert (d / SNAP).exists()
    else:
        crash(s)
        assert not (d / SNAP).exists()
    s2 = open_fs(d)
    assert (d / SNAP).exists() == (how == "stop")  # kept: it vouches for the blocks it saw
    assert everything(s2) == before
    assert s2.state().lost is None
    assert s2.store_msg("a.1", b"", b"after")[0] == before[0].last_seq + 1  # type: ignore[attr-defined]
    s2.stop()


def test_crash_after_snapshot_restart_uses_blocks(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = busy_store(d)
    s.stop()
    s = open_fs(d)  # loads and deletes the snapshot
    s.erase_msg(61)  # same-size in-place change a stale snapshot could not notice
    s.store_msg("a.0", b"", b"more")
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    s2.stop()


def test_snapshot_rejected_when_blocks_changed(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = busy_store(d)
    before = everything(s)
    s.stop()
    with open(block_files(d)[-1], "ab") as f:
        f.write(b"\x01\x02\x03")  # a record torn after 3 bytes, after a clean stop
    s2 = open_fs(d)
    assert everything(s2)[1:] == before[1:]
    # The cut-short last write was never acknowledged: cut, not reported as lost (issue #15).
    assert s2.state().lost is None
    s2.stop()


@pytest.mark.parametrize("cut", [1, 5, 20, REC_OVERHEAD + 3])
def test_torn_tail_is_truncated(tmp_path: Path, cut: int) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1 << 20)
    for i in range(10):
        s.store_msg("t", b"", b"payload-%d" % i)
    crash(s)
    blk = block_files(d)[-1]
    size = blk.stat().st_size
    rec_len = REC_OVERHEAD + 1 + len(b"payload-9")
    os.truncate(blk, size - rec_len + cut)  # the last record is torn
    s2 = open_fs(d)
    st = s2.state()
    assert (st.msgs, st.last_seq) == (9, 9)
    # The write in flight at the crash was never acknowledged: cut, not reported as lost.
    assert st.lost is None
    assert blk.stat().st_size == size - rec_len  # the tail was cut off
    assert s2.load_msg(9).data == b"payload-8"
    assert s2.store_msg("t", b"", b"again")[0] == 10
    s2.stop()
    s3 = open_fs(d)
    assert s3.load_msg(10).data == b"again" and s3.state().lost is None
    s3.stop()


def test_torn_record_before_the_last_block_is_lost(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1024)
    for i in range(40):
        s.store_msg("t", b"", b"payload-%02d" % i * 3)
    crash(s)
    first = block_files(d)[0]
    os.truncate(first, first.stat().st_size - 5)  # damage inside a sealed block
    s2 = open_fs(d)
    st = s2.state()
    assert st.lost is not None and st.lost.bytes > 0
    s2.stop()


def test_flipped_byte_in_last_record_drops_it(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1 << 20)
    for i in range(5):
        s.store_msg("t", b"", b"payload-%d" % i)
    crash(s)
    blk = block_files(d)[-1]
    data = bytearray(blk.read_bytes())
    data[-6] ^= 0xFF  # inside the last payload
    blk.write_bytes(bytes(data))
    s2 = open_fs(d)
    st = s2.state()
    # (the lost sequence stays used: the next message is 6, never a second 5)
    assert (st.msgs, st.first_seq, st.last_seq) == (4, 1, 5)
    assert st.lost is not None and st.lost.msgs == [5]
    assert [s2.load_msg(q).data for q in range(1, 5)] == [b"payload-%d" % i for i in range(4)]
    s2.stop()


def test_flipped_payload_byte_mid_block_loses_only_that_record(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1 << 20)
    for i in range(5):
        s.store_msg("t", b"", b"payload-%d" % i)
    crash(s)
    blk = block_files(d)[-1]
    data = bytearray(blk.read_bytes())
    rec_len = REC_OVERHEAD + 1 + len(b"payload-0")
    data[BLOCK_HDR_LEN + 2 * rec_len + rec_len - 6] ^= 0x01  # payload of seq 3
    blk.write_bytes(bytes(data))
    s2 = open_fs(d)
    st = s2.state(deleted_details=True)
    assert (st.msgs, st.last_seq, st.deleted) == (4, 5, [3])
    assert st.lost is not None and st.lost.msgs == [3]
    with pytest.raises(ErrStoreMsgNotFound):
        s2.load_msg(3)
    assert s2.load_msg(5).data == b"payload-4"
    s2.stop()


def test_flipped_length_mid_block_loses_only_that_record(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1 << 20)
    for i in range(5):
        s.store_msg("t", b"", b"payload-%d" % i)
    crash(s)
    blk = block_files(d)[-1]
    data = bytearray(blk.read_bytes())
    rec_len = REC_OVERHEAD + 1 + len(b"payload-0")
    data[BLOCK_HDR_LEN + 2 * rec_len] ^= 0x40  # length field of seq 3: the scan resynchronises
    blk.write_bytes(bytes(data))
    s2 = open_fs(d)
    st = s2.state()
    assert (st.msgs, st.last_seq) == (4, 5)
    assert st.lost is not None and st.lost.msgs == [3] and st.lost.bytes == rec_len
    assert [s2.load_msg(q).data for q in (1, 2, 4, 5)] == [b"payload-%d" % i for i in (0, 1, 3, 4)]
    s2.stop()


def test_torn_block_creation_is_discarded(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    for _i in range(20):
        s.store_msg("a", b"", b"x" * 100)
    crash(s)
    nxt = int(block_files(d)[-1].stem) + 1
    (d / "msgs" / f"{nxt}.blk").write_bytes(b"PJS")  # crash while writing a header
    s2 = open_fs(d)
    assert s2.state().msgs == 20 and s2.state().lost is None
    assert not (d / "msgs" / f"{nxt}.blk").exists()
    s2.store_msg("a", b"", b"x")
    s2.stop()


def test_purge_and_compact_beyond_end_survive_restart(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    for _ in range(30):
        s.store_msg("a", b"", b"x" * 50)
    s.purge()
    crash(s)
    s = open_fs(d)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 31, 30)
    s.compact(100)
    crash(s)
    s = open_fs(d)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 100, 99)
    assert s.store_msg("a", b"", b"")[0] == 100
    assert len(block_files(d)) == 1
    s.stop()


def test_skip_and_first_seq_survive_restart(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d)), StoreConfig(first_seq=50))
    crash(s)
    s = FileStore(FileStoreConfig(str(d)), StoreConfig(first_seq=50))
    st = s.state()
    assert (st.first_seq, st.last_seq) == (50, 49)
    s.store_msg("a", b"", b"")
    s.skip_msg()
    s.skip_msgs(52, 5)
    crash(s)
    s = FileStore(FileStoreConfig(str(d)), StoreConfig(first_seq=50))
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_deleted) == (1, 50, 56, 6)
    assert s.store_msg("a", b"", b"")[0] == 57
    s.stop()


def test_truncate_survives_restart(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    for i in range(60):
        s.store_msg(f"a.{i % 3}", b"", b"%04d" % i * 10)
    s.remove_msg(10)
    s.truncate(25)
    s.store_msg("a.9", b"", b"new")
    before = everything(s)
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    assert s2.state().last_seq == 26
    s2.stop()


def test_front_removals_unlink_blocks(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, max_msgs=10)
    for _ in range(500):
        s.store_msg("a", b"", b"x" * 60)
    assert len(block_files(d)) <= 3  # old blocks are gone, not just tombstoned
    before = everything(s)
    crash(s)
    s2 = open_fs(d, max_msgs=10)
    assert everything(s2) == before
    s2.stop()


def test_sparse_blocks_are_compacted(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    for i in range(400):
        s.store_msg("a" if i % 10 else "keep", b"", b"y" * 40)
    size_before = sum(p.stat().st_size for p in block_files(d))
    for seq in range(2, 401):
        if (seq - 1) % 10:
            s.remove_msg(seq)
    size_after = sum(p.stat().st_size for p in block_files(d))
    assert size_after < size_before / 3
    before = everything(s)
    assert before[0].msgs == 40  # type: ignore[attr-defined]
    crash(s)
    s2 = open_fs(d)
    assert everything(s2) == before
    s2.stop()


def test_erase_overwrites_bytes_on_disk(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=1 << 20)
    s.store_msg("secret", b"", b"TOP-SECRET-PAYLOAD")
    s.store_msg("other", b"", b"visible")
    s.erase_msg(1)
    s.flush()
    raw = b"".join(p.read_bytes() for p in block_files(d))
    assert b"TOP-SECRET-PAYLOAD" not in raw and b"secret" not in raw
    assert b"visible" in raw
    crash(s)
    s2 = open_fs(d, block_size=1 << 20)
    st = s2.state()
    assert (st.msgs, st.first_seq) == (1, 2) and st.lost is None
    s2.stop()


def test_s2_compression_on_disk(tmp_path: Path) -> None:
    payload = b"compressible " * 200
    sizes = {}
    for comp in ("none", "s2"):
        d = tmp_path / comp
        s = FileStore(FileStoreConfig(str(d)), StoreConfig(compression=comp))
        for _ in range(20):
            s.store_msg("z", b"NATS/1.0\r\nA: b\r\n\r\n", payload)
        s.store_msg("z", b"", b"tiny")
        assert s.load_msg(3).data == payload and s.load_msg(21).data == b"tiny"
        # Accounting is of the uncompressed message, as nats-server reports it.
        expected_bytes = 20 * (22 + 1 + 4 + 18 + len(payload) + 8) + (22 + 1 + 4 + 8)
        assert s.state().bytes == expected_bytes
        s.stop()
        sizes[comp] = sum(p.stat().st_size for p in block_files(d))
        crash_check = FileStore(FileStoreConfig(str(d)), StoreConfig(compression=comp))
        assert crash_check.load_msg(20).data == payload
        assert crash_check.state().bytes == expected_bytes
        crash(crash_check)
        rescanned = FileStore(FileStoreConfig(str(d)), StoreConfig(compression=comp))
        assert rescanned.state().bytes == expected_bytes
        assert rescanned.load_msg(20).hdr == b"NATS/1.0\r\nA: b\r\n\r\n"
        rescanned.stop()
    assert sizes["s2"] * 5 < sizes["none"]


def test_compression_can_change_between_records(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d)), StoreConfig())
    s.store_msg("a", b"", b"plain " * 50)
    s.update_config(StoreConfig(compression="s2"))
    s.store_msg("a", b"", b"packed " * 50)
    crash(s)
    s2 = FileStore(FileStoreConfig(str(d)), StoreConfig(compression="s2"))
    assert s2.load_msg(1).data == b"plain " * 50 and s2.load_msg(2).data == b"packed " * 50
    s2.stop()


def test_sync_always(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d), sync="always", block_size=1024), StoreConfig())
    for i in range(50):
        s.store_msg("a", b"", b"%d" % i * 20)
    s.remove_msg(3)
    s.purge_ex("a", seq=10)
    before = everything(s)
    assert not s.needs_sync()  # nothing is left un-fsynced after a call returns
    crash(s)
    s2 = FileStore(FileStoreConfig(str(d), sync="always", block_size=1024), StoreConfig())
    assert everything(s2) == before
    s2.stop()


def test_interval_sync_leaves_fsync_to_caller(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d)), StoreConfig())
    s.store_msg("a", b"", b"x")
    assert s.needs_sync()  # written to the OS, not yet fsynced
    s.sync()
    assert not s.needs_sync()
    s.stop()


def test_sync_later_runs_off_thread(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d), block_size=1024), StoreConfig())
    for i in range(40):
        s.store_msg("a", b"", b"%d" % i * 30)
    s.consumer_store("c").update_delivered(1, 1, 1, 1)
    job = s.sync_later()
    assert not s.needs_sync() and not s.needs_sync()
    s.store_msg("a", b"", b"later")  # the store stays usable while the job runs elsewhere
    worker = threading.Thread(target=job)
    worker.start()
    worker.join()
    assert s.needs_sync()  # what came after sync_later() waits for the next sync
    s.sync()
    assert not s.needs_sync()
    s.stop()


def test_meta_and_consumers_persist(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    s.write_meta(b'{"name":"ORDERS","subjects":["o.>"]}')
    for i in range(10):
        s.store_msg("o.x", b"", b"%d" % i)
    c = s.consumer_store("worker")
    c.write_meta(b'{"durable_name":"worker"}')
    for seq in range(1, 6):
        c.update_delivered(seq, seq, 1, 1_000 + seq)
    c.update_acks(1, 1)
    c.update_acks(3, 3)
    c.update_delivered(6, 2, 2, 2_000)
    state = c.state()
    crash(s)  # consumer state was written per update; no stop needed
    s2 = open_fs(d)
    assert s2.read_meta() == b'{"name":"ORDERS","subjects":["o.>"]}'
    assert s2.consumer_names() == ["worker"]
    c2 = s2.consumer_store("worker")
    assert c2.has_state()
    assert c2.read_meta() == b'{"durable_name":"worker"}'
    assert c2.state() == state
    assert state.ack_floor == SequencePair(1, 1)
    assert state.pending == {2: (2, 2_000), 4: (4, 1_004), 5: (5, 1_005)}
    assert state.redelivered == {2: 1}
    s2.stop()


def test_delete_removes_directory(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d)
    s.store_msg("a", b"", b"x")
    s.consumer_store("c").update(ConsumerState())
    s.delete()
    assert not d.exists()


def test_many_blocks_random_reads(tmp_path: Path) -> None:
    d = tmp_path / "s"
    s = open_fs(d, block_size=2048)
    for i in range(2000):
        s.store_msg(f"r.{i % 13}", b"", b"%05d" % i)
    assert len(block_files(d)) > 32  # more than the fd cache holds
    for seq in (1, 1999, 3, 1500, 700, 2000, 2, 1000):
        assert s.load_msg(seq).data == b"%05d" % (seq - 1)
    for seq in range(1, 2001, 2):
        s.remove_msg(seq)
    assert s.load_last_msg("r.4").seq == 1994
    s.stop()
    s2 = open_fs(d, block_size=2048)
    assert s2.state().msgs == 1000
    assert s2.load_msg(1000).data == b"00999"
    s2.stop()


def test_a_crash_after_truncate_to_zero_recovers_an_empty_store(tmp_path: Path) -> None:
    """truncate(0) replaces every block; the stream state a stop wrote before it names the old
    ones. A crash before the next sync must not read it: it brought back first 1 / last 0 where an
    empty store is 0 / 0 (test_store_properties[file-s2] found it)."""
    fcfg = FileStoreConfig(str(tmp_path), block_size=1024, compact_min_bytes=128)
    store = FileStore(fcfg, StoreConfig())
    for _ in range(3):
        store.store_msg("a", b"", b"", ts=1_000)
    store.stop()  # writes msgs/index.db
    store = FileStore(fcfg, StoreConfig())
    store.store_msg("a", b"", b"", ts=1_001)
    store.truncate(0)
    crash(store)
    store = FileStore(fcfg, StoreConfig())
    try:
        state = store.state()
        assert (state.msgs, state.first_seq, state.last_seq) == (0, 0, 0)
        assert store.store_msg("a", b"", b"x", ts=1_002)[0] == 1
    finally:
        store.stop()


@pytest.mark.parametrize("keep", [1, 3])
def test_a_crash_after_a_truncate_does_not_bring_back_its_last_sequence(tmp_path: Path, keep: int) -> None:
    """A truncate to ``keep`` after a stop that wrote the stream state (its last sequence a skip
    past ``keep``): a crash before the next sync brought the old last sequence back (keep + 1)
    from that state. nats-server's ``fileStore.Truncate`` removes the state file; so does ours
    (`BlockIndexes.drop_state`). test_store_properties[file-s2] found it."""
    fcfg = FileStoreConfig(str(tmp_path), block_size=1024, compact_min_bytes=128)
    store = FileStore(fcfg, StoreConfig())
    for _ in range(keep):
        store.store_msg("a", b"", b"", ts=1_000)
    store.skip_msg()
    store.stop()  # writes msgs/index.db: last sequence keep + 1
    store = FileStore(fcfg, StoreConfig())
    store.store_msg("a", b"", b"", ts=1_001)
    store.truncate(keep)
    crash(store)
    store = FileStore(fcfg, StoreConfig())
    try:
        state = store.state()
        assert (state.msgs, state.first_seq, state.last_seq) == (keep, 1, keep)
        assert store.store_msg("a", b"", b"x", ts=1_002)[0] == keep + 1
    finally:
        store.stop()


def test_a_crash_after_deleting_the_newest_value_does_not_bring_back_a_trimmed_one(tmp_path: Path) -> None:
    """A ``max_msgs_per_subject`` trim's tombstone in a sealed block may wait in memory (the
    store trims again when it opens), but not past a removal that takes away the newer value
    that trim was for: deleting a key's newest value and crashing brought back the value it had
    trimmed (test_store_properties[file] found it in CI)."""
    fcfg = FileStoreConfig(str(tmp_path), block_size=1024, compact_min_bytes=128)
    cfg = StoreConfig(max_msgs_per_subject=1)
    store = FileStore(fcfg, cfg)
    store.store_msg("z", b"", b"first", ts=1_000)
    store.store_msg("a", b"", b"old", ts=1_000)
    store.store_msg("c", b"", b"x" * 900, ts=1_000)
    store.store_msg("d", b"", b"x", ts=1_000)  # in a new block: the one holding "old" is sealed
    newest, _ = store.store_msg("a", b"", b"new", ts=1_000)  # trims "old": its tombstone waits
    assert store.remove_msg(newest)
    crash(store)
    store = FileStore(fcfg, cfg)
    try:
        assert store.subjects_totals() == {"z": 1, "c": 1, "d": 1}
        assert store.state().msgs == 3
    finally:
        store.stop()


def test_a_floor_in_a_block_the_state_vouches_for_applies_to_a_block_scanned_again(tmp_path: Path) -> None:
    """The floor record (max_msgs moved the first sequence) sits in the last block, which the
    stream state vouches for after a stop; a tombstone written later into an earlier sealed
    block, rewritten with only its live records, makes recovery scan that block again. Its
    records below the floor must stay gone: the first came back as a live message
    (test_store_properties[file-s2] found it; the steps are the ones it shrank to)."""
    fcfg = FileStoreConfig(str(tmp_path), block_size=1024, compact_min_bytes=128)
    cfg = StoreConfig(max_msgs=7)
    store = FileStore(fcfg, cfg)
    store.skip_msg()
    for body in [b""] * 4 + [b"b"] * 5 + [b""] * 4 + [b"y" * 40] * 2:
        store.store_msg("a", b"", body, ts=1_000)
    store.skip_msg()
    for body in [b"y" * 40, b"y" * 40, b""]:
        store.store_msg("a", b"", body, ts=1_000)
    store.stop()  # writes the stream state; block 1 was rewritten with its live records
    store = FileStore(fcfg, cfg)
    before = store.state(deleted_details=True)
    assert (before.first_seq, before.last_seq, before.deleted) == (13, 20, [17])
    assert store.remove_msg(14)
    crash(store)
    store = FileStore(fcfg, cfg)
    try:
        state = store.state(deleted_details=True)
        assert (state.first_seq, state.last_seq, state.msgs, state.deleted) == (13, 20, 6, [14, 17])
    finally:
        store.stop()
