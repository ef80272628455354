"""Load and soak run (issue #15, "Load"): many connections, many subscriptions, a slow consumer among
fast ones and 20 JetStream streams with consumers, for a fixed time, on loopback.

The script starts the server itself (``python -m pyjetstream serve -js``; ``--target nats-server`` starts
the reference binary for comparison) with a monitoring port, then runs for ``--duration`` seconds:

- ``--connections`` raw asyncio socket connections (cheap: one reader task each, answering PINGs and
  counting MSGs) carrying ``--subs`` subscriptions between them: literal subjects, ``*`` and ``>``
  wildcards, and queue-group subscriptions on shared work subjects;
- publishers at a steady ``--rate`` (msgs/s) onto those subjects, plus a bulk publisher feeding a subject
  only two connections listen to: a fast nats-py subscriber and one raw connection that stops reading
  (the deliberately slow consumer, which the server must disconnect, and only it);
- request/reply at ``--rr-rate`` against an echo responder (p50/p99 latency);
- 20 streams, each with a durable pull and a durable push consumer acking every message, published to at
  ``--js-rate`` msgs/s in total.

It reports published/delivered throughput, request latency, slow-consumer disconnects (the server's
``/varz`` ``slow_consumers`` and which of our connections were closed) and the server's resident memory
(``VmRSS`` from ``/proc/<pid>/status``) at start and end, as a table or ``--json``.

Usage: ``python bench/load.py --duration 60`` (``--target nats-server`` for the control).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import resource
import socket
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
from nats.js.api import AckPolicy, ConsumerConfig

from pyjetstream.testing.process import ServerProcess, free_port, port_answers, server_command

STREAMS = 20
WORK_SUBJECTS = 50
BULK_PAYLOAD = 32 * 1024


def raise_nofile(wanted: int) -> int:
    """Raise the soft open-file limit towards ``wanted`` (at most the hard limit); returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class Server:
    """The server under load, started as a subprocess on loopback with a monitoring port."""

    def __init__(self, target: str, workdir: Path) -> None:
        self.target = target
        self.workdir = workdir
        self.port = free_port()
        self.http_port = free_port()
        self.process: ServerProcess | None = None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> None:
        args = ["-a", "127.0.0.1", "-p", str(self.port), "-m", str(self.http_port), "-js", "-sd", str(self.workdir)]
        self.process = ServerProcess([*server_command(self.target), *args], self.workdir.parent / "server.log")
        if not self.process.start(lambda: port_answers(self.port), timeout=60):
            raise RuntimeError(f"{self.target} did not start; see {self.workdir.parent / 'server.log'}")

    def monitor(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}{path}", timeout=30) as r:
            return dict(json.loads(r.read()))

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.process = None


@dataclass
class Counters:
    published: int = 0
    delivered: int = 0
    js_published: int = 0
    js_acked: int = 0
    rr_latency_ms: list[float] = field(default_factory=list)
    rr_failed: int = 0
    publish_errors: int = 0
    publish_stall_ms: float = 0.0  # the longest a batch of core publishes took (a server stalling the producer)
    skipped: int = 0  # operations the generator skipped because it fell behind its schedule
    client_errors: list[str] = field(default_factory=list)


class RawConn:
    """One cheap client connection over a raw socket: CONNECT, SUBs, then a reader that answers PING
    and counts MSG/HMSG deliveries. ``stop_reading`` makes it the slow consumer."""

    def __init__(self, counters: Counters) -> None:
        self.counters = counters
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.closed = False
        self.err = ""
        self.stop_reading = False
        self.task: asyncio.Task[None] | None = None

    async def open(
        self, host: str, port: int, subs: list[tuple[str, str]], name: str, rcvbuf: int | None = None
    ) -> None:
        sock = socket.socket()
        if rcvbuf:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
        self.reader, self.writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
        await self.reader.readline()  # INFO
        connect = {"verbose": False, "pedantic": False, "protocol": 1, "name": name}
        lines = [f"CONNECT {json.dumps(connect)}\r\n".encode()]
        for sid, (subject, queue) in enumerate(subs, 1):
            q = f" {queue}" if queue else ""
            lines.append(f"SUB {subject}{q} {sid}\r\n".encode())
        lines.append(b"PING\r\n")
        self.writer.write(b"".join(lines))
        await self.writer.drain()
        while (await self.reader.readline()).strip() != b"PONG":
            pass
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.reader is not None and self.writer is not None
        r = self.reader
        try:
            while not self.stop_reading:
                line = await r.readline()
                if not line:
                    break
                if line.startswith(b"MSG"):
                    await r.readexactly(int(line.split()[-1]) + 2)
                    self.counters.delivered += 1
                elif line.startswith(b"HMSG"):
                    await r.readexactly(int(line.split()[-1]) + 2)
                    self.counters.delivered += 1
                elif line.startswith(b"PING"):
                    self.writer.write(b"PONG\r\n")
                elif line.startswith(b"-ERR"):
                    self.err = line.decode().strip()
            else:
                return  # stopped reading on purpose: the socket is left as it is
        except (OSError, asyncio.IncompleteReadError) as e:
            self.err = self.err or repr(e)
        self.closed = True

    async def alive(self, timeout: float) -> bool:
        """Whether the server still talks to us: PING answered (the reader is running)."""
        if self.closed or self.writer is None:
            return False
        try:
            self.writer.write(b"PING\r\n")
            await asyncio.wait_for(self.writer.drain(), timeout)
        except (OSError, TimeoutError):
            return False
        return not self.closed

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        if self.writer is not None:
            self.writer.close()


def plan_subs(connections: int, subs: int) -> list[list[tuple[str, str]]]:
    """Spread ``subs`` subscriptions over ``connections``: per connection a ``>`` and a ``*`` wildcard,
    a queue-group subscription on a shared work subject, and literal subjects for the rest."""
    per = max(3, subs // connections)
    plan: list[list[tuple[str, str]]] = []
    left = subs
    for c in range(connections):
        n = min(per, left) if c < connections - 1 else left
        n = max(n, 0)
        mine: list[tuple[str, str]] = []
        if n > 0:
            mine.append((f"idle.{c}.>", ""))
        if n > 1:
            mine.append((f"idle.{c}.*", ""))
        if n > 2:
            mine.append((f"work.{c % WORK_SUBJECTS}", f"g{c % 3}"))
        for k in range(n - len(mine)):
            mine.append((f"idle.{c}.k{k}", ""))
        left -= len(mine)
        plan.append(mine)
    return plan


async def steady(rate: float, stop: asyncio.Event, tick: float, fn: Any, counters: Counters) -> None:
    """Call ``fn(n)`` every ``tick`` seconds with the number of operations due to keep ``rate`` per second.

    At most one second's worth at a time: a generator that fell behind (a starved process on a loaded
    machine) skips what it missed, counted in ``counters.skipped``, rather than blocking its own event
    loop — and with it its own subscribers — for as long as the catch-up takes."""
    start = time.monotonic()
    done = 0
    while not stop.is_set():
        due = int((time.monotonic() - start) * rate) - done
        if due > max(1, int(rate)):
            counters.skipped += due - max(1, int(rate))
            done += due - max(1, int(rate))
            due = max(1, int(rate))
        if due > 0:
            await fn(due)
            done += due
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), tick)


async def run(args: argparse.Namespace, server: Server) -> dict[str, Any]:
    counters = Counters()
    host, port = "127.0.0.1", server.port
    pid = server.pid

    def on_error_for(name: str) -> Any:
        async def cb(e: Exception) -> None:
            counters.client_errors.append(f"{name}: {e!r}")

        return cb

    async def nc_open(name: str) -> Any:
        return await nats.connect(
            server.url, name=name, error_cb=on_error_for(name), max_reconnect_attempts=0, allow_reconnect=False
        )

    # The many idle connections with their subscriptions, opened a few at a time.
    plan = plan_subs(args.connections, args.subs)
    raws = [RawConn(counters) for _ in plan]
    sem = asyncio.Semaphore(50)
    opened: list[RawConn] = []

    async def open_one(rc: RawConn, subs: list[tuple[str, str]]) -> None:
        async with sem:
            await rc.open(host, port, subs, f"idle-{len(opened)}")
            opened.append(rc)

    t0 = time.monotonic()
    await asyncio.gather(*(open_one(rc, s) for rc, s in zip(raws, plan, strict=True)))
    setup_s = time.monotonic() - t0

    # The slow consumer: small receive buffer, subscribed to the bulk subject, never reads after setup.
    slow = RawConn(counters)
    await slow.open(host, port, [("bulk.>", "")], "slow", rcvbuf=4096)
    slow.stop_reading = True

    pub = await nc_open("publisher")
    fast = await nc_open("fast-consumer")
    rr = await nc_open("request-reply")
    jsc = await nc_open("jetstream")
    actives = {"publisher": pub, "fast-consumer": fast, "request-reply": rr, "jetstream": jsc}

    fast_got = 0

    async def fast_cb(msg: Any) -> None:
        nonlocal fast_got
        fast_got += 1

    await fast.subscribe("bulk.>", cb=fast_cb)

    async def echo(msg: Any) -> None:
        await msg.respond(msg.data)

    await rr.subscribe("rr.echo", cb=echo)

    js = jsc.jetstream()
    pulls = []
    for i in range(STREAMS):
        name = f"LOAD{i}"
        with contextlib.suppress(Exception):
            await js.delete_stream(name)
        await js.add_stream(name=name, subjects=[f"js.{i}.>"])
        await js.add_consumer(name, ConsumerConfig(durable_name="pull", ack_policy=AckPolicy.EXPLICIT))

        async def push_cb(msg: Any) -> None:
            await msg.ack()
            counters.js_acked += 1

        deliver = f"push.{i}"
        await js.add_consumer(
            name,
            ConsumerConfig(durable_name="push", ack_policy=AckPolicy.EXPLICIT, deliver_subject=deliver),
        )
        await jsc.subscribe(deliver, cb=push_cb)
        pulls.append(await js.pull_subscribe(f"js.{i}.>", durable="pull", stream=name))
    await asyncio.sleep(1)
    rss_start = rss_kib(pid)
    stop = asyncio.Event()

    payload = b"x" * args.size

    async def publish(n: int) -> None:
        t = time.perf_counter()
        for _ in range(n):
            c = random.randrange(args.connections)
            if random.random() < 0.2:
                subject = f"work.{random.randrange(WORK_SUBJECTS)}"
            else:
                subject = f"idle.{c}.k{random.randrange(max(1, args.subs // args.connections - 3))}"
            await pub.publish(subject, payload)
        counters.published += n
        counters.publish_stall_ms = max(counters.publish_stall_ms, (time.perf_counter() - t) * 1000)

    bulk = b"b" * BULK_PAYLOAD

    async def publish_bulk(n: int) -> None:
        for _ in range(n):
            await pub.publish("bulk.data", bulk)
        counters.published += n

    async def request(n: int) -> None:
        for _ in range(n):
            t = time.perf_counter()
            try:
                await rr.request("rr.echo", b"ping", timeout=5)
                counters.rr_latency_ms.append((time.perf_counter() - t) * 1000)
            except Exception:
                counters.rr_failed += 1

    js_i = 0

    async def js_publish(n: int) -> None:
        nonlocal js_i
        futs = []
        for _ in range(n):
            i = js_i % STREAMS
            js_i += 1
            futs.append(js.publish(f"js.{i}.m", payload))
        for r in await asyncio.gather(*futs, return_exceptions=True):
            if isinstance(r, BaseException):
                counters.publish_errors += 1
            else:
                counters.js_published += 1

    async def pull_loop(psub: Any) -> None:
        while not stop.is_set():
            try:
                msgs = await psub.fetch(50, timeout=1)
            except Exception:
                continue
            for m in msgs:
                await m.ack()
                counters.js_acked += 1

    tasks = [
        asyncio.create_task(steady(args.rate, stop, 0.02, publish, counters)),
        asyncio.create_task(steady(args.bulk_rate, stop, 0.05, publish_bulk, counters)),
        asyncio.create_task(steady(args.rr_rate, stop, 0.05, request, counters)),
        asyncio.create_task(steady(args.js_rate, stop, 0.05, js_publish, counters)),
        *(asyncio.create_task(pull_loop(p)) for p in pulls),
    ]
    start = time.monotonic()
    samples: list[tuple[float, int]] = []
    while time.monotonic() - start < args.duration:
        await asyncio.sleep(min(5.0, args.duration - (time.monotonic() - start)))
        samples.append((round(time.monotonic() - start, 1), rss_kib(pid)))
        if args.progress:
            print(f"{samples[-1][0]:7.1f}s rss={samples[-1][1] / 1024:.1f} MiB pub={counters.published} "
                  f"del={counters.delivered + fast_got} js={counters.js_published}/{counters.js_acked}",
                  file=sys.stderr)
    elapsed = time.monotonic() - start
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    rss_end = rss_kib(pid)
    delivered = counters.delivered + fast_got

    # The server's own record of closed connections: the slow one must be there, and only it.
    closed: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        closed = list(server.monitor("/connz?state=closed&limit=4096").get("connections") or [])
        if any(c.get("name") == "slow" for c in closed):
            break
        await asyncio.sleep(1)
    slow_reason = next((str(c.get("reason")) for c in closed if c.get("name") == "slow"), "")
    slow_closed = "Slow Consumer" in slow_reason
    # Every connection of this script's load has a name; unnamed entries are its own start-up probe
    # connections (closed before CONNECT: "Client Closed", or "Read Error" when the reset wins).
    others_closed_by_server = sorted(
        f"{c.get('name')}: {c.get('reason')}" for c in closed if c.get("name") and c.get("name") != "slow"
    )
    alive = await asyncio.gather(*(rc.alive(10) for rc in raws))
    # Give the readers a moment to see a close that raced the PING.
    await asyncio.sleep(1)
    idle_closed = sum(1 for rc, ok in zip(raws, alive, strict=True) if not ok or rc.closed)
    actives_closed = [name for name, nc in actives.items() if not nc.is_connected]
    varz = server.monitor("/varz")
    jsz = server.monitor("/jsz")

    for nc in actives.values():
        with contextlib.suppress(Exception):
            await nc.close()
    for rc in [*raws, slow]:
        rc.close()

    lat = sorted(counters.rr_latency_ms)

    def pct(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))], 2) if lat else float("nan")

    return {
        "target": args.target,
        "duration_s": round(elapsed, 1),
        "connections": args.connections + 5,
        "subscriptions": sum(len(s) for s in plan) + 2 + 1 + STREAMS,
        "setup_s": round(setup_s, 1),
        "published_msgs_per_s": round(counters.published / elapsed, 1),
        "delivered_msgs_per_s": round(delivered / elapsed, 1),
        "js_published_per_s": round(counters.js_published / elapsed, 1),
        "js_acked_per_s": round(counters.js_acked / elapsed, 1),
        "js_publish_errors": counters.publish_errors,
        "publish_stall_max_ms": round(counters.publish_stall_ms, 1),
        "requests": len(lat) + counters.rr_failed,
        "request_failed": counters.rr_failed,
        "request_p50_ms": pct(0.50),
        "request_p99_ms": pct(0.99),
        "slow_consumers_varz": varz.get("slow_consumers"),
        "slow_consumer_disconnected": slow_closed,
        "slow_consumer_reason": slow_reason,
        "others_closed_by_server": others_closed_by_server[:10],
        "idle_connections_closed": idle_closed,
        "active_connections_closed": actives_closed,
        "client_errors": counters.client_errors[:10],
        "generator_skipped_ops": counters.skipped,
        # What JetStream holds at the end: the embedded file store keeps each stream's active block
        # (up to 8 MiB) and an index slot per message in memory, so RSS follows it.
        "js_stored_msgs": jsz.get("messages"),
        "js_stored_mib": round(int(jsz.get("bytes") or 0) / 2**20, 1),
        "rss_start_mib": round(rss_start / 1024, 1),
        "rss_end_mib": round(rss_end / 1024, 1),
        "rss_samples_mib": [(t, round(k / 1024, 1)) for t, k in samples],
        "loadavg": [round(x, 2) for x in os.getloadavg()],
    }


def table(r: dict[str, Any]) -> str:
    rows = [
        ("target", r["target"]),
        ("duration", f"{r['duration_s']} s (setup {r['setup_s']} s)"),
        ("connections / subscriptions", f"{r['connections']} / {r['subscriptions']}"),
        ("published", f"{r['published_msgs_per_s']:,} msgs/s"),
        ("delivered", f"{r['delivered_msgs_per_s']:,} msgs/s"),
        ("JetStream published / acked", f"{r['js_published_per_s']:,} / {r['js_acked_per_s']:,} msgs/s"),
        ("JetStream publish errors", r["js_publish_errors"]),
        ("longest core publish stall", f"{r['publish_stall_max_ms']} ms"),
        ("request/reply p50 / p99", f"{r['request_p50_ms']} / {r['request_p99_ms']} ms ({r['requests']} requests,"
         f" {r['request_failed']} failed)"),
        ("slow consumers (/varz)", r["slow_consumers_varz"]),
        ("slow consumer disconnected", f"{r['slow_consumer_disconnected']} ({r['slow_consumer_reason']})"),
        ("others closed by the server", len(r["others_closed_by_server"])),
        ("other connections closed", f"{r['idle_connections_closed']} idle, {r['active_connections_closed']} active"),
        ("server RSS start / end", f"{r['rss_start_mib']} / {r['rss_end_mib']} MiB"),
        ("JetStream stored at the end", f"{r['js_stored_msgs']:,} msgs, {r['js_stored_mib']} MiB"),
        ("generator ops skipped (behind)", r["generator_skipped_ops"]),
        ("load average", r["loadavg"]),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=["embedded", "nats-server"], default="embedded")
    p.add_argument("--duration", type=float, default=60.0, help="seconds under load")
    p.add_argument("--connections", type=int, default=1000, help="idle subscriber connections")
    p.add_argument("--subs", type=int, default=10_000, help="subscriptions spread over those connections")
    p.add_argument("--rate", type=float, default=2000.0, help="core publishes per second onto those subs")
    p.add_argument("--bulk-rate", type=float, default=200.0, help="32 KiB publishes/s to the slow and one fast consumer")
    p.add_argument("--rr-rate", type=float, default=50.0, help="requests per second")
    p.add_argument("--js-rate", type=float, default=200.0, help="JetStream publishes per second over 20 streams")
    p.add_argument("--size", type=int, default=128, help="payload bytes")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.add_argument("--progress", action="store_true", help="print a line every 5 s to stderr")
    args = p.parse_args()

    raise_nofile(args.connections + 1000)
    with tempfile.TemporaryDirectory(prefix="pyjs-load-") as tmp:
        store = Path(tmp) / "store"
        store.mkdir()
        server = Server(args.target, store)
        server.start()
        try:
            result = asyncio.run(run(args, server))
        finally:
            server.stop()
    ok = (
        result["slow_consumer_disconnected"]
        and result["idle_connections_closed"] == 0
        and not result["active_connections_closed"]
        and not result["others_closed_by_server"]
    )
    result["ok"] = bool(ok)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
