"""Key-value store: a bucket, put/get/update/delete, keys, history and a watcher.

python examples/js_kv.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import connect
from pyjetstream.client.jetstream import KeyExists, KeyNotFound, KeyValueConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    kv = await js.create_key_value(KeyValueConfig(bucket="profiles", history=5))

    watcher = await kv.watch("sue.*")
    rev = await kv.put("sue.color", b"blue")
    print("revision", rev, "value", (await kv.get("sue.color")).value)
    rev = await kv.update("sue.color", b"green", rev)
    try:
        await kv.update("sue.color", b"red", rev - 1)  # stale revision
    except KeyExists:
        print("update refused: somebody changed it first")
    await kv.create("sue.food", b"pizza")
    print("keys:", await kv.keys())
    print("history:", [e.value for e in await kv.history("sue.color")])
    await kv.delete("sue.food")
    try:
        await kv.get("sue.food")
    except KeyNotFound:
        print("sue.food is gone")

    # The watcher saw everything, after a None marking the end of the (empty) initial values
    async for entry in watcher:
        if entry is None:
            print("-- initial values done --")
            continue
        print("watch:", entry.key, entry.operation.value, entry.value)
        if entry.key == "sue.food" and entry.operation.value == "DEL":
            break
    watcher.stop()
    print("status:", (await kv.status()).values, "values")

    await js.delete_key_value("profiles")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
