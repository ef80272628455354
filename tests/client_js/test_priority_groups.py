"""Priority-group pulls (ADR-42): overflow with min_pending, pinned client with the pin id kept and
a 423 handled, prioritized pulls — in fetch / next / consume / messages, against both targets."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from tests.client_js.conftest import wait_until
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    JetStreamMsg,
    PriorityPolicy,
    StreamConfig,
    errors,
)


async def _stream(js: JetStream, n: int) -> None:
    await js.create_stream(StreamConfig(name="W", subjects=["w.>"]))
    for i in range(n):
        await js.publish(f"w.{i}", str(i).encode())


async def test_overflow_pulls_only_above_min_pending(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.PRIORITY_GROUPS)
    await _stream(js, 5)
    consumer = await js.create_consumer(
        "W",
        ConsumerConfig(
            durable="C",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["jobs"],
            priority_policy=PriorityPolicy.OVERFLOW,
        ),
    )
    # 5 pending < 10: an overflow puller gets nothing.
    batch = await consumer.fetch(5, max_wait=0.5, group="jobs", min_pending=10)
    assert await batch.collect() == []
    batch = await consumer.fetch(2, max_wait=5, group="jobs", min_pending=3)
    assert [m.data for m in await batch.collect()] == [b"0", b"1"]
    msg = await consumer.next(max_wait=5, group="jobs")
    assert msg.data == b"2"
    # A pull without the group is refused by the server (400).
    batch = await consumer.fetch(1, max_wait=2)
    assert await batch.collect() == []
    assert isinstance(batch.error, errors.BadRequest)
    with pytest.raises(errors.InvalidOption):
        await consumer.fetch(1, min_pending=1)


async def test_pinned_client_keeps_its_pin_and_recovers_from_423(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.PRIORITY_GROUPS)
    await _stream(js, 4)
    config = ConsumerConfig(
        durable="C",
        ack_policy=AckPolicy.EXPLICIT,
        priority_groups=["g"],
        priority_policy=PriorityPolicy.PINNED_CLIENT,
        priority_timeout=timedelta(minutes=1),
    )
    first = await js.create_consumer("W", config)
    other = await js.consumer("W", "C")  # a second handle: another client of the group
    msg = await first.next(max_wait=5, group="g")
    await msg.ack()
    assert first.pin_id and msg.headers is not None and msg.headers["Nats-Pin-Id"] == first.pin_id
    info = await first.info()
    assert info.priority_groups[0].pinned_client_id == first.pin_id
    # The pinned handle keeps getting messages; the other one gets none while the pin holds.
    assert (await first.next(max_wait=5, group="g")).data == b"1"
    batch = await other.fetch(1, max_wait=0.5, group="g")
    assert await batch.collect() == [] and other.pin_id == ""
    # Unpinned by the server: the old pin id gets a 423, is dropped, and the next pull pins again.
    await js.unpin_consumer("W", "C", "g")
    old_pin = first.pin_id
    batch = await first.fetch(1, max_wait=2, group="g")
    got = await batch.collect()
    if not got:  # the server answered the stale pin with 423
        assert isinstance(batch.error, errors.PinIdMismatch) and first.pin_id == ""
        got = await (await first.fetch(1, max_wait=5, group="g")).collect()
    assert len(got) == 1 and first.pin_id and first.pin_id != old_pin


async def test_consume_and_messages_with_a_group(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.PRIORITY_GROUPS)
    await _stream(js, 6)
    consumer = await js.create_consumer(
        "W",
        ConsumerConfig(
            durable="C",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["g"],
            priority_policy=PriorityPolicy.PINNED_CLIENT,
            # A message delivered to consume()'s last pull after it stopped is dropped unacked (as in
            # nats.go) and comes back after ack_wait: short, so messages() below gets it in time.
            ack_wait=3,
        ),
    )
    got: list[bytes] = []

    async def handler(msg: JetStreamMsg) -> None:
        got.append(msg.data)
        await msg.ack()

    ctx = await consumer.consume(handler, group="g", max_messages=2, expiry=2)
    await wait_until(lambda: len(got) >= 3, timeout=15, what="3 messages consumed in the group")
    ctx.stop()
    assert consumer.pin_id
    await asyncio.wait_for(ctx.wait_closed(), 10)
    async with await consumer.messages(group="g", max_messages=2, expiry=2) as it:
        rest: list[bytes] = []
        while len(set(got + rest)) < 6:
            msg = await it.next(timeout=15)
            rest.append(msg.data)
            await msg.ack()
    assert set(got + rest) == {str(i).encode() for i in range(6)}


async def test_prioritized_pulls(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.PRIORITIZED)
    await _stream(js, 2)
    consumer = await js.create_consumer(
        "W",
        ConsumerConfig(
            durable="C",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["g"],
            priority_policy=PriorityPolicy.PRIORITIZED,
        ),
    )
    msgs = await (await consumer.fetch(2, max_wait=5, group="g", priority=1)).collect()
    assert [m.data for m in msgs] == [b"0", b"1"]
    with pytest.raises(errors.InvalidOption):
        await consumer.fetch(1, group="g", priority=10)
