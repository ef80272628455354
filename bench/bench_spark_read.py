"""The Spark source's partition reads with and without Spark: where a read row's time goes.

    .venv/bin/python bench/bench_spark_read.py [--rows 200000] [--size 100] [--rounds 3]
                                               [--targets embedded,nats-server] [--partitions 1,2]
                                               [--spark] [--columns DDL] [--parquet]

For each target (a server subprocess started as the tests do) the stream is filled once by the
Spark sink's task code (``write_partition``, async, derived ``Nats-Msg-Id``: every row carries
``Nats-Msg-Id`` and ``Nats-Expected-Stream``, as ``bench_spark.py``'s rows do). Then, per partition
count, best of ``--rounds``, per row:

- in-process (no Spark): ``partition.read_range`` of each partition's range, the partitions in
  their own processes side by side; the readers' CPU (``time.process_time``, summed), the server's
  CPU (``/proc/<pid>/stat``) and the wall time of the whole read;
- with ``--spark``: the ``bench_spark.py`` aggregate query on a local SparkSession (2 cores), its
  wall time, the server's CPU and the CPU of the Spark JVM and its Python workers
  (``/proc/<pid>/stat`` of the JVM and every process under it), and the fixed cost of a query (the
  same query over one row, ``endSequence=1``); with ``--columns``, the same query with that user schema
  too (only those columns built and handed to Spark), interleaved with the full schema's; with
  ``--parquet``, the same query over Parquet files of the same rows (as many as partitions) in the same
  rounds: the ratio that holds on a loaded machine.

CPU time is what to compare on a shared machine (wall time moves with the load).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, make_target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark.msgid import MsgIdGenerator, scope_of
from pyjetstream.spark.options import parse_options
from pyjetstream.spark.partitioning import split_range

STREAM = "BENCH_R"
CLK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """utime + stime of one process, seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLK


def tree_cpu(root: int) -> float:
    """utime + stime of ``root`` and every live process under it (reaped ones are in the parent's
    cutime, added too)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        try:
            f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) / CLK
        todo.extend(children.get(pid, []))
    return total


async def fill(url: str, rows: int, size: int) -> None:
    from pyjetstream.spark.writer import WriteLayout, write_partition

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
        await js.create_stream(StreamConfig(name=STREAM, subjects=["br.>"], allow_direct=True))
    finally:
        await nc.close()
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    schema = StructType([StructField("subject", StringType()), StructField("data", BinaryType())])
    pad = b"x" * max(0, size - 8)
    batches = []
    for start in range(0, rows, 10_000):
        ids = range(start, min(rows, start + 10_000))
        batches.append(
            pa.record_batch(
                {
                    "subject": pa.array([f"br.{i % 16}" for i in ids], pa.string()),
                    "data": pa.array([b"%08d" % i + pad for i in ids], pa.binary()),
                }
            )
        )
    opts = parse_options({"servers": url, "stream": STREAM})
    layout = WriteLayout.plan(schema, opts)
    await asyncio.to_thread(
        write_partition, opts, layout, iter(batches), MsgIdGenerator(scope_of(os.urandom(8).hex()), 0, 0), 0
    )


def read_part(url: str, first: int, last: int, extra: dict[str, str]) -> tuple[float, float, int]:
    """One partition's read in this process: (CPU, wall, rows)."""
    from pyspark.sql.types import StructType

    from pyjetstream.spark.arrow_batch import arrow_schema
    from pyjetstream.spark.partition import read_range
    from pyjetstream.spark.schema import message_schema

    options = {"servers": url, "stream": STREAM, **extra}
    opts = parse_options(options)
    schema = arrow_schema(message_schema(opts))
    assert isinstance(message_schema(opts), StructType)
    c0, w0 = time.process_time(), time.perf_counter()
    n = 0
    for batch in read_range(opts, STREAM, first, last, (), schema):
        n += batch.num_rows
    return time.process_time() - c0, time.perf_counter() - w0, n


def in_process(
    pool: concurrent.futures.Executor, url: str, pid: int, rows: int, parts: int, extra: dict[str, str]
) -> tuple[float, float, float]:
    ranges = split_range(1, rows, parts)
    s0, w0 = proc_cpu(pid), time.perf_counter()
    futures = [pool.submit(read_part, url, r.first, r.last, extra) for r in ranges]
    results = [f.result() for f in futures]
    wall, server = time.perf_counter() - w0, proc_cpu(pid) - s0
    assert sum(r[2] for r in results) == rows, results
    return sum(r[0] for r in results), server, wall


def spark_query(
    spark: Any,
    url: str,
    pid: int,
    rows: int,
    parts: int,
    extra: dict[str, str],
    end: int = 0,
    columns: str = "",
) -> tuple[float, float, float]:
    from pyspark.sql import functions as F

    reader = spark.read.format("jetstream").option("servers", url).option("stream", STREAM)
    if columns:
        reader = reader.schema(columns)
    reader = reader.option("partitions", parts)
    for key, value in extra.items():
        reader = reader.option(key, value)
    if end:
        reader = reader.option("endSequence", end)
    agg = reader.load().agg(
        F.count("*").alias("n"), F.sum(F.length("data")), F.max("timestamp"), F.count("subject")
    )
    jvm = spark.sparkContext._gateway.proc.pid
    j0, s0, w0 = tree_cpu(jvm), proc_cpu(pid), time.perf_counter()
    n = agg.collect()[0].n
    wall = time.perf_counter() - w0
    assert n == (end or rows), n
    return tree_cpu(jvm) - j0, proc_cpu(pid) - s0, wall


PARQUET = "parquet"


def parquet_query(spark: Any, path: str, rows: int) -> tuple[float, float, float]:
    """The same aggregate over Parquet files of the same rows: (Spark's CPU, 0, wall)."""
    from pyspark.sql import functions as F

    agg = spark.read.parquet(path).agg(
        F.count("*").alias("n"), F.sum(F.length("data")), F.max("timestamp"), F.count("subject")
    )
    jvm = spark.sparkContext._gateway.proc.pid
    j0, w0 = tree_cpu(jvm), time.perf_counter()
    assert agg.collect()[0].n == rows
    return tree_cpu(jvm) - j0, 0.0, time.perf_counter() - w0


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--targets", default=f"{EMBEDDED},{NATS_SERVER}")
    parser.add_argument("--partitions", default="1,2")
    parser.add_argument("--options", default="", help="read options, e.g. batchSize=8192,directGet=false")
    parser.add_argument("--spark", action="store_true", help="also the Spark query")
    parser.add_argument(
        "--parquet",
        action="store_true",
        help="also the query over Parquet files of the same rows, interleaved",
    )
    parser.add_argument(
        "--columns",
        default="",
        help="also the Spark query with this user schema (DDL), e.g. 'subject string, timestamp timestamp, data binary'",
    )
    parser.add_argument("--no-inprocess", action="store_true")
    args = parser.parse_args()
    n = args.rows
    extra = dict(kv.split("=", 1) for kv in args.options.split(",") if kv)
    parts_list = [int(p) for p in args.partitions.split(",")]
    spark = None
    if args.spark:
        from pyjetstream.spark import local_session

        spark = local_session("bench-spark-read", cores=2, fast_start=False, log_level="ERROR")
    ctx = multiprocessing.get_context("forkserver")
    print(f"{n} rows x {args.size} B, best of {args.rounds}; µs per row (fixed: seconds per 1-row query)")
    print(f"{'target':12} {'how':22} {'reader CPU':>10} {'server CPU':>11} {'wall':>8}")
    with (
        tempfile.TemporaryDirectory(prefix="bench-sr-") as tmp,
        concurrent.futures.ProcessPoolExecutor(max(parts_list), mp_context=ctx) as pool,
    ):
        for kind in [t.strip() for t in args.targets.split(",") if t.strip()]:
            target = make_target(kind, Path(tmp) / kind)
            assert target.proc is not None
            url, pid = target.url, target.proc.pid
            try:
                asyncio.run(fill(url, n, args.size))
                if not args.no_inprocess:
                    in_process(pool, url, pid, n, max(parts_list), extra)  # warm up
                    for parts in parts_list:
                        rs = [in_process(pool, url, pid, n, parts, extra) for _ in range(args.rounds)]
                        c, s, w = (min(r[i] for r in rs) / n * 1e6 for i in range(3))
                        print(
                            f"{kind:12} {f'in-process, {parts} part.':22} {c:10.2f} {s:11.2f} {w:8.2f}",
                            flush=True,
                        )
                if spark is not None:
                    spark_query(spark, url, pid, n, 2, extra)  # warm up
                    schemas = ["", args.columns] if args.columns else [""]
                    parquet = ""
                    if args.parquet:
                        parquet = f"{tmp}/{kind}.parquet"  # the same rows, as many files as partitions
                        for parts in parts_list:
                            src = (
                                spark.read.format("jetstream").option("servers", url).option("stream", STREAM)
                            )
                            src.load().repartition(parts).write.parquet(f"{parquet}-{parts}")
                        schemas.insert(0, PARQUET)
                    for parts in parts_list:
                        runs: dict[str, list[tuple[float, float, float]]] = {c: [] for c in schemas}
                        for _ in range(args.rounds):  # Parquet, full and pruned schema interleaved
                            for columns in schemas:
                                if columns == PARQUET:
                                    runs[columns].append(parquet_query(spark, f"{parquet}-{parts}", n))
                                    continue
                                runs[columns].append(
                                    spark_query(spark, url, pid, n, parts, extra, columns=columns)
                                )
                        for columns, rs in runs.items():
                            c, s, w = (min(r[i] for r in rs) / n * 1e6 for i in range(3))
                            how = f"Spark, {parts} part.{', columns' if columns else ''}"
                            if columns == PARQUET:
                                how = f"Parquet, {parts} file{'s' if parts > 1 else ''}"
                            print(
                                f"{kind:12} {how:22} {c:10.2f} {s:11.2f} {w:8.2f}"
                                f"   ({1e6 / w:,.0f} rows/s; JVM+workers CPU in 'reader CPU')",
                                flush=True,
                            )
                    rs = [spark_query(spark, url, pid, n, 1, extra, end=1) for _ in range(args.rounds)]
                    c, s, w = (min(r[i] for r in rs) for i in range(3))
                    print(f"{kind:12} {'Spark, 1 row (fixed)':22} {c:10.3f} {s:11.3f} {w:8.3f}", flush=True)
            finally:
                target.stop()
    if spark is not None:
        spark.stop()


if __name__ == "__main__":
    main()
