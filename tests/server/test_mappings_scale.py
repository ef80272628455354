"""Subject mappings at scale (issue 24, bench_scale's ``--dim mappings``): a publish finds its
mapping in steps that do not grow with the number of mappings, and loading them is linear.

nats-server walks its mappings in order for every publish (``selectMappedSubject``): ~15 µs of CPU a
publish beside 1,000 wildcard mappings, ours ~740 before the trie (`Mappings._trie`). Counted,
not timed: the trie nodes a publish looks into (`GenericSublist.steps`) and the sources tried one by one
(`mappings._matches`, none while `mappings.INDEXED`), on an embedded server with 100 and with
10,000 wildcard mappings. The differential test proves the trie finds the mapping the ordered walk
finds (`INDEXED` off), over random sources and subjects."""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path

import nats
import pytest
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server import mappings as mappings_module
from pyjetstream.server.conf import load_config
from pyjetstream.server.mappings import MappingError, Mappings
from pyjetstream.server.options import MapDest, ServerOptions
from pyjetstream.server.server import Server

PUBLISHES = 200


def _config(n: int) -> dict[str, list[MapDest]]:
    return {f"mp.{i}.*": [MapDest(subject=f"mq.{i}.{{{{wildcard(1)}}}}")] for i in range(n)}


async def _publish_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, int]:
    """Trie nodes visited and sources tried one by one, per publish to the last of ``n`` mappings
    (each a new subject: no cached result)."""
    async with embedded(mappings=_config(n)) as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            got: list[str] = []
            done = asyncio.Event()

            async def on_msg(msg: nats.aio.msg.Msg) -> None:
                got.append(msg.subject)
                if len(got) == PUBLISHES:
                    done.set()

            await nc.subscribe("mq.>", cb=on_msg)
            await nc.flush()
            trie = server.global_account.mappings._trie
            before = trie.steps
            with count_calls(monkeypatch, mappings_module, "_matches") as tried:
                for j in range(PUBLISHES):
                    await nc.publish(f"mp.{n - 1}.x{j}", b"")
                await asyncio.wait_for(done.wait(), 30)
            assert sorted(got) == sorted(f"mq.{n - 1}.x{j}" for j in range(PUBLISHES))
            return (trie.steps - before) // PUBLISHES, tried["_matches"]
        finally:
            await nc.close()


async def test_a_publish_finds_its_mapping_in_steps_that_do_not_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    (small, _), (large, _) = await _publish_steps(monkeypatch, 100), await _publish_steps(monkeypatch, 10_000)
    assert small == large and small <= 3, (small, large)  # (the root, mp, mp.<i>: O(tokens))
    monkeypatch.setattr(mappings_module, "INDEXED", False)
    # Off: each publish tries every source before the last one, as nats-server does.
    with count_calls(monkeypatch, mappings_module, "_matches") as tried:
        m = Mappings()
        for src, dests in _config(1000).items():
            m.add(src, dests)
        assert m.select("mp.999.x") == "mq.999.x"
    assert tried["_matches"] == 1000


async def test_no_source_is_tried_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    for n in (100, 10_000):
        _, tried = await _publish_steps(monkeypatch, n)
        assert tried == 0, (n, tried)


def test_loading_mappings_is_linear(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each mapping is indexed once as it is added (10,000 were 10,000 rebuilds of the index: O(n²));
    a replaced one keeps its place, a removal rebuilds."""
    for n in (100, 10_000):
        with count_calls(monkeypatch, Mappings, "_index", "_reindex") as calls:
            m = Mappings()
            for src, dests in _config(n).items():
                m.add(src, dests)
        assert calls == {"_index": n}, (n, calls)
    m.add("mp.0.*", [MapDest(subject="again.$1")])
    assert m.sources[0] == "mp.0.*" and m.select("mp.0.k") == "again.k" and len(m) == 10_000


_TOKENS = ["a", "b", "c", "*", ">"]


def _random_subject(rng: random.Random, wild: bool) -> str:
    tokens = [rng.choice(_TOKENS[:3] if not wild else _TOKENS[:4]) for _ in range(rng.randint(1, 4))]
    if wild and rng.random() < 0.3:
        tokens[-1] = ">"
    return ".".join(tokens)


@pytest.mark.parametrize("seed", range(20))
def test_the_trie_finds_what_the_ordered_walk_finds(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    rng = random.Random(seed)
    m = Mappings()
    for i in range(rng.randint(1, 40)):
        src = _random_subject(rng, wild=rng.random() < 0.8)
        with contextlib.suppress(MappingError):  # (a destination its source cannot fill)
            m.add(src, [MapDest(subject=f"d{i}.>" if src.endswith(">") else f"d{i}")])
        if rng.random() < 0.1 and len(m) > 1:
            m.remove(rng.choice(m.sources))
    subjects = [_random_subject(rng, wild=False) for _ in range(200)] + ["a.*", "a.>", "*", ">", "a..b", ""]
    for subject in subjects:
        monkeypatch.setattr(mappings_module, "INDEXED", True)
        on = m._find(subject)
        monkeypatch.setattr(mappings_module, "INDEXED", False)
        off = m._find(subject)
        assert on == off, (seed, subject, m.sources)


def test_a_transform_is_compiled_once_for_the_check_and_the_account(monkeypatch: pytest.MonkeyPatch) -> None:
    """The configuration's check of the mappings and the account's mappings built from it compile each
    transform once (`subject_transform.CACHE_VALIDATED`); off, twice. Either way the same mappings."""
    from pyjetstream.server import subject_transform

    config = {f"once.{i}.*": [MapDest(subject=f"dest.{i}.{{{{wildcard(1)}}}}")] for i in range(1000)}
    selected: dict[bool, list[str | None]] = {}
    monkeypatch.setattr(mappings_module, "CACHE_BUILT", False)  # (each add builds: the transforms alone counted)
    for cached in (True, False):
        monkeypatch.setattr(subject_transform, "CACHE_VALIDATED", cached)
        subject_transform._validated.cache_clear()
        with count_calls(monkeypatch, subject_transform.SubjectTransform, "compile") as compiled:
            for _ in range(2):
                m = Mappings()
                for src, dests in config.items():
                    m.add(src, dests)
        assert compiled["compile"] == (1000 if cached else 2000), (cached, compiled)
        selected[cached] = [m.select(f"once.{i}.k") for i in range(0, 1000, 7)]
    assert selected[True] == selected[False] == [f"dest.{i}.k" for i in range(0, 1000, 7)]


def _start_builds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, n: int) -> tuple[int, Server, ServerOptions]:
    """The mappings built while ``n`` configured mappings are loaded from a file (the configuration's
    check) and an embedded server is made from the options (the global account's own, from a copy
    of them) — a start's work before it listens."""
    conf = tmp_path / f"m{n}.conf"
    lines = (f'  "mp.{i}.*": "mq.{i}.{{{{wildcard(1)}}}}"' for i in range(n))
    conf.write_text("port: -1\nmappings: {\n" + "\n".join(lines) + "\n}\n")
    mappings_module._built.cache_clear()
    with count_calls(monkeypatch, mappings_module, "_build") as built:
        options = load_config(str(conf), validate=False)
        server = Server(options)
    return built["_build"], server, options


@pytest.mark.parametrize("cached", [True, False])
def test_a_start_builds_each_configured_mapping_once(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cached: bool
) -> None:
    """A start with ``n`` configured mappings builds each once (`mappings.CACHE_BUILT`: the account
    takes what the configuration's check built; off, each is built twice), at 100 and at 2,000
    mappings, and the server's copy of the options shares their destinations (`MapDest` is
    immutable: copying 10,000 was ~15 µs a mapping of a start). Both ways the same mappings."""
    monkeypatch.setattr(mappings_module, "CACHE_BUILT", cached)
    for n in (100, 2000):
        builds, server, options = _start_builds(monkeypatch, tmp_path, n)
        assert builds == (n if cached else 2 * n), (n, cached, builds)
        copied = server.options.mappings
        assert copied is not options.mappings and list(copied) == list(options.mappings)
        assert all(copied[src][0] is dests[0] for src, dests in options.mappings.items())
        mapped = server.global_account.mappings
        assert [mapped.select(f"mp.{i}.k") for i in (0, n // 2, n - 1)] == [f"mq.{i}.k" for i in (0, n // 2, n - 1)]
        assert mapped.select("mp.x.y.z") is None
