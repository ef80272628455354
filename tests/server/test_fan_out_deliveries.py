"""A consumer whose deliver subject (or a pull request's reply subject) several client
subscriptions receive, and nothing else, hands each message to each of them itself
(``DeliveryPass.fan_out``, the receivers looked up once a pass: ``Server.client_receivers``), its
messages read in runs — where each message was routed alone (``publish_internal``) and, since a
route may reach an internal subscriber that changes the stream, read alone: one store read per
message (a push consumer with two subscribers on its deliver subject cost ~25 µs a message more
than with one, ~1 µs more in nats-server; session 17, sched10, found in the schedules firing row
of ``bench_scale.py --dim timers``, whose rounds leave a receiver each behind).

Differential, in process (``runs_world``): push consumers (acks explicit with flow control, AckNone,
headers only) and a pull consumer, their subjects received by two or three subscriptions — two
on one connection, one a wildcard —, one of them cut by its auto-unsubscribe in the middle of a
run (what follows routed): every byte each connection gets, and every consumer's state, is the
same with ``FAN_OUT`` on and off. Steps: with it on, the store reads of a pass (``_gather``) do
not grow with the messages delivered (off: one per message)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.server.runs_world import World, frame, request

from pyjetstream.server.jetstream import delivery_pass
from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop

CONSUMERS = {
    "FC": {"deliver_subject": "_D.fc", "ack_policy": "explicit", "flow_control": True,
           "idle_heartbeat": 5_000_000_000},
    "NONE": {"deliver_subject": "_D.none", "ack_policy": "none", "filter_subject": "f.*.1"},
    "HDRS": {"deliver_subject": "_D.hdrs", "ack_policy": "none", "headers_only": True},
    "CUT": {"deliver_subject": "_D.cut", "ack_policy": "none"},
}  # fmt: skip


def _messages(n: int, start: int = 0) -> bytes:
    out = []
    for i in range(start, start + n):
        hdr = None if i % 3 == 0 else b"NATS/1.0\r\nK: %d\r\n\r\n" % (i % 7)
        payload = b"" if i % 11 == 0 else (b"v" * 2000 if i % 13 == 0 else b"p%d" % i)
        out.append(frame(f"f.{i % 40}.{i % 3}", "", hdr, payload))
    return b"".join(out)


class _Gathers:
    n = 0


def _count_gathers(monkeypatch: Any) -> _Gathers:
    """Count the store reads of the delivery passes (`DeliveryLoop._gather` calls)."""
    counted = _Gathers()
    gather = DeliveryLoop._gather

    def counting(self: DeliveryLoop, p: Any) -> Any:
        counted.n += 1
        return gather(self, p)

    monkeypatch.setattr(DeliveryLoop, "_gather", counting)
    return counted


async def _delivered(on: bool, n: int, monkeypatch: Any) -> tuple[list[bytes], dict[str, Any], int, int]:
    """Each connection's bytes, the streams' and consumers' state, the passes' store reads and the
    messages delivered in all."""
    monkeypatch.setattr(delivery_pass, "FAN_OUT", on)
    gathers = _count_gathers(monkeypatch)
    world = World(runs=True)
    await world.start()
    try:
        admin, one, two, three = world.connect(), world.connect(), world.connect(), world.connect()
        world.feed(admin, b"SUB _INBOX.setup 1\r\n")
        world.feed(one, b"SUB _D.fc 1\r\nSUB _D.none 2\r\nSUB _D.hdrs 3\r\nSUB _D.cut 4\r\nSUB _INBOX.pull 5\r\n")
        world.feed(two, b"SUB _D.fc 1\r\nSUB _D.fc 2\r\nSUB _D.* 3\r\nSUB _D.cut 4\r\nUNSUB 4 %d\r\n" % (n // 3))
        world.feed(three, b"SUB _INBOX.pull 1\r\nSUB _D.none 2\r\n")
        world.feed(admin, request("$JS.API.STREAM.CREATE.S", "_INBOX.setup", {"name": "S", "subjects": ["f.>"]}))
        world.feed(admin, _messages(n))
        await world.settle()
        for name, cfg in CONSUMERS.items():
            config = {"name": name, **cfg}
            world.feed(admin, request(f"$JS.API.CONSUMER.CREATE.S.{name}", "_INBOX.setup", {"stream_name": "S", "config": config}))
        config = {"durable_name": "PULL", "ack_policy": "none"}
        world.feed(admin, request("$JS.API.CONSUMER.CREATE.S.PULL", "_INBOX.setup", {"stream_name": "S", "config": config}))
        await world.settle()
        world.feed(three, request("$JS.API.CONSUMER.MSG.NEXT.S.PULL", "_INBOX.pull", {"batch": n, "no_wait": True}))
        world.feed(admin, _messages(n // 10, n))  # (new messages for the consumers that caught up)
        await world.settle()
        assert world.server is not None and world.server.jetstream is not None
        consumers = world.server.jetstream.streams["S"].consumers
        delivered = sum(c.state.dseq - 1 for c in consumers.values())
        outputs = [world.output(c) for c in (one, two, three)]
        return outputs, world.js_state(), gathers.n, delivered
    finally:
        await world.stop()


@pytest.mark.parametrize("n", [300, 3_000])
def test_fan_out_to_several_receivers_equals_routing_each(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    on, state_on, gathers_on, delivered = asyncio.run(_delivered(True, n, monkeypatch))
    off, state_off, gathers_off, delivered_off = asyncio.run(_delivered(False, n, monkeypatch))
    assert on == off
    assert state_on == state_off
    assert delivered == delivered_off
    one, two, three = on
    assert one.count(b"\r\nMSG f.") + one.count(b"\r\nHMSG f.") > n  # (every consumer delivered)
    assert two.count(b" 4 $JS.ACK.S.CUT.") == n // 3  # (the auto-unsubscribed one cut mid-run)
    assert three.count(b" 1 $JS.ACK.S.PULL.") == n  # (a pull request's reply with two receivers)
    # Off, every message is read alone; on, a few reads a consumer (the runs, the new messages,
    # the end found; the cut one's rest read again, the pull request's first message alone) and
    # one per DELIVER_BATCH a pass takes: at 3,000 messages as at 300.
    assert gathers_off >= delivered
    consumers = len(CONSUMERS) + 1
    assert gathers_on <= 4 * consumers + 2 * delivered // delivery_pass.DELIVER_BATCH, (gathers_on, delivered)
