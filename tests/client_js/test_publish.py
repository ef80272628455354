"""Publishing into streams: acks, dedupe, expectations, retries, pipelined async publish (both targets)."""

from __future__ import annotations

import asyncio
import time

import pytest
from tests.client_js.conftest import wait_until

from pyjetstream.client import Client, Msg
from pyjetstream.client.jetstream import (
    JetStream,
    PublishedMsg,
    StreamConfig,
    errors,
    jetstream,
)


async def test_publish_ack_dedupe_and_headers(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    ack = await js.publish("ORDERS.new", b"hello", msg_id="id-1", headers={"X-A": "1", "X-B": ["2", "3"]})
    assert (ack.stream, ack.seq, ack.duplicate) == ("ORDERS", 1, False)
    dup = await js.publish("ORDERS.new", b"hello again", msg_id="id-1")
    assert (dup.seq, dup.duplicate) == (1, True)
    stored = await stream.get_msg(1)
    assert stored.header_block is not None
    assert stored.header_block.headers["X-B"] == ["2", "3"]
    assert stored.header_block.get("Nats-Msg-Id") == "id-1"
    core = Msg("ORDERS.other", b"core", raw_headers=b"NATS/1.0\r\nX-C: 4\r\n\r\n")
    ack = await js.publish_msg(core, msg_id="id-2")
    stored = await stream.get_msg(ack.seq)
    assert stored.data == b"core" and stored.headers == {"X-C": "4", "Nats-Msg-Id": "id-2"}


async def test_publish_expectations(js: JetStream) -> None:
    await js.create_stream(StreamConfig(name="EXP", subjects=["exp.*"]))
    await js.publish("exp.a", b"1", msg_id="m1", expect_stream="EXP", expect_last_sequence=0)
    with pytest.raises(errors.StreamNotMatch):
        await js.publish("exp.a", b"x", expect_stream="OTHER")
    with pytest.raises(errors.WrongLastSequence) as exc_info:
        await js.publish("exp.a", b"x", expect_last_sequence=5)
    assert exc_info.value.err_code == 10071 and "wrong last sequence: 1" in exc_info.value.description
    await js.publish("exp.b", b"2", expect_last_sequence_per_subject=0)
    with pytest.raises(errors.WrongLastSequence):
        await js.publish("exp.b", b"3", expect_last_sequence_per_subject=0)
    await js.publish("exp.b", b"3", expect_last_sequence_per_subject=2)
    with pytest.raises(errors.WrongLastMsgID):
        await js.publish("exp.a", b"4", expect_last_msg_id="m1")  # the last message has no id
    ack = await js.publish("exp.a", b"5", msg_id="m5")
    await js.publish("exp.a", b"6", expect_last_msg_id="m5")
    assert ack.seq == 4


async def test_no_stream_retries_then_fails(js: JetStream) -> None:
    start = time.monotonic()
    with pytest.raises(errors.NoStreamResponse):
        await js.publish("nowhere", b"x", retry_attempts=2, retry_wait=0.1)
    assert time.monotonic() - start >= 0.2  # two retries after a pause each
    with pytest.raises(errors.NoStreamResponse):
        await js.publish("nowhere", b"x", retry_attempts=0)


async def test_publish_retry_finds_a_stream_created_meanwhile(js: JetStream) -> None:
    async def create_later() -> None:
        await asyncio.sleep(0.15)
        await js.create_stream(StreamConfig(name="LATE", subjects=["late"]))

    task = asyncio.create_task(create_later())
    ack = await js.publish("late", b"x", retry_attempts=-1, retry_wait=0.05)
    await task
    assert (ack.stream, ack.seq) == ("LATE", 1)


async def test_async_publish_pipelines(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="ASYNC", subjects=["async.>"]))
    futures = [await js.publish_async("async.x", b"%d" % i) for i in range(3000)]
    await js.publish_async_complete(timeout=20)
    assert js.publish_async_pending() == 0
    acks = [f.result() for f in futures]
    assert [a.seq for a in acks] == list(range(1, 3001))
    assert futures[10].msg == PublishedMsg("async.x", b"10", None)
    assert (await stream.info()).state.messages == 3000
    # Options and headers work as for publish.
    fut = await js.publish_async("async.y", b"h", msg_id="dup", headers={"K": "V"})
    again = await js.publish_async("async.y", b"h", msg_id="dup")
    assert (await fut).seq == 3001 and (await again).duplicate
    with pytest.raises(errors.AsyncPublishReplySubjectSet):
        await js.publish_msg_async(Msg("async.z", b"", reply="somewhere"))


async def test_async_publish_errors_go_to_future_and_handler(nc: Client) -> None:
    failures: list[tuple[PublishedMsg, Exception]] = []
    js = jetstream(
        nc, publish_async_error_handler=lambda _js, msg, exc: failures.append((msg, exc)), retry_attempts=0
    )
    await js.create_stream(StreamConfig(name="E", subjects=["e"]))
    ok = await js.publish_async("e", b"fine")
    bad = await js.publish_async("e", b"bad", expect_stream="WRONG")
    lost = await js.publish_async("no.stream", b"lost")
    await js.publish_async_complete(timeout=10)
    assert (await ok).seq == 1
    with pytest.raises(errors.StreamNotMatch):
        await bad
    with pytest.raises(errors.NoStreamResponse):
        await lost
    assert sorted(m.subject for m, _ in failures) == ["e", "no.stream"]


async def test_async_publish_window(nc: Client) -> None:
    js = jetstream(nc, publish_async_max_pending=5, publish_async_backpressure=False)
    await js.create_stream(StreamConfig(name="W", subjects=["w"]))
    # Nobody answers "held" (no stream): the window fills and stays full until retries give up.
    held = jetstream(
        nc, publish_async_max_pending=3, publish_async_backpressure=False, retry_attempts=50, retry_wait=0.2
    )
    for _ in range(3):
        await held.publish_async("held", b"x")
    with pytest.raises(errors.TooManyStalledMsgs):
        await held.publish_async("held", b"x")
    stalled = jetstream(nc, publish_async_max_pending=2, retry_attempts=50, retry_wait=0.2)
    for _ in range(2):
        await stalled.publish_async("held", b"x")
    start = time.monotonic()
    with pytest.raises(errors.TooManyStalledMsgs):
        await stalled.publish_async("held", b"x", stall_wait=0.2)
    assert time.monotonic() - start >= 0.2
    # With backpressure (the default) a full window just waits for acks: 200 through a window of 5.
    flowing = jetstream(nc, publish_async_max_pending=5)
    futures = [await flowing.publish_async("w", b"%d" % i) for i in range(200)]
    await flowing.publish_async_complete(timeout=10)
    assert [f.result().seq for f in futures] == list(range(1, 201))
    assert js.publish_async_pending() == 0


async def test_async_publish_ack_timeout(nc: Client) -> None:
    # A subscriber that never answers stands in for a stream whose ack is lost.
    await nc.subscribe("silent")
    await nc.flush()
    js = jetstream(nc, publish_async_timeout=0.3)
    fut = await js.publish_async("silent", b"x")
    with pytest.raises(errors.AsyncPublishTimeout):
        await fut
    await wait_until(lambda: js.publish_async_pending() == 0, what="pending drained")
    await js.publish_async_complete(timeout=1)
