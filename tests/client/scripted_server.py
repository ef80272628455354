"""A scripted NATS server on a real socket, for behaviours a well-behaved server will not show on demand:
a server that stops answering PINGs, or sends a chosen ``-ERR`` at a chosen moment.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any


class ScriptedServer:
    def __init__(self, info: dict[str, Any] | None = None, *, answer_pings: bool = True) -> None:
        self.info = {
            "server_id": "SCRIPTED",
            "version": "2.9.10",
            "proto": 1,
            "headers": True,
            "max_payload": 1048576,
            **(info or {}),
        }
        self.answer_pings = answer_pings
        self.handshake_error: str | None = None  # sent instead of the PONG answering CONNECT+PING
        self.lines: list[bytes] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.connections = 0
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    async def start(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self.writers:
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()

    def send_all(self, data: bytes) -> None:
        for writer in self.writers:
            if not writer.is_closing():
                writer.write(data)

    def drop_all(self) -> None:
        for writer in self.writers:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        writer.write(b"INFO " + json.dumps(self.info).encode() + b"\r\n")
        handshake_done = False
        try:
            while line := await reader.readline():
                self.lines.append(line)
                if line.startswith(b"PING"):
                    if not handshake_done:
                        handshake_done = True
                        if self.handshake_error is not None:
                            writer.write(f"-ERR '{self.handshake_error}'\r\n".encode())
                            await writer.drain()
                            writer.close()
                            return
                        writer.write(b"PONG\r\n")
                    elif self.answer_pings:
                        writer.write(b"PONG\r\n")
                elif line.startswith((b"PUB", b"HPUB")):
                    size = int(line.split()[-1])
                    await reader.readexactly(size + 2)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
