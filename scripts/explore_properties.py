"""The suite's property tests with random examples, again and again for a time budget.

The suite draws the same examples on every run (tests/conftest.py, profile "suite"); this runs
the same tests with Hypothesis's random search (profile "explore"), each round a fresh draw, and
stops at the first failure, which Hypothesis shrinks and prints with its ``@reproduce_failure``
blob (turn it into a regression test under tests/, as tests/store/test_filestore_recovery.py did).

    .venv/bin/python scripts/explore_properties.py [--budget 600] [--rounds-per-file N] [paths...]

With no paths: every test file that uses Hypothesis. Exit status 1 on a failure.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def property_files() -> list[str]:
    """Test files that use Hypothesis's @given."""
    return sorted(
        str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py") if "@given" in p.read_text()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=600.0, help="seconds in all (default 600)")
    parser.add_argument("paths", nargs="*", help="test files or node ids (default: every property test file)")
    args = parser.parse_args()
    paths = args.paths or property_files()
    env = {**os.environ, "PYJETSTREAM_HYPOTHESIS": "explore"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "--timeout", "0", *paths]
    end = time.monotonic() + args.budget
    rounds = 0
    while time.monotonic() < end:
        rounds += 1
        done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
        if done.returncode != 0:
            print(f"round {rounds}: a failure (above)", file=sys.stderr)
            return 1
    print(f"{rounds} rounds of {len(paths)} files, no failure")
    return 0


if __name__ == "__main__":
    sys.exit(main())
