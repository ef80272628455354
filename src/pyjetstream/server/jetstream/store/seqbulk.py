"""Removing many messages of the index at once — a subject purge's (nats-server ``PurgeEx``): the
messages to go found by walking the subjects' links, then each page they lie in emptied of them in
one pass (a run of neighbours with array slices), and each subject's first and last, the stream's
first, fixed once — instead of one `SeqIndex.remove` per message, each fixing them again.

Kept apart from `seqindex` (the page layout) and `seqquery` (the queries): functions over a
`SeqIndex`, which they change only through its pages and its own helpers.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections import Counter
from collections.abc import Collection

from ._index import zero_fill
from .pages import Page
from .seqindex import DELS_MAX, SeqIndex

__all__ = ["locs_of", "oldest_of", "remove_seqs"]


def oldest_of(index: SeqIndex, sids: Collection[int], n: int, limit: int) -> list[int]:
    """The oldest ``n`` messages at or below ``limit`` on the subjects ``sids``, ascending: each
    subject's links, merged oldest first (one step per message)."""
    first = index.subjects.first
    heads = [(first[sid], sid) for sid in sids]
    heapq.heapify(heads)
    out: list[int] = []
    subj_next = index._subj_next
    while heads and len(out) < n:
        seq, sid = heads[0]
        if seq > limit:
            break
        out.append(seq)
        nseq = subj_next(seq, sid)
        if nseq:
            heapq.heapreplace(heads, (nseq, sid))
        else:
            heapq.heappop(heads)
    index.steps += len(out) + len(sids)
    return out


def locs_of(index: SeqIndex, seqs: list[int]) -> list[int]:
    """The backend locators of the live messages at ``seqs`` (ascending)."""
    out: list[int] = []
    for p, a, b in _by_page(index, seqs):
        f, locs = p.first, p.locs
        out.extend(locs[seq - f] for seq in seqs[a:b])
    return out


def _by_page(index: SeqIndex, seqs: list[int]) -> list[tuple[Page, int, int]]:
    """``(page, a, b)``: ``seqs[a:b]`` lie in that page (loaded)."""
    out: list[tuple[Page, int, int]] = []
    a, n = 0, len(seqs)
    while a < n:
        p = index.page(seqs[a])
        assert p is not None, "a live message's page"
        b = bisect_left(seqs, p.first + p.n, a)
        out.append((p, a, b))
        a = b
    return out


def remove_seqs(index: SeqIndex, seqs: list[int]) -> None:
    """Remove the live messages at ``seqs`` (ascending) at once (see the module docstring)."""
    lost: Counter[int] = Counter()
    nbytes = 0
    emptied: list[Page] = []
    for p, a, b in _by_page(index, seqs):
        nbytes += _cut(index, p, seqs[a:b], lost)
        if not p.msgs and p is not index.tail:
            emptied.append(p)
    for p in emptied:
        index._drop_page(p)
    index.msgs -= len(seqs)
    index.bytes -= nbytes
    table = index.subjects
    for sid, m in index._subjects_lose(lost):
        if not m:
            continue
        if not index.live(table.first[sid]):
            table.first[sid] = index._subj_next(table.first[sid], sid)
        if not index.live(table.last[sid]):
            table.last[sid] = index._subj_prev(table.last[sid], sid)
    if seqs[0] == index.first_seq:
        index._advance_first_from(seqs[0] + 1)


def _cut(index: SeqIndex, p: Page, seqs: list[int], lost: Counter[int]) -> int:
    """Empty the slots of ``seqs`` (all in page ``p``, live): their subjects counted into
    ``lost``; returns their bytes."""
    f = p.first
    sids, sizes, locs = p.sids, p.sizes, p.locs
    counts: Counter[int] = Counter()
    c = len(seqs)
    if seqs[-1] - seqs[0] + 1 == c:  # neighbours: slices
        a, z = seqs[0] - f, seqs[-1] - f + 1
        counts.update(sids[a:z])
        b = sum(sizes[a:z])
        zero_fill(sids, a, z)
        zero_fill(sizes, a, z)
        zero_fill(locs, a, z)
    else:
        b = 0
        for seq in seqs:
            k = seq - f
            counts[sids[k]] += 1
            b += sizes[k]
            sids[k] = sizes[k] = locs[k] = 0
    if p.image:
        if len(p.dels) + c > DELS_MAX:
            p.image = False
            p.dels = []
        else:
            p.dels.extend(seqs)
    for sid, m in counts.items():
        p.drop(sid, m)
        lost[sid] += m
    p.msgs -= c
    p.bytes -= b
    return b
