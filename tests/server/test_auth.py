"""Authentication on both targets: token, user/password (plain and bcrypt), users, no_auth_user."""

from __future__ import annotations

from collections.abc import Callable

import nats
import pytest
from tests.server.rawclient import RawClient
from tests.support.targets import Target

# bcrypt (cost 4, to keep the tests quick) of "s3cret" and of "tok-hash".
BCRYPT_S3CRET = "$2a$04$II6IWQEInweLTJ5.dtb2bu2lnutUYxS4uhjE2aTD1Jj4q5wWViadm"
BCRYPT_TOKEN = "$2a$04$g04rTK1RQxwbEQVjYwyRKOgKUQGXAoutDXzg38XQlC3MvhxOeG2Oy"

AUTH_VIOLATION = b"-ERR 'Authorization Violation'\r\n"
StartServer = Callable[..., Target]


def _connect_line(**fields: object) -> bytes:
    import json

    return b"CONNECT " + json.dumps({"verbose": False, "pedantic": False, **fields}).encode() + b"\r\n"


def _attempt(target: Target, **fields: object) -> tuple[bytes, bool]:
    """CONNECT with the given credentials, then PING: (reply, closed)."""
    with RawClient(target.port) as client:
        return client.exchange(_connect_line(**fields))


def _accepted(target: Target, **fields: object) -> bool:
    out, closed = _attempt(target, **fields)
    if not closed and out == b"PONG\r\n":
        return True
    assert closed and out == AUTH_VIOLATION, out
    return False


def test_token(start_server: StartServer) -> None:
    target = start_server(jetstream=False, authorization={"token": "tok123"})
    with RawClient(target.port) as client:
        assert client.info["auth_required"] is True
    assert _accepted(target, auth_token="tok123")
    assert not _accepted(target, auth_token="wrong")
    assert not _accepted(target)
    assert not _accepted(target, user="x", **{"pass": "tok123"})


def test_bcrypt_token(start_server: StartServer) -> None:
    target = start_server(jetstream=False, authorization={"token": BCRYPT_TOKEN})
    assert _accepted(target, auth_token="tok-hash")
    assert not _accepted(target, auth_token=BCRYPT_TOKEN)  # the hash itself is not the token


def test_user_password(start_server: StartServer) -> None:
    target = start_server(jetstream=False, authorization={"user": "admin", "password": "pw"})
    assert _accepted(target, user="admin", **{"pass": "pw"})
    assert not _accepted(target, user="admin", **{"pass": "nope"})
    assert not _accepted(target, user="other", **{"pass": "pw"})
    assert not _accepted(target)


def test_users_list_plain_and_bcrypt(start_server: StartServer) -> None:
    target = start_server(
        jetstream=False,
        authorization={
            "users": [{"user": "alice", "password": "pw1"}, {"user": "bob", "password": BCRYPT_S3CRET}]
        },
    )
    assert _accepted(target, user="alice", **{"pass": "pw1"})
    assert _accepted(target, user="bob", **{"pass": "s3cret"})
    assert _accepted(target, user="bob", **{"pass": "s3cret"})  # again (a cached verification)
    assert not _accepted(target, user="bob", **{"pass": "pw1"})
    assert not _accepted(target, user="alice", **{"pass": "s3cret"})
    assert not _accepted(target, user="carol", **{"pass": "pw1"})
    assert not _accepted(target, auth_token="pw1")
    assert not _accepted(target)


def test_bcrypt_check_holds_later_ops(start_server: StartServer) -> None:
    """Ops pipelined behind a CONNECT that needs bcrypt are processed after it, in order."""
    target = start_server(
        jetstream=False, authorization={"users": [{"user": "bob", "password": BCRYPT_S3CRET}]}
    )
    with RawClient(target.port) as client:
        out, closed = client.exchange(
            _connect_line(user="bob", **{"pass": "s3cret"}) + b"SUB a 1\r\nPUB a 2\r\nhi\r\n"
        )
    assert not closed and out == b"MSG a 1 2\r\nhi\r\nPONG\r\n"


def test_no_auth_user(start_server: StartServer) -> None:
    target = start_server(
        jetstream=False,
        authorization={"users": [{"user": "alice", "password": "pw1"}, {"user": "bob", "password": "pw2"}]},
        no_auth_user="alice",
    )
    with RawClient(target.port) as client:
        assert "auth_required" not in client.info  # anonymous clients get in
        # ... so ops before CONNECT are accepted too.
        out, closed = client.exchange(b"")
        assert (out, closed) == (b"PONG\r\n", False)
    assert _accepted(target)
    assert _accepted(target, user="bob", **{"pass": "pw2"})
    assert not _accepted(target, user="bob", **{"pass": "bad"})
    assert not _accepted(target, **{"pass": "pw1"})  # credentials given: no fallback
    assert not _accepted(target, auth_token="x")


def test_op_before_connect_is_violation(start_server: StartServer) -> None:
    target = start_server(jetstream=False, authorization={"token": "t"})
    for op in (b"PING\r\n", b"SUB foo 1\r\n", b"PUB foo 1\r\na\r\n"):
        with RawClient(target.port) as client:
            client.send(op)
            assert client.read_until_closed() == AUTH_VIOLATION


def test_auth_timeout(start_server: StartServer) -> None:
    target = start_server(jetstream=False, authorization={"token": "t", "timeout": 0.3})
    with RawClient(target.port) as client:
        assert client.read_until_closed(timeout=5) == b"-ERR 'Authentication Timeout'\r\n"


async def test_nats_py_credentials(start_server: StartServer) -> None:
    target = start_server(
        jetstream=False, authorization={"users": [{"user": "bob", "password": BCRYPT_S3CRET}]}
    )
    nc = await nats.connect(target.url, user="bob", password="s3cret", allow_reconnect=False)
    try:
        sub = await nc.subscribe("x")
        await nc.flush()
        await nc.flush()
        await nc.publish("x", b"ok")
        assert (await sub.next_msg(timeout=5)).data == b"ok"
    finally:
        await nc.close()
    with pytest.raises(Exception, match=r"(?i)authorization violation"):
        await nats.connect(
            target.url, user="bob", password="bad", allow_reconnect=False, max_reconnect_attempts=0
        )
