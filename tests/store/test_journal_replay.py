"""A crash restart's consumer journal costs what the journal holds in C passes, not one Python
step per pending ack (issue 24, dimension 5: pending acks, at a restart after ``kill -9``).

A consumer with many pending acks writes its changes since its last whole state to ``o.jnl``
(`store.consumer_journal`); after a burst of first deliveries that is one entry per pending ack.
A clean stop writes the whole state; ``kill -9`` leaves the journal, which the restart replays:
into the slot's stored columns (`StoredPending`), then into the consumer's (`PendingArray`). One
``__setitem__`` each made ~21 trace events a pending ack: a restart of 60,000 of them took 145 ms
in process against 6 after a clean stop; acks in the journal (a crash while they flow) two
``pop`` calls each, ~1.2 µs. The first deliveries now go in as one stretch and the acks of every
live slot of a stretch as one (``consumer_journal.BULK_FIRSTS`` and ``BULK_GONE``,
``pending_map.BULK_WRITES``): the switches off restore the same state, and on make no Python
step per entry, at two sizes, on the embedded server.
(nats-server rewrites its whole consumer state at each flush and keeps no journal: there is no
journal of its to compare with; its restart after ``kill -9`` reads ``o.dat`` as after a stop.)
"""

from __future__ import annotations

import random
import shutil
import tempfile
from array import array
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import count_calls, pub_frame, publish_in_one_write

from pyjetstream.server.jetstream import pending_map
from pyjetstream.server.jetstream.delivery_state import DeliveryState
from pyjetstream.server.jetstream.pending_map import PendingArray
from pyjetstream.server.jetstream.store import consumer_journal
from pyjetstream.server.jetstream.store.base import SequencePair
from pyjetstream.server.jetstream.store.consumer_journal import pack_consumer_changes
from pyjetstream.server.jetstream.store.consumer_store import (
    FileConsumerStore,
    StoredPending,
    pack_consumer_columns,
)
from pyjetstream.server.server import Server

SWITCHES = ((consumer_journal, "BULK_FIRSTS"), (consumer_journal, "BULK_GONE"), (pending_map, "BULK_WRITES"))
# The one-by-one steps of a replay: what the switches make unnecessary per pending ack.
ONE_BY_ONE = ((PendingArray, ("__setitem__", "_append", "take")), (StoredPending, ("__setitem__", "__delitem__")))


def _switch(monkeypatch: pytest.MonkeyPatch, on: bool) -> None:
    for module, name in SWITCHES:
        monkeypatch.setattr(module, name, on)


def _journaled(tmp: Path, shape: int, rnd: random.Random) -> None:
    """A consumer store whose slot holds some pending acks and whose journal holds what came
    after, in one of several shapes: first deliveries right after the columns, after a gap,
    far past them (sparse), below them, onto an empty slot, mixed with acks and redeliveries,
    in two records, one delivered again after its ack; acks of a stretch from the columns'
    start, with first deliveries after it, of everything pending then first deliveries after
    a gap, of a stretch reaching past the columns' end, and of a stretch one of which is
    delivered again."""
    cs = FileConsumerStore(str(tmp), "c")
    pa = PendingArray()
    start = rnd.randrange(1, 1000)
    if shape != 4:  # (4: nothing pending in the slot)
        pa.add_run(range(start, start + 300), 1, 10)
        for k in rnd.sample(range(start, start + 300), 60):
            pa.take(k)
    rdc = {k: 2 for k in list(pa)[:5]} if shape in (5, 7) else {}
    floor, delivered = SequencePair(0, start - 1), SequencePair(400, start + 299)
    cs.adopt_packed(pack_consumer_columns(delivered, floor, pa.columns(), pa.n, rdc))
    cs.flush()
    at = {1: start + 305, 2: start + 300 + 5000, 3: max(1, start - 40), 4: start + 50, 9: start + 2000}.get(shape, start + 300)
    records = 2 if shape in (5, 6, 7, 8) else 1
    for r in range(records):
        firsts = array("Q", range(at + 200 * r, at + 200 * r + 200)) if shape not in (7, 10) else array("Q")
        live = {s: (1000 + s, 20 + r) for s in firsts}
        gone = array("Q")
        if shape == 5 and pa:
            gone = array("Q", rnd.sample(list(pa), 3))
        elif shape in (7, 8):  # (acks in order: a stretch from where the last record's ended)
            gone = array("Q", rnd.sample(range(start + 100 * r, start + 100 * r + 100), 100))
        elif shape == 9:
            gone = array("Q", range(start, start + 300))
        elif shape == 10:  # (past the columns' end too, and one delivered again after it)
            gone = array("Q", range(start + 250, start + 350))
            firsts = array("Q", [start + 260])
            live = {start + 260: (5, 5)}
        changed = array("Q", [next(iter(pa))]) if shape == 5 and pa else array("Q")
        again = {s: (7, 7) for s in changed}
        if shape == 6 and r:  # (a first delivery of the record before, acked, then delivered again)
            gone = array("Q", [at + 10])
            firsts = array("Q", [at + 10, *firsts])
            live[at + 10] = (9, 9)
        changes = pack_consumer_changes(delivered, floor, changed, gone, {**live, **again}, {}, firsts)
        cs.adopt_changes(changes)
        cs.flush()
    cs.stop()


def _restored(tmp: Path) -> tuple[Any, ...]:
    st = FileConsumerStore(str(tmp), "c").state()
    ds = DeliveryState()
    ds.restore(st.copy())
    pending = ds.pending
    assert len(pending) == pending.n == len(list(pending))
    return (
        dict(st.pending),
        list(pending.entries()),
        pending.n,
        pending.first(),
        ds.rdc,
        ds.index._heap,
        [list(run) for run in ds.index._order],
        st.delivered,
        st.ack_floor,
    )


@pytest.mark.parametrize("shape", range(11))
@pytest.mark.parametrize("seed", range(3))
def test_a_journal_replays_to_the_same_state_on_and_off(
    shape: int, seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    got = []
    for on in (True, False):
        _switch(monkeypatch, on)
        _journaled(tmp_path / f"{on}", shape, random.Random(seed))
        got.append(_restored(tmp_path / f"{on}"))
    assert got[0] == got[1]
    assert got[0][1] == sorted(got[0][0].items())


def _written(copy: Path) -> tuple[int, int]:
    """The pending acks the consumer's files in ``copy`` hold, and the journal's writes a restart
    replays on the slot (how many is up to when the writer last wrote a whole state: 0 to all)."""
    (obs,) = copy.rglob("obs/A")
    pending = FileConsumerStore(str(obs), "A").state().pending
    stored = pending.stored() if isinstance(pending, StoredPending) else None
    return len(pending), len(stored[4]) if stored else 0


async def _crash_copy(store: Path, n: int, copy: Path) -> int:
    """What ``kill -9`` leaves once the consumer's state writer has written all ``n`` deliveries:
    the store's files copied while the server runs on (again until they hold them all). Returns
    the journal's writes (`_written`)."""

    async def copied() -> bool:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(store, copy)
        return _written(copy)[0] == n

    await wait_for(copied, timeout=30)
    return _written(copy)[1]


async def _restart_calls(n: int, root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], int, int]:
    """A server with ``n`` pending acks on a durable pull consumer, crashed (`_crash_copy`), and a
    new server started on what it left: the one-by-one replay calls its start made, the
    journal's writes and the pending acks its CONSUMER.INFO reports over TCP."""
    store, crashed = root / "store", root / "crashed"
    server = Server(port=-1, jetstream=True, store_dir=str(store), host="127.0.0.1")
    await server.start()
    try:
        nc = await RawClient.connect(server.client_url)
        await nc.add_stream("RA", ["ra.>"], storage="file")
        await publish_in_one_write(server, [pub_frame(f"ra.{i % 10}", b"x" * 16) for i in range(n + 10)])
        await nc.add_consumer("RA", durable_name="A", ack_policy="explicit", ack_wait=3600 * 10**9, max_ack_pending=n)
        inbox = nc.new_inbox()
        sub = nc.subscribe(inbox)
        nc.pull("RA", "A", inbox, {"batch": n, "expires": 60 * 10**9})
        await sub.collect(n, timeout=60)
        writes = await _crash_copy(store, n, crashed)
        await nc.close()
    finally:
        await server.shutdown()
    calls: Counter[str] = Counter()
    restarted = Server(port=-1, jetstream=True, store_dir=str(crashed), host="127.0.0.1")
    with count_calls(monkeypatch, PendingArray, *ONE_BY_ONE[0][1]) as a, count_calls(
        monkeypatch, StoredPending, *ONE_BY_ONE[1][1]
    ) as b:
        await restarted.start()
    calls.update(a)
    calls.update({f"stored {k}": v for k, v in b.items()})
    try:
        nc = await RawClient.connect(restarted.client_url)
        info = await nc.consumer_info("RA", "A")
        await nc.close()
    finally:
        await restarted.shutdown()
    return calls, writes, int(info["num_ack_pending"])


@pytest.mark.parametrize("on", [True, False])
async def test_a_crash_restart_replays_a_journal_without_a_call_per_pending_ack(
    on: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Calls counted: the one-by-one replay (`ONE_BY_ONE`) of a restart after ``kill -9`` of an
    embedded server with 20,000 and 50,000 pending acks, whatever share of them its journal
    holds: none with the switches on, one per journal write at least with them off; every
    pending ack restored either way."""
    _switch(monkeypatch, on)
    for n in (20_000, 50_000):
        with tempfile.TemporaryDirectory() as tmp:
            calls, writes, pending = await _restart_calls(n, Path(tmp), monkeypatch)
        assert pending == n, (n, pending)
        if on:
            assert sum(calls.values()) == 0, (n, writes, calls)
        else:
            assert calls["stored __setitem__"] >= writes and calls["__setitem__"] >= writes, (n, writes, calls)


@pytest.mark.parametrize("on", [True, False])
def test_a_journal_of_first_deliveries_replays_in_c_passes(on: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls counted, the store alone (the journal's size exact): a slot of 300 pending acks and a
    journal of 1,000 or 10,000 first deliveries after it, restored as a restart does: no
    one-by-one call with the switches on, one per first delivery at least with them off."""
    _switch(monkeypatch, on)
    for n in (1_000, 10_000):
        cs = FileConsumerStore(str(tmp_path / str(n)), "c")
        pa = PendingArray()
        pa.add_run(range(1, 301), 1, 10)
        floor, delivered = SequencePair(0, 0), SequencePair(300 + n, 300 + n)
        cs.adopt_packed(pack_consumer_columns(delivered, floor, pa.columns(), pa.n, {}))
        cs.flush()
        firsts = array("Q", range(301, 301 + n))
        cs.adopt_changes(pack_consumer_changes(delivered, floor, array("Q"), array("Q"), {s: (s, 20) for s in firsts}, {}, firsts))
        cs.flush()
        cs.stop()
        with count_calls(monkeypatch, PendingArray, *ONE_BY_ONE[0][1]) as a, count_calls(
            monkeypatch, StoredPending, *ONE_BY_ONE[1][1]
        ) as b:
            restored = _restored(tmp_path / str(n))
        assert restored[2] == 300 + n and restored[1][-1] == (300 + n, (300 + n, 20))
        one_by_one = sum(a.values()) + sum(b.values())
        assert one_by_one == 0 if on else one_by_one >= 2 * n, (n, a, b)


@pytest.mark.parametrize("on", [True, False])
def test_a_journal_of_acks_replays_in_c_passes(on: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls counted, the store alone: a slot of 2,000 or 20,000 pending acks (every third one
    acked before it was written) and a journal acking the first half of them, in two records, in
    a shuffled order within each, restored as a restart does: no one-by-one call with the
    switches on, one per ack at least with them off; the other half pending either way."""
    _switch(monkeypatch, on)
    for n in (2_000, 20_000):
        cs = FileConsumerStore(str(tmp_path / str(n)), "c")
        pa = PendingArray()
        pa.add_run(range(0, n), 1, 10)
        for k in range(0, n, 3):
            pa.take(k)
        floor, delivered = SequencePair(0, 0), SequencePair(n, n)
        cs.adopt_packed(pack_consumer_columns(delivered, floor, pa.columns(), pa.n, {}))
        cs.flush()
        rnd = random.Random(n)
        for part in (range(0, n // 4), range(n // 4, n // 2)):
            gone = array("Q", rnd.sample(part, len(part)))
            cs.adopt_changes(pack_consumer_changes(delivered, floor, array("Q"), gone, {}, {}, array("Q")))
            cs.flush()
        cs.stop()
        with count_calls(monkeypatch, PendingArray, *ONE_BY_ONE[0][1]) as a, count_calls(
            monkeypatch, StoredPending, *ONE_BY_ONE[1][1]
        ) as b:
            restored = _restored(tmp_path / str(n))
        assert restored[1] == [(k, v) for k, v in pa.entries() if k >= n // 2]
        one_by_one = sum(a.values()) + sum(b.values())
        assert one_by_one == 0 if on else one_by_one >= n // 3, (n, a, b)
