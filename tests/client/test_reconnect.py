"""Reconnect: subscriptions are restored, buffered publishes and pending flushes go out. Both targets."""

from __future__ import annotations

import asyncio

import pytest
from tests.client.conftest import wait_until
from tests.support.targets import Target

from pyjetstream.client import (
    ConnectionClosedError,
    NoServersError,
    OutboundBufferLimitError,
    connect,
)


async def test_reconnect_restores_subscriptions_and_delivers_buffered_publishes(server: Target) -> None:
    events: list[str] = []
    nc = await connect(
        server.url,
        reconnect_time_wait=0.05,
        max_reconnect_attempts=-1,  # a loaded machine can take longer than 60 x 0.05 s to restart
        disconnected_cb=lambda: events.append("disconnected"),
        reconnected_cb=lambda: events.append("reconnected"),
    )
    try:
        sub = await nc.subscribe("re.buffered")
        called: list[bytes] = []
        await nc.subscribe("re.cb", cb=lambda m: called.append(m.data))
        limited = await nc.subscribe("re.limited", max_msgs=3)
        await nc.publish("re.limited", b"before")
        assert (await limited.next_msg()).data == b"before"

        await asyncio.to_thread(server.stop)
        await wait_until(lambda: nc.is_reconnecting, what="client notices the loss")
        assert not nc.is_connected
        for i in range(100):
            await nc.publish("re.buffered", b"%d" % i)
        # A flush issued while disconnected completes after the replay.
        pending_flush = asyncio.ensure_future(nc.flush(timeout=30))
        await asyncio.to_thread(server.start)

        await pending_flush
        assert nc.is_connected and events == ["disconnected", "reconnected"]
        assert nc.stats["reconnects"] == 1
        # The SUB was replayed before the buffered publishes, so the subscriber got every one.
        assert [(await sub.next_msg(timeout=5)).data for _ in range(100)] == [b"%d" % i for i in range(100)]

        other = await connect(server.url)
        try:
            await other.publish("re.cb", b"after")
            for i in range(5):
                await other.publish("re.limited", b"%d" % i)
            await other.flush()
        finally:
            await other.close()
        await wait_until(lambda: called == [b"after"], what="callback subscription restored")
        # The auto-unsubscribe was replayed with the remaining count (3 - 1 = 2).
        assert [m.data async for m in limited.messages] == [b"0", b"1"]
    finally:
        await nc.close()


async def test_requests_work_after_reconnect(server: Target) -> None:
    # Unlimited attempts: a loaded machine can take longer than 60 x 0.05 s to restart the server.
    nc = await connect(server.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    responder = await connect(server.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    try:
        await responder.subscribe("svc", cb=lambda m: asyncio.ensure_future(m.respond(b"pong")))
        await responder.flush()
        assert (await nc.request("svc", b"")).data == b"pong"
        await asyncio.to_thread(server.restart)
        await wait_until(lambda: nc.is_connected and responder.is_connected, what="both reconnected")
        await responder.flush()
        assert (await nc.request("svc", b"", timeout=5)).data == b"pong"
    finally:
        await nc.close()
        await responder.close()


async def test_reconnect_buffer_is_bounded(server: Target) -> None:
    nc = await connect(server.url, reconnect_time_wait=5, pending_size=10_000)
    try:
        await asyncio.to_thread(server.stop)
        await wait_until(lambda: nc.is_reconnecting)
        with pytest.raises(OutboundBufferLimitError):
            for _ in range(1000):
                await nc.publish("full", b"x" * 100)
        assert nc.pending_data_size <= 10_000
    finally:
        await nc.close()


async def test_gives_up_after_max_reconnect_attempts(server: Target) -> None:
    errors: list[Exception] = []
    closed = asyncio.Event()
    nc = await connect(
        server.url,
        reconnect_time_wait=0.02,
        max_reconnect_attempts=3,
        error_cb=errors.append,
        closed_cb=closed.set,
    )
    await asyncio.to_thread(server.stop)
    await asyncio.wait_for(closed.wait(), 10)
    assert nc.is_closed
    assert any(isinstance(e, NoServersError) for e in errors)
    with pytest.raises(ConnectionClosedError):
        await nc.publish("x", b"")


async def test_no_reconnect_closes(server: Target) -> None:
    closed = asyncio.Event()
    nc = await connect(server.url, reconnect=False, closed_cb=closed.set)
    await asyncio.to_thread(server.stop)
    await asyncio.wait_for(closed.wait(), 10)
    assert nc.is_closed


async def test_close_while_reconnecting(server: Target) -> None:
    nc = await connect(server.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
    sub = await nc.subscribe("x")
    await asyncio.to_thread(server.stop)
    await wait_until(lambda: nc.is_reconnecting)
    waiting = asyncio.ensure_future(nc.flush(timeout=30))
    await nc.close()
    assert nc.is_closed
    with pytest.raises(ConnectionClosedError):
        await waiting
    assert [m async for m in sub.messages] == []


async def test_initial_connect_failure(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(NoServersError):
        await connect(f"nats://127.0.0.1:{port}", connect_timeout=1)
