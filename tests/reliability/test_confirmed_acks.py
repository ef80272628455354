"""A confirmed ack survives ``kill -9`` (issue #27): the reply to an ack that asks for one
(``ack_sync``, nats.go's double ack) leaves only once the consumer's state holding the ack is
written, and the acks read in one loop turn share that write (group commit).

Embedded only: this is where we go beyond nats-server 2.15.1, whose ``updateAcks`` answers at once
and whose ``flushLoop`` writes the state up to 100 ms later, so an ack it confirmed just before a
crash is redelivered after it (scripts/crash_loop.py measures both servers side by side)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import nats
import pytest
from tests.support.targets import EMBEDDED, Target, make_target

from pyjetstream.client import connect
from pyjetstream.server.jetstream.store.consumer_store import decode_consumer_state_gen

TIMEOUT = 20.0


async def _consumer_info(url: str, stream: str, name: str) -> Any:
    nc = await nats.connect(url)
    try:
        return await nc.jetstream(timeout=TIMEOUT).consumer_info(stream, name)
    finally:
        await nc.close()


def _last_write(target: Target, stream: str, consumer: str) -> int:
    """The generation of the consumer's newest state write, read from its slot files."""
    slots = target.store_dir.rglob(f"streams/{stream}/obs/{consumer}/o.dat*")
    gens = [decode_consumer_state_gen(p.read_bytes())[1] for p in slots]
    return max(gens, default=0)


@pytest.mark.parametrize("sync", ["", "always"])
async def test_an_ack_confirmed_just_before_kill_9_is_kept(tmp_path: Path, sync: str) -> None:
    """With ``sync_interval: always`` the write is fsynced before the reply; other state (the
    deliveries, plain acks) is written lazily then too, as nats-server's flushLoop does."""
    settings = {"jetstream_settings": {"sync_interval": sync}} if sync else {}
    target = make_target(EMBEDDED, tmp_path / "srv", **settings)
    try:
        nc = await nats.connect(target.url)
        js = nc.jetstream(timeout=TIMEOUT)
        await js.add_stream(name="S", subjects=["s"])
        for i in range(30):
            await js.publish("s", b"%d" % i)
        sub = await js.pull_subscribe("s", "C")
        msgs = await sub.fetch(30, timeout=TIMEOUT)
        for m in msgs[:20]:
            await m.ack_sync(timeout=TIMEOUT)
        # Confirmed: kill at once, before any timed write (the old code wrote 100 ms later).
        target.kill()
        await nc.close()
        target.start()
        info = await _consumer_info(target.url, "S", "C")
        assert info.ack_floor.stream_seq == 20
        assert info.num_ack_pending + info.num_pending == 10
    finally:
        target.stop()


async def test_acks_read_together_share_one_state_write(tmp_path: Path) -> None:
    """Step count, not time: 200 acks with replies sent in one write cost a handful of state
    writes (one per loop turn that read some of them), not 200."""
    target = make_target(EMBEDDED, tmp_path / "srv")
    try:
        nc = await connect(target.url)
        js = await nats.connect(target.url)
        jsc = js.jetstream(timeout=TIMEOUT)
        await jsc.add_stream(name="S", subjects=["s"])
        for i in range(200):
            await jsc.publish("s", b"%d" % i)
        await jsc.add_consumer("S", durable_name="C", ack_policy="explicit")
        msgs = await (await jsc.pull_subscribe_bind("C", stream="S")).fetch(200, timeout=TIMEOUT)
        assert len(msgs) == 200
        confirms = nc.new_inbox()
        got = asyncio.Event()
        count = 0

        def on_confirm(_msg: Any) -> None:
            nonlocal count
            count += 1
            if count == 200:
                got.set()

        await nc.subscribe(confirms, cb=on_confirm)
        await nc.flush()
        before = _last_write(target, "S", "C")
        for m in msgs:
            nc.publish_nowait(m.reply, b"+ACK", reply=confirms)
        await asyncio.wait_for(got.wait(), TIMEOUT)
        writes = _last_write(target, "S", "C") - before
        assert 1 <= writes <= 5, writes
        info = await _consumer_info(target.url, "S", "C")
        assert info.ack_floor.stream_seq == 200
        await nc.close()
        await js.close()
    finally:
        target.stop()


async def test_memory_stream_acks_are_answered_at_once(tmp_path: Path) -> None:
    """Nothing is written for a memory stream's consumer: its ack replies do not wait."""
    target = make_target(EMBEDDED, tmp_path / "srv")
    try:
        nc = await nats.connect(target.url)
        js = nc.jetstream(timeout=TIMEOUT)
        await js.add_stream(name="M", subjects=["m"], storage="memory")
        await js.publish("m", b"x")
        sub = await js.pull_subscribe("m", "C")
        (m,) = await sub.fetch(1, timeout=TIMEOUT)
        await m.ack_sync(timeout=TIMEOUT)
        assert (await _consumer_info(target.url, "M", "C")).ack_floor.stream_seq == 1
        await nc.close()
    finally:
        target.stop()


@pytest.mark.parametrize("sync", ["", "always"])
async def test_journaled_acks_confirmed_before_kill_9_are_kept(tmp_path: Path, sync: str) -> None:
    """From 4,096 pending acks a write is the changes since the last one, appended to the
    consumer's journal (``o.jnl``): acks confirmed that way survive ``kill -9`` as well, read back
    from the newest slot and the journal after it."""
    settings = {"jetstream_settings": {"sync_interval": sync}} if sync else {}
    target = make_target(EMBEDDED, tmp_path / "srv", **settings)
    n = 5000
    try:
        nc = await connect(target.url)
        js = await nats.connect(target.url)
        jsc = js.jetstream(timeout=TIMEOUT)
        await jsc.add_stream(name="S", subjects=["s"])
        for i in range(n):
            nc.publish_nowait("s", b"%d" % i)
        await nc.flush()
        for _ in range(200):
            if (await jsc.stream_info("S")).state.messages == n:
                break
            await asyncio.sleep(0.05)
        await jsc.add_consumer("S", durable_name="C", ack_policy="explicit", ack_wait=600, max_ack_pending=-1)
        psub = await jsc.pull_subscribe_bind("C", stream="S")
        msgs: list[Any] = []
        while len(msgs) < n:
            msgs += await psub.fetch(n - len(msgs), timeout=TIMEOUT)

        def delivered_written() -> int:  # (the whole state written by a timed write: the journal follows it)
            slots = target.store_dir.rglob("streams/S/obs/C/o.dat*")
            return max((decode_consumer_state_gen(p.read_bytes())[0].delivered.stream_seq for p in slots), default=0)

        for _ in range(400):
            if delivered_written() == n:
                break
            await asyncio.sleep(0.05)
        acked = msgs[1::50]
        for m in acked:
            await m.ack_sync(timeout=TIMEOUT)
        journal = next(target.store_dir.rglob("streams/S/obs/C/o.jnl"))
        assert journal.stat().st_size > 0
        target.kill()
        await nc.close()
        await js.close()
        target.start()
        info = await _consumer_info(target.url, "S", "C")
        assert info.num_ack_pending == n - len(acked)
        assert info.delivered.stream_seq == n
    finally:
        target.stop()
