"""The sequence/subject index both stores compose (nats-server keeps the same facts in
``memstore.go``'s ``fss``/``msgs`` maps and ``filestore.go``'s per-block ``fss`` and cache).

One *slot* per sequence in ``[base, last_seq]``, held in parallel arrays:

* ``sids``  array("I"): interned subject id, 0 when the sequence holds no message
  (deleted, skipped, purged, lost);
* ``tss``   array("q"): timestamp (kept after deletion so the array stays sorted for bisect);
* ``sizes`` array("I"): accounted size (the formula of the store's backend), 0 when deleted;
* ``locs``  array("Q"): where the backend keeps the payload, opaque here (the file backend
  packs ``offset << 32 | record length``; the memory backend does not use it);
* ``nxt``   array("Q"): the next sequence stored on the same subject (a singly linked list
  per subject threaded through the slots), so "the subject's next message" after removing its
  first is O(1) instead of a scan — what per-subject limits (KV history) do on every publish.

Per-subject ``msgs/first/last`` live in a `SubjectTable`. Leading dead slots are
trimmed in amortised O(1) as the first sequence advances; `DeadPages` counts
the dead sequences of each page of 4096, so that queries step over a run of deletes a page at a
time. The queries are `SeqQueries`' (this class inherits them); this module keeps
the slots. The index knows nothing about payloads: the store (``indexed.py``) tells its backend
first, then the index.

Recovery: a backend hands over its blocks' slots as `BlockSlots` (one per block, from a
scan or from a saved block index) and `SeqIndex.rebuild` appends them whole;
`SeqIndex.block_slots` gives a block's slots back for saving. `SeqIndex.snapshot` /
`SeqIndex.restore` are the whole-index path after a clean stop.
"""

from __future__ import annotations

from array import array
from collections import Counter
from typing import Any

from ._index import (
    SubjectTable,
    find_value,
    next_nonzero,
    rfind_value,
    zero_fill,
    zeros,
)
from .dead_pages import DeadPages
from .seqquery import _PER_SUBJECT_MAX, SeqQueries

# Trim leading dead slots once at least this many accumulate and they are half the arrays.
_TRIM_MIN = 4096
# A walk along a subject's links that meets this many dead slots in a row looks the subject's
# next message up instead (over the pages that are not all dead: interior deletes).
_HOPS_MAX = 64




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
    """

    __slots__ = (
        "deletes",
        "first",
        "floor",
        "floor_ts",
        "ids",
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


class SeqIndex(SeqQueries):
    """The slot arrays, the subject table, the dead pages and the stream's counters (one owner
    for all); the queries are `SeqQueries`'."""

    __slots__ = (
        "base",
        "bytes",
        "first_seq",
        "first_ts",
        "last_seq",
        "last_ts",
        "locs",
        "msgs",
        "nxt",
        "pages",
        "sids",
        "sizes",
        "subjects",
        "tss",
    )

    def __init__(self) -> None:
        self.msgs = 0
        self.bytes = 0
        self.first_seq = 0
        self.first_ts = 0
        self.last_seq = 0
        self.last_ts = 0
        self.subjects = SubjectTable()
        self.base = 1
        self.sids: array[int] = array("I")
        self.tss: array[int] = array("q")
        self.sizes: array[int] = array("I")
        self.locs: array[int] = array("Q")
        self.nxt: array[int] = array("Q")
        self.pages = DeadPages(1)
        self.steps = 0  # slots scanned by queries (a counter for the complexity tests)

    # ------------------------------------------------------------------------------------
    # Appending and skipping
    # ------------------------------------------------------------------------------------
    def append(self, seq: int, subject: str, ts: int, size: int, loc: int) -> int:
        """Index message ``seq`` (= last_seq + 1); return its subject id."""
        table = self.subjects
        sid = table.ids.get(subject, 0)
        if not sid:
            sid = table.intern(subject)
        self.sids.append(sid)
        self.tss.append(ts)
        self.sizes.append(size)
        self.locs.append(loc)
        self.nxt.append(0)
        smsgs = table.msgs[sid]
        if smsgs:
            self.nxt[table.last[sid] - self.base] = seq
            table.msgs[sid] = smsgs + 1
        else:
            table.msgs[sid] = 1
            table.first[sid] = seq
        table.last[sid] = seq
        if not self.msgs:
            self.first_seq = seq
            self.first_ts = ts
        self.msgs += 1
        self.bytes += size
        self.last_seq = seq
        self.last_ts = ts
        return sid

    def append_run(self, seq: int, subject: str, tss: array[int], sizes: array[int], locs: array[int]) -> int:
        """`append` of ``len(tss)`` (≥ 1) messages on one subject, sequences ``seq`` (=
        last_seq + 1) onwards, with array extends instead of a call and five appends per message:
        a pipelining publisher's run (``IndexedStore.store_run``). Returns the subject id."""
        n = len(tss)
        table = self.subjects
        sid = table.ids.get(subject, 0)
        if not sid:
            sid = table.intern(subject)
        last = seq + n - 1
        self.sids.extend(array("I", (sid,)) * n)
        self.tss.extend(tss)
        self.sizes.extend(sizes)
        self.locs.extend(locs)
        nxt = self.nxt
        nxt.extend(array("Q", range(seq + 1, last + 1)))  # each links to the next of the run
        nxt.append(0)
        smsgs = table.msgs[sid]
        if smsgs:
            nxt[table.last[sid] - self.base] = seq
        else:
            table.first[sid] = seq
        table.msgs[sid] = smsgs + n
        table.last[sid] = last
        if not self.msgs:
            self.first_seq = seq
            self.first_ts = tss[0]
        self.msgs += n
        self.bytes += sum(sizes)
        self.last_seq = last
        self.last_ts = tss[-1]
        return sid

    def append_many(
        self, seq: int, subjects: list[str], tss: array[int], sizes: array[int], locs: array[int]
    ) -> None:
        """`append` of ``len(tss)`` (≥ 1) messages, ``subjects[i]`` each, sequences ``seq``
        (= last_seq + 1) onwards, with array extends and one loop over the subjects' chains
        instead of a call and five appends per message: a read's publishes on several subjects
        (``IndexedStore.store_run``)."""
        n = len(tss)
        table = self.subjects
        ids = table.ids
        tmsgs = table.msgs
        tfirst = table.first
        tlast = table.last
        base = self.base
        nxt = self.nxt
        nxt.extend(zeros("Q", n))
        sids = zeros("I", n)
        s = seq
        k = 0
        for subject in subjects:
            sid = ids.get(subject, 0)
            if not sid:
                sid = table.intern(subject)
            sids[k] = sid
            smsgs = tmsgs[sid]
            if smsgs:
                nxt[tlast[sid] - base] = s
                tmsgs[sid] = smsgs + 1
            else:
                tmsgs[sid] = 1
                tfirst[sid] = s
            tlast[sid] = s
            s += 1
            k += 1
        self.sids.extend(sids)
        self.tss.extend(tss)
        self.sizes.extend(sizes)
        self.locs.extend(locs)
        if not self.msgs:
            self.first_seq = seq
            self.first_ts = tss[0]
        self.msgs += n
        self.bytes += sum(sizes)
        self.last_seq = s - 1
        self.last_ts = tss[-1]

    def skip(self, seq: int, num: int, ts: int) -> None:
        """Sequences [seq, seq + num) were consumed without a message."""
        last = seq + num - 1
        if self.msgs:
            self._extend_dead(num, ts)
            self.pages.dead_seqs(seq, num)
        self.last_seq = last
        self.last_ts = ts
        if not self.msgs:
            self.first_seq = last + 1
            self.first_ts = 0
            self.clear_slots()

    def _extend_dead(self, n: int, ts: int) -> None:
        self.sids.extend(zeros("I", n))
        self.tss.extend(array("q", [ts]) * n)
        self.sizes.extend(zeros("I", n))
        self.locs.extend(zeros("Q", n))
        self.nxt.extend(zeros("Q", n))

    def clear_slots(self) -> None:
        """No message left: drop every slot; the next stored seq is last_seq + 1."""
        if self.sids:
            del self.sids[:], self.tss[:], self.sizes[:], self.locs[:], self.nxt[:]
        self.base = self.last_seq + 1
        self.pages.reset(self.base)

    def _maybe_trim(self) -> None:
        k = self.first_seq - self.base
        if k >= _TRIM_MIN and 2 * k >= len(self.sids):
            del self.sids[:k], self.tss[:k], self.sizes[:k], self.locs[:k], self.nxt[:k]
            self.base += k
            self.pages.trim(self.base)

    # ------------------------------------------------------------------------------------
    # Removing
    # ------------------------------------------------------------------------------------
    def live_slot(self, seq: int) -> int:
        """Slot of the message at ``seq``, or -1 when there is none."""
        i = seq - self.base
        if i < 0 or i >= len(self.sids) or not self.sids[i]:
            return -1
        return i

    def remove_slot(self, i: int) -> None:
        """Remove the live message in slot ``i`` (the first sequence advances past it)."""
        sids = self.sids
        sid = sids[i]
        seq = self.base + i
        sids[i] = 0
        self.locs[i] = 0
        self.msgs -= 1
        self.bytes -= self.sizes[i]
        self.sizes[i] = 0
        self.pages.dead_one(seq)
        self._subject_drop_one(sid, seq)
        if seq == self.first_seq:
            self._advance_first_from(i + 1)

    def _subject_drop_one(self, sid: int, seq: int) -> None:
        table = self.subjects
        m = table.msgs[sid] - 1
        if not m:
            table.release(sid)
            return
        table.msgs[sid] = m
        if seq == table.first[sid]:
            table.first[sid] = table.last[sid] if m == 1 else self._subj_next(seq, sid)
        elif seq == table.last[sid]:
            if m == 1:
                table.last[sid] = table.first[sid]
            else:
                base = self.base
                table.last[sid] = base + rfind_value(self.sids, sid, table.first[sid] - base, seq - base)
                self.steps += seq - table.last[sid]

    def _subj_next(self, seq: int, sid: int) -> int:
        """Next live sequence on subject ``sid`` after (the possibly dead) slot ``seq``: its link,
        past dead ones; a long dead stretch is looked up instead (interior deletes). The link is
        set to the answer (path compression)."""
        base = self.base
        nxt = self.nxt
        sids = self.sids
        n = nxt[seq - base]
        hops = 0
        while n and not sids[n - base]:
            n = nxt[n - base]
            hops += 1
            if hops >= _HOPS_MAX and n:
                last = self.subjects.last[sid]
                j = self.pages.find_live(sids, base, sid, n - base, last - base + 1)
                n = base + j if j >= 0 else 0
                break
        self.steps += hops
        nxt[seq - base] = n
        return n

    def _advance_first_from(self, i: int) -> None:
        j = self._next_live(i, len(self.sids)) if self.msgs else -1
        if j < 0:
            self.first_seq = self.last_seq + 1
            self.first_ts = 0
            self.clear_slots()
        else:
            self.first_seq = self.base + j
            self.first_ts = self.tss[j]
            self._maybe_trim()

    def prefix_range(self, hi: int) -> tuple[int, int]:
        """Slots [lo, hi) `remove_prefix` would clear (lo >= hi: nothing)."""
        return self.first_seq - self.base, min(hi, len(self.sids))

    def remove_prefix(self, hi: int) -> int:
        """Remove every live message in slots below ``hi``; return how many."""
        sids = self.sids
        lo, hi = self.prefix_range(hi)
        if not self.msgs or hi <= lo:
            return 0
        counts = Counter(sids[lo:hi])
        counts.pop(0, None)
        purged = sum(counts.values())
        if not purged:
            return 0
        removed_bytes = sum(self.sizes[lo:hi])
        self.pages.dead_range(sids, self.base, lo, hi)
        zero_fill(sids, lo, hi)
        zero_fill(self.sizes, lo, hi)
        zero_fill(self.locs, lo, hi)
        self.msgs -= purged
        self.bytes -= removed_bytes
        table = self.subjects
        for sid, m in self._subjects_lose(counts):
            table.first[sid] = table.last[sid] if m == 1 else self._subj_next(table.first[sid], sid)
        self._advance_first_from(hi)
        return purged

    def _subjects_lose(self, counts: Counter[int]) -> list[tuple[int, int]]:
        """Take ``counts[sid]`` messages off each subject, release the subjects left with none,
        and return ``(sid, messages left)`` of the others (whose first or last the caller fixes)."""
        table = self.subjects
        kept: list[tuple[int, int]] = []
        for sid, c in counts.items():
            m = table.msgs[sid] - c
            if m <= 0:
                table.release(sid)
            else:
                table.msgs[sid] = m
                kept.append((sid, m))
        return kept

    def purge(self, new_first: int) -> None:
        """Everything is gone; the next message will be ``new_first`` or later."""
        self.subjects.clear()
        self.msgs = 0
        self.bytes = 0
        self.first_seq = new_first
        self.first_ts = 0
        self.last_seq = max(self.last_seq, new_first - 1)
        self.clear_slots()

    def reset(self) -> None:
        """Back to an empty, never-written index (truncate(0))."""
        self.subjects.clear()
        self.msgs = self.bytes = 0
        self.first_seq = self.first_ts = self.last_seq = self.last_ts = 0
        self.clear_slots()
        self.base = 1
        self.pages.reset(1)

    def truncate(self, seq: int) -> None:
        """Remove every message above ``seq`` (a live message)."""
        self._drop_slots_from(seq + 1 - self.base, seq)
        self.last_seq = seq
        self.last_ts = self.tss[seq - self.base]

    def drop_after(self, seq: int, last_ts: int) -> None:
        """Forget every sequence above ``seq`` (whatever it holds): a write that failed is
        taken back, and ``last_ts`` is the stream's last time stamp at ``seq``."""
        if seq >= self.last_seq:
            return
        self._drop_slots_from(max(seq + 1 - self.base, 0), seq)
        self.last_seq = seq
        self.last_ts = last_ts
        if not self.msgs:
            self.first_seq = seq + 1 if seq else 0
            self.first_ts = 0
            self.clear_slots()

    def _drop_slots_from(self, lo: int, seq: int) -> None:
        """Cut the slots from ``lo`` on (the sequences above ``seq``): their messages leave the
        counters and the subject table, and no link points past ``seq`` any more."""
        sids = self.sids
        if lo >= len(sids):
            return
        self.subjects.forget_positions()  # these sequences will be taken again
        base = self.base
        counts = Counter(sids[lo:])
        counts.pop(0, None)
        self.msgs -= sum(counts.values())
        self.bytes -= sum(self.sizes[lo:])
        table = self.subjects
        zero_fill(sids, lo, len(sids))
        for sid, m in self._subjects_lose(counts):
            first = table.first[sid]
            table.last[sid] = first if m == 1 else base + rfind_value(sids, sid, first - base, lo)
        del sids[lo:], self.tss[lo:], self.sizes[lo:], self.locs[lo:], self.nxt[lo:]
        self.pages.recount(sids, base, lo)
        nxt = self.nxt
        for k in range(len(nxt)):
            if nxt[k] > seq:
                nxt[k] = 0

    # ------------------------------------------------------------------------------------
    # Rebuild from blocks, snapshot
    # ------------------------------------------------------------------------------------
    def rebuild(self, blocks: list[BlockSlots]) -> None:
        """Build the index from a backend's blocks, in sequence order (recovery).

        Each block's arrays are appended whole (C-speed ``extend``): no per-message work here,
        only per subject and block. A block's subject ids are adopted as they are when they do
        not clash with another block's (the usual case: they were the running index's ids when
        the block index was written); a clashing block's ids are renumbered. Deletes of earlier
        blocks' sequences and the newest floor are applied last. A store nothing was ever
        written to reports first_seq 0, as nats-server does. The blocks' slot arrays are
        consumed (emptied as they are appended).
        """
        sids, tss, sizes, locs, nxt = self.sids, self.tss, self.sizes, self.locs, self.nxt
        names: list[str | None] = [None]
        ids: dict[str, int] = {}
        s_msgs: dict[int, int] = {}
        s_first: dict[int, int] = {}
        s_last: dict[int, int] = {}
        base = blocks[0].first if blocks else -1
        max_seq = max_ts = hdr_last = floor = floor_ts = 0
        deletes: list[tuple[int, int, int]] = []
        for b in blocks:
            gap = b.first - base - len(sids)
            if gap > 0:
                self._extend_dead(gap, max_ts)
            remap: dict[int, int] = {}
            for k, own in enumerate(b.ids):
                if not b.s_msgs[k]:
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
                if g in s_msgs:
                    nxt[s_last[g] - base] = b.s_first[k]
                    s_msgs[g] += b.s_msgs[k]
                else:
                    s_msgs[g] = b.s_msgs[k]
                    s_first[g] = b.s_first[k]
                s_last[g] = b.s_last[k]
            if remap:
                get = remap.get
                sids.extend(array("I", [get(x, x) for x in b.sids]))
            else:
                sids.extend(b.sids)
            tss.extend(b.tss)
            sizes.extend(b.sizes)
            locs.extend(b.locs)
            nxt.extend(b.nxt)
            if b.sids:
                max_seq = b.first + len(b.sids) - 1
                max_ts = b.tss[-1]
            # Consumed: freed block by block, so the peak is the index plus one block.
            del b.sids[:], b.tss[:], b.sizes[:], b.locs[:], b.nxt[:]
            hdr_last = max(hdr_last, b.first - 1)
            if b.floor > floor:
                floor, floor_ts = b.floor, b.floor_ts
            deletes += b.deletes

        last_seq = max(max_seq, hdr_last, floor - 1)
        if base < 0:
            base = last_seq + 1
        gap = last_seq - base + 1 - len(sids)
        if gap > 0:
            self._extend_dead(gap, max(max_ts, floor_ts))
        self.base = base
        self.last_seq = last_seq
        self.last_ts = max_ts if max_seq >= max(hdr_last, floor - 1) else floor_ts
        self._build_subjects(names, ids, s_msgs, s_first, s_last)
        self.msgs = sum(s_msgs.values())
        self.bytes = sum(sizes)
        j = next_nonzero(sids, 0, len(sids)) if self.msgs else -1
        if j >= 0:
            self.first_seq = base + j
            self.first_ts = tss[j]
        else:
            self.first_seq = 0 if last_seq == 0 and floor == 0 else last_seq + 1
            self.first_ts = 0
            self.clear_slots()
            return
        self.pages.recount(sids, base)
        for seq, num, _ts in deletes:
            for dseq in range(seq, seq + num):
                i = self.live_slot(dseq)
                if i >= 0:
                    self.remove_slot(i)
        if floor > self.first_seq and self.msgs:
            self.remove_prefix(floor - self.base)  # everything below the floor is gone
        if self.msgs:
            self._maybe_trim()

    def _build_subjects(
        self,
        names: list[str | None],
        ids: dict[str, int],
        s_msgs: dict[int, int],
        s_first: dict[int, int],
        s_last: dict[int, int],
    ) -> None:
        n = len(names)
        msgs = zeros("Q", n)
        first = zeros("Q", n)
        last = zeros("Q", n)
        for sid, m in s_msgs.items():
            msgs[sid] = m
            first[sid] = s_first[sid]
            last[sid] = s_last[sid]
        t = SubjectTable()
        t.adopt(names, msgs, first, last)
        self.subjects = t

    def block_slots(self, first: int, end: int) -> BlockSlots:
        """The slots of sequences [first, end) as a `BlockSlots` (what the file backend
        saves as a sealed block's index). Links past the block are cut: a later load links the
        blocks' subjects itself, and a sequence past the block may be taken again after a
        truncate."""
        b = BlockSlots(first)
        n = end - first
        if n <= 0:
            return b
        lo = first - self.base
        ka = min(max(0, -lo), n)  # slots [0, ka) lie below the arrays (trimmed: dead)
        kz = max(min(n, len(self.sids) - lo), ka)  # slots [kz, n) past them (none when sealing)
        a, z = lo + ka, lo + kz
        seg = self.sids[a:z]
        b.sids, b.sizes, b.locs, b.nxt = seg, self.sizes[a:z], self.locs[a:z], self.nxt[a:z]
        b.tss = self.tss[a:z]
        if end <= self.last_seq and b.nxt and max(b.nxt) >= end:
            b.nxt = array("Q", [x if x < end else 0 for x in b.nxt])
        if ka or kz < n:
            lead, tail = ka, n - kz
            lead_ts = self.tss[a] if kz > ka else self.last_ts
            b.sids = zeros("I", lead) + b.sids + zeros("I", tail)
            b.sizes = zeros("I", lead) + b.sizes + zeros("I", tail)
            b.locs = zeros("Q", lead) + b.locs + zeros("Q", tail)
            b.nxt = zeros("Q", lead) + b.nxt + zeros("Q", tail)
            b.tss = array("q", [lead_ts]) * lead + b.tss + array("q", [self.last_ts]) * tail
        table = self.subjects
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
        off = first + ka
        for sid, c, i, j in spans:
            name = table.names[sid]
            assert name is not None
            b.ids.append(sid)
            b.names.append(name)
            b.s_msgs.append(c)
            b.s_first.append(off + i)
            b.s_last.append(off + j)
        return b

    _SCALARS = ("base", "msgs", "bytes", "first_seq", "first_ts", "last_seq", "last_ts")
    _ARRAYS = ("sids", "tss", "sizes", "locs", "nxt")

    def snapshot(self) -> tuple[dict[str, int], dict[str, array[int]], list[str | None]]:
        """``(scalars, arrays, subject names)`` for `restore` (``_snapshot`` encodes them)."""
        t = self.subjects
        scalars = {k: getattr(self, k) for k in self._SCALARS}
        arrays = {k: getattr(self, k) for k in self._ARRAYS}
        arrays.update(s_msgs=t.msgs, s_first=t.first, s_last=t.last)
        return scalars, arrays, t.names

    def restore(self, scalars: dict[str, Any], arrays: dict[str, array[int]], names: list[str | None]) -> bool:
        """Load what `snapshot` gave; False (and nothing changed) when it does not fit."""
        n = len(arrays["sids"])
        if any(len(arrays[k]) != n for k in self._ARRAYS):
            return False
        t = SubjectTable()
        t.adopt(names, arrays["s_msgs"], arrays["s_first"], arrays["s_last"])
        for k in self._ARRAYS:
            setattr(self, k, arrays[k])
        for k in self._SCALARS:
            setattr(self, k, int(scalars[k]))
        self.subjects = t
        self.pages.recount(self.sids, self.base)
        return True
