"""Issue 24, a restart beyond messages (``bench_scale.py --dim rconsumers``): what the embedded
server does per durable consumer when it starts again, counted, not timed, at two sizes.

With 10,000 consumers a restart cost 361 µs of CPU a consumer against nats-server's 192, growing
1.7× from 1,000: each consumer recovered made the tuple of the stream's unfiltered consumers
again (O(n²)). Per consumer a restart now opens the same files (its definition and checksum,
its state slots and journal), decodes one state slot and builds no lookup tuple (they are made
at the first message that asks), whatever the number of consumers.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient

from pyjetstream.server.jetstream import consumer_persistence, delivery_state
from pyjetstream.server.jetstream.store.consumer_store import FileConsumerStore
from pyjetstream.server.server import Server

SMALL, LARGE = 10, 100


def _server(store_dir: str) -> Server:
    return Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1")


@contextmanager
def _opens(monkeypatch: pytest.MonkeyPatch, root: str) -> Iterator[collections.Counter[str]]:
    """Count the files opened under ``root`` (``open`` and ``os.open``)."""
    counts: collections.Counter[str] = collections.Counter()
    with monkeypatch.context() as m:
        for owner, name in ((builtins, "open"), (os, "open")):
            original = getattr(owner, name)

            def wrapper(*args: Any, __original: Any = original, **kw: Any) -> Any:
                if args and str(args[0]).startswith(root):
                    counts["opened"] += 1
                return __original(*args, **kw)

            m.setattr(owner, name, wrapper)
        yield counts


async def _restart_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, float]:
    """What a restart of a file stream with ``n`` durable consumers did (a fifth of them with 2
    pending acks): the files opened, and per consumer the state slots decoded and the consumers
    copied into the stream's lookup tuples."""
    with tempfile.TemporaryDirectory() as tmp:
        server = _server(tmp)
        await server.start()
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], storage="file", max_consumers=-1)
            await nc.publish_many("s.0", 3)
            for i in range(n):
                resp = await nc.add_consumer("S", f"c{i}", durable_name=f"c{i}")
                assert "error" not in resp, resp
                if i % 5 == 0:
                    inbox = nc.subscribe(nc.new_inbox())
                    nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.S.c{i}", b'{"batch": 2}', inbox.subject)
                    await inbox.collect(2)
                    inbox.unsubscribe()
        finally:
            await nc.close()
        await server.shutdown()
        server = _server(tmp)
        with _opens(monkeypatch, tmp) as opens:
            await server.start()
        try:
            stream = server.jetstream.streams["S"]
            consumers = list(stream.consumers.values())
            assert len(consumers) == n
            assert stream.consumers["c0"].state.pending and not stream.consumers["c1"].state.pending
            stores = [c.writer.store for c in consumers]
            decoded = sum(s.decoded for s in stores if isinstance(s, FileConsumerStore))
            return {
                "files opened": opens["opened"],
                "slots decoded": decoded / n,
                "consumers copied": stream.csl.copied / n,
            }
        finally:
            await server.shutdown()


async def test_a_restart_does_the_same_work_per_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _restart_steps(monkeypatch, SMALL)
    large = await _restart_steps(monkeypatch, LARGE)
    # (at most one each: a consumer with no state written has none to decode)
    assert large["slots decoded"] <= 1 and small["slots decoded"] <= 1, (small, large)
    assert large["consumers copied"] == small["consumers copied"] == 0, (small, large)
    # Files opened per consumer more (the stream's own are the same at both sizes): its definition
    # and checksum, its state slot(s) and journal.
    per_consumer = (large["files opened"] - small["files opened"]) / (LARGE - SMALL)
    assert per_consumer <= 5, (small, large)


async def _stop_after_changes(monkeypatch: pytest.MonkeyPatch, n: int, whole: bool) -> dict[str, Any]:
    """A consumer of ``n`` pending acks delivered in four passes (its state written whole once,
    then as journal changes: ``JOURNAL_MIN`` lowered), a few acked, stopped gracefully and
    started again: the journal records the restart applied, and whether it restored the state
    the consumer had at the stop (``STOP_WRITES_WHOLE``: ``whole``)."""
    monkeypatch.setattr(delivery_state, "JOURNAL_MIN", 8)
    monkeypatch.setattr(consumer_persistence, "STOP_WRITES_WHOLE", whole)
    with tempfile.TemporaryDirectory() as tmp:
        server = _server(tmp)
        await server.start()
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], storage="file")
            await nc.publish_many("s.0", n)
            resp = await nc.add_consumer("S", "C", durable_name="C", ack_policy="explicit", ack_wait=3_600 * 10**9)
            assert "error" not in resp, resp
            inbox = nc.subscribe(nc.new_inbox())
            for k in range(4):
                nc.pull("S", "C", inbox.subject, {"batch": n // 4})
                msgs = await inbox.collect(n // 4)
                if k == 1:
                    for m in msgs[::7]:
                        nc.publish(m.reply, b"+ACK")
                await nc.flush()
                await asyncio.sleep(0.3)  # (each pass's write: the first whole, the others changes)
            consumer = server.jetstream.streams["S"].consumers["C"]
            store = consumer.writer.store
            assert isinstance(store, FileConsumerStore) and store._jindex > 0  # (the journal is in play)
            before = _delivery(consumer)
        finally:
            await nc.close()
        await server.shutdown()
        server = _server(tmp)
        await server.start()
        try:
            consumer = server.jetstream.streams["S"].consumers["C"]
            store = consumer.writer.store
            assert isinstance(store, FileConsumerStore)
            return {"replayed": store._jindex, "same": _delivery(consumer) == before, "pending": before["pending"]}
        finally:
            await server.shutdown()


def _delivery(consumer: Any) -> dict[str, Any]:
    st = consumer.state
    return {
        "pending": st.pending.to_dict(),
        "floor": (st.adflr, st.asflr),
        "next": (st.dseq, st.sseq),
        "rdc": dict(st.rdc),
    }


@pytest.mark.parametrize("n", [64, 640])
async def test_a_graceful_stop_leaves_no_journal_to_replay(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """A graceful stop writes the whole state (nats-server's ``consumerFileStore.Stop``), so the
    next start decodes one slot and applies no journal record, at either size (it replayed every
    change since the last whole write: a racks restart's 100,000 first deliveries); off, the
    records are replayed; both restore the state the consumer stopped with."""
    on = await _stop_after_changes(monkeypatch, n, True)
    off = await _stop_after_changes(monkeypatch, n, False)
    assert on["replayed"] == 0, on
    assert off["replayed"] > 0, off
    assert on["same"] and off["same"]
    assert len(on["pending"]) == len(off["pending"]) == n - len(range(0, n // 4, 7))
