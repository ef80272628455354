"""``Nats-Expected-Last-Subject-Sequence-Subject`` (2.12+) on both targets: the expected last
sequence is checked on the subject (or filter) it names, and the header alone is refused (10193)."""

from __future__ import annotations

import json
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


async def pub(client: RawNats, subject: str, hdr: bytes | None = None) -> dict[str, Any]:
    return (await client.request(subject, b"x", hdr=hdr, timeout=10)).json()


async def test_expected_last_sequence_on_another_subject(raw: RawNats) -> None:
    resp = await raw.request("$JS.API.STREAM.CREATE.E", json.dumps({"name": "E", "subjects": ["e.>"]}).encode())
    assert "error" not in resp.json()
    await pub(raw, "e.a.1")
    await pub(raw, "e.b.1")
    await pub(raw, "e.a.2")

    def expect(seq: str, on: str) -> bytes:
        return headers(("Nats-Expected-Last-Subject-Sequence", seq), ("Nats-Expected-Last-Subject-Sequence-Subject", on))

    assert (await pub(raw, "e.c", expect("3", "e.a.*")))["seq"] == 4
    wrong = await pub(raw, "e.c", expect("1", "e.a.*"))
    assert wrong["error"] == {"code": 400, "err_code": 10071, "description": "wrong last sequence: 3"}
    assert (await pub(raw, "e.c", expect("0", "e.none")))["seq"] == 5
    alone = await pub(raw, "e.c", headers(("Nats-Expected-Last-Subject-Sequence-Subject", "e.a.*")))
    assert alone["error"] == {
        "code": 400,
        "err_code": 10193,
        "description": "missing sequence for expected last sequence per subject",
    }
