"""Atomic and fast-ingest batch publishing (ADR-50), against both targets."""

from __future__ import annotations

from typing import Any

import pytest
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.errors import HeaderError
from pyjetstream.client.jetstream import JetStream, StreamConfig, errors


async def _atomic_stream(js: JetStream) -> None:
    await js.create_stream(StreamConfig(name="A", subjects=["a.>"], allow_atomic=True))


async def test_atomic_batch_commits_all_at_once(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.ATOMIC_BATCH)
    await _atomic_stream(js)
    stream = await js.stream("A")
    async with js.batch_publisher() as batch:
        await batch.add("a.1", b"one")
        await batch.add("a.2", b"two", headers={"k": "v"})
        assert (await stream.info()).state.messages == 0  # nothing stored before the commit
        ack = await batch.commit("a.3", b"three")
    assert (ack.stream, ack.seq, ack.batch, ack.count) == ("A", 3, batch.batch_id, 3)
    assert [(await stream.get_msg(i)).data for i in (1, 2, 3)] == [b"one", b"two", b"three"]
    assert (await stream.get_msg(2)).headers == {
        "k": "v",
        "Nats-Batch-Id": batch.batch_id,
        "Nats-Batch-Sequence": "2",
    }


async def test_batches_take_an_encoded_header_block(js: JetStream, server: Target) -> None:
    """A header block already encoded (what the Spark sink frames per row) is sent as is; an atomic
    batch's own headers go before its blank line, as they follow a mapping's headers."""
    await needs(js, server, Feature.ATOMIC_BATCH)
    await _atomic_stream(js)
    stream = await js.stream("A")
    block = b"NATS/1.0\r\nNats-Msg-Id: m1\r\nk: v\r\n\r\n"
    async with js.batch_publisher() as batch:
        await batch.add("a.1", b"one", headers=block)
        ack = await batch.commit("a.2", b"two", headers=b"NATS/1.0\r\nNats-Msg-Id: m2\r\n\r\n")
    assert (ack.seq, ack.count) == (2, 2)
    assert (await stream.get_msg(1)).headers == {
        "Nats-Msg-Id": "m1",
        "k": "v",
        "Nats-Batch-Id": batch.batch_id,
        "Nats-Batch-Sequence": "1",
    }
    with pytest.raises(errors.InvalidOption):
        async with js.batch_publisher() as batch:
            await batch.add("a.3", b"x", headers=block, msg_id="m3")
    with pytest.raises(HeaderError):
        await js.nc.publish("a.4", b"x", headers=b"k: v\r\n\r\n")


async def test_atomic_add_many_stages_what_add_stages(js: JetStream, server: Target) -> None:
    """``add_many``: the messages (and header blocks) ``add`` stages, the requests among them
    (``ack_every``) still requests; at the batch's size limit the same error as ``add``."""
    await needs(js, server, Feature.ATOMIC_BATCH)
    await _atomic_stream(js)
    stream = await js.stream("A")

    def rows(tag: bytes) -> list[tuple[str, bytes, Any]]:
        return [
            ("a.1", b"one", b"NATS/1.0\r\nNats-Msg-Id: %b1\r\n\r\n" % tag),
            ("a.2", b"two", {"k": "v"}),
            *[(f"a.{i}", b"%d" % i, b"NATS/1.0\r\nNats-Msg-Id: %b%d\r\n\r\n" % (tag, i)) for i in range(3, 12)],
        ]

    async with js.batch_publisher(ack_every=4) as one_by_one:
        for subject, data, headers in rows(b"m"):
            await one_by_one.add(subject, data, headers=headers)
        assert (await one_by_one.commit("a.end", b"end")).seq == 12
    async with js.batch_publisher(ack_every=4) as batch:
        await batch.add_many(rows(b"n")[:2])
        await batch.add_many(rows(b"n")[2:])
        assert batch.size == 11
        ack = await batch.commit("a.end", b"end")
    assert (ack.seq, ack.count) == (24, 12)
    for i in range(1, 13):
        a, b = await stream.get_msg(i), await stream.get_msg(12 + i)
        assert (a.subject, a.data) == (b.subject, b.data)
        expected = {**a.headers, "Nats-Batch-Id": batch.batch_id}
        if "Nats-Msg-Id" in expected:
            expected["Nats-Msg-Id"] = "n" + expected["Nats-Msg-Id"][1:]
        assert b.headers == expected
    with pytest.raises(errors.BatchPublishError, match="at most 1000 messages"):
        async with js.batch_publisher() as big:
            await big.add_many([("a.x", b"x", None)] * 1000)
    assert big.size == 999


async def test_atomic_batch_left_uncommitted_is_discarded(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.ATOMIC_BATCH)
    await _atomic_stream(js)
    stream = await js.stream("A")
    with pytest.raises(RuntimeError, match="boom"):
        async with js.batch_publisher(ack_every=2) as batch:
            for i in range(5):
                await batch.add(f"a.{i}", b"x")
            raise RuntimeError("boom")
    assert batch.is_closed
    with pytest.raises(errors.BatchPublishError, match="not committed"):
        async with js.batch_publisher() as other:
            await other.add("a.x", b"x")
    # Nothing stored, and a new batch goes through right away.
    async with js.batch_publisher() as batch:
        await batch.add("a.1", b"1")
        ack = await batch.commit("a.2", b"2")
    assert ack.count == 2 and (await stream.info()).state.messages == 2


async def test_atomic_batch_errors(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.ATOMIC_BATCH)
    await js.create_stream(StreamConfig(name="N", subjects=["n.>"]))
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        async with js.batch_publisher() as batch:
            await batch.add("n.1", b"x")
    assert exc_info.value.err_code == 10174  # atomic publish is disabled
    await _atomic_stream(js)
    async with js.batch_publisher() as batch:
        await batch.add("a.1", b"x")
        await batch.commit("a.2", b"y")
        with pytest.raises(errors.BatchPublishError):
            await batch.add("a.3", b"z")


async def test_atomic_batch_commit_without_a_final_message(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.BATCH_EOB)
    await _atomic_stream(js)
    async with js.batch_publisher() as batch:
        await batch.add("a.1", b"1")
        await batch.add("a.2", b"2")
        ack = await batch.commit()
    assert (ack.seq, ack.count) == (2, 2)


async def test_fast_publisher_loads_a_stream(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.FAST_BATCH)
    await js.create_stream(StreamConfig(name="F", subjects=["f.>"], allow_batched=True))
    async with js.fast_publisher(flow=10, max_outstanding_acks=2) as pub:
        for i in range(500):
            result = await pub.add(f"f.{i % 7}", str(i).encode())
            assert result.batch_sequence == i + 1
            assert result.ack_sequence + 10 * 2 > i + 1  # backpressure: never too far ahead
    assert pub.ack is not None and (pub.ack.count, pub.ack.batch) == (500, pub.batch_id)
    assert not pub.gaps and not pub.errors
    stream = await js.stream("F")
    assert (await stream.info()).state.messages == 500
    assert (await stream.get_msg(500)).data == b"499"


async def test_fast_publisher_add_many_sends_runs_within_flow_control(js: JetStream, server: Target) -> None:
    """``add_many``: the messages of ``add`` in order (headers as given, a dict or an encoded block),
    sent in runs no further ahead of the acks than ``add`` goes; a duplicate id is skipped."""
    await needs(js, server, Feature.FAST_BATCH)
    await js.create_stream(StreamConfig(name="F", subjects=["f.>"], allow_batched=True))
    sent = js.nc.stats["out_msgs"]
    async with js.fast_publisher(flow=10, max_outstanding_acks=2) as pub:
        rows = [(f"f.{i % 7}", str(i).encode(), b"NATS/1.0\r\nNats-Msg-Id: m%d\r\n\r\n" % i) for i in range(300)]
        await pub.add_many(rows[:1])
        await pub.add_many(rows[1:250])
        assert pub.size == 250 and pub.ack_sequence + 10 * 2 > 250
        await pub.add_many([*rows[250:], ("f.x", b"dup", {"Nats-Msg-Id": "m3"}), ("f.y", b"y", None)])
    assert pub.ack is not None and (pub.ack.count, pub.ack.batch) == (302, pub.batch_id)
    assert not pub.gaps and not pub.errors
    assert js.nc.stats["out_msgs"] - sent >= 303  # and the acks' pings, if any
    stream = await js.stream("F")
    assert (await stream.info()).state.messages == 301  # the duplicate id is not stored
    last = await stream.get_msg(301)
    assert (last.subject, last.data) == ("f.y", b"y")
    assert (await stream.get_msg(250)).headers == {"Nats-Msg-Id": "m249"}


async def test_fast_publisher_commit_with_a_last_message_and_errors(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.FAST_BATCH)
    await js.create_stream(StreamConfig(name="F", subjects=["f.>"], allow_batched=True))
    async with js.fast_publisher() as pub:
        await pub.add("f.1", b"1")
        ack = await pub.commit("f.2", b"2")
    assert (ack.seq, ack.count) == (2, 2)
    await js.create_stream(StreamConfig(name="N", subjects=["n.>"]))
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        async with js.fast_publisher() as pub:
            await pub.add("n.1", b"x")
    assert exc_info.value.err_code == 10205  # batch publish is disabled
    with pytest.raises(errors.InvalidOption):
        js.fast_publisher(gap="maybe")


def test_batch_publishers_in_the_blocking_facade(server: Target) -> None:
    from pyjetstream.client.jetstream import sync

    with sync.connect(server.url) as nc:
        js = nc.jetstream()
        if js.api_level() < Feature.ATOMIC_BATCH.level:
            pytest.skip(f"embedded server lacks {Feature.ATOMIC_BATCH.description} (its API level is lower)")
        js.create_stream(StreamConfig(name="A", subjects=["a.>"], allow_atomic=True))
        with js.batch_publisher() as batch:
            batch.add("a.1", b"1")
            ack = batch.commit("a.2", b"2")
        assert ack.count == 2
        with pytest.raises(errors.BatchPublishError), js.batch_publisher() as batch:
            batch.add("a.3", b"3")  # left uncommitted: discarded
        assert js.stream("A").info().state.messages == 2
