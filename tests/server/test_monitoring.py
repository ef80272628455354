"""HTTP monitoring: our endpoints answer with nats-server's field names (checked against the real
nats-server in the same test) and their paging/sorting/filtering basics work on both targets."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import nats
import pytest
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

# Fields nats-server has that the embedded server leaves out on purpose.
KNOWN_VARZ_OMISSIONS = {
    "system_account",  # no system account in a single-account server
    # omitempty in nats-server: git_commit is empty in a build without VCS stamping (ours has no
    # git build of nats-server), feature_flags is empty without nats-server's feature flags.
    "git_commit",
    "feature_flags",
}


def _get(target: Target, path: str) -> tuple[int, Any]:
    url = f"http://127.0.0.1:{target.http_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            body = resp.read()
            ctype = resp.headers.get("Content-Type", "")
            return resp.status, (json.loads(body) if "json" in ctype else body.decode())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    targets = {
        kind: make_target(kind, tmp_path_factory.mktemp(f"mon-{kind}"), jetstream=False, http_port=-1)
        for kind in (EMBEDDED, NATS_SERVER)
    }
    yield targets
    for target in targets.values():
        target.stop()


@pytest.fixture
async def traffic(both: dict[str, Target]) -> AsyncIterator[None]:
    """On each target: a named client with a queue subscription that has had one message."""
    conns = []
    for target in both.values():
        nc = await nats.connect(target.url, name="mon-test", allow_reconnect=False)
        sub = await nc.subscribe("mon.*", queue="q")
        await nc.flush()
        await nc.flush()
        await nc.publish("mon.one", b"hello")
        await sub.next_msg(timeout=10)
        conns.append(nc)
    yield
    for nc in conns:
        await nc.close()


def _keys(obj: Any) -> set[str]:
    return set(obj) if isinstance(obj, dict) else set()


def test_varz_fields_match_nats_server(both: dict[str, Target], traffic: None) -> None:
    ours, theirs = (_get(both[k], "/varz")[1] for k in (EMBEDDED, NATS_SERVER))
    assert _keys(theirs) - _keys(ours) <= KNOWN_VARZ_OMISSIONS
    assert _keys(ours) - _keys(theirs) == set()
    for key in ("ping_interval", "write_deadline", "max_pending", "max_payload", "auth_timeout", "proto"):
        assert type(ours[key]) is type(theirs[key]) and ours[key] == theirs[key], key
    assert ours["in_msgs"] >= 1 and ours["out_msgs"] >= 1 and ours["connections"] == 1
    # The client's subscription and the four system imports of $G (nats-server's system account has
    # its own 56 internal subscriptions on top; ours fewer).
    assert _get(both[EMBEDDED], "/subsz?acc=$G")[1]["num_subscriptions"] == 5
    assert ours["http_req_stats"]["/varz"] >= 1


def test_connz_fields_match_nats_server(both: dict[str, Target], traffic: None) -> None:
    for query in ("", "?subs=1", "?subs=detail"):
        ours, theirs = (_get(both[k], "/connz" + query)[1] for k in (EMBEDDED, NATS_SERVER))
        assert _keys(ours) == _keys(theirs)
        (mine,) = ours["connections"]
        (ref,) = theirs["connections"]
        assert _keys(mine) == _keys(ref), query
        for key in (
            "kind",
            "type",
            "ip",
            "in_msgs",
            "out_msgs",
            "in_bytes",
            "out_bytes",
            "subscriptions",
            "name",
            "lang",
        ):
            assert mine[key] == ref[key], key
        if query == "?subs=detail":
            assert [_keys(d) for d in mine["subscriptions_list_detail"]] == [
                _keys(d) for d in ref["subscriptions_list_detail"]
            ]
            assert mine["subscriptions_list_detail"][0]["qgroup"] == "q"


def test_subsz_fields_match_nats_server(both: dict[str, Target], traffic: None) -> None:
    ours, theirs = (_get(both[k], "/subsz")[1] for k in (EMBEDDED, NATS_SERVER))
    assert _keys(ours) == _keys(theirs)
    ours, theirs = (_get(both[k], "/subsz?subs=1")[1] for k in (EMBEDDED, NATS_SERVER))
    assert _keys(ours) == _keys(theirs)
    mine = [s for s in ours["subscriptions_list"] if s["subject"] == "mon.*"]
    ref = [s for s in theirs["subscriptions_list"] if s["subject"] == "mon.*"]
    assert [_keys(s) for s in mine] == [_keys(s) for s in ref]
    assert mine[0]["msgs"] == ref[0]["msgs"] == 1


def test_healthz_and_errors_match(both: dict[str, Target]) -> None:
    for path in (
        "/healthz",
        "/connz?sort=bogus",
        "/connz?sort=stop",
        "/connz?state=bogus",
        "/connz?limit=abc",
        "/nope",
    ):
        ours, theirs = (_get(both[k], path) for k in (EMBEDDED, NATS_SERVER))
        assert ours == theirs, path


async def test_closed_connection_record_matches_nats_server(both: dict[str, Target]) -> None:
    records = {}
    for kind, target in both.items():
        nc = await nats.connect(target.url, name="closer", allow_reconnect=False)
        await nc.subscribe("a")
        await nc.subscribe("b")
        await nc.flush()
        await nc.close()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            _, closed = _get(target, "/connz?state=closed&subs=1")
            found = [c for c in closed["connections"] if c.get("name") == "closer"]
            if found:
                records[kind] = found[0]
                break
            await asyncio.sleep(0.02)
    ours, theirs = records[EMBEDDED], records[NATS_SERVER]
    assert _keys(ours) == _keys(theirs)
    for key in ("subscriptions", "reason"):
        assert ours[key] == theirs[key], key
    assert sorted(ours["subscriptions_list"]) == sorted(theirs["subscriptions_list"]) == ["a", "b"]


@pytest.fixture(params=[EMBEDDED, NATS_SERVER])
def monitored(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Target]:
    target = make_target(request.param, tmp_path / "srv", jetstream=False, http_port=-1)
    yield target
    target.stop()


async def test_connz_paging_sorting_and_closed(monitored: Target) -> None:
    conns = []
    for i in range(3):
        nc = await nats.connect(monitored.url, name=f"c{i}", allow_reconnect=False)
        for _ in range(i):  # c0 publishes nothing, c2 the most
            await nc.publish("x", b"12345")
        await nc.flush()
        conns.append(nc)
    try:
        _, page = _get(monitored, "/connz?limit=2&offset=1")
        assert page["total"] == 3 and page["num_connections"] == 2
        assert page["offset"] == 1 and page["limit"] == 2
        _, all_conns = _get(monitored, "/connz")
        cids = [c["cid"] for c in all_conns["connections"]]
        assert cids == sorted(cids)  # default sort: cid ascending
        assert [c["cid"] for c in page["connections"]] == cids[1:3]
        _, by_msgs = _get(monitored, "/connz?sort=msgs_from")
        assert [c["name"] for c in by_msgs["connections"]] == ["c2", "c1", "c0"]
        assert [c["in_msgs"] for c in by_msgs["connections"]] == [2, 1, 0]
        _, one = _get(monitored, f"/connz?cid={cids[0]}")
        assert [c["cid"] for c in one["connections"]] == [cids[0]]
    finally:
        await conns[0].close()
    # Closed connections are kept with their reason (once the server has seen the close).
    deadline = time.monotonic() + 10
    while True:
        _, closed = _get(monitored, "/connz?state=closed")
        if closed["connections"] or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.02)
    assert [c["name"] for c in closed["connections"]] == ["c0"]
    assert closed["connections"][0]["reason"] == "Client Closed"
    assert "stop" in closed["connections"][0]
    for nc in conns[1:]:
        await nc.close()


# ------------------------------- /routez /gatewayz /leafz /raftz /ipqueuesz /debug/vars (issue 26)


def _raw(target: Target, path: str) -> tuple[int, dict[str, str], str]:
    url = f"http://127.0.0.1:{target.http_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def _shape(value: Any) -> Any:
    """A JSON value with what differs between two servers (ids, names, times) blanked, types kept."""
    if isinstance(value, dict):
        return {k: ("<id>" if k in ("server_id", "server_name", "now") else _shape(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return value


@pytest.mark.parametrize(
    "path",
    [
        "/routez",
        "/routez?subs=1",
        "/routez?subs=detail",
        "/gatewayz",
        "/gatewayz?accs=true&gw_name=east&acc_name=A&subs=1",
        "/leafz",
        "/leafz?subs=true&acc=$G",
    ],
)
def test_cluster_endpoints_answer_as_a_single_nats_server(both: dict[str, Target], path: str) -> None:
    """Exporters poll these on every server (issue 26: they were 404): one node has no routes,
    gateways or leaf nodes, and says so in nats-server's shape."""
    (ours, our_headers, our_body), (theirs, their_headers, their_body) = (
        _raw(both[k], path) for k in (EMBEDDED, NATS_SERVER)
    )
    assert ours == theirs == 200
    assert _shape(json.loads(our_body)) == _shape(json.loads(their_body))
    assert our_headers["Content-Type"] == their_headers["Content-Type"] == "application/json"
    assert our_headers["Access-Control-Allow-Origin"] == their_headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize(
    "path",
    [
        "/routez?subs=x",
        "/gatewayz?subs=maybe",
        "/gatewayz?accs=2",
        "/leafz?subs=yes",
        "/ipqueuesz?all=on",
        "/raftz",
        "/raftz?acc=$G&group=S-R1",
        "/expvarz",
    ],
)
def test_their_errors_are_nats_servers(both: dict[str, Target], path: str) -> None:
    ours, theirs = (_get(both[k], path) for k in (EMBEDDED, NATS_SERVER))
    assert ours == theirs, path


def test_http_req_stats_count_what_nats_server_counts(both: dict[str, Target]) -> None:
    paths = ("/routez", "/gatewayz", "/leafz", "/ipqueuesz", "/raftz", "/debug/vars")
    for target in both.values():
        for path in paths:
            _raw(target, path)
    ours, theirs = (_get(both[k], "/varz")[1]["http_req_stats"] for k in (EMBEDDED, NATS_SERVER))
    assert {p for p in paths if p in ours} == {p for p in paths if p in theirs} == {"/routez", "/gatewayz", "/leafz"}


def test_debug_vars_is_gos_expvar(both: dict[str, Target]) -> None:
    """nats-server's ``/debug/vars`` (Go's expvar): the command line and Go's MemStats keys, typed
    as Go writes them (a Python process fills what it can tell: resident memory, live blocks, GC runs)."""
    (ours, our_headers, our_body), (theirs, their_headers, their_body) = (
        _raw(both[k], "/debug/vars") for k in (EMBEDDED, NATS_SERVER)
    )
    assert ours == theirs == 200
    assert our_headers["Content-Type"] == their_headers["Content-Type"] == "application/json; charset=utf-8"
    mine, go = json.loads(our_body), json.loads(their_body)
    assert list(mine) == list(go) == ["cmdline", "memstats"]
    assert all(isinstance(arg, str) for arg in mine["cmdline"]) and "serve" in mine["cmdline"]
    assert list(mine["memstats"]) == list(go["memstats"])
    for key, value in go["memstats"].items():
        assert type(mine["memstats"][key]) is type(value), key
    assert [c["Size"] for c in mine["memstats"]["BySize"]] == [c["Size"] for c in go["memstats"]["BySize"]]
    assert len(mine["memstats"]["PauseNs"]) == len(go["memstats"]["PauseNs"]) == 256
    assert mine["memstats"]["Sys"] > 1_000_000 and mine["memstats"]["NumGC"] >= 0
    assert our_body.startswith('{\n"cmdline": [') and "\n\"memstats\": {" in our_body


@pytest.fixture(scope="module")
def both_js(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Target]]:
    targets = {
        kind: make_target(kind, tmp_path_factory.mktemp(f"monjs-{kind}"), jetstream=True, http_port=-1)
        for kind in (EMBEDDED, NATS_SERVER)
    }
    yield targets
    for target in targets.values():
        target.stop()


async def test_ipqueuesz_names_nats_servers_queues(both_js: dict[str, Target]) -> None:
    """``/ipqueuesz``: nothing pending on an idle server (``{}``); with ``all`` the queues nats-server
    has for the same streams and consumers, by its names, indented with three spaces as Go does."""
    for target in both_js.values():
        nc = await nats.connect(target.url, allow_reconnect=False)
        js = nc.jetstream()
        await js.add_stream(name="S", subjects=["s.>"])
        await js.add_stream(name="W", subjects=["w.>"], retention="workqueue")
        await js.add_consumer("S", durable_name="PULL")
        await js.add_consumer("S", durable_name="PUSH", deliver_subject="push.here")
        await js.add_consumer("W", durable_name="WORK")
        await js.publish("s.1", b"x")
        await js.create_key_value(bucket="b")
        await nc.close()
    for path in ("/ipqueuesz", "/ipqueuesz?all=1", "/ipqueuesz?all=true&queues=stream%20'S'", "/ipqueuesz?queues=S"):
        (ours, _, our_body), (theirs, _, their_body) = (_raw(both_js[k], path) for k in (EMBEDDED, NATS_SERVER))
        assert ours == theirs == 200
        assert our_body == their_body, path
    _, _, listed = _raw(both_js[EMBEDDED], "/ipqueuesz?all=1")
    assert "[ACC:$G] consumer 'PULL' on stream 'S' pull requests" in json.loads(listed)
    assert "[ACC:$G] stream 'W' acks" in json.loads(listed)
    assert listed.startswith('{\n   "JetStream API info queue": {\n      "pending": 0\n   },')
