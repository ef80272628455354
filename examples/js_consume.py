"""Continuous receiving: consume (handler + options + error handler), messages (iterator), work queue.

python examples/js_consume.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumeContext,
    ConsumerConfig,
    JetStreamMsg,
    StreamConfig,
    jetstream,
)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    for i in range(30):
        await js.publish("ORDERS.A" if i % 3 else "ORDERS.B", b"order %d" % i)

    # receive messages from ORDERS.A subject only
    cons = await js.create_or_update_consumer(
        "ORDERS", ConsumerConfig(durable="A", ack_policy=AckPolicy.EXPLICIT, filter_subject="ORDERS.A")
    )
    received = 0
    twenty = asyncio.Event()

    async def handler(msg: JetStreamMsg) -> None:
        nonlocal received
        received += 1
        print("Received a JetStream message:", msg.data.decode())
        await msg.ack()
        if received == 20:
            twenty.set()

    def on_error(ctx: ConsumeContext, err: Exception) -> None:
        print("consume error:", err)

    cons_ctx = await cons.consume(
        handler,
        max_messages=10,  # up to 10 messages are buffered
        threshold_messages=5,  # re-pull when fewer than 5 are pending
        expiry=10,  # each pull request lives 10 s
        heartbeat=2,  # with heartbeats every 2 s (2 missed ones are reported)
        error_handler=on_error,
    )
    await twenty.wait()
    cons_ctx.stop()

    # Iterate over messages, buffering at most 10 messages
    b = await js.create_or_update_consumer("ORDERS", ConsumerConfig(durable="B", filter_subject="ORDERS.B"))
    it = await b.messages(max_messages=10)
    for _ in range(10):
        msg = await it.next()
        print("Received via iterator:", msg.data.decode())
        await msg.ack()
    it.stop()

    # A work queue: messages fetched one by one by 5 workers (no pre-buffering to avoid redeliveries)
    work = await js.create_or_update_consumer(
        "ORDERS", ConsumerConfig(durable="WORK", ack_policy=AckPolicy.EXPLICIT)
    )
    it = await work.messages(max_messages=1)
    done = 0

    async def worker(n: int) -> None:
        nonlocal done
        while done < 30:
            try:
                msg = await it.next(timeout=0.5)
            except TimeoutError:
                continue
            print(f"worker {n} processing:", msg.data.decode())
            await msg.ack()
            done += 1

    await asyncio.gather(*(worker(n) for n in range(5)))
    it.stop()

    await js.delete_stream("ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
