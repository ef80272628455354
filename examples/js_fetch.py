"""Single fetches: fetch (a count), fetch_bytes (a size), fetch_no_wait (what is there now), next.

python examples/js_fetch.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import AckPolicy, ConsumerConfig, StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    for i in range(50):
        await js.publish("ORDERS.new", b"order %d" % i)
    c = await stream.create_or_update_consumer(ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT))

    # receive up to 10 messages from the stream (waits up to 30 s by default; max_wait changes that)
    msgs = await c.fetch(10, max_wait=5)
    async for msg in msgs:
        await msg.ack()
        print("fetch:", msg.data.decode())
    if msgs.error is not None:
        print("fetch error:", msgs.error)

    # receive up to 1024 B of data
    msgs = await c.fetch_bytes(1024, max_wait=5)
    async for msg in msgs:
        await msg.ack()
        print("fetch_bytes:", msg.data.decode())

    # fetch_no_wait only returns what is available right now
    msgs = await c.fetch_no_wait(100)
    count = 0
    async for msg in msgs:
        await msg.ack()
        count += 1
    print("fetch_no_wait got", count, "messages")

    # one message
    await js.publish("ORDERS.new", b"the next one")
    msg = await c.next(max_wait=5)
    await msg.ack()
    print("next:", msg.data.decode())

    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
