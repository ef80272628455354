"""Interoperability with nats-py as the peer: messages, headers and request/reply both ways."""

from __future__ import annotations

from collections.abc import AsyncIterator

import nats
import pytest
from nats.aio.client import Client as NatsPyClient
from tests.support.targets import Target

from pyjetstream.client import Client, Msg


@pytest.fixture
async def peer(server: Target) -> AsyncIterator[NatsPyClient]:
    client = await nats.connect(server.url)
    yield client
    await client.close()


async def test_nats_py_publishes_to_us(nc: Client, peer: NatsPyClient) -> None:
    sub = await nc.subscribe("interop.in")
    await nc.flush()
    await peer.publish("interop.in", b"plain")
    await peer.publish("interop.in", b"with headers", headers={"A": "1", "B": "two words"})
    await peer.flush()
    first = await sub.next_msg()
    second = await sub.next_msg()
    assert first.data == b"plain" and first.headers is None
    assert second.data == b"with headers" and second.headers == {"A": "1", "B": "two words"}


async def _nats_py_subscribe(peer: NatsPyClient, subject: str, nc: Client, cb=None):  # type: ignore[no-untyped-def]
    """nats-py's flush() can return before its SUB reached the server: probe until it is live."""
    sub = await peer.subscribe(subject, cb=cb)
    probe = await peer.subscribe(subject + ".probe")
    await peer.flush()
    while True:
        await nc.publish(subject + ".probe", b"")
        try:
            await probe.next_msg(timeout=0.05)
            break
        except nats.errors.TimeoutError:
            continue
    await probe.unsubscribe()
    return sub


async def test_we_publish_to_nats_py(nc: Client, peer: NatsPyClient) -> None:
    sub = await _nats_py_subscribe(peer, "interop.out", nc)
    await nc.publish("interop.out", b"hello", headers={"X": "y"}, reply="interop.reply")
    msg = await sub.next_msg(timeout=2)
    assert msg.data == b"hello" and msg.headers == {"X": "y"} and msg.reply == "interop.reply"


async def test_we_request_nats_py_responds(nc: Client, peer: NatsPyClient) -> None:
    async def handler(msg):  # type: ignore[no-untyped-def]
        await msg.respond(msg.data.upper())

    await _nats_py_subscribe(peer, "interop.svc", nc, cb=handler)
    assert (await nc.request("interop.svc", b"shout")).data == b"SHOUT"


async def test_nats_py_requests_we_respond(nc: Client, peer: NatsPyClient) -> None:
    async def handler(msg: Msg) -> None:
        await msg.respond(msg.data[::-1], headers={"Served-By": "pyjetstream"})

    await nc.subscribe("interop.rev", cb=handler)
    await nc.flush()
    reply = await peer.request("interop.rev", b"abc", timeout=2)
    assert reply.data == b"cba" and reply.headers == {"Served-By": "pyjetstream"}
