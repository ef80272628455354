"""``spark.read.format("jetstream").option("bucket", NAME)``: a KV bucket's current values as a table.

Columns ``key``, ``value`` (binary), ``revision`` (the stream sequence of the value), ``created``
(store time, UTC) and ``operation`` (``PUT``: deleted and purged keys are skipped). One
partition reads the bucket the way ``nats kv ls``/nats.go ``KeyValue.ListKeys`` + ``Get`` would,
in one pass: a watch of ``>`` with ``LastPerSubject`` delivery and deletes ignored (nats.go
``WatchAll(IgnoreDeletes())``), read until its end-of-initial-values marker. The values are the
bucket's as of the moment the task's watch started.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

from pyjetstream.spark.connection import TaskLoop, open_client
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KV_SCHEMA", "KeyValueBatchReader", "read_bucket"]

KV_SCHEMA = StructType(
    [
        StructField("key", StringType(), nullable=False),
        StructField("value", BinaryType(), nullable=True),
        StructField("revision", LongType(), nullable=False),
        StructField("created", TimestampType(), nullable=False),
        StructField("operation", StringType(), nullable=False),
    ]
)


class KeyValueBatchReader(DataSourceReader):
    def __init__(self, opts: JetStreamOptions, schema: StructType) -> None:
        assert opts.bucket
        self.opts = opts
        self.bucket = opts.bucket
        self.schema = schema
        loop = TaskLoop()
        try:
            loop.run(_check_bucket(opts, self.bucket))  # a missing bucket fails the query now
        finally:
            loop.close()

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(0)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_bucket(self.opts, self.bucket)


async def _check_bucket(opts: JetStreamOptions, bucket: str) -> None:
    from pyjetstream.client.jetstream import jetstream

    nc = await open_client(opts.connect)
    try:
        try:
            await jetstream(nc, timeout=opts.connect.request_timeout).key_value(bucket)
        except Exception as exc:
            raise JetStreamSparkError(f"key-value bucket {bucket!r}: {exc}") from None
    finally:
        await nc.close()


def read_bucket(opts: JetStreamOptions, bucket: str) -> Iterator[pa.RecordBatch]:
    """The bucket's current values, in Arrow batches of at most ``batch_size`` rows."""
    loop = TaskLoop()
    try:
        rows = loop.run(_current_values(opts, bucket))
    finally:
        loop.close()
    yield from _batches(rows, opts.batch_size)


async def _current_values(opts: JetStreamOptions, bucket: str) -> list[tuple[str, bytes, int, int]]:
    from pyjetstream.client.jetstream import jetstream

    nc = await open_client(opts.connect)
    try:
        kv = await jetstream(nc, timeout=opts.connect.request_timeout).key_value(bucket)
        rows: list[tuple[str, bytes, int, int]] = []
        watcher = await kv.watch(">", ignore_deletes=True)
        try:
            while (entry := await watcher.next(timeout=max(30.0, opts.connect.request_timeout))) is not None:
                rows.append((entry.key, entry.value, entry.revision, int(entry.created)))
        finally:
            watcher.stop()
        return rows
    finally:
        await nc.close()


def _batches(rows: list[tuple[str, bytes, int, int]], size: int) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import arrow_schema

    schema = arrow_schema(KV_SCHEMA)
    for start in range(0, len(rows), size) or [0]:
        chunk = rows[start : start + size]
        if not chunk and start:
            break
        keys, values, revisions, created = (list(c) for c in zip(*chunk, strict=True)) if chunk else ([], [], [], [])
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(keys, pa.string()),
                pa.array(values, pa.binary()),
                pa.array(revisions, pa.int64()),
                pa.array([ns // 1000 for ns in created], pa.int64()).cast(schema.field("created").type),
                pa.array(["PUT"] * len(chunk), pa.string()),
            ],
            schema=schema,
        )
