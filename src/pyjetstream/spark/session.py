"""A local SparkSession for short jobs: fast JVM start, quiet logs, this interpreter for workers."""

from __future__ import annotations

import os
import sys
import tempfile

from pyspark.sql import SparkSession

__all__ = ["local_session"]

# C1-only JIT and the serial GC start the JVM in about half the time; for jobs of a few
# minutes whose work is in Python workers that is the better trade.
FAST_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

# Spark's console logging from the first line on (its default profile announces itself at INFO).
_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.hadoop.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop.level = error
"""


def _log_config(level: str) -> str:
    path = os.path.join(tempfile.gettempdir(), f"pyjetstream-log4j2-{level.lower()}.properties")
    with open(path, "w") as f:
        f.write(_LOG4J2.format(level=level.lower()))
    return path


def local_session(
    app_name: str = "pyjetstream",
    *,
    cores: int = 2,
    shuffle_partitions: int = 2,
    fast_start: bool = True,
    max_task_failures: int = 1,
    log_level: str = "WARN",
    extra_conf: dict[str, str] | None = None,
    master: str | None = None,
) -> SparkSession:
    """Spark in local mode (``local[cores]``), UI off, WARN logs, ``jetstream`` registered.

    ``max_task_failures`` > 1 retries failed tasks as a cluster would (``local[n,f]``).
    Python workers run this interpreter, so they see the same packages. ``log_level``: Spark's
    console log level from JVM start (``ERROR`` hides Spark's routine warnings).

    ``master``: a cluster instead (``spark://host:7077`` for a standalone cluster): executors run
    in the workers' JVMs, their Python workers with this interpreter and this ``PYTHONPATH``
    (a cluster whose machines have pyjetstream installed elsewhere sets ``spark.pyspark.python``
    in ``extra_conf``).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if master is None:
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
    java_options = f"-Dlog4j2.configurationFile=file:{_log_config(log_level)}"
    if fast_start:
        java_options = f"{FAST_START_JAVA_OPTIONS} {java_options}"
    builder = builder.config("spark.driver.extraJavaOptions", java_options)
    if master.startswith("local"):
        # Local files without Hadoop's .crc side files: a streaming query writes two small checkpoint
        # files per micro-batch (offset log, commit log), each a create + rename, and the checksum
        # layer doubles those (a second file and rename each). 1,000 msgs/s into the noop sink
        # (driverReads, load ~17): walCommit 61 -> 36-43 ms, commit log 85 -> 39-60 ms per micro-batch.
        builder = builder.config(
            "spark.hadoop.fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem"
        ).config("spark.hadoop.fs.AbstractFileSystem.file.impl", "org.apache.hadoop.fs.local.RawLocalFs")
    else:
        builder = builder.config("spark.pyspark.python", sys.executable).config("spark.task.maxFailures", "4")
        if os.environ.get("PYTHONPATH"):
            builder = builder.config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(log_level.upper())
    from pyjetstream.spark import register

    register(spark)
    return spark
