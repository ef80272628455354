"""Recovery of the sequence index: from the blocks a backend hands over (`BlockSlots`: a
scan of a block, or the index saved beside it), from the snapshot a clean stop leaves, and the
slots of a block to save (nats-server's per-block index, ``rebuildState``, ``index.db``).
Functions over a `SeqIndex` (which calls them from its methods of the same names).
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._index import SubjectTable, find_value, rfind_value, zeros
from .pages import Page
from .seqquery import _PER_SUBJECT_MAX

if TYPE_CHECKING:
    from .seqindex import SeqIndex

__all__ = ["BlockSlots", "block_slots", "rebuild", "restore", "snapshot"]


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
    """``(sid, messages, first slot, last slot)`` of every subject id in ``sids`` (0 = none),
    with C-speed passes only (a Counter, and dicts whose last write per key wins)."""
    counts = Counter(sids)
    counts.pop(0, None)
    if not counts:
        return []
    n = len(sids)
    last_at = dict(zip(sids, range(n), strict=True))
    first_at = dict(zip(reversed(sids), range(n - 1, -1, -1), strict=True))
    return [(sid, c, first_at[sid], last_at[sid]) for sid, c in counts.items()]


def rebuild(index: SeqIndex, blocks: Iterable[BlockSlots]) -> None:
    """Build the index from a backend's blocks, in sequence order (recovery): each block's
    slots become a page as they are (no per-message work here, only per subject and block).
    A block's subject ids are adopted as they are when they do not clash with another
    block's (the usual case: they were the running index's ids when the block index was
    written); a clashing block's ids are renumbered. Deletes of earlier blocks' sequences
    and the newest floor are applied last. A store nothing was ever written to reports
    first_seq 0, as nats-server does. Pages beyond the cache are evicted as they come."""
    names: list[str | None] = [None]
    ids: dict[str, int] = {}
    spans: dict[int, list[int]] = {}  # sid -> [msgs, first, last]
    max_seq = max_ts = hdr_last = floor = floor_ts = 0
    deletes: list[tuple[int, int, int]] = []
    index._rebuilding = True
    for b in blocks:
        page = _rebuild_page(index, b, names, ids, spans)
        if page.n:
            max_seq = page.first + page.n - 1
            max_ts = page.tss[-1]
        hdr_last = max(hdr_last, b.first - 1)
        if b.floor > floor:
            floor, floor_ts = b.floor, b.floor_ts
        deletes += b.deletes
    index._rebuilding = False
    last_seq = max(max_seq, hdr_last, floor - 1)
    index.last_seq = last_seq
    index.last_ts = max_ts if max_seq >= max(hdr_last, floor - 1) else floor_ts
    _build_subjects(index, names, spans)
    index.msgs = sum(p.msgs for p in index.pages)
    index.bytes = sum(p.bytes for p in index.pages)
    _rebuild_tail(index, max(max_ts, floor_ts))
    j = index._next_live(0) if index.msgs else 0
    if not j:
        index.first_seq = 0 if last_seq == 0 and floor == 0 else last_seq + 1
        index.first_ts = 0
        index.clear_slots()
        return
    index.first_seq = j
    index.first_ts = index.ts_of(j)
    for seq, num, _ts in deletes:
        for dseq in range(seq, seq + num):
            p = index.at(dseq)
            if p is not None:
                index.remove(p, dseq - p.first)
    if floor > index.first_seq and index.msgs:
        index.remove_prefix(floor)  # everything below the floor is gone


def _rebuild_page(
    index: SeqIndex, b: BlockSlots, names: list[str | None], ids: dict[str, int], spans: dict[int, list[int]]
) -> Page:
    """One block's slots as a sealed page (its subject ids adopted or renumbered)."""
    remap: dict[int, int] = {}
    counts: dict[int, int] = {}
    for k, own in enumerate(b.ids):
        c = b.s_msgs[k]
        if not c:
            continue
        name = b.names[k]
        g = ids.get(name)
        if g is None:
            if own < len(names) and names[own] is not None:
                g = len(names)  # the id is another subject's here: a new one
                names.append(name)
            else:
                if own >= len(names):
                    names.extend([None] * (own + 1 - len(names)))
                g = own
                names[g] = name
            ids[name] = g
        if g != own:
            remap[own] = g
        counts[g] = c
        span = spans.get(g)
        if span is None:
            spans[g] = [c, b.s_first[k], b.s_last[k]]
        else:
            span[0] += c
            span[2] = b.s_last[k]
    sids = b.sids
    if remap:
        get = remap.get
        sids = array("I", [get(x, x) for x in sids])
    p = Page(b.first)
    p.set_arrays(sids, b.tss, b.sizes, b.locs, b.nxt)
    p.n = len(sids)
    p.msgs = sum(counts.values())
    p.bytes = sum(b.sizes)
    p.set_counts(counts)
    p.seal()
    p.image = b.image and not remap
    if p.n:
        p.ts_last = b.tss[-1]
    # Every block's page, an empty one too: the last block's is the tail, whatever it holds
    # (empty ones before it are dropped once the last is known: `_rebuild_tail`).
    index.pages.append(p)
    index.firsts.append(p.first)
    index._cache_add(p)
    return p


def _rebuild_tail(index: SeqIndex, ts: int) -> None:
    """The last page takes appends: it reaches last_seq (dead slots to there)."""
    pages = index.pages
    if not pages:
        return
    if not all(p.n for p in pages[:-1]):
        pages[:-1] = [p for p in pages[:-1] if p.n]  # empty blocks before the last hold nothing
        index.firsts = [p.first for p in pages]
    p = pages[-1]
    gap = index.last_seq + 1 - (p.first + p.n)
    index.reopen()
    if gap > 0 and index.tail is not None:
        index.tail.extend_dead(gap, ts)


def _build_subjects(index: SeqIndex, names: list[str | None], spans: dict[int, list[int]]) -> None:
    n = len(names)
    msgs = zeros("Q", n)
    first = zeros("Q", n)
    last = zeros("Q", n)
    for sid, (m, f, la) in spans.items():
        msgs[sid] = m
        first[sid] = f
        last[sid] = la
    t = SubjectTable()
    t.adopt(names, msgs, first, last)
    index.subjects = t


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
        if end <= index.last_seq and b.nxt and max(b.nxt) >= end:
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
        spans = []
        for sid in table.ids.values():
            c = raw.count(sid.to_bytes(4, "little"))
            if c:
                spans.append((sid, c, find_value(seg, sid, 0, len(seg)), rfind_value(seg, sid, 0, len(seg))))
    else:
        spans = _subject_spans(seg)
    for sid, c, i, j in spans:
        name = table.names[sid]
        assert name is not None
        b.ids.append(sid)
        b.names.append(name)
        b.s_msgs.append(c)
        b.s_first.append(off + i)
        b.s_last.append(off + j)


_SCALARS = ("msgs", "bytes", "first_seq", "first_ts", "last_seq", "last_ts")
_ARRAYS = ("sids", "tss", "sizes", "locs", "nxt")


def snapshot(index: SeqIndex) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]]:
    """``(scalars, arrays, subject names)`` for `restore` (``_snapshot`` encodes them):
    every page's slots, one after the other, and where each page starts."""
    for p in index.pages:
        index._use(p)
    t = index.subjects
    scalars: dict[str, Any] = {k: getattr(index, k) for k in _SCALARS}
    scalars["pages"] = [[p.first, p.n] for p in index.pages]
    scalars["open"] = index.tail is not None
    arrays: dict[str, array[int]] = {}
    for k in _ARRAYS:
        col = array("q" if k == "tss" else "I" if k in ("sids", "sizes") else "Q")
        for p in index.pages:
            col.extend(getattr(p, k))
        arrays[k] = col
    arrays.update(s_msgs=t.msgs, s_first=t.first, s_last=t.last)
    return scalars, arrays, t.names


def restore(
    index: SeqIndex, scalars: dict[str, Any], arrays: dict[str, array[int]], names: list[str | None]
) -> bool:
    """Load what `snapshot` gave; False (and nothing changed) when it does not fit."""
    n = len(arrays["sids"])
    bounds = [(int(f), int(k)) for f, k in scalars["pages"]]
    if any(len(arrays[k]) != n for k in _ARRAYS) or sum(k for _, k in bounds) != n:
        return False
    t = SubjectTable()
    t.adopt(names, arrays["s_msgs"], arrays["s_first"], arrays["s_last"])
    pages: list[Page] = []
    at = 0
    for first, k in bounds:
        p = Page(first)
        p.set_arrays(*(arrays[c][at : at + k] for c in _ARRAYS))
        at += k
        p.n = k
        p.bytes = sum(p.sizes)
        counts = Counter(p.sids)
        counts.pop(0, None)
        p.msgs = sum(counts.values())
        p.set_counts(counts)
        p.seal()
        if k:
            p.ts_last = p.tss[-1]
        pages.append(p)
    for key in _SCALARS:
        setattr(index, key, int(scalars[key]))
    index.subjects = t
    index.pages = pages
    index.firsts = [p.first for p in pages]
    index.hot = Page(0)  # (covers nothing)
    index.tail = None
    for p in pages[:-1]:
        index._cache_add(p)
    if scalars.get("open") and pages:
        index.reopen()
    elif pages:
        index._cache_add(pages[-1])
    return True
