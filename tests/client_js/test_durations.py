"""One rule for durations in the whole Python API (issue 26): seconds (``int`` or ``float``) or a
``timedelta`` in, seconds out, integer nanoseconds on the wire.

Before, ``ConsumerConfig(ack_wait=30)`` was 30 *nanoseconds* (a message came back three times in
1.5 s), ``StreamConfig(max_age=60)`` was refused ("max age needs to be >= 100ms"), and
``KeyValueConfig(ttl=60)`` was 60 seconds. Here every public config field and call parameter that
is a duration is exercised on both targets, and checked against what the server stored (the raw
JSON API, or the raw pull request and headers on the wire) and, where it is cheap, by what the
server does with it. The last test walks the public API and fails when a duration parameter or
field appears that this file does not exercise.
"""

from __future__ import annotations

import base64
import inspect
import json
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.client_js.conftest import wait_for
from tests.support.targets import Target

from pyjetstream import api
from pyjetstream.api.durations import Seconds
from pyjetstream.client import Client, connect
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    KeyValueConfig,
    MsgSchedule,
    ObjectStoreConfig,
    OrderedConsumerConfig,
    PriorityPolicy,
    StreamConfig,
    errors,
    jetstream,
    sync,
)
from pyjetstream.client.jetstream.models import DURATION_FIELDS, StreamConsumerLimits

S = 1_000_000_000  # ns per second

# The three ways to say a duration. The float form adds a quarter second, so it is not an int in disguise.
FORMS: dict[str, Callable[[int], Any]] = {
    "int": lambda s: s,
    "float": lambda s: s + 0.25,
    "timedelta": lambda s: timedelta(seconds=s),
}


def ns_of(value: Any) -> int:
    return round(value.total_seconds() * S) if isinstance(value, timedelta) else round(value * S)


async def raw(nc: Client, subject: str, body: Any = b"") -> dict[str, Any]:
    """The JetStream API's JSON answer as the server wrote it (durations in integer ns)."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    answer: dict[str, Any] = json.loads((await nc.request(subject, payload, timeout=10)).data)
    assert "error" not in answer, answer
    return answer


def exact(read: Any, value: Any) -> None:
    """A duration read back: a Seconds equal to what was given, to the nanosecond."""
    assert type(read) is Seconds, type(read)
    assert read.ns == ns_of(value) and math.isclose(read, ns_of(value) / S)


# ------------------------------------------------------------------------------------ configs


@pytest.mark.parametrize("form", FORMS)
async def test_stream_config(js: JetStream, nc: Client, form: str) -> None:
    f = FORMS[form]
    given = {"max_age": f(3600), "duplicate_window": f(60), "subject_delete_marker_ttl": f(2)}
    limits = f(90)
    stream = await js.create_stream(
        StreamConfig(
            name="D", subjects=["d.>"], allow_msg_ttl=True, consumer_limits=StreamConsumerLimits(inactive_threshold=limits), **given
        )
    )
    stored = (await raw(nc, "$JS.API.STREAM.INFO.D"))["config"]
    for field, value in given.items():
        assert stored[field] == ns_of(value), field
    assert stored["consumer_limits"]["inactive_threshold"] == ns_of(limits)
    for info in (stream.cached_info(), await stream.info()):
        for field, value in given.items():
            exact(getattr(info.config, field), value)
        exact(info.config.consumer_limits.inactive_threshold, limits)
    # A config read back and sent again says exactly what the server holds.
    config = (await stream.info()).config
    config.description = "again"
    await js.update_stream(config)
    again = (await raw(nc, "$JS.API.STREAM.INFO.D"))["config"]
    assert {k: again[k] for k in given} == {k: stored[k] for k in given} and again["description"] == "again"


@pytest.mark.parametrize("form", FORMS)
async def test_consumer_config(js: JetStream, nc: Client, form: str) -> None:
    f = FORMS[form]
    await js.create_stream(StreamConfig(name="D", subjects=["d.>"]))
    pull = {"ack_wait": f(7), "max_expires": f(5), "inactive_threshold": f(600)}
    await js.create_consumer("D", ConsumerConfig(durable="PULL", ack_policy=AckPolicy.EXPLICIT, **pull))
    backoff = [f(1), f(2), f(4)]
    await js.create_consumer("D", ConsumerConfig(durable="BACK", ack_policy=AckPolicy.EXPLICIT, backoff=backoff, max_deliver=5))
    await js.create_push_consumer(
        "D", ConsumerConfig(durable="PUSH", deliver_subject="push.d", idle_heartbeat=f(3), flow_control=True)
    )
    await js.create_consumer(
        "D",
        ConsumerConfig(
            durable="PIN",
            ack_policy=AckPolicy.EXPLICIT,
            priority_groups=["g"],
            priority_policy=PriorityPolicy.PINNED_CLIENT,
            priority_timeout=f(30),
        ),
    )
    checks = {
        "PULL": pull,
        "BACK": {"backoff": backoff, "ack_wait": backoff[0]},  # the server takes ack_wait from backoff
        "PUSH": {"idle_heartbeat": f(3)},
        "PIN": {"priority_timeout": f(30)},
    }
    for name, fields in checks.items():
        stored = (await raw(nc, f"$JS.API.CONSUMER.INFO.D.{name}"))["config"]
        info = await (await js.consumer("D", name)).info()
        for field, value in fields.items():
            if field == "backoff":
                assert stored[field] == [ns_of(v) for v in value]
                for read, v in zip(info.config.backoff, value, strict=True):
                    exact(read, v)
            else:
                assert stored[field] == ns_of(value), (name, field)
                exact(getattr(info.config, field), value)
    # read back, sent back: unchanged
    config = (await js.consumer("D", "PULL")).cached_info().config
    config.description = "again"
    await js.update_consumer("D", config)
    again = (await raw(nc, "$JS.API.CONSUMER.INFO.D.PULL"))["config"]
    assert {k: again[k] for k in pull} == {k: ns_of(v) for k, v in pull.items()}


async def test_the_issue_ack_wait_of_30_is_30_seconds(js: JetStream, nc: Client) -> None:
    """The case the issue found: ``ConsumerConfig(ack_wait=30)`` was 30 ns; ``StreamConfig(max_age=60)``
    was refused; ``KeyValueConfig(ttl=60)`` was already seconds — now all three are."""
    await js.create_stream(StreamConfig(name="O", subjects=["o.>"], max_age=60))
    await js.create_consumer("O", ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT, ack_wait=30))
    kv = await js.create_key_value(KeyValueConfig(bucket="kv", ttl=60))
    assert (await raw(nc, "$JS.API.STREAM.INFO.O"))["config"]["max_age"] == 60 * S
    assert (await raw(nc, "$JS.API.CONSUMER.INFO.O.C"))["config"]["ack_wait"] == 30 * S
    assert (await raw(nc, "$JS.API.STREAM.INFO.KV_kv"))["config"]["max_age"] == 60 * S
    assert (await kv.status()).ttl == 60


async def test_exact_to_the_nanosecond(js: JetStream, nc: Client) -> None:
    """What a float of seconds cannot say survives a read and an update: a max_age set in ns on
    the raw API (2**62 + 1 ns, 146 years and 1 ns) comes back and goes out unchanged."""
    odd = 2**62 + 1
    await raw(nc, "$JS.API.STREAM.CREATE.X", {"name": "X", "subjects": ["x"], "max_age": odd, "storage": "memory"})
    stream = await js.stream("X")
    assert stream.cached_info().config.max_age.ns == odd
    config = stream.cached_info().config
    config.description = "touched"
    await js.update_stream(config)
    assert (await raw(nc, "$JS.API.STREAM.INFO.X"))["config"]["max_age"] == odd


async def test_wire_models_keep_nanoseconds(js: JetStream, nc: Client) -> None:
    """The wire models (``pyjetstream.api``: what the server and the CLI use) are integer ns, and the
    client sends them as they are."""
    await js.create_stream(api.StreamConfig(name="W", subjects=["w"], max_age=90 * S))
    await js.create_consumer("W", api.ConsumerConfig(durable_name="C", ack_wait=45 * S))
    assert (await raw(nc, "$JS.API.STREAM.INFO.W"))["config"]["max_age"] == 90 * S
    info = await (await js.consumer("W", "C")).info()
    assert info.config.ack_wait == 45  # returned in seconds all the same


def test_wrong_kinds_of_duration_are_refused() -> None:
    with pytest.raises(TypeError, match="seconds"):
        StreamConfig(name="S", max_age="60s")
    with pytest.raises(TypeError):
        ConsumerConfig(ack_wait=True)
    with pytest.raises(ValueError):
        ConsumerConfig(backoff=[float("nan")])
    with pytest.raises(TypeError):
        KeyValueConfig(bucket="b", ttl="1h")


# --------------------------------------------------------------------------------- behaviour


async def test_ack_wait_of_one_second_redelivers_after_a_second(js: JetStream) -> None:
    """``ack_wait=1`` (and ``timedelta(seconds=1)``): an unacked message comes back after about a
    second — not at once, as 1 ns did."""
    await js.create_stream(StreamConfig(name="R", subjects=["r.>"]))
    for name, wait in (("INT", 1), ("TD", timedelta(seconds=1))):
        config = ConsumerConfig(durable=name, ack_policy=AckPolicy.EXPLICIT, ack_wait=wait, filter_subject=f"r.{name}")
        consumer = await js.create_consumer("R", config)
        await js.publish(f"r.{name}", name.encode())
        first = await consumer.next(max_wait=5)
        start = time.monotonic()
        again = await consumer.next(max_wait=10)
        elapsed = time.monotonic() - start
        assert again.metadata().num_delivered == 2 and again.data == first.data
        assert 0.8 <= elapsed <= 6, elapsed
        await again.ack()


async def test_nak_with_delay_and_max_age_act_in_seconds(js: JetStream) -> None:
    await js.create_stream(StreamConfig(name="N", subjects=["n"]))
    consumer = await js.create_consumer("N", ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT, ack_wait=30))
    await js.publish("n", b"x")
    msg = await consumer.next(max_wait=5)
    start = time.monotonic()
    await msg.nak_with_delay(timedelta(seconds=1))
    again = await consumer.next(max_wait=10)
    assert 0.8 <= time.monotonic() - start <= 6 and again.metadata().num_delivered == 2
    await again.double_ack(timeout=timedelta(seconds=5))

    stream = await js.create_stream(StreamConfig(name="AGE", subjects=["age"], max_age=timedelta(seconds=1)))
    await js.publish("age", b"short-lived")

    async def expired() -> bool:
        return (await stream.info()).state.messages == 0

    await wait_for(expired, timeout=15, what="max_age=1s to remove the message")


async def test_pause_until_an_offset(js: JetStream, nc: Client) -> None:
    """``pause_consumer(until=30)``: thirty seconds from now (a ``timedelta`` too; a ``datetime`` is
    a point in time); ``pause_remaining`` reads back in seconds."""
    await js.create_stream(StreamConfig(name="P", subjects=["p"]))
    await js.create_consumer("P", ConsumerConfig(durable="C"))
    for until in (30, timedelta(seconds=30), datetime.now(UTC) + timedelta(seconds=30)):
        before = time.time_ns()
        resp = await js.pause_consumer("P", "C", until)
        assert resp.paused and type(resp.pause_remaining) is Seconds and 20 < resp.pause_remaining <= 30.5
        stored = await raw(nc, "$JS.API.CONSUMER.INFO.P.C")
        until_ns = api.NanoTime.parse(stored["config"]["pause_until"])
        assert before + 25 * S < until_ns < time.time_ns() + 31 * S
        assert 20 * S < stored["pause_remaining"] <= 30.5 * S
        info = await (await js.consumer("P", "C")).info()
        assert type(info.pause_remaining) is Seconds and 20 < info.pause_remaining <= 30.5
        assert not (await js.resume_consumer("P", "C")).paused
    stream = await js.stream("P")
    assert (await stream.pause_consumer("C", timedelta(minutes=1))).pause_remaining > 50


async def test_key_value_and_object_store(js: JetStream, nc: Client) -> None:
    kv = await js.create_key_value(KeyValueConfig(bucket="kv", ttl=timedelta(hours=1), limit_marker_ttl=2.5))
    stored = (await raw(nc, "$JS.API.STREAM.INFO.KV_kv"))["config"]
    assert (stored["max_age"], stored["subject_delete_marker_ttl"]) == (3600 * S, 2_500_000_000)
    status = await kv.status()
    exact(status.ttl, 3600)
    exact(status.limit_marker_ttl, 2.5)
    assert KeyValueConfig(bucket="x", ttl=timedelta(minutes=2)).ttl == 120  # read back as seconds
    await kv.create("a", b"1", ttl=timedelta(seconds=5))
    await kv.put("b", b"2")
    await kv.purge("b", ttl=7.5)
    ttl_headers = []
    for seq in (1, 3):
        msg = (await raw(nc, "$JS.API.STREAM.MSG.GET.KV_kv", {"seq": seq}))["message"]
        ttl_headers.append(next(h for h in base64.b64decode(msg["hdrs"]).decode().split("\r\n") if h.startswith("Nats-TTL")))
    assert ttl_headers == ["Nats-TTL: 5s", "Nats-TTL: 7.5s"]
    watcher = await kv.watch("nothing.here")
    assert await watcher.next(timeout=timedelta(seconds=5)) is None
    with pytest.raises(TimeoutError):
        await watcher.next(timeout=timedelta(milliseconds=100))
    watcher.stop()
    await kv.purge_deletes(older_than=timedelta(0))

    obj = await js.create_object_store(ObjectStoreConfig(bucket="ob", ttl=timedelta(days=1)))
    assert (await raw(nc, "$JS.API.STREAM.INFO.OBJ_ob"))["config"]["max_age"] == 86400 * S
    exact((await obj.status()).ttl, 86400)
    watch = await obj.watch()
    assert await watch.next(timeout=timedelta(seconds=5)) is None
    with pytest.raises(TimeoutError):
        await watch.next(timeout=timedelta(milliseconds=100))
    watch.stop()


async def test_publish_options(js: JetStream, nc: Client) -> None:
    await js.create_stream(
        StreamConfig(name="T", subjects=["t.>"], allow_msg_ttl=True, allow_msg_schedules=True)
    )
    await js.publish("t.a", b"x", ttl=timedelta(minutes=1, seconds=30), timeout=timedelta(seconds=5))
    await js.publish("t.b", b"x", ttl=1.5, retry_wait=timedelta(milliseconds=50))
    schedule = MsgSchedule(target="t.out", every=timedelta(hours=1), ttl=timedelta(seconds=90))
    await js.publish("t.sched", b"x", schedule=schedule)
    headers = []
    for seq in (1, 2, 3):
        msg = (await raw(nc, "$JS.API.STREAM.MSG.GET.T", {"seq": seq}))["message"]
        headers.append(base64.b64decode(msg["hdrs"]).decode())
    assert "Nats-TTL: 1m30s" in headers[0] and "Nats-TTL: 1.5s" in headers[1]
    assert "Nats-Schedule: @every 1h0m0s" in headers[2] and "Nats-Schedule-TTL: 1m30s" in headers[2]
    future = await js.publish_async("t.c", b"x", ttl=2, stall_wait=timedelta(seconds=5))
    await js.publish_async_complete(timeout=timedelta(seconds=10))
    assert (await future).seq == 4
    start = time.monotonic()
    with pytest.raises(errors.NoStreamResponse):
        await js.publish("nowhere", b"x", retry_attempts=2, retry_wait=timedelta(milliseconds=200))
    assert time.monotonic() - start >= 0.35  # two waits of 0.2 s


async def test_pull_requests_carry_nanoseconds(js: JetStream, server: Target) -> None:
    """fetch / fetch_bytes / next / consume / messages (plain and ordered): their waits go into the
    pull request (``expires``, ``idle_heartbeat``) as integer ns — seen on the wire by a second
    connection listening to the API subject."""
    await js.create_stream(StreamConfig(name="F", subjects=["f"]))
    consumer = await js.create_consumer("F", ConsumerConfig(durable="C", ack_policy=AckPolicy.EXPLICIT))
    watcher = await connect(server.url)
    requests: list[dict[str, Any]] = []
    sub = await watcher.subscribe("$JS.API.CONSUMER.MSG.NEXT.F.>", cb=lambda m: requests.append(json.loads(m.data)))
    await watcher.flush()
    try:
        start = time.monotonic()
        batch = await consumer.fetch(1, max_wait=timedelta(milliseconds=400))
        assert [m async for m in batch] == [] and 0.3 <= time.monotonic() - start < 5
        await consumer.fetch_bytes(100, max_wait=2.5, heartbeat=timedelta(milliseconds=500))
        with pytest.raises(TimeoutError):
            await consumer.next(max_wait=timedelta(milliseconds=300))
        await consumer.fetch_no_wait(1, max_wait=timedelta(seconds=2))
        ctx = await consumer.consume(lambda m: None, expiry=timedelta(seconds=3), heartbeat=1)
        await wait_for(lambda: _async_true(len(requests) >= 5), what="the consume pull")
        ctx.stop()
        it = await consumer.messages(expiry=4.5, heartbeat=timedelta(seconds=2))
        with pytest.raises(TimeoutError):
            await it.next(timeout=timedelta(milliseconds=100))
        await wait_for(lambda: _async_true(len(requests) >= 6), what="the messages pull")
        it.stop()
        await watcher.flush()
        seen = [(r.get("expires"), r.get("idle_heartbeat")) for r in requests[:6]]
        assert seen == [
            (400_000_000, None),
            (2_500_000_000, 500_000_000),
            (300_000_000, None),
            (None, None),  # no_wait: the guard stays on this side
            (3 * S, S),
            (4_500_000_000, 2 * S),
        ], seen
        ordered = await js.ordered_consumer("F", OrderedConsumerConfig(inactive_threshold=timedelta(minutes=2)))
        await js.publish("f", b"x")
        msgs = await ordered.fetch(1, max_wait=timedelta(seconds=5), heartbeat=timedelta(seconds=1))
        assert [m.data async for m in msgs] == [b"x"]
        stored = (await ordered.info()).config
        exact(stored.inactive_threshold, 120)
        assert requests[-1]["expires"] == 5 * S and requests[-1]["idle_heartbeat"] == S
        assert [m async for m in await ordered.fetch_bytes(10, max_wait=timedelta(seconds=1))] == []
        assert [m async for m in await ordered.fetch_no_wait(1, max_wait=timedelta(seconds=1))] == []
        with pytest.raises(TimeoutError):
            await ordered.next(max_wait=timedelta(milliseconds=300))
        assert requests[-1]["expires"] == 300_000_000
        oc = await js.ordered_consumer("F")
        octx = await oc.consume(lambda m: None, expiry=timedelta(seconds=6), heartbeat=timedelta(seconds=2))
        await wait_for(lambda: _async_true(requests[-1].get("expires") == 6 * S), what="the ordered consume pull")
        octx.stop()
        om = await (await js.ordered_consumer("F")).messages(expiry=timedelta(seconds=7), heartbeat=2)
        assert (await om.next(timeout=timedelta(seconds=5))).data == b"x"
        await wait_for(lambda: _async_true(requests[-1].get("expires") == 7 * S), what="the ordered messages pull")
        om.stop()
    finally:
        await sub.unsubscribe()
        await watcher.close()


async def _async_true(value: bool) -> bool:
    return value


async def test_connection_and_context_options(server: Target) -> None:
    nc = await connect(
        server.url,
        connect_timeout=timedelta(seconds=5),
        reconnect_time_wait=timedelta(milliseconds=250),
        reconnect_jitter=timedelta(0),
        ping_interval=timedelta(minutes=1),
        drain_timeout=timedelta(seconds=10),
    )
    try:
        opts = nc._opts
        assert (opts.connect_timeout, opts.reconnect_time_wait, opts.reconnect_jitter) == (5.0, 0.25, 0.0)
        assert (opts.ping_interval, opts.drain_timeout) == (60.0, 10.0)
        await nc.flush(timeout=timedelta(seconds=5))
        assert await nc.rtt(timeout=timedelta(seconds=5)) < 5
        sub = await nc.subscribe("quiet")  # a responder that never answers
        start = time.monotonic()
        with pytest.raises(TimeoutError):
            await nc.request("quiet", b"?", timeout=timedelta(milliseconds=300))
        assert 0.3 <= time.monotonic() - start < 5
        await sub.next_msg(timeout=timedelta(seconds=5))  # the request itself
        with pytest.raises(TimeoutError):
            await sub.next_msg(timeout=timedelta(milliseconds=100))
        js = jetstream(
            nc,
            timeout=timedelta(seconds=3),
            retry_wait=timedelta(milliseconds=100),
            publish_async_timeout=timedelta(seconds=20),
            publish_async_stall_wait=timedelta(seconds=1),
        )
        assert (js.timeout, js.retry_wait) == (3.0, 0.1)
        assert (js._publisher.ack_timeout, js._publisher.stall_wait) == (20.0, 1.0)
        assert JetStream(nc, timeout=2).timeout == 2.0
        await js.create_stream(StreamConfig(name="B", subjects=["b.>"], allow_atomic=True, allow_batched=True))
        async with js.batch_publisher(timeout=timedelta(seconds=4)) as batch:
            assert batch._timeout == 4.0
            await batch.add("b.1", b"x")
            await batch.commit("b.2", b"y")
        async with js.fast_publisher(ack_timeout=timedelta(seconds=6)) as fast:
            assert fast._ack_timeout == 6.0
            await fast.add("b.3", b"z")
    finally:
        await nc.close()


def test_the_blocking_client(server: Target) -> None:
    """``pyjetstream.sync``: the same configs and calls, the same seconds."""
    with sync.connect(server.url, connect_timeout=timedelta(seconds=5)) as nc:
        js = nc.jetstream(timeout=timedelta(seconds=5))
        stream = js.create_stream(StreamConfig(name="SY", subjects=["sy"], max_age=timedelta(hours=2)))
        exact(stream.cached_info().config.max_age, 7200)
        consumer = stream.create_or_update_consumer(ConsumerConfig(durable="C", ack_wait=12.5))
        exact(consumer.info().config.ack_wait, 12.5)
        future = js.publish_async("sy", b"x")
        assert future.result(timeout=timedelta(seconds=5)).seq == 1


# ------------------------------------------------------------------------- every one is here

# (public callable, duration parameter) pairs exercised above; the walk below must find no other.
EXERCISED_CALLS = {
    ("connect", p) for p in ("connect_timeout", "reconnect_time_wait", "reconnect_jitter", "ping_interval", "drain_timeout")
} | {
    ("Client.request", "timeout"),
    ("Client.flush", "timeout"),
    ("Client.rtt", "timeout"),
    ("Subscription.next_msg", "timeout"),
    ("jetstream", "timeout"),
    ("jetstream", "retry_wait"),
    ("jetstream", "publish_async_timeout"),
    ("jetstream", "publish_async_stall_wait"),
    ("JetStream.__init__", "timeout"),
    ("JetStream.__init__", "retry_wait"),
    ("JetStream.__init__", "publish_async_timeout"),
    ("JetStream.__init__", "publish_async_stall_wait"),
    ("JetStream.publish", "ttl"),
    ("JetStream.publish", "retry_wait"),
    ("JetStream.publish", "timeout"),
    ("JetStream.publish_async", "ttl"),
    ("JetStream.publish_async", "stall_wait"),
    ("JetStream.publish_async_complete", "timeout"),
    ("JetStream.batch_publisher", "timeout"),
    ("JetStream.fast_publisher", "ack_timeout"),
    ("BatchPublisher.__init__", "timeout"),
    ("FastPublisher.__init__", "ack_timeout"),
    ("JetStream.pause_consumer", "until"),
    ("Stream.pause_consumer", "until"),
    ("PullConsumer.fetch", "max_wait"),
    ("PullConsumer.fetch", "heartbeat"),
    ("PullConsumer.fetch_bytes", "max_wait"),
    ("PullConsumer.fetch_bytes", "heartbeat"),
    ("PullConsumer.fetch_no_wait", "max_wait"),
    ("PullConsumer.next", "max_wait"),
    ("PullConsumer.next", "heartbeat"),
    ("PullConsumer.consume", "expiry"),
    ("PullConsumer.consume", "heartbeat"),
    ("PullConsumer.messages", "expiry"),
    ("PullConsumer.messages", "heartbeat"),
    ("MessagesContext.next", "timeout"),
    ("OrderedConsumer.fetch", "max_wait"),
    ("OrderedConsumer.fetch", "heartbeat"),
    ("OrderedConsumer.fetch_bytes", "max_wait"),
    ("OrderedConsumer.fetch_bytes", "heartbeat"),
    ("OrderedConsumer.fetch_no_wait", "max_wait"),
    ("OrderedConsumer.next", "max_wait"),
    ("OrderedConsumer.next", "heartbeat"),
    ("OrderedConsumer.consume", "expiry"),
    ("OrderedConsumer.consume", "heartbeat"),
    ("OrderedConsumer.messages", "expiry"),
    ("OrderedConsumer.messages", "heartbeat"),
    ("OrderedMessagesContext.next", "timeout"),
    ("OrderedConsumerConfig", "inactive_threshold"),
    ("JetStreamMsg.nak_with_delay", "delay"),
    ("JetStreamMsg.double_ack", "timeout"),
    ("KeyValueConfig", "ttl"),
    ("KeyValueConfig", "limit_marker_ttl"),
    ("KeyValue.create", "ttl"),
    ("KeyValue.purge", "ttl"),
    ("KeyValue.purge_deletes", "older_than"),
    ("KeyWatcher.next", "timeout"),
    ("ObjectStoreConfig", "ttl"),
    ("ObjectWatcher.next", "timeout"),
    ("MsgSchedule", "every"),
    ("MsgSchedule", "ttl"),
    ("SyncFuture.result", "timeout"),
}

# Config models: every duration field is exercised by the config tests above.
EXERCISED_FIELDS = {
    "StreamConfig": {"max_age", "duplicate_window", "subject_delete_marker_ttl"},
    "StreamConsumerLimits": {"inactive_threshold"},
    "ConsumerConfig": {"ack_wait", "backoff", "max_expires", "idle_heartbeat", "inactive_threshold", "priority_timeout"},
    "ConsumerInfo": {"pause_remaining"},
    "ConsumerPauseResponse": {"pause_remaining"},
    "StreamSourceInfo": {"active"},  # read only: tests/client_js/test_durable_sourcing.py reads it
    "PeerInfo": {"active"},  # read only: a cluster's replicas (tests/cluster)
}

_DURATION_NAME = ("timeout", "wait", "interval", "expir", "heartbeat", "ttl", "delay", "max_age", "window",
                  "threshold", "backoff", "until", "older_than", "every", "deadline", "jitter")  # fmt: skip
_NOT_DURATIONS = {"threshold_messages", "threshold_bytes", "err_on_missing_heartbeat", "no_wait", "ack_every"}


# Classes users build themselves (the others come from the client's calls).
_BUILT_BY_USERS = {"JetStream", "BatchPublisher", "FastPublisher"}


def _public_surface() -> dict[str, Any]:
    """The public callables: what ``pyjetstream.client`` and ``pyjetstream.client.jetstream`` export,
    and the methods of the classes among them."""
    import pyjetstream.client as core
    import pyjetstream.client.jetstream as js_pkg
    from pyjetstream.client.jetstream.sync import SyncFuture

    out: dict[str, Any] = {}
    for module in (core, js_pkg):
        for name in module.__all__:
            obj = getattr(module, name, None)
            if inspect.isfunction(obj):
                out[name] = obj
            elif inspect.isclass(obj) and obj.__module__.startswith("pyjetstream.client"):
                if "__dataclass_fields__" in vars(obj):
                    out[name] = obj
                for attr, member in vars(obj).items():
                    public = not attr.startswith("_") or (attr == "__init__" and name in _BUILT_BY_USERS)
                    if inspect.isfunction(member) and public:
                        out[f"{name}.{attr}"] = member
    out["SyncFuture.result"] = SyncFuture.result
    # by the function's own name: aliases (Consumer = PullConsumer, Msg, new_jetstream) count once
    return {getattr(fn, "__qualname__", name): fn for name, fn in out.items()}


def test_every_public_duration_is_exercised_here() -> None:
    """A new duration parameter or config field fails this until a test above exercises it (and
    until it is a ``Duration``: seconds or a ``timedelta``, never ns)."""
    found = set()
    for qualname, fn in _public_surface().items():
        for param in inspect.signature(fn).parameters.values():
            annotation = str(param.annotation)
            named = any(word in param.name for word in _DURATION_NAME) and param.name not in _NOT_DURATIONS
            if "Duration" in annotation or named:
                assert "Duration" in annotation or "Seconds" in annotation, f"{qualname}({param.name}: {annotation})"
                if "Seconds" not in annotation:  # a status' field, read only
                    found.add((qualname, param.name))
    assert found - EXERCISED_CALLS == set(), "not exercised by a test here"
    assert EXERCISED_CALLS - found == set(), "exercised here but no longer public"
    assert {name: set(fields) for name, fields in DURATION_FIELDS.items()} == EXERCISED_FIELDS
