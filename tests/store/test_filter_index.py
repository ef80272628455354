"""The cached filter matches of a subject table, kept up to date through a trie of their filters
(a `GenericSublist`, `_index.INDEXED_FILTERS`; its matches are tested against `subject_matches` in
tests/protocol/test_gsl.py) as through the test of every cached filter: the same cached matches
holding the same ids, after random new and removed subjects (differential, on == off); and a new
subject's cost does not grow with the filters cached (issue 24: steps counted on the embedded
server, beside a consumer with 10 and with 1,000 ``filter_subjects``).
"""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import count_calls, embedded
from tests.support.random_subjects import random_filter, random_subject

from pyjetstream.protocol.subjects import compile_filter
from pyjetstream.server.jetstream.store import _index
from pyjetstream.server.jetstream.store._index import FilterMatch, SubjectTable

_matcher = functools.lru_cache(maxsize=None)(compile_filter)


def _names(table: SubjectTable, sids: set[int]) -> set[str]:
    return {table.names[sid] or "" for sid in sids}


def _ids(table: SubjectTable, fm: FilterMatch) -> set[int]:
    return set(table.ids.values()) if fm.sids is None else set(fm.sids)


def _run(seed: int) -> tuple[list[set[str]], list[dict[tuple[str, ...], set[str]]]]:
    """Random subjects stored and removed, filters asked (some sets of several): after every
    eighth step every cached match holds exactly the live subjects its filters match. Returns the
    subjects each ask was answered with and what the cache held after each step."""
    rng = random.Random(seed)
    table = SubjectTable()
    asked = [tuple(sorted({random_filter(rng) for _ in range(rng.randint(1, 3))})) for _ in range(80)]
    answers: list[set[str]] = []
    held: list[dict[tuple[str, ...], set[str]]] = []
    for step in range(800):
        r = rng.random()
        if r < 0.5:
            subject = random_subject(rng)
            if subject not in table.ids:
                table.intern(subject, 1)
        elif r < 0.75 and table.ids:
            table.release(table.ids[rng.choice(sorted(table.ids))])
        else:
            key = rng.choice(asked)
            if not any(f == ">" for f in key):
                fm = table.match(key)
                answers.append(_names(table, _ids(table, fm)))
        # (each cached match: the subjects it holds, "*" for every subject)
        held.append(
            {key: {"*"} if fm.sids is None else _names(table, fm.sids) for key, fm in table._cache.items()}
        )
        for key, fm in table._cache.items() if step % 8 == 0 else ():
            want = {s for s in table.ids if any(_matcher(f)(s) for f in key)}
            assert _names(table, _ids(table, fm)) == want, (seed, key)
        # (the ids counted are those held: a key's overlapping filters meet a subject twice)
        assert table._cached_sids == sum(len(fm.sids or ()) for fm in table._cache.values())
    return answers, held


@pytest.mark.parametrize("seed", range(6))
def test_cached_matches_on_equal_off(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    on = _run(seed)
    monkeypatch.setattr(_index, "INDEXED_FILTERS", False)
    assert _run(seed) == on


async def _new_subject_steps(monkeypatch: pytest.MonkeyPatch, filters: int) -> float:
    """Filter tests and trie nodes visited per publish of a new subject into a stream one of
    whose consumers has ``filters`` filter subjects (their pending counts cache each one)."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["f.>", "g.>"], storage="memory")
            for i in range(50):
                await nc.publish_js(f"f.{i}.x")
            sub = nc.subscribe("_D")
            await nc.flush()
            got = await nc.add_consumer(
                "S",
                "c",
                deliver_subject="_D",
                ack_policy="none",
                filter_subjects=[f"f.{i}.*" for i in range(filters)],
            )
            assert "error" not in got, got
            await sub.collect(min(filters, 50))
            await nc.publish_js("g.first")  # (a match of every subject goes: once)
            table: Any = server.jetstream.streams["S"].store._index.subjects
            assert len(table._cache) > min(filters, 10)
            before = table._filters.steps
            with count_calls(monkeypatch, FilterMatch, "matches") as calls:
                for j in range(200):
                    await nc.publish_js(f"g.{j}")
            return (calls["matches"] + table._filters.steps - before) / 200
        finally:
            await nc.close()


async def test_a_new_subject_does_not_test_every_cached_filter(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _new_subject_steps(monkeypatch, 10)
    large = await _new_subject_steps(monkeypatch, 1000)
    assert small == large <= 4, (small, large)  # (the trie's root and its "g": no filter test)
    with monkeypatch.context() as m:
        m.setattr(_index, "INDEXED_FILTERS", False)
        off = await _new_subject_steps(monkeypatch, 1000)
    assert off >= 60, off  # (every cached filter tested)
