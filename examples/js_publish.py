"""Publishing: publish / publish_msg with options and headers, and pipelined async publishing.

python examples/js_publish.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import Msg, connect
from pyjetstream.client.jetstream import StreamConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))

    # Publish a message on subject ORDERS.new (the subject has to belong to a stream)
    ack = await js.publish_msg(Msg("ORDERS.new", b"hello"))
    print(f"Published msg with sequence number {ack.seq} on stream {ack.stream!r}")
    # A helper accepting subject and data
    ack = await js.publish("ORDERS.new", b"hello")

    # All three publish the same message (the msg id deduplicates: only the first one is stored)
    ack1 = await js.publish_msg(
        Msg("ORDERS.new", b"hello", raw_headers=b"NATS/1.0\r\nNats-Msg-Id: id\r\n\r\n")
    )
    ack2 = await js.publish_msg(Msg("ORDERS.new", b"hello"), msg_id="id")
    ack3 = await js.publish("ORDERS.new", b"hello", msg_id="id")
    print("duplicates:", ack1.duplicate, ack2.duplicate, ack3.duplicate)

    # Optimistic concurrency: only store if the stream's last sequence is still what we saw
    ack = await js.publish("ORDERS.new", b"next", expect_last_sequence=ack1.seq)

    # Publish without waiting for the ack: a future per message, many in flight at once
    ack_f = await js.publish_msg_async(Msg("ORDERS.new", b"hello"))
    ack = await ack_f  # block and wait for the ack
    print(f"Published msg with sequence number {ack.seq} on stream {ack.stream!r}")
    futures = [await js.publish_async("ORDERS.new", b"bulk %d" % i) for i in range(1000)]
    await js.publish_async_complete()
    print("pending:", js.publish_async_pending(), "last seq:", futures[-1].result().seq)

    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
