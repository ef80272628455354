"""Permissions on ``$JS.API`` subjects on both targets: a user limited to some API subjects gets
nats-server's permission violations (and no answer) for the others, from user/password config
and from a user JWT alike."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from nats.js.api import StreamConfig
from tests.support.operator import JS_UNLIMITED, Operator
from tests.support.targets import Target

StartServer = Callable[..., Target]
TIMEOUT = 10.0

READ_ONLY = {
    "publish": {"allow": ["$JS.API.INFO", "$JS.API.STREAM.INFO.*", "$JS.API.STREAM.NAMES", "$JS.API.DIRECT.GET.>"]},
    "subscribe": {"allow": ["_INBOX.>"]},
}


async def _errors_collector() -> tuple[list[str], Any]:
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc).lower())

    return errors, on_error


async def _check_read_only(nc: nats.NATS, errors: list[str], admin: nats.NATS) -> None:
    await admin.jetstream().add_stream(StreamConfig(name="S", subjects=["s.>"], allow_direct=True))
    await admin.jetstream().publish("s.1", b"one")
    info = json.loads((await nc.request("$JS.API.STREAM.INFO.S", b"", timeout=TIMEOUT)).data)
    assert info["state"]["messages"] == 1
    names = json.loads((await nc.request("$JS.API.STREAM.NAMES", b"", timeout=TIMEOUT)).data)
    assert names["streams"] == ["S"]
    direct = await nc.request("$JS.API.DIRECT.GET.S", b'{"seq":1}', timeout=TIMEOUT)
    assert direct.data == b"one"
    for subject, body in (
        ("$JS.API.STREAM.CREATE.T", b'{"name":"T"}'),
        ("$JS.API.STREAM.DELETE.S", b""),
        ("$JS.API.STREAM.PURGE.S", b""),
        ("$JS.API.CONSUMER.CREATE.S.C", b'{"stream_name":"S","config":{"name":"C"}}'),
    ):
        with pytest.raises(nats.errors.TimeoutError):
            await nc.request(subject, body, timeout=0.5)
        for _ in range(100):
            if any(f'permissions violation for publish to "{subject.lower()}"' in e for e in errors):
                break
            await asyncio.sleep(0.05)
        assert any(f'permissions violation for publish to "{subject.lower()}"' in e for e in errors), (subject, errors)
    with pytest.raises(nats.errors.TimeoutError):  # a publish into the stream is refused the same way
        await nc.request("s.2", b"intruder", timeout=0.5)
    info = json.loads((await admin.request("$JS.API.STREAM.INFO.S", b"", timeout=TIMEOUT)).data)
    assert info["state"]["messages"] == 1 and info["config"]["name"] == "S"


async def test_js_api_permissions_of_configured_users(start_server: StartServer) -> None:
    users = [{"user": "ro", "password": "ro", "permissions": READ_ONLY}, {"user": "admin", "password": "admin"}]
    target = start_server(authorization={"users": users})
    errors, on_error = await _errors_collector()
    ro = await nats.connect(target.url, user="ro", password="ro", error_cb=on_error, allow_reconnect=False)
    admin = await nats.connect(target.url, user="admin", password="admin", allow_reconnect=False)
    try:
        await _check_read_only(ro, errors, admin)
    finally:
        await ro.close()
        await admin.close()


async def test_js_api_permissions_from_a_user_jwt(start_server: StartServer, tmp_path: Path) -> None:
    op = Operator(tmp_path / "nsc")
    op.account("A", JS_UNLIMITED)
    target = start_server(**op.settings())
    ro_creds, _, _ = op.user("A", "ro", pub={"allow": READ_ONLY["publish"]["allow"]}, sub={"allow": ["_INBOX.>"]})
    admin_creds, _, _ = op.user("A", "admin")
    errors, on_error = await _errors_collector()
    ro = await nats.connect(target.url, user_credentials=str(ro_creds), error_cb=on_error, allow_reconnect=False)
    admin = await nats.connect(target.url, user_credentials=str(admin_creds), allow_reconnect=False)
    try:
        await _check_read_only(ro, errors, admin)
    finally:
        await ro.close()
        await admin.close()
