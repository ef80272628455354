"""Operator mode (decentralized JWT auth) on both targets: creds files, account and user claims,
limits and permissions from the JWTs, bearer tokens, expiry, revocations, CLAIMS.UPDATE."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from tests.server.rawclient import RawClient
from tests.support.natspy import subscriptions_live
from tests.support.operator import JS_UNLIMITED, Operator, sign_nonce
from tests.support.targets import Target

from pyjetstream.api.jwt import decode

StartServer = Callable[..., Target]
TIMEOUT = 10.0


@pytest.fixture
def op(tmp_path: Path) -> Operator:
    operator = Operator(tmp_path / "nsc")
    operator.account("A", JS_UNLIMITED)
    operator.account("B", JS_UNLIMITED)
    operator.account("NOJS")
    return operator


async def _connect(target: Target, creds: Path, **kwargs: Any) -> nats.NATS:
    return await nats.connect(target.url, user_credentials=str(creds), allow_reconnect=False, **kwargs)


def _raw_connect(target: Target, token: str, seed: bytes | None, **fields: Any) -> tuple[RawClient, bytes, bool]:
    client = RawClient(target.port)
    connect = {"verbose": False, "pedantic": False, "headers": True, "jwt": token, **fields}
    if seed is not None:
        connect["sig"] = sign_nonce(seed, client.info["nonce"])
    out, closed = client.exchange(b"CONNECT " + json.dumps(connect).encode() + b"\r\n")
    return client, out, closed


AV = b"-ERR 'Authorization Violation'\r\n"


async def test_creds_connect_and_account_isolation(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    a_creds, _, _ = op.user("A", "alice")
    b_creds, _, _ = op.user("B", "bob")
    a = await _connect(target, a_creds)
    b = await _connect(target, b_creds)
    try:
        sub_b = await b.subscribe(">")
        sub_a = await a.subscribe("hello")
        await subscriptions_live(b)
        await a.publish("hello", b"A only")
        assert (await sub_a.next_msg(timeout=TIMEOUT)).data == b"A only"
        with pytest.raises(nats.errors.TimeoutError):
            await sub_b.next_msg(timeout=0.5)
        info = json.loads((await a.request("$JS.API.INFO", b"", timeout=TIMEOUT)).data)
        assert "error" not in info and info["limits"]["max_memory"] == -1
    finally:
        await a.close()
        await b.close()
    nojs_creds, _, _ = op.user("NOJS", "n")
    nc = await _connect(target, nojs_creds)
    info = json.loads((await nc.request("$JS.API.INFO", b"", timeout=TIMEOUT)).data)
    assert info["error"]["err_code"] == 10039
    await nc.close()


def test_operator_from_a_file(start_server: StartServer, op: Operator, tmp_path: Path) -> None:
    path = tmp_path / "op.jwt"
    path.write_text(f"-----BEGIN NATS OPERATOR JWT-----\n{op.jwt}\n------END NATS OPERATOR JWT------\n")
    target = start_server(**{**op.settings(), "operator": str(path)})
    _, token, seed = op.user("A", "alice")
    client, out, closed = _raw_connect(target, token, seed)
    assert not closed and out == b"PONG\r\n"
    client.close()


def test_bad_credentials_are_refused(start_server: StartServer, op: Operator, tmp_path: Path) -> None:
    target = start_server(**op.settings())
    _, token, seed = op.user("A", "alice")
    client, out, closed = _raw_connect(target, token, seed)
    assert not closed and out == b"PONG\r\n"
    client.close()
    assert "nonce" in client.info and client.info["auth_required"] is True
    # a signature by another key
    _, _, other_seed = op.user("A", "other")
    client, out, closed = _raw_connect(target, token, other_seed)
    assert closed and out == AV
    # no signature at all
    client, out, closed = _raw_connect(target, token, None)
    assert closed and out == AV
    # an account the resolver does not know
    stranger = Operator(tmp_path / "other")
    stranger.account("X")
    _, token, seed = stranger.user("X", "x")
    client, out, closed = _raw_connect(target, token, seed)
    assert closed and out == AV


def test_bearer_token(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    _, token, _ = op.user("A", "bearer", bearer_token=True)
    client, out, closed = _raw_connect(target, token, None)
    assert not closed and out == b"PONG\r\n"
    client.close()


def test_permissions_from_the_user_jwt(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    _, token, seed = op.user("A", "limited", pub={"allow": ["ok.>"]}, sub={"deny": ["secret.>"]})
    client, out, closed = _raw_connect(target, token, seed)
    assert not closed and out == b"PONG\r\n"
    out, closed = client.exchange(b"PUB no.x 1\r\nx\r\nSUB secret.x 1\r\nSUB ok.x 2\r\nPUB ok.x 1\r\ny\r\n")
    assert not closed
    assert out == (
        b"-ERR 'Permissions Violation for Publish to \"no.x\"'\r\n"
        b"-ERR 'Permissions Violation for Subscription to \"secret.x\"'\r\n"
        b"MSG ok.x 2 1\r\ny\r\nPONG\r\n"
    )
    client.close()


def test_response_permission_from_the_user_jwt(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    _, token, seed = op.user("A", "responder", pub={"deny": [">"]}, sub={"allow": ["req"]}, resp={"max": 1, "ttl": 0})
    responder, out, closed = _raw_connect(target, token, seed)
    assert not closed
    out, closed = responder.exchange(b"SUB req 1\r\n")
    assert not closed and out == b"PONG\r\n"
    _, token2, seed2 = op.user("A", "requester")
    requester, out, closed = _raw_connect(target, token2, seed2)
    out, closed = requester.exchange(b"SUB reply.x 9\r\nPUB req reply.x 1\r\nq\r\n")
    assert not closed
    out = responder.read_until(b"q\r\n")
    assert out == b"MSG req 1 reply.x 1\r\nq\r\n"
    out, closed = responder.exchange(b"PUB reply.x 1\r\na\r\nPUB reply.x 1\r\nb\r\n")
    assert out == b"-ERR 'Permissions Violation for Publish to \"reply.x\"'\r\nPONG\r\n"
    assert requester.read_until(b"a\r\n") == b"MSG reply.x 9 1\r\na\r\n"
    responder.close()
    requester.close()


def test_user_limits(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    _, token, seed = op.user("A", "small", subs=1, payload=8)
    client, out, closed = _raw_connect(target, token, seed)
    assert not closed
    out, closed = client.exchange(b"SUB a 1\r\nSUB b 2\r\n")
    assert not closed and out == b"-ERR 'maximum subscriptions exceeded'\r\nPONG\r\n"
    out, closed = client.exchange(b"PUB a 9\r\n123456789\r\n")
    assert closed and out.startswith(b"-ERR 'Maximum Payload Violation'\r\n")


def test_account_connection_limit(start_server: StartServer, op: Operator) -> None:
    op.account("ONE", {"conn": 1})
    target = start_server(**op.settings())
    _, token, seed = op.user("ONE", "u")
    first, _, closed = _raw_connect(target, token, seed)
    assert not closed
    _, token2, seed2 = op.user("ONE", "v")
    _, out, closed = _raw_connect(target, token2, seed2)
    assert closed and out == b"-ERR 'maximum account active connections exceeded'\r\n"
    first.close()


def test_expired_and_expiring_users(start_server: StartServer, op: Operator) -> None:
    target = start_server(**op.settings())
    _, token, seed = op.user("A", "old", expires=int(time.time()) - 10)
    _, out, closed = _raw_connect(target, token, seed)
    assert closed and out == AV
    _, token, seed = op.user("A", "soon", expires=int(time.time()) + 2)
    client, out, closed = _raw_connect(target, token, seed)
    assert not closed
    rest = client.read_until_closed(timeout=10)
    assert rest.endswith(b"-ERR 'User Authentication Expired'\r\n"), rest


def test_revoked_user_is_refused(start_server: StartServer, op: Operator) -> None:
    issued = int(time.time()) - 100
    _, token, seed = op.user("A", "gone", issued_at=issued)
    user_key = decode(token)["sub"]
    op.account("A", JS_UNLIMITED, revocations={user_key: issued + 1})
    target = start_server(**op.settings())
    _, out, closed = _raw_connect(target, token, seed)
    assert closed and out == AV
    _, fresh, fresh_seed = op.user("A", "fresh")  # issued now: after the revocation time
    client, out, closed = _raw_connect(target, fresh, fresh_seed)
    assert not closed
    client.close()


async def test_claims_update_with_the_full_resolver(start_server: StartServer, op: Operator, tmp_path: Path) -> None:
    resolver_dir = tmp_path / "jwts"
    target = start_server(**op.settings(resolver_dir))
    sys_creds, _, _ = op.user("SYS", "admin")
    a_creds, _, _ = op.user("A", "alice")
    sys = await _connect(target, sys_creds)
    a = await _connect(target, a_creds)
    try:
        info = json.loads((await a.request("$JS.API.INFO", b"", timeout=TIMEOUT)).data)
        assert info["limits"]["max_streams"] == -1
        token = op.account("A", {**JS_UNLIMITED, "streams": 2})
        pub = op.pub("A")
        resp = json.loads((await sys.request(f"$SYS.REQ.ACCOUNT.{pub}.CLAIMS.UPDATE", token.encode(), timeout=TIMEOUT)).data)
        assert resp["data"] == {"account": pub, "code": 200, "message": "jwt updated"}
        assert (resolver_dir / f"{pub}.jwt").read_text().strip() == token
        for _ in range(50):
            info = json.loads((await a.request("$JS.API.INFO", b"", timeout=TIMEOUT)).data)
            if info["limits"]["max_streams"] == 2:
                break
            await asyncio.sleep(0.1)
        assert info["limits"]["max_streams"] == 2
        # Only the system account can push claims: elsewhere nobody listens.
        with pytest.raises(nats.errors.NoRespondersError):
            await a.request(f"$SYS.REQ.ACCOUNT.{pub}.CLAIMS.UPDATE", token.encode(), timeout=TIMEOUT)
    finally:
        await sys.close()
        await a.close()


async def test_claims_update_revokes_a_connected_user(start_server: StartServer, op: Operator, tmp_path: Path) -> None:
    target = start_server(**op.settings(tmp_path / "jwts"))
    sys_creds, _, _ = op.user("SYS", "admin")
    issued = int(time.time()) - 100
    _, token, seed = op.user("B", "victim", issued_at=issued)
    victim, _, closed = _raw_connect(target, token, seed)
    assert not closed
    user_key = decode(token)["sub"]
    update = op.account("B", JS_UNLIMITED, revocations={user_key: issued + 1})
    sys = await _connect(target, sys_creds)
    try:
        resp = json.loads((await sys.request(f"$SYS.REQ.ACCOUNT.{op.pub('B')}.CLAIMS.UPDATE", update.encode(), timeout=TIMEOUT)).data)
        assert resp["data"]["code"] == 200
    finally:
        await sys.close()
    rest = victim.read_until_closed(timeout=10)
    assert rest == b"-ERR 'User Authentication Revoked'\r\n", rest


async def test_claims_update_adds_an_account(start_server: StartServer, op: Operator, tmp_path: Path) -> None:
    target = start_server(**op.settings(tmp_path / "jwts"))
    sys_creds, _, _ = op.user("SYS", "admin")
    token = op.account("NEW", JS_UNLIMITED)
    pub = op.pub("NEW")
    creds, _, _ = op.user("NEW", "newbie")
    with pytest.raises(nats.errors.Error):  # not known yet
        await _connect(target, creds)
    sys = await _connect(target, sys_creds)
    try:
        reply = await sys.request(f"$SYS.REQ.ACCOUNT.{pub}.CLAIMS.UPDATE", token.encode(), timeout=TIMEOUT)
        resp = json.loads(reply.data)
        assert resp["data"]["account"] == pub and resp["data"]["code"] == 200, resp
    finally:
        await sys.close()
    nc = await _connect(target, creds)
    try:
        for _ in range(50):
            info = json.loads((await nc.request("$JS.API.INFO", b"", timeout=TIMEOUT)).data)
            if "error" not in info:
                break
            await asyncio.sleep(0.1)
        assert "error" not in info, info
        js = nc.jetstream()
        await js.add_stream(name="N", subjects=["n"])
        assert (await js.publish("n", b"1")).seq == 1
    finally:
        await nc.close()


async def test_claims_update_answers(start_server: StartServer, op: Operator) -> None:
    """MEMORY resolver: updates are skipped; a bad token is a 500 naming the reason."""
    target = start_server(**op.settings())
    sys_creds, _, _ = op.user("SYS", "admin")
    pub = op.pub("A")
    sys = await _connect(target, sys_creds)
    try:
        token = op.account("A", {**JS_UNLIMITED, "streams": 3})
        resp = json.loads((await sys.request(f"$SYS.REQ.ACCOUNT.{pub}.CLAIMS.UPDATE", token.encode(), timeout=TIMEOUT)).data)
        assert resp["data"] == {"account": pub, "code": 200, "message": "jwt update skipped"}
        assert list(resp["server"])[:3] == ["name", "host", "id"]
        resp = json.loads((await sys.request(f"$SYS.REQ.ACCOUNT.{pub}.CLAIMS.UPDATE", b"garbage", timeout=TIMEOUT)).data)
        assert resp["error"] == {
            "account": pub,
            "code": 500,
            "description": "jwt update resulted in error - expected 3 chunks",
        }
    finally:
        await sys.close()


async def test_a_shared_service_import_of_an_account_jwt(start_server: StartServer, op: Operator) -> None:
    """An account JWT's service import with ``share: true`` (nats-server ``addServiceImport``:
    ``claim.Share``): the exporter gets the requester's whole client info in ``Nats-Request-Info``."""
    op.account("E", exports=[{"name": "svc", "subject": "svc.>", "type": "service"}])
    op.account("I", imports=[
        {"name": "svc", "subject": "svc.>", "account": op.pub("E"), "local_subject": "local.>", "type": "service",
         "share": True},
    ])  # fmt: skip
    target = start_server(**op.settings())
    e_creds, _, _ = op.user("E", "exporter")
    i_creds, _, _ = op.user("I", "importer")
    e = await _connect(target, e_creds)
    i = await _connect(target, i_creds)
    try:
        infos: list[Any] = []

        async def service(msg: Any) -> None:
            infos.append(json.loads((msg.headers or {}).get("Nats-Request-Info", "null")))
            await msg.respond(b"ok")

        await e.subscribe("svc.>", cb=service)
        await subscriptions_live(e)
        assert (await i.request("local.x", b"", timeout=TIMEOUT)).data == b"ok"
        assert infos[0]["acc"] == op.pub("I") and infos[0]["kind"] == "Client" and "id" in infos[0], infos
    finally:
        await e.close()
        await i.close()


async def test_exports_and_imports_from_account_jwts(start_server: StartServer, op: Operator) -> None:
    op.account("E", exports=[{"name": "events", "subject": "ev.>", "type": "stream"},
                             {"name": "svc", "subject": "svc.>", "type": "service"}])  # fmt: skip
    op.account("I", imports=[
        {"name": "events", "subject": "ev.>", "account": op.pub("E"), "local_subject": "fromE.>", "type": "stream"},
        {"name": "svc", "subject": "svc.>", "account": op.pub("E"), "local_subject": "local.>", "type": "service"},
    ])  # fmt: skip
    target = start_server(**op.settings())
    e_creds, _, _ = op.user("E", "exporter")
    i_creds, _, _ = op.user("I", "importer")
    e = await _connect(target, e_creds)
    i = await _connect(target, i_creds)
    try:
        sub = await i.subscribe("fromE.>")

        async def service(msg: Any) -> None:
            await msg.respond(b"served " + msg.subject.encode())

        await e.subscribe("svc.>", cb=service)
        await subscriptions_live(i, e)
        await e.publish("ev.one", b"1")
        msg = await sub.next_msg(timeout=TIMEOUT)
        assert (msg.subject, msg.data) == ("fromE.one", b"1")
        resp = await i.request("local.x", b"", timeout=TIMEOUT)
        assert resp.data == b"served svc.x"
    finally:
        await e.close()
        await i.close()
