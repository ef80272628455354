"""Pull consumers on both targets: batches, ``no_wait``, ``expires``, ``max_bytes``, heartbeats,
the waiting queue, every status nats-server sends (with its exact headers), and nats-py fetch."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import nats
import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, speaks_210, told, wait_for
from tests.support.targets import Target

API = "$JS.API.CONSUMER."
MS = 1_000_000


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def pull(
    client: RawClient, consumer: str, body: Any, until_status: bool = True, quiet: float = 0.5
) -> list[Msg]:
    """Send one pull request and collect what comes back (until a terminal status or quiet)."""
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, body)
    out: list[Msg] = []
    try:
        while True:
            try:
                msg = await sub.next(quiet)
            except TimeoutError:
                return out
            out.append(msg)
            if until_status and msg.status and msg.status != "100":
                return out
    finally:
        sub.unsubscribe()


def status_line(msg: Msg) -> bytes:
    assert msg.hdr is not None
    return msg.hdr


async def test_batches_no_wait_and_expiry(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 5)
    await client.add_consumer("S", "C")
    msgs = await pull(client, "C", {"batch": 2, "no_wait": True})
    assert [m.data for m in msgs] == [b"m0", b"m1"]  # batch filled: no status after it
    assert msgs[0].subject == "s.a"
    assert msgs[0].reply.startswith("$JS.ACK.S.C.1.1.1.") and msgs[0].reply.endswith(".4")
    msgs = await pull(client, "C", {"batch": 10, "no_wait": True})
    assert [m.data for m in msgs[:3]] == [b"m2", b"m3", b"m4"]
    # ⟨2.11+⟩ the end of the stream ends a no_wait request with 404 (2.9/2.10: 408 + pending)
    assert status_line(msgs[3]) == b"NATS/1.0 404 No Messages\r\n\r\n"
    msgs = await pull(client, "C", {"batch": 1, "no_wait": True})
    assert status_line(msgs[0]) == b"NATS/1.0 404 No Messages\r\n\r\n"
    start = time.monotonic()
    msgs = await pull(client, "C", {"batch": 3, "expires": 300 * MS}, quiet=2)
    assert time.monotonic() - start >= 0.25
    assert (
        status_line(msgs[0])
        == b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\nNats-Pending-Bytes: 0\r\n\r\n"
    )
    # no_wait with expires and nothing to deliver waits for the expiry (nats.py relies on this)
    msgs = await pull(client, "C", {"batch": 1, "no_wait": True, "expires": 200 * MS}, quiet=2)
    assert msgs[0].status == "408"
    # An empty body asks for one message; a bare integer for that many.
    await client.publish_many("s.b", 3, "x")
    assert [m.data for m in await pull(client, "C", b"", until_status=False, quiet=0.3)] == [b"x0"]
    assert [m.data for m in await pull(client, "C", b"2", until_status=False, quiet=0.3)] == [b"x1", b"x2"]
    info = await client.consumer_info("S", "C")
    assert info["delivered"] == {
        "consumer_seq": 8,
        "stream_seq": 8,
        "last_active": info["delivered"]["last_active"],
    }
    assert (info["num_ack_pending"], info["num_pending"], info["num_waiting"]) == (8, 0, 0)


async def test_request_limits_and_bad_requests(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "C", max_batch=20, max_expires=2_000 * MS, max_bytes=10_000)
    cases = [
        ({"batch": 30}, b"NATS/1.0 409 Exceeded MaxRequestBatch of 20\r\n\r\n"),
        ({"batch": 3, "expires": 3_000 * MS}, b"NATS/1.0 409 Exceeded MaxRequestExpires of 2s\r\n\r\n"),
        ({"batch": 3, "max_bytes": 20_000}, b"NATS/1.0 409 Exceeded MaxRequestMaxBytes of 10000\r\n\r\n"),
        (
            {"batch": 3, "expires": 100 * MS, "idle_heartbeat": 60 * MS},
            b"NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n",
        ),
        ({"idle_heartbeat": 60 * MS}, b"NATS/1.0 400 Bad Request - heartbeat value too large\r\n\r\n"),
        (
            b"{bad",
            b"NATS/1.0 400 Bad Request - invalid character 'b' looking for beginning of object key string\r\n\r\n",
        ),
    ]
    for body, expected in cases:
        msgs = await pull(client, "C", body)
        assert status_line(msgs[0]) == expected, body
    await client.add_consumer("S", "P", deliver_subject="d.p")
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "P", inbox)
    assert status_line(await sub.next()) == b"NATS/1.0 409 Consumer is push based\r\n\r\n"


async def test_max_bytes(client: RawClient, server_kind: str) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 6)
    await client.add_consumer("S", "C")
    msgs = await pull(client, "C", {"batch": 5, "max_bytes": 5})
    assert status_line(msgs[0]) == (
        b"NATS/1.0 409 Message Size Exceeds MaxBytes\r\nNats-Pending-Messages: 5\r\nNats-Pending-Bytes: 5\r\n\r\n"
    )
    # Size = subject + ack reply + headers + payload: one message here is a little under 50 bytes.
    msgs = await pull(client, "C", {"batch": 5, "max_bytes": 100}, quiet=0.5)
    assert [m.data for m in msgs[:2]] == [b"m0", b"m1"]
    assert msgs[2].status == "409" and msgs[2].description == "Message Size Exceeds MaxBytes"
    assert msgs[2].header("Nats-Pending-Messages") == "3"
    msgs = await pull(client, "C", {"batch": 1, "max_bytes": 1000}, quiet=0.5)
    assert msgs[0].data == b"m2"
    if speaks_210(client, server_kind):
        # ⟨2.10+⟩ the batch is complete while bytes were left: say so.
        assert msgs[1].status == "409" and msgs[1].description == "Batch Completed"
        assert msgs[1].header("Nats-Pending-Messages") == "0"
        assert int(msgs[1].header("Nats-Pending-Bytes") or 0) > 900
    else:
        assert len(msgs) == 1


async def test_idle_heartbeats(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 2)
    await client.add_consumer("S", "C")
    msgs = await pull(client, "C", {"batch": 5, "expires": 900 * MS, "idle_heartbeat": 200 * MS}, quiet=2)
    assert [m.data for m in msgs[:2]] == [b"m0", b"m1"]
    beats = [m for m in msgs if m.status == "100"]
    assert 2 <= len(beats) <= 5
    assert (
        status_line(beats[0])
        == b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\nNats-Last-Stream: 2\r\n\r\n"
    )
    assert msgs[-1].status == "408" and msgs[-1].header("Nats-Pending-Messages") == "3"


async def test_waiting_queue(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "C", max_waiting=1)
    first, second = client.new_inbox(), client.new_inbox()
    s1, s2 = client.subscribe(first), client.subscribe(second)
    client.pull("S", "C", first, {"batch": 2, "expires": 3_000 * MS})
    await client.flush()
    client.pull("S", "C", second, {"batch": 1, "expires": 3_000 * MS})
    assert status_line(await s2.next()) == b"NATS/1.0 409 Exceeded MaxWaiting\r\n\r\n"
    assert (await client.consumer_info("S", "C"))["num_waiting"] == 1
    await client.publish_js("s.x", b"one")
    assert (await s1.next()).data == b"one"
    info = await client.consumer_info("S", "C")
    assert info["num_waiting"] == 1 and info["num_ack_pending"] == 1
    await client.api(API + "DELETE.S.C")
    assert status_line(await s1.next()) == b"NATS/1.0 409 Consumer Deleted\r\n\r\n"

    # A no_wait request while others already wait for more than is pending: 408 Requests Pending.
    await client.add_consumer("S", "D", max_ack_pending=1)
    waiting = client.new_inbox()
    sw = client.subscribe(waiting)
    client.pull("S", "D", waiting, {"batch": 5, "expires": 2_000 * MS})
    await client.flush()
    await client.publish_js("s.y", b"two")
    await client.publish_js("s.y", b"three")
    assert (await sw.next()).data == b"one"  # then max_ack_pending stalls it, wanting 4 more
    await told(client, "S", "D", 2)  # two and three
    msgs = await pull(client, "D", {"batch": 1, "no_wait": True}, quiet=0.5)
    assert status_line(msgs[0]) == b"NATS/1.0 408 Requests Pending\r\n\r\n"
    sw.unsubscribe()
    # A request whose requester went away is dropped silently.
    gone = client.new_inbox()
    client.pull("S", "D", gone, {"batch": 5, "expires": 5_000 * MS})
    await client.flush()
    await asyncio.sleep(0.05)  # time for it to be taken in, were it kept

    async def dropped() -> bool:
        return (await client.consumer_info("S", "D"))["num_waiting"] == 0

    await wait_for(dropped)


async def test_shutdown_tells_waiting_requests(server: Target, client: RawClient) -> None:
    """A graceful stop answers every waiting request with 409 Server Shutdown and what it still
    wanted (nats-server ``signalPullConsumers``): nats.py's ordered consumer re-pulls on it after
    reconnecting (its test_ordered_consumer_messages_server_restart hung without it)."""
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "C")
    await client.publish_many("s.a", 1)
    first, second = client.new_inbox(), client.new_inbox()
    s1, s2 = client.subscribe(first), client.subscribe(second)
    client.pull("S", "C", first, {"batch": 3, "expires": 60_000 * MS})
    assert (await s1.next()).data == b"m0"
    client.pull("S", "C", second, {"batch": 2, "expires": 60_000 * MS, "max_bytes": 5000})
    await client.flush()

    async def both_wait() -> bool:
        return (await client.consumer_info("S", "C"))["num_waiting"] == 2

    await wait_for(both_wait)
    server.stop()
    assert (
        status_line(await s1.next())
        == b"NATS/1.0 409 Server Shutdown\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 0\r\n\r\n"
    )
    assert (
        status_line(await s2.next())
        == b"NATS/1.0 409 Server Shutdown\r\nNats-Pending-Messages: 2\r\nNats-Pending-Bytes: 5000\r\n\r\n"
    )


async def test_round_robin_between_requests(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "C")
    a, b = client.new_inbox(), client.new_inbox()
    sa, sb = client.subscribe(a), client.subscribe(b)
    client.pull("S", "C", a, {"batch": 3, "expires": 2_000 * MS})
    client.pull("S", "C", b, {"batch": 3, "expires": 2_000 * MS})

    async def both_waiting() -> bool:
        return (await client.consumer_info("S", "C"))["num_waiting"] == 2

    await wait_for(both_waiting)
    for i in range(4):
        client.publish("s.x", f"{i}".encode())
    await client.flush()
    got_a = [m.data for m in await sa.collect(2)]
    got_b = [m.data for m in await sb.collect(2)]
    assert sorted(got_a + got_b) == [b"0", b"1", b"2", b"3"]


async def test_nats_py_fetch(server: Target) -> None:
    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(25):
            await js.publish("s.a", f"{i}".encode())
        psub = await js.pull_subscribe("s.>", durable="D")
        got: list[bytes] = []
        while len(got) < 25:
            msgs = await psub.fetch(10, timeout=2)
            for m in msgs:
                got.append(m.data)
                await m.ack()
        assert got == [f"{i}".encode() for i in range(25)]
        with pytest.raises(nats.errors.TimeoutError):
            await psub.fetch(1, timeout=0.5)
        info = await js.consumer_info("S", "D")
        assert info.delivered.stream_seq == 25 and info.num_pending == 0
        await js.publish("s.a", b"late")
        msgs = await psub.fetch(5, timeout=2)
        assert [m.data for m in msgs] == [b"late"]
        assert msgs[0].metadata.sequence.stream == 26 and msgs[0].metadata.num_delivered == 1
        await msgs[0].ack_sync()
        info = await js.consumer_info("S", "D")
        assert info.ack_floor.stream_seq == 26 and info.num_ack_pending == 0
    finally:
        await nc.close()


async def test_long_requests_get_every_message_in_order(client: RawClient) -> None:
    """Two requests on one inbox for more than a connection writes early at (tens of KiB): every
    message arrives once, in order, with its subject, headers and ack reply; both requests are
    used up and no status follows."""
    n = 1200
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    await client.add_stream("S", ["s.>"])
    for i in range(n):
        subject = "s.b" if i % 7 == 3 else "s.a"
        client.publish(subject, b"%d:" % i + b"x" * 150, hdr=hdr if i % 11 == 5 else None)
    await client.flush()
    await wait_for(lambda: _stored(client, n))
    await client.add_consumer("S", "C", durable_name="C", max_ack_pending=-1)
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "C", inbox, {"batch": n // 2, "expires": 30_000 * MS})
    client.pull("S", "C", inbox, {"batch": n // 2, "expires": 30_000 * MS})
    msgs = await sub.collect(n)
    for i, m in enumerate(msgs):
        assert (m.subject, m.data) == ("s.b" if i % 7 == 3 else "s.a", b"%d:" % i + b"x" * 150)
        assert m.hdr == (hdr if i % 11 == 5 else None)
        assert (m.num_delivered, m.stream_seq, m.consumer_seq, m.num_pending) == (1, i + 1, i + 1, n - i - 1)
    await sub.expect_none(0.3)
    info = await client.consumer_info("S", "C")
    assert (info["num_ack_pending"], info["num_pending"], info["num_waiting"]) == (n, 0, 0)


async def _stored(client: RawClient, n: int) -> bool:
    return bool((await client.stream_info("S"))["state"]["messages"] == n)
