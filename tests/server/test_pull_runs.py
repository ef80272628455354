"""A pull consumer's run of deliveries costs what a push consumer's does (issue 30): with two requests
of a batch in flight on one reply subject (Spark's batch read, bench_shapes' ``pull_wild``), every
message of a run is framed by ``DeliveryPass.frame_run`` and the requests take them in turn with one
``WaitQueue.take_run`` per run — not each one handed to the general per-message loop
(``DeliveryLoop._deliver_msgs``) because the second request had not been looked at this pass.
Counted, not timed; the bytes are those of the message-by-message server (``runs`` off)."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from tests.server.runs_world import World, count_general, frame, request

from pyjetstream.server.jetstream.pull_delivery import WaitingRequest, WaitQueue

N = 6_000
BATCH = 500
FETCHES = 300


def _consumer(world: World, subjects: list[str], cfg: dict[str, Any]) -> Any:
    """A client subscribed to ``_INBOX.pull``, after it made stream S on ``subjects`` and the durable
    ``cfg`` on it."""
    c = world.connect()
    world.feed(c, b"SUB _INBOX.pull 1\r\n")
    world.feed(c, request("$JS.API.STREAM.CREATE.S", "_INBOX.setup", {"name": "S", "subjects": subjects}))
    create = request(f"$JS.API.CONSUMER.CREATE.S.{cfg['durable_name']}", "_INBOX.setup", {"stream_name": "S", "config": cfg})
    world.feed(c, create)
    return c


async def _pulled(runs: bool, monkeypatch: Any) -> tuple[bytes, int, int]:
    """Every message pulled with two requests of ``BATCH`` in flight (a third asked for whenever one
    is done); the output, the messages handed to ``_deliver_msgs``, the delivery passes."""
    general = count_general(monkeypatch)
    world = World(runs=runs)
    await world.start()
    try:
        c = _consumer(world, ["pc.>"], {"durable_name": "P", "ack_policy": "none", "filter_subject": "pc.*.x"})
        hdr = b"NATS/1.0\r\nNats-Msg-Id: %d\r\n\r\n"
        world.feed(c, b"".join(frame(f"pc.{i % 50}.{'xy'[i % 2]}", "", hdr % i, b"p" * 100) for i in range(2 * N)))
        await world.settle()
        world.clear()
        assert world.server is not None and world.server.jetstream is not None
        consumer = world.server.jetstream.streams["S"].consumers["P"]
        passes = consumer.delivery.passes
        asked = 0
        for _ in range(200):
            while asked < N and asked - (consumer.state.dseq - 1) <= BATCH:  # (a batch or less to come)
                world.feed(c, request("$JS.API.CONSUMER.MSG.NEXT.S.P", "_INBOX.pull", {"batch": BATCH}))
                asked += BATCH
            await world.settle()
            if consumer.state.dseq - 1 >= N:
                break
        assert consumer.state.dseq - 1 == N
        return world.output(c), general.n, consumer.delivery.passes - passes
    finally:
        await world.stop()


def test_two_pull_requests_in_flight_take_a_run_without_a_look_per_message(monkeypatch: Any) -> None:
    out, general, passes = asyncio.run(_pulled(True, monkeypatch))
    assert out.count(b"HMSG pc.") == N
    # A pass starts at the head request's receiver: every message is framed, the first of a pass
    # too (it went the general way, alone, before the run was read; each message did before that).
    assert general == 0, (general, passes)
    alone, general_alone, _ = asyncio.run(_pulled(False, monkeypatch))
    assert general_alone == N
    assert out == alone


async def _fetched_one_by_one(runs: bool, monkeypatch: Any) -> tuple[bytes, int, int, int]:
    """``FETCHES`` fetches of one message each, one at a time, each acked (a worker's loop): the output,
    the messages handed to ``_deliver_msgs``, the store reads and the delivery passes."""
    general = count_general(monkeypatch)
    world = World(runs=runs)
    await world.start()
    try:
        c = _consumer(world, ["w.>"], {"durable_name": "W", "ack_policy": "explicit"})
        world.feed(c, b"".join(frame(f"w.{i % 3}", "", None, b"j%d" % i) for i in range(FETCHES)))
        await world.settle()
        world.clear()
        assert world.server is not None and world.server.jetstream is not None
        consumer = world.server.jetstream.streams["S"].consumers["W"]
        store = consumer.stream.store
        reads, passes = 0, consumer.delivery.passes
        load_next_msgs = store.load_next_msgs

        def counting(*args: Any) -> Any:
            nonlocal reads
            reads += 1
            return load_next_msgs(*args)

        store.load_next_msgs = counting  # type: ignore[method-assign]
        for _ in range(FETCHES):
            world.feed(c, request("$JS.API.CONSUMER.MSG.NEXT.S.W", "_INBOX.pull", {"batch": 1}))
            await world.settle()
            out = world.output(c)
            ack = out[out.rindex(b"$JS.ACK.") :].split(b" ", 1)[0].decode()
            world.feed(c, frame(ack, "", None, b""))
            await world.settle()
        assert consumer.state.dseq - 1 == FETCHES and consumer.state.floor()[1] == FETCHES
        return world.output(c), general.n, reads, consumer.delivery.passes - passes
    finally:
        await world.stop()


def test_a_fetch_of_one_reads_and_frames_its_message_once(monkeypatch: Any) -> None:
    """A fetch of one message is one store read in one pass, framed (``frame_run``), not handed to
    the general loop; the output is the message-by-message server's."""
    out, general, reads, passes = asyncio.run(_fetched_one_by_one(True, monkeypatch))
    assert out.count(b"MSG w.") == FETCHES
    assert general == 0 and reads == passes == FETCHES, (general, reads, passes)
    alone, general_alone, _, _ = asyncio.run(_fetched_one_by_one(False, monkeypatch))
    assert general_alone == FETCHES
    assert out == alone


def test_take_run_accounts_as_take_head_per_message() -> None:
    """``WaitQueue.take_run(k)`` leaves the queue as ``k`` calls of ``take_head`` do (nats-server's
    ``popAndRequeue`` round robin): each request's counts, the order, the running total."""
    rnd = random.Random(30)
    for _ in range(500):
        ns = [rnd.randint(1, 7) for _ in range(rnd.randint(1, 6))]
        k = rnd.randint(1, sum(ns))
        one, run = WaitQueue(100), WaitQueue(100)
        for i, n in enumerate(ns):
            one.add(WaitingRequest(f"r{i}", n, 0, 0.0, False, 0.0))
            run.add(WaitingRequest(f"r{i}", n, 0, 0.0, False, 0.0))
        for _ in range(k):
            one.take_head(one._q[0])
        run.take_run(k)
        assert [(w.reply, w.n, w.delivered) for w in one._q] == [(w.reply, w.n, w.delivered) for w in run._q], (ns, k)
        assert one.total == run.total
