"""Continuous pulling: consume (handlers) and messages (iterator), pre-buffering, errors (both targets)."""

from __future__ import annotations

import asyncio

import pytest
from tests.client_js.conftest import wait_for, wait_until
from tests.support.targets import Target

from pyjetstream.api import AckPolicy
from pyjetstream.client import Client
from pyjetstream.client.jetstream import (
    ConsumeContext,
    ConsumerConfig,
    JetStream,
    JetStreamMsg,
    PullConsumer,
    StreamConfig,
    errors,
)


async def _setup(js: JetStream, n: int = 0) -> PullConsumer:
    stream = await js.create_stream(StreamConfig(name="C", subjects=["c.*"]))
    for i in range(n):
        await js.publish_async("c.x", b"%d" % i)
    await js.publish_async_complete(timeout=10)
    return await stream.create_or_update_consumer(ConsumerConfig(durable="D", ack_policy=AckPolicy.EXPLICIT))


async def test_consume_async_handler_prebuffers_and_repulls(js: JetStream) -> None:
    consumer = await _setup(js, 1000)
    got: list[int] = []

    async def handler(msg: JetStreamMsg) -> None:
        got.append(int(msg.data))
        await msg.ack()

    cc = await consumer.consume(handler, max_messages=100)
    await wait_until(lambda: len(got) == 1000, what="1000 messages")
    assert got == list(range(1000))
    assert cc.session.pending_msgs <= 100  # never more than the window requested
    for i in range(1000, 1050):  # live messages keep flowing
        await js.publish("c.x", b"%d" % i)
    await wait_until(lambda: len(got) == 1050, what="live messages")
    cc.stop()
    await cc.wait_closed()
    assert cc.is_closed
    await wait_for(lambda: _no_ack_pending(consumer), what="acks processed")


async def _no_ack_pending(consumer: PullConsumer) -> bool:
    return (await consumer.info()).num_ack_pending == 0


async def test_consume_sync_handler_with_max_bytes(js: JetStream) -> None:
    consumer = await _setup(js, 300)
    got: list[JetStreamMsg] = []
    cc = await consumer.consume(got.append, max_bytes=2048)
    await wait_until(lambda: len(got) == 300, what="300 messages")
    assert [int(m.data) for m in got] == list(range(300))
    cc.stop()
    for m in got:
        await m.ack()


async def test_stop_ends_delivery(js: JetStream) -> None:
    consumer = await _setup(js, 10)
    got: list[bytes] = []

    async def handler(msg: JetStreamMsg) -> None:
        got.append(msg.data)
        await msg.ack()

    cc = await consumer.consume(handler)
    await wait_until(lambda: len(got) == 10, what="first messages")
    cc.stop()
    await cc.wait_closed()
    for i in range(10):
        await js.publish("c.x", b"after%d" % i)
    await asyncio.sleep(0.3)  # give a stopped context the chance to misbehave
    assert len(got) == 10
    info = await consumer.info()
    assert info.num_pending == 10


async def test_drain_handles_what_was_received(js: JetStream) -> None:
    consumer = await _setup(js, 50)
    got: list[bytes] = []
    first = asyncio.Event()

    async def slow(msg: JetStreamMsg) -> None:
        first.set()
        await asyncio.sleep(0.005)
        got.append(msg.data)
        await msg.ack()

    cc = await consumer.consume(slow, max_messages=20)
    await asyncio.wait_for(first.wait(), 10)
    await asyncio.wait_for(cc.drain(), 10)
    assert cc.is_closed
    assert 1 <= len(got) <= 50
    assert got == [b"%d" % i for i in range(len(got))]


async def test_consumer_deleted_is_terminal_and_handler_errors_are_reported(js: JetStream) -> None:
    consumer = await _setup(js, 1)
    reported: list[Exception] = []

    def on_error(ctx: ConsumeContext, exc: Exception) -> None:
        reported.append(exc)

    def handler(msg: JetStreamMsg) -> None:
        raise RuntimeError("handler failed")

    cc = await consumer.consume(handler, error_handler=on_error)
    await wait_until(lambda: any(isinstance(e, RuntimeError) for e in reported), what="handler error")
    await js.delete_consumer("C", "D")
    await asyncio.wait_for(cc.wait_closed(), 10)
    assert any(isinstance(e, errors.ConsumerDeleted) for e in reported)


async def test_consume_survives_server_restart(server: Target, nc: Client, js: JetStream) -> None:
    consumer = await _setup(js, 5)
    got: list[bytes] = []
    reported: list[Exception] = []

    async def handler(msg: JetStreamMsg) -> None:
        got.append(msg.data)
        await msg.ack()

    cc = await consumer.consume(
        handler, expiry=2, heartbeat=0.4, error_handler=lambda _c, e: reported.append(e)
    )
    await wait_until(lambda: len(got) == 5, what="messages before the restart")
    await asyncio.to_thread(server.stop)
    await wait_until(
        lambda: any(isinstance(e, errors.NoHeartbeat) for e in reported), what="missed heartbeats"
    )
    await asyncio.to_thread(server.start)
    await wait_until(lambda: nc.is_connected, timeout=20, what="reconnect")
    for i in range(5):
        await js.publish("c.x", b"after%d" % i)
    await wait_until(lambda: len(got) == 10, timeout=20, what="messages after the restart")
    assert got[5:] == [b"after%d" % i for i in range(5)]
    cc.stop()


async def test_messages_iterator(js: JetStream) -> None:
    consumer = await _setup(js, 30)
    it = await consumer.messages(max_messages=10)
    first = [await it.next(timeout=5) for _ in range(10)]
    assert [m.data for m in first] == [b"%d" % i for i in range(10)]
    seen = []
    async for msg in it:
        seen.append(msg.data)
        await msg.ack()
        if len(seen) == 20:
            it.stop()
    assert seen == [b"%d" % i for i in range(10, 30)]
    with pytest.raises(errors.MsgIteratorClosed):
        await it.next()
    for m in first:
        await m.ack()
    again = await consumer.messages()
    with pytest.raises(TimeoutError):
        await again.next(timeout=0.2)
    await js.publish("c.x", b"late")
    assert (await again.next(timeout=5)).data == b"late"
    await again.drain()
    with pytest.raises(errors.MsgIteratorClosed):
        await again.next(timeout=1)


async def test_messages_one_by_one_for_workers(js: JetStream) -> None:
    consumer = await _setup(js, 20)
    it = await consumer.messages(max_messages=1)
    done: list[bytes] = []

    async def worker() -> None:
        while len(done) < 20:
            try:
                msg = await it.next(timeout=0.5)
            except TimeoutError:
                continue
            await asyncio.sleep(0.001)
            done.append(msg.data)
            await msg.ack()

    await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(5))), 20)
    it.stop()
    assert sorted(done, key=int) == [b"%d" % i for i in range(20)]
    assert it.session.pending_msgs <= 1


async def test_messages_heartbeat_errors(server: Target, nc: Client, js: JetStream) -> None:
    consumer = await _setup(js, 0)
    quiet = await consumer.messages(expiry=2, heartbeat=0.3, err_on_missing_heartbeat=False)
    loud = await consumer.messages(expiry=2, heartbeat=0.3)
    # kill -9, not a graceful stop: a pull request re-issued while nats-server 2.15 shuts down
    # (JetStream already stopped, the connection still open) is answered 503 no responders, which
    # both iterators report as ConsumerNotFound. Killed, the heartbeats just stop.
    await asyncio.to_thread(server.kill)
    with pytest.raises(errors.NoHeartbeat):
        await loud.next(timeout=10)
    loud.stop()
    with pytest.raises(TimeoutError):
        await quiet.next(timeout=1.0)
    await asyncio.to_thread(server.start)
    await wait_until(lambda: nc.is_connected, timeout=20, what="reconnect")
    await js.publish("c.x", b"back")
    assert (await quiet.next(timeout=10)).data == b"back"
    quiet.stop()
