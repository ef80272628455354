"""What a restart of a KV-shaped store costs per subject, counted, not timed (issue 24, a restart
beyond messages: ``bench_scale.py --dim rkeys``). After a clean stop the stream state vouches for
every block, and the subjects are taken from it once: the maps of subjects to ids a block read
again needs (the scan's, the recovery's) are not made, the subject table's is made once. After a
crash the active block is scanned: those maps are made, once each, of the state's subjects, and
when that block is the stream's only one its subjects' firsts and lasts are the ones it holds.
Both at two sizes: the counts are per subject, not per square."""

from __future__ import annotations

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
    _index,
    blockindex,
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


@pytest.mark.parametrize("clean", [True, False], ids=["clean", "crash"])
def test_a_restart_takes_each_subject_in_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clean: bool) -> None:
    for keys in (500, 5000):
        counts = _restart_counts(tmp_path / str(keys), keys, clean, monkeypatch)
        # The subject table's map, once (+1: the id 0 entry is None, not a subject; +1 after the
        # crash: the key put since).
        assert counts["ids_of"] == keys + 1 + (not clean), (keys, counts)
        # The state's subjects into the scan's id map and the recovery's: not at all after a clean
        # stop, once each after a crash.
        assert counts["_take_in"] == (0 if clean else keys), (keys, counts)
        assert counts["recovery_ids"] == (0 if clean else keys + 1), (keys, counts)
        # The one block was read again after the crash: its subjects' firsts and lasts are the
        # ones it holds, none asked of the pages (each cost ~4 µs).
        assert counts["first_asked"] == counts["last_asked"] == 0, (keys, counts)
