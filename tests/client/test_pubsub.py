"""Publish/subscribe over a real socket, against both server targets."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from tests.client.conftest import wait_until
from tests.support.targets import Target

from pyjetstream.client import (
    BadSubjectError,
    BadSubscriptionError,
    Client,
    ConnectionClosedError,
    HeaderBlock,
    HeaderError,
    MaxPayloadError,
    Msg,
    SlowConsumerError,
    TimeoutError,
    connect,
)


async def test_iterator_subscription_receives_in_order(nc: Client) -> None:
    sub = await nc.subscribe("orders")
    await nc.flush()
    for i in range(100):
        await nc.publish("orders", str(i).encode())
    got = []
    async for msg in sub.messages:
        got.append(int(msg.data))
        if len(got) == 100:
            break
    assert got == list(range(100))
    assert msg.subject == "orders" and msg.reply == "" and msg.sid == sub.sid
    assert msg.headers is None and msg.status == 0 and msg.subscription is sub


async def test_sync_and_async_callbacks(nc: Client) -> None:
    plain: list[bytes] = []
    coro: list[bytes] = []

    async def handler(msg: Msg) -> None:
        await asyncio.sleep(0)
        coro.append(msg.data)

    await nc.subscribe("cb", cb=lambda m: plain.append(m.data))
    await nc.subscribe("cb", cb=handler)
    await nc.flush()
    for i in range(50):
        await nc.publish("cb", b"%d" % i)
    expected = [b"%d" % i for i in range(50)]
    await wait_until(lambda: len(plain) == 50 and len(coro) == 50, what="both callbacks")
    assert plain == expected and coro == expected


async def test_callback_exception_goes_to_error_cb(server: Target) -> None:
    errors: list[Exception] = []
    nc = await connect(server.url, error_cb=errors.append)
    try:
        seen: list[bytes] = []

        def boom(msg: Msg) -> None:
            seen.append(msg.data)
            raise RuntimeError("handler failed")

        await nc.subscribe("boom", cb=boom)
        await nc.flush()
        await nc.publish("boom", b"1")
        await nc.publish("boom", b"2")
        await wait_until(lambda: len(errors) == 2, what="errors reported")
        assert seen == [b"1", b"2"]
        assert all(isinstance(e, RuntimeError) for e in errors)
        assert nc.is_connected
    finally:
        await nc.close()


async def test_next_msg_timeout(nc: Client) -> None:
    sub = await nc.subscribe("quiet")
    with pytest.raises(TimeoutError):
        await sub.next_msg(timeout=0.05)
    # The builtin TimeoutError works too.
    with pytest.raises(builtins_timeout()):
        await sub.next_msg(timeout=0.05)


def builtins_timeout() -> type[BaseException]:
    import builtins

    return builtins.TimeoutError


async def test_wildcards(nc: Client, nc2: Client) -> None:
    star = await nc.subscribe("a.*.c")
    gt = await nc.subscribe("a.>")
    await nc.flush()
    for subject in ("a.b.c", "a.x.c", "a.b", "a.b.c.d", "b.b.c"):
        await nc2.publish(subject, subject.encode())
    await nc2.flush()
    assert [(await star.next_msg()).subject for _ in range(2)] == ["a.b.c", "a.x.c"]
    assert [(await gt.next_msg()).subject for _ in range(4)] == ["a.b.c", "a.x.c", "a.b", "a.b.c.d"]
    with pytest.raises(TimeoutError):
        await star.next_msg(timeout=0.05)


async def test_queue_group_delivers_each_message_once(nc: Client, nc2: Client) -> None:
    counts: Counter[str] = Counter()
    received: list[bytes] = []

    def member(name: str):  # type: ignore[no-untyped-def]
        def cb(msg: Msg) -> None:
            counts[name] += 1
            received.append(msg.data)

        return cb

    for name in ("a", "b", "c"):
        await nc.subscribe("work", queue="workers", cb=member(name))
    plain = await nc.subscribe("work")
    await nc.flush()
    for i in range(300):
        await nc2.publish("work", b"%d" % i)
    await wait_until(lambda: len(received) == 300, what="300 queue deliveries")
    assert sorted(received, key=int) == [b"%d" % i for i in range(300)]
    assert len(counts) >= 2  # the server spreads work over the members
    assert [int((await plain.next_msg()).data) for _ in range(300)] == list(range(300))


async def test_auto_unsubscribe_with_max_msgs(nc: Client) -> None:
    sub = await nc.subscribe("limited", max_msgs=3)
    await nc.flush()
    for i in range(10):
        await nc.publish("limited", b"%d" % i)
    await nc.flush()
    got = [m.data async for m in sub.messages]
    assert got == [b"0", b"1", b"2"]
    assert sub.is_closed


async def test_unsubscribe_with_limit_after_some_messages(nc: Client) -> None:
    sub = await nc.subscribe("later")
    await nc.flush()
    await nc.publish("later", b"a")
    assert (await sub.next_msg()).data == b"a"
    await sub.unsubscribe(limit=3)  # 1 received so far: 2 more
    for i in range(5):
        await nc.publish("later", b"%d" % i)
    await nc.flush()
    assert [m.data async for m in sub.messages] == [b"0", b"1"]


async def test_unsubscribe_stops_delivery(nc: Client) -> None:
    got: list[bytes] = []
    sub = await nc.subscribe("stop", cb=lambda m: got.append(m.data))
    await nc.flush()
    await nc.publish("stop", b"1")
    await nc.flush()
    await wait_until(lambda: got == [b"1"])
    await sub.unsubscribe()
    await nc.publish("stop", b"2")
    await nc.flush()
    assert got == [b"1"] and sub.is_closed
    await sub.unsubscribe()  # idempotent


async def test_headers_round_trip_multi_value(nc: Client) -> None:
    sub = await nc.subscribe("hdr")
    await nc.flush()
    await nc.publish("hdr", b"body", headers={"X-One": "1", "X-Many": ["a", "b", "c"], "Mixed-Case": "v a l"})
    msg = await sub.next_msg()
    assert msg.data == b"body"
    assert msg.headers == {"X-One": "1", "X-Many": "a", "Mixed-Case": "v a l"}
    block = msg.header_block
    assert block is not None
    assert block.headers["X-Many"] == ["a", "b", "c"]
    assert block.get("x-one") == "1"
    assert msg.status == 0 and msg.description == ""
    # A HeaderBlock is accepted as is (forwarding), empty headers give an empty block.
    await nc.publish("hdr", b"", headers=block)
    assert (await sub.next_msg()).header_block == block
    await nc.publish("hdr", b"x", headers={})
    empty = await sub.next_msg()
    assert empty.headers == {} and empty.data == b"x"


async def test_invalid_headers_rejected(nc: Client) -> None:
    with pytest.raises(HeaderError):
        await nc.publish("hdr", b"", headers={"Bad Name": "x"})
    with pytest.raises(HeaderError):
        await nc.publish("hdr", b"", headers={"Name": "line\r\nbreak"})


async def test_headers_and_status_from_header_block() -> None:
    msg = Msg("s", b"", raw_headers=b"NATS/1.0 404 No Messages\r\nA: 1\r\nA: 2\r\n\r\n")
    assert msg.status == 404 and msg.description == "No Messages"
    assert msg.headers == {"A": "1"}
    assert msg.header_block == HeaderBlock({"A": ["1", "2"]}, 404, "No Messages")
    assert Msg("s", b"x").header_block is None


async def test_big_payloads(nc: Client, nc2: Client) -> None:
    limit = nc.max_payload
    assert limit >= 1024 * 1024
    sub = await nc.subscribe("big")
    await nc.flush()
    payloads = [bytes([i % 251]) * size for i, size in enumerate((limit, limit - 1, 300_000, 1))]
    for payload in payloads:
        await nc2.publish("big", payload)
    for payload in payloads:
        assert (await sub.next_msg(timeout=5)).data == payload
    with pytest.raises(MaxPayloadError):
        await nc2.publish("big", b"x" * (limit + 1))
    with pytest.raises(MaxPayloadError):
        await nc2.publish("big", b"x" * limit, headers={"A": "b"})
    assert nc2.is_connected


async def test_bad_subjects_rejected_client_side(nc: Client) -> None:
    for subject in ("", "a b", "a\tb", "a\r\nPUB x 1"):
        with pytest.raises(BadSubjectError):
            await nc.publish(subject, b"")
    for subject in ("", "a..b", ".a", "a.", "a.>.b", "a b"):
        with pytest.raises(BadSubjectError):
            await nc.subscribe(subject)
    with pytest.raises(BadSubjectError):
        await nc.subscribe("ok", queue="bad queue")
    with pytest.raises(BadSubjectError):
        await nc.publish("ok", b"", reply="bad reply")
    await nc.flush()
    assert nc.is_connected


async def test_no_echo(server: Target) -> None:
    quiet = await connect(server.url, no_echo=True)
    try:
        sub = await quiet.subscribe("echo")
        await quiet.flush()
        await quiet.publish("echo", b"mine")
        await quiet.flush()
        with pytest.raises(TimeoutError):
            await sub.next_msg(timeout=0.1)
    finally:
        await quiet.close()


async def test_slow_consumer_drops_and_reports(server: Target) -> None:
    errors: list[Exception] = []
    nc = await connect(server.url, error_cb=errors.append)
    try:
        sub = await nc.subscribe("flood", pending_msgs_limit=10)
        await nc.flush()
        for i in range(50):
            await nc.publish("flood", b"%d" % i)
        await nc.flush()
        await wait_until(lambda: sub.received == 50, what="all 50 received")
        assert sub.pending_msgs == 10 and sub.dropped == 40
        slow = [e for e in errors if isinstance(e, SlowConsumerError)]
        assert len(slow) == 1 and slow[0].sid == sub.sid
        assert [(await sub.next_msg()).data for _ in range(10)] == [b"%d" % i for i in range(10)]
    finally:
        await nc.close()


async def test_iterator_api_misuse(nc: Client) -> None:
    sub = await nc.subscribe("cbmode", cb=lambda m: None)
    with pytest.raises(BadSubscriptionError):
        await sub.next_msg()
    with pytest.raises(BadSubscriptionError):
        sub.messages  # noqa: B018


async def test_stats_count_messages_and_bytes(nc: Client) -> None:
    sub = await nc.subscribe("stats")
    await nc.flush()
    for _ in range(5):
        await nc.publish("stats", b"12345")
    for _ in range(5):
        await sub.next_msg()
    stats = nc.stats
    assert stats["out_msgs"] == 5 and stats["out_bytes"] == 25
    assert stats["in_msgs"] == 5 and stats["in_bytes"] == 25


async def test_properties(server: Target) -> None:
    nc = await connect(server.url, name="props")
    assert nc.is_connected and not nc.is_closed
    assert nc.connected_url == server.url
    assert nc.server_info["max_payload"] == nc.max_payload
    assert isinstance(nc.client_id, int)
    assert nc.new_inbox().startswith("_INBOX.") and nc.new_inbox() != nc.new_inbox()
    assert 0 < await nc.rtt() < 1
    await nc.close()
    assert nc.is_closed and not nc.is_connected and nc.connected_url is None


async def test_operations_after_close_raise(server: Target) -> None:
    nc = await connect(server.url)
    sub = await nc.subscribe("x")
    await nc.close()
    await nc.close()  # idempotent
    with pytest.raises(ConnectionClosedError):
        await nc.publish("x", b"")
    with pytest.raises(ConnectionClosedError):
        await nc.subscribe("x")
    with pytest.raises(ConnectionClosedError):
        await nc.flush()
    with pytest.raises(ConnectionClosedError):
        await nc.request("x", b"")
    with pytest.raises(ConnectionClosedError):
        await sub.next_msg()
    assert [m async for m in sub.messages] == []


async def test_close_delivers_buffered_publishes(server: Target, nc2: Client) -> None:
    sub = await nc2.subscribe("last")
    await nc2.flush()
    nc = await connect(server.url)
    for i in range(1000):
        await nc.publish("last", b"%d" % i)
    await nc.close()
    got = [(await sub.next_msg(timeout=5)).data for _ in range(1000)]
    assert got == [b"%d" % i for i in range(1000)]


async def test_async_context_manager(server: Target) -> None:
    async with await connect(server.url) as nc:
        await nc.flush()
    assert nc.is_closed


async def test_publish_burst_is_coalesced(nc: Client, nc2: Client) -> None:
    """Ten thousand publishes in one loop turn go out as a handful of large writes, and all arrive."""
    sub = await nc2.subscribe("burst")
    await nc2.flush()
    writes: list[int] = []
    transport = nc._transport
    assert transport is not None
    original = transport.write

    def counting_write(data: bytes | bytearray | memoryview) -> None:
        writes.append(len(data))
        original(data)

    transport.write = counting_write  # type: ignore[method-assign]
    try:
        for i in range(10_000):
            nc.publish_nowait("burst", b"%05d" % i)
        await nc.flush()
    finally:
        transport.write = original  # type: ignore[method-assign]
    assert sum(writes) > 10_000 * 20
    assert len(writes) < 40  # ~64 KiB chunks, not 10k small writes
    got = [(await sub.next_msg(timeout=5)).data for _ in range(10_000)]
    assert got == [b"%05d" % i for i in range(10_000)]


async def test_publish_requests_nowait_frames_a_run(nc: Client) -> None:
    """A run of publishes with numbered replies: each arrives as ``publish_nowait`` would have sent
    it (with and without headers, dict or encoded block); an invalid message buffers nothing."""
    sub = await nc.subscribe("run.*")
    await nc.flush()
    messages = [
        ("run.a", b"zero", None),
        ("run.b", bytearray(b"one"), {"X-A": "1"}),
        ("run.a", b"", b"NATS/1.0\r\nNats-Msg-Id: m2\r\n\r\n"),
    ]
    nc.publish_requests_nowait(messages, "_R.x.", [7, 8, 12])
    got = [await sub.next_msg(timeout=5) for _ in range(3)]
    assert [(m.subject, m.reply, m.data, m.headers) for m in got] == [
        ("run.a", "_R.x.7", b"zero", None),
        ("run.b", "_R.x.8", b"one", {"X-A": "1"}),
        ("run.a", "_R.x.12", b"", {"Nats-Msg-Id": "m2"}),
    ]
    sent = nc.stats["out_msgs"]
    with pytest.raises(BadSubjectError):
        nc.publish_requests_nowait([("run.a", b"x", None), ("bad subject", b"y", None)], "_R.x.", [1, 2])
    with pytest.raises(HeaderError):
        nc.publish_requests_nowait([("run.a", b"x", None), ("run.a", b"y", b"not a block")], "_R.x.", [1, 2])
    with pytest.raises(BadSubjectError):
        nc.publish_requests_nowait([("run.a", b"x", None)], "_R x.", [1])
    with pytest.raises(MaxPayloadError):
        nc.publish_requests_nowait([("run.a", b"x" * (nc.max_payload + 1), None)], "_R.x.", [1])
    assert nc.stats["out_msgs"] == sent
    await nc.publish("run.end", b"end")
    assert (await sub.next_msg(timeout=5)).data == b"end"


async def test_runs_subscription_gets_reply_runs(nc: Client) -> None:
    """``subscribe_runs``: messages without headers or reply come as runs (subjects, payloads), in
    order, many per call; one with headers (or a reply) comes to the message callback."""
    runs: list[tuple[list[bytes], list[bytes]]] = []
    others: list[Msg] = []
    sub = await nc.subscribe_runs("acks.*", lambda s, p: runs.append((s, p)), others.append)
    await nc.flush()
    for i in range(200):
        nc.publish_nowait(f"acks.{i}", b"%d" % i)
    await nc.publish("acks.h", b"with", headers={"A": "1"})
    await nc.publish("acks.r", b"reply", reply="x.y")
    await wait_until(lambda: sum(len(p) for _, p in runs) == 200 and len(others) == 2, timeout=10)
    assert [s for r in runs for s in r[0]] == [b"acks.%d" % i for i in range(200)]
    assert [p for r in runs for p in r[1]] == [b"%d" % i for i in range(200)]
    assert len(runs) < 200  # many per call
    assert [(m.data, m.headers, m.reply) for m in others] == [(b"with", {"A": "1"}, ""), (b"reply", None, "x.y")]
    assert sub.delivered == 202
    await sub.unsubscribe()


async def test_payload_types(nc: Client) -> None:
    sub = await nc.subscribe("types")
    await nc.flush()
    await nc.publish("types", bytearray(b"ba"))
    await nc.publish("types", memoryview(b"mv"))
    with pytest.raises(TypeError):
        await nc.publish("types", "not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        await nc.publish("types", 5)  # type: ignore[arg-type]
    await nc.publish("types", b"ok")
    assert [(await sub.next_msg()).data for _ in range(3)] == [b"ba", b"mv", b"ok"]
    assert nc.is_connected


async def test_frames_subscription_gets_raw_runs(nc: Client) -> None:
    """``subscribe_frames``: header-carrying messages come as runs of raw frames (header block and
    payload offsets into the received bytes), in order, many per call; messages without headers too."""
    got: list[tuple[bytes, bytes]] = []
    calls = 0

    def on_frames(buf: bytes, offsets: list[int]) -> None:
        nonlocal calls
        calls += 1
        for i in range(0, len(offsets), 3):
            h, p, e = offsets[i : i + 3]
            got.append((buf[h:p], buf[p:e]))

    sub = await nc.subscribe_frames("raw.in", on_frames)
    await nc.flush()
    for i in range(2000):
        await nc.publish("raw.in", b"%04d" % i, headers={"N": str(i)} if i % 500 else None)
    await nc.flush()
    await wait_until(lambda: len(got) == 2000)
    assert [payload for _, payload in got] == [b"%04d" % i for i in range(2000)]
    assert got[1][0] == b"NATS/1.0\r\nN: 1\r\n\r\n" and got[0][0] == b""
    assert calls < 2000  # runs, not one call per message
    assert sub.delivered == 2000
    await sub.unsubscribe()
    await nc.publish("raw.in", b"late", headers={"N": "x"})
    await nc.flush()
    assert len(got) == 2000
