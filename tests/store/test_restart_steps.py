"""What a restart of a KV-shaped store costs per subject, counted, not timed (issue 24, a restart
beyond messages: ``bench_scale.py --dim rkeys``). After a clean stop the stream state vouches for
every block, and the subjects are taken from it once: the maps of subjects to ids a block read
again needs (the scan's, the recovery's) are not made, the subject table's is made once. After a
crash the active block is scanned: those maps are made, once each, of the state's subjects, and
when that block is the stream's only one its subjects' firsts and lasts are the ones it holds.
Both at two sizes: the counts are per subject, not per square."""

from __future__ import annotations

import itertools
import random
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from pyjetstream.server.jetstream.store import (
    FileStore,
    FileStoreConfig,
    StoreConfig,
    StoreError,
    _index,
    blockindex,
    indexed,
    seqstate,
)

from .conftest import crash


def _open(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d)), StoreConfig(max_msgs_per_subject=1))


@contextmanager
def _counting(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Counts: subjects the scan's id map took in, names mapped to ids."""
    counts: Counter[str] = Counter()

    def wrap(owner: Any, name: str, count: Callable[..., int], key: str = "") -> None:
        original = getattr(owner, name)

        def counted(*args: Any) -> Any:
            counts[key or name] += count(*args)
            return original(*args)

        monkeypatch.setattr(owner, name, counted)

    wrap(blockindex._SubjectIds, "_take_in", lambda _self, names: sum(n is not None for n in names))
    wrap(_index, "ids_of", len)  # (the subject table's)
    wrap(seqstate, "ids_of", len, "recovery_ids")  # (the recovery's, for blocks read again)
    # (a subject's first or last asked of its pages: not when every page was read again)
    wrap(seqstate._Recovery, "_first", lambda *_: 1, "first_asked")
    wrap(seqstate._Recovery, "_last", lambda *_: 1, "last_asked")
    yield counts


def _restart_counts(d: Path, keys: int, clean: bool, monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    s = _open(d)
    for i in range(keys):
        s.store_msg(f"$KV.B.k{i}", b"", b"v")
    s.stop()
    if not clean:  # a put after the state was written, then kill -9: the active block is scanned
        s = _open(d)
        s.store_msg(f"$KV.B.k{keys}", b"", b"v")
        keys += 1
        crash(s)
    with _counting(monkeypatch) as counts:
        s = _open(d)
    assert s.state().msgs == keys and s.state().num_subjects == keys
    assert s.load_last_msg(f"$KV.B.k{keys - 1}").seq == keys
    s.stop()
    monkeypatch.undo()
    return counts


@pytest.mark.parametrize(("clean", "replay"), [(True, True), (False, True), (False, False)], ids=["clean", "crash", "crash-scan"])
def test_a_restart_takes_each_subject_in_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean: bool, replay: bool
) -> None:
    for keys in (500, 5000):
        monkeypatch.setattr(blockindex, "TAIL_REPLAY", replay)
        counts = _restart_counts(tmp_path / str(keys), keys, clean, monkeypatch)
        scanned = not clean and not replay  # (the active block read whole: TAIL_REPLAY off)
        # The subject table's map, once (+1: the id 0 entry is None, not a subject; +1 after the
        # crash when the block is read whole: the key put since; replayed, it is appended after).
        assert counts["ids_of"] == keys + 1 + scanned, (keys, counts)
        # The state's subjects into the scan's id map and the recovery's: not at all after a clean
        # stop, nor after a crash whose put is replayed on the state's page; once each when the
        # block is read whole.
        assert counts["_take_in"] == (keys if scanned else 0), (keys, counts)
        assert counts["recovery_ids"] == (keys + 1 if scanned else 0), (keys, counts)
        # The one block read whole after the crash: its subjects' firsts and lasts are the ones it
        # holds, none asked of the pages (each cost ~4 µs).
        assert counts["first_asked"] == counts["last_asked"] == 0, (keys, counts)


# --- a crash restart reads the active block's records after the state's (TAIL_REPLAY) ----------


def _observe(s: FileStore, new: int = 0) -> dict[str, Any]:
    """What a store answers: its state (with the deleted sequences), every sequence's message,
    each subject's count, first and last, what it found lost (``new``: a message stored in the
    test, its time left out)."""
    st = s.state(deleted_details=True)
    if st.last_seq == new:
        st.last_ts = 0
    msgs = {}
    for seq in range(max(st.first_seq - 2, 1), st.last_seq + 3):
        try:
            m = s.load_msg(seq)
            msgs[seq] = m._replace(ts=0) if seq == new else m
        except StoreError:
            pass
    lost = s.found_lost
    return {
        "state": st,
        "msgs": msgs,
        "subjects": s.subjects_state(">"),
        "lost": None if lost is None else (sorted(lost.msgs), lost.bytes),
    }


def _ops_after_the_state(s: FileStore, rnd: random.Random, n: int) -> None:
    """``n`` writes after the stream state was written: stores (existing and new subjects, some
    with headers), removals anywhere (the state's messages and the new ones), skips, a subject's
    purge, a compact, an erase (which drops the state)."""
    for _ in range(n):
        st = s.fast_state()
        op = rnd.random()
        if op < 0.6 or not st.msgs:
            hdr = b"NATS/1.0\r\nA: b\r\n\r\n" if rnd.random() < 0.2 else b""
            s.store_msg(f"s.{rnd.randrange(30)}", hdr, b"x" * rnd.randrange(40))
        elif op < 0.83:
            s.remove_msg(rnd.randrange(st.first_seq, st.last_seq + 1))
        elif op < 0.93:
            s.skip_msgs(st.last_seq + 1, rnd.randrange(1, 4))
        elif op < 0.96:
            s.purge_ex(f"s.{rnd.randrange(30)}")
        elif op < 0.99:
            s.compact(rnd.randrange(st.first_seq, st.last_seq + 2))
        else:
            s.erase_msg(rnd.randrange(st.first_seq, st.last_seq + 1))


def _open_crashed(d: Path, block_size: int) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=block_size), StoreConfig())


@pytest.mark.parametrize("seed", range(12))
def test_a_crash_restart_replaying_the_tail_recovers_as_a_whole_scan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    """``kill -9`` at several points after the stream state was written (a stop, or a sync),
    with a torn write at the end, a byte damaged after what the state saw, or neither: the store recovered from the state's page and the
    active block's records after it (``TAIL_REPLAY``) answers as the one recovered by reading the
    whole block — every message, the state and deleted sequences, the subjects, what was lost —,
    then takes the same next message and recovers the same after a clean stop."""
    rnd = random.Random(seed)
    block_size = rnd.choice((4096, 1 << 20))  # (several blocks, or one)
    d = tmp_path / "s"
    s = _open_crashed(d, block_size)
    for i in range(rnd.randrange(50, 400)):
        s.store_msg(f"s.{i % 17}", b"", b"v" * (i % 23))
    for seq in rnd.sample(range(1, s.fast_state().last_seq + 1), 10):
        s.remove_msg(seq)
    if seed % 2:
        s.stop()  # (the state a clean stop writes)
        s = _open_crashed(d, block_size)
    else:
        s.sync()  # (the state a sync writes)
    active = max(d.joinpath("msgs").glob("*.blk"), key=lambda p: int(p.stem))
    seen_by_state = active.stat().st_size
    _ops_after_the_state(s, rnd, rnd.choice((0, 1, 5, 40)))
    crash(s)
    if seed % 3 == 2:  # (a write in flight, cut short)
        with active.open("ab") as f:
            f.write(b"\x50\x00\x00\x00\x00" + bytes(rnd.randrange(30)))
    elif seed % 4 == 1 and active.stat().st_size > seen_by_state + 1:  # (a byte damaged since)
        with active.open("r+b") as f:
            f.seek(rnd.randrange(seen_by_state, active.stat().st_size))
            f.write(b"\xff")
    seen = []
    for replay in (True, False):
        monkeypatch.setattr(blockindex, "TAIL_REPLAY", replay)
        clock = itertools.count(4 * 10**18)  # (the times a restart stamps: a lost tail's skip)
        monkeypatch.setattr(indexed.time, "time_ns", lambda c=clock: next(c))
        copy = tmp_path / f"r{replay}"
        shutil.copytree(d, copy)
        s = _open_crashed(copy, block_size)
        before = _observe(s)
        seq = s.store_msg("s.new", b"", b"after")[0]
        s.stop()
        s = _open_crashed(copy, block_size)
        seen.append((before, seq, _observe(s, seq)))
        s.stop()
        monkeypatch.undo()
    assert seen[0] == seen[1]


def _slots_scanned(d: Path, n: int, after: int) -> int:
    """A store of ``n`` messages stopped (the state written), ``after`` more stored, ``kill -9``:
    the block slots the restart's scans made."""
    s = _open_crashed(d, 1 << 24)
    for i in range(n):
        s.store_msg(f"s.{i % 100}", b"", b"v")
    s.stop()
    s = _open_crashed(d, 1 << 24)
    for i in range(after):
        s.store_msg(f"s.{i % 7}", b"", b"w")
    crash(s)
    s = _open_crashed(d, 1 << 24)
    try:
        assert s.state().msgs == n + after and s.load_msg(n + after).data == b"w"
        return s._backend.slots_scanned
    finally:
        s.stop()


def test_a_crash_restart_scans_only_what_the_state_did_not_see(tmp_path: Path) -> None:
    """After ``kill -9`` the active block's records are read from where the stream state stopped:
    the slots scanned are the ones written since, whether the state vouched for 1,000 messages in
    that block or 10,000 (the whole block was scanned again: ~2 µs a record)."""
    for n in (1000, 10_000):
        assert _slots_scanned(tmp_path / str(n), n, 10) == 10, n
