"""Which sealed blocks maintenance unlinks or rewrites, and the rewrite (nats-server's
``compact`` / ``shouldCompactInline`` and ``removeMsgBlock``): a sealed block with no message left
is unlinked — unless it holds tombstones for earlier blocks' sequences that an earlier block may
still hold the record of (``numPriorTombs``): then it is rewritten with those alone —, one with
at least ``compact_min`` dead bytes and no more live than dead is rewritten with its live records
and those tombstones. A block gone or rewritten leaves later blocks' tombstones for its removed
messages unneeded (`prior_tombs.forget_in`). Functions of `BlockFiles`, whose methods call them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from itertools import compress
from typing import TYPE_CHECKING

from . import prior_tombs
from ._fileutil import fsync_dir, write_file
from ._records import BLOCK_HDR_LEN, encode_block_header, floor_record, tombstone

if TYPE_CHECKING:
    from .blockfiles import BlockFiles
    from .blockindex import _Block

_LEN_MASK = 0xFFFFFFFF


def maintain(files: BlockFiles) -> None:
    """Unlink sealed blocks with no message left; rewrite mostly-dead ones."""
    files.maint_passes += 1
    changed = False
    while files._maint:  # (a block gone can leave a later one's tombstones for it dead)
        maint, files._maint = files._maint, set()
        for blk in sorted(maint, key=lambda b: b.index) if len(maint) > 1 else maint:
            if blk.live_msgs and not files._compacts(blk):
                continue  # the common case, decided without looking the block up
            if blk is files.blocks[-1] or blk not in files.blocks:
                continue
            changed = empty_or_compact(files, blk) or changed
    if changed:  # (a removal's commit has just flushed: nothing pending when none changed)
        files.flush_writes()


def empty_or_compact(files: BlockFiles, blk: _Block) -> bool:
    """Unlink sealed ``blk`` when no message is left in it and none of its tombstones for
    earlier blocks' sequences is needed any more (nats-server's ``removeMsgBlock`` keeps a
    block with ``numPriorTombs``), else rewrite it with its live records and those tombstones
    (when that leaves anything out). Whether it changed."""
    if blk.priors:
        prior_tombs.prune(files.index, blk)
    if blk.live_msgs == 0 and not blk.priors:
        lo, hi = blk.first_seq, files._block_end(blk)
        files._unlink_block(blk)
        prior_tombs.forget_in(files, lo, hi)
        return True
    if blk.live_msgs == 0 and blk.size - BLOCK_HDR_LEN <= blk.prior_bytes:
        return False  # (nothing but them in it)
    files._rewrite_block(blk)
    return True


def compacts(files: BlockFiles, blk: _Block) -> bool:
    """Whether maintenance rewrites ``blk``: at least ``compact_min`` dead bytes, no fewer
    than live ones (nats-server's ``shouldCompactInline``). Its tombstones for earlier blocks'
    sequences are not counted (a rewrite keeps those still needed), nor those of per-subject
    trims: nats-server writes none (``removeMsgFromBlock`` via limits), and
    counted they had a KV-shaped block rewritten when 39% of its live messages were
    replaced, not half — 1.56 records copied per put, not 1."""
    dead = blk.size - BLOCK_HDR_LEN - blk.live_bytes - blk.trim_bytes - blk.prior_bytes
    return dead >= files._compact_min and dead >= blk.live_bytes


def rewrite(files: BlockFiles, blk: _Block, upto: int | None = None, moved: Sequence[int] = ()) -> bytearray:
    """Rewrite a block with only its live records (those <= upto if given), then its
    tombstones for earlier blocks' sequences still needed, and ``moved`` (``seq, num`` pairs:
    those of the blocks a truncate drops); the active block also with the newest floor."""
    active = blk is files.blocks[-1]
    if files._floor_block is blk and not active:
        files._persist_floor_in_active()
    files.flush_writes()
    fd = files._fd(blk)
    old = os.pread(fd, blk.written, 0) if blk is not files.blocks[-1] else bytes(files.active_bytes())
    new = bytearray(encode_block_header(blk.first_seq))
    end = files._block_end(blk)
    if upto is not None:
        end = min(end, upto + 1)
    page = files.index.page_in(blk.first_seq, end)
    live_msgs = live_bytes = 0
    if page is not None:
        page.image = False  # its locators change: an older image no longer describes it
        sids, locs = page.sids, page.locs
        lo, hi = max(blk.first_seq - page.first, 0), min(end - page.first, page.n)
        for i in compress(range(lo, hi), sids[lo:hi]):  # (the live slots: the dead skipped in C)
            loc = locs[i]
            off, plen = loc >> 32, loc & _LEN_MASK
            locs[i] = len(new) << 32 | plen
            new += old[off : off + plen]
            live_msgs += 1
            live_bytes += plen
    prior_tombs.prune(files.index, blk)
    blk.priors.extend(moved)
    pairs = blk.priors
    for i in range(0, len(pairs), 2):
        new += tombstone(pairs[i], pairs[i + 1], 0)
    blk.prior_bytes = len(new) - BLOCK_HDR_LEN - live_bytes
    if active and files._floor[0]:
        new += floor_record(*files._floor)  # (in the file before the old one is replaced)
        files._floor_block = blk
    lo, hi = blk.first_seq, files._block_end(blk)
    tmp = blk.path + ".tmp"
    write_file(tmp, new, fsync=True)
    files._close_fd(blk)
    os.replace(tmp, blk.path)
    fsync_dir(files.msgs_dir)
    blk.size = blk.written = len(new)
    blk.trim_bytes = 0
    blk.live_msgs = live_msgs
    blk.live_bytes = live_bytes
    files._forget_reads(blk)
    prior_tombs.forget_in(files, lo, hi)
    if blk is not files.blocks[-1]:
        # (its gaps are explained by no tombstone: only its index tells a damaged record's
        # neighbours that were live from those removed — tests/store/test_damage_matrix.py)
        with contextlib.suppress(OSError):
            files._write_index(blk, new)
    return new
