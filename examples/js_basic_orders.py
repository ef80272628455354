"""The jetstream README walk-through: create ORDERS, publish 100, durable consumer, fetch, consume, messages.

python examples/js_basic_orders.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import AckPolicy, ConsumerConfig, JetStreamMsg, StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    # Create a JetStream management interface
    js = jetstream(nc)

    # Create a stream
    s = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))

    # Publish some messages
    for i in range(100):
        await js.publish("ORDERS.new", f"hello message {i}".encode())
        print(f"Published hello message {i}")

    # Create durable consumer
    c = await s.create_or_update_consumer(ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT))

    # Get 10 messages from the consumer
    message_counter = 0
    msgs = await c.fetch(10)
    async for msg in msgs:
        await msg.ack()
        print(f"Received a JetStream message via fetch: {msg.data.decode()}")
        message_counter += 1
    print(f"received {message_counter} messages")
    if msgs.error is not None:
        print("Error during fetch():", msgs.error)

    # Receive messages continuously in a callback
    all_done = asyncio.Event()

    async def handler(msg: JetStreamMsg) -> None:
        nonlocal message_counter
        await msg.ack()
        print(f"Received a JetStream message via callback: {msg.data.decode()}")
        message_counter += 1
        if message_counter == 100:
            all_done.set()

    cons = await c.consume(handler)

    # Block until all 100 published messages have been processed
    await all_done.wait()
    cons.stop()

    # Iterate over messages continuously (10 more)
    for i in range(10):
        await js.publish("ORDERS.new", f"hello again {i}".encode())
    it = await c.messages()
    for _ in range(10):
        msg = await it.next()
        await msg.ack()
        print(f"Received a JetStream message via iterator: {msg.data.decode()}")
        message_counter += 1
    it.stop()
    print(f"processed {message_counter} messages")

    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
