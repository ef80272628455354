"""``pyjetstream serve`` as a process: files it writes, its log, signals, exit codes."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.server.rawclient import RawClient

SERVE = [sys.executable, "-m", "pyjetstream", "serve"]


def _wait_for(path_glob: Path, proc: subprocess.Popen[bytes], timeout: float = 20) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = list(path_glob.parent.glob(path_glob.name))
        if found:
            return found[0]
        if proc.poll() is not None:
            raise AssertionError(f"server exited with {proc.returncode}")
        time.sleep(0.02)
    raise AssertionError("no ports file")


def _start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[bytes], dict[str, list[str]]]:
    ports_dir = tmp_path / "ports"
    ports_dir.mkdir(exist_ok=True)
    args = [*SERVE, "-p", "-1", "-a", "127.0.0.1", "--ports_file_dir", str(ports_dir), *extra]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    ports_file = _wait_for(ports_dir / "*.ports", proc)
    assert ports_file.name == f"nats-server_{proc.pid}.ports"  # named as nats-server names it
    return proc, json.loads(ports_file.read_text())


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_files_log_and_graceful_signal(tmp_path: Path, sig: signal.Signals) -> None:
    log = tmp_path / "server.log"
    pid_file = tmp_path / "server.pid"
    proc, ports = _start(tmp_path, "-m", "-1", "-P", str(pid_file), "-l", str(log), "-DV")
    try:
        assert pid_file.read_text().strip() == str(proc.pid)
        port = int(ports["nats"][0].rsplit(":", 1)[1])
        assert ports["nats"] == [f"nats://127.0.0.1:{port}"]
        assert ports["monitoring"][0].startswith("http://127.0.0.1:")
        with RawClient.connected(port) as client:
            out, closed = client.exchange(b"SUB foo 1\r\nPUB foo 2\r\nhi\r\n")
        assert (out, closed) == (b"MSG foo 1 2\r\nhi\r\nPONG\r\n", False)
    finally:
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    text = log.read_text()
    for line in (
        "[INF] Starting nats-server",
        f"[INF] Listening for client connections on 127.0.0.1:{port}",
        "[INF] Server is ready",
        "[DBG] 127.0.0.1:",
        "Client connection created",
        "[TRC] 127.0.0.1:",
        "<<- [SUB foo  1]",
        "->> [MSG foo 1 2]",
        "[INF] Server Exiting..",
    ):
        assert line in text, line
    assert text.index("Server is ready") < text.index("Server Exiting..")
    assert not list((tmp_path / "ports").glob("*.ports"))  # removed on shutdown, like nats-server


def test_serve_from_config_file(tmp_path: Path) -> None:
    conf = tmp_path / "server.conf"
    conf.write_text('authorization { token: "s3" }\nmax_payload: 2048\n')
    proc, ports = _start(tmp_path, "-c", str(conf))
    try:
        port = int(ports["nats"][0].rsplit(":", 1)[1])
        with RawClient(port) as client:
            assert client.info["auth_required"] is True and client.info["max_payload"] == 2048
            out, closed = client.exchange(b'CONNECT {"verbose":false,"auth_token":"s3"}\r\n')
        assert (out, closed) == (b"PONG\r\n", False)
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0


def test_serve_port_in_use_fails(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = subprocess.run([*SERVE, "-p", str(port), "-a", "127.0.0.1"], capture_output=True, timeout=30)
    assert result.returncode == 1
    assert b"[FTL]" in result.stderr and str(port).encode() in result.stderr


def test_serve_bad_flag_and_help() -> None:
    bad = subprocess.run([*SERVE, "-p", "notaport"], capture_output=True, timeout=30)
    assert bad.returncode == 1
    helped = subprocess.run([*SERVE, "--help"], capture_output=True, timeout=30)
    assert helped.returncode == 0 and b"Usage:" in helped.stdout


def test_dispatcher() -> None:
    usage = subprocess.run([sys.executable, "-m", "pyjetstream"], capture_output=True, timeout=30)
    assert usage.returncode == 2 and b"serve" in usage.stdout
    unknown = subprocess.run([sys.executable, "-m", "pyjetstream", "nope"], capture_output=True, timeout=30)
    assert unknown.returncode == 2 and b"unknown command" in unknown.stderr
