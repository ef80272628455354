"""The embedded server's Python API: Server/ServerThread and the internal API JetStream uses."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

import nats
import nats.errors
import pytest
from tests.server.rawclient import RawClient

from pyjetstream import Server, ServerThread
from pyjetstream.server.client import ClientConnection
from pyjetstream.server.jetstream.stream_index import StreamIndex
from pyjetstream.server.options import OptionsError
from pyjetstream.server.subscription import Subscription

TIMEOUT = 10.0


async def _raw(port: int, connect: bool = True) -> RawClient:
    """A raw client made off the loop (the server runs on this test's loop)."""
    return await asyncio.to_thread(RawClient.connected if connect else RawClient, port)


async def _exchange(client: RawClient, data: bytes) -> tuple[bytes, bool]:
    return await asyncio.to_thread(client.exchange, data)


async def _ready(nc: nats.NATS) -> None:
    await nc.flush()
    await nc.flush()


async def test_server_context_manager_defaults() -> None:
    async with Server() as srv:
        assert srv.options.host == "127.0.0.1"
        assert srv.port > 0
        assert srv.client_url == srv.url == f"nats://127.0.0.1:{srv.port}"
        assert len(srv.server_id) == 56 and srv.server_name == srv.server_id
        assert srv.loop is asyncio.get_running_loop()
        nc = await nats.connect(srv.client_url)
        sub = await nc.subscribe("a")
        await _ready(nc)
        await nc.publish("a", b"1")
        assert (await sub.next_msg(timeout=TIMEOUT)).data == b"1"
        await nc.close()
    assert not srv.running


async def test_bad_options_rejected() -> None:
    with pytest.raises(TypeError, match="no_such_option"):
        Server(no_such_option=1)
    with pytest.raises(OptionsError, match="max_payload"):
        await Server(max_payload=2048, max_pending=1024).start()


def test_server_thread_for_sync_code() -> None:
    with ServerThread() as srv:
        with RawClient.connected(srv.port) as client:
            out, closed = client.exchange(b"SUB x 1\r\nPUB x 2\r\nhi\r\n")
        assert (out, closed) == (b"MSG x 1 2\r\nhi\r\nPONG\r\n", False)
        assert srv.call(lambda: asyncio.sleep(0, result=srv.server.port)) == srv.port
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", srv.port), timeout=2).close()


def test_server_thread_start_error_is_raised() -> None:
    with ServerThread() as first, pytest.raises(OSError):
        ServerThread(port=first.port).start()


async def test_internal_subscription_sees_client_publishes() -> None:
    async with Server() as srv:
        got: list[tuple[str, str, bytes | None, bytes, Any]] = []
        isub = srv.subscribe_internal("orders.*", lambda *args: got.append(args))
        nc = await nats.connect(srv.client_url)
        await nc.publish("orders.1", b"p1", reply="r1")
        await nc.publish("orders.2", b"p2", headers={"K": "v"})
        await nc.publish("other", b"x")
        await _ready(nc)
        assert [(s, r, p) for s, r, _, p, _ in got] == [("orders.1", "r1", b"p1"), ("orders.2", "", b"p2")]
        assert got[0][2] is None and got[1][2] == b"NATS/1.0\r\nK: v\r\n\r\n"
        client = got[0][4]
        assert isinstance(client, ClientConnection) and srv.clients[client.cid] is client
        assert client.in_msgs == 3 and client.in_bytes == 2 + 2 + len(got[1][2]) + 1
        isub.unsubscribe()
        await nc.publish("orders.3", b"p3")
        await _ready(nc)
        assert len(got) == 2
        await nc.close()


async def test_internal_subscription_takes_a_read_as_one_run() -> None:
    """``run`` (the one run interface): the messages of one read that reached the subscription,
    in order, as ``callback`` would get them one by one; what comes alone still takes ``callback``."""
    async with Server() as srv:
        runs: list[tuple[list[str], list[str], list[bytes | None], list[bytes]]] = []
        single: list[tuple[str, str, bytes | None, bytes]] = []

        def run(
            subjects: list[str], replies: list[str], hdrs: list[bytes | None], payloads: list[bytes], client: Any
        ) -> None:
            assert isinstance(client, ClientConnection)
            runs.append((list(subjects), list(replies), list(hdrs), list(payloads)))

        srv.subscribe_internal("in.>", lambda s, r, h, p, c: single.append((s, r, h, p)), run=run)
        client = await _raw(srv.port)
        hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
        pubs = b"".join(b"PUB in.a r%d 2\r\np%d\r\n" % (i, i) for i in range(5))
        hpubs = b"".join(
            b"HPUB in.%d r%d %d %d\r\n%bq%d\r\n" % (i, i, len(hdr), len(hdr) + 2, hdr, i) for i in range(3)
        )
        out, closed = await _exchange(client, pubs + hpubs)
        assert not closed and out == b"PONG\r\n"
        got = [m for subjects, replies, hdrs, payloads in runs for m in zip(subjects, replies, hdrs, payloads, strict=True)]
        got += single
        assert [m for m in got if m[2] is None] == [("in.a", f"r{i}", None, b"p%d" % i) for i in range(5)]
        assert [m for m in got if m[2] is not None] == [(f"in.{i}", f"r{i}", hdr, b"q%d" % i) for i in range(3)]
        assert runs  # at least one run came whole
        client.close()


async def test_internal_subscription_answers_requests() -> None:
    async with Server() as srv:

        def responder(subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
            srv.publish_internal(reply, b"pong:" + payload)

        srv.subscribe_internal("svc.ping", responder)
        nc = await nats.connect(srv.client_url)
        msg = await nc.request("svc.ping", b"x", timeout=TIMEOUT)
        assert msg.data == b"pong:x"
        # An internal subscription that does not answer still counts as interest: no 503.
        srv.subscribe_internal("svc.silent", lambda *a: None)
        with pytest.raises(nats.errors.TimeoutError):
            await nc.request("svc.silent", b"", timeout=0.3)
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("svc.none", b"", timeout=TIMEOUT)
        await nc.close()


async def test_internal_queue_members_share_work_with_clients() -> None:
    async with Server() as srv:
        internal: list[bytes] = []
        srv.subscribe_internal("work", lambda s, r, h, p, c: internal.append(p), queue="g")
        nc = await nats.connect(srv.client_url)
        sub = await nc.subscribe("work", queue="g")
        await _ready(nc)
        for i in range(200):
            srv.publish_internal("work", str(i).encode())
        await _ready(nc)
        external = [m.data for m in [await sub.next_msg(timeout=TIMEOUT) for _ in range(200 - len(internal))]]
        assert sorted(internal + external, key=int) == [str(i).encode() for i in range(200)]
        assert internal and external  # random choice: both members got some
        await nc.close()


async def test_publish_internal_show_subject_and_result() -> None:
    async with Server() as srv:
        with await _raw(srv.port) as client:
            out, _ = await _exchange(client, b"SUB deliver.abc 42\r\n")
            assert out == b"PONG\r\n"
            assert srv.publish_internal("deliver.abc", b"data", reply="$JS.ACK.x", show_subject="orders.1")
            hdr = b"NATS/1.0\r\nNats-Sequence: 1\r\n\r\n"
            assert srv.publish_internal("deliver.abc", b"d2", hdr=hdr, show_subject="orders.2")
            assert srv.publish_internal("deliver.abc", b"plain")
            assert not srv.publish_internal("nobody.here", b"x")
            out, _ = await _exchange(client, b"")
        total = len(hdr) + 2
        assert out == (
            b"MSG orders.1 42 $JS.ACK.x 4\r\ndata\r\n"
            + f"HMSG orders.2 42 {len(hdr)} {total}\r\n".encode()
            + hdr
            + b"d2\r\nMSG deliver.abc 42 5\r\nplain\r\nPONG\r\n"
        )


async def test_internal_callback_gets_the_shown_subject() -> None:
    async with Server() as srv:
        got: list[tuple[str, str]] = []
        srv.subscribe_internal("deliver.abc", lambda subject, reply, *rest: got.append((subject, reply)))
        assert srv.publish_internal("deliver.abc", b"data", reply="r.1", show_subject="orders.1")
        assert srv.publish_internal("deliver.abc", b"plain")
        assert got == [("orders.1", "r.1"), ("deliver.abc", "")]


async def test_interest_queries_and_change_hook() -> None:
    async with Server() as srv:
        events: list[tuple[str, bool]] = []
        remove = srv.on_interest_change(lambda sub, added: events.append((sub.subject, added)))
        assert not srv.has_interest("a.b")
        isub = srv.subscribe_internal("a.*", lambda *a: None)
        assert srv.has_interest("a.b") and not srv.has_interest("a.b", clients_only=True)
        with await _raw(srv.port) as client:
            await _exchange(client, b"SUB a.b 1\r\nSUB a.> q 2\r\nSUB a.> q 3\r\n")
            assert srv.interest_count("a.b") == 4
            assert srv.interest_count("a.b", clients_only=True) == 3
            assert srv.has_interest("a.b", clients_only=True)
            await _exchange(client, b"UNSUB 1\r\n")
            assert srv.interest_count("a.b", clients_only=True) == 2
        # Closing the connection removes its subscriptions.
        for _ in range(100):
            if srv.interest_count("a.b", clients_only=True) == 0:
                break
            await asyncio.sleep(0.01)
        assert srv.interest_count("a.b", clients_only=True) == 0
        isub.unsubscribe()
        assert not srv.has_interest("a.b")
        remove()
        srv.subscribe_internal("z", lambda *a: None)
        assert events[0] == ("a.*", True) and events[-1] == ("a.*", False)
        assert ("a.b", True) in events and ("a.b", False) in events
        assert all(subject != "z" for subject, _ in events)


async def test_failing_callback_does_not_break_routing() -> None:
    async with Server() as srv:

        def broken(*args: Any) -> None:
            raise RuntimeError("boom")

        srv.subscribe_internal("x", broken)
        with await _raw(srv.port) as client:
            out, closed = await _exchange(client, b"SUB x 1\r\nPUB x 1\r\na\r\n")
        assert (out, closed) == (b"MSG x 1 1\r\na\r\nPONG\r\n", False)


async def test_shutdown_flushes_pending_messages() -> None:
    srv = Server()
    await srv.start()
    client = await _raw(srv.port)
    out, _ = await _exchange(client, b"SUB bulk 1\r\n")
    assert out == b"PONG\r\n"
    rest = asyncio.create_task(asyncio.to_thread(client.read_until_closed, TIMEOUT))
    for i in range(2000):
        srv.publish_internal("bulk", b"%d" % i)
    await srv.shutdown()  # same loop turn: all 2000 are still queued in the server
    data = await rest
    assert data == b"".join(b"MSG bulk 1 %d\r\n%d\r\n" % (len(b"%d" % i), i) for i in range(2000))
    client.close()


class _FakeEngine:
    events: list[str] = []

    def __init__(self, account: Any) -> None:
        self.server = account  # an engine talks to its account, which knows the server
        assert account.name == "$G"
        self.started = False
        self.stream_index = StreamIndex()  # (what ServerJetStream sums of it: reservations, API counts)
        self.api_total = self.api_errors = 0

    async def start(self) -> None:
        self.started = True
        _FakeEngine.events.append(f"start listening={self.server.server.port != 0}")

    async def stop(self) -> None:
        self.started = False
        _FakeEngine.events.append(f"stop clients={len(self.server.server.clients)}")

    def signal_pull_consumers(self) -> None:
        """Server.shutdown tells an engine's waiting pull requests first (92090d8): none here."""

    # The server's JetStream (`server_jetstream.ServerJetStream`) keeps its engines by account, their usage summed.
    account_name = "$G"

    def cached_usage(self) -> tuple[int, int]:
        return (0, 0)

    def usage_is_estimate(self) -> bool:
        return False


async def test_jetstream_engine_lifecycle(monkeypatch: pytest.MonkeyPatch) -> None:
    import pyjetstream.server.accounts

    monkeypatch.setattr(pyjetstream.server.accounts, "JetStreamEngine", _FakeEngine)
    _FakeEngine.events = []
    async with Server(jetstream=True) as srv:
        assert isinstance(srv.jetstream, _FakeEngine) and srv.jetstream_enabled
        with await _raw(srv.port, connect=False) as client:
            assert client.info["jetstream"] is True
        nc = await nats.connect(srv.client_url)
    # Started before the listener; stopped after every client was drained.
    assert _FakeEngine.events == ["start listening=False", "stop clients=0"]
    await nc.close()


class _FakeTransport:
    def __init__(self, stuck: bool = False) -> None:
        self.written = bytearray()
        self.reading = True
        self.aborted = False
        self.buffered = 0
        self.stuck = stuck  # a socket that takes nothing: everything stays buffered
        self.protocol: ClientConnection

    def write(self, data: bytes) -> None:
        self.written += data
        if self.stuck:
            self.buffered += len(data)

    def writelines(self, parts: list[bytes]) -> None:
        self.write(b"".join(parts))

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True

    def close(self) -> None:
        asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.aborted = True
        self.close()


def _fake_client(srv: Server, stuck: bool = False) -> tuple[ClientConnection, _FakeTransport]:
    conn = ClientConnection(srv)
    transport = _FakeTransport(stuck)
    transport.protocol = conn
    conn.connection_made(transport)  # type: ignore[arg-type]
    conn.data_received(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
    return conn, transport


async def test_producer_stalls_while_consumer_is_behind() -> None:
    async with Server() as srv:
        consumer, _ = _fake_client(srv)
        producer, ptransport = _fake_client(srv)
        consumer.data_received(b"SUB s 1\r\n")
        consumer.pause_writing()  # the transport is above its high-water mark
        producer.data_received(b"PUB s 1\r\na\r\n")
        assert not ptransport.reading
        consumer.resume_writing()  # producers are released on the next loop pass
        await asyncio.sleep(0)
        assert ptransport.reading


async def test_write_deadline_cuts_a_stuck_consumer() -> None:
    """A socket that takes nothing for write_deadline cuts the client, however little is pending
    (nats-server's write deadline is on each write, not on max_pending)."""
    async with Server(write_deadline=0.05) as srv:
        consumer, transport = _fake_client(srv, stuck=True)
        consumer.data_received(b"SUB s 1\r\n")
        srv.publish_internal("s", b"x")
        for _ in range(100):
            if consumer.closed:
                break
            await asyncio.sleep(0.01)
        assert transport.aborted and consumer.close_reason == "Slow Consumer (Write Deadline)"
        assert srv.slow_consumers == 1


async def test_pending_bytes_limit_cuts_consumer() -> None:
    async with Server(max_pending=10_000, max_payload=1000) as srv:
        stuck, stuck_transport = _fake_client(srv, stuck=True)
        fine, _ = _fake_client(srv)
        for conn in (stuck, fine):
            conn.data_received(b"SUB s 1\r\n")
        for _ in range(200):  # 200 x ~115 bytes over many loop turns
            srv.publish_internal("s", b"x" * 100)
            await asyncio.sleep(0)
        assert stuck.closed and stuck_transport.aborted
        assert stuck.close_reason == "Slow Consumer (Pending Bytes)"
        assert 10_000 - 200 < len(stuck_transport.written) <= 10_000 + 200
        assert not fine.closed and fine.out_msgs == 200
        assert srv.slow_consumers == 1


def test_subscription_prefix_cache() -> None:
    sub = Subscription("a.b", "7")
    assert sub.msg_start() == b"MSG a.b 7 " and sub.hmsg_start() == b"HMSG a.b 7 "
    assert Subscription("a.*", "1").msg_prefix == b""


async def test_push_consumers_share_one_interest_listener_per_engine(tmp_path: Any) -> None:
    """An account's push consumers are told of SUB/UNSUB on their deliver subjects by one listener
    (`push_delivery.DeliverInterest`, owned by the account's JetStream engine), however many there
    are, and a stopped engine takes it away: no listener is left behind by JetStream turned off."""
    async with Server(jetstream=True, store_dir=str(tmp_path)) as srv:
        account = srv.global_account
        before = len(account._interest_callbacks)
        nc = await nats.connect(srv.client_url)
        try:
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s.>"])
            for i in range(5):
                await js.add_consumer("S", durable_name=f"P{i}", deliver_subject=f"d.{i}")
            assert len(account._interest_callbacks) == before + 1
            engine = account.jetstream
            assert sorted(engine.deliver_interest.by_subject) == [f"d.{i}" for i in range(5)]
            sub = await nc.subscribe("d.3")
            await js.publish("s.x", b"1")
            assert (await sub.next_msg(timeout=10)).data == b"1"
            await srv.stop_jetstream()
            assert len(account._interest_callbacks) == before
        finally:
            await nc.close()
