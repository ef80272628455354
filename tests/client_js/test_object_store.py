"""Object store: put/get in chunks with digests, meta, links, listing, watch, seal (both targets)."""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from pyjetstream.api import codec
from pyjetstream.api.headers import ROLLUP, ROLLUP_SUBJECT
from pyjetstream.api.objstore import obj_meta_subject
from pyjetstream.client.jetstream import (
    JetStream,
    ObjectMeta,
    ObjectStore,
    ObjectStoreConfig,
    errors,
)


async def _store(js: JetStream, bucket: str = "OBJ") -> ObjectStore:
    return await js.create_object_store(ObjectStoreConfig(bucket=bucket, description="files"))


async def test_put_get_roundtrip_in_chunks(js: JetStream) -> None:
    store = await _store(js)
    data = os.urandom(300 * 1024 + 17)
    info = await store.put(ObjectMeta(name="blob", description="random", metadata={"k": "v"}), data)
    assert (info.size, info.chunks, info.bucket) == (len(data), 3, "OBJ")  # 128 KiB chunks
    assert info.digest.startswith("SHA-256=")
    result = await store.get("blob")
    assert result.info.description == "random" and result.info.metadata == {"k": "v"}
    assert await result.read() == data
    # Streaming read, chunk by chunk.
    pieces = [chunk async for chunk in await store.get("blob")]
    assert [len(p) for p in pieces] == [131072, 131072, 45073] and b"".join(pieces) == data
    small = await store.put(ObjectMeta(name="small-chunks", max_chunk_size=1000), data[:5500])
    assert small.chunks == 6 and await store.get_bytes("small-chunks") == data[:5500]
    empty = await store.put_bytes("empty", b"")
    assert (empty.size, empty.chunks) == (0, 0) and await store.get_bytes("empty") == b""
    await store.put_string("text", "héllo")
    assert await store.get_string("text") == "héllo"


async def test_put_from_files_streams_and_readers(js: JetStream, tmp_path: Path) -> None:
    store = await _store(js)
    source = tmp_path / "in.bin"
    source.write_bytes(os.urandom(200_000))
    info = await store.put_file(source, name="file")
    assert info.size == 200_000
    target = tmp_path / "out.bin"
    await store.get_file("file", target)
    assert target.read_bytes() == source.read_bytes()

    async def generate() -> AsyncIterator[bytes]:
        for i in range(100):
            yield bytes([i]) * 3000

    streamed = await store.put("stream", generate())
    assert streamed.size == 300_000 and streamed.chunks == 3
    expected = b"".join(bytes([i]) * 3000 for i in range(100))
    assert await store.get_bytes("stream") == expected
    reader = await store.put("reader", io.BytesIO(b"r" * 1000))
    assert reader.digest.endswith("=") and await store.get_bytes("reader") == b"r" * 1000
    assert (await store.put("iter", [b"a", b"b", b"c"])).size == 3


async def test_replace_info_delete(js: JetStream) -> None:
    store = await _store(js)
    first = await store.put_bytes("doc", b"v1" * 100_000)
    second = await store.put_bytes("doc", b"v2")
    assert first.nuid != second.nuid
    assert await store.get_bytes("doc") == b"v2"
    status = await store.status()
    assert status.stream_info.state.messages == 2  # old chunks purged: one chunk + one meta left
    info = await store.get_info("doc")
    assert info.size == 2 and info.mtime > 0
    await store.delete("doc")
    with pytest.raises(errors.ObjectNotFound):
        await store.get_info("doc")
    with pytest.raises(errors.ObjectNotFound):
        await store.get("doc")
    deleted = await store.get_info("doc", show_deleted=True)
    assert deleted.deleted and deleted.size == 0 and deleted.digest == ""
    assert (await store.status()).stream_info.state.messages == 1  # only the delete marker remains
    with pytest.raises(errors.ObjectNotFound):
        await store.get_info("never")


async def test_digest_mismatch_is_detected(js: JetStream) -> None:
    store = await _store(js)
    info = await store.put_bytes("victim", b"genuine content")
    info.digest = "SHA-256=" + "A" * 43 + "="
    await js.publish(obj_meta_subject("OBJ", "victim"), codec.encode(info), headers={ROLLUP: ROLLUP_SUBJECT})
    with pytest.raises(errors.DigestMismatch):
        await store.get_bytes("victim")


async def test_update_meta_and_links(js: JetStream) -> None:
    store = await _store(js)
    other = await _store(js, "OTHER")
    original = await store.put_bytes("a", b"payload")
    renamed = await store.update_meta("a", ObjectMeta(name="b", description="now b"))
    assert renamed.name == "b" and renamed.nuid == original.nuid
    with pytest.raises(errors.ObjectNotFound):
        await store.get_info("a")
    assert await store.get_bytes("b") == b"payload"
    await store.put_bytes("c", b"c")
    with pytest.raises(errors.ObjectAlreadyExists):
        await store.update_meta("b", ObjectMeta(name="c"))

    link = await other.add_link("to-b", await store.get_info("b"))
    assert link.options is not None and link.options.link is not None
    assert (link.options.link.bucket, link.options.link.name) == ("OBJ", "b")
    assert await other.get_bytes("to-b") == b"payload"  # followed across buckets
    with pytest.raises(errors.NoLinkToLink):
        await other.add_link("link-to-link", link)
    bucket_link = await other.add_bucket_link("whole", store)
    assert bucket_link.options is not None and bucket_link.options.link.name == ""  # type: ignore[union-attr]
    with pytest.raises(errors.CantGetBucket):
        await other.get("whole")
    await store.delete("c")
    with pytest.raises(errors.NoLinkToDeleted):
        await other.add_link("dead", await store.get_info("c", show_deleted=True))
    with pytest.raises(errors.UpdateMetaDeleted):
        await store.update_meta("c", ObjectMeta(name="c2"))
    with pytest.raises(errors.ObjectAlreadyExists):
        await store.add_link("b", await store.get_info("b"))


async def test_list_watch_status_seal(js: JetStream) -> None:
    store = await _store(js)
    with pytest.raises(errors.NoObjectsFound):
        await store.list()
    watcher = await store.watch()
    assert await watcher.next(timeout=5) is None
    for name in ("x", "y", "z"):
        await store.put_bytes(name, name.encode() * 10)
    await store.delete("y")
    assert sorted(i.name for i in await store.list()) == ["x", "z"]
    assert sorted(i.name for i in await store.list(show_deleted=True)) == ["x", "y", "z"]
    live = [await watcher.next(timeout=5) for _ in range(4)]
    assert [i.name for i in live if i is not None] == ["x", "y", "z", "y"]
    assert live[-1] is not None and live[-1].deleted
    watcher.stop()
    status = await store.status()
    assert (status.bucket, status.description, status.sealed) == ("OBJ", "files", False)
    assert sorted([n async for n in js.object_store_names()]) == ["OBJ"]
    assert [s.bucket async for s in js.object_stores()] == ["OBJ"]
    await store.seal()
    assert (await store.status()).sealed
    with pytest.raises(errors.JetStreamError):
        await store.put_bytes("late", b"nope")
    assert await store.get_bytes("x") == b"x" * 10
    with pytest.raises(errors.BucketExists):
        await js.create_object_store(ObjectStoreConfig(bucket="OBJ", description="different"))
    await js.delete_object_store("OBJ")
    with pytest.raises(errors.BucketNotFound):
        await js.object_store("OBJ")


async def test_large_object_digest_matches_hashlib(js: JetStream) -> None:
    store = await _store(js)
    data = os.urandom(2 * 1024 * 1024 + 5)
    info = await store.put_bytes("big", data)
    import base64

    assert info.digest == "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode()
    assert await store.get_bytes("big") == data


async def test_bucket_and_object_metadata(js: JetStream) -> None:
    store = await js.create_object_store(ObjectStoreConfig(bucket="META", metadata={"owner": "team-a"}))
    status = await store.status()
    assert status.metadata["owner"] == "team-a"
    updated = await js.update_object_store(
        ObjectStoreConfig(bucket="META", metadata={"owner": "team-b", "tier": "gold"})
    )
    assert {k: v for k, v in (await updated.status()).metadata.items() if not k.startswith("_nats.")} == {
        "owner": "team-b",
        "tier": "gold",
    }
    await store.put(ObjectMeta(name="doc", metadata={"lang": "en"}, headers={"X-Kind": ["report"]}), b"text")
    await store.update_meta("doc", ObjectMeta(name="doc", metadata={"lang": "fr"}))
    info = await store.get_info("doc")
    assert info.metadata == {"lang": "fr"} and await store.get_bytes("doc") == b"text"
