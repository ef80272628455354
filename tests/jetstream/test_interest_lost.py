"""What a consumer leaving or reset on an interest stream costs does not grow with the stream
(`interest_check.lost_interest`): a ``CONSUMER.RESET`` looks only at what it skipped (its old ack
floor up to its new start, as nats-server's ``checkStateForInterestStream``), and a walk stops where
a consumer taking every subject the walked one takes needs them all (a lagging consumer deleted or
reset beside others that lag too looks at nothing). Counted (`Stream.interest_checked`: messages
looked at) at two sizes, never timed; the switches (`consumer.RESET_CHECKS_SKIPPED`,
`interest_check.BOUND_BY_COVERING`) off give the same streams (differential, embedded in-process:
the counters and the switches are the server's own)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import embedded

from pyjetstream.server.jetstream import consumer as consumer_module
from pyjetstream.server.jetstream import interest_check

RESET = "$JS.API.CONSUMER.RESET.S."
CONFIGS: dict[str, dict[str, Any]] = {
    "a": {"ack_policy": "explicit"},
    "b": {"ack_policy": "explicit", "filter_subject": "s.1"},
    "c": {"ack_policy": "all", "filter_subject": "s.*"},
    "d": {"ack_policy": "explicit", "filter_subjects": ["s.2", "s.3"]},
    "e": {"ack_policy": "all", "filter_subject": "s.4"},
    "f": {"ack_policy": "explicit", "filter_subjects": ["s.1", "s.4"]},
}


async def _take(nc: RawClient, rng: random.Random, name: str, ack: float) -> None:
    """``name`` fetches some of what it has pending and acks a share of it (``ack``)."""
    pending = (await nc.consumer_info("S", name))["num_pending"]
    batch = pending if rng.random() < 0.5 else rng.randrange(pending + 1)
    if not batch:
        return
    inbox = nc.new_inbox()
    sub = nc.subscribe(inbox)
    nc.pull("S", name, inbox, {"batch": batch, "expires": 5_000_000_000})
    msgs = await sub.collect(batch)
    for m in msgs:
        if rng.random() < ack:
            nc.publish(m.reply, b"+ACK")
    await nc.flush()
    sub.unsubscribe()


async def _state(nc: RawClient) -> dict[str, Any]:
    info = await nc.api("$JS.API.STREAM.INFO.S", {"deleted_details": True})
    return {k: info["state"].get(k) for k in ("messages", "first_seq", "last_seq", "deleted")}


async def _scenario(seed: int, n: int) -> list[Any]:
    """The stream's state after each step of a seeded run of takes, acks, resets (to the ack
    floor, back, forward past the end) and deletes."""
    rng = random.Random(seed)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], retention="interest", storage=rng.choice(["memory", "file"]))
            for name, cfg in CONFIGS.items():
                resp = await nc.add_consumer("S", name, durable_name=name, **cfg)
                assert "error" not in resp, resp
            for i in range(n):
                ack = await nc.publish_js(f"s.{rng.randrange(6)}", b"x%d" % i)
                assert "error" not in ack, ack
            alive = list(CONFIGS)
            states: list[Any] = []
            for _ in range(24):
                name = rng.choice(alive)
                step = rng.random()
                if step < 0.45:
                    await _take(nc, rng, name, rng.choice([0.0, 0.5, 1.0, 1.0]))
                    await nc.flush()
                    await nc.consumer_info("S", name)  # (the acks are in)
                elif step < 0.85:
                    body = rng.choice([b"", b'{"seq":%d}' % rng.randrange(1, n + 20)])
                    reply = await nc.request(RESET + name, body)
                    states.append((name, body, "error" in reply.json()))
                elif len(alive) > 1:
                    alive.remove(name)
                    resp = await nc.api(f"$JS.API.CONSUMER.DELETE.S.{name}")
                    assert resp.get("success"), resp
                states.append(await _state(nc))
            return states
        finally:
            await nc.close()


@pytest.mark.parametrize("seed", range(1, 13))
async def test_bounded_checks_leave_what_the_whole_walks_leave(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    bounded = await _scenario(seed, 150)
    monkeypatch.setattr(consumer_module, "RESET_CHECKS_SKIPPED", False)
    monkeypatch.setattr(interest_check, "BOUND_BY_COVERING", False)
    whole = await _scenario(seed, 150)
    assert bounded == whole
    monkeypatch.setattr(consumer_module, "RESET_CHECKS_SKIPPED", True)
    assert await _scenario(seed, 150) == whole  # (the reset's range, unbounded)


async def _lagging_checks(n: int, forward: int) -> dict[str, int]:
    """Messages looked at, in a stream of ``n`` messages on ``s.1`` with four consumers that took
    nothing (three on ``s.1``, one on ``s.*``): a reset of one to its ack floor, one forward by
    ``forward`` (the others still need those), the delete of one, a reset forward by ``forward``
    of the ``s.*`` one (no other takes all it takes), and the delete of the last taker of the
    first ``forward``."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], retention="interest", storage="file")
            for name, subject in (("lag", "s.1"), ("other", "s.1"), ("gone", "s.1"), ("own", "s.*")):
                cfg = {"durable_name": name, "ack_policy": "explicit", "filter_subject": subject}
                resp = await nc.add_consumer("S", name, **cfg)
                assert "error" not in resp, resp
            await nc.publish_many("s.1", n)
            stream = server.jetstream.streams["S"]
            counts = {}
            for key, subject, body in (
                ("to floor", RESET + "lag", b""),
                ("forward", RESET + "lag", b'{"seq":%d}' % (forward + 1)),
                ("delete", "$JS.API.CONSUMER.DELETE.S.gone", b""),
                ("own forward", RESET + "own", b'{"seq":%d}' % (forward + 1)),
            ):
                before = stream.interest_checked
                reply = await nc.request(subject, body)
                assert "error" not in reply.json(), reply.json()
                counts[key] = stream.interest_checked - before
            assert (await nc.stream_info("S"))["state"]["messages"] == n  # "other" still needs them all

            async def other_gone() -> bool:  # (the last taker of the first ``forward`` leaves)
                return (await nc.stream_info("S"))["state"]["first_seq"] == forward + 1

            before = stream.interest_checked
            assert (await nc.api("$JS.API.CONSUMER.DELETE.S.other")).get("success")
            await wait_for(other_gone)
            counts["last taker gone"] = stream.interest_checked - before
            return counts
        finally:
            await nc.close()


async def test_a_reset_or_delete_beside_lagging_consumers_walks_nothing() -> None:
    """At 100 and at 1,000 messages: a reset to the ack floor, a reset forward, a delete beside
    consumers that lag too look at no message; a reset forward of a consumer nobody covers looks
    at what it skipped (10), not at the stream; the delete of the last taker of the first 10
    compacts them (the others' floors) and looks at none either."""
    want = {"to floor": 0, "forward": 0, "delete": 0, "own forward": 10, "last taker gone": 0}
    assert await _lagging_checks(100, 10) == want
    assert await _lagging_checks(1000, 10) == want


async def test_without_the_switches_the_walks_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    """The counter sees the walks the switches remove: the whole stream per reset, the lag per
    delete."""
    monkeypatch.setattr(consumer_module, "RESET_CHECKS_SKIPPED", False)
    monkeypatch.setattr(interest_check, "BOUND_BY_COVERING", False)
    counts = await _lagging_checks(100, 10)
    assert counts["to floor"] == 100
    assert counts["delete"] == 100
