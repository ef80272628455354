"""A ``max_age`` stream's expiry beside many consumers: a pass runs at most every 250 ms (nats-server
``resetAgeChk``'s floor), and tells only the consumers with pending acks below the new first
message (`stream.EXPIRY_SKIPS_IDLE`): one that is behind with none keeps its position, as
nats-server's does. Counted in process (passes, consumers told) at two numbers of consumers, never
timed; the position a lagging consumer keeps and what it reads next, on both targets."""

from __future__ import annotations

import asyncio

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import embedded
from tests.support.targets import Target

from pyjetstream.server.jetstream import stream as stream_module
from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.stream import Stream

SECOND = 1_000_000_000


async def _expiry_steps(consumers: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(expiry passes, consumers told) while 400 messages published over ~0.4 s into a stream
    with ``max_age`` 0.5 s expire, beside ``consumers`` durables that took nothing."""
    counts = {"passes": 0, "told": 0}
    expire, purged = Stream._expire, Consumer.on_stream_purged

    def counting_expire(self: Stream) -> None:
        counts["passes"] += 1
        expire(self)

    def counting_purged(self: Consumer, *args: object, **kwargs: object) -> None:
        counts["told"] += 1
        purged(self, *args, **kwargs)  # type: ignore[arg-type]

    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], max_age=SECOND // 2, storage="memory")
            for i in range(consumers):
                resp = await nc.add_consumer("S", f"c{i}", durable_name=f"c{i}", ack_policy="explicit")
                assert "error" not in resp, resp
            monkeypatch.setattr(Stream, "_expire", counting_expire)
            monkeypatch.setattr(Consumer, "on_stream_purged", counting_purged)
            for _ in range(40):
                for j in range(10):
                    nc.publish(f"s.{j}", b"x")
                await nc.flush()
                await asyncio.sleep(0.01)

            async def empty() -> bool:
                return bool((await nc.stream_info("S"))["state"]["messages"] == 0)

            await wait_for(empty, timeout=10)
            monkeypatch.undo()
            return counts["passes"], counts["told"]
        finally:
            await nc.close()


async def test_an_expiry_pass_tells_no_idle_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside 10 and 100 lagging consumers: no consumer told, a handful of passes (one a
    message expiring without the floor); with `EXPIRY_SKIPS_IDLE` off each pass tells all."""
    small = await _expiry_steps(10, monkeypatch)
    large = await _expiry_steps(100, monkeypatch)
    assert small[1] == large[1] == 0
    assert small[0] <= 8 and large[0] <= 8, (small, large)
    monkeypatch.setattr(stream_module, "EXPIRY_SKIPS_IDLE", False)
    passes, told = await _expiry_steps(10, monkeypatch)
    assert told >= 10 * (passes - 2) > 0


async def test_a_lagging_consumer_keeps_its_position_through_expiry(server: Target) -> None:
    """nats-server moves no consumer for an expiry: one that took nothing reports nothing
    delivered or acked after every message expired, and reads what comes next."""
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"], max_age=SECOND)
        await client.add_consumer("S", "C", durable_name="C", ack_policy="explicit")
        await client.publish_many("s.a", 5)

        async def expired() -> bool:
            return bool((await client.stream_info("S"))["state"]["messages"] == 0)

        await wait_for(expired, timeout=10)
        info = await client.consumer_info("S", "C")
        assert (info["delivered"]["stream_seq"], info["ack_floor"]["stream_seq"]) == (0, 0)
        assert (info["num_pending"], info["num_ack_pending"]) == (0, 0)
        await client.publish_js("s.a", b"next")
        inbox = client.new_inbox()
        sub = client.subscribe(inbox)
        client.pull("S", "C", inbox, {"batch": 1, "expires": 2 * SECOND})
        (msg,) = await sub.collect(1)
        assert (msg.stream_seq, msg.consumer_seq, msg.data) == (6, 1, b"next")
    finally:
        await client.close()
