"""Whole sealed blocks kept in memory for reads out of order (nats-server ``filestore.go``: a
message block's cache, ``loadMsgsWithLock`` reading the block whole and ``cache.expire`` letting it
go), bounded in bytes.

A read out of order in a sealed block — the redelivery of a NAKed message among 100,000 pending,
a get by sequence — takes one small ``pread`` (`BlockFiles._read_sealed`). That is right for a few
reads scattered over many blocks (reading 8 MiB for one record would cost more than it saves), but
when the reads keep landing in the same block a ``pread`` each costs a system call and a copy per
message where nats-server slices its loaded cache. So a block is loaded whole once it has taken
`LOAD_AFTER` of the last `EPOCH` reads out of order (one read in eight: gets spread evenly over a
large store never load a block they would come back to too seldom), and kept while the cache holds
at most `LIMIT` bytes (least recently used first out). The block files drop a block from here wherever they drop its read-ahead
window: a record erased or the block rewritten, removed, truncated or made active again.

A block is let go for another only once it has paid for its load twice — a hit per `PAYBACK_BYTES`
of its size: a load of 8 MiB cost ~4.7 ms of CPU in all (the read, the new buffer's pages, freeing the
one it displaced), a hit saves ~1.2 µs, ~4,000 hits to break even; with a hit per 8 KiB, gets over 1M
messages loaded 49 blocks in 100,000 gets, 6.1-7.4 µs a get, with one per KiB 8 blocks, 4.6-5.8, and
5.5-5.7 with no cache — or when no
read came to it in the last `LOAD_AFTER` reads out of order; otherwise the block asking to be loaded
is not, and starts its count again. Without that rule, gets spread evenly over a few more blocks than
the cache holds (1M messages: 6 sealed blocks of 8 MiB, 4 kept) loaded a block every ~230 gets, each
evicting one that had not yet earned its load: 29-39 µs of CPU per get in process, 11-12 with no
cache at all. nats-server keeps a loaded block until it has not been read for 10 s
(``defaultCacheBufferExpiration``, ``mb.llts``), without a bound on the bytes.

``loads`` counts the blocks read whole and ``hits`` the reads served here: the counters the
store's tests read.

Compiled with mypyc (``pyjetstream._compiled``; the module imports only the standard library):
`BlockCache.fetch` is asked by every read out of order of a sealed block, so by nearly every random
get over 10M messages, where none of the 62 blocks takes enough reads to be loaded — its count of
the read cost ~1,500 callgrind instructions of such a get interpreted (41.0k → 39.5k a get in
process, ~13 of its ~103 trace events).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["EPOCH", "LIMIT", "LOAD_AFTER", "PAYBACK_BYTES", "BlockCache"]

#: Bytes of whole blocks kept at most (4 blocks of the default 8 MiB).
LIMIT = 32 * 1024 * 1024
#: Reads out of order a block takes before it is read whole.
LOAD_AFTER = 64
#: Reads out of order after which the counts start over.
EPOCH = 8 * LOAD_AFTER
#: A kept block has paid for its load (twice) after one hit per this many bytes of it.
PAYBACK_BYTES = 1024


class BlockCache:
    """Sealed blocks' bytes by block object, least recently used first, at most ``limit`` bytes."""

    __slots__ = ("_blocks", "_clock", "_misses", "_seen", "bytes", "hits", "limit", "load_after", "loads", "refused")

    def __init__(self, limit: int = LIMIT, load_after: int = LOAD_AFTER) -> None:
        # block -> [bytes, hits since loaded, the clock at its last read]
        self._blocks: dict[Any, list[Any]] = {}
        self._misses: dict[Any, int] = {}
        self._seen = 0  # reads out of order counted since the counts started over
        self._clock = 0  # reads out of order asked here, hits and misses
        self.limit = limit
        self.load_after = load_after
        self.bytes = 0
        self.hits = 0
        self.loads = 0
        self.refused = 0  # loads refused to keep blocks that had not paid for theirs yet

    def get(self, blk: Any) -> bytes | None:
        """The block's bytes when it is kept (now the most recently used), nothing counted on a
        miss (a removal's look, which never loads a block)."""
        return self.fetch(blk, 0, None)

    def fetch(self, blk: Any, size: int, load: Callable[[Any], bytes] | None) -> bytes | None:
        """The block's bytes when it is kept (now the most recently used); on a miss, given
        ``load`` (reads the block's ``size`` bytes written), the read out of order is counted and
        the block read whole and kept when it has now taken `load_after` of the last `EPOCH`
        (None otherwise). One call where the hit, the count and the load were three: a step of
        every get out of order of a sealed block — over 10M messages (62 blocks, none taking
        enough reads to be loaded) most random gets."""
        self._clock += 1
        blocks = self._blocks
        entry = blocks.pop(blk, None)
        if entry is not None:
            blocks[blk] = entry
            entry[1] += 1
            entry[2] = self._clock
            self.hits += 1
            return entry[0]  # type: ignore[no-any-return]
        if load is None or size > self.limit // 2:
            return None
        misses = self._misses
        self._seen += 1
        if self._seen > EPOCH:
            misses.clear()
            self._seen = 1
        n = misses.get(blk, 0) + 1
        if n < self.load_after:
            misses[blk] = n
            return None
        misses.pop(blk, None)
        if self.bytes + size > self.limit and not self._evictable(size):
            self.refused += 1
            return None
        data = load(blk)
        self.put(blk, data)
        return data

    def _evictable(self, size: int) -> bool:
        """Whether the blocks that would make room for ``size`` bytes have each paid for their
        load or gone unread for `load_after` reads (the least recently used first)."""
        room = self.limit - self.bytes
        for entry in self._blocks.values():
            if room >= size:
                return True
            data, hits, last = entry
            if hits * PAYBACK_BYTES < len(data) and self._clock - last <= self.load_after:
                return False
            room += len(data)
        return room >= size

    def put(self, blk: Any, data: bytes) -> None:
        self.drop(blk)
        self._blocks[blk] = [data, 0, self._clock]
        self.bytes += len(data)
        self.loads += 1
        while self.bytes > self.limit:
            old = next(iter(self._blocks))
            self.bytes -= len(self._blocks.pop(old)[0])

    def drop(self, blk: Any) -> None:
        """The block changed or left: forget its bytes and its count."""
        entry = self._blocks.pop(blk, None)
        if entry is not None:
            self.bytes -= len(entry[0])
        self._misses.pop(blk, None)

    def clear(self) -> None:
        self._blocks.clear()
        self._misses.clear()
        self.bytes = 0
