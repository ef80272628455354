"""The ``jetstream`` Spark data source (pure Python, Spark 4 Python Data Source API).

    from pyjetstream.spark import register
    register(spark)
    df = spark.read.format("jetstream").option("servers", url).option("stream", "ORDERS").load()

``register`` also turns on Python data source filter pushdown for the session.
[`local_session`][] builds a local SparkSession tuned for short jobs (tests, the pipeline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["FORMAT", "local_session", "register"]

FORMAT = "jetstream"


def register(spark: SparkSession) -> None:
    """Make ``format("jetstream")`` available in ``spark`` (idempotent)."""
    from pyjetstream.spark.source import JetStreamDataSource

    spark.dataSource.register(JetStreamDataSource)
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def local_session(*args: object, **kwargs: object) -> SparkSession:
    """A local SparkSession with the data source registered (see [`session.local_session`][pyjetstream.spark.session.local_session])."""
    from pyjetstream.spark.session import local_session as build

    return build(*args, **kwargs)  # type: ignore[arg-type]
