"""The NATS byte stream over WebSocket messages, as the connection above sees it.

A NATS connection, client or server side, writes to an asyncio transport. Over WebSocket
(nats-server's ``websocket.go``, nats.go's client side) each of its writes goes out as one binary
message, and everything else (closing, aborting, flow control, extra info) is the underlying
socket's. Client and server both hand their connection a `MessageTransport` around their
wsproto connection, so the rules live once; the framing and the upgrade stay with each side,
which differ (masking, the HTTP handshake, compression).
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

__all__ = ["BinarySender", "MessageTransport"]


class BinarySender(Protocol):
    """A WebSocket connection that sends binary messages and closes with a close frame."""

    def send_binary(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class MessageTransport:
    """An asyncio-transport look-alike whose each ``write`` is one binary WebSocket message."""

    def __init__(self, conn: BinarySender, raw: asyncio.BaseTransport) -> None:
        self._conn = conn
        self._raw: Any = raw  # a socket or TLS transport: write-buffer calls are its own

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._conn.send_binary(bytes(data))

    def writelines(self, parts: list[bytes]) -> None:
        self._conn.send_binary(b"".join(parts))

    def close(self) -> None:
        self._conn.close()

    def abort(self) -> None:
        self._raw.abort()

    def is_closing(self) -> bool:
        return bool(self._raw.is_closing())

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._raw.get_extra_info(name, default)

    def pause_reading(self) -> None:
        self._raw.pause_reading()

    def resume_reading(self) -> None:
        self._raw.resume_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self._raw.set_write_buffer_limits(high=high, low=low)

    def get_write_buffer_size(self) -> int:
        return int(self._raw.get_write_buffer_size())
