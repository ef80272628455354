"""Complexity guards for the store's subject and filter queries (issue 24, dimension 1): count the
index's steps (slots scanned: ``SeqIndex.steps``; subject-tree entries visited:
``SubjectTree.steps``) at two sizes of state and assert they do not grow — no timing.

Each test keeps the number of messages the same at both sizes and grows the number of subjects
ten times, so what is measured is what a query costs per subject stored.
"""

from __future__ import annotations

from pyjetstream.server.jetstream.store import MemoryStore, StoreConfig
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.store.seqindex import SeqIndex

SIZES = (1_000, 10_000)
MSGS = 20_000


def _index(store: IndexedStore) -> SeqIndex:
    return store._index


def steps(store: IndexedStore) -> int:
    index = _index(store)
    return index.steps + index.subjects.tree.steps


def two_groups(subjects: int, msgs: int = MSGS, **limits: object) -> MemoryStore:
    """``msgs`` messages over ``subjects`` subjects, half ``a.<n>`` and half ``b.<n>``, interleaved."""
    store = MemoryStore(StoreConfig(**limits))  # type: ignore[arg-type]
    for i in range(msgs):
        store.store_msg(f"{'ab'[i % 2]}.{i % subjects}", b"", b"x")
    return store


def read_all(store: IndexedStore, filters: list[str], run: int = 128) -> int:
    """A consumer's read-ahead through the whole stream; returns how many messages matched."""
    seq, got = 1, 0
    while True:
        if len(filters) == 1:
            msgs = store.load_next_msgs(filters[0], seq, run, 1 << 20)
        else:
            msgs = store.load_next_msgs_multi(filters, seq, run, 1 << 20)
        if not msgs:
            return got
        got += len(msgs)
        seq = msgs[-1][1] + 1


def per_msg_read_steps(subjects: int, filters: list[str]) -> float:
    store = two_groups(subjects)
    store.load_next_msgs_multi(filters, 1, 1, 1 << 20)  # the filter's match is built (per request)
    before = steps(store)
    got = read_all(store, filters)
    assert got == MSGS // 2
    return (steps(store) - before) / got


def test_wildcard_read_ahead_steps_do_not_grow_with_subjects() -> None:
    small, large = (per_msg_read_steps(n, ["a.>"]) for n in SIZES)
    assert large <= 1.5 * small and large < 8, (small, large)


def test_multi_filter_read_ahead_is_one_walk() -> None:
    small, large = (per_msg_read_steps(n, ["a.*", "a.1.>"]) for n in SIZES)
    assert large <= 1.5 * small and large < 8, (small, large)


def test_next_match_one_message_at_a_time() -> None:
    """``load_next_msg`` with a wildcard (direct get next_by_subj, a multi-filter consumer's
    single step): no per-call pass over the matching subjects (it was a max over all of them)."""
    per: list[float] = []
    for n in SIZES:
        store = two_groups(n)
        store.load_next_msg("a.>", 1)
        before = steps(store)
        seq = 1
        for _ in range(2_000):
            seq = store.load_next_msg("a.>", seq)[1] + 1
        per.append((steps(store) - before) / 2_000)
    assert per[1] <= 1.5 * per[0] and per[1] <= 64, per


def test_filter_that_matches_every_subject_needs_no_test() -> None:
    """A KV watcher's filter (the bucket's whole subject space) is answered as no filter at all."""
    store = MemoryStore(StoreConfig())
    for i in range(5_000):
        store.store_msg(f"$KV.b.k{i}", b"", b"v")
    store.load_next_msgs("$KV.b.>", 1, 1, 1 << 20)  # the filter's match is built (per request)
    before = steps(store)
    assert read_all(store, ["$KV.b.>"]) == 5_000
    assert steps(store) - before == 0  # no slot is tested against a set of subjects


def test_matching_visits_the_matching_subjects_not_all() -> None:
    for n in (10_000, 100_000):
        store = MemoryStore(StoreConfig())
        for i in range(n):
            store.store_msg(f"x.{i}.y", b"", b"")
        for i in range(10):
            store.store_msg(f"a.b.{i}", b"", b"")
        before = steps(store)
        assert len(store.subjects_totals("a.b.>")) == 10
        assert len(store.subjects_state("a.*.3")) == 1
        assert store.multi_last_seqs(["a.b.*"], n + 10) == list(range(n + 1, n + 11))
        assert store.filtered_state(1, "a.>").msgs == 10
        assert steps(store) - before < 80, n


def test_eof_at_the_tail_is_not_scanned_again() -> None:
    """A consumer waiting at the end of a stream of other subjects: each look scans only what was
    stored since the last one (nats-server moves ``sseq`` past the end instead)."""
    store = two_groups(1_000, msgs=2_000)
    start = read_all(store, ["a.>"])  # at the end
    assert start == 1_000
    for i in range(200):
        store.store_msg(f"c.{i}", b"", b"")  # nothing for a.>
        before = steps(store)
        assert store.load_next_msgs("a.>", 2_000, 128, 1 << 20) == []
        assert steps(store) - before <= 64, i


def test_last_per_subject_start_is_one_visit_per_subject() -> None:
    per: list[float] = []
    for n in SIZES:
        store = two_groups(n, msgs=2 * n * 2)
        before = steps(store)
        lasts = store.multi_last_seqs(["a.>"], 4 * n)
        assert len(lasts) == n // 2 and lasts == sorted(lasts)
        per.append((steps(store) - before) / len(lasts))
    assert per[1] <= 1.5 * per[0], per


def test_max_msgs_per_subject_removal_steps_do_not_grow() -> None:
    """KV history: each put on an existing key removes its oldest message, following links."""
    per: list[float] = []
    for n in SIZES:
        store = MemoryStore(StoreConfig(max_msgs_per_subject=1))
        for i in range(n):
            store.store_msg(f"k.{i}", b"", b"v")
        before = steps(store)
        for i in range(5_000):
            store.store_msg(f"k.{i % n}", b"", b"w")
        per.append((steps(store) - before) / 5_000)
    assert per[1] <= 1.5 * per[0] + 1, per


def test_a_trimmed_run_steps_do_not_grow() -> None:
    """A read's publishes onto existing keys under ``max_msgs_per_subject: 1``: stored as one run
    and trimmed after (`IndexedStore._trim_run`), its steps and pages visited per message flat."""
    per: list[float] = []
    for n in SIZES:
        store = MemoryStore(StoreConfig(max_msgs_per_subject=1), page_slots=1024)
        for i in range(n):
            store.store_msg(f"k.{i}", b"", b"v")
        index = _index(store)
        before = steps(store) + index.visits
        for r in range(20):
            subjects = [f"k.{(r * 7919 + j * 104_729) % n}" for j in range(256)]
            assert store.run_fits(subjects, 10, 1 << 20)
            store.store_run(subjects, [b""] * 256, [b"w"] * 256)
        assert store.state().msgs == n
        per.append((steps(store) + index.visits - before) / (20 * 256))
    assert per[1] <= 1.5 * per[0] + 1, per


def test_subject_purge_steps_per_removed_message_do_not_grow() -> None:
    """A subject purge takes its messages page by page (`seqbulk.oldest_of`): the steps per
    message removed stay flat from 20,000 to 200,000 (pages of nothing else taken whole)."""
    per: list[float] = []
    for g in (20_000, 200_000):
        store = MemoryStore(StoreConfig())
        for i in range(1_000):
            store.store_msg(f"a.{i % 100}", b"", b"x")
        for _ in range(g):
            store.store_msg("g", b"", b"x")
        for i in range(1_000):
            store.store_msg(f"a.{i % 100}", b"", b"x")
        index = _index(store)
        before = steps(store) + index.visits
        assert store.purge_ex("g") == g
        per.append((steps(store) + index.visits - before) / g)
    assert per[1] <= 1.5 * per[0], per


# --------------------------------------------------------------------------------------------
# Interior deletes (dimension 4): a run of deleted sequences in the middle of a stream.
# --------------------------------------------------------------------------------------------
GAPS = (20_000, 200_000)


def gap_store(gap: int, on: str = "g") -> MemoryStore:
    """1,000 messages over ``a.0``..``a.99`` and ``b.0``..``b.99``, ``gap`` on ``on``, 1,000 more;
    then the ``gap`` deleted one by one (a subject purge, or deletes of ``a.1``'s middle when ``on``
    is ``a.1``)."""
    store = MemoryStore(StoreConfig())
    for i in range(1_000):
        store.store_msg(f"{'ab'[i % 2]}.{(i // 2) % 100}", b"", b"x")
    for _ in range(gap):
        store.store_msg(on, b"", b"x")
    for i in range(1_000):
        store.store_msg(f"{'ab'[i % 2]}.{(i // 2) % 100}", b"", b"x")
    if on == "g":
        assert store.purge_ex("g") == gap
    else:
        for seq in range(1_001, 1_001 + gap):
            assert store.remove_msg(seq)
    return store


def gap_steps(gap: int, on: str, op: str) -> int:
    store = gap_store(gap, on)
    before = steps(store) + _index(store).visits
    if op == "state":
        st = store.state()
        assert (st.msgs, st.num_deleted) == (2_000, gap)
    elif op == "all":
        assert read_all(store, [">"]) == 2_000
    elif op == "wildcard":
        assert read_all(store, ["a.>"]) == 1_000
    elif op == "literal":
        assert read_all(store, ["a.1"]) == 10
    elif op == "pending":
        assert store.num_pending(1, ">")[0] == 2_000
        assert store.num_pending(501, "a.>")[0] == 750
        assert store.filtered_state(900, ">").first == 900
    elif op == "next":
        assert store.load_next_msg(">", 1_001)[1] == 1_001 + gap
        assert store.load_next_msg("a.>", 1_001)[1] == 1_001 + gap
        assert store.load_next_msg("a.1", 900)[1] == 1_003 + gap
    return steps(store) + _index(store).visits - before


def test_interior_deletes_cost_does_not_grow_with_the_gap() -> None:
    for on in ("g", "a.1"):
        for op in ("state", "all", "wildcard", "literal", "pending", "next"):
            small, large = (gap_steps(g, on, op) for g in GAPS)
            assert large <= 1.5 * small + 70, (on, op, small, large)
