"""Streams through the client: management, listing, info, purge, stored messages (both targets)."""

from __future__ import annotations

import pytest
from tests.support.targets import Target

from pyjetstream.api import StorageType
from pyjetstream.client import Client, connect
from pyjetstream.client.jetstream import (
    JetStream,
    StreamConfig,
    errors,
    jetstream,
)


async def test_stream_crud(js: JetStream) -> None:
    created = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    assert created.name == "ORDERS"
    info = created.cached_info()
    assert info.config.subjects == ["ORDERS.*"] and info.config.max_msgs == -1  # server defaults applied
    # Idempotent with the same config, refused with a different one.
    await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.*"]))
    with pytest.raises(errors.StreamNameAlreadyInUse) as exc_info:
        await js.create_stream(StreamConfig(name="ORDERS", subjects=["OTHER.*"]))
    assert exc_info.value.err_code == 10058 and exc_info.value.code == 400

    updated = await js.update_stream(
        StreamConfig(name="ORDERS", subjects=["ORDERS.*"], description="updated")
    )
    assert updated.cached_info().config.description == "updated"
    with pytest.raises(errors.StreamNotFound):
        await js.update_stream(StreamConfig(name="MISSING", subjects=["missing"]))

    both = await js.create_or_update_stream(StreamConfig(name="EVENTS", subjects=["events.>"]))
    assert both.cached_info().config.name == "EVENTS"
    both = await js.create_or_update_stream(StreamConfig(name="EVENTS", subjects=["events.>"], max_msgs=10))
    assert both.cached_info().config.max_msgs == 10

    handle = await js.stream("ORDERS")
    assert handle.cached_info().config.description == "updated"
    await js.delete_stream("ORDERS")
    with pytest.raises(errors.StreamNotFound):
        await js.stream("ORDERS")
    with pytest.raises(errors.StreamNotFound):
        await js.delete_stream("ORDERS")


async def test_invalid_stream_requests(js: JetStream) -> None:
    with pytest.raises(errors.InvalidStreamName):
        await js.create_stream(StreamConfig(name="A.B"))
    with pytest.raises(errors.StreamNameRequired):
        await js.stream("")
    with pytest.raises(errors.JetStreamAPIError) as exc_info:
        await js.create_stream(StreamConfig(name="BAD", subjects=["x"], max_age=0.01))  # 10 ms < 100 ms
    assert exc_info.value.err_code == 10052  # invalid config, the server's own code and text
    await js.create_stream(StreamConfig(name="S1", subjects=["shared"]))
    with pytest.raises(errors.StreamSubjectOverlap):
        await js.create_stream(StreamConfig(name="S2", subjects=["shared"]))


async def test_listing_with_paging_and_subject_filter(js: JetStream) -> None:
    # More streams than one STREAM.LIST page (256) so the iterator has to page.
    for i in range(260):
        await js.create_stream(
            StreamConfig(name=f"S{i:03d}", subjects=[f"s.{i}"], storage=StorageType.MEMORY)
        )
    infos = [info async for info in js.list_streams()]
    assert len(infos) == 260 and {i.config.name for i in infos} == {f"S{i:03d}" for i in range(260)}
    names = [name async for name in js.stream_names()]
    assert sorted(names) == sorted(f"S{i:03d}" for i in range(260))
    assert [n async for n in js.stream_names(subject="s.7")] == ["S007"]
    assert [i.config.name async for i in js.list_streams(subject="s.12")] == ["S012"]
    assert [n async for n in js.stream_names(subject="nothing.here")] == []
    assert await js.stream_name_by_subject("s.42") == "S042"
    with pytest.raises(errors.StreamNotFound):
        await js.stream_name_by_subject("nothing.here")
    account = await js.account_info()
    assert account.streams == 260


async def test_info_subjects_and_deleted_details(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="ORDERS", subjects=["ORDERS.>"]))
    for i in range(10):
        await js.publish(f"ORDERS.{i % 3}", b"x")
    await js.publish("ORDERS.x.y", b"x")
    info = await stream.info(subject_filter="ORDERS.*")
    assert info.state.subjects == {"ORDERS.0": 4, "ORDERS.1": 3, "ORDERS.2": 3}
    assert stream.cached_info().state.subjects == {}  # details are not cached
    await stream.delete_msg(2)
    await stream.delete_msg(5)
    info = await stream.info(deleted_details=True)
    assert info.state.deleted == [2, 5] and info.state.num_deleted == 2
    assert stream.cached_info().state.messages == 9


async def test_purge_variants(js: JetStream) -> None:
    stream = await js.create_stream(StreamConfig(name="P", subjects=["p.*"]))

    async def fill() -> None:
        for i in range(10):
            await js.publish("p.a" if i % 2 else "p.b", b"%d" % i)

    await fill()
    assert await stream.purge(subject="p.a") == 5
    assert (await stream.info()).state.messages == 5
    assert await stream.purge() == 5
    await fill()
    assert await stream.purge(keep=2) == 8
    assert (await stream.info()).state.messages == 2
    assert await stream.purge(subject="p.b", keep=0) == 1
    await fill()
    last = (await stream.info()).state.last_seq
    assert await stream.purge(sequence=last - 1) == 9
    assert (await stream.info()).state.first_seq == last - 1
    with pytest.raises(errors.InvalidOption):
        await stream.purge(sequence=5, keep=1)
    assert await stream.purge() == 2
    assert (await stream.info()).state.messages == 0


@pytest.mark.parametrize("allow_direct", [False, True])
async def test_get_and_delete_messages(js: JetStream, allow_direct: bool) -> None:
    stream = await js.create_stream(StreamConfig(name="G", subjects=["g.*"], allow_direct=allow_direct))
    await js.publish("g.a", b"one", headers={"X-Trace": "1"})
    await js.publish("g.b", b"two")
    await js.publish("g.a", b"three")
    msg = await stream.get_msg(1)
    assert (msg.subject, msg.sequence, msg.data) == ("g.a", 1, b"one")
    assert msg.headers is not None and msg.headers["X-Trace"] == "1"
    assert msg.time > 0
    nxt = await stream.get_msg(2, next_by_subject="g.a")
    assert (nxt.sequence, nxt.data) == (3, b"three")
    last = await stream.get_last_msg_for_subject("g.b")
    assert (last.sequence, last.data) == (2, b"two")
    with pytest.raises(errors.MsgNotFound):
        await stream.get_msg(99)
    with pytest.raises(errors.MsgNotFound):
        await stream.get_last_msg_for_subject("g.none")
    await stream.delete_msg(1)
    await stream.secure_delete_msg(3)
    with pytest.raises(errors.MsgNotFound):
        await stream.get_msg(1)
    with pytest.raises(errors.JetStreamAPIError):
        await stream.delete_msg(1)
    assert (await stream.info()).state.messages == 1
    # Both ways of getting agree whatever the stream allows.
    if allow_direct:
        assert (await stream.get_msg(2, direct=False)).data == b"two"


async def test_a_direct_get_nobody_answers_falls_back_to_the_api(js: JetStream) -> None:
    """A stream that allows direct gets is read with them, unless nobody answers (a cluster's
    replicas a moment after the stream was made): then STREAM.MSG.GET, which the leader answers.
    Here the stream stops allowing them after the handle cached its info."""
    stream = await js.create_stream(StreamConfig(name="DG", subjects=["dg.*"], allow_direct=True))
    await js.publish("dg.a", b"one")
    await js.update_stream(StreamConfig(name="DG", subjects=["dg.*"], allow_direct=False))
    assert stream.cached_info().config.allow_direct
    assert (await stream.get_last_msg_for_subject("dg.a")).data == b"one"
    assert (await stream.get_msg(1)).data == b"one"
    with pytest.raises(errors.JetStreamError) as caught:
        await stream.get_msg(1, direct=True)  # asked for by the caller: no fallback
    assert caught.value.code == 503


async def test_domain_prefixes(start_server: object) -> None:
    target: Target = start_server(jetstream_settings={"domain": "hub"})  # type: ignore[operator]
    nc: Client = await connect(target.url)
    try:
        js = jetstream(nc, domain="hub")
        assert js.api_prefix == "$JS.hub.API"
        stream = await js.create_stream(StreamConfig(name="D", subjects=["d"]))
        ack = await js.publish("d", b"x")
        assert ack.domain == "hub" and ack.seq == 1
        assert (await stream.get_msg(1)).data == b"x"
        prefixed = jetstream(nc, api_prefix="$JS.hub.API.")
        assert [n async for n in prefixed.stream_names()] == ["D"]
        assert (await js.account_info()).domain == "hub"
        wrong = jetstream(nc, domain="elsewhere", timeout=1)
        with pytest.raises(errors.JetStreamNotEnabled):
            await wrong.account_info()
    finally:
        await nc.close()


async def test_jetstream_disabled(start_server: object) -> None:
    target: Target = start_server(jetstream=False)  # type: ignore[operator]
    nc: Client = await connect(target.url)
    try:
        with pytest.raises(errors.JetStreamNotEnabled) as exc_info:
            await jetstream(nc).account_info()
        assert exc_info.value.code == 503
    finally:
        await nc.close()
