"""A consumer's state files stay open between the writes its event loop makes
(``_fileutil.HotFiles``): a confirmed ack (issue #27) writes the state before its reply, and
opening the slot by its path cost a quarter of that write. Step counts, not time: the opens of
the state files do not grow with the confirmed acks; the descriptors kept are bounded and closed
when their consumer stops or goes; and on = off (``KEEP_HOT_FILES_OPEN``): the same state after
a restart, a consumer created again under the same name never written through its old files."""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.support.fs_calls import fs_calls

from pyjetstream.server.jetstream.store import _fileutil
from pyjetstream.server.server import Server

STATE_FILES = ("o.dat", "o.dat.b", "o.jnl")


@asynccontextmanager
async def _running(store_dir: str, messages: int = 0) -> AsyncIterator[RawClient]:
    """A server on ``store_dir`` and a client of it (with stream S of ``messages`` new messages
    on ``s.x`` when ``messages``); both stopped after."""
    server = Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1")
    await server.start()
    nc = await RawClient.connect(server.client_url)
    try:
        if messages:
            await nc.add_stream("S", ["s.>"], storage="file")
            await nc.publish_many("s.x", messages)
        yield nc
    finally:
        await nc.close()
        await server.shutdown()


def _open_state_files(root: str) -> int:
    """This process's descriptors open on a consumer state file under ``root``."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root) and os.path.basename(target.removesuffix(" (deleted)")) in STATE_FILES:
            n += 1
    return n


async def _confirmed_acks(nc: RawClient, stream: str, consumer: str, n: int) -> None:
    """Fetch one, ack it with a reply, await the confirmation: ``n`` times (the serial shape)."""
    msgs, confirms = nc.subscribe(nc.new_inbox()), nc.subscribe(nc.new_inbox())
    for _ in range(n):
        nc.pull(stream, consumer, msgs.subject, {"batch": 1})
        msg = await msgs.next()
        nc.publish(_reply_of(msg), b"+ACK", confirms.subject)
        await confirms.next()
    msgs.unsubscribe()
    confirms.unsubscribe()


def _reply_of(msg: Any) -> str:
    reply: str = msg.reply
    assert reply.startswith("$JS.ACK."), reply
    return reply


async def _acked_state(store: str, n: int, consumers: int = 1) -> list[dict[str, Any]]:
    """Publish ``n`` messages, confirm-ack each through ``consumers`` durables in turn, restart;
    the consumers' states as the restarted server reads them."""
    async with _running(store, n) as nc:
        for c in range(consumers):
            resp = await nc.add_consumer("S", f"c{c}", durable_name=f"c{c}")
            assert "error" not in resp, resp
        for c in range(consumers):
            await _confirmed_acks(nc, "S", f"c{c}", n)
    async with _running(store) as nc:
        infos = [await nc.consumer_info("S", f"c{c}") for c in range(consumers)]
    return [{k: i[k] for k in ("delivered", "ack_floor", "num_ack_pending", "num_pending")} for i in infos]


async def _state_file_opens(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """The opens of state files while one consumer takes ``n`` confirmed acks."""
    return (await _state_file_steps(monkeypatch, n))[0]


async def _state_file_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, int]:
    """The opens of state files while one consumer takes ``n`` confirmed acks, and the times
    `HotFiles.fd` asked whether its thread runs an event loop (a ``getpid`` system call each)."""
    asked = 0
    running_loop = _fileutil.asyncio._get_running_loop

    def counted() -> Any:
        nonlocal asked
        asked += 1
        return running_loop()

    with tempfile.TemporaryDirectory() as tmp:
        async with _running(tmp, n) as nc:
            await nc.add_consumer("S", "c", durable_name="c")
            with fs_calls(monkeypatch, tmp, ["open"]) as calls:
                monkeypatch.setattr(_fileutil.asyncio, "_get_running_loop", counted)
                await _confirmed_acks(nc, "S", "c", n)
                monkeypatch.setattr(_fileutil.asyncio, "_get_running_loop", running_loop)
            return calls["open"], asked


async def test_confirmed_acks_open_the_state_files_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """10 or 100 confirmed acks: each written before its reply, the two slots opened once each
    (switched off: an open per write, growing with the acks)."""
    small, asked_small = await _state_file_steps(monkeypatch, 10)
    large, asked_large = await _state_file_steps(monkeypatch, 100)
    assert small == large <= 2, (small, large)
    assert asked_small == asked_large == small, (asked_small, asked_large)  # (asked at an open, not per write)
    monkeypatch.setattr(_fileutil, "KEEP_HOT_FILES_OPEN", False)
    off_small, off_large = await _state_file_opens(monkeypatch, 10), await _state_file_opens(monkeypatch, 100)
    assert off_small >= 10 and off_large >= 100, (off_small, off_large)


@pytest.mark.parametrize("keep", [True, False])
async def test_kept_open_or_not_the_state_restored_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: bool
) -> None:
    """The differential: the states a restart reads after confirmed acks through 6 consumers
    (with at most 4 descriptors kept, so some are closed and opened again) are what they
    were acked to, with the switch on or off."""
    monkeypatch.setattr(_fileutil, "KEEP_HOT_FILES_OPEN", keep)
    monkeypatch.setattr(_fileutil, "HOT_FILES_MAX", 4)
    states = await _acked_state(str(tmp_path), 5, consumers=6)
    for st in states:
        assert st["ack_floor"]["stream_seq"] == 5 and st["delivered"]["stream_seq"] == 5, st
        assert st["num_ack_pending"] == 0 and st["num_pending"] == 0, st
    assert _open_state_files(str(tmp_path)) == 0


async def test_descriptors_are_bounded_and_closed_with_their_consumers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most HOT_FILES_MAX kept however many consumers write; none left once the consumers
    are deleted, or their stream, or the server stops; a consumer deleted and created again
    under its name starts from nothing (its old files, kept open, are never written again)."""
    monkeypatch.setattr(_fileutil, "HOT_FILES_MAX", 4)
    root = str(tmp_path)
    async with _running(root, 3) as nc:
        await nc.add_stream("T", ["t.>"], storage="file")
        await nc.publish_many("t.x", 3)
        for c in range(6):
            await nc.add_consumer("S", f"c{c}", durable_name=f"c{c}")
            await _confirmed_acks(nc, "S", f"c{c}", 2)
        assert 1 <= _open_state_files(root) <= 4
        for c in range(6):
            resp = await nc.api(f"$JS.API.CONSUMER.DELETE.S.c{c}")
            assert resp.get("success"), resp
        assert _open_state_files(root) == 0
        await nc.add_consumer("S", "c0", durable_name="c0")
        info = await nc.consumer_info("S", "c0")
        assert info["ack_floor"]["stream_seq"] == 0 and info["num_pending"] == 3, info
        await _confirmed_acks(nc, "S", "c0", 1)
        await nc.add_consumer("T", "d", durable_name="d")
        await _confirmed_acks(nc, "T", "d", 1)
        assert _open_state_files(root) == 2
        resp = await nc.api("$JS.API.STREAM.DELETE.T")
        assert resp.get("success"), resp
        assert _open_state_files(root) == 1
    assert _open_state_files(root) == 0
    async with _running(root) as nc:
        info = await nc.consumer_info("S", "c0")
        assert info["ack_floor"]["stream_seq"] == 1 and info["num_pending"] == 2, info
