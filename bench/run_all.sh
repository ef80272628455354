#!/usr/bin/env bash
# Runs every benchmark once, side by side with nats-server (and nats-py for the client), and keeps
# the output in bench/results/latest.txt. Not part of the test suite. Takes ~20 minutes on 2 cores.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p bench/results
out=bench/results/latest.txt
{
  echo "# pyjetstream benchmarks — $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, $(.venv/bin/python --version)"
  for b in bench_core bench_shapes bench_client_core bench_js_publish bench_consume bench_client_js bench_store bench_spark; do
    echo
    echo "## $b"
    .venv/bin/python "bench/$b.py" "$@" 2>&1 | grep -v -E "WARN|WARNING|Setting default log level|setLogLevel|^\s+at |^[0-9:]+ ERROR |^org\.apache\.spark"
  done
} | tee "$out"
