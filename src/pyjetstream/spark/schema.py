"""The source's schema and the Arrow batches that carry messages to Spark.

Columns: ``stream``, ``subject``, ``sequence``, ``timestamp`` (store time, UTC, µs),
``headers`` (``map<string, array<string>>``; null when the message had no headers) and
``data`` (binary; a UTF-8 string with ``decode=utf8``; a struct of ``dataSchema`` with
``decode=json``, null when the payload is not a JSON object of that shape). A schema
given with ``.schema(...)`` decides the decoding by the type of its ``data`` column.

Spark types only: the Arrow side (`arrow_batch`) is imported where batches are built, so
planning on the driver does not load pyarrow.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from pyjetstream.spark.ddl import parse_struct
from pyjetstream.spark.options import JetStreamOptions

__all__ = ["data_type", "message_schema"]

BASE_FIELDS = ("stream", "subject", "sequence", "timestamp", "headers")


def data_type(opts: JetStreamOptions) -> DataType:
    if opts.decode == "utf8":
        return StringType()
    if opts.decode == "json":
        assert opts.data_schema is not None
        return parse_struct(opts.data_schema)
    return BinaryType()


def message_schema(opts: JetStreamOptions) -> StructType:
    return StructType(
        [
            StructField("stream", StringType(), nullable=False),
            StructField("subject", StringType(), nullable=False),
            StructField("sequence", LongType(), nullable=False),
            StructField("timestamp", TimestampType(), nullable=False),
            StructField("headers", MapType(StringType(), ArrayType(StringType(), False), False), True),
            StructField("data", data_type(opts), nullable=True),
        ]
    )
