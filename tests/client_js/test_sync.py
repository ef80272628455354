"""The blocking facade: same names without await, from plain threads (both targets)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from tests.support.targets import Target

from pyjetstream.api import AckPolicy
from pyjetstream.client.jetstream import (
    ConsumerConfig,
    KeyValueConfig,
    ObjectStoreConfig,
    PubAck,
    StreamConfig,
    errors,
    sync,
)


def _wait(predicate, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_sync_streams_publish_fetch_consume(server: Target) -> None:
    with sync.connect(server.url) as nc:
        js = nc.jetstream()
        stream = js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
        for i in range(30):
            ack = js.publish("ORDERS.new", b"%d" % i)
        assert isinstance(ack, PubAck) and ack.seq == 30
        assert list(js.stream_names()) == ["ORDERS"]
        assert stream.info().state.messages == 30
        consumer = stream.create_or_update_consumer(
            ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT)
        )
        fetched = []
        for msg in consumer.fetch(10, max_wait=5):
            msg.ack()
            fetched.append(msg.data)
        assert fetched == [b"%d" % i for i in range(10)]
        with pytest.raises(errors.MsgAlreadyAcked):
            msg.ack()

        got: list[bytes] = []
        threads: set[str] = set()

        def handler(msg) -> None:  # type: ignore[no-untyped-def]
            threads.add(threading.current_thread().name)
            msg.ack()  # a blocking call from inside the handler
            got.append(msg.data)

        cc = consumer.consume(handler)
        _wait(lambda: len(got) == 20)
        cc.stop()
        assert got == [b"%d" % i for i in range(10, 30)]
        assert threading.current_thread().name not in threads

        it = consumer.messages()
        js.publish("ORDERS.new", b"via messages")
        msg = it.next(timeout=5)
        msg.ack()
        it.stop()
        assert msg.data == b"via messages"

        future = js.publish_async("ORDERS.new", b"async")
        assert future.result(timeout=5).seq == 32
        js.publish_async_complete(timeout=5)
        with pytest.raises(errors.StreamNotFound):
            js.stream("MISSING")


# The two tests below use the project's own pytest plugin (pyjetstream.testing): `nats_sync_client` is a
# blocking connection to a server shared by the session, with a clean slate per test, on both kinds
# (`nats_server_kinds` in pyproject.toml). (This directory's conftest keeps `nc`/`js` for its async tests.)


def test_sync_kv_and_object_store(nats_sync_client: Any) -> None:
    js = nats_sync_client.jetstream()
    kv = js.create_key_value(KeyValueConfig(bucket="cfg"))
    kv.put("a", b"1")
    assert kv.get("a").value == b"1"
    assert kv.keys() == ["a"]
    watcher = kv.watch_all()
    assert next(iter(watcher)).key == "a"
    watcher.stop()
    store = js.create_object_store(ObjectStoreConfig(bucket="files"))
    store.put_bytes("f", b"x" * 200_000)
    assert store.get_bytes("f") == b"x" * 200_000
    assert [chunk for chunk in store.get("f")] and store.get_info("f").chunks == 2


def test_sync_from_many_threads(nats_sync_client: Any) -> None:
    js = nats_sync_client.jetstream()
    js.create_stream(StreamConfig(name="T", subjects=["t"]))
    errors_seen: list[BaseException] = []

    def publisher() -> None:
        try:
            for _ in range(50):
                js.publish("t", b"x")
        except BaseException as exc:  # pragma: no cover - reported below
            errors_seen.append(exc)

    workers = [threading.Thread(target=publisher) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors_seen
    assert js.stream("T").info().state.messages == 200
