"""The ``jetstream`` Python data source: options in, readers and writers out.

Options (names are case-insensitive):

connection (read and write)
    ``servers`` (comma-separated URLs, default ``nats://127.0.0.1:4222``), ``user``/``password``,
    ``token``, ``creds`` (a .creds file), ``nkeySeed``, ``tlsCaFile``, ``tlsCertFile``/``tlsKeyFile``,
    ``tlsHostname``, ``tlsInsecure``, ``connectTimeout``, ``requestTimeout`` (seconds).
read (``spark.read`` / ``spark.readStream``)
    ``stream`` (required); ``subjects`` (comma-separated filter subjects); ``startSequence`` |
    ``startTime``; ``endSequence`` | ``endTime`` (times: RFC3339, ISO 8601 or epoch seconds);
    ``partitions`` (default: by range size, at most one per two cores); ``minPartitionSize``;
    ``batchSize`` (rows per Arrow batch); ``decode`` = ``binary`` | ``utf8`` | ``json`` with
    ``dataSchema`` (DDL or schema JSON); ``maxMessagesPerTrigger`` (streaming);
    ``driverReads`` (streaming, default false: a Spark task per partition of each micro-batch;
    true: the driver reads each micro-batch, no Python task — the low-latency plan);
    ``pushdown`` (default true); ``directGet`` (default false: an ephemeral consumer per partition,
    the cheaper path for the server; true: a batch read of a stream with ``allow_direct`` on a 2.11+
    server uses batched direct get, no consumer).
read a KV bucket (``spark.read`` only)
    ``bucket`` (and no ``stream``): the bucket's current values, one row per key — columns
    ``key``, ``value`` (binary), ``revision``, ``created`` (timestamp), ``operation`` (``PUT``;
    deleted and purged keys are skipped).
write (``df.write`` / ``df.writeStream``)
    columns ``subject``, ``data``, optional ``headers`` and ``msg_id``; ``subject`` (a constant
    subject); ``stream`` (sets ``Nats-Expected-Stream``); ``bucket`` (KV puts: ``key``/``value``);
    ``publishMode`` (``async`` default, ``sync``, ``fast``: fast-ingest batches, ``atomic``: atomic
    batches of ``atomicBatchSize`` rows); ``publishWindow``, ``publishRetries``, ``ackTimeout``;
    ``fastFlow``; ``writeId`` (scope of derived message ids); ``deriveMsgId`` (default true).
"""

from __future__ import annotations

from pyspark.errors import PySparkNotImplementedError
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    SimpleDataSourceStreamReader,
)
from pyspark.sql.types import StructType

from pyjetstream.spark.options import parse_options
from pyjetstream.spark.schema import check_columns, message_schema
from pyjetstream.spark.worker_heap import freeze_worker_heap

__all__ = ["JetStreamDataSource"]


class JetStreamDataSource(DataSource):
    """``format("jetstream")``: read a stream (batch or streaming) or write messages to one."""

    def __init__(self, options: dict[str, str]) -> None:
        freeze_worker_heap()  # a planner worker's first call (see worker_heap)
        super().__init__(options)
        self.opts = parse_options(options)

    @classmethod
    def name(cls) -> str:
        return "jetstream"

    def _reads_bucket(self) -> bool:
        return bool(self.opts.bucket) and not self.opts.stream

    def schema(self) -> StructType:
        if self._reads_bucket():
            from pyjetstream.spark.kv_reader import KV_SCHEMA

            return KV_SCHEMA
        return message_schema(self.opts)

    def reader(self, schema: StructType) -> DataSourceReader:
        from pyjetstream.spark.batch_reader import JetStreamBatchReader

        if self._reads_bucket():
            from pyjetstream.spark.kv_reader import KeyValueBatchReader

            return KeyValueBatchReader(self.opts, schema)

        check_columns(schema)
        return JetStreamBatchReader(self.opts, schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        if self.opts.driver_reads:
            # Spark then asks for simpleStreamReader (pyspark's datasource_internal falls back to it).
            raise PySparkNotImplementedError(
                errorClass="NOT_IMPLEMENTED", messageParameters={"feature": "streamReader"}
            )
        from pyjetstream.spark.stream_reader import JetStreamStreamReader

        check_columns(schema)
        return JetStreamStreamReader(self.opts, schema)

    def simpleStreamReader(self, schema: StructType) -> SimpleDataSourceStreamReader:
        from pyjetstream.spark.driver_stream_reader import JetStreamDriverStreamReader

        check_columns(schema)
        return JetStreamDriverStreamReader(self.opts, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from pyjetstream.spark.writer import JetStreamWriter

        return JetStreamWriter(self.opts, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from pyjetstream.spark.writer import JetStreamStreamWriter

        return JetStreamStreamWriter(self.opts, schema)
