"""In-memory index pieces shared by both stores: the subject table and fast array scans.

The stores keep one slot per sequence in parallel ``array``s (subject id, timestamp, size,
next-same-subject link). Scans over those arrays are done in C where possible — ``re`` over
the raw buffer for "where is subject id X", ``bytes.lstrip`` for "next live slot" — because
a Python loop per slot is ~50x slower.
"""

from __future__ import annotations

import re
from array import array
from functools import lru_cache

from pyjetstream.protocol.subjects import compile_filter, has_wildcard, is_match_all

# Wildcard filter -> matching subject-id set, kept up to date incrementally; bounded.
_FILTER_CACHE_MAX = 32


class SubjectTable:
    """Interned subjects (id 0 is reserved for "no message") with per-subject msgs/first/last."""

    __slots__ = ("_filter_cache", "first", "free", "ids", "last", "msgs", "names")

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.names: list[str | None] = [None]
        self.msgs = array("Q", [0])
        self.first = array("Q", [0])
        self.last = array("Q", [0])
        self.free: list[int] = []
        self._filter_cache: dict[str, set[int]] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def intern(self, subject: str) -> int:
        """Id for a subject not in the table yet (msgs/first/last start at 0)."""
        if self.free:
            sid = self.free.pop()
            self.names[sid] = subject
        else:
            sid = len(self.names)
            self.names.append(subject)
            self.msgs.append(0)
            self.first.append(0)
            self.last.append(0)
        self.ids[subject] = sid
        for filt, sids in self._filter_cache.items():
            if compile_filter(filt)(subject):
                sids.add(sid)
        return sid

    def release(self, sid: int) -> None:
        """Forget a subject whose last message is gone."""
        name = self.names[sid]
        assert name is not None
        del self.ids[name]
        self.names[sid] = None
        self.msgs[sid] = 0
        self.first[sid] = 0
        self.last[sid] = 0
        self.free.append(sid)
        for sids in self._filter_cache.values():
            sids.discard(sid)

    def clear(self) -> None:
        self.__init__()  # type: ignore[misc]

    def matching(self, filter_subject: str) -> list[int] | set[int]:
        """Ids of the subjects matching a filter (literal: zero or one id)."""
        if is_match_all(filter_subject):
            return list(self.ids.values())
        if not has_wildcard(filter_subject):
            sid = self.ids.get(filter_subject)
            return [sid] if sid else []
        cached = self._filter_cache.get(filter_subject)
        if cached is not None:
            return cached
        match = compile_filter(filter_subject)
        sids = {sid for subj, sid in self.ids.items() if match(subj)}
        if len(self._filter_cache) >= _FILTER_CACHE_MAX:
            self._filter_cache.pop(next(iter(self._filter_cache)))
        self._filter_cache[filter_subject] = sids
        return sids

    def live_items(self) -> list[tuple[str, int]]:
        return list(self.ids.items())


# --------------------------------------------------------------------------------------------
# Array scans. ``arr`` holds 4-byte unsigned items (array("I")) unless said otherwise.
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _pattern(value: int) -> re.Pattern[bytes]:
    return re.compile(re.escape(value.to_bytes(4, "little")))


def find_value(arr: array[int], value: int, lo: int, hi: int) -> int:
    """Index of the first ``arr[i] == value`` with lo <= i < hi, or -1."""
    if hi - lo <= 24:
        for i in range(lo, hi):
            if arr[i] == value:
                return i
        return -1
    search = _pattern(value).search
    pos, end = lo * 4, hi * 4
    while True:
        m = search(arr, pos, end)
        if m is None:
            return -1
        p = m.start()
        if not p & 3:
            return p >> 2
        pos = (p | 3) + 1


def rfind_value(arr: array[int], value: int, lo: int, hi: int) -> int:
    """Index of the last ``arr[i] == value`` with lo <= i < hi, or -1."""
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


def next_nonzero(arr: array[int], lo: int, hi: int) -> int:
    """Index of the first non-zero item in [lo, hi), or -1."""
    stop = min(hi, lo + 8)
    i = lo
    while i < stop:
        if arr[i]:
            return i
        i += 1
    step = 256
    while i < hi:
        j = min(hi, i + step)
        chunk = arr[i:j].tobytes()
        rest = chunk.lstrip(b"\0")
        if rest:
            return i + ((len(chunk) - len(rest)) >> 2)
        i, step = j, min(step * 4, 1 << 20)
    return -1


def prev_nonzero(arr: array[int], lo: int, hi: int) -> int:
    """Index of the last non-zero item in [lo, hi), or -1."""
    stop = max(lo, hi - 8)
    i = hi - 1
    while i >= stop:
        if arr[i]:
            return i
        i -= 1
    end, step = stop, 256
    while end > lo:
        start = max(lo, end - step)
        chunk = arr[start:end].tobytes()
        rest = chunk.rstrip(b"\0")
        if rest:
            return start + ((len(rest) - 1) >> 2)
        end, step = start, min(step * 4, 1 << 20)
    return -1


_ZEROS: dict[str, array[int]] = {}


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
