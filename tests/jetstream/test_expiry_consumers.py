"""A ``max_age`` stream's expiry beside many consumers: a pass runs at most every 250 ms (nats-server
``resetAgeChk``'s floor), and tells only the consumers with pending acks below the new first
message (`stream.EXPIRY_SKIPS_IDLE`): one that is behind with none keeps its position, as
nats-server's does. A pass looks only at the consumers that may hold pending acks
(`stream.EXPIRY_LOOKS_AT_ACKING`, `Stream.acking`), not at every consumer. Counted in process
(passes, consumers told, consumers looked at) at two numbers of consumers, never timed; the
switch's differential (consumer states on == off, through a restart); the position a lagging
consumer keeps and what it reads next, on both targets."""

from __future__ import annotations

import asyncio
import json
import tempfile
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import embedded
from tests.support.targets import Target

from pyjetstream.server.jetstream import stream as stream_module
from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.stream import Stream
from pyjetstream.server.server import Server

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


async def _create_consumers(nc: RawClient, n: int, config: Any) -> None:
    """``n`` durables ``c<i>`` on stream ``S``, their creates pipelined (``config(i)``: each one's)."""
    inbox = nc.subscribe(nc.new_inbox())
    for i in range(n):
        body = {"stream_name": "S", "config": {"durable_name": f"c{i}", **config(i)}}
        nc.publish(f"$JS.API.CONSUMER.CREATE.S.c{i}", json.dumps(body).encode(), inbox.subject)
    for reply in await inbox.collect(n, timeout=60):
        assert "error" not in reply.json(), reply.json()
    inbox.unsubscribe()


async def _messages_gone(nc: RawClient) -> None:
    async def empty() -> bool:
        return bool((await nc.stream_info("S"))["state"]["messages"] == 0)

    await wait_for(empty, timeout=10)


async def _looked_at(consumers: int) -> tuple[int, int]:
    """(expiry passes that removed messages, consumers they looked at) while 30 messages on 10
    subjects expire beside ``consumers`` durables, each filtered to its own subject: the 10 on
    those subjects hold 2 unacknowledged deliveries each, and are told (their pending acks gone,
    their floors past them)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], max_age=SECOND, storage="memory", max_consumers=consumers + 10)
            await _create_consumers(nc, consumers, lambda i: {"ack_policy": "explicit", "filter_subject": f"s.{i}"})
            for j in range(30):
                nc.publish(f"s.{j % 10}", b"x")
            inbox = nc.subscribe(nc.new_inbox())
            for j in range(10):
                nc.pull("S", f"c{j}", inbox.subject, {"batch": 2})
            await inbox.collect(20)
            stream = server.jetstream.streams["S"]
            assert len(stream.acking) == 10
            looked = stream.expiry_looked
            await _messages_gone(nc)
            for j in range(10):
                info = await nc.consumer_info("S", f"c{j}")
                assert info["num_ack_pending"] == 0 and info["ack_floor"]["stream_seq"] >= 11 + j, info
            return stream.expiry_passes, stream.expiry_looked - looked
        finally:
            await nc.close()


async def test_an_expiry_pass_looks_only_at_the_consumers_holding_acks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside 100 and 2,000 consumers, 10 of them holding pending acks: each pass looks at those
    10 at most (a pass after the one that told them finds them empty and forgets them); with
    `EXPIRY_LOOKS_AT_ACKING` off each pass looks at every consumer."""
    small = await _looked_at(100)
    large = await _looked_at(2000)
    for passes, looked in (small, large):
        assert 1 <= passes <= 8 and looked <= 10 * passes, (small, large)
    monkeypatch.setattr(stream_module, "EXPIRY_LOOKS_AT_ACKING", False)
    passes, looked = await _looked_at(100)
    assert looked == 100 * passes, (passes, looked)


def _config(i: int) -> dict[str, Any]:
    """Consumers that differ in filter and ack policy (the differential's mix)."""
    filters = ["s.a", "s.b", "", "s.*"]
    policy = ["explicit", "explicit", "all", "none"][i % 4 if i % 5 else 0]
    cfg: dict[str, Any] = {"ack_policy": policy, "ack_wait": 30 * SECOND}
    if filters[i % 4]:
        cfg["filter_subject"] = filters[i % 4]
    return cfg


_N = 12
_FIELDS = ("num_ack_pending", "num_pending", "num_redelivered", "num_waiting")


async def _states(nc: RawClient, n: int) -> list[tuple[Any, ...]]:
    out = []
    for i in range(n):
        info = await nc.consumer_info("S", f"c{i}")
        seqs = [(info[k]["consumer_seq"], info[k]["stream_seq"]) for k in ("delivered", "ack_floor")]
        out.append((*seqs, *(info[f] for f in _FIELDS)))
    return out


async def _round(nc: RawClient, k: int, batch: Any) -> None:
    """``k`` messages on ``s.a`` and ``s.b`` each; consumer ``i`` pulls ``batch(i)`` (what there
    is of them) and acks none, its first, or all (``i % 3``)."""
    for j in range(k):
        assert "error" not in await nc.publish_js("s.a", b"a%d" % j)
        assert "error" not in await nc.publish_js("s.b", b"b%d" % j)
    inbox = nc.subscribe(nc.new_inbox())
    for i in range(_N):
        if not batch(i):
            continue
        nc.pull("S", f"c{i}", inbox.subject, {"batch": batch(i), "no_wait": True})
        msgs: list[Any] = []
        while len(msgs) < batch(i):
            msg = await inbox.next()
            if not msg.reply:  # (a status: no more now)
                break
            msgs.append(msg)
        for m in msgs[:1] if i % 3 == 1 else msgs if i % 3 == 2 else []:
            nc.publish(m.reply, b"+ACK")
    await nc.flush()
    inbox.unsubscribe()


async def _expire_at(nc: RawClient, server: Server, when: float) -> list[tuple[Any, ...]]:
    """An expiry pass at ``when`` (the loop's clock; the stream's own timer is off): the consumer
    states after it."""
    await asyncio.sleep(max(0.0, when - asyncio.get_running_loop().time()))
    server.jetstream.streams["S"]._expire()
    return await _states(nc, _N)


async def _expiry_run(store_dir: str, restart: bool) -> list[Any]:
    """Consumer states after each of three expiry passes, run by the test (their timing decides
    what each removes; ``max_age`` 2 s): of a first round, then of a second delivered after it,
    then of a third. With ``restart``, a restart right after the first round's deliveries (its
    pending acks restored; its messages still there)."""
    loop, states = asyncio.get_running_loop(), []
    server = Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1")
    await server.start()
    nc = await RawClient.connect(server.client_url)
    try:
        await nc.add_stream("S", ["s.>"], max_age=2 * SECOND, storage="file")
        await _create_consumers(nc, _N, _config)
        await _round(nc, 3, lambda i: i % 4)
        first = loop.time()
        if restart:
            await nc.close()
            await server.shutdown()
            server = Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1")
            await server.start()
            nc = await RawClient.connect(server.client_url)
            assert server.jetstream.streams["S"].acking  # (the restored pending acks)
        await asyncio.sleep(max(0.0, first + 0.8 - loop.time()))
        await _round(nc, 2, lambda i: 4)
        second = loop.time()
        assert (await nc.stream_info("S"))["state"]["messages"] == 10  # (nothing expired yet)
        states.append(await _expire_at(nc, server, first + 2.05))
        states.append((await nc.stream_info("S"))["state"]["messages"])
        states.append(await _expire_at(nc, server, second + 2.05))
        await _round(nc, 1, lambda i: 4)
        states.append(await _expire_at(nc, server, loop.time() + 2.05))
        states.append((await nc.stream_info("S"))["state"]["messages"])
    finally:
        await nc.close()
        await server.shutdown()
    return states


@pytest.mark.parametrize("restart", [False, True])
async def test_looking_at_the_acking_consumers_changes_nothing(monkeypatch: pytest.MonkeyPatch, restart: bool) -> None:
    """Differential: consumers of every ack policy and overlapping filters, some holding pending
    acks, some having acked them, their states after three expiry passes (and a restart with
    pending acks restored) are the same with `EXPIRY_LOOKS_AT_ACKING` on and off."""
    monkeypatch.setattr(Stream, "_schedule_expiry", lambda self: None)
    runs = []
    for on in (True, False):
        monkeypatch.setattr(stream_module, "EXPIRY_LOOKS_AT_ACKING", on)
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(await _expiry_run(tmp, restart))
    # The first pass removed the first round only; the last left nothing, and nothing to acknowledge.
    assert runs[0][1] == runs[1][1] == 4 and runs[0][-1] == 0, runs
    assert runs[0] == runs[1]
    # (pending acks after the first pass: the second round's, above the new first message)
    assert any(state[2] for state in runs[0][0]) and not any(state[2] for state in runs[0][3]), runs[0]
