#!/usr/bin/env bash
# Installs everything, builds the docs site, then runs the whole test suite (both targets: embedded server and nats-server).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check src tests bench examples
# the documentation site, warnings as errors (broken links, snippets, docstrings), so it cannot rot
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --quiet
.venv/bin/mypy  # config in pyproject.toml: strict on protocol/, api/ and the stores
# The suite runs on the compiled hot modules (tests/test_compiled.py checks that they are in use); then,
# on a whole run, the tests of those modules and of the paths through them again in pure Python
# (PYJETSTREAM_PURE=1), which every other checkout and a failed build run. A build that setup could not
# make (a construct mypyc rejects, a compiler missing) fails here rather than quietly testing pure
# Python twice; PYJETSTREAM_PURE=1 bash scripts/test.sh runs everything in pure Python.
if [ "${PYJETSTREAM_PURE:-0}" = "0" ]; then
  .venv/bin/python scripts/build_compiled.py --check || {
    echo "test: the compiled modules are not in place (setup's build_compiled error is above)" >&2
    exit 1
  }
fi
.venv/bin/python -m pytest -n 2 --dist loadgroup -q "$@"
if [ $# -eq 0 ] && [ "${PYJETSTREAM_PURE:-0}" = "0" ]; then
  echo "test: the pure-Python pass (PYJETSTREAM_PURE=1)"
  PYJETSTREAM_PURE=1 exec .venv/bin/python -m pytest -n 2 --dist loadgroup -q \
    tests/test_compiled.py tests/protocol tests/api/test_samples.py tests/server/test_sublist.py tests/server/test_sublist_acks.py \
    tests/server/test_sublist_inboxes.py tests/server/test_core_messaging.py tests/server/test_protocol_errors.py \
    tests/client/test_pubsub.py tests/client/test_request.py \
    tests/jetstream/test_consumer_push.py tests/jetstream/test_consumer_pull.py tests/jetstream/test_consumer_differential.py
fi
