"""Batch reads: every field of a known stream, parallel partitions, pushdown, decoding, gaps, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.spark import jsutil
from tests.support.targets import Target

pytestmark = pytest.mark.xdist_group("spark")


def read(spark: Any, url: str, stream: str, **options: Any) -> Any:
    reader = spark.read.format("jetstream").option("servers", url).option("stream", stream)
    for key, value in options.items():
        reader = reader.option(key, str(value))
    return reader.load()


def rows_of(df: Any) -> list[tuple[Any, ...]]:
    """(stream, subject, sequence, µs timestamp, headers, data) sorted by sequence."""
    out = df.selectExpr("stream", "subject", "sequence", "unix_micros(timestamp) AS ts", "headers", "data")
    rows = [
        (
            r.stream,
            r.subject,
            r.sequence,
            r.ts,
            None if r.headers is None else {k: list(v) for k, v in r.headers.items()},
            None if r.data is None else bytes(r.data),
        )
        for r in out.collect()
    ]
    return sorted(rows, key=lambda row: row[2])


def expected_rows(url: str, stream: str) -> list[tuple[Any, ...]]:
    return [
        (stream, m.subject, m.seq, m.time_ns // 1000, m.headers, m.data) for m in jsutil.stored(url, stream)
    ]


def fill(url: str, stream: str, count: int) -> list[int]:
    """``count`` messages on orders.<region>.<n>: some with (repeated) headers, some empty. The
    stream allows direct get, so batch reads use batched direct get where the server has it."""
    jsutil.create_stream(url, stream, [f"{stream}.>"], allow_direct=True)
    messages = []
    for i in range(count):
        region = ("eu", "us", "ap")[i % 3]
        headers = {"Trace": [f"t{i}"], "Tag": ["a", "b"]} if i % 7 == 0 else None
        data = b"" if i % 11 == 0 else json.dumps({"n": i, "region": region, "amount": i * 1.5}).encode()
        messages.append((f"{stream}.{region}.{i % 5}", data, headers))
    return jsutil.publish(url, messages)


def test_batch_read_every_field_parallel_partitions(spark: Any, js_server: Target, stream_name: str) -> None:
    fill(js_server.url, stream_name, 400)
    expected = expected_rows(js_server.url, stream_name)
    assert len(expected) == 400
    for partitions in (1, 4):
        df = read(spark, js_server.url, stream_name, partitions=partitions)
        assert df.rdd.getNumPartitions() == partitions
        assert rows_of(df) == expected
    # The batched direct get path (directGet=true) reads the same.
    assert rows_of(read(spark, js_server.url, stream_name, partitions=2, directGet="true")) == expected
    assert [f.name for f in df.schema.fields] == [
        "stream",
        "subject",
        "sequence",
        "timestamp",
        "headers",
        "data",
    ]
    assert df.schema["headers"].dataType.simpleString() == "map<string,array<string>>"
    assert df.schema["data"].dataType.simpleString() == "binary"


def test_a_user_schema_builds_only_its_columns(spark: Any, js_server: Target, stream_name: str) -> None:
    """Spark prunes no column of a Python data source: a schema without ``headers`` is how a query
    skips the header parse and the JVM's map conversion. Any of the columns, in any order, on the
    consumer path and the batched direct get path."""
    fill(js_server.url, stream_name, 60)
    expected = [(row[5], row[2], row[1]) for row in expected_rows(js_server.url, stream_name)]
    for direct in ("false", "true"):
        df = (
            spark.read.format("jetstream")
            .schema("data binary, sequence long, subject string")
            .option("servers", js_server.url)
            .option("stream", stream_name)
            .option("directGet", direct)
            .load()
        )
        assert [f.name for f in df.schema.fields] == ["data", "sequence", "subject"]
        rows = sorted(((bytes(r.data), r.sequence, r.subject) for r in df.collect()), key=lambda r: r[1])
        assert rows == expected
    with pytest.raises(Exception, match="takes columns among stream, subject"):
        spark.read.format("jetstream").schema("data binary, key string").option("stream", "S").load().count()


def test_filters_are_pushed_down_and_exact(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    fill(url, stream_name, 300)
    stored = jsutil.stored(url, stream_name)

    def frame(where: str) -> Any:
        # A fresh load() per query: Spark 4.3 reuses a DataFrame's last pushed-down scan for a
        # later query of the same DataFrame without pushable filters (see the module docs).
        return read(spark, url, stream_name, partitions=3).filter(where)

    def seqs(where: str) -> list[int]:
        return sorted(r.sequence for r in frame(where).select("sequence").collect())

    eu = f"{stream_name}.eu.1"
    assert seqs(f"subject = '{eu}'") == [m.seq for m in stored if m.subject == eu]
    wanted = {f"{stream_name}.us.2", f"{stream_name}.ap.3"}
    in_list = ", ".join(f"'{s}'" for s in sorted(wanted))
    assert seqs(f"subject IN ({in_list})") == [m.seq for m in stored if m.subject in wanted]
    prefix = f"{stream_name}.ap."
    assert seqs(f"subject LIKE '{prefix}%'") == [m.seq for m in stored if m.subject.startswith(prefix)]
    assert seqs("sequence > 250") == list(range(251, 301))
    assert seqs("sequence >= 10 AND sequence < 20") == list(range(10, 20))
    assert seqs("sequence IN (3, 77, 500)") == [3, 77]
    assert seqs(f"stream = 'OTHER' OR stream = '{stream_name}'") == list(range(1, 301))
    assert frame("stream = 'OTHER'").count() == 0
    # Pushed subject and sequence filters leave no Filter for Spark to run.
    plan = frame(f"sequence > 250 AND subject = '{eu}'")._jdf.queryExecution().executedPlan().toString()
    assert "Filter" not in plan.replace("RuntimeFilters", "")

    # Times: everything at or after the 100th message's store time, before the 200th's.
    t100, t200 = stored[99].time_ns // 1000, stored[199].time_ns // 1000
    by_time = f"timestamp >= timestamp_micros({t100}) AND timestamp < timestamp_micros({t200})"
    assert seqs(by_time) == [m.seq for m in stored if t100 <= m.time_ns // 1000 < t200]
    # ... and combined with a subject filter.
    assert seqs(f"{by_time} AND subject = '{eu}'") == [
        m.seq for m in stored if t100 <= m.time_ns // 1000 < t200 and m.subject == eu
    ]
    # pushdown=false: Spark filters everything itself (same answers), and a DataFrame can be
    # reused across differently filtered queries (Spark 4.3 reuses a pushed-down scan otherwise).
    plain = read(spark, url, stream_name, pushdown="false")
    eu_plain = plain.filter(f"subject = '{eu}'")
    assert sorted(r.sequence for r in eu_plain.select("sequence").collect()) == [
        m.seq for m in stored if m.subject == eu
    ]
    assert plain.count() == 300


def test_range_and_subject_options(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    fill(url, stream_name, 120)
    stored = jsutil.stored(url, stream_name)

    def seqs(**options: Any) -> list[int]:
        df = read(spark, url, stream_name, **options)
        return sorted(r.sequence for r in df.select("sequence").collect())

    assert seqs(startSequence=50, endSequence=60) == list(range(50, 61))
    start = stored[29].time_ns
    end = stored[89].time_ns
    iso = {n: _rfc3339(n) for n in (start, end)}
    assert seqs(startTime=iso[start], endTime=iso[end]) == [
        m.seq for m in stored if start <= m.time_ns <= end
    ]
    # Several filter subjects (a 2.9 server takes one: the reader filters the rest itself) ...
    subjects = f"{stream_name}.eu.>,{stream_name}.us.0"
    want = [
        m.seq
        for m in stored
        if m.subject.startswith(f"{stream_name}.eu.") or m.subject == f"{stream_name}.us.0"
    ]
    assert seqs(subjects=subjects, partitions=2) == want
    # ... overlapping ones too (no server takes those).
    assert seqs(subjects=f"{stream_name}.eu.>,{stream_name}.eu.1") == [
        m.seq for m in stored if m.subject.startswith(f"{stream_name}.eu.")
    ]
    # An option filter and a pushed subject filter intersect.
    df = read(spark, url, stream_name, subjects=f"{stream_name}.eu.>")
    assert df.filter(f"subject = '{stream_name}.us.1'").count() == 0


def _rfc3339(ns: int) -> str:
    from pyjetstream.api.timefmt import format_time

    return format_time(ns)


def test_decode_utf8_and_json(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    jsutil.publish(
        url,
        [
            (f"{stream_name}.a", b'{"id": 1, "name": "x", "tags": ["p", "q"]}'),
            (f"{stream_name}.a", b'{"id": "not a number"}'),
            (f"{stream_name}.a", b"not json"),
            (f"{stream_name}.a", "héllo".encode()),
        ],
    )
    text = read(spark, url, stream_name, decode="utf8").orderBy("sequence").collect()
    assert [r.data for r in text][3] == "héllo"
    assert text[0].data.startswith('{"id": 1')
    parsed = read(
        spark, url, stream_name, decode="json", dataSchema="id long, name string, tags array<string>"
    )
    rows = parsed.orderBy("sequence").select("data.id", "data.name", "data.tags").collect()
    assert tuple(rows[0]) == (1, "x", ["p", "q"])
    assert [tuple(r) for r in rows[1:]] == [(None, None, None)] * 3
    # A user-given schema decides the decoding by its data column's type.
    schema = "stream string, subject string, sequence long, timestamp timestamp, headers map<string,array<string>>, data string"
    given = (
        spark.read.format("jetstream")
        .schema(schema)
        .option("servers", url)
        .option("stream", stream_name)
        .load()
    )
    assert given.orderBy("sequence").collect()[3].data == "héllo"


def test_deleted_and_purged_ranges(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    fill(url, stream_name, 200)
    jsutil.delete_msgs(url, stream_name, [5, 6, 7, 100, 199, 200])
    jsutil.purge(url, stream_name, keep=150)  # drops up to seq 50 (of those left)
    expected = expected_rows(url, stream_name)
    for partitions in (1, 3):
        assert rows_of(read(spark, url, stream_name, partitions=partitions)) == expected
    # A range that is entirely deleted reads nothing.
    assert read(spark, url, stream_name, startSequence=5, endSequence=7).count() == 0
    assert read(spark, url, stream_name, startSequence=199).count() == 0


def test_empty_stream_and_empty_ranges(spark: Any, js_server: Target, stream_name: str) -> None:
    url = js_server.url
    jsutil.create_stream(url, stream_name, [f"{stream_name}.>"])
    assert read(spark, url, stream_name).count() == 0
    jsutil.publish(url, [(f"{stream_name}.x", b"1"), (f"{stream_name}.x", b"2")])
    assert read(spark, url, stream_name, startSequence=3).count() == 0
    assert read(spark, url, stream_name, subjects=f"{stream_name}.nothing").count() == 0
    jsutil.purge(url, stream_name)
    assert read(spark, url, stream_name, partitions=2).count() == 0


def test_missing_stream_is_a_clear_error(spark: Any, js_server: Target) -> None:
    with pytest.raises(Exception, match="stream 'NO_SUCH_STREAM' not found"):
        read(spark, js_server.url, "NO_SUCH_STREAM").count()


def test_bad_options_are_clear_errors(spark: Any) -> None:
    with pytest.raises(Exception, match="decode=json needs dataSchema"):
        spark.read.format("jetstream").option("stream", "S").option("decode", "json").load()
    with pytest.raises(Exception, match="startSequence and startTime are exclusive"):
        spark.read.format("jetstream").option("stream", "S").option("startSequence", 1).option(
            "startTime", "2024-01-01T00:00:00Z"
        ).load()
    with pytest.raises(Exception, match="option 'stream' is required"):
        spark.read.format("jetstream").load().count()
