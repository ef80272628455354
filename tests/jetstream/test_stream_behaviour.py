"""Stream behaviour on both targets where the two deliberately differ, or where only ours applies.

- Deliberate differences: replicas > 1 is refused on update too, with a text that points at NATS
  clusters; the file store honours discard-new for max_bytes; a no_erase delete survives kill -9
  (nats-server 2.9.10 falls short on the last two).
- 2.10 stream features (first_seq, subject_transform, metadata, compression, the republish
  time stamp, ``ts``) are ours alone: nats-server 2.9.10 does not know them. The tests branch on
  the version the target advertises in INFO where they touch both.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import nats
import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.server.rawclient import RawClient
from tests.support.targets import EMBEDDED, NATS_SERVER, Target

NS = 1_000_000_000


@pytest.fixture
async def raw(server: Target) -> AsyncIterator[RawNats]:
    client = await RawNats.connect(server.url)
    yield client
    await client.close()


async def api(client: RawNats, subject: str, body: Any = b"") -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await client.request(f"$JS.API.{subject}", data, timeout=10)
    return msg.json()


def version_at_least(client: RawNats, major: int, minor: int) -> bool:
    parts = client.info["version"].split(".")
    return (int(parts[0]), int(parts[1])) >= (major, minor)


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText("<any>")


# --- replicas ----------------------------------------------------------------------------------


async def test_replicas_refused_on_create_and_update(raw: RawNats) -> None:
    """nats-server 2.15's exact text (clients compare it), on create and, since 2.15, update."""
    expected = {"code": 500, "err_code": 10074, "description": "replicas > 1 not supported in non-clustered mode"}
    resp = await api(raw, "STREAM.CREATE.R", {"name": "R", "num_replicas": 3})
    assert resp["error"] == expected
    await api(raw, "STREAM.CREATE.R", {"name": "R"})
    resp = await api(raw, "STREAM.UPDATE.R", {"name": "R", "num_replicas": 3})
    assert resp["error"] == expected


# --- discard new on a file store ------------------------------------------------------------------


async def test_file_discard_new_max_bytes(raw: RawNats, server_kind: str) -> None:
    await api(raw, "STREAM.CREATE.D", {"name": "D", "max_bytes": 200, "discard": "new"})
    acks = [(await raw.request("D", b"x" * 40)).json() for _ in range(5)]
    # As nats-server 2.11+: refuse once stored bytes + this record's size exceed max_bytes
    # (71-byte file records: 142 + 71 > 200, so the third is refused).
    assert [a.get("seq") for a in acks[:2]] == [1, 2]
    assert acks[2]["error"] == {"code": 503, "err_code": 10077, "description": "maximum bytes exceeded"}
    info = await api(raw, "STREAM.INFO.D")
    assert (info["state"]["messages"], info["state"]["first_seq"]) == (2, 1)


# --- durability of deletes ----------------------------------------------------------------------


async def test_no_erase_delete_survives_kill(server: Target, server_kind: str) -> None:
    client = await RawNats.connect(server.url)
    await api(client, "STREAM.CREATE.S", {"name": "S"})
    for i in range(5):
        await client.request("S", str(i).encode())
    assert (await api(client, "STREAM.MSG.DELETE.S", {"seq": 2, "no_erase": True}))["success"]
    await client.close()
    server.kill()
    server.start()
    client = await RawNats.connect(server.url)
    info = await api(client, "STREAM.INFO.S", {"deleted_details": True})
    await client.close()
    if server_kind == NATS_SERVER:
        return  # 2.9.10 brings seq 2 back (its delete map was not yet written)
    assert info["state"]["messages"] == 4 and info["state"]["deleted"] == [2]


# --- JetStream disabled ----------------------------------------------------------------------------


async def test_no_jetstream_means_no_responders(start_server: Callable[..., Target]) -> None:
    target = start_server(jetstream=False)
    nc = await nats.connect(target.url)
    try:
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("$JS.API.INFO", b"", timeout=5)
    finally:
        await nc.close()


# --- large headers -------------------------------------------------------------------------------------


async def test_header_over_64k_refused(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.H", {"name": "H"})
    ack = (await raw.request("H", b"x", hdr=headers(("Big", "v" * 70_000)))).json()
    assert ack["error"] == {
        "code": 400,
        "err_code": 10097,
        "description": "header size exceeds maximum allowed of 64k",
    }


# --- 2.10 features --------------------------------------------------------------------------------


@pytest.fixture
async def raw210(raw: RawNats) -> RawNats:
    """Both targets (the reference, nats-server 2.15.1, has every 2.10 feature)."""
    return raw


async def test_first_seq(raw210: RawNats) -> None:
    resp = await api(raw210, "STREAM.CREATE.F", {"name": "F", "first_seq": 1000})
    assert resp["config"]["first_seq"] == 1000
    assert (resp["state"]["first_seq"], resp["state"]["last_seq"]) == (1000, 999)
    ack = (await raw210.request("F", b"x")).json()
    assert ack == {"stream": "F", "seq": 1000}
    # 2.11+ no longer refuses a changed first_seq on update; the stored messages stay.
    resp = await api(raw210, "STREAM.UPDATE.F", {"name": "F", "first_seq": 5})
    assert resp["config"]["first_seq"] == 5 and resp["state"]["last_seq"] == 1000


async def test_subject_transform(raw210: RawNats) -> None:
    cfg = {
        "name": "T",
        "subjects": ["in.>"],
        "subject_transform": {"src": "in.*.*", "dest": "out.{{wildcard(2)}}.{{wildcard(1)}}"},
    }
    resp = await api(raw210, "STREAM.CREATE.T", cfg)
    assert resp["config"]["subject_transform"] == cfg["subject_transform"]
    await raw210.request("in.a.b", b"1")
    await raw210.request("in.x", b"2")  # does not match the transform's source: kept as is
    msg = await api(raw210, "STREAM.MSG.GET.T", {"seq": 1})
    assert msg["message"]["subject"] == "out.b.a"
    msg = await api(raw210, "STREAM.MSG.GET.T", {"seq": 2})
    assert msg["message"]["subject"] == "in.x"
    bad = await api(
        raw210,
        "STREAM.CREATE.B",
        {"name": "B", "subject_transform": {"src": "a.*", "dest": "b.{{wildcard(5)}}"}},
    )
    assert bad["error"]["err_code"] == 10156  # stream transform: <reason>


async def test_metadata_description_placement_echoed(raw210: RawNats) -> None:
    cfg = {
        "name": "MD",
        "metadata": {"team": "a", "tier": "gold"},
        "description": "d",
        "placement": {"cluster": "c1", "tags": ["x"]},
    }
    resp = await api(raw210, "STREAM.CREATE.MD", cfg)
    # The server adds _nats.req.level (stored) and, in replies, its version and level (ADR-44).
    versioning = {"_nats.req.level": "0", "_nats.ver": ANY_TEXT, "_nats.level": ANY_TEXT}
    assert resp["config"]["metadata"] == {"team": "a", "tier": "gold", **versioning}
    assert resp["config"]["placement"] == {"cluster": "c1", "tags": ["x"]}
    resp = await api(raw210, "STREAM.UPDATE.MD", {**cfg, "metadata": {"team": "b"}})
    assert resp["config"]["metadata"] == {"team": "b", **versioning}
    listed = await api(raw210, "STREAM.LIST")
    assert listed["streams"][0]["config"]["metadata"] == {"team": "b", "_nats.req.level": "0"}
    assert "ts" in resp and resp["config"]["compression"] == "none"


async def test_compression_s2_is_used_by_the_store(server: Target, raw210: RawNats, server_kind: str) -> None:
    resp = await api(raw210, "STREAM.CREATE.Z", {"name": "Z", "compression": "s2"})
    assert resp["config"]["compression"] == "s2"
    await api(raw210, "STREAM.CREATE.N", {"name": "N"})
    payload = b"all work and no play makes jack a dull boy " * 200
    for _ in range(20):
        await raw210.request("Z", payload)
        await raw210.request("N", payload)
    msg = await api(raw210, "STREAM.MSG.GET.Z", {"seq": 20})
    assert msg["message"]["data"] == __import__("base64").b64encode(payload).decode()

    def size(name: str) -> int:
        root = server.store_dir / "jetstream" / "$G" / "streams" / name / "msgs"
        return sum(f.stat().st_size for f in root.iterdir() if f.is_file())

    if server_kind == EMBEDDED:  # nats-server compresses a block only once it is full
        assert size("Z") * 5 < size("N")
    bad = await api(raw210, "STREAM.CREATE.Y", {"name": "Y", "compression": "zstd"})
    assert bad["error"]["err_code"] == 10025


async def test_republish_time_stamp_header(raw210: RawNats) -> None:
    await api(
        raw210, "STREAM.CREATE.RP", {"name": "RP", "subjects": ["rp.>"], "republish": {"dest": "out.>"}}
    )
    raw210.subscribe("out.>", 7)
    await raw210.flush()
    await raw210.request("rp.a", b"hello", hdr=headers(("X", "1")))
    msg = await raw210.next_msg()
    assert msg.subject == "out.rp.a" and msg.data == b"hello"
    assert msg.hdr is not None
    lines = msg.hdr.decode().split("\r\n")
    assert lines[:5] == ["NATS/1.0", "X: 1", "Nats-Stream: RP", "Nats-Subject: rp.a", "Nats-Sequence: 1"]
    assert lines[5].startswith("Nats-Time-Stamp: 20") and lines[5].endswith("Z")
    assert lines[6:] == ["Nats-Last-Sequence: 0", "", ""]


# --- stream names, list and info paging at scale ----------------------------------------------------


async def test_list_pages_of_256(raw: RawNats) -> None:
    for i in range(300):
        await api(raw, f"STREAM.CREATE.S{i:03d}", {"name": f"S{i:03d}", "storage": "memory"})
    page = await api(raw, "STREAM.LIST")
    assert (page["total"], page["offset"], page["limit"], len(page["streams"])) == (300, 0, 256, 256)
    assert page["streams"][0]["config"]["name"] == "S000"
    page = await api(raw, "STREAM.LIST", {"offset": 256})
    assert [s["config"]["name"] for s in page["streams"]] == [f"S{i:03d}" for i in range(256, 300)]
    names = await api(raw, "STREAM.NAMES", {"offset": 290})
    assert names["streams"] == [f"S{i:03d}" for i in range(290, 300)]


async def test_subjects_filter_pages(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.K", {"name": "K", "subjects": ["k.>"], "storage": "memory"})
    for i in range(30):
        raw.publish(f"k.{i:02d}", b"v")
    await raw.flush()
    for _ in range(200):
        info = await api(raw, "STREAM.INFO.K", {"subjects_filter": "k.*"})
        if info["state"]["messages"] == 30:
            break
    assert info["total"] == 30 and len(info["state"]["subjects"]) == 30
    info = await api(raw, "STREAM.INFO.K", {"subjects_filter": "k.*", "offset": 25})
    assert info["offset"] == 25 and info["total"] == 30
    assert list(info["state"]["subjects"].items()) == [(f"k.{i:02d}", 1) for i in range(25, 30)]


async def test_subjects_filter_listing_asked_again(raw: RawNats) -> None:
    """The same listing asked three times (ours keeps its order from the second on), then after
    a subject came and after one went: every answer whole, its subjects in Go's map order (sorted
    by ``json.Marshal``), its paging fields as nats-server's."""
    await api(raw, "STREAM.CREATE.L", {"name": "L", "subjects": ["l.>"], "storage": "memory"})
    names = [f"l.{i}" for i in (7, 30, 1, 200, 12, 3)]
    for i, name in enumerate(names):
        for _ in range(i + 1):
            raw.publish(name, b"v")
    await raw.flush()
    expected = {name: i + 1 for i, name in enumerate(names)}

    async def listing(offset: int = 0) -> dict[str, Any]:
        for _ in range(200):
            info = await api(raw, "STREAM.INFO.L", {"subjects_filter": "l.*", "offset": offset})
            if info["state"]["messages"] == sum(expected.values()):
                return info
            await asyncio.sleep(0.02)
        raise AssertionError(f"not all stored: {info}")

    for _ in range(3):
        info = await listing()
        assert (info["total"], info["offset"], info["limit"]) == (6, 0, 100_000)
        assert list(info["state"]["subjects"].items()) == sorted(expected.items())
    raw.publish("l.05", b"v")
    await raw.flush()
    expected["l.05"] = 1
    info = await listing()
    assert list(info["state"]["subjects"].items()) == sorted(expected.items())
    info = await listing(4)
    assert (info["total"], info["offset"]) == (7, 4)
    assert list(info["state"]["subjects"].items()) == sorted(expected.items())[4:]
    assert (await api(raw, "STREAM.PURGE.L", {"filter": "l.200"}))["success"]
    del expected["l.200"]
    for _ in range(2):
        info = await listing()
        assert info["total"] == 6 and list(info["state"]["subjects"].items()) == sorted(expected.items())
    info = await listing(9)  # past the end: the offset as asked, no subjects
    assert (info["total"], info["offset"], info["limit"]) == (6, 9, 100_000)
    assert "subjects" not in info["state"]


# --- secure delete --------------------------------------------------------------------------------------


async def test_erase_overwrites_the_stored_bytes(server: Target, raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.SEC", {"name": "SEC"})
    secrets = [f"secret-{i}-{'s' * 40}".encode() for i in range(3)]
    for secret in secrets:
        await raw.request("SEC", secret)
    assert (await api(raw, "STREAM.MSG.DELETE.SEC", {"seq": 2}))["success"]  # erase (the default)
    assert (await api(raw, "STREAM.MSG.DELETE.SEC", {"seq": 3, "no_erase": True}))["success"]
    await api(raw, "STREAM.INFO.SEC")  # both targets have written the deletes by now

    msgs = server.store_dir / "jetstream" / "$G" / "streams" / "SEC" / "msgs"
    on_disk = b"".join(f.read_bytes() for f in msgs.iterdir() if f.suffix == ".blk")
    assert secrets[0] in on_disk
    assert secrets[1] not in on_disk  # overwritten in place
    # (a no_erase delete only marks the message deleted; its bytes may stay until compaction)


# --- recovery ---------------------------------------------------------------------------------------


async def test_damaged_stream_does_not_stop_the_others(server: Target, server_kind: str) -> None:
    if server_kind != EMBEDDED:
        pytest.skip("what a damaged definition does is implementation-specific")
    client = await RawNats.connect(server.url)
    for name in ("GOOD", "BAD"):
        await api(client, f"STREAM.CREATE.{name}", {"name": name})
        await client.request(name, b"x")
    await client.close()
    server.stop()
    meta = server.store_dir / "jetstream" / "$G" / "streams" / "BAD" / "meta.inf"
    meta.write_bytes(meta.read_bytes().replace(b'"BAD"', b'"BAX"'))  # checksum no longer matches
    server.start()
    client = await RawNats.connect(server.url)
    try:
        names = await api(client, "STREAM.NAMES")
        assert names["streams"] == ["GOOD"]
        info = await api(client, "STREAM.INFO.GOOD")
        assert info["state"]["messages"] == 1
    finally:
        await client.close()
    assert "BAD" in server.read_log()


# --- batching: one write per loop turn, still read-your-writes ------------------------------------------


async def test_publish_then_get_in_one_write(raw: RawNats, server_kind: str) -> None:
    if server_kind == NATS_SERVER:
        pytest.skip("nats-server 2.11+ queues publishes (ingest queue): a get read with them may run first")
    await api(raw, "STREAM.CREATE.B", {"name": "B", "subjects": ["b.*"]})
    # Many publishes and a MSG.GET of the last one, sent as one burst: the server handles them in
    # one read, so the get runs before the turn's batch is written, and must still see it.
    for i in range(200):
        raw.publish(f"b.{i % 3}", str(i).encode(), reply=f"{raw._inbox}.ack.{i}")
    reply = await raw.request("$JS.API.STREAM.MSG.GET.B", json.dumps({"last_by_subj": "b.1"}).encode())
    assert reply.json()["message"]["seq"] == 200
    acks = []
    while len(acks) < 200:
        acks.append((await raw.next_msg()).json()["seq"])
    assert sorted(acks) == list(range(1, 201))


async def test_sync_always(start_server: Callable[..., Target], server_kind: str) -> None:
    if server_kind != EMBEDDED:
        pytest.skip("sync_interval is a 2.10 setting")
    target = start_server(jetstream_settings={"sync_interval": "always"})
    client = await RawNats.connect(target.url)
    try:
        await api(client, "STREAM.CREATE.A", {"name": "A"})
        acks = [(await client.request("A", b"x")).json()["seq"] for _ in range(20)]
        assert acks == list(range(1, 21))
    finally:
        await client.close()
    target.kill()
    target.start()
    client = await RawNats.connect(target.url)
    try:
        assert (await api(client, "STREAM.INFO.A"))["state"]["messages"] == 20
    finally:
        await client.close()


async def test_persist_mode_async_with_sync_always(start_server: Callable[..., Target], server_kind: str) -> None:
    """``persist_mode: async`` (ADR-56) opts a stream out of ``sync_interval: always`` (nats-server
    turns ``SyncAlways`` off for it). Ours still hands every write to the OS before the ack, so a
    process kill loses nothing (nats-server's async flusher may lose its buffer: checked on ours only)."""
    if server_kind != EMBEDDED:
        pytest.skip("what an async stream keeps after kill -9 is unspecified on nats-server")
    target = start_server(jetstream_settings={"sync_interval": "always"})
    client = await RawNats.connect(target.url)
    try:
        created = await api(client, "STREAM.CREATE.A", {"name": "A", "persist_mode": "async"})
        assert created["config"]["persist_mode"] == "async"
        await api(client, "STREAM.CREATE.D", {"name": "D"})
        for subject in ("A", "D"):
            acks = [(await client.request(subject, b"x")).json()["seq"] for _ in range(20)]
            assert acks == list(range(1, 21))
    finally:
        await client.close()
    target.kill()
    target.start()
    client = await RawNats.connect(target.url)
    try:
        a = await api(client, "STREAM.INFO.A")
        assert (a["config"]["persist_mode"], a["state"]["messages"]) == ("async", 20)
        d = await api(client, "STREAM.INFO.D")
        assert "persist_mode" not in d["config"] and d["state"]["messages"] == 20
    finally:
        await client.close()


# --- pipelined publishes -----------------------------------------------------------------------


async def test_pipelined_publishes_in_one_write_are_each_stored_and_acknowledged(
    raw: RawNats, server: Target
) -> None:
    """A burst of publishes with a reply each, same subject and size, in one write (the embedded
    server routes such a run to the stream with one lookup): every message is stored in order
    and acknowledged to its own reply, memory and file store alike."""
    for name, storage in (("PM", "memory"), ("PF", "file")):
        created = await api(
            raw, f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name}.>"], "storage": storage}
        )
        assert "error" not in created, created
    n = 40

    def burst() -> bytes:
        with RawClient.connected(server.port) as client:
            assert client.exchange(b"SUB _INBOX.p.* 1\r\n") == (b"PONG\r\n", False)
            client.send(
                b"".join(
                    b"PUB %b.x _INBOX.p.%b%d 2\r\n%02d\r\n" % (name, name, i, i)
                    for name in (b"PM", b"PF")
                    for i in range(n)
                )
            )
            out = b""
            for name in (b"PM", b"PF"):  # nats-server stores the two streams concurrently
                last = b'{"stream":"%b","seq":%d}\r\n' % (name, n)
                if last not in out:
                    out += client.read_until(last, timeout=20)
            return out

    out = (await asyncio.to_thread(burst)).replace(b"PONG\r\n", b"")
    for name in ("PM", "PF"):
        acks = [
            b"MSG _INBOX.p.%b%d 1 %d\r\n%b\r\n" % (name.encode(), i, len(body), body)
            for i in range(n)
            for body in [b'{"stream":"%b","seq":%d}' % (name.encode(), i + 1)]
        ]
        got = [frame for frame in out.split(b"MSG ")[1:] if b'"stream":"%b"' % name.encode() in frame]
        assert [b"MSG " + frame for frame in got] == acks
    for name in ("PM", "PF"):
        info = await api(raw, f"STREAM.INFO.{name}")
        assert info["state"]["messages"] == n and info["state"]["last_seq"] == n
        last = await api(raw, f"STREAM.MSG.GET.{name}", {"seq": n})
        assert last["message"]["subject"] == f"{name}.x"
