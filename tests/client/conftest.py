"""Fixtures for the core client tests: a connected client per server kind, and a polling helper."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.support.targets import EMBEDDED, Target

from pyjetstream.client import Client, connect


async def wait_until(predicate: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    """Poll ``predicate`` until true (never a bare sleep standing in for a condition)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.01)


def read_info(target: Target) -> dict[str, Any]:
    """The INFO a server sends first on a fresh connection (to probe what a target supports)."""
    with socket.create_connection(("127.0.0.1", target.port), timeout=5) as sock:
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"INFO "), data[:100]
    return json.loads(data[5:])


def require_embedded_support(target: Target, feature: str, supported: bool) -> None:
    """Skip when the embedded server does not offer ``feature`` yet (nats-server must always pass)."""
    if not supported and target.kind == EMBEDDED:
        pytest.skip(f"the embedded server does not offer {feature} yet")


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
