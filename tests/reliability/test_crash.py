"""Crash test: acknowledged publishes survive repeated ``kill -9``, in order, without duplicates.

Several publishers (one nats-py connection each) publish to a file stream, one message in flight
per publisher, each with a ``Nats-Msg-Id``; a publish that times out (the server died) is retried
with the same id until acknowledged, as an exactly-once client does. Meanwhile the server is
killed with SIGKILL and restarted several times. Afterwards every acknowledged message must be
at its acknowledged sequence with its payload, each publisher's messages in publish order, each
id exactly once, and recovery must report nothing lost. Runs on both targets (nats-server is the
control); bounded well under a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time

import nats
import pytest
from nats.js.errors import APIError
from tests.support.targets import Target

PUBLISHERS = 4
KILLS = 4
RUN_SECONDS = 1.2  # between kills
DEADLINE = 45.0


async def _publisher(url: str, client: int, acked: dict[str, int], stop: asyncio.Event) -> None:
    nc = await nats.connect(
        url,
        reconnect_time_wait=0.05,
        max_reconnect_attempts=-1,
        connect_timeout=2,
        allow_reconnect=True,
    )
    js = nc.jetstream(timeout=1.0)
    i = 0
    try:
        while not stop.is_set():
            msg_id = f"c{client}-{i}"
            while True:  # retry the same id until the server acknowledges it
                try:
                    ack = await js.publish(
                        f"crash.{client}", msg_id.encode(), headers={"Nats-Msg-Id": msg_id}
                    )
                    break
                except (TimeoutError, nats.errors.TimeoutError, nats.errors.NoRespondersError):
                    await asyncio.sleep(0.02)
                except (nats.errors.ConnectionClosedError, nats.errors.ConnectionReconnectingError):
                    await asyncio.sleep(0.05)
                except APIError:  # JetStream still starting up after a restart
                    await asyncio.sleep(0.05)
            acked[msg_id] = ack.seq
            i += 1
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def _progress(acked: dict[str, int], count: int) -> None:
    """Wait until the publishers (reconnected) have had ``count`` messages acknowledged."""
    deadline = time.monotonic() + 20
    while len(acked) < count:
        assert time.monotonic() < deadline, "publishers made no progress after a restart"
        await asyncio.sleep(0.02)


async def _wait_api(url: str) -> None:
    deadline = time.monotonic() + 20
    while True:
        try:
            nc = await nats.connect(url, allow_reconnect=False, connect_timeout=1)
            try:
                await nc.jetstream().account_info()
                return
            finally:
                await nc.close()
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


@pytest.mark.slow
async def test_acknowledged_messages_survive_kill_9(server: Target) -> None:
    started = time.monotonic()
    nc = await nats.connect(server.url)
    await nc.jetstream().add_stream(name="CRASH", subjects=["crash.*"])
    await nc.close()

    acked: dict[str, int] = {}
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_publisher(server.url, c, acked, stop)) for c in range(PUBLISHERS)]
    rng = random.Random(7)
    try:
        for _ in range(KILLS):
            await _progress(acked, len(acked) + 50)
            await asyncio.sleep(RUN_SECONDS * rng.uniform(0.3, 1.0))
            server.kill()
            await asyncio.sleep(rng.uniform(0.0, 0.2))
            await asyncio.to_thread(server.start)
            assert time.monotonic() - started < DEADLINE
        await asyncio.sleep(RUN_SECONDS)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*tasks), 30)

    # One more kill after the last acknowledgement: nothing acknowledged may be lost.
    server.kill()
    await asyncio.to_thread(server.start)
    await _wait_api(server.url)

    nc = await nats.connect(server.url)
    try:
        js = nc.jetstream(timeout=10)
        info = await js.stream_info("CRASH")
        state = info.state
        assert state.lost is None, f"recovery reported lost data: {state.lost}"
        assert state.messages == len(acked), "stored messages differ from acknowledged ones (duplicates?)"
        assert state.first_seq == 1 and state.last_seq == len(acked)

        by_seq = {seq: msg_id for msg_id, seq in acked.items()}
        assert len(by_seq) == len(acked), "two ids acknowledged at one sequence"
        last_index = [-1] * PUBLISHERS
        msgs = []
        for lo in range(1, state.last_seq + 1, 256):  # pipelined reads, 256 at a time
            hi = min(lo + 256, state.last_seq + 1)
            msgs += await asyncio.gather(*(js.get_msg("CRASH", seq) for seq in range(lo, hi)))
        for seq, msg in enumerate(msgs, start=1):
            assert msg.seq == seq and msg.data is not None
            msg_id = msg.data.decode()
            assert by_seq[seq] == msg_id, f"seq {seq}: stored {msg_id!r}, acknowledged {by_seq.get(seq)!r}"
            assert msg.headers == {"Nats-Msg-Id": msg_id}
            client, index = msg_id[1:].split("-")
            assert msg.subject == f"crash.{client}"
            assert int(index) == last_index[int(client)] + 1, f"{msg_id} out of order"
            last_index[int(client)] = int(index)
    finally:
        await nc.close()
    assert time.monotonic() - started < DEADLINE + 15
