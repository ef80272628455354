"""Protocol abuse over raw sockets (issue #15), on both targets: split and oversized control lines,
huge header sizes, binary garbage, a PUB flood from a client that never reads, thousands of SUBs on
one connection. The server answers as nats-server does, closes only the offender (a bystander
keeps exchanging messages) and its memory stays bounded."""

from __future__ import annotations

import os
import socket
import time

import pytest
from tests.server.rawclient import QUIET_CONNECT, RawClient
from tests.support.targets import Target


def rss_kib(target: Target) -> int:
    assert target.proc is not None
    with open(f"/proc/{target.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def bystander_ok(port: int) -> None:
    """A fresh and an old connection still get messages through."""
    with RawClient.connected(port) as c:
        out, closed = c.exchange(b"SUB by 1\r\nPUB by 2\r\nok\r\n")
        assert not closed and out == b"MSG by 1 2\r\nok\r\nPONG\r\n", out


def test_split_control_lines_byte_by_byte(server: Target) -> None:
    with RawClient.connected(server.port) as c:
        for b in b"SUB s 1\r\nPUB s 5\r\nhello\r\nHPUB s 12 14\r\nNATS/1.0\r\n\r\nhi\r\n":
            c.send(bytes([b]))
        out, closed = c.exchange(b"")
    assert not closed
    assert out == b"MSG s 1 5\r\nhello\r\nHMSG s 1 12 14\r\nNATS/1.0\r\n\r\nhi\r\nPONG\r\n", out


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("oversized-no-crlf", b"PUB " + b"a" * 70000, b"-ERR 'maximum control line exceeded'\r\n"),
        ("huge-header-size", b"HPUB foo 999999999 999999999\r\n", b"-ERR 'Maximum Payload Violation'\r\n"),
        ("negative-size", b"PUB foo -5\r\n", b""),
        ("binary-garbage", bytes(range(256)) * 4, b"-ERR 'Unknown Protocol Operation'\r\n"),
    ],
)
def test_offender_closed_others_served(server: Target, name: str, data: bytes, expected: bytes) -> None:
    with RawClient.connected(server.port) as old:
        with RawClient.connected(server.port) as bad:
            out, closed = bad.exchange(data)
        assert closed, out
        assert out == expected, (name, out)
        out, closed = old.exchange(b"SUB x 1\r\nPUB x 1\r\na\r\n")
        assert not closed and out == b"MSG x 1 1\r\na\r\nPONG\r\n"
    bystander_ok(server.port)


def test_pub_flood_without_reading(server: Target) -> None:
    """A client that subscribes to what it floods and never reads becomes a slow consumer and is
    closed; the server's memory stays bounded and everyone else is served."""
    before = rss_kib(server)
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(0.5)
    sock.recv(4096)  # INFO
    sock.sendall(QUIET_CONNECT + b"SUB f 1\r\n")
    chunk = b"PUB f 1000\r\n" + b"x" * 1000 + b"\r\n"
    block = chunk * 64
    sent = 0
    deadline = time.monotonic() + 30
    closed = False
    while sent < 200 * 1024 * 1024 and time.monotonic() < deadline:
        try:
            sock.sendall(block)
            sent += len(block)
        except (BrokenPipeError, ConnectionResetError):
            closed = True
            break
        except TimeoutError:
            # The server stopped reading (it pushes back) — as good as a close for memory.
            break
    grown = rss_kib(server) - before
    bystander_ok(server.port)
    sock.close()
    assert closed or sent < 200 * 1024 * 1024
    assert grown < 300 * 1024, f"server RSS grew by {grown} KiB while flooded ({sent} bytes sent)"


def test_thousands_of_subs_on_one_connection(server: Target) -> None:
    before = rss_kib(server)
    with RawClient.connected(server.port) as c:
        subs = b"".join(b"SUB many.%d.* %d\r\n" % (i, i) for i in range(1, 5001))
        out, closed = c.exchange(subs)
        assert not closed and out == b"PONG\r\n"
        out, closed = c.exchange(b"PUB many.4242.x 1\r\nz\r\n")
        assert not closed and out == b"MSG many.4242.x 4242 1\r\nz\r\nPONG\r\n", out
    bystander_ok(server.port)
    assert rss_kib(server) - before < 200 * 1024
    assert os.path.exists(f"/proc/{server.proc.pid}")  # type: ignore[union-attr]
