"""Fixtures for the core-server tests: one plain (JetStream off) server per target and module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from tests.support.targets import KINDS, Target, make_target


@pytest.fixture(scope="module", params=KINDS)
def core_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    """A server without JetStream, shared by the tests of one module, for each target."""
    target = make_target(request.param, tmp_path_factory.mktemp(f"core-{request.param}"), jetstream=False)
    yield target
    target.stop()
