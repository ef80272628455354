"""A tiny raw NATS client for tests that must see exact bytes (PubAck text, header blocks).

nats-py parses headers into a dict and hides the status line's exact form; these tests compare
the bytes the servers write, so they read the socket themselves.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import dataclass
from typing import Any


@dataclass
class RawMsg:
    subject: str
    reply: str
    hdr: bytes | None
    data: bytes

    @property
    def status(self) -> str:
        """The status code of a header-only status message ("" when none)."""
        if not self.hdr:
            return ""
        first = self.hdr.split(b"\r\n", 1)[0].decode()
        parts = first.split(" ", 2)
        return parts[1] if len(parts) > 1 else ""

    def json(self) -> Any:
        return json.loads(self.data)


class RawNats:
    """Connect, subscribe to one inbox wildcard, and send PUB/HPUB requests by hand."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: dict[str, Any]):
        self.reader = reader
        self.writer = writer
        self.info = info
        self._ids = itertools.count(1)
        self._inbox = f"_RAW.{id(self)}"
        self._waiters: dict[str, asyncio.Future[RawMsg]] = {}
        self._queue: asyncio.Queue[RawMsg] = asyncio.Queue()
        self._streams: dict[str, asyncio.Queue[RawMsg]] = {}
        self._task: asyncio.Task[None] | None = None
        self._pong: asyncio.Future[None] | None = None

    @classmethod
    async def connect(cls, url: str, user: str = "", password: str = "") -> RawNats:
        host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        line = await reader.readline()
        info = json.loads(line.split(b" ", 1)[1])
        conn: dict[str, Any] = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True}
        conn["protocol"] = 1
        if user:
            conn.update(user=user, **{"pass": password})
        writer.write(f"CONNECT {json.dumps(conn)}\r\n".encode())
        client = cls(reader, writer, info)
        writer.write(f"SUB {client._inbox}.> 1\r\n".encode())
        client._task = asyncio.get_running_loop().create_task(client._read_loop())
        await client.flush()
        return client

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def flush(self, timeout: float = 10.0) -> None:
        self._pong = asyncio.get_running_loop().create_future()
        self.writer.write(b"PING\r\n")
        await asyncio.wait_for(self._pong, timeout)

    async def _read_loop(self) -> None:
        r = self.reader
        while True:
            line = await r.readline()
            if not line:
                return
            if line.startswith(b"PING"):
                self.writer.write(b"PONG\r\n")
                continue
            if line.startswith(b"PONG"):
                if self._pong is not None and not self._pong.done():
                    self._pong.set_result(None)
                continue
            if line.startswith((b"+OK", b"INFO", b"-ERR")):
                continue
            parts = line.decode().split()
            if parts[0] == "MSG":
                subject, reply = parts[1], parts[3] if len(parts) == 5 else ""
                size = int(parts[-1])
                body = await r.readexactly(size + 2)
                msg = RawMsg(subject, reply, None, body[:-2])
            elif parts[0] == "HMSG":
                subject, reply = parts[1], parts[3] if len(parts) == 6 else ""
                hsize, total = int(parts[-2]), int(parts[-1])
                body = await r.readexactly(total + 2)
                msg = RawMsg(subject, reply, body[:hsize], body[hsize:total])
            else:
                continue
            stream = self._streams.get(subject)
            waiter = self._waiters.pop(subject, None)
            if stream is not None:
                stream.put_nowait(msg)
            elif waiter is not None and not waiter.done():
                waiter.set_result(msg)
            else:
                self._queue.put_nowait(msg)

    def publish(self, subject: str, data: bytes = b"", reply: str = "", hdr: bytes | None = None) -> None:
        self.writer.write(self.frame(subject, data, reply, hdr))

    @staticmethod
    def frame(subject: str, data: bytes = b"", reply: str = "", hdr: bytes | None = None) -> bytes:
        """The PUB (or HPUB) frame :meth:`publish` writes."""
        if hdr is None:
            return f"PUB {subject} {reply} {len(data)}\r\n".encode() + data + b"\r\n"
        total = len(hdr) + len(data)
        return f"HPUB {subject} {reply} {len(hdr)} {total}\r\n".encode() + hdr + data + b"\r\n"

    def send_requests(self, frames: list[tuple[str, bytes, bytes | None]]) -> list[asyncio.Future[RawMsg]]:
        """``(subject, data, header block)`` requests written in one go, each with its own reply
        subject; the futures of their answers (the caller decides how long to wait, and
        `forget` drops the ones that did not come)."""
        loop = asyncio.get_running_loop()
        futures, out = [], []
        for subject, data, hdr in frames:
            reply = f"{self._inbox}.{next(self._ids)}"
            futures.append(self._waiters.setdefault(reply, loop.create_future()))
            out.append(self.frame(subject, data, reply, hdr))
        self.writer.write(b"".join(out))
        return futures

    def forget(self) -> None:
        """Stop waiting for any answer still expected (`send_requests`)."""
        for fut in self._waiters.values():
            fut.cancel()
        self._waiters.clear()

    async def request_pipelined(
        self,
        frames: list[tuple[str, bytes, bool, bytes | None]],
        same_reply: bool = False,
        timeout: float = 10.0,
    ) -> list[RawMsg | None]:
        """``(subject, data, with a reply, header block)`` publishes written in one go (a
        pipelining publisher: the server reads them together) with a reply subject each (or
        all on one, ``same_reply``); their answers in the order of the publishes (None: none
        came within ``timeout`` of the write, or the publish had no reply)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        shared = f"{self._inbox}.{next(self._ids)}"
        queue: asyncio.Queue[RawMsg] = asyncio.Queue()
        if same_reply:
            self._streams[shared] = queue
        replies: list[str] = []
        futures: list[asyncio.Future[RawMsg] | None] = []
        out = []
        for subject, data, with_reply, hdr in frames:
            reply = (shared if same_reply else f"{self._inbox}.{next(self._ids)}") if with_reply else ""
            fut: asyncio.Future[RawMsg] | None = None
            if with_reply and not same_reply:
                fut = self._waiters[reply] = loop.create_future()
            replies.append(reply)
            futures.append(fut)
            out.append(self.frame(subject, data, reply, hdr))
        self.writer.write(b"".join(out))
        answers: list[RawMsg | None] = []
        try:
            for reply, fut in zip(replies, futures, strict=True):
                try:
                    if not reply:
                        answers.append(None)
                    elif fut is None:
                        answers.append(await asyncio.wait_for(queue.get(), max(0.0, deadline - loop.time())))
                    else:
                        answers.append(await asyncio.wait_for(fut, max(0.0, deadline - loop.time())))
                except TimeoutError:
                    answers.append(None)
        finally:
            self._streams.pop(shared, None)
            for reply in replies:
                self._waiters.pop(reply, None)
        return answers

    async def request(
        self, subject: str, data: bytes = b"", hdr: bytes | None = None, timeout: float = 5.0
    ) -> RawMsg:
        reply = f"{self._inbox}.{next(self._ids)}"
        fut: asyncio.Future[RawMsg] = asyncio.get_running_loop().create_future()
        self._waiters[reply] = fut
        self.publish(subject, data, reply, hdr)
        try:
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._waiters.pop(reply, None)

    async def request_many(
        self, subject: str, data: bytes = b"", hdr: bytes | None = None, timeout: float = 5.0
    ) -> list[RawMsg]:
        """Every reply up to and including the first status message (a batched direct get's
        ``204 EOB`` or an error status); waits ``timeout`` for each."""
        reply = f"{self._inbox}.{next(self._ids)}"
        queue: asyncio.Queue[RawMsg] = asyncio.Queue()
        self._streams[reply] = queue
        self.publish(subject, data, reply, hdr)
        out: list[RawMsg] = []
        try:
            while True:
                msg = await asyncio.wait_for(queue.get(), timeout)
                out.append(msg)
                if msg.status:
                    return out
        finally:
            self._streams.pop(reply, None)

    def subscribe(self, subject: str, sid: int) -> None:
        self.writer.write(f"SUB {subject} {sid}\r\n".encode())

    async def next_msg(self, timeout: float = 5.0) -> RawMsg:
        return await asyncio.wait_for(self._queue.get(), timeout)

    def received(self) -> list[RawMsg]:
        """The messages of the subscriptions that have arrived and not been taken, taken now (in order)."""
        out = []
        while not self._queue.empty():
            out.append(self._queue.get_nowait())
        return out


def headers(*pairs: tuple[str, str]) -> bytes:
    """A NATS/1.0 header block."""
    return b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in pairs) + b"\r\n"
