"""The Spark sink's task without Spark: ``write_partition`` of Arrow batches, per ``publishMode``.

    .venv/bin/python bench/bench_spark_write.py [--rows 50000] [--size 100] [--rounds 3]
                                                [--targets embedded,nats-server] [--modes ...]

For each target (a server subprocess started as the tests do) and each mode, the rows are
written ``--rounds`` times into a fresh stream; printed per row, best of the rounds: the task's
CPU (``time.process_time``), the server's CPU (``/proc/<pid>/stat``, utime + stime) and wall
time. CPU time is what to compare on a shared machine (wall time moves with the load).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, make_target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark.msgid import MsgIdGenerator, scope_of
from pyjetstream.spark.options import parse_options
from pyjetstream.spark.writer import WriteLayout, write_partition

STREAM = "BENCH_W"
MODES = {
    "async, no ids": {"deriveMsgId": "false"},
    "async, derived ids": {},
    "fast, derived ids": {"publishMode": "fast"},
    "atomic, derived ids": {"publishMode": "atomic"},
}
CLK = os.sysconf("SC_CLK_TCK")


def server_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


async def reset(url: str) -> None:
    nc = await connect(url)
    try:
        js = jetstream(nc)
        for _ in range(100):
            try:
                await js.account_info()
                break
            except Exception:
                await asyncio.sleep(0.1)
        try:
            await js.delete_stream(STREAM)
        except Exception:
            pass
        await js.create_stream(
            StreamConfig(
                name=STREAM, subjects=["bw.>"], allow_direct=True, allow_batched=True, allow_atomic=True
            )
        )
    finally:
        await nc.close()


def batches(rows: int, size: int, per_batch: int = 10_000) -> list[pa.RecordBatch]:
    pad = b"x" * max(0, size - 8)
    out = []
    for start in range(0, rows, per_batch):
        ids = range(start, min(rows, start + per_batch))
        out.append(
            pa.record_batch(
                {
                    "subject": pa.array([f"bw.{i % 16}" for i in ids], pa.string()),
                    "data": pa.array([b"%08d" % i + pad for i in ids], pa.binary()),
                }
            )
        )
    return out


def run_mode(
    url: str, pid: int, rows: list[pa.RecordBatch], options: dict[str, str]
) -> tuple[float, float, float]:
    opts = parse_options({"servers": url, "stream": STREAM, **options})
    layout = WriteLayout.plan(rows[0].schema and _schema(), opts)
    ids = MsgIdGenerator(scope_of(os.urandom(8).hex()), 0, 0) if layout.derive_msg_id else None
    asyncio.run(reset(url))
    s0 = server_cpu(pid)
    c0 = time.process_time()
    w0 = time.perf_counter()
    write_partition(opts, layout, iter(rows), ids, 0)
    w1 = time.perf_counter()
    c1 = time.process_time()
    s1 = server_cpu(pid)
    return c1 - c0, s1 - s0, w1 - w0


def _schema():  # type: ignore[no-untyped-def]
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    return StructType([StructField("subject", StringType()), StructField("data", BinaryType())])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", default=f"{EMBEDDED},{NATS_SERVER}")
    parser.add_argument(
        "--modes", default=";".join(MODES), help="semicolon-separated, of: " + "; ".join(MODES)
    )
    parser.add_argument("--url", default="", help="an already running server (with --pid)")
    parser.add_argument("--pid", type=int, default=0)
    args = parser.parse_args()
    modes = [m.strip() for m in args.modes.split(";") if m.strip()]
    data = batches(args.rows, args.size)
    n = args.rows
    print(f"{n} rows x {args.size} B, best of {args.rounds}; µs per row")
    print(f"{'target':12} {'mode':22} {'task CPU':>9} {'server CPU':>11} {'wall':>8}")
    with tempfile.TemporaryDirectory(prefix="bench-sw-") as tmp:
        for kind in [t.strip() for t in args.targets.split(",") if t.strip()]:
            target = None
            if args.url:
                url, pid = args.url, args.pid
            else:
                target = make_target(kind, Path(tmp) / kind)
                assert target.proc is not None
                url, pid = target.url, target.proc.pid
            try:
                run_mode(url, pid, data[:1], MODES["async, derived ids"])  # warm up
                for mode in modes:
                    results = [run_mode(url, pid, data, MODES[mode]) for _ in range(args.rounds)]
                    c = min(r[0] for r in results) / n * 1e6
                    s = min(r[1] for r in results) / n * 1e6
                    w = min(r[2] for r in results) / n * 1e6
                    print(f"{kind:12} {mode:22} {c:9.2f} {s:11.2f} {w:8.2f}", flush=True)
            finally:
                if target is not None:
                    target.stop()
            if args.url:
                break


if __name__ == "__main__":
    main()
