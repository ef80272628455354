"""Fixtures for the core client tests: a connected client per server kind, and a polling helper."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import pytest
from tests.support.targets import Target

from pyjetstream.client import Client, connect


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true (never a bare sleep standing in for a condition)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
async def nc(server: Target) -> AsyncIterator[Client]:
    client = await connect(server.url)
    yield client
    await client.close()


@pytest.fixture
async def nc2(server: Target) -> AsyncIterator[Client]:
    """A second, independent connection to the same server."""
    client = await connect(server.url)
    yield client
    await client.close()
