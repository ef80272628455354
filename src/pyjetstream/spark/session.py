"""A local SparkSession for short jobs: fast JVM start, quiet logs, this interpreter for workers."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["local_session"]

# C1-only JIT and the serial GC start the JVM in about half the time; for jobs of a few
# minutes whose work is in Python workers that is the better trade.
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def local_session(
    app_name: str = "pyjetstream",
    *,
    cores: int = 2,
    shuffle_partitions: int = 2,
    fast_start: bool = True,
    max_task_failures: int = 1,
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """Spark in local mode (``local[cores]``), UI off, WARN logs, ``jetstream`` registered.

    ``max_task_failures`` > 1 retries failed tasks as a cluster would (``local[n,f]``).
    Python workers run this interpreter, so they see the same packages.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    master = f"local[{cores}]" if max_task_failures <= 1 else f"local[{cores},{max_task_failures}]"
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    )
    if fast_start:
        builder = builder.config("spark.driver.extraJavaOptions", FAST_START_JAVA_OPTIONS)
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    from pyjetstream.spark import register

    register(spark)
    return spark
