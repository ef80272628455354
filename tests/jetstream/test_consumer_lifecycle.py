"""Consumer lifetimes on both targets: ephemerals expire after ``inactive_threshold`` (pull: no
requests or acks; push: nobody subscribed), durables can have a threshold too, durable state
(delivered, ack floor, pending acks, redelivery counts) survives a restart and a ``kill -9``."""

from __future__ import annotations

import asyncio
import time

from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import Target

API = "$JS.API.CONSUMER."
MS = 1_000_000


async def exists(client: RawClient, name: str) -> bool:
    return "error" not in await client.consumer_info("S", name)


async def gone(client: RawClient, name: str) -> bool:
    return not await exists(client, name)


async def fetch(client: RawClient, consumer: str, n: int) -> list[Msg]:
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, {"batch": n, "expires": 3_000 * MS})
    msgs = await sub.collect(n)
    sub.unsubscribe()
    return msgs


async def test_inactive_consumers_are_deleted(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        advisories = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.DELETED.>")
        await client.add_consumer("S", "PULL", inactive_threshold=400 * MS)
        await client.add_consumer("S", "KEPT", inactive_threshold=400 * MS)
        await client.add_consumer("S", "PUSH", deliver_subject="d.p", inactive_threshold=400 * MS)
        await client.add_consumer("S", "BOUND", deliver_subject="d.b", inactive_threshold=400 * MS)
        await client.add_consumer("S", None, durable_name="DUR", inactive_threshold=400 * MS)
        await client.add_consumer("S", None, durable_name="FOREVER")
        bound = client.subscribe("d.b")
        # A pull request waiting (with interest) keeps KEPT alive past its threshold.
        waiting = client.new_inbox()
        wsub = client.subscribe(waiting)
        client.pull("S", "KEPT", waiting, {"batch": 1, "expires": 2_500 * MS})
        await client.flush()
        start = time.monotonic()
        for name in ("PULL", "PUSH", "DUR"):
            await wait_for(lambda name=name: gone(client, name), timeout=5)  # type: ignore[misc]
        assert time.monotonic() - start >= 0.3
        assert (
            await exists(client, "KEPT") and await exists(client, "BOUND") and await exists(client, "FOREVER")
        )
        deleted = {m.subject.rsplit(".", 1)[1] for m in advisories.drain()}
        assert deleted == {"PULL", "PUSH", "DUR"}
        assert (await wsub.next(4)).status == "408"  # its request expired ...
        await wait_for(lambda: gone(client, "KEPT"), timeout=5)  # ... and then it went too
        bound.unsubscribe()
        await wait_for(lambda: gone(client, "BOUND"), timeout=5)
        assert await exists(client, "FOREVER")
    finally:
        await client.close()


async def test_durable_state_survives_restart_and_kill(server: Target, server_kind: str) -> None:
    # nats-server 2.9.10 writes consumer state from a background flusher and does not always write
    # the latest state on shutdown (measured: acks from the last ~second are sometimes lost), so
    # give it a second; ours writes within 0.1 s and again on a graceful stop.
    settle = 1.2 if server_kind == "nats-server" else 0.3
    client = await RawClient.connect(server.url)
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 6)
    await client.add_consumer("S", None, durable_name="D", ack_wait=1_000 * MS)
    await client.add_consumer("S", None, durable_name="P", deliver_subject="d.p", ack_policy="all")
    msgs = await fetch(client, "D", 5)
    await client.request(msgs[0].reply, b"")
    await client.request(msgs[2].reply, b"")
    # With a reply, so it is processed before the next pull (nats-server queues acks and pull
    # requests apart: a flush does not order them).
    await client.request(msgs[3].reply, b"-NAK")
    (again,) = await fetch(client, "D", 1)
    assert (again.stream_seq, again.num_delivered) == (4, 2)
    before = await client.consumer_info("S", "D")
    await client.close()
    await asyncio.sleep(settle)

    server.restart()
    client = await RawClient.connect(server.url)
    after = await client.consumer_info("S", "D")
    for key in ("delivered", "ack_floor"):
        assert after[key]["consumer_seq"] == before[key]["consumer_seq"], key
        assert after[key]["stream_seq"] == before[key]["stream_seq"], key
    assert (after["num_ack_pending"], after["num_redelivered"], after["num_pending"]) == (3, 1, 1)
    assert after["config"] == before["config"]
    assert after["created"][:19] == before["created"][:19]  # nats-server re-reads it at ms precision
    push = await client.consumer_info("S", "P")
    assert push["config"]["deliver_subject"] == "d.p" and push["config"]["ack_policy"] == "all"

    # The unacked ones come back once their ack wait is over, the new one goes out; the
    # delivery sequence numbers on from where it was.
    got = await fetch(client, "D", 4)
    assert sorted((m.stream_seq, m.num_delivered) for m in got) == [(2, 2), (4, 3), (5, 2), (6, 1)]
    assert sorted(m.consumer_seq for m in got) == [7, 8, 9, 10]
    for m in got:
        await client.request(m.reply, b"")
    done = await client.consumer_info("S", "D")
    assert done["num_ack_pending"] == 0 and done["ack_floor"]["stream_seq"] == 6
    await asyncio.sleep(settle)  # a kill -9 loses what was not written yet
    await client.close()

    server.kill()
    server.start()
    client = await RawClient.connect(server.url)
    try:
        killed = await client.consumer_info("S", "D")
        assert killed["ack_floor"]["stream_seq"] == 6 and killed["num_ack_pending"] == 0
        assert killed["delivered"]["consumer_seq"] == 10
    finally:
        await client.close()
