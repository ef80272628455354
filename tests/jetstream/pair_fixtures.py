"""Fixtures for the stream tests: long-lived pairs of targets (ours, nats-server) for differential cases.

Imported by the test modules that use them (not a conftest: other suites share tests/jetstream/).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target


@pytest.fixture(scope="module")
def target_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Our server and nats-server side by side, shared by a module's differential cases."""
    base = tmp_path_factory.mktemp("pair")
    started: dict[str, Target] = {}
    try:
        for kind in (NATS_SERVER, EMBEDDED):
            started[kind] = make_target(kind, base / kind)
        yield started
    finally:
        for target in started.values():
            target.stop()


@pytest.fixture(scope="module")
def domain_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Both targets with ``jetstream { domain: hub }``."""
    base = tmp_path_factory.mktemp("domain")
    started: dict[str, Target] = {}
    try:
        for kind in (NATS_SERVER, EMBEDDED):
            started[kind] = make_target(kind, base / kind, jetstream_settings={"domain": "hub"})
        yield started
    finally:
        for target in started.values():
            target.stop()
