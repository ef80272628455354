"""A 3-node nats-server cluster on loopback for the scale-out tests (random ports, one store dir per node).

Ports are picked free up front so that a node restarted after ``kill -9`` comes back on the same
client and route ports: clients reconnect to the URL they knew, and the other nodes' routes find it.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.targets import nats_server_binary, render_config

from pyjetstream.testing.process import ServerProcess

START_TIMEOUT = 30.0


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports free on 127.0.0.1 right now."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class Node:
    name: str
    workdir: Path
    port: int
    cluster_port: int
    http_port: int
    routes: list[str]
    process: ServerProcess | None = None

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.process.proc if self.process is not None else None

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def config(self) -> str:
        return render_config(
            {
                "server_name": self.name,
                "host": "127.0.0.1",
                "port": self.port,
                "http_port": self.http_port,
                "jetstream": {"store_dir": str(self.workdir / "store")},
                "cluster": {
                    "name": "C",
                    "host": "127.0.0.1",
                    "port": self.cluster_port,
                    "routes": self.routes,
                },
            }
        )

    def start(self) -> None:
        """Start the node (it is ready when the cluster is: :meth:`Cluster.wait_healthy`)."""
        conf = self.workdir / "node.conf"
        conf.write_text(self.config())
        self.process = ServerProcess([nats_server_binary(), "-c", str(conf)], self.workdir / "node.log")
        self.process.start(lambda: True, START_TIMEOUT)

    def kill(self) -> None:
        """``kill -9``: no goodbye to the cluster, nothing flushed."""
        if self.process is not None:
            self.process.kill()
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
        self.process = None

    def jsz(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/jsz", timeout=2) as resp:
            return json.loads(resp.read())

    def healthy(self) -> bool:
        """``/healthz`` says ok: JetStream is up and this node is current with the meta group."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/healthz", timeout=2) as resp:
                return json.loads(resp.read()).get("status") == "ok"
        except OSError:
            return False

    def read_log(self) -> str:
        path = self.workdir / "node.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Cluster:
    nodes: list[Node] = field(default_factory=list)

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes]

    def node_for(self, url: str | None) -> Node:
        """The node a client's ``connected_url`` points at."""
        port = int(str(url).rsplit(":", 1)[1])
        return next(n for n in self.nodes if n.port == port)

    def wait_healthy(self, timeout: float = START_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(n.proc is not None and n.healthy() for n in self.nodes):
                with contextlib.suppress(OSError, KeyError):
                    if self.nodes[0].jsz().get("meta_cluster", {}).get("leader"):
                        return
            time.sleep(0.1)
        logs = "\n".join(f"--- {n.name}\n{n.read_log()[-3000:]}" for n in self.nodes)
        raise RuntimeError(f"cluster not healthy after {timeout}s\n{logs}")

    def stop(self) -> None:
        for n in self.nodes:
            n.stop()


def start_cluster(workdir: Path, size: int = 3) -> Cluster:
    ports = free_ports(3 * size)
    cluster_ports = ports[size : 2 * size]
    routes = [f"nats-route://127.0.0.1:{p}" for p in cluster_ports]
    cluster = Cluster()
    for i in range(size):
        node_dir = workdir / f"n{i + 1}"
        node_dir.mkdir(parents=True, exist_ok=True)
        cluster.nodes.append(
            Node(
                name=f"n{i + 1}",
                workdir=node_dir,
                port=ports[i],
                cluster_port=cluster_ports[i],
                http_port=ports[2 * size + i],
                routes=routes,
            )
        )
    for n in cluster.nodes:
        n.start()
    try:
        cluster.wait_healthy()
    except BaseException:
        cluster.stop()
        raise
    return cluster
