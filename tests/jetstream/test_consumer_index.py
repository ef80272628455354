"""ConsumerIndex (a stream's consumers by filter subject) against brute force: any mix of literal,
``>``, other wildcard and multiple filters, consumers coming, going and changing filters; every
answer in the order the consumers were added, as a walk over all of them would give."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.server.jetstream.consumer_index import ConsumerIndex


@dataclass
class _Cfg:
    filter_subject: str = ""
    filter_subjects: list[str] = field(default_factory=list)
    direct: bool = False
    sourcing: bool = False


@dataclass(eq=False)
class _Consumer:
    name: str
    cfg: _Cfg


def _takes(filters: list[str], subject: str) -> bool:
    if not filters:
        return True
    for f in filters:
        parts = [r"[^.]+" if t == "*" else r"[^.]+(\.[^.]+)*" if t == ">" else re.escape(t) for t in f.split(".")]
        if re.fullmatch(r"\.".join(parts), subject):
            return True
    return False


_FILTERS = st.sampled_from(["", ">", "a", "a.b", "a.c", "a.*", "*.b", "a.>", "b"])
_SUBJECTS = st.sampled_from(["a", "b", "a.b", "a.c", "b.b", "a.b.c"])


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 5), _FILTERS), min_size=1, max_size=25),
    subjects=st.lists(_SUBJECTS, min_size=1, max_size=6),
    every=st.integers(1, 4),
)
def test_matches_brute_force(ops: list[tuple[int, int, str]], subjects: list[str], every: int) -> None:
    """Asked after every ``every`` changes (a direct lookup's tuple is built at the first match
    after its changes, see `ConsumerIndex._place`), and at the end."""
    index = ConsumerIndex()
    live: dict[str, _Consumer] = {}  # in the order they were (re)added
    for step, (op, n, flt) in enumerate(ops):
        name = f"c{n}"
        if op == 0 or name not in live:
            consumer = _Consumer(name, _Cfg(filter_subject=flt))
            live.pop(name, None)
            live[name] = consumer
            index.add(consumer)
        elif op == 1:
            index.remove(live.pop(name))
        else:  # a filter update: keeps its place among the others? (re-added: goes last)
            consumer = live.pop(name)
            consumer.cfg = _Cfg(filter_subject=flt)
            live[name] = consumer
            index.refilter(consumer)
        if step % every and step != len(ops) - 1:
            continue
        for subject in subjects:
            want = [c for c in live.values() if _takes([c.cfg.filter_subject] if c.cfg.filter_subject else [], subject)]
            assert list(index.match(subject)) == want, (subject, [(c.name, c.cfg.filter_subject) for c in live.values()])
            assert index.has_interest(subject) == bool(want)
    assert index.public == len(live)
    assert index.public_names() == sorted(live)


@pytest.mark.parametrize("n", [100, 1000])
@pytest.mark.parametrize("flt", ["", "a.b"])
def test_adding_consumers_copies_none(n: int, flt: str) -> None:
    """Adding (or removing) a consumer to ``>`` or to a literal filter others have builds no tuple
    of them all: n adds copied n² consumers when each add built it. The first match builds it once."""
    index = ConsumerIndex()
    consumers = [_Consumer(f"c{i}", _Cfg(filter_subject=flt)) for i in range(n)]
    for consumer in consumers:
        index.add(consumer)
    assert index.copied == 0
    assert list(index.match("a.b")) == consumers
    assert list(index.match("a.b")) == consumers
    assert index.copied == n
    index.remove(consumers[0])
    index.add(_Consumer("late", _Cfg(filter_subject=flt)))
    index.remove(consumers[1])
    assert index.copied == n
    assert [c.name for c in index.match("a.b")] == [c.name for c in consumers[2:]] + ["late"]
    assert index.copied == 2 * n - 1
