"""Progress bars on ``obj put``/``obj get`` and ``stream backup``/``stream restore`` (issue 26, item 7):
drawn on stderr when it is a terminal (a pty here), never when it is piped, with ``--json`` or
``--no-progress`` — and the command's result is the same either way. Both targets."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.conftest import Cli

SIZE = 3 * 1024 * 1024 + 123  # several chunks, not a round number


def _on_a_terminal(cli: Cli, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """Run with stderr on a pty (stdout piped): (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyjetstream", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, env=cli.env(COLUMNS="120"), cwd=cwd,
    )  # fmt: skip
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed its end
                break
            if not data:
                break
            shown += data
        elif proc.poll() is not None:
            break
    out = proc.stdout.read().decode() if proc.stdout else ""
    proc.wait(timeout=30)
    os.close(master)
    return proc.returncode, out, shown.decode(errors="replace")


def test_obj_put_and_get_show_progress_on_a_terminal(cli: Cli, tmp_path: Path) -> None:
    data = os.urandom(SIZE)
    src = tmp_path / "blob.bin"
    src.write_bytes(data)
    cli("obj", "add", "FILES").ok()
    rc, out, shown = _on_a_terminal(cli, "obj", "put", "FILES", str(src), "--name", "blob.bin")
    assert rc == 0, (out, shown)
    assert "Uploading blob.bin" in shown and "3.1/3.1 MB" in shown, shown
    assert "Object information for FILES > blob.bin" in out
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    rc, out, shown = _on_a_terminal(cli, "obj", "get", "FILES", "blob.bin", cwd=fetched)
    assert rc == 0, (out, shown)
    assert "Downloading blob.bin" in shown and "3.1/3.1 MB" in shown, shown
    assert (fetched / "blob.bin").read_bytes() == data
    # --no-progress and --json: nothing drawn on the terminal.
    rc, _, shown = _on_a_terminal(cli, "obj", "get", "FILES", "blob.bin", "-O", str(tmp_path / "x"), "--no-progress")
    assert rc == 0 and "Downloading" not in shown, shown
    rc, out, shown = _on_a_terminal(cli, "obj", "put", "FILES", str(src), "--name", "again", "--json")
    assert rc == 0 and "Uploading" not in shown and '"size": 3145851' in out, (out, shown)
    # Piped: no bar, the same result.
    result = cli("obj", "put", "FILES", str(src), "--name", "piped").ok()
    assert "Uploading" not in result.err and "MB" not in result.err
    assert "Downloading" not in cli("obj", "get", "FILES", "piped", "-O", str(tmp_path / "y")).ok().err


def test_stream_backup_and_restore_show_progress_on_a_terminal(cli: Cli, tmp_path: Path) -> None:
    cli("stream", "add", "ORDERS", "--subjects", "orders.>", "--defaults").ok()
    cli("pub", "orders.new", "x" * 1000, "--count", "300", "-J", "-q").ok()
    target = tmp_path / "backup"
    rc, out, shown = _on_a_terminal(cli, "stream", "backup", "ORDERS", str(target))
    assert rc == 0, (out, shown)
    assert "Backing up ORDERS" in shown, shown
    assert "for stream 'ORDERS'" in out
    cli("stream", "rm", "ORDERS", "-f").ok()
    rc, out, shown = _on_a_terminal(cli, "stream", "restore", str(target))
    assert rc == 0, (out, shown)
    assert "Restoring" in shown, shown
    assert "Restored stream 'ORDERS': 300 messages" in out
    cli("stream", "rm", "ORDERS", "-f").ok()
    result = cli("stream", "restore", str(target)).ok()  # piped
    assert "Restoring" not in result.err
