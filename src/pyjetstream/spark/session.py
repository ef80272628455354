"""A local SparkSession for short jobs: fast JVM start, quiet logs, this interpreter for workers."""

from __future__ import annotations

import hashlib
import os
import shlex
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


#: Local Python workers import the pyspark installed beside this interpreter (its cached bytecode)
#: instead of the copy in ``pyspark.zip`` that Spark puts first on their ``PYTHONPATH`` (off: the zip).
INSTALLED_PYSPARK_FOR_WORKERS = True

# Spark starts a fresh Python process for every data source planning step and streaming source
# (``PythonWorkerFactory.createSimpleWorker``) and gives it 10 s, fixed, to connect back. Its
# ``PYTHONPATH`` begins with ``$SPARK_HOME/python/lib/pyspark.zip`` and the py4j zip; a zip holds no
# bytecode and Python caches none for it, so each start compiles every pyspark module it imports:
# 1.1-1.5 s of CPU against 0.3-0.45 s from the installed package (load 3-6). At load 14 on two cores that start took
# longer than 10 s ("Python worker failed to connect back"). This launcher drops exactly those two
# zips, which are the installed package's own files, and runs this interpreter.
_LAUNCHER = """#!/bin/sh
# Written by pyjetstream.spark.session: this interpreter, without Spark's zipped copy of the
# installed pyspark on PYTHONPATH (the same files, compiled at every start).
set -f
kept=
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    {zips}) ;;
    *) kept="${{kept:+$kept:}}$entry" ;;
  esac
done
unset IFS
PYTHONPATH=$kept
export PYTHONPATH
exec {python} "$@"
"""


def _spark_zips() -> list[str]:
    """The zips Spark puts on a worker's path (``PythonUtils.sparkPythonPath``: ``$SPARK_HOME/python/lib``),
    under each spelling of ``SPARK_HOME`` that is this interpreter's installed pyspark package."""
    import pyspark
    from pyspark.find_spark_home import _find_spark_home

    package = os.path.realpath(os.path.dirname(pyspark.__file__))
    try:
        found = _find_spark_home()  # (what pyspark's gateway gives the JVM as SPARK_HOME)
    except SystemExit:  # (no Spark home it recognises: it printed why)
        found = ""
    homes = {os.environ.get("SPARK_HOME", ""), found, os.path.dirname(os.path.abspath(pyspark.__file__))}
    lib = os.path.join(package, "python", "lib")
    try:
        names = sorted(
            n for n in os.listdir(lib) if n == "pyspark.zip" or (n.startswith("py4j-") and n.endswith(".zip"))
        )
    except OSError:
        return []
    spellings = sorted(h for h in homes | {package} if h and os.path.realpath(h) == package)
    return [os.path.join(home, "python", "lib", name) for home in spellings for name in names]


def worker_python() -> str:
    """The executable local Python workers run: this interpreter, through a launcher without the
    zips when pyspark is installed with them (see ``_LAUNCHER``)."""
    zips = _spark_zips() if INSTALLED_PYSPARK_FOR_WORKERS else []
    if not zips:
        return sys.executable
    text = _LAUNCHER.format(zips="|".join(shlex.quote(z) for z in zips), python=shlex.quote(sys.executable))
    tag = hashlib.sha256(text.encode()).hexdigest()[:16]  # one file per interpreter and pyspark layout
    path = os.path.join(tempfile.gettempdir(), f"pyjetstream-python-{os.getuid()}-{tag}")
    try:
        with open(path) as f:  # (ours and unchanged: a shared temporary directory)
            if os.fstat(f.fileno()).st_uid == os.getuid() and f.read() == text:
                return path
    except OSError:
        pass
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o755)
        os.replace(tmp, path)  # (atomic: another session may be writing the same file)
    except OSError:
        return sys.executable
    return path


_chosen_python: str | None = None  # what local_session last set PYSPARK_PYTHON to


def _choose_python(executable: str) -> str:
    global _chosen_python
    _chosen_python = executable
    return executable


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
    if master is None:
        master = f"local[{cores}]" if max_task_failures <= 1 else f"local[{cores},{max_task_failures}]"
    # (pyspark's SparkContext reads PYSPARK_PYTHON for the workers of UDFs and data sources)
    if os.environ.get("PYSPARK_PYTHON") in (None, sys.executable, _chosen_python):
        os.environ["PYSPARK_PYTHON"] = _choose_python(
            worker_python() if master.startswith("local") else sys.executable
        )
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
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
