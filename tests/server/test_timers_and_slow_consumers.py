"""Server PINGs, stale connections and slow consumers, on both targets."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable

from tests.server.rawclient import QUIET_CONNECT, RawClient
from tests.support.targets import Target

StartServer = Callable[..., Target]


def test_stale_connection(start_server: StartServer) -> None:
    target = start_server(jetstream=False, ping_interval="100ms", ping_max=2)
    with RawClient(target.port) as client:
        client.send(QUIET_CONNECT)
        # Two unanswered PINGs, then the third interval finds the client stale.
        out = client.read_until_closed(timeout=10)
    assert out == b"PING\r\nPING\r\n-ERR 'Stale Connection'\r\n"


def test_answered_pings_keep_connection_open(start_server: StartServer) -> None:
    target = start_server(jetstream=False, ping_interval="100ms", ping_max=1)
    with RawClient(target.port) as client:
        client.send(QUIET_CONNECT)
        for _ in range(4):
            assert client.read_line(timeout=10) == b"PING\r\n"
            client.send(b"PONG\r\n")
        # Still connected: a PING of ours gets its PONG (server PINGs may come first).
        client.send(b"PING\r\n")
        out = client.read_until(b"PONG\r\n", timeout=10)
        assert out.replace(b"PING\r\n", b"") == b"PONG\r\n"



def test_first_ping_is_short_after_connect_and_full_before(start_server: StartServer) -> None:
    """nats-server sets its short first PING (2 s, plus up to a fifth) when CONNECT arrives; a
    client that has not sent CONNECT yet waits the full ping_interval for its first PING."""
    target = start_server(jetstream=False, ping_interval="6s")
    with RawClient(target.port) as silent, RawClient(target.port) as client:
        start = time.monotonic()
        client.send(QUIET_CONNECT)
        assert client.read_line(timeout=20) == b"PING\r\n"
        assert time.monotonic() - start < 5.0  # the short first PING, not the 6 s interval
        # The silent one (connected at the same time, no CONNECT) has had no PING in all that time.
        try:
            early = silent.read_line(timeout=0.5)
        except TimeoutError:
            early = b""
        assert early == b""
        assert silent.read_line(timeout=20) == b"PING\r\n"  # at the full interval
        assert time.monotonic() - start >= 5.5


def _varz(target: Target) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{target.http_port}/varz", timeout=10) as resp:
        return json.loads(resp.read())


def test_slow_consumer_is_cut_and_others_are_not(start_server: StartServer) -> None:
    # Both servers stall the producer only a few milliseconds per read while a consumer is behind,
    # so the cut comes from max_pending or the write deadline (nats-server's blocked write usually
    # hits it first). The publisher sends the next piece only once the fast reader (a thread of a
    # process on a loaded machine) has all but WINDOW of what was sent: a reader that keeps up is
    # one that is never further behind, however the machine schedules it. (The 12 MB sent at once
    # outran a reader paused 0.1 s: both servers then cut it at max_pending, flaky under load.)
    target = start_server(
        jetstream=False, max_pending=1024 * 1024, max_payload=64 * 1024, write_deadline="1s", http_port=-1
    )
    payload = b"x" * 8192
    count, piece = 1500, 16  # 12 MB in 131 kB pieces: far beyond max_pending plus what the kernel buffers
    frame = b"MSG data 1 8192\r\n" + payload + b"\r\n"
    window = len(frame) * piece  # 131 kB, an eighth of max_pending

    # A consumer that never reads, with a tiny receive window.
    slow = RawClient(target.port, rcvbuf=4096)
    slow.send(QUIET_CONNECT + b"SUB data 1\r\nPING\r\n")
    assert slow.read_until(b"PONG\r\n") == b"PONG\r\n"

    # A consumer that keeps up, reading on a thread.
    fast = RawClient.connected(target.port)
    out, _ = fast.exchange(b"SUB data 1\r\n")
    assert out == b"PONG\r\n"
    received = bytearray()
    progress = threading.Condition()

    def read_fast() -> None:
        expected = len(frame) * count
        fast.sock.settimeout(60)  # (the last read's deadline was left on the socket)
        # (The server's first PING may come between two messages, or after the last.)
        while len(received) < expected or not received.endswith((frame, b"\r\nPING\r\n")):
            try:
                data = fast.sock.recv(1 << 20)
            except OSError:
                break
            if not data:
                break
            with progress:
                received.extend(data)
                progress.notify_all()
        with progress:
            progress.notify_all()

    reader = threading.Thread(target=read_fast, daemon=True)
    reader.start()

    def has_read(size: int) -> None:
        with progress:
            done = progress.wait_for(lambda: len(received) >= size or not reader.is_alive(), timeout=60)
        assert done and reader.is_alive(), f"the fast reader stopped at {len(received)} bytes"

    pub = RawClient.connected(target.port)
    for sent in range(0, count, piece):
        has_read(len(frame) * sent - window)
        pub.send((b"PUB data 8192\r\n" + payload + b"\r\n") * min(piece, count - sent))
    out, closed = pub.exchange(b"", timeout=30)
    # The publisher is not affected (the server's first PING comes 2 s after CONNECT: on a loaded
    # machine it may come before the PONG).
    assert (out.replace(b"PING\r\n", b""), closed) == (b"PONG\r\n", False)

    reader.join(60)
    assert not reader.is_alive()
    # Every message, in order, for the fast consumer (and the server's first PING, 2 s after
    # CONNECT, when it took longer than that).
    assert bytes(received).replace(b"PING\r\n", b"", 1) == frame * count

    # The slow consumer was disconnected: reading it drains what was in flight, then ends.
    rest = slow.read_until_closed(timeout=30)
    assert len(rest) < len(frame) * count
    assert b"-ERR" not in rest  # nats-server cuts a slow consumer without an -ERR
    assert _varz(target)["slow_consumers"] >= 1
    for client in (slow, fast, pub):
        client.close()


def test_connection_and_subscription_limits(start_server: StartServer) -> None:
    target = start_server(jetstream=False, max_connections=1, max_subscriptions=2)
    with RawClient.connected(target.port) as first:
        out, closed = first.exchange(b"SUB a 1\r\nSUB b 2\r\nSUB c 3\r\n")
        assert (out, closed) == (b"-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n", False)
        with RawClient(target.port) as second:  # INFO first, then the refusal
            assert second.read_until_closed() == b"-ERR 'maximum connections exceeded'\r\n"
        out, closed = first.exchange(b"PUB a 1\r\nx\r\n")
        assert (out, closed) == (b"MSG a 1 1\r\nx\r\nPONG\r\n", False)
