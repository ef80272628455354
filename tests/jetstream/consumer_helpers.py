"""Helpers for the consumer tests: a raw NATS client that shows exact bytes, and small utilities.

nats-py hides status lines and reply subjects behind its own logic; the consumer tests check what
the servers actually send (ack reply subjects, ``408 Request Timeout`` headers, heartbeats), so
they use this client, which keeps one queue per subscription.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

#: How long a message that comes (an API answer, a PubAck, a delivery) may take: usually
#: milliseconds, but 5 s was seen passing on a loaded 2-core machine (an API answer in
#: test_consumer_differential's max_consumers_wq, load 10-13). Only a failing wait pays it.
DEFAULT_TIMEOUT = 15.0


@dataclass
class Msg:
    subject: str
    sid: int
    reply: str
    hdr: bytes | None
    data: bytes

    @property
    def status(self) -> str:
        """``"408"`` etc. for a status message, ``""`` for a normal one."""
        if not self.hdr or not self.hdr.startswith(b"NATS/1.0 "):
            return ""
        return self.hdr.split(b"\r\n", 1)[0].split(b" ")[1].decode()

    @property
    def description(self) -> str:
        if not self.status:
            return ""
        parts = self.hdr.split(b"\r\n", 1)[0].split(b" ", 2)  # type: ignore[union-attr]
        return parts[2].decode() if len(parts) > 2 else ""

    def header(self, name: str) -> str | None:
        if not self.hdr:
            return None
        for line in self.hdr.split(b"\r\n")[1:]:
            key, sep, value = line.partition(b":")
            if sep and key.decode().lower() == name.lower():
                return value.strip().decode()
        return None

    def json(self) -> Any:
        return json.loads(self.data)

    @property
    def ack_tokens(self) -> list[str]:
        return self.reply.split(".")

    @property
    def stream_seq(self) -> int:
        return int(self.ack_tokens[5])

    @property
    def consumer_seq(self) -> int:
        return int(self.ack_tokens[6])

    @property
    def num_delivered(self) -> int:
        return int(self.ack_tokens[4])

    @property
    def num_pending(self) -> int:
        return int(self.ack_tokens[8])


class Sub:
    def __init__(self, client: RawClient, sid: int, subject: str) -> None:
        self.client = client
        self.sid = sid
        self.subject = subject
        self.queue: asyncio.Queue[Msg] = asyncio.Queue()

    async def next(self, timeout: float = DEFAULT_TIMEOUT) -> Msg:
        return await asyncio.wait_for(self.queue.get(), timeout)

    async def collect(self, n: int, timeout: float = DEFAULT_TIMEOUT) -> list[Msg]:
        return [await self.next(timeout) for _ in range(n)]

    async def expect_none(self, wait: float) -> None:
        """Assert nothing arrives for ``wait`` seconds."""
        try:
            msg = await asyncio.wait_for(self.queue.get(), wait)
        except TimeoutError:
            return
        raise AssertionError(f"unexpected message {msg!r}")

    def drain(self) -> list[Msg]:
        out = []
        while not self.queue.empty():
            out.append(self.queue.get_nowait())
        return out

    def unsubscribe(self) -> None:
        self.client.writer.write(f"UNSUB {self.sid}\r\n".encode())
        self.client.subs.pop(self.sid, None)


class RawClient:
    """Just enough NATS: PUB/HPUB, SUB/UNSUB, PING, MSG/HMSG parsing, one queue per sub."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, info: dict[str, Any]):
        self.reader = reader
        self.writer = writer
        self.info = info
        self.subs: dict[int, Sub] = {}
        self._sids = itertools.count(1)
        self._inbox_ids = itertools.count(1)
        self._pongs: list[asyncio.Future[None]] = []
        self._task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, url: str) -> RawClient:
        host, port = url.rsplit("//", 1)[-1].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port), limit=64 * 1024 * 1024)
        line = await reader.readline()
        info = json.loads(line.split(b" ", 1)[1])
        opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1}
        writer.write(f"CONNECT {json.dumps(opts)}\r\n".encode())
        client = cls(reader, writer, info)
        client._task = asyncio.get_running_loop().create_task(client._read_loop())
        await client.flush()
        return client

    @property
    def version(self) -> tuple[int, ...]:
        return tuple(int(x) for x in str(self.info.get("version", "0.0.0")).split("-")[0].split(".")[:3])

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass

    async def flush(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs.append(fut)
        self.writer.write(b"PING\r\n")
        await asyncio.wait_for(fut, timeout)

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
                if self._pongs:
                    fut = self._pongs.pop(0)
                    if not fut.done():
                        fut.set_result(None)
                continue
            parts = line.decode().split()
            if not parts or parts[0] not in ("MSG", "HMSG"):
                continue
            if parts[0] == "MSG":
                reply = parts[3] if len(parts) == 5 else ""
                size = int(parts[-1])
                body = await r.readexactly(size + 2)
                msg = Msg(parts[1], int(parts[2]), reply, None, body[:-2])
            else:
                reply = parts[3] if len(parts) == 6 else ""
                hsize, total = int(parts[-2]), int(parts[-1])
                body = await r.readexactly(total + 2)
                msg = Msg(parts[1], int(parts[2]), reply, body[:hsize], body[hsize:total])
            sub = self.subs.get(msg.sid)
            if sub is not None:
                sub.queue.put_nowait(msg)

    def new_inbox(self) -> str:
        return f"_RAWINBOX.{id(self)}.{next(self._inbox_ids)}"

    def subscribe(self, subject: str, queue: str = "") -> Sub:
        sid = next(self._sids)
        sub = Sub(self, sid, subject)
        self.subs[sid] = sub
        q = f" {queue}" if queue else ""
        self.writer.write(f"SUB {subject}{q} {sid}\r\n".encode())
        return sub

    def publish(self, subject: str, data: bytes = b"", reply: str = "", hdr: bytes | None = None) -> None:
        rep = f" {reply}" if reply else ""
        if hdr is None:
            self.writer.write(f"PUB {subject}{rep} {len(data)}\r\n".encode() + data + b"\r\n")
        else:
            total = len(hdr) + len(data)
            self.writer.write(f"HPUB {subject}{rep} {len(hdr)} {total}\r\n".encode() + hdr + data + b"\r\n")

    async def request(
        self, subject: str, data: bytes | dict[str, Any] = b"", timeout: float = DEFAULT_TIMEOUT
    ) -> Msg:
        if isinstance(data, dict):
            data = json.dumps(data).encode()
        inbox = self.new_inbox()
        sub = self.subscribe(inbox)
        try:
            self.publish(subject, data, inbox)
            return await sub.next(timeout)
        finally:
            sub.unsubscribe()

    async def api(
        self, subject: str, body: bytes | dict[str, Any] = b"", timeout: float = DEFAULT_TIMEOUT
    ) -> Any:
        """A ``$JS.API`` request; returns the decoded JSON response."""
        msg = await self.request(subject, body, timeout)
        return msg.json()

    # --- JetStream conveniences ---------------------------------------------------------------

    async def add_stream(self, name: str, subjects: list[str] | None = None, **cfg: Any) -> Any:
        body = {"name": name, "subjects": subjects or [f"{name.lower()}.>"], **cfg}
        resp = await self.api(f"$JS.API.STREAM.CREATE.{name}", body)
        assert "error" not in resp, resp
        return resp

    async def add_consumer(self, stream: str, name: str | None = None, **cfg: Any) -> Any:
        """``CONSUMER.CREATE.<S>.<name>`` (named after ``durable_name`` when only that is given),
        or the legacy ephemeral ``CONSUMER.CREATE.<S>`` without either."""
        cfg.setdefault("ack_policy", "explicit")
        name = name or cfg.get("durable_name")
        subject = f"$JS.API.CONSUMER.CREATE.{stream}" + (f".{name}" if name else "")
        return await self.api(subject, {"stream_name": stream, "config": cfg})

    async def consumer_info(self, stream: str, name: str) -> Any:
        return await self.api(f"$JS.API.CONSUMER.INFO.{stream}.{name}")

    async def stream_info(self, stream: str) -> Any:
        return await self.api(f"$JS.API.STREAM.INFO.{stream}")

    async def publish_js(self, subject: str, data: bytes = b"", hdr: bytes | None = None) -> Any:
        inbox = self.new_inbox()
        sub = self.subscribe(inbox)
        try:
            self.publish(subject, data, inbox, hdr)
            return (await sub.next()).json()
        finally:
            sub.unsubscribe()

    async def publish_many(self, subject: str, n: int, prefix: str = "m") -> None:
        for i in range(n):
            ack = await self.publish_js(subject, f"{prefix}{i}".encode())
            assert "error" not in ack, ack

    def pull(self, stream: str, consumer: str, inbox: str, body: bytes | dict[str, Any] = b"") -> None:
        if isinstance(body, dict):
            body = json.dumps(body).encode()
        self.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", body, inbox)


async def wait_for(
    predicate: Callable[[], Awaitable[bool]], timeout: float = 10.0, interval: float = 0.05
) -> None:
    """Poll an async predicate until true (or fail after ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        if await predicate():
            return
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(interval)


async def told(client: RawClient, stream: str, consumer: str, num_pending: int, timeout: float = 10.0) -> Any:
    """The consumer's info once its ``num_pending`` is ``num_pending`` (or after ``timeout``).

    nats-server sends a PubAck before it tells the stream's consumers of the message
    (``processJetStreamMsg`` queues it on ``mset.sigq`` for ``signalConsumersLoop``), so an INFO
    or a ``no_wait`` pull right after a publish can find a consumer not yet told (404 No Messages
    where there are messages): wait for this before either.
    """
    deadline = time.monotonic() + timeout
    while True:
        info = await client.consumer_info(stream, consumer)
        if info.get("num_pending") == num_pending or time.monotonic() > deadline:
            return info
        await asyncio.sleep(0.02)


async def publish_acked(nc: RawClient, subjects: list[str], hdrs: list[bytes], timeout: float = 30) -> None:
    """Pipelined publishes with replies, one a subject and header block; waits for every PubAck and
    asserts none is an error."""
    inbox = nc.new_inbox()
    sub = nc.subscribe(inbox + ".*")
    for i, (subject, hdr) in enumerate(zip(subjects, hdrs, strict=True)):
        nc.publish(subject, b"x", f"{inbox}.{i}", hdr)
    acks = await sub.collect(len(subjects), timeout=timeout)
    assert all("error" not in m.json() for m in acks), [m.json() for m in acks if "error" in m.json()]
    sub.unsubscribe()


def headers(*pairs: tuple[str, str]) -> bytes:
    return b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in pairs) + b"\r\n"


def speaks_210(client: RawClient, kind: str) -> bool:
    """Whether the target answers with 2.10 semantics (``+TERM <reason>``, ``filter_subjects``,
    ``action``, ``ts``, ``409 Batch Completed``, one-token filters checked in CREATE subjects).

    nats-server tells by its INFO ``version``; the embedded server implements the 2.10 API
    whatever version it advertises.
    """
    return client.version >= (2, 10, 0) or kind == "embedded"
