"""Spark data source benchmark: the ``jetstream`` source and sink next to Parquet, in one run.

    .venv/bin/python bench/bench_spark.py [--rows 200000] [--size 100] [--targets embedded,nats-server]
                                          [--rounds 2] [--cores 2] [--only writes|reads|latency]

For each server target (our embedded server and nats-server, both subprocesses started the
same way) with one local SparkSession (default JIT, so Parquet is not handicapped):

- write rows/s: ``df.write.format("jetstream")`` of ``--rows`` rows (2 partitions, derived
  ``Nats-Msg-Id``) in each ``publishMode`` but ``sync`` (``async`` pipelined publishes, ``fast``
  fast-ingest batches, ``atomic`` batches of 1000), and ``async`` with ``deriveMsgId=false``;
- batch read rows/s with 1, 2 and 4 partitions (an aggregate over ``subject``, ``timestamp`` and
  the payload lengths), by the default path (an ephemeral consumer per partition), and with 2
  partitions by batched direct get (``directGet=true``): all with the source's schema, every column
  built and handed to Spark (a Python data source gets no column pruning); then with 1 and 2
  partitions and a user schema of the three columns the aggregate uses (", 3 columns": what
  Parquet's column pruning reads of the same query);
- streaming read rows/s: Trigger.AvailableNow over the same stream into the ``noop`` sink, over
  the micro-batches' own time (query start-up not counted): the default read limit (all rows
  available, one micro-batch), and 10 micro-batches (``maxMessagesPerTrigger`` = rows / 10: the
  rows then pay Spark's fixed cost per micro-batch ten times); Spark's own timings per phase are
  printed for each run;
- streaming end-to-end latency p50/p95 at 1,000 msgs/s, default trigger (micro-batches back to
  back): into Spark's ``noop`` sink (a row is there when its micro-batch's write ended, from
  Spark's progress reports) by the default plan and with ``driverReads=true``, and into a second
  stream (``driverReads=true``, timed at a subscriber of that stream);

and, as the limit, the same rows written to and read from Parquet (local files) in the same
run. ``--only writes`` times the writes and the Parquet write alone; ``--only latency`` the streaming
latencies alone; ``--only reads`` the batch reads and the Parquet reads (the stream filled by one untimed Spark write with derived ids). Prints rows/s and the ratio to Parquet (Parquet = 1.00). Best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support.targets

from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark import local_session

SRC = "BENCH_SRC"
OUT = "BENCH_OUT"


def best(rounds: int, run: Callable[[], float]) -> float:
    """Best (highest) rows/s of ``rounds`` runs."""
    return max(run() for _ in range(rounds))


def timed(rows: int, action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return rows / (time.perf_counter() - start)


async def _reset_streams(url: str) -> None:
    nc = await connect(url)
    try:
        js = jetstream(nc)
        for _ in range(100):  # JetStream may come up just after the port opens
            try:
                await js.account_info()
                break
            except Exception:
                await asyncio.sleep(0.1)
        for name, subject in ((SRC, "bsrc.>"), (OUT, "bout.>")):
            try:
                await js.delete_stream(name)
            except Exception:
                pass
            # allow_direct: the directGet=true read uses batched direct get on a server that has it (2.11+);
            # allow_batched / allow_atomic: the fast and atomic write modes (2.14+ / 2.12+).
            await js.create_stream(
                StreamConfig(
                    name=name, subjects=[subject], allow_direct=True, allow_batched=True, allow_atomic=True
                )
            )
    finally:
        await nc.close()


def reset_streams(url: str) -> None:
    asyncio.run(_reset_streams(url))


def source_frame(spark: Any, rows: int, size: int) -> Any:
    from pyspark.sql import functions as F

    pad = "x" * max(0, size - 8)
    return spark.range(rows, numPartitions=2).select(
        F.concat(F.lit("bsrc."), (F.col("id") % 16).cast("string")).alias("subject"),
        F.concat(F.lpad(F.col("id").cast("string"), 8, "0"), F.lit(pad)).cast("binary").alias("data"),
    )


def warm_up(spark: Any, url: str, tmp: Path, writes_only: bool = False) -> None:
    """A small write, read and streaming run first: Python workers and the JIT get going."""
    reset_streams(url)
    bench_writes(spark, url, 2_000, 16, 1)
    if writes_only:
        return
    bench_reads(spark, url, 2_000, 1)
    bench_stream_read(spark, url, 2_000, 1, tmp)


def bench_writes(spark: Any, url: str, rows: int, size: int, rounds: int) -> dict[str, float]:
    df = source_frame(spark, rows, size).cache()
    df.count()

    def write(**options: str) -> float:
        reset_streams(url)
        writer = df.write.format("jetstream").mode("append").option("servers", url).option("stream", SRC)
        for key, value in options.items():
            writer = writer.option(key, value)
        return timed(rows, writer.save)

    out = {
        "write, no msg ids": best(rounds, lambda: write(deriveMsgId="false")),
        "write, fast batch (derived ids)": best(rounds, lambda: write(publishMode="fast")),
        "write, atomic batches (derived ids)": best(rounds, lambda: write(publishMode="atomic")),
        "write, derived Nats-Msg-Id": best(rounds, write),  # leaves the stream filled for the reads
    }
    df.unpersist()
    return out


def fill_for_reads(spark: Any, url: str, rows: int, size: int) -> None:
    """The stream the reads read, as ``bench_writes`` leaves it (one write, derived ids)."""
    df = source_frame(spark, rows, size)
    reset_streams(url)
    df.write.format("jetstream").mode("append").option("servers", url).option("stream", SRC).save()


def _timed_agg(df: Any, rows: int) -> float:
    """rows/s of the reads' aggregate over ``df`` (subject, timestamp and the payload lengths)."""
    from pyspark.sql import functions as F

    agg = df.agg(F.count("*").alias("n"), F.sum(F.length("data")), F.max("timestamp"), F.count("subject"))
    start = time.perf_counter()
    n = agg.collect()[0].n
    assert n == rows, f"read {n} rows of {rows}"
    return rows / (time.perf_counter() - start)


def bench_reads(
    spark: Any, url: str, rows: int, rounds: int, parquet: Path | None = None
) -> dict[str, float]:
    """Every read plan, best of ``rounds``. With ``parquet`` (the files `bench_parquet` wrote), each
    round reads Parquet's files (as many as partitions) right before the source, and the best of
    those is the row's limit (``<name> / Parquet``): the two share the minutes, so the ratio holds
    on a machine whose load moves."""
    out = {}
    plans = (
        (1, False, ""),
        (2, False, ""),
        (4, False, ""),
        (2, True, ""),
        (1, False, QUERY_COLUMNS),
        (2, False, QUERY_COLUMNS),
    )
    for partitions, direct, columns in plans:
        reader = spark.read.format("jetstream")
        if columns:
            reader = reader.schema(columns)
        reader = reader.option("servers", url).option("stream", SRC).option("partitions", partitions)
        reader = reader.option("directGet", str(direct).lower())
        ours, limit = 0.0, 0.0
        for _ in range(rounds):
            if parquet is not None:
                limit = max(limit, _timed_agg(spark.read.parquet(f"{parquet}-{partitions}"), rows))
            ours = max(ours, _timed_agg(reader.load(), rows))
        name = f"batch read, {partitions} partition{'s' if partitions > 1 else ''}"
        if direct:
            name += " (direct get)"
        if columns:
            name += COLUMNS_LABEL
        out[name] = ours
        if parquet is not None:
            out[name + PARQUET_LIMIT] = limit
    return out


# The columns the reads' aggregate uses, as a user schema: what Parquet's column pruning reads too (Spark
# prunes no column of a Python data source; see docs/spark.md "Schema").
QUERY_COLUMNS = "subject string, timestamp timestamp, data binary"
COLUMNS_LABEL = ", 3 columns"
PARQUET_LIMIT = " / Parquet"  # a read's own limit: Parquet read in the same rounds


STREAM_READ = "streaming read (AvailableNow, noop sink)"
STREAM_READ_10 = "streaming read, 10 micro-batches"
LATENCIES = {  # name -> (sink, read options)
    "latency p50/p95 ms, noop sink": ("noop", {}),
    "latency p50/p95 ms, noop sink, driverReads": ("noop", {"driverReads": "true"}),
    "latency p50/p95 ms, jetstream sink, driverReads": ("jetstream", {"driverReads": "true"}),
}


def bench_stream_read(spark: Any, url: str, rows: int, rounds: int, tmp: Path, batches: int = 1) -> float:
    """rows/s over the micro-batches' own time (the query's start-up, ~1-2 s, is not counted), the
    default plan (partitions by size and cores). ``batches`` > 1: ``maxMessagesPerTrigger`` splits the
    rows into that many micro-batches (each pays Spark's fixed cost per micro-batch)."""

    def run() -> float:
        ck = tmp / f"ck-{time.monotonic_ns()}"
        reader = spark.readStream.format("jetstream").option("servers", url).option("stream", SRC)
        if batches > 1:
            reader = reader.option("maxMessagesPerTrigger", max(1, rows // batches))
        q = (
            reader.load()
            .writeStream.format("noop")
            .option("checkpointLocation", str(ck))
            .trigger(availableNow=True)
            .start()
        )
        q.awaitTermination()
        done = [p for p in q.recentProgress if p["numInputRows"] > 0]
        total = sum(p["numInputRows"] for p in done)
        assert total == rows, f"streamed {total} of {rows}"
        print(f"    {len(done)} micro-batches, Spark's mean ms: {micro_batch_profile(q)}", flush=True)
        return rows / (sum(p["durationMs"]["triggerExecution"] for p in done) / 1000)

    return best(rounds, run)


def micro_batch_profile(query: Any) -> dict[str, float]:
    """Spark's own timings (ms) of the query's micro-batches with rows: the mean of each phase, and
    ``batches`` / ``rows`` per batch."""
    batches = [p for p in query.recentProgress if p["numInputRows"] > 0]
    if not batches:
        return {}
    out = {
        k: sum(p["durationMs"].get(k, 0) for p in batches) / len(batches) for k in batches[-1]["durationMs"]
    }
    out["batches"] = len(batches)
    out["rows"] = sum(p["numInputRows"] for p in batches) / len(batches)
    return out


def _quantiles(latencies_s: list[float], query: Any) -> tuple[float, float, int, dict[str, float]]:
    ms = sorted(v * 1000 for v in latencies_s)
    profile = micro_batch_profile(query)
    if len(ms) < 2:
        return float("nan"), float("nan"), len(ms), profile
    q = statistics.quantiles(ms, n=100, method="inclusive")
    return q[49], q[94], len(ms), profile


async def _publish_steadily(
    url: str, rate: int, seconds: float, query: Any, done: Callable[[int], Any]
) -> dict[int, float]:
    """Warm-up publishes until the query has run two micro-batches with rows (the first one starts
    Python workers: seconds under load), then ``rate`` msgs/s of ``bsrc.lat`` carrying their publish
    time; then wait (up to 30 s) until ``done(n)`` says all ``n`` arrived. The publish time of each
    stream sequence published after the warm-up."""
    nc = await connect(url)
    n = int(rate * seconds)
    published: dict[int, float] = {}
    try:
        js = jetstream(nc)
        deadline = time.monotonic() + 120
        while sum(p["numInputRows"] > 0 for p in query.recentProgress) < 2 and time.monotonic() < deadline:
            await js.publish("bsrc.warm", str(time.time()).encode())
            await asyncio.sleep(0.1)
        await asyncio.sleep(1)
        start = time.monotonic()
        for i in range(n):
            await asyncio.sleep(max(0.0, start + i / rate - time.monotonic()))
            now = time.time()
            ack = await js.publish("bsrc.lat", str(now).encode())
            published[ack.seq] = now
        deadline = time.monotonic() + 30
        while not done(n) and time.monotonic() < deadline:  # noqa: ASYNC110 - polls the query / a list
            await asyncio.sleep(0.1)
    finally:
        await nc.close()
    return published


def _offset_seq(offset: Any) -> int:
    """A progress report's offset of this source (a JSON text or its value; None before the first)."""
    value = json.loads(offset) if isinstance(offset, str) else offset
    return 0 if value is None else int(value["seq"])


def _sink_times(query: Any) -> list[tuple[int, int, float]]:
    """Per micro-batch with rows: its sequence range and when its rows were in the sink (epoch s): the
    trigger's start plus every phase before the commit log (Spark runs them in turn)."""
    from datetime import datetime

    out = []
    for p in query.recentProgress:
        if not p["numInputRows"]:
            continue
        source = p["sources"][0]
        first = _offset_seq(source["startOffset"]) + 1
        last = _offset_seq(source["endOffset"])
        start = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        ms = p["durationMs"]
        out.append((first, last, start + (ms["triggerExecution"] - ms.get("commitOffsets", 0)) / 1000))
    return out


def bench_latency(
    spark: Any, url: str, tmp: Path, sink: str, rate: int = 1000, seconds: float = 8.0, **read: str
) -> tuple[float, float, int, dict[str, float]]:
    """p50/p95 (ms) from publish to the sink at ``rate`` msgs/s, default trigger (micro-batches back
    to back). ``sink``: ``noop`` (Spark's; a row is in the sink when its micro-batch's write ended,
    from Spark's progress reports) or ``jetstream`` (written to a second stream, timed at a subscriber
    of that stream)."""
    from pyspark.sql import functions as F

    reset_streams(url)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000")  # every micro-batch's range
    df = spark.readStream.format("jetstream").options(servers=url, stream=SRC, **read).load()
    checkpoint = str(tmp / f"ck-latency-{time.monotonic_ns()}")
    latencies: list[float] = []
    if sink == "noop":
        query = df.writeStream.format("noop").option("checkpointLocation", checkpoint).start()
        published: dict[int, float] = {}

        def done(n: int) -> bool:
            return bool(published) and max(published) <= max((b[1] for b in _sink_times(query)), default=0)

        try:
            published = asyncio.run(_publish_steadily(url, rate, seconds, query, lambda n: done(n)))
        finally:
            query.stop()
        for first, last, at in _sink_times(query):
            latencies += [at - published[seq] for seq in range(first, last + 1) if seq in published]
        return _quantiles(latencies, query)
    query = (
        df.select(F.concat(F.lit("bout."), F.col("subject")).alias("subject"), "data")
        .writeStream.format("jetstream")
        .option("servers", url)
        .option("stream", OUT)
        .option("checkpointLocation", checkpoint)
        .start()
    )

    async def run() -> None:
        nc = await connect(url)

        def on_msg(msg: Any) -> None:
            if msg.subject == "bout.bsrc.lat":
                latencies.append(time.time() - float(msg.data))

        try:
            await nc.subscribe("bout.>", cb=on_msg)
            await nc.flush()
            await _publish_steadily(url, rate, seconds, query, lambda n: len(latencies) >= n)
        finally:
            await nc.close()

    try:
        asyncio.run(run())
    finally:
        query.stop()
    return _quantiles(latencies, query)


def bench_latencies(spark: Any, url: str, tmp: Path, kind: str) -> dict[str, Any]:
    """Every `LATENCIES` line: p50, p95, count and Spark's mean timings per micro-batch."""
    out = {}
    for name, (sink, read) in LATENCIES.items():
        print(f"[{kind}] {name} ...", flush=True)
        out[name] = bench_latency(spark, url, tmp, sink, **read)
        print(f"    {out[name]}", flush=True)
    return out


def bench_parquet(
    spark: Any, url: str, rows: int, size: int, rounds: int, tmp: Path, reads: bool = True
) -> dict[str, float]:
    """Parquet with the same rows and the source's schema: write, then read (1, 2, 4 files)."""
    from pyspark.sql import functions as F

    src = spark.read.format("jetstream").option("servers", url).option("stream", SRC).load().cache()
    src.count()
    path = str(tmp / "parquet")

    def write() -> float:
        shutil.rmtree(path, ignore_errors=True)
        return timed(rows, lambda: src.repartition(2).write.parquet(path))

    out = {"Parquet write": best(rounds, write)}
    src.unpersist()
    if not reads:
        return out
    for files in (1, 2, 4):
        files_path = f"{path}-{files}"
        shutil.rmtree(files_path, ignore_errors=True)
        spark.read.parquet(path).repartition(files).write.parquet(files_path)

        def read(p: str = files_path) -> float:
            agg = spark.read.parquet(p).agg(
                F.count("*").alias("n"), F.sum(F.length("data")), F.max("timestamp"), F.count("subject")
            )
            start = time.perf_counter()
            assert agg.collect()[0].n == rows
            return rows / (time.perf_counter() - start)

        out[f"Parquet read, {files} file{'s' if files > 1 else ''}"] = best(rounds, read)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=100, help="payload bytes")
    parser.add_argument("--targets", default=f"{EMBEDDED},{NATS_SERVER}")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument(
        "--only",
        choices=["all", "writes", "reads", "latency"],
        default="all",
        help="the writes, the batch reads or the streaming latencies alone",
    )
    args = parser.parse_args()
    writes_only = args.only == "writes"
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]

    spark = local_session("bench-spark", cores=args.cores, fast_start=False, log_level="ERROR")
    results: dict[str, dict[str, Any]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-spark-"))
    try:
        for kind in targets:
            target: Target = make_target(kind, tmp / kind)
            try:
                if args.only == "latency":
                    results[kind] = bench_latencies(spark, target.url, tmp, kind)
                    continue
                warm_up(spark, target.url, tmp, writes_only)
                if args.only == "reads":
                    fill_for_reads(spark, target.url, args.rows, args.size)
                    if "parquet" not in results:
                        print("[parquet] write and reads ...", flush=True)
                        results["parquet"] = bench_parquet(
                            spark, target.url, args.rows, args.size, args.rounds, tmp
                        )
                    print(f"[{kind}] batch reads (Parquet's in the same rounds) ...", flush=True)
                    results[kind] = bench_reads(spark, target.url, args.rows, args.rounds, tmp / "parquet")
                    continue
                print(f"[{kind}] writes ...", flush=True)
                r = bench_writes(spark, target.url, args.rows, args.size, args.rounds)
                if writes_only:
                    if "parquet" not in results:
                        print("[parquet] write ...", flush=True)
                        results["parquet"] = bench_parquet(
                            spark, target.url, args.rows, args.size, args.rounds, tmp, reads=False
                        )
                    results[kind] = r
                    print(
                        f"[{kind}] {r} / Parquet write {results['parquet']['Parquet write']:,.0f}", flush=True
                    )
                    continue
                if "Parquet read, 1 file" not in results.get("parquet", {}):
                    print("[parquet] write and reads ...", flush=True)
                    results["parquet"] = bench_parquet(
                        spark, target.url, args.rows, args.size, args.rounds, tmp
                    )
                print(f"[{kind}] batch reads (Parquet's in the same rounds) ...", flush=True)
                r.update(bench_reads(spark, target.url, args.rows, args.rounds, tmp / "parquet"))
                print(f"[{kind}] streaming read ...", flush=True)
                r[STREAM_READ] = bench_stream_read(spark, target.url, args.rows, args.rounds, tmp)
                r[STREAM_READ_10] = bench_stream_read(spark, target.url, args.rows, args.rounds, tmp, 10)
                r.update(bench_latencies(spark, target.url, tmp, kind))
                results[kind] = r
            finally:
                target.stop()
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, targets, args)


def report(results: dict[str, dict[str, Any]], targets: list[str], args: argparse.Namespace) -> None:
    if args.only == "latency":
        print()
        print(f"Spark {args.cores} local cores; streaming latency at 1,000 msgs/s, default trigger")
        print(f"{'':<42}" + "".join(f"{t:>14} {'':>7}" for t in targets))
        report_latencies(results, targets)
        return
    pq = results["parquet"]
    print()
    print(
        f"Spark {args.cores} local cores, {args.rows} rows x {args.size} B payload; rows/s (best of {args.rounds});"
        " ratio = ours / Parquet"
    )
    header = f"{'':<42}" + "".join(f"{t:>14} {'ratio':>7}" for t in targets)
    print(header)
    limits: dict[str, float] = {
        "write, no msg ids": pq["Parquet write"],
        "write, derived Nats-Msg-Id": pq["Parquet write"],
        "write, fast batch (derived ids)": pq["Parquet write"],
        "write, atomic batches (derived ids)": pq["Parquet write"],
        "batch read, 1 partition": pq.get("Parquet read, 1 file", 0.0),
        "batch read, 2 partitions": pq.get("Parquet read, 2 files", 0.0),
        "batch read, 2 partitions (direct get)": pq.get("Parquet read, 2 files", 0.0),
        "batch read, 4 partitions": pq.get("Parquet read, 4 files", 0.0),
        "batch read, 1 partition" + COLUMNS_LABEL: pq.get("Parquet read, 1 file", 0.0),
        "batch read, 2 partitions" + COLUMNS_LABEL: pq.get("Parquet read, 2 files", 0.0),
        STREAM_READ: pq.get("Parquet read, 1 file", 0.0),
        STREAM_READ_10: pq.get("Parquet read, 1 file", 0.0),
    }
    if args.only == "writes":
        limits = {name: limit for name, limit in limits.items() if name.startswith("write")}
        print("(writes only)")
    elif args.only == "reads":
        limits = {name: limit for name, limit in limits.items() if name.startswith("batch read")}
        print("(batch reads only)")
    for name, limit in limits.items():
        line = f"{name:<42}"
        for t in targets:
            value = results[t][name]
            line += f"{value:>14,.0f} {value / results[t].get(name + PARQUET_LIMIT, limit):>7.2f}"
        print(line)
    for name in limits:  # each read's limit: Parquet's read in the same rounds
        if all(name + PARQUET_LIMIT in results[t] for t in targets):
            line = f"{'  Parquet for ' + name.removeprefix('batch read, '):<42}"
            line += "".join(f"{results[t][name + PARQUET_LIMIT]:>14,.0f} {'':>7}" for t in targets)
            print(line)
    line = f"{'best batch read / Parquet (same rounds)':<42}"
    for t in targets:
        ratios = [
            v / results[t][k + PARQUET_LIMIT]
            for k, v in results[t].items()
            if k + PARQUET_LIMIT in results[t]
        ]
        line += f"{'':>14} {max(ratios, default=0.0):>7.2f}"
    print(line)
    for name, value in pq.items():
        print(f"{name + ' (the limit)':<42}{value:>14,.0f}")
    if args.only != "all":
        return
    line = f"{'streaming / best batch read (all columns)':<42}"
    for t in targets:
        batch = max(
            v
            for k, v in results[t].items()
            if k.startswith("batch read") and COLUMNS_LABEL not in k and PARQUET_LIMIT not in k
        )
        line += f"{results[t][STREAM_READ] / batch:>14.2f} {'':>7}"
    print(line)
    report_latencies(results, targets)


def report_latencies(results: dict[str, dict[str, Any]], targets: list[str]) -> None:
    for name in LATENCIES:
        line = f"{name:<42}"
        for t in targets:
            p50, p95, n, _ = results[t][name]
            line += f"{f'{p50:.0f} / {p95:.0f}':>14} {f'n={n}':>7}"
        print(line)


if __name__ == "__main__":
    main()
