"""`PendingArray` (a consumer's pending acks as sequence-indexed columns) against the dict of
tuples it replaced: the same answers for every operation `DeliveryState` uses, in random
sequences of first deliveries (dense, with small and large gaps), acks, re-stamps and look-ups;
and its columns stay bounded by about twice the live entries (what is sparse moves to its dict)."""

from __future__ import annotations

import operator
import random
from array import array
from collections import deque
from collections.abc import Sequence
from itertools import compress, islice, pairwise
from pathlib import Path

import pytest

from pyjetstream.server.jetstream import pending_index, pending_map
from pyjetstream.server.jetstream.delivery_state import DeliveryState
from pyjetstream.server.jetstream.pending_index import PendingIndex
from pyjetstream.server.jetstream.pending_map import SLACK, PendingArray
from pyjetstream.server.jetstream.store import consumer_store
from pyjetstream.server.jetstream.store.base import SequencePair
from pyjetstream.server.jetstream.store.consumer_journal import pack_consumer_changes
from pyjetstream.server.jetstream.store.consumer_store import (
    FileConsumerStore,
    StoredPending,
    decode_consumer_state,
    encode_consumer_state,
    pack_consumer_columns,
)


def _same(pa: PendingArray, model: dict[int, tuple[int, int]]) -> None:
    assert len(pa) == len(model) == pa.n
    assert list(pa) == sorted(model)
    assert list(pa.entries()) == sorted(model.items())
    assert pa.to_dict() == model
    assert bool(pa) == bool(model)
    assert pa.first() == (min(model) if model else 0)
    assert len(pa.dseq) <= 2 * (len(model) - len(pa.old)) + SLACK + 1
    assert all(k < pa.base for k in pa.old)
    if model:
        lo, hi = min(model), max(model) + 2
        for r in (range(lo, hi), range(max(pa.base, lo), hi), range(pa.base + 1, pa.base + 40)):
            assert pa.run_values(r) == [model.get(s) for s in r]
        assert pa.run_values([lo, hi, lo + 3]) == [model.get(s) for s in (lo, hi, lo + 3)]
        for r in (range(lo, hi), range(max(pa.base, lo), hi), [lo, lo + 2, hi]):
            want = [k for k, s in enumerate(r) if s in model]
            for i in (0, 1, len(r) // 2):
                assert pa.live_from(r, i) == next((k for k in want if k >= i), len(r))
                assert pa.live_of(r, i, len(r) - 1) == [r[k] for k in want if i <= k < len(r) - 1]


@pytest.mark.parametrize("seed", range(6))
def test_pending_array_answers_as_the_dict(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    if seed % 2:  # (a small slack: the columns shed their sparse prefix often)
        monkeypatch.setattr(pending_map, "SLACK", 16)
    rnd = random.Random(seed)
    pa, model = PendingArray(), {}
    nxt, dseq, now = rnd.randrange(1, 1000), 1, 1
    for step in range(1500):
        r = rnd.random()
        if r < 0.35:  # a run of first deliveries (a range, or with gaps)
            k = rnd.choice((1, 3, 40, 120))
            gap = rnd.choice((0, 0, 0, 1, 7, 3000))
            if rnd.random() < 0.5:
                seqs: range | list[int] = range(nxt + gap, nxt + gap + k)
            else:
                seqs = sorted(rnd.sample(range(nxt + gap, nxt + gap + 3 * k), k))
            pa.add_run(seqs, dseq, now)
            for s in seqs:
                model[s] = (dseq, now)
                dseq += 1
            nxt = seqs[-1] + 1
        elif r < 0.75 and model:  # ack one at random (or something not pending)
            s = rnd.choice(list(model)) if rnd.random() < 0.9 else rnd.randrange(0, nxt + 10)
            assert pa.take(s) == model.pop(s, None)
        elif r < 0.85 and model:  # a re-stamp (redelivery, progress)
            s = rnd.choice(list(model))
            pa[s] = (model[s][0], now)
            model[s] = (model[s][0], now)
        elif r < 0.9:  # the mapping methods
            s = rnd.randrange(0, nxt + 10)
            assert pa.get(s) == model.get(s)
            assert (s in pa) == (s in model)
            if s in model:
                assert pa[s] == model[s]
                assert pa.pop(s) == model.pop(s)
            else:
                with pytest.raises(KeyError):
                    pa[s]
                assert pa.pop(s, None) is None
        elif r < 0.91:
            for s in list(model)[: rnd.randrange(1, 50)]:  # AckAll-like: the oldest
                del pa[s]
                del model[s]
        now += 1
        if step % 151 == 0:
            _same(pa, model)
    _same(pa, model)


def test_columns_stay_dense_when_old_ones_linger() -> None:
    """One old entry never acked while 100,000 newer ones come and go: the columns hold what is
    live (the straggler moves to the dict), and the slots moved or cut stay under two per
    delivery."""
    pa = PendingArray()
    pa.add_run(range(1, 11), 1, 0)
    for seq in range(2, 11):
        pa.take(seq)
    for seq in range(11, 100_011, 10):
        pa.add_run(range(seq, seq + 10), seq, 0)
        for s in range(seq, seq + 10):
            pa.take(s) if s % 100 else None
    assert 1 in pa and len(pa) == 1 + 1000
    assert len(pa.dseq) <= 2 * (len(pa) - len(pa.old)) + SLACK + 1
    assert pa.steps < 2 * 100_000


def test_sparse_first_deliveries_go_to_the_dict() -> None:
    """A filtered consumer's matches far apart: no columns of zeros between them."""
    pa = PendingArray()
    for i in range(1, 2001):
        pa.add_run(range(i * 1_000_000, i * 1_000_000 + 1), i, 0)
    assert len(pa) == 2000
    assert len(pa.dseq) <= SLACK + 1
    assert list(pa) == [i * 1_000_000 for i in range(1, 2001)]


@pytest.mark.parametrize("seed", range(8))
def test_a_restore_fills_as_deliveries_would(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A restore's entries (`PendingArray(entries)`) made in C passes (``BULK_FILL``: dense
    columns, with gaps or none) hold and answer as those made one entry at a time, then and after
    the same deliveries, acks and re-stamps."""
    rnd = random.Random(seed)
    start = rnd.randrange(1, 10_000)
    shape = seed % 4
    if shape == 0:  # one run, no gap
        keys = list(range(start, start + 2000))
    elif shape == 1:  # acked here and there
        keys = sorted(rnd.sample(range(start, start + 3000), 2000))
    elif shape == 2:  # an old straggler far below the rest (sparse: one by one)
        keys = [start, *range(start + 6000, start + 8000)]
    else:  # a few
        keys = sorted(rnd.sample(range(start, start + 30), 7))
    entries = {k: (i + 1, 1000 + rnd.randrange(50)) for i, k in enumerate(keys)}
    made = []
    for bulk in (True, False):
        monkeypatch.setattr(pending_map, "BULK_FILL", bulk)
        made.append(PendingArray(dict(entries)))
    model = dict(entries)
    for pa in made:
        _same(pa, model)
    nxt, dseq = keys[-1] + 1, len(keys) + 1
    for step in range(400):
        r = rnd.random()
        if r < 0.3:
            seqs = range(nxt + rnd.choice((0, 0, 5)), nxt + rnd.choice((0, 0, 5)) + rnd.choice((1, 20)))
            for pa in made:
                pa.add_run(seqs, dseq, step)
            for s in seqs:
                model[s] = (dseq, step)
                dseq += 1
            nxt = max(nxt, seqs.stop)
        elif r < 0.8 and model:
            s = rnd.choice(list(model))
            want = model.pop(s)
            assert [pa.take(s) for pa in made] == [want, want]
        elif model:
            s = rnd.choice(list(model))
            model[s] = (model[s][0], step)
            for pa in made:
                pa[s] = model[s]
        if step % 200 == 0:
            for pa in made:
                _same(pa, model)
    for pa in made:
        _same(pa, model)


@pytest.mark.parametrize("gap", [10, 100, 1000])
def test_a_filtered_consumers_matches_cost_no_zero_slots(gap: int) -> None:
    """Matches ``gap`` apart (a consumer filtered to one subject of many), a hundred pending,
    acked oldest first, delivered one and twenty at a time: they go to the dict, not columns of
    zeros shed over and over (before: ~100 slots filled and moved per match at a gap of 100,
    ~1,500 at 1,000)."""
    for run in (1, 20):
        pa, live, seq = PendingArray(), list[int](), 1
        for k in range(0, 4000, run):
            seqs = range(seq, seq + 1) if run == 1 else array("q", range(seq, seq + run * gap, gap))
            pa.add_run(seqs, k + 1, 0)
            live.extend(seqs)
            while len(live) > 100:
                assert pa.take(live.pop(0)) is not None
            seq = seqs[-1] + gap
        assert list(pa) == live
        assert pa.steps <= 2 * 4000 and len(pa.dseq) <= SLACK, (run, pa.steps, len(pa.dseq))


@pytest.mark.parametrize("seed", range(8))
def test_a_rebuild_from_the_columns_orders_as_one_by_one(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """`PendingIndex.rebuild` from the columns in C passes (``COLUMN_REBUILD``: every deadline
    the delivery time + one wait) makes the same heap and floor order as one entry at a time, with
    and without an old straggler below the columns, acks here and there, a backoff with nothing
    redelivered, and (one by one either way) a backoff with redelivery counts."""
    rnd = random.Random(seed)
    start = rnd.randrange(1, 10_000)
    keys = sorted(rnd.sample(range(start + 6000, start + 9000), 2000))
    if seed % 2:
        keys = [start, start + 3, *keys]  # (old stragglers: kept in the dict below the columns)
    pa = PendingArray({k: (i + 1, 1000 + rnd.randrange(50)) for i, k in enumerate(keys)})
    for k in rnd.sample(keys, 300):
        pa.take(k)
    backoff = [5, 50, 500] if seed % 4 >= 2 else []
    rdc = {k: rnd.randrange(1, 4) for k in rnd.sample(list(pa), 20)} if seed % 8 >= 4 else {}
    built = []
    for fast in (True, False):
        monkeypatch.setattr(pending_index, "COLUMN_REBUILD", fast)
        index = PendingIndex(30, list(backoff))
        index.rebuild(pa, rdc)
        built.append((index._heap, [list(run) for run in index._order], index.steps))
    assert built[0] == built[1]
    assert built[0][1] == [list(pa)]


def _restored(tmp: Path, pa: PendingArray, rdc: dict[int, int], journal: bool) -> DeliveryState:
    """``pa`` written as a state slot (its columns, o.dat version 4; with ``journal`` a change
    appended after it), read back by a new store and restored as a restart does."""
    floor, top = SequencePair(1, pa.first() - 1 if pa else 0), max([*pa, 1])
    delivered = SequencePair(10**6, top)
    cs = FileConsumerStore(str(tmp), "c")
    cs.adopt_packed(pack_consumer_columns(delivered, floor, pa.columns(), pa.n, rdc))
    cs.flush()
    if journal:  # (a replay writes the pending map: the stored columns become a dict)
        last = next(reversed(list(pa)))
        gone = array("Q", [next(iter(pa))])
        changes = pack_consumer_changes(delivered, floor, array("Q", [last]), gone, {last: (7, 7)}, {}, array("Q"))
        cs.adopt_changes(changes)
        cs.flush()
    cs.stop()
    st = FileConsumerStore(str(tmp), "c").state()
    ds = DeliveryState()
    ds.restore(st.copy())
    return ds


@pytest.mark.parametrize("seed", range(8))
def test_a_restore_from_the_stored_columns_equals_one_through_a_dict(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restart's pending acks taken from the stored columns as they are (``COLUMN_RESTORE``,
    `StoredPending` adopted by ``PendingArray``) restore the same `DeliveryState` — entries, count,
    columns' answers, heap and floor order — as through a dict of tuples; with old stragglers
    below the columns, acked slots, redelivery counts, and a journal replayed after the slot."""
    rnd = random.Random(seed)
    start = rnd.randrange(1, 10_000)
    keys = sorted(rnd.sample(range(start + 6000, start + 9000), 2000))
    if seed % 2:
        keys = [start, start + 3, *keys]
    pa = PendingArray()
    for i, k in enumerate(keys):
        pa[k] = (i + 1, 1000 + rnd.randrange(50))
    for k in rnd.sample(keys, 300):
        pa.take(k)
    rdc = {k: rnd.randrange(1, 4) for k in rnd.sample(list(pa), 20)} if seed % 4 >= 2 else {}
    journal = seed % 8 >= 4
    got = []
    for i, fast in enumerate((True, False)):
        monkeypatch.setattr(consumer_store, "COLUMN_RESTORE", fast)
        ds = _restored(tmp_path / str(i), pa, rdc, journal)
        got.append((list(ds.pending.entries()), ds.pending.n, ds.rdc, ds.index._heap, [list(r) for r in ds.index._order]))
        _same(ds.pending, dict(ds.pending.entries()))
    assert got[0] == got[1]
    if not journal:
        assert got[0][0] == list(pa.entries())


@pytest.mark.parametrize("fast", [True, False])
def test_a_restore_makes_no_entry_per_pending_ack(fast: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Step count: a restart's restore from the stored columns makes no Python entry (no tuple of
    a dict) per pending ack, at 1,000 and 10,000 pending, after a clean stop and with a journal
    replayed after the slot, nor looks at each column slot to count them (the slot's header keeps
    the count, `StoredPending.counted`); the stored state itself stays columns, and as columns is
    written again. (With the switch off nothing is a `StoredPending`: the slot decodes to a dict.)"""
    monkeypatch.setattr(consumer_store, "COLUMN_RESTORE", fast)
    for n in (1_000, 10_000):
        pa = PendingArray()
        pa.add_run(range(100, 100 + n), 1, 5)
        for k in range(100, 100 + n, 3):
            pa.take(k)
        before, counted = StoredPending.materialized, StoredPending.counted
        ds = _restored(tmp_path / str(n), pa, {}, False)
        assert list(ds.pending.entries()) == list(pa.entries()) and ds.pending.n == pa.n
        assert StoredPending.materialized - before == 0
        st = FileConsumerStore(str(tmp_path / str(n)), "c").state()
        assert isinstance(st.pending, StoredPending) is fast
        assert st.pending == pa.to_dict() and decode_consumer_state(encode_consumer_state(st)) == st
        assert len(st.pending) == pa.n
        assert StoredPending.materialized - before == 0 and StoredPending.counted - counted == 0
        # After a crash: a journal replayed on top (its writes kept beside the columns).
        journaled = _restored(tmp_path / f"j{n}", pa, {}, True)
        assert journaled.pending.n == pa.n - 1
        assert StoredPending.materialized - before == 0 and StoredPending.counted - counted == 0


@pytest.mark.parametrize("seed", range(6))
def test_a_rebuild_into_time_runs_is_due_as_the_heap(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rebuild whose delivery times never go down along the sequences puts them back as
    timeline runs (``TIME_RUNS``), not a heap tuple each: the same acks come due at each moment
    with the same next deadline, before and after acks, re-stamps and redeliveries (those of the
    runs ahead of the heap's, as the runs of a consumer that was not restarted); times that go
    down (a redelivery out of order) or too many runs keep the heap."""
    rnd = random.Random(seed)
    pa = PendingArray()
    nxt, ts, dseq = rnd.randrange(1, 1000), 1000, 1
    for _ in range(40):
        k = rnd.choice((1, 50, 200))
        pa.add_run(range(nxt, nxt + k), dseq, ts)
        nxt, dseq, ts = nxt + k + rnd.choice((0, 0, 3)), dseq + k, ts + rnd.choice((0, 10, 25))
    for k in rnd.sample(list(pa), len(pa) // 5):
        pa.take(k)
    if seed % 3 == 1:  # (a redelivery out of order: the heap)
        pa[next(iter(pa))] = (1, ts + 5)
    if seed % 3 == 2:  # (every pending ack its own time: too many runs, the heap)
        for i, k in enumerate(list(pa)):
            pa[k] = (i + 1, 1000 + i)
    wait = 100
    backoff = [wait, 500] if seed % 2 else []
    plain = PendingArray(pa.to_dict())
    got = []
    for fast in (True, False):
        monkeypatch.setattr(pending_index, "TIME_RUNS", fast)
        mine = PendingArray(pa.to_dict())
        index = PendingIndex(wait, list(backoff))
        index.rebuild(mine, {})
        assert bool(index._timeline) == (fast and seed % 3 == 0)
        seen = [index.next_deadline()]
        r = random.Random(seed)
        for now in range(1000, ts + 3 * wait, 7):
            if r.random() < 0.3 and mine:
                mine.take(r.choice(list(mine)))
            found = sorted(index.due(now, mine))
            for k in found[: len(found) // 2]:  # (half redelivered: stamped again)
                mine.restamp([k], now)
                index.stamped(k, now, 1, mine)
            seen += [found, index.next_deadline()]
        got.append((seen, mine.to_dict()))
    assert got[0] == got[1]
    assert plain.to_dict() == pa.to_dict()


def _time_runs_by_neighbours(seqs: Sequence[int], times: array[int]) -> deque[tuple[int, Sequence[int]]] | None:
    """`pending_index._time_runs` as 5dbd50e wrote it: a pass comparing every neighbour."""
    n = len(times)
    if not n or not all(map(operator.le, times, islice(times, 1, None))):
        return None if n else deque()
    cuts = list(compress(range(1, n), map(operator.ne, times, islice(times, 1, None))))
    if len(cuts) > n // 8:
        return None
    return deque((times[a], seqs[a:b]) for a, b in pairwise([0, *cuts, n]))


@pytest.mark.parametrize("seed", range(40))
def test_time_runs_by_search_equal_the_pass_over_neighbours(seed: int) -> None:
    """`_time_runs` finds each run's end by a binary search and checks it (its times equal, as
    bytes, and above the run before) rather than comparing every neighbour: the same runs, or
    None, for times in order with few or many runs, out of order (a time going down anywhere,
    a run's time again after a lower one) and at the edges (empty, one, all equal)."""
    rnd = random.Random(seed)
    n = rnd.choice((0, 1, 2, 7, 8, 9, 64, 200, 1000))
    runs = rnd.choice((1, 2, n // 8 or 1, n // 8 + 1, n // 8 + 2, n or 1))
    times = array("q", sorted(rnd.randrange(10**18, 10**18 + runs) for _ in range(n)))
    shape = seed % 4
    if shape == 1 and n > 1:  # (one time going down)
        i = rnd.randrange(1, n)
        times[i] = times[i - 1] - rnd.choice((1, 10**6))
    elif shape == 2 and n > 2:  # (a run's time again after a lower one)
        i = rnd.randrange(2, n)
        times[i - 1], times[i] = times[i - 1] - 1, times[0]
    elif shape == 3 and n > 1:  # (two neighbours swapped)
        i = rnd.randrange(1, n)
        times[i - 1], times[i] = times[i], times[i - 1]
    seqs = range(100, 100 + n) if seed % 2 else array("q", range(3, 3 + 2 * n, 2))
    want = _time_runs_by_neighbours(seqs, times)
    got = pending_index._time_runs(seqs, times)
    assert got == want, (n, runs, shape)


@pytest.mark.parametrize("shape", ["whole", "acked", "old"])
def test_live_as_a_range_equals_the_arrays(shape: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`PendingArray.live` of columns with no acked slot and nothing below them is a ``range``
    and the times' copy (``RANGE_LIVE``): the same sequences and times as the arrays, and a
    rebuild from it the same floor order and due runs."""
    pa = PendingArray()
    pa.add_run(range(10, 1010), 1, 100)
    pa.add_run(range(1010, 2010), 1001, 200)
    if shape == "acked":
        pa.take(500)
    elif shape == "old":
        pa[3] = (9999, 50)
    got = []
    for fast in (True, False):
        monkeypatch.setattr(pending_map, "RANGE_LIVE", fast)
        seqs, times = pa.live()
        assert type(seqs) is (range if fast and shape == "whole" else array)
        index = PendingIndex(30, [])
        index.rebuild(pa, {})
        runs = [(ts, list(s)) for ts, s in index._timeline]
        got.append((list(seqs), list(times), [list(r) for r in index._order], runs, index._heap))
    assert got[0] == got[1]
    assert got[0][0] == list(pa)
