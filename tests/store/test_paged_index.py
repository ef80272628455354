"""Issue 24, dimension 3 (messages): what a file store keeps in memory and what one operation or a
restart reads do not grow with the stored messages — counted, not timed: the index's resident slots
(``SeqIndex.resident_slots``), the pages it loads (``SeqIndex.loads``), the blocks a restart reads
(``BlockIndexes.blocks_read``). Each test runs at two sizes ten times apart and asserts the counts
stay flat (nats-server: block indexes on disk, loaded on demand into an expiring cache; the stream
state ``index.db`` at restart). Also: the stream state after ``kill -9``, checked against the store
as it was."""

from __future__ import annotations

import random
from array import array
from collections.abc import Callable
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, _snapshot
from pyjetstream.server.jetstream.store.seqindex import DELS_MAX, SeqIndex

from .conftest import crash, observed_state

SIZES = (2_000, 20_000)
BLOCK = 4096  # ~75 messages a block: the sizes are ~27 and ~270 blocks
CACHE = 200  # sealed blocks' slots kept in memory: two or three blocks


def open_fs(d: Path) -> FileStore:
    return FileStore(FileStoreConfig(str(d), block_size=BLOCK, cache_slots=CACHE), StoreConfig())


def filled(d: Path, n: int, subjects: int = 20) -> FileStore:
    s = open_fs(d)
    with s.batch():
        for i in range(n):
            s.store_msg(f"m.{i % subjects}", b"", b"payload-%06d" % i)
    return s


def index(s: FileStore) -> SeqIndex:
    return s._index


def at_sizes(tmp_path: Path, measure: Callable[[FileStore, int], float]) -> list[float]:
    out = []
    for n in SIZES:
        s = filled(tmp_path / f"s{n}", n)
        try:
            out.append(measure(s, n))
        finally:
            s.stop()
    return out


def loads_per(op: Callable[[FileStore, int], int]) -> Callable[[FileStore, int], float]:
    """Pages loaded per operation (``op`` returns how many it did)."""

    def measure(s: FileStore, n: int) -> float:
        before = index(s).loads
        count = op(s, n)
        return (index(s).loads - before) / count

    return measure


def test_resident_slots_do_not_grow_with_the_messages(tmp_path: Path) -> None:
    def resident(s: FileStore, n: int) -> float:
        rng = random.Random(1)
        for _ in range(300):  # queries all over the stream load pages; the cache stays bounded
            s.load_next_msg(">", rng.randint(1, n))
        assert index(s).loads > 50
        return index(s).resident_slots()

    small, large = at_sizes(tmp_path, resident)
    assert large <= small + 2 * BLOCK // 40 and large < 3 * CACHE, (small, large)


@pytest.mark.parametrize(
    "name",
    ["get_seq", "get_last", "get_first", "read_forward", "remove_random", "remove_first", "filtered_pending"],
)
def test_per_operation_loads_do_not_grow(tmp_path: Path, name: str) -> None:
    def get_seq(s: FileStore, n: int) -> int:
        rng = random.Random(2)
        for _ in range(200):
            s.load_msg(rng.randint(1, n))
        return 200

    def get_last(s: FileStore, n: int) -> int:
        for i in range(200):
            s.load_last_msg(f"m.{i % 20}")
        return 200

    def get_first(s: FileStore, n: int) -> int:
        for i in range(200):
            s.load_next_msg(f"m.{i % 20}", 1)
        return 200

    def read_forward(s: FileStore, n: int) -> int:
        # (runs shorter than a block, as a consumer's are against 8 MiB blocks)
        seq = got = 0
        while msgs := s.load_next_msgs(">", seq + 1, 50, 1 << 20):
            got += len(msgs)
            seq = msgs[-1][1]
        assert got == n
        return n

    def remove_random(s: FileStore, n: int) -> int:
        rng = random.Random(3)
        for seq in rng.sample(range(2, n), 200):
            s.remove_msg(seq)
        return 200

    def remove_first(s: FileStore, n: int) -> int:
        for seq in range(1, 501):  # a work queue's acks, oldest first
            s.remove_msg(seq)
        return 500

    def filtered_pending(s: FileStore, n: int) -> int:
        for i in range(50):
            s.num_pending(n // 2 + i, f"m.{i % 20}")
        return 50

    op = locals()[name]
    small, large = at_sizes(tmp_path, loads_per(op))
    assert large <= 1.5 * small + 0.05, (name, small, large)
    if name == "read_forward":
        assert large <= 1 / 60, large  # each block's page loaded once, ~75 messages each


def test_purge_and_compact_load_a_few_pages_whatever_the_size(tmp_path: Path) -> None:
    """Whole blocks go by their counts: only the page a compact cuts (and the block rewrite it may
    bring) is read."""

    def compact_then_purge(s: FileStore, n: int) -> float:
        before = index(s).loads
        assert s.compact(n // 2 + 7) == n // 2 + 6
        assert s.purge() == n - (n // 2 + 6)
        return index(s).loads - before

    small, large = at_sizes(tmp_path, compact_then_purge)
    assert small <= 3 and large <= 3, (small, large)


@pytest.mark.parametrize("how", ["stop", "crash"])
def test_restart_reads_no_block_but_those_changed_since_the_state(tmp_path: Path, how: str) -> None:
    def restart(s: FileStore, n: int) -> float:
        d = Path(s.directory)
        s.sync()  # the stream state (also what a crash restart starts from)
        if how == "crash":
            s.store_msg("m.1", b"", b"after the state")  # the active block changes
            crash(s)
        else:
            s.stop()
        s2 = open_fs(d)
        try:
            assert s2.state().msgs == n + (how == "crash")
            return s2._backend.blocks_read + index(s2).loads
        finally:
            s2.stop()

    small, large = at_sizes(tmp_path, restart)
    assert small == large and large <= 2, (small, large)


def test_crash_after_the_state_matches_what_the_store_held(tmp_path: Path) -> None:
    """The state written at a sync, then messages added, removed from old blocks (tombstones), a
    subject's first and last removed, a compact: a kill -9 restart vouches for the blocks the state
    still describes, reads the others, and ends with the store as it was."""
    d = tmp_path / "s"
    s = filled(d, 4_000)
    s.sync()
    rng = random.Random(4)
    for seq in rng.sample(range(1_000, 1_150), 60):  # tombstones in two or three blocks
        s.remove_msg(seq)
    s.remove_msg(s.subjects_state()["m.7"].first)
    s.remove_msg(s.subjects_state()["m.8"].last)
    s.compact(40)
    with s.batch():
        for i in range(400):
            s.store_msg(f"n.{i % 3}", b"", b"new")
    before = observed_state(s, "m.*")
    crash(s)
    s2 = open_fs(d)
    assert observed_state(s2, "m.*") == before
    assert s2.state().lost is None
    # Read: the blocks a tombstone went into (~5) and the blocks written since the state (~6).
    assert s2._backend.blocks_read <= 12 < len(s2._backend.blocks) // 3, s2._backend.blocks_read
    s2.stop()
    s3 = open_fs(d)
    assert observed_state(s3, "m.*") == before
    s3.stop()


def test_crash_after_a_page_image_rewritten_since_the_state(tmp_path: Path) -> None:
    """A sealed block's page loses its image after the state was written (more removals from its
    front than its image's list of removals holds: the floor moves, the block file does not
    change), is evicted (its index file written again) and the server is killed: the restart
    must not count the removals twice (once in the new image, once as the floor cuts the page)."""
    d = tmp_path / "s"
    s = FileStore(FileStoreConfig(str(d), block_size=1 << 19, cache_slots=1), StoreConfig())
    with s.batch():
        for i in range(60_000):
            s.store_msg(f"m.{i % 7}", b"", b"x")
    s.sync()
    assert len(s._backend.blocks) >= 3
    for seq in range(1, DELS_MAX + 200):  # acks in order: the floor moves, no tombstone
        s.remove_msg(seq)
    s.load_next_msg(">", 59_000)  # the first block's page is evicted (written again: no image left)
    s.load_next_msg(">", DELS_MAX + 300)
    s.load_next_msg(">", 59_000)
    assert s._backend.state_drops  # (the block file is as the state saw it, its image is not)
    before = observed_state(s, "m.*")
    crash(s)
    s2 = open_fs(d)
    assert observed_state(s2, "m.*") == before
    assert s2.state().msgs == 60_000 - DELS_MAX - 199
    s2.stop()


def test_random_reads_peek_at_evicted_pages_without_loading_them(tmp_path: Path) -> None:
    """A get by sequence on an evicted page reads the one slot from the page's image (removals
    since it are the page's ``dels``): no page is loaded, whatever the size, and the answers are
    the messages."""
    from pyjetstream.server.jetstream.store import ErrStoreMsgNotFound

    def gets(s: FileStore, n: int) -> float:
        rng = random.Random(5)
        gone = set(rng.sample(range(2, n), 50))
        for seq in sorted(gone):
            s.remove_msg(seq)  # (tombstones; the pages keep them in dels, images unchanged)
        s.load_msg(n)  # (the last block's page: the others evicted as the cache wants)
        before, peeks = index(s).loads, index(s).peeks
        for seq in [*rng.sample(range(1, n + 1), 300), *gone]:
            if seq in gone:
                with pytest.raises(ErrStoreMsgNotFound):
                    s.load_msg(seq)
            else:
                msg = s.load_msg(seq)
                assert (msg.seq, msg.subject, msg.data) == (
                    seq,
                    f"m.{(seq - 1) % 20}",
                    b"payload-%06d" % (seq - 1),
                )
        assert index(s).peeks > peeks
        return index(s).loads - before

    assert at_sizes(tmp_path, gets) == [0, 0]


def test_repeated_gets_of_an_evicted_page_read_its_index_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A get of the first message of a subject (``next_by_subj`` from 1) finds it in the first
    block, evicted at both sizes: its slots come from a window of the block's index file read
    once it is asked a second time (``BlockIndexes.peek_slot``), not from three reads of the file
    per get — the reads per get do not grow with the messages and stay well under one."""
    import os

    def reads_per_get(s: FileStore, n: int) -> float:
        backend = s._backend
        s.load_msg(n)  # (the last block's page: the first block's is evicted)
        assert not index(s).pages[0].loaded
        s.load_next_msg("m.0", 1)  # (a window asked once: its one slot read)
        s.load_next_msg("m.0", 1)  # (asked again: the window read and kept)
        calls = 0
        pread = os.pread

        def counting(fd: int, size: int, off: int) -> bytes:
            nonlocal calls
            calls += 1
            return pread(fd, size, off)

        monkeypatch.setattr(os, "pread", counting)
        windows = backend.peeks.reads
        for i in range(200):
            msg = s.load_next_msg(f"m.{i % 20}", 1)[0]
            assert (msg.seq, msg.data) == (i % 20 + 1, b"payload-%06d" % (i % 20))
        monkeypatch.setattr(os, "pread", pread)
        assert backend.peeks.reads == windows and not index(s).pages[0].loaded
        return calls / 200

    small, large = at_sizes(tmp_path, reads_per_get)
    assert large <= small + 0.05 and large < 0.5, (small, large)


def test_reopening_after_interior_deletes_loads_no_page(tmp_path: Path) -> None:
    """A clean restart of a stream whose blocks lost their middle (1M interior deletes in the
    gaps benchmark) takes its first sequence from the stream state and checks it with one slot
    of the first block's image (`seqstate._first_live`): no page is loaded at either size, where
    the walk to the first live slot loaded the first block's whole page."""

    def reopened(s: FileStore, n: int) -> float:
        for i in range(20):
            s.store_msg("m.edge", b"", b"edge-%02d" % i)
        assert s.purge_ex("m.0") > 0  # (the middle: every message of m.0 among the first n)
        d = Path(s._fcfg.directory)
        want = s.state()
        s.stop()
        again = open_fs(d)
        try:
            got = again.state()
            assert (got.msgs, got.first_seq, got.last_seq, got.first_ts) == (
                want.msgs,
                want.first_seq,
                want.last_seq,
                want.first_ts,
            )
            return index(again).loads
        finally:
            again.stop()

    assert at_sizes(tmp_path, reopened) == [0, 0]


def _counting_checks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts the block index files verified whole (``_snapshot.file_layout`` with ``check``)."""
    counts = {"checked": 0}
    layout = _snapshot.file_layout

    def counting(path: str, check: bool = True) -> object:
        counts["checked"] += check
        return layout(path, check)

    monkeypatch.setattr(_snapshot, "file_layout", counting)
    return counts


def _flip(idx: Path, column: str, byte: int) -> None:
    """Damage a block index file: one byte of the first slot's entry in ``column`` flipped."""
    raw = bytearray(idx.read_bytes())
    found = _snapshot.file_layout(str(idx))
    assert found is not None
    raw[found[1][column][1] + byte] ^= 0xFF
    idx.write_bytes(bytes(raw))


def _gap_store(d: Path, n: int) -> tuple[FileStore, int]:
    """``n`` messages of ``m.0`` between 20 edges, the middle purged, stopped; the first live
    sequence's block has an evicted page whose image holds the purged holes."""
    s = open_fs(d)
    with s.batch():
        for i in range(n):
            s.store_msg("m.0" if 0 < i < n - 1 else "m.edge", b"", b"x")
        for i in range(20):
            s.store_msg("m.edge", b"", b"edge-%02d" % i)
    assert s.purge_ex("m.0") == n - 2
    s.stop()
    return s, n


def test_a_restart_over_interior_deletes_verifies_no_index_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first live slot a clean restart peeks at (`seqstate._first_live`) is checked by the
    record it points at (`BlockIndexes._vouch_slot`), not by verifying its block's index file
    whole: that read and CRCed the whole file (~5 MB for a block that lost 1M sequences, the
    gaps benchmark's restart), growing with the deleted sequences. Counted at both sizes: no file
    verified and no page loaded by the restart, and the state as it was."""
    counts = _counting_checks(monkeypatch)
    for n in (2_000, 20_000):
        d = tmp_path / f"g{n}"
        _gap_store(d, n)
        before = counts["checked"]
        again = open_fs(d)
        try:
            st = again.state()
            assert (st.msgs, st.first_seq, st.last_seq) == (22, 1, n + 20)
            assert counts["checked"] == before and index(again).loads == 0, n
            assert again.load_msg(1).data == b"x"
        finally:
            again.stop()


def test_a_restart_with_a_damaged_first_slot_verifies_its_file(tmp_path: Path) -> None:
    """A first slot whose record does not vouch for it (its timestamp flipped in the block's index
    file) has the file verified whole, found damaged and not used: the restart walks the block
    itself, and the first sequence and its timestamp are the stored ones."""
    s, n = _gap_store(tmp_path / "s", 4_000)
    want = s.state()
    _flip(tmp_path / "s" / "msgs" / "1.idx", "tss", 1)  # (the first slot's timestamp)
    again = open_fs(tmp_path / "s")
    try:
        st = again.state()
        assert (st.msgs, st.first_seq, st.first_ts, st.last_seq) == (want.msgs, 1, want.first_ts, n + 20)
        assert again.load_msg(1).data == b"x" and not again._backend.damaged
    finally:
        again.stop()


def _preads_per_get(monkeypatch: pytest.MonkeyPatch, s: FileStore, seed: int = 7) -> float:
    """``pread`` calls per random get by sequence in the sealed blocks of ``s`` (each block's
    index file opened and its layout read first), checking the answers; no file opened and no
    page loaded meanwhile."""
    import os

    b = s._backend
    s.load_msg(b._firsts[-1])  # (the last block's page: the others evicted)
    for first in b._firsts[:-1]:  # each file opened (and its index's layout read) once
        s.load_msg(first)
    calls = {"pread": 0, "open": 0}
    pread, open_ = os.pread, os.open

    def counting_pread(fd: int, size: int, off: int) -> bytes:
        calls["pread"] += 1
        return pread(fd, size, off)

    def counting_open(*args: object, **kw: object) -> int:
        calls["open"] += 1
        return open_(*args, **kw)  # type: ignore[arg-type]

    rng = random.Random(seed)
    seqs = [rng.randint(1, b._firsts[-1] - 1) for _ in range(500)]
    before, loads = index(s).peeks, index(s).loads
    monkeypatch.setattr(os, "pread", counting_pread)
    monkeypatch.setattr(os, "open", counting_open)
    try:
        got = [s.load_msg(seq) for seq in seqs]
    finally:
        monkeypatch.setattr(os, "pread", pread)
        monkeypatch.setattr(os, "open", open_)
    for seq, msg in zip(seqs, got, strict=True):
        assert (msg.seq, msg.subject, msg.data) == (seq, f"m.{(seq - 1) % 20}", b"payload-%06d" % (seq - 1))
        assert msg.ts > 0
    assert index(s).peeks - before > 400 and index(s).loads == loads
    assert calls["open"] == 0
    return calls["pread"] / len(seqs)


def test_a_random_get_reads_its_locator_and_its_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A get by sequence in an evicted page whose image holds a message in every slot, its
    block's spans not known, reads the slot's locator from the block's index file and the
    record from the block (the subject and timestamp are in the record): at most two ``pread``
    per get and no file opened once each file was opened, at both sizes (~27 and ~270 blocks,
    the files kept open: a 1024 open-file limit keeps 32), no page loaded. Before: three reads
    of the index file, an open and a close of it per get, and a block file opened again for one
    get in two beyond 32 blocks. (The windows read whole when asked again are off: with ~75
    messages a block, these stores have a window a block, which 500 gets come back to; a store
    of 8 MiB blocks has ~1,300 a block.)"""
    from pyjetstream.server.jetstream.store import _fileutil, idx_peek

    monkeypatch.setattr(_fileutil, "_OPEN_FDS_MAX", 512)
    monkeypatch.setattr(idx_peek, "PEEK_SEEN", 0)
    monkeypatch.setattr(idx_peek, "SPANS_AFTER", 1 << 30)
    monkeypatch.setattr(idx_peek.IndexPeeks, "note_locs", lambda self, index, locs: None)
    small, large = at_sizes(tmp_path, lambda s, n: _preads_per_get(monkeypatch, s))
    assert 1.5 < small <= 2.0 and 1.5 < large <= 2.0, (small, large)


def test_a_random_get_reads_its_span_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A get by sequence in a sealed block whose spans are known (the offsets of every 64th
    record, kept when the block's index is written, `IndexPeeks.note_locs`) reads the bytes
    between the two that hold its record and finds the record there by its sequence: one
    ``pread`` per get at both sizes instead of a locator read and a record read (some gets land
    in the last read's bytes: none then)."""
    from pyjetstream.server.jetstream.store import _fileutil

    monkeypatch.setattr(_fileutil, "_OPEN_FDS_MAX", 512)
    small, large = at_sizes(tmp_path, lambda s, n: _preads_per_get(monkeypatch, s))
    assert 0.5 < small <= 1.0 and 0.5 < large <= 1.0, (small, large)


def test_spans_are_read_from_the_index_after_a_reopen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a reopen no block's spans are known: its gets read locators until the block was
    asked `SPANS_AFTER` times, then its spans are read from its index file (one pass over its
    locator column) and its gets read one span each — the same spans the write kept."""
    from pyjetstream.server.jetstream.store import _fileutil, idx_peek

    monkeypatch.setattr(_fileutil, "_OPEN_FDS_MAX", 512)
    monkeypatch.setattr(idx_peek, "SPANS_AFTER", 4)
    monkeypatch.setattr(idx_peek, "_SPAN_CHUNK", 8 * idx_peek.SPAN)  # (several chunks a block)
    s = filled(tmp_path / "s", 20_000)
    kept = dict(s._backend.peeks._spans)
    s.stop()
    again = open_fs(tmp_path / "s")
    try:
        peeks = again._backend.peeks
        assert not peeks._spans
        rng = random.Random(11)
        last = again._backend._firsts[-1]
        for seq in [rng.randint(1, last - 1) for _ in range(3_000)]:
            msg = again.load_msg(seq)
            assert (msg.seq, msg.data) == (seq, b"payload-%06d" % (seq - 1))
        assert peeks._spans and all(peeks._spans[i] == kept[i] for i in peeks._spans)
        assert _preads_per_get(monkeypatch, again, 8) <= 1.0
    finally:
        again.stop()


def test_a_get_passes_over_payloads_that_look_like_its_record(tmp_path: Path) -> None:
    """The record of a span is found by its sequence's 8 bytes (records of several sizes: not
    always where same-sized records would put it): payloads holding the bytes of the next
    messages' sequences (and a record header's worth around them) are passed over by the
    record's kind, length and CRC checks; a span whose offsets are wrong (not found in it)
    falls back to the slot's locator. Every get answers its message."""
    s = open_fs(tmp_path / "s")
    n = 3_000
    with s.batch():
        for i in range(1, n + 1):
            fake = bytes(5) + (i + 1).to_bytes(8, "little") + bytes(20)
            s.store_msg(f"m.{i % 20}", b"", fake + b"payload-%06d" % i + bytes(i % 7 * 9))
    try:
        s.load_msg(n)
        peeks = s._backend.peeks
        assert peeks._spans
        index_, spans = next(iter(peeks._spans.items()))
        peeks._spans[index_] = array("I", [x + 40 if x else 0 for x in spans])  # (all wrong)
        for seq in range(1, s._backend._firsts[-1]):
            msg = s.load_msg(seq)
            assert (msg.seq, msg.subject, msg.data[33:47]) == (seq, f"m.{seq % 20}", b"payload-%06d" % seq)
        assert not s._backend.damaged and s.state().msgs == n
    finally:
        s.stop()


def test_a_span_found_in_place_answers_as_a_span_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`blockfiles.SPAN_IN_PLACE` (the fast path: a get finds its record in the block's bytes
    where the `BlockCache` keeps them, no copy of the span) answers every get as the span read
    alone does (the switch off): records of subjects of 3 to 7 characters and payloads of
    several sizes (the record not where same-sized records would put it), payloads holding the
    next message's sequence bytes, random and in-order gets, some messages removed; each record
    found in its span (no locator read). With the switch on most gets are answered from the
    kept blocks without a read of the block."""
    from pyjetstream.server.jetstream.store import blockfiles, idx_peek

    fallbacks = 0
    locator = idx_peek.IndexPeeks.locator

    def counting(self: idx_peek.IndexPeeks, index: int, first_seq: int, j: int) -> int | None:
        nonlocal fallbacks
        fallbacks += 1
        return locator(self, index, first_seq, j)

    monkeypatch.setattr(idx_peek.IndexPeeks, "locator", counting)
    s = open_fs(tmp_path / "s")
    n = 6_000
    with s.batch():
        for i in range(1, n + 1):
            fake = bytes(5) + (i + 1).to_bytes(8, "little")
            s.store_msg(f"m.{i % 20 * 731}", b"", fake + b"p%06d" % i + bytes(i % 11 * 5))
    for seq in range(7, n, 97):
        s.remove_msg(seq)
    try:
        b = s._backend
        b._whole.load_after = 2  # (blocks kept whole after two reads out of order)
        s.load_msg(n)
        assert b.peeks._spans
        rng = random.Random(5)
        seqs = [rng.randint(1, b._firsts[-1] - 1) for _ in range(3_000)] + list(range(1, 400))
        answers = {}
        for in_place in (False, True, False):
            monkeypatch.setattr(blockfiles, "SPAN_IN_PLACE", in_place)
            b._forget_reads(None)
            hits = b._whole.hits
            got = []
            for seq in seqs:
                try:
                    msg = s.load_msg(seq)
                except Exception as exc:  # (the same failure both ways)
                    got.append(type(exc).__name__)
                    continue
                got.append((msg.seq, msg.subject, msg.ts, msg.hdr, msg.data))
            answers.setdefault(in_place, got)
            assert answers[in_place] == got
            assert (b._whole.hits - hits > len(seqs) // 2) == in_place
        assert answers[True] == answers[False]
        assert fallbacks == 0  # (every record found in its span, both ways)
        assert sum(isinstance(a, str) for a in answers[True]) == sum(seq % 97 == 7 for seq in seqs)
        assert not b.damaged and s.state().msgs == n - len(range(7, n, 97))
    finally:
        s.stop()


def test_random_gets_never_verify_an_index_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gets by sequence coming back to a window of an evicted page's slots read that window's
    locators (one small read) and keep them, without verifying the block's index file whole
    first: a locator is checked by the record it points at. Before, the second ask of a window
    read the window whole, which needs the file's checksum — ~5 MB read and CRCed per block of
    8 MiB, which random gets over 10M messages paid every few hundred gets. Counted at both
    sizes: no file checked, and the reads of the index files stay under one per get."""
    counts = _counting_checks(monkeypatch)

    def per_get(s: FileStore, n: int) -> float:
        b = s._backend
        s.load_msg(n)  # (the last block's page: the others evicted)
        rng = random.Random(3)
        seqs = [rng.randint(1, b._firsts[-1] - 1) for _ in range(2_000)]
        before, reads = counts["checked"], b.peeks.reads
        for seq in seqs:
            msg = s.load_msg(seq)
            assert (msg.seq, msg.subject, msg.data) == (seq, f"m.{(seq - 1) % 20}", b"payload-%06d" % (seq - 1))
        assert counts["checked"] == before and index(s).loads == 0
        return (b.peeks.reads - reads) / len(seqs)

    small, large = at_sizes(tmp_path, per_get)
    assert small < 0.5 and large < 0.5, (small, large)


def test_a_get_in_an_image_with_holes_reads_the_subject_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An evicted page whose image was written after removals (a hole in it is not in ``dels``)
    answers a get from the slot's subject id, as before: the removed stay not found, the others
    come with their subject and timestamp. (The removals' tombstones go into their own blocks
    here, which the stop then writes new images of: a tombstone in the active block leaves the
    sealed block and its image as they were, the removals in ``dels``.)"""
    from pyjetstream.server.jetstream.store import ErrStoreMsgNotFound, blockfiles

    monkeypatch.setattr(blockfiles, "TOMBSTONES_IN_LAST_BLOCK", False)
    s = filled(tmp_path / "s", 2_000)
    gone = set(range(3, 300, 7))
    for seq in sorted(gone):
        s.remove_msg(seq)
    ts = {seq: s.load_msg(seq).ts for seq in range(1, 300) if seq not in gone}
    s.stop()  # (the images written again with the holes)
    again = open_fs(tmp_path / "s")
    try:
        again.load_msg(2_000)
        p = index(again).pages[0]
        assert not p.loaded and p.msgs + len(p.dels) < p.n
        for seq in range(1, 300):
            if seq in gone:
                with pytest.raises(ErrStoreMsgNotFound):
                    again.load_msg(seq)
            else:
                msg = again.load_msg(seq)
                assert (msg.subject, msg.ts, msg.data) == (f"m.{(seq - 1) % 20}", ts[seq], b"payload-%06d" % (seq - 1))
        assert not p.loaded
    finally:
        again.stop()


def test_a_damaged_block_index_is_not_peeked_at(tmp_path: Path) -> None:
    """A block index file whose checksum fails is not read for single slots: a get by sequence
    reads a locator from it unchecked (one small read of the header, not the ~5 MB file), and
    when the record there fails its checks the file is verified whole (`_snapshot.file_layout`)
    and found damaged — the page is loaded from its block instead. The gets answer the stored
    messages and none is lost."""
    s = filled(tmp_path / "s", 2_000)
    s.stop()
    _flip(tmp_path / "s" / "msgs" / "2.idx", "locs", 2)  # (the first slot's locator: its record's length)
    again = open_fs(tmp_path / "s")
    try:
        again.load_msg(2_000)
        assert not index(again).pages[1].loaded
        first = index(again).pages[1].first
        for seq in range(first, first + 60, 3):
            msg = again.load_msg(seq)
            assert (msg.subject, msg.data) == (f"m.{(seq - 1) % 20}", b"payload-%06d" % (seq - 1))
        assert index(again).pages[1].loaded
        assert again.state().msgs == 2_000 and not again._backend.damaged
    finally:
        again.stop()


def test_a_get_looks_up_pending_removals_in_constant_steps(tmp_path: Path) -> None:
    """A get by sequence of an evicted page first asks whether the sequence was removed since the
    page's image (``Page.dels``, up to `DELS_MAX` removals wait there: random deletes of evicted
    pages add to it without loading the page). Counted as the removals looked at per get: a few
    at 100 and at 4,000 waiting (a scan of the list looked at all of them for each get), and the
    removed stay not found."""
    from pyjetstream.server.jetstream.store import ErrStoreMsgNotFound

    class Counted(list[int]):
        looked = 0

        def __contains__(self, item: object) -> bool:
            Counted.looked += len(self)
            return super().__contains__(item)

        def __getitem__(self, key):  # type: ignore[no-untyped-def]
            got = super().__getitem__(key)
            Counted.looked += len(got) if isinstance(key, slice) else 1
            return got

        def __iter__(self):  # type: ignore[no-untyped-def]
            for item in super().__iter__():
                Counted.looked += 1
                yield item

    def per_get(s: FileStore, n: int) -> float:
        p = index(s).pages[0]
        assert not p.loaded and not p.dels
        rng = random.Random(n)
        gone = set(rng.sample(range(p.first + 1, p.first + p.n - 1), n // 5))
        p.dels = Counted(sorted(gone))  # (as removals since its image would leave them)
        live = [seq for seq in range(p.first, p.first + p.n) if seq not in gone]
        Counted.looked = 0
        asked = [rng.choice(live) for _ in range(400)] + sorted(gone)[:100]
        for seq in asked:
            if seq in gone:
                with pytest.raises(ErrStoreMsgNotFound):
                    s.load_msg(seq)
            else:
                assert s.load_msg(seq).seq == seq
        return Counted.looked / len(asked)

    out = []
    for n in (500, 20_000):
        s = FileStore(FileStoreConfig(str(tmp_path / f"s{n}"), block_size=1 << 20, cache_slots=200), StoreConfig())
        try:
            with s.batch():
                for i in range(3 * 30_000):
                    s.store_msg(f"m.{i % 20}", b"", b"payload-%06d" % i)
            s.load_msg(3 * 30_000)
            out.append(per_get(s, n))
        finally:
            s.stop()
    small, large = out
    assert small <= 32 and large <= 32, (small, large)


def test_a_random_get_in_a_span_runs_the_same_python_at_both_sizes(tmp_path: Path) -> None:
    """A get by sequence in an evicted page whose block's spans are known (bench_scale's random
    get over 10M messages, 62 blocks: a miss of every cache, one span read) runs the same lines of
    Python at both sizes (~27 and ~270 blocks: finding the page and the block are C bisections),
    asks the `BlockCache` at most once (`BlockCache.fetch`: the hit, the count of the read out of
    order and the load were three calls; its clock counts the asks). With the compiled build
    (`run_reader.find_in_span` and `BlockCache` raise no trace events) ~90 trace events a get over
    10M messages (104 with `BlockCache` interpreted, 108 before `SeqIndex.slot` took `_covering`
    inline, 116 before `BlockCache.fetch`), against 48 for a get in the active block (its bytes in
    memory)."""
    from tests.support.steps import counting

    def per_get(s: FileStore, n: int) -> float:
        b = s._backend
        s.load_msg(n)  # (the last block's page: the others evicted)
        rng = random.Random(9)
        seqs = [rng.randint(1, b._firsts[-1] - 1) for _ in range(600)]
        seqs = [seq for seq in seqs if not index(s)._covering(seq).loaded][:400]  # type: ignore[union-attr]
        for seq in seqs:  # (each block's spans known: the write kept them)
            s.load_msg(seq)
        b._forget_reads(None)
        assert b.peeks._spans and b._whole.load_after > 1
        peeks, asks = index(s).peeks, b._whole._clock
        with counting() as steps:
            got = [s.load_msg(seq) for seq in seqs]
        for seq, msg in zip(seqs, got, strict=True):
            assert (msg.seq, msg.subject, msg.data) == (seq, f"m.{(seq - 1) % 20}", b"payload-%06d" % (seq - 1))
        assert index(s).peeks - peeks == len(seqs) and index(s).loads == 0
        assert b._whole._clock - asks <= len(seqs)
        return steps.count / len(seqs)

    small, large = at_sizes(tmp_path, per_get)
    assert abs(large - small) < 0.03 * small, (small, large)
