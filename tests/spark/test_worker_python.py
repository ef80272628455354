"""Local Python workers start from the installed pyspark, not Spark's zipped copy of it.

Spark gives a fresh worker (a data source's planning, a streaming source) 10 s, fixed, to connect
back (``PythonWorkerFactory.createSimpleWorker``), and puts ``pyspark.zip`` first on its path: a
zip whose modules Python compiles at every start. Under load that start overran the 10 s ("Python
worker failed to connect back", session 13's CI run: five Spark tests). The counts below are of
modules a worker loads from a zip (each one compiled from source), not of time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from pyjetstream.spark import session

# What python_streaming_source_runner imports before it connects back, and what is reported.
_PROBE = (
    "import json, os, sys, zipimport, pyspark.sql.streaming.python_streaming_source_runner\n"
    "zipped = [n for n, m in list(sys.modules.items())"
    " if isinstance(getattr(getattr(m, '__spec__', None), 'loader', None), zipimport.zipimporter)]\n"
    "print(json.dumps({'zipped': len(zipped), 'path': os.environ.get('PYTHONPATH', '')}))\n"
)


def _worker(executable: str, zips: list[str]) -> dict[str, object]:
    """A process started as Spark starts a worker: the zips first on ``PYTHONPATH``, then the rest."""
    path = os.pathsep.join(["/spark/first", *zips, "/kept/a", "/kept/b"])
    env = {**os.environ, "PYTHONPATH": path}
    out = subprocess.run(
        [executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _zips() -> list[str]:
    zips = session._spark_zips()
    if not zips:
        pytest.skip("pyspark is not installed with its python/lib zips")
    return zips


def test_the_launcher_drops_only_sparks_zips() -> None:
    zips = _zips()
    plain = _worker(sys.executable, zips)
    launched = _worker(session.worker_python(), zips)
    assert int(str(plain["zipped"])) > 50  # every pyspark module it imports, compiled from the zip
    assert launched["zipped"] == 0
    assert launched["path"] == os.pathsep.join(["/spark/first", "/kept/a", "/kept/b"])


def test_the_switch_off_runs_this_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "INSTALLED_PYSPARK_FOR_WORKERS", False)
    assert session.worker_python() == sys.executable


@pytest.mark.xdist_group("spark")
def test_the_local_session_runs_workers_through_it(spark: object) -> None:
    from pyspark.sql import SparkSession

    assert isinstance(spark, SparkSession)
    assert spark.sparkContext.pythonExec == session.worker_python()  # (what UDF and data source workers run)
