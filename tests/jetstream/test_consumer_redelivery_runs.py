"""Redeliveries in numbers, on both targets: what a consumer sends again after NAKs and ack-wait
expiries, with more queued than one delivery run holds (the embedded server takes them off the
redelivery queue, reads and frames them as a run, ``AckProcessor.redeliveries``).

What each must keep, as nats-server does (``getNextMsg``'s redelivery branch): the order of the
redelivery queue, a delivery count only for what went out (a pull batch that takes part of the
queue leaves the rest uncounted and first in line), ``max_deliver`` per message with its advisory,
nothing sent for a message removed from the stream meanwhile, ``backoff`` per delivery count.
"""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import Target

MS = 1_000_000


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def _stream(client: RawClient, n: int) -> None:
    """Stream S with ``n`` messages ``m0``… on ``s.a`` (published without waiting for each PubAck)."""
    await client.add_stream("S", ["s.>"])
    for i in range(n):
        client.publish("s.a", b"m%d" % i)
    await client.flush()

    async def stored() -> bool:
        return bool((await client.stream_info("S"))["state"]["messages"] == n)

    await wait_for(stored, timeout=30)


async def _fetch(client: RawClient, n: int, expires_ms: int = 10_000, consumer: str = "C") -> list[Msg]:
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, {"batch": n, "expires": expires_ms * MS})
    msgs = await sub.collect(n, timeout=30)
    sub.unsubscribe()
    return msgs


async def test_naked_messages_come_back_in_the_order_they_were_naked(client: RawClient) -> None:
    """300 NAKs (more than one run) in a shuffled order: redelivered in that order, each counted
    once; NAKed again, counted again."""
    await _stream(client, 300)
    await client.add_consumer("S", "C", ack_wait=60_000 * MS)
    msgs = await _fetch(client, 300)
    random.Random(5).shuffle(msgs)
    for m in msgs:
        client.publish(m.reply, b"-NAK")
    await client.flush()
    again = await _fetch(client, 300)
    assert [m.data for m in again] == [m.data for m in msgs]
    assert {m.num_delivered for m in again} == {2}
    # the delivery sequences go on; each redelivery's ack names its own
    assert [m.consumer_seq for m in again] == list(range(301, 601))
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_redelivered"], info["ack_floor"]["stream_seq"]) == (300, 300, 0)
    for m in again[:3]:
        client.publish(m.reply, b"-NAK")
    third = await _fetch(client, 3)
    assert [(m.data, m.num_delivered) for m in third] == [(m.data, 3) for m in again[:3]]


async def test_each_nak_of_a_run_has_its_advisory(client: RawClient) -> None:
    """NAKs sent together (one read, one run of acks for the embedded server): an advisory each."""
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED.S.C")
    await _stream(client, 20)
    await client.add_consumer("S", "C", ack_wait=60_000 * MS)
    msgs = await _fetch(client, 20)
    await client.flush()
    for m in msgs:
        client.publish(m.reply, b"-NAK")
    await client.flush()
    events = [(await advisories.next(10)).json() for _ in range(20)]
    assert sorted((e["stream_seq"], e["consumer_seq"], e["deliveries"]) for e in events) == [
        (s, s, 1) for s in range(1, 21)
    ]
    assert {(e["stream"], e["consumer"]) for e in events} == {("S", "C")}


async def test_a_pull_batch_takes_the_head_of_the_redeliveries(client: RawClient) -> None:
    """Twenty NAKed, pulled five at a time: each batch takes the next five in line; those not
    taken yet are not counted as redelivered (``num_redelivered``); new messages wait for them."""
    await _stream(client, 20)
    await client.add_consumer("S", "C", ack_wait=60_000 * MS)
    msgs = await _fetch(client, 20)
    for m in reversed(msgs):
        client.publish(m.reply, b"-NAK")
    await client.flush()
    first = await _fetch(client, 5)
    assert [(m.data, m.num_delivered) for m in first] == [(b"m%d" % i, 2) for i in range(19, 14, -1)]
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (20, 5)
    client.publish("s.a", b"new")
    await client.flush()
    rest = await _fetch(client, 16)
    assert [m.data for m in rest] == [b"m%d" % i for i in range(14, -1, -1)] + [b"new"]
    assert [m.num_delivered for m in rest] == [2] * 15 + [1]
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (21, 20)


async def test_max_deliver_applies_to_each_message_of_a_run(client: RawClient) -> None:
    """Ten NAKed at once with max_deliver 2, half of them already redelivered once: those go no
    more (a MAX_DELIVERIES advisory each, no longer pending), the others come back in order."""
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.S.C")
    await _stream(client, 10)
    await client.add_consumer("S", "C", ack_wait=60_000 * MS, max_deliver=2)
    msgs = await _fetch(client, 10)
    for m in msgs[::2]:
        client.publish(m.reply, b"-NAK")
    again = await _fetch(client, 5)
    assert [(m.data, m.num_delivered) for m in again] == [(b"m%d" % i, 2) for i in range(0, 10, 2)]
    latest = {m.stream_seq: m for m in [*msgs, *again]}
    for seq in sorted(latest):
        client.publish(latest[seq].reply, b"-NAK")
    await client.flush()
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "C", inbox, {"batch": 10, "expires": 1_000 * MS})
    got = await sub.collect(5, timeout=10)
    assert [(m.data, m.num_delivered) for m in got] == [(b"m%d" % i, 2) for i in range(1, 10, 2)]
    events = [(await advisories.next(10)).json() for _ in range(5)]
    assert sorted((e["stream_seq"], e["deliveries"]) for e in events) == [(s, 2) for s in range(1, 11, 2)]
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (5, 10)


async def test_a_message_removed_while_queued_is_not_redelivered(client: RawClient) -> None:
    await _stream(client, 6)
    await client.add_consumer("S", "C", ack_wait=60_000 * MS)
    msgs = await _fetch(client, 6)
    for m in msgs:
        client.publish(m.reply, b"-NAK")
    await client.flush()
    for seq in (2, 4):
        resp = await client.api("$JS.API.STREAM.MSG.DELETE.S", {"seq": seq})
        assert resp.get("success"), resp
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "C", inbox, {"batch": 6, "expires": 1_000 * MS})
    got = await sub.collect(4, timeout=10)
    assert [(m.stream_seq, m.num_delivered) for m in got] == [(1, 2), (3, 2), (5, 2), (6, 2)]
    await sub.expect_none(0.3)


async def test_ack_wait_expiries_come_back_in_stream_order(client: RawClient) -> None:
    """200 delivered, the even ones acked: the odd ones come back after the ack wait, in stream
    order, counted once."""
    await _stream(client, 200)
    await client.add_consumer("S", "C", ack_wait=500 * MS)
    msgs = await _fetch(client, 200)
    for m in msgs[::2]:
        client.publish(m.reply, b"+ACK")
    await client.flush()
    again = await _fetch(client, 100)
    assert [(m.stream_seq, m.num_delivered) for m in again] == [(s, 2) for s in range(2, 201, 2)]
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (100, 100)


async def test_backoff_follows_each_redelivery_of_a_run(client: RawClient) -> None:
    """With a backoff, a NAKed run comes back at once, then each message after the step of its
    delivery count (backoff[1], well before backoff[0])."""
    await _stream(client, 5)
    await client.add_consumer("S", "C", backoff=[20_000 * MS, 400 * MS], max_deliver=4)
    msgs = await _fetch(client, 5)
    for m in msgs:
        client.publish(m.reply, b"-NAK")
    await client.flush()
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "C", inbox, {"batch": 10, "expires": 10_000 * MS})
    second = await sub.collect(5, timeout=10)
    start = time.monotonic()
    third = await sub.collect(5, timeout=10)
    waited = time.monotonic() - start
    assert [(m.data, m.num_delivered) for m in second] == [(b"m%d" % i, 2) for i in range(5)]
    assert [(m.data, m.num_delivered) for m in third] == [(b"m%d" % i, 3) for i in range(5)]
    assert 0.2 <= waited < 10
