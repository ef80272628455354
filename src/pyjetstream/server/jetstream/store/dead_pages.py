"""How many sequences of each page of the index hold no message, so that a query steps over a run
of deleted sequences a page at a time, or a run of fully dead pages at once (issue 24, "interior
deletes": a million deleted sequences in the middle of a stream). nats-server gets the same from its
blocks: a block whose messages are all gone is removed, and ``selectMsgBlock`` skips to the next.

A page is ``PAGE`` consecutive sequences, by absolute number: page ``p`` holds sequences
``p * PAGE + 1`` to ``(p + 1) * PAGE``. ``dead[k]`` counts the sequences of page ``page0 + k`` that
hold no message — deleted, skipped, or below the index's ``base`` (never in its arrays) — and
``gone[k]`` is 1 when that is all of them. Sequences past the last one are not counted (they are
yet to come), so a page is gone only once all of it is behind the end and dead. Pages past the
arrays' end read as 0.

The index tells the pages what dies (``dead_one``, ``dead_range``, ``dead_seqs``), what leaves its
arrays at the front (``trim``) and when to count again from the slots (``recount``: recovery,
restore, a cut at the end). The walks (``next_live``, ``prev_live``, ``find_live``,
``live_from``, ``deleted``) take the slot array and its ``base``; ``steps`` counts the pages they
visit (the complexity tests read it).
"""

from __future__ import annotations

from array import array

from ._index import find_value, next_nonzero, prev_nonzero, zeros

__all__ = ["PAGE", "PAGE_BITS", "DeadPages"]

PAGE_BITS = 12
PAGE = 1 << PAGE_BITS
_MASK = PAGE - 1


class DeadPages:
    """Dead sequences per page of the index (see the module docstring)."""

    __slots__ = ("dead", "gone", "page0", "steps")

    def __init__(self, base: int = 1) -> None:
        self.steps = 0
        self.reset(base)

    def reset(self, base: int) -> None:
        """No slot: pages start at ``base``'s, whose sequences below ``base`` count as dead."""
        self.page0 = (base - 1) >> PAGE_BITS
        self.dead: array[int] = array("H", [(base - 1) & _MASK])
        self.gone = bytearray(1)

    def _grow(self, n: int) -> None:
        k = n - len(self.dead)
        self.dead.extend(zeros("H", k))
        self.gone.extend(bytes(k))

    def _add(self, k: int, n: int) -> None:
        dead = self.dead
        if k >= len(dead):
            self._grow(k + 1)
        d = dead[k] + n
        dead[k] = d
        if d == PAGE:
            self.gone[k] = 1

    def dead_one(self, seq: int) -> None:
        """The message at ``seq`` was removed."""
        self._add(((seq - 1) >> PAGE_BITS) - self.page0, 1)

    def dead_seqs(self, seq: int, n: int) -> None:
        """Sequences ``[seq, seq + n)``, not counted yet, hold no message (a skip)."""
        while n > 0:
            k = min(n, PAGE - ((seq - 1) & _MASK))
            self._add(((seq - 1) >> PAGE_BITS) - self.page0, k)
            seq += k
            n -= k

    def dead_range(self, sids: array[int], base: int, lo: int, hi: int) -> None:
        """Slots ``[lo, hi)`` are about to be emptied: their live ones die (call before)."""
        while lo < hi:
            seq = base + lo
            end = min(hi, lo + PAGE - ((seq - 1) & _MASK))
            live = end - lo - sids[lo:end].count(0)
            if live:
                self._add(((seq - 1) >> PAGE_BITS) - self.page0, live)
            lo = end

    def trim(self, base: int) -> None:
        """The arrays now start at ``base``: forget the pages wholly below it."""
        q = ((base - 1) >> PAGE_BITS) - self.page0
        if q > 0:
            del self.dead[:q], self.gone[:q]
            self.page0 += q
            if not self.dead:
                self.dead.append(0)
                self.gone.append(0)

    def recount(self, sids: array[int], base: int, lo: int = 0) -> None:
        """Count the pages again from slot ``lo`` on (0: all of them, ``page0`` from ``base``)."""
        n = len(sids)
        if lo <= 0:
            self.page0 = (base - 1) >> PAGE_BITS
            self.dead = array("H")
            self.gone = bytearray()
            k = 0
        else:
            k = ((base + lo - 1) >> PAGE_BITS) - self.page0
            del self.dead[k:], self.gone[k:]
        while True:
            first = ((self.page0 + k) << PAGE_BITS) + 1  # the page's first sequence
            a = max(first, base) - base
            b = min(n, first + PAGE - base)
            d = max(0, base - first) + (sids[a:b].count(0) if b > a else 0)
            self.dead.append(d)
            self.gone.append(d == PAGE)
            if b >= n:
                return
            k += 1

    # ------------------------------------------------------------------------------------
    # Walks over the slots, a page at a time
    # ------------------------------------------------------------------------------------
    def _start(self, k: int, base: int) -> int:
        """Slot of page ``page0 + k``'s first sequence (may be below 0)."""
        return ((self.page0 + k) << PAGE_BITS) + 1 - base

    def _past_gone(self, k: int) -> int:
        """The first page at or after ``k`` that is not gone."""
        q = self.gone.find(0, k)
        return len(self.gone) if q < 0 else q

    def next_live(self, sids: array[int], base: int, i: int, hi: int) -> int:
        """Slot of the first message in slots ``[i, hi)``, or -1."""
        gone = self.gone
        page0 = self.page0
        while i < hi:
            k = ((base + i - 1) >> PAGE_BITS) - page0
            self.steps += 1
            if k < len(gone) and gone[k]:
                i = self._start(self._past_gone(k), base)
                continue
            end = ((page0 + k + 1) << PAGE_BITS) + 1 - base
            j = next_nonzero(sids, i, end if end < hi else hi)
            if j >= 0:
                return j
            i = end
        return -1

    def prev_live(self, sids: array[int], base: int, lo: int, hi: int) -> int:
        """Slot of the last message in slots ``[lo, hi)``, or -1."""
        gone = self.gone
        while hi > lo:
            k = ((base + hi - 2) >> PAGE_BITS) - self.page0  # the page of slot hi - 1
            self.steps += 1
            if k < len(gone) and gone[k]:
                q = gone.rfind(0, 0, k)
                hi = self._start(q + 1, base) if q >= 0 else lo
                continue
            start = max(lo, self._start(k, base))
            j = prev_nonzero(sids, start, hi)
            if j >= 0:
                return j
            hi = start
        return -1

    def stretch_end(self, base: int, i: int, hi: int) -> int:
        """Where the pages from slot ``i``'s on stop being alive: the first gone page's start, or
        ``hi`` (``i``'s own page is not gone)."""
        k = ((base + i - 1) >> PAGE_BITS) - self.page0
        g = self.gone.find(1, k + 1)
        if g < 0:
            return hi
        end = self._start(g, base)
        return end if end < hi else hi

    def skip_gone(self, base: int, i: int) -> int:
        """Slot ``i``, or past the run of gone pages it falls in."""
        k = ((base + i - 1) >> PAGE_BITS) - self.page0
        if k < len(self.gone) and self.gone[k]:
            self.steps += 1
            return self._start(self._past_gone(k), base)
        return i

    def find_live(self, sids: array[int], base: int, value: int, i: int, hi: int) -> int:
        """Slot of the first ``value`` in slots ``[i, hi)``, or -1, over the pages not gone."""
        while i < hi:
            i = self.skip_gone(base, i)
            if i >= hi:
                break
            end = self.stretch_end(base, i, hi)
            self.steps += 1
            j = find_value(sids, value, i, end)
            if j >= 0:
                return j
            i = end
        return -1

    def live_from(self, sids: array[int], base: int, lo: int) -> int:
        """Messages in slots ``[lo, len(sids))``: one partial page counted, the rest summed."""
        n = len(sids)
        k = ((base + lo - 1) >> PAGE_BITS) - self.page0
        end = min(n, self._start(k + 1, base))
        live = end - lo - sids[lo:end].count(0)
        self.steps += 1
        return live + (n - end) - sum(self.dead[k + 1 :])

    def deleted(self, sids: array[int], base: int, lo: int) -> list[int]:
        """The sequences of slots ``[lo, len(sids))`` that hold no message, in order."""
        out: list[int] = []
        n = len(sids)
        dead, gone = self.dead, self.gone
        while lo < n:
            k = ((base + lo - 1) >> PAGE_BITS) - self.page0
            end = min(n, self._start(k + 1, base))
            if k < len(gone) and gone[k]:
                out.extend(range(base + lo, base + end))
            elif k < len(dead) and dead[k]:
                at = base + lo
                out.extend(at + j for j, sid in enumerate(sids[lo:end]) if not sid)
            lo = end
        return out
