"""In-memory index pieces shared by both stores: the subject table and fast array scans.

The stores keep one slot per sequence in parallel ``array``s (subject id, timestamp, size,
next-same-subject link). Scans over those arrays are done in C where possible — ``re`` over
the raw buffer for "where is subject id X", chunks compared with zeros for "next live slot" —
because a Python loop per slot is ~50x slower.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Sequence
from typing import Any, cast

from pyjetstream.protocol.gsl import GenericSublist
from pyjetstream.protocol.subjects import Matcher, compile_filter, has_wildcard, is_match_all

from .subject_tree import SubjectTree

# Cached filter matches (wildcard filters and sets of filters): at most this many entries, and
# about this many subject ids over all of them (the oldest go first).
_MATCH_CACHE_MAX = 64
_MATCH_CACHE_SIDS = 1 << 20
#: A new subject finds the cached filter matches it joins in a trie of their filters
#: (a `GenericSublist` of the filters, each holding the keys of the matches it is in: its tokens
#: walked), not by testing every cached filter (up to 64 entries of any
#: number of filters each). Off: every cached filter tested (`tests/store/test_filter_index.py`
#: proves both keep the same matches).
INDEXED_FILTERS = True
#: `SubjectTable.name_order` keeps the last filter's matching ids sorted by name while no subject
#: comes or goes (``changes``), so the pages of STREAM.INFO's ``subjects_filter`` after the first,
#: and the same listing asked again, cost their page, not a sort of every matching subject (nats-server
#: sorts them all for every page: ``jsStreamInfoRequest``, and its ``json.Marshal`` sorts the map).
#: Off: sorted again at every call (`tests/store/test_subjects_page_steps.py` proves both give the same
#: pages).
SORTED_MEMO = True


class FilterMatch:
    """The subjects one filter (or a set of filters) matches, kept up to date as subjects come and
    go — what a wildcard consumer's every read asks. ``sids`` is the set of matching subject ids,
    or None when every subject in the table matches (then a query needs no id test at all: the
    KV watcher's case, its filter being the bucket's one subject space).

    ``eof_lo``/``eof_hi``: sequences known to hold no matching message (0/−1: none known). A scan
    that reached the end with no match records it, so a consumer waiting at the tail of a stream
    of other subjects does not scan the same stretch again (nats-server moves the consumer's
    ``sseq`` past the end instead: ``getNextMsg`` with ``ErrStoreEOF``). Sequences are never
    reused while the hint lives: a truncate or a write taken back clears every hint
    (`SubjectTable.forget_positions`).
    """

    __slots__ = ("eof_hi", "eof_lo", "filters", "matchers", "sids")

    def __init__(self, filters: tuple[str, ...], sids: set[int] | None) -> None:
        self.filters = filters
        self.matchers: list[Matcher] | None = None  # compiled when a new subject first asks
        self.sids = sids
        self.eof_lo = 0
        self.eof_hi = -1

    def matches(self, subject: str) -> bool:
        matchers = self.matchers
        if matchers is None:
            matchers = self.matchers = [compile_filter(f) for f in self.filters]
        return any(m(subject) for m in matchers)


class SubjectTable:
    """Interned subjects (id 0 is reserved for "no message") with per-subject msgs/first/last,
    and the `SubjectTree` of their names for wildcard lookups.

    The tree is built when a wildcard lookup first asks (`_live_tree`), then kept up to date: a
    stream nobody asks by wildcard (a publish on a new subject, a restart's recovery) does not
    pay a tree insert per subject — ~0.4 us, half of what a new subject cost here, where
    nats-server pays its ``psim`` insert (``fileStore.storeRawMsg``). ``tree_inserts`` counts the
    inserts (the step tests read it): at most one per subject interned, whenever it was built.

    Invariants: ``ids[names[sid]] == sid`` for every live id; ``free`` lists the ids whose name is
    None; the tree, once ``tree_live``, holds exactly the live subjects (before: nothing); every
    cached `FilterMatch` holds exactly the live ids its filters match (None: all of them);
    ``changes`` grows with every subject interned or released, and ``_order`` (`name_order`'s memo)
    was made at its current value or is not used.
    """

    __slots__ = (
        "_asked",
        "_cache",
        "_cached_sids",
        "_filters",
        "_order",
        "_whole",
        "changes",
        "first",
        "free",
        "ids",
        "last",
        "msgs",
        "names",
        "order_sorts",
        "tree",
        "tree_inserts",
        "tree_live",
    )

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str | None] = [None]
        self.msgs = array("Q", [0])
        self.first = array("Q", [0])
        self.last = array("Q", [0])
        self.free: list[int] = []
        self.tree = SubjectTree()
        self.tree_live = False  # the tree is built (see the class docstring)
        self.tree_inserts = 0
        self._cache: dict[tuple[str, ...], FilterMatch] = {}
        self._cached_sids = 0
        # The cached matches' filters, each holding the keys of the matches it is in (`INDEXED_FILTERS`).
        self._filters: GenericSublist[tuple[str, ...]] = GenericSublist()
        self._whole: set[tuple[str, ...]] = set()  # the cached matches of every subject (sids None)
        self.changes = 0  # subjects interned or released (`name_order`'s memo is valid while unchanged)
        self._order: tuple[str, int, array[int]] | None = None  # (filter, changes, ids by name)
        self._asked: tuple[str, int] | None = None  # (filter, changes) of the last `name_order` not sorted
        self.order_sorts = 0  # ids `name_order` sorted (the step tests read it)

    def __len__(self) -> int:
        return len(self.ids)

    def adopt(self, names: list[str | None], msgs: array[int], first: array[int], last: array[int]) -> None:
        """Take a whole table (recovery, restore): ``names[sid]`` (None: a free id) and the
        per-subject columns."""
        self.names = names
        self.msgs, self.first, self.last = msgs, first, last
        self.ids = ids_of(names)
        # (the free ids: every None but id 0's; found by C searches, a restart's 100,000 subjects)
        self.free = [sid for sid in positions(names, None) if sid]
        self.tree = SubjectTree()
        self.tree_live = False
        self._cache = {}
        self._cached_sids = 0
        self._filters = GenericSublist()
        self._whole = set()
        self.changes += 1
        self._order = self._asked = None

    def intern(self, subject: str, seq: int = 0) -> int:
        """Id for a subject not in the table yet: msgs/first/last start at 0, or at its first
        message ``seq`` when given (1/seq/seq: what the caller would write next)."""
        n = 1 if seq else 0
        if self.free:
            sid = self.free.pop()
            self.names[sid] = subject
            self.msgs[sid] = n
            self.first[sid] = seq
            self.last[sid] = seq
        else:
            sid = len(self.names)
            self.names.append(subject)
            self.msgs.append(n)
            self.first.append(seq)
            self.last.append(seq)
        self.ids[subject] = sid
        self.changes += 1
        if self.tree_live:
            self.tree.insert(subject, sid)
            self.tree_inserts += 1
        if self._cache:
            self._cache_add(subject, sid)
        return sid

    def _cache_add(self, subject: str, sid: int) -> None:
        """A new subject joins the cached matches whose filters match it; a match of every subject
        that it does not join goes (built again when next asked)."""
        if INDEXED_FILTERS:
            self._cache_add_indexed(subject, sid)
            return
        n = len(self.ids)
        for key, fm in list(self._cache.items()):
            if fm.matches(subject):
                self._join(key, fm, sid, n)
            elif fm.sids is None:
                self._uncache(key)  # no longer every subject: built again when next asked

    def _cache_add_indexed(self, subject: str, sid: int) -> None:
        """`_cache_add` for the cached matches the subject's tokens lead to (`_filters`)."""
        n = len(self.ids)
        cache = self._cache
        hit = self._filters.match(subject)
        for key in hit:
            self._join(key, cache[key], sid, n)
        if self._whole:
            held = set(hit)
            for key in [key for key in self._whole if key not in held]:
                self._uncache(key)

    def _join(self, key: tuple[str, ...], fm: FilterMatch, sid: int, n: int) -> None:
        """New subject ``sid`` joins a cached match whose filters match it (one of ``n`` subjects
        now): a match that comes to hold every subject keeps no ids (`_whole`)."""
        sids = fm.sids
        if sids is not None and sid not in sids:  # (a key's filters may overlap: met twice)
            sids.add(sid)
            self._cached_sids += 1
            if len(sids) == n:
                self._cached_sids -= n
                fm.sids = None
                self._whole.add(key)

    def _uncache(self, key: tuple[str, ...]) -> None:
        """A cached match goes (its ids no longer counted, its filters out of the index)."""
        fm = self._cache.pop(key)
        if fm.sids is not None:
            self._cached_sids -= len(fm.sids)
        self._whole.discard(key)
        for f in key:
            self._filters.remove(f, key)

    def release(self, sid: int) -> None:
        """Forget a subject whose last message is gone."""
        name = self.names[sid]
        assert name is not None
        del self.ids[name]
        self.changes += 1
        if self.tree_live:
            self.tree.remove(name)
        self.names[sid] = None
        self.msgs[sid] = 0
        self.first[sid] = 0
        self.last[sid] = 0
        self.free.append(sid)
        if self._cache:
            n = len(self.ids)
            # (every cached match, not the index's: one that did not match the subject may now
            # hold every subject; a set test each, cheaper than the index's walk below ~50 of them)
            for fm in self._cache.values():
                sids = fm.sids
                if sids is not None:
                    if sid in sids:
                        sids.discard(sid)
                        self._cached_sids -= 1
                    if len(sids) == n:  # (the one subject it did not match may have gone)
                        self._cached_sids -= n
                        fm.sids = None
                        self._whole.add(fm.filters)

    def clear(self) -> None:
        inserts, sorts, changes = self.tree_inserts, self.order_sorts, self.changes
        self.__init__()  # type: ignore[misc]
        self.tree_inserts, self.order_sorts, self.changes = inserts, sorts, changes + 1

    def _live_tree(self) -> SubjectTree:
        """The tree, built now from the live subjects if no wildcard lookup asked before."""
        tree = self.tree
        if not self.tree_live:
            insert = tree.insert
            for name, sid in self.ids.items():
                insert(name, sid)
            self.tree_inserts += len(self.ids)
            self.tree_live = True
        return tree

    def forget_positions(self) -> None:
        """Sequences may be taken again (truncate, a write taken back): drop every EOF hint."""
        for fm in self._cache.values():
            fm.eof_lo, fm.eof_hi = 0, -1

    def matching(self, filter_subject: str) -> list[int] | set[int]:
        """Ids of the subjects matching a filter (literal: zero or one id): a request's one look
        (STREAM.INFO's subjects, a purge, ``multi_last``), answered from the cache when a
        consumer's reads put the filter there, else by a walk of the tree that is not kept."""
        if is_match_all(filter_subject):
            return list(self.ids.values())
        if not has_wildcard(filter_subject):
            sid = self.ids.get(filter_subject)
            return [sid] if sid else []
        fm = self._cache.get((filter_subject,))
        if fm is None:
            return self._live_tree().match(filter_subject)
        return list(self.ids.values()) if fm.sids is None else fm.sids

    def name_order(self, filter_subject: str, now: bool) -> array[int] | None:
        """The ids of the subjects matching a filter, sorted by name: the order of Go's
        ``json.Marshal`` of a map, in which nats-server pages STREAM.INFO's ``subjects_filter``.
        Kept for that filter until a subject comes or goes (`SORTED_MEMO`; one filter, the last
        one sorted, 4 bytes a matching subject): the next page, or the same listing asked again,
        is a slice. Sorted ``now``, or when asked twice with no subject changed in between; else
        None (once): a one-page listing of subjects that keep changing sorts as it is written
        (msgspec's sort in C), cheaper than a sort here when the names lie scattered in memory
        (``order_sorts`` counts the ids sorted here)."""
        memo = self._order
        if memo is not None and memo[0] == filter_subject and memo[1] == self.changes:
            return memo[2]
        if not now and (not SORTED_MEMO or self._asked != (filter_subject, self.changes)):
            self._asked = (filter_subject, self.changes)
            return None
        sids = list(self.matching(filter_subject))
        self.order_sorts += len(sids)
        sids.sort(key=cast(Callable[[int], str], self.names.__getitem__))  # (live ids: never None)
        order = array("I", sids)
        self._order = (filter_subject, self.changes, order) if SORTED_MEMO else None
        return order

    def match(self, filters: tuple[str, ...]) -> FilterMatch:
        """The cached `FilterMatch` of a set of filters (none of them ``>``), built by
        walking the tree (the matching subjects, not all of them) when not cached."""
        cache = self._cache
        fm = cache.get(filters)
        if fm is not None:
            if len(cache) > 1:  # most recently used last
                del cache[filters]
                cache[filters] = fm
            return fm
        tree = self._live_tree()
        if len(filters) == 1:
            found: set[int] = set(tree.match(filters[0]))
        else:
            found = set()
            for f in filters:
                found.update(tree.match(f))
        whole = len(found) == len(self.ids)
        fm = FilterMatch(filters, None if whole else found)
        size = 0 if whole else len(found)
        while cache and (len(cache) >= _MATCH_CACHE_MAX or self._cached_sids + size > _MATCH_CACHE_SIDS):
            self._uncache(next(iter(cache)))
        cache[filters] = fm
        self._cached_sids += size
        if whole:
            self._whole.add(filters)
        for f in filters:
            self._filters.insert(f, filters)
        return fm

    def live_items(self) -> list[tuple[str, int]]:
        return list(self.ids.items())


# --------------------------------------------------------------------------------------------
# Array scans. ``arr`` holds 4-byte unsigned items (array("I")) unless said otherwise.
# --------------------------------------------------------------------------------------------


#: Compiled searches for a subject id's 4 bytes, by id (emptied when full).
_PATTERNS: dict[int, re.Pattern[bytes]] = {}
_PATTERNS_MAX = 4096
#: Slots a value without a compiled search is looked for in with byte searches (about what a
#: compile costs) before one is compiled for it.
_NEAR = 16384
#: Whether `find_value` (`rfind_value`) steps over a run of dead (zero) slots where its search starts
#: with `next_nonzero` (`prev_nonzero`, ~0.2 ns a slot) rather than letting the search go over it
#: (~1.2 ns a slot): the next message on a subject after 1M interior deletes searched the ~33,000
#: dead slots that began the next block at every get, ~40 µs (``--dim gaps``, ``next_by_subj``).
#: Off, the same answers.
SKIP_DEAD_RUNS = True
#: Slots `find_value` handed to its searches, past any dead run it stepped over (a counter for
#: tests/store/test_zero_runs.py).
searched = 0


def positions(values: Sequence[Any], value: Any) -> list[int]:
    """The indexes where ``value`` stands in ``values``, ascending: found by C searches
    (``count``, ``index``), one Python step per one found, none per value (a restart's 100,000
    subjects: their free ids, the ids without messages, the names' free slots)."""
    found: list[int] = []
    at = -1
    for _ in range(values.count(value)):
        at = values.index(value, at + 1)
        found.append(at)
    return found


def ids_of(names: list[str | None]) -> dict[str, int]:
    """Each subject's id in a table's names (``names[sid]``; None: a free id), in sid order, made
    in C passes (a dict comprehension over a restart's 100,000 subjects took ~15 ms)."""
    ids = dict(zip(names, range(len(names)), strict=True))
    ids.pop(None, None)
    return cast("dict[str, int]", ids)


def find_value(arr: array[int], value: int, lo: int, hi: int) -> int:
    """Index of the first ``arr[i] == value`` with lo <= i < hi, or -1: a regex search of the
    items' bytes, compiled once per value — but a value without one is first looked for in the
    next `_NEAR` slots with byte searches over chunks growing fourfold (with more subjects than
    `_PATTERNS` holds, every search compiled one, ~10-30 us, where a byte search of the slots
    it went over cost less: a subject delete marker's roll-up searched three times)."""
    global searched
    if hi - lo <= 24:
        for i in range(lo, hi):
            if arr[i] == value:
                return i
        return -1
    if SKIP_DEAD_RUNS and value and not arr[lo]:  # (a live value is not in a dead run)
        lo = next_nonzero(arr, lo, hi)
        if lo < 0:
            return -1
    searched += hi - lo
    pattern = _PATTERNS.get(value)
    if pattern is None:
        needle = value.to_bytes(4, "little")
        near = min(hi, lo + _NEAR)
        step = 64
        while lo < near:
            end = min(near, lo + step)
            chunk = arr[lo:end].tobytes()
            p = chunk.find(needle)
            while p != -1:
                if not p & 3:  # (an aligned match lies inside one item: never across two chunks)
                    return lo + (p >> 2)
                p = chunk.find(needle, (p | 3) + 1)
            lo, step = end, step * 4
        if lo >= hi:
            return -1
        if len(_PATTERNS) >= _PATTERNS_MAX:
            _PATTERNS.clear()
        pattern = _PATTERNS[value] = re.compile(re.escape(needle))
    search = pattern.search
    pos, stop = lo * 4, hi * 4
    while True:
        m = search(arr, pos, stop)
        if m is None:
            return -1
        p = m.start()
        if not p & 3:
            return p >> 2
        pos = (p | 3) + 1


def rfind_value(arr: array[int], value: int, lo: int, hi: int) -> int:
    """Index of the last ``arr[i] == value`` with lo <= i < hi, or -1 (a dead run where the search
    starts, at ``hi``, stepped over first: `SKIP_DEAD_RUNS`)."""
    if SKIP_DEAD_RUNS and value and hi - lo > 24 and not arr[hi - 1]:
        hi = prev_nonzero(arr, lo, hi) + 1
        if hi <= 0:
            return -1
    needle = value.to_bytes(4, "little")
    end, step = hi, 32
    while end > lo:
        start = max(lo, end - step)
        chunk = arr[start:end].tobytes()
        p = chunk.rfind(needle)
        while p != -1:
            if not p & 3:
                return start + (p >> 2)
            p = chunk.rfind(needle, 0, p + 3)
        end, step = start, step * 4
    return -1


#: A run of zero slots (dead messages) is stepped over in chunks, each compared with zeros in one
#: ``memcmp`` (`next_nonzero`, `prev_nonzero`: ~0.2 ns a slot), the chunks growing four-fold from 256
#: slots; the one holding a live slot is halved the same way down to 64 slots, whose zero bytes are
#: then stripped. False: each chunk's zero bytes stripped (``bytes.lstrip(b"\0")`` tests every
#: byte against its argument: ~14 ns a slot, 2.3 ms to cross the ~160,000 dead slots a filtered
#: purge left in a block, once per consumer crossing them: ``--dim gaps``, ~1.2 µs a delivery).
ZERO_CHUNKS = True
#: The largest chunk compared at once (slots): 64 KiB of ``uint32`` (larger ones measured no faster,
#: and a temporary over glibc's 128 KiB threshold is a fresh mapping each time outside ``serve``).
_CHUNK_MAX = 1 << 14
#: A chunk this small (slots) or smaller has its zero bytes stripped rather than halved.
_STRIP_MAX = 64
#: Zero bytes a chunk is compared with (`_dead`: with as many of them as it has).
_ZEROS = bytes(4 * _CHUNK_MAX)
#: Bytes stripped of their zeros by the scans (`next_nonzero`, `prev_nonzero`): what grows with a
#: dead run where its chunks are stripped (a counter for tests/store/test_zero_runs.py).
stripped = 0


def _dead(b: memoryview, lo: int, hi: int) -> bool:
    """Whether items ``lo`` to ``hi`` of the bytes ``b`` (4 a slot; at most `_CHUNK_MAX` of them)
    are all zero: one ``memcmp`` against `_ZEROS`, neither side copied (``startswith`` takes the view
    as it is: ~35% less than comparing a copy of the chunk with a slice of zeros)."""
    return _ZEROS.startswith(b[4 * lo : 4 * hi])


def next_nonzero(arr: array[int], lo: int, hi: int) -> int:
    """Index of the first non-zero item in [lo, hi), or -1."""
    global stripped
    stop = min(hi, lo + 8)
    i = lo
    while i < stop:
        if arr[i]:
            return i
        i += 1
    step = 256
    if ZERO_CHUNKS:
        with memoryview(arr) as view, view.cast("B") as b:
            while i < hi:
                j = min(hi, i + step)
                if not _dead(b, i, j):
                    return _first_in(b, i, j)
                i, step = j, min(step * 4, _CHUNK_MAX)
        return -1
    while i < hi:
        j = min(hi, i + step)
        chunk = arr[i:j].tobytes()
        stripped += len(chunk)
        rest = chunk.lstrip(b"\0")
        if rest:
            return i + ((len(chunk) - len(rest)) >> 2)
        i, step = j, min(step * 4, 1 << 20)
    return -1


def _first_in(b: memoryview, lo: int, hi: int) -> int:
    """The first non-zero item of items ``lo`` to ``hi`` of the bytes ``b``, which hold one: halves
    compared with zeros until `_STRIP_MAX` items are left, whose zero bytes are stripped."""
    global stripped
    while hi - lo > _STRIP_MAX:
        mid = (lo + hi) >> 1
        if _dead(b, lo, mid):
            lo = mid
        else:
            hi = mid
    chunk = b[4 * lo : 4 * hi].tobytes()
    stripped += len(chunk)
    return lo + ((len(chunk) - len(chunk.lstrip(b"\0"))) >> 2)


def _last_in(b: memoryview, lo: int, hi: int) -> int:
    """`_first_in` for the last non-zero item."""
    global stripped
    while hi - lo > _STRIP_MAX:
        mid = (lo + hi) >> 1
        if _dead(b, mid, hi):
            hi = mid
        else:
            lo = mid
    chunk = b[4 * lo : 4 * hi].tobytes()
    stripped += len(chunk)
    return lo + ((len(chunk.rstrip(b"\0")) - 1) >> 2)


def prev_nonzero(arr: array[int], lo: int, hi: int) -> int:
    """Index of the last non-zero item in [lo, hi), or -1."""
    global stripped
    stop = max(lo, hi - 8)
    i = hi - 1
    while i >= stop:
        if arr[i]:
            return i
        i -= 1
    end, step = stop, 256
    if ZERO_CHUNKS:
        with memoryview(arr) as view, view.cast("B") as b:
            while end > lo:
                start = max(lo, end - step)
                if not _dead(b, start, end):
                    return _last_in(b, start, end)
                end, step = start, min(step * 4, _CHUNK_MAX)
        return -1
    while end > lo:
        start = max(lo, end - step)
        chunk = arr[start:end].tobytes()
        stripped += len(chunk)
        rest = chunk.rstrip(b"\0")
        if rest:
            return start + ((len(rest) - 1) >> 2)
        end, step = start, min(step * 4, 1 << 20)
    return -1


def zero_fill(arr: array[int], lo: int, hi: int) -> None:
    """Set arr[lo:hi] to zeros (C speed)."""
    n = hi - lo
    if n <= 0:
        return
    if n == 1:
        arr[lo] = 0
        return
    arr[lo:hi] = array(arr.typecode, bytes(n * arr.itemsize))


def zeros(typecode: str, n: int) -> array[int]:
    return array(typecode, bytes(n * array(typecode).itemsize))
