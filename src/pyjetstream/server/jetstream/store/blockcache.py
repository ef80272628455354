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

``loads`` counts the blocks read whole and ``hits`` the reads served here: the counters the
store's tests read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EPOCH", "LIMIT", "LOAD_AFTER", "BlockCache"]

#: Bytes of whole blocks kept at most (4 blocks of the default 8 MiB).
LIMIT = 32 * 1024 * 1024
#: Reads out of order a block takes before it is read whole.
LOAD_AFTER = 64
#: Reads out of order after which the counts start over.
EPOCH = 8 * LOAD_AFTER


class BlockCache:
    """Sealed blocks' bytes by block object, least recently used first, at most ``limit`` bytes."""

    __slots__ = ("_blocks", "_misses", "_seen", "bytes", "hits", "limit", "load_after", "loads")

    def __init__(self, limit: int = LIMIT, load_after: int = LOAD_AFTER) -> None:
        self._blocks: dict[Any, bytes] = {}
        self._misses: dict[Any, int] = {}
        self._seen = 0  # reads out of order counted since the counts started over
        self.limit = limit
        self.load_after = load_after
        self.bytes = 0
        self.hits = 0
        self.loads = 0

    def get(self, blk: Any) -> bytes | None:
        """The block's bytes when it is kept (now the most recently used)."""
        data = self._blocks.pop(blk, None)
        if data is not None:
            self._blocks[blk] = data
            self.hits += 1
        return data

    def wants(self, blk: Any, size: int) -> bool:
        """Count a read out of order in ``blk`` (``size`` bytes written); True when it should now
        be read whole and `put` here."""
        if size > self.limit // 2:
            return False
        misses = self._misses
        self._seen += 1
        if self._seen > EPOCH:
            misses.clear()
            self._seen = 1
        n = misses.get(blk, 0) + 1
        if n < self.load_after:
            misses[blk] = n
            return False
        misses.pop(blk, None)
        return True

    def put(self, blk: Any, data: bytes) -> None:
        self.drop(blk)
        self._blocks[blk] = data
        self.bytes += len(data)
        self.loads += 1
        while self.bytes > self.limit:
            old = next(iter(self._blocks))
            self.bytes -= len(self._blocks.pop(old))

    def drop(self, blk: Any) -> None:
        """The block changed or left: forget its bytes and its count."""
        data = self._blocks.pop(blk, None)
        if data is not None:
            self.bytes -= len(data)
        self._misses.pop(blk, None)

    def clear(self) -> None:
        self._blocks.clear()
        self._misses.clear()
        self.bytes = 0
