"""The in-process budget benchmarks of ``bench/`` still run against today's server.

``bench_route_budget.py`` reached into a ``ClientConnection``'s output buffer, which moved to its
``FrameSink`` (b06f9f0), and failed on every run from then until session 13 without anything
noticing: nothing ran it. These run each of the three with the smallest work that still exercises
every stage it times, and check that it printed a figure for every row. Speed is not asserted
(``bench/`` measures it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURE = re.compile(r"\d+\.\d+")

CASES = [
    ("bench_route_budget.py", [], {"ROUTE_BUDGET_REPS": "2"}, ["PubRun", "fan-out", "inbox index"]),
    ("bench_store_budget.py", ["--msgs", "300", "--rounds", "1"], {}, ["F ", "M "]),
    ("bench_delivery_budget.py", ["--msgs", "300", "--rounds", "1"], {}, ["ack (push)", "ack (pull)"]),
]


@pytest.mark.parametrize(("script", "args", "env", "rows"), CASES, ids=[c[0] for c in CASES])
def test_budget_benchmark_runs(script: str, args: list[str], env: dict[str, str], rows: list[str]) -> None:
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), *args],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    for row in rows:
        found = [line for line in lines if row in line]
        assert found, f"{script}: no {row!r} row in\n{run.stdout}"
        assert FIGURE.search(found[-1].split(row, 1)[1]), f"{script}: {row!r} has no figure: {found[-1]}"
