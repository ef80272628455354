"""Structured Streaming reads: triggers and read limits, live data, kill and restart from the
checkpoint with an exactly-once check on a JetStream sink, gaps, empty and missing streams."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.spark import jsutil
from tests.support.targets import Target

pytestmark = pytest.mark.xdist_group("spark")


def source(spark: Any, url: str, stream: str, **options: Any) -> Any:
    reader = spark.readStream.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def run_available(df: Any, checkpoint: str) -> tuple[list[Any], list[dict[str, Any]]]:
    """Run the query with Trigger.AvailableNow; the rows of every micro-batch, and the progress."""
    rows: list[Any] = []
    query = (
        df.writeStream.foreachBatch(lambda batch, _id: rows.extend(batch.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(120)
    if query.isActive:
        query.stop()
        raise AssertionError("the AvailableNow query did not finish")
    if query.exception() is not None:
        raise AssertionError(str(query.exception()))
    return rows, [p for p in query.recentProgress if p["numInputRows"] > 0]


def wait_for(condition: Any, timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def test_triggers_read_limit_and_resume(
    spark: Any, js_server: Target, stream_name: str, checkpoint: str
) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    jsutil.publish(url, [(f"{stream_name}.{i % 3}", str(i).encode()) for i in range(1000)])
    df = source(spark, url, stream_name, maxMessagesPerTrigger=300, partitions=2)
    rows, progress = run_available(df, checkpoint)
    assert sorted(r.sequence for r in rows) == list(range(1, 1001))
    assert [p["numInputRows"] for p in progress] == [300, 300, 300, 100]
    assert [bytes(r.data) for r in sorted(rows, key=lambda r: r.sequence)][:3] == [b"0", b"1", b"2"]
    # More data; the same checkpoint picks up exactly after sequence 1000.
    jsutil.publish(url, [(f"{stream_name}.x", b"late") for _ in range(50)])
    rows, progress = run_available(source(spark, url, stream_name, maxMessagesPerTrigger=300), checkpoint)
    assert sorted(r.sequence for r in rows) == list(range(1001, 1051))
    assert json.loads(progress[0]["sources"][0]["startOffset"]) == {"stream": stream_name, "seq": 1000}
    # A user schema of some columns (the driver's reader here): only those, from where the query stopped.
    jsutil.publish(url, [(f"{stream_name}.y", b"%d" % i) for i in range(20)])
    reader = spark.readStream.format("jetstream").schema("data binary, sequence long")
    df = reader.option("servers", url).option("stream", stream_name).option("driverReads", "true").load()
    rows, _ = run_available(df, checkpoint)
    assert [tuple(r.asDict()) for r in rows[:1]] == [("data", "sequence")]
    assert sorted((r.sequence, bytes(r.data)) for r in rows) == [(1051 + i, b"%d" % i) for i in range(20)]


def test_live_stream_with_filter_and_start_sequence(
    spark: Any, js_server: Target, stream_name: str, checkpoint: str
) -> None:
    """A running query sees messages as they are published, over several triggers."""
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    before = jsutil.publish(url, [(f"{stream_name}.keep", b"old") for _ in range(20)])
    seen: list[int] = []
    df = source(spark, url, stream_name, subjects=f"{stream_name}.keep", decode="utf8", startSequence=16)
    query = (
        df.writeStream.foreachBatch(lambda batch, _id: seen.extend(r.sequence for r in batch.collect()))
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    try:
        expected = before[15:]
        for round_ in range(3):
            msgs = [(f"{stream_name}.{'keep' if i % 2 else 'drop'}", b"x") for i in range(40)]
            seqs = jsutil.publish(url, msgs)
            expected += [s for s, m in zip(seqs, msgs, strict=True) if m[0].endswith("keep")]
            wait_for(lambda n=len(expected): len(seen) >= n, what=f"round {round_}")
        assert sorted(seen) == expected
        # One micro-batch per round at least (progress is reported just after the batch commits).
        wait_for(
            lambda: len([p for p in query.recentProgress if p["numInputRows"] > 0]) >= 3,
            what="three non-empty micro-batches",
        )
    finally:
        query.stop()


@pytest.mark.parametrize("driver_reads", [False, True], ids=["tasks", "driver"])
def test_kill_and_restart_exactly_once(
    spark: Any, js_server: Target, stream_name: str, checkpoint: str, tmp_path: Path, driver_reads: bool
) -> None:
    """A query writing to a JetStream stream is stopped in the middle of a micro-batch (part of
    it already published) and restarted from its checkpoint: every source message lands in the
    sink exactly once. With ``driverReads`` the re-run micro-batch is read again by a task
    (``readBetweenOffsets``): the driver's prefetched rows died with the query."""
    from pyspark.sql import functions as F

    url = js_server.url
    src, dst = stream_name, f"{stream_name}_OUT"
    jsutil.create_stream(url, src, [f"{src}.>"])
    jsutil.create_stream(url, dst, [f"{dst}.>"])
    jsutil.publish(url, [(f"{src}.{i % 4}", f"m{i}".encode()) for i in range(600)])
    stall = tmp_path / "stall"
    stall.touch()
    stall_path = str(stall)

    def maybe_stall(seq: int) -> int:
        import os
        import time as t

        if seq == 450 and os.path.exists(stall_path):
            t.sleep(120)  # the "crash" happens while this task hangs: the query is stopped
        return seq

    stall_udf = F.udf(maybe_stall, "long")

    def start() -> Any:
        df = source(spark, url, src, maxMessagesPerTrigger=200, partitions=2, driverReads=driver_reads)
        if driver_reads:  # one partition per micro-batch: two write tasks, one to hang, one to finish
            df = df.repartition(2)
        out = df.select(
            F.concat(F.lit(f"{dst}."), F.col("subject")).alias("subject"),
            "data",
            F.create_map(F.lit("src-seq"), F.array(stall_udf("sequence").cast("string"))).alias("headers"),
        )
        return (
            out.writeStream.format("jetstream")
            .option("servers", url)
            .option("stream", dst)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="100 milliseconds")
            .start()
        )

    query = start()
    try:
        # Batches 0 and 1 (seq 1-400) complete; in batch 2 the partition 501-600 is published
        # while the partition 401-500 hangs at 450 (driverReads: the write task without 450).
        wait_for(lambda: jsutil.stream_state(url, dst).messages >= 500, what="a partly written batch")
        assert jsutil.stream_state(url, dst).messages < 600
    finally:
        query.stop()
    stall.unlink()
    query = start()
    try:
        wait_for(
            lambda: query.lastProgress is not None and query.lastProgress["batchId"] >= 2, what="restart"
        )
        wait_for(lambda: jsutil.stream_state(url, dst).messages >= 600, what="the rest")
        query.processAllAvailable()
        rerun = [p for p in query.recentProgress if p["numInputRows"] > 0]
        assert rerun[0]["batchId"] == 2 and rerun[0]["numInputRows"] == 200
    finally:
        query.stop()
    sink = jsutil.stored(url, dst)
    assert len(sink) == 600
    src_seqs = sorted(int(m.headers["src-seq"][0]) for m in sink)  # type: ignore[index]
    assert src_seqs == list(range(1, 601))


@pytest.mark.parametrize("driver_reads", [False, True], ids=["tasks", "driver"])
def test_restart_in_the_middle_of_a_large_micro_batch(
    spark: Any, js_server: Target, stream_name: str, checkpoint: str, tmp_path: Path, driver_reads: bool
) -> None:
    """4,000 messages in one micro-batch (no read limit; read in Arrow batches of 500), the query stopped
    when half of them were
    published to the sink and one row hangs: after the restart the whole micro-batch runs again (its
    range from the offset log) and the sink holds each source message once (its derived message ids
    make the second publish of a row a duplicate)."""
    from pyspark.sql import functions as F

    url, total, hang_at = js_server.url, 4_000, 3_000
    src, dst = stream_name, f"{stream_name}_OUT"
    jsutil.create_stream(url, src, [f"{src}.>"])
    jsutil.create_stream(url, dst, [f"{dst}.>"])
    jsutil.publish(url, [(f"{src}.{i % 4}", b"m%d" % i) for i in range(total)])
    stall = tmp_path / "stall"
    stall.touch()
    stall_path = str(stall)

    def maybe_stall(seq: int) -> int:
        import os
        import time as t

        if seq == hang_at and os.path.exists(stall_path):
            t.sleep(120)  # the "crash" happens while this task hangs: the query is stopped
        return seq

    stall_udf = F.udf(maybe_stall, "long")

    def start() -> Any:
        # Two write tasks of 2,000 rows (the writer gets them as one Arrow batch each): one publishes
        # all of its rows, the other hangs at 3,000 with none published.
        df = source(spark, url, src, partitions=2, batchSize=500, driverReads=driver_reads)
        if driver_reads:
            df = df.repartition(2)
        out = df.select(
            F.concat(F.lit(f"{dst}."), F.col("subject")).alias("subject"),
            "data",
            F.create_map(F.lit("src-seq"), F.array(stall_udf("sequence").cast("string"))).alias("headers"),
        )
        return (
            out.writeStream.format("jetstream")
            .option("servers", url)
            .option("stream", dst)
            .option("checkpointLocation", checkpoint)
            .start()
        )

    query = start()
    try:
        wait_for(lambda: jsutil.stream_state(url, dst).messages >= total // 2, what="a partly written batch")
        assert jsutil.stream_state(url, dst).messages < total
    finally:
        query.stop()
    stall.unlink()
    query = start()
    try:
        wait_for(lambda: jsutil.stream_state(url, dst).messages >= total, what="the whole batch again")
        query.processAllAvailable()
        rerun = [p for p in query.recentProgress if p["numInputRows"] > 0]
        assert rerun[0]["batchId"] == 0 and rerun[0]["numInputRows"] == total
    finally:
        query.stop()
    sink = spark.read.format("jetstream").option("servers", url).option("stream", dst).load()
    seqs = sink.select(F.col("headers")["src-seq"][0].cast("long").alias("seq")).agg(
        F.count("*").alias("n"), F.countDistinct("seq").alias("distinct"), F.min("seq"), F.max("seq")
    )
    assert tuple(seqs.collect()[0]) == (total, total, 1, total)


def test_deleted_and_purged_ranges(spark: Any, js_server: Target, stream_name: str, checkpoint: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    jsutil.publish(url, [(f"{stream_name}.a", b"x") for _ in range(100)])
    jsutil.delete_msgs(url, stream_name, [10, 11, 100])
    rows, _ = run_available(source(spark, url, stream_name, maxMessagesPerTrigger=30), checkpoint)
    assert sorted(r.sequence for r in rows) == [s for s in range(1, 101) if s not in (10, 11, 100)]
    # A purge while the query is down, then more data: only the new messages come, and the
    # purged range costs no empty micro-batches.
    jsutil.purge(url, stream_name)
    jsutil.publish(url, [(f"{stream_name}.a", b"y") for _ in range(20)])
    rows, progress = run_available(source(spark, url, stream_name, maxMessagesPerTrigger=30), checkpoint)
    assert sorted(r.sequence for r in rows) == list(range(101, 121))
    assert len(progress) == 1


def test_missing_empty_and_recreated_streams(
    spark: Any, js_server: Target, stream_name: str, tmp_path: Path
) -> None:
    url = js_server.url
    with pytest.raises(Exception, match=f"stream '{stream_name}' not found"):
        run_available(source(spark, url, stream_name), str(tmp_path / "ck0"))
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    ck = str(tmp_path / "ck")
    rows, _ = run_available(source(spark, url, stream_name), ck)  # empty: nothing, no error
    assert rows == []
    jsutil.publish(url, [(f"{stream_name}.a", b"x") for _ in range(10)])
    rows, _ = run_available(source(spark, url, stream_name), ck)
    assert len(rows) == 10
    with jsutil.jetstream(url) as js:
        js.delete_stream(stream_name)
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    jsutil.publish(url, [(f"{stream_name}.a", b"x")])
    with pytest.raises(Exception, match="deleted and recreated"):
        run_available(source(spark, url, stream_name), ck)
