"""flush() orders after everything buffered; drain() loses nothing. Both targets."""

from __future__ import annotations

import asyncio

import nats
import pytest
from tests.client.conftest import wait_until
from tests.support.targets import Target

from pyjetstream.client import (
    Client,
    ConnectionClosedError,
    ConnectionDrainingError,
    DrainTimeoutError,
    Msg,
    connect,
)

ITERATIONS = 150


async def test_subscribe_flush_publish_never_misses(nc: Client, nc2: Client) -> None:
    """The flush PING follows the SUB on the wire, so once flush returns the subscription is live.

    Each round first buffers a pile of publishes so the SUB sits behind them in the write buffer.
    """
    missed = 0
    for i in range(ITERATIONS):
        for _ in range(20):
            nc.publish_nowait("noise", b"n" * 200)
        sub = await nc.subscribe(f"ordered.{i}")
        await nc.flush()
        await nc2.publish(f"ordered.{i}", b"x")
        try:
            await sub.next_msg(timeout=2)
        except TimeoutError:
            missed += 1
        await sub.unsubscribe()
    assert missed == 0


async def test_subscribe_flush_then_nats_py_publisher(nc: Client, server: Target) -> None:
    peer = await nats.connect(server.url)
    try:
        for i in range(ITERATIONS):
            sub = await nc.subscribe(f"peer.{i}")
            await nc.flush()
            await peer.publish(f"peer.{i}", b"x")
            await peer.flush()
            assert (await sub.next_msg(timeout=2)).data == b"x"
            await sub.unsubscribe()
    finally:
        await peer.close()


async def test_flush_orders_after_publishes(nc: Client, nc2: Client) -> None:
    """After flush, every earlier publish has reached the server (and so an earlier subscriber)."""
    got: list[bytes] = []
    await nc2.subscribe("fl", cb=lambda m: got.append(m.data))
    await nc2.flush()
    for i in range(2000):
        nc.publish_nowait("fl", b"%d" % i)
    await nc.flush()
    await nc2.flush()  # its PONG comes after every MSG the server routed to it before
    assert len(got) == 2000


async def test_concurrent_flushes_all_complete(nc: Client) -> None:
    await asyncio.gather(*(nc.flush(timeout=5) for _ in range(100)))
    assert not nc._pongs


async def test_subscription_drain_processes_everything(nc: Client, nc2: Client) -> None:
    processed: list[int] = []

    async def slow(msg: Msg) -> None:
        await asyncio.sleep(0.001)
        processed.append(int(msg.data))

    sub = await nc.subscribe("drain.sub", cb=slow)
    await nc.flush()
    for i in range(200):
        await nc2.publish("drain.sub", b"%d" % i)
    await nc2.flush()
    await sub.drain()
    assert processed == list(range(200))
    assert sub.is_closed
    await nc2.publish("drain.sub", b"late")
    await nc2.flush()
    await nc.flush()
    assert len(processed) == 200
    assert nc.is_connected


async def test_iterator_subscription_drain(nc: Client, nc2: Client) -> None:
    sub = await nc.subscribe("drain.it")
    await nc.flush()
    for i in range(50):
        await nc2.publish("drain.it", b"%d" % i)
    await nc2.flush()
    drained = asyncio.ensure_future(sub.drain())
    got = [int(m.data) async for m in sub.messages]
    await drained
    assert got == list(range(50))


async def test_client_drain_loses_nothing_and_closes(server: Target, nc2: Client) -> None:
    closed = asyncio.Event()
    nc = await connect(server.url, closed_cb=closed.set)
    processed: list[int] = []
    replies: list[bytes] = []

    async def worker(msg: Msg) -> None:
        await asyncio.sleep(0)
        processed.append(int(msg.data))
        await msg.respond(b"done")  # publishing while draining subscriptions is allowed

    await nc.subscribe("drain.all", queue="q", cb=worker)
    await nc.flush()
    await nc2.subscribe("drain.replies", cb=lambda m: replies.append(m.data))
    await nc2.flush()
    for i in range(500):
        await nc2.publish("drain.all", b"%d" % i, reply="drain.replies")
    await nc2.flush()
    await nc.drain()
    assert processed == list(range(500))
    assert nc.is_closed and closed.is_set()
    await wait_until(lambda: len(replies) == 500, what="all replies sent before close")
    with pytest.raises(ConnectionClosedError):
        await nc.publish("x", b"")


async def test_no_new_subscriptions_while_draining(server: Target) -> None:
    nc = await connect(server.url)
    blocked: list[Exception] = []

    async def handler(msg: Msg) -> None:
        await wait_until(lambda: nc.is_draining, what="drain started")
        try:
            await nc.subscribe("other")
        except ConnectionDrainingError as exc:
            blocked.append(exc)

    await nc.subscribe("d", cb=handler)
    await nc.flush()
    await nc.publish("d", b"")
    await nc.flush()
    await nc.drain()
    assert len(blocked) == 1


async def test_drain_timeout(server: Target) -> None:
    nc = await connect(server.url, drain_timeout=0.2)
    sub = await nc.subscribe("never.read")
    await nc.flush()
    await nc.publish("never.read", b"x")
    await nc.flush()
    await wait_until(lambda: sub.pending_msgs == 1)
    with pytest.raises(DrainTimeoutError):
        await nc.drain()
    assert nc.is_closed


async def test_subscription_drain_timeout(server: Target) -> None:
    nc = await connect(server.url, drain_timeout=0.2)
    try:
        sub = await nc.subscribe("never.read.either")
        await nc.flush()
        await nc.publish("never.read.either", b"x")
        await nc.flush()
        await wait_until(lambda: sub.pending_msgs == 1)
        with pytest.raises(DrainTimeoutError):
            await sub.drain()
        assert sub.is_closed and nc.is_connected
    finally:
        await nc.close()
