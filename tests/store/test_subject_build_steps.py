"""A publish on a new subject (issue 24, dimension 1: bench_scale's "build" row over 100k
subjects): the subject tree is built when a wildcard lookup first asks, not per new subject, and
kept up to date from then on — counted in ``SubjectTable.tree_inserts``, no timing; an insert
under a prefix the tree has seen goes straight to its dict (``SubjectTree.walks``)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyjetstream.protocol.subjects import subject_matches
from pyjetstream.server.jetstream.store import MemoryStore, StoreConfig, subject_tree
from pyjetstream.server.jetstream.store._index import SubjectTable
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.store.subject_tree import SubjectTree


def _table(store: IndexedStore) -> SubjectTable:
    return store._index.subjects


def _publish(store: MemoryStore, names: list[str]) -> None:
    store.store_run(names, [b""] * len(names), [b"x"] * len(names))


def test_new_subjects_insert_nothing_until_a_wildcard_asks() -> None:
    store = MemoryStore(StoreConfig())
    _publish(store, [f"k.{i % 10}.{i}" for i in range(5_000)])
    store.store_msg("k.1.single", b"", b"x")
    table = _table(store)
    assert table.tree_inserts == 0 and not table.tree_live
    assert store.subjects_state("k.3.*").keys() == {f"k.3.{i}" for i in range(3, 5_000, 10)}
    assert table.tree_inserts == 5_001  # one build: each live subject once
    _publish(store, [f"k.{i % 10}.{i}" for i in range(5_000, 6_000)])
    assert table.tree_inserts == 6_001  # built: each new subject is inserted as it comes
    assert len(store.subjects_state("k.3.*")) == 600


def test_a_subject_gone_before_the_build_is_not_in_the_tree() -> None:
    store = MemoryStore(StoreConfig(max_msgs_per_subject=1))
    _publish(store, ["a.1", "a.2", "b.1"])
    store.purge_ex("a.1")  # released before any wildcard lookup
    _publish(store, ["a.3", "a.2"])
    assert store.subjects_state("a.*").keys() == {"a.2", "a.3"}
    table = _table(store)
    assert table.tree_inserts == 3
    store.purge_ex("a.3")  # released after the build: taken out of the tree
    _publish(store, ["a.4"])
    assert {k: v.msgs for k, v in store.subjects_state("a.>").items()} == {"a.2": 1, "a.4": 1}


def test_new_subject_entry_starts_at_its_message() -> None:
    store = MemoryStore(StoreConfig())
    _publish(store, ["x.1", "x.2", "x.1", "x.3"])
    state = store.subjects_state(">")
    assert {k: (v.msgs, v.first, v.last) for k, v in state.items()} == {
        "x.1": (2, 1, 3),
        "x.2": (1, 2, 2),
        "x.3": (1, 4, 4),
    }


def test_inserts_under_a_known_prefix_do_not_walk() -> None:
    tree = SubjectTree()
    for i in range(3_000):
        tree.insert(f"k.{i % 10}.{i}", i + 1)
    assert tree.walks == 10  # one walk per prefix, whatever the number of subjects
    assert sorted(tree.match("k.3.*")) == [i + 1 for i in range(3, 3_000, 10)]


def test_tree_against_a_set_under_inserts_and_removes() -> None:
    """Random inserts and removes (prefixes pruned and made again, subjects at inner nodes):
    every filter's match is what a set of the live subjects says."""
    rng = random.Random(7)
    tokens = ["a", "b", "c"]
    names = sorted({".".join(rng.choice(tokens) for _ in range(rng.randint(1, 4))) for _ in range(200)})
    tree, live = SubjectTree(), dict[str, int]()
    filters = ["a.*", "*.b", "a.>", "*.*.c", "b.a.c.a", "a", ">"]
    for step in range(3_000):
        name = rng.choice(names)
        if name in live:
            tree.remove(name)
            del live[name]
        else:
            live[name] = step + 1
            tree.insert(name, step + 1)
        if step % 50 == 0:
            for f in filters:
                want = sorted(sid for n, sid in live.items() if subject_matches(f, n))
                assert sorted(tree.match(f)) == want, (step, f)


def _shape(d: dict[str, Any]) -> Any:
    """A tree's dicts as plain values (entries: an id, or the node's id and what lies below)."""
    return {tok: e if isinstance(e, int) else (e.sid, _shape(e.kids)) for tok, e in d.items()}


@pytest.mark.parametrize("head_remove", [True, False])
def test_removes_under_a_known_prefix_leave_the_tree_a_walk_leaves(
    head_remove: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``subject_tree.HEAD_REMOVE``: a remove under a prefix `insert` remembers (nothing below the
    subject, others beside it) deletes its entry there without a walk. The same random inserts and
    removes (subjects at inner nodes, prefixes pruned and made again) leave the same tree and the
    same matches on and off, and on, a remove beside others under a known prefix walks nothing."""
    rng = random.Random(11)
    tokens = ["a", "b", "c"]
    names = sorted({".".join(rng.choice(tokens) for _ in range(rng.randint(1, 4))) for _ in range(200)})
    ops = [rng.choice(names) for _ in range(4_000)]

    def replay(on: bool) -> tuple[Any, list[list[int]]]:
        monkeypatch.setattr(subject_tree, "HEAD_REMOVE", on)
        tree, live = SubjectTree(), set[str]()
        for step, name in enumerate(ops):
            if name in live:
                tree.remove(name)
                live.discard(name)
            else:
                tree.insert(name, step + 1)
                live.add(name)
        return _shape(tree._root), [sorted(tree.match(f)) for f in ("a.*", "*.b", "a.>", "*.*.c", ">")]

    assert replay(head_remove) == replay(not head_remove)
    monkeypatch.setattr(subject_tree, "HEAD_REMOVE", head_remove)
    tree = SubjectTree()
    for i in range(2_000):
        tree.insert(f"k.{i % 10}.{i}", i + 1)
    walks = tree.walks
    for i in range(1_000):
        tree.remove(f"k.{i % 10}.{i}")
    assert sorted(tree.match("k.3.*")) == [i + 1 for i in range(1_003, 2_000, 10)]
    assert tree.walks - walks == (0 if head_remove else 1_000)
