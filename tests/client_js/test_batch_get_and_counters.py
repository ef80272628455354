"""Batched direct get (``get_batch``, ``get_last_msgs_for``) and counters (``js.counter``), against
both targets."""

from __future__ import annotations

import pytest
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.jetstream import JetStream, StreamConfig, errors


async def test_get_batch(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.BATCH_GET)
    stream = await js.create_stream(StreamConfig(name="B", subjects=["b.>"], allow_direct=True))
    for i in range(10):
        await js.publish(f"b.{i % 3}", str(i).encode(), headers={"n": str(i)})
    got = [m async for m in stream.get_batch(4)]
    assert [m.sequence for m in got] == [1, 2, 3, 4]
    assert got[0].data == b"0" and got[0].subject == "b.0" and got[0].headers is not None
    assert got[0].headers["n"] == "0"
    got = [m async for m in stream.get_batch(10, seq=5, subject="b.1")]
    assert [m.sequence for m in got] == [5, 8]  # b.1 at or after 5
    assert [m.sequence async for m in stream.get_batch(100, seq=9)] == [9, 10]
    assert [m async for m in stream.get_batch(5, subject="none")] == []
    with pytest.raises(errors.InvalidOption):
        [m async for m in stream.get_batch(0)]


async def test_get_last_msgs_for(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.BATCH_GET)
    stream = await js.create_stream(StreamConfig(name="B", subjects=["b.>"], allow_direct=True))
    for i in range(9):
        await js.publish(f"b.{i % 3}", str(i).encode())
    last = {m.subject: m.data async for m in stream.get_last_msgs_for(["b.*"])}
    assert last == {"b.0": b"6", "b.1": b"7", "b.2": b"8"}
    msgs = [m async for m in stream.get_last_msgs_for(["b.0", "b.2"], up_to_seq=5)]
    assert [(m.subject, m.sequence) for m in msgs] == [("b.2", 3), ("b.0", 4)]  # in sequence order
    assert [m async for m in stream.get_last_msgs_for(["none"])] == []


async def test_counters(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.COUNTERS, Feature.BATCH_GET)
    await js.create_stream(
        StreamConfig(name="HITS", subjects=["hits.>"], allow_msg_counter=True, allow_direct=True)
    )
    hits = await js.counter("HITS")
    assert await hits.add("hits.home", 5) == 5
    assert await hits.add("hits.home", -2) == 3
    assert await hits.add("hits.about", 10**30) == 10**30  # arbitrary precision
    assert await hits.load("hits.home") == 3
    entry = await hits.get("hits.home")
    assert (entry.subject, entry.value, entry.increment, entry.sources) == ("hits.home", 3, -2, {})
    many = {e.subject: e.value async for e in hits.get_many(["hits.>"])}
    assert many == {"hits.home": 3, "hits.about": 10**30}
    with pytest.raises(errors.MsgNotFound):
        await hits.load("hits.never")
    with pytest.raises(errors.InvalidOption):
        await hits.add("hits.home", 1.5)  # type: ignore[arg-type]


async def test_counter_on_a_plain_stream(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.COUNTERS)
    await js.create_stream(StreamConfig(name="PLAIN", subjects=["p.>"]))
    with pytest.raises(errors.CounterNotEnabled):
        await js.counter("PLAIN")
    # Sent anyway, the increment is the server's error.
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        await js.publish("p.x", b"", headers={"Nats-Incr": "+1"})
    assert exc_info.value.err_code == 10168


async def test_batch_get_needs_allow_direct(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.BATCH_GET)
    stream = await js.create_stream(StreamConfig(name="ND", subjects=["nd.>"]))
    with pytest.raises(errors.InvalidOption, match="allow_direct"):
        [m async for m in stream.get_batch(5)]
