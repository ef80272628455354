"""Recovery after kill -9 with block indexes and scanned blocks mixed: a subject id given by a scan
must not be given to another subject by a block index loaded later (found by
test_store_properties: the active block's b.x.z came back as subject a, and b.x.z was gone)."""

from __future__ import annotations

from pathlib import Path

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig

from .conftest import crash


def test_a_scanned_blocks_subject_ids_are_not_reused_by_a_block_index(tmp_path: Path) -> None:
    # Block 1 is scanned (a tombstone was added after its index): a.y -> id 1, b.x.z -> id 2 by
    # the scan, b.x.z's message there deleted. Block 2's index has a with the running index's
    # id 2. The active block 3, scanned, holds b.x.z and a: they must keep distinct ids.
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=1024, compact_min_bytes=128)
    s = FileStore(fcfg, StoreConfig())
    s.store_msg("a.x", b"", b"", ts=1000)
    for _ in range(15):
        s.store_msg("a", b"", b"", ts=1000)
    s.compact(9)
    for subject, payload in (("a.y", b""), ("b.x.z", b""), ("a", b"zz" * 300)):
        s.store_msg(subject, b"", payload, ts=1000)
    s.update_config(StoreConfig(max_msgs=5, max_msgs_per_subject=1))
    s.store_msg("b.x.z", b"", b"zz" * 300, ts=1000)  # removes the first b.x.z (a tombstone in block 1)
    s.update_config(StoreConfig())
    s.store_msg("a", b"", b"", ts=1000)
    before = (s.subjects_totals(), [(m[1], m[0]) for m in s.load_next_msgs(">", 1, 100, 1 << 30)])
    assert before[0] == {"a": 2, "a.y": 1, "b.x.z": 1}, before
    crash(s)
    s = FileStore(fcfg, StoreConfig())
    try:
        after = (s.subjects_totals(), [(m[1], m[0]) for m in s.load_next_msgs(">", 1, 100, 1 << 30)])
        assert after == before
    finally:
        s.stop()
