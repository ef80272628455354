"""Counters (nats-server 2.12+): a stream whose subjects hold arbitrary-precision totals.

python examples/js_counters.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream

FEATURES = (Feature.COUNTERS, Feature.BATCH_GET)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(
        StreamConfig(name="PAGEVIEWS", subjects=["views.>"], allow_msg_counter=True, allow_direct=True)
    )
    views = await js.counter("PAGEVIEWS")
    for page in ("home", "home", "pricing", "home"):
        total = await views.add(f"views.{page}", 1)
        print(f"views.{page} -> {total}")
    await views.add("views.pricing", -1)  # counters go down too
    print("home:", await views.load("views.home"))
    entry = await views.get("views.pricing")
    print(f"pricing: {entry.value} (last change {entry.increment:+d})")
    async for entry in views.get_many(["views.>"]):
        print(f"  {entry.subject} = {entry.value}")

    await js.delete_stream("PAGEVIEWS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
