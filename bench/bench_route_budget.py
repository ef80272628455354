"""Per-message budget of a routed message inside the embedded server (no sockets, no client).

Run: ``.venv/bin/python bench/bench_route_budget.py``. One publishing and one subscribing
``ClientConnection`` on a transport that only counts bytes; 1000 frames are fed at once (what one
``data_received`` of a pipelining publisher holds) and each stage is timed on its own, best of
many repetitions (so background load inflates the figures little):

- parse: ``ServerSideParser.feed`` (control lines, payload slices, PubRun events: a read's publishes);
- route + deliver: ``ClientConnection._process`` → ``Server.route``/``route_msgs`` → sublist lookup
  → ``ClientConnection.deliver``/``frame_msgs`` (framing into the subscriber's buffer);
- flush: joining the subscriber's buffer and the transport write (a no-op write here).

The figures are µs per message; bench/README.md keeps the budget they make.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

from pyjetstream import _compiled
from pyjetstream.server.client import ClientConnection
from pyjetstream.server.server import Server

PAYLOAD = b"x" * 16
FRAMES = 1000
REPS = int(os.environ.get("ROUTE_BUDGET_REPS", "300"))  # the suite's smoke run asks for 2


class _CountingTransport:
    """The part of an asyncio transport a connection uses; writes are only counted."""

    def __init__(self) -> None:
        self.written = 0

    def write(self, data: bytes) -> None:
        self.written += len(data)

    def writelines(self, parts: list[bytes]) -> None:
        self.written += sum(map(len, parts))

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_extra_info(self, key: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if key == "peername" else default

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False


def _best(fn: Callable[[], object], reps: int = REPS) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best / FRAMES * 1e6


async def main() -> None:
    srv = Server()
    srv.loop = asyncio.get_running_loop()
    srv._build_info()

    def connection() -> ClientConnection:
        conn = ClientConnection(srv)
        conn.connection_made(_CountingTransport())  # type: ignore[arg-type]
        conn.data_received(b'CONNECT {"verbose":false,"pedantic":false,"headers":true}\r\n')
        return conn

    subscriber = connection()
    subscriber.data_received(b"SUB bench.raw 1\r\nSUB _INBOX.abc.* 2\r\nSUB fan.out 3\r\n")
    others = [connection() for _ in range(2)]
    for other in others:
        other.data_received(b"SUB fan.out 9\r\n")
    publisher = connection()
    hdr = b"NATS/1.0\r\nA: b\r\n\r\n"
    cases = [
        ("PUB, same line pipelined (PubRun)", b"PUB bench.raw 16\r\n" + PAYLOAD + b"\r\n"),
        ("PUB with a reply (per message)", b"PUB bench.raw _INBOX.abc.1 16\r\n" + PAYLOAD + b"\r\n"),
        ("HPUB (per message)", b"HPUB bench.raw %d %d\r\n%b%b\r\n" % (len(hdr), len(hdr) + 16, hdr, PAYLOAD)),
        ("PUB to 3 subscribers (fan-out)", b"PUB fan.out 16\r\n" + PAYLOAD + b"\r\n"),
        ("reply to _INBOX.<id>.<n> (inbox index)", None),
    ]
    receivers = [subscriber, *others]
    print(f"pyjetstream: {_compiled.status} (PYJETSTREAM_PURE=1 for pure Python)")
    print(f"{'µs per message':44} {'parse':>7} {'route+deliver':>14} {'flush':>7} {'total':>7}")
    for name, frame in cases:
        if frame is None:  # every reply subject unique, as in real traffic (no cache hits)
            chunks = iter(
                [
                    b"".join(b"PUB _INBOX.abc.%d 16\r\n%b\r\n" % (r * FRAMES + i, PAYLOAD) for i in range(FRAMES))
                    for r in range(3 * REPS + 1)
                ]
            )
            chunk = next(chunks)
        else:
            chunks = None
            chunk = frame * FRAMES
        parse = _best(lambda chunk=chunk: publisher.parser.feed(chunk))  # type: ignore[misc]
        events = publisher.parser.feed(chunk)
        if chunks is not None:
            fresh = [publisher.parser.feed(c) for c in chunks]
            events_of = iter(fresh)
        else:
            events_of = None

        def next_events(events: list[Any] = events, events_of: Any = events_of) -> list[Any]:
            return list(events) if events_of is None else next(events_of)

        def route() -> None:
            publisher._process(next_events())
            for conn in receivers:
                conn.sink.out.clear()
                conn.sink.size = 0

        def route_and_flush() -> None:
            publisher._process(next_events())
            for conn in receivers:
                conn.sink.flush()

        routed = _best(route)
        flushed = _best(route_and_flush)
        flush = max(flushed - routed, 0.0)
        print(f"{name:44} {parse:7.3f} {routed:14.3f} {flush:7.3f} {parse + routed + flush:7.3f}")


if __name__ == "__main__":
    asyncio.run(main())
