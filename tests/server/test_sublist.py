"""The subscription index: wildcard matching, queue groups, cache invalidation, property test."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.server.sublist import EMPTY_RESULT, Sublist, SublistError
from pyjetstream.server.subscription import Subscription


def _sids(result: tuple) -> tuple[list[str], list[list[str]]]:
    psubs, qgroups = result
    return sorted(s.sid for s in psubs), sorted(sorted(s.sid for s in g) for g in qgroups)


def test_literal_and_wildcards() -> None:
    sl = Sublist()
    for sid, subject in enumerate(["foo.bar", "foo.*", "foo.>", ">", "*.bar", "foo", "foo.bar.baz"]):
        sl.insert(Subscription(subject, str(sid)))
    assert _sids(sl.match("foo.bar")) == (["0", "1", "2", "3", "4"], [])
    assert _sids(sl.match("foo")) == (["3", "5"], [])
    assert _sids(sl.match("foo.bar.baz")) == (["2", "3", "6"], [])
    # A literal publish to "foo.*" is matched by wildcard subs, not by the literal foo.bar.
    assert _sids(sl.match("foo.*")) == (["1", "2", "3"], [])
    assert sl.match("foo..bar") == EMPTY_RESULT
    assert sl.count == 7


def test_invalid_subjects_rejected() -> None:
    sl = Sublist()
    for bad in ["", "foo..bar", "foo.>.bar", ".foo", "foo."]:
        with pytest.raises(SublistError):
            sl.insert(Subscription(bad, "1"))
    assert sl.count == 0


def test_queue_groups_merge_across_filters() -> None:
    sl = Sublist()
    sl.insert(Subscription("foo.bar", "1", queue="q"))
    sl.insert(Subscription("foo.*", "2", queue="q"))
    sl.insert(Subscription("foo.>", "3", queue="other"))
    sl.insert(Subscription("foo.bar", "4"))
    assert _sids(sl.match("foo.bar")) == (["4"], [["1", "2"], ["3"]])


def test_cache_invalidated_on_insert_and_remove() -> None:
    sl = Sublist()
    assert sl.match("a.b") == EMPTY_RESULT
    wild = Subscription("a.*", "1")
    sl.insert(wild)
    assert _sids(sl.match("a.b")) == (["1"], [])
    lit = Subscription("a.b", "2")
    sl.insert(lit)
    assert _sids(sl.match("a.b")) == (["1", "2"], [])
    assert sl.remove(wild)
    assert _sids(sl.match("a.b")) == (["2"], [])
    assert sl.remove(lit)
    assert sl.match("a.b") == EMPTY_RESULT
    assert not sl.remove(lit)
    assert sl.count == 0
    stats = sl.stats()
    assert stats["num_inserts"] == 2 and stats["num_removes"] == 2
    assert 0 <= stats["cache_hit_rate"] <= 1


def test_remove_prunes_trie() -> None:
    sl = Sublist()
    subs = [Subscription(f"_INBOX.abc.{i}", str(i)) for i in range(100)]
    for sub in subs:
        sl.insert(sub)
    for sub in subs:
        sl.remove(sub)
    assert sl.all_subscriptions() == []
    assert sl._root.is_empty()


# --- property test: the index agrees with a brute-force regex matcher --------------------------

_TOKENS = st.sampled_from(["a", "b", "c"])
_FILTER_TOKENS = st.sampled_from(["a", "b", "c", "*"])


@st.composite
def _filters(draw: st.DrawFn) -> str:
    tokens = draw(st.lists(_FILTER_TOKENS, min_size=1, max_size=4))
    if draw(st.booleans()) and len(tokens) < 4:
        tokens.append(">")
    return ".".join(tokens)


_subjects = st.lists(_TOKENS, min_size=1, max_size=5).map(".".join)


def _brute(filter: str, subject: str) -> bool:
    parts = []
    for token in filter.split("."):
        if token == "*":
            parts.append(r"[^.]+")
        elif token == ">":
            parts.append(r"[^.]+(\.[^.]+)*")
        else:
            parts.append(re.escape(token))
    return re.fullmatch(r"\.".join(parts), subject) is not None


@settings(max_examples=150, deadline=None)
@given(
    filters=st.lists(_filters(), min_size=1, max_size=12),
    subjects=st.lists(_subjects, min_size=1, max_size=12),
    removals=st.lists(st.integers(min_value=0, max_value=11), max_size=6),
)
def test_match_equals_brute_force(filters: list[str], subjects: list[str], removals: list[int]) -> None:
    sl = Sublist()
    subs = [Subscription(f, str(i), queue="q" if i % 3 == 0 else "") for i, f in enumerate(filters)]
    for sub in subs:
        sl.insert(sub)
    live = list(subs)

    def check() -> None:
        for subject in subjects:
            psubs, qgroups = sl.match(subject)
            got = sorted([s.sid for s in psubs] + [s.sid for g in qgroups for s in g], key=int)
            want = sorted((s.sid for s in live if _brute(s.subject, subject)), key=int)
            assert got == want, (subject, [s.subject for s in live])

    check()
    check()  # now from the cache
    for index in removals:
        if index < len(live):
            sl.remove(live.pop(index))
            check()
