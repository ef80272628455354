"""⟨2.14+⟩ ADR-60 through the Python client, on both targets: a flow-control push consumer on a
work-queue stream and a stream sourcing through it (``StreamSource.consumer``)."""

from __future__ import annotations

from tests.client_js.conftest import wait_for

from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    RetentionPolicy,
    StreamConfig,
    StreamConsumerSource,
    StreamSource,
)


async def test_source_through_a_flow_control_consumer(js: JetStream) -> None:
    origin = await js.create_stream(StreamConfig(name="JOBS", subjects=["jobs.>"], retention=RetentionPolicy.WORKQUEUE))
    consumer = await js.create_push_consumer(
        "JOBS", ConsumerConfig(durable="EXPORT", deliver_subject="export.jobs", ack_policy=AckPolicy.FLOW_CONTROL)
    )
    cfg = consumer.cached_info().config
    assert (cfg.ack_policy, cfg.flow_control, cfg.idle_heartbeat) == (AckPolicy.FLOW_CONTROL, True, 1.0)
    for i in range(5):
        await js.publish(f"jobs.{i}", f"job {i}".encode())
    source = StreamSource(name="JOBS", consumer=StreamConsumerSource(name="EXPORT", deliver_subject="export.jobs"))
    copy = await js.create_stream(StreamConfig(name="DONE", sources=[source]))
    assert copy.cached_info().config.sources[0].consumer == StreamConsumerSource(
        name="EXPORT", deliver_subject="export.jobs"
    )

    async def moved() -> bool:
        return (await copy.info()).state.messages == 5 and (await origin.info()).state.messages == 0

    await wait_for(moved, 60.0, "the jobs to move into DONE")
    msg = await copy.get_msg(1)
    assert msg.data == b"job 0"
