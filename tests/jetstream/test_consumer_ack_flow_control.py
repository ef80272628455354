"""⟨2.14+⟩ ADR-60 ``ack_policy: flow_control`` consumers on both targets: the config rules (10218–10222,
the 1 s heartbeat, defaults filled in unless ``pedantic``), and acks carried by flow-control responses
(``Nats-Last-Consumer`` / ``Nats-Last-Stream``), with no ack subscription (a ``+ACK`` gets 503)."""

from __future__ import annotations

import json
from typing import Any

from tests.jetstream.consumer_helpers import RawClient
from tests.support.targets import Target

MS = 1_000_000


async def create(client: RawClient, stream: str, name: str, pedantic: bool = False, **cfg: Any) -> Any:
    body: dict[str, Any] = {"stream_name": stream, "config": {"ack_policy": "flow_control", **cfg}}
    if pedantic:
        body["pedantic"] = True
    return (await client.request(f"$JS.API.CONSUMER.CREATE.{stream}.{name}", json.dumps(body).encode())).json()


async def test_flow_control_ack_config_rules(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.add_stream("W", ["w.>"], retention="workqueue")
        refusals = [
            ({}, False, 10218, "flow control ack policy requires a push based consumer"),
            ({"deliver_subject": "d.c"}, True, 10219, "flow control ack policy requires flow control"),
            (
                {"deliver_subject": "d.d", "flow_control": True},
                True,
                10052,
                "flow control ack policy heartbeat needs to be 1s",
            ),
            ({"deliver_subject": "d.f", "ack_wait": 5000 * MS}, False, 10221, "flow control ack policy requires unset ack wait"),
            ({"deliver_subject": "d.g", "max_deliver": 3}, False, 10222, "flow control ack policy requires unset max deliver"),
            ({"deliver_subject": "d.h", "max_ack_pending": -1}, False, 10220, "flow control ack policy requires max ack pending"),
            ({"deliver_subject": "d.i", "backoff": [1000 * MS]}, False, 10221, "flow control ack policy requires unset ack wait"),
        ]
        for cfg, pedantic, code, text in refusals:
            resp = await create(client, "S", "X", pedantic, **cfg)
            assert (resp["error"]["err_code"], resp["error"]["description"]) == (code, text), cfg
        made = await create(client, "S", "B", deliver_subject="d.b")
        config = made["config"]
        assert (config["flow_control"], config["idle_heartbeat"], config["max_ack_pending"]) == (True, 1000 * MS, 1000)
        assert "ack_wait" not in config
        exact = await create(client, "S", "E", True, deliver_subject="d.e", flow_control=True, idle_heartbeat=1000 * MS)
        assert "error" not in exact
        # A work-queue stream takes it like explicit acks.
        assert "error" not in await create(client, "W", "J", deliver_subject="d.j")
    finally:
        await client.close()


async def test_flow_control_responses_ack(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 5)
        deliveries = client.subscribe("d.k")
        await client.flush()
        assert "error" not in await create(client, "S", "K", deliver_subject="d.k", max_ack_pending=3)
        got = []
        while True:
            m = await deliveries.next(5)
            if m.status == "100" and m.reply:  # at max_ack_pending the server asks for a response
                assert m.description == "FlowControl Request"
                break
            if not m.status:
                got.append(m.stream_seq)
        assert got == [1, 2, 3]
        client.publish(m.reply, b"", hdr=b"NATS/1.0\r\nNats-Last-Consumer: 3\r\nNats-Last-Stream: 3\r\n\r\n")
        await client.flush()
        rest = []
        while len(rest) < 2:
            m = await deliveries.next(5)
            if not m.status:
                rest.append(m.stream_seq)
        assert rest == [4, 5]
        info = await client.consumer_info("S", "K")
        assert info["ack_floor"]["stream_seq"] == 3 and info["num_ack_pending"] == 2
        # No ack subscription: an ack with a reply is answered "no responders".
        assert (await client.request("$JS.ACK.S.K.1.4.4.0.0", b"+ACK", timeout=3)).status == "503"
    finally:
        await client.close()
