"""The sequence index across a restart: the stream state a clean stop (and each sync) leaves, and
recovery from it and from the blocks (nats-server ``writeFullState`` / ``recoverFullState``, the
stream's ``index.db``; ``rebuildState`` for a block it cannot vouch for).

The state holds what the index keeps resident — the counters, the subject table, each page's
summary (first sequence, length, live messages and bytes, last timestamp, each subject's live
count, the removals its saved image lacks) — and the open page's slots; not the slots of the
other pages, which their blocks' index files hold. Loading it costs O(blocks + subjects).

`recover` takes the blocks in order, each either vouched for by the state (its file is as the
state saw it: the state's page is used, not loaded) or read again (`BlockSlots`: a block changed
or added since, or every block when there is no state), and fixes what the blocks read again
change: the subjects' counts, and the first/last of a subject whose first or last was in such a
block. After ``kill -9`` that is the active block (every removal's tombstone is there), and any
block a per-subject trim's tombstone or an erase changed since; the tombstones of a block read
again (or listed by the state for one it vouches for) for earlier blocks' sequences are applied
to the pages they name.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._index import SubjectTable, find_value, ids_of, next_nonzero, positions, rfind_value
from .pages import Page
from .seqrecover import BlockSlots

if TYPE_CHECKING:
    from .seqindex import SeqIndex

__all__ = ["StateView", "encode", "recover"]

#: `encode` takes a sealed page's subject columns as they are (`Page.subject_columns`; off: a
#: sorted list of ``(sid, count)`` pairs made and split per page, ~2 Python steps per pair — 100,000
#: subjects' state at every sync). The same bytes either way.
COLUMNS = True
#: A tombstone naming a range of sequences (a purge's) is applied at a crash restart by walking the
#: live slots it covers in each loaded page (`_index.next_nonzero`), where each of its sequences was
#: looked up: a filtered purge of 1,000,000 messages left ~160,000 dead sequences of one range in its
#: first block, ~160,000 lookups (~90 ms) of each restart after ``kill -9`` (``--dim gaps``). False:
#: sequence by sequence (`_apply_deletes`; tests/store/test_crash_range_deletes.py: the same store).
RANGE_DELETES = True
_COUNTERS = ("msgs", "bytes", "first_seq", "first_ts", "last_seq", "last_ts")
_SLOTS = ("sids", "tss", "sizes", "locs", "nxt")
_SLOT_TYPES = {"sids": "I", "tss": "q", "sizes": "I", "locs": "Q", "nxt": "Q"}

#: A block as recovery gets it: its sequences [lo, hi) and its slots, or None when the state's page
#: for it is still good.
Block = tuple[int, int, "BlockSlots | None"]


def encode(index: SeqIndex) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]]:
    """``(header, arrays, subject names)`` of the index's state (``_snapshot`` writes them)."""
    pages = index.pages
    header: dict[str, Any] = {k: getattr(index, k) for k in _COUNTERS}
    tail = index.tail if pages and pages[-1] is index.tail else None
    header["open"] = tail is not None
    cols = {
        "p_first": array("Q", [p.first for p in pages]),
        "p_n": array("Q", [p.n for p in pages]),
        "p_msgs": array("Q", [p.msgs for p in pages]),
        "p_bytes": array("Q", [p.bytes for p in pages]),
        "p_ts": array("q", [p.tss[-1] if p.loaded and p.n else p.ts_last for p in pages]),
        "p_image": array("B", [p.image for p in pages]),
        "p_subs": array("Q"),
        "sub_ids": array("I"),
        "sub_cnt": array("I"),
        "p_dels": array("Q", [len(p.dels) for p in pages]),
        "dels": array("Q"),
    }
    for p in pages:
        if COLUMNS:
            ids, counts = p.subject_columns()
            cols["p_subs"].append(len(ids))
            cols["sub_ids"].extend(ids)  # (an array of the same type: one copy, no int per item)
            cols["sub_cnt"].extend(counts)
        else:
            subs = sorted(p.subjects())
            cols["p_subs"].append(len(subs))
            cols["sub_ids"].extend([sid for sid, _ in subs])
            cols["sub_cnt"].extend([c for _, c in subs])
        cols["dels"].extend(p.dels)
    for k in _SLOTS:
        cols["t_" + k] = getattr(tail, k) if tail is not None else array(_SLOT_TYPES[k])
    t = index.subjects
    cols.update(s_msgs=t.msgs, s_first=t.first, s_last=t.last)
    return header, cols, t.names


class StateView:
    """A decoded state: its counters, subject table columns and pages (evicted, but for the open
    page's slots)."""

    __slots__ = ("counters", "first", "floor", "last", "msgs", "names", "open", "pages")

    def __init__(
        self, header: dict[str, Any], arrays: dict[str, array[int]], names: list[str | None]
    ) -> None:
        """Raises KeyError, ValueError or TypeError when the parts do not fit together."""
        self.counters = {k: int(header[k]) for k in _COUNTERS}
        self.open = bool(header["open"])
        # The newest floor when the state was written: a block that holds a floor record may be
        # one the state vouches for (not read again), while an earlier block is scanned again.
        floor = header.get("floor") or (0, 0)
        self.floor = (int(floor[0]), int(floor[1]))
        self.names = names
        self.msgs, self.first, self.last = arrays["s_msgs"], arrays["s_first"], arrays["s_last"]
        if not len(self.msgs) == len(self.first) == len(self.last) == len(names):
            raise ValueError("subject columns")
        self.pages = _pages(arrays)
        if self.open and self.pages:
            p = self.pages[-1]
            p.set_arrays(*(arrays["t_" + k] for k in _SLOTS))
            if any(len(arrays["t_" + k]) != p.n for k in _SLOTS):
                raise ValueError("open page")


def _pages(arrays: dict[str, array[int]]) -> list[Page]:
    first, n, msgs, nbytes, ts, image = (
        arrays[k] for k in ("p_first", "p_n", "p_msgs", "p_bytes", "p_ts", "p_image")
    )
    subs, dels = arrays["p_subs"], arrays["p_dels"]
    count = len(first)
    if any(len(c) != count for c in (n, msgs, nbytes, ts, image, subs, dels)):
        raise ValueError("page columns")
    sub_ids, sub_cnt, all_dels = arrays["sub_ids"], arrays["sub_cnt"], arrays["dels"]
    if len(sub_ids) != sum(subs) or len(sub_cnt) != len(sub_ids) or len(all_dels) != sum(dels):
        raise ValueError("page summaries")
    pages: list[Page] = []
    at = dat = 0
    for k in range(count):
        p = Page(first[k])
        p.n, p.msgs, p.bytes, p.ts_last, p.image = n[k], msgs[k], nbytes[k], ts[k], bool(image[k])
        p.sub = None
        p.sub_ids, p.sub_cnt = sub_ids[at : at + subs[k]], sub_cnt[at : at + subs[k]]
        p.dels = list(all_dels[dat : dat + dels[k]])
        at += subs[k]
        dat += dels[k]
        p.drop_arrays()
        pages.append(p)
    return pages


class _Subjects:
    """The subject columns while recovering (plain lists; a `SubjectTable` adopts them at the end).
    The map of names to ids is made at the first block read again (`id_for`), which `table` hands
    to the `SubjectTable`: after a clean stop no block is read, and the map is made once."""

    __slots__ = ("first", "ids", "last", "msgs", "names")

    def __init__(self, state: StateView | None) -> None:
        names: list[str | None] = list(state.names) if state is not None else [None]
        self.names = names
        self.ids: dict[str, int] | None = None
        self.msgs = list(state.msgs) if state is not None else [0]
        self.first = list(state.first) if state is not None else [0]
        self.last = list(state.last) if state is not None else [0]

    def id_for(self, name: str, own: int) -> int:
        """The id of ``name``: its own when it has one here, else ``own`` when free, else new."""
        ids = self.ids
        if ids is None:
            ids = self.ids = ids_of(self.names)
        g = ids.get(name)
        if g is not None:
            return g
        names = self.names
        if own >= len(names):
            grow = own + 1 - len(names)
            names.extend([None] * grow)
            for col in (self.msgs, self.first, self.last):
                col.extend([0] * grow)
            g = own
        elif names[own] is None:
            g = own
        else:
            g = len(names)  # the id is another subject's here: a new one
            names.append(None)
            for col in (self.msgs, self.first, self.last):
                col.append(0)
        names[g] = name
        ids[name] = g
        return g

    def table(self) -> SubjectTable:
        names, msgs = self.names, self.msgs
        for sid in _without_messages(msgs):
            if names[sid] is not None:
                names[sid] = None  # no message left
                self.first[sid] = self.last[sid] = msgs[sid] = 0
        t = SubjectTable()
        t.adopt(names, array("Q", self.msgs), array("Q", self.first), array("Q", self.last))
        return t


def _without_messages(msgs: list[int]) -> list[int]:
    """The ids with no message (a free id's, a subject's whose last went), found by C searches
    for the zeros, not by a Python pass over a restart's 100,000 subjects."""
    if msgs and min(msgs) < 0:
        return [sid for sid, m in enumerate(msgs) if m <= 0]
    return positions(msgs, 0)


def _fresh_page(b: BlockSlots, subjects: _Subjects) -> tuple[Page, dict[int, tuple[int, int, int]]]:
    """A block read again as a sealed page (its subject ids adopted or renumbered), and its
    subjects' ``(count, first, last)`` by their ids."""
    remap: dict[int, int] = {}
    spans: dict[int, tuple[int, int, int]] = {}
    for k, own in enumerate(b.ids):
        c = b.s_msgs[k]
        if not c:
            continue
        g = subjects.id_for(b.names[k], own)
        if g != own:
            remap[own] = g
        spans[g] = (c, b.s_first[k], b.s_last[k])
    sids = b.sids
    if remap:
        get = remap.get
        sids = array("I", [get(x, x) for x in sids])
    p = Page(b.first)
    p.set_arrays(sids, b.tss, b.sizes, b.locs, b.nxt)
    p.n = len(sids)
    p.msgs = sum(c for c, _, _ in spans.values())
    p.bytes = sum(b.sizes)
    p.set_counts({sid: c for sid, (c, _, _) in spans.items()})
    p.seal()
    p.image = b.image and not remap
    if p.n:
        p.ts_last = b.tss[-1]
    return p, spans


class _Recovery:
    """One recovery's state (see `recover`)."""

    def __init__(self, index: SeqIndex, state: StateView | None) -> None:
        self.index = index
        self.state = state
        self.subjects = _Subjects(state)
        self.pages: list[Page] = []
        self.fresh: dict[Page, dict[int, tuple[int, int, int]]] = {}
        self.stale: list[Page] = []  # the state's pages of blocks read again
        self.gone: list[Page] = []  # the state's pages of blocks no longer there
        self.max_seq = self.max_ts = self.hdr_last = 0
        # Floors only rise (a purge or reset drops the state), so the state's is a lower bound.
        self.floor, self.floor_ts = state.floor if state is not None else (0, 0)
        self.deletes: list[tuple[int, int, int]] = []
        self.last_kept = False
        self.last_lo = 0  # the last block's first sequence

    def take(self, blocks: Iterable[Block]) -> None:
        spage = self.state.pages if self.state is not None else []
        j = 0
        for lo, hi, b in blocks:
            while j < len(spage) and spage[j].first < lo:
                self.gone.append(spage[j])
                j += 1
            self.hdr_last = max(self.hdr_last, lo - 1)
            self.last_kept = b is None
            self.last_lo = lo
            if b is None:
                while j < len(spage) and spage[j].first < hi:
                    self._add(spage[j])
                    j += 1
                continue
            while j < len(spage) and spage[j].first < hi:
                self.stale.append(spage[j])
                j += 1
            p, spans = _fresh_page(b, self.subjects)
            self.fresh[p] = spans
            self._add(p)
            if b.floor > self.floor:
                self.floor, self.floor_ts = b.floor, b.floor_ts
            self.deletes += b.deletes
        self.gone += spage[j:]

    def _add(self, p: Page) -> None:
        self.pages.append(p)
        if p.loaded:
            self.index._cache_add(p)
        if p.n:
            self.max_seq = p.first + p.n - 1
            self.max_ts = p.tss[-1] if p.loaded else p.ts_last

    def count_subjects(self) -> None:
        """Each subject's live count, first and last: the state's, less what the pages read again
        replaced or that are gone, plus what those pages hold (all of it when there is no state)."""
        if self.state is None or len(self.fresh) == len(self.pages):
            self._count_read_again()
            return
        subjects = self.subjects
        msgs = subjects.msgs
        affected: set[int] = set()
        for p in self.stale + self.gone:
            for sid, c in p.subjects():
                msgs[sid] -= c
                affected.add(sid)
        for spans in self.fresh.values():
            for sid, (c, _, _) in spans.items():
                msgs[sid] += c
                affected.add(sid)
        seen_first: dict[int, int] = {}
        seen_last: dict[int, int] = {}
        for spans in self.fresh.values():  # (in page order)
            for sid, (_, f, la) in spans.items():
                seen_first.setdefault(sid, f)
                seen_last[sid] = la
        firsts = [p.first for p in self.pages]
        for sid in affected:
            if msgs[sid] > 0:
                subjects.first[sid] = self._first(sid, subjects.first[sid], seen_first, firsts)
                subjects.last[sid] = self._last(sid, subjects.last[sid], seen_last.get(sid, 0), firsts)

    def _count_read_again(self) -> None:
        """`count_subjects` when every page was read again (no state; or a crash restart of a
        stream of one block, the active one): no page of the state's is left to hold a subject's
        first or last message, so they are the ones those pages saw — set in passes over them, not
        asked of each subject's pages (~4 µs a subject: a KV bucket's 100,000 keys after ``kill -9``)."""
        subjects = self.subjects
        msgs, first, last = subjects.msgs, subjects.first, subjects.last
        for p in self.stale + self.gone:
            for sid, c in p.subjects():
                msgs[sid] -= c
        read = list(self.fresh.values())
        for spans in read:  # (in page order: the last page's lasts stay)
            for sid, (c, _f, la) in spans.items():
                msgs[sid] += c
                last[sid] = la
        for spans in reversed(read):  # (the first page's firsts stay)
            for sid, (_c, f, _la) in spans.items():
                first[sid] = f

    def _kept_at(self, seq: int, sid: int, firsts: list[int]) -> int:
        """The position of the page holding ``seq``, or -1; -2 when that page is the state's (not
        read again) and still has ``sid`` (so ``seq``, live when the state was written, still is)."""
        i = bisect_right(firsts, seq) - 1
        if i < 0:
            return -1
        p = self.pages[i]
        if p not in self.fresh and p.first <= seq < p.first + p.n and p.count(sid):
            return -2
        return i

    def _first(self, sid: int, old: int, seen: dict[int, int], firsts: list[int]) -> int:
        if not old:
            return seen[sid]  # new since the state: only pages read again have it
        i = self._kept_at(old, sid, firsts)
        if i == -2:
            return old
        for p in self.pages[max(i, 0) :]:
            if not p.count(sid):
                continue
            spans = self.fresh.get(p)
            if spans is not None:
                return spans[sid][1]
            self.index._use(p)
            j = find_value(p.sids, sid, 0, p.n)
            if j >= 0:
                return p.first + j
        return 0

    def _last(self, sid: int, old: int, seen: int, firsts: list[int]) -> int:
        if seen > old:
            return seen  # pages added since hold later ones
        i = self._kept_at(old, sid, firsts)
        if i == -2:
            return old
        for p in reversed(self.pages[: i + 1]):
            if not p.count(sid):
                continue
            spans = self.fresh.get(p)
            if spans is not None:
                return spans[sid][2]
            self.index._use(p)
            j = rfind_value(p.sids, sid, 0, p.n)
            if j >= 0:
                return p.first + j
        return seen


def _first_live(index: SeqIndex, state: StateView | None, fresh: Iterable[Page]) -> tuple[int, int]:
    """The first live sequence and its timestamp (0, 0: none): the state's first sequence when
    it is still live and every page below it is the state's own (no block there was read again:
    a block scanned after a crash can hold records below the floor, which the floor removes once
    the first live one is found) — every sequence below it was gone when the state was written
    — read as one slot (`SeqIndex.slot` peeks at an evicted page); else the pages walked
    (`_next_live`).

    Why: after a stream's first block lost most of its messages (1M interior deletes), finding
    its first live slot by walking loaded that block's whole page, a ~5 MB index file read and
    decoded at every restart (nats-server takes its first sequence from the state, ``index.db``)."""
    first = int(state.counters.get("first_seq", 0)) if state is not None else 0
    if first > 0 and all(p.first >= first for p in fresh):
        slot = index.slot(first)
        if slot is not None:
            return first, slot[1]
    j = index._next_live(0)
    return (j, index.ts_of(j)) if j else (0, 0)


def recover(
    index: SeqIndex, blocks: Iterable[Block], state: StateView | None, kept: list[tuple[int, int, int]] | None = None
) -> list[Page]:
    """Build the index from a backend's blocks in sequence order and the state (None: from the
    blocks alone). A block read again becomes a page as it is (no per-message work: per subject
    and block); its subject ids are adopted when they do not clash (the usual case: they were
    the running index's ids when its index was written), else renumbered. Deletes of earlier
    blocks' sequences and the newest floor are applied last. A store nothing was ever written to
    reports first_seq 0, as nats-server does. Pages beyond the cache are evicted as they come.
    ``kept``: the deletes of earlier blocks' sequences in blocks the state vouched for (filled
    while ``blocks`` is taken), applied to the pages read again alone: the state's own pages
    were written after them. Returns the state's pages of blocks that are gone."""
    rec = _Recovery(index, state)
    rec.take(blocks)  # (while a store recovers, no page is saved: SeqIndex._rebuilding)
    # A page with no message left is not kept (its block goes at the next maintenance), but for
    # the last block's, which takes the appends.
    pages = [p for p in rec.pages[:-1] if p.msgs or p.first >= rec.last_lo] + rec.pages[-1:]
    for p in rec.pages:
        if not p.msgs and p.first < rec.last_lo:
            index._uncache(p)
    index.pages = pages
    index.firsts = [p.first for p in pages]
    rec.count_subjects()
    index.subjects = rec.subjects.table()
    floor = rec.floor
    last_seq = max(rec.max_seq, rec.hdr_last, floor - 1)
    last_ts = rec.max_ts if rec.max_seq >= max(rec.hdr_last, floor - 1) else rec.floor_ts
    if state is not None and rec.last_kept and state.counters["last_seq"] >= last_seq:
        last_seq, last_ts = state.counters["last_seq"], state.counters["last_ts"]
    index.last_seq, index.last_ts = last_seq, last_ts
    index.msgs = sum(p.msgs for p in index.pages)
    index.bytes = sum(p.bytes for p in index.pages)
    _open_tail(index, rec.last_lo, max(rec.max_ts, rec.floor_ts))
    j, ts = _first_live(index, state, rec.fresh) if index.msgs else (0, 0)
    if not j:
        never = last_seq == 0 and floor == 0 and (state is None or state.counters["first_seq"] == 0)
        index.first_seq = 0 if never else last_seq + 1  # (never written: 0, as nats-server)
        index.first_ts = 0
        index.clear_slots()
        return rec.gone
    index.first_seq = j
    index.first_ts = ts
    fresh = list(rec.fresh)
    _apply_deletes(index, rec.deletes + [d for d in kept or () if _in_pages(fresh, d[0])])
    if floor > index.first_seq and index.msgs:
        index.remove_prefix(floor)  # everything below the floor is gone
    return rec.gone


def _apply_deletes(index: SeqIndex, deletes: list[tuple[int, int, int]]) -> None:
    """Remove the messages tombstones of later blocks name (an evicted page is not loaded for a
    removal its ``dels`` already hold: one the state saw), in sequence order: each page they
    fall in is loaded once (in the order written, 10,000 random removals over 1M messages loaded
    a page each: ~4,800 loads, 30-50 s of a restart after ``kill -9``). A tombstone's range walks
    only the live slots it covers in a loaded page (`RANGE_DELETES`)."""
    dels: dict[Page, set[int]] = {}
    for seq, num, _ts in sorted(deletes):
        end = seq + num
        if not RANGE_DELETES:
            for dseq in range(seq, end):
                _remove_one(index, dels, dseq)
            continue
        while seq < end:
            p = index._covering(seq)
            if p is None:  # (between pages, or before the first: on to the next page)
                i = bisect_right(index.firsts, seq)
                if i >= len(index.pages):
                    break
                seq = max(seq + 1, index.pages[i].first)
                continue
            hi = min(end, p.first + p.n)
            if not p.loaded and p.dels:
                for dseq in range(seq, hi):
                    _remove_one(index, dels, dseq)
            else:
                f, k = p.first, seq - p.first
                # (the page found again after each removal: one may evict it, or drop it emptied)
                while index.page(f + k) is p:
                    k = next_nonzero(p.sids, k, hi - f)
                    if k < 0:
                        break
                    index.remove(p, k)
                    k += 1
            seq = hi


def _remove_one(index: SeqIndex, dels: dict[Page, set[int]], dseq: int) -> None:
    """`_apply_deletes` of one sequence: nothing when no page covers it, or when it is one of an
    evicted page's ``dels`` (the page not loaded for it)."""
    p = index._covering(dseq)
    if p is None:
        return
    if not p.loaded and p.dels:
        got = dels.get(p)
        if got is None:
            got = dels[p] = set(p.dels)
        if dseq in got:
            return
    page = index.at(dseq)
    if page is not None:
        index.remove(page, dseq - page.first)


def _in_pages(pages: list[Page], seq: int) -> bool:
    """Whether ``seq`` lies in one of ``pages`` (in sequence order)."""
    i = bisect_right(pages, seq, key=lambda p: p.first) - 1
    return i >= 0 and seq < pages[i].first + pages[i].n


def _open_tail(index: SeqIndex, last_lo: int, ts: int) -> None:
    """The last block's page takes appends: it reaches last_seq (dead slots to there). When the
    last page is an earlier block's (the last block has none), appends start a page of their own."""
    pages = index.pages
    if not pages:
        return
    if not all(p.n for p in pages[:-1]):
        pages[:-1] = [p for p in pages[:-1] if p.n]  # empty blocks before the last hold nothing
        index.firsts = [p.first for p in pages]
    p = pages[-1]
    if p.first < last_lo:
        index.start_page(index.last_seq + 1)
        return
    gap = index.last_seq + 1 - (p.first + p.n)
    index.reopen()
    if gap > 0 and index.tail is not None:
        index.tail.extend_dead(gap, ts)
