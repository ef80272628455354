"""Scale-out, proven: our client on a 3-node nats-server 2.15.1 cluster while the node it is connected to dies.

R3 stream, KV bucket and object bucket created by our client; a publisher (idempotent: ``msg_id`` per
message, retried until acknowledged), a fetch loop, a ``consume()`` callback and a KV writer + watcher
all keep running while the client's node is killed with SIGKILL and restarted. At the end every
acknowledged message is in the stream exactly once, both consumers saw all of them, and the watcher
saw every key's last value.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.cluster import Cluster, start_cluster

import pyjetstream as pjs
from pyjetstream.client.jetstream import ObjectStoreConfig

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("cluster"), pytest.mark.timeout(240)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    c = start_cluster(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.stop()


async def _until(check, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


async def test_workloads_survive_killing_the_connected_node(cluster: Cluster) -> None:
    nc = await pjs.connect(
        cluster.urls, reconnect_time_wait=0.2, max_reconnect_attempts=-1, dont_randomize=True, name="scale"
    )
    js = pjs.jetstream(nc, timeout=3.0, retry_attempts=5, retry_wait=0.5)
    stream = await js.create_stream(
        pjs.StreamConfig(name="ORDERS", subjects=["orders.>"], num_replicas=3)
    )
    assert stream.cached_info().config.num_replicas == 3
    kv = await js.create_key_value(pjs.KeyValueConfig(bucket="cfg", replicas=3))
    obj = await js.create_object_store(ObjectStoreConfig(bucket="blobs", replicas=3))
    blob = bytes(range(256)) * 1000
    await obj.put_bytes("blob.bin", blob)
    fetcher = await stream.create_or_update_consumer(
        pjs.ConsumerConfig(durable="FETCH", ack_policy=pjs.AckPolicy.EXPLICIT, ack_wait=2)
    )
    consumer = await stream.create_or_update_consumer(
        pjs.ConsumerConfig(durable="CONSUME", ack_policy=pjs.AckPolicy.EXPLICIT, ack_wait=2)
    )

    acked: set[int] = set()
    fetched: set[int] = set()
    consumed: set[int] = set()
    kv_written: dict[str, int] = {}
    kv_watched: dict[str, int] = {}
    stop_publishing = asyncio.Event()
    errors: list[str] = []

    async def publish() -> None:
        i = 0
        while not stop_publishing.is_set():
            while True:  # the same msg_id until acknowledged: the stream dedupes a retried publish
                try:
                    await js.publish(f"orders.{i % 7}", str(i).encode(), msg_id=f"o-{i}", timeout=2.0)
                    break
                except Exception as exc:
                    errors.append(f"publish {i}: {exc!r}")
                    await asyncio.sleep(0.1)
            acked.add(i)
            i += 1
            await asyncio.sleep(0.002)

    async def fetch_loop() -> None:
        while True:
            try:
                batch = await fetcher.fetch(50, max_wait=1.0)
                async for msg in batch:
                    fetched.add(int(msg.data))
                    await msg.ack()
            except Exception as exc:
                errors.append(f"fetch: {exc!r}")
                await asyncio.sleep(0.2)

    async def on_msg(msg: pjs.Msg) -> None:
        consumed.add(int(msg.data))
        await msg.ack()

    ctx = await consumer.consume(on_msg, expiry=2.0, heartbeat=0.5)

    async def kv_writer() -> None:
        i = 0
        while not stop_publishing.is_set():
            key = f"k{i % 5}"
            try:
                await kv.put(key, str(i).encode())
                kv_written[key] = i
            except Exception as exc:
                errors.append(f"kv put {key}: {exc!r}")
                await asyncio.sleep(0.1)
                continue
            i += 1
            await asyncio.sleep(0.01)

    watcher = await kv.watch_all()

    async def kv_watch() -> None:
        async for entry in watcher:
            if entry is not None:
                kv_watched[entry.key] = int(entry.value)

    tasks = [asyncio.create_task(t()) for t in (publish, fetch_loop, kv_writer, kv_watch)]
    try:
        await _until(lambda: len(acked) >= 200 and len(kv_written) == 5, 60, "traffic before the kill")
        victim = cluster.node_for(nc.connected_url)
        victim.kill()
        killed_at = len(acked)
        # the client moves to another node; publishing resumes (new stream leader if it was the victim)
        await _until(lambda: nc.is_connected and nc.connected_url != victim.url, 30, "reconnect elsewhere")
        await _until(lambda: len(acked) >= killed_at + 100, 60, "publishes acked after the kill")
        # the object written before the kill is readable with its node down. If the victim led the
        # idle OBJ_blobs stream, nats-server 2.15.1 leaves it leaderless for a while (seen: 21 s with a
        # second cluster busy on the same 2 cores): direct gets answer "no responders" and the ordered
        # consumer's create times out until a new leader is elected
        deadline = time.monotonic() + 60
        while True:
            try:
                assert (await (await obj.get("blob.bin")).read()) == blob
                break
            except (pjs.errors.JetStreamError, TimeoutError) as exc:
                errors.append(f"object get: {exc!r}")
                assert time.monotonic() < deadline, errors[-5:]
                await asyncio.sleep(0.2)
        victim.start()
        cluster.wait_healthy(60)
        restarted_at = len(acked)
        await _until(lambda: len(acked) >= restarted_at + 100, 60, "publishes acked after the restart")
        stop_publishing.set()
        await asyncio.wait_for(tasks[0], 30)
        await asyncio.wait_for(tasks[2], 30)
        total = len(acked)
        assert acked == set(range(total))
        await _until(lambda: len(fetched) >= total, 60, "the fetch loop to see every message")
        await _until(lambda: len(consumed) >= total, 60, "consume() to see every message")
        await _until(lambda: kv_watched == kv_written, 60, "the KV watcher to see every last value")
    finally:
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(BaseException):
                await t
        with contextlib.suppress(Exception):
            ctx.stop()
        with contextlib.suppress(Exception):
            watcher.stop()

    # nothing acknowledged lost, nothing duplicated: the stream holds each message exactly once
    state = (await stream.info()).state
    print(f"{total} messages, {len(errors)} retried operations:", errors[:10])
    assert state.messages == total, errors[-20:]
    assert fetched == set(range(total)) and consumed == set(range(total))
    for key, value in kv_written.items():
        assert int((await kv.get(key)).value) == value
    await nc.close()


@pytest.mark.parametrize("retry_attempts", [30, 0])
async def test_api_requests_retried_through_a_leader_election(cluster: Cluster, retry_attempts: int) -> None:
    """A consumer create right after the meta and stream leader dies: answered once a new leader is
    elected, because the client retries API requests that time out or get 10008 (without retries,
    the same request fails, which is what the retries are for)."""
    nc = await pjs.connect(cluster.urls, reconnect_time_wait=0.2, max_reconnect_attempts=-1)
    try:
        js = pjs.jetstream(nc, timeout=1.0)
        stream = await js.create_stream(pjs.StreamConfig(name="ELECT", subjects=["elect.>"], num_replicas=3))
        # the create is answered before the new stream's interest reaches every node: "no responders"
        # for a moment (3 tries in 0.5 s were not enough on a loaded CI machine)
        await js.publish("elect.a", b"x", retry_attempts=60, retry_wait=0.25)
        meta_leader = cluster.nodes[0].jsz()["meta_cluster"]["leader"]
        leader = next(n for n in cluster.nodes if n.name == meta_leader)
        # the stream's leader moves to the meta leader's node, so one kill takes both leaders down
        if stream.cached_info().cluster.leader != meta_leader:
            body = b'{"placement":{"preferred":"%s"}}' % meta_leader.encode()
            await nc.request("$JS.API.STREAM.LEADER.STEPDOWN.ELECT", body, timeout=5)
        # our client sits on a node that survives
        if cluster.node_for(nc.connected_url) is leader:
            await nc.close()
            nc = await pjs.connect([n.url for n in cluster.nodes if n is not leader], reconnect_time_wait=0.2)
        js = pjs.jetstream(nc, timeout=1.0, retry_attempts=retry_attempts, retry_wait=0.2)
        leader.kill()
        config = pjs.ConsumerConfig(durable="AFTER", ack_policy=pjs.AckPolicy.EXPLICIT)
        if retry_attempts == 0:
            with pytest.raises((TimeoutError, pjs.errors.JetStreamAPIError)):
                await js.create_consumer("ELECT", config)
            return
        consumer = await js.create_consumer("ELECT", config)
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while not got and time.monotonic() < deadline:  # the consumer's own leader may still be settling
            with contextlib.suppress(Exception):
                got = [m.data async for m in await consumer.fetch(1, max_wait=2)]
        assert got == [b"x"]
    finally:
        await nc.close()
