"""`GenericSublist` (nats-server ``gsl``): its matches are `subject_matches`' over random filters
and subjects (wildcard tokens in the subject included, taken literally), after inserts and
removes; a value comes once per filter that takes the subject; invalid filters are refused; a match visits the nodes its tokens
lead to, not the filters held."""

from __future__ import annotations

import random

import pytest
from tests.support.random_subjects import random_filter, random_subject

from pyjetstream.protocol.gsl import GenericSublist, InvalidSubject
from pyjetstream.protocol.subjects import subject_matches


@pytest.mark.parametrize("seed", range(4))
def test_matches_as_subject_matches(seed: int) -> None:
    rng = random.Random(seed)
    filters = sorted({random_filter(rng) for _ in range(300)})
    sl: GenericSublist[tuple[str, int]] = GenericSublist()
    held: set[tuple[str, int]] = set()
    for i, f in enumerate(filters):
        for k in range(1 + i % 3):
            sl.insert(f, (f, k))
            held.add((f, k))
    for f in filters[::7]:  # (some go again: the rest still found, the empty nodes pruned)
        assert sl.remove(f, (f, 0))
        assert not sl.remove(f, (f, 0))
        held.discard((f, 0))
    assert len(sl) == len(held)
    for _ in range(2000):
        subject = random_subject(rng, wild=0.2)
        got = sl.match(subject)
        want = {v for v in held if subject_matches(v[0], subject)}
        assert sorted(got) == sorted(want), subject
        assert sl.has_interest(subject) == bool(want)
    for v in held:
        sl.remove(v[0], v)
    assert len(sl) == 0 and sl._root.empty()


def test_a_value_comes_once_per_filter_and_in_order() -> None:
    sl: GenericSublist[str] = GenericSublist()
    for value, f in [("x", "a.*"), ("y", "a.b"), ("x", "a.>"), ("z", ">"), ("y", "a.b"), ("w", "a.*")]:
        sl.insert(f, value)
    assert len(sl) == 5  # (a value is held once under a filter)
    assert sl.match("a.b") == ["z", "x", "x", "w", "y"]  # (level by level: ">" first)
    assert sl.match("b") == ["z"]
    assert sl.match("a..b") == [] and sl.match("") == [] and sl.match("a.") == []
    assert not sl.has_interest("a.b.")


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a.", "a.>.b", ">.a"])
def test_invalid_filters_are_refused(bad: str) -> None:
    sl: GenericSublist[int] = GenericSublist()
    with pytest.raises(InvalidSubject):
        sl.insert(bad, 1)
    assert len(sl) == 0 and not sl.remove(bad, 1)


def test_a_match_visits_the_subjects_tokens_not_the_filters() -> None:
    """Steps per match beside 10 and 10,000 filters on other first tokens: the same."""

    def steps(n: int) -> int:
        sl: GenericSublist[int] = GenericSublist()
        for i in range(n):
            sl.insert(f"f.{i}.*", i)
            sl.insert(f"h{i}.>", i)
        sl.insert("g.*", -1)
        before = sl.steps
        assert sl.match("g.x") == [-1]
        return sl.steps - before

    assert steps(10) == steps(10_000) <= 3
