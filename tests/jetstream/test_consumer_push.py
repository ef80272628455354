"""Push consumers on both targets: delivery with nats-py subscriptions, when a consumer counts as
bound (exact-subject interest, queue groups), idle heartbeats, flow control round trips, the rate
limit, redelivery to a push subscriber and nats-py's ordered consumer."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import nats
import pytest
from nats.js.api import ConsumerConfig
from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import Target

API = "$JS.API.CONSUMER."
MS = 1_000_000


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def bound(client: RawClient, name: str) -> bool:
    return bool((await client.consumer_info("S", name)).get("push_bound", False))


async def test_bound_only_with_exact_interest(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 3)
    await client.add_consumer("S", "P", deliver_subject="d.p", ack_policy="none")
    assert not await bound(client, "P")
    wildcard = client.subscribe("d.*")  # wildcards do not bind a push consumer
    await client.flush()
    assert not await bound(client, "P")
    await wildcard.expect_none(0.2)
    queue = client.subscribe("d.p", queue="G")  # nor does a queue sub without a deliver_group
    await client.flush()
    assert not await bound(client, "P")
    exact = client.subscribe("d.p")
    await client.flush()
    await wait_for(lambda: bound(client, "P"))
    msgs = await exact.collect(3)
    assert [(m.subject, m.data) for m in msgs] == [("s.a", b"m0"), ("s.a", b"m1"), ("s.a", b"m2")]
    assert msgs[0].reply.startswith("$JS.ACK.S.P.1.1.1.")
    assert len(await wildcard.collect(3)) == 3  # it still hears what is delivered
    for sub in (exact, wildcard, queue):
        sub.unsubscribe()
    await client.flush()
    await wait_for(lambda: _not(bound(client, "P")))

    await client.add_consumer("S", "G", deliver_subject="d.g", deliver_group="G", ack_policy="none")
    plain = client.subscribe("d.g")
    other = client.subscribe("d.g", queue="H")
    await client.flush()
    assert not await bound(client, "G")
    member_a = client.subscribe("d.g", queue="G")
    member_b = client.subscribe("d.g", queue="G")
    await client.flush()
    await wait_for(lambda: bound(client, "G"))
    await client.publish_many("s.b", 6, "x")

    async def delivered() -> bool:  # each delivery reaches plain, other and one member together
        return plain.queue.qsize() >= 9 and other.queue.qsize() >= 9

    await wait_for(delivered)
    await client.flush()
    to_group = member_a.drain() + member_b.drain()
    assert sorted(m.data for m in to_group if m.subject == "s.b") == [f"x{i}".encode() for i in range(6)]
    assert len(plain.drain()) == 9 and len(other.drain()) == 9


async def _not(value: object) -> bool:
    return not await value  # type: ignore[misc]


async def test_durable_rebinds_to_new_deliver_subject(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 3)
    old = client.subscribe("d.old")
    await client.add_consumer("S", None, durable_name="P", deliver_subject="d.old", ack_wait=30_000 * MS)
    assert [m.data for m in await old.collect(3)] == [b"m0", b"m1", b"m2"]
    old.unsubscribe()
    new = client.subscribe("d.new")
    await client.flush()
    resp = await client.add_consumer(
        "S", None, durable_name="P", deliver_subject="d.new", ack_wait=30_000 * MS
    )
    assert resp["config"]["deliver_subject"] == "d.new"
    # What was pending goes out again at once to the new subject, as redeliveries.
    again = await new.collect(3, timeout=2)
    assert [(m.data, m.num_delivered) for m in again] == [(b"m0", 2), (b"m1", 2), (b"m2", 2)]


async def test_deliveries_frame_headers_subjects_and_replies(client: RawClient) -> None:
    """A run of stored messages (several subjects, some with headers) framed onto a push and a
    pull receiver: every frame names its stream subject, its headers and its ack reply."""
    await client.add_stream("S", ["s.>"])
    hdr = b"NATS/1.0\r\nX-K: v\r\n\r\n"
    for i in range(300):
        client.publish(f"s.{'abc'[i % 3]}", f"p{i}".encode(), hdr=hdr if i % 7 == 0 else None)
    await client.flush()
    await wait_for(lambda: _stored(client, 300))

    def check(msgs: list[Msg], name: str) -> None:
        assert [(m.subject, m.data, m.hdr) for m in msgs] == [
            (f"s.{'abc'[i % 3]}", f"p{i}".encode(), hdr if i % 7 == 0 else None) for i in range(300)
        ]
        tokens = [m.reply.split(".") for m in msgs]
        assert [t[:5] for t in tokens] == [["$JS", "ACK", "S", name, "1"]] * 300
        assert [(int(t[5]), int(t[6]), int(t[8])) for t in tokens] == [(i, i, 300 - i) for i in range(1, 301)]

    push = client.subscribe("d.all")
    await client.add_consumer("S", "P", deliver_subject="d.all")
    check(await push.collect(300), "P")
    await client.add_consumer("S", "Q")
    inbox = client.new_inbox()
    pulled = client.subscribe(inbox)
    client.pull("S", "Q", inbox, {"batch": 100})
    client.pull("S", "Q", inbox, {"batch": 200})
    check(await pulled.collect(300), "Q")


async def test_push_receiver_auto_unsubscribes(client: RawClient) -> None:
    """A deliver subject's subscription with ``UNSUB <sid> 3`` takes three messages, then the
    consumer is no longer bound."""
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 10)
    sub = client.subscribe("d.u")
    client.writer.write(f"UNSUB {sub.sid} 3\r\n".encode())
    await client.flush()
    await client.add_consumer("S", "U", deliver_subject="d.u", ack_policy="none")
    assert [m.data for m in await sub.collect(3)] == [b"m0", b"m1", b"m2"]
    await sub.expect_none(0.3)
    await wait_for(lambda: _not(bound(client, "U")))


async def _stored(client: RawClient, n: int) -> bool:
    return bool((await client.stream_info("S"))["state"]["messages"] == n)


async def test_idle_heartbeats(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    sub = client.subscribe("d.h")
    await client.add_consumer("S", "H", deliver_subject="d.h", idle_heartbeat=300 * MS)
    await client.publish_many("s.a", 2)
    msgs = await sub.collect(2)
    assert [m.data for m in msgs] == [b"m0", b"m1"]
    start = time.monotonic()
    beat = await sub.next(1)
    assert time.monotonic() - start > 0.15
    assert beat.hdr == b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: 2\r\nNats-Last-Stream: 2\r\n\r\n"
    assert beat.reply == "" and beat.data == b""
    assert (await sub.next(1)).status == "100"


@pytest.mark.parametrize(("size", "count"), [(8000, 400), (300, 6500)])
async def test_flow_control(client: RawClient, size: int, count: int) -> None:
    """Where the first request goes out and where delivery stalls, by the bytes counted in the
    window (the deliver subject, ack reply, headers and payload of each message); payloads large
    and small (a delivery pass frames these two ways)."""
    await client.add_stream("S", ["s.>"])
    payload = b"x" * size
    for _ in range(count):
        client.publish("s.a", payload)
    await client.flush()
    sub = client.subscribe("d.f")
    await client.add_consumer(
        "S", "F", deliver_subject="d.f", flow_control=True, idle_heartbeat=300 * MS, ack_policy="none"
    )
    delivered = 0
    events: list[tuple[int, str]] = []
    counted = [0]  # the window's count after each delivery
    unanswered = ""
    while delivered < count:
        msg = await sub.next(3)
        if not msg.status:
            delivered += 1
            counted.append(counted[-1] + len("d.f") + len(msg.reply) + len(msg.data))
            continue
        events.append((delivered, msg.description))
        if msg.description == "FlowControl Request":
            assert (
                msg.reply.startswith("$JS.FC.S.F.") and msg.hdr == b"NATS/1.0 100 FlowControl Request\r\n\r\n"
            )
            if not unanswered:
                unanswered = msg.reply  # leave the first one unanswered: delivery must stall
            else:
                client.publish(msg.reply, b"")
        else:
            # a heartbeat while stalled names the request to answer
            assert msg.header("Nats-Consumer-Stalled") == unanswered
            client.publish(unanswered, b"")
    # The window starts at 2 MiB: the first request goes out past 1 MiB, delivery stalls at 2 MiB.
    first_request, stalled_beat = events[0], events[1]
    past = [next(i for i, n in enumerate(counted) if n > limit) for limit in (1 << 20, 2 << 20)]
    assert first_request == (past[0], "FlowControl Request")
    assert stalled_beat == (past[1], "Idle Heartbeat")
    if size == 8000:
        assert past == [131, 261]


async def test_rate_limit(client: RawClient) -> None:
    # The burst is max_msg_size (here 200 bytes); after it 8000 bits/s = 1000 bytes/s.
    await client.add_stream("S", ["s.>"], max_msg_size=200)
    for _ in range(8):
        client.publish("s.a", b"y" * 100)
    await client.flush()
    sub = client.subscribe("d.r")
    start = time.monotonic()
    await client.add_consumer("S", "R", deliver_subject="d.r", rate_limit_bps=8000, ack_policy="none")
    await sub.collect(8, timeout=5)
    # about 8 x 160 bytes = 1280 bytes, 200 of them at once: roughly a second.
    assert time.monotonic() - start > 0.7


async def test_nats_py_push_subscriptions(server: Target) -> None:
    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        for i in range(10):
            await js.publish(f"s.{i % 2}", f"{i}".encode())
        sub = await js.subscribe("s.1", durable="odd", config=ConsumerConfig(ack_wait=0.5))
        got = []
        for _ in range(5):
            msg = await sub.next_msg(2)
            got.append(msg.data)
            if msg.data != b"3":
                await msg.ack()
        assert got == [b"1", b"3", b"5", b"7", b"9"]
        again = await sub.next_msg(3)  # the unacked one comes back after ack_wait
        assert again.data == b"3" and again.metadata.num_delivered == 2
        await again.ack_sync()
        info = await js.consumer_info("S", "odd")
        assert info.num_ack_pending == 0 and info.num_redelivered == 0 and info.push_bound

        # Queue subscribers share one durable push consumer with a deliver group.
        seen: list[bytes] = []

        async def handler(msg: nats.aio.msg.Msg) -> None:
            seen.append(msg.data)
            await msg.ack()

        q1 = await js.subscribe("s.0", queue="workers", cb=handler)
        q2 = await js.subscribe("s.0", queue="workers", cb=handler)
        await wait_for(_async(lambda: len(seen) >= 5))
        assert sorted(seen) == [b"0", b"2", b"4", b"6", b"8"]
        await q1.unsubscribe()
        await q2.unsubscribe()

        # The ordered consumer (flow control + heartbeats, ack none, ephemeral).
        ordered = await js.subscribe("s.>", ordered_consumer=True)
        data = [(await ordered.next_msg(2)).data for _ in range(10)]
        assert data == [f"{i}".encode() for i in range(10)]
        await ordered.unsubscribe()
    finally:
        await nc.close()


def _async(predicate):  # type: ignore[no-untyped-def]
    async def check() -> bool:
        return bool(predicate())

    return check


@pytest.mark.parametrize("ack", ["none", "explicit"])
async def test_a_long_pass_delivers_every_message_in_order(client: RawClient, ack: str) -> None:
    """More than a connection writes early at (tens of KiB) in one go: every message arrives once,
    in order, each with its own subject, headers and ack reply (delivery sequence, pending count)."""
    n = 1200
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    await client.add_stream("S", ["s.>"])
    for i in range(n):
        subject = "s.b" if i % 7 == 3 else "s.a"
        client.publish(subject, b"%d:" % i + b"x" * 150, hdr=hdr if i % 11 == 5 else None)
    await client.flush()
    await wait_for(lambda: _stored(client, n))
    sub = client.subscribe("d.p")
    await client.flush()
    await client.add_consumer("S", "P", deliver_subject="d.p", ack_policy=ack, max_ack_pending=-1)
    msgs = await sub.collect(n)
    for i, m in enumerate(msgs):
        assert (m.subject, m.data) == ("s.b" if i % 7 == 3 else "s.a", b"%d:" % i + b"x" * 150)
        assert m.hdr == (hdr if i % 11 == 5 else None)
        assert (m.num_delivered, m.stream_seq, m.consumer_seq, m.num_pending) == (1, i + 1, i + 1, n - i - 1)
    await sub.expect_none(0.2)
    info = await client.consumer_info("S", "P")
    assert info["delivered"]["stream_seq"] == n
    assert info["num_ack_pending"] == (n if ack == "explicit" else 0)


async def _stored(client: RawClient, n: int) -> bool:
    return bool((await client.stream_info("S"))["state"]["messages"] == n)
