"""Scale-out, proven for Spark: a standalone cluster (a master and two workers in their own JVMs).

1. The pipeline job, ``python -m pyjetstream.pipeline --spark-master spark://...`` (what
   ``bash scripts/run.sh --spark-master ...`` runs): every windowed total matches the generator.
2. A Spark batch write and read against the 3-node NATS cluster, R3 stream, while the node holding
   the stream's leader is killed and restarted: executors in the workers' JVMs write every row
   exactly once (idempotent message ids, retried publishes and tasks) and read them all back.

Each Spark application is its own driver process (a test process may hold only one SparkContext,
and the Spark tests' local session lives in theirs).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cluster import Cluster, start_cluster
from tests.support.spark_cluster import SparkCluster, java_available

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster"), pytest.mark.timeout(300)]

ROOT = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkCluster]:
    if not java_available():
        pytest.skip("java is not installed (scripts/setup.sh installs default-jre-headless)")
    c = SparkCluster(tmp_path_factory.mktemp("spark-cluster")).start(workers=2)
    try:
        yield c
    finally:
        c.stop()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    return env


def test_pipeline_job_on_a_spark_standalone_cluster(spark_cluster: SparkCluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["--spark-master", spark_cluster.master_url, "--events", "2000", "--rate", "2000"]
    args += ["--window", "1", "--trigger", "0.5", "--out", str(out), "--quiet"]
    proc = subprocess.run(
        [sys.executable, "-m", "pyjetstream.pipeline", *args],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["exact"] and summary["events"] == 2000
    assert "match the generator exactly" in (out / "summary.md").read_text()


DRIVER = r'''
import json, sys
from pyjetstream.spark import local_session
from pyspark.sql import functions as F

master, servers, stream, rows, marker = sys.argv[1:6]
rows = int(rows)
spark = local_session("pyjetstream-cluster-test", master=master, log_level="ERROR")
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
df = spark.range(0, rows, numPartitions=4).select(
    F.concat(F.lit("orders."), (F.col("id") % 5).cast("string")).alias("subject"),
    F.col("id").cast("string").cast("binary").alias("data"),
    F.concat(F.lit("row-"), F.col("id").cast("string")).alias("msg_id"),
)
# slow the write down so that the kill lands in the middle of it
df = df.repartition(4).sortWithinPartitions("data")
open(marker, "w").write("writing")
(df.write.format("jetstream").option("servers", servers).option("stream", stream)
   .option("ackTimeout", "2").option("publishRetries", "20").option("publishWindow", "64").mode("append").save())
back = spark.read.format("jetstream").option("servers", servers).option("stream", stream).load()
values = [int(r.data) for r in back.select(F.col("data").cast("string").alias("data")).collect()]
print(json.dumps({"executors": executors, "read": len(values), "distinct": len(set(values)),
                  "min": min(values), "max": max(values)}))
spark.stop()
'''


@pytest.fixture
def nats_cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = start_cluster(tmp_path / "nats")
    try:
        yield c
    finally:
        c.stop()


def test_spark_write_and_read_through_a_nats_node_kill(
    spark_cluster: SparkCluster, nats_cluster: Cluster, tmp_path: Path
) -> None:
    from pyjetstream.client.jetstream import StreamConfig, sync

    rows = 10_000
    servers = ",".join(nats_cluster.urls)
    with sync.connect(nats_cluster.urls) as nc:
        js = nc.jetstream()
        info = js.create_stream(StreamConfig(name="SPARKR3", subjects=["orders.>"], num_replicas=3)).cached_info()
        driver = tmp_path / "driver.py"
        driver.write_text(DRIVER)
        marker = tmp_path / "marker"
        proc = subprocess.Popen(
            [sys.executable, str(driver), spark_cluster.master_url, servers, "SPARKR3", str(rows), str(marker)],
            env=_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            # kill the stream leader's node once the executors have written part of the rows
            deadline = time.monotonic() + 180
            while js.stream("SPARKR3").cached_info().state.messages < rows // 5:
                assert proc.poll() is None, proc.stderr.read()[-5000:]
                assert time.monotonic() < deadline, "the write did not start"
                time.sleep(0.2)
            leader_name = js.stream("SPARKR3").cached_info().cluster.leader
            victim = next(n for n in nats_cluster.nodes if n.name == leader_name)
            victim.kill()
            time.sleep(1.0)
            victim.start()
            stdout, stderr = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, stderr[-6000:]
        result = json.loads(stdout.strip().splitlines()[-1])
        assert result["executors"] == 2  # two executor JVMs, one per worker
        assert result == {"executors": 2, "read": rows, "distinct": rows, "min": 0, "max": rows - 1}
        nats_cluster.wait_healthy(60)
        assert js.stream("SPARKR3").cached_info().state.messages == rows  # exactly once
        assert info.config.num_replicas == 3
