"""2.11+ publish options and consumer management: per-message TTL, expected last sequence for a
subject filter, schedules, pause/resume, unpin and reset — against both targets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from tests.client_js.conftest import wait_for
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.jetstream import (
    TTL_NEVER,
    AckPolicy,
    ConsumerConfig,
    JetStream,
    MsgSchedule,
    StreamConfig,
    errors,
)


async def test_publish_with_ttl(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.MSG_TTL)
    stream = await js.create_stream(StreamConfig(name="T", subjects=["t.>"], allow_msg_ttl=True))
    short = await js.publish("t.short", b"gone soon", ttl=1)
    kept = await js.publish("t.kept", b"stays", ttl=TTL_NEVER)
    later = await js.publish_async("t.later", b"x", ttl=timedelta(hours=1))
    assert (await later).seq == 3
    msg = await stream.get_msg(short.seq)
    assert msg.headers is not None and msg.headers["Nats-TTL"] == "1s"
    assert (await stream.get_msg(kept.seq)).headers == {"Nats-TTL": "never"}

    async def expired() -> bool:
        try:
            await stream.get_msg(short.seq)
        except errors.MsgNotFound:
            return True
        return False

    await wait_for(expired, timeout=15, what="the 1s TTL message to expire")
    assert (await stream.info()).state.messages == 2


async def test_ttl_on_a_stream_without_it_is_the_servers_error(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.MSG_TTL)
    await js.create_stream(StreamConfig(name="T", subjects=["t.>"]))
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        await js.publish("t.a", b"x", ttl=5)
    assert exc_info.value.err_code == 10166


def test_ttl_and_schedule_options_are_checked_locally() -> None:
    with pytest.raises(errors.InvalidOption):
        MsgSchedule(target="")
    with pytest.raises(errors.InvalidOption):
        MsgSchedule(target="x", every=0.5)
    with pytest.raises(errors.InvalidOption):
        MsgSchedule(target="x", at=datetime.now(UTC), every=5)
    with pytest.raises(errors.InvalidOption):
        MsgSchedule(target="x", every=5, time_zone="Europe/Paris")
    at = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert MsgSchedule(target="x", at=at).headers() == [
        ("Nats-Schedule", "@at 2030-01-02T03:04:05Z"),
        ("Nats-Schedule-Target", "x"),
    ]
    sched = MsgSchedule(target="x", cron="0 0 * * * *", time_zone="Europe/Paris", source="src", ttl=90)
    assert sched.headers() == [
        ("Nats-Schedule", "0 0 * * * *"),
        ("Nats-Schedule-Target", "x"),
        ("Nats-Schedule-Source", "src"),
        ("Nats-Schedule-TTL", "1m30s"),
        ("Nats-Schedule-Time-Zone", "Europe/Paris"),
    ]
    assert MsgSchedule(target="x", every=timedelta(minutes=5)).expression == "@every 5m0s"


async def test_expected_last_sequence_for_a_subject_filter(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.EXPECTED_LAST_SUBJECT_FILTER)
    await js.create_stream(StreamConfig(name="O", subjects=["o.>"]))
    await js.publish("o.a", b"1")
    second = await js.publish("o.b", b"2")
    # The last message on o.* is #2, whatever subject this publish goes to.
    ack = await js.publish("o.c", b"3", expect_last_sequence_per_subject=second.seq, expect_last_subject="o.*")
    assert ack.seq == 3
    with pytest.raises(errors.WrongLastSequence):
        await js.publish("o.d", b"4", expect_last_sequence_per_subject=second.seq, expect_last_subject="o.*")
    with pytest.raises(errors.InvalidOption):
        await js.publish("o.d", b"4", expect_last_subject="o.*")


async def test_pause_and_resume_consumer(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.CONSUMER_PAUSE)
    stream = await js.create_stream(StreamConfig(name="P", subjects=["p.>"]))
    consumer = await stream.create_consumer(ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))
    await js.publish("p.1", b"x")
    until = datetime.now(UTC) + timedelta(hours=1)
    paused = await js.pause_consumer("P", "C", until)
    assert paused.paused and paused.pause_remaining > 0
    assert abs(paused.pause_until.to_datetime() - until) < timedelta(seconds=1)
    info = await consumer.info()
    assert info.paused
    batch = await consumer.fetch(1, max_wait=0.5)
    assert [m async for m in batch] == []  # nothing is delivered while paused
    resumed = await stream.resume_consumer("C")
    assert not resumed.paused
    batch = await consumer.fetch(1, max_wait=5)
    assert [m.data async for m in batch] == [b"x"]
    with pytest.raises(errors.ConsumerNotFound):
        await stream.pause_consumer("missing", until)


async def test_unpin_and_reset_consumer(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.PRIORITY_GROUPS, Feature.CONSUMER_RESET)
    stream = await js.create_stream(StreamConfig(name="R", subjects=["r.>"]))
    for i in range(3):
        await js.publish(f"r.{i}", b"x")
    consumer = await stream.create_consumer(ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))
    batch = await consumer.fetch(3, max_wait=5)
    async for msg in batch:
        await msg.double_ack()
    assert (await consumer.info()).num_pending == 0
    result = await stream.reset_consumer("C", 2)
    assert result.reset_seq == 2 and result.info.num_pending == 2
    batch = await consumer.fetch(5, max_wait=1)
    assert [m.metadata().sequence.stream async for m in batch] == [2, 3]
    with pytest.raises(errors.ConsumerNotFound):
        await stream.reset_consumer("missing")
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        await stream.unpin_consumer("C", "nogroup")
    assert exc_info.value.err_code == 10160  # the consumer has no such priority group


async def test_schedules(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.SCHEDULES, Feature.SCHEDULE_CRON)
    await js.create_stream(
        StreamConfig(
            name="SCH",
            subjects=["sched.>", "out.>", "src.>"],
            allow_msg_schedules=True,
            allow_msg_ttl=True,
            allow_direct=True,
        )
    )
    stream = await js.stream("SCH")
    at = datetime.now(UTC) + timedelta(seconds=1)
    await js.publish("sched.once", b"hello", schedule=MsgSchedule(target="out.once", at=at))
    await js.publish("src.latest", b"sampled")
    await js.publish(
        "sched.every", b"", schedule=MsgSchedule(target="out.every", every=1, source="src.latest", ttl=60)
    )

    async def produced() -> bool:
        try:
            once = await stream.get_last_msg_for_subject("out.once")
            every = await stream.get_last_msg_for_subject("out.every")
        except errors.MsgNotFound:
            return False
        assert once.data == b"hello" and every.data == b"sampled"
        assert once.headers is not None and once.headers["Nats-Scheduler"] == "sched.once"
        assert every.headers is not None and every.headers["Nats-TTL"] == "1m0s"
        return True

    await wait_for(produced, timeout=20, what="the scheduled messages")
    with pytest.raises(errors.JetStreamAPIError):  # a cron expression the server cannot parse
        await js.publish("sched.bad", b"", schedule=MsgSchedule(target="out.bad", cron="not cron"))
