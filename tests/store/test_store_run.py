"""``store_run``: a read's publishes stored in one pass (``StreamIngest``'s run path) leave the
store exactly as ``store_msg`` one by one does — the messages, the subject table and its links,
the state, what a restart (clean or ``kill -9``) finds, and for the file store the records and
block indexes on disk — and a write that fails partway stops it where one by one would have
failed. Three shapes: header-less messages on one subject (a pipelining publisher's; the backend's
``append_run``), a subject and a header block each (the Spark sink's rows; ``append_hrun``), and
the two mixed."""

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
    indexed,
)

from .conftest import StoreFactory, crash, observed_state

Rows = tuple[list[str], list[bytes], list[bytes]]
SHAPES = ("one-subject", "headers", "mixed")


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


def _rows(shape: str, n: int, start: int = 0) -> Rows:
    span = range(start, start + n)
    payloads = [b"p%d" % i * (1 + i % 37) for i in span]
    if shape == "one-subject":
        return ["a"] * n, [b""] * n, payloads
    subjects = [f"s.{i % 5}" for i in span]
    hdrs = [b"NATS/1.0\r\nNats-Msg-Id: id-%d\r\nNats-Expected-Stream: S\r\n\r\n" % i for i in span]
    if shape == "mixed":
        hdrs = [h if i % 3 else b"" for i, h in zip(span, hdrs, strict=True)]
    return subjects, hdrs, payloads


def _picture(s: MessageStore) -> tuple[object, ...]:
    st = s.state()
    state = (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_subjects, st.num_deleted)
    return state, s.subjects_totals(), _stored(s)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_run_stores_what_one_by_one_stores(make_store: StoreFactory, shape: str) -> None:
    one, run = make_store(), make_store()
    for s in (one, run):
        s.store_msg("s.1", b"", b"before")
        s.store_msg("b", b"NATS/1.0\r\nX: y\r\n\r\n", b"with headers")
    for start, n in ((0, 60), (60, 1), (61, 45)):
        subjects, hdrs, payloads = _rows(shape, n, start)
        with one.batch():
            for subject, hdr, p in zip(subjects, hdrs, payloads, strict=True):
                one.store_msg(subject, hdr, p)
        with run.batch():
            assert run.run_fits(subjects, max(map(len, payloads)) + 60, 10**9)
            first, tss, error = run.store_run(subjects, hdrs, payloads)
        assert (len(tss), error) == (n, None)
        assert first == run.state().last_seq - n + 1
        assert [run.load_msg(first + k).ts for k in range(n)] == list(tss)
    assert _picture(run) == _picture(one)
    for seq in (3, 10, 11):  # the subject links of the run hold
        one.remove_msg(seq)
        run.remove_msg(seq)
    assert _picture(run) == _picture(one)
    last = subjects[-1]
    assert run.load_last_msg(last).seq == one.load_last_msg(last).seq


@pytest.mark.parametrize("shape", SHAPES)
def test_a_compressed_run_across_blocks_is_indexed_whole(tmp_path: Path, shape: str) -> None:
    """An s2-compressed store's runs over many small blocks leave the pages and messages one by
    one leaves, each page loaded again once evicted: the base backend's loop let `append` seal
    a block in the middle of a run, and the run's messages after the seal went into the page
    of the block before, which then could not be loaded (`BlockFiles._append_compressed`)."""

    def open_store(name: str) -> FileStore:
        fcfg = FileStoreConfig(str(tmp_path / name), block_size=1024, cache_slots=1, compact_min_bytes=1 << 30)
        return FileStore(fcfg, StoreConfig(compression="s2"))  # type: ignore[arg-type]

    one, run = open_store("one"), open_store("run")
    try:
        for k in range(4):
            subjects, hdrs, payloads = _rows(shape, 50, 50 * k)
            stamps = range(50 * k + 1, 50 * k + 51)
            with one.batch():
                for subject, hdr, p, ts in zip(subjects, hdrs, payloads, stamps, strict=True):
                    one.store_msg(subject, hdr, p, ts=ts)
            with run.batch():
                _first, tss, error = run.store_run(subjects, hdrs, payloads, stamps=stamps)
            assert (len(tss), error) == (50, None)
        pages = [[(p.first, p.n) for p in s._index.pages] for s in (one, run)]
        assert pages[0] == pages[1] and len(pages[0]) > 4
        assert _picture(run) == _picture(one)
    finally:
        one.stop()
        run.stop()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("how", ["clean", "kill -9"])
@pytest.mark.parametrize("block_size", [1024, 1 << 20])
def test_a_run_survives_a_restart(tmp_path: Path, how: str, block_size: int, shape: str) -> None:
    """Runs over many small blocks (sealed mid-run, with their indexes) and within one."""
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=block_size, compact_min_bytes=1 << 30)
    s = FileStore(fcfg, StoreConfig())
    s.store_msg("x", b"", b"first")
    for k in range(3):
        with s.batch():
            s.store_run(*_rows(shape, 50, 50 * k))
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


def _ttl_rows(n: int, start: int = 0) -> tuple[list[str], list[bytes], list[int]]:
    ttl_hdr = b"NATS/1.0\r\nNats-TTL: 1h\r\n\r\n"
    span = range(start, start + n)
    hdrs = [ttl_hdr if i % 3 else b"NATS/1.0\r\nX: 1\r\n\r\n" for i in span]
    return [f"a.{i % 5}" for i in span], hdrs, [3600 if i % 3 else 0 for i in span]


def test_a_run_with_ttls_keeps_them(make_store: StoreFactory) -> None:
    """A run's TTLs (the stream parsed them) are tracked as `store_msg`'s are."""
    one, run = make_store(), make_store()
    subjects, hdrs, ttls = _ttl_rows(60)
    with one.batch():
        for subject, hdr, ttl in zip(subjects, hdrs, ttls, strict=True):
            one.store_msg(subject, hdr, b"x" * 40, ttl=ttl)
    with run.batch():
        run.store_run(subjects, hdrs, [b"x" * 40] * 60, ttls)
    assert _picture(run) == _picture(one)
    assert run.msg_ttls() == one.msg_ttls() == {i + 1: 3600 for i in range(60) if i % 3}  # type: ignore[attr-defined]
    assert run.next_expiry() == run.load_msg(2).ts + 3600 * 1_000_000_000  # type: ignore[attr-defined]


def test_a_runs_ttls_survive_a_crash_in_block_indexes(tmp_path: Path) -> None:
    """The file store's block indexes keep a run's TTLs (told by the store, not parsed again):
    after ``kill -9`` (sealed blocks loaded from their indexes, the active one scanned) the same
    TTLs are back."""
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=1024, compact_min_bytes=1 << 30)
    run = FileStore(fcfg, StoreConfig())
    subjects, hdrs, ttls = _ttl_rows(60)
    with run.batch():
        run.store_run(subjects, hdrs, [b"x" * 40] * 60, ttls)
    assert len(list((tmp_path / "s" / "msgs").glob("*.idx"))) > 3
    expected = run.msg_ttls()
    crash(run)
    again = FileStore(fcfg, StoreConfig())
    try:
        assert again.msg_ttls() == expected
    finally:
        again.stop()


@pytest.mark.parametrize("trim_runs", [True, False])
def test_run_fits_says_no_where_one_by_one_would_refuse_or_trim(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, trim_runs: bool
) -> None:
    """Discard-new limits refuse: no. Discard-old limits trim: yes when the run is trimmed after
    (`trims_after_run`, not with a per-subject limit and max_bytes together), else no."""
    monkeypatch.setattr(indexed, "TRIM_RUNS", trim_runs)

    def fits(s: MessageStore, subjects: list[str], largest: int, total: int) -> bool:
        with s.batch():
            return s.run_fits(subjects, largest, total)

    s = make_store(max_msgs=5, discard="new")
    assert fits(s, ["a", "b"] * 2 + ["c"], 10, 100)
    assert fits(s, ["a"] * 5, 10, 100)
    assert not fits(s, ["a", "b"] * 3, 10, 100)
    s = make_store(max_msgs=5)  # discard old: the sixth would remove the first
    assert fits(s, ["a"] * 5, 10, 100)
    assert fits(s, ["a"] * 6, 10, 100) is trim_runs
    s = make_store(max_bytes=1000)
    assert fits(s, ["a", "b", "c"], 10, 1000)
    assert fits(s, ["a", "b", "c"], 10, 1001) is trim_runs
    s = make_store(max_msgs_per_subject=2)
    s.store_msg("a", b"", b"1")
    assert fits(s, ["a", "b", "b"], 10, 100)
    assert fits(s, ["a"], 10, 100)
    assert fits(s, ["b", "a", "a"], 10, 100) is trim_runs
    assert fits(s, ["a", "a"], 10, 100) is trim_runs
    s = make_store(max_msgs_per_subject=1, max_bytes=1000)
    s.store_msg("a", b"", b"1")
    assert not fits(s, ["a"], 10, 100)
    s = make_store(max_msgs_per_subject=1, max_msgs=10, discard="new")
    s.store_msg("a", b"", b"1")
    assert not fits(s, ["a"], 10, 100)
    s = make_store(max_msg_size=10)
    assert fits(s, ["a", "b"], 10, 100)
    assert not fits(s, ["a", "b"], 11, 100)


def test_outside_a_batch_a_file_store_takes_no_run(make_store: StoreFactory, store_kind: str) -> None:
    """Each message's own commit could fail on its own there: one by one."""
    assert make_store().run_fits(["a", "b"], 10, 100) is store_kind.startswith("memory")


@pytest.mark.parametrize("shape", SHAPES)
def test_a_write_failing_mid_run_stops_where_one_by_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shape: str
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
    subjects, hdrs, payloads = _rows(shape, 40)
    stopped = {}
    for name in ("one", "run"):
        s = FileStore(
            FileStoreConfig(str(tmp_path / name), block_size=1024, compact_min_bytes=1 << 30), StoreConfig()
        )
        s.store_msg("a", b"", b"kept")
        failures.append("full")
        with pytest.raises(ErrInsufficientResources), s.batch():
            if name == "one":
                for i, (subject, hdr, p) in enumerate(zip(subjects, hdrs, payloads, strict=True)):
                    try:
                        s.store_msg(subject, hdr, p)
                    except ErrInsufficientResources:
                        stopped[name] = i
                        raise
            else:
                first, tss, error = s.store_run(subjects, hdrs, payloads)
                assert first == 2 and isinstance(error, ErrInsufficientResources)
                stopped[name] = len(tss)
                raise error
        failures.clear()
        assert (s.state().msgs, s.state().last_seq) == (1, 1)
        assert s.store_msg("a", b"", b"after")[0] == 2
        s.stop()
    assert 0 < stopped["run"] == stopped["one"] < len(payloads)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_run_with_given_timestamps_keeps_them(make_store: StoreFactory, shape: str) -> None:
    """A mirror's copies keep the origin's timestamps (``store_run``'s ``stamps``,
    ``StreamIngest.process_sourced_run``): as `store_msg` with ``ts``, over sealed blocks too."""
    one, run = make_store(), make_store()
    subjects, hdrs, payloads = _rows(shape, 300)
    stamps = [1_700_000_000_000_000_000 + 7 * k for k in range(300)]
    with one.batch():
        for subject, hdr, p, ts in zip(subjects, hdrs, payloads, stamps, strict=True):
            one.store_msg(subject, hdr, p, ts)
    with run.batch():
        first, tss, error = run.store_run(subjects, hdrs, payloads, None, stamps)
    assert (first, list(tss), error) == (1, stamps, None)
    assert _picture(run) == _picture(one)
    assert [run.load_msg(seq).ts for seq in range(1, 301)] == stamps


def test_given_timestamps_survive_a_restart(tmp_path: Path) -> None:
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=1024, compact_min_bytes=1 << 30)
    s = FileStore(fcfg, StoreConfig())
    subjects, hdrs, payloads = _rows("headers", 120)
    stamps = [1_000 + k for k in range(120)]
    with s.batch():
        s.store_run(subjects, hdrs, payloads, None, stamps)
    crash(s)
    s2 = FileStore(fcfg, StoreConfig())
    try:
        assert [s2.load_msg(seq).ts for seq in range(1, 121)] == stamps
    finally:
        s2.stop()
