"""Streams through nats-py's JetStream API, on both targets: what an application sees."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import nats
import pytest
from nats.js import api
from nats.js.errors import APIError, BadRequestError, NotFoundError, ServerError
from tests.support.targets import Target


@pytest.fixture
async def nc(server: Target) -> AsyncIterator[nats.NATS]:
    conn = await nats.connect(server.url)
    yield conn
    await conn.close()


async def test_stream_lifecycle(nc: nats.NATS) -> None:
    jsm = nc.jsm()
    info = await jsm.add_stream(name="ORDERS", subjects=["orders.*"], description="orders")
    assert info.config.name == "ORDERS"
    assert info.config.subjects == ["orders.*"]
    assert info.config.max_msgs == -1 and info.config.max_bytes == -1
    assert info.config.duplicate_window == 120.0
    assert info.config.storage == api.StorageType.FILE
    assert info.state.messages == 0

    info = await jsm.update_stream(name="ORDERS", subjects=["orders.*", "returns.>"], max_msgs=100)
    assert info.config.subjects == ["orders.*", "returns.>"]
    assert info.config.max_msgs == 100

    assert await jsm.find_stream_name_by_subject("returns.a.b") == "ORDERS"
    infos = await jsm.streams_info()
    assert [i.config.name for i in infos] == ["ORDERS"]

    assert await jsm.delete_stream("ORDERS") is True
    with pytest.raises(NotFoundError) as exc:
        await jsm.stream_info("ORDERS")
    assert exc.value.err_code == 10059


async def test_publish_and_dedupe(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="S", subjects=["s.>"])
    ack = await js.publish("s.one", b"1")
    assert (ack.stream, ack.seq, ack.duplicate) == ("S", 1, None)
    ack = await js.publish("s.two", b"2", headers={"Nats-Msg-Id": "id-2"})
    assert ack.seq == 2
    ack = await js.publish("s.two", b"2 again", headers={"Nats-Msg-Id": "id-2"})
    assert (ack.seq, ack.duplicate) == (2, True)
    ack = await js.publish("s.three", b"3", stream="S")
    assert ack.seq == 3
    with pytest.raises(APIError) as exc:
        await js.publish("s.four", b"4", stream="OTHER")
    assert exc.value.err_code == 10060
    with pytest.raises(APIError) as exc:
        await js.publish("s.four", b"4", headers={"Nats-Expected-Last-Sequence": "2"})
    assert exc.value.err_code == 10071
    assert exc.value.description == "wrong last sequence: 3"
    info = await js.stream_info("S")
    assert info.state.messages == 3 and info.state.last_seq == 3


async def test_get_and_delete_messages(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="KV", subjects=["kv.>"], allow_direct=True)
    for i in range(5):
        await js.publish(f"kv.k{i % 2}", f"v{i}".encode(), headers={"X-N": str(i)})

    msg = await js.get_msg("KV", seq=3)
    assert (msg.subject, msg.seq, msg.data) == ("kv.k0", 3, b"v2")
    assert msg.headers == {"X-N": "2"}
    last = await js.get_last_msg("KV", "kv.k1")
    assert (last.seq, last.data) == (4, b"v3")
    nxt = await js.get_msg("KV", seq=2, subject="kv.k0", next=True)
    assert nxt.seq == 3

    direct = await js.get_msg("KV", seq=5, direct=True)
    assert (direct.subject, direct.seq, direct.data) == ("kv.k0", 5, b"v4")
    assert direct.headers["Nats-Stream"] == "KV"
    direct_last = await js.get_last_msg("KV", "kv.k1", direct=True)
    assert direct_last.seq == 4
    with pytest.raises(NotFoundError):
        await js.get_msg("KV", seq=99, direct=True)

    assert await js.delete_msg("KV", 3) is True
    with pytest.raises(NotFoundError) as exc:
        await js.get_msg("KV", seq=3)
    assert exc.value.err_code == 10037
    with pytest.raises(BadRequestError):  # neither seq nor subject: 10003
        await js.get_msg("KV")
    info = await js.stream_info("KV")
    assert info.state.messages == 4 and info.state.num_deleted == 1


async def test_purge_variants(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="P", subjects=["p.*"])
    for i in range(9):
        await js.publish(f"p.{'abc'[i % 3]}", b"x")
    assert await js.purge_stream("P", subject="p.a") is True
    info = await js.stream_info("P", subjects_filter=">")
    assert info.state.messages == 6 and info.state.subjects == {"p.b": 3, "p.c": 3}
    await js.purge_stream("P", subject="p.b", keep=1)
    assert (await js.stream_info("P")).state.messages == 4
    await js.purge_stream("P", seq=8)
    info = await js.stream_info("P")
    assert (info.state.messages, info.state.first_seq) == (2, 8)
    await js.purge_stream("P")
    info = await js.stream_info("P")
    assert (info.state.messages, info.state.first_seq, info.state.last_seq) == (0, 10, 9)


async def test_config_errors_are_typed(nc: nats.NATS) -> None:
    jsm = nc.jsm()
    await jsm.add_stream(name="A", subjects=["a.>"])
    with pytest.raises(BadRequestError) as exc:
        await jsm.add_stream(name="B", subjects=["a.b"])
    assert exc.value.err_code == 10065
    with pytest.raises(BadRequestError) as exc:
        await jsm.add_stream(name="A", subjects=["a.>"], max_msgs=5)
    assert exc.value.err_code == 10058
    with pytest.raises(ServerError) as exc:
        await jsm.add_stream(name="C", max_age=0.01)
    assert (exc.value.err_code, exc.value.description) == (10052, "max age needs to be >= 100ms")


async def test_account_info(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="F", subjects=["f"])
    await js.add_stream(name="M", subjects=["m"], storage=api.StorageType.MEMORY)
    await js.publish("f", b"x" * 100)
    await js.publish("m", b"y" * 100)
    info = await js.account_info()
    assert info.streams == 2 and info.consumers == 0
    assert info.storage == 131  # file record: 30 bytes of framing + subject + payload
    assert info.memory == 117  # memory: 16 bytes + subject + payload
    assert info.limits.max_streams == -1


async def test_api_counts_requests_and_errors(nc: nats.NATS) -> None:
    async def stats() -> tuple[int, int]:
        info = await nc.jsm().account_info()
        return info.api.total, info.api.errors

    total, errors = await stats()
    await nc.request("$JS.API.STREAM.INFO.NOPE", b"")
    await nc.request("$JS.API.STREAM.NAMES", b"")
    assert await stats() == (total + 3, errors + 1)


async def test_account_info_counts_the_requests_answered_before_it(nc: nats.NATS) -> None:
    """nats-server counts a request when it answers it (``trackAPI`` in ``sendAPIResponse``): the
    account INFO does not count itself yet (nats.py's AccountLimitsTest expects 4 after 4 calls)."""
    first = await nc.jsm().account_info()
    assert (first.api.total, first.api.errors) == (0, 0)
    await nc.request("$JS.API.STREAM.INFO.NOPE", b"")
    second = await nc.jsm().account_info()
    assert (second.api.total, second.api.errors) == (2, 1)


async def _wait_messages(js: object, stream: str, count: int) -> int:
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        got = (await js.stream_info(stream)).state.messages  # type: ignore[attr-defined]
        if got == count or asyncio.get_running_loop().time() > deadline:
            return got
        await asyncio.sleep(0.02)


async def test_workqueue_removes_acked_messages(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="WQ", subjects=["wq.*"], retention=api.RetentionPolicy.WORK_QUEUE)
    for i in range(4):
        await js.publish(f"wq.{i}", b"job")
    sub = await js.pull_subscribe("wq.*", durable="workers", stream="WQ")
    msgs = await sub.fetch(3, timeout=5)
    for msg in msgs[:2]:
        await msg.ack_sync()
    assert await _wait_messages(js, "WQ", 2) == 2
    info = await js.stream_info("WQ")
    assert info.state.first_seq == 3


async def test_interest_keeps_until_every_consumer_acked(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="IN", subjects=["in.>"], retention=api.RetentionPolicy.INTEREST)
    ack = await js.publish("in.x", b"nobody listens")  # no consumer yet: not kept
    assert ack.seq == 1
    assert await _wait_messages(js, "IN", 0) == 0
    a = await js.pull_subscribe("in.>", durable="a", stream="IN")
    b = await js.pull_subscribe("in.>", durable="b", stream="IN")
    await js.publish("in.y", b"for both")
    assert await _wait_messages(js, "IN", 1) == 1
    (msg,) = await a.fetch(1, timeout=5)
    await msg.ack_sync()
    assert await _wait_messages(js, "IN", 1) == 1  # b still needs it
    (msg,) = await b.fetch(1, timeout=5)
    await msg.ack_sync()
    assert await _wait_messages(js, "IN", 0) == 0
    await js.publish("in.z", b"pending for both")
    await js.delete_consumer("IN", "a")
    await js.delete_consumer("IN", "b")
    assert await _wait_messages(js, "IN", 0) == 0  # no interest left


async def test_interest_only_keeps_what_a_consumer_filters(nc: nats.NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="IF", subjects=["if.*"], retention=api.RetentionPolicy.INTEREST)
    await js.pull_subscribe("if.a", durable="only-a", stream="IF")
    assert (await js.publish("if.a", b"kept")).seq == 1
    assert (await js.publish("if.b", b"nobody wants it")).seq == 2  # sequence used, nothing stored
    info = await js.stream_info("IF")
    assert (info.state.messages, info.state.last_seq) == (1, 2)
