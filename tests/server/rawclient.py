"""A raw-socket NATS peer for protocol tests: exact bytes in, exact bytes out.

Waits are conditions with deadlines (a PONG, a CRLF, end of stream), never bare sleeps.
"""

from __future__ import annotations

import json
import socket
import time
from typing import Any

DEFAULT_TIMEOUT = 5.0

QUIET_CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n'


class RawClient:
    def __init__(self, port: int, rcvbuf: int = 0) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Set before connect so the TCP window is small from the start.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(DEFAULT_TIMEOUT)
        self.sock.connect(("127.0.0.1", port))
        self.buf = b""
        self.eof = False
        line = self.read_line()
        assert line.startswith(b"INFO {") and line.endswith(b"\r\n"), line
        self.info: dict[str, Any] = json.loads(line[5:].strip())

    @classmethod
    def connected(cls, port: int, connect: bytes = QUIET_CONNECT) -> RawClient:
        """Connect, send ``connect`` and wait until the server answered a PING."""
        client = cls(port)
        client.send(connect + b"PING\r\n")
        got = client.read_until(b"PONG\r\n")
        assert got.endswith(b"PONG\r\n"), got
        return client

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self, deadline: float) -> bool:
        """Read more bytes; False at end of stream (or a reset)."""
        if self.eof:
            return False
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(f"timed out; received so far: {self.buf!r}")
        self.sock.settimeout(remaining)
        try:
            data = self.sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        except TimeoutError:
            raise TimeoutError(f"timed out; received so far: {self.buf!r}") from None
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def read_line(self, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        deadline = time.monotonic() + timeout
        while b"\r\n" not in self.buf:
            if not self._fill(deadline):
                raise EOFError(f"closed before a full line: {self.buf!r}")
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line + b"\r\n"

    def read_until(self, marker: bytes, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        """Everything up to and including ``marker``, or up to end of stream if it closes first."""
        deadline = time.monotonic() + timeout
        while marker not in self.buf:
            if not self._fill(deadline):
                out, self.buf = self.buf, b""
                return out
        index = self.buf.index(marker) + len(marker)
        out, self.buf = self.buf[:index], self.buf[index:]
        return out

    def read_until_closed(self, timeout: float = DEFAULT_TIMEOUT) -> bytes:
        deadline = time.monotonic() + timeout
        while self._fill(deadline):
            pass
        out, self.buf = self.buf, b""
        return out

    def exchange(self, data: bytes, timeout: float = DEFAULT_TIMEOUT) -> tuple[bytes, bool]:
        """Send ``data`` + ``PING``; return what came back and whether the server closed.

        An open connection answers the PING, so "open" is proven, not assumed.
        """
        try:
            self.send(data + b"PING\r\n")
        except (BrokenPipeError, ConnectionResetError):
            return self.read_until_closed(timeout), True
        out = self.read_until(b"PONG\r\n", timeout)
        if out.endswith(b"PONG\r\n"):
            return out, False
        return out + self.read_until_closed(timeout), True

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
