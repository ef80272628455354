"""KV 2.11+: limit-marker TTL on the bucket, per-key TTL on create and purge, server-side filtered
watch and key listing, bucket metadata — against both targets."""

from __future__ import annotations

import pytest
from tests.client_js.conftest import wait_for
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.api.api_levels import Feature
from pyjetstream.client.jetstream import JetStream, KeyValueConfig, KvOperation, errors


async def test_filtered_watch_list_keys_and_metadata(js: JetStream) -> None:
    kv = await js.create_key_value(KeyValueConfig(bucket="CFG", history=3, metadata={"team": "ops"}))
    for key in ("app.a", "app.b", "db.x", "web.y"):
        await kv.put(key, key.encode())
    assert sorted([k async for k in kv.list_keys("app.*", "db.>")]) == ["app.a", "app.b", "db.x"]
    watcher = await kv.watch_filtered(["app.b", "web.*"])
    seen = []
    async for entry in watcher:
        if entry is None:
            break
        seen.append(entry.key)
    assert sorted(seen) == ["app.b", "web.y"]
    await kv.put("db.x", b"2")  # not watched
    await kv.put("web.y", b"2")
    entry = await watcher.next(timeout=5)
    assert entry is not None and (entry.key, entry.value) == ("web.y", b"2")
    watcher.stop()
    status = await kv.status()
    assert status.metadata["team"] == "ops" and status.limit_marker_ttl == 0


async def test_limit_marker_ttl_and_per_key_ttl(js: JetStream, server: Target) -> None:
    await needs(js, server, Feature.SUBJECT_DELETE_MARKERS, Feature.MSG_TTL)
    kv = await js.create_key_value(KeyValueConfig(bucket="SESS", history=1, limit_marker_ttl=5))
    status = await kv.status()
    assert status.limit_marker_ttl == 5 and status.stream_info.config.allow_msg_ttl
    watcher = await kv.watch_all()
    assert await watcher.next(timeout=5) is None  # no initial values
    await kv.create("token", b"secret", ttl=1)
    await kv.put("kept", b"x")
    with pytest.raises(errors.KeyExists):
        await kv.create("token", b"again", ttl=1)
    put = await watcher.next(timeout=5)
    assert put is not None and put.key == "token" and put.operation is KvOperation.PUT

    async def expired() -> bool:
        try:
            await kv.get("token")
        except errors.KeyNotFound:
            return True
        return False

    await wait_for(expired, timeout=20, what="the key's 1s TTL")
    # The watcher saw the server's marker: a purge of the key.
    while True:
        entry = await watcher.next(timeout=15)
        assert entry is not None
        if entry.key == "token":
            break
    assert entry.operation is KvOperation.PURGE
    watcher.stop()
    # A purge marker with a TTL goes away by itself; create works again at once.
    await kv.purge("kept", ttl=1)
    assert await kv.create("kept", b"new") > 0


async def test_limit_marker_ttl_is_refused_before_sending_on_an_old_level(js: JetStream, server: Target) -> None:
    if await js.api_level() >= Feature.SUBJECT_DELETE_MARKERS.level:
        pytest.skip("the server has subject delete markers")
    with pytest.raises(errors.FeatureNotSupported):
        await js.create_key_value(KeyValueConfig(bucket="SESS", limit_marker_ttl=5))
    with pytest.raises(errors.BucketNotFound):
        await js.key_value("SESS")
