#!/usr/bin/env bash
# Installs everything, builds the docs site, then runs the whole test suite (both targets: embedded server and nats-server).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench examples
# the documentation site, warnings as errors (broken links, snippets, docstrings), so it cannot rot
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
.venv/bin/mypy  # config in pyproject.toml: strict on protocol/, api/ and the stores
exec .venv/bin/python -m pytest -n 2 --dist loadgroup -q "$@"
