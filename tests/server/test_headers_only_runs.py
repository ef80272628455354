"""A headers-only consumer's new messages are framed by ``DeliveryPass.frame_run`` like any other
consumer's, each turned into its headers-only form there (``delivery_pass.headers_only``: the header
block with ``Nats-Msg-Size``, no payload), not handed one by one to the general per-message loop
(``DeliveryLoop._deliver_msgs``): a KV ``keys()`` (an ordered push consumer, last per subject,
headers only) cost ~1.5x a full watch per key (session 14, flags5).

Differential, in process (``runs_world``): push consumers with and without flow control, last per
subject and from the start, a pull consumer, over messages with and without headers (some with a
payload of zero bytes, one an inline size and one a large one) — every byte each connection gets is
the same with ``FRAME_HEADERS_ONLY`` on and off. Steps: with it on, no message goes the general way
but each pass's first, at 500 as at 5,000 messages (off: every one)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.server.runs_world import World, count_general, frame, request

from pyjetstream.server.jetstream import delivery_pass

CONSUMERS = {
    "FC": {"deliver_subject": "_D.fc", "flow_control": True, "idle_heartbeat": 5_000_000_000},
    "LPS": {"deliver_subject": "_D.lps", "deliver_policy": "last_per_subject", "flow_control": True,
            "idle_heartbeat": 5_000_000_000, "filter_subject": "h.>"},
    "PLAIN": {"deliver_subject": "_D.plain", "ack_policy": "explicit", "filter_subject": "h.*.1"},
}  # fmt: skip


def _messages(n: int) -> bytes:
    out = []
    for i in range(n):
        hdr = None if i % 3 == 0 else b"NATS/1.0\r\nK: %d\r\n\r\n" % (i % 7)
        payload = b"" if i % 11 == 0 else (b"v" * 2000 if i % 13 == 0 else b"p%d" % i)
        out.append(frame(f"h.{i % 40}.{i % 3}", "", hdr, payload))
    return b"".join(out)


async def _delivered(on: bool, n: int, monkeypatch: Any) -> tuple[list[bytes], int, int]:
    """Each receiving connection's bytes, the messages handed to ``_deliver_msgs`` and those
    delivered in all."""
    monkeypatch.setattr(delivery_pass, "FRAME_HEADERS_ONLY", on)
    general = count_general(monkeypatch)
    world = World(runs=True)
    await world.start()
    try:
        admin, push, pull = world.connect(), world.connect(), world.connect()
        world.feed(admin, b"SUB _INBOX.setup 1\r\n")
        world.feed(push, b"SUB _D.fc 1\r\nSUB _D.lps 2\r\nSUB _D.plain 3\r\n")
        world.feed(pull, b"SUB _INBOX.pull 1\r\n")
        world.feed(admin, request("$JS.API.STREAM.CREATE.S", "_INBOX.setup", {"name": "S", "subjects": ["h.>"]}))
        world.feed(admin, _messages(n))
        await world.settle()
        for name, cfg in CONSUMERS.items():
            config = {"name": name, "headers_only": True, "ack_policy": "none", **cfg}
            world.feed(admin, request(f"$JS.API.CONSUMER.CREATE.S.{name}", "_INBOX.setup", {"stream_name": "S", "config": config}))
        config = {"durable_name": "PULL", "headers_only": True, "ack_policy": "none"}
        world.feed(admin, request("$JS.API.CONSUMER.CREATE.S.PULL", "_INBOX.setup", {"stream_name": "S", "config": config}))
        await world.settle()
        world.feed(pull, request("$JS.API.CONSUMER.MSG.NEXT.S.PULL", "_INBOX.pull", {"batch": n, "no_wait": True}))
        world.feed(admin, _messages(n // 10))  # (new messages for the consumers that caught up)
        await world.settle()
        assert world.server is not None and world.server.jetstream is not None
        consumers = world.server.jetstream.streams["S"].consumers
        delivered = sum(c.state.dseq - 1 for c in consumers.values())
        return [world.output(push), world.output(pull)], general.n, delivered
    finally:
        await world.stop()


@pytest.mark.parametrize("n", [500, 5_000])
def test_headers_only_framed_in_runs_equals_one_by_one(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    on, general_on, delivered = asyncio.run(_delivered(True, n, monkeypatch))
    off, general_off, delivered_off = asyncio.run(_delivered(False, n, monkeypatch))
    assert on == off
    push, pull = on
    assert push.count(b"HMSG h.") + pull.count(b"HMSG h.") == delivered == delivered_off
    both = b"\r\n" + push + pull
    assert b"Nats-Msg-Size: 2000\r\n" in both and b"Nats-Msg-Size: 0\r\n" in both and b"\r\nMSG h." not in both
    assert general_off == delivered
    # The first message of a pass goes the general way (it finds the receiver); the rest are framed.
    print("STEPS", n, general_on, general_off, delivered, [x.count(b"HMSG") for x in on])
    assert general_on <= 40, (general_on, delivered)
