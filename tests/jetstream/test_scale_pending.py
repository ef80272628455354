"""Issue 24, dimension 5: with many acks pending on one consumer, an ack, a floor move, an AckAll
and an ack-wait expiry cost the same as with few (embedded server, steps counted, not timed).

nats-server's ack-wait timer walks every pending ack each time it fires (``checkPending``); the
embedded server's ``PendingIndex`` keeps the pending acks in floor order and deadline order, so the
timer pops what is due and a floor move walks forward once. ``PendingIndex.steps`` counts the
entries they look at.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.jetstream.scale_steps import embedded

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
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            consumer, msgs = await _pending(nc, server, n, ack_wait=1_000_000_000)
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
