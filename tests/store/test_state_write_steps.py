"""A stream state write (``FileStore._write_state``, nats-server's ``writeFullState``: at each
``sync_interval``, 2 min, and at a clean stop) makes its subject names and per-page subject
columns in C passes: its Python steps do not grow with the subjects (counted with
``sys.settrace``, no timing). It wrote 100,000 subjects' state one name and one pair at a time,
~0.1 s at every sync, landing on whichever operation ran then (bench_scale's rows at the line).
On and off (`_snapshot.FAST_FREE_NAMES`, `seqstate.COLUMNS`) write the same bytes. Its TTLs: three
columns (`filestore.TTL_COLUMNS`), where a JSON row was made for each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.steps import steps_of

from pyjetstream.server.jetstream.store import (
    FileStore,
    FileStoreConfig,
    StoreConfig,
    _snapshot,
    filestore,
    seqstate,
)


def _store(d: Path, subjects: int, block_size: int = 1 << 23) -> FileStore:
    """``subjects`` subjects, two messages on every tenth, one subject emptied in ten (a free id);
    sealed pages hold subjects whose count dropped to 0."""
    s = FileStore(FileStoreConfig(str(d), block_size=block_size), StoreConfig())
    names = [f"s.{i}" for i in range(subjects)] + [f"s.{i}" for i in range(0, subjects, 10)]
    s.store_run(names, [b""] * len(names), [b"x" * 8] * len(names))
    for seq in range(5, subjects, 10):  # (each the only message on its subject: its id is freed)
        s.remove_msg(seq + 1)
    return s


@pytest.fixture
def switches(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    def set_to(on: bool) -> None:
        monkeypatch.setattr(_snapshot, "FAST_FREE_NAMES", on)
        monkeypatch.setattr(seqstate, "COLUMNS", on)

    yield set_to


def test_a_state_write_takes_the_same_steps_at_1k_and_20k_subjects(tmp_path: Path, switches: Any) -> None:
    switches(True)
    counted = []
    for n in (1_000, 20_000):
        s = _store(tmp_path / str(n), n)
        assert None in s._index.subjects.names[1:]  # (free ids: the table's names hold None)
        s._write_state(fsync=False)  # (the first write gives every sealed page its image)
        counted.append(steps_of(lambda s=s: s._write_state(fsync=False)))
        s.stop()
    small, large = counted
    assert large <= small + 20, counted
    switches(False)  # (what it was: steps per subject)
    s = _store(tmp_path / "off", 1_000)
    s._write_state(fsync=False)
    assert steps_of(lambda: s._write_state(fsync=False)) > small + 1_000
    s.stop()


@pytest.mark.parametrize("block_size", [1 << 23, 2048])
def test_the_state_written_is_the_same_on_and_off(tmp_path: Path, switches: Any, block_size: int) -> None:
    """The same header, arrays and names bytes with the switches on and off (one page, or many
    sealed ones with emptied subjects), and the state reads back into the same store."""
    s = _store(tmp_path / "s", 3_000, block_size)
    s.store_msg("ü.non-ascii", b"", b"x")
    written = []
    for on in (True, False):
        switches(on)
        header, arrays, names = s._index.state()
        written.append(b"".join(bytes(p) for p in _snapshot.encode(header, arrays, names)))
    assert written[0] == written[1]
    switches(True)
    state, subjects = s.state(), s.subjects_state(">")
    s.stop()  # (a clean stop writes the state, which the next open reads)
    again = FileStore(FileStoreConfig(str(tmp_path / "s"), block_size=block_size), StoreConfig())
    assert again.state() == state and again.subjects_state(">") == subjects
    again.stop()


def _ttl_store(d: Path, n: int) -> FileStore:
    """``n`` messages with a TTL (one in ten "never"), a tenth of them removed since."""
    s = FileStore(FileStoreConfig(str(d)), StoreConfig())
    for i in range(n):
        s.store_msg(f"t.{i}", b"", b"x", ts=10 * 10**9 + i, ttl=-1 if i % 10 == 3 else 60 + i % 7)
    for seq in range(1, n, 10):
        s.remove_msg(seq)
    return s


def test_a_state_write_of_1k_and_20k_ttls_takes_the_same_steps(
    tmp_path: Path, switches: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TTLs go into the state as three columns (`MessageTTLs.columns`, C passes), where a JSON
    row was made for each (``filestore.TTL_COLUMNS`` off)."""
    switches(True)
    counted = []
    for n in (1_000, 20_000):
        s = _ttl_store(tmp_path / str(n), n)
        s._write_state(fsync=False)
        counted.append(steps_of(lambda s=s: s._write_state(fsync=False)))
        s.stop()
    assert counted[1] <= counted[0] + 20, counted
    monkeypatch.setattr(filestore, "TTL_COLUMNS", False)
    s = _ttl_store(tmp_path / "off", 1_000)
    assert steps_of(lambda: s._write_state(fsync=False)) > counted[0] + 1_000
    s.stop()


@pytest.mark.parametrize(("write_columns", "crash"), [(True, False), (False, False), (True, True)])
def test_ttls_read_back_from_the_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write_columns: bool, crash: bool
) -> None:
    """The TTLs a restart finds are the ones the store held, from a state with the columns or
    with an older state's JSON rows; after a crash, from the last state written and the
    records after it."""
    s = _ttl_store(tmp_path, 500)
    with monkeypatch.context() as m:
        m.setattr(filestore, "TTL_COLUMNS", write_columns)
        if crash:
            s.sync_later()()  # (the state as a sync writes it; then one more message, and kill -9)
            s.store_msg("t.late", b"NATS/1.0\r\nNats-TTL: 5\r\n\r\n", b"x", ts=20 * 10**9, ttl=5)
        before = (s.msg_ttls(), sorted(s._ttl.heap), s._ttl.nevers)
        if crash:
            s.abandon()
        else:
            s.stop()
    again = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig())
    live = set(before[0])
    assert (again.msg_ttls(), sorted(e for e in again._ttl.heap if e[1] in live), again._ttl.nevers) == (
        before[0], sorted(e for e in before[1] if e[1] in live), before[2])
    again.stop()
