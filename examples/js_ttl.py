"""Per-message TTL (nats-server 2.11+): messages that expire on their own, and KV keys with a TTL.

python examples/js_ttl.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys
from datetime import timedelta

from pyjetstream.api.api_levels import Feature
from pyjetstream.client import connect
from pyjetstream.client.jetstream import TTL_NEVER, KeyValueConfig, StreamConfig, errors, jetstream

FEATURES = (Feature.MSG_TTL, Feature.SUBJECT_DELETE_MARKERS)


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    # A stream must allow per-message TTLs.
    stream = await js.create_stream(StreamConfig(name="EVENTS", subjects=["events.>"], allow_msg_ttl=True))
    short = await js.publish("events.session", b"short-lived", ttl=1)  # seconds
    await js.publish("events.audit", b"kept for a day", ttl=timedelta(days=1))
    await js.publish("events.config", b"never expires", ttl=TTL_NEVER)
    print("published 3 messages with TTLs; the first one expires after 1s")
    while True:
        try:
            await stream.get_msg(short.seq)
        except errors.MsgNotFound:
            break
        await asyncio.sleep(0.2)
    print("messages left:", (await stream.info()).state.messages)

    # KV: a bucket with limit markers lets single keys expire (and watchers see them go).
    kv = await js.create_key_value(KeyValueConfig(bucket="SESSIONS", limit_marker_ttl=5))
    await kv.create("user-42", b"token", ttl=1)
    async with await kv.watch("user-42", updates_only=True) as watcher:
        async for entry in watcher:
            if entry is not None:  # None marks the end of the initial values
                print(f"key {entry.key!r}: {entry.operation.name} after its TTL")
                break

    await js.delete_key_value("SESSIONS")
    await js.delete_stream("EVENTS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
