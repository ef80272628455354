"""JetStream across accounts, on both targets: an account that imports another's ``$JS.API.>``
under a prefix and gets the deliveries back through its imports.

The server configurations are the ones nats.js's own tests use for these cases
(``nst/src/mod.ts`` ``jetstreamExportServerConf``: account ``JS`` exports ``$JS.API.>`` and
``$JS.ACK.>`` as streamed services and the stream ``A.>``; account ``A`` imports the API under
``IPA.>``, the acks, and ``A.>`` — its inbox prefix; ``kv/tests/kv_test.ts`` ``setupCrossAccount``:
``B`` imports ``$JS.API.>`` to ``froma.>``, ``$KV.>`` to ``froma.$KV.>`` and ``forb.>``).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import urllib.request
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client
from tests.support.natspy import subscriptions_live
from tests.support.targets import Target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import KeyValueConfig, ObjectStoreConfig, jetstream
from pyjetstream.client.jetstream.errors import NoObjectsFound

StartServer = Callable[..., Target]
TIMEOUT = 10.0
WS_DIR = Path(__file__).parents[1] / "ws"

#: nats.js ``jetstreamExportServerConf`` (prefix ``IPA.>``).
EXPORT_CONF = {
    "no_auth_user": "a",
    "accounts": {
        "JS": {
            "jetstream": "enabled",
            "users": [{"user": "js", "password": "js"}],
            "exports": [
                {"service": "$JS.API.>", "response_type": "stream"},
                {"service": "$JS.ACK.>", "response_type": "stream"},
                {"stream": "A.>", "accounts": ["A"]},
            ],
        },
        "A": {
            "users": [{"user": "a", "password": "s3cret"}],
            "imports": [
                {"service": {"subject": "$JS.API.>", "account": "JS"}, "to": "IPA.>"},
                {"service": {"subject": "$JS.ACK.>", "account": "JS"}},
                {"stream": {"subject": "A.>", "account": "JS"}},
            ],
        },
    },
}

#: nats.js ``kv_test.ts`` ``setupCrossAccount``.
KV_CONF = {
    "accounts": {
        "A": {
            "jetstream": True,
            "users": [{"user": "a", "password": "a"}],
            "exports": [{"service": "$JS.API.>"}, {"service": "$KV.>"}, {"stream": "forb.>"}],
        },
        "B": {
            "users": [{"user": "b", "password": "b"}],
            "imports": [
                {"service": {"subject": "$KV.>", "account": "A"}, "to": "froma.$KV.>"},
                {"service": {"subject": "$JS.API.>", "account": "A"}, "to": "froma.>"},
                {"stream": {"subject": "forb.>", "account": "A"}},
            ],
        },
    },
}


@pytest.fixture
def hub(start_server: StartServer) -> Target:
    return start_server(**EXPORT_CONF)


@asynccontextmanager
async def _connect(target: Target, user: str, password: str, **kw: Any) -> AsyncIterator[Client]:
    nc = await nats.connect(target.url, user=user, password=password, allow_reconnect=False, **kw)
    try:
        yield nc
    finally:
        await nc.close()


async def _api(nc: Client, subject: str, body: Any = None) -> dict[str, Any]:
    payload = b"" if body is None else json.dumps(body).encode()
    msg = await nc.request(subject, payload, timeout=TIMEOUT)
    return json.loads(msg.data)


async def _stream_with_two(admin: Client, name: str = "S") -> None:
    js = admin.jetstream()
    await js.add_stream(name=name, subjects=[f"{name}.>"])
    await js.publish(f"{name}.x", b"1")
    await js.publish(f"{name}.x", b"2")


class _Inbox:
    """Collects messages; ``wait(n)`` returns once ``n`` have arrived."""

    def __init__(self) -> None:
        self.msgs: list[Any] = []
        self._cond = asyncio.Condition()

    async def handle(self, msg: Any) -> None:
        async with self._cond:
            self.msgs.append(msg)
            self._cond.notify_all()

    async def wait(self, n: int, pred: Callable[[Any], bool] = lambda m: True) -> list[Any]:
        async def enough() -> None:
            async with self._cond:
                await self._cond.wait_for(lambda: len([m for m in self.msgs if pred(m)]) >= n)

        await asyncio.wait_for(enough(), TIMEOUT)
        return [m for m in self.msgs if pred(m)]


async def test_pull_request_through_the_api_import(hub: Target) -> None:
    """A pull request sent to ``IPA.CONSUMER.MSG.NEXT`` with its reply under the importer's inbox
    prefix gets the messages (the consumer keeps the ``_R_`` reply it was given and delivers to it
    later: the streamed response import routes each back)."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        await _stream_with_two(admin)
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="none")
        inbox = _Inbox()
        await a.subscribe("A.pull.>", cb=inbox.handle)
        await subscriptions_live(a)
        await a.publish("IPA.CONSUMER.MSG.NEXT.S.me", json.dumps({"batch": 2}).encode(), reply="A.pull.1")
        got = await inbox.wait(2)
        assert [m.data for m in got] == [b"1", b"2"]
        # routed to the reply, shown under the stream's subject, as any consumer delivery
        assert [m.subject for m in got] == ["S.x", "S.x"]
        assert got[0].reply.startswith("$JS.ACK.S.me.")


async def test_pull_request_expiry_and_heartbeat_come_back(hub: Target) -> None:
    """Idle heartbeats and the 408 of an expired request reach the importer's reply."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        await _stream_with_two(admin)
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="none", deliver_policy="new")
        inbox = _Inbox()
        await a.subscribe("A.pull.>", cb=inbox.handle)
        await subscriptions_live(a)
        body = {"batch": 1, "expires": 2_000_000_000, "idle_heartbeat": 500_000_000}
        await a.publish("IPA.CONSUMER.MSG.NEXT.S.me", json.dumps(body).encode(), reply="A.pull.2")

        def status(code: str) -> Callable[[Any], bool]:
            return lambda m: m.headers is not None and m.headers.get("Status") == code

        await inbox.wait(1, status("100"))
        await inbox.wait(1, status("408"))


async def test_an_empty_message_ends_a_streamed_response(hub: Target) -> None:
    """nats-server ends a streamed response mapping at an empty message without headers (its
    end-of-stream signal, ``processServiceImport``), a consumer's delivery of an empty stream
    message included: a pull of three gets the first (empty) message only."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        js = admin.jetstream()
        await js.add_stream(name="S", subjects=["S.>"])
        for payload in (b"", b"", b"x"):
            await js.publish("S.x", payload)
        await js.add_consumer("S", durable_name="me", ack_policy="none")
        inbox = _Inbox()
        await a.subscribe("A.p", cb=inbox.handle)
        await subscriptions_live(a)
        body = {"batch": 3, "expires": 500_000_000}
        await a.publish("IPA.CONSUMER.MSG.NEXT.S.me", json.dumps(body).encode(), reply="A.p")
        await inbox.wait(1)

        async def all_sent() -> None:  # all three went out, to a mapping gone after the first
            while True:
                if (await js.consumer_info("S", "me")).delivered.stream_seq == 3:
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(all_sent(), TIMEOUT)
        await asyncio.sleep(1.0)  # past the request's expiry: its 408 went nowhere either
        assert [m.data for m in inbox.msgs] == [b""]


async def test_pull_request_of_a_gone_requester_is_dropped(hub: Target) -> None:
    """A waiting pull request that came through the import is checked for interest in the
    requester's account, on its own reply (nats-server ``trackDownAccountAndInterest``): once the
    requester unsubscribes, the request is dropped (``num_waiting`` 0) and later messages wait for
    the next one."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        await admin.jetstream().add_stream(name="S", subjects=["S.>"])
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="none")
        sub = await a.subscribe("A.pull.3")
        await subscriptions_live(a)
        body = {"batch": 5, "expires": 60_000_000_000}
        await a.publish("IPA.CONSUMER.MSG.NEXT.S.me", json.dumps(body).encode(), reply="A.pull.3")
        await a.flush()

        async def waiting(n: int) -> None:
            while True:
                if (await _api(a, "IPA.CONSUMER.INFO.S.me"))["num_waiting"] == n:
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(waiting(1), TIMEOUT)
        await sub.unsubscribe()
        await a.flush()
        await asyncio.wait_for(waiting(0), TIMEOUT)
        await admin.jetstream().publish("S.x", b"later")
        info = await _api(a, "IPA.CONSUMER.INFO.S.me")
        assert info["delivered"]["stream_seq"] == 0 and info["num_pending"] == 1, info


#: nats-server's ``TestJetStreamConsumerPullCrossAccountExpires``: only the pull requests exported
#: (streamed), imported by IU and re-exported to IU2 (a daisy chain).
CHAIN_CONF = {
    "accounts": {
        "JS": {
            "jetstream": "enabled",
            "users": [{"user": "dlc", "password": "foo"}],
            "exports": [{"service": "$JS.API.CONSUMER.MSG.NEXT.>", "response": "stream"}],
        },
        "IU": {
            "users": [{"user": "mh", "password": "bar"}],
            "imports": [{"service": {"subject": "$JS.API.CONSUMER.MSG.NEXT.*.*", "account": "JS"}}],
            "exports": [{"service": "$JS.API.CONSUMER.MSG.NEXT.>", "response": "stream"}],
        },
        "IU2": {
            "users": [{"user": "ik", "password": "bar"}],
            "imports": [{"service": {"subject": "$JS.API.CONSUMER.MSG.NEXT.*.*", "account": "IU"}}],
        },
    }
}


@pytest.mark.parametrize("user", ["mh", "ik"])
async def test_pull_requests_of_a_chain_expire_with_their_interest(start_server: StartServer, user: str) -> None:
    """A batch through the import (``mh``) or through two (``ik``: IU2 -> IU -> JS) comes back
    whole; ten requests queued then lose their requester's interest and are dropped; an
    ephemeral consumer whose only request lost it goes after its inactive threshold."""
    target = start_server(**CHAIN_CONF)
    async with _connect(target, "dlc", "foo") as nc, _connect(target, user, "bar") as nc2:
        js = nc.jetstream()
        await js.add_stream(name="PC", subjects=["foo"])
        for _ in range(50):
            await js.publish("foo", b"OK")
        await js.add_consumer("PC", durable_name="PC", ack_policy="explicit")
        inbox = _Inbox()
        sub = await nc2.subscribe("xx", cb=inbox.handle)
        await subscriptions_live(nc2)
        request = json.dumps({"batch": 10}).encode()
        await nc2.publish("$JS.API.CONSUMER.MSG.NEXT.PC.PC", request, reply="xx")
        assert len(await inbox.wait(10)) >= 10
        await js.purge_stream("PC")
        for _ in range(10):
            await nc2.publish("$JS.API.CONSUMER.MSG.NEXT.PC.PC", request, reply="xx")
        await nc2.flush()

        async def waiting(name: str, n: int) -> None:
            while True:
                if (await js.consumer_info("PC", name)).num_waiting == n:
                    return
                await asyncio.sleep(0.02)

        await asyncio.wait_for(waiting("PC", 10), TIMEOUT)
        await sub.unsubscribe()
        await nc2.flush()
        await asyncio.wait_for(waiting("PC", 0), TIMEOUT)

        eph = await js.add_consumer("PC", ack_policy="explicit", inactive_threshold=0.5)
        sub = await nc2.subscribe("zz")
        await subscriptions_live(nc2)
        await nc2.publish(f"$JS.API.CONSUMER.MSG.NEXT.PC.{eph.name}", request, reply="zz")
        await nc2.flush()
        await asyncio.wait_for(waiting(eph.name, 1), TIMEOUT)
        await asyncio.sleep(1.0)  # past the threshold: kept while the request has its interest
        assert (await js.consumer_info("PC", eph.name)).num_waiting == 1
        await sub.unsubscribe()
        await nc2.flush()

        async def gone() -> None:
            while True:
                try:
                    await js.consumer_info("PC", eph.name)
                except nats.js.errors.NotFoundError:
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(gone(), TIMEOUT)


async def test_accountz_lists_the_live_response_imports(start_server: StartServer) -> None:
    """``/accountz?acc=JS`` lists a waiting pull request's response import under ``responses``
    (nats-server ``newExtImport``, its ``type`` as Go encodes it in a map: 2)."""
    target = start_server(http_port=-1, **EXPORT_CONF)
    async with _connect(target, "js", "js") as admin, _connect(target, "a", "s3cret") as a:
        await admin.jetstream().add_stream(name="S", subjects=["S.>"])
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="none")
        sub = await a.subscribe("A.p")
        await subscriptions_live(a)
        body = {"batch": 3, "expires": 30_000_000_000}
        await a.publish("IPA.CONSUMER.MSG.NEXT.S.me", json.dumps(body).encode(), reply="A.p")
        await a.flush()

        def responses(acc: str) -> Any:
            url = f"http://127.0.0.1:{target.http_port}/accountz?acc={acc}"
            with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
                return json.loads(resp.read())["account_detail"].get("responses")

        async def listed() -> dict[str, Any]:
            while True:
                found = responses("JS")
                if found:
                    return dict(found)
                await asyncio.sleep(0.05)

        found = await asyncio.wait_for(listed(), TIMEOUT)
        [(mapped, entry)] = found.items()
        assert mapped.startswith("_R_.")
        assert entry == {"subject": "A.p", "account": "A", "to": mapped, "local_subject": mapped, "type": 2,
                         "invalid": False, "share": False, "tracking": False}  # fmt: skip
        assert responses("A") is None
        # the requester's reply loses its last subscription: the response import goes at once
        # (nats-server's reverse response map, checkForReverseEntry), not at the threshold
        await sub.unsubscribe()
        await a.flush()

        async def unlisted() -> None:
            while True:
                if not responses("JS"):
                    return
                await asyncio.sleep(0.05)

        await asyncio.wait_for(unlisted(), TIMEOUT)


async def test_pull_with_nats_py_through_the_api_prefix(hub: Target) -> None:
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret", inbox_prefix=b"A") as a:
        await _stream_with_two(admin)
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="explicit")
        js = a.jetstream(prefix="IPA")
        sub = await js.pull_subscribe_bind("me", "S")
        msgs = await sub.fetch(2, timeout=TIMEOUT)
        assert [m.data for m in msgs] == [b"1", b"2"]
        for m in msgs:
            await m.ack_sync(timeout=TIMEOUT)
        info = await js.consumer_info("S", "me")
        assert info.ack_floor.stream_seq == 2 and info.num_ack_pending == 0


async def test_pull_with_our_client_through_the_api_prefix(hub: Target) -> None:
    """Our client's pull consumer through ``IPA`` with the inbox prefix ``A``: a fetch with
    heartbeats (a 12 s wait asks for them) gets both messages, double acks come back through the
    ``$JS.ACK.>`` import, and a fetch of nothing ends at its wait."""
    async with _connect(hub, "js", "js") as admin:
        await _stream_with_two(admin)
        await admin.jetstream().add_consumer("S", durable_name="me", ack_policy="explicit")
    a = await connect(hub.url, user="a", password="s3cret", inbox_prefix="A")
    try:
        consumer = await jetstream(a, api_prefix="IPA").consumer("S", "me")
        batch = await consumer.fetch(2, max_wait=12)
        got = [m async for m in batch]
        assert [m.data for m in got] == [b"1", b"2"]
        for m in got:
            await m.double_ack()
        info = await consumer.info()
        assert info.ack_floor.stream_seq == 2 and info.num_ack_pending == 0
        assert [m async for m in await consumer.fetch(1, max_wait=0.5)] == []
    finally:
        await a.close()


async def test_push_consumer_delivers_through_the_stream_import(hub: Target) -> None:
    """A push consumer whose deliver subject is in the exporter's stream export ``A.>`` delivers to
    the importer; its acks go back through the ``$JS.ACK.>`` service import."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        await _stream_with_two(admin)
        inbox = _Inbox()
        await a.subscribe("A.push", cb=inbox.handle)
        await subscriptions_live(a)
        created = await _api(
            a,
            "IPA.CONSUMER.CREATE.S.me",
            {"stream_name": "S", "config": {"durable_name": "me", "ack_policy": "explicit", "deliver_subject": "A.push"}},
        )
        assert created["name"] == "me", created
        got = await inbox.wait(2)
        assert [m.data for m in got] == [b"1", b"2"]
        for m in got:
            await a.publish(m.reply, b"+ACK")
        await a.flush()

        async def acked() -> dict[str, Any]:
            while True:
                info = await _api(a, "IPA.CONSUMER.INFO.S.me")
                if info["ack_floor"]["stream_seq"] == 2:
                    return info
                await asyncio.sleep(0.05)

        info = await asyncio.wait_for(acked(), TIMEOUT)
        assert info["num_ack_pending"] == 0


async def test_push_binding_follows_the_importers_subscription(hub: Target) -> None:
    """An ephemeral push consumer delivering to ``A.push`` lives while an ``A`` client subscribes to
    exactly that subject (nats-server's shadow subscription binds it) and goes after its
    ``inactive_threshold`` once that client unsubscribes; a wildcard subscription does not bind it."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        await _stream_with_two(admin)
        wild = await a.subscribe("A.>")
        sub = await a.subscribe("A.push")
        await subscriptions_live(a)
        config = {"name": "eph", "ack_policy": "none", "deliver_subject": "A.push", "inactive_threshold": 500_000_000}
        created = await _api(a, "IPA.CONSUMER.CREATE.S.eph", {"stream_name": "S", "config": config})
        assert created["push_bound"] is True, created
        await asyncio.sleep(1.5)  # three thresholds: still bound
        info = await _api(a, "IPA.CONSUMER.INFO.S.eph")
        assert info.get("push_bound") is True, info
        await sub.unsubscribe()
        await a.flush()

        async def gone() -> None:
            while True:
                if "error" in await _api(a, "IPA.CONSUMER.INFO.S.eph"):
                    return
                await asyncio.sleep(0.1)

        await asyncio.wait_for(gone(), TIMEOUT)
        config = {**config, "name": "other", "deliver_subject": "A.other"}
        created = await _api(a, "IPA.CONSUMER.CREATE.S.other", {"stream_name": "S", "config": config})
        assert not created.get("push_bound"), created  # only A.> there
        await wild.unsubscribe()


async def test_push_queue_group_through_the_stream_import(hub: Target) -> None:
    """A push consumer with a deliver group, bound by the importer's queue subscribers on exactly
    its deliver subject in that group; each message reaches one of them."""
    async with _connect(hub, "js", "js") as admin, _connect(hub, "a", "s3cret") as a:
        js = admin.jetstream()
        await js.add_stream(name="S", subjects=["S.>"])
        inbox = _Inbox()
        await a.subscribe("A.q", queue="g", cb=inbox.handle)
        await a.subscribe("A.q", queue="g", cb=inbox.handle)
        await subscriptions_live(a)
        config = {"durable_name": "q", "ack_policy": "none", "deliver_subject": "A.q", "deliver_group": "g"}
        created = await _api(a, "IPA.CONSUMER.CREATE.S.q", {"stream_name": "S", "config": config})
        assert created["push_bound"] is True, created
        for k in range(10):
            await js.publish("S.x", str(k).encode())
        got = await inbox.wait(10)
        await a.flush()
        assert sorted(int(m.data) for m in got) == list(range(10))


async def test_deliveries_wait_for_the_importers_interest(start_server: StartServer) -> None:
    """nats-server's ``TestJetStreamCrossAccountsDeliverSubjectInterest``: a durable push consumer
    delivering to ``_d_``, which B imports as ``foo``, delivers nothing on the import alone, and
    everything once a B client subscribes to ``foo``."""
    accounts = {
        "A": {"jetstream": "enabled", "users": [{"user": "a", "password": "pwd"}], "exports": [{"stream": "_d_"}]},
        "B": {
            "users": [{"user": "b", "password": "pwd"}],
            "imports": [{"stream": {"account": "A", "subject": "_d_"}, "to": "foo"}],
        },
    }
    target = start_server(accounts=accounts)
    async with _connect(target, "a", "pwd") as a, _connect(target, "b", "pwd") as b:
        js = a.jetstream()
        await js.add_stream(name="TEST", subjects=["foo"])
        for _ in range(20):
            await js.publish("foo", b"OK")
        await js.add_consumer("TEST", durable_name="dlc", deliver_subject="_d_")
        await asyncio.sleep(0.2)  # what must not happen: deliveries on the import alone
        info = await js.consumer_info("TEST", "dlc")
        assert info.num_pending == 20 and info.delivered.consumer_seq == 0
        inbox = _Inbox()
        await b.subscribe("foo", cb=inbox.handle)
        got = await inbox.wait(20)
        assert {m.subject for m in got} == {"foo"}
        info = await js.consumer_info("TEST", "dlc")
        assert info.num_pending == 0 and info.delivered.consumer_seq == 20


CHAIN = {
    "A": {"users": [{"user": "a", "password": "pwd"}], "exports": [{"stream": "_d_"}]},
    "M": {
        "users": [{"user": "m", "password": "pwd"}],
        "imports": [{"stream": {"account": "A", "subject": "_d_"}, "to": "mid"}],
        "exports": [{"stream": "mid"}],
    },
    "B": {
        "users": [{"user": "b", "password": "pwd"}],
        "imports": [{"stream": {"account": "M", "subject": "mid"}, "to": "foo"}],
    },
}


async def test_a_chained_import_does_not_bind_the_consumer(start_server: StartServer) -> None:
    """``M`` imports ``_d_`` as ``mid`` and re-exports it; ``B`` imports ``mid`` as ``foo``. nats-server
    makes shadow subscriptions of subscriptions, not of other shadows: ``B``'s subscription to
    ``foo`` does not bind the push consumer (nor does the chain of imports alone), and what the
    consumer delivers once an ``M`` client subscribes to ``mid`` reaches that client, not ``B``."""
    accounts = json.loads(json.dumps(CHAIN))
    accounts["A"]["jetstream"] = "enabled"
    target = start_server(accounts=accounts)
    async with _connect(target, "a", "pwd") as a, _connect(target, "b", "pwd") as b, _connect(target, "m", "pwd") as m:
        js = a.jetstream()
        await js.add_stream(name="TEST", subjects=["foo"])
        for _ in range(5):
            await js.publish("foo", b"OK")
        into_b, into_m = _Inbox(), _Inbox()
        await b.subscribe("foo", cb=into_b.handle)
        await subscriptions_live(b)
        await js.add_consumer("TEST", durable_name="dlc", deliver_subject="_d_")
        await asyncio.sleep(0.3)  # what must not happen: deliveries for B's subscription
        info = await js.consumer_info("TEST", "dlc")
        assert info.num_pending == 5 and info.delivered.consumer_seq == 0 and not info.push_bound
        assert into_b.msgs == []
        await m.subscribe("mid", cb=into_m.handle)
        assert {msg.subject for msg in await into_m.wait(5)} == {"foo"}  # (the stream's subject)
        assert (await js.consumer_info("TEST", "dlc")).push_bound
        await b.flush()
        assert into_b.msgs == []


async def test_a_stream_import_is_not_carried_on_by_a_reexport(start_server: StartServer) -> None:
    """Plain messages through the same chain (2.15.1's shadow subscriptions): what ``A`` publishes
    reaches ``M``'s subscriber and not ``B``'s; what ``M`` publishes on ``mid`` reaches ``B``."""
    target = start_server(accounts=CHAIN, jetstream=False)
    async with _connect(target, "a", "pwd") as a, _connect(target, "b", "pwd") as b, _connect(target, "m", "pwd") as m:
        into_b, into_m = _Inbox(), _Inbox()
        await b.subscribe("foo", cb=into_b.handle)
        await m.subscribe("mid", cb=into_m.handle)
        await subscriptions_live(b, m)
        await a.publish("_d_", b"from A")
        assert [msg.data for msg in await into_m.wait(1)] == [b"from A"]
        await m.publish("mid", b"from M")
        assert [msg.data for msg in await into_b.wait(1)] == [b"from M"]


async def test_a_stream_of_the_importer_passes_on_what_it_stored(start_server: StartServer) -> None:
    """What ``M`` stores of ``A``'s import (``mid``), its push consumer delivers on ``out``, which ``B``
    imports: that is ``M``'s own message and reaches ``B`` (on both servers), the chain rule aside."""
    accounts = json.loads(json.dumps(CHAIN))
    accounts["M"].update(jetstream="enabled", exports=[{"stream": "out"}])
    accounts["B"]["imports"] = [{"stream": {"account": "M", "subject": "out"}}]
    target = start_server(accounts=accounts)
    async with _connect(target, "a", "pwd") as a, _connect(target, "b", "pwd") as b, _connect(target, "m", "pwd") as m:
        into_b = _Inbox()
        await b.subscribe("out", cb=into_b.handle)
        await subscriptions_live(b)
        js = m.jetstream()
        await js.add_stream(name="S", subjects=["mid"])
        await js.add_consumer("S", durable_name="c", deliver_subject="out", ack_policy="none")
        for _ in range(5):
            await a.publish("_d_", b"x")
        assert {msg.subject for msg in await into_b.wait(5)} == {"mid"}


def _with_flow_control_import() -> dict[str, Any]:
    conf = json.loads(json.dumps(EXPORT_CONF))
    conf["accounts"]["JS"]["exports"].append({"service": "$JS.FC.>"})
    conf["accounts"]["A"]["imports"].append({"service": {"subject": "$JS.FC.>", "account": "JS"}})
    return conf


async def test_push_heartbeats_and_flow_control_come_back(start_server: StartServer) -> None:
    """Idle heartbeats reach the importer's deliver subject, and a flow-control request answered
    there gets back to the consumer through a ``$JS.FC.>`` service import (which then goes on
    delivering; without that import nats-server's consumer stalls)."""
    target = start_server(**_with_flow_control_import())
    async with _connect(target, "js", "js") as admin, _connect(target, "a", "s3cret") as a:
        js = admin.jetstream()
        await js.add_stream(name="S", subjects=["S.>"])
        inbox = _Inbox()
        await a.subscribe("A.push", cb=inbox.handle)
        await subscriptions_live(a)
        config = {
            "durable_name": "fc",
            "ack_policy": "none",
            "deliver_subject": "A.push",
            "flow_control": True,
            "idle_heartbeat": 500_000_000,
        }
        await _api(a, "IPA.CONSUMER.CREATE.S.fc", {"stream_name": "S", "config": config})
        await inbox.wait(1, lambda m: m.headers is not None and m.headers.get("Status") == "100")
        payload = b"x" * 100_000
        for _ in range(40):  # well past the first flow-control window
            await js.publish("S.x", payload)

        def is_fc(m: Any) -> bool:
            return m.headers is not None and m.headers.get("Description") == "FlowControl Request"

        def is_data(m: Any) -> bool:
            return m.headers is None or m.headers.get("Status") is None

        answered = 0
        deadline = asyncio.get_running_loop().time() + TIMEOUT
        while len([m for m in inbox.msgs if is_data(m)]) < 40:
            for m in [m for m in inbox.msgs if is_fc(m)][answered:]:
                await a.publish(m.reply, b"")
                answered += 1
            assert asyncio.get_running_loop().time() < deadline, "deliveries stopped"
            await asyncio.sleep(0.05)
        assert answered >= 1


async def test_publish_to_a_stream_through_a_service_import(start_server: StartServer) -> None:
    """A stream's subjects exported as a service: the importer's JetStream publishes get their
    PubAcks back through the ``_R_`` replies (many in one read: the PubAcks go out as a run)."""
    conf = json.loads(json.dumps(EXPORT_CONF))
    conf["accounts"]["JS"]["exports"].append({"service": "S.>"})
    conf["accounts"]["A"]["imports"].append({"service": {"subject": "S.>", "account": "JS"}})
    target = start_server(**conf)
    async with _connect(target, "js", "js") as admin, _connect(target, "a", "s3cret") as a:
        await admin.jetstream().add_stream(name="S", subjects=["S.>"])
        js = a.jetstream(prefix="IPA")
        acks = await asyncio.gather(*(js.publish(f"S.{k}", b"x") for k in range(50)))
        assert sorted(ack.seq for ack in acks) == list(range(1, 51))
        assert {ack.stream for ack in acks} == {"S"}
        info = await js.stream_info("S")
        assert info.state.messages == 50


#: nats-server's ``TestJetStreamMirrorCrossAccountWithFilteredSubjectAndSubjectTransform``.
MIRROR_CONF = {
    "accounts": {
        "PUBLIC": {
            "jetstream": "enabled",
            "exports": [
                *(
                    {"service": f"$JS.API.CONSUMER.CREATE.S.*.public.{k}", "response_type": "stream", "accounts": ["INTERNAL"]}
                    for k in "ab"
                ),
                {"service": "$JS.FC.>"},
                {"stream": "shared.public.>", "accounts": ["INTERNAL"]},
            ],
            "users": [{"user": "public", "password": "pwd"}],
        },
        "INTERNAL": {
            "jetstream": "enabled",
            "imports": [
                *(
                    {
                        "service": {"account": "PUBLIC", "subject": f"$JS.API.CONSUMER.CREATE.S.*.public.{k}"},
                        "to": f"JS.PUBLIC.CONSUMER.CREATE.S.*.public.{k}",
                    }
                    for k in "ab"
                ),
                {"service": {"account": "PUBLIC", "subject": "$JS.FC.>"}, "to": "$JS.FC.>"},
                {"stream": {"account": "PUBLIC", "subject": "shared.public.>"}, "to": "shared.public.>"},
            ],
            "users": [{"user": "internal", "password": "pwd"}],
        },
    }
}


async def test_mirror_across_accounts(start_server: StartServer) -> None:
    """A mirror in another account (``external``: the origin's API under a prefix, deliveries
    under a deliver prefix imported as a stream): its consumer on the origin is bound by the
    mirror's own deliver subscription through the stream import, and it copies what the origin
    gets — with a filter and with an equivalent subject transform."""
    target = start_server(**MIRROR_CONF)
    async with _connect(target, "public", "pwd") as pub, _connect(target, "internal", "pwd") as internal:
        await pub.jetstream().add_stream(name="S", subjects=["public.>"])
        ijs = internal.jetstream()
        external = {"api": "JS.PUBLIC", "deliver": "shared.public"}
        mirrors = {
            "M1": {"name": "S", "external": external, "filter_subject": "public.a"},
            "M2": {"name": "S", "external": external, "subject_transforms": [{"src": "public.b", "dest": ""}]},
        }
        for name, mirror in mirrors.items():
            created = await _api(internal, f"$JS.API.STREAM.CREATE.{name}", {"name": name, "mirror": mirror})
            assert created.get("config", {}).get("name") == name, created
        await pub.jetstream().publish("public.a", b"hello")
        await pub.jetstream().publish("public.b", b"hello")

        async def mirrored(name: str) -> None:
            while True:
                if (await ijs.stream_info(name)).state.messages == 1:
                    return
                await asyncio.sleep(0.05)

        for name in mirrors:
            await asyncio.wait_for(mirrored(name), TIMEOUT)


def _fan_out_conf() -> dict[str, Any]:
    """nats-server's ``TestJetStreamFlowControlCrossAccountFanOut``: SOURCER imports the consumer
    API, the deliver prefix and ``$JS.FC.>`` of two accounts (the flow-control import twice, under
    the same subject)."""
    accounts: dict[str, Any] = {}
    imports: list[dict[str, Any]] = []
    for k in "AB":
        accounts[f"ACCT_{k}"] = {
            "jetstream": "enabled",
            "users": [{"user": f"usr{k}", "password": "pwd"}],
            "exports": [{"service": "$JS.API.CONSUMER.>"}, {"stream": f"RI.DELIVER.{k}.>"}, {"service": "$JS.FC.>"}],
        }
        imports += [
            {"service": {"account": f"ACCT_{k}", "subject": "$JS.API.CONSUMER.>"}, "to": f"RI.JS.{k}.API.CONSUMER.>"},
            {"stream": {"account": f"ACCT_{k}", "subject": f"RI.DELIVER.{k}.>"}},
            {"service": {"account": f"ACCT_{k}", "subject": "$JS.FC.>"}},
        ]
    accounts["SOURCER"] = {"jetstream": "enabled", "users": [{"user": "src", "password": "pwd"}], "imports": imports}
    return {"accounts": accounts}


async def test_sources_in_two_accounts_with_flow_control(start_server: StartServer) -> None:
    """A stream sourcing from two accounts, 2.5 MB from each (past the first flow-control window):
    every message arrives, each source ends without lag (its flow-control answers got back)."""
    target = start_server(**_fan_out_conf())
    payload = b"X" * (256 * 1024)
    async with _connect(target, "usrA", "pwd") as a, _connect(target, "usrB", "pwd") as b:
        for nc, subject in ((a, "A"), (b, "B")):
            js = nc.jetstream()
            await js.add_stream(name="TEST", subjects=[subject])
            for _ in range(10):
                await js.publish(subject, payload)
    async with _connect(target, "src", "pwd") as src:
        sources = [
            {"name": "TEST", "external": {"api": f"RI.JS.{k}.API", "deliver": f"RI.DELIVER.{k}"}} for k in "AB"
        ]
        created = await _api(src, "$JS.API.STREAM.CREATE.DEST", {"name": "DEST", "sources": sources})
        assert created.get("config", {}).get("name") == "DEST", created

        async def sourced() -> dict[str, Any]:
            while True:
                info = await _api(src, "$JS.API.STREAM.INFO.DEST")
                if info["state"]["messages"] == 20 and all(s["lag"] == 0 for s in info["sources"]):
                    return info
                await asyncio.sleep(0.1)

        info = await asyncio.wait_for(sourced(), 30)
        assert len(info["sources"]) == 2


async def test_kv_watch_and_history_through_the_prefix(start_server: StartServer) -> None:
    """nats.js ``kv - cross account watch/history`` with nats-py: B watches A's bucket through
    ``froma`` (an ordered push consumer delivering to B's ``forb`` inbox through the stream import)."""
    target = start_server(**KV_CONF)
    async with _connect(target, "a", "a") as a, _connect(target, "b", "b", inbox_prefix=b"forb") as b:
        kva = await a.jetstream().create_key_value(bucket="a", history=5)
        kvb = await b.jetstream(prefix="froma").key_value("a")
        await kva.put("A", b"A")
        watcher = await kvb.watchall()
        seen: list[str] = []

        async def until(key: str) -> None:
            while key not in seen:
                entry = await watcher.updates(timeout=TIMEOUT)
                if entry is not None:
                    seen.append(entry.key)

        await until("A")
        await kva.put("B", b"B")
        await until("B")
        await watcher.stop()
        history = await kvb.history("A")
        assert [e.value for e in history] == [b"A"]


async def test_kv_cross_account_as_nats_c_and_nats_go_test_it(start_server: StartServer) -> None:
    """nats.c's ``KeyValueCrossAccount`` / nats-server's ``TestJetStreamCrossAccounts`` with nats-py:
    account I uses A's bucket through ``fromA`` (API) and ``fromA.$KV`` (puts), watches deliver
    to its ``accI`` inbox through the stream import ("Watcher2 Next: Timeout" before)."""
    accounts = {
        "A": {
            "users": [{"user": "a", "password": "a"}],
            "jetstream": "enabled",
            "exports": [{"service": "$JS.API.>"}, {"service": "$KV.>"}, {"stream": "accI.>"}],
        },
        "I": {
            "users": [{"user": "i", "password": "i"}],
            "imports": [
                {"service": {"account": "A", "subject": "$JS.API.>"}, "to": "fromA.>"},
                {"service": {"account": "A", "subject": "$KV.>"}, "to": "fromA.$KV.>"},
                {"stream": {"subject": "accI.>", "account": "A"}},
            ],
        },
    }
    target = start_server(accounts=accounts)
    async with _connect(target, "a", "a") as a, _connect(target, "i", "i", inbox_prefix=b"accI") as i:
        kv1 = await a.jetstream().create_key_value(bucket="Map", history=10)
        kv2 = await i.jetstream(prefix="fromA").create_key_value(bucket="Map", history=10)
        w1, w2 = await kv1.watch("map"), await kv2.watch("map")
        for w in (w1, w2):
            assert await w.updates(timeout=TIMEOUT) is None  # the end of the (no) initial values

        async def put(value: bytes, last: int | None = None) -> int:
            headers = {"Nats-Expected-Last-Subject-Sequence": str(last)} if last is not None else None
            ack = await i.request("fromA.$KV.Map.map", value, timeout=TIMEOUT, headers=headers)
            return int(json.loads(ack.data)["seq"])

        rev = await put(b"value")
        for value in (b"value", b"updated"):
            if value == b"updated":
                await put(value, rev)
            assert (await kv1.get("map")).value == value
            assert (await kv2.get("map")).value == value
            for w in (w1, w2):
                entry = await w.updates(timeout=TIMEOUT)
                assert entry is not None and entry.key == "map" and entry.value == value
        await w1.stop()
        await w2.stop()


async def test_kv_through_the_prefix_with_our_client(start_server: StartServer) -> None:
    """Our client's KV with ``api_prefix``: puts to ``froma.$KV.a.<key>`` (nats.go ``useJSPfx``),
    watch and history through the imports. Its ordered consumers pull (as nats.go's), so the API
    is exported with streamed responses (with nats.js's singleton export a pull request gets one
    message back, on nats-server too)."""
    conf = json.loads(json.dumps(KV_CONF))
    conf["accounts"]["A"]["exports"][0]["response_type"] = "stream"
    target = start_server(**conf)
    a = await connect(target.url, user="a", password="a")
    b = await connect(target.url, user="b", password="b", inbox_prefix="forb")
    try:
        kva = await jetstream(a).create_key_value(KeyValueConfig(bucket="a", history=5))
        kvb = await jetstream(b, api_prefix="froma").key_value("a")
        await kva.put("A", b"A")
        await kvb.put("C", b"C")
        watcher = await kvb.watch_all()
        seen: list[str] = []

        async def until(key: str) -> None:
            while key not in seen:
                entry = await watcher.next(timeout=TIMEOUT)
                if entry is not None:
                    seen.append(entry.key)

        await until("C")
        await kva.put("B", b"B")
        await until("B")
        watcher.stop()
        assert [e.value for e in await kvb.history("C")] == [b"C"]
        assert (await kva.get("C")).value == b"C"
    finally:
        await a.close()
        await b.close()


async def test_object_store_through_the_prefix_with_our_client(start_server: StartServer) -> None:
    """Our client's object store with ``api_prefix``: chunks and meta published to
    ``froma.$O.<bucket>...`` (nats.go ``useJSPfx``), read back by an ordered consumer through the
    streamed API import, listed, deleted."""
    accounts = {
        "A": {
            "jetstream": True,
            "users": [{"user": "a", "password": "a"}],
            "exports": [{"service": "$JS.API.>", "response_type": "stream"}, {"service": "$O.>"}, {"stream": "forb.>"}],
        },
        "B": {
            "users": [{"user": "b", "password": "b"}],
            "imports": [
                {"service": {"subject": "$O.>", "account": "A"}, "to": "froma.$O.>"},
                {"service": {"subject": "$JS.API.>", "account": "A"}, "to": "froma.>"},
                {"stream": {"subject": "forb.>", "account": "A"}},
            ],
        },
    }
    target = start_server(accounts=accounts)
    a = await connect(target.url, user="a", password="a")
    b = await connect(target.url, user="b", password="b", inbox_prefix="forb")
    try:
        await jetstream(a).create_object_store(ObjectStoreConfig(bucket="files"))
        store = await jetstream(b, api_prefix="froma").object_store("files")
        blob = bytes(range(256)) * 2000  # 512,000 bytes: several chunks
        info = await store.put_bytes("blob", blob)
        assert info.size == len(blob) and info.chunks > 1
        assert await store.get_bytes("blob") == blob
        assert [o.name for o in await store.list()] == ["blob"]
        await store.delete("blob")
        with pytest.raises(NoObjectsFound):
            await store.list()
    finally:
        await a.close()
        await b.close()


def test_nats_js_cross_account_pull_and_subscribe(start_server: StartServer) -> None:
    """nats.js's own ``jetstream - cross account pull`` / ``cross account subscribe`` steps (its
    ``next()`` pulls with idle heartbeats: "heartbeats missed" before), run by
    ``tests/ws/cross_account.mjs`` over WebSocket with its ``jetstreamExportServerConf``."""
    node = shutil.which("node")
    if node is None or not (WS_DIR / "node_modules" / "@nats-io" / "jetstream").exists():
        pytest.skip("node or tests/ws/node_modules is missing (scripts/setup.sh installs them)")
    target = start_server(**EXPORT_CONF, websocket={"host": "127.0.0.1", "port": -1, "no_tls": True})
    run = subprocess.run(
        [node, str(WS_DIR / "cross_account.mjs"), target.ws_url], capture_output=True, text=True, timeout=120
    )
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen == {
        "pull": {"seqs": [1, 2], "last": None},
        "push": {"seqs": [1, 2], "num_pending": 0, "delivered": 2, "ack_floor": 2},
    }, run.stderr
