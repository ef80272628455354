"""The idle cost of a stream sourcing many streams (issue 24, bench_scale's ``--dim nsources``), counted
on an embedded server in this process. An idle source costs one heartbeat a second, as in nats-server:

- its feed holds no timer of its own: the stream checks all its feeds' health on one ticker every
  10 s (``StreamSourcing._check_health``, nats-server 2.15's ``processAllSourceMsgs``), where each feed
  had a timer each second — the loop's timers per source are counted at two sizes, 0;
- its origin consumer's idle heartbeat runs no delivery pass when one would find nothing
  (``DeliveryLoop.at_rest``, switch ``delivery_loop.REST_UNPASSED``): none is counted over an idle
  stretch with it on, one a heartbeat off, and the heartbeats, deliveries and consumer infos of push
  consumers (filtered, unfiltered, with acks) are the same either way;
- the Python steps of one heartbeat (sent, routed and taken by the feed) are the same at 10 and 60
  sources, and so are the server's Python steps of an idle stretch per heartbeat sent in it (health
  checks included; the event loop's own code left out: asyncio's heap of timers compares them in Python,
  uvloop's, which a served process runs, in C).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls, embedded
from tests.support.steps import counting

from pyjetstream.server.jetstream import delivery_loop, sourcing
from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop
from pyjetstream.server.jetstream.push_delivery import PushDelivery
from pyjetstream.server.server import Server

TIMEOUT = 30.0  # (a loaded machine: nats-py's default request timeout is 0.5 s)


async def _request(nc: Any, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = await nc.request(subject, json.dumps(body or {}).encode(), timeout=TIMEOUT)
    answer: dict[str, Any] = json.loads(reply.data)
    assert "error" not in answer, answer
    return answer


async def _aggregate(nc: Any, n: int) -> None:
    """``n`` origins ``O<i>`` with a message each and ``AGG`` sourcing them all, caught up."""
    for i in range(n):
        await _request(nc, f"$JS.API.STREAM.CREATE.O{i}", {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "memory"})
        await nc.publish(f"o.{i}.first", b"1")
    agg = {"name": "AGG", "sources": [{"name": f"O{i}"} for i in range(n)], "storage": "memory"}
    await _request(nc, "$JS.API.STREAM.CREATE.AGG", agg)
    for _ in range(600):
        if (await _request(nc, "$JS.API.STREAM.INFO.AGG"))["state"]["messages"] >= n:
            return
        await asyncio.sleep(0.05)
    raise AssertionError("AGG did not catch up")


def _origin_pushes(server: Server, n: int) -> list[PushDelivery]:
    engine = server.accounts["$G"].jetstream
    return [next(iter(engine.streams[f"O{i}"].consumers.values())).push for i in range(n)]


def _sourcing_timers(server: Server) -> tuple[int, int]:
    """The event loop's timers held by the sources' feeds and by the streams' sourcing."""
    feeds = streams = 0
    for handle in server.loop._scheduled:  # type: ignore[attr-defined]
        owner = getattr(handle._callback, "__self__", None)
        if isinstance(owner, sourcing._Feed):
            feeds += 1
        elif isinstance(owner, sourcing.StreamSourcing):
            streams += 1
    return feeds, streams


async def _idle_counts(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[tuple[int, int], int, int, int]:
    """At ``n`` idle sources: the sourcing timers, the heartbeats sent and the delivery passes run while
    ``n`` heartbeats go out, and the Python steps of one heartbeat."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(nc, n)
            await asyncio.sleep(0.2)  # (the last flow-control answers and passes of the catch-up)
            timers = _sourcing_timers(server)
            with count_calls(monkeypatch, PushDelivery, "send_idle_heartbeat") as hbs, count_calls(
                monkeypatch, DeliveryLoop, "run"
            ) as passes:
                for _ in range(100):
                    if hbs["send_idle_heartbeat"] >= n:
                        break
                    await asyncio.sleep(0.05)
                heartbeats, runs = hbs["send_idle_heartbeat"], passes["run"]
            push = _origin_pushes(server, n)[n // 2]
            handle = push._hb_timer
            assert handle is not None
            handle.cancel()
            push.last_delivery -= 2.0  # (due)
            with counting() as steps:
                push._heartbeat()
            return timers, heartbeats, runs, steps.count
        finally:
            await nc.close()


async def test_an_idle_source_holds_no_timer_and_its_heartbeat_runs_no_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _idle_counts(10, monkeypatch)
    large = await _idle_counts(60, monkeypatch)
    for (timers, heartbeats, runs, _), n in ((small, 10), (large, 60)):
        assert timers == (0, 1), timers  # (one health check ticker for the stream, none a feed)
        assert heartbeats >= n and runs == 0, (n, heartbeats, runs)
    assert small[3] == large[3], (small[3], large[3])  # (the steps of one heartbeat)
    monkeypatch.setattr(delivery_loop, "REST_UNPASSED", False)
    _, heartbeats, runs, _ = await _idle_counts(10, monkeypatch)
    assert runs >= heartbeats - 1, (heartbeats, runs)  # (off: a pass after each heartbeat)


async def _idle_steps(n: int, monkeypatch: pytest.MonkeyPatch) -> float:
    """The server's Python steps (the package's frames) over an idle stretch of ``2 n`` heartbeats at ``n``
    sources, per heartbeat, with a health check every 0.5 s."""
    monkeypatch.setattr(sourcing, "HEALTH_CHECK_INTERVAL", 0.5)
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(nc, n)
            await asyncio.sleep(0.2)
            with count_calls(monkeypatch, PushDelivery, "send_idle_heartbeat") as hbs:
                with counting(where=lambda frame: "/pyjetstream/server/" in frame.f_code.co_filename) as steps:
                    for _ in range(200):
                        if hbs["send_idle_heartbeat"] >= 2 * n:
                            break
                        await asyncio.sleep(0.05)
                return steps.count / hbs["send_idle_heartbeat"]
        finally:
            await nc.close()


async def test_the_steps_of_an_idle_stretch_per_heartbeat_do_not_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = await _idle_steps(10, monkeypatch), await _idle_steps(60, monkeypatch)
    assert large <= 1.1 * small, (small, large)


async def test_a_stalled_feed_is_recreated_by_the_streams_health_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sourcing, "HEALTH_CHECK_INTERVAL", 0.1)
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(nc, 3)
            agg = server.accounts["$G"].jetstream.streams["AGG"].sourcing
            feeds = list(agg.sources.values())
            names = [feed.cname for feed in feeds]
            checks = sourcing.health_checks
            feeds[1].last -= sourcing.STALLED_AFTER + 1  # (silent for longer than it may be)
            for _ in range(200):
                if feeds[1].cname not in ("", names[1]) and sourcing.health_checks > checks:
                    break
                await asyncio.sleep(0.05)
            assert feeds[1].cname not in ("", names[1])  # (a new consumer)
            assert [feed.cname for feed in feeds[::2]] == names[::2]  # (the others untouched)
            await nc.publish("o.1.again", b"2")
            for _ in range(200):
                if (await _request(nc, "$JS.API.STREAM.INFO.AGG"))["state"]["messages"] == 4:
                    break
                await asyncio.sleep(0.05)
            assert (await _request(nc, "$JS.API.STREAM.INFO.AGG"))["state"]["messages"] == 4
        finally:
            await nc.close()
    assert agg._health is None  # (stopped with the server)


async def _push_world(monkeypatch: pytest.MonkeyPatch, rest_unpassed: bool) -> list[Any]:
    """Push consumers with 100 ms heartbeats (unfiltered, filtered on a subject that stops being published,
    acked explicitly) through publishes and idle stretches: what each deliver subject received, with the
    heartbeats' sequences (each idle stretch's distinct ones), and each consumer's info."""
    monkeypatch.setattr(delivery_loop, "REST_UNPASSED", rest_unpassed)
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _request(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "storage": "memory"})
            got: dict[str, list[tuple[str, str]]] = {}
            cfgs = {"A": {}, "F": {"filter_subject": "s.f"}, "K": {"ack_policy": "explicit"}}
            for name, extra in cfgs.items():
                got[name] = []

                async def take(msg: Any, name: str = name) -> None:
                    if msg.reply.startswith("$JS.ACK."):
                        got[name].append(("msg", msg.subject + " " + ".".join(msg.reply.split(".")[4:7])))
                        if name == "K" and msg.subject.endswith("f"):
                            await msg.ack()
                    else:
                        hb = msg.headers or {}
                        item = ("hb", f"{hb.get('Nats-Last-Consumer')} {hb.get('Nats-Last-Stream')}")
                        if not got[name] or got[name][-1] != item:
                            got[name].append(item)

                await nc.subscribe(f"dl.{name}", cb=take)
                config = {"durable_name": name, "deliver_subject": f"dl.{name}", "ack_policy": "none", "idle_heartbeat": 100_000_000}
                await _request(nc, f"$JS.API.CONSUMER.CREATE.S.{name}", {"stream_name": "S", "config": {**config, **extra}})
            for phase in range(3):
                for i in range(5):
                    await nc.publish("s.f" if phase == 0 or i == 0 else "s.g", b"%d" % i)
                await nc.flush()
                await asyncio.sleep(0.45)
            infos = []
            for name in cfgs:
                info = await _request(nc, f"$JS.API.CONSUMER.INFO.S.{name}")
                for k in ("delivered", "ack_floor"):
                    info[k].pop("last_active", None)  # (a time)
                infos.append({k: info[k] for k in ("delivered", "ack_floor", "num_pending", "num_ack_pending")})
            return [got, infos]
        finally:
            await nc.close()


async def test_heartbeats_without_a_pass_at_rest_are_those_with_one(monkeypatch: pytest.MonkeyPatch) -> None:
    on = await _push_world(monkeypatch, True)
    off = await _push_world(monkeypatch, False)
    assert on == off
    assert any(kind == "hb" for kind, _ in on[0]["F"])
