"""The sequence/subject index both stores compose (nats-server keeps the same facts in
``memstore.go``'s ``fss``/``msgs`` maps and ``filestore.go``'s per-block ``fss``, cache and ``psim``).

The slots are kept in `Page`s (``pages.py``): a page holds the slots of one range of
sequences — subject id, timestamp, accounted size, the backend's payload locator, the next
sequence on the same subject within the page — and keeps resident, whatever happens to its
arrays, its live messages and bytes and each subject's live count in it. The memory store's pages
are `MEM_PAGE` sequences each and all resident; the file store's pages are its blocks
(the backend calls `SeqIndex.start_page` as it starts one), and a sealed block's page is
*evictable*: its arrays are dropped when the resident pages hold more than ``cache_max`` slots and
loaded again (``loader``: the block's saved index) when a query needs them — so resident memory
does not grow with the stored messages (nats-server's block cache, loaded on demand and expired).

A sequence no page covers holds no message: a page whose messages are all gone is dropped, and
runs of dead pages cost nothing to step over. Per-subject ``msgs/first/last`` live in a
`SubjectTable`. The queries are `SeqQueries`' (this class inherits them); this module keeps
the pages. The index knows nothing about payloads: the store (``indexed.py``) tells its backend
first, then the index. Everything is addressed by sequence: `SeqIndex.at` gives the loaded page
holding a live message (slot ``seq - page.first``).

Recovery: a backend hands over its blocks' slots as `BlockSlots` (one per block, from a
scan or from a saved block index) and `SeqIndex.rebuild` makes each a page;
`SeqIndex.block_slots` gives a block's slots back for saving. `SeqIndex.snapshot` /
`SeqIndex.restore` are the whole-index path after a clean stop.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from . import seqrecover, seqstate
from ._index import SubjectTable, find_value, next_nonzero, rfind_value, zero_fill, zeros
from .pages import Page
from .seqquery import _PER_SUBJECT_MAX, SeqQueries
from .seqrecover import BlockSlots

# Sequences per page of the memory store (the file store's pages are its blocks).
MEM_PAGE = 16384
# A walk along a subject's links that meets this many dead slots in a row looks the subject's
# next message up in the page instead (interior deletes).
_HOPS_MAX = 64
# A page whose image is older than this many removals is written again before it is evicted.
DELS_MAX = 4096

Arrays = tuple["array[int]", "array[int]", "array[int]", "array[int]", "array[int]"]
#: The backend's loader of an evicted page's arrays (sids, tss, sizes, locs, nxt), as they were
#: when its image was written (the index applies ``page.dels``).
Loader = Callable[[Page], Arrays]
#: The backend's writer of a page's image (True when written: ``image`` set, ``dels`` cleared).
Saver = Callable[[Page], bool]
#: The backend's reader of one slot of an evicted page, ``(sid, ts, loc)`` as its image holds it,
#: or None when it cannot tell (the page is loaded instead); with its third argument True it may
#: answer ``(-1, 0, loc)`` for a live message whose subject id and timestamp it did not read.
Peeker = Callable[[Page, int, bool], "tuple[int, int, int] | None"]


class SeqIndex(SeqQueries):
    """The pages, the subject table and the stream's counters (one owner for all); the queries
    are `SeqQueries`'."""

    __slots__ = (
        "_rebuilding",
        "bytes",
        "cache",
        "cache_max",
        "cache_slots",
        "first_seq",
        "first_ts",
        "firsts",
        "hot",
        "last_seq",
        "last_ts",
        "loader",
        "loads",
        "msgs",
        "page_max",
        "pages",
        "peeker",
        "peeks",
        "saver",
        "subjects",
        "tail",
    )

    def __init__(self, page_max: int = MEM_PAGE) -> None:
        self.msgs = 0
        self.bytes = 0
        self.first_seq = 0
        self.first_ts = 0
        self.last_seq = 0
        self.last_ts = 0
        self.subjects = SubjectTable()
        self.pages: list[Page] = []
        self.firsts: list[int] = []  # each page's first sequence (bisect)
        self.tail: Page | None = None  # the last page while it takes appends
        self.hot = _NO_PAGE  # the page `page` found last (loaded): most lookups hit it again
        self.page_max = page_max
        # Sealed pages with their arrays loaded, least recently used first (file store).
        self.cache: dict[Page, None] = {}
        self.cache_slots = 0
        self.cache_max = 0  # 0: pages are never evicted (the memory store)
        self.loader: Loader | None = None
        self.saver: Saver | None = None
        self.peeker: Peeker | None = None
        self.peeks = 0  # slots read from an evicted page's image without loading it
        self._rebuilding = False
        self.loads = 0  # pages loaded (a counter for the complexity tests)
        self.steps = 0  # slots scanned and subjects visited by queries
        self.visits = 0  # pages visited by queries

    # ------------------------------------------------------------------------------------
    # Pages: lookup, loading, eviction
    # ------------------------------------------------------------------------------------
    def _pi(self, seq: int) -> int:
        """Position of the page covering ``seq``, or of the first page after it."""
        i = bisect_right(self.firsts, seq) - 1
        if i < 0:
            return 0
        p = self.pages[i]
        return i if seq < p.first + p.n else i + 1

    def _covering(self, seq: int) -> Page | None:
        """The page whose range holds ``seq``, loaded or not (None: no page's does): the one place
        that says so (`slot`, a step of every random get of an evicted page, calls it as `page` and
        the removals do)."""
        i = bisect_right(self.firsts, seq) - 1
        p = self.pages[i] if i >= 0 else _NO_PAGE
        return p if seq < p.first + p.n else None

    def page(self, seq: int) -> Page | None:
        """The page covering ``seq``, its arrays loaded (None: no page does)."""
        p = self.hot
        if p.first <= seq < p.first + p.n:
            return p
        found = self._covering(seq)
        if found is None:
            return None
        self._use(found)
        self.hot = found
        return found

    def at(self, seq: int) -> Page | None:
        """The loaded page holding a live message at ``seq`` (its slot is ``seq - page.first``)."""
        p = self.hot
        if not p.first <= seq < p.first + p.n:
            p = self.page(seq)  # type: ignore[assignment]
            if p is None:
                return None
        return p if p.sids[seq - p.first] else None

    def live(self, seq: int) -> bool:
        return self.at(seq) is not None

    def slot(self, seq: int, names: bool = True) -> tuple[int, int, int] | None:
        """``(sid, ts, loc)`` of the live message at ``seq``, or None. An evicted page is not
        loaded for it: the backend reads the one slot from the page's image (its removals since
        are in ``dels``) — a random read costs a few small reads, not a page (nats-server reads
        a message of a block it has not cached without keeping the block's cache either).
        ``names`` False (a get by sequence, which reads the subject and timestamp from the
        record): such a slot may be ``(-1, 0, loc)``, its locator alone read."""
        p = self.hot
        if not p.first <= seq < p.first + p.n:
            found = self._covering(seq)
            if found is None:
                return None
            if not found.loaded and self.peeker is not None:
                if seq < self.first_seq or (found.dels and _removed(found.dels, seq)):
                    return None
                got = self.peeker(found, seq - found.first, not names)
                if got is not None:
                    self.peeks += 1
                    return got if got[0] else None
            self._use(found)  # (what page() would do, without finding the page again)
            self.hot = p = found
        k = seq - p.first
        sid = p.sids[k]
        return (sid, p.tss[k], p.locs[k]) if sid else None

    def _use(self, p: Page) -> None:
        """Make sure a page's arrays are loaded (and mark it recently used)."""
        if not p.loaded:
            self._load(p)
        elif self.cache_max and p in self.cache:
            self.cache[p] = self.cache.pop(p)

    def _load(self, p: Page) -> None:
        assert self.loader is not None, "an evicted page needs a loader"
        sids, tss, sizes, locs, nxt = self.loader(p)
        first = p.first
        for seq in p.dels:
            k = seq - first
            sids[k] = sizes[k] = locs[k] = 0
        p.set_arrays(sids, tss, sizes, locs, nxt)
        self.loads += 1
        self._cache_add(p)

    def _cache_add(self, p: Page) -> None:
        """A sealed page's arrays are resident: evict the least recently used beyond the budget."""
        if not self.cache_max:
            return
        cache = self.cache
        cache[p] = None
        self.cache_slots += p.n
        tries = len(cache)
        while self.cache_slots > self.cache_max and len(cache) > 1 and tries > 0:
            tries -= 1
            old = next(iter(cache))
            # The page just loaded is never the one evicted (its caller is about to read it):
            # after the others were tried and kept it can come first.
            if old is p or not self._evict(old):
                cache[old] = cache.pop(old)  # could not be written: kept, tried last next time

    def _evict(self, p: Page) -> bool:
        """Drop a sealed page's arrays (its image written first when it has none or an old one)."""
        if not p.image or len(p.dels) > DELS_MAX:
            if self._rebuilding or self.saver is None or not self.saver(p):
                return False
        self._uncache(p)
        if p.n:
            p.ts_last = p.tss[-1]
        p.drop_arrays()
        if self.hot is p:
            self.hot = _NO_PAGE
        return True

    def _uncache(self, p: Page) -> None:
        if self.cache.pop(p, 0) is None:
            self.cache_slots -= p.n

    def page_in(self, lo: int, hi: int, load: bool = True) -> Page | None:
        """The page holding sequences of [lo, hi) (the file store's pages lie in one block each),
        its arrays loaded unless ``load`` is False, or None."""
        i = self._pi(lo)
        if i < len(self.pages) and self.pages[i].first < hi:
            p = self.pages[i]
            if load:
                self._use(p)
            return p
        return None

    def mark_image(self, lo: int, hi: int) -> None:
        """The page in [lo, hi) was just saved as it is (its image is current)."""
        i = self._pi(lo)
        if i < len(self.pages) and self.pages[i].first < hi:
            p = self.pages[i]
            p.image = True
            p.dels = []

    def lost_image(self, seq: int) -> None:
        """The image of the page holding ``seq`` is gone (written again before it is evicted)."""
        p = self.page(seq)
        if p is not None:
            p.image = False
            p.dels = []

    def resident_slots(self) -> int:
        """Slots whose arrays are in memory (the complexity tests read it)."""
        return sum(p.n for p in self.pages if p.loaded)

    def start_page(self, first: int) -> Page:
        """A new page for sequences from ``first`` (= last_seq + 1) on; the tail is sealed (the
        file store calls it as it starts a block)."""
        self.seal()
        p = Page(first)
        self.pages.append(p)
        self.firsts.append(first)
        self.tail = p
        return p

    def seal(self) -> None:
        """The tail takes no more appends (its block was sealed, or the page is full)."""
        t = self.tail
        if t is None:
            return
        self.tail = None
        t.seal()
        if t.n:
            t.ts_last = t.tss[-1]
        if not t.msgs:
            self._drop_page(t)
        else:
            self._cache_add(t)

    def reopen(self) -> None:
        """The last page takes appends again (its block is the active one again)."""
        if self.tail is None and self.pages:
            p = self.pages[-1]
            self._use(p)
            self._uncache(p)
            p.unseal()
            p.image = False
            p.dels = []
            self.tail = p

    def _drop_page(self, p: Page) -> None:
        """Forget a page (no message left in it, or cut off)."""
        i = bisect_right(self.firsts, p.first) - 1
        if i >= 0 and self.pages[i] is p:
            del self.pages[i], self.firsts[i]
        self._uncache(p)
        if p is self.tail:
            self.tail = None
        if p is self.hot:
            self.hot = _NO_PAGE

    def clear_slots(self) -> None:
        """No message left: every page goes but the tail, which starts again at last_seq + 1."""
        t = self.tail
        self.pages = []
        self.firsts = []
        self.hot = _NO_PAGE
        self.cache.clear()
        self.cache_slots = 0
        if t is not None:
            fresh = Page(self.last_seq + 1)
            t.first, t.n, t.msgs, t.bytes, t.sub = fresh.first, 0, 0, 0, {}
            t.set_arrays(fresh.sids, fresh.tss, fresh.sizes, fresh.locs, fresh.nxt)
            t.dels = []
            t.image = False
            self.pages.append(t)
            self.firsts.append(t.first)

    # ------------------------------------------------------------------------------------
    # Appending and skipping
    # ------------------------------------------------------------------------------------
    def append(self, seq: int, subject: str, ts: int, size: int, loc: int) -> int:
        """Index message ``seq`` (= last_seq + 1); return its subject id."""
        p = self.tail
        if p is None or p.n >= self.page_max:
            p = self.start_page(seq)
        table = self.subjects
        sid = table.ids.get(subject, 0)
        if not sid:
            sid = table.intern(subject)
        p.sids.append(sid)
        p.tss.append(ts)
        p.sizes.append(size)
        p.locs.append(loc)
        p.nxt.append(0)
        p.n += 1
        p.msgs += 1
        p.bytes += size
        sub = p.sub
        sub[sid] = sub.get(sid, 0) + 1  # type: ignore[index,union-attr]  # the tail's counts are a dict
        smsgs = table.msgs[sid]
        if smsgs:
            last = table.last[sid]
            if last >= p.first:
                p.nxt[last - p.first] = seq
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

    def _room(self, seq: int) -> tuple[Page, int]:
        """The tail for appends from ``seq`` on, and how many slots it still takes."""
        p = self.tail
        if p is None or p.n >= self.page_max:
            p = self.start_page(seq)
        return p, self.page_max - p.n

    def append_run(self, seq: int, subject: str, tss: array[int], sizes: array[int], locs: array[int]) -> int:
        """`append` of ``len(tss)`` (≥ 1) messages on one subject, sequences ``seq`` (=
        last_seq + 1) onwards, with array extends instead of a call and five appends per message:
        a pipelining publisher's run (``IndexedStore.store_run``). Returns the subject id."""
        n = len(tss)
        p, room = self._room(seq)
        if n > room:
            self.append_run(seq, subject, tss[:room], sizes[:room], locs[:room])
            return self.append_run(seq + room, subject, tss[room:], sizes[room:], locs[room:])
        table = self.subjects
        sid = table.ids.get(subject, 0)
        if not sid:
            sid = table.intern(subject)
        last = seq + n - 1
        p.sids.extend(array("I", (sid,)) * n)
        p.tss.extend(tss)
        p.sizes.extend(sizes)
        p.locs.extend(locs)
        nxt = p.nxt
        nxt.extend(array("Q", range(seq + 1, last + 1)))  # each links to the next of the run
        nxt.append(0)
        nbytes = sum(sizes)
        p.n += n
        p.msgs += n
        p.bytes += nbytes
        sub = p.sub
        sub[sid] = sub.get(sid, 0) + n  # type: ignore[index,union-attr]
        smsgs = table.msgs[sid]
        if smsgs:
            prev = table.last[sid]
            if prev >= p.first:
                nxt[prev - p.first] = seq
        else:
            table.first[sid] = seq
        table.msgs[sid] = smsgs + n
        table.last[sid] = last
        if not self.msgs:
            self.first_seq = seq
            self.first_ts = tss[0]
        self.msgs += n
        self.bytes += nbytes
        self.last_seq = last
        self.last_ts = tss[-1]
        return sid

    def append_many(
        self, seq: int, subjects: list[str], tss: array[int], sizes: array[int], locs: array[int]
    ) -> array[int]:
        """`append` of ``len(tss)`` (≥ 1) messages, ``subjects[i]`` each, sequences ``seq``
        (= last_seq + 1) onwards, with array extends and one loop over the subjects' chains
        instead of a call and five appends per message: a read's publishes on several subjects
        (``IndexedStore.store_run``). Returns their subject ids (the run's trim reads them)."""
        n = len(tss)
        p, room = self._room(seq)
        if n > room:
            out = self.append_many(seq, subjects[:room], tss[:room], sizes[:room], locs[:room])
            out.extend(self.append_many(seq + room, subjects[room:], tss[room:], sizes[room:], locs[room:]))
            return out
        table = self.subjects
        ids = table.ids
        tmsgs = table.msgs
        tfirst = table.first
        tlast = table.last
        first = p.first
        sub: dict[int, int] = p.sub  # type: ignore[assignment]  # the tail's counts are a dict
        nxt = p.nxt
        nxt.extend(zeros("Q", n))
        sids = zeros("I", n)
        s = seq
        k = 0
        for subject in subjects:
            sid = ids.get(subject, 0)
            if not sid:  # a new subject: its table entry starts at this message
                sid = sids[k] = table.intern(subject, s)
                sub[sid] = 1
                s += 1
                k += 1
                continue
            sids[k] = sid
            sub[sid] = sub.get(sid, 0) + 1
            smsgs = tmsgs[sid]
            if smsgs:
                prev = tlast[sid]
                if prev >= first:
                    nxt[prev - first] = s
                tmsgs[sid] = smsgs + 1
            else:
                tmsgs[sid] = 1
                tfirst[sid] = s
            tlast[sid] = s
            s += 1
            k += 1
        p.sids.extend(sids)
        p.tss.extend(tss)
        p.sizes.extend(sizes)
        p.locs.extend(locs)
        nbytes = sum(sizes)
        p.n += n
        p.msgs += n
        p.bytes += nbytes
        if not self.msgs:
            self.first_seq = seq
            self.first_ts = tss[0]
        self.msgs += n
        self.bytes += nbytes
        self.last_seq = s - 1
        self.last_ts = tss[-1]
        return sids

    def skip(self, seq: int, num: int, ts: int) -> None:
        """Sequences [seq, seq + num) were consumed without a message."""
        last = seq + num - 1
        if self.msgs:
            p = self.tail
            if p is None:
                p = self.start_page(seq)
            p.extend_dead(num, ts)
        self.last_seq = last
        self.last_ts = ts
        if not self.msgs:
            self.first_seq = last + 1
            self.first_ts = 0
            self.clear_slots()

    # ------------------------------------------------------------------------------------
    # Removing
    # ------------------------------------------------------------------------------------
    def remove(self, p: Page, k: int) -> None:
        """Remove the live message in slot ``k`` of page ``p`` (from `at`); the first
        sequence advances past it."""
        sids = p.sids
        sid = sids[k]
        seq = p.first + k
        sids[k] = 0
        p.locs[k] = 0
        size = p.sizes[k]
        p.sizes[k] = 0
        p.msgs -= 1
        p.bytes -= size
        p.drop(sid, 1)
        if p.image:
            p.dels.append(seq)
        self.msgs -= 1
        self.bytes -= size
        self._subject_drop_one(sid, seq)
        if seq == self.first_seq:
            self._advance_first_from(seq + 1)
        if not p.msgs and p is not self.tail:
            self._drop_page(p)

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
            table.last[sid] = table.first[sid] if m == 1 else self._subj_prev(seq, sid)

    def _subj_next(self, seq: int, sid: int) -> int:
        """Next live sequence on subject ``sid`` after (the possibly dead) ``seq``: its link in
        its page, past dead ones (a long dead stretch is looked up instead: interior deletes; the
        link is set to the answer), then the next page that has the subject."""
        p = self.page(seq)
        if p is None:
            i = self._pi(seq)
        else:
            f = p.first
            nxt = p.nxt
            sids = p.sids
            n = nxt[seq - f]
            hops = 0
            while n and not sids[n - f]:
                n = nxt[n - f]
                hops += 1
                if hops >= _HOPS_MAX and n:
                    j = find_value(sids, sid, n - f, p.n)
                    n = f + j if j >= 0 else 0
                    break
            self.steps += hops
            nxt[seq - f] = n
            if n:
                return n
            i = bisect_right(self.firsts, f)
        return self._subject_from(sid, i, 0)

    def _subject_from(self, sid: int, i: int, seq: int) -> int:
        """The first live sequence >= ``seq`` on ``sid`` in the pages from position ``i`` on
        (the pages' counts say which to look in), or 0."""
        pages = self.pages
        last = self.subjects.last[sid]
        while i < len(pages):
            p = pages[i]
            if p.first > last:
                break
            i += 1
            self.visits += 1
            if not p.count(sid):
                continue
            self._use(p)
            j = find_value(p.sids, sid, max(seq - p.first, 0), p.n)
            if j >= 0:
                return p.first + j
        return 0

    def _subj_prev(self, seq: int, sid: int) -> int:
        """The last live sequence below ``seq`` on subject ``sid``, or 0."""
        lo = self.subjects.first[sid]
        pages = self.pages
        i = bisect_right(self.firsts, seq - 1) - 1
        while i >= 0:
            p = pages[i]
            i -= 1
            if p.first + p.n <= lo:
                break
            self.visits += 1
            if not p.count(sid):
                continue
            self._use(p)
            hi = min(seq - p.first, p.n)
            j = rfind_value(p.sids, sid, max(lo - p.first, 0), hi)
            if j >= 0:
                self.steps += hi - j
                return p.first + j
        return 0

    def _advance_first_from(self, seq: int) -> None:
        p = self.hot
        k = seq - p.first
        if 0 <= k < p.n and p.sids[k]:  # the next one is there (acks in order, limits)
            self.first_seq = seq
            self.first_ts = p.tss[k]
            return
        j = self._next_live(seq) if self.msgs else 0
        if not j:
            self.first_seq = self.last_seq + 1
            self.first_ts = 0
            self.clear_slots()
        else:
            self.first_seq = j
            self.first_ts = self.ts_of(j)

    def ts_of(self, seq: int) -> int:
        """Timestamp of the (covered) sequence ``seq``."""
        p = self.page(seq)
        assert p is not None
        return p.tss[seq - p.first]

    def size_of(self, seq: int) -> int:
        """Accounted size of the message at ``seq`` (0: none)."""
        p = self.page(seq)
        return p.sizes[seq - p.first] if p is not None else 0

    def remove_prefix(self, hi: int) -> int:
        """Remove every live message below sequence ``hi``; return how many. Whole pages go
        without being loaded (their counts say what leaves); only the page holding ``hi`` is
        looked at."""
        if not self.msgs or hi <= self.first_seq:
            return 0
        lost: Counter[int] = Counter()
        purged = nbytes = whole = 0
        pages = self.pages
        for p in pages:
            if p.first >= hi:
                break
            if p.first + p.n <= hi and p is not self.tail:
                for sid, c in p.subjects():
                    lost[sid] += c
                purged += p.msgs
                nbytes += p.bytes
                whole += 1
                continue
            c, b = self._cut_front(p, hi - p.first, lost)
            purged += c
            nbytes += b
            if not p.msgs and p is not self.tail:
                whole += 1  # (nothing left in it either)
            break
        for p in pages[:whole]:
            self._uncache(p)
        del pages[:whole], self.firsts[:whole]
        self.hot = _NO_PAGE
        if not purged:
            return 0
        self.msgs -= purged
        self.bytes -= nbytes
        table = self.subjects
        fix = [sid for sid, m in self._subjects_lose(lost) if m]
        found = self._firsts_from(fix, hi)
        for sid in fix:
            table.first[sid] = found[sid]
        self._advance_first_from(hi)
        return purged

    def _cut_front(self, p: Page, k: int, lost: Counter[int]) -> tuple[int, int]:
        """Empty slots [0, k) of page ``p``: (messages, bytes) removed, their subjects counted
        into ``lost``."""
        self._use(p)
        k = min(k, p.n)
        sids = p.sids
        counts = Counter(sids[:k])
        counts.pop(0, None)
        if not counts:
            return 0, 0
        c = sum(counts.values())
        b = sum(p.sizes[:k])
        if p.image:
            if len(p.dels) + c > DELS_MAX:
                p.image = False
                p.dels = []
            else:
                f = p.first
                j = next_nonzero(sids, 0, k)
                while j >= 0:
                    p.dels.append(f + j)
                    j = next_nonzero(sids, j + 1, k)
        zero_fill(sids, 0, k)
        zero_fill(p.sizes, 0, k)
        zero_fill(p.locs, 0, k)
        for sid, m in counts.items():
            p.drop(sid, m)
            lost[sid] += m
        p.msgs -= c
        p.bytes -= b
        return c, b

    def _firsts_from(self, wanted: list[int], seq: int) -> dict[int, int]:
        """The first live sequence >= ``seq`` of each subject in ``wanted`` (each has one): the
        pages from ``seq`` on, one pass over each page that holds one of them."""
        out: dict[int, int] = {}
        want = set(wanted)
        pages = self.pages
        i = self._pi(seq)
        while want and i < len(pages):
            p = pages[i]
            i += 1
            self.visits += 1
            have = [sid for sid in want if p.count(sid)]
            if not have:
                continue
            self._use(p)
            k = max(seq - p.first, 0)
            if len(have) <= _PER_SUBJECT_MAX:
                for sid in have:
                    out[sid] = p.first + find_value(p.sids, sid, k, p.n)
            else:
                seg = p.sids[k:]
                pos = dict(zip(reversed(seg), range(len(seg) - 1, -1, -1), strict=True))
                for sid in have:
                    out[sid] = p.first + k + pos[sid]
            want.difference_update(have)
        return out

    def _subjects_lose(self, counts: Counter[int]) -> list[tuple[int, int]]:
        """Take ``counts[sid]`` messages off each subject, release the subjects left with none,
        and return ``(sid, messages left)`` of each (whose first or last the caller fixes)."""
        table = self.subjects
        out: list[tuple[int, int]] = []
        for sid, c in counts.items():
            m = table.msgs[sid] - c
            if m <= 0:
                table.release(sid)
                out.append((sid, 0))
            else:
                table.msgs[sid] = m
                out.append((sid, m))
        return out

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

    def truncate(self, seq: int) -> None:
        """Remove every message above ``seq`` (a live message)."""
        self._drop_from(seq + 1)
        self.last_seq = seq
        self.last_ts = self.ts_of(seq)

    def drop_after(self, seq: int, last_ts: int) -> None:
        """Forget every sequence above ``seq`` (whatever it holds): a write that failed is
        taken back, and ``last_ts`` is the stream's last time stamp at ``seq``."""
        if seq >= self.last_seq:
            return
        self._drop_from(seq + 1)
        self.last_seq = seq
        self.last_ts = last_ts
        if not self.msgs:
            self.first_seq = seq + 1 if seq else 0
            self.first_ts = 0
            self.clear_slots()

    def _drop_from(self, lo: int) -> None:
        """Cut every sequence from ``lo`` on: their messages leave the counters and the subject
        table, no link points at them any more, and the page left holding ``lo - 1`` is the
        tail again."""
        self.subjects.forget_positions()  # these sequences will be taken again
        pages = self.pages
        i = self._pi(lo)
        lost: Counter[int] = Counter()
        gone = 0
        for p in pages[i:]:
            if p.first >= lo:
                for sid, c in p.subjects():
                    lost[sid] += c
                gone += p.msgs
                self.bytes -= p.bytes
                self._uncache(p)
                continue
            gone += self._cut_back(p, lo - p.first, lost)
        keep = i + 1 if i < len(pages) and pages[i].first < lo else i
        del pages[keep:], self.firsts[keep:]
        self.tail = None
        self.hot = _NO_PAGE
        if pages and pages[-1].first + pages[-1].n == lo:
            self.reopen()
        self.msgs -= gone
        table = self.subjects
        for sid, m in self._subjects_lose(lost):
            if m:
                table.last[sid] = table.first[sid] if m == 1 else self._subj_prev(lo, sid)

    def _cut_back(self, p: Page, k: int, lost: Counter[int]) -> int:
        """Cut page ``p`` to its slots [0, k): the messages removed (counted into ``lost``)."""
        self._use(p)
        self._uncache(p)
        sids = p.sids
        counts = Counter(sids[k:])
        counts.pop(0, None)
        c = sum(counts.values())
        b = sum(p.sizes[k:])
        for sid, m in counts.items():
            p.drop(sid, m)
            lost[sid] += m
        del sids[k:], p.tss[k:], p.sizes[k:], p.locs[k:], p.nxt[k:]
        nxt = p.nxt
        end = p.first + k
        for j in range(k):
            if nxt[j] >= end:
                nxt[j] = 0
        p.n = k
        p.msgs -= c
        p.bytes -= b
        self.bytes -= b
        p.image = False
        p.dels = []
        return c

    # ------------------------------------------------------------------------------------
    # Recovery (seqstate.py, seqrecover.py)
    # ------------------------------------------------------------------------------------
    def recover(
        self,
        blocks: Iterable[seqstate.Block],
        state: seqstate.StateView | None,
        kept: list[tuple[int, int, int]] | None = None,
    ) -> list[Page]:
        """Build the index from a backend's blocks, in sequence order, and the stream state a stop
        or sync left (None: from the blocks alone; ``kept``: the deletes in blocks it vouched
        for); returns the state's pages of blocks that are gone (`seqstate.recover`)."""
        return seqstate.recover(self, blocks, state, kept)

    def block_slots(self, first: int, end: int) -> BlockSlots:
        """The slots of sequences [first, end) as a `BlockSlots` (a block's saved index)."""
        return seqrecover.block_slots(self, first, end)

    def state(self) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]]:
        """``(header, arrays, subject names)`` of the stream state (`seqstate.encode`)."""
        return seqstate.encode(self)


_NO_PAGE = Page(0)  # covers nothing: `SeqIndex.hot` when no page was found yet

#: Removals since a page's image (``Page.dels``, up to `DELS_MAX`) are looked up by a scan up to
#: this many, past it in a set kept for the list (`_removed`), the last `_DELS_SETS_MAX` lists.
DELS_SCAN = 32
_DELS_SETS_MAX = 16
_dels_sets: dict[int, tuple[list[int], list[int], set[int]]] = {}  # id -> (the list, [its length seen], set)


def _removed(dels: list[int], seq: int) -> bool:
    """Whether ``seq`` is in ``dels`` (a page's removals since its image: a get by sequence of an
    evicted page asks before peeking at it). A scan of 4,096 cost ~20 µs a get; the set kept for
    the list grows with it (``dels`` only grows in place: a page gets a new list when its
    removals are applied), so a get costs O(1) amortized however many removals wait."""
    if len(dels) <= DELS_SCAN:
        return seq in dels
    got = _dels_sets.pop(id(dels), None)
    if got is None or got[1][0] > len(dels):
        if got is None and len(_dels_sets) >= _DELS_SETS_MAX:
            del _dels_sets[next(iter(_dels_sets))]
        got = (dels, [0], set())  # (the list held: its id is not reused while kept)
    seen = got[1]
    if seen[0] < len(dels):
        got[2].update(dels[seen[0] :])
        seen[0] = len(dels)
    _dels_sets[id(dels)] = got
    return seq in got[2]
