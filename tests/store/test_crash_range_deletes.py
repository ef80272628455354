"""Issue 24, a restart after ``kill -9`` beside an interior gap (bench ``--dim gaps``: 10,000 /
100,000 / 1,000,000 purged sequences between two runs of 1,000 messages): the purge's tombstone,
a range of sequences, is applied by walking the live slots it covers in each page
(`seqstate.RANGE_DELETES`), not by looking up each of its sequences — counted, not timed, at two
sizes of the range, and the recovered store the same with the switch off.

At 1,000,000 the range held ~160,000 sequences of the first block: ~160,000 page lookups, ~90 ms
of each crash restart (in process: a crash open 101-139 ms before, 67-69 after; 19-35 ms at
10,000)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, seqindex, seqstate

from .conftest import crash


def _config(d: Path, gap: int) -> FileStoreConfig:
    """Blocks that hold the first 1,000 messages and the ``gap`` after them (records of 53 and 52
    bytes): the purge's range of dead slots lies in the first block, its tombstone in a later one
    (as 1,000,000 purged messages leave ~160,000 in a block of the bench's)."""
    return FileStoreConfig(str(d), block_size=53 * 1000 + 52 * gap + 20)


def _gap_store(d: Path, gap: int) -> None:
    """1,000 messages, ``gap`` more purged by subject, 1,000 more; then ``kill -9``."""
    s = FileStore(_config(d, gap), StoreConfig())
    for _ in range(1000):
        s.store_msg("g.edge", b"", b"x" * 16)
    for _ in range(gap):
        s.store_msg("g.mid", b"", b"x" * 16)
    for _ in range(1000):
        s.store_msg("g.edge", b"", b"x" * 16)
    assert s.purge_ex("g.mid") == gap
    crash(s)


def _lookups(d: Path, gap: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Any]:
    """The pages looked up by sequence (`SeqIndex._covering`) while the crashed store opens, and
    its state."""
    calls = [0]
    covering = seqindex.SeqIndex._covering

    def counted(self: seqindex.SeqIndex, seq: int) -> Any:
        calls[0] += 1
        return covering(self, seq)

    monkeypatch.setattr(seqindex.SeqIndex, "_covering", counted)
    s = FileStore(_config(d, gap), StoreConfig())
    monkeypatch.setattr(seqindex.SeqIndex, "_covering", covering)
    assert len(s._index.pages) == 2
    state = s.state()
    crash(s)
    return calls[0], state


def test_a_crash_restart_applies_a_purged_range_by_its_live_slots(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    _gap_store(small, 2_000)
    _gap_store(large, 60_000)
    small_calls, small_state = _lookups(small, 2_000, monkeypatch)
    large_calls, large_state = _lookups(large, 60_000, monkeypatch)
    assert small_state.msgs == large_state.msgs == 2000
    assert small_state.num_deleted == 2_000 and large_state.num_deleted == 60_000
    assert large_calls <= small_calls + 5, (small_calls, large_calls)  # (2 / 2)
    monkeypatch.setattr(seqstate, "RANGE_DELETES", False)
    _gap_store(tmp_path / "off", 60_000)
    off_calls, _ = _lookups(tmp_path / "off", 60_000, monkeypatch)
    assert off_calls >= 60_000, off_calls


def _contents(s: FileStore) -> tuple[Any, list[Any]]:
    st = s.state()
    msgs = []
    seq = st.first_seq
    while True:
        try:
            m, seq = s.load_next_msg(">", seq)
        except Exception:
            break
        msgs.append((m.subject, m.seq, m.data))
        seq += 1
    return (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_deleted, st.num_subjects), msgs


@pytest.mark.parametrize("seed", range(3))
def test_the_store_recovered_is_the_same_with_the_switch_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """(A removal that evicts the range's page before the rest of the range is applied:
    tests/store/test_purge_whole_blocks.py's crash restart, seed 3, on the store's own pages.)"""
    rnd = random.Random(seed)
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d), block_size=4096, cache_slots=100), StoreConfig())
    for i in range(6000):
        s.store_msg(f"k.{rnd.randrange(12)}", b"", b"v%d" % i)
        if i % 500 == 499:
            s.purge_ex(f"k.{rnd.randrange(12)}", keep=rnd.choice([0, 0, 2]))
        if i % 700 == 699:  # (a range: every message below a sequence, on pages evicted and not)
            s.compact(s.state().first_seq + rnd.randrange(1, 300))
        if i % 97 == 0 and i:
            try:
                s.remove_msg(rnd.randrange(1, i))
            except Exception:
                pass
    crash(s)
    copy = tmp_path / "copy"
    shutil.copytree(d, copy)
    on = FileStore(FileStoreConfig(str(d), block_size=4096, cache_slots=100), StoreConfig())
    monkeypatch.setattr(seqstate, "RANGE_DELETES", False)
    off = FileStore(FileStoreConfig(str(copy), block_size=4096, cache_slots=100), StoreConfig())
    assert _contents(on) == _contents(off)
    crash(on)
    crash(off)
