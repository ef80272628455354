"""Batch publishing (nats-server 2.12+ / 2.14+): an atomic batch (all or nothing) and a fast-ingest
batch (flow-controlled by the server, the fastest way to load a stream).

python examples/js_batch_publish.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream

FEATURES = (Feature.ATOMIC_BATCH, Feature.FAST_BATCH)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    orders = await js.create_stream(StreamConfig(name="ORDERS", subjects=["orders.>"], allow_atomic=True))

    # Atomic: the three messages are stored together, or not at all.
    async with js.batch_publisher() as batch:
        await batch.add("orders.42.created", b'{"total": 10}')
        await batch.add("orders.42.paid", b'{"amount": 10}')
        ack = await batch.commit("orders.42.shipped", b'{"carrier": "post"}')
    print(f"atomic batch {ack.batch}: {ack.count} messages, last sequence {ack.seq}")

    # Leaving the block without a commit (here: an error) discards the batch: nothing is stored.
    try:
        async with js.batch_publisher() as batch:
            await batch.add("orders.43.created", b"{}")
            raise ValueError("payment failed")
    except ValueError:
        pass
    print("messages in ORDERS:", (await orders.info()).state.messages)

    # Fast ingest: many messages, the server says how often it acknowledges.
    metrics = await js.create_stream(StreamConfig(name="METRICS", subjects=["metrics.>"], allow_batched=True))
    async with js.fast_publisher() as pub:
        for i in range(10_000):
            await pub.add(f"metrics.host{i % 10}", b"%d" % i)
    assert pub.ack is not None
    print(f"fast batch stored {pub.ack.count} messages; the stream has {(await metrics.info()).state.messages}")

    await js.delete_stream("ORDERS")
    await js.delete_stream("METRICS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
