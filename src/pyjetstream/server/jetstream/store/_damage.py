"""What a damaged block costs, sequence by sequence (issue 27; nats-server ``rebuildStateLocked``
cuts a block at its first bad record and reports the rest in ``LostStreamData``).

A scan steps over damaged bytes to the next valid record (``_records.resync``) and cuts a block
where no valid record follows. The sequences a run of damaged bytes held are those between the
records on either side of it; those a cut tail held run to the next block's first sequence —
or, for the last block, to the end the stream state saw of it, and to the last sequence the
damaged records' own headers still name (after a crash with no state since, what follows is
unknown: a record cut short there is the write in flight, never acknowledged). Less the ones
below the floor, the live ones, those a tombstone removed before the damage and those the
block's own index (older than the block, or the block damaged) says were gone when it was
written (a compacted block keeps no record of its removed messages), they are the sequences
`ScanDamage.seqs` lists lost.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from array import array
from collections.abc import Callable
from typing import Any

from . import _snapshot
from ._records import (
    BLOCK_HDR_LEN,
    KIND_MASK,
    KIND_MSG,
    MAX_RECORD,
    REC_OVERHEAD,
    encode_block_header,
    first_msg_seq,
    resync,
)

Bytes = bytes | mmap.mmap


class ScanDamage:
    """The runs of sequences the scans of one recovery found damaged or cut (see the module)."""

    __slots__ = ("dead", "gaps", "known_end", "tombed")

    def __init__(self) -> None:
        # (block, last sequence before, first after — None: to the block's end)
        self.gaps: list[tuple[Any, int, int | None]] = []
        self.tombed: list[tuple[int, int]] = []  # (first, last) sequences of tombstones met
        self.known_end: dict[int, int] = {}  # block index -> one past its last known sequence
        # block index -> (its first sequence, the subject ids of its .idx: 0 = no message then),
        # from an index older than its block: a sequence gone when it was written was not lost.
        self.dead: dict[int, tuple[int, array[int]]] = {}

    def gap(self, blk: Any, low: int, before: int, buf: Bytes, nxt: int) -> None:
        """Damaged bytes stepped over, after sequence ``before``, up to the valid record at ``nxt``."""
        self.gaps.append((blk, max(before, low), first_msg_seq(buf, nxt, len(buf))))

    def tail(self, blk: Any, low: int, max_seq: int, torn: Bytes, damaged: bool) -> None:
        """A block cut after sequence ``max_seq`` (``torn``: the bytes cut; ``damaged``: not a
        write in flight), its records' headers naming what they can."""
        if damaged:
            named = _named(torn, max_seq) + 1
            self.known_end[blk.index] = max(self.known_end.get(blk.index, 0), named)
        self.gaps.append((blk, max(max_seq, low), None))

    def keep_dead_if_damaged(self, blk: Any) -> None:
        """After a block's scan: its index's subject ids are kept only if the scan found damage in
        it (a stale index is the usual case after ``kill -9``: nothing to keep)."""
        if blk.index in self.dead and not any(g[0] is blk for g in self.gaps):
            del self.dead[blk.index]

    def seqs(self, end_of: Callable[[Any], int | None], live: Callable[[int], bool], floor: int) -> list[int]:
        """The sequences lost (``end_of``: the next block's first sequence, None for the last)."""
        gaps, self.gaps = self.gaps, []
        tombed, self.tombed = self.tombed, []
        dead, self.dead = self.dead, {}
        out: list[int] = []
        for blk, before, after in gaps:
            if after is None:
                nxt = end_of(blk)
                after = nxt if nxt is not None else self.known_end.get(blk.index, 0)
            seqs = [s for s in range(max(before + 1, floor), after) if not live(s)]
            if blk.index in dead:
                first, sids = dead[blk.index]
                seqs = [s for s in seqs if not 0 <= s - first < len(sids) or sids[s - first]]
            out += seqs
        if out and tombed:
            gone = {s for lo, hi in tombed for s in range(lo, hi + 1)}
            out = [s for s in out if s not in gone]
        return out


def repair_header(path: str, idx_path: str, buf: Bytes, hint: int, max_seq: int, number: int) -> int | None:
    """A block whose header is damaged: its first sequence from the stream state (``hint``),
    else its index file, else the block before it (``max_seq``), else 1 for the stream's first
    block file (``number`` 1: a new store starts there), else its first valid record —
    written back into the header, so that its records are read as any block's (the bytes the
    damage hit are then stepped over by the scan). None: a block torn while being created."""
    if len(buf) <= BLOCK_HDR_LEN:
        return None
    first = hint
    if not first:
        with contextlib.suppress(OSError, KeyError, ValueError, TypeError):
            with open(idx_path, "rb") as f:
                decoded = _snapshot.decode(f.read())
            first = int(decoded[0]["first"]) if decoded is not None else 0
    if not first and max_seq:
        first = max_seq + 1
    if not first and number == 1:
        first = 1
    if not first:
        at = resync(buf, BLOCK_HDR_LEN - 1, len(buf))
        first = int.from_bytes(buf[at + 5 : at + 13], "little") if at < len(buf) else 1
    with contextlib.suppress(OSError):  # (read-only: repaired again at the next start)
        fd = os.open(path, os.O_WRONLY)
        try:
            os.pwrite(fd, encode_block_header(first), 0)
        finally:
            os.close(fd)
    return first


def _named(torn: Bytes, max_seq: int) -> int:
    """The last sequence the message records at the start of a damaged tail still name (their
    headers intact: one after another, each whole), else ``max_seq``."""
    off = 0
    while len(torn) - off >= REC_OVERHEAD:
        total, kind = int.from_bytes(torn[off : off + 4], "little"), torn[off + 4]
        seq = int.from_bytes(torn[off + 5 : off + 13], "little")
        if kind & KIND_MASK != KIND_MSG or seq != max_seq + 1 or not REC_OVERHEAD <= total <= len(torn) - off:
            break
        max_seq = seq
        off += total
    return max_seq


def in_flight(torn: Bytes) -> bool:
    """Whether the end of the last block is a record cut short (its length runs past the end
    of the file): the write in flight when the process died, never acknowledged, so recovery
    cuts it without reporting it as lost. A complete record that fails its checksum is damage."""
    if len(torn) < 4:
        return True
    total = int.from_bytes(torn[:4], "little")
    return REC_OVERHEAD <= total <= MAX_RECORD and total > len(torn)
