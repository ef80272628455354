"""A slow consumer among fast ones (issue #15, found by bench/load.py), on both targets, over raw
sockets: one producer publishes at a steady pace to a subject two connections subscribe to; one
reads everything, the other stops reading. nats-server stalls the producer a few milliseconds at
most per read (client.go ``stalledWait``), goes on reading it, and cuts the consumer that does not
read once it holds ``max_pending`` ("Slow Consumer (Pending Bytes)"). So the fast subscriber keeps
receiving with a short delay, the producer is never held for long, and only the slow one is closed.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from tests.server.rawclient import RawClient
from tests.support.targets import Target

StartServer = Callable[..., Target]

PAYLOAD = 1024
BURST = 64  # messages per burst
BURST_EVERY = 0.01  # s: ~6.5 MB/s, far more than a socket that is not read can take
RUN_FOR = 4.0  # s of publishing
MAX_PENDING = 1024 * 1024
# The longest the fast subscriber may wait for a message: generous for a loaded 2-core machine, far
# below the write deadline (10 s) that an unbounded producer stall would make it wait.
MAX_DELAY = 2.5


def _connect(name: str) -> bytes:
    opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "name": name}
    return f"CONNECT {json.dumps(opts)}\r\n".encode()


def _closed_connections(target: Target) -> list[dict[str, Any]]:
    url = f"http://127.0.0.1:{target.http_port}/connz?state=closed"
    with urllib.request.urlopen(url, timeout=10) as resp:
        return list(json.loads(resp.read()).get("connections") or [])


def _wait_named_closed(target: Target, timeout: float) -> list[dict[str, Any]]:
    """The closed connections that named themselves (ours), once there are any (or [] at timeout)."""
    deadline = time.monotonic() + timeout
    closed: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        closed = [c for c in _closed_connections(target) if c.get("name")]
        if closed:
            break
        time.sleep(0.05)
    return closed


def test_slow_consumer_does_not_stall_the_producer_or_its_other_subscribers(start_server: StartServer) -> None:
    target = start_server(jetstream=False, max_pending=MAX_PENDING, max_payload=64 * 1024, http_port=-1)

    slow = RawClient(target.port, rcvbuf=4096)
    slow.send(_connect("slow") + b"SUB data 1\r\nPING\r\n")
    assert slow.read_until(b"PONG\r\n") == b"PONG\r\n"

    fast = RawClient(target.port)
    fast.send(_connect("fast") + b"SUB data 1\r\nPING\r\n")
    assert fast.read_until(b"PONG\r\n") == b"PONG\r\n"

    # The fast subscriber reads on a thread and records each message's delay: the payload starts
    # with the time it was published.
    delays: list[float] = []
    fast_done = threading.Event()
    header_len = len(b"MSG data 1 %d\r\n" % PAYLOAD)
    frame_len = header_len + PAYLOAD + 2

    def read_fast() -> None:
        buf = bytearray()
        fast.sock.settimeout(30)
        try:
            while not fast_done.is_set():
                data = fast.sock.recv(1 << 20)
                if not data:
                    break
                now = time.monotonic()
                buf.extend(data)
                while True:
                    if buf.startswith(b"PING\r\n"):  # the server's first PING
                        fast.send(b"PONG\r\n")
                        del buf[:6]
                        continue
                    if len(buf) < frame_len:
                        break
                    assert buf[:header_len] == b"MSG data 1 %d\r\n" % PAYLOAD, bytes(buf[:64])
                    stamp = bytes(buf[header_len : header_len + 20]).rstrip(b" ")
                    if stamp == b"END":
                        fast_done.set()
                        break
                    delays.append(now - float(stamp))
                    del buf[:frame_len]
        except OSError:
            pass
        fast_done.set()

    reader = threading.Thread(target=read_fast, daemon=True)
    reader.start()

    pub = RawClient(target.port)
    pub.send(_connect("producer") + b"PING\r\n")
    assert pub.read_until(b"PONG\r\n") == b"PONG\r\n"
    pub.sock.settimeout(30)
    sent = 0
    start = time.monotonic()
    next_burst = start
    while time.monotonic() - start < RUN_FOR:
        stamp = b"%-20.6f" % time.monotonic()
        msg = b"PUB data %d\r\n" % PAYLOAD + stamp + b"x" * (PAYLOAD - 20) + b"\r\n"
        pub.send(msg * BURST)  # a burst shares its stamp: the delay is measured from the burst
        sent += BURST
        next_burst += BURST_EVERY
        pause = next_burst - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    pub.send(b"PUB data %d\r\n" % PAYLOAD + b"END".ljust(PAYLOAD) + b"\r\n" + b"PING\r\n")
    out = pub.read_until(b"PONG\r\n", timeout=30)
    assert out.replace(b"PING\r\n", b"") == b"PONG\r\n"  # the producer is served (and never cut)

    assert fast_done.wait(30), f"the fast subscriber got {len(delays)} of {sent}"
    assert len(delays) == sent  # every message, for the one that reads
    print(f"longest delivery delay {max(delays):.3f} s over {sent} messages")
    assert max(delays) < MAX_DELAY, f"longest delivery delay {max(delays):.2f} s"

    # The one that stopped reading was cut as nats-server does: at max_pending, without an -ERR.
    rest = slow.read_until_closed(timeout=30)
    assert b"-ERR" not in rest
    closed = _wait_named_closed(target, 10)
    assert [(c["name"], c["reason"]) for c in closed] == [("slow", "Slow Consumer (Pending Bytes)")]

    # The others are still served.
    reader.join(10)
    for client in (fast, pub):
        client.send(b"PING\r\n")
        assert client.read_until(b"PONG\r\n", timeout=10).endswith(b"PONG\r\n")
    for client in (slow, fast, pub):
        client.close()


def test_write_deadline_cuts_a_consumer_far_below_max_pending(start_server: StartServer) -> None:
    """nats-server's write deadline is on each write to the socket: a consumer that takes nothing
    for that long is cut ("Slow Consumer (Write Deadline)") with only a few MB pending, far below
    the default max_pending of 64 MiB, and the publisher is not held up meanwhile."""
    target = start_server(jetstream=False, write_deadline="1s", http_port=-1)
    slow = RawClient(target.port, rcvbuf=4096)
    slow.send(_connect("slow") + b"SUB data 1\r\nPING\r\n")
    assert slow.read_until(b"PONG\r\n") == b"PONG\r\n"
    pub = RawClient(target.port)
    pub.send(_connect("producer") + b"PING\r\n")
    assert pub.read_until(b"PONG\r\n") == b"PONG\r\n"
    # 8 MiB: more than the kernel's send and receive buffers hold, far below max_pending.
    chunk = (b"PUB data 65536\r\n" + b"y" * 65536 + b"\r\n") * 16
    for _ in range(8):
        pub.send(chunk)
    pub.send(b"PING\r\n")
    out = pub.read_until(b"PONG\r\n", timeout=30)
    assert out.replace(b"PING\r\n", b"") == b"PONG\r\n"
    # Not a byte read from the slow socket until the server has given up on it (reading would let
    # the blocked write finish).
    closed = _wait_named_closed(target, 30)
    assert [(c["name"], c["reason"]) for c in closed] == [("slow", "Slow Consumer (Write Deadline)")]
    pub.send(b"PING\r\n")
    assert pub.read_until(b"PONG\r\n", timeout=10).endswith(b"PONG\r\n")
    for client in (slow, pub):
        client.close()
