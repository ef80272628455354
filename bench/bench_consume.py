"""JetStream consume benchmark: our embedded server vs nats-server, same client, one run.

    .venv/bin/python bench/bench_consume.py [--msgs 50000] [--size 128] [--batch 256] [--rounds 2]

Both servers run as subprocesses started the same way (a NATS config file, a random port); every
figure is taken with pyjetstream's core client against each in turn, on a file stream filled with
``--msgs`` messages of ``--size`` bytes:

- pull + ack: a durable pull consumer; requests of ``--batch`` messages (two in flight, so the
  next batch is on its way while one is processed), every message acked with ``+ACK`` as it
  arrives (no ack reply); timed until the consumer's ack floor reaches the end (msgs/s);
- push, ack none: an ephemeral push consumer delivering everything to one subscription (msgs/s);
- push + ack: the same with explicit acks, timed until the ack floor reaches the end (msgs/s);
- server CPU per message: µs of the server process's CPU (user + system from /proc, best of the
  rounds) for each of the three runs above — steadier than msgs/s on a shared machine;
- ack round trip: a message fetched, then acked with a reply (AckSync) and the confirmation
  awaited, one after the other (median and p99 latency).

Prints each figure and the ratio ours / nats-server (> 1: we are faster; for latency the ratio is
nats-server / ours, so > 1 also means we are faster).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, make_target

from bench_js_publish import server_cpu
from pyjetstream.client import connect

STREAM = "CB"


async def api(
    nc: Any, subject: str, body: dict[str, Any] | None = None, timeout: float = 30
) -> dict[str, Any]:
    msg = await nc.request(f"$JS.API.{subject}", json.dumps(body or {}).encode(), timeout=timeout)
    return json.loads(msg.data)


async def fill(url: str, n: int, payload: bytes, window: int = 2000) -> None:
    """A fresh file stream holding ``n`` messages (pipelined publishes)."""
    nc = await connect(url, pending_size=256 * 1024 * 1024)
    try:
        await api(nc, f"STREAM.DELETE.{STREAM}")
        resp = await api(nc, f"STREAM.CREATE.{STREAM}", {"name": STREAM, "subjects": [f"{STREAM}.>"]})
        if "error" in resp:
            raise SystemExit(f"stream create failed: {resp['error']}")
        acked = 0
        room = asyncio.Event()
        done = asyncio.get_running_loop().create_future()

        def on_ack(msg: Any) -> None:
            nonlocal acked
            acked += 1
            room.set()
            if acked == n and not done.done():
                done.set_result(None)

        inbox = nc.new_inbox()
        await nc.subscribe(inbox, cb=on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        sent = 0
        while sent < n:
            while sent - acked >= window:
                room.clear()
                await room.wait()
            burst = min(n - sent, window - (sent - acked))
            for _ in range(burst):
                nc.publish_nowait(f"{STREAM}.x", payload, reply=inbox)
            sent += burst
            await nc.wait_writable()
        await asyncio.wait_for(done, 600)
    finally:
        await nc.close()


async def wait_ack_floor(nc: Any, consumer: str, n: int) -> None:
    while True:
        info = await api(nc, f"CONSUMER.INFO.{STREAM}.{consumer}")
        if info["ack_floor"]["stream_seq"] >= n:
            return
        await asyncio.sleep(0.002)


async def bench_pull(url: str, n: int, batch: int, name: str) -> float:
    nc = await connect(url, pending_size=256 * 1024 * 1024)
    try:
        resp = await api(
            nc,
            f"CONSUMER.CREATE.{STREAM}.{name}",
            {"stream_name": STREAM, "config": {"durable_name": name, "ack_policy": "explicit"}},
        )
        if "error" in resp:
            raise SystemExit(f"consumer create failed: {resp['error']}")
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        received = 0
        in_batch = 0
        inbox = nc.new_inbox()
        next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{name}"
        request = json.dumps({"batch": batch, "expires": 5_000_000_000}).encode()

        def on_msg(msg: Any) -> None:
            nonlocal received, in_batch
            if not msg.reply:  # a status (e.g. 408 at the very end)
                return
            nc.publish_nowait(msg.reply, b"+ACK")
            received += 1
            in_batch += 1
            if in_batch == batch:
                in_batch = 0
                nc.publish_nowait(next_subject, request, reply=inbox)
            if received == n and not done.done():
                done.set_result(None)

        await nc.subscribe(inbox, cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        start = time.perf_counter()
        nc.publish_nowait(next_subject, request, reply=inbox)
        nc.publish_nowait(next_subject, request, reply=inbox)
        await asyncio.wait_for(done, 600)
        await wait_ack_floor(nc, name, n)
        return n / (time.perf_counter() - start)
    finally:
        await nc.close()


async def bench_push(url: str, n: int, ack: bool, name: str) -> float:
    nc = await connect(url, pending_size=256 * 1024 * 1024)
    try:
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        received = 0
        deliver = nc.new_inbox()

        def on_msg(msg: Any) -> None:
            nonlocal received
            if not msg.reply:
                return
            if ack:
                nc.publish_nowait(msg.reply, b"+ACK")
            received += 1
            if received == n and not done.done():
                done.set_result(None)

        await nc.subscribe(deliver, cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        cfg: dict[str, Any] = {"deliver_subject": deliver, "ack_policy": "explicit" if ack else "none"}
        if ack:
            cfg["durable_name"] = name
            cfg["max_ack_pending"] = 20_000
        start = time.perf_counter()
        subject = f"CONSUMER.CREATE.{STREAM}.{name}" if ack else f"CONSUMER.CREATE.{STREAM}"
        resp = await api(nc, subject, {"stream_name": STREAM, "config": cfg})
        if "error" in resp:
            raise SystemExit(f"consumer create failed: {resp['error']}")
        await asyncio.wait_for(done, 600)
        if ack:
            await wait_ack_floor(nc, name, n)
        return n / (time.perf_counter() - start)
    finally:
        await nc.close()


async def bench_ack_latency(url: str, n: int) -> tuple[float, float]:
    """Serial fetch-one + AckSync round trips: (median, p99) of the ack round trip in µs."""
    nc = await connect(url)
    try:
        name = "LAT"
        await api(
            nc,
            f"CONSUMER.CREATE.{STREAM}.{name}",
            {"stream_name": STREAM, "config": {"durable_name": name, "ack_policy": "explicit"}},
        )
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        next_subject = f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{name}"
        samples = []
        for _ in range(n):
            nc.publish_nowait(next_subject, b"1", reply=inbox)
            msg = await sub.next_msg(timeout=10)
            start = time.perf_counter()
            await nc.request(msg.reply, b"+ACK", timeout=10)
            samples.append((time.perf_counter() - start) * 1e6)
        samples.sort()
        return statistics.median(samples), samples[int(len(samples) * 0.99) - 1]
    finally:
        await nc.close()


def row(label: str, ours: float, theirs: float, unit: str, lower_is_better: bool = False) -> None:
    ratio = theirs / ours if lower_is_better else ours / theirs
    print(f"{label:<34} {ours:>12,.0f} {theirs:>12,.0f} {unit:<8} {ratio:>6.2f}x", flush=True)


async def run(args: argparse.Namespace) -> None:
    payload = b"x" * args.size
    work = Path(tempfile.mkdtemp(prefix="bench-consume-"))
    targets = {kind: make_target(kind, work / kind) for kind in (EMBEDDED, NATS_SERVER)}
    try:
        for kind, target in targets.items():
            print(f"filling {kind} with {args.msgs} x {args.size} B ...", flush=True)
            await fill(target.url, args.msgs, payload)
        best: dict[str, dict[str, float]] = {kind: {} for kind in targets}
        cpu: dict[str, dict[str, float]] = {kind: {} for kind in targets}
        # Rounds alternate between the servers, so background load hits both alike; best of rounds.
        for i in range(args.rounds):
            for kind, target in targets.items():
                runs: tuple[tuple[str, Any, tuple[Any, ...]], ...] = (
                    ("pull", bench_pull, (target.url, args.msgs, args.batch, f"P{i}")),
                    ("push", bench_push, (target.url, args.msgs, False, f"E{i}")),
                    ("push_ack", bench_push, (target.url, args.msgs, True, f"A{i}")),
                )
                for key, measure, measure_args in runs:
                    before = server_cpu(target)
                    value = await measure(*measure_args)
                    used = (server_cpu(target) - before) / args.msgs * 1e6
                    best[kind][key] = max(best[kind].get(key, 0.0), value)
                    cpu[kind][key] = min(cpu[kind].get(key, float("inf")), used)
        lat = {
            kind: await bench_ack_latency(target.url, args.latency_msgs) for kind, target in targets.items()
        }
        ours, theirs = best[EMBEDDED], best[NATS_SERVER]
        print()
        print(
            f"{args.msgs} msgs of {args.size} B, file stream; pull batch {args.batch}; best of {args.rounds}"
        )
        print(f"{'':<34} {'pyjetstream':>12} {'nats-server':>12} {'':<8} {'ratio':>7}")
        row("pull consume + ack", ours["pull"], theirs["pull"], "msgs/s")
        row("push consume, ack none", ours["push"], theirs["push"], "msgs/s")
        row("push consume + ack", ours["push_ack"], theirs["push_ack"], "msgs/s")
        for key, label in (("pull", "pull"), ("push", "push, ack none"), ("push_ack", "push + ack")):
            ours_cpu, theirs_cpu = cpu[EMBEDDED][key], cpu[NATS_SERVER][key]
            name = f"  server CPU/msg, {label}"
            print(f"{name:<34} {ours_cpu:>12.2f} {theirs_cpu:>12.2f} {'µs':<8} {theirs_cpu / ours_cpu:>6.2f}x")
        row("ack round trip (median)", lat[EMBEDDED][0], lat[NATS_SERVER][0], "µs", lower_is_better=True)
        row("ack round trip (p99)", lat[EMBEDDED][1], lat[NATS_SERVER][1], "µs", lower_is_better=True)
    finally:
        for target in targets.values():
            target.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--msgs", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency-msgs", type=int, default=500)
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
