"""The data source's pure parts, without Spark or a server: options, schema DDL, pushdown,
partitioning, subject matching, message ids."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.datasource import (
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    LessThan,
    LessThanOrEqual,
    StringStartsWith,
)
from pyspark.sql.types import ArrayType, DecimalType, LongType, MapType, StringType, StructType

from pyjetstream.protocol.subjects import subject_matches, subjects_overlap
from pyjetstream.spark.ddl import DdlError, parse_struct
from pyjetstream.spark.filters import ReadBounds, push_filters
from pyjetstream.spark.msgid import MsgIdGenerator, scope_of
from pyjetstream.spark.options import OptionError, parse_options, parse_time_option
from pyjetstream.spark.partitioning import MAX_AUTO_PARTITIONS, default_partition_count, split_range

# --- options -----------------------------------------------------------------------------------


def test_options_defaults_and_parsing() -> None:
    opts = parse_options({"Stream": "S", "SUBJECTS": "a.*, b.>", "startSequence": "5", "partitions": "3"})
    assert opts.stream == "S"
    assert opts.subjects == ("a.*", "b.>")
    assert opts.start_sequence == 5 and opts.partitions == 3
    assert opts.connect.servers == ("nats://127.0.0.1:4222",)
    assert opts.pushdown and opts.derive_msg_id
    opts = parse_options(
        {"servers": "nats://a:1,nats://b:2", "user": "u", "password": "p", "pushdown": "false"}
    )
    assert opts.connect.servers == ("nats://a:1", "nats://b:2")
    assert (opts.connect.user, opts.connect.password) == ("u", "p")
    assert not opts.pushdown
    assert parse_options({"subject": "x.y"}).filter_subjects == ("x.y",)
    assert parse_options({}).publish_mode == "async"
    opts = parse_options({"publishMode": "Atomic", "atomicBatchSize": "200", "fastFlow": "100"})
    assert (opts.publish_mode, opts.atomic_batch_size, opts.fast_flow) == ("atomic", 200, 100)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"decode": "xml"}, "decode='xml' must be one of"),
        ({"decode": "json"}, "needs dataSchema"),
        ({"partitions": "zero"}, "not an integer"),
        ({"partitions": "0"}, "at least 1"),
        ({"startSequence": "1", "startTime": "2024-01-01T00:00:00Z"}, "exclusive"),
        ({"endSequence": "1", "endTime": "2024-01-01T00:00:00Z"}, "exclusive"),
        ({"startTime": "yesterday"}, "is not a time"),
        ({"ackTimeout": "-1"}, "must be positive"),
        ({"tlsInsecure": "maybe"}, "not a boolean"),
        ({"publishMode": "turbo"}, "publishMode='turbo' must be one of async, sync, fast, atomic"),
        ({"atomicBatchSize": "1001"}, "atomicBatchSize=1001 must be at most 1000"),
        ({"fastFlow": "70000"}, "at most 65535"),
    ],
)
def test_bad_options(options: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError, match=message):
        parse_options(options)


def test_time_options() -> None:
    ns = parse_time_option("t", "2024-05-01T12:00:00.123456789Z")
    assert ns == 1714564800_123456789
    assert parse_time_option("t", "2024-05-01T12:00:00") == 1714564800_000000000  # naive = UTC
    assert parse_time_option("t", "2024-05-01T14:00:00+02:00") == 1714564800_000000000
    assert parse_time_option("t", "1714564800.5") == 1714564800_500000000


# --- schema DDL --------------------------------------------------------------------------------


def test_ddl_parsing() -> None:
    schema = parse_struct(
        "id long, name STRING not null, tags array<string>, m map<string, int>, "
        "s struct<a: double, `b c`: boolean>, d decimal(10,2)"
    )
    assert [f.name for f in schema.fields] == ["id", "name", "tags", "m", "s", "d"]
    assert schema["id"].dataType == LongType()
    assert not schema["name"].nullable
    assert schema["tags"].dataType == ArrayType(StringType())
    assert isinstance(schema["m"].dataType, MapType)
    assert isinstance(schema["s"].dataType, StructType) and schema["s"].dataType.names == ["a", "b c"]
    assert schema["d"].dataType == DecimalType(10, 2)
    assert parse_struct(schema.json()) == schema
    with pytest.raises(DdlError, match="unknown type"):
        parse_struct("a widget")
    with pytest.raises(DdlError):
        parse_struct("a array<string")


# --- pushdown ----------------------------------------------------------------------------------


def _push(filters: list, option_subjects: tuple[str, ...] = ()) -> tuple[ReadBounds, list]:
    bounds = ReadBounds()
    remaining = push_filters(filters, "S", option_subjects, bounds)
    return bounds, remaining


def test_pushdown_subjects_and_sequences() -> None:
    bounds, rest = _push(
        [EqualTo(("subject",), "a.b"), GreaterThan(("sequence",), 10), LessThanOrEqual(("sequence",), 20)]
    )
    assert rest == []
    assert bounds.subjects == ("a.b",) and (bounds.first_seq, bounds.last_seq) == (11, 20)
    bounds, rest = _push(
        [In(("subject",), ("x", "y")), GreaterThanOrEqual(("sequence",), 5), LessThan(("sequence",), 9)]
    )
    assert rest == [] and bounds.subjects == ("x", "y") and (bounds.first_seq, bounds.last_seq) == (5, 8)
    in_seq = In(("sequence",), (3, 70))
    bounds, rest = _push([in_seq])
    assert rest == [in_seq] and (bounds.first_seq, bounds.last_seq) == (3, 70)  # bounded, Spark re-checks
    bounds, rest = _push([StringStartsWith(("subject",), "orders.")])
    assert rest == [] and bounds.subjects == ("orders.>",)
    partial = StringStartsWith(("subject",), "ord")
    bounds, rest = _push([partial])
    assert rest == [partial] and bounds.subjects is None


def test_pushdown_intersects_with_option_subjects() -> None:
    bounds, _ = _push([EqualTo(("subject",), "a.1")], option_subjects=("a.*",))
    assert bounds.subjects == ("a.1",) and not bounds.empty
    bounds, _ = _push([EqualTo(("subject",), "b.1")], option_subjects=("a.*",))
    assert bounds.empty
    bounds, _ = _push([EqualTo(("subject",), "a"), EqualTo(("subject",), "b")])
    assert bounds.empty
    prefix = StringStartsWith(("subject",), "a.")
    bounds, rest = _push([prefix], option_subjects=("a.*",))
    assert rest == [prefix] and bounds.subjects == ("a.*",)


def test_pushdown_time_stream_and_others() -> None:
    t = datetime(2024, 5, 1, 12, 0, 0, 5, tzinfo=UTC)
    gt, lte = GreaterThan(("timestamp",), t), LessThanOrEqual(("timestamp",), t)
    bounds, rest = _push([gt, lte])
    assert rest == [gt, lte]  # Spark re-checks times (µs in Spark, ns in the stream)
    assert bounds.start_time_ns == 1714564800_000006000
    assert bounds.end_time_ns == 1714564800_000006000
    bounds, rest = _push([EqualTo(("stream",), "OTHER")])
    assert bounds.empty and rest == []
    bounds, rest = _push([EqualTo(("stream",), "S")])
    assert not bounds.empty and rest == []
    other = EqualTo(("data",), b"x")
    assert _push([other])[1] == [other]


# --- partitioning --------------------------------------------------------------------------------


@given(st.integers(1, 10**6), st.integers(0, 10**5), st.integers(1, 64))
def test_split_range_covers_exactly(first: int, length: int, count: int) -> None:
    last = first + length - 1
    parts = split_range(first, last, count)
    if length == 0:
        assert parts == []
        return
    assert parts[0].first == first and parts[-1].last == last
    assert all(a.last + 1 == b.first for a, b in itertools.pairwise(parts))
    sizes = [len(p) for p in parts]
    assert len(parts) == min(count, length) and max(sizes) - min(sizes) <= 1


def test_default_partitions_by_size_and_pairs_of_cores() -> None:
    """One partition per minPartitionSize sequences, at most one per two cores (a read keeps a
    Python worker and an executor thread busy), at most MAX_AUTO_PARTITIONS."""
    assert [default_partition_count(span, 10_000, cores=2) for span in (1, 10_000, 10**6)] == [1, 1, 1]
    assert [default_partition_count(span, 10_000, cores=4) for span in (1, 10_001, 10**6)] == [1, 2, 2]
    assert default_partition_count(10**6, 10_000, cores=1) == 1
    assert default_partition_count(10**9, 10_000, cores=64) == MAX_AUTO_PARTITIONS


# --- subjects ------------------------------------------------------------------------------------


def test_subject_matching() -> None:
    # Spark filters with the one matcher (filter first, as everywhere).
    assert subject_matches("a.*.c", "a.b.c") and subject_matches("a.>", "a.b.c") and subject_matches(">", "a")
    assert (
        not subject_matches("a.>", "a")
        and not subject_matches("a.*.c", "a.b")
        and not subject_matches("a", "a.b")
    )
    assert subjects_overlap("a.*", "a.b") and subjects_overlap("a.>", "a.b.c") and subjects_overlap(">", "x")
    assert (
        not subjects_overlap("a.*", "b.*")
        and not subjects_overlap("a.*", "a.b.c")
        and not subjects_overlap("a", "a.>")
    )


# --- message ids ---------------------------------------------------------------------------------


def test_msg_ids_are_deterministic_and_order_independent() -> None:
    rows = [("s.a", b"1"), ("s.b", b"2"), ("s.a", b"1"), ("s.c", b"")]
    first = MsgIdGenerator(scope_of("query-1"), 7, 3)
    ids = [first.next_id(s, d) for s, d in rows]
    assert len(set(ids)) == 4  # identical rows still get distinct ids
    assert all(i.startswith(f"{scope_of('query-1')}.7.3.") for i in ids)
    again = MsgIdGenerator(scope_of("query-1"), 7, 3)
    shuffled = [rows[i] for i in (3, 2, 1, 0)]
    assert sorted(again.next_id(s, d) for s, d in shuffled) == sorted(ids)  # same set, any order
    other_batch = MsgIdGenerator(scope_of("query-1"), 8, 3)
    assert not set(ids) & {other_batch.next_id(s, d) for s, d in rows}
    assert MsgIdGenerator("x", 0, 0).next_id("s", b"d", b"h1") != MsgIdGenerator("x", 0, 0).next_id(
        "s", b"d", b"h2"
    )


def test_framed_ids_are_next_ids_in_header_blocks() -> None:
    """The batch form the writer uses gives the ids ``next_id`` gives, in order, counters shared."""
    rows = [("s.a", b"1"), ("s.b", b"2"), ("s.a", b"1"), ("s.c", b"")]
    one = MsgIdGenerator(scope_of("w"), 0, 1)
    batch = MsgIdGenerator(scope_of("w"), 0, 1)
    expected = [b"<" + one.next_id(s, d).encode() + b">" for s, d in rows * 2]
    got = batch.framed_ids([s for s, _ in rows], [d for _, d in rows], b"<", b">")
    got += batch.framed_ids([s for s, _ in rows], [d for _, d in rows], b"<", b">")
    assert got == expected


def test_rows_with_framed_headers_match_the_general_encoding() -> None:
    """``messages_of``'s shortcut (derived id + expected stream framed per batch) sends the header
    block ``encode_headers`` makes of the dict the general path builds."""
    import pyarrow as pa
    from pyspark.sql.types import BinaryType, StringType, StructField, StructType

    from pyjetstream.protocol import encode_headers
    from pyjetstream.spark.writer import WriteLayout, messages_of

    schema = StructType([StructField("subject", StringType()), StructField("data", BinaryType())])
    batch = pa.record_batch({"subject": ["a.1", "a.2", "a.1"], "data": [b"x", None, b"x"]})
    for options in ({"stream": "S"}, {}, {"stream": "S", "deriveMsgId": "false"}, {"deriveMsgId": "false"}):
        opts = parse_options({"servers": "nats://x", **options})
        layout = WriteLayout.plan(schema, opts)
        ids = MsgIdGenerator("sc", 0, 0) if layout.derive_msg_id else None
        check = MsgIdGenerator("sc", 0, 0)
        got = list(messages_of(batch, layout, ids))
        for (subject, data, block), raw in zip(got, [b"x", b"", b"x"], strict=True):
            headers = {}
            if ids is not None:
                headers["Nats-Msg-Id"] = check.next_id(subject, raw)
            if "stream" in options:
                headers["Nats-Expected-Stream"] = "S"
            assert data == raw
            assert block == (encode_headers(headers) if headers else None)
    with pytest.raises(ValueError, match="row 1 of the batch has no subject"):
        list(messages_of(pa.record_batch({"subject": ["a", ""], "data": [b"", b""]}), layout, None))


def test_header_lines_array_matches_a_row_by_row_parse() -> None:
    """The headers column built by Arrow for a whole batch equals the row-by-row parse, also when
    it falls back to it (a repeated name, bytes that are not UTF-8)."""
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import _own_pairs, header_lines_array

    typ = pa.map_(pa.string(), pa.list_(pa.string()))
    drop = frozenset({"Nats-Stream"})
    batches = [
        [b"Nats-Msg-Id: a.b\r\nX:  y z \r\n", None, b"Bad\r\nNats-Stream: S\r\n", b"E:\r\n:v\r\n"],
        [b"Tag: x\r\nTag: y\r\nK: v\r\n", b"K: 1\r\n"],
        [b"K: \xff\r\n", None],
    ]
    for lines in batches:
        expected = [_own_pairs(line, drop) if line else None for line in lines]
        assert header_lines_array(lines, typ, drop).to_pylist() == expected
    assert _own_pairs(b"Tag: x\r\nTag: y\r\n", drop) == [("Tag", ["x", "y"])]
    assert _own_pairs(b"Nats-Stream: S\r\n", drop) is None


def test_header_ranges_array_matches_the_arrow_split() -> None:
    """The numpy-built headers column (``header_ranges_array``) equals ``header_lines_array``'s on the
    same rows, or declines (None) where that one parses row by row; a row of lines in another
    array's buffer (an offset slice) reads the same."""
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import header_lines_array, header_ranges_array

    typ = pa.map_(pa.string(), pa.list_(pa.string()))
    drop = frozenset({"Nats-Stream"})
    batches = [
        [b"Nats-Msg-Id: a.b\r\nX:  y z \r\n", b"", b"Bad\r\nNats-Stream: S\r\n", b"E:\r\n:v\r\n"],
        [b"K: 1\r\nL:2", b"K:\t1 \x0b\r\n\r\n\r\nM : \r3\r\n", b"\r\n", b"A: x\r", b"\nB: y"],
        [b"", b""],
        [b"Nats-Stream: S\r\n", b"Nats-Stream: T\r\n"],
    ]
    for lines in batches:
        for drop_ in (drop, frozenset()):
            arr = pa.array(lines, pa.binary())
            expected = header_lines_array(arr, typ, drop_).to_pylist()
            assert header_ranges_array(arr, typ, drop_).to_pylist() == expected, (lines, drop_)
            padded = pa.array([b"pad\r\n:x", *lines], pa.binary()).slice(1)
            assert header_ranges_array(padded, typ, drop_).to_pylist() == expected
    for declined in ([b"Tag: x\r\nTag: y\r\n"], [b"K: \xff\r\n"], [b"K:" + b" " * 20 + b"v\r\n"]):
        arr = pa.array(declined, pa.binary())
        assert header_ranges_array(arr, typ, frozenset()) is None


@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["A", "B", " Nats-Msg-Id", "x y", ""]),
                st.sampled_from([":", ": ", "", " :\t"]),
                st.text(alphabet="ab :\r\n\t.", max_size=6),
            ),
            max_size=4,
        ),
        min_size=1,
        max_size=6,
    )
)
def test_header_ranges_array_agrees_on_any_lines(rows: list[list[tuple[str, str, str]]]) -> None:
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import header_lines_array, header_ranges_array

    typ = pa.map_(pa.string(), pa.list_(pa.string()))
    arr = pa.array(["".join(n + c + v + "\r\n" for n, c, v in row).encode() for row in rows], pa.binary())
    got = header_ranges_array(arr, typ, frozenset({"B"}))
    if got is not None:
        assert got.to_pylist() == header_lines_array(arr, typ, frozenset({"B"})).to_pylist()


def test_reply_frames_build_the_columns_of_the_replies() -> None:
    """Direct get replies kept as received become the same rows through the array path (nats-server's
    header layout) and through the row-by-row parse (any other layout), and rows past the range's
    end are dropped."""
    import numpy as np
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import arrow_schema
    from pyjetstream.spark.direct_reader import DIRECT_GET_HEADERS
    from pyjetstream.spark.options import parse_options
    from pyjetstream.spark.reply_frames import ReplyFrames
    from pyjetstream.spark.schema import message_schema

    schema = arrow_schema(message_schema(parse_options({"stream": "S"})))
    tail = (
        b"Nats-Stream: S\r\nNats-Subject: s.%d\r\nNats-Sequence: %d\r\n"
        b"Nats-Time-Stamp: 2026-11-27T10:41:12.%03dZ\r\nNats-Num-Pending: 1\r\nNats-Last-Sequence: 0\r\n\r\n"
    )

    def replies(reorder: bool) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
        buf = b"junk"
        h, s, e = [], [], []
        for seq in (3, 4, 7):
            own = b"X-K: v%d\r\nY:  a b \r\n" % seq if seq != 4 else b""
            lines = tail % (seq, seq, seq)
            if reorder and seq == 7:  # a server that writes the same headers in another order
                first, rest = lines.split(b"\r\n", 1)
                lines = rest[:-2] + first + b"\r\n\r\n"
            block = b"NATS/1.0\r\n" + own + lines
            h.append(len(buf))
            buf += block
            s.append(len(buf))
            buf += b"payload %d" % seq
            e.append(len(buf))
            buf += b"\r\nHMSG x 1 2 3\r\n"
        return buf, np.array(h), np.array(s), np.array(e)

    for reorder in (False, True):
        for last in (7, 5):
            frames = ReplyFrames("S", schema, DIRECT_GET_HEADERS, last)
            buf, h, s, e = replies(reorder)
            frames.add(buf, h[:1], s[:1], e[:1])
            frames.add(buf, h[1:], s[1:], e[1:])
            rows = frames.to_batch().to_pylist()
            expected = [
                ("s.3", 3, [("X-K", ["v3"]), ("Y", ["a b"])], b"payload 3", 3000),
                ("s.4", 4, None, b"payload 4", 4000),
                ("s.7", 7, [("X-K", ["v7"]), ("Y", ["a b"])], b"payload 7", 7000),
            ]
            expected = [r for r in expected if r[1] <= last]
            got = [
                (r["subject"], r["sequence"], r["headers"], r["data"], r["timestamp"].microsecond)
                for r in rows
            ]
            assert got == expected, (reorder, last)
            assert all(r["stream"] == "S" for r in rows)
            pruned = pa.schema([schema.field(name) for name in ("sequence", "data")])
            frames = ReplyFrames("S", pruned, DIRECT_GET_HEADERS, last)
            frames.add(buf, h, s, e)
            assert frames.to_batch().to_pylist() == [{"sequence": r[1], "data": r[3]} for r in expected]


def test_consumer_frames_build_the_columns_of_the_deliveries() -> None:
    """A consumer's deliveries kept as received (frames with their control lines, and a message that
    came as a Msg) become the same rows as the one-message-at-a-time columns, through the array path
    and through the row-by-row parse (the ack subject's long form); rows past the range's end are
    dropped, and an empty header block stays an empty map."""
    import numpy as np
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import MessageColumns, arrow_schema
    from pyjetstream.spark.consumer_frames import ConsumerFrames, line_starts
    from pyjetstream.spark.options import parse_options
    from pyjetstream.spark.schema import message_schema

    schema = arrow_schema(message_schema(parse_options({"stream": "S"})))
    blocks = {
        3: b"NATS/1.0\r\nX-K: v3\r\nY:  a b \r\nX-K: w\r\n\r\n",
        4: b"",
        7: b"NATS/1.0\r\nZ: 1\r\n\r\n",
        8: b"",
    }

    def ack(seq: int, long: bool) -> bytes:
        if long:
            return b"$JS.ACK.dom.acchash.S.C.1.%d.%d.%d.%d.tok" % (seq, seq, seq * 1000 + 17, 9 - seq)
        return b"$JS.ACK.S.C.1.%d.%d.%d.%d" % (seq, seq, seq * 1000 + 17, 9 - seq)

    for long in (False, True):
        for last in (8, 5):
            for empty_block in (False, True):
                if empty_block:
                    blocks[8] = b"NATS/1.0\r\n\r\n"
                buf = b"+OK\r\n"
                h, s, e = [], [], []
                old = MessageColumns("S", schema)
                for seq in (3, 7, 8):
                    block, data = blocks[seq], b"payload %d" % seq
                    buf += b"HMSG s.%d 5 %s %d %d\r\n" % (
                        seq,
                        ack(seq, long),
                        len(block),
                        len(block) + len(data),
                    )
                    h.append(len(buf))
                    s.append(len(buf) + len(block))
                    buf += block + data
                    e.append(len(buf))
                    buf += b"\r\n"
                    if seq <= last:
                        old.append(f"s.{seq}", seq, seq * 1000 + 17, block or None, data)
                ha, sa, ea = np.array(h), np.array(s), np.array(e)
                ls = line_starts(buf, ha, ea)
                assert buf[ls[0] : ls[0] + 5] == b"HMSG " and buf[ls[1] : ls[1] + 5] == b"HMSG "
                # A user's schema (some columns, another order) gets those columns of the same rows.
                pruned = pa.schema([schema.field(name) for name in ("data", "timestamp", "subject")])
                for sch in (pruned, schema):
                    frames = ConsumerFrames("S", sch, last)
                    frames.add(buf, ls[:1], ha[:1], sa[:1], ea[:1])
                    frames.add_msg("s.4", ack(4, long).decode(), None, b"payload 4")
                    frames.add(buf, ls[1:], ha[1:], sa[1:], ea[1:])
                    if sch is pruned:
                        pruned_batch = frames.to_batch()
                assert pruned_batch == frames.to_batch().select(pruned.names)
                expected = MessageColumns("S", schema)
                for i, seq in enumerate(old.sequence):
                    expected.append(old.subject[i], seq, old.timestamp[i], old.headers[i], old.data[i])
                    if seq == 3:
                        expected.append("s.4", 4, 4017, None, b"payload 4")
                got = frames.to_batch().to_pylist()
                assert got == expected.to_batch().to_pylist(), (long, last, empty_block)
                assert [r["sequence"] for r in got] == [q for q in (3, 4, 7, 8) if q <= last]
                if empty_block and last == 8:
                    assert got[-1]["headers"] == []


# --- the worker heap freeze --------------------------------------------------------------------


def test_worker_heap_is_frozen_only_in_a_reused_worker_and_again_only_after_new_imports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`freeze_worker_heap` freezes in a reused Spark worker (``SPARK_REUSE_WORKER``), once, and
    again only when modules were imported since; never outside one or when switched off."""
    import gc
    import sys
    import types

    from pyjetstream.spark import worker_heap

    def frozen_after_call() -> bool:
        gc.unfreeze()
        worker_heap.freeze_worker_heap()
        return gc.get_freeze_count() > 0

    monkeypatch.setattr(worker_heap, "_modules_frozen", 0)
    try:
        monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
        assert not frozen_after_call()  # a driver or test process
        monkeypatch.setattr(worker_heap, "_modules_frozen", 0)
        monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
        monkeypatch.setenv(worker_heap.FREEZE_ENV, "0")
        assert not frozen_after_call()  # switched off
        monkeypatch.setattr(worker_heap, "_modules_frozen", 0)
        monkeypatch.delenv(worker_heap.FREEZE_ENV)
        assert frozen_after_call()  # a reused worker's first call
        assert not frozen_after_call()  # nothing imported since
        monkeypatch.setitem(sys.modules, "_pyjetstream_test_new_module", types.ModuleType("m"))
        assert frozen_after_call()  # a task that imported more
    finally:
        gc.unfreeze()
