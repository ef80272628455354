"""Issue 24, dimension 5: with many acks pending on one consumer, an ack, a floor move, an AckAll,
an ack-wait expiry and a NAK's redelivery cost the same as with few (embedded server, steps counted,
not timed).

nats-server's ack-wait timer walks every pending ack each time it fires (``checkPending``); the
embedded server's ``PendingIndex`` keeps the pending acks in floor order and deadline order, so the
timer pops what is due and a floor move walks forward once. ``PendingIndex.steps`` counts the
entries they look at. Redeliveries go out in runs, as first deliveries do: one store read and one
index entry per run, not per message (the store's and the index's methods counted).
"""

from __future__ import annotations

import asyncio
import random
import sys
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream.acks import AckProcessor
from pyjetstream.server.jetstream.pending_index import PendingIndex
from pyjetstream.server.jetstream.store.indexed import IndexedStore

SMALL, LARGE = 400, 4000
BLOCK = 80  # acks in blocks: the block's tail first, then its head (a floor move over > 64 acked)


async def _pending(nc: RawClient, server: Any, n: int, **cfg: Any) -> tuple[Any, list[Msg]]:
    """A stream of ``n`` messages and consumer C with all of them delivered, none acked."""
    await nc.add_stream("P", ["p.>"], storage="memory")
    for i in range(n):
        nc.publish("p.x", b"%d" % i)
    await nc.flush()
    resp = await nc.add_consumer("P", "C", durable_name="C", max_ack_pending=-1, **cfg)
    assert "error" not in resp, resp
    sub = nc.subscribe("_P.x")
    nc.pull("P", "C", "_P.x", {"batch": n, "expires": 30_000_000_000})
    msgs = await sub.collect(n, timeout=30)
    consumer = server.jetstream.streams["P"].consumers["C"]
    assert {m.num_delivered for m in msgs} == {1}, "the ack wait passed before the first deliveries were made"
    assert len(consumer.state.pending) == n
    return consumer, msgs


async def _floor(nc: RawClient, want: int) -> None:
    async def reached() -> bool:
        info = await nc.consumer_info("P", "C")
        return bool(info["ack_floor"]["stream_seq"] == want)

    await wait_for(reached, timeout=30)


async def _ack_steps(n: int) -> float:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_wait=60_000_000_000)
            index = consumer.state.index
            before = index.steps
            for b in range(0, n, BLOCK):
                block = msgs[b : b + BLOCK]
                for m in [*block[1:], block[0]]:
                    nc.publish(m.reply, b"+ACK")
            await nc.flush()
            await _floor(nc, n)
            assert not consumer.state.pending
            return (index.steps - before) / n
        finally:
            await nc.close()


async def test_ack_and_floor_move_do_not_walk_the_pending_acks() -> None:
    small = await _ack_steps(SMALL)
    large = await _ack_steps(LARGE)
    assert small <= 2 and large <= 2, (small, large)


async def _ack_all_steps(n: int) -> float:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_policy="all", ack_wait=60_000_000_000)
            index = consumer.state.index
            before = index.steps
            for m in msgs[9::10]:  # every tenth acks the nine before it too
                nc.publish(m.reply, b"+ACK")
            await nc.flush()
            await _floor(nc, n)
            return (index.steps - before) / n
        finally:
            await nc.close()


async def test_ack_all_walks_only_what_it_acks() -> None:
    small = await _ack_all_steps(SMALL)
    large = await _ack_all_steps(LARGE)
    assert small <= 2 and large <= 2, (small, large)


async def _expiry_steps(n: int) -> tuple[float, int]:
    """Half the ``n`` deliveries acked, the other half redelivered once each when the ack wait
    passes. The wait must outlast the first pull's ``n`` deliveries (~0.2 s for 4,000 at load 7):
    1 s did not in a run at load 11-14 (the first redeliveries took room in that pull: 3,584 of
    4,000 pending)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_wait=3_000_000_000)
            index = consumer.state.index
            before = index.steps
            # Half are acked before their ack wait passes; the rest come back once each.
            for m in msgs[::2]:
                nc.publish(m.reply, b"+ACK")
            await nc.flush()
            sub = nc.subscribe("_P.again")
            nc.pull("P", "C", "_P.again", {"batch": n, "expires": 30_000_000_000})
            again = await sub.collect(n // 2, timeout=30)
            assert sorted(m.stream_seq for m in again) == [m.stream_seq for m in msgs[1::2]]
            assert {m.num_delivered for m in again} == {2}
            await asyncio.sleep(0)
            return (index.steps - before) / n, len(consumer.state.pending)
        finally:
            await nc.close()


async def test_ack_wait_expiry_does_not_walk_the_pending_acks() -> None:
    small, pending_small = await _expiry_steps(SMALL)
    large, pending_large = await _expiry_steps(LARGE)
    assert (pending_small, pending_large) == (SMALL // 2, LARGE // 2)
    # Each delivery is looked at once when its first ack wait passes, each redelivery once more.
    assert small <= 3 and large <= 3, (small, large)


async def test_restamped_acks_do_not_pile_up_in_the_heap() -> None:
    """``+WPI`` over and over on the same pending acks: the heap of deadlines keeps at most about
    twice the pending acks (replaced entries are dropped), not one entry per progress ack."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, 50, ack_wait=60_000_000_000)
            for _ in range(40):
                for m in msgs:
                    nc.publish(m.reply, b"+WPI")
            await nc.flush()
            info = await nc.consumer_info("P", "C")
            assert info["num_ack_pending"] == 50
            assert len(consumer.state.index._heap) <= 2 * 50 + 65
        finally:
            await nc.close()


async def _nak_steps(monkeypatch: pytest.MonkeyPatch, n: int, **cfg: Any) -> dict[str, float]:
    """NAK all ``n`` pending acks (in a shuffled order), take them again: what each redelivery
    cost in store reads, timer operations (the pending timer armed, a deadline pushed one by one)
    and index steps."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_wait=60_000_000_000, **cfg)
            random.Random(n).shuffle(msgs)
            index = consumer.state.index
            before = index.steps
            with (
                count_calls(monkeypatch, IndexedStore, "load_msg", "load_msgs") as reads,
                count_calls(monkeypatch, AckProcessor, "arm") as timers,
                count_calls(monkeypatch, PendingIndex, "stamped", "redelivered") as stamps,
            ):
                for m in msgs:
                    nc.publish(m.reply, b"-NAK")
                sub = nc.subscribe("_P.again")
                nc.pull("P", "C", "_P.again", {"batch": n, "expires": 30_000_000_000})
                again = await sub.collect(n, timeout=30)
            # In the order they were NAKed, each counted as a second delivery, the ack floor kept.
            assert [m.stream_seq for m in again] == [m.stream_seq for m in msgs]
            assert {m.num_delivered for m in again} == {2}
            assert len(consumer.state.pending) == n
            return {
                "reads": (reads["load_msg"] + reads["load_msgs"]) / n,
                "timers": (timers["arm"] + stamps["stamped"]) / n,
                "index": (stamps["redelivered"] + index.steps - before) / n,
            }
        finally:
            await nc.close()


@pytest.mark.parametrize("backoff", [False, True])
async def test_a_nak_redelivery_is_read_and_stamped_per_run(monkeypatch: pytest.MonkeyPatch, backoff: bool) -> None:
    """A redelivery is read with others (``load_msgs`` per run, not ``load_msg`` per message)
    and goes into the index as a run (one timeline entry; with ``backoff``, where each message
    has its own deadline, one heap push each) at any number pending."""
    cfg = {"backoff": [60_000_000_000, 120_000_000_000], "max_deliver": 5} if backoff else {}
    small = await _nak_steps(monkeypatch, SMALL, **cfg)
    large = await _nak_steps(monkeypatch, LARGE, **cfg)
    for key in small:
        assert large[key] <= small[key] * 1.1 + 0.01, (key, small, large)
    assert small["reads"] <= 0.05 and large["reads"] <= 0.05, (small, large)
    assert small["timers"] == large["timers"] == (1.0 if backoff else 0.0), (small, large)


async def test_a_deleted_consumer_drops_its_pending_acks_at_once() -> None:
    """A consumer and its parts refer to each other: once deleted it waits for the cycle
    collector, which ``pyjetstream serve`` runs seldom. Its pending acks, redelivery counts and
    index must not wait with it (they are what grows with the state): held here as a cycle
    would hold it, the deleted consumer tracks nothing."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, SMALL, ack_wait=60_000_000_000)
            for m in msgs[::4]:
                nc.publish(m.reply, b"-NAK")
            await nc.flush()

            async def queued() -> bool:
                return len(consumer.state.rdq) == SMALL // 4

            await wait_for(queued, timeout=30)
            resp = await nc.api("$JS.API.CONSUMER.DELETE.P.C", {})
            assert resp.get("success") is True, resp
            st = consumer.state
            assert consumer.closed and not st.pending and not st.rdc and not st.rdq
            assert st.index.next_deadline() == 0
        finally:
            await nc.close()


async def _random_ack_costs(n: int) -> tuple[float, float, int]:
    """``n`` pending, then three waves of ``n // 2`` acks at random, each followed by ``n // 2``
    new deliveries: (slots the pending acks moved or cut per ack, bytes they hold per pending
    ack at the end, entries held outside the columns)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_wait=60_000_000_000)
            for i in range(3 * (n // 2)):
                nc.publish("p.x", b"more %d" % i)
            pending = consumer.state.pending
            rnd = random.Random(n)
            for wave in range(3):
                for m in rnd.sample(msgs, n // 2):
                    msgs.remove(m)
                    nc.publish(m.reply, b"+ACK")
                sub = nc.subscribe(f"_P.w{wave}")
                nc.pull("P", "C", f"_P.w{wave}", {"batch": n // 2, "expires": 30_000_000_000})
                msgs += await sub.collect(n // 2, timeout=30)
                sub.unsubscribe()
            assert len(consumer.state.pending) == n and consumer.state.pending is pending
            held = sys.getsizeof(pending.dseq) + sys.getsizeof(pending.ts) + sys.getsizeof(pending.old)
            held += sum(sys.getsizeof(e) + sys.getsizeof(e[0]) + sys.getsizeof(s) for s, e in pending.old.items())
            return pending.steps / (3 * (n // 2)), held / n, len(pending.old)
        finally:
            await nc.close()


async def test_random_acks_keep_the_pending_acks_flat() -> None:
    """Acks at random among many pending while new ones are delivered (what the ``acks``
    benchmark does): the pending acks are columns indexed by sequence (`PendingArray`), no
    object per entry, so their memory per pending ack and the slots moved or cut per ack stay
    the same at ten times the pending acks (the dict of tuples before held ~150 bytes each,
    in three objects, and its random ``pop`` walked ever more memory)."""
    small = await _random_ack_costs(SMALL)
    large = await _random_ack_costs(LARGE)
    assert small[0] <= 3 and large[0] <= 3, (small, large)
    assert small[1] <= 64 and large[1] <= 64, (small, large)
    assert large[2] <= LARGE // 2, (small, large)
