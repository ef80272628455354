"""nats-server's signals on ``pyjetstream serve`` and nats-server 2.15.1 side by side (issue 26):
SIGHUP (``--signal reload``) reloads the configuration — what it applies, what it refuses, the
lines it logs —, SIGUSR1 (``reopen``) reopens the log file, SIGUSR2 (``ldm``) is lame duck mode.
They killed ``pyjetstream serve`` before (their default action); now they do what nats-server does,
whatever dispositions the process inherited."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.support.targets import EMBEDDED, KINDS, NATS_SERVER, nats_server_binary

from pyjetstream.testing.process import read_ports_file

BASE = "host: 127.0.0.1\nport: -1\n"
_STAMP = re.compile(r"^\[\d+\] (\d{4}/\d\d/\d\d \d\d:\d\d:\d\d\.\d+ )?")


def _hostile() -> None:
    """The worst start a parent gives: the signals ignored and blocked (a shell's ``cmd &``, nohup)."""
    every = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2}
    signal.pthread_sigmask(signal.SIG_BLOCK, every)
    for signum in every:
        signal.signal(signum, signal.SIG_IGN)


def _plain() -> None:
    """The default dispositions (SIGHUP, SIGUSR1, SIGUSR2 terminate a process that does not catch them)."""
    for signum in (signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2})


class Proc:
    """A server process started from a config file, logging to ``-l``; its log read back without
    the pid and timestamp nats-server's lines start with."""

    def __init__(self, kind: str, workdir: Path, config: str, preexec: Callable[[], None] = _plain) -> None:
        self.kind = kind
        self.workdir = workdir
        self.conf = workdir / "server.conf"
        self.log = workdir / "server.log"
        self.conf.write_text(config)
        ports = workdir / "ports"
        ports.mkdir()
        exe = [nats_server_binary()] if kind == NATS_SERVER else [sys.executable, "-m", "pyjetstream", "serve"]
        self.command = exe
        self.proc = subprocess.Popen([*exe, "-c", str(self.conf), "-l", str(self.log), "--ports_file_dir", str(ports)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, preexec_fn=preexec)  # fmt: skip
        deadline = time.monotonic() + 30
        found = None
        while found is None and self.proc.poll() is None and time.monotonic() < deadline:
            found = read_ports_file(ports)
            time.sleep(0.02)
        assert found, self.text()
        self.port = int(found["nats"][0].rsplit(":", 1)[1])

    def lines(self) -> list[str]:
        return [_STAMP.sub("", line) for line in self.text().splitlines()]

    def text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def signal(self, command: str) -> None:
        """``<server> --signal command=<pid>``: the server's own command line sends it."""
        done = subprocess.run([*self.command, "--signal", f"{command}={self.proc.pid}"], capture_output=True,
                              text=True, timeout=60)  # fmt: skip
        assert done.returncode == 0, done.stderr

    def wait_for(self, what: str, count: int = 1, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while sum(what in line for line in self.lines()) < count:
            assert time.monotonic() < deadline, f"{what!r} x{count} not logged:\n{self.text()}"
            assert self.proc.poll() is None or what == "Server Exiting", f"exited {self.proc.returncode}:\n{self.text()}"
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def procs(tmp_path: Path) -> Iterator[Callable[..., Proc]]:
    started: list[Proc] = []

    def start(kind: str, config: str = BASE, preexec: Callable[[], None] = _plain) -> Proc:
        workdir = tmp_path / f"{kind}-{len(started)}"
        workdir.mkdir()
        started.append(Proc(kind, workdir, config, preexec))
        return started[-1]

    yield start
    for proc in started:
        proc.stop()


def _connect(port: int, protocol: int | None = 1, user: str = "") -> tuple[socket.socket, bytes]:
    """A raw client: the INFO it was sent, then CONNECT (``protocol``) and a PING answered."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=20)
    info = sock.recv(65536)
    if protocol is not None:
        creds = f',"user":"{user}","pass":"{user}"' if user else ""
        sock.sendall(b'CONNECT {"verbose":false,"protocol":%d%b}\r\nPING\r\n' % (protocol, creds.encode()))
        got = b""
        while b"PONG\r\n" not in got:
            chunk = sock.recv(65536)
            assert chunk, got
            got += chunk
    return sock, info


def _read_until_closed(sock: socket.socket) -> bytes:
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, TimeoutError):
            return data
        if not chunk:
            return data
        data += chunk


# Each step: the config that follows BASE, and the line the reload ends with.
RELOADS = [
    ("debug: true\nlogtime: false\n", "Reloaded server configuration"),
    ("max_payload: 2MB\nping_interval: 10s\nwrite_deadline: 3s\n", "Reloaded server configuration"),
    ("max_pending: 10MB\n", "Failed to reload"),
    ("lame_duck_duration: 60s\n", "Failed to reload"),
    ("server_name: other\n", "Failed to reload"),
    ("bogus_key: 1\n", "Failed to reload"),
    ("no_auth_user: x\n", "Failed to reload"),
    ("default_js_domain: {$G: hub, A: x}\n", "Failed to reload"),  # (validated first)
    ("default_js_domain: {$G: hub}\n", "Failed to reload"),
    ("port: 1\n", "Failed to reload"),  # (old= the port bound: not compared)
    ("authorization { users [{user: a, password: a}] }\nmax_connections: 5\n", "Reloaded server configuration"),
    ("authorization { users [{user: b, password: b}] }\n", "Reloaded server configuration"),
]


def test_reload_logs_and_refuses_as_nats_server(procs: Callable[..., Proc]) -> None:
    """The same configuration changes, each followed by ``--signal reload``: the same lines (what
    was reloaded, in nats-server's order and words; what is refused and why) on both servers."""
    logs = {}
    for kind in KINDS:
        proc = procs(kind)
        for n, (config, outcome) in enumerate(RELOADS, 1):
            proc.conf.write_text(BASE + config)
            proc.signal("reload")
            proc.wait_for('Trapped "hangup" signal', n)
            proc.wait_for(outcome, sum(o == outcome for _, o in RELOADS[:n]))
        logs[kind] = [line.replace(f"old={proc.port},", "old=<port>,").replace(str(proc.conf), "<conf>") for line in proc.lines()
                      if "Reload" in line or "Failed to reload" in line or "Trapped" in line]  # fmt: skip
    assert logs[EMBEDDED] == logs[NATS_SERVER]
    assert (
        "[ERR] Failed to reload server configuration: config reload not supported for JsAccDefaultDomain: "
        "old=map[], new=map[$G:hub]" in logs[EMBEDDED]
    )
    assert "[INF] Reloaded: max_payload = 2097152" in logs[EMBEDDED]
    refused = "config reload not supported for MaxPending: old=67108864, new=10485760"
    assert f"[ERR] Failed to reload server configuration: {refused}" in logs[EMBEDDED]


def test_reload_applies_what_it_logs(procs: Callable[..., Proc], server_kind: str) -> None:
    """A reload's effects: a new max_payload in the INFO a client is sent; users added and taken
    away (a client of a user gone is closed); no config file: the reload fails and says why."""
    proc = procs(server_kind)
    old, _ = _connect(proc.port)
    proc.conf.write_text(BASE + "max_payload: 2MB\nauthorization { users [{user: a, password: a}] }\n")
    proc.signal("reload")
    proc.wait_for("Reloaded server configuration")
    assert b"-ERR 'Authorization Violation'" in _read_until_closed(old)  # no credentials: no longer enough
    a, info = _connect(proc.port, user="a")
    assert b'"max_payload":2097152' in info and b'"auth_required":true' in info
    refused = socket.create_connection(("127.0.0.1", proc.port), timeout=20)
    refused.recv(65536)
    refused.sendall(b'CONNECT {"verbose":false,"user":"b","pass":"b"}\r\nPING\r\n')
    assert b"-ERR 'Authorization Violation'" in _read_until_closed(refused)
    proc.conf.write_text(BASE + "authorization { users [{user: b, password: b}] }\n")
    proc.signal("reload")
    proc.wait_for("Reloaded server configuration", 2)
    assert b"-ERR" not in _read_until_closed(a)  # user a is gone: closed (nats-server: "moved", no -ERR)
    b, _ = _connect(proc.port, user="b")
    b.close()


def test_reload_of_a_file_gone(procs: Callable[..., Proc], server_kind: str) -> None:
    proc = procs(server_kind)
    proc.conf.unlink()  # read once at start; a reload reads it again
    proc.signal("reload")
    proc.wait_for("Failed to reload server configuration")
    assert proc.proc.poll() is None


def test_reopen_log_file(procs: Callable[..., Proc], server_kind: str) -> None:
    """SIGUSR1: the log file opened again — a rotated log goes on in a new file where it was."""
    proc = procs(server_kind)
    rotated = proc.log.with_suffix(".1")
    proc.log.rename(rotated)
    proc.signal("reopen")
    deadline = time.monotonic() + 30
    while "File log re-opened" not in proc.text():
        assert time.monotonic() < deadline and proc.proc.poll() is None, rotated.read_text()
        time.sleep(0.02)
    assert 'Trapped "user defined signal 1" signal' in rotated.read_text()
    proc.signal("reopen")
    proc.wait_for("File log re-opened", 2)


def _wait_refused(port: int, timeout: float = 10.0) -> None:
    """A new connection is refused within ``timeout``: nats-server 2.15.1 logs that it enters lame
    duck mode just before it closes its listener (``lameDuckMode``), so a connection made as the
    line appears can still be taken (seen once in a full run); one taken is closed at once."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            taken = socket.create_connection(("127.0.0.1", port), timeout=20)
        except ConnectionRefusedError:
            return
        taken.close()
        assert time.monotonic() < deadline, "new clients still accepted in lame duck mode"
        time.sleep(0.01)


def test_lame_duck_mode(procs: Callable[..., Proc], server_kind: str) -> None:
    """SIGUSR2: no new client; an INFO with ``ldm`` to each client that takes async INFOs (CONNECT
    protocol 1, first PING answered); after the grace period they are closed, then the server exits 0.
    SIGTERM is ignored meanwhile."""
    proc = procs(server_kind, BASE + 'lame_duck_duration: "30s"\nlame_duck_grace_period: "3s"\n')
    modern, _ = _connect(proc.port, protocol=1)
    legacy, _ = _connect(proc.port, protocol=0)
    started = time.monotonic()
    proc.signal("ldm")
    proc.wait_for("Entering lame duck mode, stop accepting new clients")
    _wait_refused(proc.port)
    proc.proc.send_signal(signal.SIGTERM)  # ignored in lame duck mode
    # (nats-server 2.15 also sends a "connect_info" INFO after the first PONG: not this one; and PINGs)
    told = [line for line in _read_until_closed(modern).split(b"\r\n")
            if line and line != b"PING" and b'"connect_info":true' not in line]  # fmt: skip
    assert len(told) == 1 and re.fullmatch(rb"INFO \{.*\"ldm\":true.*\} ", told[0]), told
    assert b'"client_id"' in told[0] and b"nonce" not in told[0]
    assert time.monotonic() - started >= 2.5  # the grace period before closing
    assert _read_until_closed(legacy).replace(b"PING\r\n", b"") == b""  # (the server's own PINGs)
    assert proc.proc.wait(timeout=60) == 0
    lines = [line for line in proc.lines() if line.startswith("[INF]")]
    expected = ['[INF] Trapped "user defined signal 2" signal', "[INF] Entering lame duck mode, stop accepting new clients",
                '[INF] Trapped "terminated" signal', "[INF] Closing existing clients", "[INF] Initiating Shutdown...",
                "[INF] Server Exiting.."]  # fmt: skip
    assert [line for line in lines if line in expected] == expected, lines


def test_lame_duck_without_clients_exits_and_sigint_stops_it(procs: Callable[..., Proc], server_kind: str) -> None:
    idle = procs(server_kind)
    idle.signal("ldm")
    assert idle.proc.wait(timeout=60) == 0
    busy = procs(server_kind, BASE + 'lame_duck_duration: "30s"\nlame_duck_grace_period: "20s"\n')
    sock, _ = _connect(busy.port)
    busy.signal("ldm")
    busy.wait_for("Entering lame duck mode")
    busy.proc.send_signal(signal.SIGINT)
    assert busy.proc.wait(timeout=60) == 0
    sock.close()


@pytest.mark.parametrize("inherited", [_plain, _hostile], ids=["default", "ignored-and-blocked"])
def test_signals_are_handled_whatever_was_inherited(procs: Callable[..., Proc], server_kind: str,
                                                    inherited: Callable[[], None]) -> None:  # fmt: skip
    """HUP, USR1, USR2 with their default action (they terminated ``pyjetstream serve``) or ignored and
    blocked by the parent: handled as nats-server handles them."""
    proc = procs(server_kind, BASE, inherited)
    for command, line in (("reload", "Reloaded server configuration"), ("reopen", "File log re-opened")):
        proc.signal(command)
        proc.wait_for(line)
    proc.signal("ldm")
    assert proc.proc.wait(timeout=60) == 0
    assert "Entering lame duck mode" in proc.text()
