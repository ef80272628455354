"""Streams: create / update / get / delete, listing, purge variants, getting and deleting messages, info.

python examples/js_streams.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)

    # create a stream (this is an idempotent operation)
    s = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    # update a stream
    s = await js.update_stream(
        StreamConfig(name="ORDERS", subjects=["ORDERS.*"], description="updated stream")
    )
    # get stream handle
    s = await js.stream("ORDERS")

    # list streams and stream names
    async for info in js.list_streams():
        print("stream:", info.config.name)
    async for name in js.stream_names():
        print("stream name:", name)

    for i in range(200):
        await js.publish("ORDERS.new" if i % 2 else "ORDERS.old", b"order %d" % i)

    # get message from stream with sequence number == 100
    msg = await s.get_msg(100)
    print("seq 100:", msg.subject, msg.data)
    # get last message from "ORDERS.new" subject
    msg = await s.get_last_msg_for_subject("ORDERS.new")
    print("last on ORDERS.new:", msg.sequence, msg.data)
    # delete a message with sequence number == 100
    await s.delete_msg(100)

    # fetch latest stream info from the server, and the cached copy
    info = await s.info()
    print(info.config.name, info.state.messages, "messages")
    print("cached:", s.cached_info().config.description)

    # remove messages that are stored on a specific subject
    print("purged", await s.purge(subject="ORDERS.old"), "on ORDERS.old")
    # remove all messages up to specified sequence number
    print("purged", await s.purge(sequence=100), "below 100")
    # remove messages, but keep 10 newest
    print("purged", await s.purge(keep=10), "keeping 10")
    # remove all messages from a stream
    print("purged", await s.purge(), "in all")

    # delete a stream
    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
