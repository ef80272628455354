"""``spark.read.format("jetstream").option("bucket", NAME)``: a KV bucket's current values as a table.

Columns ``key``, ``value`` (binary), ``revision`` (the stream sequence of the value), ``created``
(store time, UTC) and ``operation`` (``PUT``: deleted and purged keys are skipped). One
partition reads the bucket the way ``nats kv ls``/nats.go ``KeyValue.ListKeys`` + ``Get`` would,
in one pass: a watch of ``>`` with ``LastPerSubject`` delivery and deletes ignored (nats.go
``WatchAll(IgnoreDeletes())``), read until its end-of-initial-values marker, handed to Spark a batch
(``batchSize`` rows) at a time. The values are the bucket's as of the moment the task's watch started.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, TypeAlias

from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import BinaryType, LongType, StringType, StructField, StructType, TimestampType

from pyjetstream.spark.connection import TaskLoop, open_client
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions

if TYPE_CHECKING:
    import pyarrow as pa

    from pyjetstream.client import Client
    from pyjetstream.client.jetstream import KeyWatcher

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

# One value: key, value, revision, created (ns).
Row: TypeAlias = tuple[str, bytes, int, int]


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
    """The bucket's current values, in Arrow batches of at most ``batch_size`` rows.

    Each batch goes to Spark as soon as it is full, so the task holds one batch's rows whatever
    the bucket's size, and Spark starts on the first rows after ``batch_size`` entries, not after
    the whole bucket (the first version read every key into one list first: 0.84 s of CPU before
    the first row at 100,000 keys, bench/bench_client_scale.py ``--dim sparkkv``)."""
    with TaskLoop() as loop:
        rows = loop.run(_BucketRows.open(opts, bucket))
        try:
            first = True
            while True:
                chunk = loop.run(rows.next_rows(opts.batch_size))
                if chunk or first:  # an empty bucket still gives one (empty) batch
                    yield _batch(chunk)
                first = False
                if len(chunk) < opts.batch_size:
                    return
        finally:
            loop.run(rows.close())


class _BucketRows:
    """The bucket's current values, read a batch at a time from one watch (nats.go
    ``WatchAll(IgnoreDeletes())``) on a connection of its own."""

    def __init__(self, nc: Client, watcher: KeyWatcher, timeout: float) -> None:
        self._nc = nc
        self._watcher = watcher
        self._timeout = timeout
        self._done = False

    @classmethod
    async def open(cls, opts: JetStreamOptions, bucket: str) -> _BucketRows:
        from pyjetstream.client.jetstream import jetstream

        nc = await open_client(opts.connect)
        try:
            kv = await jetstream(nc, timeout=opts.connect.request_timeout).key_value(bucket)
            watcher = await kv.watch(">", ignore_deletes=True)
        except BaseException:
            await nc.close()
            raise
        return cls(nc, watcher, max(30.0, opts.connect.request_timeout))

    async def next_rows(self, most: int) -> list[Row]:
        """Up to ``most`` more rows; fewer only at the end of the initial values."""
        rows: list[Row] = []
        while not self._done and len(rows) < most:
            entry = await self._watcher.next(timeout=self._timeout)
            if entry is None:
                self._done = True
            else:
                rows.append((entry.key, entry.value, entry.revision, int(entry.created)))
        return rows

    async def close(self) -> None:
        self._watcher.stop()
        await self._nc.close()


def _batch(rows: list[Row]) -> pa.RecordBatch:
    import pyarrow as pa

    from pyjetstream.spark.arrow_batch import arrow_schema

    schema = arrow_schema(KV_SCHEMA)
    keys, values, revisions, created = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [], [])
    return pa.RecordBatch.from_arrays(
        [
            pa.array(keys, pa.string()),
            pa.array(values, pa.binary()),
            pa.array(revisions, pa.int64()),
            pa.array([ns // 1000 for ns in created], pa.int64()).cast(schema.field("created").type),
            pa.array(["PUT"] * len(rows), pa.string()),
        ],
        schema=schema,
    )
