"""Fixtures for the stream tests: long-lived pairs of targets (ours, nats-server) for differential cases.

Imported by the test modules that use them (not a conftest: other suites share tests/jetstream/).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

#: Server limits of ``limits_pair``: ``jetstream { max_file_store: 1 MiB, max_memory_store: 512 KiB }``.
LIMITS = {"max_file_store": 1 << 20, "max_memory_store": 1 << 19}


def _pair(base: Path, **settings: Any) -> Iterator[dict[str, Target]]:
    started: dict[str, Target] = {}
    try:
        for kind in (NATS_SERVER, EMBEDDED):
            started[kind] = make_target(kind, base / kind, **settings)
        yield started
    finally:
        for target in started.values():
            target.stop()


@pytest.fixture(scope="module")
def target_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Our server and nats-server side by side, shared by a module's differential cases."""
    yield from _pair(tmp_path_factory.mktemp("pair"))


@pytest.fixture(scope="module")
def limits_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Both targets with the server storage limits in LIMITS."""
    yield from _pair(tmp_path_factory.mktemp("limits"), jetstream_settings=LIMITS)


@pytest.fixture
def fresh_limits_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """``limits_pair`` started anew for one test: for cases whose answers hang on the server-wide
    reservations, which no reset between cases can vouch for on nats-server (the CI run of
    2026-11-29 11:29Z saw nats-server, after other cases on the same pair, accept a stream its
    reservations should have refused; alone, in any order by hand, it refuses it)."""
    yield from _pair(tmp_path_factory.mktemp("limits"), jetstream_settings=LIMITS)


@pytest.fixture(scope="module")
def domain_pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Both targets with ``jetstream { domain: hub }``."""
    yield from _pair(tmp_path_factory.mktemp("domain"), jetstream_settings={"domain": "hub"})
