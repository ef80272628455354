"""Fast-ingest batch publish (ADR-50, 2.14+), ours vs nats-server 2.15.1, every reply compared.

A fast batch's messages carry the batch in their ``…$FI`` reply subject; the server answers there
with flow messages (ack / gap / err) and, at the commit, one PubAck with ``batch`` / ``count``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.jetstream.test_batch_atomic import Session, compare
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

from pyjetstream.api.fast_batch import fast_batch_reply


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("fast")
    started = {kind: make_target(kind, base / kind) for kind in (NATS_SERVER, EMBEDDED)}
    yield started
    for target in started.values():
        target.stop()


def fi(batch_id: str, seq: int, op: int, flow: int = 10, gap: str = "fail") -> str:
    return fast_batch_reply("FI", batch_id, flow, gap == "ok", seq, op)


#: A stream no publish names: a publish expecting it is refused (10060) and stores nothing.
BARRIER = headers(("Nats-Expected-Stream", "BARRIER"))


async def drain(s: Session, note: str, subject: str = "s.a") -> None:
    """Every answer that came back on the FI.> subscription, in order, up to the answer to a later
    publish to the same stream (a barrier, refused without storing anything): both servers handle a
    stream's messages in order (nats-server's inbound queue, ``processInboundJetStreamMsg``) and
    answer on this connection in order, so the answers to what was sent before it came first.
    (A wait for 0.5 s of silence lost answers the embedded server sent later than that at load 15.)"""
    refused = (await s.c.request(subject, b"", hdr=BARRIER, timeout=30)).json()
    assert refused["error"]["err_code"] == 10060, refused
    got: list[Any] = []
    for msg in s.c.received():
        try:
            body: Any = json.loads(msg.data, object_pairs_hook=list)
        except ValueError:
            body = msg.data.decode()
        got.append((msg.subject, body))
    s.seen.append((note, got))


def send(s: Session, subject: str, reply: str, data: bytes = b"x", hdr: bytes | None = None) -> None:
    s.c.publish(subject, data, reply=reply, hdr=hdr)


async def scenario(s: Session) -> None:
    s.c.subscribe("FI.>", 91)
    await s.c.flush()
    await s.create("N")
    send(s, "n.a", fi("b0", 1, 0))
    await drain(s, "disabled", "n.a")
    await s.create(allow_batched=True)
    for i in range(1, 8):
        send(s, "s.a", fi("A", i, 0 if i == 1 else 1, flow=2), f"m{i}".encode())
    await drain(s, "flow 2")
    send(s, "s.a", fi("A", 8, 2, flow=2))
    await drain(s, "commit")
    send(s, "s.a", fi("B", 1, 0))
    send(s, "s.a", fi("B", 2, 3))
    await drain(s, "eob")
    send(s, "s.a", fi("C", 1, 2))
    await drain(s, "single commit")
    send(s, "s.a", fi("D", 2, 1))
    await drain(s, "unknown id")
    send(s, "s.a", fi("E", 1, 3))
    send(s, "s.a", fi("E", 2, 0))
    send(s, "s.a", "FI.G.10.maybe.1.0.$FI")
    send(s, "s.a", "FI.G.10.fail.1.9.$FI")
    send(s, "s.a", "FI.G.10.fail.x.1.$FI")
    send(s, "s.a", "G.10.fail.1.0.$FI")
    await drain(s, "bad patterns")
    send(s, "s.a", fi("x" * 65, 1, 0))
    await drain(s, "long id")
    for batch_id, gap in (("F", "fail"), ("H", "ok")):
        send(s, "s.a", fi(batch_id, 1, 0, gap=gap))
        send(s, "s.a", fi(batch_id, 3, 1, gap=gap))
        send(s, "s.a", fi(batch_id, 4, 2, gap=gap))
        await drain(s, f"gap {gap}")
    send(s, "s.a", fi("I", 1, 0))
    send(s, "s.a", fi("I", 1, 4), b"")
    send(s, "s.a", fi("I", 5, 4), b"")
    await drain(s, "ping")
    send(s, "s.a", fi("J", 1, 0), hdr=headers(("Nats-Expected-Stream", "X")))
    await drain(s, "first message refused")
    send(s, "s.a", fi("K", 1, 0))
    send(s, "s.a", fi("K", 2, 1), hdr=headers(("Nats-Expected-Stream", "X")))
    send(s, "s.a", fi("K", 3, 2))
    await drain(s, "later message refused")
    send(s, "s.a", fi("L", 1, 0), hdr=headers(("Nats-Msg-Id", "d1")))
    send(s, "s.a", fi("L", 2, 2), hdr=headers(("Nats-Msg-Id", "d1")))
    await drain(s, "duplicate commit")
    send(s, "s.a", fi("M", 1, 2), hdr=headers(("Nats-Msg-Id", "d1")))
    await drain(s, "duplicate only message")
    send(s, "s.a", fi("N", 1, 0, flow=0))
    send(s, "s.a", fi("N", 2, 2))
    await drain(s, "flow 0")
    send(s, "s.a", fi("O", 1, 0, flow=3))
    send(s, "s.a", fi("P", 1, 0, flow=3))
    for i in range(2, 8):
        send(s, "s.a", fi("O", i, 1, flow=3))
    await drain(s, "two batches share the flow")
    send(s, "s.a", fi("R", 1, 0, gap="ok"))
    send(s, "s.a", fi("R", 2, 1, gap="ok"), hdr=headers(("Nats-Expected-Last-Sequence", "1")))
    send(s, "s.a", fi("R", 3, 2, gap="ok"))
    await drain(s, "gap ok with an error")
    await s.wait_msgs(29)
    await s.stored(8)


async def test_fast_batch_matches_nats_server(pair: dict[str, Target]) -> None:
    await compare(pair, scenario)


async def ids_scenario(s: Session) -> None:
    """Appends carrying what a Spark write sends (a message id, the expected stream): stored, a
    duplicate inside the window skipped, a wrong stream refused, an id beside another Nats- header,
    and the same inside a gap-ok batch."""
    s.c.subscribe("FI.>", 91)
    await s.c.flush()
    await s.create(allow_batched=True, duplicate_window=60_000_000_000)
    for gap in ("fail", "ok"):
        b = f"ids-{gap}"
        send(s, "s.a", fi(b, 1, 0, gap=gap), hdr=headers(("Nats-Msg-Id", f"{gap}1")))
        send(s, "s.a", fi(b, 2, 1, gap=gap), hdr=headers(("Nats-Msg-Id", f"{gap}2"), ("Nats-Expected-Stream", "S")))
        send(s, "s.b", fi(b, 3, 1, gap=gap), hdr=headers(("k", "Nats-"), ("Nats-Msg-Id", f"{gap}3")))
        send(s, "s.a", fi(b, 4, 1, gap=gap), hdr=headers(("Nats-Msg-Id", f"{gap}1")))  # a duplicate
        send(s, "s.a", fi(b, 5, 1, gap=gap), hdr=headers(("Nats-Msg-Id", f"{gap}5"), ("Nats-TTL", "1m")))
        send(s, "s.a", fi(b, 6, 1, gap=gap), hdr=headers(("Nats-Expected-Stream", "T"), ("Nats-Msg-Id", f"{gap}6")))
        send(s, "s.a", fi(b, 7, 1, gap=gap), hdr=headers(("Nats-Msg-Id", f"{gap}7")))
        send(s, "s.a", fi(b, 8, 3, gap=gap))
        await drain(s, f"ids, gap {gap}")
    for seq in range(1, 9):  # 7 stored
        await s.stored(seq)


async def test_fast_batch_appends_with_ids_match_nats_server(pair: dict[str, Target]) -> None:
    await compare(pair, ids_scenario)


LIMITS = {"jetstream_settings": {"limits": {"batch": {"max_inflight_per_stream": 2, "timeout": "1s"}}}}


async def limits_scenario(s: Session) -> None:
    s.c.subscribe("FI.>", 91)
    await s.c.flush()
    await s.create(allow_batched=True)
    send(s, "s.a", fi("A", 1, 0))
    send(s, "s.a", fi("B", 1, 0))
    send(s, "s.a", fi("C", 1, 0))
    await drain(s, "third batch")
    await asyncio.sleep(1.6)  # the batch timeout is what is under test
    send(s, "s.a", fi("A", 2, 2))
    await drain(s, "after the timeout")
    send(s, "s.a", fi("C", 1, 2))
    await drain(s, "room again")
    await s.wait_msgs(3)


async def test_fast_batch_limits_match_nats_server(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("fast-limits")
    started = {kind: make_target(kind, base / kind, **LIMITS) for kind in (NATS_SERVER, EMBEDDED)}
    try:
        await compare(started, limits_scenario)
    finally:
        for target in started.values():
            target.stop()


async def restart_scenario(s: Session) -> None:
    s.c.subscribe("FI.>", 91)
    await s.c.flush()
    await s.create(allow_batched=True)
    for i in range(1, 4):
        send(s, "s.a", fi("A", i, 0 if i == 1 else 1, flow=1))
    await drain(s, "before the kill")
    await s.c.close()
    s.target.kill()
    s.target.start()
    s.client = await RawNats.connect(s.target.url)
    s.c.subscribe("FI.>", 91)
    await s.c.flush()
    await s.wait_msgs(3)
    send(s, "s.a", fi("A", 4, 2, flow=1))
    await drain(s, "the batch did not survive the restart")


async def test_fast_batch_after_kill_restart(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("fast-restart")
    started = {kind: make_target(kind, base / kind) for kind in (NATS_SERVER, EMBEDDED)}
    try:
        await compare(started, restart_scenario)
    finally:
        for target in started.values():
            target.stop()
