"""JetStream publish benchmark: our embedded server vs nats-server, same client, one run.

    .venv/bin/python bench/bench_js_publish.py [--msgs 20000] [--size 128] [--window 1000]
        [--rounds 2] [--restart-msgs 1000000] [--skip-restart | --restart-only]

Both servers run as subprocesses started the same way (a NATS config file, a random port), and
every figure is taken with pyjetstream's core client against each in turn:

- synchronous publish: one message in flight, wait for its PubAck, repeat (msgs/s);
- pipelined publish: up to ``--window`` messages in flight, PubAcks counted as they come (msgs/s);
  both on a file stream and on a memory stream;
- restart time with ``--restart-msgs`` stored messages: a graceful restart and a ``kill -9``
  restart, timed from process start until STREAM.INFO answers with every message (best of
  ``--rounds``, the servers alternating), and each server's resident memory with them stored,
  after the fill and after the restarts (a file stream must not keep payloads in RAM).

Under the pipelined rows: µs of server CPU per message (user + system from /proc, best of the
rounds), which load from other work on the machine disturbs far less than msgs/s.

Prints each figure and the ratio ours / nats-server (> 1: we are faster; for restart times the
ratio is nats-server / ours, so > 1 also means we are faster).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

from pyjetstream.client import connect


async def api(
    nc: Any, subject: str, body: dict[str, Any] | None = None, timeout: float = 30
) -> dict[str, Any]:
    msg = await nc.request(f"$JS.API.{subject}", json.dumps(body or {}).encode(), timeout=timeout)
    return json.loads(msg.data)


async def fresh_stream(nc: Any, name: str, storage: str) -> None:
    await api(nc, f"STREAM.DELETE.{name}")
    resp = await api(
        nc, f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name}.>"], "storage": storage}
    )
    if "error" in resp:
        raise SystemExit(f"stream create failed: {resp['error']}")


async def bench_sync(url: str, storage: str, n: int, payload: bytes) -> float:
    nc = await connect(url)
    try:
        await fresh_stream(nc, "BS", storage)
        for _ in range(100):  # warm up
            await nc.request("BS.warm", payload, timeout=10)
        start = time.perf_counter()
        for _ in range(n):
            msg = await nc.request("BS.x", payload, timeout=10)
            if msg.data[:2] != b'{"' or b"error" in msg.data:
                raise SystemExit(f"bad PubAck: {msg.data!r}")
        return n / (time.perf_counter() - start)
    finally:
        await nc.close()


async def bench_pipelined(url: str, storage: str, n: int, payload: bytes, window: int) -> float:
    """Keep up to ``window`` publishes awaiting their PubAck."""
    nc = await connect(url, pending_size=256 * 1024 * 1024)
    loop = asyncio.get_running_loop()
    acked = 0
    errors = 0
    room = asyncio.Event()
    done = loop.create_future()

    def on_ack(msg: Any) -> None:
        nonlocal acked, errors
        acked += 1
        if b"error" in msg.data:
            errors += 1
        room.set()
        if acked == n and not done.done():
            done.set_result(None)

    try:
        await fresh_stream(nc, "BP", storage)
        inbox = nc.new_inbox()
        await nc.subscribe(inbox + ".*", cb=on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        reply = inbox + ".a"
        start = time.perf_counter()
        sent = 0
        while sent < n:
            while sent - acked >= window:
                room.clear()
                await room.wait()
            burst = min(n - sent, window - (sent - acked))
            for _ in range(burst):
                nc.publish_nowait("BP.x", payload, reply=reply)
            sent += burst
            await nc.wait_writable()
        await asyncio.wait_for(done, 120)
        elapsed = time.perf_counter() - start
        if errors:
            raise SystemExit(f"{errors} publishes failed")
        return n / elapsed
    finally:
        await nc.close()


async def fill(url: str, n: int, payload: bytes) -> None:
    """Store ``n`` messages in a fresh file stream RS (pipelined)."""
    nc = await connect(url)
    try:
        await fresh_stream(nc, "RS", "file")
    finally:
        await nc.close()
    rate = await bench_pipelined_into(url, "RS", n, payload)
    print(f"    stored {n:,} messages at {rate:,.0f} msgs/s", flush=True)


async def bench_pipelined_into(url: str, stream: str, n: int, payload: bytes, window: int = 2000) -> float:
    nc = await connect(url, pending_size=256 * 1024 * 1024)
    acked = 0
    room = asyncio.Event()
    done = asyncio.get_running_loop().create_future()

    def on_ack(msg: Any) -> None:
        nonlocal acked
        acked += 1
        room.set()
        if acked == n and not done.done():
            done.set_result(None)

    try:
        inbox = nc.new_inbox()
        await nc.subscribe(inbox + ".*", cb=on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        start = time.perf_counter()
        sent = 0
        while sent < n:
            while sent - acked >= window:
                room.clear()
                await room.wait()
            burst = min(n - sent, window - (sent - acked))
            for _ in range(burst):
                nc.publish_nowait(f"{stream}.x", payload, reply=inbox + ".a")
            sent += burst
            await nc.wait_writable()
        await asyncio.wait_for(done, 600)
        return n / (time.perf_counter() - start)
    finally:
        await nc.close()


async def time_restart(target: Target, n: int, kill: bool) -> float:
    """Seconds from process start until STREAM.INFO reports all ``n`` messages."""
    if kill:
        target.kill()
    else:
        target.stop()
    start = time.perf_counter()
    await asyncio.to_thread(target.start)
    while True:
        try:
            nc = await connect(target.url)
            try:
                info = await api(nc, "STREAM.INFO.RS", timeout=60)
            finally:
                await nc.close()
            if info.get("state", {}).get("messages") == n:
                return time.perf_counter() - start
            if "error" not in info:
                raise SystemExit(f"restart lost messages: {info.get('state')}")
        except (OSError, TimeoutError):
            pass
        await asyncio.sleep(0.01)


def server_cpu(target: Target) -> float:
    """The server process's CPU seconds so far (user + system, from /proc; 0 where there is none)."""
    try:
        fields = Path(f"/proc/{target.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()  # type: ignore[union-attr]
    except (OSError, AttributeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_rss_mib(target: Target) -> float:
    """The server process's resident memory (VmRSS) in MiB, 0 where /proc has none."""
    try:
        for line in Path(f"/proc/{target.proc.pid}/status").read_text().splitlines():  # type: ignore[union-attr]
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, AttributeError):
        pass
    return 0.0


async def cpu_per_msg(
    rounds: int, targets: dict[str, Target], n: int, measure: Callable[[Target], Awaitable[float]]
) -> dict[str, float]:
    """µs of server CPU per message (best of ``rounds``, alternating): steadier than msgs/s when
    the machine is shared, since it does not count the time the server waits for a core."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        for kind, target in targets.items():
            before = server_cpu(target)
            await measure(target)
            used = (server_cpu(target) - before) / n * 1e6
            best[kind] = min(best.get(kind, used), used)
    return best


async def alternate(
    rounds: int, targets: dict[str, Target], measure: Callable[[Target], Awaitable[float]]
) -> dict[str, float]:
    """Measure each target ``rounds`` times, alternating (background noise hits both alike);
    keep each one's best figure."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        for kind, target in targets.items():
            best[kind] = max(best.get(kind, 0.0), await measure(target))
    return best


def row(label: str, ours: float, theirs: float, unit: str, lower_is_better: bool = False) -> None:
    ratio = (theirs / ours) if lower_is_better else (ours / theirs)
    digits = {"s": 3, "µs": 2}.get(unit, 0)
    print(f"{label:<40} {ours:>14,.{digits}f} {theirs:>14,.{digits}f} {unit:<7} {ratio:>7.2f}x", flush=True)


async def run(args: argparse.Namespace) -> None:
    payload = b"x" * args.size
    workdir = Path(tempfile.mkdtemp(prefix="bench-js-"))
    targets = {kind: make_target(kind, workdir / kind) for kind in (EMBEDDED, NATS_SERVER)}
    try:
        print(f"{'':<40} {'ours':>14} {'nats-server':>14} {'':<7} {'ratio':>7}")
        for storage in () if args.restart_only else ("file", "memory"):
            figures = await alternate(
                args.rounds, targets, lambda t, st=storage: bench_sync(t.url, st, args.sync_msgs, payload)
            )
            row(f"sync publish, {storage} ({args.size} B)", figures[EMBEDDED], figures[NATS_SERVER], "msgs/s")
            figures = await alternate(
                args.rounds,
                targets,
                lambda t, st=storage: bench_pipelined(t.url, st, args.msgs, payload, args.window),
            )
            row(
                f"pipelined publish, {storage} (w={args.window})",
                figures[EMBEDDED],
                figures[NATS_SERVER],
                "msgs/s",
            )
            cpu = await cpu_per_msg(
                args.rounds,
                targets,
                args.msgs,
                lambda t, st=storage: bench_pipelined(t.url, st, args.msgs, payload, args.window),
            )
            row(f"  server CPU per message, {storage}", cpu[EMBEDDED], cpu[NATS_SERVER], "µs", True)
        if not args.skip_restart:
            n = args.restart_msgs
            times: dict[str, dict[str, float]] = {kind: {} for kind in targets}
            for kind, t in targets.items():
                print(f"  filling {kind} with {n} messages ...", flush=True)
                await fill(t.url, n, b"r" * 16)
                print(f"    resident memory with {n:,} messages stored: {server_rss_mib(t):,.0f} MiB", flush=True)
            for _ in range(args.rounds):
                for kind, t in targets.items():
                    for how in ("graceful", "kill -9"):
                        took = await time_restart(t, n, kill=how == "kill -9")
                        times[kind][how] = min(times[kind].get(how, took), took)
            for kind, t in targets.items():
                print(f"    resident memory after the restarts: {kind} {server_rss_mib(t):,.0f} MiB", flush=True)
            for how in ("graceful", "kill -9"):
                row(
                    f"restart with {n:,} msgs ({how})",
                    times[EMBEDDED][how],
                    times[NATS_SERVER][how],
                    "s",
                    True,
                )
    finally:
        for t in targets.values():
            t.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--msgs", type=int, default=50_000, help="pipelined publishes per round")
    parser.add_argument("--sync-msgs", type=int, default=5_000, help="synchronous publishes per round")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--window", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--restart-msgs", type=int, default=1_000_000)
    parser.add_argument("--skip-restart", action="store_true")
    parser.add_argument("--restart-only", action="store_true", help="only the restart and memory rows")
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
