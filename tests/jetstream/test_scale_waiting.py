"""Issue 24, dimension 6: with many pull requests waiting on one consumer, a delivery and an expiry
cost the same as with few (embedded server, steps counted, not timed).

nats-server walks every waiting request when its delivery loop goes idle (``processWaiting``);
the embedded server's ``WaitQueue`` keeps the requests' deadlines in heaps and a running count of
what they want, so neither a delivery pass nor its timer walks the queue. ``WaitQueue.steps``
counts the requests its walks, heap pops and rebuilds look at; ``process_waiting`` (the full walk,
for info, a full queue, a no_wait request's room) must not run at all here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream.pull_delivery import PullDelivery

SMALL, LARGE = 150, 1500


def _pull_body(expires_s: float) -> bytes:
    return json.dumps({"batch": 1, "expires": int(expires_s * 1e9)}).encode()


async def _steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[float, float]:
    """Steps per delivery to one of ``n`` waiting requests, and per expiry of ``n`` requests."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("W", ["w.>"], storage="memory")
            await _add(nc, "C", n)
            consumer: Any = server.jetstream.streams["W"].consumers["C"]
            sub = nc.subscribe("_W.*")
            for i in range(n):
                nc.publish("$JS.API.CONSUMER.MSG.NEXT.W.C", _pull_body(60), f"_W.{i}")
            await nc.flush()
            await wait_for(lambda: _is(len(consumer.pull.waiting) == n), timeout=60)
            waiting = consumer.pull.waiting
            before = waiting.steps
            with count_calls(monkeypatch, PullDelivery, "process_waiting") as walks:
                await nc.publish_many("w.x", 20)
                got = await sub.collect(20)
            assert [m.subject for m in got] == ["w.x"] * 20 and all(m.reply for m in got)
            assert walks["process_waiting"] == 0
            per_delivery = (waiting.steps - before) / 20

            await _add(nc, "E", n)  # (after what was published to C)
            expiring: Any = server.jetstream.streams["W"].consumers["E"]
            esub = nc.subscribe("_E.*")
            ewaiting = expiring.pull.waiting
            # Counted from before the first request: on a loaded machine the first ones may expire
            # before the last ones are queued, so "all waiting" is not a state to wait for.
            before = ewaiting.steps
            with count_calls(monkeypatch, PullDelivery, "process_waiting") as walks:
                for i in range(n):
                    nc.publish("$JS.API.CONSUMER.MSG.NEXT.W.E", _pull_body(0.3 + i / n * 0.3), f"_E.{i}")
                await nc.flush()
                timeouts = await esub.collect(n, timeout=60)
            assert {m.status for m in timeouts} == {"408"}
            assert walks["process_waiting"] == 0
            assert not ewaiting
            return per_delivery, (ewaiting.steps - before) / n
        finally:
            await nc.close()


async def _add(nc: RawClient, name: str, n: int) -> None:
    cfg = {"durable_name": name, "ack_policy": "none", "max_waiting": n + 10, "deliver_policy": "new"}
    resp = await nc.add_consumer("W", name, **cfg)
    assert "error" not in resp, resp


async def _is(value: bool) -> bool:
    return value


async def test_waiting_requests_cost_per_delivery_and_expiry_does_not_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _steps(monkeypatch, SMALL)
    large = await _steps(monkeypatch, LARGE)
    # A delivery takes the head request; the pass then drops the request's expiry entry (done).
    assert small[0] == large[0] <= 1, (small, large)
    # An expiry pops its heap entry, plus its share of the rebuilds that drop what is gone.
    assert large[1] <= 4 and small[1] <= 4, (small, large)
