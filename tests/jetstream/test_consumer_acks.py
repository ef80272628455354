"""Acks on both targets: every ack kind and its effect on the consumer's counters, double acks,
ack_wait redelivery, the backoff schedule, max_deliver with its advisory, max_ack_pending, AckAll,
AckNone, and the NAK / TERM advisories and sampled ack metrics."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, speaks_210
from tests.support.targets import Target

API = "$JS.API.CONSUMER."
MS = 1_000_000


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def fetch(client: RawClient, consumer: str, n: int, stream: str = "S") -> list[Msg]:
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull(stream, consumer, inbox, {"batch": n, "expires": 2_000 * MS})
    msgs = await sub.collect(n)
    sub.unsubscribe()
    return msgs


async def test_ack_kinds_and_counters(client: RawClient) -> None:
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>")
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 6)
    await client.add_consumer("S", "A", ack_wait=800 * MS, max_deliver=5)
    fetched = time.monotonic()  # no message is delivered before this, so none is due before +0.8 s
    msgs = await fetch(client, "A", 6)
    assert [m.num_delivered for m in msgs] == [1] * 6
    assert [m.num_pending for m in msgs] == [5, 4, 3, 2, 1, 0]

    # An ack with a reply subject gets an empty confirmation (AckSync), whatever the payload.
    assert (await client.request(msgs[0].reply, b"+ACK")).data == b""
    client.publish(msgs[1].reply, b"-NAK")
    assert (await client.request(msgs[2].reply, b"+TERM")).data == b""
    naked = time.monotonic()
    client.publish(msgs[4].reply, b'-NAK {"delay": 300000000}')
    assert (await client.request(msgs[3].reply, b"+WPI")).data == b""
    assert (await client.request(msgs[5].reply, b"unknown")).data == b""  # ignored but answered
    info = await client.consumer_info("S", "A")
    assert info["ack_floor"]["consumer_seq"] == 1 and info["ack_floor"]["stream_seq"] == 1
    assert (info["num_ack_pending"], info["num_redelivered"]) == (4, 0)

    # The NAKed message comes back at once (first in line), the delayed one after its delay,
    # the unacked one after ack_wait and the one in progress ack_wait after its +WPI.
    start = time.monotonic()
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "A", inbox, {"batch": 4, "expires": 2_500 * MS})
    got = []
    for _ in range(3):
        msg = await sub.next(3)
        got.append((msg.data, msg.num_delivered, time.monotonic()))
    assert [g[:2] for g in got[:2]] == [(b"m1", 2), (b"m4", 2)]
    # Lower bounds from when each clock started (on 2 loaded cores the requests above can take
    # longer than the delay, so "after start" would be a race); the NAK at once, the delay before
    # ack_wait.
    assert got[0][2] - start < 0.2
    assert naked + 0.3 <= got[1][2] < naked + 0.8
    assert got[2][2] >= fetched + 0.8
    assert (got[2][0], got[2][1]) in ((b"m5", 2), (b"m1", 3), (b"m3", 2))  # all due about then
    info = await client.consumer_info("S", "A")
    assert info["num_ack_pending"] == 4 and info["num_redelivered"] >= 3
    assert info["delivered"]["stream_seq"] == 6

    events = [m.json() for m in advisories.drain()]
    nak = next(e for e in events if e["type"] == "io.nats.jetstream.advisory.v1.nak")
    assert (nak["stream"], nak["consumer"], nak["stream_seq"], nak["consumer_seq"], nak["deliveries"]) == (
        "S",
        "A",
        2,
        2,
        1,
    )
    term = next(e for e in events if e["type"] == "io.nats.jetstream.advisory.v1.terminated")
    assert (term["stream_seq"], term["consumer_seq"], term["deliveries"]) == (3, 3, 1)


async def test_term_with_reason(client: RawClient, server_kind: str) -> None:
    """``+TERM <reason>`` is ⟨2.10.4+⟩; 2.9.10 ignores anything but an exact ``+TERM``."""
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.>")
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 1)
    await client.add_consumer("S", "T")
    (msg,) = await fetch(client, "T", 1)
    await client.request(msg.reply, b"+TERM not for me")
    info = await client.consumer_info("S", "T")
    if speaks_210(client, server_kind):
        assert info["num_ack_pending"] == 0
        event = (await advisories.next()).json()
        assert event["reason"] == "not for me" and event["stream_seq"] == 1
    else:
        assert info["num_ack_pending"] == 1
        await advisories.expect_none(0.2)


async def test_backoff_and_max_deliver(client: RawClient) -> None:
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.>")
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 1)
    sub = client.subscribe("d.b")
    await client.flush()
    start = time.monotonic()
    created = await client.add_consumer(
        "S", "B", deliver_subject="d.b", backoff=[300 * MS, 1500 * MS], max_deliver=3
    )
    assert created["config"]["ack_wait"] == 300 * MS  # ack_wait is backoff[0]
    times = []
    for expected in (1, 2, 3):
        msg = await sub.next(5)
        assert msg.num_delivered == expected
        times.append(time.monotonic() - start)
    # Delivery 2 after backoff[0], delivery 3 after backoff[1]. The steps are 1.2 s apart, so a
    # loaded machine's late wake-ups cannot make one look like the other.
    assert 0.25 <= times[1] - times[0] < 1.2
    assert 1.4 <= times[2] - times[1] < 4.0
    event = (await advisories.next(3)).json()
    assert event["type"] == "io.nats.jetstream.advisory.v1.max_deliver"
    assert (event["stream"], event["consumer"], event["stream_seq"], event["deliveries"]) == ("S", "B", 1, 3)
    await sub.expect_none(0.3)
    info = await client.consumer_info("S", "B")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (0, 1)


async def test_ack_wait_redelivery_and_max_ack_pending(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 5)
    await client.add_consumer("S", "M", max_ack_pending=2, ack_wait=500 * MS)
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "M", inbox, {"batch": 5, "expires": 3_000 * MS})
    first = await sub.collect(2)
    await sub.expect_none(0.2)  # stalled at max_ack_pending
    assert (await client.consumer_info("S", "M"))["num_ack_pending"] == 2
    await client.request(first[0].reply, b"")
    third = await sub.next(1)
    assert third.data == b"m2"
    # m1 and m2 were never acked: redelivered after ack_wait, before anything new.
    start = time.monotonic()
    redelivered = await sub.collect(2, timeout=2)
    assert time.monotonic() - start >= 0.2
    assert [(m.data, m.num_delivered) for m in redelivered] == [(b"m1", 2), (b"m2", 2)]
    info = await client.consumer_info("S", "M")
    assert (info["num_ack_pending"], info["num_redelivered"]) == (2, 2)


async def test_ack_all_and_ack_floor(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 5)
    await client.add_consumer("S", "L", ack_policy="all")
    msgs = await fetch(client, "L", 5)
    await client.request(msgs[2].reply, b"")
    info = await client.consumer_info("S", "L")
    assert info["ack_floor"]["stream_seq"] == 3 and info["num_ack_pending"] == 2
    await client.request(msgs[1].reply, b"")  # below the floor: no-op
    assert (await client.consumer_info("S", "L"))["num_ack_pending"] == 2
    await client.request(msgs[4].reply, b"+ACK")
    info = await client.consumer_info("S", "L")
    assert info["ack_floor"] == {
        "consumer_seq": 5,
        "stream_seq": 5,
        "last_active": info["ack_floor"]["last_active"],
    }
    assert info["num_ack_pending"] == 0

    # Explicit acks out of order: the floor only moves over contiguous acks.
    await client.add_consumer("S", "E")
    msgs = await fetch(client, "E", 5)
    floors = []
    for i in (1, 0, 3, 2):
        await client.request(msgs[i].reply, b"")
        floors.append((await client.consumer_info("S", "E"))["ack_floor"]["stream_seq"])
    assert floors == [0, 2, 2, 4]

    # +NXT acks and asks for the next message on the ack's reply subject.
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.publish(msgs[4].reply, b"+NXT", inbox)
    await client.publish_js("s.b", b"later")
    nxt = await sub.next()
    assert nxt.data == b"later" and nxt.stream_seq == 6
    info = await client.consumer_info("S", "E")
    assert info["ack_floor"]["stream_seq"] == 5 and info["num_ack_pending"] == 1

    # +NXT may carry a pull request: a batch size or a JSON request.
    await client.publish_many("s.c", 4, "c")
    for body, want in ((b'+NXT {"batch": 2}', [b"c0", b"c1"]), (b"+NXT 2", [b"c2", b"c3"])):
        inbox = client.new_inbox()
        sub = client.subscribe(inbox)
        client.publish(nxt.reply, body, inbox)
        assert [m.data for m in await sub.collect(2)] == want
        await sub.expect_none(0.1)

    # AckNone: delivered is acked; acks are ignored but still answered.
    await client.add_consumer("S", "N", ack_policy="none")
    msgs = await fetch(client, "N", 3)
    assert (await client.request(msgs[0].reply, b"")).data == b""
    info = await client.consumer_info("S", "N")
    assert info["ack_floor"]["stream_seq"] == 3 and info["num_ack_pending"] == 0


async def test_sampled_ack_metric(client: RawClient) -> None:
    metrics = client.subscribe("$JS.EVENT.METRIC.CONSUMER.ACK.>")
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 2)
    await client.add_consumer("S", "M", sample_freq="100%")
    msgs = await fetch(client, "M", 2)
    for m in msgs:
        await client.request(m.reply, b"")
    events = [m.json() for m in await metrics.collect(2)]
    assert [e["stream_seq"] for e in events] == [1, 2]
    assert all(e["type"] == "io.nats.jetstream.metric.v1.consumer_ack" and e["ack_time"] > 0 for e in events)
    assert events[0]["deliveries"] == 1 and events[0]["consumer"] == "M"


async def test_malformed_ack_subjects(client: RawClient) -> None:
    """Only five tokens after ``$JS.ACK.<S>.<C>`` reach the consumer; odd numbers ack nothing."""
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "C")
    for subject in ("$JS.ACK.S.C.1.2", "$JS.ACK.S.C.1.2.3.4.5.6"):
        assert (await client.request(subject, b"")).status == "503"  # no responders
    # ⟨2.11+⟩ tokens that are not numbers read as the largest sequence: beyond what was
    # delivered, so the ack is ignored without an ack reply.
    inbox = client.new_inbox()
    replies = client.subscribe(inbox)
    client.publish("$JS.ACK.S.C.a.b.c.d.e", b"", inbox)
    await replies.expect_none(0.5)
    assert (await client.consumer_info("S", "C"))["num_ack_pending"] == 0


async def test_ack_floor_follows_a_redelivered_message(client: RawClient) -> None:
    """A redelivery keeps the first delivery's consumer sequence in the pending ack (nats-server
    ``trackPending``), so acking the redelivered oldest message moves the ack floor."""
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 3)
    await client.add_consumer("S", "R", ack_wait=30_000 * MS)
    msgs = await fetch(client, "R", 3)
    client.publish(msgs[0].reply, b"-NAK")
    again = (await fetch(client, "R", 1))[0]
    assert (again.stream_seq, again.consumer_seq, again.num_delivered) == (1, 4, 2)
    assert (await client.request(again.reply, b"+ACK")).data == b""
    info = await client.consumer_info("S", "R")
    assert (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]) == (1, 1)
    assert info["num_ack_pending"] == 2
    assert (await client.request(msgs[1].reply, b"+ACK")).data == b""
    info = await client.consumer_info("S", "R")
    assert (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]) == (2, 2)
