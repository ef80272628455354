"""Ordered consumers: strict order, and recovery from deletion, gaps and restarts (both targets)."""

from __future__ import annotations

import asyncio

import pytest
from tests.client_js.conftest import wait_for, wait_until
from tests.support.targets import Target

from pyjetstream.api import DeliverPolicy
from pyjetstream.client import Client
from pyjetstream.client.jetstream import (
    JetStream,
    JetStreamMsg,
    OrderedConsumerConfig,
    StreamConfig,
    errors,
)


async def _stream(js: JetStream, n: int) -> None:
    await js.create_stream(StreamConfig(name="O", subjects=["o.*"]))
    for i in range(n):
        await js.publish_async(f"o.{'a' if i % 2 else 'b'}", b"%d" % i)
    await js.publish_async_complete(timeout=10)


async def test_messages_in_order_and_resumes_after_deletion(js: JetStream) -> None:
    await _stream(js, 200)
    oc = await js.ordered_consumer("O")
    with pytest.raises(errors.OrderedConsumerNotCreated):
        oc.cached_info()
    # A deleted consumer with no pull waiting is noticed by missed heartbeats: keep them short.
    it = await oc.messages(max_messages=20, expiry=2, heartbeat=0.3)
    seqs = [(await it.next(timeout=5)).metadata().stream_seq for _ in range(50)]
    first_name = oc.name
    assert first_name.endswith("_1")
    assert (await oc.info()).config.ack_policy.value == "none"
    await js.delete_consumer("O", first_name)  # buffered messages of the old consumer are dropped
    while len(seqs) < 200:
        seqs.append((await it.next(timeout=10)).metadata().stream_seq)
    assert seqs == list(range(1, 201))
    assert oc.name != first_name and oc.serial > 1
    it.stop()

    async def cleaned_up() -> bool:
        return [n async for n in js.consumer_names("O")] == []

    await wait_for(cleaned_up, what="ordered consumer removed on stop")


async def test_consume_in_order_across_deletion(js: JetStream) -> None:
    await _stream(js, 100)
    oc = await js.ordered_consumer("O", OrderedConsumerConfig(filter_subjects=["o.a"]))
    got: list[int] = []
    deleted = asyncio.Event()

    async def handler(msg: JetStreamMsg) -> None:
        got.append(int(msg.data))
        if len(got) == 20 and not deleted.is_set():
            deleted.set()
            await js.delete_consumer("O", oc.name)

    cc = await oc.consume(handler, max_messages=10, expiry=2, heartbeat=0.3)
    await wait_until(lambda: len(got) >= 50, what="every o.a message")
    for i in range(100, 110):
        await js.publish(f"o.{'a' if i % 2 else 'b'}", b"%d" % i)
    await wait_until(lambda: len(got) >= 55, what="live messages")
    assert got == list(range(1, 110, 2))
    assert oc.serial > 1
    cc.stop()
    with pytest.raises(errors.OrderConsumerUsedAsConsume):
        await oc.fetch(1)


async def test_ordered_consume_survives_restart(server: Target, nc: Client, js: JetStream) -> None:
    await _stream(js, 10)
    oc = await js.ordered_consumer("O")
    got: list[int] = []
    cc = await oc.consume(lambda m: got.append(m.metadata().stream_seq), expiry=2, heartbeat=0.3)
    await wait_until(lambda: len(got) == 10, what="messages before the restart")
    serial = oc.serial
    await asyncio.to_thread(server.restart)  # the memory consumer is gone afterwards
    await wait_until(lambda: nc.is_connected, timeout=20, what="reconnect")
    for i in range(10, 20):
        await js.publish("o.a", b"%d" % i)
    await wait_until(lambda: len(got) == 20, timeout=30, what="messages after the restart")
    assert got == list(range(1, 21))
    assert oc.serial > serial
    cc.stop()


async def test_ordered_fetch(js: JetStream) -> None:
    await _stream(js, 25)
    oc = await js.ordered_consumer("O")
    first = await (await oc.fetch(10, max_wait=2)).collect()
    second = await (await oc.fetch(10, max_wait=2)).collect()
    assert [m.metadata().stream_seq for m in first + second] == list(range(1, 21))
    running = await oc.fetch(10, max_wait=1)
    with pytest.raises(errors.OrderedConsumerConcurrentRequests):
        await oc.fetch(1)
    assert [m.metadata().stream_seq for m in await running.collect()] == list(range(21, 26))
    with pytest.raises(errors.OrderConsumerUsedAsFetch):
        await oc.messages()


async def test_ordered_next_and_deliver_policies(js: JetStream) -> None:
    await _stream(js, 10)
    oc = await js.ordered_consumer("O")
    msg = await oc.next(max_wait=2)
    assert msg.metadata().stream_seq == 1
    assert (await oc.next(max_wait=2)).metadata().stream_seq == 2
    last = await js.ordered_consumer(
        "O", OrderedConsumerConfig(filter_subjects=["o.*"], deliver_policy=DeliverPolicy.LAST_PER_SUBJECT)
    )
    it = await last.messages()
    got = sorted([(await it.next(timeout=5)).data for _ in range(2)])
    assert got == [b"8", b"9"]
    it.stop()
    from_seq = await js.ordered_consumer(
        "O", OrderedConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=7)
    )
    it = await from_seq.messages()
    assert (await it.next(timeout=5)).metadata().stream_seq == 7
    it.stop()
    headers_only = await js.ordered_consumer("O", OrderedConsumerConfig(headers_only=True))
    first = await headers_only.next(max_wait=2)
    assert first.data == b"" and first.headers == {"Nats-Msg-Size": "1"}


async def test_sequence_gap_recreates_and_redelivers(js: JetStream) -> None:
    await _stream(js, 30)
    oc = await js.ordered_consumer("O")
    it = await oc.messages(max_messages=30)
    first = await it.next(timeout=5)
    assert first.metadata().stream_seq == 1
    await wait_until(lambda: it.pending >= 5, what="buffered messages")
    # Lose a message in transit (as a slow-consumer drop would): the next one shows a gap.
    assert it._inner is not None
    it._inner._buf.popleft()
    serial = oc.serial
    seqs = [(await it.next(timeout=5)).metadata().stream_seq for _ in range(29)]
    assert seqs == list(range(2, 31))  # the lost message came again, nothing twice
    assert oc.serial == serial + 1
    it.stop()
