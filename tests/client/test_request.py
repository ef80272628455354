"""Request/reply over the shared muxed inbox, no-responders and timeouts, on both targets."""

from __future__ import annotations

import asyncio
import builtins
import time

import pytest

from pyjetstream.client import Client, Msg, NatsError, NoRespondersError, TimeoutError


async def _echo_service(nc: Client, subject: str = "svc") -> None:
    async def handler(msg: Msg) -> None:
        await msg.respond(b"re:" + msg.data, headers=msg.headers)

    await nc.subscribe(subject, cb=handler)
    await nc.flush()


async def test_request_reply(nc: Client, nc2: Client) -> None:
    await _echo_service(nc2)
    reply = await nc.request("svc", b"ping", timeout=2)
    assert reply.data == b"re:ping"
    assert reply.subject.startswith("_INBOX.")
    assert reply.headers is None


async def test_request_with_headers(nc: Client, nc2: Client) -> None:
    await _echo_service(nc2)
    reply = await nc.request("svc", b"h", headers={"Trace": ["a", "b"]})
    assert reply.headers == {"Trace": "a"}


async def test_requests_share_one_inbox_subscription(nc: Client, nc2: Client) -> None:
    await _echo_service(nc2)
    for i in range(3):
        await nc.request("svc", b"%d" % i)
    inbox_subs = [s for s in nc._subs.values() if s.subject.startswith("_INBOX.")]
    assert len(inbox_subs) == 1 and inbox_subs[0].subject.endswith(".*")


async def test_concurrent_requests_are_matched_to_their_replies(nc: Client, nc2: Client) -> None:
    async def slow_echo(msg: Msg) -> None:
        # Reply in reverse arrival order-ish: later requests sleep less.
        await asyncio.sleep(0.001 * (200 - int(msg.data)) / 20)
        await msg.respond(msg.data)

    tasks: set[asyncio.Future[None]] = set()

    async def dispatch(msg: Msg) -> None:
        task = asyncio.ensure_future(slow_echo(msg))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    await nc2.subscribe("conc", cb=dispatch)
    await nc2.flush()
    replies = await asyncio.gather(*(nc.request("conc", b"%d" % i, timeout=5) for i in range(200)))
    assert [r.data for r in replies] == [b"%d" % i for i in range(200)]


async def test_no_responders(nc: Client) -> None:
    start = time.monotonic()
    with pytest.raises(NoRespondersError):
        await nc.request("nobody.home", b"", timeout=5)
    assert time.monotonic() - start < 2  # answered by the server, not a timeout
    assert nc.is_connected


async def test_request_timeout(nc: Client, nc2: Client) -> None:
    await nc2.subscribe("silent", cb=lambda m: None)  # listens, never answers
    await nc2.flush()
    with pytest.raises(TimeoutError) as info:
        await nc.request("silent", b"", timeout=0.1)
    assert isinstance(info.value, builtins.TimeoutError) and isinstance(info.value, NatsError)
    assert not nc._requests.pending  # nothing left behind
    # A late reply after the timeout is ignored; the next request still works.
    await _echo_service(nc2, "svc2")
    assert (await nc.request("svc2", b"x")).data == b"re:x"


async def test_request_from_inside_a_callback(nc: Client, nc2: Client) -> None:
    await _echo_service(nc2)
    results: list[bytes] = []

    async def relay(msg: Msg) -> None:
        reply = await nc.request("svc", msg.data)
        results.append(reply.data)

    await nc.subscribe("relay", cb=relay)
    await nc.flush()
    await nc2.publish("relay", b"hop")
    for _ in range(500):
        if results:
            break
        await asyncio.sleep(0.01)
    assert results == [b"re:hop"]


async def test_custom_inbox_prefix(server) -> None:  # type: ignore[no-untyped-def]
    from pyjetstream.client import connect

    nc = await connect(server.url, inbox_prefix="_MY.INBOX")
    try:
        assert nc.new_inbox().startswith("_MY.INBOX.")
        await _echo_service(nc)
        reply = await nc.request("svc", b"p")
        assert reply.subject.startswith("_MY.INBOX.")
    finally:
        await nc.close()
