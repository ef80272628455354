"""Core NATS: publish/subscribe, wildcards, queue groups, headers, request/reply, no responders, drain.

python examples/js_core_nats.py [nats://127.0.0.1:4222]
"""

from __future__ import annotations

import asyncio
import sys

from pyjetstream.client import Msg, NoRespondersError, connect


async def main(url: str = "nats://127.0.0.1:4222") -> None:
    nc = await connect(url, name="core-example")

    # Subscribe with a wildcard, then publish (flush: the server has the SUB before the PUB)
    sub = await nc.subscribe("greet.*")
    await nc.flush()
    await nc.publish("greet.joe", b"hello", headers={"X-Trace": "42"})
    msg = await sub.next_msg(timeout=5)
    print(f"Received {msg.data!r} on {msg.subject} with headers {msg.headers}")

    # A queue group: each message goes to one member of the group
    counts = {"a": 0, "b": 0}

    def member(name: str):  # type: ignore[no-untyped-def]
        async def handle(m: Msg) -> None:
            counts[name] += 1

        return handle

    await nc.subscribe("work", queue="workers", cb=member("a"))
    await nc.subscribe("work", queue="workers", cb=member("b"))
    await nc.flush()
    for i in range(20):
        await nc.publish("work", b"%d" % i)
    await nc.flush()
    for _ in range(500):
        if sum(counts.values()) == 20:
            break
        await asyncio.sleep(0.01)
    print(f"Queue group shared 20 messages: {counts}")

    # Request/reply: a service answers on the request's reply subject
    async def service(m: Msg) -> None:
        await m.respond(m.data.upper())

    await nc.subscribe("svc.upper", cb=service)
    await nc.flush()
    reply = await nc.request("svc.upper", b"shout", timeout=5)
    print(f"Request/reply answered {reply.data!r}")

    # Nobody listening: the server says so at once (no timeout to wait for)
    try:
        await nc.request("svc.nobody", b"?", timeout=5)
    except NoRespondersError:
        print("No responders for svc.nobody")

    # Drain: finish what is in flight, then close
    await nc.drain()
    print(f"Drained, connection closed: {nc.is_closed}")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
