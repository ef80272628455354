"""⟨2.14+⟩ ``CONSUMER.RESET`` on both targets: the reply (ConsumerInfo + ``reset_seq``), the ack
floor as default, the deliver-policy rules and errors (10204, 10025), what is delivered after a
reset, and the reset state surviving a restart and a ``kill -9``. The answers are also compared
with nats-server's in one transcript."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from tests.jetstream.consumer_helpers import Msg, RawClient
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

MS = 1_000_000
RESET = "$JS.API.CONSUMER.RESET.S."


def normalise(text: str) -> str:
    text = re.sub(r'"(created|ts|last_active)":"[^"]*"', r'"\1":"T"', text)
    return re.sub(r',"metadata":\{[^}]*\}', "", text)


async def fetch(client: RawClient, consumer: str, n: int, expires_ms: int = 2000) -> list[Msg]:
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, {"batch": n, "expires": expires_ms * MS})
    msgs = await sub.collect(n)
    sub.unsubscribe()
    return msgs


async def transcript(url: str) -> list[str]:
    out: list[str] = []
    client = await RawClient.connect(url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 5)
        await client.add_consumer("S", "C")
        got = await fetch(client, "C", 3)
        await client.request(got[0].reply, b"")
        await client.add_consumer("S", "N", deliver_policy="new")
        await client.add_consumer("S", "Q", deliver_policy="by_start_sequence", opt_start_seq=3)
        steps = [
            ("C", b""),
            ("C", b'{"seq":4}'),
            ("C", b'{"seq":0}'),
            ("C", b"{bad"),
            ("C", b'{"seq":"x"}'),
            ("C", b'{"seq":-1}'),
            ("C", b"[1]"),
            ("C", b'{"seq":100}'),
            ("N", b'{"seq":2}'),
            ("N", b""),
            ("Q", b'{"seq":2}'),
            ("Q", b'{"seq":3}'),
        ]
        for consumer, body in steps:
            reply = await client.request(RESET + consumer, body)
            out.append(f"{consumer} {body!r} -> {reply.hdr!r} {normalise(reply.data.decode())}")
        again = await fetch(client, "Q", 3)
        out.append(repr([(m.stream_seq, m.consumer_seq, m.num_delivered) for m in again]))
    finally:
        await client.close()
    return out


async def test_reset_same_as_nats_server(tmp_path: Path) -> None:
    results = {}
    for kind in (NATS_SERVER, EMBEDDED):
        target = make_target(kind, tmp_path / kind)
        try:
            results[kind] = await transcript(target.url)
        finally:
            target.stop()
    ours, theirs = results[EMBEDDED], results[NATS_SERVER]
    assert any('"reset_seq":2' in line for line in theirs)
    assert any("invalid reset: not allowed" in line for line in theirs)
    assert ours == theirs


async def test_reset_redelivers_and_survives_restart_and_kill(server: Target) -> None:
    client = await RawClient.connect(server.url)
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 4)
    await client.add_consumer("S", None, durable_name="D")
    first = await fetch(client, "D", 4)
    for m in first[:3]:
        await client.request(m.reply, b"")
    reply = (await client.request(RESET + "D", b'{"seq":2}')).json()
    assert reply["reset_seq"] == 2
    assert (reply["delivered"], reply["ack_floor"]) == (
        {"consumer_seq": 0, "stream_seq": 1},
        {"consumer_seq": 0, "stream_seq": 1},
    )
    assert (reply["num_ack_pending"], reply["num_pending"]) == (0, 3)
    # Delivered again from 2, as first deliveries with consumer sequences from 1.
    again = await fetch(client, "D", 2)
    assert [(m.stream_seq, m.consumer_seq, m.num_delivered) for m in again] == [(2, 1, 1), (3, 2, 1)]
    for m in again:
        await client.request(m.reply, b"")
    await client.close()
    await asyncio.sleep(1.2)  # nats-server writes consumer state from a background flusher

    for stop in ("restart", "kill"):
        if stop == "restart":
            server.restart()
        else:
            server.kill()
            server.start()
        client = await RawClient.connect(server.url)
        try:
            info = await client.consumer_info("S", "D")
            assert (info["delivered"]["consumer_seq"], info["delivered"]["stream_seq"]) == (2, 3), stop
            assert info["ack_floor"]["stream_seq"] == 3 and info["num_pending"] == 1, stop
        finally:
            await client.close()

    client = await RawClient.connect(server.url)
    try:
        (last,) = await fetch(client, "D", 1)
        assert (last.stream_seq, last.consumer_seq) == (4, 3)
    finally:
        await client.close()


async def test_reset_forward_on_interest_stream_drops_skipped_messages(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"], retention="interest")
        await client.add_consumer("S", "C")
        await client.publish_many("s.a", 4)
        assert (await client.stream_info("S"))["state"]["messages"] == 4
        reply = (await client.request(RESET + "C", b'{"seq":3}')).json()
        assert reply["reset_seq"] == 3
        for _ in range(50):
            if (await client.stream_info("S"))["state"]["messages"] == 2:
                break
            await asyncio.sleep(0.1)
        state = (await client.stream_info("S"))["state"]
        assert (state["messages"], state["first_seq"]) == (2, 3)
    finally:
        await client.close()
