"""Fixtures for the dashboard tests: embedded servers with monitoring (read-only and with
``dashboard_write``) and ONE headless Chromium (Debian's ``/usr/bin/chromium``
driven by Playwright; scripts/setup.sh installs both) for the browser tests, each test on a fresh
page that fails the test on any console error or uncaught exception."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pyjetstream as pjs
from pyjetstream.server.thread import ServerThread

CHROMIUM = "/usr/bin/chromium"
#: Without the background-networking flags Chromium dials out at start, which a closed network refuses.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]

# One browser for the session: the browser tests share a worker.
pytestmark = pytest.mark.xdist_group("dashboard")


class Dash:
    """An embedded server with JetStream and monitoring, and a blocking client to make data."""

    def __init__(self, tmp: Path, **options: Any) -> None:
        self.thread = ServerThread(jetstream=True, store_dir=str(tmp), port=-1, http_port=-1, host="127.0.0.1",
                                   **options)  # fmt: skip
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.thread.http_port}"
        self.nc: Any = pjs.sync.connect(self.thread.url)
        self.js: Any = self.nc.jetstream()

    def close(self) -> None:
        self.nc.close()
        self.thread.stop()


@pytest.fixture(scope="module")
def dash(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dash]:
    server = Dash(tmp_path_factory.mktemp("dash"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def dash_write(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dash]:
    server = Dash(tmp_path_factory.mktemp("dashw"), dashboard_write=True)
    yield server
    server.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests (they are one module). Not session-wide: Playwright's sync
    API keeps its event loop marked running on this thread while it is open, so a later test of the
    same worker that runs asyncio (pytest-asyncio, ``asyncio.run``) would fail."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: scripts/setup.sh installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is not installed (scripts/setup.sh installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    profile = tempfile.mkdtemp(prefix="pjs-chromium-")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS,
                                                        headless=True, viewport={"width": 1400, "height": 900})  # fmt: skip
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    """A fresh page; the test fails on any console error, uncaught exception or dialog it did not expect."""
    page = browser.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda msg: problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None,
    )
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.problems = problems
    page.set_default_timeout(15_000)
    yield page
    page.close()
    assert not problems, problems
