"""The crash-loop script (scripts/crash_loop.py, issue #15) for 10 ``kill -9`` cycles under mixed
load against the embedded server: no acknowledged message lost, no duplicate, ack floors never
back, KV revisions monotonic, purges and deletes kept. (The 100-cycle run and the nats-server
control are run from the README.)"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "crash_loop.py"


@pytest.mark.slow
def test_crash_loop_10_cycles(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("crash_loop", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["crash_loop"] = mod
    spec.loader.exec_module(mod)
    rc = mod.main(["--cycles", "10", "--seconds", "0.8", "--rate", "100", "--workdir", str(tmp_path / "w")])
    assert rc == 0, (tmp_path / "w" / "server.log").read_text(errors="replace")[-3000:]
