"""Runs on = runs off with a large budget: tests/server/test_runs_differential.py's traffic, many
more examples (the suite runs a few dozen).

    .venv/bin/python scripts/runs_difffuzz.py [--examples 3000] [--seed N]

Hypothesis shrinks a difference to a small reproducer and prints it (turn it into a regression
test: the suite draws the same examples every run, tests/conftest.py). Exit status 1 on a difference.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, seed, settings
from tests.server.runs_world import stalls_by_count
from tests.server.test_runs_differential import Step, _run, steps, subscriptions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()

    @settings(max_examples=args.examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(subscriptions, steps)
    def differential(subs: list[tuple[int, tuple[str, str], int]], traffic: list[Step]) -> None:
        with stalls_by_count():
            asyncio.run(_run(subs, traffic))

    if args.seed is not None:
        differential = seed(args.seed)(differential)
    started = time.monotonic()
    try:
        differential()
    except Exception as exc:  # the shrunk example is in the report Hypothesis printed
        for note in getattr(exc, "__notes__", []):
            print(note, file=sys.stderr)
        print(f"runs_difffuzz: a difference after {time.monotonic() - started:.0f} s: {exc}", file=sys.stderr)
        return 1
    print(f"runs_difffuzz: {args.examples} examples, no difference ({time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
