"""A short seeded run of scripts/difffuzz.py (issue #15): the same random JetStream API cases on
the embedded server and nats-server 2.15.1, every answer compared; the long run is in the README.
The regressions it found are tests/jetstream/test_difffuzz_found.py."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "difffuzz.py"


def _difffuzz():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("difffuzz_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["difffuzz_script"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_difffuzz_short_run(tmp_path: Path) -> None:
    # A fixed set of cases (seeded), capped in time for a loaded machine.
    assert _difffuzz().main(["--seed", "1", "--cases", "25", "--budget", "60", "--workdir", str(tmp_path)]) == 0
