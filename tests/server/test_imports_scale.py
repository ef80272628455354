"""Stream imports at scale (issue 24, bench_scale's ``--dim imports``): a subscription in an importing
account is told to the stream imports whose subjects hold it, not to every one
(`imports._ImportInterest`), so a SUB + UNSUB costs the same beside 100 and 10,000 imports and a start
with n stream and n service imports is linear (each service import's subscription in the importer
was told to every stream import: O(n²), 8 s at 1,000 + 1,000).

Counted, not timed, on an embedded server in this process: the imports looked at for a change
(`_ImportInterest.told`) and the shadows made (`_ImportInterest.made`). The differential test proves
the exporter gets the same shadows with the index on and off."""

from __future__ import annotations

import asyncio
import itertools
import json
import random
import tempfile
from typing import Any

import nats
import pytest
from tests.support.natspy import subscriptions_live

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.server import imports as imports_module
from pyjetstream.server.conf.mapping import config_to_options
from pyjetstream.server.options import AccountImport
from pyjetstream.server.server import Server


def _options(n: int, prefix: bool = False) -> Any:
    """Account IMP imports stream ``s.<i>`` (``prefix``: under ``p<i % 3>``) and service ``svc.<i>``
    from EXP, n of each."""
    streams = [{"stream": {"account": "EXP", "subject": f"s.{i}"}, **({"prefix": f"p{i % 3}"} if prefix else {})}
               for i in range(n)]  # fmt: skip
    services = [{"service": {"account": "EXP", "subject": f"svc.{i}"}} for i in range(n)]
    return config_to_options({
        "accounts": {
            "EXP": {"users": [{"user": "exp", "password": "exp"}], "exports": [{"stream": "s.>"}, {"service": "svc.>"}]},
            "IMP": {"users": [{"user": "imp", "password": "imp"}], "imports": streams + services},
        },
        "no_auth_user": "imp",
    })  # fmt: skip


async def _start(n: int, **kw: Any) -> tuple[Server, str]:
    tmp = tempfile.mkdtemp()
    opts = _options(n, **kw)
    opts.host, opts.port, opts.store_dir = "127.0.0.1", -1, tmp
    server = Server(opts)
    await server.start()
    return server, f"nats://127.0.0.1:{server.port}"


async def _sub_unsub_steps(n: int) -> tuple[int, int, int]:
    """Imports looked at and shadows made per SUB + UNSUB in the importer (of a subject of one
    import), and the shadows made during the start."""
    server, url = await _start(n)
    try:
        interest = imports_module._ImportInterest.of(server.accounts["IMP"])
        at_start = interest.made
        nc = await nats.connect(url)
        try:
            told, made = interest.told, interest.made
            for _ in range(50):
                sub = await nc.subscribe(f"s.{random.randrange(n)}")
                await sub.unsubscribe()
            await nc.flush()
            return (interest.told - told) // 50, (interest.made - made) // 50, at_start
        finally:
            await nc.close()
    finally:
        await server.shutdown()


async def test_a_subscription_is_told_to_the_imports_that_hold_it() -> None:
    small, large = await _sub_unsub_steps(100), await _sub_unsub_steps(10_000)
    assert small[:2] == large[:2] == (1, 1), (small, large)  # its one import, one shadow (gone at UNSUB)
    # A start: each service import's subscription in the importer is none of a stream import's (nor
    # in one's subjects), and the system imports' fall in none either.
    assert small[2] == large[2] == 0, (small, large)


async def test_off_every_import_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imports_module, "INDEXED", False)
    told, made, _ = await _sub_unsub_steps(100)
    assert (told, made) == (100, 1)  # (the old way: each stream import at each SUB)


async def _shadows(monkeypatch: pytest.MonkeyPatch, indexed: bool, subjects: list[str]) -> list[tuple[str, str, bool]]:
    monkeypatch.setattr(imports_module, "INDEXED", indexed)
    server, url = await _start(30, prefix=True)
    heard: list[tuple[str, str, bool]] = []
    exporter = server.accounts["EXP"]

    def changed(sub: Any, added: bool) -> None:
        if sub.origin is not None:
            heard.append((sub.subject, sub.queue, added))

    exporter.on_interest_change(changed)
    try:
        nc = await nats.connect(url)
        try:
            subs = [await nc.subscribe(s, queue="q" if i % 4 == 0 else "") for i, s in enumerate(subjects)]
            for sub in subs:
                await sub.unsubscribe()
            await nc.flush()
        finally:
            await nc.close()
    finally:
        await server.shutdown()
    return heard


@pytest.mark.parametrize("seed", range(3))
async def test_the_exporter_has_the_same_shadows_on_and_off(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    # The imports' own subjects (under the right prefix or another), others of theirs, wildcards.
    heads = ["s", "p0.s", "p1.s", "p2.s", "x", "p0", "s.1", "*", "p1.*"]
    subjects = [f"{rng.choice(heads)}.{rng.choice([*map(str, range(35)), '*', '>', 'y'])}" for _ in range(150)]
    on, off = await _shadows(monkeypatch, True, subjects), await _shadows(monkeypatch, False, subjects)
    assert sorted(on) == sorted(off) and on, (len(on), len(off))


async def _publish_steps(n: int, prefix: bool) -> tuple[float, float, int]:
    """Sublist matches (every account's) and misses per message an exporter's client publishes
    through one of ``n`` stream imports to an importer's ``*.s.>`` / ``s.>`` subscription (its
    shadows), and the messages received."""
    server, url = await _start(n, prefix=prefix)
    try:
        got: list[str] = []
        imp = await nats.connect(url)
        exp = await nats.connect(url, user="exp", password="exp")
        try:

            async def take(msg: Any) -> None:
                got.append(msg.subject)

            await imp.subscribe("*.s.>" if prefix else "s.>", cb=take)
            await subscriptions_live(imp)  # (the exporter's client publishes next)
            sublists = [account.sublist for account in server.accounts.values()]
            matches, misses = sum(sl.matches for sl in sublists), sum(sl.cache_misses for sl in sublists)
            k = 200
            for _ in range(k):
                await exp.publish(f"s.{random.randrange(n)}", b"x")
            await exp.flush()
            for _ in range(200):
                if len(got) == k:
                    break
                await asyncio.sleep(0.01)
            matches = sum(sl.matches for sl in sublists) - matches
            misses = sum(sl.cache_misses for sl in sublists) - misses
            return matches / k, misses / k, len(got)
        finally:
            await imp.close()
            await exp.close()
    finally:
        await server.shutdown()


@pytest.mark.parametrize("prefix", [False, True])
async def test_a_publish_through_a_stream_import_is_one_match(prefix: bool) -> None:
    """nats-server's shadow subscriptions (`subscription.Shadow`): a message published in the
    exporter reaches the importer's subscription through the exporter's one match, beside 100 or
    10,000 imports (a forwarder routed it again in the importer: two matches, two misses)."""
    small, large = await _publish_steps(100, prefix), await _publish_steps(10_000, prefix)
    assert small[0] == large[0] == 1.0, (small, large)
    assert small[1] <= large[1] <= 1.0, (small, large)  # (at most one miss: 10,000 subjects pass the cache)
    assert small[2] == large[2] == 200


async def _received(copies: bool, seed: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[str, str, bytes, Any]]]:
    """What each importer subscription receives of an exporter's random publishes (with replies and
    headers, in runs), with shadows as copies (``COPIES``) or not."""
    monkeypatch.setattr(imports_module, "COPIES", copies)
    streams = [
        {"stream": {"account": "EXP", "subject": "s.1"}},
        {"stream": {"account": "EXP", "subject": "s.2"}, "to": "t.2"},
        {"stream": {"account": "EXP", "subject": "s.3.*"}},
        {"stream": {"account": "EXP", "subject": "s.4"}, "prefix": "p"},
    ]
    opts = config_to_options({
        "accounts": {
            "EXP": {"users": [{"user": "exp", "password": "exp"}], "exports": [{"stream": "s.>"}]},
            "IMP": {"users": [{"user": "imp", "password": "imp"}], "imports": streams},
        },
        "no_auth_user": "imp",
    })  # fmt: skip
    opts.host, opts.port, opts.store_dir = "127.0.0.1", -1, tempfile.mkdtemp()
    server = Server(opts)
    await server.start()
    got: dict[str, list[tuple[str, str, bytes, Any]]] = {}
    try:
        imp = await nats.connect(f"nats://127.0.0.1:{server.port}")
        exp = await nats.connect(f"nats://127.0.0.1:{server.port}", user="exp", password="exp")
        try:
            for subject in ("s.1", "s.>", "*.*", "t.2", "s.3.*", "p.s.4", ">", "s.1"):
                inbox = got.setdefault(f"{subject}#{len(got)}", [])

                async def take(msg: Any, inbox: list[Any] = inbox) -> None:
                    inbox.append((msg.subject, msg.reply, msg.data, msg.headers))

                await imp.subscribe(subject, cb=take)
            await subscriptions_live(imp)  # (the exporter's client publishes next)
            rng = random.Random(seed)
            for j in range(300):
                subject = rng.choice(["s.1", "s.2", "s.3.a", "s.3.b", "s.4", "s.5"])
                reply = rng.choice(["", "r.x"])
                headers = {"k": str(j)} if rng.random() < 0.3 else None
                await exp.publish(subject, b"%d" % j, reply=reply, headers=headers)
                if rng.random() < 0.05:
                    await exp.flush()
            await exp.flush()
            await imp.flush()
            await asyncio.sleep(0.2)
        finally:
            await imp.close()
            await exp.close()
    finally:
        await server.shutdown()
    return got


@pytest.mark.parametrize("seed", range(2))
async def test_shadows_as_copies_or_not_deliver_the_same(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    on, off = await _received(True, seed, monkeypatch), await _received(False, seed, monkeypatch)
    assert on == off
    assert all(on.values()) and sum(map(len, on.values())) > 300, {k: len(v) for k, v in on.items()}


async def _request_steps(n: int) -> tuple[float, float]:
    """Sublist matches and cache misses (every account's) per request an importer's client makes
    through one of ``n`` service imports (50 of them, each already asked once) to a responder on
    ``svc.>`` in the exporter: its response comes back on a fresh ``_R_.<tag>.<id>``."""
    server, url = await _start(n)
    try:
        imp = await nats.connect(url)
        exp = await nats.connect(url, user="exp", password="exp")
        try:

            async def respond(msg: Any) -> None:
                await msg.respond(b"ok")

            await exp.subscribe("svc.>", cb=respond)
            await subscriptions_live(exp)  # (the importer's client asks next)
            asked = [f"svc.{i * n // 50}" for i in range(50)]
            for subject in asked:
                assert (await imp.request(subject, b"q", timeout=5)).data == b"ok"
            sublists = [account.sublist for account in server.accounts.values()]
            matches, misses = sum(sl.matches for sl in sublists), sum(sl.cache_misses for sl in sublists)
            k = 200
            for j in range(k):
                assert (await imp.request(asked[j % 50], b"q", timeout=5)).data == b"ok"
            matches = sum(sl.matches for sl in sublists) - matches
            misses = sum(sl.cache_misses for sl in sublists) - misses
            return matches / k, misses / k
        finally:
            await imp.close()
            await exp.close()
    finally:
        await server.shutdown()


async def test_a_request_through_a_service_import_misses_no_cache() -> None:
    """A request through a service import: its subject in the importer, its subject in the
    exporter, the response's ``_R_`` reply there (`accounts.PREFIX_INDEXES`: one dict lookup, no
    cache miss) and the requester's reply — four matches and no cache miss at 100 and at 10,000
    imports (the fresh ``_R_`` reply was a miss a request, evicting the cache's subjects)."""
    small, large = await _request_steps(100), await _request_steps(10_000)
    assert small == large == (4.0, 0.0), (small, large)


async def _request_infos(kept: bool, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """The ``Nats-Request-Info`` an exporter gets of requests through a shared and a plain service
    import, with and without headers, before and after the requester's RTT changes."""
    monkeypatch.setattr(imports_module, "INFO_KEPT", kept)
    opts = config_to_options({
        "server_name": "srv",
        "accounts": {
            "EXP": {"users": [{"user": "exp", "password": "exp"}], "exports": [{"service": "svc.>"}, {"service": "other.>"}]},
            "IMP": {"users": [{"user": "imp", "password": "imp"}], "imports": [
                {"service": {"account": "EXP", "subject": "svc.>"}, "share": True},
                {"service": {"account": "EXP", "subject": "other.>"}},
            ]},
        },
    })  # fmt: skip
    opts.host, opts.port, opts.store_dir = "127.0.0.1", -1, tempfile.mkdtemp()
    server = Server(opts)
    await server.start()
    seen: list[tuple[str, Any]] = []
    try:
        url = f"nats://127.0.0.1:{server.port}"
        exp = await nats.connect(url, user="exp", password="exp")
        imp = await nats.connect(url, user="imp", password="imp", name="asker")
        try:

            async def respond(msg: Any) -> None:
                info = json.loads((msg.headers or {})["Nats-Request-Info"])
                info.pop("start", None)
                seen.append((msg.subject, info))
                await msg.respond(b"ok")

            await exp.subscribe("svc.>", cb=respond)
            await exp.subscribe("other.>", cb=respond)
            await exp.flush()
            conn = next(c for c in server.clients.values() if c.name == "asker")
            for rtt in (0.0, 0.0, 0.000123, 0.000123, 0.0005):
                conn.rtt = rtt
                for subject in ("svc.a", "other.a"):
                    await imp.request(subject, b"q", timeout=5)
                    await imp.request(subject, b"q", timeout=5, headers={"k": "v"})
        finally:
            await imp.close()
            await exp.close()
    finally:
        await server.shutdown()
    return seen


async def test_request_infos_kept_or_not_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """`imports.INFO_KEPT`: a connection's ``Nats-Request-Info`` kept (made again when its RTT
    changes) or made at every request, the same headers reach the exporter."""
    on, off = await _request_infos(True, monkeypatch), await _request_infos(False, monkeypatch)
    assert on == off and len(on) == 20
    assert {info.get("rtt") for _, info in on} == {None, 123000, 500000}
    assert {info["acc"] for _, info in on} == {"IMP"} and "name" in on[0][1] and "name" not in on[2][1]


def test_the_overlap_of_two_subjects_matches_what_both_match() -> None:
    """`imports._intersection` (a wildcard subscription overlapping an import: its shadow's subject)
    matches exactly the subjects both match, for every pair of subjects of up to three tokens over
    ``a b * >`` (None: none)."""
    patterns = [".".join(c) for n in (1, 2, 3) for c in itertools.product("ab*>", repeat=n) if ">" not in c[:-1]]
    universe = [".".join(c) for n in (1, 2, 3, 4) for c in itertools.product("ac", repeat=n)]
    for a in patterns:
        for b in patterns:
            meet = imports_module._intersection(a, b)
            for subject in universe:
                both = subject_matches(a, subject) and subject_matches(b, subject)
                assert both == (meet is not None and subject_matches(meet, subject)), (a, b, meet, subject)


@pytest.mark.parametrize(
    ("imp", "shadows"),
    [
        (
            AccountImport(kind="stream", account="EXP", subject="s.*", to="t.*"),
            {"t.*": "s.*", "t.x": "s.x", ">": "s.*", "*.x": "s.x", "t.>": "s.*", "u.x": None, "t.x.y": None},
        ),
        (
            AccountImport(kind="stream", account="EXP", subject="s.>", prefix="p"),
            {"p.s.>": "s.>", "p.s.1": "s.1", "p.>": "s.>", "*.s.1": "s.1", "*.*.1": "s.1", "p.t.1": None, "s.1": None},
        ),
        (
            AccountImport(kind="stream", account="EXP", subject="s.1"),
            {"s.1": "s.1", "s.*": "s.1", ">": "s.1", "*.1": "s.1", "s.2": None, "s.1.x": None},
        ),
    ],
)
def test_a_shadows_subject(imp: AccountImport, shadows: dict[str, str | None]) -> None:
    """nats-server ``addShadowSubscriptions``' four cases: the import's own subject, a subscription
    inside it (mapped back), one holding it (the exported subject), one overlapping it (the
    overlap mapped back); else no shadow."""
    link = imports_module._StreamLink(Any, Any, imp)  # type: ignore[arg-type]
    assert {subject: link.shadow_subject(subject) for subject in shadows} == shadows
