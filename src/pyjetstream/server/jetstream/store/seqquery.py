"""The query side of the index (`SeqIndex` inherits it): next / previous /
last message matching a filter, a consumer's read-ahead, per-subject and filtered state — at
nats-server's complexity whatever the number of subjects or deleted sequences (issue 24).

How a filter is looked up (`SeqQueries._resolve`): no filter, or one that matches every
stored subject, walks the live slots (dead pages stepped over whole, `dead_pages`); a few
subjects follow their own next-on-subject links; many are a scan of the slots against the
filter's cached set of subject ids (`FilterMatch`, found by walking the subject
tree, `subject_tree`) — nats-server's ``LoadNextMsg``/``firstMatching`` linear walk with
``isMatch``, amortised O(1) per message a consumer takes in turn.

The queries read the index's arrays (``sids``, ``sizes``, ``nxt``, ``tss``), ``base``, the counters,
the subject table and the pages, and nothing else (a paged layout keeps these accessors). ``steps``
counts the slots they scan and the subjects they visit (the complexity tests read it).
"""

from __future__ import annotations

import bisect
import heapq
from array import array
from collections import Counter
from collections.abc import Collection
from typing import Any

from pyjetstream.protocol.subjects import has_wildcard, is_match_all

from ._index import FilterMatch, SubjectTable, rfind_value
from .base import SimpleState
from .dead_pages import DeadPages

__all__ = ["SeqQueries"]

# A wildcard filter matching at most this many subjects is resolved per subject (their links);
# more subjects are handled by one pass over the slots.
_PER_SUBJECT_MAX = 16
# How a set of filters is looked up (SeqQueries._resolve).
_NONE, _ALL, _FEW, _SET = range(4)


class SeqQueries:
    """Queries over the index's slots (mixed into `SeqIndex`, which owns the
    fields below and keeps them; ``_subj_next`` is its link walk)."""

    __slots__ = ("steps",)

    base: int
    msgs: int
    first_seq: int
    last_seq: int
    sids: array[int]
    tss: array[int]
    sizes: array[int]
    subjects: SubjectTable
    pages: DeadPages
    steps: int

    def _subj_next(self, seq: int, sid: int) -> int:
        raise NotImplementedError

    def _next_live(self, i: int, hi: int) -> int:
        """Slot of the first message in slots ``[i, hi)``, or -1 (dead pages stepped over)."""
        sids = self.sids
        if i < hi and sids[i]:
            return i
        return self.pages.next_live(sids, self.base, i, hi)

    def _prev_live(self, lo: int, hi: int) -> int:
        """Slot of the last message in slots ``[lo, hi)``, or -1."""
        sids = self.sids
        if lo < hi and sids[hi - 1]:
            return hi - 1
        return self.pages.prev_live(sids, self.base, lo, hi)

    # ------------------------------------------------------------------------------------
    # Queries (slot indexes; -1 when there is none)
    # ------------------------------------------------------------------------------------
    def subject_at(self, i: int) -> str:
        name = self.subjects.names[self.sids[i]]
        assert name is not None
        return name

    def next_match(self, filter_subject: str, start_seq: int) -> int:
        """Slot of the first message >= start_seq matching the filter."""
        if start_seq < self.first_seq:
            start_seq = self.first_seq
        if start_seq > self.last_seq or not self.msgs:
            return -1
        if is_match_all(filter_subject):
            return self._next_live(start_seq - self.base, len(self.sids))
        if not has_wildcard(filter_subject):
            sid = self.subjects.ids.get(filter_subject)
            return self._next_of_subject(sid, start_seq) if sid else -1
        return self._next_in(self._resolve((filter_subject,)), start_seq)

    def next_match_multi(self, filters: tuple[str, ...], start_seq: int) -> int:
        """Slot of the first message >= start_seq matching any of the filters."""
        if start_seq < self.first_seq:
            start_seq = self.first_seq
        if start_seq > self.last_seq or not self.msgs:
            return -1
        return self._next_in(self._resolve(filters), start_seq)

    def _resolve(self, filters: tuple[str, ...]) -> tuple[int, Any]:
        """How to find the messages of a set of filters: ``(_ALL, None)`` every live slot (no
        filter, or the filters match every stored subject); ``(_NONE, None)``; ``(_FEW, [sid,
        ...])`` follow each subject's own links; ``(_SET, FilterMatch)`` scan the slots against the
        matching ids (many subjects: nats-server's linear scan with ``isMatch``)."""
        table = self.subjects
        wild = False
        for f in filters:
            if is_match_all(f):
                return _ALL, None
            if has_wildcard(f):
                wild = True
        if not wild:
            ids = table.ids
            few = [sid for sid in {ids.get(f, 0) for f in filters} if sid]
            if len(few) <= _PER_SUBJECT_MAX:
                return (_FEW, few) if few else (_NONE, None)
        fm = table.match(filters)
        sids = fm.sids
        if sids is None:
            return (_ALL, None) if table.ids else (_NONE, None)
        if len(sids) <= _PER_SUBJECT_MAX:
            return (_FEW, list(sids)) if sids else (_NONE, None)
        return _SET, fm

    def _next_in(self, plan: tuple[int, Any], start_seq: int) -> int:
        """`next_match` once resolved (``start_seq`` inside the stream)."""
        kind, data = plan
        if kind == _ALL:
            return self._next_live(start_seq - self.base, len(self.sids))
        if kind == _FEW:
            best = -1
            for sid in data:
                j = self._next_of_subject(sid, start_seq)
                if j >= 0 and (best < 0 or j < best):
                    best = j
            return best
        if kind == _SET:
            found = self._scan(data, start_seq, 1, 0)
            return found[0] if found else -1
        return -1

    def _scan(self, fm: FilterMatch, start_seq: int, max_msgs: int, max_bytes: int) -> list[int]:
        """Slots of up to ``max_msgs`` messages from ``start_seq`` on whose subject is in
        ``fm.sids`` (ending after the one that brings their sizes to ``max_bytes``, when > 0).

        Chunks of the slot array are first tested whole (``set.isdisjoint``, C) and only a chunk
        holding a match is walked; chunks grow from 64 slots, so a near match costs little and a far
        one few calls, and a run of dead pages (`dead_pages`) is stepped over whole. Cost: the slots from ``start_seq`` to the last one returned — amortised O(1)
        per message a consumer takes in turn, as nats-server's linear walk. A scan that reaches the
        end records where nothing matches (``fm.eof_lo``/``eof_hi``) and starts after it next time.
        """
        base = self.base
        sids = self.sids
        n = len(sids)
        matched = fm.sids
        assert matched is not None
        lo_seq = start_seq
        if fm.eof_lo <= start_seq <= fm.eof_hi + 1:
            lo_seq = fm.eof_hi + 1  # nothing matches in between
            start_seq = fm.eof_lo
        lo = lo_seq - base
        out: list[int] = []
        size = 0
        sizes = self.sizes
        pages = self.pages
        step = 64
        while lo < n:
            lo = pages.skip_gone(base, lo)
            if lo >= n:
                break
            end = lo + step if lo + step < n else n
            end = pages.stretch_end(base, lo, end)
            chunk = sids[lo:end]
            self.steps += end - lo
            if not matched.isdisjoint(chunk):
                for k, sid in enumerate(chunk):
                    if sid in matched:
                        out.append(lo + k)
                        if len(out) >= max_msgs:
                            return out
                        if max_bytes:
                            size += sizes[lo + k]
                            if size >= max_bytes:
                                return out
            lo = end
            if step < 65536:
                step *= 4
        fm.eof_lo = base + out[-1] + 1 if out else start_seq
        fm.eof_hi = self.last_seq
        return out

    def next_slots(self, filters: tuple[str, ...], start_seq: int, max_msgs: int, max_bytes: int) -> list[int]:
        """Slots of up to ``max_msgs`` messages from ``start_seq`` on matching any of the filters,
        in order, ending after the one that brings their stored sizes to ``max_bytes``: a
        consumer's read-ahead (``IndexedStore.load_next_msgs``), one walk for the run.

        Per message O(1) amortised whatever the number of subjects: every live slot (no filter),
        each subject's links (a few subjects), or `_scan` (many)."""
        if start_seq < self.first_seq:
            start_seq = self.first_seq
        if start_seq > self.last_seq or not self.msgs or max_msgs <= 0:
            return []
        kind, data = self._resolve(filters)
        if kind == _SET:
            return self._scan(data, start_seq, max_msgs, max_bytes)
        if kind == _NONE:
            return []
        base = self.base
        sids, sizes = self.sids, self.sizes
        slots: list[int] = []
        size = 0
        if kind == _ALL:
            i, end = start_seq - base, len(sids)
            while i < end:
                if not sids[i]:
                    i = self._next_live(i, end)
                    if i < 0:
                        break
                slots.append(i)
                size += sizes[i]
                if len(slots) >= max_msgs or size >= max_bytes:
                    break
                i += 1
            return slots
        # A few subjects: each one's next message by its links, the lowest first.
        heads = []
        for sid in data:
            j = self._next_of_subject(sid, start_seq)
            if j >= 0:
                heads.append((j, sid))
        heapq.heapify(heads)
        while heads:
            j, sid = heads[0]
            slots.append(j)
            size += sizes[j]
            if len(slots) >= max_msgs or size >= max_bytes:
                break
            nseq = self._subj_next(base + j, sid)
            if nseq:
                heapq.heapreplace(heads, (nseq - base, sid))
            else:
                heapq.heappop(heads)
        return slots

    def _next_of_subject(self, sid: int, start_seq: int) -> int:
        table = self.subjects
        last = table.last[sid]
        if last < start_seq:
            return -1
        base = self.base
        first = table.first[sid]
        if first >= start_seq:
            return first - base
        prev = start_seq - 1 - base
        if prev >= 0 and self.sids[prev] == sid:
            # A consumer walking the subject: follow the link from what it just got.
            return self._subj_next(start_seq - 1, sid) - base
        return self.pages.find_live(self.sids, base, sid, start_seq - base, last - base + 1)

    def last_match(self, subject: str) -> int:
        """Slot of the last message on a subject (wildcards allowed; ""/">" = any)."""
        if not self.msgs:
            return -1
        base = self.base
        if is_match_all(subject):
            return self._prev_live(self.first_seq - base, len(self.sids))
        table = self.subjects
        if not has_wildcard(subject):
            sid = table.ids.get(subject)
            return table.last[sid] - base if sid else -1
        seq = max((table.last[sid] for sid in table.matching(subject)), default=0)
        return seq - base if seq else -1

    def prev_match(self, start_seq: int, filter_subject: str) -> int:
        """Slot of the last message with seq <= start_seq matching the filter."""
        if start_seq > self.last_seq:
            start_seq = self.last_seq
        if not self.msgs or start_seq < self.first_seq:
            return -1
        base = self.base
        sids = self.sids
        lo, hi = self.first_seq - base, start_seq - base + 1
        if is_match_all(filter_subject):
            return self._prev_live(lo, hi)
        table = self.subjects
        if not has_wildcard(filter_subject):
            sid = table.ids.get(filter_subject)
            if sid:
                if table.last[sid] <= start_seq:
                    return table.last[sid] - base
                if table.first[sid] <= start_seq:
                    return rfind_value(sids, sid, table.first[sid] - base, hi)
            return -1
        matched = table.matching(filter_subject)
        for k in range(hi - 1, lo - 1, -1):
            if sids[k] and sids[k] in matched:
                return k
        return -1

    def seq_from_time(self, ts: int) -> int:
        """First sequence whose timestamp is >= ts (last_seq + 1 when none)."""
        if not self.msgs:
            return self.last_seq + 1
        base = self.base
        lo = self.first_seq - base
        tss = self.tss
        if ts <= tss[lo]:
            return self.first_seq
        j = bisect.bisect_left(tss, ts, lo, len(tss))
        j = self._next_live(j, len(self.sids))
        return self.last_seq + 1 if j < 0 else base + j

    def expired_bound(self, cutoff: int) -> int:
        """Slot bound such that every live slot below it is at or older than ``cutoff`` (ns),
        or -1 when the first message is newer."""
        tss = self.tss
        lo = self.first_seq - self.base
        if tss[lo] > cutoff:
            return -1
        return max(bisect.bisect_right(tss, cutoff, lo, len(tss)), lo + 1)

    def deleted(self) -> list[int]:
        """Every deleted sequence from the first on (STREAM.INFO's ``deleted_details``: as long as
        the gap, as nats-server's list; a dead page is one ``range``)."""
        return self.pages.deleted(self.sids, self.base, self.first_seq - self.base)

    def num_deleted(self) -> int:
        if self.msgs and self.last_seq > self.first_seq:
            return self.last_seq - self.first_seq + 1 - self.msgs
        return 0

    # ------------------------------------------------------------------------------------
    # Per-subject and filtered state
    # ------------------------------------------------------------------------------------
    def subjects_state(self, filter_subject: str = ">") -> dict[str, SimpleState]:
        table = self.subjects
        names = table.names
        out: dict[str, SimpleState] = {}
        matched = table.matching(filter_subject)
        self.steps += len(matched)
        for sid in matched:
            name = names[sid]
            assert name is not None
            out[name] = SimpleState(table.msgs[sid], table.first[sid], table.last[sid])
        return out

    def multi_last_seqs(self, filters: tuple[str, ...], max_seq: int) -> list[int]:
        """The last sequence at or below ``max_seq`` of every subject matching any filter, sorted
        (nats-server ``MultiLastSeqs``): one visit per matching subject (a subject whose last
        message is past ``max_seq`` is looked up backwards from there)."""
        if not self.msgs or max_seq < self.first_seq:
            return []
        table = self.subjects
        if len(filters) == 1:
            matched: Collection[int] = table.matching(filters[0])
        else:
            matched = {sid for f in filters for sid in table.matching(f)}
        self.steps += len(matched)
        tlast, tfirst = table.last, table.first
        base = self.base
        out: list[int] = []
        for sid in matched:
            last = tlast[sid]
            if last <= max_seq:
                out.append(last)
            elif tfirst[sid] <= max_seq:
                j = rfind_value(self.sids, sid, tfirst[sid] - base, max_seq - base + 1)
                if j >= 0:
                    out.append(base + j)
        out.sort()
        return out

    def subjects_totals(self, filter_subject: str = ">") -> dict[str, int]:
        table = self.subjects
        names = table.names
        matched = table.matching(filter_subject)
        self.steps += len(matched)
        return {names[sid]: table.msgs[sid] for sid in matched}  # type: ignore[misc]

    def filtered(self, sseq: int, filt: str, last_per_subject: bool) -> SimpleState:
        if sseq < self.first_seq:
            sseq = self.first_seq
        if sseq > self.last_seq or not self.msgs:
            return SimpleState()
        table = self.subjects
        base = self.base
        sids = self.sids
        match_all = is_match_all(filt)
        if not match_all and has_wildcard(filt):
            kind = self._resolve((filt,))[0]
            if kind == _NONE:
                return SimpleState()
            match_all = kind == _ALL  # the filter matches every stored subject
        if match_all and not last_per_subject:
            # "last" is the last stored message (last_seq itself may be a skip or a delete).
            last = base + self._prev_live(0, len(sids))
            if sseq <= self.first_seq:
                return SimpleState(self.msgs, self.first_seq, last)
            lo = sseq - base
            j = self._next_live(lo, len(sids))
            if j < 0:
                return SimpleState()
            return SimpleState(self.pages.live_from(sids, base, lo), base + j, last)
        matched = table.ids.values() if match_all else table.matching(filt)
        self.steps += len(matched)
        total = first = last = 0
        partial: list[int] = []
        for sid in matched:
            s_last = table.last[sid]
            if s_last < sseq:
                continue
            if last_per_subject:
                total += 1
                if not first or s_last < first:
                    first = s_last
            else:
                s_first = table.first[sid]
                if s_first >= sseq:
                    total += table.msgs[sid]
                    if not first or s_first < first:
                        first = s_first
                else:
                    partial.append(sid)
            if s_last > last:
                last = s_last
        if partial:
            total += self._count_from(partial, sseq)
            j = -1
            for sid in partial[:_PER_SUBJECT_MAX]:
                k = self._next_of_subject(sid, sseq)
                if k >= 0 and (j < 0 or k < j):
                    j = k
            if len(partial) > _PER_SUBJECT_MAX:
                pset = set(partial)
                stop = j if j >= 0 else len(sids)
                for k in range(sseq - base, stop):
                    if sids[k] in pset:
                        j = k
                        break
            if j >= 0 and (not first or base + j < first):
                first = base + j
        return SimpleState(total, first, last)

    def _count_from(self, sids_wanted: list[int], sseq: int) -> int:
        """Messages with seq >= sseq on each of the (partially covered) subjects."""
        table = self.subjects
        base = self.base
        sids = self.sids
        lo = sseq - base
        if len(sids_wanted) == 1:
            sid = sids_wanted[0]
            f, last = table.first[sid] - base, table.last[sid] - base + 1
            self.steps += min(last - lo, lo - f)
            # Count whichever side of sseq is shorter.
            if last - lo <= lo - f:
                return sids[lo:last].count(sid)
            return table.msgs[sid] - sids[f:lo].count(sid)
        first = min(table.first[sid] for sid in sids_wanted) - base
        last = max(table.last[sid] for sid in sids_wanted) - base + 1
        self.steps += len(sids_wanted) + min(last - lo, lo - first)
        if last - lo <= lo - first:
            counts = Counter(sids[lo:last])
            return sum(counts[sid] for sid in sids_wanted)
        counts = Counter(sids[first:lo])
        return sum(table.msgs[sid] - counts[sid] for sid in sids_wanted)
