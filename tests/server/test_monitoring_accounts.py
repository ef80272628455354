"""Monitoring of accounts and the monitor's HTTP side, field by field against nats-server 2.15.1
(issue 26): ``/accstatz`` (exporters poll it; it was a 404), ``/accountz`` details with the system
imports every account has, ``/subsz`` over all accounts or one, ``/connz`` filtered by account and
user, any HTTP method (nats-server's handlers take them all), Go's mux around them (paths matched
exactly under ``http_base_path``, unclean paths redirected, HEAD never answered with a body), and
what ``http_req_stats`` counts when a parameter does not decode."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import nats
import pytest
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

ACCOUNTS = {
    "accounts": {
        "A": {"jetstream": "enabled", "users": [{"user": "a", "password": "a"}],
              "exports": [{"service": "svc.>"}, {"stream": "ev.>"}]},
        "B": {"users": [{"user": "b", "password": "b"}],
              "imports": [{"service": {"account": "A", "subject": "svc.>"}},
                          {"stream": {"account": "A", "subject": "ev.>"}, "prefix": "fromA"}]},
        "SYS": {"users": [{"user": "sys", "password": "sys"}]},
    },
    "system_account": "SYS",
}  # fmt: skip
# Subscription counts that differ: where nats-server adds no subscription to an exporting account,
# its imports here are two (the ``_R_.<tag>.>`` of the service's replies, the stream import's ``ev.>``);
# the system account's are its own internal services (nats-server has 50-odd event subscriptions).
EXPORTER = "A"


def _http(target: Target, path: str, method: str = "GET", body: bytes | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(f"http://127.0.0.1:{target.http_port}{path}", data=body, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as resp:
            raw = resp.read()
            is_json = "json" in resp.headers.get("Content-Type", "") and raw
            return resp.status, (json.loads(raw) if is_json else raw.decode())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _get(target: Target, path: str) -> Any:
    status, body = _http(target, path)
    assert status == 200, (target.kind, path, body)
    return body


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    """Each target without accounts or JetStream: every user is in $G."""
    targets = {k: make_target(k, tmp_path_factory.mktemp(f"macc-{k}"), jetstream=False, http_port=-1) for k in
               (EMBEDDED, NATS_SERVER)}  # fmt: skip
    yield targets
    for target in targets.values():
        target.stop()


@pytest.fixture(scope="module")
def accounts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    targets = {k: make_target(k, tmp_path_factory.mktemp(f"maccs-{k}"), http_port=-1, **ACCOUNTS) for k in
               (EMBEDDED, NATS_SERVER)}  # fmt: skip
    yield targets
    for target in targets.values():
        target.stop()


def _both(targets: dict[str, Target], path: str) -> tuple[Any, Any]:
    return _get(targets[EMBEDDED], path), _get(targets[NATS_SERVER], path)


def _without_times(stat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in stat.items() if k not in ("server_id", "now", "update_time")}


def _imports(detail: dict[str, Any]) -> list[str]:
    return sorted(json.dumps(i, sort_keys=True) for i in detail.get("imports", []))


async def test_accstatz_is_nats_servers(plain: dict[str, Target]) -> None:
    """``/accstatz`` (it was a 404): the accounts with connections, all of them with ``unused``;
    each account's connections, subscriptions (its system imports among them) and traffic."""
    empty = _both(plain, "/accstatz")
    assert [set(e) for e in empty] == [{"server_id", "now", "account_statz"}] * 2
    assert empty[0]["account_statz"] == empty[1]["account_statz"] == []
    unused = _both(plain, "/accstatz?unused=1")
    assert [sorted(a["acc"] for a in u["account_statz"]) for u in unused] == [["$G", "$SYS"]] * 2
    (ours_g,), (theirs_g,) = ([a for a in u["account_statz"] if a["acc"] == "$G"] for u in unused)
    assert ours_g == theirs_g  # nothing yet: no connection, the four system imports
    conns = []
    for target in plain.values():
        nc = await nats.connect(target.url, allow_reconnect=False)
        sub = await nc.subscribe("acc.*")
        await nc.publish("acc.one", b"hello")
        await nc.publish("nobody", b"12345678")
        await sub.next_msg(timeout=10)
        conns.append(nc)
    try:
        ours, theirs = (s["account_statz"] for s in _both(plain, "/accstatz"))
        assert ours == theirs, (ours, theirs)  # conns 1, 4 imports + 2 subscriptions, 2 in, 1 out
        assert ours[0]["received"]["msgs"] == 2 and ours[0]["sent"]["bytes"] == 5
    finally:
        for nc in conns:
            await nc.close()
    for target in plain.values():  # a bad boolean: nats-server's 400 and words
        assert _http(target, "/accstatz?unused=maybe") == (
            400, "Error decoding boolean for 'unused': strconv.ParseBool: parsing \"maybe\": invalid syntax")


def test_accountz_details_with_the_system_imports(accounts: dict[str, Target]) -> None:
    """``/accountz?acc=``: nats-server's fields for a JetStream account, an importing account, the
    global and the system account, with the imports nats-server gives every account (CONNZ, STATZ,
    USER.INFO from the system account; ``$JS.API.>`` with JetStream) and the system exports."""
    ours, theirs = _both(accounts, "/accountz")
    assert sorted(ours["accounts"]) == sorted(theirs["accounts"]) and ours["system_account"] == "SYS"
    for name in ("A", "B", "$G", "SYS"):
        mine, ref = (d["account_detail"] for d in _both(accounts, f"/accountz?acc={name}"))
        assert list(mine) == list(ref), name
        for key in ("account_name", "is_system", "jetstream_enabled", "client_connections", "subscriptions"):
            if not (name in (EXPORTER, "SYS") and key == "subscriptions"):
                assert mine.get(key) == ref.get(key), (name, key)
        assert _imports(mine) == _imports(ref), name
        assert sorted(map(str, mine.get("exports", []))) == sorted(map(str, ref.get("exports", []))), name
    for target in accounts.values():
        assert _http(target, "/accountz?acc=NOPE") == (400, "Account NOPE does not exist")


def test_subsz_counts_every_account_or_one(plain: dict[str, Target], accounts: dict[str, Target]) -> None:
    """``/subsz`` adds up every account's sublist (``acc=`` one of them); an account's own count is
    what nats-server's is: the system imports' subscriptions (and ``$JS.API.>`` with JetStream)."""
    for targets, names in ((plain, ["$G"]), (accounts, ["B", "$G"])):
        for name in names:
            ours, theirs = _both(targets, f"/subsz?acc={name}&subs=1")
            assert ours["num_subscriptions"] == theirs["num_subscriptions"], name
            assert sorted(s["subject"] for s in ours["subscriptions_list"]) == sorted(
                s["subject"] for s in theirs["subscriptions_list"]
            ), name
    for target in plain.values():
        everything, sys_ = _get(target, "/subsz"), _get(target, "/subsz?acc=$SYS")
        assert everything["num_subscriptions"] == 4 + sys_["num_subscriptions"]
        assert _get(target, "/varz")["subscriptions"] == everything["num_subscriptions"]
        assert _http(target, "/subsz?subs=detail")[0] == 400  # a boolean here, not connz's "detail"
        assert _http(target, "/subsz?test=a.*") == (400, "invalid test subject, must be valid publish subject: a.*")
        assert "subscriptions_list" not in _get(target, "/subsz?subs=1&test=nothing.here")


async def test_connz_by_account_and_user(accounts: dict[str, Target]) -> None:
    conns = []
    for target in accounts.values():
        for user in ("a", "a", "b"):
            nc = await nats.connect(target.url.replace("nats://", f"nats://{user}:{user}@"), allow_reconnect=False)
            await nc.subscribe(f"{user}.sub")
            await nc.flush()
            conns.append(nc)
    try:
        for query in ("acc=A", "acc=B", "acc=A&user=b", "acc=B&filter_subject=a.sub", "user=a", "acc=NONE",
                      "filter_subject=x"):  # fmt: skip (HTTP's /connz has no subject filter: ignored)
            ours, theirs = (_http(t, f"/connz?{query}&auth=1") for t in (accounts[EMBEDDED], accounts[NATS_SERVER]))
            assert ours[0] == theirs[0], query
            if ours[0] != 200:
                assert ours == theirs, query
                continue
            for key in ("num_connections", "total", "limit"):
                assert ours[1][key] == theirs[1][key], (query, key)
            assert [c.get("account") for c in ours[1]["connections"] or []] == [
                c.get("account") for c in theirs[1]["connections"] or []
            ], query
    finally:
        for nc in conns:
            await nc.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH", "HEAD"])
def test_any_method_is_answered(plain: dict[str, Target], method: str) -> None:
    """nats-server's handlers take any method (Go's mux routes by path); a body is read and left."""
    for target in plain.values():
        for path in ("/varz", "/connz", "/accstatz"):
            status, body = _http(target, path, method, b'{"ignored": true}' if method in ("POST", "PUT") else None)
            assert status == 200, (target.kind, method, path, body)
            if method == "HEAD":
                assert body == ""
            else:
                assert body["server_id"]
        assert _http(target, "/nope", method)[0] == 404


def _exchange(target: Target, requests: list[str]) -> list[tuple[str, dict[str, str], bytes]]:
    """Send ``requests`` (method and target each) down ONE connection, the last with
    ``Connection: close``, and read every response as a client does: by its headers — a body sent
    where HTTP has none (a HEAD's) would be read as the next response. Each: status line, headers
    but Date, body."""
    with socket.create_connection(("127.0.0.1", target.http_port), timeout=10) as sock:
        raw = "".join(f"{r} HTTP/1.1\r\nHost: x\r\n" + ("Connection: close\r\n" if i == len(requests) - 1 else "")
                      + "\r\n" for i, r in enumerate(requests)).encode()  # fmt: skip
        sock.sendall(raw)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    answers = []
    for request in requests:
        head, _, data = data.partition(b"\r\n\r\n")
        status, *lines = head.decode().split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines) if k.lower() != "date"}
        if request.startswith("HEAD "):
            body = b""
        elif headers.get("transfer-encoding") == "chunked":  # Go's, for a body over its buffer (the root page)
            body = b""
            while True:
                size_line, _, data = data.partition(b"\r\n")
                size = int(size_line, 16)
                body, data = body + data[:size], data[size + 2 :]
                if size == 0:
                    break
        else:
            length = int(headers.get("content-length", 0))
            body, data = data[:length], data[length:]
        answers.append((status, headers, body))
    assert data == b"", (target.kind, data)
    return answers


def test_the_mux_around_the_handlers(plain: dict[str, Target]) -> None:
    """Go's ServeMux as nats-server uses it: a HEAD has no body (404s and 400s too), a path that is
    not clean is a 307 to the clean one (an HTML body for GET only), an endpoint is matched exactly
    (a trailing slash is the root's 404, with ``X-Content-Type-Options``), a bad /healthz flag a 400."""
    requests = ["HEAD /nope", "HEAD /healthz", "HEAD /healthz?details=x", "GET //healthz", "POST /x/../connz?a=1",
                "HEAD /./varz", "DELETE //nope", "GET /varz/", "OPTIONS /healthz/", "GET /healthz?js-enabled=maybe",
                "GET /healthz?js-server-only=1", "GET /healthz"]  # fmt: skip
    ours, theirs = (_exchange(plain[k], requests) for k in (EMBEDDED, NATS_SERVER))
    for request, mine, nats_server in zip(requests, ours, theirs, strict=True):
        assert mine == nats_server, request


def test_http_base_path(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Under ``http_base_path`` the endpoints are there and only there (nats-server's basePath)."""
    targets = {k: make_target(k, tmp_path_factory.mktemp(f"mbase-{k}"), jetstream=False, http_port=-1,
                              http_base_path="/mon") for k in (EMBEDDED, NATS_SERVER)}  # fmt: skip
    try:
        paths = ["GET /mon", "GET /mon/", "GET /mon/varz/", "GET /varz", "GET /monvarz", "GET /", "GET /mon//healthz",
                 "GET /mon/healthz", "HEAD /mon/connz"]  # fmt: skip
        ours, theirs = (_exchange(targets[k], paths) for k in (EMBEDDED, NATS_SERVER))
        for path, mine, nats_server in zip(paths, ours, theirs, strict=True):
            if path == "GET /mon":  # the root page: its own HTML (nats-server's is chunked: longer)
                assert (mine[0], mine[1]["content-type"]) == (nats_server[0], nats_server[1]["content-type"])
                assert b"varz" in mine[2] and b"varz" in nats_server[2]
            elif path == "HEAD /mon/connz":
                assert mine[0] == nats_server[0] == "HTTP/1.1 200 OK" and mine[2] == nats_server[2] == b""
            else:
                assert mine == nats_server, path
    finally:
        for target in targets.values():
            target.stop()


def test_jsz_without_jetstream(plain: dict[str, Target]) -> None:
    """nats-server answers ``/jsz`` without JetStream (exporters poll it): ``disabled`` and zeros,
    its parameters decoded first; ``leader-only`` filtered out (there is no leader)."""
    answers = {}
    for kind, target in plain.items():
        status, body = _http(target, "/jsz?accounts=true&streams=1")
        assert status == 200 and body.pop("server_id") and body.pop("now"), (kind, body)
        answers[kind] = [body] + [_http(target, f"/jsz?{q}") for q in ("accounts=x", "offset=1.5", "raft=2",
                                                                       "leader-only=true", "stream-leader-only=x")]  # fmt: skip
    assert answers[EMBEDDED] == answers[NATS_SERVER]
    assert answers[EMBEDDED][0]["disabled"] is True and answers[EMBEDDED][4] == (400, "filtered response: not leader")


def test_what_http_req_stats_count(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A parameter ``/connz`` and ``/routez`` cannot decode is not counted (they decode first); the
    other endpoints count the request before decoding."""
    targets = {k: make_target(k, tmp_path_factory.mktemp(f"mstat-{k}"), jetstream=False, http_port=-1) for k in
               (EMBEDDED, NATS_SERVER)}  # fmt: skip
    try:
        for target in targets.values():
            for path in ("/routez?subs=x", "/connz?auth=x", "/connz?limit=abc", "/connz?state=bogus", "/connz?sort=bogus",
                         "/subsz?subs=x", "/gatewayz?accs=2", "/leafz?subs=yes", "/accstatz?unused=2", "/accountz?acc=X",
                         "/routez"):  # fmt: skip
                _http(target, path)
        ours, theirs = (_get(targets[k], "/varz")["http_req_stats"] for k in (EMBEDDED, NATS_SERVER))
        assert ours == theirs
    finally:
        for target in targets.values():
            target.stop()
