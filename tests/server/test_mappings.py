"""Subject mappings on both targets (nats-server 2.15.1 ``mappings``): server-level (the global
account), per account, from account JWTs in operator mode; literal, wildcard and weighted
destinations, every transform function, JetStream storing the mapped subject, permissions applied
to the mapped subject, the ``sm`` trace event, service imports mapped by the exporter."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
from nats.aio.client import Client
from tests.support.natspy import subscriptions_live
from tests.support.operator import JS_UNLIMITED, Operator
from tests.support.targets import Target, render_config

from pyjetstream.server.mappings import Mappings
from pyjetstream.server.options import MapDest

StartServer = Callable[..., Target]
TIMEOUT = 10.0

#: (source, destination, published subject, the subject it arrives on). The partition values are
#: nats-server 2.15.1's (FNV-1a 32 of the chosen tokens, modulo n).
FUNCTIONS = [
    ("dollar.*.*", "d.$2.$1", "dollar.x.y", "d.y.x"),
    ("wc.*.*", "wc2.{{wildcard(2)}}.{{ Wildcard(1) }}", "wc.x.y", "wc2.y.x"),
    ("fwc.>", "fwc2.>", "fwc.a.b.c", "fwc2.a.b.c"),
    ("mix.*.>", "mix2.$1.>", "mix.a.b.c", "mix2.a.b.c"),
    ("part.*", "part2.{{partition(3,1)}}.$1", "part.key", "part2.1.key"),
    ("parts.*.*", "parts2.{{partition(5,1,2)}}", "parts.ab.cd", "parts2.3"),
    ("partall.*", "partall2.{{partition(7)}}", "partall.xyz", "partall2.2"),
    ("split.*", "split2.{{split(1,-)}}", "split.-a-b--c-", "split2.a.b.c"),
    ("sfl.*", "sfl2.{{splitFromLeft(1,2)}}", "sfl.abcdef", "sfl2.ab.cdef"),
    ("sfr.*", "sfr2.{{SplitFromRight(1,2)}}", "sfr.abcdef", "sfr2.abcd.ef"),
    ("slfl.*", "slfl2.{{sliceFromLeft(1,2)}}", "slfl.abcde", "slfl2.ab.cd.e"),
    ("slfr.*", "slfr2.{{sliceFromRight(1,2)}}", "slfr.abcde", "slfr2.a.bc.de"),
    ("left.*", "left2.{{left(1,2)}}", "left.abcde", "left2.ab"),
    ("right.*", "right2.{{right(1,2)}}", "right.abcde", "right2.de"),
    ("short.*", "short2.{{left(1,9)}}", "short.abc", "short2.abc"),
    ("lit.a", "lit.b", "lit.a", "lit.b"),
]


@asynccontextmanager
async def _connect(target: Target, user: str = "", creds: Path | None = None) -> AsyncIterator[Client]:
    kwargs: dict[str, Any] = {"user": user, "password": user} if user else {}
    if creds is not None:
        kwargs["user_credentials"] = str(creds)
    nc = await nats.connect(target.url, allow_reconnect=False, **kwargs)
    try:
        yield nc
    finally:
        await nc.close()


async def _arrivals(nc: Client, publish: list[str], listen: str = ">", expect: int | None = None) -> list[str]:
    """The subjects ``publish`` arrive on for a subscriber of ``listen`` on the same connection
    (all of them, or ``expect``; then a flush round trip for any straggler)."""
    sub = await nc.subscribe(listen)
    await subscriptions_live(nc)
    for subject in publish:
        await nc.publish(subject, b"x")
    want = len(publish) if expect is None else expect
    got = [(await sub.next_msg(timeout=TIMEOUT)).subject for _ in range(want)]
    await nc.flush(timeout=TIMEOUT)
    while True:
        try:
            got.append((await sub.next_msg(timeout=0.2)).subject)
        except nats.errors.TimeoutError:
            break
    await sub.unsubscribe()
    return got


async def test_literal_wildcard_and_every_function(start_server: StartServer) -> None:
    target = start_server(mappings={src: dest for src, dest, _, _ in FUNCTIONS}, jetstream=False)
    async with _connect(target) as nc:
        got = await _arrivals(nc, [published for _, _, published, _ in FUNCTIONS])
        assert got == [arrives for _, _, _, arrives in FUNCTIONS]
        # Unmapped subjects, and ones a source does not match, go on as published.
        assert await _arrivals(nc, ["lit.c", "dollar.x", "other"]) == ["lit.c", "dollar.x", "other"]


async def test_random_stays_in_range(start_server: StartServer) -> None:
    target = start_server(mappings={"rnd.*": "rnd2.{{random(3)}}.$1"}, jetstream=False)
    async with _connect(target) as nc:
        got = await _arrivals(nc, ["rnd.k"] * 60)
    assert {s.split(".")[0] for s in got} == {"rnd2"} and {s.split(".")[2] for s in got} == {"k"}
    assert {s.split(".")[1] for s in got} <= {"0", "1", "2"} and len({s.split(".")[1] for s in got}) > 1


async def test_partition_of_a_literal_source(start_server: StartServer) -> None:
    """A literal source found first hashes no tokens (nats-server tokenizes the subject only for a
    mapping that is not an exact match): ``{{partition(4)}}`` is FNV-1a of "" modulo 4."""
    target = start_server(mappings={"plit": "plit2.{{partition(4)}}"}, jetstream=False)
    async with _connect(target) as nc:
        assert await _arrivals(nc, ["plit"]) == ["plit2.1"]


N = 2000


async def test_weighted_destinations_and_their_distribution(start_server: StartServer) -> None:
    mappings = {
        "w.*": [{"destination": "w.a.$1", "weight": "60%"}, {"destination": "w.b.$1", "weight": 30}],
        "loss": [{"destination": "loss", "weight": "50%"}],
        "all": [{"destination": "all.one", "weight": 100}],
        "scoped": [
            {"destination": "scoped.other", "weight": 100, "cluster": "elsewhere"},
            {"destination": "scoped.any", "weight": 100},
        ],
    }
    target = start_server(mappings=mappings, jetstream=False)
    async with _connect(target) as nc:
        counts = Counter(await _arrivals(nc, ["w.k"] * N))
        # 60 % to w.a, 30 % to w.b, the 10 % left goes on unmapped; ~5 standard deviations.
        assert sum(counts.values()) == N and set(counts) == {"w.a.k", "w.b.k", "w.k"}
        assert abs(counts["w.a.k"] - 0.6 * N) < 110 and abs(counts["w.b.k"] - 0.3 * N) < 105
        assert abs(counts["w.k"] - 0.1 * N) < 70
        # The source listed as a destination: what the weights leave is lost.
        lost = await _arrivals(nc, ["loss"] * N, expect=1)
        assert set(lost) == {"loss"} and abs(len(lost) - 0.5 * N) < 115
        assert await _arrivals(nc, ["all", "scoped"]) == ["all.one", "scoped.any"]


async def test_a_stream_on_the_destination_stores_the_mapped_subject(start_server: StartServer) -> None:
    target = start_server(mappings={"orders.new": "orders.created", "in.*": "stored.{{wildcard(1)}}"})
    async with _connect(target) as nc:
        js = nc.jetstream()
        await js.add_stream(name="ORDERS", subjects=["orders.created", "stored.*"])
        ack = await js.publish("orders.new", b"one")
        assert (ack.stream, ack.seq) == ("ORDERS", 1)
        ack = await js.publish("in.x", b"two")
        assert ack.seq == 2
        first = await js.get_msg("ORDERS", 1)
        second = await js.get_msg("ORDERS", 2)
        assert (first.subject, first.data) == ("orders.created", b"one")
        assert (second.subject, second.data) == ("stored.x", b"two")
        # The JetStream API itself is a subject like any other: nothing maps it here.
        info = json.loads((await nc.request("$JS.API.STREAM.INFO.ORDERS", b"", timeout=TIMEOUT)).data)
        assert info["state"]["messages"] == 2


ACCOUNTS = {
    "A": {
        "users": [
            {"user": "a", "password": "a"},
            {"user": "pa", "password": "pa", "permissions": {"publish": {"allow": ["orders.created"]}}},
            {"user": "pn", "password": "pn", "permissions": {"publish": {"allow": ["orders.new", "_INBOX.>"]}}},
        ],
        "mappings": {"orders.new": "orders.created"},
        "exports": [{"service": "svc.>"}],
    },
    "B": {
        "users": [{"user": "b", "password": "b"}],
        "imports": [{"service": {"account": "A", "subject": "svc.>"}, "to": "call.>"}],
    },
}


@pytest.fixture
def accounts_target(start_server: StartServer) -> Target:
    return start_server(
        accounts={**ACCOUNTS, "A": {**ACCOUNTS["A"], "mappings": {"orders.new": "orders.created", "svc.old": "svc.new"}}},
        mappings={"orders.new": "orders.global"},
        authorization={"users": [{"user": "g", "password": "g"}]},
        jetstream=False,
    )


async def test_account_mappings_are_the_accounts_own(accounts_target: Target) -> None:
    async with _connect(accounts_target, "a") as a, _connect(accounts_target, "b") as b, _connect(accounts_target, "g") as g:
        assert await _arrivals(a, ["orders.new"]) == ["orders.created"]
        assert await _arrivals(b, ["orders.new"]) == ["orders.new"]
        assert await _arrivals(g, ["orders.new"]) == ["orders.global"]


async def test_permissions_apply_to_the_mapped_subject(accounts_target: Target) -> None:
    """nats-server maps in the parser, before the publish permissions are checked."""
    async with _connect(accounts_target, "a") as a, _connect(accounts_target, "pa") as pa:
        sub = await a.subscribe(">")
        await subscriptions_live(a)
        await pa.publish("orders.new", b"allowed")  # mapped to orders.created: allowed
        msg = await sub.next_msg(timeout=TIMEOUT)
        assert (msg.subject, msg.data) == ("orders.created", b"allowed")
    errors: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        errors.append(exc)

    nc = await nats.connect(accounts_target.url, user="pn", password="pn", allow_reconnect=False, error_cb=on_error)
    try:
        await nc.publish("orders.new", b"refused")  # mapped to orders.created: not allowed
        await nc.flush(timeout=TIMEOUT)
        for _ in range(100):
            if errors:
                break
            await asyncio.sleep(0.05)
        assert [str(e) for e in errors] == ["nats: permissions violation for publish to \"orders.created\""]
    finally:
        await nc.close()


async def test_a_service_import_is_mapped_by_the_exporter(accounts_target: Target) -> None:
    async with _connect(accounts_target, "a") as a, _connect(accounts_target, "b") as b:
        sub = await a.subscribe("svc.>")
        await subscriptions_live(a)

        async def answer() -> None:
            msg = await sub.next_msg(timeout=TIMEOUT)
            await msg.respond(msg.subject.encode())

        task = asyncio.ensure_future(answer())
        reply = await b.request("call.old", b"", timeout=TIMEOUT)
        await task
        assert reply.data == b"svc.new"


async def test_mappings_from_account_jwts(start_server: StartServer, tmp_path: Path) -> None:
    op = Operator(tmp_path / "nsc")
    op.account("A", JS_UNLIMITED, mappings={"orders.new": [{"subject": "orders.created"}], "w.*": [
        {"subject": "w.a.$1", "weight": 50}, {"subject": "w.b.$1", "weight": 50}]})
    op.account("B", JS_UNLIMITED)
    target = start_server(**op.settings())
    a_creds, _, _ = op.user("A", "alice")
    b_creds, _, _ = op.user("B", "bob")
    async with _connect(target, creds=a_creds) as a, _connect(target, creds=b_creds) as b:
        assert await _arrivals(a, ["orders.new"]) == ["orders.created"]
        assert set(await _arrivals(a, ["w.k"] * 200)) == {"w.a.k", "w.b.k"}
        assert await _arrivals(b, ["orders.new"]) == ["orders.new"]
        js = a.jetstream()
        await js.add_stream(name="S", subjects=["orders.created"])
        ack = await js.publish("orders.new", b"x")
        assert (await js.get_msg("S", ack.seq)).subject == "orders.created"


@pytest.mark.parametrize(
    ("dest", "error"),
    [
        ("x. y", "invalid mapping destination: invalid transform"),
        ("x..y", "invalid mapping destination: invalid transform"),
        ("x.>.y", "invalid mapping destination: invalid transform in y"),
        ("{{nope(1)}}.x..", "invalid mapping destination: unknown function in {{nope(1)}}"),
    ],
)
async def test_a_stream_transform_follows_the_mapping_rule(start_server: StartServer, dest: str, error: str) -> None:
    """nats-server checks a stream's ``subject_transform`` with ``ValidateMapping`` too."""
    target = start_server()
    async with _connect(target) as nc:
        body = {"name": "T", "subjects": ["t.*"], "subject_transform": {"src": "t.*", "dest": dest}}
        reply = json.loads((await nc.request("$JS.API.STREAM.CREATE.T", json.dumps(body).encode(), timeout=TIMEOUT)).data)
    assert reply["error"] == {
        "code": 400,
        "err_code": 10156,
        "description": f"stream transform: {error}",
    }


async def test_a_traced_message_records_its_mapping(start_server: StartServer) -> None:
    """The ``sm`` event follows ``in`` (nats-server ``addSubjectMappingEvent`` in the parser); the
    subscriber of the destination is the egress."""
    from tests.server.test_msgtrace import DEST, _eg, _event, _in, _ready, _trace

    target = start_server(mappings={"orders.new": "orders.created"}, jetstream=False)
    async with _connect(target) as sc:
        sub = await sc.subscribe("orders.created")
        nc = await nats.connect(target.url, name="tracer", allow_reconnect=False)
        try:
            traces = await nc.subscribe(DEST)
            await _ready(nc, traces, "orders.created", 1)
            await nc.publish("orders.new", b"hi", headers=_trace())
            event = await _event(traces)
        finally:
            await nc.close()
        assert (await sub.next_msg(timeout=TIMEOUT)).subject == "orders.created"
    egress = _eg("orders.created", name="")
    del egress["name"]
    assert event["events"] == [_in("orders.new"), {"type": "sm", "to": "orders.created"}, egress]


async def test_a_reload_replaces_the_mappings(start_server: StartServer) -> None:
    """nats-server reloads mappings (``configureAccounts``: the global account's and each
    account's): the next publish takes the new ones, and a mapping taken away maps no more."""
    settings: dict[str, Any] = {
        "mappings": {"g.a": "g.b"},
        "accounts": {"A": {"users": [{"user": "a", "password": "a"}], "mappings": {"x.a": "x.b"}}},
        "authorization": {"users": [{"user": "g", "password": "g"}]},
        "jetstream": False,
    }
    target = start_server(**settings)
    async with _connect(target, "g") as g, _connect(target, "a") as a:
        assert await _arrivals(g, ["g.a"]) == ["g.b"] and await _arrivals(a, ["x.a"]) == ["x.b"]
        settings["mappings"] = {"g.a": "g.c", "g.new": "g.d"}
        settings["accounts"]["A"]["mappings"] = {}
        _reload(target, {**settings, "port": target.port})
        assert await _arrivals(g, ["g.a", "g.new"]) == ["g.c", "g.d"]
        assert await _arrivals(a, ["x.a"]) == ["x.a"]


def _reload(target: Target, settings: dict[str, Any]) -> None:
    """Rewrite the server's configuration and send SIGHUP; wait for its "Reloaded" line."""
    done = target.read_log().count("Reloaded server configuration")
    settings.pop("jetstream")
    (target.workdir / "server.conf").write_text(render_config(settings))
    assert target.proc is not None
    os.kill(target.proc.pid, signal.SIGHUP)
    deadline = time.monotonic() + 30
    while target.read_log().count("Reloaded server configuration") <= done:
        assert time.monotonic() < deadline, target.read_log()
        time.sleep(0.05)


async def test_accountz_shows_the_mappings_as_held(start_server: StartServer) -> None:
    """``/accountz?acc=`` lists each source's destinations with cumulative weights, the source's own
    share included (nats-server ``accountInfo``)."""
    mappings = {
        "w.*": [{"destination": "w.a.$1", "weight": 60}, {"destination": "w.b.$1", "weight": 30}],
        "lit": "lit2",
        "sc": [{"destination": "sc.x", "weight": 40, "cluster": "c1"}],
    }
    target = start_server(mappings=mappings, jetstream=False, http_port=-1)
    url = f"http://127.0.0.1:{target.http_port}/accountz?acc=$G"
    body = await asyncio.get_running_loop().run_in_executor(None, lambda: urllib.request.urlopen(url, timeout=TIMEOUT).read())
    assert json.loads(body)["account_detail"]["mappings"] == {
        "lit": [{"subject": "lit2", "weight": 100}],
        "sc": [{"subject": "sc", "weight": 100}, {"subject": "sc.x", "weight": 40, "cluster": "c1"}, {"subject": "sc", "weight": 100, "cluster": "c1"}],
        "w.*": [{"subject": "w.$1", "weight": 10}, {"subject": "w.b.$1", "weight": 40}, {"subject": "w.a.$1", "weight": 100}],
    }


# ----------------------------------------------------------------------------- the table itself
# (the order of overlapping mappings is the configuration's here; nats-server keeps a Go map's)


def test_the_first_mapping_that_matches_wins_and_replacing_keeps_its_place() -> None:
    m = Mappings()
    m.add("a.*", [MapDest(subject="w.$1")])
    m.add("a.x", [MapDest(subject="lit")])
    m.add("b", [MapDest(subject="c")])
    assert [m.select(s) for s in ("a.x", "a.y", "b", "z")] == ["w.x", "w.y", "c", None]
    m.add("a.*", [MapDest(subject="v.$1")])  # replaced in place: still first
    assert m.select("a.x") == "v.x" and m.sources == ["a.*", "a.x", "b"]
    assert m.remove("a.*") and m.select("a.x") == "lit" and not m.remove("nope")


def test_what_chance_decides_is_not_cached_and_the_cache_is_bounded() -> None:
    m = Mappings()
    m.add("r.*", [MapDest(subject="r.{{random(10)}}.$1")])
    m.add("w.*", [MapDest(subject="w.a.$1", weight=50), MapDest(subject="w.b.$1", weight=50)])
    assert len({m.select("r.k") for _ in range(200)}) > 1 and {m.select("w.k") for _ in range(200)} == {"w.a.k", "w.b.k"}
    for i in range(10_000):
        assert m.select(f"x.{i}") is None
    assert len(m._cache) <= 4096


async def test_a_jetstream_domain_is_a_set_of_mappings(start_server: StartServer) -> None:
    """nats-server reaches ``$JS.<domain>.API`` through mappings it adds to each JetStream account
    (``generateJSMappingTable``): the API groups and ``$KV``/``$OBJ``; another subject under the
    prefix is nobody's, a subscriber of the prefix sees nothing, /accountz lists them."""
    target = start_server(jetstream_settings={"domain": "hub"}, mappings={"$JS.hub.API.INFO": "mine"}, http_port=-1)
    async with _connect(target) as nc:
        js = nc.jetstream(domain="hub")
        await js.add_stream(name="KV_b", subjects=["$KV.b.>"])
        reply = json.loads((await nc.request("$JS.hub.API.STREAM.NAMES", b"", timeout=TIMEOUT)).data)
        assert reply["streams"] == ["KV_b"]
        await nc.request("$JS.hub.API.$KV.b.k", b"v", timeout=TIMEOUT)  # the stream's PubAck
        assert (await js.get_msg("KV_b", 1)).subject == "$KV.b.k"
        with pytest.raises(nats.errors.NoRespondersError):
            await nc.request("$JS.hub.API.FOO.BAR", b"", timeout=TIMEOUT)
        mine = await nc.subscribe("mine")
        spy = await nc.subscribe("$JS.hub.API.>")
        await subscriptions_live(nc)
        await nc.publish("$JS.hub.API.INFO", b"")  # a configured mapping of the same source wins
        assert (await mine.next_msg(timeout=TIMEOUT)).subject == "mine"
        with pytest.raises(nats.errors.TimeoutError):
            await spy.next_msg(timeout=0.3)
    url = f"http://127.0.0.1:{target.http_port}/accountz?acc=$G"
    body = await asyncio.get_running_loop().run_in_executor(None, lambda: urllib.request.urlopen(url, timeout=TIMEOUT).read())
    held = json.loads(body)["account_detail"]["mappings"]
    assert held["$JS.hub.API.$KV.>"] == [{"subject": "$KV.>", "weight": 100}] and len(held) == 9
    assert held["$JS.hub.API.INFO"] == [{"subject": "mine", "weight": 100}]


#: ``default_js_domain``: account ``L`` has no JetStream; its API requests go to domain ``hub``,
#: which it imports from ``J`` (whose domain mappings take them to its own ``$JS.API``).
DEFAULT_DOMAIN_ACCOUNTS = {
    "J": {
        "jetstream": "enabled",
        "users": [{"user": "j", "password": "j"}],
        "exports": [{"service": "$JS.hub.API.>", "response_type": "stream"}],
    },
    "L": {
        "users": [{"user": "l", "password": "l"}],
        "imports": [{"service": {"account": "J", "subject": "$JS.hub.API.>"}}],
    },
}


async def test_default_js_domain_sends_the_api_to_the_domain(start_server: StartServer) -> None:
    """nats-server ``registerAccountNoLock`` with ``default_js_domain``: an account without
    JetStream gets the domain's mappings the other way round (``$JS.API.STREAM.>`` to
    ``$JS.hub.API.STREAM.>``, ``$KV.>`` to ``$JS.hub.API.$KV.>``), so a client that knows no domain
    reaches the domain's JetStream; /accountz lists them, and the domain's own (``configJetStream``
    gives them to an account without JetStream too)."""
    target = start_server(
        jetstream_settings={"domain": "hub"},
        accounts=DEFAULT_DOMAIN_ACCOUNTS,
        default_js_domain={"L": "hub"},
        http_port=-1,
    )
    async with _connect(target, "l") as nc:
        js = nc.jetstream()  # no domain, no prefix
        await js.add_stream(name="KV_b", subjects=["$KV.b.>"])
        assert (await js.account_info()).streams == 1
        await nc.request("$KV.b.k", b"v", timeout=TIMEOUT)  # to $JS.hub.API.$KV.b.k, then J's $KV.b.k
        assert (await js.get_msg("KV_b", 1)).subject == "$KV.b.k"
    async with _connect(target, "j") as nc:
        assert (await nc.jetstream().stream_info("KV_b")).state.messages == 1
    url = f"http://127.0.0.1:{target.http_port}/accountz?acc=L"
    body = await asyncio.get_running_loop().run_in_executor(None, lambda: urllib.request.urlopen(url, timeout=TIMEOUT).read())
    held = json.loads(body)["account_detail"]["mappings"]
    # the nine, and the domain's own nine that every account without an import of the API gets
    assert len(held) == 18 and held["$KV.>"] == [{"subject": "$JS.hub.API.$KV.>", "weight": 100}]
    assert held["$JS.API.STREAM.>"] == [{"subject": "$JS.hub.API.STREAM.>", "weight": 100}]
    assert held["$JS.hub.API.STREAM.>"] == [{"subject": "$JS.API.STREAM.>", "weight": 100}]


@pytest.mark.parametrize(
    ("domains", "error"),
    [
        ({"J": "hub"}, 'default_js_domain contains account name "J" with enabled JetStream'),
        ({"X": "hub"}, 'in non operator mode, `default_js_domain` references non existing account "X"'),
        ({"L": "a b"}, 'default_js_domain contains account "L" with invalid domain name "a b"'),
    ],
)
def test_default_js_domain_start_errors(start_server: StartServer, domains: dict[str, str], error: str) -> None:
    """nats-server ``validateJetStreamOptions``: refused at start (``-t`` judges the file alone)."""
    with pytest.raises(Exception) as failed:
        start_server(jetstream_settings={"domain": "hub"}, accounts=DEFAULT_DOMAIN_ACCOUNTS, default_js_domain=domains)
    assert error in str(failed.value) + "".join(getattr(failed.value, "log", "") or "")


async def test_trace_logs_the_mapping(start_server: StartServer) -> None:
    """``trace: true``: after the PUB line, nats-server's ``MAPPING`` line. (nats-server traces a
    PUB's arguments as the client wrote them — nats.py's ``PUB orders.new  2`` has two spaces —,
    pyjetstream rebuilds them: the same for nats.py, one space less for a client that writes one.)"""
    target = start_server(mappings={"orders.new": "orders.created"}, trace=True, jetstream=False)
    async with _connect(target) as nc:
        await nc.publish("orders.new", b"hi")
        await nc.flush(timeout=TIMEOUT)
    deadline = time.monotonic() + TIMEOUT
    while "MAPPING" not in target.read_log():
        assert time.monotonic() < deadline, target.read_log()
        await asyncio.sleep(0.05)
    lines = [line.rsplit(" - ", 1)[-1] for line in target.read_log().splitlines() if "orders." in line]
    assert lines[:2] == ["<<- [PUB orders.new  2]", "<<- [MAPPING orders.new -> orders.created]"]
