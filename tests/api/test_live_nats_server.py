"""The vocabulary against a live nats-server: what we encode is accepted and echoed as we model it,
and layouts written by a real client (nats-py) decode with our models."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client
from tests.support.targets import NATS_SERVER, Target, make_target

from pyjetstream.api import (
    AckPolicy,
    ConsumerConfig,
    ConsumerCreateResponse,
    CreateConsumerRequest,
    DeliverPolicy,
    DiscardPolicy,
    JSApi,
    MsgGetRequest,
    MsgGetResponse,
    NanoTime,
    PullRequest,
    ReplayPolicy,
    RePublish,
    StorageType,
    StoreCompression,
    StreamConfig,
    StreamCreateResponse,
    StreamInfo,
    StreamInfoResponse,
    StreamSource,
    codec,
    kv,
    objstore,
)
from pyjetstream.api.ack import nak_payload, parse_ack_payload, parse_ack_reply
from pyjetstream.api.models_account import AccountInfo
from pyjetstream.api.responses import AccountInfoResponse

js = JSApi()


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    t = make_target(NATS_SERVER, Path(tmp_path_factory.mktemp("api-live")))
    yield t
    t.stop()


@pytest.fixture
async def nc(target: Target) -> AsyncIterator[Client]:
    conn = await nats.connect(target.url)
    yield conn
    await conn.drain()


async def _api(nc: Client, subject: str, body: object = b"") -> bytes:
    payload = body if isinstance(body, bytes) else codec.encode(body)
    return (await nc.request(subject, payload, timeout=5)).data


async def test_full_stream_config_is_accepted_and_echoed(nc: Client) -> None:
    cfg = StreamConfig(
        name="LIVE_FULL",
        description="all <the> & fields",
        subjects=["live.full.>"],
        max_consumers=5,
        max_msgs=100,
        max_bytes=1 << 20,
        max_age=3600 * 10**9,
        max_msgs_per_subject=3,
        max_msg_size=4096,
        discard=DiscardPolicy.NEW,
        storage=StorageType.MEMORY,
        num_replicas=1,
        duplicate_window=30 * 10**9,
        republish=RePublish(src="live.full.>", dest="re.>", headers_only=True),
        allow_direct=True,
        discard_new_per_subject=True,
        deny_delete=True,
        allow_rollup_hdrs=True,
        # 2.10+ fields: a 2.9.10 server ignores them, so they must not break the request
        compression=StoreCompression.S2,
        metadata={"team": "a"},
    )
    resp = codec.decode_response(await _api(nc, js.stream_create(cfg.name), cfg), StreamCreateResponse)
    codec.raise_for_error(resp)
    echoed = resp.payload().config
    expected = StreamConfig(**{f: getattr(cfg, f) for f in cfg.__struct_fields__})
    # The server adds the level the config requires and (in replies) its own version and level.
    assert echoed.metadata.pop("_nats.req.level") == "0"
    assert {echoed.metadata.pop("_nats.ver"), echoed.metadata.pop("_nats.level")} == {"2.15.1", "5"}
    assert echoed == expected


async def test_sources_with_nanosecond_start_time(nc: Client) -> None:
    await _api(nc, js.stream_create("LIVE_A"), StreamConfig(name="LIVE_A", subjects=["live.a"]))
    start = NanoTime.parse("2023-01-02T15:04:05.123456789Z")
    cfg = StreamConfig(name="LIVE_SRC", sources=[StreamSource(name="LIVE_A", opt_start_time=start)])
    raw = await _api(nc, js.stream_create(cfg.name), cfg)
    assert b'"opt_start_time":"2023-01-02T15:04:05.123456789Z"' in raw
    info = codec.decode(raw, StreamInfo)
    assert info.config.sources[0].opt_start_time == start


async def test_consumer_config_is_accepted_and_echoed(nc: Client) -> None:
    await _api(nc, js.stream_create("LIVE_C"), StreamConfig(name="LIVE_C", subjects=["live.c.*"]))
    cfg = ConsumerConfig(
        durable_name="D",
        description="d",
        deliver_policy=DeliverPolicy.BY_START_TIME,
        opt_start_time=NanoTime(1),
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=10 * 10**9,
        max_deliver=4,
        backoff=[10**9, 2 * 10**9],
        filter_subject="live.c.x",
        replay_policy=ReplayPolicy.INSTANT,
        sample_freq="50%",
        max_waiting=16,
        max_ack_pending=8,
        max_batch=10,
        max_expires=60 * 10**9,
        max_bytes=1024,
        inactive_threshold=30 * 10**9,
        num_replicas=1,
        mem_storage=True,
    )
    req = CreateConsumerRequest(stream_name="LIVE_C", config=cfg)
    resp = codec.decode_response(
        await _api(nc, js.consumer_create("LIVE_C", "D"), req), ConsumerCreateResponse
    )
    codec.raise_for_error(resp)
    echoed = resp.payload().config
    assert echoed.name == "D"  # the server fills name from the durable
    echoed.name = ""
    expected = ConsumerConfig(**{f: getattr(cfg, f) for f in cfg.__struct_fields__})
    expected.ack_wait = 10**9  # server sets ack_wait = backoff[0]
    expected.metadata = {"_nats.level": "5", "_nats.req.level": "0", "_nats.ver": "2.15.1"}
    assert echoed == expected


async def test_pull_request_ack_subjects_and_nak_delay(nc: Client) -> None:
    await _api(nc, js.stream_create("LIVE_P"), StreamConfig(name="LIVE_P", subjects=["live.p"]))
    for i in range(2):
        await nc.request("live.p", b"m%d" % i, timeout=5)
    cfg = ConsumerConfig(durable_name="P", ack_policy=AckPolicy.EXPLICIT)
    await _api(nc, js.consumer_create("LIVE_P", "P"), CreateConsumerRequest(stream_name="LIVE_P", config=cfg))
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.publish(
        js.consumer_msg_next("LIVE_P", "P"), codec.encode(PullRequest(batch=2, no_wait=True)), reply=inbox
    )
    first, second = await sub.next_msg(timeout=5), await sub.next_msg(timeout=5)
    m1, m2 = parse_ack_reply(first.reply), parse_ack_reply(second.reply)
    assert (m1.stream_seq, m1.consumer_seq, m1.num_pending, m1.num_delivered) == (1, 1, 1, 1)
    assert (m2.stream_seq, m2.num_pending) == (2, 0)
    await nc.request(first.reply, b"+ACK", timeout=5)  # double-ack: the server replies once processed
    await nc.publish(second.reply, nak_payload(200_000_000))
    assert parse_ack_payload(nak_payload(200_000_000)).delay_ns == 200_000_000
    await nc.publish(
        js.consumer_msg_next("LIVE_P", "P"),
        codec.encode(PullRequest(batch=1, expires=5 * 10**9)),
        reply=inbox,
    )
    again = parse_ack_reply((await sub.next_msg(timeout=5)).reply)
    assert (again.stream_seq, again.num_delivered) == (2, 2)
    assert again.timestamp == m2.timestamp


async def test_msg_get_request_model(nc: Client) -> None:
    await _api(nc, js.stream_create("LIVE_G"), StreamConfig(name="LIVE_G", subjects=["live.g.*"]))
    await nc.request("live.g.a", b"x", timeout=5, headers={"H": "1"})
    resp = codec.decode_response(
        await _api(nc, js.stream_msg_get("LIVE_G"), MsgGetRequest(last_by_subj="live.g.a")), MsgGetResponse
    )
    assert resp.message is not None and resp.message.data == b"x"
    assert resp.message.hdrs == b"NATS/1.0\r\nH: 1\r\n\r\n"
    info = codec.decode_response(await _api(nc, js.stream_info("LIVE_G")), StreamInfoResponse).payload()
    assert info.state.last_ts == resp.message.time


async def test_kv_layout_interoperates_with_nats_py(nc: Client) -> None:
    jsc = nc.jetstream()
    # a bucket we lay out is usable by a real client
    cfg = kv.kv_stream_config("ours", history=3)
    codec.raise_for_error(
        codec.decode_response(await _api(nc, js.stream_create(cfg.name), cfg), StreamCreateResponse)
    )
    bucket = await jsc.key_value("ours")
    rev = await bucket.put("a.b", b"v1")
    entry = await bucket.get("a.b")
    assert (entry.value, entry.revision) == (b"v1", rev)
    await bucket.delete("a.b")
    raw = await _api(
        nc, js.stream_msg_get(cfg.name), MsgGetRequest(last_by_subj=kv.kv_subject("ours", "a.b"))
    )
    stored = codec.decode_response(raw, MsgGetResponse).message
    assert stored is not None and b"KV-Operation: DEL" in stored.hdrs
    # a bucket nats-py lays out has the shape we model
    await jsc.create_key_value(bucket="theirs", history=5, ttl=60)
    info = codec.decode_response(await _api(nc, js.stream_info("KV_theirs")), StreamInfoResponse).payload()
    ours = kv.kv_stream_config("theirs", history=5, ttl_ns=60 * 10**9)
    for field in (
        "subjects",
        "max_msgs_per_subject",
        "max_age",
        "duplicate_window",
        "allow_rollup_hdrs",
        "deny_delete",
        "discard",
    ):
        assert getattr(info.config, field) == getattr(ours, field), field


async def test_object_store_meta_decodes(nc: Client) -> None:
    jsc = nc.jetstream()
    store = await jsc.create_object_store("files")
    data = b"x" * 200_000
    await store.put("dir/file.bin", data)
    raw = await _api(
        nc,
        js.stream_msg_get("OBJ_files"),
        MsgGetRequest(last_by_subj=objstore.obj_meta_subject("files", "dir/file.bin")),
    )
    stored = codec.decode_response(raw, MsgGetResponse).message
    assert stored is not None
    meta = codec.decode(stored.data, objstore.ObjectInfo)
    assert (meta.name, meta.bucket, meta.size) == ("dir/file.bin", "files", len(data))
    assert meta.digest == objstore.object_digest(data)
    assert meta.chunks == 2
    raw = await _api(
        nc,
        js.stream_msg_get("OBJ_files"),
        MsgGetRequest(last_by_subj=objstore.obj_chunk_subject("files", meta.nuid)),
    )
    assert codec.decode_response(raw, MsgGetResponse).message is not None
    info = codec.decode_response(await _api(nc, js.stream_info("OBJ_files")), StreamInfoResponse).payload()
    assert info.config.subjects == objstore.obj_stream_config("files").subjects


async def test_account_info_model(nc: Client) -> None:
    raw = await _api(nc, js.info())
    resp = codec.decode_response(raw, AccountInfoResponse)
    assert codec.encode(resp) == raw
    info = resp.payload()
    assert isinstance(info, AccountInfo) and info.limits.max_streams == -1


async def test_domain_prefix_and_pub_ack_domain(tmp_path: Path) -> None:
    target = make_target(NATS_SERVER, tmp_path / "dom", jetstream_settings={"domain": "hub"})
    try:
        conn = await nats.connect(target.url)
        hub = JSApi.for_domain("hub")
        cfg = StreamConfig(name="DOM", subjects=["dom.x"])
        codec.raise_for_error(
            codec.decode_response(await _api(conn, hub.stream_create("DOM"), cfg), StreamCreateResponse)
        )
        ack = (await conn.request("dom.x", b"1", timeout=5, headers={"Nats-Msg-Id": "a"})).data
        assert ack == codec.encode_pub_ack("DOM", 1, domain="hub")
        dup = (await conn.request("dom.x", b"1", timeout=5, headers={"Nats-Msg-Id": "a"})).data
        assert dup == codec.encode_pub_ack("DOM", 1, duplicate=True, domain="hub")
        info = codec.decode_response(await _api(conn, hub.info()), AccountInfoResponse)
        assert info.domain == "hub"
        await conn.drain()
    finally:
        target.stop()
