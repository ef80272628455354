#!/usr/bin/env bash
# Installs everything, then runs the main job on the embedded server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/pyjetstream serve -js "$@"
