"""Push consumers in the simplified API (nats.go create_push_consumer / push_consumer / consume),
against both targets."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from tests.client_js.conftest import wait_until

from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    JetStreamMsg,
    StreamConfig,
    errors,
)


async def test_push_consumer_consume_with_flow_control_and_heartbeats(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="P", subjects=["p.>"]))
    for i in range(2000):
        await js.publish_async(f"p.{i % 5}", b"x" * 200)
    await js.publish_async_complete(timeout=30)
    deliver = js.nc.new_inbox()
    consumer = await stream.create_push_consumer(
        ConsumerConfig(
            durable="PUSH",
            deliver_subject=deliver,
            ack_policy=AckPolicy.EXPLICIT,
            flow_control=True,
            idle_heartbeat=timedelta(seconds=1),
            max_ack_pending=10_000,
        )
    )
    assert consumer.cached_info().config.deliver_subject == deliver
    got: list[int] = []
    errs: list[Exception] = []

    async def handler(msg: JetStreamMsg) -> None:
        got.append(msg.metadata().sequence.stream)
        await msg.ack()

    ctx = await consumer.consume(handler, error_handler=lambda _ctx, exc: errs.append(exc))
    with pytest.raises(errors.ConsumerAlreadyConsuming):
        await consumer.consume(handler)
    await wait_until(lambda: len(got) == 2000, timeout=30, what="every message pushed")
    assert got == list(range(1, 2001))  # in order, none twice
    await ctx.drain()
    assert ctx.is_closed and not [e for e in errs if not isinstance(e, errors.NoHeartbeat)]
    await js.publish("p.0", b"late")
    again = await js.push_consumer("P", "PUSH")
    seen: list[bytes] = []
    ctx = await again.consume(lambda msg: seen.append(msg.data))
    await wait_until(lambda: seen == [b"late"], timeout=10, what="the message published after the drain")
    ctx.stop()
    await ctx.wait_closed()


async def test_push_consumer_errors(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="P", subjects=["p.>"]))
    with pytest.raises(errors.NotPushConsumer):
        await stream.create_push_consumer(ConsumerConfig(durable="X", ack_policy=AckPolicy.EXPLICIT))
    await stream.create_consumer(ConsumerConfig(durable="PULL", ack_policy=AckPolicy.EXPLICIT))
    with pytest.raises(errors.NotPushConsumer):
        await stream.push_consumer("PULL")
    config = ConsumerConfig(durable="PUSH", deliver_subject="push.out", ack_policy=AckPolicy.EXPLICIT)
    await js.create_push_consumer("P", config)
    updated = await js.update_push_consumer(
        "P",
        ConsumerConfig(durable="PUSH", deliver_subject="push.out", ack_policy=AckPolicy.EXPLICIT, description="d"),
    )
    assert updated.cached_info().config.description == "d"
    consumer = await js.push_consumer("P", "PUSH")
    ctx = await consumer.consume(lambda msg: None)
    await stream.delete_consumer("PUSH")
    ctx.stop()  # stopping works after the consumer is gone
    await asyncio.wait_for(ctx.wait_closed(), 5)
