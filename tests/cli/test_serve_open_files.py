"""``pyjetstream serve`` raises its soft open-file limit to the hard one at start, as Go's runtime
does for nats-server (`serve.raise_open_files`): a soft limit of 1,024 would otherwise refuse a
thousand clients where nats-server takes them. Read from ``/proc/<pid>/limits`` of a real serve
process started with a low soft limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyjetstream.testing.process import read_ports_file, server_command


def open_files_limit(pid: int) -> tuple[str, str]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return soft, hard
    raise AssertionError("no open-files line")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/<pid>/limits")
def test_serve_raises_the_soft_open_file_limit(tmp_path: Path) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit leaves nothing to raise")

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))

    ports = tmp_path / "ports"
    ports.mkdir()
    cmd = [*server_command("embedded"), "-p", "-1", "--ports_file_dir", str(ports)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with (tmp_path / "server.log").open("ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=lower)
    try:
        deadline = time.monotonic() + 60
        while read_ports_file(ports) is None:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "server.log").read_text()
            time.sleep(0.05)
        soft_now, hard_now = open_files_limit(proc.pid)
        assert soft_now == hard_now != "256"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
