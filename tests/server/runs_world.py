"""Two embedded servers fed the same traffic, runs on and off (``ServerOptions.runs``): the harness of
``test_runs_differential.py`` and ``scripts/runs_difffuzz.py``.

A client here is a :class:`~pyjetstream.server.client.ClientConnection` over an in-memory transport,
fed one read at a time (``data_received``) and read back whole: the reads are exactly the ones the
traffic names, on both servers, which a socket would not guarantee, and each connection's output is
every byte the server wrote to it. Between steps the loop runs until nothing moves (consumer
deliveries, a file stream's PubAcks, a stalled producer's held publishes).

A transport may be *tight*: it keeps what it was given as if the socket took nothing until
:meth:`World.drain` (above its high-water mark the connection's ``pause_writing`` is called), so
producer stalls happen at the same bytes on both servers. A stall's budget is real time (10 ms per
read), which would make where a producer stops stalling depend on the machine's speed: while
:func:`stalls_by_count` is in effect a stall lasts a fifth of a millisecond and never runs out
(the stall ends after the loop has run what a read scheduled, on both servers alike).
"""

from __future__ import annotations

import asyncio
import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from pyjetstream.server import client as client_module
from pyjetstream.server.client import ClientConnection
from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop
from pyjetstream.server.server import Server

CONNECT = (
    b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":%s,"echo":%s,'
    b'"user":"%s","pass":"p"}\r\n'
)
# A delivery's ack subject: $JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>; the
# timestamp differs between two servers and is masked.
_ACK_TS = re.compile(rb"(\$JS\.ACK\.[^. ]+\.[^. ]+\.\d+\.\d+\.\d+\.)\d+(\.\d+)")
ACK_SUBJECT = re.compile(rb"\$JS\.ACK\.[^. ]+\.[^. ]+\.\d+\.\d+\.\d+\.\d+\.\d+")
# An advisory or a message trace (its control line, and its size) and what in it differs between two
# servers: random ids, times, the server's name and host.
_EVENT_LINE = re.compile(rb"(MSG (?:\$JS\.EVENT\.|trace\.)[^ ]+ \d+ (?:[^ \r\n]+ )?)(\d+)\r\n")
_EVENT_FIELDS = re.compile(rb'"(id|timestamp|ts|name|host|time)":"[^"]*"')


@contextmanager
def stalls_by_count() -> Iterator[None]:
    """Producer stalls independent of the machine's speed (see the module docstring)."""
    saved = client_module.STALL_MIN, client_module.STALL_MAX, client_module.STALL_TOTAL
    client_module.STALL_MIN = client_module.STALL_MAX = 0.0002
    client_module.STALL_TOTAL = 1e9
    try:
        yield
    finally:
        client_module.STALL_MIN, client_module.STALL_MAX, client_module.STALL_TOTAL = saved


class Transport:
    """What a :class:`ClientConnection` writes to: kept in ``out``; ``tight``: at most ``high``
    bytes buffered before ``pause_writing`` (released by :meth:`drain`)."""

    def __init__(self, tight: int = 0) -> None:
        self.out = bytearray()
        self.writes: list[int] = []  # each write's size: where early writes happened
        self.tight = tight
        self.buffered = 0
        self.high = 0
        self.paused = False
        self.closed = False
        self.protocol: ClientConnection | None = None

    def write(self, data: bytes) -> None:
        if self.closed:
            return
        self.out += data
        self.writes.append(len(data))
        if self.tight:
            self.buffered += len(data)
            if not self.paused and self.buffered > self.high and self.protocol is not None:
                self.paused = True
                self.protocol.pause_writing()

    def writelines(self, parts: list[bytes]) -> None:
        self.write(b"".join(parts))

    def drain(self) -> None:
        """The socket took everything buffered."""
        self.buffered = 0
        if self.paused and self.protocol is not None:
            self.paused = False
            self.protocol.resume_writing()

    def get_write_buffer_size(self) -> int:
        return self.buffered

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self.high = self.tight or high

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, key: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if key == "peername" else default

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self.protocol is not None:  # the socket is gone on the next turn, as asyncio does
                asyncio.get_running_loop().call_soon(self.protocol.connection_lost, None)

    def abort(self) -> None:
        self.close()

    def is_closing(self) -> bool:
        return self.closed


@dataclass
class Client:
    conn: ClientConnection
    transport: Transport
    lost: bool = False


@dataclass
class World:
    """One embedded server and its clients."""

    runs: bool
    options: dict[str, Any] = field(default_factory=dict)
    server: Server | None = None
    clients: list[Client] = field(default_factory=list)
    _tmp: Any = None
    _base: list[tuple[int, ...]] = field(default_factory=list)  # the counters at the last clear

    async def start(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        opts = {
            "jetstream": True,
            "store_dir": self._tmp.name,
            "queue_seed": 7,
            # No server PING in the middle of a slow example (its timer is wall-clock time).
            "ping_interval": 3600.0,
            "disable_short_first_ping": True,
            **self.options,
        }
        self.server = Server(port=-1, host="127.0.0.1", runs=self.runs, **opts)
        await self.server.start()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.shutdown()
        if self._tmp is not None:
            self._tmp.cleanup()

    def connect(self, echo: bool = True, no_responders: bool = True, tight: int = 0, user: str = "u") -> int:
        assert self.server is not None
        conn = ClientConnection(self.server)
        transport = Transport(tight)
        transport.protocol = conn
        conn.connection_made(transport)  # type: ignore[arg-type]
        transport.out.clear()  # INFO: its ids differ between servers
        flags = (b"true" if no_responders else b"false", b"true" if echo else b"false", user.encode())
        conn.data_received(CONNECT % flags)
        self.clients.append(Client(conn, transport))
        return len(self.clients) - 1

    def feed(self, client: int, data: bytes) -> None:
        """One read of ``client``'s socket (nothing once the server closed it)."""
        c = self.clients[client]
        if not c.conn.closed:
            c.conn.data_received(data)

    async def settle(self) -> None:
        """Run the loop until no connection's output grows and no producer is stalled or held."""
        quiet = 0
        for _ in range(2000):
            before = [len(c.transport.out) for c in self.clients]
            await asyncio.sleep(0)
            busy = any(c.conn.stalled or c.conn._held for c in self.clients if not c.conn.closed)
            if busy:
                await asyncio.sleep(0.001)
            if busy or [len(c.transport.out) for c in self.clients] != before:
                quiet = 0
            else:
                quiet += 1
                if quiet >= 8:
                    return

    def drain(self) -> None:
        for c in self.clients:
            c.transport.drain()

    def output(self, client: int) -> bytes:
        """Every byte written to ``client`` (flushed first), with what differs between two
        servers masked: an ack subject's timestamp; an advisory's id and time (and so its size)."""
        c = self.clients[client]
        if not c.conn.closed:
            c.conn.flush_out()
        data = _ACK_TS.sub(rb"\1T\2", bytes(c.transport.out))
        out = bytearray()
        pos = 0
        for m in _EVENT_LINE.finditer(data):
            if m.start() < pos:
                continue
            start = m.end()
            end = start + int(m.group(2))
            out += data[pos : m.start()] + m.group(1) + b"?\r\n" + _EVENT_FIELDS.sub(rb'"\1":"?"', data[start:end])
            pos = end
        return bytes(out + data[pos:])

    def ack_subjects(self, client: int) -> list[bytes]:
        """The ack subjects of the deliveries ``client`` received so far, in order."""
        return ACK_SUBJECT.findall(bytes(self.clients[client].transport.out))

    def clear(self) -> None:
        """Forget the output so far (set-up answers name times), counters included."""
        for c in self.clients:
            c.transport.out.clear()
            c.transport.writes.clear()
        self._base = self._stats()

    def js_state(self) -> dict[str, Any]:
        """Each stream's messages and each consumer's delivery state (times left out)."""
        assert self.server is not None
        engine = self.server.global_account.jetstream
        state: dict[str, Any] = {}
        for name, stream in sorted(engine.streams.items()):
            store = stream.store
            st = store.state()
            msgs = []
            for seq in range(st.first_seq, st.last_seq + 1):
                try:
                    m = store.load_msg(seq)
                except Exception as exc:  # a deleted message
                    msgs.append((seq, type(exc).__name__))
                    continue
                msgs.append((m.seq, m.subject, m.hdr, m.data))
            ttls = store.msg_ttls() if hasattr(store, "msg_ttls") else None
            state[name] = {"msgs": msgs, "count": st.msgs, "bytes": st.bytes, "ttls": ttls}
            for cname, consumer in sorted(stream.consumers.items()):
                ds = consumer.state
                state[f"{name}/{cname}"] = {
                    "sseq": ds.sseq,
                    "dseq": ds.dseq,
                    "asflr": ds.asflr,
                    "adflr": ds.adflr,
                    "pending": sorted(ds.pending),
                    "redelivered": json.dumps(getattr(ds, "rdc", {}), sort_keys=True, default=str),
                }
        return state

    def _stats(self) -> list[tuple[int, ...]]:
        return [(c.conn.in_msgs, c.conn.in_bytes, c.conn.out_msgs, c.conn.out_bytes) for c in self.clients]

    def conn_stats(self) -> list[tuple[Any, ...]]:
        """Each connection's state and message counters since the last :meth:`clear` (``out_bytes``
        too, which an advisory's time makes differ: compare ``[:-1]``)."""
        base = self._base or [(0, 0, 0, 0)] * len(self.clients)
        return [
            (c.conn.closed, c.conn.close_reason, *(now - then for now, then in zip(stats, old, strict=True)))
            for c, stats, old in zip(self.clients, self._stats(), base, strict=True)
        ]


@dataclass
class GeneralDeliveries:
    """How many messages the delivery loop handed to its general, one-by-one path (`count_general`)."""

    n: int = 0


def count_general(monkeypatch: Any) -> GeneralDeliveries:
    """Count, for the rest of the test, the messages each pass hands to `DeliveryLoop._deliver_msgs`
    (the general path a framed run does not take)."""
    counted = GeneralDeliveries()
    deliver_msgs = DeliveryLoop._deliver_msgs

    def counting(self: DeliveryLoop, p: Any, run: Any, dcs: Any, ahead: bool) -> bool:
        counted.n += len(run)
        return deliver_msgs(self, p, run, dcs, ahead)

    monkeypatch.setattr(DeliveryLoop, "_deliver_msgs", counting)
    return counted


def frame(subject: str, reply: str, hdr: bytes | None, payload: bytes) -> bytes:
    """A PUB (``hdr`` None) or HPUB frame."""
    r = f" {reply}" if reply else ""
    if hdr is None:
        return f"PUB {subject}{r} {len(payload)}\r\n".encode() + payload + b"\r\n"
    return f"HPUB {subject}{r} {len(hdr)} {len(hdr) + len(payload)}\r\n".encode() + hdr + payload + b"\r\n"


def request(subject: str, reply: str, body: dict[str, Any]) -> bytes:
    return frame(subject, reply, None, json.dumps(body).encode())


#: A header block's ``Nats-Time-Stamp`` line (each server stamps its own time).
STAMP = re.compile(rb"Nats-Time-Stamp: [^\r]*\r\n")


async def read_replies(reader: asyncio.StreamReader, count: int, events: list[Any] | None = None) -> dict[str, Any]:
    """``count`` replies (MSG / HMSG on ``r.*``, read off a raw connection) by reply subject, their
    payloads as JSON; any other message (a republished copy, its ``Nats-Time-Stamp`` taken out) and
    each reply's subject go to ``events`` in the order they came."""
    out: dict[str, Any] = {}
    while len(out) < count:
        line = (await asyncio.wait_for(reader.readline(), 20)).decode().split()
        if line[0] not in ("MSG", "HMSG"):
            continue
        body = await reader.readexactly(int(line[-1]) + 2)
        hlen = int(line[-2]) if line[0] == "HMSG" else 0
        if not line[1].startswith("r."):
            if events is not None:
                events.append((line[1], STAMP.sub(b"", body[:hlen]), body[hlen:-2]))
            continue
        out[line[1]] = json.loads(body[hlen:-2])
        if events is not None:
            events.append(line[1])
    return out
