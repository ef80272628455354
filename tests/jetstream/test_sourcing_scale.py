"""A stream sourcing many streams (issue 24, bench_scale's ``--dim nsources``), counted on an embedded server
in this process:

- naming each source's origin consumer counts the stream's source names once per config, not once per
  source (``sourcing._sourced_twice``: the whole list was walked for each feed's name — at its start, its
  create and its delete — so a stream sourcing n streams cost O(n²), ~3 million steps at 1,000;
  ``sourcing.names_counted``); the names are the same with ``sourcing.COUNT_ONCE`` off (duplicate origins
  with different filters included);
- a publish spread over many origins is stored in the aggregate in one store pass per client read, not one
  per message (``StreamSourcing.flush_soon``: the feeds holding deliveries flushed together; counted in
  the aggregate's ``process_sourced`` / ``process_sourced_run`` calls), and the copies are those each feed
  flushing alone makes (``sourcing.SHARED_FLUSH`` off), with copies that must go one by one (a message id)
  and a full aggregate (``discard: new``) among them;
- each such message is one delivery pass of its origin's consumer and one store read, not two: a pass
  whose next sequence is past the stream's last finds the end unread (``delivery_loop.EOF_UNREAD``; off:
  a second read that finds nothing); consumers' deliveries and info are the same with it off."""

from __future__ import annotations

import asyncio
import json
import re
from types import SimpleNamespace
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls, embedded, pub_frame, publish_in_one_write

from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.jetstream import delivery_loop, sourcing
from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop
from pyjetstream.server.jetstream.sourcing import source_consumer_name
from pyjetstream.server.jetstream.store.base import ErrMaxMsgs
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.stream_ingest import StreamIngest
from pyjetstream.server.server import Server

TIMEOUT = 30.0  # (a loaded machine: nats-py's default request timeout is 0.5 s)


async def _names_walked(n: int) -> int:
    """Source names walked while a stream sourcing ``n`` streams is created and catches up."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            for i in range(n):
                cfg = {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "memory"}
                await nc.request(f"$JS.API.STREAM.CREATE.O{i}", json.dumps(cfg).encode(), timeout=TIMEOUT)
                await nc.request(f"o.{i}.x", b"1", timeout=TIMEOUT)
            before = sourcing.names_counted
            agg = {"name": "AGG", "sources": [{"name": f"O{i}"} for i in range(n)], "storage": "memory"}
            await nc.request("$JS.API.STREAM.CREATE.AGG", json.dumps(agg).encode(), timeout=TIMEOUT)
            for _ in range(300):
                info = json.loads((await nc.request("$JS.API.STREAM.INFO.AGG", b"", timeout=TIMEOUT)).data)
                if info["state"]["messages"] == n:
                    break
                await nc.flush()
            assert info["state"]["messages"] == n
            return sourcing.names_counted - before
        finally:
            await nc.close()


async def test_source_names_are_counted_once_per_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (20, 200):
        walked = await _names_walked(n)
        assert walked <= 2 * n, (n, walked)  # (the list walked once or twice, not once per source)
    monkeypatch.setattr(sourcing, "COUNT_ONCE", False)
    assert await _names_walked(20) >= 20 * 20  # (off: the whole list for each source's name)


def test_the_names_are_the_same_with_the_switch_off(monkeypatch: pytest.MonkeyPatch) -> None:
    account = SimpleNamespace(name="$G")
    stream: Any = SimpleNamespace(name="AGG", engine=SimpleNamespace(server=account, domain=""))
    sources = [StreamSource(name=f"O{i % 7}", filter_subject=f"o.{i}.>") for i in range(30)]
    sources += [StreamSource(name=f"P{i}") for i in range(5)]
    on = [source_consumer_name(stream, s, sources) for s in sources]
    monkeypatch.setattr(sourcing, "COUNT_ONCE", False)
    off = [source_consumer_name(stream, s, sources) for s in sources]
    assert on == off and len(set(on)) == 30 + 1  # (a shared origin's sources a name each; the others one)


async def _request(nc: Any, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = await nc.request(subject, json.dumps(body or {}).encode(), timeout=TIMEOUT)
    answer: dict[str, Any] = json.loads(reply.data)
    assert "error" not in answer, answer
    return answer


async def _aggregate(server: Server, nc: Any, n: int, **agg: Any) -> None:
    """``n`` origins ``O<i>`` (``o.<i>.>``) with a message each, and ``AGG`` sourcing them all, caught up
    (so every feed's consumer is made before anything is counted)."""
    for i in range(n):
        await _request(nc, f"$JS.API.STREAM.CREATE.O{i}", {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "memory"})
        await nc.publish(f"o.{i}.first", b"1")
    agg = {"name": "AGG", "sources": [{"name": f"O{i}"} for i in range(n)], "storage": "memory", **agg}
    await _request(nc, "$JS.API.STREAM.CREATE.AGG", agg)
    await _until(nc, min(n, agg.get("max_msgs", n)))


async def _until(nc: Any, msgs: int) -> dict[str, Any]:
    for _ in range(600):
        info = await _request(nc, "$JS.API.STREAM.INFO.AGG")
        if info["state"]["messages"] >= msgs:
            return info
        await asyncio.sleep(0.05)
    raise AssertionError(f"AGG holds {info['state']['messages']} of {msgs}")


async def _store_passes(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """The aggregate's store passes (``process_sourced`` + ``process_sourced_run`` calls) while one message
    into each of ``n`` origins, written at once, is sourced; and the client reads the server made meanwhile."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(server, nc, n)
            with count_calls(monkeypatch, StreamIngest, "process_sourced", "process_sourced_run") as calls:
                reads = server.reads
                await publish_in_one_write(server, [pub_frame(f"o.{i}.x", b"x") for i in range(n)])
                await _until(nc, 2 * n)
                return calls["process_sourced"] + calls["process_sourced_run"], server.reads - reads
        finally:
            await nc.close()


async def test_a_publish_over_many_origins_is_stored_together(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (20, 200):
        passes, reads = await _store_passes(n, monkeypatch)
        # One store pass per client read (the publish's and the INFO polls', which flush what is held):
        # not one per message.
        assert passes <= reads + 2, (n, passes, reads)
    monkeypatch.setattr(sourcing, "SHARED_FLUSH", False)
    passes, reads = await _store_passes(20, monkeypatch)
    assert passes >= 20, (passes, reads)  # (off: each feed its own flush, one store per message)


STAMP = re.compile(rb"(Nats-Stream-Source: \S+ )(\d+)( [^\r]*) \S+\r\n")


async def _sourced(n: int, ids: bool, **agg: Any) -> tuple[dict[str, list[Any]], list[int], int]:
    """What ``AGG`` took of ``n`` origins after publishes spread over them (some with headers, some with a
    message id if ``ids``: those go one by one), each origin's copies in order, as (subject, header block
    without the origin's identity, payload); each source's ``seq``; the messages held."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(server, nc, n, **agg)
            frames = []
            for i in range(4 * n):
                hdr = b""
                if i % 5 == 1:
                    hdr = b"NATS/1.0\r\nK: %d\r\n\r\n" % i
                elif ids and i % 11 == 3:
                    hdr = b"NATS/1.0\r\nNats-Msg-Id: m%d\r\n\r\n" % i
                frames.append(pub_frame(f"o.{i * 7 % n}.{i}", b"%d" % i, hdr))
            await publish_in_one_write(server, frames)
            want = agg.get("max_msgs", 5 * n)
            info = await _until(nc, want)
            await asyncio.sleep(0.3)  # (nothing more comes)
            info = await _request(nc, "$JS.API.STREAM.INFO.AGG")
            store = server.jetstream_engines()[0].streams["AGG"].store
            state = store.fast_state()
            copies: dict[str, list[Any]] = {}
            for seq in range(state.first_seq, state.last_seq + 1):
                m = store.load_msg(seq)
                origin = STAMP.search(m.hdr).group(1)
                copies.setdefault(origin.decode(), []).append((m.subject, STAMP.sub(rb"\1\2\3\r\n", m.hdr), m.data))
            return copies, [s.get("seq", 0) for s in info["sources"]], info["state"]["messages"]
        finally:
            await nc.close()


@pytest.mark.parametrize(
    ("ids", "agg"), [(True, {}), (False, {"max_msgs": 90, "discard": "new"})], ids=["message-ids", "full"]
)
async def test_stored_together_as_each_feed_alone(monkeypatch: pytest.MonkeyPatch, ids: bool, agg: dict[str, Any]) -> None:
    # (message ids: the flush together refused, each feed its own way; full: a write fails in the middle
    # of the feeds stored together, that feed starts over and the ones after it flush alone)
    on = await _sourced(40, ids, **agg)
    monkeypatch.setattr(sourcing, "SHARED_FLUSH", False)
    off = await _sourced(40, ids, **agg)
    assert on == off
    assert on[2] == agg.get("max_msgs", 5 * 40)


async def test_a_write_failing_among_feeds_stored_together_loses_and_duplicates_nothing() -> None:
    """The aggregate's store refuses the second half of the first run of many feeds' copies: the feeds
    of the first half moved on, the one it failed for starts over from its last copy, those after it
    store their own; every message is then held once, in its origin's order."""
    n = 40
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(server, nc, n)
            store = server.jetstream_engines()[0].streams["AGG"].store
            real, failed = store.store_run, []

            def store_run(subjects: list[str], hdrs: list[bytes], payloads: list[bytes], *args: Any) -> Any:
                if failed or len(subjects) < 4:
                    return real(subjects, hdrs, payloads, *args)
                half = len(subjects) // 2
                failed.append(half)
                first, tss, _ = real(subjects[:half], hdrs[:half], payloads[:half], *args)
                return first, tss, ErrMaxMsgs("maximum messages exceeded")

            store.store_run = store_run
            await publish_in_one_write(server, [pub_frame(f"o.{i}.x", b"%d" % i) for i in range(n)])
            await _until(nc, 2 * n)
            await asyncio.sleep(0.3)
            assert failed, "no run of many feeds' copies was stored"
            state = store.fast_state()
            assert state.msgs == 2 * n
            held: dict[str, list[bytes]] = {}
            for seq in range(state.first_seq, state.last_seq + 1):
                m = store.load_msg(seq)
                held.setdefault(m.subject.split(".")[1], []).append(m.data)
            assert held == {str(i): [b"1", b"%d" % i] for i in range(n)}
        finally:
            await nc.close()


async def _origin_steps(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """Delivery passes and store reads (``load_next_msgs`` / ``_multi``) while one message into each of
    ``n`` origins, written at once, is sourced by ``AGG``."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _aggregate(server, nc, n)
            with count_calls(monkeypatch, DeliveryLoop, "run") as passes, count_calls(
                monkeypatch, IndexedStore, "load_next_msgs", "load_next_msgs_multi"
            ) as reads:
                await publish_in_one_write(server, [pub_frame(f"o.{i}.x", b"x") for i in range(n)])
                await _until(nc, 2 * n)
                return passes["run"], reads["load_next_msgs"] + reads["load_next_msgs_multi"]
        finally:
            await nc.close()


async def test_a_sourced_message_is_one_pass_and_one_read_of_its_origin(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (20, 200):
        passes, reads = await _origin_steps(n, monkeypatch)
        assert passes <= n + 2 and reads <= n + 2, (n, passes, reads)  # (a message: a pass, a read)
    monkeypatch.setattr(delivery_loop, "EOF_UNREAD", False)
    passes, reads = await _origin_steps(20, monkeypatch)
    assert reads >= 2 * 20, (passes, reads)  # (off: the message, then a read that finds nothing)


def _acked(reply: str) -> list[str]:
    """An ack reply's delivery count, stream and consumer sequences and pending count (not its time)."""
    tokens = reply.split(".")
    return tokens[4:7] + tokens[8:]


async def _consumers_seen() -> list[Any]:
    """What a filtered push consumer and a pull consumer delivered, and their info, while messages come
    one at a time onto the stream's subjects (the filtered one's pass ends before the stream does)."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            js = nc.jetstream()
            await js.add_stream(name="S", subjects=["s.>"])
            got: list[Any] = []
            sub = await nc.subscribe("push.a")
            await _request(nc, "$JS.API.CONSUMER.CREATE.S.P", {"stream_name": "S", "config": {
                "name": "P", "deliver_subject": "push.a", "filter_subject": "s.a", "ack_policy": "none"}})  # fmt: skip
            pull = await js.pull_subscribe("s.>", "Q", stream="S")
            for i in range(12):
                await js.publish("s.a" if i % 3 else "s.b", b"%d" % i)
                if i % 3:
                    m = await sub.next_msg(timeout=TIMEOUT)
                    got.append((m.subject, m.data, _acked(m.reply)))
                for m in await pull.fetch(1, timeout=TIMEOUT):
                    got.append((m.subject, m.data, _acked(m.reply)))
                    await m.ack()
            for name in ("P", "Q"):
                info = await _request(nc, f"$JS.API.CONSUMER.INFO.S.{name}")
                seqs = {k: {s: info[k][s] for s in ("consumer_seq", "stream_seq")} for k in ("delivered", "ack_floor")}
                got.append((seqs, info["num_pending"], info["num_ack_pending"]))
            return got
        finally:
            await nc.close()


async def test_the_end_found_unread_delivers_as_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    on = await _consumers_seen()
    monkeypatch.setattr(delivery_loop, "EOF_UNREAD", False)
    assert on == await _consumers_seen()
