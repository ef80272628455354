"""Priority groups (nats-server 2.11+): overflow pulls that only help when the backlog is large, and a
pinned client that gets every message until it goes away.

python examples/js_priority_groups.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    PriorityPolicy,
    StreamConfig,
    jetstream,
)

FEATURES = (Feature.PRIORITY_GROUPS,)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(StreamConfig(name="JOBS", subjects=["jobs.>"]))
    for i in range(10):
        await js.publish(f"jobs.{i}", f"job {i}".encode())

    # Overflow: a helper pulls only while more than `min_pending` messages wait.
    overflow = await js.create_consumer(
        "JOBS",
        ConsumerConfig(
            durable="WORKERS",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["jobs"],
            priority_policy=PriorityPolicy.OVERFLOW,
        ),
    )
    helped = await (await overflow.fetch(5, max_wait=1, group="jobs", min_pending=8)).collect()
    print(f"overflow helper took {len(helped)} jobs while the backlog was large")
    for msg in helped:
        await msg.ack()
    idle = await (await overflow.fetch(5, max_wait=0.5, group="jobs", min_pending=8)).collect()
    print(f"...and {len(idle)} once it was small")

    # Pinned client: one puller owns the group; another gets nothing until the pin is released.
    pinned = await js.create_consumer(
        "JOBS",
        ConsumerConfig(
            durable="SINGLE",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["leader"],
            priority_policy=PriorityPolicy.PINNED_CLIENT,
            priority_timeout=timedelta(seconds=30),
        ),
    )
    standby = await js.consumer("JOBS", "SINGLE")
    first = await pinned.next(max_wait=5, group="leader")
    await first.ack()
    print(f"pinned with id {pinned.pin_id}: got {first.data!r}")
    nothing = await (await standby.fetch(1, max_wait=0.5, group="leader")).collect()
    print(f"standby got {len(nothing)} messages while the pin holds")
    await js.unpin_consumer("JOBS", "SINGLE", "leader")
    took_over = await standby.next(max_wait=5, group="leader")
    print(f"after unpin the standby took over (pin {standby.pin_id}): {took_over.data!r}")

    await js.delete_stream("JOBS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
