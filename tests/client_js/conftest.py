"""Fixtures for the JetStream client tests: a connection and a JetStream context per server kind."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from tests.support.targets import Target

from pyjetstream.client import Client, connect
from pyjetstream.client.jetstream import JetStream, jetstream


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until it is true (never a bare sleep standing in for a condition)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


async def wait_for(
    check: Callable[[], Awaitable[bool]], timeout: float = 10.0, what: str = "condition"
) -> None:
    """Poll an async ``check`` until it returns true."""
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


@pytest.fixture
async def nc(server: Target) -> AsyncIterator[Client]:
    client = await connect(server.url, reconnect_time_wait=0.2, max_reconnect_attempts=-1)
    yield client
    await client.close()


@pytest.fixture
def js(nc: Client) -> JetStream:
    return jetstream(nc)
