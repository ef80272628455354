"""The query side of the index (`SeqIndex` inherits it): next / previous /
last message matching a filter, a consumer's read-ahead, per-subject and filtered state — at
nats-server's complexity whatever the number of subjects or deleted sequences (issue 24).

How a filter is looked up (`SeqQueries._resolve`): no filter, or one that matches every
stored subject, walks the live slots (a run of dead slots stepped over in C, a page with no
message left is not there at all); a few subjects follow their own next-on-subject links; many are
a scan of the slots against the filter's cached set of subject ids (`FilterMatch`, found by
walking the subject tree, `subject_tree`) — nats-server's ``LoadNextMsg``/``firstMatching``
linear walk with ``isMatch``, amortised O(1) per message a consumer takes in turn. A page whose
subject counts hold none of the wanted subjects is stepped over without being loaded (nats-server
checks a block's ``fss`` the same way).

The queries work page by page (``pages``, ``firsts``, each page's arrays and counts,
`SeqIndex._use` to load an evicted one), read the counters and the subject table, and answer
with sequences (0: none). ``steps`` counts the slots they scan and the subjects they visit,
``visits`` the pages they look at (the complexity tests read both).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Iterator
from typing import Any

from pyjetstream.protocol.subjects import has_wildcard, is_match_all

from ._index import FilterMatch, SubjectTable, next_nonzero, prev_nonzero
from .base import SimpleState
from .pages import Page

__all__ = ["SeqQueries"]

# A wildcard filter matching at most this many subjects is resolved per subject (their links);
# more subjects are handled by one pass over the slots.
_PER_SUBJECT_MAX = 16
# How a set of filters is looked up (SeqQueries._resolve).
_NONE, _ALL, _FEW, _SET = range(4)
#: The live messages from a sequence on (`SeqQueries._live_from`: a consumer's start, its num
#: pending) are taken from a page's counts when it has no dead slot, and are ``last - seq + 1``
#: when the stream has no deleted sequence, instead of counting the slots of the start's page (a
#: block: up to ~130,000 slots at 1M messages, loaded if evicted). Off: always by the slots
#: (`tests/jetstream/test_start_pending_steps.py` proves both equal).
FULL_PAGES = True
#: The last message of a subject below a sequence (a ``multi_last`` or last-by-subject get with
#: ``up_to_seq``, a `prev_match`) is found by following the subject's links from its first message
#: when it has few messages (`_last_below`), not by scanning the slots back from the sequence: a
#: direct get of 10 subjects' earlier messages scanned ~100,000 slots each at 100,000 subjects
#: (scale_more ``subjects2``: 88 -> 1,626 us a request from 1,000 subjects). Off: always the scan
#: (`tests/store/test_last_below_steps.py` proves both equal).
PREV_BY_LINKS = True
#: Slots the backward scan (C) passes in about the time of one step along a subject's links.
_SLOTS_PER_HOP = 256


def _ts_last(p: Page) -> int:
    return p.tss[-1] if p.loaded and p.n else p.ts_last


def _holds_none(p: Page, matched: set[int]) -> bool:
    """Whether page ``p`` holds none of the subjects ``matched``, by its counts. The open page's
    dict is compared from the smaller side (``dict.keys().isdisjoint`` walks the smaller of the
    two; ``set.isdisjoint`` of a dict walks the whole dict — the active block's page, with a
    subject per schedule or key, on every read of a consumer with a wildcard filter)."""
    sub = p.sub
    return sub.keys().isdisjoint(matched) if sub is not None else matched.isdisjoint(p.sub_ids)


class SeqQueries:
    """Queries over the index's pages (mixed into `SeqIndex`, which owns the fields below and
    keeps them; ``_use``, ``_pi``, ``_subj_next``, ``_subj_prev``, ``_subject_from`` and ``page``
    are its page walks)."""

    __slots__ = ("steps", "visits")

    msgs: int
    first_seq: int
    first_ts: int
    last_seq: int
    pages: list[Page]
    firsts: list[int]
    hot: Page
    subjects: SubjectTable
    steps: int
    visits: int

    def _use(self, p: Page) -> None:
        raise NotImplementedError

    def _pi(self, seq: int) -> int:
        raise NotImplementedError

    def page(self, seq: int) -> Page | None:
        raise NotImplementedError

    def _subj_next(self, seq: int, sid: int) -> int:
        raise NotImplementedError

    def _subj_prev(self, seq: int, sid: int) -> int:
        raise NotImplementedError

    def _subject_from(self, sid: int, i: int, seq: int) -> int:
        raise NotImplementedError

    def _pages_up(self, seq: int, matched: set[int] | None = None) -> Iterator[Page]:
        """The pages from the one covering ``seq`` on that hold live messages (of a subject in
        ``matched``, when given: by the page's counts, without loading it), each loaded when it is
        given and counted in ``visits`` when it is looked at."""
        pages = self.pages
        i = self._pi(seq)
        while i < len(pages):
            p = pages[i]
            i += 1
            self.visits += 1
            if not p.msgs or (matched is not None and _holds_none(p, matched)):
                continue
            self._use(p)
            yield p

    def _pages_down(self, seq: int, matched: set[int] | None = None) -> Iterator[Page]:
        """`_pages_up` from the page holding ``seq`` (or the last before it) back to the first."""
        pages = self.pages
        i = bisect_right(self.firsts, seq) - 1
        while i >= 0:
            p = pages[i]
            i -= 1
            self.visits += 1
            if not p.msgs or (matched is not None and _holds_none(p, matched)):
                continue
            self._use(p)
            yield p

    def _next_live(self, seq: int) -> int:
        """The first live sequence >= ``seq``, or 0 (dead runs stepped over in C, page by page)."""
        p = self.hot
        k = seq - p.first
        if 0 <= k < p.n and p.sids[k]:
            return seq  # (the next message, as a consumer reading or acking in order asks)
        for p in self._pages_up(seq):
            k = seq - p.first
            j = next_nonzero(p.sids, k if k > 0 else 0, p.n)
            if j >= 0:
                return p.first + j
        return 0

    def _prev_live(self, seq: int) -> int:
        """The last live sequence <= ``seq``, or 0."""
        for p in self._pages_down(seq):
            j = prev_nonzero(p.sids, 0, min(seq - p.first + 1, p.n))
            if j >= 0:
                return p.first + j
        return 0

    # ------------------------------------------------------------------------------------
    # Queries (sequences; 0 when there is none)
    # ------------------------------------------------------------------------------------
    def _last_below(self, seq: int, sid: int) -> int:
        """The last live sequence below ``seq`` on subject ``sid``, or 0 (nats-server
        ``LoadPrevMsg`` / ``MultiLastSeqs`` with a ``maxSeq``). A subject with few messages from its
        first (live) one to ``seq``, against the slots between (`_SLOTS_PER_HOP`), is walked along
        its links, a step each (`PREV_BY_LINKS`); else `_subj_prev` scans back from ``seq``."""
        table = self.subjects
        s = table.first[sid]
        if not PREV_BY_LINKS or not s or s >= seq or table.msgs[sid] * _SLOTS_PER_HOP >= seq - s:
            return self._subj_prev(seq, sid)
        p = self.page(s)
        if p is None or p.sids[s - p.first] != sid:
            return self._subj_prev(seq, sid)
        while True:
            self.steps += 1
            n = self._subj_next(s, sid)
            if not n or n >= seq:
                return s
            s = n

    def subject_of(self, seq: int) -> str:
        """The subject of the live message at ``seq``."""
        p = self.page(seq)
        assert p is not None
        name = self.subjects.names[p.sids[seq - p.first]]
        assert name is not None
        return name

    def next_match(self, filter_subject: str, start_seq: int) -> int:
        """The first message >= start_seq matching the filter."""
        if start_seq < self.first_seq:
            start_seq = self.first_seq
        if start_seq > self.last_seq or not self.msgs:
            return 0
        if is_match_all(filter_subject):
            return self._next_live(start_seq)
        if not has_wildcard(filter_subject):
            sid = self.subjects.ids.get(filter_subject)
            return self._next_of_subject(sid, start_seq) if sid else 0
        return self._next_in(self._resolve((filter_subject,)), start_seq)

    def next_match_multi(self, filters: tuple[str, ...], start_seq: int) -> int:
        """The first message >= start_seq matching any of the filters."""
        if start_seq < self.first_seq:
            start_seq = self.first_seq
        if start_seq > self.last_seq or not self.msgs:
            return 0
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
            return self._next_live(start_seq)
        if kind == _FEW:
            best = 0
            for sid in data:
                s = self._next_of_subject(sid, start_seq)
                if s and (not best or s < best):
                    best = s
            return best
        if kind == _SET:
            found = self._scan(data, start_seq, 1, 0)
            return found[0] if found else 0
        return 0

    def _scan(self, fm: FilterMatch, start_seq: int, max_msgs: int, max_bytes: int) -> list[int]:
        """Up to ``max_msgs`` messages from ``start_seq`` on whose subject is in ``fm.sids``
        (ending after the one that brings their sizes to ``max_bytes``, when > 0).

        A scan that reaches the end records where nothing matches (``fm.eof_lo``/``eof_hi``) and
        starts after it next time."""
        matched = fm.sids
        assert matched is not None
        lo_seq = start_seq
        if fm.eof_lo <= start_seq <= fm.eof_hi + 1:
            lo_seq = fm.eof_hi + 1  # nothing matches in between
            start_seq = fm.eof_lo
        out, ended = self._scan_set(matched, lo_seq, max_msgs, max_bytes)
        if ended:
            fm.eof_lo = out[-1] + 1 if out else start_seq
            fm.eof_hi = self.last_seq
        return out

    def _scan_set(self, matched: set[int], seq: int, max_msgs: int, max_bytes: int) -> tuple[list[int], bool]:
        """The scan of `_scan` over the pages from ``seq`` on: chunks of slots are first tested
        whole (``set.isdisjoint``, C) and only a chunk holding a match is walked; chunks grow from
        64 slots, so a near match costs little and a far one few calls; a run of dead slots is
        stepped over in C, and a page whose counts hold none of ``matched`` is not loaded. Cost:
        the slots from ``seq`` to the last one returned. Returns the sequences and whether the
        scan reached the end."""
        out: list[int] = []
        size = 0
        for p in self._pages_up(seq, matched):
            sids, sizes, f, n = p.sids, p.sizes, p.first, p.n
            lo = seq - f if seq > f else 0
            step = 64
            while lo < n:
                if not sids[lo]:
                    lo = next_nonzero(sids, lo, n)
                    if lo < 0:
                        break
                end = lo + step if lo + step < n else n
                chunk = sids[lo:end]
                self.steps += end - lo
                if not matched.isdisjoint(chunk):
                    for k, sid in enumerate(chunk):
                        if sid in matched:
                            out.append(f + lo + k)
                            if len(out) >= max_msgs:
                                return out, False
                            if max_bytes:
                                size += sizes[lo + k]
                                if size >= max_bytes:
                                    return out, False
                lo = end
                if step < 65536:
                    step *= 4
        return out, True

    def next_slots(
        self, filters: tuple[str, ...], start_seq: int, max_msgs: int, max_bytes: int
    ) -> list[int]:
        """Up to ``max_msgs`` messages from ``start_seq`` on matching any of the filters, in order,
        ending after the one that brings their stored sizes to ``max_bytes``: a consumer's
        read-ahead (``IndexedStore.load_next_msgs``), one walk for the run.

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
        if kind == _ALL:
            return self._next_all(start_seq, max_msgs, max_bytes)
        # A few subjects: each one's next message by its links, the lowest first.
        heads = []
        for sid in data:
            s = self._next_of_subject(sid, start_seq)
            if s:
                heads.append((s, sid))
        heapq.heapify(heads)
        seqs: list[int] = []
        size = 0
        lo = hi = 0
        sizes = None
        while heads:
            s, sid = heads[0]
            seqs.append(s)
            if not lo <= s < hi:
                p = self.page(s)
                assert p is not None
                lo, hi, sizes = p.first, p.first + p.n, p.sizes
            size += sizes[s - lo]  # type: ignore[index]  # set with lo/hi
            if len(seqs) >= max_msgs or size >= max_bytes:
                break
            nseq = self._subj_next(s, sid)
            if nseq:
                heapq.heapreplace(heads, (nseq, sid))
            else:
                heapq.heappop(heads)
        return seqs

    def _next_all(self, seq: int, max_msgs: int, max_bytes: int) -> list[int]:
        """`next_slots` with no filter: the live messages from ``seq`` on. A stretch of a page
        without a removed message (``msgs == n``, the common case) that stays under ``max_bytes``
        is taken whole — its sequences in one ``extend``, its sizes in one ``sum`` — rather than
        message by message (a consumer on ``>`` or a filter every subject matches: its
        read-ahead's index walk 0.13 -> ~0.02 µs per message)."""
        seqs: list[int] = []
        size = 0
        for p in self._pages_up(seq):
            sids, sizes, f, n = p.sids, p.sizes, p.first, p.n
            k = seq - f if seq > f else 0
            m = min(n - k, max_msgs - len(seqs))
            if m > 0 and p.msgs == n:
                total = sum(sizes[k : k + m])
                if size + total < max_bytes:
                    seqs.extend(range(f + k, f + k + m))
                    size += total
                    if len(seqs) >= max_msgs:
                        return seqs
                    continue
            while k < n:
                if not sids[k]:
                    k = next_nonzero(sids, k, n)
                    if k < 0:
                        break
                seqs.append(f + k)
                size += sizes[k]
                if len(seqs) >= max_msgs or size >= max_bytes:
                    return seqs
                k += 1
        return seqs

    def _next_of_subject(self, sid: int, start_seq: int) -> int:
        table = self.subjects
        last = table.last[sid]
        if last < start_seq:
            return 0
        first = table.first[sid]
        if first >= start_seq:
            return first
        p = self.page(start_seq - 1)
        if p is not None and p.sids[start_seq - 1 - p.first] == sid:
            # A consumer walking the subject: follow the link from what it just got.
            return self._subj_next(start_seq - 1, sid)
        return self._subject_from(sid, self._pi(start_seq), start_seq)

    def last_match(self, subject: str) -> int:
        """The last message on a subject (wildcards allowed; ""/">" = any)."""
        if not self.msgs:
            return 0
        if is_match_all(subject):
            return self._prev_live(self.last_seq)
        table = self.subjects
        if not has_wildcard(subject):
            sid = table.ids.get(subject)
            return table.last[sid] if sid else 0
        return max((table.last[sid] for sid in table.matching(subject)), default=0)

    def prev_match(self, start_seq: int, filter_subject: str) -> int:
        """The last message with seq <= start_seq matching the filter."""
        if start_seq > self.last_seq:
            start_seq = self.last_seq
        if not self.msgs or start_seq < self.first_seq:
            return 0
        if is_match_all(filter_subject):
            return self._prev_live(start_seq)
        table = self.subjects
        if not has_wildcard(filter_subject):
            sid = table.ids.get(filter_subject)
            if sid:
                if table.last[sid] <= start_seq:
                    return table.last[sid]
                if table.first[sid] <= start_seq:
                    return self._last_below(start_seq + 1, sid)
            return 0
        matched = table.matching(filter_subject)
        if not isinstance(matched, set):
            matched = set(matched)
        for p in self._pages_down(start_seq, matched):
            sids = p.sids
            for k in range(min(start_seq - p.first + 1, p.n) - 1, -1, -1):
                if sids[k] and sids[k] in matched:
                    return p.first + k
        return 0

    def seq_from_time(self, ts: int) -> int:
        """First sequence whose timestamp is >= ts (last_seq + 1 when none)."""
        if not self.msgs:
            return self.last_seq + 1
        if ts <= self.first_ts:
            return self.first_seq
        pages = self.pages
        i = bisect_left(pages, ts, key=_ts_last)
        if i >= len(pages):
            return self.last_seq + 1
        p = pages[i]
        self._use(p)
        lo = max(self.first_seq - p.first, 0)
        j = bisect_left(p.tss, ts, lo, p.n)
        s = self._next_live(p.first + j)
        return s if s else self.last_seq + 1

    def expired_bound(self, cutoff: int) -> int:
        """A sequence such that every live message below it is at or older than ``cutoff`` (ns),
        or 0 when the first message is newer."""
        if not self.msgs or self.first_ts > cutoff:
            return 0
        pages = self.pages
        i = bisect_right(pages, cutoff, key=_ts_last)
        if i >= len(pages):
            return self.last_seq + 1
        p = pages[i]
        self._use(p)
        j = bisect_right(p.tss, cutoff, 0, p.n)
        return max(p.first + j, self.first_seq + 1)

    def deleted(self) -> list[int]:
        """Every deleted sequence from the first on (STREAM.INFO's ``deleted_details``: as long as
        the gap, as nats-server's list; a sequence no page covers is one of them)."""
        out: list[int] = []
        at = self.first_seq
        for p in self.pages:
            end = p.first + p.n
            if end <= at:
                continue
            if p.first > at:
                out.extend(range(at, p.first))
                at = p.first
            if p.msgs < end - at:
                self._use(p)
                sids = p.sids
                base = p.first
                out.extend(base + k for k in range(at - base, p.n) if not sids[k])
            at = end
        if at <= self.last_seq:
            out.extend(range(at, self.last_seq + 1))
        return out

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

    def subjects_page(
        self, filter_subject: str, after: int, limit: int
    ) -> list[tuple[int, str, SimpleState]]:
        """Up to ``limit`` subjects matching the filter whose ids are above ``after``, in id order
        (about the order they were first stored; an id is reused once its subject is gone): the
        dashboard's page of a stream's subjects or a bucket's keys. No nats-server counterpart (its
        STREAM.INFO lists a filter's subjects whole). ``>`` visits the ids from ``after`` on, so a
        page costs its own size (plus the freed ids it passes); a wildcard looks the filter up once
        (from the match cache when a consumer put it there) and bisects; a literal is one lookup."""
        table = self.subjects
        names = table.names
        out: list[tuple[int, str, SimpleState]] = []
        if is_match_all(filter_subject):
            sid, end = after + 1, len(names)
            while sid < end and len(out) < limit:
                name = names[sid]
                if name is not None:
                    out.append((sid, name, SimpleState(table.msgs[sid], table.first[sid], table.last[sid])))
                sid += 1
            self.steps += sid - after - 1
            return out
        matched = sorted(table.matching(filter_subject))
        self.steps += len(matched)
        for sid in matched[bisect_right(matched, after) :][:limit]:
            name = names[sid]
            assert name is not None
            out.append((sid, name, SimpleState(table.msgs[sid], table.first[sid], table.last[sid])))
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
        out: list[int] = []
        for sid in matched:
            last = tlast[sid]
            if last <= max_seq:
                out.append(last)
            elif tfirst[sid] <= max_seq:
                s = self._last_below(max_seq + 1, sid)
                if s:
                    out.append(s)
        out.sort()
        return out

    def subjects_totals(self, filter_subject: str = ">") -> dict[str, int]:
        table = self.subjects
        names = table.names
        matched = table.matching(filter_subject)
        self.steps += len(matched)
        return {names[sid]: table.msgs[sid] for sid in matched}  # type: ignore[misc]

    def subjects_sorted_page(
        self, filter_subject: str, offset: int, limit: int
    ) -> tuple[int, dict[str, int], bool]:
        """How many subjects match the filter, ``{subject: messages}`` of those from ``offset`` in
        name order (``limit`` at most), and whether that dict is in name order: STREAM.INFO's
        ``subjects_filter`` page (nats-server ``jsStreamInfoRequest`` over ``SubjectsTotals``).
        From `SubjectTable.name_order` (a page costs its size, ``steps``, once the order is kept);
        a first one-page listing is every match in id order, for the encoder to sort."""
        table = self.subjects
        names, msgs = table.names, table.msgs
        order = table.name_order(filter_subject, offset > 0)
        if order is None:
            matched = table.matching(filter_subject)
            if len(matched) <= limit:
                self.steps += len(matched)
                return len(matched), {names[sid]: msgs[sid] for sid in matched}, False  # type: ignore[misc]
            order = table.name_order(filter_subject, True)
            assert order is not None
        page = order[offset : offset + limit]
        self.steps += len(page)
        return len(order), {names[sid]: msgs[sid] for sid in page}, True  # type: ignore[misc]

    def filtered(self, sseq: int, filt: str, last_per_subject: bool) -> SimpleState:
        if sseq < self.first_seq:
            sseq = self.first_seq
        if sseq > self.last_seq or not self.msgs:
            return SimpleState()
        table = self.subjects
        match_all = is_match_all(filt)
        if not match_all and has_wildcard(filt):
            kind = self._resolve((filt,))[0]
            if kind == _NONE:
                return SimpleState()
            match_all = kind == _ALL  # the filter matches every stored subject
        if match_all and not last_per_subject:
            # "last" is the last stored message (last_seq itself may be a skip or a delete).
            last = self._prev_live(self.last_seq)
            if sseq <= self.first_seq:
                return SimpleState(self.msgs, self.first_seq, last)
            j = self._next_live(sseq)
            if not j:
                return SimpleState()
            return SimpleState(self._live_from(sseq), j, last)
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
            j = self._first_of(partial, sseq)
            if j and (not first or j < first):
                first = j
        return SimpleState(total, first, last)

    def _first_of(self, sids: list[int], sseq: int) -> int:
        """The first message >= sseq on any of ``sids`` (each has one there)."""
        if len(sids) <= _PER_SUBJECT_MAX:
            best = 0
            for sid in sids:
                s = self._next_of_subject(sid, sseq)
                if s and (not best or s < best):
                    best = s
            return best
        found, _ = self._scan_set(set(sids), sseq, 1, 0)
        return found[0] if found else 0

    def _live_from(self, seq: int) -> int:
        """Live messages from ``seq`` (first to last sequence) on: the pages after its own summed,
        its own counted — by its counts when none of its slots is dead (`FULL_PAGES`), else
        by its slots (the shorter side of ``seq``, loaded). With no deleted sequence at all,
        ``last_seq - seq + 1`` (nats-server ``NumPending``'s case without deletes)."""
        if FULL_PAGES and self.msgs == self.last_seq - self.first_seq + 1:
            return self.last_seq - seq + 1
        pages = self.pages
        i = self._pi(seq)
        total = sum(p.msgs for p in pages[i + 1 :])
        self.visits += 1
        if i < len(pages):
            p = pages[i]
            k = seq - p.first
            if k <= 0:
                total += p.msgs
            elif FULL_PAGES and p.msgs == p.n:
                total += p.n - k
            else:
                self.steps += min(k, p.n - k)
                self._use(p)
                seg = p.sids[k:] if p.n - k <= k else p.sids[:k]
                live = len(seg) - seg.count(0)
                total += live if p.n - k <= k else p.msgs - live
        return total

    def _count_from(self, wanted: list[int], sseq: int) -> int:
        """Messages with seq >= sseq on each of the (partially covered) subjects: the pages on
        the shorter side of sseq's by their counts, sseq's own page by its slots."""
        table = self.subjects
        pages = self.pages
        i = self._pi(sseq)
        inside = i < len(pages) and pages[i].first < sseq
        after = pages[i + 1 :] if inside else pages[i:]
        before = pages[:i]
        self.visits += 1 + min(len(after), len(before))
        self.steps += len(wanted) * min(len(after), len(before))
        if len(after) <= len(before):
            total = sum(p.count(sid) for p in after for sid in wanted)
        else:
            total = sum(table.msgs[sid] for sid in wanted) - sum(
                p.count(sid) for p in before for sid in wanted
            )
            if inside:
                total -= sum(pages[i].count(sid) for sid in wanted)
        if inside:
            # Its own page: from sseq on, by counting whichever side of sseq is shorter.
            p = pages[i]
            self._use(p)
            k = sseq - p.first
            tail = p.n - k <= k
            seg = p.sids[k:] if tail else p.sids[:k]
            self.steps += len(wanted) + len(seg)
            if len(wanted) == 1:
                c = seg.count(wanted[0])
            else:
                counts = Counter(seg)
                c = sum(counts[sid] for sid in wanted)
            total += c if tail else sum(p.count(sid) for sid in wanted) - c
        return total
