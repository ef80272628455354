"""Core NATS benchmark: the embedded server (pyjetstream) against nats-server, same client, one run.

Run: ``.venv/bin/python bench/bench_core.py [--quick]``. Starts both servers itself (each as its own
process, exactly as a user would run them), then measures with the same client library on each:

- publish: one connection publishes small messages, no subscriber (msgs/s until flushed);
- pub→sub: one publisher and one subscriber connection (msgs/s until the last one arrives);
- request/reply: a responder connection and a requester — serial (latency) and 64 in flight;
- raw pipelined pub→sub: a socket writing pre-encoded PUBs and a socket counting MSG bytes, so the
  server, not the client, is the bottleneck; also the server's CPU time per message in that run
  (from ``/proc/<pid>/stat``), for the same PUB line repeated and for a reply on every message.

``--pure`` adds a third server, pyjetstream with ``PYJETSTREAM_PURE=1`` (no compiled modules, see
``pyjetstream._compiled``), measured in the same rounds.

Each figure is the best of a few rounds, the two servers measured alternately so that background
load hits both alike. The client is nats-py (the project's own client can be added as another
column). Prints a table with ratios (pyjetstream / nats-server; for latency, lower is better).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
from nats.aio.client import __version__ as NATS_PY_VERSION

from pyjetstream.testing.process import ServerProcess, server_command, start_on_loopback

PAYLOAD = b"x" * 16


# ----------------------------------------------------------------------------- servers


@dataclass
class RunningServer:
    name: str
    process: ServerProcess
    url: str
    workdir: Path

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


def _start_server(name: str, command: list[str], env: dict[str, str] | None = None) -> RunningServer:
    workdir = Path(tempfile.mkdtemp(prefix=f"bench-{name}-"))
    process, url = start_on_loopback(command, workdir, env=env)
    return RunningServer(name, process, url, workdir)


def _stop_server(server: RunningServer) -> None:
    server.process.stop()
    shutil.rmtree(server.workdir, ignore_errors=True)


@contextlib.contextmanager
def servers(pure: bool = False) -> Iterator[list[RunningServer]]:
    started: list[RunningServer] = []
    serve = server_command("embedded")
    try:
        started.append(_start_server("nats-server", server_command("nats-server")))
        started.append(_start_server("pyjetstream", serve))
        if pure:
            env = {**os.environ, "PYJETSTREAM_PURE": "1"}
            started.append(_start_server("pure Python", serve, env))
        yield started
    finally:
        for server in started:
            _stop_server(server)


# ------------------------------------------------------------------------- benchmarks


async def _connect(url: str) -> nats.NATS:
    # Big client-side pending limits: the benchmark must not drop messages in the client.
    return await nats.connect(url, pending_size=512 * 1024 * 1024, allow_reconnect=False)


async def _ready(nc: nats.NATS) -> None:
    await nc.flush()
    await nc.flush()  # nats-py may ping ahead of a buffered SUB: the second flush is after it


async def bench_publish(url: str, count: int) -> float:
    nc = await _connect(url)
    try:
        start = time.perf_counter()
        for _ in range(count):
            await nc.publish("bench.pub", PAYLOAD)
        await nc.flush(timeout=60)
        return count / (time.perf_counter() - start)
    finally:
        await nc.close()


async def bench_pub_sub(url: str, count: int) -> float:
    pub = await _connect(url)
    sub_nc = await _connect(url)
    try:
        done = asyncio.Event()
        received = 0

        async def on_msg(msg: object) -> None:
            nonlocal received
            received += 1
            if received == count:
                done.set()

        await sub_nc.subscribe(
            "bench.ps", cb=on_msg, pending_msgs_limit=count * 2, pending_bytes_limit=1 << 30
        )
        await _ready(sub_nc)
        start = time.perf_counter()
        for _ in range(count):
            await pub.publish("bench.ps", PAYLOAD)
        await pub.flush(timeout=60)
        await asyncio.wait_for(done.wait(), 120)
        return count / (time.perf_counter() - start)
    finally:
        await pub.close()
        await sub_nc.close()


async def _with_responder(url: str, body: Callable[[nats.NATS], Awaitable[float]]) -> float:
    requester = await _connect(url)
    responder = await _connect(url)
    try:

        async def echo(msg: nats.aio.msg.Msg) -> None:
            await msg.respond(msg.data)

        await responder.subscribe("bench.svc", cb=echo)
        await _ready(responder)
        await requester.request("bench.svc", PAYLOAD, timeout=10)  # warm up the inbox
        return await body(requester)
    finally:
        await requester.close()
        await responder.close()


async def bench_request_latency(url: str, count: int) -> float:
    """Median round trip in microseconds, one request at a time."""

    async def run(nc: nats.NATS) -> float:
        samples = []
        for _ in range(count):
            start = time.perf_counter()
            await nc.request("bench.svc", PAYLOAD, timeout=10)
            samples.append(time.perf_counter() - start)
        return statistics.median(samples) * 1e6

    return await _with_responder(url, run)


async def bench_request_throughput(url: str, count: int, in_flight: int = 64) -> float:
    async def run(nc: nats.NATS) -> float:
        remaining = count

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                await nc.request("bench.svc", PAYLOAD, timeout=30)

        start = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        return count / (time.perf_counter() - start)

    return await _with_responder(url, run)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (``/proc/<pid>/stat`` utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_raw_cpu(server: RunningServer, count: int, reply: bool) -> float:
    """The server's CPU µs per message over a raw pipelined run (see :func:`bench_raw_pub_sub`)."""
    before = _cpu_seconds(server.process.pid)
    bench_raw_pub_sub(server.port, count, reply)
    return (_cpu_seconds(server.process.pid) - before) / count * 1e6


def bench_raw_pub_sub(port: int, count: int, reply: bool = False) -> float:
    """Pipelined raw sockets: the server's routing rate, with almost no client cost. With
    ``reply`` every PUB carries a reply subject, so no two control lines are the same."""

    def connect() -> socket.socket:
        sock = socket.create_connection(("127.0.0.1", port))
        sock.recv(4096)
        sock.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\nPING\r\n')
        buf = b""
        while b"PONG\r\n" not in buf:
            buf += sock.recv(4096)
        return sock

    sub = connect()
    sub.sendall(b"SUB bench.raw 1\r\nPING\r\n")
    buf = b""
    while b"PONG\r\n" not in buf:
        buf += sub.recv(4096)
    if reply:
        frames = [b"PUB bench.raw _INBOX.x.%06d 16\r\n%b\r\n" % (i, PAYLOAD) for i in range(count)]
        expected = sum(len(f) for f in frames) + (len(b"MSG bench.raw 1 ") - len(b"PUB bench.raw ")) * count
    else:
        frames = []
        expected = len(b"MSG bench.raw 1 16\r\n" + PAYLOAD + b"\r\n") * count
    got = 0

    def read() -> None:
        nonlocal got
        while got < expected:
            data = sub.recv(1 << 20)
            if not data:
                break
            got += len(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    pub = connect()
    batch = 1000
    chunk = (b"PUB bench.raw 16\r\n" + PAYLOAD + b"\r\n") * batch
    chunks = [b"".join(frames[i : i + batch]) for i in range(0, count, batch)] if reply else []
    start = time.perf_counter()
    for i in range(count // batch):
        pub.sendall(chunks[i] if reply else chunk)
    reader.join(120)
    elapsed = time.perf_counter() - start
    pub.close()
    sub.close()
    if got < expected:
        raise RuntimeError(f"raw pub->sub received {got} of {expected} bytes")
    return count / elapsed


# ----------------------------------------------------------------------------- driver


@dataclass
class Row:
    name: str
    unit: str
    lower_is_better: bool = False
    results: dict[str, list[float]] = field(default_factory=dict)

    def best(self, server: str) -> float:
        values = self.results[server]
        return min(values) if self.lower_is_better else max(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller counts, one round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pure", action="store_true", help="also measure pyjetstream with PYJETSTREAM_PURE=1")
    parser.add_argument("--raw-only", action="store_true", help="only the raw pipelined run and its CPU per message")
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    rounds = 1 if args.quick else args.rounds
    n_pub = int(200_000 * scale)
    n_ps = int(100_000 * scale)
    n_lat = int(2_000 * scale)
    n_rr = int(20_000 * scale)
    n_raw = int(500_000 * scale) // 1000 * 1000

    try:
        import uvloop

        loop_factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        loop_name = "uvloop"
    except ImportError:
        loop_factory, loop_name = asyncio.new_event_loop, "asyncio"

    rows = [
        Row(f"publish, 16 B ({n_pub:,} msgs)", "msgs/s"),
        Row(f"pub -> sub, 16 B ({n_ps:,} msgs)", "msgs/s"),
        Row(f"request/reply latency, median of {n_lat:,}", "µs", lower_is_better=True),
        Row(f"request/reply, 64 in flight ({n_rr:,})", "req/s"),
        Row(f"raw pipelined pub -> sub ({n_raw:,} msgs)", "msgs/s"),
        Row("  server CPU per message, same PUB line", "µs", lower_is_better=True),
        Row("  server CPU per message, reply on each", "µs", lower_is_better=True),
    ]
    if args.raw_only:
        rows = rows[-3:]
    started = time.perf_counter()
    with servers(args.pure) as running:
        loop = loop_factory()
        try:
            for _ in range(rounds):
                for server in running:
                    url = server.url
                    measured = []
                    if not args.raw_only:
                        measured += [
                            loop.run_until_complete(bench_publish(url, n_pub)),
                            loop.run_until_complete(bench_pub_sub(url, n_ps)),
                            loop.run_until_complete(bench_request_latency(url, n_lat)),
                            loop.run_until_complete(bench_request_throughput(url, n_rr)),
                        ]
                    measured += [
                        bench_raw_pub_sub(server.port, n_raw),
                        bench_raw_cpu(server, n_raw, reply=False),
                        bench_raw_cpu(server, n_raw // 2, reply=True),
                    ]
                    for row, value in zip(rows, measured, strict=True):
                        row.results.setdefault(server.name, []).append(value)
        finally:
            loop.close()

    print(
        f"\ncore NATS benchmark — client nats-py {NATS_PY_VERSION} on {loop_name}, "
        f"{os.cpu_count()} CPUs, best of {rounds} round(s), {time.perf_counter() - started:.0f} s\n"
    )
    from pyjetstream import _compiled

    _compiled.decide()  # (nothing here imported a compiled module: the servers are processes)
    print(f"pyjetstream: {_compiled.status}")
    pure = " ".join([f"{'pure Python':>18}", f"{'compiled/pure':>13}"]) if args.pure else ""
    header = f"{'benchmark':44} {'nats-server':>18} {'pyjetstream':>18} {'ratio':>7} {pure}"
    print(header)
    print("-" * len(header))
    for row in rows:
        theirs, ours = row.best("nats-server"), row.best("pyjetstream")
        ratio = ours / theirs if theirs else float("nan")
        note = " (lower is better)" if row.lower_is_better else ""
        digits = ",.2f" if row.unit == "µs" else ",.0f"
        cells = [f"{value:{digits}} {row.unit}" for value in (theirs, ours)]
        extra = ""
        if args.pure:
            slow = row.best("pure Python")
            extra = f"{slow:>16{digits}} {row.unit} {ours / slow if slow else float('nan'):>13.2f}"
        print(f"{row.name:44} {cells[0]:>18} {cells[1]:>18} {ratio:>7.2f} {extra}{note}")
    print("\nratio = pyjetstream / nats-server")


if __name__ == "__main__":
    main()
