"""A Spark standalone cluster on loopback: one master and two workers, started with the ``spark-class``
launcher pyspark ships (``org.apache.spark.deploy.master.Master`` / ``...worker.Worker``), ports the JVMs choose.

Each worker offers one core and 1 GB, so a job's executors are two JVMs apart from the driver's.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT = 90.0


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


@dataclass
class SparkCluster:
    workdir: Path
    master_port: int = 0
    master_ui_port: int = 0
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_LOG_DIR=str(self.workdir / "logs"),
            SPARK_WORKER_DIR=str(self.workdir / "work"),
            PYSPARK_PYTHON=sys.executable,
            SPARK_DAEMON_MEMORY="256m",
            SPARK_DAEMON_JAVA_OPTS="-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        )
        return env

    def _launch(self, name: str, *args: str) -> None:
        log = (self.workdir / f"{name}.log").open("ab")
        self.procs.append(
            subprocess.Popen([spark_class(), *args], stdout=log, stderr=subprocess.STDOUT, env=self._env())
        )
        log.close()

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.master_ui_port}/json/", timeout=2) as r:
                state = json.loads(r.read())
        except (OSError, ValueError, http.client.HTTPException):
            return 0
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def _bound_ports(self) -> tuple[int, int] | None:
        """The master's RPC and web UI ports, once its log says both are bound."""
        log = self.workdir / "master.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        rpc = re.search(r"service 'sparkMaster' on port (\d+)", text)
        ui = re.search(r"service 'MasterUI' on port (\d+)", text)
        return (int(rpc.group(1)), int(ui.group(1))) if rpc and ui else None

    def _wait(self, ready: Callable[[], bool], deadline: float) -> None:
        while not ready():
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.procs):
                logs = "\n".join(
                    f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in self.workdir.glob("*.log")
                )
                raise RuntimeError(f"the Spark cluster did not start\n{logs}")
            time.sleep(0.5)

    def start(self, workers: int = 2) -> SparkCluster:
        """Every port is chosen by the JVM that binds it (port 0) and read back from the master's
        log: a port picked free here and bound seconds later by a JVM starting under load was
        taken meanwhile by another test's server (the master's UI answered with a NATS INFO)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        try:
            self._start(workers, time.monotonic() + START_TIMEOUT)
        except BaseException:  # (no JVM outlives a failed start: CI 14a's did, for the rest of the suite)
            self.stop()
            raise
        return self

    def _start(self, workers: int, deadline: float) -> None:
        self._launch(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1",
            "--port", "0",
            "--webui-port", "0",
        )  # fmt: skip
        self._wait(lambda: self._bound_ports() is not None, deadline)
        self.master_port, self.master_ui_port = self._bound_ports() or (0, 0)
        for i in range(workers):
            self._launch(
                f"worker{i + 1}",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host", "127.0.0.1",
                "--cores", "1",
                "--memory", "1g",
                "--webui-port", "0",
                "--work-dir", str(self.workdir / f"work{i + 1}"),
            )  # fmt: skip
        self._wait(lambda: self.alive_workers() >= workers, deadline)

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()


def java_available() -> bool:
    return shutil.which("java") is not None
