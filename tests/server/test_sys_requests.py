"""The system account's monitoring requests (``$SYS.REQ.SERVER.PING[.KIND]``, ``$SYS.REQ.SERVER.<id>.KIND``),
both targets: the same answer shapes as nats-server 2.15.1, its server filters, and none of it on a
server whose system account nobody can use."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import pytest
from tests.support.targets import Target

from pyjetstream.client import connect

ACCOUNTS = {
    "server_name": "N1",
    "accounts": {"SYS": {"users": [{"user": "sys", "password": "sys"}]}, "APP": {"jetstream": "enabled", "users": [{"user": "app", "password": "app"}]}},
    "system_account": "SYS",
}


async def _ask(url: str, subject: str, body: Any = None, wait: float = 1.0, raw: bytes | None = None) -> list[dict[str, Any]]:
    nc = await connect(url)
    try:
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish(subject, raw if raw is not None else json.dumps(body or {}).encode(), reply=inbox)
        answers = []
        while True:
            try:
                msg = await sub.next_msg(wait)
            except TimeoutError:
                return answers
            if msg.status:
                return [{"status": msg.status}]
            answers.append(json.loads(msg.data))
    finally:
        await nc.close()


def _sys(target: Target) -> str:
    return target.url.replace("nats://", "nats://sys:sys@")


@pytest.fixture
def target(start_server: Callable[..., Target]) -> Target:
    return start_server(**ACCOUNTS)


async def test_statsz_and_kinds_have_nats_servers_shape(target: Target) -> None:
    (stats,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING")
    assert list(stats["server"]) == SERVER_INFO_KEYS and stats["server"]["feature_flags"] == FEATURE_FLAGS
    assert stats["server"]["name"] == "N1" and stats["server"]["jetstream"] is True
    assert {"start", "mem", "cores", "cpu", "connections", "total_connections", "subscriptions", "sent", "received",
            "slow_consumers", "active_servers", "jetstream"} <= set(stats["statsz"])  # fmt: skip
    server_id = stats["server"]["id"]
    for kind, key in (("VARZ", "server_id"), ("CONNZ", "connections"), ("SUBSZ", "num_subscriptions"),
                      ("JSZ", "streams"), ("HEALTHZ", "status"), ("ACCOUNTZ", "accounts"), ("ROUTEZ", "routes")):  # fmt: skip
        (ping,) = await _ask(_sys(target), f"$SYS.REQ.SERVER.PING.{kind}")
        (direct,) = await _ask(_sys(target), f"$SYS.REQ.SERVER.{server_id}.{kind}")
        assert key in ping["data"] and key in direct["data"], (kind, ping)
        assert ping["server"]["id"] == server_id
    (connz,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.CONNZ", {"subscriptions": True, "auth": True})
    (mine,) = connz["data"]["connections"]
    assert mine["account"] == "SYS" and mine["authorized_user"] == "sys"
    (jsz,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.JSZ", {"accounts": True})
    assert [a["name"] for a in jsz["data"]["account_details"]] == ["APP"]


async def test_server_filters(target: Target) -> None:
    assert len(await _ask(_sys(target), "$SYS.REQ.SERVER.PING.VARZ", {"server_name": "N"})) == 1  # contains
    assert await _ask(_sys(target), "$SYS.REQ.SERVER.PING.VARZ", {"server_name": "N", "exact_match": True}) == []
    assert len(await _ask(_sys(target), "$SYS.REQ.SERVER.PING.VARZ", {"server_name": "N1", "exact_match": True})) == 1
    assert await _ask(_sys(target), "$SYS.REQ.SERVER.PING.VARZ", {"cluster": "elsewhere"}) == []


async def test_only_the_system_account_is_answered(target: Target) -> None:
    app = target.url.replace("nats://", "nats://app:app@")  # no system privileges
    assert await _ask(app, "$SYS.REQ.SERVER.PING.VARZ") == [{"status": 503}]


async def test_any_account_asks_about_itself(start_server: Callable[..., Target]) -> None:
    """A plain server (every user in $G): through the system imports nats-server gives every
    account, a user's CONNZ, account STATZ and USER.INFO requests are answered for its own account
    (not the server's requests: no responders)."""
    target = start_server(jetstream=False)
    (connz,) = await _ask(target.url, "$SYS.REQ.SERVER.PING.CONNZ", {"acc": "OTHER"})
    assert connz["data"]["num_connections"] == 1 and "account" not in connz["data"]["connections"][0]
    assert connz["server"]["flags"] == 0 and connz["server"]["jetstream"] is False
    (same,) = await _ask(target.url, "$SYS.REQ.ACCOUNT.PING.CONNZ", {"subscriptions": True})
    assert same["data"]["connections"][0]["subscriptions_list"][0].startswith("_INBOX.")
    (statz,) = await _ask(target.url, "$SYS.REQ.ACCOUNT.PING.STATZ")
    (mine,) = statz["data"]["account_statz"]
    assert (mine["acc"], mine["conns"], mine["num_subscriptions"]) == ("$G", 1, 5)
    (user,) = await _ask(target.url, "$SYS.REQ.USER.INFO")
    assert user["data"] == {"user": "", "account": "$G", "account_name": "$G"}
    assert await _ask(target.url, "$SYS.REQ.SERVER.PING") == [{"status": 503}]
    assert await _ask(target.url, "$SYS.REQ.SERVER.PING.VARZ") == [{"status": 503}]
    (bad,) = await _ask(target.url, "$SYS.REQ.SERVER.PING.CONNZ", None, raw=b"{")
    assert bad["error"]["code"] == 400


# nats-server 2.15.1's ServerInfo (the ``server`` of every answer), in its order, and the feature
# flags it stamps on it (its defaults: none configured).
SERVER_INFO_KEYS = ["name", "host", "id", "ver", "feature_flags", "jetstream", "flags", "seq", "time"]
FEATURE_FLAGS = {"js_ack_fc_v2": False, "js_api_reply_v2": False, "js_raft_delete_range": True, "js_snapshot_sources": False}
# Every kind nats-server answers on $SYS.REQ.SERVER.PING.<KIND> (STATZ: the bare PING's statistics).
PING_KINDS = ("STATSZ", "STATZ", "VARZ", "CONNZ", "SUBSZ", "JSZ", "HEALTHZ", "ACCOUNTZ", "ROUTEZ", "GATEWAYZ", "LEAFZ",
              "IDZ", "PROFILEZ", "EXPVARZ", "IPQUEUESZ", "RAFTZ", "KICK", "LDM", "RELOAD")  # fmt: skip


async def test_an_account_reaches_only_its_system_imports(start_server: Callable[..., Target]) -> None:
    """An ordinary account (a plain server's $G) asks through the four system imports nats-server
    gives it and gets nats-server's ServerInfo with each answer; every other $SYS.REQ.SERVER.PING.*
    kind (and a kind under CONNZ) has no responders, as there."""
    target = start_server(jetstream=False)
    for subject in ("$SYS.REQ.SERVER.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.CONNZ", "$SYS.REQ.ACCOUNT.PING.STATZ",
                    "$SYS.REQ.USER.INFO"):  # fmt: skip
        (answer,) = await _ask(target.url, subject)
        assert list(answer["server"]) == SERVER_INFO_KEYS, (subject, answer["server"])
        assert answer["server"]["feature_flags"] == FEATURE_FLAGS
        assert "data" in answer and "error" not in answer, (subject, answer)
    unanswered = [f"$SYS.REQ.SERVER.PING.{kind}" for kind in PING_KINDS if kind != "CONNZ"]
    unanswered += ["$SYS.REQ.SERVER.PING.CONNZ.X", "$SYS.REQ.ACCOUNT.PING.JSZ", "$SYS.REQ.ACCOUNT.$G.CONNZ"]
    for subject in unanswered:
        assert await _ask(target.url, subject) == [{"status": 503}], subject


async def test_jsz_without_jetstream(start_server: Callable[..., Target]) -> None:
    """JSZ of a server without JetStream: nats-server's disabled answer; leader_only gets none."""
    target = start_server(**ACCOUNTS, jetstream=False)
    (jsz,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.JSZ", {"accounts": True})
    assert jsz["data"]["disabled"] is True and jsz["data"]["config"] == {"max_memory": 0, "max_storage": 0}
    assert jsz["data"]["total"] == jsz["data"]["streams"] == 0 and "error" not in jsz
    assert await _ask(_sys(target), "$SYS.REQ.SERVER.PING.JSZ", {"leader_only": True}) == []


_GO = "json: cannot unmarshal {} into Go {} of type {}"
# (subject, body, nats-server 2.15.1's 400): zReq unmarshals the body into the kind's options struct.
BAD_OPTIONS = [
    ("$SYS.REQ.SERVER.PING.CONNZ", b'{"offset": "x"}', _GO.format("string", "struct field ConnzEventOptions.offset", "int")),
    ("$SYS.REQ.SERVER.PING.CONNZ", b'{"cid": -1}', _GO.format("number -1", "struct field ConnzEventOptions.cid", "uint64")),
    ("$SYS.REQ.SERVER.PING.CONNZ", b'{"limit": 1.5}', _GO.format("number 1.5", "struct field ConnzEventOptions.limit", "int")),
    ("$SYS.REQ.SERVER.PING.CONNZ", b'{"sort": 5}', _GO.format("number", "struct field ConnzEventOptions.sort", "server.SortOpt")),
    ("$SYS.REQ.SERVER.PING.CONNZ", b'{"state": "open"}', _GO.format("string", "struct field ConnzEventOptions.state", "server.ConnState")),
    ("$SYS.REQ.SERVER.PING.CONNZ", b'[1]', _GO.format("array", "value", "server.ConnzEventOptions")),
    ("$SYS.REQ.SERVER.PING.VARZ", b'{"server_name": 1}', _GO.format("number", "struct field VarzEventOptions.server_name", "string")),
    ("$SYS.REQ.SERVER.PING.VARZ", b'{"tags": "a"}', _GO.format("string", "struct field VarzEventOptions.tags", "[]string")),
    ("$SYS.REQ.SERVER.PING.JSZ", b'{"accounts": 1}', _GO.format("number", "struct field JszEventOptions.accounts", "bool")),
    ("$SYS.REQ.SERVER.PING.HEALTHZ", b'{"details": "x"}', _GO.format("string", "struct field HealthzEventOptions.details", "bool")),
    ("$SYS.REQ.SERVER.PING.SUBSZ", b'{"test": 3}', _GO.format("number", "struct field SubszEventOptions.test", "string")),
    ("$SYS.REQ.SERVER.PING.ACCOUNTZ", b'{"account": {}}', _GO.format("object", "struct field AccountzEventOptions.account", "string")),
    ("$SYS.REQ.SERVER.PING", b'{"cluster": true}', _GO.format("bool", "struct field StatszEventOptions.cluster", "string")),
    ("$SYS.REQ.ACCOUNT.APP.CONNZ", b'{"auth": "yes"}', _GO.format("string", "struct field ConnzEventOptions.auth", "bool")),
    ("$SYS.REQ.ACCOUNT.APP.STATZ", b'{"accounts": "APP"}', _GO.format("string", "struct field AccountStatzEventOptions.accounts", "[]string")),
]  # fmt: skip


async def test_options_of_the_wrong_type(target: Target) -> None:
    """Options that do not fit the kind's struct get nats-server's 400 in Go's words (they got a 500
    with the query decoder's, or no answer at all: a string ``state``, a number ``server_name``)."""
    for subject, body, error in BAD_OPTIONS:
        answers = await _ask(_sys(target), subject, raw=body)
        assert [{k: v for k, v in a.items() if k != "server"} for a in answers] == [
            {"error": {"code": 400, "description": error}}
        ], (subject, body)


async def test_user_info_names_the_user_and_its_permissions(target: Target) -> None:
    app = target.url.replace("nats://", "nats://app:app@")
    (user,) = await _ask(app, "$SYS.REQ.USER.INFO")
    assert user["data"] == {"user": "app", "account": "APP", "account_name": "APP"}
    (statz,) = await _ask(_sys(target), "$SYS.REQ.ACCOUNT.APP.STATZ", {"include_unused": True})
    assert [a["acc"] for a in statz["data"]["account_statz"]] == ["APP"]
    assert await _ask(_sys(target), "$SYS.REQ.ACCOUNT.APP.STATZ") == []  # nobody connected there: no answer


async def test_the_statistics_kind_is_statsz_and_idz_is_bare(target: Target) -> None:
    """``PING.STATSZ`` is the bare PING's statistics; ``PING.STATZ`` (the account kind's name) has no
    responders, as a kind nobody answers; ``IDZ`` is the bare ServerID, not a ServerAPIResponse."""
    (stats,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.STATSZ")
    assert list(stats) == ["server", "statsz"] and "connections" in stats["statsz"]
    (direct,) = await _ask(_sys(target), f"$SYS.REQ.SERVER.{stats['server']['id']}.STATSZ")
    assert list(direct) == ["server", "statsz"]
    for kind in ("STATZ", "NOPE", "KICK"):
        assert await _ask(_sys(target), f"$SYS.REQ.SERVER.PING.{kind}") == [{"status": 503}], kind
    (idz,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.IDZ")
    assert idz == {"name": "N1", "host": "127.0.0.1", "id": stats["server"]["id"]}


async def test_statsz_counts_the_accounts_with_a_client(start_server: Callable[..., Target]) -> None:
    """``active_accounts``: the system account (its internal client) and each account with a connection,
    however many; an account's JetStream alone does not make it active, and one whose last client
    leaves is no longer counted (nats-server ``registerWithAccount`` / ``removeClient``)."""
    users = {"B": {"users": [{"user": "b", "password": "b"}, {"user": "b2", "password": "b2"}]}, "C": {}}
    target = start_server(**{**ACCOUNTS, "accounts": {**ACCOUNTS["accounts"], **users}})

    async def active() -> int:
        (stats,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.STATSZ")
        return int(stats["statsz"]["active_accounts"])

    async def becomes(n: int) -> None:
        for _ in range(100):  # a close is seen by the server a moment after the client's
            if await active() == n:
                return
            await asyncio.sleep(0.05)
        assert await active() == n

    assert await active() == 1  # SYS; APP has JetStream and no client
    app = await connect(target.url.replace("nats://", "nats://app:app@"))
    b1 = await connect(target.url.replace("nats://", "nats://b:b@"))
    b2 = await connect(target.url.replace("nats://", "nats://b2:b2@"))
    assert await active() == 3
    await b1.close()
    assert await active() == 3  # b2 is still in B
    await b2.close()
    await becomes(2)
    await app.close()
    await becomes(1)


async def test_every_server_kind_is_answered(target: Target) -> None:
    """``EXPVARZ`` and ``IPQUEUESZ`` were answered with nothing (their bodies, which Go formats its
    own way, could not be sent); ``RAFTZ`` of a server with no Raft group is an empty map, not a 500;
    ``PROFILEZ`` gets nats-server's errors; ``HEALTHZ`` carries the ``status_code`` its HTTP form
    drops; ``VARZ`` says ``auth_required`` as INFO does."""

    async def data(kind: str, body: Any = None) -> Any:
        (answer,) = await _ask(_sys(target), f"$SYS.REQ.SERVER.PING.{kind}", body)
        assert list(answer) == ["server", "data"], (kind, answer)
        return answer["data"]

    expvarz = await data("EXPVARZ")
    assert list(expvarz) == ["memstats", "cmdline"] and isinstance(expvarz["cmdline"], list)
    assert {"Alloc", "HeapAlloc", "NumGC", "BySize"} <= set(expvarz["memstats"])
    assert isinstance(await data("IPQUEUESZ"), dict)
    assert all(q["pending"] == 0 for q in (await data("IPQUEUESZ", {"all": True, "filter": "zzz"})).values())
    assert await data("RAFTZ") == {}
    assert await data("PROFILEZ") == {"profile": None, "error": "Profile name not specified"}
    assert await data("PROFILEZ", {"name": "nope"}) == {"profile": None, "error": 'Profile "nope" not found'}
    assert await data("PROFILEZ", {"name": "cpu"}) == {
        "profile": None,
        "error": "Duration 0s should be between 0s and 15s",
    }
    assert await data("PROFILEZ", {"name": "cpu", "duration": 20_000_000_000}) == {
        "profile": None,
        "error": "Duration 20s should be between 0s and 15s",
    }
    assert await data("HEALTHZ") == {"status": "ok", "status_code": 200}
    assert (await data("VARZ"))["auth_required"] is True
    (bad,) = await _ask(_sys(target), "$SYS.REQ.SERVER.PING.PROFILEZ", raw=b'{"duration": "1s"}')
    assert bad["error"] == {
        "code": 400,
        "description": "json: cannot unmarshal string into Go struct field ProfilezEventOptions.duration of type time.Duration",
    }
