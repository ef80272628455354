"""What clients rely on from 2.11+ servers, on both targets: stream ``consumer_limits`` applied to
and reported on consumers (and their errors), ``pedantic`` creates refused where the server would
change the config, and the 503 no-responders status for a pull from a missing consumer and for
an ack (with reply) on an AckNone consumer."""

from __future__ import annotations

from typing import Any

from tests.jetstream.consumer_helpers import RawClient
from tests.support.targets import Target

MS = 1_000_000
API = "$JS.API.CONSUMER."


def body(stream: str = "L", pedantic: bool = False, **cfg: Any) -> dict[str, Any]:
    cfg.setdefault("ack_policy", "explicit")
    out: dict[str, Any] = {"stream_name": stream, "config": cfg}
    if pedantic:
        out["pedantic"] = True
    return out


async def test_stream_consumer_limits(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream(
            "L", ["l.>"], consumer_limits={"inactive_threshold": 10_000 * MS, "max_ack_pending": 50}
        )
        made = await client.api(API + "CREATE.L.A", body())
        assert (made["config"]["max_ack_pending"], made["config"]["inactive_threshold"]) == (50, 10_000 * MS)
        durable = await client.api(API + "CREATE.L.D", body(durable_name="D"))
        assert durable["config"]["inactive_threshold"] == 10_000 * MS  # durables get it too
        within = await client.api(API + "CREATE.L.B", body(max_ack_pending=20, inactive_threshold=MS))
        assert (within["config"]["max_ack_pending"], within["config"]["inactive_threshold"]) == (20, MS)
        over = await client.api(API + "CREATE.L.C", body(max_ack_pending=100))
        assert over["error"] == {
            "code": 400,
            "err_code": 10121,
            "description": "consumer max ack pending exceeds system limit of 50",
        }
        over = await client.api(API + "CREATE.L.C", body(inactive_threshold=20_000 * MS))
        assert over["error"] == {
            "code": 400,
            "err_code": 10153,
            "description": "consumer inactive threshold exceeds system limit of 10s",
        }
        # AckNone keeps max_ack_pending 0 only without a stream limit.
        none = await client.api(API + "CREATE.L.N", body(ack_policy="none"))
        assert none["config"]["max_ack_pending"] == 50
    finally:
        await client.close()


PEDANTIC: list[tuple[dict[str, Any], str]] = [
    ({}, "max_ack_pending must be set if it's configured in stream limits"),
    ({"max_ack_pending": 10}, "inactive_threshold must be set if it's configured in stream limits"),
    ({"max_deliver": -5}, "max_deliver must be set to -1"),
    ({"max_waiting": -1}, "max_waiting must not be negative"),
    ({"max_ack_pending": -2}, "max_ack_pending must be set to -1"),
    ({"max_batch": -1}, "max_batch must not be negative"),
    ({"max_expires": -1}, "max_expires must not be negative"),
    ({"max_bytes": -1}, "max_bytes must not be negative"),
    ({"inactive_threshold": -1}, "inactive_threshold must not be negative"),
    ({"backoff": [2_000 * MS, 4_000 * MS], "max_deliver": 5}, "first backoff value has to equal batch AckWait"),
]


async def test_pedantic_create_refuses_changes(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream(
            "L", ["l.>"], consumer_limits={"inactive_threshold": 10_000 * MS, "max_ack_pending": 50}
        )
        await client.add_stream("S", ["s.>"])
        for cfg, text in PEDANTIC:
            stream = "L" if not cfg or ("max_ack_pending" in cfg and cfg["max_ack_pending"] == 10) else "S"
            resp = await client.api(API + f"CREATE.{stream}.P", body(stream, pedantic=True, **cfg))
            assert resp["error"] == {"code": 400, "err_code": 10157, "description": f"pedantic mode: {text}"}, cfg
        # Nothing to change: accepted as it is.
        exact = body(
            "L", pedantic=True, max_ack_pending=10, inactive_threshold=MS, ack_wait=30_000 * MS, max_deliver=-1
        )
        resp = await client.api(API + "CREATE.L.OK", exact)
        assert "error" not in resp and resp["config"]["max_ack_pending"] == 10
    finally:
        await client.close()


async def test_no_responders_for_missing_consumers_and_ack_none(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        for subject in (API + "MSG.NEXT.S.NOPE", API + "MSG.NEXT.NOPE.NOPE"):
            resp = await client.request(subject, b'{"batch":1,"expires":1000000000}', timeout=3)
            assert resp.status == "503" and resp.header("Nats-Subject") == subject
        await client.publish_many("s.a", 1)
        await client.add_consumer("S", "N", ack_policy="none", deliver_subject="d.n")
        deliveries = client.subscribe("d.n")
        await client.flush()
        msg = await deliveries.next()
        assert (await client.request(msg.reply, b"+ACK", timeout=3)).status == "503"
        # An explicit-ack consumer answers the same ack with an empty reply.
        await client.add_consumer("S", "E", deliver_subject="d.e")
        explicit = client.subscribe("d.e")
        await client.flush()
        msg = await explicit.next()
        ok = await client.request(msg.reply, b"+ACK", timeout=3)
        assert ok.status == "" and ok.data == b""
    finally:
        await client.close()


async def test_no_responders_once_a_served_pull_consumer_is_gone(server: Target) -> None:
    """A pull request to a consumer answered many times over, then deleted, gets no-responders
    at once (the API router remembers the last subscriptions it found serving a subject: a
    deletion makes them others), and again a message once the consumer is back."""
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 5)
        subject = API + "MSG.NEXT.S.P"
        for _ in range(2):
            await client.add_consumer("S", "P", ack_policy="none")
            for i in range(3):
                msg = await client.request(subject, b'{"batch":1,"expires":1000000000}', timeout=3)
                assert msg.status == "" and msg.data, (i, msg.status)
            resp = await client.api(API + "DELETE.S.P", {})
            assert resp.get("success") is True
            gone = await client.request(subject, b'{"batch":1,"expires":1000000000}', timeout=3)
            assert gone.status == "503" and gone.header("Nats-Subject") == subject
    finally:
        await client.close()
