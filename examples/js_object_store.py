"""Object store: put from bytes and a stream, read back (digest checked), list, link, delete.

python examples/js_object_store.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator

from pyjetstream.client import connect
from pyjetstream.client.jetstream import ObjectMeta, ObjectStoreConfig, jetstream


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url)
    js = jetstream(nc)
    store = await js.create_object_store(ObjectStoreConfig(bucket="assets"))

    info = await store.put(ObjectMeta(name="logo.bin", description="a logo"), b"\x89PNG" + bytes(500_000))
    print(f"stored {info.name}: {info.size} bytes in {info.chunks} chunks, {info.digest}")

    async def lines() -> AsyncIterator[bytes]:
        for i in range(10_000):
            yield b"line %d\n" % i

    await store.put("report.txt", lines())
    result = await store.get("report.txt")
    size = 0
    async for chunk in result:  # streamed chunk by chunk, digest verified at the end
        size += len(chunk)
    print("read report.txt:", size, "bytes")

    await store.add_link("latest-report", await store.get_info("report.txt"))
    print("via link:", len(await store.get_bytes("latest-report")), "bytes")
    print("objects:", [i.name for i in await store.list()])
    await store.delete("logo.bin")
    print("after delete:", [i.name for i in await store.list()])

    await js.delete_object_store("assets")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:2]))
