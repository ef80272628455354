"""A new consumer's start survives ``kill -9`` right after its create is answered (issue 24 dim 2
with issue 27's guarantees): nats-server writes it at once (``SetStarting``); the embedded server
writes a deliver-new (last, by time) start at once too, and leaves a deliver-all (or
from-a-sequence) consumer without a state file until its first change — a restart selects that
start again. Both targets: the counts must be the same."""

from __future__ import annotations

import nats
from tests.support.targets import Target

TIMEOUT = 20.0


async def test_new_consumers_start_where_they_did_after_kill_9(server: Target) -> None:
    nc = await nats.connect(server.url)
    js = nc.jetstream(timeout=TIMEOUT)
    await js.add_stream(name="S", subjects=["s.>"], storage="file")
    for i in range(5):
        await js.publish(f"s.{i}", b"x")
    await js.add_consumer("S", durable_name="ALL", ack_policy="explicit")
    await js.add_consumer("S", durable_name="NEW", ack_policy="explicit", deliver_policy="new")
    await js.add_consumer("S", durable_name="SEQ", ack_policy="explicit", deliver_policy="by_start_sequence", opt_start_seq=3)
    await js.add_consumer("S", durable_name="LAST", ack_policy="explicit", deliver_policy="last")
    for i in range(2):  # (a start selected again after the restart would skip these two)
        await js.publish(f"s.{i}", b"y")
    server.kill()
    await nc.close()
    server.start()
    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream(timeout=TIMEOUT)
        pending = {name: (await js.consumer_info("S", name)).num_pending for name in ("ALL", "NEW", "SEQ", "LAST")}
        assert pending == {"ALL": 7, "NEW": 2, "SEQ": 5, "LAST": 3}, pending
    finally:
        await nc.close()
