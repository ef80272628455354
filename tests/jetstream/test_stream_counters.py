"""Counter streams (ADR-49, ``allow_msg_counter``) on both targets, compared with nats-server 2.15.1:
``Nats-Incr`` totals and the PubAck ``val``, the stored ``{"val":"N"}`` body, every publish error
(10168-10172), the config rules (10173 and the invalid-config texts), and an aggregate stream
sourcing two counter streams with ``Nats-Counter-Sources``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target


@pytest.fixture
async def raw(server: Target) -> AsyncIterator[RawNats]:
    client = await RawNats.connect(server.url)
    yield client
    await client.close()


async def api(client: RawNats, subject: str, body: Any = b"") -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await client.request(f"$JS.API.{subject}", data, timeout=10)
    return msg.json()


async def pub_raw(client: RawNats, subject: str, data: bytes = b"", hdr: bytes | None = None) -> bytes:
    msg = await client.request(subject, data, hdr=hdr, timeout=10)
    return msg.data


def incr(value: str, *more: tuple[str, str]) -> bytes:
    return headers(("Nats-Incr", value), *more)


async def test_counter_totals_and_pub_acks(raw: RawNats) -> None:
    resp = await api(raw, "STREAM.CREATE.C", {"name": "C", "subjects": ["c.>"], "allow_msg_counter": True})
    assert resp["config"]["allow_msg_counter"] is True
    big = "123456789012345678901234567890"
    expected = [
        ("c.a", "5", 1, "5"),
        ("c.a", "-7", 2, "-2"),
        ("c.b", "+1", 3, "1"),
        ("c.a", big, 4, "123456789012345678901234567888"),
    ]
    for subject, step, seq, total in expected:
        ack = await pub_raw(raw, subject, b"", incr(step))
        # nats-server appends ``,"val":%q}`` to the stream's PubAck template.
        assert ack.endswith(b'"seq":%d,"val":"%s"}' % (seq, total.encode())), ack
        assert json.loads(ack) == {"stream": "C", "seq": seq, "val": total}
    msg = (await api(raw, "STREAM.MSG.GET.C", {"last_by_subj": "c.a"}))["message"]
    assert base64.b64decode(msg["data"]) == b'{"val":"123456789012345678901234567888"}'
    assert base64.b64decode(msg["hdrs"]) == incr(big)


async def test_counter_publish_errors(raw: RawNats) -> None:
    await api(raw, "STREAM.CREATE.C", {"name": "C", "subjects": ["c.>"], "allow_msg_counter": True})
    await api(raw, "STREAM.CREATE.P", {"name": "P", "subjects": ["p"]})

    async def error(subject: str, data: bytes, hdr: bytes | None) -> dict[str, Any]:
        return json.loads(await pub_raw(raw, subject, data, hdr))["error"]

    assert await error("p", b"", incr("1")) == {
        "code": 400,
        "err_code": 10168,
        "description": "message counters is disabled",
    }
    assert (await error("c.x", b"", None))["err_code"] == 10169
    assert (await error("c.x", b"", headers(("Foo", "bar"))))["err_code"] == 10169
    assert (await error("c.x", b"body", incr("1")))["err_code"] == 10170
    assert (await error("c.x", b"", incr("1.5")))["err_code"] == 10171
    assert (await error("c.x", b"", incr("x")))["err_code"] == 10171
    for name, value in (("Nats-Rollup", "sub"), ("Nats-Expected-Last-Sequence", "0"), ("Nats-Expected-Stream", "C")):
        assert (await error("c.x", b"", incr("1", (name, value))))["err_code"] == 10171, name
    # A plain message on the subject breaks the counter.
    await api(raw, "STREAM.CREATE.B", {"name": "B", "subjects": ["b"], "allow_msg_counter": False})
    assert (await error("p", b"", incr("1")))["description"] == "message counters is disabled"
    info = await api(raw, "STREAM.INFO.C")
    assert info["state"]["messages"] == 0


async def test_counter_config_rules(raw: RawNats) -> None:
    async def err(body: dict[str, Any]) -> str:
        return (await api(raw, f"STREAM.CREATE.{body['name']}", body))["error"]["description"]

    assert await err({"name": "A", "allow_msg_counter": True, "discard": "new"}) == (
        "counter stream cannot use discard new"
    )
    assert await err({"name": "A", "allow_msg_counter": True, "allow_msg_ttl": True}) == (
        "counter stream cannot use message TTLs"
    )
    assert await err({"name": "A", "allow_msg_counter": True, "retention": "workqueue"}) == (
        "counter stream can only use limits retention"
    )
    await api(raw, "STREAM.CREATE.O", {"name": "O"})
    resp = await api(raw, "STREAM.CREATE.M", {"name": "M", "mirror": {"name": "O"}, "allow_msg_counter": True})
    assert resp["error"] == {
        "code": 400,
        "err_code": 10173,
        "description": "stream mirrors can not also calculate counters",
    }
    cfg = (await api(raw, "STREAM.CREATE.K", {"name": "K", "allow_msg_counter": True}))["config"]
    resp = await api(raw, "STREAM.UPDATE.K", {**cfg, "allow_msg_counter": False})
    assert resp["error"]["description"] == "stream configuration update can not change message counter setting"


async def test_sourced_counters_aggregate(raw: RawNats) -> None:
    for name in ("EU", "US"):
        await api(raw, f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name.lower()}.>"], "allow_msg_counter": True})
    await pub_raw(raw, "eu.hits", b"", incr("3"))
    await pub_raw(raw, "us.hits", b"", incr("4"))
    resp = await api(
        raw,
        "STREAM.CREATE.ALL",
        {
            "name": "ALL",
            "allow_msg_counter": True,
            "sources": [
                {"name": "EU", "subject_transforms": [{"src": "eu.>", "dest": "all.>"}]},
                {"name": "US", "subject_transforms": [{"src": "us.>", "dest": "all.>"}]},
            ],
        },
    )
    assert "error" not in resp, resp
    await pub_raw(raw, "eu.hits", b"", incr("10"))

    async def total() -> dict[str, Any] | None:
        got = await api(raw, "STREAM.MSG.GET.ALL", {"last_by_subj": "all.hits"})
        msg = got.get("message")
        if msg and base64.b64decode(msg["data"]) == b'{"val":"17"}':
            return msg
        return None

    deadline = time.monotonic() + 20
    msg = await total()
    while msg is None and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        msg = await total()
    assert msg is not None
    hdr = base64.b64decode(msg["hdrs"])
    assert b'Nats-Counter-Sources: {"EU":{"eu.hits":"13"},"US":{"us.hits":"4"}}\r\n' in hdr
