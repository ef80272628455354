"""A removal of one message in an evicted index page does not load the page (issue 24: a random
``STREAM.MSG.DELETE`` over 1M file-stored messages loaded its page each time, ~20 ms; nats-server's
``removeMsg`` reads the one message; a secure erase also dropped the block's index, to be written
again). Counted, not timed: the index's page loads
(``SeqIndex.loads``) per removal at two sizes of stream; and the same removals with every page
resident leave the same state, before and after a restart (clean and after a crash)."""

from __future__ import annotations

import random
from pathlib import Path

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig

SUBJECTS = 10
RUN = 500


def _open(path: Path, cache_slots: int) -> FileStore:
    fcfg = FileStoreConfig(str(path), block_size=32 * 1024, cache_slots=cache_slots)
    return FileStore(fcfg, StoreConfig(name="S"))


def _fill(store: FileStore, msgs: int) -> None:
    subjects = [f"d.{i % SUBJECTS}" for i in range(RUN)]
    hdrs = [b"NATS/1.0\r\nA: b\r\n\r\n" if i % 3 == 0 else b"" for i in range(RUN)]
    for i in range(0, msgs, RUN):
        store.store_run(subjects, hdrs, [b"x" * (i % 7 + 1)] * RUN)


def _removals(msgs: int, k: int) -> list[int]:
    return random.Random(msgs).sample(range(2, msgs), k)  # (not the first: it moves the floor)


def _loads_per_removal(tmp_path: Path, msgs: int) -> float:
    store = _open(tmp_path / f"s{msgs}", cache_slots=1000)
    try:
        _fill(store, msgs)
        seqs = _removals(msgs, 300)
        before = store._index.loads
        assert all(store.remove_msg(s) for s in seqs)
        assert not any(store.remove_msg(s) for s in seqs[:20])  # gone: nothing to remove
        return (store._index.loads - before) / len(seqs)
    finally:
        store.stop()


def test_random_removals_do_not_load_pages(tmp_path: Path) -> None:
    small, large = (_loads_per_removal(tmp_path, n) for n in (10_000, 100_000))
    # Only a removal of its subject's first or last message looks at the page (1 in ~500 here).
    assert small <= 0.05 and large <= 0.05, (small, large)


def test_random_secure_erases_do_not_load_or_write_pages(tmp_path: Path) -> None:
    """A secure erase keeps the block's index (a tombstone makes a restart scan the block): it
    neither loads the page nor writes the block's index again at the page's eviction."""
    per: list[tuple[float, float]] = []
    for msgs in (10_000, 100_000):
        store = _open(tmp_path / f"e{msgs}", cache_slots=1000)
        try:
            _fill(store, msgs)
            seqs = _removals(msgs, 300)
            loads, writes = store._index.loads, store._backend.index_writes
            assert all(store.remove_msg(s, True) for s in seqs)
            per.append(((store._index.loads - loads) / 300, (store._backend.index_writes - writes) / 300))
        finally:
            store.stop()
    assert all(loads <= 0.05 and writes <= 0.05 for loads, writes in per), per


def _state(store: FileStore) -> tuple[object, ...]:
    st = store.state()
    msgs = [store.load_msg(s) for s in range(st.first_seq, st.last_seq + 1) if store._index.live(s)]
    return (
        st.msgs,
        st.bytes,
        st.first_seq,
        st.last_seq,
        st.num_deleted,
        sorted((k, (v.msgs, v.first, v.last)) for k, v in store.subjects_state(">").items()),
        [(m.subject, m.seq, m.hdr, m.data) for m in msgs],
    )


def test_evicted_removals_equal_resident_ones(tmp_path: Path) -> None:
    msgs = 20_000
    seqs = [*_removals(msgs, 2000), 1]
    resident = _open(tmp_path / "r", cache_slots=1 << 30)
    evicted = _open(tmp_path / "e", cache_slots=1000)
    _fill(resident, msgs)
    _fill(evicted, msgs)
    for i, s in enumerate(seqs):  # every third a secure erase
        assert resident.remove_msg(s, i % 3 == 0) == evicted.remove_msg(s, i % 3 == 0) is True
    want = _state(resident)
    resident.stop()
    assert _state(evicted) == want
    evicted.stop()
    again = _open(tmp_path / "e", cache_slots=1000)
    assert _state(again) == want
    more = _removals(msgs * 3, 500)
    more = [s for s in more if s < msgs and again._index.live(s)][:200]
    for i, s in enumerate(more):
        assert again.remove_msg(s, i % 2 == 0)
    want = _state(again)
    again.abandon()  # kill -9: nothing flushed or snapshotted
    crashed = _open(tmp_path / "e", cache_slots=1000)
    try:
        assert _state(crashed) == want
    finally:
        crashed.stop()
