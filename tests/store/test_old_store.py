"""A store written by an earlier version opens (issue 27): ``fixtures/store_4d577aa`` was written
by the file store of main at 4d577aa (before the damage work; the record format is the same):
60 messages on three subjects, every fifth with headers, 1 and 7 removed, in four 1 KiB blocks,
then a clean stop. Opened as it is, without its stream state, without any index, and with bytes
flipped in a block, it serves every message it holds with its own payload."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import ErrStoreMsgNotFound, FileStore, FileStoreConfig, StoreConfig
from pyjetstream.server.jetstream.store._records import BLOCK_HDR_LEN, scan_records

FIXTURE = Path(__file__).parent / "fixtures" / "store_4d577aa"
LIVE = [q for q in range(1, 61) if q not in (1, 7)]


def expected(seq: int) -> tuple[str, bytes, bytes]:
    return f"old.{seq % 3}", b"NATS/1.0\r\nK: v%d\r\n\r\n" % seq if seq % 5 == 0 else b"", b"payload-%03d" % seq


def open_copy(tmp_path: Path) -> Path:
    d = tmp_path / "s"
    shutil.copytree(FIXTURE, d)
    return d


def reopen(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=1024, compact_min_bytes=1 << 30), StoreConfig())


def served(s: FileStore) -> list[int]:
    out = []
    for seq in range(1, 61):
        try:
            m = s.load_msg(seq)
        except ErrStoreMsgNotFound:
            continue
        assert (m.subject, m.hdr, m.data) == expected(seq)
        out.append(seq)
    return out


@pytest.mark.parametrize("drop", ["nothing", "state", "state-and-indexes"])
def test_an_old_store_opens(tmp_path: Path, drop: str) -> None:
    d = open_copy(tmp_path)
    if drop != "nothing":
        (d / "msgs" / "index.db").unlink()
    if drop == "state-and-indexes":
        for idx in (d / "msgs").glob("*.idx"):
            idx.unlink()
    s = reopen(d)
    st = s.state(deleted_details=True)
    assert (st.msgs, st.first_seq, st.last_seq, st.deleted, st.lost) == (58, 2, 60, [7], None)
    assert s.subjects_totals() == {"old.0": 20, "old.1": 18, "old.2": 20}
    assert served(s) == LIVE
    assert s.store_msg("new", b"", b"x")[0] == 61
    s.stop()


def test_damage_in_an_old_store_costs_only_the_damaged_records(tmp_path: Path) -> None:
    d = open_copy(tmp_path)
    (d / "msgs" / "index.db").unlink()
    blk = d / "msgs" / "2.blk"
    data = bytearray(blk.read_bytes())
    recs = [(off, total, seq) for off, total, _kind, seq, *_ in scan_records(bytes(data), BLOCK_HDR_LEN, [])]
    at = recs[len(recs) // 2][0] + 5  # from inside one record into the next
    for k in range(at, at + 64):
        data[k] ^= 0xFF
    blk.write_bytes(bytes(data))
    hit = {seq for off, total, seq in recs if off < at + 64 and at < off + total}
    assert len(hit) >= 2
    s = reopen(d)
    st = s.state()
    assert st.lost is not None and set(st.lost.msgs) == hit
    assert served(s) == [q for q in LIVE if q not in hit] and st.msgs == len(LIVE) - len(hit)
    s.stop()
