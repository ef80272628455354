"""The blocking facade: the same API without asyncio (scripts, Spark executors).

python examples/js_sync.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import sys

from pyjetstream.client.jetstream import AckPolicy, ConsumerConfig, StreamConfig, sync


def main(url: str = "nats://127.0.0.1:4222") -> None:
    with sync.connect(url) as nc:
        js = nc.jetstream()
        stream = js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        for i in range(10):
            js.publish("ORDERS.new", b"order %d" % i)
        consumer = stream.create_or_update_consumer(
            ConsumerConfig(durable="CONS", ack_policy=AckPolicy.EXPLICIT)
        )
        for msg in consumer.fetch(10, max_wait=5):
            print("fetched:", msg.data.decode())
            msg.ack()
        print("pending now:", consumer.info().num_pending)
        js.delete_stream("ORDERS")


if __name__ == "__main__":
    main(*sys.argv[1:2])
