"""Version awareness: the client reads the server's JetStream API level and refuses, before sending,
a request that needs a higher one (tested against nats-server 2.15.1, 2.14.0 and 2.9.10)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from tests.support.targets import Target, make_target, old_target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    MsgSchedule,
    StreamConfig,
    StreamConsumerSource,
    StreamSource,
    errors,
    jetstream,
)


def _start(version: str, workdir: Path) -> Target:
    if version == "2.15.1":
        return make_target("nats-server", workdir)
    target = old_target(version, workdir)
    if target is None:
        pytest.skip(f"nats-server {version} is not installed")
    return target


@pytest.fixture(params=["2.9.10", "2.14.0", "2.15.1"])
def versioned(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    target = _start(request.param, tmp_path / "srv")
    yield target
    target.stop()


@pytest.fixture
async def vjs(versioned: Target) -> AsyncIterator[JetStream]:
    nc = await connect(versioned.url)
    yield jetstream(nc)
    await nc.close()


async def _fetch_group(js: JetStream) -> None:
    consumer = await js.consumer("S", "C")
    await consumer.fetch(1, max_wait=1, group="g")


async def _first(it: AsyncIterator[object]) -> None:
    async for _ in it:
        return


async def _atomic(js: JetStream) -> None:
    async with js.batch_publisher() as batch:
        await batch.add("s.a", b"x")


async def _fast(js: JetStream) -> None:
    async with js.fast_publisher() as pub:
        await pub.add("s.a", b"x")


EXPECTED_LEVEL = {"2.9.10": 0, "2.14.0": 4, "2.15.1": 5}


async def test_api_level_is_read_from_the_server(vjs: JetStream) -> None:
    version = str(vjs.nc.server_info["version"])
    assert await vjs.api_level() == EXPECTED_LEVEL[version]
    assert await vjs.api_level() == EXPECTED_LEVEL[version]  # cached or from INFO: same answer


async def test_features_are_refused_before_sending_on_an_old_server(vjs: JetStream) -> None:
    version = str(vjs.nc.server_info["version"])
    stream = await vjs.create_stream(StreamConfig(name="S", subjects=["s.>"]))
    await stream.create_consumer(ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))
    level = EXPECTED_LEVEL[version]
    calls = {
        Feature.MSG_TTL: lambda: vjs.publish("s.ttl", b"x", ttl=10),
        Feature.SCHEDULES: lambda: vjs.publish(
            "s.sched", b"x", schedule=MsgSchedule(target="s.t", at=datetime.now(UTC) + timedelta(hours=1))
        ),
        Feature.EXPECTED_LAST_SUBJECT_FILTER: lambda: vjs.publish(
            "s.a", b"x", expect_last_sequence_per_subject=0, expect_last_subject="s.*"
        ),
        Feature.CONSUMER_PAUSE: lambda: vjs.pause_consumer("S", "C", datetime.now(UTC) + timedelta(hours=1)),
        Feature.CONSUMER_RESET: lambda: vjs.reset_consumer("S", "C"),
        Feature.PRIORITY_GROUPS: lambda: _fetch_group(vjs),
        Feature.BATCH_GET: lambda: _first(stream.get_batch(5)),
        Feature.COUNTERS: lambda: vjs.counter("S"),
        Feature.ATOMIC_BATCH: lambda: _atomic(vjs),
        Feature.FAST_BATCH: lambda: _fast(vjs),
        Feature.ACK_FLOW_CONTROL: lambda: vjs.create_push_consumer(
            "S", ConsumerConfig(durable="F", deliver_subject="d.f", ack_policy=AckPolicy.FLOW_CONTROL)
        ),
        Feature.DURABLE_SOURCING: lambda: vjs.create_stream(
            StreamConfig(name="A", sources=[StreamSource(name="S", consumer=StreamConsumerSource(name="F", deliver_subject="d.f"))])
        ),
    }
    for feature, call in calls.items():
        if level >= feature.level:
            continue
        with pytest.raises(errors.FeatureNotSupported) as exc_info:
            await call()
        err = exc_info.value
        assert err.feature is feature and err.required_level == feature.level
        assert err.server_level == level and err.server_version == version
        assert f"needs nats-server {feature.version} or newer" in str(err)
        assert feature.description in str(err)
    # Nothing reached the stream: every refusal happened before the request.
    assert (await stream.info()).state.messages == 0


async def test_features_at_or_below_the_level_go_through(vjs: JetStream) -> None:
    version = str(vjs.nc.server_info["version"])
    if EXPECTED_LEVEL[version] < Feature.CONSUMER_RESET.level:
        pytest.skip(f"nats-server {version} has none of the gated features")
    stream = await vjs.create_stream(StreamConfig(name="S", subjects=["s.>"], allow_msg_ttl=True))
    ack = await vjs.publish("s.ttl", b"x", ttl=timedelta(minutes=5))
    assert ack.seq == 1
    await stream.create_consumer(ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))
    result = await stream.reset_consumer("C", 1)
    assert result.reset_seq == 1 and result.info.name == "C"
