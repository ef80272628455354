"""A consumer leaving an interest stream: the messages only it still needed go, and the check looks
only at those — above its ack floor, not acked (`Stream.remove_consumer`) — not at every message of
the stream. Counted (`Stream.interest_checked`) at two sizes, never timed; the bounded walk and the
whole-stream walk (`stream.INTEREST_CHECK_FROM_FLOOR` off) leave the same messages (differential,
embedded in-process: the counters and the switch are the server's own)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import embedded

from pyjetstream.server.jetstream import interest_check
from pyjetstream.server.jetstream import stream as stream_module

FILTERS: dict[str, dict[str, Any]] = {
    "a": {},
    "b": {"filter_subject": "s.1"},
    "c": {"filter_subject": "s.*"},
    "d": {"filter_subjects": ["s.2", "s.3"]},
    "e": {"filter_subject": "s.4"},
    "f": {},
}


async def _scenario(seed: int, n: int, caught_up: float = 0.0) -> list[dict[str, Any]]:
    """The stream's state after each consumer delete of a seeded scenario (``caught_up``: the
    chance that a consumer took and acked everything, so that the others' ack floors compact)."""
    rng = random.Random(seed)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], retention="interest", storage="memory")
            for name, cfg in FILTERS.items():
                resp = await nc.add_consumer("S", name, durable_name=name, ack_policy="explicit", **cfg)
                assert "error" not in resp, resp
            for i in range(n):
                ack = await nc.publish_js(f"s.{rng.randrange(6)}", b"x%d" % i)
                assert "error" not in ack, ack
            for name in FILTERS:
                inbox = nc.new_inbox()
                sub = nc.subscribe(inbox)
                pending = (await nc.consumer_info("S", name))["num_pending"]
                whole = rng.random() < caught_up  # all taken and acked: its ack floor at the end
                batch = pending if whole else rng.randrange(pending + 1)
                if batch:
                    nc.pull("S", name, inbox, {"batch": batch, "expires": 5_000_000_000})
                    msgs = await sub.collect(batch)
                    acked = 0
                    for m in msgs:
                        if whole or rng.random() < 0.7:
                            nc.publish(m.reply, b"+ACK")
                            acked += 1

                    async def done(name: str = name, want: int = batch - acked) -> bool:
                        return bool((await nc.consumer_info("S", name))["num_ack_pending"] == want)

                    await wait_for(done)
                sub.unsubscribe()
            states = []
            order = list(FILTERS)
            rng.shuffle(order)
            for name in order[:-1]:
                resp = await nc.api(f"$JS.API.CONSUMER.DELETE.S.{name}")
                assert resp.get("success"), resp
                info = await nc.api("$JS.API.STREAM.INFO.S", {"deleted_details": True})
                states.append({k: info["state"].get(k) for k in ("messages", "first_seq", "last_seq", "deleted")})
            return states
        finally:
            await nc.close()


@pytest.mark.parametrize(("seed", "caught_up"), [(1, 0.0), (2, 0.0), (3, 0.0), (4, 0.0), (5, 0.6), (6, 0.6), (7, 0.8)])
async def test_bounded_walk_leaves_what_the_whole_walk_leaves(
    monkeypatch: pytest.MonkeyPatch, seed: int, caught_up: float
) -> None:
    bounded = await _scenario(seed, 120, caught_up)
    monkeypatch.setattr(stream_module, "INTEREST_CHECK_FROM_FLOOR", False)
    whole = await _scenario(seed, 120, caught_up)
    assert bounded == whole


async def _delete_checks(n: int) -> tuple[int, int]:
    """Messages the interest check looks at when a caught-up consumer (everything acked) leaves a
    stream of ``n`` messages that another still needs, and when a lagging one (nothing acked) does."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], retention="interest", storage="memory")
            for name in ("up", "lag", "other"):
                resp = await nc.add_consumer("S", name, durable_name=name, ack_policy="explicit")
                assert "error" not in resp, resp
            await nc.publish_many("s.1", n)
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox)
            nc.pull("S", "up", inbox, {"batch": n, "expires": 5_000_000_000})
            for m in await sub.collect(n):
                nc.publish(m.reply, b"+ACK")

            async def caught_up() -> bool:
                return bool((await nc.consumer_info("S", "up"))["ack_floor"]["stream_seq"] == n)

            await wait_for(caught_up)
            stream = server.jetstream.streams["S"]
            counts = []
            for name in ("up", "lag"):
                before = stream.interest_checked
                resp = await nc.api(f"$JS.API.CONSUMER.DELETE.S.{name}")
                assert resp.get("success"), resp
                counts.append(stream.interest_checked - before)
            assert (await nc.stream_info("S"))["state"]["messages"] == n  # "other" still needs them all
            return counts[0], counts[1]
        finally:
            await nc.close()


async def test_a_caught_up_consumer_leaves_without_a_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The delete of a consumer that acked everything looks at no message at 50 and at 500; one
    that acked nothing looks at none either, "other" (unfiltered, nothing taken) needing them all
    (`interest_check.BOUND_BY_COVERING`); without that bound at each message it still needed (the
    whole walk's count)."""
    assert await _delete_checks(50) == (0, 0)
    assert await _delete_checks(500) == (0, 0)
    monkeypatch.setattr(interest_check, "BOUND_BY_COVERING", False)
    assert await _delete_checks(50) == (0, 50)
    assert await _delete_checks(500) == (0, 500)
