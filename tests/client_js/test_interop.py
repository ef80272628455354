"""Interoperability with nats-py: the same streams, KV buckets and objects from either client (both targets)."""

from __future__ import annotations

import nats
import pytest
from tests.support.targets import Target

from pyjetstream.api import RePublish
from pyjetstream.client import Client
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    KeyValueConfig,
    ObjectStoreConfig,
    StreamConfig,
    errors,
)


@pytest.fixture
async def natspy(server: Target):  # type: ignore[no-untyped-def]
    nc = await nats.connect(server.url)
    yield nc
    await nc.close()


async def test_messages_across_clients(js: JetStream, natspy) -> None:  # type: ignore[no-untyped-def]
    await js.create_stream(StreamConfig(name="X", subjects=["x.*"]))
    theirs = natspy.jetstream()
    ack = await theirs.publish("x.a", b"from nats-py", headers={"H": "1"})
    assert ack.seq == 1
    consumer = await js.create_consumer("X", ConsumerConfig(durable="D", ack_policy=AckPolicy.EXPLICIT))
    msg = await consumer.next(max_wait=5)
    assert (msg.data, msg.headers) == (b"from nats-py", {"H": "1"})
    await msg.ack()
    await js.publish("x.b", b"from us", msg_id="m1")
    psub = await theirs.pull_subscribe("x.b", durable="P", stream="X")
    (got,) = await psub.fetch(1, timeout=5)
    assert got.data == b"from us" and got.header.get("Nats-Msg-Id") == "m1"
    await got.ack()


async def test_kv_across_clients(js: JetStream, natspy) -> None:  # type: ignore[no-untyped-def]
    ours = await js.create_key_value(KeyValueConfig(bucket="shared", history=3))
    theirs = await natspy.jetstream().key_value("shared")
    await ours.put("a", b"1")
    assert (await theirs.get("a")).value == b"1"
    await theirs.put("b", b"2")
    assert (await ours.get("b")).value == b"2"
    await theirs.delete("a")
    with pytest.raises(errors.KeyDeleted):
        await ours.get("a")
    assert await ours.keys() == ["b"]
    other = await natspy.jetstream().create_key_value(bucket="made_by_natspy", history=2)
    await other.put("k", b"v")
    bound = await js.key_value("made_by_natspy")
    assert (await bound.get("k")).value == b"v"
    assert (await bound.status()).history == 2


async def test_objects_across_clients(js: JetStream, natspy) -> None:  # type: ignore[no-untyped-def]
    data = bytes(range(256)) * 1500
    ours = await js.create_object_store(ObjectStoreConfig(bucket="files"))
    await ours.put_bytes("from-us", data)
    theirs = await natspy.jetstream().object_store("files")
    result = await theirs.get("from-us")
    assert result.data == data and result.info.digest == (await ours.get_info("from-us")).digest
    await theirs.put("from-natspy", data[:100_000])
    assert await ours.get_bytes("from-natspy") == data[:100_000]
    names = sorted(info.name for info in await ours.list())
    assert names == ["from-natspy", "from-us"]


async def test_kv_republish(js: JetStream, nc: Client) -> None:
    sub = await nc.subscribe("repub.>")
    await nc.flush()
    kv = await js.create_key_value(
        KeyValueConfig(bucket="R", republish=RePublish(src="$KV.R.>", dest="repub.>"))
    )
    await kv.put("k", b"v")
    msg = await sub.next_msg(timeout=5)
    assert msg.subject == "repub.k" and msg.data == b"v"
    assert msg.headers is not None and msg.headers["Nats-Stream"] == "KV_R"
