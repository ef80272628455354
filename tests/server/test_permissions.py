"""User publish/subscribe permissions on both targets: exact -ERR bytes, dropped and delivered traffic."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import nats
import pytest
from tests.server.rawclient import RawClient
from tests.support.targets import Target

StartServer = Callable[..., Target]


def _pub_err(subject: str) -> bytes:
    return f"-ERR 'Permissions Violation for Publish to \"{subject}\"'\r\n".encode()


def _sub_err(subject: str, queue: str = "") -> bytes:
    using = f' using queue "{queue}"' if queue else ""
    return f"-ERR 'Permissions Violation for Subscription to \"{subject}\"{using}'\r\n".encode()


def _user(name: str, **permissions: object) -> dict[str, object]:
    user: dict[str, object] = {"user": name, "password": name}
    if permissions:
        user["permissions"] = permissions
    return user


USERS = [
    _user("a", publish={"allow": ["foo.*", "bar.>"], "deny": ["foo.secret"]}, subscribe={"allow": ["foo.*"]}),
    _user("q", subscribe={"allow": ["q.x v1", "q.y", "q.y v2", "q.* w.*"], "deny": ["q.bad v1"]}),
    _user("c", subscribe={"deny": ["x.secret", "y.*"]}, publish={"deny": ">"}),
    _user("s", publish="only.this", subscribe=["one", "two.>"]),
    _user("empty", publish={"allow": []}, subscribe={"allow": []}),
    _user("resp", subscribe="req", allow_responses=True),
    _user("resp2", subscribe="req", allow_responses={"max": 2}),
    _user("d", subscribe={"deny": ["y.*"]}),
    _user("dq", subscribe={"deny": ["q.bad v1"]}),
    _user("free"),
]


@pytest.fixture
def target(start_server: StartServer) -> Target:
    return start_server(jetstream=False, authorization={"users": USERS})


@contextmanager
def _client(target: Target, user: str, verbose: bool = False) -> Iterator[RawClient]:
    fields = {"verbose": verbose, "pedantic": False, "headers": True, "user": user, "pass": user}
    connect = b"CONNECT " + json.dumps(fields).encode() + b"\r\n"
    client = RawClient(target.port)
    try:
        out, closed = client.exchange(connect)
        assert not closed and out == (b"+OK\r\nPONG\r\n" if verbose else b"PONG\r\n"), out
        yield client
    finally:
        client.close()


def _ok(client: RawClient, data: bytes) -> bytes:
    """Send ``data``; the connection must stay open. Returns what came back before the PONG."""
    out, closed = client.exchange(data)
    assert not closed, out
    return out[: -len(b"PONG\r\n")]


def _frames(out: bytes) -> list[bytes]:
    """MSG frames, sorted: the order of one message's deliveries to several subscriptions differs."""
    frames = []
    while out:
        line, _, rest = out.partition(b"\r\n")
        size = int(line.split()[-1])
        frames.append(line + b"\r\n" + rest[: size + 2])
        out = rest[size + 2 :]
    return sorted(frames)


def test_publish_allow_and_deny(target: Target) -> None:
    with _client(target, "free") as watcher, _client(target, "a") as a:
        assert _ok(watcher, b"SUB > 1\r\n") == b""
        assert _ok(a, b"PUB foo.x 2\r\nhi\r\n") == b""
        assert _ok(a, b"PUB foo.secret 2\r\nno\r\n") == _pub_err("foo.secret")
        assert _ok(a, b"PUB bar 2\r\nno\r\n") == _pub_err("bar")
        assert _ok(a, b"PUB bar.x.y 2\r\nhi\r\n") == b""
        assert _ok(a, b"HPUB zzz 12 14\r\nNATS/1.0\r\n\r\nno\r\n") == _pub_err("zzz")
        # A wildcard in a publish subject is taken literally: foo.* and foo.> match the pattern foo.*.
        assert _ok(a, b"PUB foo.> 2\r\nhi\r\n") == b""
        # Several in one read: each denied one gets its -ERR, the allowed ones go through.
        burst = b"PUB zzz 1\r\n1\r\nPUB foo.y 1\r\n2\r\nPUB foo.secret 1\r\n3\r\n"
        assert _ok(a, burst) == _pub_err("zzz") + _pub_err("foo.secret")
        assert _ok(watcher, b"") == (
            b"MSG foo.x 1 2\r\nhi\r\nMSG bar.x.y 1 2\r\nhi\r\nMSG foo.> 1 2\r\nhi\r\nMSG foo.y 1 1\r\n2\r\n"
        )


def test_verbose_violation_replaces_ok(target: Target) -> None:
    with _client(target, "a", verbose=True) as a:
        assert _ok(a, b"PUB zzz 2\r\nno\r\n") == _pub_err("zzz")
        assert _ok(a, b"SUB zzz 1\r\n") == _sub_err("zzz")
        assert _ok(a, b"PUB foo.x 2\r\nhi\r\nSUB foo.x 2\r\n") == b"+OK\r\n+OK\r\n"


def test_subscribe_allow_with_wildcards(target: Target) -> None:
    with _client(target, "a") as a, _client(target, "free") as free:
        assert _ok(a, b"SUB foo.x 1\r\n") == b""
        assert _ok(a, b"SUB foo.* 2\r\n") == b""
        # nats-server matches the subscription subject like a publish: the pattern foo.* matches
        # the token '>' too, so foo.> is allowed.
        assert _ok(a, b"SUB foo.> 3\r\n") == b""
        for subject in (b"*.x", b">", b"foo.x.y", b"bar.x"):
            assert _ok(a, b"SUB " + subject + b" 9\r\n") == _sub_err(subject.decode())
        # The denied subscriptions were not registered: nothing arrives for sid 9.
        assert _ok(free, b"PUB zz.x 1\r\nz\r\nPUB foo.x 1\r\nf\r\n") == b""
        expected = b"MSG foo.x 1 1\r\nf\r\nMSG foo.x 2 1\r\nf\r\nMSG foo.x 3 1\r\nf\r\n"
        assert _frames(_ok(a, b"")) == _frames(expected)


def test_queue_permissions(target: Target) -> None:
    with _client(target, "q") as q:
        assert _ok(q, b"SUB q.x 1\r\n") == _sub_err("q.x")  # only queue v1 may subscribe to q.x
        assert _ok(q, b"SUB q.x v1 2\r\n") == b""
        assert _ok(q, b"SUB q.x v2 3\r\n") == _sub_err("q.x", "v2")
        assert _ok(q, b"SUB q.y 4\r\n") == b""
        assert _ok(q, b"SUB q.y v2 5\r\n") == b""
        assert _ok(q, b"SUB q.y v1 6\r\n") == _sub_err("q.y", "v1")
        assert _ok(q, b"SUB q.z w.3 7\r\n") == b""  # the queue matches the wildcard queue w.*
        assert _ok(q, b"SUB q.bad v1 8\r\n") == _sub_err("q.bad", "v1")


def test_subscribe_deny_and_delivery_filter(target: Target) -> None:
    with _client(target, "c") as c, _client(target, "free") as free:
        assert _ok(c, b"SUB x.secret 1\r\n") == _sub_err("x.secret")
        assert _ok(c, b"SUB y.z 2\r\n") == _sub_err("y.z")
        assert _ok(c, b"SUB y.* 3\r\n") == _sub_err("y.*")
        # Wildcards that reach denied subjects are allowed, but denied subjects are not delivered.
        assert _ok(c, b"SUB x.* 4\r\nSUB > 5\r\n") == b""
        assert (
            _ok(free, b"PUB x.secret 1\r\n1\r\nPUB x.ok 1\r\n2\r\nPUB y.z 1\r\n3\r\nPUB z 1\r\n4\r\n") == b""
        )
        assert _frames(_ok(c, b"")) == _frames(
            b"MSG x.ok 5 1\r\n2\r\nMSG x.ok 4 1\r\n2\r\nMSG z 5 1\r\n4\r\n"
        )
        # publish deny ">" forbids everything
        assert _ok(c, b"PUB x.ok 1\r\n1\r\n") == _pub_err("x.ok")


def test_delivery_filter_starts_with_an_overlapping_wildcard(target: Target) -> None:
    """nats-server (2.12+ ``loadMsgDenyFilterIfNeeded``: ``SubjectsCollide``) filters deliveries
    once a wildcard subscription that can overlap a deny entry was made: *.z overlaps the denied y.*
    without containing it (2.9 filtered only for a wildcard that contains the deny entry)."""
    with _client(target, "d") as d, _client(target, "free") as free:
        assert _ok(d, b"SUB *.z 2\r\n") == b""  # overlaps y.*: filtering starts
        assert _ok(free, b"PUB y.z 1\r\n1\r\nPUB x.z 1\r\n2\r\n") == b""
        assert _ok(d, b"") == b"MSG x.z 2 1\r\n2\r\n"
        assert _ok(d, b"SUB y.> 3\r\n") == _sub_err("y.>")  # the pattern y.* matches the token '>'
        assert _ok(d, b"SUB > 3\r\n") == b""
        assert _ok(free, b"PUB y.z 1\r\n3\r\nPUB y.a.b 1\r\n4\r\n") == b""
        assert _ok(d, b"") == b"MSG y.a.b 3 1\r\n4\r\n"


def test_delivery_filter_honours_a_queue_deny_entry(target: Target) -> None:
    """A "subject queue" deny entry keeps the subject from that queue only (2.12+ checkDenySub):
    q.* in queue v1 does not get q.bad, q.* in v2 and a plain q.bad subscription do."""
    with _client(target, "dq") as d, _client(target, "free") as free:
        assert _ok(d, b"SUB q.* v1 1\r\nSUB q.* v2 2\r\nSUB q.bad 3\r\n") == b""
        assert _ok(free, b"PUB q.bad 1\r\n1\r\nPUB q.ok 1\r\n2\r\n") == b""
        assert _frames(_ok(d, b"")) == _frames(
            b"MSG q.bad 2 1\r\n1\r\nMSG q.bad 3 1\r\n1\r\nMSG q.ok 1 1\r\n2\r\nMSG q.ok 2 1\r\n2\r\n"
        )


def test_short_forms_and_empty_lists(target: Target) -> None:
    with _client(target, "s") as s, _client(target, "empty") as empty:
        assert _ok(s, b"PUB only.this 1\r\n1\r\nPUB only.that 1\r\n2\r\n") == _pub_err("only.that")
        assert _ok(s, b"SUB one 1\r\nSUB two.a.b 2\r\nSUB three 3\r\n") == _sub_err("three")
        # Empty allow lists restrict nothing.
        assert _ok(empty, b"SUB anything 1\r\nPUB anything 1\r\nx\r\n") == b"MSG anything 1 1\r\nx\r\n"


def test_default_permissions(start_server: StartServer) -> None:
    target = start_server(
        jetstream=False,
        authorization={
            "default_permissions": {"publish": ["pub.>"], "subscribe": {"deny": ["secret"]}},
            "users": [_user("plain"), _user("own", publish=">")],
        },
    )
    with _client(target, "plain") as plain, _client(target, "own") as own:
        assert _ok(plain, b"PUB other 1\r\n1\r\n") == _pub_err("other")
        assert _ok(plain, b"SUB secret 1\r\n") == _sub_err("secret")
        assert _ok(plain, b"SUB pub.* 2\r\nPUB pub.x 1\r\n1\r\n") == b"MSG pub.x 2 1\r\n1\r\n"
        # A user with permissions of its own does not get the defaults.
        assert (
            _ok(own, b"SUB secret 1\r\nPUB other 1\r\n2\r\nPUB secret 1\r\n3\r\n")
            == b"MSG secret 1 1\r\n3\r\n"
        )


def test_allow_responses(target: Target) -> None:
    with (
        _client(target, "free") as requester,
        _client(target, "resp") as one,
        _client(target, "resp2") as two,
    ):
        assert _ok(one, b"SUB req 1\r\nPUB elsewhere 1\r\nx\r\n") == _pub_err("elsewhere")
        assert _ok(two, b"SUB req 1\r\n") == b""
        assert _ok(requester, b"SUB rep.> 9\r\nPUB req rep.1 2\r\nhi\r\n") == b""
        assert _ok(one, b"") == b"MSG req 1 rep.1 2\r\nhi\r\n"
        assert _ok(two, b"") == b"MSG req 1 rep.1 2\r\nhi\r\n"
        # Default: one response per request; max 2 allows two. Other reply subjects stay denied.
        replies = b"PUB rep.1 2\r\nr1\r\nPUB rep.1 2\r\nr2\r\nPUB rep.2 2\r\nr3\r\n"
        assert _ok(one, replies) == _pub_err("rep.1") + _pub_err("rep.2")
        assert _ok(two, replies) == _pub_err("rep.2")
        assert _ok(two, b"PUB rep.1 2\r\nr4\r\n") == _pub_err("rep.1")
        assert _ok(requester, b"") == (
            b"MSG rep.1 9 2\r\nr1\r\nMSG rep.1 9 2\r\nr1\r\nMSG rep.1 9 2\r\nr2\r\n"
        )


async def test_nats_py_sees_violation_and_keeps_working(target: Target) -> None:
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc = await nats.connect(target.url, user="a", password="a", error_cb=on_error)
    try:
        sub = await nc.subscribe("foo.*")
        await nc.publish("nope", b"x")
        await nc.publish("foo.ok", b"y")
        msg = await sub.next_msg(timeout=5)
        assert (msg.subject, msg.data) == ("foo.ok", b"y")
        await nc.flush(timeout=5)
        assert nc.is_connected
        assert any('permissions violation for publish to "nope"' in str(e).lower() for e in errors), errors
    finally:
        await nc.close()


def test_nkey_user_permissions(start_server: StartServer) -> None:
    import base64
    import os

    import nkeys

    kp = nkeys.from_seed(nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER))
    public = kp.public_key.decode()
    target = start_server(
        jetstream=False, authorization={"users": [{"nkey": public, "permissions": {"publish": "ok"}}]}
    )
    with RawClient(target.port) as client:
        sig = base64.urlsafe_b64encode(kp.sign(client.info["nonce"].encode())).rstrip(b"=").decode()
        connect = {"verbose": False, "pedantic": False, "nkey": public, "sig": sig}
        assert _ok(client, b"CONNECT " + json.dumps(connect).encode() + b"\r\n") == b""
        assert _ok(
            client, b"SUB > 1\r\nPUB ok 1\r\n1\r\nPUB no 1\r\n2\r\n"
        ) == b"MSG ok 1 1\r\n1\r\n" + _pub_err("no")


def test_no_auth_user_gets_its_permissions(start_server: StartServer) -> None:
    target = start_server(
        jetstream=False,
        no_auth_user="guest",
        authorization={"users": [_user("guest", subscribe="public.>")]},
    )
    with RawClient(target.port) as client:
        connect = b'CONNECT {"verbose":false,"pedantic":false}\r\n'
        assert _ok(client, connect + b"SUB private 1\r\nSUB public.x 2\r\n") == _sub_err("private")
