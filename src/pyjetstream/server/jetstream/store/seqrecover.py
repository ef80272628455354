"""A block's slots as the index and a backend exchange them: `BlockSlots` (what a backend hands
over from a scan of a block or the index saved beside it, and what `block_slots` gives back
for saving — nats-server's per-block index and ``fss``). Recovery itself is ``seqstate.py``'s.
"""

from __future__ import annotations

from array import array
from collections import Counter
from itertools import compress
from typing import TYPE_CHECKING

from ._index import find_value, rfind_value, zeros
from .seqquery import _PER_SUBJECT_MAX

if TYPE_CHECKING:
    from .seqindex import SeqIndex

__all__ = ["BlockSlots", "append_slots", "block_slots"]

#: Whether `append_slots` puts a tail's runs of messages into the index with one
#: `SeqIndex.append_many` each (`_append_runs`) rather than one `SeqIndex.append` a message
#: (~2-2.5 µs: a crash restart's replay of 10,000 records after the state cost ~25 ms): the switch
#: of that fast path (tests/store/test_scan_runs.py proves both recover the same store).
BULK_TAIL = True


class BlockSlots:
    """The slots of one block's sequences, as a backend hands them to `SeqIndex.rebuild`
    (from a scan of the block, or from the index saved beside it; nats-server's per-block
    index and ``fss``).

    Slot k is sequence ``first + k``: ``sids`` (a subject id of the block's own numbering, 0 =
    no message), ``tss``, ``sizes``, ``locs`` as in `SeqIndex`, and ``nxt`` links that
    stay inside the block (0 at each subject's last message in it). Per subject, in parallel:
    ``ids`` (its id in ``sids``), ``names``, ``s_msgs``, ``s_first``, ``s_last`` (live
    messages, first and last live sequence). ``deletes`` are ``(seq, num, ts)`` of tombstones
    for earlier blocks' sequences; ``floor``/``floor_ts`` the newest floor the block holds.
    ``image``: the slots were read from the block's saved index (which can be read again).
    """

    __slots__ = (
        "deletes",
        "first",
        "floor",
        "floor_ts",
        "ids",
        "image",
        "locs",
        "names",
        "nxt",
        "s_first",
        "s_last",
        "s_msgs",
        "sids",
        "sizes",
        "tss",
    )

    def __init__(self, first: int) -> None:
        self.first = first
        self.sids: array[int] = array("I")
        self.tss: array[int] = array("q")
        self.sizes: array[int] = array("I")
        self.locs: array[int] = array("Q")
        self.nxt: array[int] = array("Q")
        self.ids: array[int] = array("I")
        self.names: list[str] = []
        self.s_msgs: array[int] = array("Q")
        self.s_first: array[int] = array("Q")
        self.s_last: array[int] = array("Q")
        self.deletes: list[tuple[int, int, int]] = []
        self.floor = 0
        self.floor_ts = 0
        self.image = False

    def summarize(self) -> None:
        """Fill the per-subject columns from ``sids`` (``ids`` and ``names`` already list the
        block's subjects, as a scan finds them)."""
        pos = {sid: k for k, sid in enumerate(self.ids)}
        n = len(self.ids)
        self.s_msgs = zeros("Q", n)
        self.s_first = zeros("Q", n)
        self.s_last = zeros("Q", n)
        first = self.first
        for sid, c, i, j in _subject_spans(self.sids):
            k = pos[sid]
            self.s_msgs[k] = c
            self.s_first[k] = first + i
            self.s_last[k] = first + j


def _subject_spans(sids: array[int]) -> list[tuple[int, int, int, int]]:
    """``(sid, messages, first slot, last slot)`` of every subject id in ``sids`` (0 = none)."""
    return list(zip(*_subject_columns(sids), strict=True))


def _subject_columns(sids: array[int]) -> tuple[list[int], list[int], list[int], list[int]]:
    """`_subject_spans` as four columns — ids, messages, first and last slot —, with C-speed
    passes over the live slots only (``compress``, a Counter, dicts whose last write per key
    wins): a block rewritten or sealed with a few live messages of many subjects costs a pass
    over its slots in C, not a Python step per slot or per subject. When each subject is there
    once (a KV bucket's, a ``max_msgs_per_subject: 1`` stream's block) the live slots are the
    columns themselves."""
    pos = list(compress(range(len(sids)), sids))
    live = list(compress(sids, sids))
    if len(set(live)) == len(live):
        return live, [1] * len(live), pos, pos
    counts = Counter(live)
    ids = list(counts)
    last_at = dict(zip(live, pos, strict=True))
    first_at = dict(zip(reversed(live), reversed(pos), strict=True))
    return ids, list(counts.values()), list(map(first_at.__getitem__, ids)), list(map(last_at.__getitem__, ids))


def append_slots(index: SeqIndex, b: BlockSlots) -> None:
    """Slots read after the index was recovered — the active block's records the stream state did
    not see (``BlockIndexes.replay_tail``), from ``last_seq + 1`` on — put into the index as the
    writes that made them did: each message appended (`SeqIndex.append`), a slot without one
    skipped, then the tombstones of earlier sequences and the newest floor applied as
    ``seqstate.recover`` applies a block's read again. One step a record read, none a message
    the state vouched for."""
    names = dict(zip(b.ids, b.names, strict=True))
    if BULK_TAIL:
        _append_runs(index, b, names)
    else:
        seq = b.first
        for sid, ts, size, loc in zip(b.sids, b.tss, b.sizes, b.locs, strict=True):
            if sid:
                index.append(seq, names[sid], ts, size, loc)
            else:
                index.skip(seq, 1, ts)
            seq += 1
    for first, num, _ts in sorted(b.deletes):  # (in order: each page loaded once, `seqstate`)
        for dseq in range(first, first + num):
            page = index.at(dseq)
            if page is not None:
                index.remove(page, dseq - page.first)
    floor = b.floor
    if floor > index.last_seq + 1:  # (a floor past the last message: the sequences below are used)
        index.skip(index.last_seq + 1, floor - 1 - index.last_seq, b.floor_ts)
    if floor > index.first_seq and index.msgs:
        index.remove_prefix(floor)


def _append_runs(index: SeqIndex, b: BlockSlots, names: dict[int, str]) -> None:
    """`append_slots`' messages and skips in order: each run of slots holding a message by one
    `SeqIndex.append_many` (a publisher's run's append: array extends, one loop over the subjects'
    chains), a slot without one skipped alone (its own time)."""
    sids, tss = b.sids, b.tss
    n = len(sids)
    k = 0
    while k < n:
        if not sids[k]:
            index.skip(b.first + k, 1, tss[k])
            k += 1
            continue
        j = find_value(sids, 0, k, n)
        j = n if j < 0 else j
        subjects = list(map(names.__getitem__, sids[k:j]))
        index.append_many(b.first + k, subjects, tss[k:j], b.sizes[k:j], b.locs[k:j])
        k = j


def block_slots(index: SeqIndex, first: int, end: int) -> BlockSlots:
    """The slots of sequences [first, end) as a `BlockSlots` (what the file backend
    saves as a block's index). Links past the block are cut: a later load links the
    blocks' subjects itself, and a sequence past the block may be taken again after a
    truncate."""
    b = BlockSlots(first)
    n = end - first
    if n <= 0:
        return b
    i = index._pi(first)
    p = index.pages[i] if i < len(index.pages) and index.pages[i].first < end else None
    if p is None:
        a = z = first
        seg = array("I")
    else:
        index._use(p)
        a, z = max(p.first, first), min(p.first + p.n, end)
        lo, hi = a - p.first, z - p.first
        seg = p.sids[lo:hi]
        b.sids, b.sizes, b.locs, b.nxt, b.tss = (
            seg,
            p.sizes[lo:hi],
            p.locs[lo:hi],
            p.nxt[lo:hi],
            p.tss[lo:hi],
        )
        # A link never leaves its page (`SeqIndex.append`): only a page reaching past ``end`` can
        # hold one past it — not a sealed block's, its page ending where the block does (a walk
        # of its ~140,000 links in C, ~15 ms of every index write a rewrite or a seal made).
        if end <= index.last_seq and p.first + p.n > end and b.nxt and max(b.nxt) >= end:
            b.nxt = array("Q", [x if x < end else 0 for x in b.nxt])
    ka, kz = a - first, z - first
    if ka or kz < n:
        lead, tail = ka, n - kz
        lead_ts = b.tss[0] if kz > ka else index.last_ts
        b.sids = zeros("I", lead) + b.sids + zeros("I", tail)
        b.sizes = zeros("I", lead) + b.sizes + zeros("I", tail)
        b.locs = zeros("Q", lead) + b.locs + zeros("Q", tail)
        b.nxt = zeros("Q", lead) + b.nxt + zeros("Q", tail)
        b.tss = array("q", [lead_ts]) * lead + b.tss + array("q", [index.last_ts]) * tail
    _block_subjects(index, b, seg, a)
    return b


def _block_subjects(index: SeqIndex, b: BlockSlots, seg: array[int], off: int) -> None:
    """Fill a block's per-subject columns from its live slots ``seg`` (sequence ``off`` on)."""
    table = index.subjects
    if len(table) <= _PER_SUBJECT_MAX and len(table.names) <= 256:
        # Few subjects, all ids < 256: a 4-byte little-endian id can then only match at an
        # item boundary, so bytes.count/find (C) count and locate each subject exactly.
        raw = seg.tobytes()
        ids, msgs, firsts, lasts = [], [], [], []
        for sid in table.ids.values():
            c = raw.count(sid.to_bytes(4, "little"))
            if c:
                ids.append(sid)
                msgs.append(c)
                firsts.append(find_value(seg, sid, 0, len(seg)))
                lasts.append(rfind_value(seg, sid, 0, len(seg)))
    else:
        ids, msgs, firsts, lasts = _subject_columns(seg)
    names = list(map(table.names.__getitem__, ids))
    assert None not in names
    b.ids.fromlist(ids)
    b.names.extend(names)  # type: ignore[arg-type]
    b.s_msgs.fromlist(msgs)
    b.s_first.fromlist(list(map(off.__add__, firsts)))
    if lasts is firsts:  # (each subject once: its first is its last)
        b.s_last.extend(b.s_first)
    else:
        b.s_last.fromlist(list(map(off.__add__, lasts)))
