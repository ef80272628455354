"""Per-message TTL (``Nats-TTL``) and subject delete markers (ADR-43), on both targets.

Answers are compared with nats-server 2.15.1: the config checks, the publish errors (10165,
10166), expiry by TTL and ``never`` against max_age, the marker a MaxAge expiry leaves
(``Nats-Marker-Reason: MaxAge``, the marker TTL, a subject roll-up), and TTLs that still fire
after ``kill -9``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target

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


async def pub(client: RawNats, subject: str, data: bytes = b"", hdr: bytes | None = None) -> dict[str, Any]:
    msg = await client.request(subject, data, hdr=hdr, timeout=10)
    return msg.json()


async def get(client: RawNats, stream: str, seq: int) -> dict[str, Any]:
    return await api(client, f"STREAM.MSG.GET.{stream}", {"seq": seq})


async def wait_for(check: Callable[[], Any], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.1)


def ttl(value: str) -> bytes:
    return headers(("Nats-TTL", value))


async def test_ttl_config_rules(raw: RawNats) -> None:
    resp = await api(raw, "STREAM.CREATE.A", {"name": "A", "subject_delete_marker_ttl": NS // 2})
    assert resp["error"] == {
        "code": 500,
        "err_code": 10052,
        "description": "subject delete marker TTL must be at least 1 second",
    }
    resp = await api(raw, "STREAM.CREATE.A", {"name": "A", "subject_delete_marker_ttl": -1})
    assert resp["error"]["description"] == "subject delete marker TTL must not be negative"
    # Markers turn on TTLs and roll-ups (and clear deny_purge).
    resp = await api(raw, "STREAM.CREATE.A", {"name": "A", "subject_delete_marker_ttl": NS, "deny_purge": True})
    cfg = resp["config"]
    assert (cfg["allow_msg_ttl"], cfg["allow_rollup_hdrs"], cfg["deny_purge"]) == (True, True, False)
    assert cfg["subject_delete_marker_ttl"] == NS
    resp = await api(raw, "STREAM.UPDATE.A", {**cfg, "allow_msg_ttl": False, "subject_delete_marker_ttl": 0})
    assert resp["error"]["description"] == "message TTL status can not be disabled"
    resp = await api(raw, "STREAM.CREATE.M", {"name": "M", "mirror": {"name": "A"}, "subject_delete_marker_ttl": NS})
    assert resp["error"]["description"] == "subject delete markers forbidden on mirrors"


async def test_ttl_publish_errors(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.OFF", {"name": "OFF", "subjects": ["off"]})
    await api(raw, "STREAM.CREATE.ON", {"name": "ON", "subjects": ["on"], "allow_msg_ttl": True})
    disabled = {"code": 400, "err_code": 10166, "description": "per-message TTL is disabled"}
    invalid = {"code": 400, "err_code": 10165, "description": "invalid per-message TTL"}
    assert (await pub(raw, "off", b"x", ttl("5s")))["error"] == disabled
    assert (await pub(raw, "off", b"x", ttl("never")))["error"] == disabled
    # An invalid TTL is not a TTL for the "disabled" check: it fails as invalid.
    assert (await pub(raw, "off", b"x", ttl("bogus")))["error"] == invalid
    for bad in ("bogus", "500ms", "0", "-1", "0s"):
        assert (await pub(raw, "on", b"x", ttl(bad)))["error"] == invalid, bad
    for good in ("1", "1s", "1.5s", "1h", "NEVER"):
        assert "error" not in await pub(raw, "on", b"x", ttl(good)), good
    info = await api(raw, "STREAM.INFO.ON")
    assert info["state"]["messages"] == 5
    assert info["state"]["last_seq"] == 5


async def test_ttl_expires_and_never_outlives_max_age(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.T", {"name": "T", "subjects": ["t.>"], "allow_msg_ttl": True, "max_age": 2 * NS})
    assert (await pub(raw, "t.short", b"1", ttl("1s")))["seq"] == 1
    assert (await pub(raw, "t.never", b"2", ttl("never")))["seq"] == 2
    assert (await pub(raw, "t.plain", b"3"))["seq"] == 3
    assert (await get(raw, "T", 1))["message"]["data"]

    async def only_never_left() -> bool:
        state = (await api(raw, "STREAM.INFO.T"))["state"]
        return state["messages"] == 1 and state["first_seq"] == 2

    assert await wait_for(only_never_left)
    assert (await get(raw, "T", 1))["error"]["err_code"] == 10037
    msg = (await get(raw, "T", 2))["message"]
    assert msg["subject"] == "t.never"


async def test_expiry_leaves_a_subject_delete_marker(raw: RawNats) -> None:
    resp = await api(
        raw,
        "STREAM.CREATE.K",
        {"name": "K", "subjects": ["k.>"], "max_age": NS, "subject_delete_marker_ttl": 2 * NS},
    )
    assert "error" not in resp
    await pub(raw, "k.a", b"1")
    await pub(raw, "k.a", b"2")
    await pub(raw, "k.b", b"3")

    async def markers() -> dict[str, Any] | None:
        st = await api(raw, "STREAM.INFO.K", {"subjects_filter": ">"})
        state = st["state"]
        if state["messages"] == 2 and state["last_seq"] == 5 and state["first_seq"] == 4:
            return state
        return None

    state = await wait_for(markers)
    assert state is not None and state["subjects"] == {"k.a": 1, "k.b": 1}
    marker = (await get(raw, "K", 4))["message"]
    hdr = base64.b64decode(marker["hdrs"])
    assert hdr == b"NATS/1.0\r\nNats-Marker-Reason: MaxAge\r\nNats-TTL: 2s\r\nNats-Rollup: sub\r\n\r\n"
    assert marker["subject"] == "k.a" and "data" not in marker

    # The markers expire in turn (their TTL), leaving nothing behind.
    async def empty() -> bool:
        state = (await api(raw, "STREAM.INFO.K"))["state"]
        return state["messages"] == 0 and state["first_seq"] == 6

    assert await wait_for(empty)


async def test_short_ttl_raised_to_the_marker_ttl(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.R", {"name": "R", "subjects": ["r"], "subject_delete_marker_ttl": 60 * NS})
    assert (await pub(raw, "r", b"x", ttl("2s")))["seq"] == 1
    hdr = base64.b64decode((await get(raw, "R", 1))["message"]["hdrs"])
    assert hdr == b"NATS/1.0\r\nNats-TTL: 60\r\n\r\n"


async def test_ttl_fires_after_kill_9(start_server: Callable[..., Target]) -> None:
    srv = start_server()
    client = await RawNats.connect(srv.url)
    await api(client, "STREAM.CREATE.P", {"name": "P", "subjects": ["p"], "allow_msg_ttl": True})
    for i in range(3):
        await pub(client, "p", b"%d" % i, ttl("3s") if i != 1 else None)
    await client.close()
    srv.kill()
    srv.start()
    client = await RawNats.connect(srv.url)
    try:

        async def expired() -> bool:
            state = (await api(client, "STREAM.INFO.P"))["state"]
            return state["messages"] == 1 and state["first_seq"] == 2

        assert await wait_for(expired)
    finally:
        await client.close()
