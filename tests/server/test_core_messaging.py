"""Core messaging with a real client (nats-py) against both targets."""

from __future__ import annotations

import asyncio
from collections import Counter

import nats
import nats.errors
import pytest
from tests.server.rawclient import QUIET_CONNECT, RawClient
from tests.support.natspy import subscriptions_live
from tests.support.targets import Target

TIMEOUT = 10.0


async def _connect(target: Target, **kwargs: object) -> nats.NATS:
    return await nats.connect(target.url, allow_reconnect=False, **kwargs)


async def _collect(sub: nats.aio.subscription.Subscription, count: int) -> list[nats.aio.msg.Msg]:
    return [await sub.next_msg(timeout=TIMEOUT) for _ in range(count)]


async def test_publish_subscribe_in_order(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        sub = await nc.subscribe("orders.new")
        await subscriptions_live(nc)
        for i in range(50):
            await nc.publish("orders.new", f"m{i}".encode())
        msgs = await _collect(sub, 50)
        assert [m.data for m in msgs] == [f"m{i}".encode() for i in range(50)]
        assert all(m.subject == "orders.new" for m in msgs)
    finally:
        await nc.close()


async def test_wildcards(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        filters = ["time.*.east", "time.us.>", "*.*.east.>", ">"]
        subs = {f: await nc.subscribe(f) for f in filters}
        await subscriptions_live(nc)
        subjects = ["time.us.east", "time.eu.east", "time.us.east.atlanta", "time.us", "other"]
        for subject in subjects:
            await nc.publish(subject, subject.encode())
        await nc.publish("done", b"")
        expected = {
            "time.*.east": ["time.us.east", "time.eu.east"],
            "time.us.>": ["time.us.east", "time.us.east.atlanta"],
            "*.*.east.>": ["time.us.east.atlanta"],
            ">": [*subjects, "done"],
        }
        # ">" sees everything, so once it has "done" the others have had their messages too.
        everything = await _collect(subs[">"], len(subjects) + 1)
        assert [m.subject for m in everything] == expected[">"]
        for f in filters[:-1]:
            got = await _collect(subs[f], len(expected[f]))
            assert [m.subject for m in got] == expected[f]
            assert subs[f].pending_msgs == 0
    finally:
        await nc.close()


async def test_queue_groups(core_server: Target) -> None:
    nc = await _connect(core_server)
    workers = [await _connect(core_server) for _ in range(3)]
    try:
        counts: Counter[str] = Counter()
        seen: list[bytes] = []
        done = asyncio.Event()
        total = 300

        def handler(name: str):  # type: ignore[no-untyped-def]
            async def cb(msg: nats.aio.msg.Msg) -> None:
                counts[name] += 1
                seen.append(msg.data)
                if len(seen) == total:
                    done.set()

            return cb

        for i, w in enumerate(workers):
            await w.subscribe("jobs", queue="workers", cb=handler(f"w{i}"))
        other_group = await nc.subscribe("jobs", queue="auditors")
        plain = await nc.subscribe("jobs")
        await subscriptions_live(nc, *workers)
        for i in range(total):
            await nc.publish("jobs", str(i).encode())
        await asyncio.wait_for(done.wait(), TIMEOUT)
        # Every message went to exactly one worker, and every worker got some (random choice).
        assert sorted(seen, key=int) == [str(i).encode() for i in range(total)]
        assert set(counts) == {"w0", "w1", "w2"}
        # A plain subscriber and a second group each get every message.
        assert len(await _collect(plain, total)) == total
        assert len(await _collect(other_group, total)) == total
    finally:
        for w in workers:
            await w.close()
        await nc.close()


async def test_request_reply(core_server: Target) -> None:
    requester = await _connect(core_server)
    responder = await _connect(core_server)
    try:

        async def echo(msg: nats.aio.msg.Msg) -> None:
            await msg.respond(b"re:" + msg.data)

        await responder.subscribe("svc.echo", cb=echo)
        await subscriptions_live(responder)
        reply = await requester.request("svc.echo", b"one", timeout=TIMEOUT)
        assert reply.data == b"re:one"
        replies = await asyncio.gather(
            *(requester.request("svc.echo", str(i).encode(), timeout=TIMEOUT) for i in range(20))
        )
        assert [r.data for r in replies] == [f"re:{i}".encode() for i in range(20)]
    finally:
        await requester.close()
        await responder.close()


async def test_no_responders(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("nobody.home", b"?", timeout=TIMEOUT)
    finally:
        await nc.close()


async def test_headers_round_trip(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        sub = await nc.subscribe("h")
        await subscriptions_live(nc)
        await nc.publish("h", b"body", headers={"Nats-Msg-Id": "abc", "X-Multi": "1"})
        msg = await sub.next_msg(timeout=TIMEOUT)
        assert msg.data == b"body"
        assert msg.headers == {"Nats-Msg-Id": "abc", "X-Multi": "1"}
    finally:
        await nc.close()


def test_headers_stripped_for_clients_without_headers(core_server: Target) -> None:
    no_headers = b'CONNECT {"verbose":false,"pedantic":false,"headers":false}\r\n'
    with (
        RawClient.connected(core_server.port, no_headers) as old,
        RawClient.connected(core_server.port) as new,
    ):
        out, _ = old.exchange(b"SUB h 7\r\n")
        assert out == b"PONG\r\n"
        out, _ = new.exchange(b"HPUB h r 18 20\r\nNATS/1.0\r\nA: B\r\n\r\nhi\r\n")
        assert out == b"PONG\r\n"
        out, _ = old.exchange(b"")
        assert out == b"MSG h 7 r 2\r\nhi\r\nPONG\r\n"


def test_pipelined_requests_byte_exact(core_server: Target) -> None:
    """A burst of requests in one write (same subject and size, a reply each: the embedded server
    routes them as one run) reaches literal and wildcard subscribers byte for byte; requests
    nobody listens to get a no-responders status each, and a different size or subject in the
    middle is routed in order."""
    with (
        RawClient.connected(core_server.port) as sub,
        RawClient.connected(core_server.port) as wild,
        RawClient.connected(core_server.port) as requester,
    ):
        assert sub.exchange(b"SUB svc.a 7\r\nSUB lit 9\r\n") == (b"PONG\r\n", False)
        assert wild.exchange(b"SUB svc.* 8\r\n") == (b"PONG\r\n", False)
        assert requester.exchange(b"SUB _INBOX.r.* 1\r\n") == (b"PONG\r\n", False)
        burst = b"".join(b"PUB svc.a _INBOX.r.%d 2\r\n%02d\r\n" % (i, i) for i in range(40))
        burst += b"PUB svc.a _INBOX.r.x 3\r\nabc\r\nPUB svc.a _INBOX.r.y 3\r\ndef\r\n"
        burst += b"".join(b"PUB nobody _INBOX.r.n%d 2\r\nzz\r\n" % i for i in range(3))
        burst += b"".join(b"PUB svc.b _INBOX.r.b%d 2\r\n%02d\r\n" % (i, i) for i in range(5))
        burst += b"".join(b"PUB lit _INBOX.r.l%d 2\r\n%02d\r\n" % (i, i) for i in range(5))
        out, closed = requester.exchange(burst)
        assert not closed
        no_responders = b"".join(
            b"HMSG _INBOX.r.n%d 1 %d %d\r\n%b\r\n" % (i, len(hdr), len(hdr), hdr)
            for i in range(3)
            for hdr in [b"NATS/1.0 503\r\nNats-Subject: nobody\r\n\r\n"]
        )
        assert out == no_responders + b"PONG\r\n"
        to_a = b"".join(b"MSG svc.a %%d _INBOX.r.%d 2\r\n%02d\r\n" % (i, i) for i in range(40))
        to_a += b"MSG svc.a %d _INBOX.r.x 3\r\nabc\r\nMSG svc.a %d _INBOX.r.y 3\r\ndef\r\n"
        to_b = b"".join(b"MSG svc.b 8 _INBOX.r.b%d 2\r\n%02d\r\n" % (i, i) for i in range(5))
        to_lit = b"".join(b"MSG lit 9 _INBOX.r.l%d 2\r\n%02d\r\n" % (i, i) for i in range(5))
        assert sub.exchange(b"") == (to_a.replace(b"%d", b"7") + to_lit + b"PONG\r\n", False)
        assert wild.exchange(b"") == (to_a.replace(b"%d", b"8") + to_b + b"PONG\r\n", False)


async def test_auto_unsubscribe(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        sub = await nc.subscribe("limited")
        await sub.unsubscribe(limit=3)
        probe = await nc.subscribe("limited")
        await subscriptions_live(nc)
        for i in range(6):
            await nc.publish("limited", str(i).encode())
        # The probe sees all six, so the server has routed them all by then.
        assert len(await _collect(probe, 6)) == 6
        await subscriptions_live(nc)
        got = [m.data for m in await _collect(sub, 3)]
        assert got == [b"0", b"1", b"2"]
        with pytest.raises(nats.errors.TimeoutError):
            await sub.next_msg(timeout=0.2)
    finally:
        await nc.close()


async def test_echo_off(core_server: Target) -> None:
    quiet = await _connect(core_server, no_echo=True)
    other = await _connect(core_server)
    try:
        own = await quiet.subscribe("chat")
        theirs = await other.subscribe("chat")
        await subscriptions_live(quiet, other)
        await quiet.publish("chat", b"from-quiet")
        await other.publish("chat", b"from-other")
        # Two publishers: no order between them.
        assert sorted(m.data for m in await _collect(theirs, 2)) == [b"from-other", b"from-quiet"]
        # The no-echo connection gets only the other connection's message.
        assert (await own.next_msg(timeout=TIMEOUT)).data == b"from-other"
        await subscriptions_live(quiet)
        assert own.pending_msgs == 0
    finally:
        await quiet.close()
        await other.close()


@pytest.mark.parametrize("size", [0, 1, 64 * 1024, 1024 * 1024 - 64, 1024 * 1024])
async def test_large_payloads(core_server: Target, size: int) -> None:
    nc = await _connect(core_server)
    try:
        payload = bytes(i % 251 for i in range(size))
        sub = await nc.subscribe("big")
        await subscriptions_live(nc)
        await nc.publish("big", payload)
        assert (await sub.next_msg(timeout=TIMEOUT)).data == payload
    finally:
        await nc.close()


async def test_large_payload_with_headers(core_server: Target) -> None:
    nc = await _connect(core_server)
    try:
        payload = b"z" * (1024 * 1024 - 200)
        sub = await nc.subscribe("bigh")
        await subscriptions_live(nc)
        await nc.publish("bigh", payload, headers={"K": "v" * 50})
        msg = await sub.next_msg(timeout=TIMEOUT)
        assert msg.data == payload and msg.headers == {"K": "v" * 50}
    finally:
        await nc.close()


def test_mixed_payload_sizes_in_one_burst_arrive_byte_for_byte(core_server: Target) -> None:
    """Publishes of 0 B to 64 KiB, with and without headers and replies, sent in one burst: the
    subscriber receives exactly their frames, in order (a read ends inside a large payload; the
    server writes large frames as parts and small ones joined)."""
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    sizes = [16, 100, 1000, 4000, 16384, 65536, 0, 65536, 16384, 3, 200_000] * 3
    burst = bytearray()
    want = bytearray()
    for i, size in enumerate(sizes):
        payload = bytes([48 + i % 10]) * size
        reply = b"r.%d " % i if i % 4 == 0 else b""
        if i % 3 == 0:
            burst += b"HPUB mix %b%d %d\r\n%b%b\r\n" % (reply, len(hdr), len(hdr) + size, hdr, payload)
            want += b"HMSG mix 1 %b%d %d\r\n%b%b\r\n" % (reply, len(hdr), len(hdr) + size, hdr, payload)
        else:
            burst += b"PUB mix %b%d\r\n%b\r\n" % (reply, size, payload)
            want += b"MSG mix 1 %b%d\r\n%b\r\n" % (reply, size, payload)
    with RawClient.connected(core_server.port) as sub, RawClient.connected(core_server.port) as pub:
        sub.send(b"SUB mix 1\r\nPING\r\n")
        assert sub.read_until(b"PONG\r\n").endswith(b"PONG\r\n")
        pub.send(bytes(burst) + b"PING\r\n")
        assert pub.read_until(b"PONG\r\n").endswith(b"PONG\r\n")
        sub.send(b"PING\r\n")
        assert sub.read_until(b"PONG\r\n", timeout=30) == bytes(want) + b"PONG\r\n"


def test_payload_one_byte_over_limit_closes(core_server: Target) -> None:
    with RawClient.connected(core_server.port, QUIET_CONNECT) as client:
        out, closed = client.exchange(b"PUB big 1048577\r\n")
    assert closed and out == b"-ERR 'Maximum Payload Violation'\r\n"


async def test_fanout(core_server: Target) -> None:
    pub = await _connect(core_server)
    subs_conns = [await _connect(core_server) for _ in range(4)]
    try:
        subs = [await c.subscribe("fan") for c in subs_conns]
        await subscriptions_live(*subs_conns)
        for i in range(100):
            await pub.publish("fan", str(i).encode())
        for sub in subs:
            assert [m.data for m in await _collect(sub, 100)] == [str(i).encode() for i in range(100)]
    finally:
        for c in [pub, *subs_conns]:
            await c.close()
