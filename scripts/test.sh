#!/usr/bin/env bash
# Installs everything, then runs the whole test suite (both targets: embedded server and nats-server).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench examples
exec .venv/bin/python -m pytest -n 2 --dist loadgroup -q "$@"
