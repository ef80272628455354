#!/usr/bin/env bash
# Installs everything, then runs the main job: the end-to-end pipeline on the embedded server and
# local Spark (events -> JetStream -> Structured Streaming windowed totals -> a stream and a KV bucket).
# Extra arguments go to the job, e.g. --servers nats://host:4222 to run it against a nats-server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pyjetstream.pipeline "$@"
