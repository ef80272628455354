"""One-shot pulls: fetch, fetch_bytes, fetch_no_wait, next (both targets)."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.client_js.conftest import wait_for

from pyjetstream.api import AckPolicy
from pyjetstream.client import TimeoutError
from pyjetstream.client.jetstream import (
    ConsumerConfig,
    JetStream,
    PullConsumer,
    StreamConfig,
    errors,
)


async def _waiting(consumer: PullConsumer) -> bool:
    return (await consumer.info()).num_waiting == 1


async def _setup(js: JetStream, n: int, payload: bytes = b"x") -> PullConsumer:
    stream = await js.create_stream(StreamConfig(name="F", subjects=["f.*"]))
    for i in range(n):
        await js.publish("f.x", payload + b"%d" % i)
    return await stream.create_or_update_consumer(ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))


async def test_fetch_full_batch_returns_at_once(js: JetStream) -> None:
    consumer = await _setup(js, 25)
    start = time.monotonic()
    batch = await consumer.fetch(10)
    msgs = await batch.collect()
    assert time.monotonic() - start < 5  # did not wait for the 30 s expiry
    assert [m.data for m in msgs] == [b"x%d" % i for i in range(10)]
    assert batch.error is None and batch.done
    for m in msgs:
        await m.ack()
    seen = []
    async for msg in await consumer.fetch(100, max_wait=0.5):  # fewer than asked: ends at expiry
        seen.append(msg.metadata().stream_seq)
        await msg.ack()
    assert seen == list(range(11, 26))


async def test_fetch_waits_for_messages_published_later(js: JetStream) -> None:
    consumer = await _setup(js, 0)

    async def publish_soon() -> None:
        await asyncio.sleep(0.2)
        for i in range(3):
            await js.publish("f.x", b"late%d" % i)

    task = asyncio.create_task(publish_soon())
    batch = await consumer.fetch(3, max_wait=5)
    assert [m.data for m in await batch.collect()] == [b"late0", b"late1", b"late2"]
    await task


async def test_fetch_bytes_and_no_wait(js: JetStream) -> None:
    consumer = await _setup(js, 20, payload=b"y" * 100)
    first = await consumer.fetch_bytes(1000, max_wait=2)
    msgs = await first.collect()
    assert 1 <= len(msgs) < 10 and sum(m.size for m in msgs) <= 1000
    assert first.error is None
    start = time.monotonic()
    rest = await (await consumer.fetch_no_wait(100)).collect()
    assert len(msgs) + len(rest) == 20
    empty = await consumer.fetch_no_wait(5)
    assert await empty.collect() == [] and empty.error is None
    # Answered, not ended by the client's 5 s no_wait guard (either fetch would take that long);
    # 4.5 s leaves a loaded machine room where 2 s did not.
    assert time.monotonic() - start < 4.5


async def test_next(js: JetStream) -> None:
    consumer = await _setup(js, 2)
    msg = await consumer.next(max_wait=2)
    assert msg.data == b"x0"
    await msg.ack()
    await (await consumer.next(max_wait=2)).ack()
    with pytest.raises(TimeoutError):
        await consumer.next(max_wait=0.3)


async def test_fetch_errors(js: JetStream) -> None:
    consumer = await _setup(js, 0)
    with pytest.raises(errors.InvalidOption):
        await consumer.fetch(0)
    with pytest.raises(errors.InvalidOption):
        await consumer.fetch(1, max_wait=1, heartbeat=1)
    # A waiting fetch learns that its consumer was deleted.
    batch = await consumer.fetch(5, max_wait=10)
    # Delete only once the server holds the pull request (nats-server queues requests to the consumer).
    await wait_for(lambda: _waiting(consumer), what="the pull request to be waiting")
    await js.delete_consumer("F", "C")
    assert await batch.collect() == []
    assert isinstance(batch.error, errors.ConsumerDeleted)
    # A fetch on a consumer that no longer exists gets nothing (nats-server may say "no responders").
    again = await consumer.fetch(1, max_wait=0.5)
    assert await again.collect() == []
    assert again.error is None or isinstance(again.error, errors.ConsumerNotFound)


async def test_fetch_heartbeats_keep_a_long_fetch_alive(js: JetStream) -> None:
    consumer = await _setup(js, 0)
    batch = await consumer.fetch(1, max_wait=1.2, heartbeat=0.2)
    assert await batch.collect() == []
    assert batch.error is None  # heartbeats arrived; the request simply expired
