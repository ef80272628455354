"""Retention driven by consumers, on both targets: interest streams keep a message until every
consumer that selects it acked it (and store nothing without consumers); workqueue streams drop a
message on its ack."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient
from tests.support.targets import Target


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def state(client: RawClient, stream: str = "S") -> tuple[int, int, int]:
    st = (await client.stream_info(stream))["state"]
    return st["messages"], st["first_seq"], st["last_seq"]


async def fetch(client: RawClient, stream: str, consumer: str, n: int) -> list[Msg]:
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull(stream, consumer, inbox, {"batch": n, "expires": 2_000_000_000})
    msgs = await sub.collect(n)
    sub.unsubscribe()
    return msgs


async def test_interest_retention(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"], retention="interest")
    await client.publish_many("s.a", 2)
    assert await state(client) == (0, 3, 2)  # no consumers: nothing kept, sequences used
    await client.add_consumer("S", "A")
    await client.add_consumer("S", "B", filter_subject="s.b")
    await client.add_consumer("S", "N", ack_policy="none", filter_subject="s.a")
    await client.publish_many("s.a", 3)  # seqs 3-5: needed by A and N
    await client.publish_many("s.b", 2)  # seqs 6-7: needed by A and B
    assert await state(client) == (5, 3, 7)
    a_msgs = await fetch(client, "S", "A", 5)
    await client.request(a_msgs[0].reply, b"")  # A acks 3; N has not seen it yet
    assert await state(client) == (5, 3, 7)
    assert len(await fetch(client, "S", "N", 3)) == 3  # AckNone: delivered = acked: 3 goes
    assert await state(client) == (4, 4, 7)
    await client.request(a_msgs[3].reply, b"")  # A acks 6; B still needs it
    assert await state(client) == (4, 4, 7)
    (b_first,) = await fetch(client, "S", "B", 1)
    await client.request(b_first.reply, b"")  # now everybody acked 6
    assert await state(client) == (3, 4, 7)
    await client.api("$JS.API.CONSUMER.DELETE.S.B")  # 7 is still needed by A
    assert (await state(client))[0] == 3
    await client.api("$JS.API.CONSUMER.DELETE.S.N")
    await client.api("$JS.API.CONSUMER.DELETE.S.A")  # nobody left: everything goes
    assert (await state(client))[0] == 0
    await client.publish_many("s.a", 2)
    assert (await state(client))[0] == 0


async def test_workqueue_retention(client: RawClient) -> None:
    await client.add_stream("W", ["w.>"], retention="workqueue")
    await client.publish_many("w.a", 3)
    await client.publish_many("w.b", 2)
    await client.add_consumer("W", "A", filter_subject="w.a")
    msgs = await fetch(client, "W", "A", 3)
    assert await state(client, "W") == (5, 1, 5)
    await client.request(msgs[1].reply, b"")
    assert await state(client, "W") == (4, 1, 5)
    await client.request(msgs[0].reply, b"+TERM")  # terminated = done with it
    assert await state(client, "W") == (3, 3, 5)
    await client.add_consumer("W", "B", filter_subject="w.b")
    b_msgs = await fetch(client, "W", "B", 2)
    await client.request(b_msgs[1].reply, b"")
    assert await state(client, "W") == (2, 3, 5)
    # Deleting a workqueue consumer keeps the messages for the next one.
    await client.api("$JS.API.CONSUMER.DELETE.W.A")
    assert await state(client, "W") == (2, 3, 5)
    await client.add_consumer("W", "A2", filter_subject="w.a")
    (again,) = await fetch(client, "W", "A2", 1)
    assert again.stream_seq == 3 and again.num_delivered == 1
