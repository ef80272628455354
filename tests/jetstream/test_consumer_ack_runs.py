"""Acks that arrive many to a read (a client acking every message as it comes: the embedded
server routes them as one run to the consumer's ack subscription), on both targets: mixed ack kinds in one write,
acks to two consumers interleaved, acks some of which the publish permissions deny, acks split
across reads. Each must come out as if the acks had arrived one by one.

nats-server queues acks to the consumer apart from API requests (``processInboundAcks``), so
these tests wait for the consumer's state; the embedded server's ordering against the other ops
of the same read (which is per op) is checked in-process at the end.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import Target

MS = 1_000_000
StartServer = Callable[..., Target]


def ack_frame(reply: str, payload: bytes = b"+ACK", double_blank: bool = False) -> bytes:
    """A reply-less ack PUB as clients write it (nats-py: two blanks, its empty reply)."""
    blank = b"  " if double_blank else b" "
    return b"PUB %b%b%d\r\n%b\r\n" % (reply.encode(), blank, len(payload), payload)


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


async def until_info(client: RawClient, consumer: str, check: Callable[[Any], bool]) -> Any:
    """The consumer's info once ``check`` holds (acks are applied asynchronously by nats-server)."""
    found: list[Any] = []

    async def ready() -> bool:
        found[:] = [await client.consumer_info("S", consumer)]
        return check(found[0])

    await wait_for(ready)
    return found[0]


async def test_mixed_ack_kinds_in_one_write(client: RawClient) -> None:
    """+ACK, -NAK, +WPI, +TERM, a reply-less +NXT (an ack) and an unknown payload to one consumer
    in one write: the same counters, advisories and redelivery as one by one."""
    advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>")
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 9)
    await client.add_consumer("S", "A", ack_wait=30_000 * MS)
    msgs = await fetch(client, "A", 9)
    kinds = [b"+ACK", b"-NAK", b"+ACK", b"+WPI", b"+TERM", b'+NXT {"batch":1}', b"+ACK", b"huh?", b"+ACK"]
    client.writer.write(
        b"".join(ack_frame(m.reply, k, i % 2 == 1) for i, (m, k) in enumerate(zip(msgs, kinds, strict=True)))
    )
    # Acked: m0 m2 m4 (terminated) m5 m6 m8; pending: m1 (NAKed), m3 (in progress), m7 (ignored payload).
    info = await until_info(client, "A", lambda i: i["num_ack_pending"] == 3)
    assert (info["ack_floor"]["consumer_seq"], info["ack_floor"]["stream_seq"]) == (1, 1)
    assert info["delivered"]["stream_seq"] == 9 and info["num_pending"] == 0
    redelivered = await fetch(client, "A", 1)
    assert (redelivered[0].data, redelivered[0].num_delivered) == (b"m1", 2)
    await client.flush()
    events = [m.json() for m in advisories.drain()]
    nak = [e for e in events if e["type"] == "io.nats.jetstream.advisory.v1.nak"]
    term = [e for e in events if e["type"] == "io.nats.jetstream.advisory.v1.terminated"]
    assert [(e["stream_seq"], e["consumer_seq"], e["deliveries"]) for e in nak] == [(2, 2, 1)]
    assert [(e["stream_seq"], e["consumer_seq"], e["deliveries"]) for e in term] == [(5, 5, 1)]


async def test_acks_to_two_consumers_interleaved(client: RawClient) -> None:
    """Acks to two consumers alternating in one write (each consumer's run is broken by the
    other's), plus a double ack and an ack beyond what was delivered (both ignored)."""
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 6)
    await client.add_consumer("S", "A")
    await client.add_consumer("S", "B")
    a = await fetch(client, "A", 6)
    b = await fetch(client, "B", 4)
    frames = []
    for i in range(4):
        frames.append(ack_frame(a[i].reply))
        frames.append(ack_frame(b[i].reply, double_blank=True))
        frames.append(ack_frame(b[i].reply))  # twice: nothing more to retire
    beyond = b[3].reply.split(".")
    beyond[5] = beyond[6] = "6"  # stream and consumer sequence 6: not delivered to B yet
    frames.append(ack_frame(".".join(beyond)))
    client.writer.write(b"".join(frames))
    info_a = await until_info(client, "A", lambda i: i["ack_floor"]["stream_seq"] == 4)
    info_b = await until_info(client, "B", lambda i: i["ack_floor"]["stream_seq"] == 4)
    assert (info_a["num_ack_pending"], info_b["num_ack_pending"]) == (2, 0)
    rest = await fetch(client, "B", 2)
    assert [m.data for m in rest] == [b"m4", b"m5"]  # m5 (seq 6) was not retired by the early ack
    client.writer.write(b"".join(ack_frame(m.reply) for m in [*a[4:], *rest]))
    await until_info(client, "B", lambda i: i["ack_floor"]["stream_seq"] == 6)
    await until_info(client, "A", lambda i: i["ack_floor"]["stream_seq"] == 6)


def _pub_err(subject: str) -> bytes:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'\r\n".encode()


async def _connect_as(target: Target, user: str) -> RawClient:
    """``RawClient.connect`` with a user and password."""
    reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
    info = json.loads((await reader.readline()).split(b" ", 1)[1])
    fields = {"verbose": False, "pedantic": False, "headers": True, "user": user, "pass": user}
    writer.write(b"CONNECT " + json.dumps(fields).encode() + b"\r\n")
    client = RawClient(reader, writer, info)
    client._task = asyncio.get_running_loop().create_task(client._read_loop())
    await client.flush()
    return client


async def test_acks_with_permissions_denying_some(start_server: StartServer) -> None:
    """A user allowed to ack consumer A but not B sends acks to both in one write: A's are
    applied, each of B's is answered with the permissions violation (in order) and dropped."""
    users = [
        {"user": "admin", "password": "admin"},
        {
            "user": "w",
            "password": "w",
            "permissions": {"publish": {"allow": [">"], "deny": ["$JS.ACK.S.B.>"]}},
        },
    ]
    target = start_server(authorization={"users": users})
    admin = await _connect_as(target, "admin")
    try:
        await admin.add_stream("S", ["s.>"])
        await admin.publish_many("s.a", 3)
        await admin.add_consumer("S", "A")
        await admin.add_consumer("S", "B")
        a = await fetch(admin, "A", 3)
        b = await fetch(admin, "B", 3)
        reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
        try:
            await reader.readline()  # INFO
            fields = {"verbose": False, "pedantic": False, "headers": True, "user": "w", "pass": "w"}
            writer.write(b"CONNECT " + json.dumps(fields).encode() + b"\r\nPING\r\n")
            assert await asyncio.wait_for(reader.readline(), 5) == b"PONG\r\n"
            writer.write(
                b"".join(ack_frame(x.reply) + ack_frame(y.reply) for x, y in zip(a, b, strict=True))
                + b"PING\r\n"
            )
            got = b""
            while not got.endswith(b"PONG\r\n"):
                got += await asyncio.wait_for(reader.read(65536), 5)
            assert got == b"".join(_pub_err(y.reply) for y in b) + b"PONG\r\n"
        finally:
            writer.close()
        await until_info(admin, "A", lambda i: i["ack_floor"]["stream_seq"] == 3)
        info_b = await admin.consumer_info("S", "B")
        assert (info_b["num_ack_pending"], info_b["ack_floor"]["stream_seq"]) == (3, 0)
    finally:
        await admin.close()


async def test_acks_split_across_reads(client: RawClient) -> None:
    """Acks whose frames are cut anywhere (mid-line, mid-payload, between CR and LF) and written
    in pieces: every one applied, nothing else."""
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 12)
    await client.add_consumer("S", "A")
    msgs = await fetch(client, "A", 12)
    data = b"".join(
        ack_frame(m.reply, b"+ACK" if i != 7 else b"-NAK", i % 3 == 0) for i, m in enumerate(msgs)
    )
    cuts = [
        0,
        5,
        31,
        len(data) // 3,
        len(data) // 3 + 1,
        len(data) // 2 - 1,
        len(data) - 3,
        len(data) - 1,
        len(data),
    ]
    for lo, hi in itertools.pairwise(cuts):
        client.writer.write(data[lo:hi])
        await client.writer.drain()
        await asyncio.sleep(0.005)  # (only to let the pieces arrive as separate reads; not a wait)
    info = await until_info(client, "A", lambda i: i["num_ack_pending"] == 1)
    assert (info["ack_floor"]["stream_seq"], info["delivered"]["stream_seq"]) == (7, 12)
    (again,) = await fetch(client, "A", 1)
    assert (again.data, again.num_delivered) == (b"m7", 2)


async def test_ack_run_keeps_its_place_among_the_other_ops_of_a_read(server_kind: str) -> None:
    """Embedded only (nats-server applies acks on another goroutine than API requests): acks,
    an INFO request between them and acks after it, fed as one read; the reply shows exactly the
    acks before it, a second one all of them, and max_ack_pending's stalled delivery resumes."""
    if server_kind != "embedded":
        pytest.skip("ordering of acks against API requests in one read is the embedded server's")
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.server import Server

    class Transport:
        """The part of an asyncio transport a connection uses; keeps what is written."""

        def __init__(self) -> None:
            self.out = bytearray()

        def write(self, data: bytes) -> None:
            self.out += data

        def writelines(self, parts: list[bytes]) -> None:
            self.out += b"".join(parts)

        def get_write_buffer_size(self) -> int:
            return 0

        def set_write_buffer_limits(self, high: int, low: int) -> None:
            pass

        def pause_reading(self) -> None:
            pass

        def resume_reading(self) -> None:
            pass

        def get_extra_info(self, key: str, default: Any = None) -> Any:
            return ("127.0.0.1", 1) if key == "peername" else default

        def close(self) -> None:
            pass

        def abort(self) -> None:
            pass

        def is_closing(self) -> bool:
            return False

    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1")
        await server.start()
        try:
            conn = ClientConnection(server)
            transport = Transport()
            conn.connection_made(transport)  # type: ignore[arg-type]
            conn.data_received(
                b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\nSUB _I.* 1\r\nSUB d 2\r\n'
            )

            def request(subject: str, body: dict[str, Any], n: int) -> bytes:
                data = json.dumps(body).encode()
                return b"PUB %b _I.%d %d\r\n%b\r\n" % (subject.encode(), n, len(data), data)

            def replies() -> list[dict[str, Any]]:
                conn.flush_out()
                lines = bytes(transport.out).split(b"\r\n")
                return [
                    json.loads(lines[i + 1]) for i, line in enumerate(lines) if line.startswith(b"MSG _I.")
                ]

            conn.data_received(request("$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"]}, 1))
            for i in range(6):
                conn.data_received(b"PUB s.a 2\r\nm%d\r\n" % i)
            cfg = {
                "durable_name": "A",
                "ack_policy": "explicit",
                "deliver_subject": "d",
                "max_ack_pending": 4,
            }
            conn.data_received(request("$JS.API.CONSUMER.CREATE.S.A", {"stream_name": "S", "config": cfg}, 2))
            for _ in range(100):
                if bytes(transport.out).count(b"MSG s.a 2 $JS.ACK.") == 4:
                    break
                await asyncio.sleep(0.01)
            conn.flush_out()
            acks = [
                line.split(b" ")[3].decode()
                for line in bytes(transport.out).split(b"\r\n")
                if line.startswith(b"MSG s.a 2 ")
            ]
            assert len(acks) == 4, bytes(transport.out)  # stalled at max_ack_pending
            read = (
                ack_frame(acks[0])
                + ack_frame(acks[1], double_blank=True)
                + request("$JS.API.CONSUMER.INFO.S.A", {}, 3)
                + ack_frame(acks[2])
                + ack_frame(acks[3], b"-NAK")
                + request("$JS.API.CONSUMER.INFO.S.A", {}, 4)
            )
            taken: list[int] = []
            (ack_sub,) = server.global_account.sublist.match("$JS.ACK.S.A.1.1.1.1.1")[0]
            on_ack_run = ack_sub.run

            def spy(*args: Any) -> None:
                taken.append(len(args[0]))
                on_ack_run(*args)

            ack_sub.run = spy
            conn.data_received(read)
            assert taken == [2, 2]  # two runs, each taken whole (not one by one)
            first, second = replies()[-2:]
            assert (first["ack_floor"]["stream_seq"], first["num_ack_pending"]) == (2, 2)
            assert (second["ack_floor"]["stream_seq"], second["num_ack_pending"]) == (3, 1)
            # The room the acks made is used on the next turn: m4, m5 and the NAKed m3 again.
            for _ in range(100):
                if bytes(transport.out).count(b"MSG s.a 2 $JS.ACK.") == 7:
                    break
                await asyncio.sleep(0.01)
            conn.flush_out()
            assert bytes(transport.out).count(b"MSG s.a 2 $JS.ACK.") == 7
        finally:
            await server.shutdown()
