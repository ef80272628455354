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
    assert ours["subscriptions"] == 1
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
