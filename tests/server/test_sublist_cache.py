"""The sublist's match cache at scale (issue 24, dimension 7): a wildcard subscription coming or
going looks only at the cached subjects that share its literal first tokens, so a client's
``_INBOX.<id>.*`` (every client has one) or a consumer's ``$JS.ACK.<s>.<c>.>`` neither scans nor
empties a cache of thousands of subjects; and the cache stays exact under any mix of inserts,
removals and matches."""

from __future__ import annotations

import gc
import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from pyjetstream.server.sublist import Sublist
from pyjetstream.server.subscription import Subscription


def _cached(n: int) -> Sublist:
    sl = Sublist()
    for i in range(n):
        sl.insert(Subscription(f"orders.{i}", f"o{i}"))
        sl.match(f"orders.{i}")
        sl.match(f"$JS.API.CONSUMER.CREATE.S.c{i}")  # (API requests are cached too)
    for i in range(10):
        sl.insert(Subscription(f"t.{i}.z", f"t{i}"))
        sl.match(f"t.{i}.z")
    return sl


def _churn_steps(n: int) -> tuple[int, int, int]:
    sl = _cached(n)
    before = sl.scanned
    for i in range(50):  # clients coming and going
        inbox = Subscription(f"_INBOX.client{i}.*", f"i{i}")
        sl.insert(inbox)
        sl.remove(inbox)
    for i in range(50):  # consumers coming and going
        acks = Subscription(f"$JS.ACK.S.c{i}.>", f"a{i}")
        sl.insert(acks)
        sl.remove(acks)
    inbox_steps = sl.scanned - before
    before = sl.scanned
    wild = Subscription("t.*.z", "w")
    sl.insert(wild)
    sl.remove(wild)
    return inbox_steps, sl.scanned - before, len(sl.cache)


def test_a_wildcard_change_looks_only_at_its_first_token() -> None:
    small = _churn_steps(300)
    large = _churn_steps(3000)
    assert small[:2] == large[:2] == (0, 10), (small, large)  # t.*.z: the ten t.<i>.z (dropped)
    # Nothing else dropped: 300 orders.<i> and 300 API subjects; the large one past evictions.
    assert small[2] == 600 and large[2] > 2000, (small, large)


_TOKENS = st.sampled_from(["a", "b", "c"])
_FIRST = st.sampled_from(["a", "b", "*", ">", "_INBOX"])


@st.composite
def _filters(draw: st.DrawFn) -> str:
    tokens = [draw(_FIRST)]
    if tokens[0] != ">":
        tokens += draw(st.lists(st.sampled_from(["a", "b", "*"]), max_size=3))
        if draw(st.booleans()):
            tokens.append(">")
    return ".".join(tokens)


_subjects = st.lists(_TOKENS, min_size=1, max_size=4).map(".".join)


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


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(st.tuples(st.booleans(), _filters()), min_size=1, max_size=20),
    subjects=st.lists(_subjects, min_size=1, max_size=10),
)
def test_cache_stays_exact_under_inserts_and_removals(ops: list[tuple[bool, str]], subjects: list[str]) -> None:
    sl = Sublist()
    live: list[Subscription] = []
    for n, (insert, subject) in enumerate(ops):
        if insert or not live:
            sub = Subscription(subject, str(n))
            sl.insert(sub)
            live.append(sub)
        else:
            sl.remove(live.pop(n % len(live)))
        for s in subjects:  # (from the cache from the second time on)
            got = sorted(x.sid for x in sl.match(s)[0])
            assert got == sorted(x.sid for x in live if _brute(x.subject, s)), (s, [x.subject for x in live])


def _kinds(n: int) -> Sublist:
    """bench_scale's ``conns`` subscriptions: literal, ``*``, ``>`` and queue, each matching only ``s.<i>.x``."""
    sl = Sublist()
    for i in range(n):
        kind = i % 4
        subject = (f"s.{i}.x", f"s.{i}.*", f"s.{i}.>", f"s.{i}.x")[kind]
        sl.insert(Subscription(subject, str(i), "q" if kind == 3 else ""))
    return sl


def _left_per_miss(n: int) -> tuple[int, int, int]:
    """Publish over all ``n`` subjects twice (``n`` > the cache: every lookup misses); what the second
    pass leaves for CPython's cyclic collector (objects it tracks, each walked by every full
    collection: the cost of a miss grew with the subscriptions through them) and results it builds."""
    sl = _kinds(n)
    subjects = [f"s.{i}.x" for i in range(n)]
    for subject in subjects:
        sl.match(subject)
    made, misses = sl.results_made, sl.cache_misses
    gc.collect()
    before = len(gc.get_objects())
    for subject in subjects:
        assert len(sl.match(subject)[0]) + len(sl.match(subject)[1]) == 1
    gc.collect()
    left = len(gc.get_objects()) - before
    assert sl.cache_misses - misses == n  # (the second lookup of each is a hit)
    return left, sl.results_made - made, len(sl.cache)


def test_a_cache_miss_leaves_nothing_for_the_collector() -> None:
    """A subject whose receivers are one trie node's shares that node's result (made once), and the
    cache's first-token buckets are dicts of strings (untracked), so a miss keeps no new object."""
    small, large = _left_per_miss(5_000), _left_per_miss(50_000)
    assert small[1] == large[1] == 0, (small, large)  # no result built again
    assert abs(small[0]) < 50 and abs(large[0]) < 50, (small, large)  # 5,000 / 50,000 misses
    assert gc.is_tracked({"s.1.x": None}) is False  # (what the buckets rely on)


def _bookkeeping_per_miss(n: int, change_every: int) -> float:
    """Cached subjects indexed by their first tokens per miss, over all ``n`` subjects twice (every
    lookup a miss past the cache), a wildcard subscription coming and going every ``change_every``
    misses (0: never)."""
    sl = _kinds(n)
    before, misses = sl.indexed, sl.cache_misses
    for k in range(2 * n):
        sl.match(f"s.{k % n}.x")
        if change_every and k % change_every == 0:
            wild = Subscription(f"s.{k}.*", "w")
            sl.insert(wild)
            sl.remove(wild)
    return (sl.indexed - before) / (sl.cache_misses - misses)


def test_a_miss_costs_no_bookkeeping_that_grows() -> None:
    """A publisher cycling over more subjects than the cache holds: a miss indexes nothing while no
    subscription changes (the first-token index is built by the wildcard change that needs it and
    dropped when the cache is cut), and at most ~2 cached subjects per miss when they do (each
    cached subject is indexed at most twice) — the same at 10,000 and 100,000 subscriptions."""
    assert _bookkeeping_per_miss(10_000, 0) == _bookkeeping_per_miss(100_000, 0) == 0
    small, large = _bookkeeping_per_miss(10_000, 500), _bookkeeping_per_miss(100_000, 500)
    assert small <= 2.5 and large <= 2.5, (small, large)


def _kept_per_subscription(n: int) -> tuple[float, float, int]:
    """Memory blocks and collector-tracked objects an insert keeps per subscription (the bench's
    mixed kinds: ``s.<i>.x``, ``s.<i>.*``, ``s.<i>.>``, ``s.<i>.x`` in a queue group), and the
    subscriptions the server's prefix indexes gave their overlap test."""
    sl = Sublist()
    sl.index_prefix("_INBOX.", 1, "*")
    sl.index_prefix("$JS.ACK.", 2, ">")
    made = [
        (("s.{}.x", "s.{}.*", "s.{}.>", "s.{}.x")[i % 4].format(i), str(i), "q" if i % 4 == 3 else "")
        for i in range(n)
    ]
    keep: list[Subscription | None] = [None] * n
    gc.collect()
    blocks, tracked = sys.getallocatedblocks(), len(gc.get_objects())
    for i, (subject, sid, queue) in enumerate(made):
        keep[i] = sub = Subscription(subject, sid, queue)
        sl.insert(sub)
    gc.collect()
    kept = (sys.getallocatedblocks() - blocks) / n, (len(gc.get_objects()) - tracked) / n
    return *kept, sum(index.tested for index in sl._indexes)


def test_a_subscription_keeps_few_objects() -> None:
    """What an insert keeps is what every collection of CPython's cyclic collector visits while the
    subscription lives (with 100,000 of them most of a SUB's cost was the collector): the
    subscription and its sid's bytes, its trie nodes (sharing one empty child table, queue table
    and subscription list until they hold one) and the lists and tables that hold it — no line
    starts made before a first delivery, no empty table of its own. And the prefix indexes'
    overlap test is given only the subscriptions whose first token could match their family."""
    small, large = _kept_per_subscription(1_000), _kept_per_subscription(10_000)
    for blocks, tracked, tested in (small, large):
        assert blocks <= 10 and tracked <= 5, (small, large)  # (13.7 blocks before)
        assert tested == 0, (small, large)
    assert abs(small[0] - large[0]) < 0.5 and abs(small[1] - large[1]) < 0.1, (small, large)
