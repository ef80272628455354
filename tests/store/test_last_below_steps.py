"""The last message of a subject below a sequence (`SeqQueries._last_below`: a direct get's
``multi_last`` or last-by-subject with ``up_to_seq``, `SeqQueries.prev_match`; issue 24,
dimension 1). A subject with few messages is walked along its links from its first one, so the
steps do not grow with the slots in between; counted, not timed (the index's ``steps``: slots
scanned back, links followed), at two sizes. `seqquery.PREV_BY_LINKS` off (the scan back from
the sequence) gives the same answers.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, MemoryStore, StoreConfig, seqquery
from pyjetstream.server.jetstream.store.indexed import IndexedStore

SIZES = (1_000, 10_000)


def two_passes(subjects: int) -> MemoryStore:
    """scale_more ``subjects2``'s stream: one message on each of ``w.0`` .. ``w.<subjects-1>``, then
    one more on each of the first 100."""
    store = MemoryStore(StoreConfig())
    for j in range(subjects):
        store.store_msg(f"w.{j}", b"", b"x")
    for j in range(100):
        store.store_msg(f"w.{j}", b"", b"x")
    return store


def per_request_steps(subjects: int) -> float:
    """``multi_last`` of 10 of the first 100 subjects up to the end of the first pass: each one's
    first message, the second past ``up_to_seq``."""
    store = two_passes(subjects)
    rng = random.Random(subjects)
    index = store._index
    before = index.steps
    requests = 50
    for _ in range(requests):
        picked = rng.sample(range(100), 10)
        got = store.multi_last_seqs([f"w.{j}" for j in picked], subjects)
        assert got == sorted(j + 1 for j in picked)
    return (index.steps - before) / requests


def test_multi_last_up_to_seq_steps_do_not_grow() -> None:
    small, large = (per_request_steps(n) for n in SIZES)
    assert small == large <= 30, (small, large)


def test_prev_match_of_a_subject_with_few_messages() -> None:
    for n in SIZES:
        store = two_passes(n)
        before = store._index.steps
        assert store._index.prev_match(n, "w.7") == 8
        assert store._index.steps - before <= 3


def _change(store: IndexedStore, state: random.Random) -> None:
    roll = state.random()
    if roll < 0.03:  # subjects with a message or two far apart (the walk along links)
        store.store_msg(f"r.{state.randrange(60)}", b"", b"x")
    elif roll < 0.7:
        store.store_msg(f"s.{state.randrange(40) if state.random() < 0.9 else state.randrange(4)}", b"", b"x")
    elif roll < 0.9:
        last = store.state().last_seq
        if last:
            store.remove_msg(state.randrange(1, last + 1))
    elif roll < 0.997:
        store.purge_ex(f"s.{state.randrange(40)}", keep=state.randrange(3))
    else:
        store.compact(max(store.state().first_seq, store.state().last_seq - state.randrange(1_000, 3_000)))


@pytest.mark.parametrize("kind", ["memory", "file-small"])
def test_links_give_what_the_scan_gives(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random stores and removals; at many points every subject's last message below random
    sequences, `multi_last_seqs` and `prev_match`, with `PREV_BY_LINKS` on and off."""
    if kind == "memory":
        store: IndexedStore = MemoryStore(StoreConfig())
    else:
        store = FileStore(FileStoreConfig(str(tmp_path), block_size=1024, compact_min_bytes=256, cache_slots=1))
    state = random.Random(19)
    walked = 0
    for step in range(4_000):
        _change(store, state)
        if step % 50:
            continue
        st = store.state()
        if not st.msgs:
            continue
        index = store._index  # type: ignore[attr-defined]
        for sid in [sid for sid, name in enumerate(index.subjects.names) if name]:
            for seq in state.sample(range(st.first_seq, st.last_seq + 2), min(8, st.last_seq - st.first_seq + 2)):
                table = index.subjects
                walked += 0 < table.first[sid] and table.msgs[sid] * seqquery._SLOTS_PER_HOP < seq - table.first[sid]
                got = index._last_below(seq, sid)
                monkeypatch.setattr(seqquery, "PREV_BY_LINKS", False)
                assert got == index._last_below(seq, sid), (step, sid, seq)
                monkeypatch.setattr(seqquery, "PREV_BY_LINKS", True)
        up_to = state.randrange(st.first_seq, st.last_seq + 1)
        filters = [f"s.{j}" for j in state.sample(range(40), 3)] + [f"r.{j}" for j in state.sample(range(60), 3)]
        on = (store.multi_last_seqs(filters, up_to), [index.prev_match(up_to, f) for f in filters])
        monkeypatch.setattr(seqquery, "PREV_BY_LINKS", False)
        off = (store.multi_last_seqs(filters, up_to), [index.prev_match(up_to, f) for f in filters])
        monkeypatch.setattr(seqquery, "PREV_BY_LINKS", True)
        assert on == off, step
    store.stop()
    assert walked > 500  # (the links were walked, not only the scan)
