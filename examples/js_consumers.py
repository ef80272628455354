"""Consumers: create (durable and ephemeral), create-or-update, update, get, delete, info, listing.

python examples/js_consumers.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import AckPolicy, ConsumerConfig, StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))

    # on the JetStream interface: create a consumer (an error if it exists with a different config)
    cons = await js.create_consumer("ORDERS", ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT))
    # create an ephemeral pull consumer by not providing a durable name
    ephemeral = await js.create_consumer("ORDERS", ConsumerConfig(ack_policy=AckPolicy.EXPLICIT))
    print("ephemeral consumer:", ephemeral.name)
    # create or update
    cons2 = await js.create_or_update_consumer("ORDERS", ConsumerConfig(name="bar"))
    print("created", cons2.name)
    # update an existing consumer
    updated = await js.update_consumer(
        "ORDERS", ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT, description="updated consumer")
    )
    print("description:", updated.cached_info().config.description)
    # get consumer handle
    cons = await js.consumer("ORDERS", "foo")
    # delete a consumer
    await js.delete_consumer("ORDERS", "foo")

    # on the Stream interface
    stream = await js.stream("ORDERS")
    cons = await stream.create_or_update_consumer(
        ConsumerConfig(durable="foo", ack_policy=AckPolicy.EXPLICIT)
    )
    cons = await stream.consumer("foo")

    # fetch latest consumer info from the server, and the cached copy
    info = await cons.info()
    print(info.config.durable_name, info.num_pending)
    print("cached:", cons.cached_info().config.durable_name)

    # list consumers and consumer names
    async for ci in stream.list_consumers():
        print("consumer:", ci.name)
    async for name in stream.consumer_names():
        print("consumer name:", name)

    await stream.delete_consumer("foo")
    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
