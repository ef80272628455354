"""Writes: every column, idempotent retries (same writeId, a retried task), KV puts, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.spark import jsutil
from tests.support.targets import Target

from pyjetstream.client.jetstream import KeyValueConfig
from pyjetstream.client.jetstream.errors import KeyNotFound

pytestmark = pytest.mark.xdist_group("spark")


def write(df: Any, url: str, **options: Any) -> None:
    writer = df.write.format("jetstream").mode("append").option("servers", url)
    for key, value in options.items():
        writer = writer.option(key, str(value))
    writer.save()


def test_write_every_column(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    rows = [
        (f"{stream_name}.a", b"one", {"Trace": ["t1"], "Tag": ["x", "y"]}, "given-1"),
        (f"{stream_name}.b", b"", None, None),
        (f"{stream_name}.a", None, {"Only": ["h"]}, None),
        (f"{stream_name}.c", bytes(range(256)), None, "given-2"),
    ]
    schema = "subject string, data binary, headers map<string,array<string>>, msg_id string"
    write(spark.createDataFrame(rows, schema).repartition(2), url, stream=stream_name)
    stored = sorted(jsutil.stored(url, stream_name), key=lambda m: (m.subject, m.data))
    assert [(m.subject, m.data) for m in stored] == sorted((r[0], r[1] or b"") for r in rows)
    by_data = {m.data: m for m in stored}
    one = by_data[b"one"].headers
    assert one is not None
    assert one["Trace"] == ["t1"] and one["Tag"] == ["x", "y"]
    assert one["Nats-Msg-Id"] == ["given-1"]
    assert one["Nats-Expected-Stream"] == [stream_name]
    assert by_data[bytes(range(256))].headers["Nats-Msg-Id"] == ["given-2"]  # type: ignore[index]
    derived = by_data[b""].headers["Nats-Msg-Id"][0]  # type: ignore[index]
    assert derived.count(".") == 4  # <scope>.<batch>.<partition>.<digest>.<n>
    # String data, map<string,string> headers, a constant subject.
    df = spark.createDataFrame(
        [("hello", {"K": "v"}), ("héllo", None)], "data string, headers map<string,string>"
    )
    write(df, url, subject=f"{stream_name}.const")
    const = [m for m in jsutil.stored(url, stream_name) if m.subject == f"{stream_name}.const"]
    assert sorted(m.data for m in const) == sorted([b"hello", "héllo".encode()])
    assert [m.headers["K"] for m in const if m.data == b"hello"] == [["v"]]  # type: ignore[index]


# publishMode -> the stream config it needs and the options the write uses.
MODES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "async": ({}, {}),
    "fast": ({"allow_batched": True}, {"publishMode": "fast"}),
    "atomic": ({"allow_atomic": True}, {"publishMode": "atomic", "atomicBatchSize": 50}),
}


@pytest.mark.parametrize("mode", list(MODES))
def test_rewrite_and_retried_task_add_no_duplicates(
    spark: Any, js_server: Target, stream_name: str, tmp_path: Path, mode: str
) -> None:
    from pyspark.sql import functions as F

    from pyjetstream.client.jetstream import sync

    url = js_server.url
    config, options = MODES[mode]
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"], **config)
    df = spark.range(0, 600, numPartitions=2).select(
        F.concat(F.lit(f"{stream_name}."), (F.col("id") % 3).cast("string")).alias("subject"),
        F.col("id").cast("string").alias("data"),
    )
    write(df, url, writeId="job-1", **options)
    write(df, url, writeId="job-1", **options)  # the same job again: every message is a duplicate
    assert jsutil.stream_state(url, stream_name).messages == 600

    # A task that fails after part of its partition was published, then succeeds on retry.
    marker = str(tmp_path / "failed-once")
    retry_subject = f"{stream_name}.retry"

    def fail_first_attempt(i: int) -> str:
        import time as t

        from pyspark import TaskContext

        from pyjetstream.client.jetstream import sync as blocking

        ctx = TaskContext.get()
        if i == 850 and ctx is not None and ctx.attemptNumber() == 0:
            # Fail only once the writer has published some of rows 600-849 (they left this UDF
            # worker earlier: its output is flushed per 100 large rows).
            nc = blocking.connect(url)
            try:
                stream = nc.jetstream().stream(stream_name)
                deadline = t.monotonic() + 30
                while t.monotonic() < deadline:
                    counts = stream.info(subject_filter=retry_subject).state.subjects
                    if counts.get(retry_subject, 0) >= 100:
                        break
                    t.sleep(0.05)
            finally:
                nc.close()
            open(marker, "w").close()
            raise RuntimeError("injected failure after 250 rows")
        return f"{i}." + "." * 4000

    flaky = F.udf(fail_first_attempt, "string")
    # Partition 1 (900-1199) writes elsewhere, so the count above sees partition 0 only.
    df2 = spark.range(600, 1200, numPartitions=2).select(
        F.when(F.col("id") < 900, F.lit(retry_subject))
        .otherwise(F.lit(f"{stream_name}.other"))
        .alias("subject"),
        flaky("id").alias("data"),
    )
    old = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "50")  # publish in small slices
    watcher = sync.connect(url)  # counts what is published, duplicates included
    try:
        sub = watcher.subscribe(f"{stream_name}.retry")
        watcher.flush()
        write(df2, url, **options)
        watcher.flush()
        sent = sub.received
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", old)
        watcher.close()
    assert Path(marker).exists()
    assert sent >= 300 + 100  # partition 0 published part of its rows twice ...
    stored = jsutil.stored(url, stream_name)
    assert len(stored) == 1200  # ... and the stream kept each once
    assert sorted(int(m.data.split(b".")[0]) for m in stored) == list(range(1200))


def test_write_to_kv_bucket(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    bucket = f"kv_{stream_name.lower()}"
    with jsutil.jetstream(url) as js:
        js.create_key_value(KeyValueConfig(bucket=bucket, history=5))
    df = spark.createDataFrame([("a.1", "x"), ("b", "y"), ("a.1", "z")], "key string, value string")
    write(df.coalesce(1), url, bucket=bucket)
    with jsutil.jetstream(url) as js:
        kv = js.key_value(bucket)
        assert kv.get("a.1").value == b"z"
        assert kv.get("b").value == b"y"
    write(spark.createDataFrame([("b", None)], "key string, value string"), url, bucket=bucket)
    with jsutil.jetstream(url) as js:
        kv = js.key_value(bucket)
        with pytest.raises(KeyNotFound):
            kv.get("b")


def test_write_errors_carry_the_server_message(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    jsutil.create_stream(url, f"{stream_name}_B", [f"{stream_name}_B.>"])
    df = spark.createDataFrame([(f"{stream_name}.a", "x")], "subject string, data string")
    with pytest.raises(Exception, match="no stream matches the subject"):
        write(spark.createDataFrame([("nowhere.at.all", "x")], "subject string, data string"), url)
    with pytest.raises(Exception, match="expected stream does not match"):
        write(df, url, stream=f"{stream_name}_B")
    with pytest.raises(Exception, match="needs a 'data' column"):
        write(spark.createDataFrame([("s",)], "subject string"), url)
    with pytest.raises(Exception, match="needs a 'subject' column or the 'subject' option"):
        write(spark.createDataFrame([("x",)], "data string"), url)
    with pytest.raises(Exception, match="column 'data' must be binary or string"):
        write(spark.createDataFrame([("s", 1)], "subject string, data int"), url)
    assert jsutil.stream_state(url, stream_name).messages == 0
