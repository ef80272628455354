"""Stream imports at scale (issue 24, bench_scale's ``--dim imports``): a subscription in an importing
account is told to the stream imports whose subjects hold it, not to every one
(`imports._ImportInterest`), so a SUB + UNSUB costs the same beside 100 and 10,000 imports and a start
with n stream and n service imports is linear (each service import's subscription in the importer
was told to every stream import: O(n²), 8 s at 1,000 + 1,000).

Counted, not timed, on an embedded server in this process: the imports told of a change
(`_ImportInterest.told`) and their `_StreamLink.changed` calls. The differential test proves the
exporter hears of the same shadows (``Account.shadow_interest``) with the index on and off."""

from __future__ import annotations

import random
import tempfile
from collections.abc import Callable
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls

from pyjetstream.server import imports as imports_module
from pyjetstream.server.conf.mapping import config_to_options
from pyjetstream.server.server import Server


def _options(n: int, prefix: bool = False) -> Any:
    """Account IMP imports stream ``s.<i>`` (``prefix``: under ``p<i % 3>``) and service ``svc.<i>``
    from EXP, n of each."""
    streams = [{"stream": {"account": "EXP", "subject": f"s.{i}", **({"prefix": f"p{i % 3}"} if prefix else {})}}
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


async def _sub_unsub_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, int, int]:
    """Imports told and `_StreamLink.changed` calls per SUB + UNSUB in the importer (of a subject of
    one import), and those calls during the start."""
    with count_calls(monkeypatch, imports_module._StreamLink, "changed") as at_start:
        server, url = await _start(n)
    try:
        interest = imports_module._ImportInterest.of(server.accounts["IMP"])
        nc = await nats.connect(url)
        try:
            told = interest.told
            with count_calls(monkeypatch, imports_module._StreamLink, "changed") as calls:
                for _ in range(50):
                    sub = await nc.subscribe(f"s.{random.randrange(n)}")
                    await sub.unsubscribe()
                await nc.flush()
            return (interest.told - told) // 50, calls["changed"] // 50, at_start["changed"]
        finally:
            await nc.close()
    finally:
        await server.shutdown()


async def test_a_subscription_is_told_to_the_imports_that_hold_it(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = await _sub_unsub_steps(monkeypatch, 100), await _sub_unsub_steps(monkeypatch, 10_000)
    assert small[:2] == large[:2] == (2, 2), (small, large)  # its one import, at SUB and at UNSUB
    # A start: each service import's subscription in the importer (literal, ``svc.<i>``) falls in no
    # stream import's subjects, and the system imports' fall in none either.
    assert small[2] == large[2] == 0, (small, large)


async def test_off_every_import_is_told(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(imports_module, "INDEXED", False)
    told, calls, _ = await _sub_unsub_steps(monkeypatch, 100)
    assert told == calls == 200  # (the old way: each stream import at each change)


async def _shadows(monkeypatch: pytest.MonkeyPatch, indexed: bool, subjects: list[str]) -> list[tuple[str, str, bool]]:
    monkeypatch.setattr(imports_module, "INDEXED", indexed)
    server, url = await _start(30, prefix=True)
    heard: list[tuple[str, str, bool]] = []
    exporter = server.accounts["EXP"]
    original: Callable[..., Any] = exporter.shadow_interest

    def shadow_interest(shadow: Any, added: bool) -> None:
        heard.append((shadow.subject, shadow.queue, added))
        original(shadow, added)

    monkeypatch.setattr(exporter, "shadow_interest", shadow_interest)
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
async def test_the_exporter_hears_of_the_same_shadows_on_and_off(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    # The imports' own subjects (under the right prefix or another), others of theirs, wildcards.
    heads = ["s", "p0.s", "p1.s", "p2.s", "x", "p0", "s.1"]
    subjects = [f"{rng.choice(heads)}.{rng.choice([*map(str, range(35)), '*', '>', 'y'])}" for _ in range(150)]
    on, off = await _shadows(monkeypatch, True, subjects), await _shadows(monkeypatch, False, subjects)
    assert sorted(on) == sorted(off) and on, (len(on), len(off))
