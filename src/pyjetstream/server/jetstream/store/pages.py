"""A page of the sequence index: the slots of one range of sequences, and what stays resident
about them when the slots do not (nats-server's ``msgBlock``: first/last, live msgs and bytes,
per-subject counts ``fss``; its cache is what a page's arrays are here).

A `Page` covers sequences ``[first, first + n)``. Its slots are five parallel arrays (slot k =
sequence ``first + k``): ``sids`` (subject id, 0 = no message), ``tss`` (timestamp, kept after a
deletion so the column stays sorted), ``sizes`` (accounted size, 0 when gone), ``locs`` (the
backend's locator), ``nxt`` (the next sequence on the same subject *in this page*, 0 at the
subject's last one here). The file store's pages are its blocks, and a sealed block's page may be
evicted: its arrays are then empty (``loaded`` False) and are loaded again from the block's index file.

Always resident: ``msgs``/``bytes`` (live), ``ts_last`` (the last slot's timestamp), and the live
count of each subject in the page — a dict while the page takes appends, then two sorted arrays
(``sub_ids``, ``sub_cnt``: 8 bytes a subject), so that a query steps over a page without a subject
it wants without loading it. ``dels`` lists the sequences removed since the page's image on disk
was written (``image``), to apply when the arrays are loaded again.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from itertools import compress

__all__ = ["Page"]

#: Lookups in a sealed page's subject counts that took the bisection (`Page._at`; tests count).
BISECTS = 0


class Page:
    """One page of the index (see the module docstring)."""

    __slots__ = (
        "bytes",
        "dels",
        "first",
        "image",
        "loaded",
        "locs",
        "msgs",
        "n",
        "nxt",
        "sids",
        "sizes",
        "sub",
        "sub_cnt",
        "sub_ids",
        "ts_last",
        "tss",
    )

    def __init__(self, first: int) -> None:
        self.first = first
        self.n = 0
        self.sids: array[int] = array("I")
        self.tss: array[int] = array("q")
        self.sizes: array[int] = array("I")
        self.locs: array[int] = array("Q")
        self.nxt: array[int] = array("Q")
        self.loaded = True
        self.msgs = 0
        self.bytes = 0
        self.ts_last = 0
        self.sub: dict[int, int] | None = {}
        self.sub_ids = _EMPTY_I
        self.sub_cnt = _EMPTY_I
        self.dels: list[int] = []
        self.image = False

    def __repr__(self) -> str:
        state = "open" if self.sub is not None else "sealed" if self.loaded else "evicted"
        return f"Page({self.first}+{self.n}, {self.msgs} msgs, {state})"

    @property
    def end(self) -> int:
        """One past the last sequence the page covers."""
        return self.first + self.n

    # ------------------------------------------------------------------------------------
    # Per-subject live counts
    # ------------------------------------------------------------------------------------
    def count(self, sid: int) -> int:
        """Live messages on subject ``sid`` in the page."""
        sub = self.sub
        if sub is not None:
            return sub.get(sid, 0)
        i = self._at(sid)
        return self.sub_cnt[i] if i >= 0 else 0

    def drop(self, sid: int, c: int) -> None:
        """``c`` messages on ``sid`` left the page."""
        sub = self.sub
        if sub is not None:
            m = sub[sid] - c
            if m:
                sub[sid] = m
            else:
                del sub[sid]
            return
        self.sub_cnt[self._at(sid)] -= c

    def _at(self, sid: int) -> int:
        """Where ``sid`` is in the sealed page's ``sub_ids`` (-1: not there): guessed first from
        the ids' spread, which is exact where they are consecutive — a block of a KV bucket's
        first puts, of subjects first seen in it —, else looked up by halves. A bisection of an
        array makes an int of each probe: ~0.57 µs in 100,000 ids, where the guess is ~0.19 (a
        put under ``max_msgs_per_subject`` drops its subject's count in the page it trims)."""
        ids = self.sub_ids
        last = len(ids) - 1
        if last > 0:
            lo = ids[0]
            off = sid - lo
            span = ids[last] - lo
            if 0 <= off <= span:
                g = off * last // span
                if ids[g] == sid:
                    return g
        global BISECTS
        BISECTS += 1
        i = bisect_left(ids, sid)
        return i if i <= last and ids[i] == sid else -1

    def subjects(self) -> list[tuple[int, int]]:
        """``(sid, live count)`` of every subject with a message in the page."""
        if self.sub is not None:
            return list(self.sub.items())
        if not self.sub_cnt.count(0):  # (C passes: a restart's page of 100,000 subjects)
            return list(zip(self.sub_ids, self.sub_cnt, strict=True))
        return [(sid, c) for sid, c in zip(self.sub_ids, self.sub_cnt, strict=True) if c]

    def subject_columns(self) -> tuple[array[int], array[int]]:
        """`subjects` as two columns by id (the stream state's ``sub_ids`` / ``sub_cnt``): a
        sealed page's own arrays (kept in id order), without the ids whose count is 0; an open
        page's counts sorted by id. C passes, no Python step per subject."""
        sub = self.sub
        if sub is not None:
            ids = sorted(sub)
            return array("I", ids), array("I", map(sub.__getitem__, ids))
        counts = self.sub_cnt
        if not counts.count(0):
            return self.sub_ids, counts
        return array("I", compress(self.sub_ids, counts)), array("I", compress(counts, counts))

    def seal(self) -> None:
        """No more appends: the counts go into the compact arrays."""
        sub = self.sub
        if sub is None:
            return
        ids = sorted(sub)
        self.sub_ids = array("I", ids)
        self.sub_cnt = array("I", [sub[sid] for sid in ids])
        self.sub = None

    def unseal(self) -> None:
        """Appends again (the page's block is active again)."""
        if self.sub is None:
            if self.sub_cnt.count(0):
                self.sub = dict(self.subjects())
            else:
                self.sub = dict(zip(self.sub_ids, self.sub_cnt, strict=True))
            self.sub_ids = self.sub_cnt = _EMPTY_I

    def set_counts(self, counts: dict[int, int] | Counter[int]) -> None:
        """The subjects' live counts, from a count of the slots (recovery, a rewrite)."""
        counts = {sid: c for sid, c in counts.items() if sid and c}
        if self.sub is not None:
            self.sub = counts
        else:
            ids = sorted(counts)
            self.sub_ids = array("I", ids)
            self.sub_cnt = array("I", [counts[sid] for sid in ids])

    def extend_dead(self, n: int, ts: int) -> None:
        """``n`` slots without a message at the end (a skip, or a gap up to the last sequence)."""
        self.sids.extend(array("I", bytes(4 * n)))
        self.tss.extend(array("q", [ts]) * n)
        self.sizes.extend(array("I", bytes(4 * n)))
        self.locs.extend(array("Q", bytes(8 * n)))
        self.nxt.extend(array("Q", bytes(8 * n)))
        self.n += n

    def drop_arrays(self) -> None:
        """Forget the slots (evicted: loaded again on demand); they read as empty meanwhile."""
        self.sids = self.sizes = _EMPTY_I
        self.tss = _EMPTY_q
        self.locs = self.nxt = _EMPTY_Q
        self.loaded = False

    def set_arrays(
        self, sids: array[int], tss: array[int], sizes: array[int], locs: array[int], nxt: array[int]
    ) -> None:
        self.sids, self.tss, self.sizes, self.locs, self.nxt = sids, tss, sizes, locs, nxt
        self.loaded = True

    def summary_bytes(self) -> int:
        """Resident bytes of what a page keeps without its arrays (for the memory accounting)."""
        if self.sub is not None:
            return 64 * len(self.sub)
        return 8 * len(self.sub_ids) + 8 * len(self.dels)


_EMPTY_I: array[int] = array("I")
_EMPTY_q: array[int] = array("q")
_EMPTY_Q: array[int] = array("Q")
