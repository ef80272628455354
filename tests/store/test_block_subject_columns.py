"""A block's per-subject columns (``seqrecover._subject_columns``: what a sealed or rewritten block's
index saves, and what recovery summarises) against a plain count of the slots — subjects once each
(a KV bucket's, a ``max_msgs_per_subject: 1`` stream's block) and many times, dead slots between."""

from __future__ import annotations

import random
from array import array

import pytest

from pyjetstream.server.jetstream.store.seqrecover import _subject_columns, _subject_spans


def _reference(sids: array[int]) -> dict[int, tuple[int, int, int]]:
    out: dict[int, tuple[int, int, int]] = {}
    for k, sid in enumerate(sids):
        if sid:
            c, first, _ = out.get(sid, (0, k, k))
            out[sid] = (c + 1, first, k)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_columns_are_the_slots_counted(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([0, 1, 50, 3_000])
    unique = seed % 2 == 0
    ids = rng.sample(range(1, 10 * n + 2), n) if unique else [rng.randrange(1, 40) for _ in range(n)]
    sids = array("I", [sid if rng.random() < 0.6 else 0 for sid in ids])
    ids_col, msgs, firsts, lasts = _subject_columns(sids)
    want = _reference(sids)
    assert list(ids_col) == list(want)  # (in the order of their first slot)
    assert {sid: (c, f, la) for sid, c, f, la in zip(ids_col, msgs, firsts, lasts, strict=True)} == want
    assert _subject_spans(sids) == [(sid, *want[sid]) for sid in want]
