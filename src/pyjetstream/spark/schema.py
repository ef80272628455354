"""The source's schema and the Arrow batches that carry messages to Spark.

Columns: ``stream``, ``subject``, ``sequence``, ``timestamp`` (store time, UTC, µs),
``headers`` (``map<string, array<string>>``; null when the message had no headers) and
``data`` (binary; a UTF-8 string with ``decode=utf8``; a struct of ``dataSchema`` with
``decode=json``, null when the payload is not a JSON object of that shape). A schema
given with ``.schema(...)`` decides the decoding by the type of its ``data`` column, and may name
only some of the columns, in any order: the reader builds only those (`check_columns`).

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

__all__ = ["check_columns", "data_type", "message_schema"]

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


COLUMNS = (*BASE_FIELDS, "data")


def check_columns(schema: StructType) -> None:
    """A user's schema names message columns only, each once. Python data sources get no column
    pruning from Spark, so a schema without ``headers`` (or other unneeded columns) is how a query
    avoids paying for them: the worker does not parse the header blocks and Spark's JVM converts no
    map column per row."""
    from pyjetstream.spark.errors import JetStreamSparkError

    names = [f.name for f in schema.fields]
    unknown = [n for n in names if n not in COLUMNS]
    if unknown or len(set(names)) != len(names) or not names:
        raise JetStreamSparkError(
            f"a jetstream read's schema takes columns among {', '.join(COLUMNS)}, each at most once;"
            f" got {', '.join(names) or 'none'}"
        )
