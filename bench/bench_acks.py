"""Confirmed acks (an ack with a reply: ``ack_sync``, nats.go's double ack): what each costs the
server, ours vs nats-server 2.15.1, same client, one run.

    .venv/bin/python bench/bench_acks.py [--msgs 20000] [--workers 8] [--batch 32] [--rounds 2]
                                        [--baseline CMD] [--sync always] [--shapes serial]

A file stream holds ``--msgs`` messages spread over ``--workers`` subjects; each worker has its own
durable pull consumer on its subject and its own connection, and loops: ask for ``--batch``
messages, ack each as it arrives, then wait for its batch to be done. Shapes:

- confirmed: every ack carries a reply (``+ACK`` with a reply subject, as ``ack_sync`` sends it) and
  the batch is done when all its confirmations are in — ``workers x batch`` confirmed acks in
  flight, the load under which replies can share a state write (group commit);
- serial: one worker, batch 1 — fetch one, ack it with a reply, await the confirmation: nothing to
  share a write with (the worst case of a write per confirmed ack);
- plain: the confirmed shape with acks without a reply (the batch is done at a PING/PONG after its
  acks): what the loop costs without confirmations.

Figures: server CPU µs per message (user + system from /proc, the whole run: delivery, ack,
reply, state writes; best of ``--rounds``, the servers alternating), and acks/s. ``--baseline CMD``
also runs an older embedded server started by CMD (e.g. a script running ``python -m pyjetstream
serve`` from an older checkout), so old and new are measured in the same minutes. ``--sync always``
sets the JetStream ``sync_interval: always`` on every server (fsync per state write / message).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, Target

from bench_js_publish import server_cpu
from pyjetstream.client import connect

STREAM = "CA"


async def api(nc: Any, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    msg = await nc.request(f"$JS.API.{subject}", json.dumps(body or {}).encode(), timeout=30)
    return json.loads(msg.data)


async def fill(url: str, n: int, workers: int, window: int = 2000) -> None:
    """A fresh file stream with ``n`` messages, round robin over ``CA.<worker>`` (pipelined)."""
    nc = await connect(url, pending_size=64 * 1024 * 1024)
    try:
        await api(nc, f"STREAM.DELETE.{STREAM}")
        resp = await api(nc, f"STREAM.CREATE.{STREAM}", {"name": STREAM, "subjects": [f"{STREAM}.>"]})
        if "error" in resp:
            raise SystemExit(f"stream create failed: {resp['error']}")
        acked = 0
        room = asyncio.Event()

        def on_ack(msg: Any) -> None:
            nonlocal acked
            acked += 1
            room.set()

        inbox = nc.new_inbox()
        await nc.subscribe(inbox, cb=on_ack, pending_msgs_limit=-1, pending_bytes_limit=-1)
        for i in range(n):
            while i - acked >= window:
                room.clear()
                await room.wait()
            nc.publish_nowait(f"{STREAM}.{i % workers}", b"x" * 64, reply=inbox)
        while acked < n:
            room.clear()
            await room.wait()
    finally:
        await nc.close()


async def worker(url: str, name: str, subject: str, total: int, batch: int, confirm: bool) -> None:
    """One connection, one durable pull consumer on ``subject``: fetch ``batch``, ack each (with a
    reply when ``confirm``), wait for the batch's confirmations (or a PING/PONG), until ``total``."""
    nc = await connect(url, pending_size=64 * 1024 * 1024)
    try:
        cfg = {"durable_name": name, "ack_policy": "explicit", "filter_subject": subject, "max_ack_pending": -1}
        resp = await api(nc, f"CONSUMER.CREATE.{STREAM}.{name}", {"stream_name": STREAM, "config": cfg})
        if "error" in resp:
            raise SystemExit(f"consumer create failed: {resp['error']}")
        msgs, confirms = nc.new_inbox(), nc.new_inbox()
        want = got = confirmed = 0
        done = asyncio.Event()

        def on_msg(msg: Any) -> None:
            nonlocal got
            if not msg.reply:
                return  # a status
            nc.publish_nowait(msg.reply, b"+ACK", reply=confirms if confirm else "")
            got += 1
            if got == want and not confirm:
                done.set()

        def on_confirm(msg: Any) -> None:
            nonlocal confirmed
            confirmed += 1
            if confirmed == want:
                done.set()

        await nc.subscribe(msgs, cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.subscribe(confirms, cb=on_confirm, pending_msgs_limit=-1, pending_bytes_limit=-1)
        await nc.flush()
        left = total
        while left:
            want, got, confirmed = min(batch, left), 0, 0
            done.clear()
            req = json.dumps({"batch": want, "expires": 30_000_000_000}).encode()
            nc.publish_nowait(f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{name}", req, reply=msgs)
            await asyncio.wait_for(done.wait(), 60)
            if not confirm:
                await nc.flush()
            left -= want
    finally:
        await nc.close()


async def measure(target: Target, shape: str, args: argparse.Namespace, tag: str) -> tuple[float, float]:
    """One run of ``shape`` on a freshly filled stream: (server CPU µs per message, acks/s)."""
    workers = 1 if shape == "serial" else args.workers
    n = args.serial_msgs if shape == "serial" else args.msgs
    await fill(target.url, n, workers)
    batch = 1 if shape == "serial" else args.batch
    per = [n // workers + (1 if i < n % workers else 0) for i in range(workers)]
    before = server_cpu(target)
    start = time.perf_counter()
    await asyncio.gather(
        *(
            worker(target.url, f"{tag}{i}", f"{STREAM}.{i}", per[i], batch, shape != "plain")
            for i in range(workers)
        )
    )
    elapsed = time.perf_counter() - start
    return (server_cpu(target) - before) / n * 1e6, n / elapsed


def start_targets(args: argparse.Namespace, work: Path) -> dict[str, Target]:
    settings: dict[str, Any] = {}
    if args.sync:
        settings["jetstream_settings"] = {"sync_interval": args.sync}
    targets: dict[str, Target] = {}
    if args.baseline:
        targets["baseline"] = Target(EMBEDDED, work / "baseline", dict(settings), binary=args.baseline)
    targets["pyjetstream"] = Target(EMBEDDED, work / "embedded", dict(settings))
    targets["nats-server"] = Target(NATS_SERVER, work / "nats", dict(settings))
    for target in targets.values():
        target.workdir.mkdir(parents=True, exist_ok=True)
        target.start()
    return targets


async def run(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-acks-"))
    targets = start_targets(args, work)
    shapes = args.shapes.split(",")
    cpu: dict[str, dict[str, float]] = {k: {} for k in targets}
    rate: dict[str, dict[str, float]] = {k: {} for k in targets}
    try:
        for r in range(args.rounds):  # the servers alternate within a round: load hits them alike
            for shape in shapes:
                for kind, target in targets.items():
                    c, a = await measure(target, shape, args, f"{shape[0].upper()}{r}x")
                    cpu[kind][shape] = min(cpu[kind].get(shape, float("inf")), c)
                    rate[kind][shape] = max(rate[kind].get(shape, 0.0), a)
        report(args, targets, cpu, rate)
    finally:
        for target in targets.values():
            target.stop()
        shutil.rmtree(work, ignore_errors=True)


def report(
    args: argparse.Namespace, targets: dict[str, Target], cpu: dict[str, dict[str, float]], rate: dict[str, dict[str, float]]
) -> None:
    print(
        f"\n{args.msgs} msgs (serial: {args.serial_msgs}), {args.workers} workers x batch {args.batch},"
        f" sync {args.sync or 'default'}, best of {args.rounds}, load {os.getloadavg()[0]:.1f}"
    )
    kinds = list(targets)
    head = "".join(f"{k:>13}" for k in kinds)
    print(f"{'server CPU µs/msg':<22}{head}{'ours/nats':>11}" + (f"{'new/old':>9}" if args.baseline else ""))
    for shape in cpu[kinds[0]]:
        vals = "".join(f"{cpu[k][shape]:>13.1f}" for k in kinds)
        line = f"{shape:<22}{vals}{cpu['pyjetstream'][shape] / cpu['nats-server'][shape]:>11.2f}"
        if args.baseline:
            line += f"{cpu['pyjetstream'][shape] / cpu['baseline'][shape]:>9.2f}"
        print(line)
    print(f"{'acks/s':<22}{head}")
    for shape in rate[kinds[0]]:
        vals = "".join(f"{rate[k][shape]:>13,.0f}" for k in kinds)
        line = f"{shape:<22}{vals}{rate['pyjetstream'][shape] / rate['nats-server'][shape]:>11.2f}"
        if args.baseline:
            line += f"{rate['pyjetstream'][shape] / rate['baseline'][shape]:>9.2f}"
        print(line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--msgs", type=int, default=20_000)
    parser.add_argument("--serial-msgs", type=int, default=2_000)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", default="", help="command starting an older embedded server")
    parser.add_argument("--sync", default="", help="JetStream sync_interval for every server (e.g. always)")
    parser.add_argument("--shapes", default="confirmed,serial,plain", help="which shapes, comma-separated")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
