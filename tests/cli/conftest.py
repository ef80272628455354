"""Drive ``python -m pyjetstream …`` as a subprocess against each server target.

``cli(*args)`` runs a command to completion against the test's server (``NATS_URL``) and returns
its exit code, stdout and stderr; ``cli.spawn(*args, ready=…)`` starts a long-running one (sub,
reply, watch) and waits until it prints its ready line. Every run asserts that nothing leaked a
Python traceback: failures must be one clean ``pyjetstream: error: …`` line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.support.targets import Target

RUN_TIMEOUT = 60.0


@dataclass
class Result:
    rc: int
    out: str
    err: str
    args: tuple[str, ...]

    def json(self) -> Any:
        assert self.rc == 0, self.describe()
        return json.loads(self.out)

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def ok(self) -> Result:
        assert self.rc == 0, self.describe()
        return self

    def fails(self, *texts: str, rc: int | None = None) -> Result:
        """Assert a clean failure: non-zero exit, one error message containing every ``texts``."""
        assert self.rc != 0, self.describe()
        if rc is not None:
            assert self.rc == rc, self.describe()
        for text in texts:
            assert text.lower() in self.err.lower(), self.describe()
        return self

    def describe(self) -> str:
        return f"pyjetstream {' '.join(self.args)} → rc={self.rc}\n--- stdout\n{self.out}\n--- stderr\n{self.err}"


class Spawned:
    """A background CLI process: its stderr is read on a thread so we can wait for lines."""

    def __init__(self, proc: subprocess.Popen[bytes], args: tuple[str, ...]) -> None:
        self.proc = proc
        self.args = args
        self.err_lines: list[str] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._cond:
                self.err_lines.append(raw.decode(errors="replace"))
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def wait_for_stderr(self, text: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not any(text in line for line in self.err_lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"{' '.join(self.args)}: no {text!r} on stderr: {self.err_lines}")
                self._cond.wait(min(left, 0.1))

    def finish(self, timeout: float = 30.0) -> Result:
        try:
            out, _ = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
            raise AssertionError(f"{' '.join(self.args)} did not finish: {self.err_lines}") from None
        self._reader.join(5)
        result = Result(
            self.proc.returncode, out.decode(errors="replace"), "".join(self.err_lines), self.args
        )
        _no_traceback(result)
        return result

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def _no_traceback(result: Result) -> None:
    assert "Traceback" not in result.err, result.describe()
    assert "Traceback" not in result.out, result.describe()


class Cli:
    def __init__(self, url: str, home: Path) -> None:
        self.url = url
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self._spawned: list[Spawned] = []

    def env(self, **extra: str) -> dict[str, str]:
        drop = ("PYJETSTREAM_TRACE", "COLUMNS", "LINES")  # tables are as wide as they need when piped
        # ... and run as an installed command is, with its bytecode cache: an inherited
        # PYTHONDONTWRITEBYTECODE would compile the CLI's modules again in every run (0.27 -> 0.15 s CPU).
        drop += ("PYTHONDONTWRITEBYTECODE",)
        env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_") and k not in drop}
        env["NATS_URL"] = self.url
        env["XDG_CONFIG_HOME"] = str(self.home)  # no stray nats contexts from the machine
        env.update(extra)
        return env

    def __call__(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        timeout: float = RUN_TIMEOUT,
    ) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "pyjetstream", *args],
            input=input,
            cwd=cwd,
            stdin=None if input is not None else subprocess.DEVNULL,
            capture_output=True,
            env=env or self.env(),
            timeout=timeout,
        )
        result = Result(
            proc.returncode, proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace"), args
        )
        _no_traceback(result)
        return result

    def spawn(self, *args: str, ready: str | None = None, env: dict[str, str] | None = None) -> Spawned:
        proc = subprocess.Popen(
            [sys.executable, "-m", "pyjetstream", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env or self.env(),
        )
        spawned = Spawned(proc, args)
        self._spawned.append(spawned)
        if ready:
            spawned.wait_for_stderr(ready)
        return spawned

    def close(self) -> None:
        for spawned in self._spawned:
            spawned.stop()


@pytest.fixture
def cli(server: Target, tmp_path: Path) -> Iterator[Cli]:
    """Run the CLI against a fresh JetStream server of each kind."""
    runner = Cli(server.url, tmp_path / "config")
    yield runner
    runner.close()
