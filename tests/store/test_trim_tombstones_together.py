"""Publishes under ``max_msgs_per_subject`` over many subjects (issue 24, ``bench_scale.py --dim
subjects``: a put onto one of 100,000 existing subjects). Each put's trim writes a tombstone: with
`blockfiles.TOMBS_TOGETHER` a run's tombstones into one block are made in C passes and appended in
one call (`BlockFiles._tombs_of`), where each cost three Python calls — the same bytes either way
(the differential below, on and off, a clean stop and a crash). The steps are counted with
``sys.settrace`` at two sizes; no timing."""

from __future__ import annotations

import random
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from tests.support.steps import counting

from pyjetstream.server.jetstream.store import (
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    StoreConfig,
    blockfiles,
)

from .conftest import crash

BLOCK = 4 * 1024
TS0 = 1_700_000_000_000_000_000


def _open(d: Path, maxp: int = 1, block: int = BLOCK) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=block), StoreConfig(max_msgs_per_subject=maxp))


def _put(s: FileStore, subjects: list[str], ts: int) -> None:
    """One run of header-less puts, time-stamped from ``ts`` on (so two stores write the same bytes)."""
    with s.batch():
        s.store_run(subjects, [b""] * len(subjects), [b"v%d" % (ts % 7)] * len(subjects), None, [ts + i for i in range(len(subjects))])


def _picture(s: FileStore) -> tuple[Any, ...]:
    st = s.state()
    kept = []
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            m = s.load_msg(seq)
        except ErrStoreMsgNotFound:
            continue
        kept.append((m.seq, m.subject, m.data, m.ts))
    return (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_subjects), s.subjects_totals(), kept


def _blocks(d: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((d / "msgs").glob("*.blk"))}


def _workload(s: FileStore, rng: random.Random, subjects: int) -> None:
    ts = TS0
    _put(s, [f"k.{i}" for i in range(subjects)], ts)
    ts += subjects
    for step in range(60):
        n = rng.choice([1, 3, 40, 200])
        run = [f"k.{rng.randrange(subjects)}" for _ in range(n)]
        if step % 7 == 3:  # neighbours: the same few subjects again and again
            run = [f"k.{i % 5}" for i in range(n)]
        _put(s, run, ts)
        ts += n
        if step % 11 == 5:  # a purge of one subject (not a trim: tombstones due at once)
            s.purge_ex(subject=f"k.{rng.randrange(subjects)}")
        if step % 13 == 7:
            s.remove_msg(s.state().first_seq)


@pytest.mark.parametrize(("subjects", "maxp"), [(40, 1), (600, 1), (600, 2)])
@pytest.mark.parametrize("stop", ["clean", "kill9"])
def test_tombstones_together_write_what_one_by_one_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subjects: int, maxp: int, stop: str
) -> None:
    """On and off: the same block files byte for byte, the same state, before and after a restart."""
    pictures, files = [], []
    for on in (True, False):
        monkeypatch.setattr(blockfiles, "TOMBS_TOGETHER", on)
        d = tmp_path / str(on)
        s = _open(d, maxp)
        _workload(s, random.Random(subjects * 10 + maxp), subjects)
        assert s._backend.blocks[-1].index >= 3  # type: ignore[attr-defined]  # (sealed blocks: lazy trims)
        before = _picture(s)
        s.stop() if stop == "clean" else crash(s)
        files.append(_blocks(d))
        s = _open(d, maxp)
        assert _picture(s) == before
        pictures.append(before)
        s.stop()
    assert pictures[0] == pictures[1]
    assert files[0] == files[1]


def _tomb_frames(frame: FrameType) -> bool:
    return frame.f_code.co_name in {"remove_many", "_tombs_of", "_tomb_runs", "_tomb", "_append_to", "tombstone", "tombstones"}


def _tomb_steps(d: Path, puts: int) -> int:
    """Trace events of the tombstones of one run of ``puts`` puts whose trims lie apart (every
    other key of a bucket filled in order), in the active block and in a sealed one."""
    s = _open(d, block=1 << 22)
    keys = [f"k.{i}" for i in range(2 * puts)]
    _put(s, keys, TS0)
    with counting(where=_tomb_frames) as steps:
        _put(s, keys[0::2], TS0 + 2 * puts)
    assert s.state().msgs == 2 * puts
    s.stop()
    return steps.count


def test_a_runs_tombstones_take_the_same_steps_for_100_and_2000_trims(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = _tomb_steps(tmp_path / "a", 100), _tomb_steps(tmp_path / "b", 2_000)
    assert large <= small + 10, (small, large)
    monkeypatch.setattr(blockfiles, "TOMBS_TOGETHER", False)  # (what it was: steps per trim)
    off = _tomb_steps(tmp_path / "c", 2_000)
    assert off > 10 * large, (off, large)
