"""Accounts from the config file on both targets: isolation, JetStream per account, limits, monitoring.

The isolation suite tries, for each ordered pair of accounts, every way a client of one account
could reach the other's data — core subjects, ``$JS.API``, KV, object store, direct get, pull
requests — and expects each to be refused exactly as nats-server refuses it.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import nats
import nats.errors
import pytest
from nats.aio.client import Client
from nats.js.api import StorageType, StreamConfig
from tests.support.natspy import subscriptions_live
from tests.support.targets import Target

StartServer = Callable[..., Target]
TIMEOUT = 10.0
SHORT = 0.5  # a reply that must not come: how long to wait for it

ACCOUNTS = {
    "A": {
        "jetstream": {"max_mem": 1048576, "max_file": 10485760, "max_streams": 3, "max_consumers": 4},
        "users": [{"user": "a", "password": "a"}],
    },
    "B": {"jetstream": "enabled", "users": [{"user": "b", "password": "b"}]},
    "C": {"users": [{"user": "c", "password": "c"}]},
}
USERS = {"a": "A", "b": "B", "c": "C"}


@pytest.fixture
def target(start_server: StartServer) -> Target:
    return start_server(accounts=ACCOUNTS, authorization={"users": [{"user": "g", "password": "g"}]}, http_port=-1)


@asynccontextmanager
async def _connect(target: Target, user: str | None) -> AsyncIterator[Client]:
    creds = {"user": user, "password": user} if user else {}
    nc = await nats.connect(target.url, allow_reconnect=False, **creds)
    try:
        yield nc
    finally:
        await nc.close()


async def _api(nc: Client, subject: str, body: Any = None) -> dict[str, Any]:
    payload = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request(subject, payload, timeout=TIMEOUT)
    return json.loads(msg.data)


async def _no_answer(nc: Client, subject: str, payload: bytes = b"") -> str:
    """A request nobody in the requester's account answers: ``no-responders`` or ``timeout``."""
    try:
        msg = await nc.request(subject, payload, timeout=SHORT)
    except nats.errors.NoRespondersError:
        return "no-responders"
    except nats.errors.TimeoutError:
        return "timeout"
    raise AssertionError(f"{subject} was answered: {msg.data!r}")


def _monitor(target: Target, path: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{target.http_port}{path}", timeout=TIMEOUT) as resp:
        return json.loads(resp.read())


# ----------------------------------------------------------------------------- core subjects


async def test_core_subjects_are_isolated(target: Target) -> None:
    async with (
        _connect(target, "a") as a,
        _connect(target, "b") as b,
        _connect(target, "c") as c,
        _connect(target, "g") as g,
    ):
        clients = {"a": a, "b": b, "c": c, "g": g}
        inboxes: dict[str, list[tuple[str, bytes]]] = {u: [] for u in clients}
        all_got = asyncio.Event()
        for user, nc in clients.items():

            async def handler(msg: Any, user: str = user) -> None:
                inboxes[user].append((msg.subject, msg.data))
                if all(inboxes.values()):
                    all_got.set()

            await nc.subscribe(">", cb=handler)
            await subscriptions_live(nc)
        for user, nc in clients.items():
            await nc.publish(f"from.{user}", user.encode())
            await nc.flush()
        # Each account's subscriber sees its own publish and nothing else.
        await asyncio.wait_for(all_got.wait(), TIMEOUT)
        for nc in clients.values():
            await nc.flush()
        await asyncio.sleep(SHORT)
        for user, got in inboxes.items():
            assert got == [(f"from.{user}", user.encode())], (user, got)


async def test_requests_do_not_cross_accounts(target: Target) -> None:
    async with _connect(target, "a") as a, _connect(target, "b") as b:

        async def responder(msg: Any) -> None:
            await msg.respond(b"from A")

        await a.subscribe("svc", cb=responder)
        await a.flush()
        assert (await a.request("svc", b"", timeout=TIMEOUT)).data == b"from A"
        assert await _no_answer(b, "svc") == "no-responders"


# ------------------------------------------------------------------------- JetStream per account


async def test_account_info_per_account(target: Target) -> None:
    async with _connect(target, "a") as a, _connect(target, "b") as b:
        info_a = await _api(a, "$JS.API.INFO")
        assert info_a["type"] == "io.nats.jetstream.api.v1.account_info_response"
        assert info_a["limits"]["max_memory"] == 1024 * 1024
        assert info_a["limits"]["max_storage"] == 10 * 1024 * 1024
        assert info_a["limits"]["max_streams"] == 3
        assert info_a["limits"]["max_consumers"] == 4
        info_b = await _api(b, "$JS.API.INFO")
        assert info_b["limits"]["max_memory"] == -1 and info_b["limits"]["max_streams"] == -1
    disabled = {"code": 503, "err_code": 10039, "description": "JetStream not enabled for account"}
    for user in ("c", "g"):  # an account without a jetstream block, and the global account
        async with _connect(target, user) as nc:
            info = await _api(nc, "$JS.API.INFO")
            assert info == {"type": "io.nats.jetstream.api.v1.account_info_response", "error": disabled}
            names = await _api(nc, "$JS.API.STREAM.NAMES")
            assert names["type"] == "io.nats.jetstream.api.v1.stream_names_response"
            assert names["error"] == disabled
            created = await _api(nc, "$JS.API.STREAM.CREATE.X", {"name": "X"})
            assert created == {"type": "io.nats.jetstream.api.v1.stream_create_response", "error": disabled}
            assert await _no_answer(nc, "$JS.API.CONSUMER.MSG.NEXT.X.Y", b"1") == "no-responders"


async def test_account_stream_and_consumer_limits(target: Target) -> None:
    async with _connect(target, "a") as a:
        for i in range(3):
            resp = await _api(a, f"$JS.API.STREAM.CREATE.S{i}", {"name": f"S{i}", "storage": "memory"})
            assert "error" not in resp, resp
        resp = await _api(a, "$JS.API.STREAM.CREATE.S3", {"name": "S3", "storage": "memory"})
        assert resp["error"] == {"code": 400, "err_code": 10027, "description": "maximum number of streams reached"}
        for i in range(4):
            body = {"stream_name": "S0", "config": {"durable_name": f"C{i}", "ack_policy": "explicit"}}
            resp = await _api(a, f"$JS.API.CONSUMER.CREATE.S0.C{i}", body)
            assert "error" not in resp, resp
        body = {"stream_name": "S1", "config": {"durable_name": "C9", "ack_policy": "explicit"}}
        resp = await _api(a, "$JS.API.CONSUMER.CREATE.S1.C9", body)
        assert "error" not in resp, resp  # the limit is per stream
        body = {"stream_name": "S0", "config": {"durable_name": "C9", "ack_policy": "explicit"}}
        resp = await _api(a, "$JS.API.CONSUMER.CREATE.S0.C9", body)
        assert resp["error"] == {"code": 400, "err_code": 10026, "description": "maximum consumers limit reached"}
    async with _connect(target, "b") as b:  # B is not limited by A's limits
        for i in range(5):
            resp = await _api(b, f"$JS.API.STREAM.CREATE.S{i}", {"name": f"S{i}", "storage": "memory"})
            assert "error" not in resp, resp


async def test_account_memory_limit(target: Target) -> None:
    async with _connect(target, "a") as a:
        js = a.jetstream()
        await js.add_stream(StreamConfig(name="M", subjects=["m"], storage=StorageType.MEMORY))
        payload = b"x" * 100_000
        errors = []
        for _ in range(15):
            try:
                await js.publish("m", payload, timeout=TIMEOUT)
            except nats.js.errors.APIError as exc:
                errors.append(exc.err_code)
        # "resource limits exceeded for account" once the next message would pass 1 MiB
        assert errors == [10002] * 5, errors  # ten 100 kB messages fit


async def test_store_directory_per_account(target: Target) -> None:
    async with _connect(target, "a") as a, _connect(target, "b") as b:
        await a.jetstream().add_stream(StreamConfig(name="FA", subjects=["fa"]))
        await b.jetstream().add_stream(StreamConfig(name="FB", subjects=["fb"]))
        await a.jetstream().publish("fa", b"1")
        await b.jetstream().publish("fb", b"1")
    root = target.store_dir / "jetstream"
    assert (root / "A" / "streams" / "FA").is_dir()
    assert (root / "B" / "streams" / "FB").is_dir()
    assert not (root / "A" / "streams" / "FB").exists()
    assert not (root / "$G" / "streams" / "FA").exists()


async def test_streams_survive_restart_in_their_account(target: Target) -> None:
    async with _connect(target, "a") as a:
        await a.jetstream().add_stream(StreamConfig(name="P", subjects=["p"]))
        await a.jetstream().publish("p", b"kept")
    target.restart()
    async with _connect(target, "a") as a, _connect(target, "b") as b:
        msg = await a.jetstream().get_msg("P", 1)
        assert msg.data == b"kept"
        resp = await _api(b, "$JS.API.STREAM.INFO.P")
        assert resp["error"]["err_code"] == 10059


# --------------------------------------------------------------------- the isolation suite


async def _populate(nc: Client, account: str) -> None:
    """A stream with a message, a durable pull consumer, a KV bucket and an object store."""
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name=f"ST{account}", subjects=[f"st.{account}.>"], allow_direct=True))
    await js.publish(f"st.{account}.x", b"secret-" + account.encode())
    await js.add_consumer(f"ST{account}", durable_name="D", ack_policy="explicit")
    kv = await js.create_key_value(bucket=f"KV{account}")
    await kv.put("k", b"kv-secret-" + account.encode())
    obj = await js.create_object_store(bucket=f"OB{account}")
    await obj.put("o", b"obj-secret-" + account.encode())


async def _attack(nc: Client, victim: str) -> list[str]:
    """Every way to reach the victim account's data; returns what leaked (must stay empty)."""
    leaks: list[str] = []
    stream, kv, ob = f"ST{victim}", f"KV{victim}", f"OB{victim}"
    seen: list[Any] = []

    async def spy(msg: Any) -> None:
        seen.append(msg)

    sub = await nc.subscribe(">", cb=spy)
    await subscriptions_live(nc)
    js = nc.jetstream(timeout=SHORT)
    # Stream and consumer API: "stream not found" (10059), no names listed.
    for subject, body in (
        (f"$JS.API.STREAM.INFO.{stream}", None),
        (f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": 1}),
        (f"$JS.API.STREAM.PURGE.{stream}", None),
        (f"$JS.API.STREAM.DELETE.{stream}", None),
        (f"$JS.API.CONSUMER.INFO.{stream}.D", None),
        (f"$JS.API.CONSUMER.CREATE.{stream}.X", {"stream_name": stream, "config": {"name": "X"}}),
        (f"$JS.API.CONSUMER.NAMES.{stream}", None),
        (f"$JS.API.STREAM.INFO.KV_{kv}", None),
        (f"$JS.API.STREAM.INFO.OBJ_{ob}", None),
    ):
        resp = await _api(nc, subject, body)
        if resp.get("error", {}).get("err_code") != 10059:
            leaks.append(f"{subject}: {resp}")
    names = await _api(nc, "$JS.API.STREAM.NAMES")
    if any(n in (names.get("streams") or []) for n in (stream, f"KV_{kv}", f"OBJ_{ob}")):
        leaks.append(f"STREAM.NAMES lists {names['streams']}")
    # Requests a stream or consumer answers itself: nobody in this account answers them.
    for subject, payload in (
        (f"$JS.API.DIRECT.GET.{stream}", b'{"seq":1}'),
        (f"$JS.API.DIRECT.GET.KV_{kv}.$KV.{kv}.k", b""),
        (f"$JS.API.CONSUMER.MSG.NEXT.{stream}.D", b'{"batch":1}'),
    ):
        try:
            msg = await nc.request(subject, payload, timeout=SHORT)
        except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
            continue
        leaks.append(f"{subject}: {msg.headers} {msg.data!r}")
    # Publishing into the victim's stream subjects stores nothing there (no PubAck here).
    try:
        ack = await js.publish(f"st.{victim}.x", b"intruder")
        leaks.append(f"publish stored in {ack.stream}")
    except (nats.errors.NoRespondersError, nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError):
        pass
    # KV and object store through the client libraries.
    try:
        bucket = await js.key_value(kv)
        entry = await bucket.get("k")
        leaks.append(f"kv get: {entry.value!r}")
    except Exception:
        pass
    try:
        store = await js.object_store(ob)
        obj = await store.get("o")
        leaks.append(f"object get: {obj.data!r}")
    except Exception:
        pass
    await nc.flush()
    await asyncio.sleep(SHORT)
    await sub.unsubscribe()
    for msg in seen:
        if b"secret" in msg.data:
            leaks.append(f"saw {msg.subject}: {msg.data!r}")
    return leaks


async def test_isolation_suite(target: Target) -> None:
    async with _connect(target, "a") as a, _connect(target, "b") as b:
        await _populate(a, "A")
        await _populate(b, "B")
    for attacker, victim in (("a", "B"), ("b", "A"), ("c", "A"), ("c", "B"), ("g", "A"), ("g", "B")):
        async with _connect(target, attacker) as nc:
            if attacker in ("c", "g"):
                # Without JetStream every API request is refused before any lookup.
                resp = await _api(nc, f"$JS.API.STREAM.INFO.ST{victim}")
                assert resp["error"]["err_code"] == 10039
                continue
            leaks = await _attack(nc, victim)
            assert leaks == [], (attacker, victim, leaks)
    # The owners still see their own data, unchanged.
    for user, account in (("a", "A"), ("b", "B")):
        async with _connect(target, user) as nc:
            js = nc.jetstream()
            msg = await js.get_msg(f"ST{account}", 1)
            assert msg.data == b"secret-" + account.encode()
            info = await js.stream_info(f"ST{account}")
            assert info.state.messages == 1
            kv = await js.key_value(f"KV{account}")
            assert (await kv.get("k")).value == b"kv-secret-" + account.encode()


# ------------------------------------------------------------------------ no_auth_user, $SYS


async def test_no_auth_user_lands_in_its_account(start_server: StartServer) -> None:
    target = start_server(accounts=ACCOUNTS, no_auth_user="b")
    async with _connect(target, None) as anon, _connect(target, "b") as b, _connect(target, "a") as a:

        async def responder(msg: Any) -> None:
            await msg.respond(b"account B")

        await b.subscribe("hello", cb=responder)
        await subscriptions_live(b)
        assert (await anon.request("hello", b"", timeout=TIMEOUT)).data == b"account B"
        assert await _no_answer(a, "hello") == "no-responders"
        info = await _api(anon, "$JS.API.INFO")
        assert "error" not in info and info["limits"]["max_streams"] == -1


async def test_system_account_has_no_jetstream(start_server: StartServer) -> None:
    accounts = {**ACCOUNTS, "SYS": {"users": [{"user": "sys", "password": "sys"}]}}
    target = start_server(accounts=accounts, system_account="SYS")
    async with _connect(target, "sys") as nc:
        info = await _api(nc, "$JS.API.INFO")
        assert info["error"]["err_code"] == 10039


# ---------------------------------------------------------------------------- monitoring


async def test_accountz_and_jsz_accounts(target: Target) -> None:
    async with _connect(target, "a") as a:
        await a.jetstream().add_stream(StreamConfig(name="Z", subjects=["z"], storage=StorageType.MEMORY))
        await a.jetstream().publish("z", b"1")
    accountz = _monitor(target, "/accountz")
    assert accountz["system_account"] == "$SYS"
    assert set(accountz["accounts"]) == {"$SYS", "$G", "A", "B", "C"}
    detail = _monitor(target, "/accountz?acc=A")["account_detail"]
    assert detail["account_name"] == "A"
    assert detail["jetstream_enabled"] is True
    assert _monitor(target, "/accountz?acc=C")["account_detail"]["jetstream_enabled"] is False
    jsz = _monitor(target, "/jsz?accounts=true")
    assert jsz["accounts"] == 2
    details = {d["name"]: d for d in jsz["account_details"]}
    assert set(details) == {"A", "B"}
    assert details["A"]["reserved_memory"] == 1024 * 1024
    assert details["B"]["reserved_memory"] == 18446744073709551615
    assert details["A"]["memory"] > 0 and details["B"]["memory"] == 0
    assert details["A"]["api"] == {"level": 0, "total": 1, "errors": 0}  # the stream create
    only_b = _monitor(target, "/jsz?acc=B")
    assert [d["name"] for d in only_b["account_details"]] == ["B"]


# ------------------------------------------------------------------------ exports and imports

SHARING = {
    "E": {
        "users": [{"user": "e", "password": "e"}],
        "exports": [
            {"stream": "ev.>"},
            {"stream": "mapped.*"},
            {"service": "svc.*"},
            {"service": "multi", "response_type": "stream", "response_threshold": "2s"},
            {"stream": "private.>", "accounts": ["X"]},
        ],
    },
    "I": {
        "users": [{"user": "i", "password": "i"}],
        "imports": [
            {"stream": {"account": "E", "subject": "ev.>"}, "prefix": "fromE"},
            {"stream": {"account": "E", "subject": "mapped.*"}, "to": "here.*"},
            {"service": {"account": "E", "subject": "svc.*"}, "to": "local.*"},
            {"service": {"account": "E", "subject": "multi"}},
        ],
    },
    "X": {"users": [{"user": "x", "password": "x"}]},
}


@pytest.fixture
def sharing(start_server: StartServer) -> Target:
    return start_server(jetstream=False, accounts=SHARING, http_port=-1)


class _Inbox:
    """Collects messages; ``wait(n)`` returns once ``n`` have arrived."""

    def __init__(self) -> None:
        self.msgs: list[Any] = []
        self._event = asyncio.Event()
        self._want = 1

    async def handle(self, msg: Any) -> None:
        self.msgs.append(msg)
        if len(self.msgs) >= self._want:
            self._event.set()

    async def wait(self, n: int) -> list[Any]:
        self._want = n
        if len(self.msgs) < n:
            self._event.clear()
            await asyncio.wait_for(self._event.wait(), TIMEOUT)
        return self.msgs


async def test_stream_import_with_prefix_and_mapping(sharing: Target) -> None:
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i, _connect(sharing, "x") as x:
        into_i, into_x = _Inbox(), _Inbox()
        await i.subscribe(">", cb=into_i.handle)
        await x.subscribe(">", cb=into_x.handle)
        await subscriptions_live(i, x)
        await e.publish("ev.a", b"1", reply="r1")
        await e.publish("mapped.k", b"2")
        await e.publish("other", b"3")
        await e.flush()
        got = await into_i.wait(2)
        await asyncio.sleep(SHORT)
        assert [(m.subject, m.reply, m.data) for m in got] == [("fromE.ev.a", "r1", b"1"), ("here.k", "", b"2")]
        assert into_x.msgs == []  # X imports nothing


async def test_stream_import_to_wildcard_subscriptions(sharing: Target) -> None:
    """An importer's subscription inside an import, holding one, or overlapping one (nats-server
    ``addShadowSubscriptions``' cases): each receives a message once, under its own subject; a
    literal and a wildcard subscription of one connection each get it."""
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i:
        inboxes = {s: _Inbox() for s in ("fromE.ev.a", "fromE.ev.*", "*.ev.a", "fromE.>", "here.k", "*.*")}
        for subject, inbox in inboxes.items():
            await i.subscribe(subject, cb=inbox.handle)
        await subscriptions_live(i)
        await e.publish("ev.a", b"1")
        await e.publish("mapped.k", b"2")
        await e.publish("ev.b.c", b"3")
        await e.flush()
        expect = {
            "fromE.ev.a": ["fromE.ev.a"],
            "fromE.ev.*": ["fromE.ev.a"],
            "*.ev.a": ["fromE.ev.a"],
            "fromE.>": ["fromE.ev.a", "fromE.ev.b.c"],
            "here.k": ["here.k"],
            "*.*": ["here.k"],
        }
        for subject, subjects in expect.items():
            await inboxes[subject].wait(len(subjects))
        await asyncio.sleep(SHORT)
        assert {s: [m.subject for m in inbox.msgs] for s, inbox in inboxes.items()} == expect


async def test_stream_import_queue_group_joins_the_exporters(sharing: Target) -> None:
    """An importer's queue subscription is shadowed in the exporter under its group's name
    (nats-server ``addShadowSub`` copies the queue): it joins the exporter's group of that name
    on that subject, so each message goes to one member of either account."""
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i:
        in_e, in_i = _Inbox(), _Inbox()
        for _ in range(3):
            await e.subscribe("ev.q", queue="g", cb=in_e.handle)
            await i.subscribe("fromE.ev.q", queue="g", cb=in_i.handle)
        await subscriptions_live(e, i)
        for k in range(60):
            await e.publish("ev.q", b"%d" % k)
        await e.flush()
        await asyncio.sleep(SHORT)
        assert len(in_e.msgs) + len(in_i.msgs) == 60, (len(in_e.msgs), len(in_i.msgs))
        assert in_e.msgs and in_i.msgs


async def test_a_request_into_an_import_nobody_takes_has_no_responders(sharing: Target) -> None:
    """A stream import without a subscription in its importer is no interest in the exporter: a
    request there gets no-responders (nats-server: no shadow subscription), then an answer once
    the importer subscribes."""
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i:
        assert await _no_answer(e, "ev.nobody") == "no-responders"

        async def answer(msg: Any) -> None:
            await i.publish(msg.reply, b"from I")

        await i.subscribe("fromE.ev.*", cb=answer)
        await subscriptions_live(i)
        # (the reply subject is the exporter's: the answer reaches E only if I could publish it there)
        with pytest.raises(nats.errors.TimeoutError):
            await e.request("ev.nobody", b"q", timeout=SHORT)


async def test_a_service_imports_subscription_has_no_shadow(start_server: StartServer) -> None:
    """An account importing both a service and a stream over the same subjects: its service
    import's own subscription is not shadowed in the exporter (nats-server ``sub.si``), so what the
    exporter publishes there comes to the importer's client once and never back to the exporter."""
    accounts = {
        "E": {"users": [{"user": "e", "password": "e"}], "exports": [{"stream": "svc.>"}, {"service": "svc.>"}]},
        "I": {
            "users": [{"user": "i", "password": "i"}],
            "imports": [{"stream": {"account": "E", "subject": "svc.>"}}, {"service": {"account": "E", "subject": "svc.x"}}],
        },
    }
    target = start_server(jetstream=False, accounts=accounts)
    async with _connect(target, "e") as e, _connect(target, "i") as i:
        in_e, in_i = _Inbox(), _Inbox()
        await e.subscribe("svc.x", cb=in_e.handle)
        await i.subscribe("svc.>", cb=in_i.handle)
        await subscriptions_live(e, i)
        await e.publish("svc.x", b"1")
        await e.flush()
        await in_e.wait(1)
        await in_i.wait(1)
        await asyncio.sleep(SHORT)
        assert [m.data for m in in_e.msgs] == [b"1"] and [m.data for m in in_i.msgs] == [b"1"]


async def test_service_import_request_reply(sharing: Target) -> None:
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i:
        seen: list[tuple[str, str]] = []
        infos: list[Any] = []

        async def service(msg: Any) -> None:
            seen.append((msg.subject, msg.reply))
            infos.append(json.loads((msg.headers or {}).get("Nats-Request-Info", "null")))
            await msg.respond(b"answer to " + msg.subject.encode())

        await e.subscribe("svc.*", cb=service)
        await subscriptions_live(e)
        resp = await i.request("local.x", b"q", timeout=TIMEOUT)
        assert resp.data == b"answer to svc.x"
        assert seen[0][0] == "svc.x" and seen[0][1].startswith("_R_.")
        # the exporter learns the requester's account (nats-server processServiceImport), no more
        assert infos[0]["acc"] == "I" and set(infos[0]) <= {"acc", "rtt"}, infos
        # Not imported under its exported name, and not reachable from an account that did not import it.
        async with _connect(sharing, "x") as x:
            assert await _no_answer(x, "svc.x") == "no-responders"
            assert await _no_answer(x, "local.x") == "no-responders"


#: A service imported with ``share: true`` and one without, to compare (two exports: nats-server
#: sets the flag on the first import it finds with the same exported subject).
SHARED = {
    "E": {"users": [{"user": "e", "password": "e"}], "exports": [{"service": "svc.*"}, {"service": "other.*"}]},
    "S": {
        "users": [{"user": "s", "password": "s"}],
        "imports": [
            {"service": {"account": "E", "subject": "svc.*"}, "to": "shared.*", "share": True},
            {"service": {"account": "E", "subject": "other.*"}, "to": "plain.*"},
        ],
    },
}


async def test_shared_service_import_describes_the_requester(start_server: StartServer) -> None:
    """``share: true``: the exporter gets the requester's whole client info in
    ``Nats-Request-Info`` (nats-server ``processServiceImport`` with ``si.share``:
    ``getClientInfo(true)``), not only its account; /accountz shows the flag."""
    target = start_server(jetstream=False, accounts=SHARED, http_port=-1)
    async with _connect(target, "e") as e:
        infos: list[Any] = []

        async def service(msg: Any) -> None:
            infos.append(json.loads((msg.headers or {}).get("Nats-Request-Info", "null")))
            await msg.respond(b"ok")

        await e.subscribe("svc.*", cb=service)
        await e.subscribe("other.*", cb=service)
        await subscriptions_live(e)
        nc = await nats.connect(target.url, allow_reconnect=False, user="s", password="s", name="asker")
        try:
            assert (await nc.request("shared.x", b"q", timeout=TIMEOUT)).data == b"ok"
            assert (await nc.request("plain.x", b"q", timeout=TIMEOUT)).data == b"ok"
        finally:
            await nc.close()
    shared, plain = infos
    assert {"acc", "user", "name", "lang", "ver", "server", "kind", "client_type", "id", "host", "start"} <= set(shared)
    assert (shared["acc"], shared["user"], shared["name"], shared["kind"]) == ("S", "s", "asker", "Client")
    assert shared["client_type"] == "nats" and shared["lang"] == "python3"
    assert plain["acc"] == "S" and set(plain) <= {"acc", "rtt"}, plain
    imports = _monitor(target, "/accountz?acc=S")["account_detail"]["imports"]
    assert {i["local_subject"]: i["share"] for i in imports if i["account"] == "E"} == {
        "shared.*": True,
        "plain.*": False,
    }


async def test_service_import_response_types(sharing: Target) -> None:
    async with _connect(sharing, "e") as e, _connect(sharing, "i") as i:

        async def twice(msg: Any) -> None:
            await e.publish(msg.reply, b"one")
            await e.publish(msg.reply, b"two")

        await e.subscribe("svc.twice", cb=twice)
        await e.subscribe("multi", cb=twice)
        await subscriptions_live(e)
        for subject, expected in (("local.twice", [b"one"]), ("multi", [b"one", b"two"])):
            inbox = _Inbox()
            reply = i.new_inbox()
            await i.subscribe(reply, cb=inbox.handle)
            await i.flush()
            await i.publish(subject, b"", reply=reply)
            await i.flush()
            got = await inbox.wait(len(expected))
            await asyncio.sleep(SHORT)  # a singleton service gets no second response through
            assert [m.data for m in got] == expected, subject


async def test_service_import_without_responder(sharing: Target) -> None:
    async with _connect(sharing, "i") as i:
        assert await _no_answer(i, "local.nobody") == "no-responders"


def test_unauthorized_import_refused_at_start(start_server: StartServer, server_kind: str) -> None:
    accounts = {
        "E": {"users": [{"user": "e", "password": "e"}], "exports": [{"stream": "p.>", "accounts": ["X"]}]},
        "I": {"users": [{"user": "i", "password": "i"}], "imports": [{"stream": {"account": "E", "subject": "p.>"}}]},
        "X": {"users": [{"user": "x", "password": "x"}]},
    }
    with pytest.raises(RuntimeError) as excinfo:
        start_server(jetstream=False, accounts=accounts)
    assert 'Error adding stream import "p.>": stream import not authorized' in str(excinfo.value)


def _entry(subject: str, local: str, kind: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"subject": subject, "account": "E"}
    if kind == "service":
        entry["to"] = local
    return {**entry, "local_subject": local, "type": kind, "invalid": False, "share": False, "tracking": False}


async def test_accountz_lists_imports_and_exports(sharing: Target) -> None:
    detail = _monitor(sharing, "/accountz?acc=I")["account_detail"]
    ours = sorted((imp for imp in detail["imports"] if imp["account"] == "E"), key=lambda i: i["subject"])
    assert ours == [
        _entry("ev.>", "fromE.ev.>", "stream"),
        _entry("mapped.*", "here.*", "stream"),
        _entry("multi", "multi", "service"),
        _entry("svc.*", "local.*", "service"),
    ]
    exports = _monitor(sharing, "/accountz?acc=E")["account_detail"]["exports"]
    assert sorted(exports, key=lambda e: e["subject"]) == [
        {"subject": "ev.>", "type": "stream"},
        {"subject": "mapped.*", "type": "stream"},
        {"subject": "multi", "type": "service", "response_type": "Streamed"},
        {"subject": "private.>", "type": "stream", "approved_accounts": ["X"]},
        {"subject": "svc.*", "type": "service", "response_type": "Singleton"},
    ]
