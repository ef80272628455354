"""A store's per-message TTLs: which message expires when, and which never does.

nats-server keeps a message's TTL in a timed hash wheel beside the file store's index (filestore.go
``ttls``, ``thw``), so finding what expired costs the expired messages, not the store. Here: ``by_seq``
(sequence → TTL in seconds, > 0, or -1 for "never expires", ``Nats-TTL: never``), a heap of
``(expires_ns, seq)`` for the positive ones, and a count of the "never"s, so that ``max_age`` only looks
message by message when one exists. The store owns one (`IndexedStore`); it decides what a removal
means and tells this object to forget.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import itemgetter

from pyjetstream.api.ttl import NS_PER_S

__all__ = ["MessageTTLs"]


class MessageTTLs:
    """Per-message TTLs of one store (see the module docstring)."""

    __slots__ = ("by_seq", "heap", "nevers")

    def __init__(self) -> None:
        self.by_seq: dict[int, int] = {}
        self.heap: list[tuple[int, int]] = []
        self.nevers = 0

    def track(self, seq: int, ts: int, ttl: int) -> None:
        """Message ``seq``, stored at ``ts`` (Unix ns), has ``ttl`` (seconds, or -1: never)."""
        self.by_seq[seq] = ttl
        if ttl > 0:
            heapq.heappush(self.heap, (ts + ttl * NS_PER_S, seq))
        else:
            self.nevers += 1

    def forget(self, seq: int) -> None:
        self.by_seq.pop(seq, None)

    def never_expires(self, seq: int) -> bool:
        return self.nevers > 0 and self.by_seq.get(seq, 0) < 0

    def clear(self) -> None:
        self.by_seq.clear()
        self.heap.clear()
        self.nevers = 0

    def truncate(self, seq: int) -> None:
        """Only the TTLs of messages up to ``seq`` stay (a truncate, a rolled-back write: a later
        message may take the sequences after it again)."""
        if not self.by_seq:
            return
        self.by_seq = {k: v for k, v in self.by_seq.items() if k <= seq}
        self.heap = [e for e in self.heap if e[1] <= seq]
        heapq.heapify(self.heap)
        self._recount()

    def due(self, now: int) -> list[int]:
        """The sequences whose TTL ran out at ``now`` (Unix ns), ascending, taken off the heap."""
        heap = self.heap
        out: list[int] = []
        while heap and heap[0][0] <= now:
            out.append(heapq.heappop(heap)[1])
        out.sort()
        return out

    def next_due(self, live: Callable[[int], bool]) -> int | None:
        """When the next stored message's TTL runs out (Unix ns); the heap's entries of messages
        removed since are dropped on the way."""
        heap = self.heap
        while heap and not live(heap[0][1]):
            self.by_seq.pop(heapq.heappop(heap)[1], None)
        return heap[0][0] if heap else None

    def of_live(self, live: Callable[[int], bool]) -> dict[int, int]:
        """``{seq: ttl}`` of the messages still stored, ascending (what a restart must restore)."""
        return {seq: ttl for seq, ttl in sorted(self.by_seq.items()) if live(seq)}

    def columns(self) -> tuple[array[int], array[int], array[int]]:
        """Every TTL as three columns — sequence, TTL (seconds, -1: never), expiry (Unix ns; 0:
        none) —, made in C passes (the stream state's; nats-server encodes its wheel, ``thw``)."""
        heap = self.heap
        expires = dict(zip(map(itemgetter(1), heap), map(itemgetter(0), heap), strict=True))
        seqs = array("Q", self.by_seq)
        return seqs, array("q", self.by_seq.values()), array("q", map(expires.get, seqs, repeat(0)))

    def restore(self, rows: Iterable[tuple[int, int, int]]) -> None:
        """Track ``(sequence, TTL, expiry)`` rows (`columns`' or an older state's JSON rows)."""
        for seq, ttl, expires in rows:
            if ttl > 0:
                self.track(int(seq), int(expires) - int(ttl) * NS_PER_S, int(ttl))
            elif ttl:
                self.track(int(seq), 0, int(ttl))

    def compact(self, live: Callable[[int], bool], msgs: int) -> None:
        """Drop what removed messages left, once it outnumbers the stored messages."""
        if len(self.by_seq) > 2 * msgs + 64:
            self.by_seq = self.of_live(live)
            self._recount()

    def _recount(self) -> None:
        self.nevers = sum(1 for ttl in self.by_seq.values() if ttl < 0)
