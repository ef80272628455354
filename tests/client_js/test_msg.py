"""JetStream messages: content, metadata and every kind of acknowledgement (both targets)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import pytest
from tests.client_js.conftest import wait_for

from pyjetstream.api import AckPolicy
from pyjetstream.client.jetstream import (
    ConsumerConfig,
    JetStream,
    JetStreamMsg,
    PullConsumer,
    StreamConfig,
    errors,
)


async def _consumer(js: JetStream, ack_wait: float = 30.0) -> PullConsumer:
    stream = await js.create_stream(StreamConfig(name="M", subjects=["m.*"]))
    return await stream.create_or_update_consumer(
        ConsumerConfig(durable="D", ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait)
    )


def _pending_is(consumer: PullConsumer, n: int) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return (await consumer.info()).num_pending == n

    return check


async def _one(consumer: PullConsumer, max_wait: float = 5) -> JetStreamMsg:
    return await consumer.next(max_wait=max_wait)


async def test_content_and_metadata(js: JetStream) -> None:
    consumer = await _consumer(js)
    before = time.time_ns()
    await js.publish("m.a", b"payload", headers={"X-One": "1"})
    await js.publish("m.b", b"second")
    # nats-server tells its consumers about new messages asynchronously: let the count settle first.
    await wait_for(_pending_is(consumer, 2), what="the consumer to count both messages")
    msg = await _one(consumer)
    assert (msg.subject, msg.data) == ("m.a", b"payload")
    assert msg.headers == {"X-One": "1"} and msg.header_block is not None
    assert msg.reply.startswith("$JS.ACK.M.D.")
    meta = msg.metadata()
    assert (meta.stream, meta.consumer, meta.num_delivered) == ("M", "D", 1)
    assert (meta.stream_seq, meta.consumer_seq, meta.num_pending) == (1, 1, 1)
    assert meta.sequence == (1, 1) and meta.domain == ""
    assert before - 10**9 < meta.timestamp < time.time_ns() + 10**9
    await msg.ack()
    assert msg.is_acked


async def test_acking_twice_raises(js: JetStream) -> None:
    consumer = await _consumer(js)
    await js.publish("m.a", b"x")
    msg = await _one(consumer)
    await msg.in_progress()
    await msg.in_progress()  # progress is not final
    await msg.ack()
    for again in (msg.ack(), msg.nak(), msg.term(), msg.double_ack(), msg.nak_with_delay(1)):
        with pytest.raises(errors.MsgAlreadyAcked):
            await again


async def test_double_ack_is_confirmed(js: JetStream) -> None:
    consumer = await _consumer(js)
    await js.publish("m.a", b"x")
    msg = await _one(consumer)
    await msg.double_ack(timeout=5)
    info = await consumer.info()
    assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == 1


async def test_nak_redelivers(js: JetStream) -> None:
    consumer = await _consumer(js)
    await js.publish("m.a", b"x")
    first = await _one(consumer)
    await first.nak()
    again = await _one(consumer)
    assert again.data == b"x" and again.metadata().num_delivered == 2
    start = time.monotonic()
    await again.nak_with_delay(0.5)
    third = await _one(consumer)
    assert third.metadata().num_delivered == 3
    assert time.monotonic() - start >= 0.4
    await third.ack()


async def test_term_stops_redelivery(js: JetStream) -> None:
    consumer = await _consumer(js, ack_wait=0.5)
    await js.publish("m.a", b"term")
    await (await _one(consumer)).term()
    # Past the ack wait: nothing comes back.
    assert await (await consumer.fetch(5, max_wait=1.2)).collect() == []
    await js.publish("m.b", b"reason")
    msg = await _one(consumer)
    await msg.term_with_reason("bad data")  # 2.10.4+ records the reason; 2.9 ignores such a +TERM
    assert msg.is_acked


async def test_in_progress_extends_the_ack_wait(js: JetStream) -> None:
    consumer = await _consumer(js, ack_wait=1.0)
    await js.publish("m.c", b"slow")
    slow = await _one(consumer)
    for _ in range(3):  # 1.5 s of work with a 1 s ack wait, kept alive by progress acks
        await wait_for(_sleeping(0.5), timeout=2)
        await slow.in_progress()
    await slow.double_ack()
    info = await consumer.info()
    assert info.num_redelivered == 0 and info.num_ack_pending == 0


def _sleeping(seconds: float):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds

    async def check() -> bool:
        return time.monotonic() >= deadline

    return check
