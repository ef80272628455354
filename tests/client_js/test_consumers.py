"""Consumer management through the client: create/update semantics, info, listing (both targets)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from pyjetstream.api import AckPolicy, DeliverPolicy
from pyjetstream.api import ConsumerConfig as WireConsumerConfig
from pyjetstream.client import Client
from pyjetstream.client.jetstream import ConsumerConfig, JetStream, StreamConfig, errors


async def test_consumer_create_update_semantics(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    cfg = ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT)
    created = await js.create_consumer("ORDERS", cfg)
    assert created.name == "foo" and created.stream_name == "ORDERS"
    info = created.cached_info()
    assert info.config.durable_name == "foo" and info.config.ack_wait == 30  # server default, seconds
    # Same config again: fine. Different config: ConsumerExists.
    await js.create_consumer("ORDERS", cfg)
    with pytest.raises(errors.ConsumerExists):
        await js.create_consumer(
            "ORDERS", ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT, description="x")
        )
    updated = await js.update_consumer(
        "ORDERS", ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT, description="x")
    )
    assert updated.cached_info().config.description == "x"
    with pytest.raises(errors.ConsumerDoesNotExist):
        await js.update_consumer("ORDERS", ConsumerConfig(durable="missing", ack_policy=AckPolicy.EXPLICIT))
    # An illegal update is the server's error, with its code.
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        await stream.create_or_update_consumer(ConsumerConfig(durable="foo", ack_policy=AckPolicy.NONE))
    assert exc_info.value.err_code == 10012
    both = await stream.create_or_update_consumer(ConsumerConfig(name="bar", ack_policy=AckPolicy.EXPLICIT))
    assert both.name == "bar"
    handle = await stream.consumer("foo")
    assert (await handle.info()).config.description == "x"
    await stream.delete_consumer("foo")
    with pytest.raises(errors.ConsumerNotFound):
        await js.consumer("ORDERS", "foo")
    with pytest.raises(errors.ConsumerNotFound):
        await js.delete_consumer("ORDERS", "foo")
    with pytest.raises(errors.StreamNotFound):
        await js.create_consumer("NOPE", cfg)


async def test_ephemeral_and_filtered_consumers(js: JetStream) -> None:
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    ephemeral = await js.create_consumer("ORDERS", ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
    info = ephemeral.cached_info()
    assert len(ephemeral.name) == 8 and info.config.durable_name == ""
    assert info.config.inactive_threshold > 0  # the server made it ephemeral
    filtered = await js.create_consumer(
        "ORDERS",
        ConsumerConfig(
            durable="A",
            ack_policy=AckPolicy.EXPLICIT,
            filter_subject="ORDERS.A",
            deliver_policy=DeliverPolicy.NEW,
            inactive_threshold=timedelta(minutes=1),
        ),
    )
    assert filtered.cached_info().config.filter_subject == "ORDERS.A"
    single = await js.create_consumer("ORDERS", ConsumerConfig(durable="C", filter_subjects=["ORDERS.C"]))
    config = single.cached_info().config
    assert "ORDERS.C" in (config.filter_subject, *config.filter_subjects)
    with pytest.raises(errors.InvalidConsumerName):
        await js.create_consumer("ORDERS", ConsumerConfig(durable="bad.name"))


async def test_ack_policy_defaults_to_explicit(js: JetStream, nc: Client) -> None:
    """``ConsumerConfig`` without ``ack_policy`` is ``explicit`` (nats.go's jetstream zero value,
    nats-py's default), so an ``ack()`` counts; pull and push alike. The server's own default —
    a request without the field, or the wire model — stays ``none``; ordered consumers are ``none``."""
    stream = await js.create_stream(StreamConfig(name="DEF", subjects=["def.*"]))
    await js.publish("def.a", b"1")
    assert ConsumerConfig().ack_policy == AckPolicy.EXPLICIT
    pull = await stream.create_consumer(ConsumerConfig(durable="P"))
    assert pull.cached_info().config.ack_policy == AckPolicy.EXPLICIT
    msgs = [m async for m in await pull.fetch(1, max_wait=2)]
    assert len(msgs) == 1 and (await pull.info()).num_ack_pending == 1
    await msgs[0].double_ack()
    info = await pull.info()
    assert info.num_ack_pending == 0 and info.ack_floor.stream_seq == 1
    push = await stream.create_push_consumer(ConsumerConfig(durable="Q", deliver_subject="dq"))
    assert push.cached_info().config.ack_policy == AckPolicy.EXPLICIT
    wire = await stream.create_consumer(WireConsumerConfig(durable_name="W"))
    assert wire.cached_info().config.ack_policy == AckPolicy.NONE
    raw = await nc.request("$JS.API.CONSUMER.CREATE.DEF.R", b'{"stream_name":"DEF","config":{"durable_name":"R"}}')
    assert json.loads(raw.data)["config"]["ack_policy"] == "none"
    ordered = await stream.ordered_consumer()
    async for _msg in await ordered.fetch(1, max_wait=2):
        pass
    assert (await ordered.info()).config.ack_policy == AckPolicy.NONE


async def test_filter_outside_the_stream_subjects(js: JetStream) -> None:
    """nats-server 2.10+ accepts a filter outside the stream's subjects (2.9 refused it: 10093)."""
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    consumer = await js.create_consumer("ORDERS", ConsumerConfig(durable="B", filter_subject="OTHER.x"))
    assert consumer.cached_info().config.filter_subject == "OTHER.x"


async def test_consumer_listing_and_info(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="L", subjects=["l.*"]))
    for i in range(5):
        await js.publish("l.x", b"%d" % i)
    for name in ("c1", "c2", "c3"):
        await stream.create_consumer(ConsumerConfig(durable=name, ack_policy=AckPolicy.EXPLICIT))
    names = sorted([n async for n in stream.consumer_names()])
    assert names == ["c1", "c2", "c3"]
    infos = [i async for i in js.list_consumers("L")]
    assert sorted(i.name for i in infos) == names and all(i.num_pending == 5 for i in infos)
    consumer = await stream.consumer("c1")
    async for msg in await consumer.fetch(2, max_wait=2):
        await msg.ack()
    info = await consumer.info()
    assert info.num_pending == 3 and info.delivered.stream_seq == 2
    assert consumer.cached_info() is info
    assert (await js.account_info()).consumers == 3
