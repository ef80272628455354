"""``store_run``: a run of header-less messages stored in one pass (a pipelining publisher's read,
``Stream._store_plain_run``) leaves the store exactly as ``store_msg`` one by one does — the
messages, the subject table, the state, what a restart (clean or ``kill -9``) finds, and for the
file store the records and block indexes on disk — and a write that fails partway stops it
where one by one would have failed."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ErrInsufficientResources,
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    MessageStore,
    StoreConfig,
    blockfiles,
)

from .conftest import StoreFactory, crash, observed_state


def _stored(s: MessageStore) -> list[tuple[int, str, bytes, bytes]]:
    out = []
    st = s.state()
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            m = s.load_msg(seq)
        except ErrStoreMsgNotFound:
            continue
        out.append((m.seq, m.subject, m.hdr, m.data))
    return out


def _payloads(n: int, start: int = 0) -> list[bytes]:
    return [b"p%d" % i * (1 + i % 37) for i in range(start, start + n)]


def _picture(s: MessageStore) -> tuple[object, ...]:
    st = s.state()
    state = (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_subjects, st.num_deleted)
    return state, s.subjects_totals(), _stored(s)


def test_a_run_stores_what_one_by_one_stores(make_store: StoreFactory) -> None:
    one, run = make_store(), make_store()
    for s in (one, run):
        s.store_msg("a", b"", b"before")
        s.store_msg("b", b"NATS/1.0\r\nX: y\r\n\r\n", b"with headers")
    for subject, payloads in (("a", _payloads(60)), ("c", _payloads(1)), ("a", _payloads(45, 60))):
        with one.batch():
            for p in payloads:
                one.store_msg(subject, b"", p)
        with run.batch():
            assert run.run_fits(subject, len(payloads), max(map(len, payloads)), 10**9)
            first, done, error = run.store_run(subject, payloads)
        assert (done, error) == (len(payloads), None)
        assert first == run.state().last_seq - done + 1
    assert _picture(run) == _picture(one)
    one.remove_msg(3)
    run.remove_msg(3)
    assert _picture(run) == _picture(one)  # the subject links of the run hold


@pytest.mark.parametrize("how", ["clean", "kill -9"])
@pytest.mark.parametrize("block_size", [1024, 1 << 20])
def test_a_run_survives_a_restart(tmp_path: Path, how: str, block_size: int) -> None:
    """Runs over many small blocks (sealed mid-run, with their indexes) and within one."""
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=block_size, compact_min_bytes=1 << 30)
    s = FileStore(fcfg, StoreConfig())
    s.store_msg("x", b"", b"first")
    for k in range(3):
        with s.batch():
            s.store_run(f"s.{k}", _payloads(50, 50 * k))
    before = observed_state(s, "s.1")
    if how == "clean":
        s.stop()
    else:
        crash(s)
    s2 = FileStore(fcfg, StoreConfig())
    try:
        assert observed_state(s2, "s.1") == before
        assert s2.state().lost is None
    finally:
        s2.stop()


def test_run_fits_says_no_where_one_by_one_would_refuse_or_trim(make_store: StoreFactory) -> None:
    def fits(s: MessageStore, subject: str, count: int, largest: int, total: int) -> bool:
        with s.batch():
            return s.run_fits(subject, count, largest, total)

    s = make_store(max_msgs=5, discard="new")
    assert fits(s, "a", 5, 10, 100)
    assert not fits(s, "a", 6, 10, 100)
    s = make_store(max_msgs=5)  # discard old: the sixth would remove the first
    assert fits(s, "a", 5, 10, 100)
    assert not fits(s, "a", 6, 10, 100)
    s = make_store(max_bytes=1000)
    assert fits(s, "a", 3, 10, 1000)
    assert not fits(s, "a", 3, 10, 1001)
    s = make_store(max_msgs_per_subject=2)
    s.store_msg("a", b"", b"1")
    assert fits(s, "a", 1, 10, 100)
    assert not fits(s, "a", 2, 10, 100)
    assert fits(s, "b", 2, 10, 100)
    s = make_store(max_msg_size=10)
    assert fits(s, "a", 2, 10, 100)
    assert not fits(s, "a", 2, 11, 100)


def test_outside_a_batch_a_file_store_takes_no_run(make_store: StoreFactory, store_kind: str) -> None:
    """Each message's own commit could fail on its own there: one by one."""
    assert make_store().run_fits("a", 2, 10, 100) is (store_kind == "memory")


def test_a_write_failing_mid_run_stops_where_one_by_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The active block fills in the middle of the run and the next block cannot be created: as
    one by one, the messages of the batch are taken back and the error is the one store_msg
    raises for the first message that needed the new block."""
    failures: list[str] = []
    real_open = os.open

    def full_disk_open(path: str, flags: int, *args: int) -> int:
        if path.endswith(".blk") and flags & os.O_CREAT and failures:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_open(path, flags, *args)

    monkeypatch.setattr(blockfiles.os, "open", full_disk_open)
    payloads = _payloads(40)
    stopped = {}
    for name in ("one", "run"):
        s = FileStore(
            FileStoreConfig(str(tmp_path / name), block_size=1024, compact_min_bytes=1 << 30), StoreConfig()
        )
        s.store_msg("a", b"", b"kept")
        failures.append("full")
        with pytest.raises(ErrInsufficientResources), s.batch():
            if name == "one":
                for i, p in enumerate(payloads):
                    try:
                        s.store_msg("a", b"", p)
                    except ErrInsufficientResources:
                        stopped[name] = i
                        raise
            else:
                first, done, error = s.store_run("a", payloads)
                assert first == 2 and isinstance(error, ErrInsufficientResources)
                stopped[name] = done
                raise error
        failures.clear()
        assert (s.state().msgs, s.state().last_seq) == (1, 1)
        assert s.store_msg("a", b"", b"after")[0] == 2
        s.stop()
    assert 0 < stopped["run"] == stopped["one"] < len(payloads)
