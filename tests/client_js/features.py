"""Skip a test on the embedded server while it lacks a 2.11+ feature (never on nats-server)."""

from __future__ import annotations

import pytest
from tests.support.targets import EMBEDDED, Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.jetstream import JetStream


async def needs(js: JetStream, server: Target, *features: Feature) -> None:
    """Skip on the embedded server when its API level is below a feature's: the reason names the
    missing server feature. Against nats-server the test always runs."""
    if server.kind != EMBEDDED:
        return
    level = await js.api_level()
    missing = [f for f in features if f.level > level]
    if missing:
        names = ", ".join(f"{f.description} (API level {f.level})" for f in missing)
        pytest.skip(f"embedded server lacks {names}; it reports API level {level}")

