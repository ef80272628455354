"""Helpers for the complexity tests (issue 24): an embedded server in the test's own process, so
that the steps one operation takes can be counted, not timed.

A test runs the same operation against two sizes of state (consumers, pending acks, waiting
requests, subscriptions, timers) and asserts that the counted steps per operation do not grow
with it. Steps are counted by wrapping methods of the engine's classes for the duration of the
test (:func:`count_calls`) or read from the counters the structures keep themselves.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from pyjetstream.server.server import Server


@contextlib.asynccontextmanager
async def embedded(**options: Any) -> AsyncIterator[Server]:
    """An embedded server with JetStream, started in this event loop."""
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(port=-1, jetstream=True, store_dir=tmp, host="127.0.0.1", **options)
        await server.start()
        try:
            yield server
        finally:
            await server.shutdown()


@contextlib.contextmanager
def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, *names: str) -> Iterator[collections.Counter[str]]:
    """Count the calls of ``owner``'s ``names`` while the block runs: a class's methods (any
    instance), or a module's functions as the code of that module calls them by name."""
    counts: collections.Counter[str] = collections.Counter()
    with monkeypatch.context() as m:
        for name in names:
            original = getattr(owner, name)

            def wrapper(*args: Any, __name: str = name, __original: Any = original, **kwargs: Any) -> Any:
                counts[__name] += 1
                return __original(*args, **kwargs)

            functools.update_wrapper(wrapper, original)
            m.setattr(owner, name, wrapper)
        yield counts


def pub_frame(subject: str, payload: bytes, hdr: bytes = b"") -> bytes:
    """A PUB frame (HPUB with ``hdr``), no reply."""
    if not hdr:
        return b"PUB %s %d\r\n%s\r\n" % (subject.encode(), len(payload), payload)
    return b"HPUB %s %d %d\r\n%s%s\r\n" % (subject.encode(), len(hdr), len(hdr) + len(payload), hdr, payload)


async def publish_in_one_write(server: Server, frames: list[bytes]) -> None:
    """``frames`` (PUBs, no reply) written at once on a raw connection: one client read, or a few."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    await reader.readline()  # INFO
    writer.write(b'CONNECT {"verbose":false,"headers":true}\r\n' + b"".join(frames) + b"PING\r\n")
    await writer.drain()
    while not (await reader.readline()).startswith(b"PONG"):
        pass
    writer.close()
