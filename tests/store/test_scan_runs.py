"""A block scan's runs of plain messages (``blockindex.PLAIN_RUNS``, ``scan_run.plain_run``, issue
24): a crash restart before the stream state was ever written scans its blocks, and the records
that are a plain message of the next sequence are taken in one loop without a Python step each (compiled; the switch's default takes the runs only there,
the tests set it on and off in both passes), every other record by the general loop.

Proved two ways: the same store is recovered with the switch on and off from random crashed
stores — several blocks, headers with and without ``Nats-TTL``, compression, removals, skips,
purges, compacts, erases, their block indexes and stream state deleted so that every block is
scanned, then bytes flipped, a tail cut or a torn write appended — (the existing crash and damage
tests run with the switch on); and by counting: the Python calls of a crash restart's scan, outside
the run itself, do not grow with the records scanned (one a subject new to the block, none a
message), at 2,000 and 20,000 records."""

from __future__ import annotations

import itertools
import random
import shutil
import sys
import zlib
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from pyjetstream.server.jetstream.store import (
    COMPRESSION_NONE,
    COMPRESSION_S2,
    FileStore,
    FileStoreConfig,
    StoreConfig,
    StoreError,
    blockindex,
    indexed,
    scan_run,
    seqrecover,
)

from .conftest import crash

TTL_HDR = b"NATS/1.0\r\nA: b\r\nNats-TTL: %d\r\n\r\n"
PLAIN_HDR = b"NATS/1.0\r\nA: b\r\n\r\n"


def _observe(s: FileStore) -> dict[str, Any]:
    """Everything a store answers: its state with the deleted sequences, every message, each
    subject's count, first and last, the TTLs, what it found lost."""
    st = s.state(deleted_details=True)
    msgs = {}
    for seq in range(max(st.first_seq - 2, 1), st.last_seq + 3):
        try:
            msgs[seq] = s.load_msg(seq)
        except StoreError:
            pass
    lost = s.found_lost
    return {
        "state": st,
        "msgs": msgs,
        "subjects": s.subjects_state(">"),
        "ttls": s.msg_ttls(),
        "lost": None if lost is None else (sorted(lost.msgs), lost.bytes),
    }


def _fill(s: FileStore, rnd: random.Random, n: int, subjects: int, erase: bool = True) -> None:
    """``n`` random writes: stores (some with headers, some with a TTL), removals, skips, a
    subject's purge, a compact, an erase (``erase``: which drops the stream state)."""
    for _ in range(n):
        st = s.fast_state()
        op = rnd.random()
        if op < 0.75 or not st.msgs:
            hdr, ttl = b"", 0
            if rnd.random() < 0.15:
                hdr = PLAIN_HDR
            elif rnd.random() < 0.05:
                ttl = rnd.randrange(100, 1000)
                hdr = TTL_HDR % ttl
            s.store_msg(f"s.{rnd.randrange(subjects)}", hdr, b"x" * rnd.randrange(60), ttl=ttl)
        elif op < 0.88:
            s.remove_msg(rnd.randrange(st.first_seq, st.last_seq + 1))
        elif op < 0.94:
            s.skip_msgs(st.last_seq + 1, rnd.randrange(1, 4))
        elif op < 0.96:
            s.purge_ex(f"s.{rnd.randrange(subjects)}")
        elif op < 0.98 or not erase:
            s.compact(rnd.randrange(st.first_seq, st.last_seq + 2))
        else:
            s.erase_msg(rnd.randrange(st.first_seq, st.last_seq + 1))


def _damage(d: Path, rnd: random.Random, seed: int) -> None:
    """No index nor state left for some seeds (every block scanned), then a byte flipped in a
    block, a tail cut, or a torn write appended to the last block."""
    msgs = d / "msgs"
    if seed % 2 == 0:
        for p in [*msgs.glob("*.idx"), msgs / blockindex.STATE_FILE]:
            p.unlink(missing_ok=True)
    blocks = sorted(msgs.glob("*.blk"), key=lambda p: int(p.stem))
    blk = rnd.choice(blocks)
    size = blk.stat().st_size
    kind = seed % 4
    if kind == 1 and size > 40:
        with blk.open("r+b") as f:
            for _ in range(rnd.randrange(1, 4)):
                f.seek(rnd.randrange(20, size))
                f.write(bytes([rnd.randrange(256)]))
    elif kind == 2 and size > 40:
        with blk.open("r+b") as f:
            f.truncate(rnd.randrange(20, size))
    elif kind == 3:
        with blocks[-1].open("ab") as f:
            f.write(b"\x50\x00\x00\x00\x00" + bytes(rnd.randrange(30)))


def _open(d: Path, block_size: int, compression: str) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=block_size), StoreConfig(compression=compression))


@pytest.mark.parametrize("seed", range(16))
def test_plain_runs_recover_the_store_the_general_loop_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """A random store killed (and some of its files damaged) recovers the same with the runs on
    and off: every message, the state and deleted sequences, the subjects, the TTLs, what was
    lost; then it takes the same next message and recovers the same after a clean stop."""
    rnd = random.Random(seed)
    block_size = rnd.choice((4096, 1 << 16, 1 << 20))
    compression = COMPRESSION_S2 if seed % 5 == 4 else COMPRESSION_NONE
    d = tmp_path / "s"
    s = _open(d, block_size, compression)
    _fill(s, rnd, rnd.randrange(200, 1500), rnd.choice((3, 40, 400)))
    if seed % 3 == 0:
        s.sync()  # (a state, and writes after it)
        _fill(s, rnd, rnd.randrange(0, 300), 40)
    crash(s)
    _damage(d, rnd, seed)
    seen = []
    for runs in (True, False):
        monkeypatch.setattr(blockindex, "PLAIN_RUNS", runs)
        clock = itertools.count(4 * 10**18)  # (the times a restart stamps: a lost tail's skip)
        monkeypatch.setattr(indexed.time, "time_ns", lambda c=clock: next(c))
        copy = tmp_path / f"r{runs}"
        shutil.copytree(d, copy)
        s = _open(copy, block_size, compression)
        before = _observe(s)
        seq = s.store_msg("s.new", b"", b"after", ts=5 * 10**18)[0]
        s.stop()
        s = _open(copy, block_size, compression)
        seen.append((before, seq, _observe(s)))
        s.stop()
    assert seen[0] == seen[1]


def test_a_run_takes_odd_records_as_the_general_loop_does() -> None:
    """`scan_run.plain_run` asks for a subject new to the block its id, stops at a record it does
    not take (here a TTL), leaving it to the general loop, and reads a header's signed timestamp
    and 64-bit fields as ``struct`` does."""
    from array import array

    from pyjetstream.server.jetstream.store._records import BLOCK_HDR_LEN, SCAN_LAYOUT, append_record

    out = bytearray(BLOCK_HDR_LEN)
    append_record(out, 0, 1, -5, b"a", 0, b"1")
    append_record(out, 0, 2, 1 << 62, b"bb", 3, b"h\r\n2")  # (a subject new to the block)
    append_record(out, 0, 3, 7, b"a", 0, b"3")
    stop = len(out)
    append_record(out, 0, 4, 8, b"a", len(TTL_HDR % 5), TTL_HDR % 5 + b"4")  # (a TTL: the general loop's)
    buf = bytes(out)
    cols: tuple[Any, ...] = (array("I"), array("q"), array("I"), array("Q"), array("Q"))
    state = [1, 0, 0, 0, 30, 12]
    own = {b"a": 1}
    last_idx = [-1, -1]
    met: list[bytes] = []

    def new_subject(subj: bytes) -> int:
        met.append(subj)
        own[subj] = len(last_idx)
        last_idx.append(-1)
        return own[subj]

    at = scan_run.plain_run(buf, BLOCK_HDR_LEN, state, cols, own, last_idx, new_subject, SCAN_LAYOUT, zlib.crc32)
    assert at == stop and met == [b"bb"]
    assert state[1:4] == [3, 3, 7]
    sids, tss, sizes, locs, nxt = cols
    assert list(sids) == [1, 2, 1] and list(tss) == [-5, 1 << 62, 7]
    assert list(sizes) == [30 + 1 + 1, 30 + 2 + 1 + 12 + 3, 30 + 1 + 1] and list(nxt) == [3, 0, 0]
    assert locs[0] >> 32 == BLOCK_HDR_LEN and locs[1] >> 32 == BLOCK_HDR_LEN + (locs[0] & 0xFFFFFFFF)


def _scan_steps(d: Path, records: int, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Python calls (and returns) of a crash restart of a store of ``records`` messages over 100
    subjects in one block, never indexed, counted outside `scan_run` (whose run is one C call
    compiled; pure Python, its own steps are left out: it is the compiled loop's source)."""
    s = FileStore(FileStoreConfig(str(d), block_size=1 << 24), StoreConfig())
    for i in range(records):
        s.store_msg(f"s.{i % 100}", b"", b"v" * (i % 7))
    crash(s)
    counts: Counter[str] = Counter()
    skip = scan_run.__name__

    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event in ("call", "c_call") and frame.f_globals.get("__name__") != skip:
            counts[event] += 1

    take = blockindex._BlockScan.take

    def counted(self: blockindex._BlockScan, recs: Iterable[tuple[int, int, int, int, int, int, int]]) -> None:
        taken = list(recs)
        counts["general"] += len(taken)
        take(self, taken)

    subject_id = blockindex._BlockScan.subject_id

    def counted_id(self: blockindex._BlockScan, subj: bytes) -> int:
        counts["new_subject"] += 1
        return subject_id(self, subj)

    monkeypatch.setattr(blockindex._BlockScan, "take", counted)
    monkeypatch.setattr(blockindex._BlockScan, "subject_id", counted_id)
    monkeypatch.setattr(blockindex, "PLAIN_RUNS", True)  # (also in the suite's pure-Python pass)
    sys.setprofile(profile)
    try:
        s = FileStore(FileStoreConfig(str(d), block_size=1 << 24), StoreConfig())
    finally:
        sys.setprofile(None)
        monkeypatch.undo()
    assert s.state().msgs == records and s._backend.slots_scanned == records
    s.stop()
    return counts


def test_a_crash_scan_takes_no_python_step_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The general loop never runs (every record is a plain message), a subject is given its id
    once (100); all the restart's Python calls outside the run stay the same at ten times the
    records (they were ~37 trace events a record before the runs)."""
    small = _scan_steps(tmp_path / "a", 2_000, monkeypatch)
    large = _scan_steps(tmp_path / "b", 20_000, monkeypatch)
    assert small["general"] == large["general"] == 0, (small, large)
    assert small["new_subject"] == large["new_subject"] == 100, (small, large)
    for event in ("call", "c_call"):
        assert large[event] < small[event] * 1.1 + 50, (event, small, large)
    assert large["call"] + large["c_call"] < 20_000 * 0.2, large


@pytest.mark.parametrize("seed", range(10))
def test_a_tail_replayed_in_runs_recovers_as_one_append_a_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """Writes after the stream state, then ``kill -9`` (a torn write appended for some seeds): the
    records after the state put into the index by runs (``seqrecover.BULK_TAIL``) recover the same
    store as one ``SeqIndex.append`` a message, and take the same next message."""
    rnd = random.Random(seed)
    block_size = 1 << 20  # (the writes after the state stay in its last block: they are replayed)
    d = tmp_path / "s"
    s = _open(d, block_size, COMPRESSION_NONE)
    _fill(s, rnd, rnd.randrange(100, 600), 30)
    if seed % 2:
        s.stop()
        s = _open(d, block_size, COMPRESSION_NONE)
    else:
        s.sync()
    _fill(s, rnd, rnd.randrange(1, 400), rnd.choice((5, 60)), erase=False)
    crash(s)
    if seed % 3 == 2:
        blocks = sorted((d / "msgs").glob("*.blk"), key=lambda p: int(p.stem))
        with blocks[-1].open("ab") as f:
            f.write(b"\x50\x00\x00\x00\x00" + bytes(rnd.randrange(30)))
    seen = []
    for bulk in (True, False):
        monkeypatch.setattr(seqrecover, "BULK_TAIL", bulk)
        clock = itertools.count(4 * 10**18)
        monkeypatch.setattr(indexed.time, "time_ns", lambda c=clock: next(c))
        copy = tmp_path / f"b{bulk}"
        shutil.copytree(d, copy)
        s = _open(copy, block_size, COMPRESSION_NONE)
        before = _observe(s)
        seq = s.store_msg("s.new", b"", b"after", ts=5 * 10**18)[0]
        s.stop()
        s = _open(copy, block_size, COMPRESSION_NONE)
        seen.append((before, seq, _observe(s)))
        s.stop()
    assert seen[0] == seen[1]
