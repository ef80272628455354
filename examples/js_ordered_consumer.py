"""Ordered consumer: in-order delivery that survives the loss of its server-side consumer.

python examples/js_ordered_consumer.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import OrderedConsumerConfig, StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    for i in range(20):
        await js.publish("ORDERS.A" if i % 2 else "ORDERS.B", b"order %d" % i)

    # Filter results from the "ORDERS" stream by a specific subject
    cons = await js.ordered_consumer("ORDERS", OrderedConsumerConfig(filter_subjects=["ORDERS.A"]))
    it = await cons.messages()
    for _ in range(10):
        msg = await it.next()
        meta = msg.metadata()
        print(f"stream seq {meta.stream_seq}: {msg.data.decode()}")
        if meta.stream_seq == 10:
            # The consumer goes away: the ordered consumer recreates it and carries on after seq 10.
            await js.delete_consumer("ORDERS", cons.name)
    it.stop()

    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
