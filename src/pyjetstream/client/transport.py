"""The socket side of a connection: an asyncio Protocol that hands bytes to the client.

One ``WireProtocol`` per TCP connection attempt. The client ignores callbacks from a protocol that is
no longer its current one, so a late ``connection_lost`` from an old socket cannot disturb a newer one.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client

# Write-buffer size at which the transport asks us to pause. Large enough that a publish burst keeps
# the socket busy, small enough to bound memory per connection.
WRITE_HIGH_WATER = 4 * 1024 * 1024
WRITE_LOW_WATER = 1024 * 1024


class WireProtocol(asyncio.Protocol):
    def __init__(self, client: Client) -> None:
        self.client = client
        self.transport: asyncio.Transport | None = None
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have the same methods.
        writer = cast(asyncio.Transport, transport)
        self.transport = writer
        writer.set_write_buffer_limits(high=WRITE_HIGH_WATER, low=WRITE_LOW_WATER)

    def data_received(self, data: bytes) -> None:
        self.client._data_received(self, data)

    def eof_received(self) -> bool:
        return False  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)
        self.client._connection_lost(self, exc)

    def pause_writing(self) -> None:
        self.client._pause_writing(self)

    def resume_writing(self) -> None:
        self.client._resume_writing(self)
