"""A block's tombstones for earlier blocks' sequences — its "priors" (`_Block.priors`: ``seq,
num`` pairs; `_Block.prior_bytes` their bytes). A removal in a sealed block writes its tombstone
into the active block (`blockfiles.TOMBSTONES_IN_LAST_BLOCK`, nats-server's
``removeMsgFromBlock`` → ``lmb.writeTombstone``), so the block that holds the record and the
block that holds its tombstone differ: the block index and the stream state list each block's
priors, a restart applies them to the blocks it reads again, and a block keeps those an earlier
block may still hold the record of through its compaction and instead of being unlinked
(``numPriorTombs``). Functions of the file backend (`BlockIndexes`, `BlockFiles`, `compaction`).
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._records import REC_OVERHEAD

if TYPE_CHECKING:
    from .blockfiles import BlockFiles
    from .blockindex import BlockIndexes, _Block
    from .seqindex import SeqIndex

__all__ = [
    "cut_since", "forget_in", "found", "from_tail", "moved_before", "nbytes", "prune", "state_arrays", "state_rows",
    "unnamed",
]


def tomb_len(num: int) -> int:
    """The length of a tombstone record for ``num`` sequences (`_records.tombstone`)."""
    return REC_OVERHEAD if num == 1 else REC_OVERHEAD + 8


def nbytes(pairs: Sequence[int]) -> int:
    """The bytes of the tombstones of ``pairs``."""
    return sum(map(tomb_len, pairs[1::2]))


def found(backend: BlockIndexes, blk: _Block, flat: list[int], scanned: bool, vouched: bool = False) -> None:
    """A block loaded holds priors (``flat``): from a scan, its index, or the stream state
    (``vouched``: the block is not read). A scan notes them in the damage they explain itself;
    those of a block the state vouches for are applied by the recovery to the blocks read again
    only (``kept_deletes``: the state's own pages were written after them)."""
    blk.priors = array("Q", flat)
    blk.prior_bytes = nbytes(flat)
    pairs = list(zip(flat[0::2], flat[1::2], strict=True))
    if not scanned:
        backend._damage.tombed += [(seq, seq + num - 1) for seq, num in pairs]
    if vouched:
        backend.kept_deletes += [(seq, num, 0) for seq, num in pairs]


def from_tail(blk: _Block, deletes: list[tuple[int, int, int]]) -> None:
    """The priors among the tombstones a replay of the active block's tail met."""
    for seq, num, _ts in deletes:
        if seq < blk.first_seq:
            blk.priors.extend((seq, num))
            blk.prior_bytes += tomb_len(num)


def unnamed(blocks: list[_Block], blk: _Block, first: int, sids: array[int], sizes: array[int], locs: array[int]) -> None:
    """Clear the slots (sequence ``first`` on) of ``blk``'s messages that later blocks' priors name
    (a page read again from a scan of its block, which does not hold their tombstones)."""
    n = len(sids)
    for later in blocks[blocks.index(blk) + 1 :]:
        pairs = later.priors
        for i in range(0, len(pairs), 2):
            for k in range(max(pairs[i] - first, 0), min(pairs[i] + pairs[i + 1] - first, n)):
                sids[k] = sizes[k] = locs[k] = 0


def prune(index: SeqIndex, blk: _Block) -> None:
    """Drop the priors ``blk`` no longer needs: below the stream's first sequence (nats-server's
    ``numPriorTombs``), or where no page covers them (their block is gone with its records)."""
    first, firsts, pages = index.first_seq, index.firsts, index.pages
    pairs = blk.priors
    kept = array("Q")
    for i in range(0, len(pairs), 2):
        seq, num = pairs[i], pairs[i + 1]
        lo, end = max(seq, first), seq + num
        j = bisect.bisect_right(firsts, end - 1) - 1
        if lo < end and j >= 0 and pages[j].first + pages[j].n > lo:
            kept.extend((seq, num))
    blk.priors, blk.prior_bytes = kept, nbytes(kept)


def forget_in(files: BlockFiles, lo: int, hi: int) -> None:
    """No block holds a removed message's record of ``[lo, hi)`` any more (its block was unlinked
    or rewritten with its live records): later blocks' priors for them are no longer needed —
    dead bytes to ``_compacts``, gone from their indexes —, and a sealed block left with nothing
    else is looked at by the maintenance."""
    active = files.blocks[-1]
    for blk in files.blocks:
        pairs = blk.priors
        if not pairs or blk.first_seq < hi:
            continue
        kept = array("Q")
        for i in range(0, len(pairs), 2):
            if not (lo <= pairs[i] and pairs[i] + pairs[i + 1] <= hi):
                kept.extend((pairs[i], pairs[i + 1]))
        if len(kept) == len(pairs):
            continue
        blk.priors, blk.prior_bytes = kept, nbytes(kept)
        if blk is not active and (not blk.live_msgs or files._compacts(blk)):
            files._maint.add(blk)


def moved_before(doomed: list[_Block], first: int) -> list[int]:
    """The priors of blocks a truncate drops that name sequences before ``first`` (the block it
    keeps): still needed, written again into that block (nats-server's ``Truncate``)."""
    out: list[int] = []
    for b in doomed:
        pairs = b.priors
        for i in range(0, len(pairs), 2):
            if pairs[i] < first:
                out += (pairs[i], pairs[i + 1])
    return out


def state_arrays(blocks: list[_Block]) -> dict[str, array[int]]:
    """The priors of every block for the stream state, as two arrays (not its JSON header: one
    removal in a sealed block is one pair): ``x_blocks`` (block number, pairs) per block that has
    any, ``x_pairs`` theirs in that order."""
    heads, pairs = array("Q"), array("Q")
    for b in blocks:
        if b.priors:
            heads.extend((b.index, len(b.priors) // 2))
            pairs.extend(b.priors)
    return {"x_blocks": heads, "x_pairs": pairs}


def state_rows(arrays: dict[str, array[int]], listed: list[list[int]] | None = None) -> dict[int, list[int]]:
    """`state_arrays` read back: each block's priors by its number (ValueError: they do not fit).
    ``listed``: a state's header's ``priors`` (43a1200 wrote them there: ``[block, *pairs]``)."""
    heads, pairs = arrays.get("x_blocks", array("Q")), arrays.get("x_pairs", array("Q"))
    out: dict[int, list[int]] = {row[0]: row[1:] for row in listed or ()}
    at = 0
    for i in range(0, len(heads) - 1, 2):
        n = 2 * heads[i + 1]
        out[heads[i]] = pairs[at : at + n].tolist()
        at += n
    if at != len(pairs) or len(heads) % 2:
        raise ValueError("priors")
    return out


def cut_since(blocks: list[_Block], nblocks: int, npriors: int) -> list[int]:
    """The priors a rollback to ``nblocks`` blocks, the last with ``npriors`` pairs' worth of
    them, cuts from the files (appended again: they are retried)."""
    cut = list(blocks[nblocks - 1].priors[npriors:])
    for b in blocks[nblocks:]:
        cut += b.priors
    return cut
