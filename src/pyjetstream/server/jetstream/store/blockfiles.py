"""The file store's payload backend: append-only block files (nats-server ``msgBlock``).

Format in ``_records``. Every record a message lives in is addressed by the index's locator
``offset << 32 | record length`` inside the block that owns the sequence.

Deletes. Removing the first message (limits, expiry, compact, workqueue acks in order) writes
one FLOOR record to the active block per commit; interior removals write a tombstone into the
active block, wherever the message lies (nats-server's ``removeMsgFromBlock`` →
``lmb.writeTombstone``: the removal joins the commit's one write, the sealed block's file is not
touched; `TOMBSTONES_IN_LAST_BLOCK`) — a block's tombstones for earlier blocks' sequences are its
``priors``, listed in its index and the stream state, applied by a restart to the blocks read
again, and kept by a compaction or instead of an unlink while a page still covers their sequence
(``numPriorTombs``); erase overwrites the record in place (and writes its tombstone into its own
block, which a restart then scans). A tombstone of a
``max_msgs_per_subject`` trim in a sealed block (``lazy``) waits in memory until
`LAZY_TOMB_BYTES` of them are pending or the next flush: the store trims each subject again when
it opens (nats-server writes none for a removal via limits, ``removeMsgFromBlock``, and
re-applies ``enforceMsgPerSubjectLimit`` at start), so a crash that loses them loses nothing, and
a KV-shaped put does not pay a second write (to another file) and a maintenance pass each. Sealed blocks whose
messages are all gone are unlinked, and sealed blocks that are mostly dead are rewritten with
only their live records (atomic rename).

The block list, the block indexes (``<n>.idx``) and recovery are `BlockIndexes`'
(``blockindex.py``), which `BlockFiles` extends.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import os
import struct
import time
import zlib
from array import array
from collections.abc import Sequence
from itertools import accumulate, compress, pairwise
from typing import Any

from . import _compress, compaction, prior_tombs
from ._fileutil import fsync_dir, remove_file, remove_in_background
from ._records import (
    BLOCK_HDR_LEN,
    CRC_LEN,
    CRC_RESIDUE,
    FLAG_COMPRESSED,
    FLAG_ERASED,
    KIND_MSG,
    MAX_RECORD,
    REC_HDR,
    REC_HDR_LEN,
    REC_OVERHEAD,
    SPAN_LAYOUT,
    encode_block_header,
    erased_record,
    floor_record,
    tombstone,
    tombstones,
)
from .base import COMPRESSION_S2, ErrCorruptRecord, ErrMsgTooLarge, MsgTuple, StoreConfig
from .blockcache import BlockCache
from .blockindex import BlockIndexes, _Block
from .run_reader import find_in_span, read_records

#: `_spanned` asks the `BlockCache` for the block's bytes kept whole (False: it reads the span;
#: a test reads the same messages both ways).
SPAN_IN_PLACE = True
#: A removal's read of its record (`read_located`) counts toward reading its block whole into the
#: `BlockCache` (True), as a get's does; False (the default): it uses the block's copy when one is
#: kept, else reads the span alone. A random removal touches one record of an 8 MiB block: the
#: copy cost ~5 ms to read, its search in memory the copy's cache misses (~2 us, as much as a span
#: read and its search in cache), and a secure erase drops it right away; 10,000 random deletes
#: over 1M messages read three blocks whole (1.1-1.3 us of CPU a delete in process, load 4).
REMOVALS_LOAD_BLOCKS = False
#: A removal in a sealed block writes its tombstone into the active block, as nats-server's
#: ``removeMsgFromBlock`` writes it into its last block (``lmb.writeTombstone``): one write per
#: removal's commit wherever the message lies, the sealed block's file and index untouched. False:
#: into the sealed block itself (a second file written, a restart after a crash scans it); a
#: per-subject trim's (lazy) and a secure erase's always go there. The differential tests turn it off.
TOMBSTONES_IN_LAST_BLOCK = True
#: `BlockFiles.remove_many`'s tombstones that go into one block (the active one's, a per-subject
#: trim's) are made together and appended in one call (`_tombs_of`; issue 24: ~1 µs of a put into a
#: ``max_msgs_per_subject: 1`` stream was its trim's tombstone, three Python calls). Off: one
#: `_tomb` per run of neighbours. The same bytes either way.
TOMBS_TOGETHER = True
# Sequential reads of sealed blocks go through a read-ahead window of this size.
READ_AHEAD = 256 * 1024
# Lazy tombstones (``max_msgs_per_subject`` trims in sealed blocks) pending at most this much
# before the next commit writes them.
LAZY_TOMB_BYTES = 64 * 1024
# What a read out of order takes (a page: the record and maybe its neighbours).
SMALL_READ = 4096
#: A purge whose old blocks hold this many bytes renames them aside for a thread to remove.
REMOVE_LATER_BYTES = 32 << 20

_unpack_rec = REC_HDR.unpack_from
_pack_rec = REC_HDR.pack
_pack_crc = struct.Struct("<I").pack
_crc32 = zlib.crc32
_time_ns = time.time_ns
_LEN_MASK = 0xFFFFFFFF
_NOT_PLAIN = FLAG_ERASED | FLAG_COMPRESSED  # records read_run leaves to read()
#: `read_run`'s record layout (`run_reader.read_records`): the record header's unpack, its
#: length, the CRC's length, the CRC residue, the flags left to `read`, the locator's length mask.
RUN_LAYOUT = (_unpack_rec, REC_HDR_LEN, CRC_LEN, CRC_RESIDUE, _NOT_PLAIN, _LEN_MASK)


class _ActiveBlock:
    """The active block's bytes, read when first needed after a restart (see `active_bytes`)."""

    blocks: list[_Block]
    _mirror: bytearray | None  # (`BlockIndexes`: the active block's bytes; None: not read yet)
    #: The active block read from its file into the mirror (a step count, per store).
    mirror_loads = 0

    def active_bytes(self) -> bytearray:
        """The active block's bytes (its mirror: what is written and what is pending), read from
        its file the first time something needs them after a restart (`open_active`).

        Why: a restart read the active block whole at once, ~3-4 ms of CPU for a block of 4 MB
        (a fresh buffer's page faults and the copy) even when nothing was written or read there
        before the next stop; nats-server loads a block's cache when a read or write first needs
        it (``loadMsgsWithLock``). Until then nothing changes the file: every write to the active
        block goes through here (`mirror_loads` counts the reads)."""
        mirror = self._mirror
        if mirror is None:
            self.mirror_loads += 1
            mirror = self._mirror = _read_whole(self.blocks[-1].path)
        return mirror


class BlockFiles(_ActiveBlock, BlockIndexes):
    """The block files of one stream directory (``msgs/``): writing, reading, removal."""

    # fileStoreMsgSize: len(4) + seq(8) + ts(8) + subj_len(2) + subject + [hdr_len(4) +
    # headers] + payload + hash(8) — what nats-server reports as stream bytes.
    size_base = 22 + 8
    size_hdr = 4

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        #: Sealed blocks read whole for reads out of order (`_read_sealed`), bounded in bytes.
        self._whole = BlockCache()
        super().__init__(*args, **kwargs)

    def _new_active_block(self, first_seq: int) -> _Block:
        index = self._next_index
        self._next_index += 1
        path = self._block_path(index)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        header = encode_block_header(first_seq)
        blk = _Block(index, first_seq, path, 0)
        blk.fd = fd
        blk.ours = True
        blk.size = len(header)
        self._mirror = bytearray(header)
        self.blocks.append(blk)
        self._firsts.append(first_seq)
        self.dir_dirty = True
        self.index.start_page(first_seq)
        return blk

    def open_active(self) -> None:
        """After recovery: start a first block, or load the last one as the active block (writing
        and saving pages start here: nothing is written while recovery reads)."""
        self._open = True
        self.index._rebuilding = False
        if not self.blocks:
            self._new_active_block(self.index.last_seq + 1)
            self.flush_writes()
            self.dir_dirty = True
        else:
            active = self.blocks[-1]
            self._stale_idx.discard(active)
            self._drop_index_file(active.index)  # it is written to again from here on
            self._fd(active)
            self._mirror = None  # (read when first needed: `active_bytes`)

    def _roll(self, next_seq: int) -> None:
        """Seal the active block and start a new one whose first sequence is next_seq.

        A block that lost messages before its seal (a KV bucket's, whose keys the next puts
        replace; a work queue's, acked) writes no index here: it joins the stale ones, written by
        the next sync (`refresh_indexes`), before its page is evicted, at a stop — or by the
        rewrite that compacts it, which such a block often meets first, and then writes one index,
        not two (none when it empties). Until then a crash scans it: slower, not wrong (nats-server
        writes no per-block index at a seal, and scans the blocks its last ``index.db`` did not
        cover). A block sealed whole writes its index now, so a crash scans only the active block."""
        self.flush_writes()
        old = self.blocks[-1]
        if self._sync_always and old.fd is not None:
            os.fsync(old.fd)
            self.fsync_pending.discard(old)
        if old.live_msgs < next_seq - old.first_seq:  # (some of its sequences hold none)
            self._stale_idx.add(old)
        else:
            with contextlib.suppress(OSError):  # without it, a crash scans this block: slower, not wrong
                self._write_index(old, self.active_bytes())
        self._new_active_block(next_seq)
        self._keep_open(old)  # (the sealed block now takes part in the sealed-fd LRU)
        self._maint.add(old)

    def _unlink_block(self, blk: _Block) -> None:
        if self._floor_block is blk:
            self._persist_floor_in_active()
        i = self.blocks.index(blk)
        del self.blocks[i]
        del self._firsts[i]
        self._forget_block_file(blk)

    def _aside_dir(self) -> str | None:
        """A new hidden ``.msgs.deleted.<random>`` directory beside the blocks' (the store's
        open removes one a crash left), or None if it cannot be made."""
        path = os.path.join(os.path.dirname(self.msgs_dir), f".msgs.deleted.{os.urandom(6).hex()}")
        try:
            os.mkdir(path)
        except OSError:
            return None
        return path

    def _forget_block_file(self, blk: _Block, aside: str | None = None) -> None:
        """Drop a block that has left the block list: pending writes, descriptor, its index
        (first, so an index never outlives its block and reports its messages lost) and file.
        With ``aside`` the files are renamed into that directory instead of unlinked, for a thread
        to remove (nats-server's ``purge`` renames its msgs directory and removes it out of band):
        unlinking gigabytes frees their extents in the caller, seconds of a held event loop."""
        self._tombs.pop(blk, None)
        self._maint.discard(blk)
        self._maint_later.discard(blk)
        self._stale_idx.discard(blk)
        self.fsync_pending.discard(blk)
        self._open_fds.pop(blk, None)
        if blk.fd is not None:
            os.close(blk.fd)
            blk.fd = None
        self._drop_index_file(blk.index, aside)
        remove_file(blk.path, aside)
        self.dir_dirty = True
        self._forget_reads(blk)
        if self._floor_block is blk:
            self._floor_block = None

    def _persist_floor_in_active(self) -> None:
        """Make the active block hold the current floor before a block with it goes away."""
        self._floor_dirty = True
        self.flush_writes()
        if self._sync_always:
            self.fsync_all()

    # ------------------------------------------------------------------------------------
    # Writing
    # ------------------------------------------------------------------------------------
    def append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> int:
        blob = None
        if self._compress:
            blob = _compress.compress(b"".join((hdr, data)))
        plen = REC_OVERHEAD + len(subject) + (len(blob) if blob is not None else len(hdr) + len(data))
        if plen > MAX_RECORD:
            raise ErrMsgTooLarge()
        act = self.blocks[-1]
        if act.size + plen > self._block_size and act.size > BLOCK_HDR_LEN:
            self._roll(seq)
            act = self.blocks[-1]
        off = act.size
        if blob is None:
            rec = _pack_rec(plen, KIND_MSG, seq, ts, len(subject), len(hdr)) + subject + hdr + data
        else:
            rec = (
                _pack_rec(plen, KIND_MSG | FLAG_COMPRESSED, seq, ts, len(subject), len(hdr)) + subject + blob
            )
        mirror = self._mirror if self._mirror is not None else self.active_bytes()
        mirror += rec
        mirror += _pack_crc(_crc32(rec))
        act.size = off + plen
        act.live_msgs += 1
        act.live_bytes += plen
        return off << 32 | plen

    def append_run(self, seq: int, subject: bytes, payloads: list[bytes]) -> tuple[array[int], array[int]]:
        """`append` for header-less payloads, the records framed with comprehensions and
        joined into the active block's mirror at once; stops before a record that would need the
        next block (unless it is the first: the block is sealed then, as `append` does,
        while the index is whole)."""
        if self._compress:
            n = len(payloads)
            return _append_compressed(self, seq, [subject] * n, [b""] * n, payloads, None)
        base = REC_OVERHEAD + len(subject)
        plens, offs = self._fit_run(seq, [base + len(p) for p in payloads])
        m = len(plens)
        payloads = payloads[:m]
        time_ns = _time_ns
        tss = [time_ns() for _ in plens]
        lsub = len(subject)
        if min(plens) == max(plens):  # one payload size: one pack each
            pack = _run_record(lsub, plens[0] - base).pack
            recs = [
                pack(plen, KIND_MSG, s, ts, lsub, 0, subject, p)
                for plen, s, ts, p in zip(plens, range(seq, seq + m), tss, payloads, strict=True)
            ]
        else:
            pack_head = _run_record(lsub, -1).pack
            recs = [
                pack_head(plen, KIND_MSG, s, ts, lsub, 0, subject) + p
                for plen, s, ts, p in zip(plens, range(seq, seq + m), tss, payloads, strict=True)
            ]
        crc32 = _crc32
        pack_crc = _pack_crc
        parts: list[bytes] = []
        add = parts.append
        for rec in recs:
            add(rec)
            add(pack_crc(crc32(rec)))
        return self._close_run(parts, offs, plens, tss)

    def append_hrun(
        self,
        seq: int,
        subjects: list[bytes],
        hdrs: list[bytes],
        payloads: list[bytes],
        stamps: Sequence[int] | None = None,
    ) -> tuple[array[int], array[int]]:
        """`append` for messages with a subject and a header block each (a read's Spark
        rows), the records framed in one loop and joined into the active block's mirror at once;
        stops before a record that would need the next block, as `append_run`. A compressed
        store takes `append` per message. (TTLs are the store's to tell: `note_ttl`.)"""
        if self._compress:
            return _append_compressed(self, seq, subjects, hdrs, payloads, stamps)
        plens, offs = self._fit_run(
            seq,
            [
                REC_OVERHEAD + len(s) + len(h) + len(p)
                for s, h, p in zip(subjects, hdrs, payloads, strict=True)
            ],
        )
        m = len(plens)
        time_ns = _time_ns
        tss = list(stamps[:m]) if stamps is not None else [time_ns() for _ in plens]
        pack = _pack_rec
        crc32 = _crc32
        pack_crc = _pack_crc
        parts: list[bytes] = []
        add = parts.append
        seqs = range(seq, seq + m)
        for plen, s, ts, sb, h, p in zip(plens, seqs, tss, subjects, hdrs, payloads, strict=False):
            rec = pack(plen, KIND_MSG, s, ts, len(sb), len(h)) + sb + h + p
            add(rec)
            add(pack_crc(crc32(rec)))
        return self._close_run(parts, offs, plens, tss)

    def _fit_run(self, seq: int, plens: list[int]) -> tuple[list[int], list[int]]:
        """Where a run's records go in the active block (rolled first when even the first does not
        fit, as `append` does): the lengths of those taken — the first always, then those
        that fit the block and `MAX_RECORD` — and their offsets (``offs[k]`` where record
        ``k`` starts; ``offs[len(taken)]`` the end)."""
        if plens[0] > MAX_RECORD:
            raise ErrMsgTooLarge()
        act = self.blocks[-1]
        limit = self._block_size
        if act.size + plens[0] > limit and act.size > BLOCK_HDR_LEN:
            self._roll(seq)
            act = self.blocks[-1]
        offs = list(accumulate(plens, initial=act.size))
        if offs[-1] > limit or max(plens) > MAX_RECORD:
            m = max(1, bisect.bisect_right(offs, limit) - 1)
            m = next((k for k in range(1, m) if plens[k] > MAX_RECORD), m)
            plens = plens[:m]
        return plens, offs

    def _close_run(
        self, parts: list[bytes], offs: list[int], plens: list[int], tss: list[int]
    ) -> tuple[array[int], array[int]]:
        """Join a run's framed records into the active block's mirror and count them in the block;
        the times and the ``offset << 32 | length`` slots for the index."""
        self.active_bytes().extend(b"".join(parts))
        act = self.blocks[-1]
        m = len(plens)
        start, end = offs[0], offs[m]
        act.size = end
        act.live_msgs += m
        act.live_bytes += end - start
        return array("q", tss), array("Q", [o << 32 | n for o, n in zip(offs, plens, strict=False)])

    def _append_to(self, blk: _Block, rec: bytes, lazy: bool = False) -> None:
        if lazy:
            blk.trim_bytes += len(rec)
        if blk is self.blocks[-1]:
            self.active_bytes().extend(rec)
        else:
            self._stale_idx.add(blk)
            buf = self._tombs.get(blk)
            if buf is None:
                self._tombs[blk] = bytearray(rec)
            else:
                buf += rec
            self._lazy_bytes += len(rec)
            if not lazy or self._lazy_bytes >= LAZY_TOMB_BYTES:
                self._tombs_due = True
        blk.size += len(rec)

    def flush_writes(self) -> None:
        """Hand every pending byte to the OS (no fsync)."""
        if not self._open:
            return  # (recovering: the active block's mirror is not loaded yet)
        if self._floor_dirty:
            act = self.blocks[-1]
            self._floor = (self.index.first_seq, self.index.last_ts)
            rec = floor_record(*self._floor)
            self.active_bytes().extend(rec)
            act.size += len(rec)
            self._floor_block = act
            self._floor_dirty = False
        act = self.blocks[-1]
        if act.written < act.size:
            fd = self._fd(act)
            with memoryview(self.active_bytes()) as mv:
                _pwrite_all(fd, mv[act.written : act.size], act.written)
            act.written = act.size
            self.fsync_pending.add(act)
            self.writes += 1
        if self._tombs:
            self.writes += len(self._tombs)
            for blk, buf in self._tombs.items():
                _pwrite_all(self._fd(blk), buf, blk.written)
                blk.written += len(buf)
                self.fsync_pending.add(blk)
            self._tombs.clear()
        self._tombs_due = False
        self._lazy_bytes = 0
        if self._maint_later:
            self._maint |= self._maint_later
            self._maint_later.clear()

    def fsync_all(self) -> None:
        for blk in self.fsync_pending:
            if blk.fd is not None:
                os.fdatasync(blk.fd)
            else:
                with contextlib.suppress(FileNotFoundError):
                    fd = os.open(blk.path, os.O_RDONLY)
                    try:
                        os.fdatasync(fd)
                    finally:
                        os.close(fd)
        self.fsync_pending.clear()
        if self.dir_dirty:
            fsync_dir(self.msgs_dir)
            self.dir_dirty = False

    def commit(self) -> None:
        act = self.blocks[-1]
        if not (self._floor_dirty or self._tombs_due or self._maint or self._sync_always or self._active_full):
            # Fast path of a plain append: one pwrite of the new bytes.
            if act.written < act.size:
                pending = self.active_bytes()[act.written :]
                fd = act.fd if act.fd is not None else self._fd(act)
                n = _io.pwrite(fd, pending, act.written)
                if n != len(pending):
                    _pwrite_all(fd, pending[n:], act.written + n)
                act.written = act.size
                self.fsync_pending.add(act)
                self.writes += 1
            index = self.index
            self._good = (index.last_seq, index.last_ts, len(self.blocks), act.written, len(act.priors))
            return
        self.flush_writes()
        if self._active_full:
            self._seal_full()
        if self._maint:
            self._maintain()
        if self._sync_always:
            self.fsync_all()
        index = self.index
        act = self.blocks[-1]
        self._good = (index.last_seq, index.last_ts, len(self.blocks), act.written, len(act.priors))

    def mark_good(self) -> None:
        """What is written now is the point a failed commit goes back to."""
        index = self.index
        act = self.blocks[-1]
        self._good = (index.last_seq, index.last_ts, len(self.blocks), act.written, len(act.priors))

    def rollback(self) -> tuple[int, int] | None:
        """Take back the appends since the last good commit: blocks started since are removed,
        the active block is cut back to its good size (a partly written record included), and
        its pending bytes are dropped. Tombstones and floors stay pending: they are retried (the
        active block's tombstones for earlier blocks' sequences appended again)."""
        last_seq, last_ts, nblocks, written, npriors = self._good
        if not nblocks:
            return None
        doomed = self.blocks[nblocks:]
        cut = prior_tombs.cut_since(self.blocks, nblocks, npriors)
        del self.blocks[nblocks:], self._firsts[nblocks:]
        for blk in doomed:
            if self._floor_block is blk:
                self._floor_dirty = True
            with contextlib.suppress(OSError):
                self._forget_block_file(blk)
        act = self.blocks[-1]
        self._maint.discard(act)
        self._stale_idx.discard(act)
        with contextlib.suppress(OSError):
            self._drop_index_file(act.index)  # active again: its index (if sealed since) is stale
        self._open_fds.pop(act, None)
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd(act), written)
        act.size = act.written = written
        try:
            self._mirror = bytearray(os.pread(self._fd(act), written, 0))
        except OSError:
            self._mirror = self.active_bytes()[:written]
        self._forget_reads(None)
        del act.priors[npriors:]
        act.prior_bytes = prior_tombs.nbytes(act.priors)
        for i in range(0, len(cut), 2):
            self._tomb(self._block_for(cut[i]), cut[i], cut[i + 1], False)
        return last_seq, last_ts

    def recount(self) -> None:
        self.account()

    def flush(self) -> None:
        self.flush_writes()
        if self._maint:
            self._maintain()

    def collect_sync(self, fds: list[int], dirs: list[str]) -> None:
        """Hand over (duplicated) descriptors of everything written since the last fsync."""
        for blk in self.fsync_pending:
            if blk.fd is not None:
                fds.append(os.dup(blk.fd))
            else:
                with contextlib.suppress(FileNotFoundError):
                    fds.append(os.open(blk.path, os.O_RDONLY))
        self.fsync_pending.clear()
        if self.dir_dirty:
            dirs.append(self.msgs_dir)
            self.dir_dirty = False

    def _maintain(self) -> None:
        """Unlink sealed blocks with no message left; rewrite mostly-dead ones (`compaction`)."""
        compaction.maintain(self)

    def _compacts(self, blk: _Block) -> bool:
        """Whether maintenance rewrites ``blk`` (`compaction.compacts`)."""
        return compaction.compacts(self, blk)

    def _rewrite_block(self, blk: _Block, upto: int | None = None, moved: Sequence[int] = ()) -> bytearray:
        """Rewrite a block with only its live records (those <= upto if given) and its tombstones
        for earlier blocks' sequences still needed (`compaction.rewrite`)."""
        return compaction.rewrite(self, blk, upto, moved)

    # ------------------------------------------------------------------------------------
    # Removal
    # ------------------------------------------------------------------------------------
    def _lazy_tombs_due(self) -> None:
        """Pending lazy tombstones must reach the OS with the next commit: a removal other than a
        per-subject trim, or a config change, may take away what lets the store re-apply their
        trims when it opens (the newer messages of their subject, or the limit itself). Without
        this, deleting a key's newest value and crashing brought back the value it had trimmed
        (tests/store/test_store_properties.py found it)."""
        if self._tombs:
            self._tombs_due = True

    def remove(self, seq: int, loc: int, erase: bool, lazy: bool = False) -> None:
        if not lazy and self._tombs:
            self._tombs_due = True  # (`_lazy_tombs_due`)
        blk = self.blocks[bisect.bisect_right(self._firsts, seq) - 1]
        plen = loc & _LEN_MASK
        blk.live_msgs -= 1
        blk.live_bytes -= plen
        if erase:
            self._erase_record(blk, loc >> 32, plen, seq)
        elif seq != self.index.first_seq:
            self._tomb(blk, seq, 1, lazy)
        if blk is not self.blocks[-1] and (lazy or erase or self._maintains(blk)):
            (self._maint_later if lazy else self._maint).add(blk)

    def _maintains(self, blk: _Block) -> bool:
        """Whether `_maintain` would unlink or rewrite a sealed block a removal left (else the
        commit takes its fast path)."""
        if not TOMBSTONES_IN_LAST_BLOCK or not blk.live_msgs:
            return True
        dead = blk.size - BLOCK_HDR_LEN - blk.live_bytes - blk.trim_bytes - blk.prior_bytes
        return dead >= self._compact_min and dead >= blk.live_bytes  # (`_compacts`)

    def _tomb(self, blk: _Block, seq: int, num: int, lazy: bool) -> None:
        """The tombstone of ``[seq, seq + num)``, messages of ``blk``: into the active block (one of
        its ``priors`` when ``blk`` is sealed), but for a per-subject trim's (lazy: it waits, and
        the store trims again when it opens); past the block size the commit seals it."""
        act = self.blocks[-1]
        rec = tombstone(seq, num, 0)
        if blk is act or lazy or not TOMBSTONES_IN_LAST_BLOCK:
            self._append_to(blk, rec, lazy)
            return
        if act.size + len(rec) > self._block_size:
            self._active_full = True
        self.active_bytes().extend(rec)
        act.size += len(rec)
        act.priors.append(seq)
        act.priors.append(num)
        act.prior_bytes += len(rec)

    def _seal_full(self) -> None:
        """Tombstones took the active block past the block size: the commit seals it, as a
        tombstone that does not fit does in nats-server (``checkLastBlock``), or compacts it when
        it holds no sequence yet. (Not in the removal: a roll loads a page for the block's index,
        which may evict the one the removal is changing.)"""
        self._active_full = False
        act = self.blocks[-1]
        nxt = self.index.last_seq + 1
        if act.size <= self._block_size:
            return
        if nxt > act.first_seq:
            self._roll(nxt)
        elif self._compacts(act):
            self.drop_state()  # (a restart must not take the state's bytes of it as they were)
            self._mirror = self._rewrite_block(act)

    def remove_many(self, seqs: list[int], locs: list[int], lazy: bool = False) -> None:
        """`remove` of many messages at once (a subject purge): per block their live counts in
        one go and one tombstone per run of neighbours, not one per message."""
        if not lazy:
            self._lazy_tombs_due()
        blocks, firsts = self.blocks, self._firsts
        first_seq = self.index.first_seq
        n = len(seqs)
        k = 0
        while k < n:
            bi = bisect.bisect_right(firsts, seqs[k]) - 1
            blk = blocks[bi]
            end = firsts[bi + 1] if bi + 1 < len(firsts) else seqs[-1] + 1
            j = bisect.bisect_left(seqs, end, k)
            blk.live_msgs -= j - k
            blk.live_bytes -= sum(locs[k:j]) & _LEN_MASK  # (the lengths' sum: see remove_range)
            if TOMBS_TOGETHER and (blk is blocks[-1] or lazy or not TOMBSTONES_IN_LAST_BLOCK):
                self._tombs_of(blk, seqs[k:j], first_seq, lazy)
            else:
                self._tomb_runs(blk, seqs, k, j, first_seq, lazy)
            if blk is not blocks[-1] and (lazy or self._maintains(blk)):
                (self._maint_later if lazy else self._maint).add(blk)
            k = j

    def _tomb_runs(self, blk: _Block, seqs: list[int], a: int, j: int, first_seq: int, lazy: bool) -> None:
        """`_tomb` of each run of neighbours among ``seqs[a:j]`` (messages of ``blk``), the
        stream's first message left out (as `remove`: the floor moves past it)."""
        while a < j:
            b = j if seqs[j - 1] - seqs[a] == j - 1 - a else a + 1  # (the rest all neighbours)
            while b < j and seqs[b] == seqs[b - 1] + 1:
                b += 1
            start, num = seqs[a], b - a
            if start == first_seq:  # (as remove: the first message needs none, the floor moves)
                start, num = start + 1, num - 1
            if num:
                self._tomb(blk, start, num, lazy)
            a = b

    def _tombs_of(self, blk: _Block, seqs: list[int], first_seq: int, lazy: bool) -> None:
        """`_tomb_runs` where every tombstone goes into ``blk`` itself (the active block, or a
        per-subject trim's): the same records, in the same order, appended in one `_append_to`
        — those of single messages between runs of neighbours made together by
        `_records.tombstones` (a run of trims over many subjects: no neighbours at all), so a
        removed message costs no Python call of its own."""
        if seqs[0] == first_seq:  # (as remove: the first message needs none, the floor moves)
            seqs = seqs[1:]
            if not seqs:
                return
        n = len(seqs)
        if seqs[-1] - seqs[0] == n - 1:  # all neighbours: one record
            self._append_to(blk, tombstone(seqs[0], n, 0), lazy)
            return
        # Where each run of neighbours starts: after a sequence not followed by the next one.
        cuts = [0, *compress(range(1, n), map(int.__ne__, seqs[1:], map((1).__add__, seqs))), n]
        if len(cuts) == n + 1:  # no neighbours
            self._append_to(blk, tombstones(seqs), lazy)
            return
        parts: list[bytes] = []
        single = 0  # where the current stretch of single messages starts
        for a, b in pairwise(cuts):
            if b - a > 1:
                if single < a:
                    parts.append(tombstones(seqs[single:a]))
                parts.append(tombstone(seqs[a], b - a, 0))
                single = b
        if single < n:
            parts.append(tombstones(seqs[single:]))
        self._append_to(blk, b"".join(parts), lazy)

    def remove_pages(self, spans: list[tuple[int, int]]) -> None:
        """Sealed blocks (the index's pages are the blocks) whose every live message goes: no
        tombstone, the block is unlinked by the commit's maintenance (nats-server's ``purgeEx``
        removes a block it empties, dropping the tombstones it would have written for it) — a
        purge's cost per block, not per message."""
        self._lazy_tombs_due()
        blocks, firsts = self.blocks, self._firsts
        for lo, hi in spans:
            bi = bisect.bisect_right(firsts, lo) - 1
            blk = blocks[bi]
            assert blk is not blocks[-1] and hi <= firsts[bi + 1], "a sealed block's page"
            blk.live_msgs = blk.live_bytes = 0
            self._maint.add(blk)

    def _erase_record(self, blk: _Block, off: int, plen: int, seq: int) -> None:
        rec = erased_record(seq, plen)
        if blk is self.blocks[-1]:
            self.active_bytes()[off : off + plen] = rec
            if off >= blk.written:
                return  # still pending: the overwrite happens in memory
        if blk is not self.blocks[-1] and seq != self.index.first_seq:
            # A record replaced by another valid one of its length leaves the file's CRC as it was
            # (CRC-32 is linear): the block's index, which still lists the message, would match it
            # at a restart. A tombstone, handed to the OS before the overwrite, changes the block's
            # size (the restart scans it); in process the page's ``dels`` say it, so its image
            # stays and an evicted page is not loaded (dropping the index cost a load and a new
            # index at its eviction, ~18 ms a secure delete over 1M messages).
            self._append_to(blk, tombstone(seq, 1, 0))
            self.flush_writes()
        elif blk is not self.blocks[-1]:
            self._stale_idx.add(blk)
            self._drop_index_file(blk.index)
            self.index.lost_image(seq)
        self.drop_state()  # nor its size nor its tail changes: the state could not notice
        _pwrite_all(self._fd(blk), rec, off)
        self.fsync_pending.add(blk)
        self._forget_reads(blk)

    def remove_range(self, lo: int, hi: int) -> None:
        self._lazy_tombs_due()
        index = self.index
        active = self.blocks[-1]
        blocks, firsts = self.blocks, self._firsts
        bi = max(bisect.bisect_right(firsts, lo) - 1, 0)
        while bi < len(blocks):
            blk = blocks[bi]
            a = max(lo, blk.first_seq)
            if a >= hi:
                break
            end = firsts[bi + 1] if bi + 1 < len(blocks) else index.last_seq + 1
            if end <= hi:
                blk.live_msgs = blk.live_bytes = 0  # nothing below ``lo`` is live: all of it goes
            else:
                page = index.page_in(a, hi)
                if page is not None:
                    i, j = max(a - page.first, 0), min(hi - page.first, page.n)
                    seg = page.sids[i:j]
                    blk.live_msgs -= len(seg) - seg.count(0)
                    # Record lengths sit in the low 32 bits; their sum stays below 2**32 in a block.
                    blk.live_bytes -= sum(page.locs[i:j]) & _LEN_MASK
            if blk is not active:
                self._maint.add(blk)
            bi += 1

    def first_changed(self) -> None:
        self._floor_dirty = True

    def skip(self, seq: int, num: int, ts: int) -> None:
        if self.index.msgs:
            self._append_to(self.blocks[-1], tombstone(seq, num, ts))
        else:
            self._floor_dirty = True  # floor = last + 1 after the skip

    def purge(self, new_first: int) -> None:
        self._replace_all_blocks(new_first, with_floor=True)

    def reset(self) -> None:
        self._replace_all_blocks(1, with_floor=False)

    def _replace_all_blocks(self, first_seq: int, with_floor: bool) -> None:
        """Start over with one empty block; durable before any old block is unlinked."""
        old = list(self.blocks)
        self._tombs.clear()
        self._maint.clear()
        self._maint_later.clear()
        self._tombs_due = False
        self._lazy_bytes = 0
        self._stale_idx.clear()
        self._floor_dirty = False
        self._forget_reads(None)
        self.blocks, self._firsts = [], []
        nb = self._new_active_block(first_seq)
        self._floor_block = None
        if with_floor:
            rec = floor_record(first_seq, self.index.last_ts)
            self.active_bytes().extend(rec)
            nb.size += len(rec)
            self._floor_block = nb
        self.flush_writes()
        if self._sync_always:
            self.fsync_all()
        aside = self._aside_dir() if sum(blk.size for blk in old) >= REMOVE_LATER_BYTES else None
        for blk in old:
            self._forget_block_file(blk, aside)
        if aside is not None:
            remove_in_background(aside)
        # The stream state names the old blocks: a crash before the next sync must not read it
        # (after a reset it brought back first 1 / last 0 for an empty store: test_store_properties).
        self.drop_state()
        self._floor = (first_seq, self.index.last_ts) if with_floor else (0, 0)

    def truncate(self, seq: int) -> None:
        self.flush_writes()
        keep = self._block_for(seq)
        doomed = self.blocks[self.blocks.index(keep) + 1 :]
        # (their tombstones for sequences before ``keep`` are still needed: nats-server's
        # ``Truncate`` writes them again; those for ``keep``'s own go with its rewrite)
        moved = prior_tombs.moved_before(doomed, keep.first_seq)
        del self.blocks[len(self.blocks) - len(doomed) :], self._firsts[len(self._firsts) - len(doomed) :]
        # ``keep`` becomes the active block: rewrite it with the live records up to seq (before
        # the later blocks' files go: a crash between keeps their tombstones somewhere).
        self._stale_idx.discard(keep)
        self._drop_index_file(keep.index)
        keep.ttls = {k: v for k, v in keep.ttls.items() if k <= seq}
        self._forget_reads(None)
        self._open_fds.pop(keep, None)
        self._mirror = bytearray(os.pread(self._fd(keep), keep.written, 0))
        self._mirror = self._rewrite_block(keep, upto=seq, moved=moved)
        for blk in reversed(doomed):
            self._forget_block_file(blk)
        self._maint.discard(keep)
        self._floor_dirty = True
        self.drop_state()  # (it names sequences past ``seq``: a crash must not take them back)

    def config_changed(self, cfg: StoreConfig) -> None:
        self._lazy_tombs_due()
        self._compress = cfg.compression == COMPRESSION_S2

    # ------------------------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------------------------
    def read(self, seq: int, loc: int) -> tuple[bytes, bytes]:
        rec, kind, _ts, slen, hlen = self._record(seq, loc)
        body_at = REC_HDR_LEN + slen
        if kind & FLAG_COMPRESSED:
            body = _compress.decompress(rec[body_at:-CRC_LEN])
            return body[:hlen], body[hlen:]
        return rec[body_at : body_at + hlen], rec[body_at + hlen : -CRC_LEN]

    def read_msg(self, seq: int, loc: int, spanned: bool = False) -> tuple[str, int, bytes, bytes]:
        """`PayloadBackend.read_msg`: the record holds the subject and the timestamp."""
        if spanned:
            rec, kind, ts, slen, hlen, _off = _spanned(self, seq, loc)
        else:
            rec, kind, ts, slen, hlen = self._record(seq, loc)
        return _msg_of(rec, kind, ts, slen, hlen)

    def read_located(self, seq: int, span: int) -> tuple[str, int, int, int, int]:
        """`PayloadBackend.read_located`: where the span's search found the record (the records
        from the span's start lead there: `find_in_span`), else at the slot's locator. The
        lengths from the record's header, its header block and payload not copied out (a
        compressed one is decompressed for its payload's length)."""
        return _located(self, seq, span)

    def _record(self, seq: int, loc: int) -> tuple[bytes, int, int, int, int]:
        """The checked record of live ``seq`` at ``loc``: bytes, kind, timestamp, subject and header length."""
        off = loc >> 32
        plen = loc & _LEN_MASK
        if seq >= self._firsts[-1]:
            blk = self.blocks[-1]
            rec = bytes(self.active_bytes()[off : off + plen])
        else:
            try:
                rec = self._read_sealed(blk := self._block_for(seq), off, plen)
            except ErrCorruptRecord:
                self.damaged.append((seq, plen))
                raise
        total, kind, rseq, ts, slen, hlen = _unpack_rec(rec, 0) if len(rec) == plen else (0, 0, 0, 0, 0, 0)
        crc_ok = (blk.ours and self.trust_own) or _crc32(rec) == CRC_RESIDUE  # (ours: `read_run`'s rule)
        if total != plen or rseq != seq or kind & FLAG_ERASED or not crc_ok:
            # Damaged since it was indexed (a flip in a block the stream state vouched for):
            # the store drops it and lists it lost (`IndexedStore._drop_damaged`).
            self.damaged.append((seq, plen))
            raise ErrCorruptRecord(f"record for sequence {seq} is damaged")
        return rec, kind, ts, slen, hlen

    def read_run(self, seqs: list[int]) -> list[MsgTuple]:
        """`PayloadBackend.read_run` in one loop (a consumer's read-ahead; `run_reader`, compiled):
        each page's columns bound once, each record unpacked and sliced in a read-ahead window of
        its block (`window`, `mirror_window`), each message's tuple built where its record is read.
        A record that is compressed or fails a check goes through `read` (`read_checked`: it
        decompresses it, or notes it damaged).

        The CRC is checked only for records of blocks found on disk: a block this process started
        (``_Block.ours``) holds only records it wrote, as nats-server's ``writeMsgRecordLocked``
        marks its own records hash-checked (``cbit``) and ``cacheLookupEx`` checks the others.
        The length, sequence and kind are still checked; ``trust_own`` off checks every CRC."""
        return read_records(self, seqs, RUN_LAYOUT, _crc32)

    def active_first(self) -> int:
        """The first sequence of the active block (`read_run`)."""
        return self._firsts[-1]

    def mirror_window(self, off: int, plen: int, last: int, limit: int = READ_AHEAD) -> bytes:
        """`read_run`'s window of the active block: a copy of its mirror from the record at ``off``
        to the end of the run's ``last`` message (the active block's page is loaded), at least the
        record, at most ``limit`` past it (a sparse run's: ``run_reader.SPARSE_REACH``) — what the
        run reads there, so a pull of one message copies one record."""
        end = off + plen
        p = self.index.page(last)
        if p is not None and 0 <= last - p.first < p.n:
            loc = p.locs[last - p.first]
            end = max(end, min((loc >> 32) + (loc & _LEN_MASK), off + limit))
        with memoryview(self.active_bytes()) as mv:
            return mv[off:end].tobytes()

    def window(self, seq: int, off: int, plen: int) -> tuple[int, int, int, bytes, bool] | None:
        """`read_run`'s window of the sealed block holding ``seq``, whose record is at ``off``:
        (the block's first sequence, the next block's, the window's offset and bytes, whether the
        block is ours — its CRCs trusted), read ahead by `_read_sealed`; None when the record is
        cut short (noted in ``damaged``)."""
        firsts = self._firsts
        j = bisect.bisect_right(firsts, seq) - 1
        blk = self.blocks[j]
        try:
            self._read_sealed(blk, off, plen)
        except ErrCorruptRecord:
            self.damaged.append((seq, plen))
            return None
        _blk, ra_off, ra_data = self._ra  # type: ignore[misc]  # _read_sealed set it
        return firsts[j], firsts[j + 1], ra_off, ra_data, self.trust_own and blk.ours

    def read_checked(self, seq: int, loc: int) -> tuple[bytes, bytes] | None:
        """`read`, None for a damaged record (`read` noted it in ``damaged``: the store drops it
        and lists it lost)."""
        try:
            return self.read(seq, loc)
        except ErrCorruptRecord:
            return None

    def _read_sealed(self, blk: _Block, off: int, plen: int, small: int = SMALL_READ) -> bytes:
        ra = self._ra
        if ra is not None and ra[0] is blk:
            start = off - ra[1]
            if start >= 0 and start + plen <= len(ra[2]):
                return ra[2][start : start + plen]
        # Read ahead where a reader walks forward (its record starts in the last window: it ran
        # past its end); a record read out of order (a NAK's redelivery, a get) takes a page,
        # or the whole block once it took many (`BlockCache`).
        forward = ra is not None and ra[0] is blk and ra[1] <= off <= ra[1] + len(ra[2])
        if not forward:
            whole = self._whole.fetch(blk, blk.written, self._read_whole)
            if whole is not None and off + plen <= len(whole):
                self._ra = (blk, 0, whole)
                return whole[off : off + plen]
        want = max(plen, min(READ_AHEAD if forward else small, blk.written - off))
        data = os.pread(self._fd(blk), want, off)
        if len(data) < plen:
            raise ErrCorruptRecord(f"short read in block {blk.index}")
        self._ra = (blk, off, data)
        return data[:plen]

    def _read_whole(self, blk: _Block) -> bytes:
        """A sealed block's bytes written, read whole (for the `BlockCache`)."""
        return os.pread(self._fd(blk), blk.written, 0)

    def _forget_reads(self, blk: _Block | None) -> None:
        """A block's bytes changed or it left (None: any block's): drop its read-ahead window
        and its cached copy."""
        if blk is None:
            self._ra = None
            self._whole.clear()
            return
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None
        self._whole.drop(blk)


@functools.lru_cache(maxsize=64)
def _run_record(subject_len: int, payload_len: int) -> struct.Struct:
    """A header-less message record up to its CRC — header, subject and (``payload_len`` ≥ 0)
    the payload — as one struct, so that a run's records are one ``pack`` each
    (``BlockFiles.append_run``)."""
    body = f"{payload_len}s" if payload_len >= 0 else ""
    return struct.Struct(REC_HDR.format + f"{subject_len}s" + body)


class _FileIO:
    """The one place block bytes are written (tests put a failing disk in its place)."""

    pwrite = staticmethod(os.pwrite)


_io = _FileIO()


def _read_whole(path: str) -> bytearray:
    """A file's bytes read straight into one buffer (the active block's mirror at a start):
    ``bytearray(f.read())`` made two buffers of the block's size and copied one into the other
    (~1.5 ms of a restart's CPU for a 5 MB block)."""
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(os.fstat(f.fileno()).st_size)
        view = memoryview(buf)
        got = 0
        while got < len(buf):
            n = f.readinto(view[got:])
            if not n:  # (shorter than its size said: cut to what was read)
                del view
                del buf[got:]
                return buf
            got += n
    return buf


def _pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    """Write all of ``data`` at ``offset``: one call where the OS takes it whole (a tombstone, an
    erased record: no view of it made, ~0.2 us of a removal's commit), else the rest in a loop."""
    n = _io.pwrite(fd, data, offset) if data else 0
    if n == len(data):
        return
    view = memoryview(data)[n:]
    offset += n
    while view:
        n = _io.pwrite(fd, view, offset)
        offset += n
        view = view[n:]


def _msg_of(rec: bytes, kind: int, ts: int, slen: int, hlen: int) -> tuple[str, int, bytes, bytes]:
    """``(subject, timestamp, headers, payload)`` of a checked message record."""
    body_at = REC_HDR_LEN + slen
    subject = rec[REC_HDR_LEN:body_at].decode()
    if kind & FLAG_COMPRESSED:
        body = _compress.decompress(rec[body_at:-CRC_LEN])
        return subject, ts, body[:hlen], body[hlen:]
    return subject, ts, rec[body_at : body_at + hlen], rec[body_at + hlen : -CRC_LEN]


def _append_compressed(
    files: BlockFiles,
    seq: int,
    subjects: list[bytes],
    hdrs: list[bytes],
    payloads: list[bytes],
    stamps: Sequence[int] | None,
) -> tuple[array[int], array[int]]:
    """`append` of each message of a run in a compressed store, stopping before one whose
    record might need the next block (unless it is the first), as `_fit_run` stops a plain
    run: the store indexes those taken before a block is sealed. The base class's loop let
    `append` seal the block in the middle of a run, and the index put the run's messages
    after the seal in the page of the block before — out of every block's range, a page
    that could not be loaded again. A record is never longer than its message uncompressed
    (`_compress.compress` keeps it plain unless it shrinks): that length decides."""
    tss = array("q")
    locs = array("Q")
    limit = files._block_size
    blocks = files.blocks
    for k, (subject, hdr, payload) in enumerate(zip(subjects, hdrs, payloads, strict=True)):
        if k and blocks[-1].size + REC_OVERHEAD + len(subject) + len(hdr) + len(payload) > limit:
            break
        ts = stamps[k] if stamps is not None else _time_ns()
        locs.append(files.append(seq + k, ts, subject, hdr, payload))
        tss.append(ts)
    return tss, locs


def _located(files: BlockFiles, seq: int, span: int) -> tuple[str, int, int, int, int]:
    """`BlockFiles.read_located`'s answer from the record `_spanned` finds."""
    rec, kind, _ts, slen, hlen, off = _spanned(files, seq, span, REMOVALS_LOAD_BLOCKS)
    body_at = REC_HDR_LEN + slen
    if kind & FLAG_COMPRESSED:
        dlen = len(_compress.decompress(rec[body_at:-CRC_LEN])) - hlen
    else:
        dlen = len(rec) - CRC_LEN - body_at - hlen
    return rec[REC_HDR_LEN:body_at].decode(), slen, hlen, dlen, off << 32 | len(rec)


def _spanned(files: BlockFiles, seq: int, span: int, load: bool = True) -> tuple[bytes, int, int, int, int, int]:
    """`BlockFiles._record` of a record in ``span`` of its sealed block (``offset << 32 |
    length``, `IndexPeeks._loc`), found by `find_in_span` where the block's bytes lie already —
    kept whole by the `BlockCache` (`SPAN_IN_PLACE`) or in the read-ahead window — else in the
    span read alone, as `BlockFiles._read_sealed` reads one out of order (``small`` 0); not there
    (the span does not describe the block): by its slot's locator, read from the block's index
    file. `_read_sealed`'s steps are done here, in one function, without copying the span: a
    random get over 1M-10M messages spent ~3 µs between the page lookup and the record, against
    ~1.5 for a message of a page in memory (its record sliced out of the block's kept bytes).
    Also the record's offset in the block: where it was found, the records from the span's
    start leading to it (`find_in_span`), or the slot's locator. ``load`` False (a removal's,
    `REMOVALS_LOAD_BLOCKS`): the block's kept copy is used, never read whole for this."""
    blk = files.blocks[bisect.bisect_right(files._firsts, seq) - 1]
    off, plen, j = span >> 32, span & _LEN_MASK, seq - blk.first_seq
    ra = files._ra
    if ra is not None and ra[0] is blk and ra[1] <= off and off + plen <= ra[1] + len(ra[2]):
        data, base = ra[2], ra[1]
    else:
        whole = files._whole.fetch(blk, blk.written, files._read_whole if load else None) if SPAN_IN_PLACE else None
        if whole is not None and off + plen <= len(whole):
            files._ra = (blk, 0, whole)
            data, base = whole, 0
        else:
            data, base = os.pread(files._fd(blk), plen, off), off
            files._ra = (blk, off, data)
    lo = off - base
    got = None
    if lo + plen <= len(data):
        got = find_in_span(data, seq, lo, lo + plen, SPAN_LAYOUT, _crc32)
    if got is not None:
        rec, kind, ts, slen, hlen, at = got
        return rec, kind, ts, slen, hlen, base + at
    loc = files.peeks.locator(blk.index, blk.first_seq, j)
    if not loc:
        files.damaged.append((seq, 0))  # (`_msg_in` reads the slot again, the file verified)
        raise ErrCorruptRecord(f"no record for sequence {seq} in its span")
    return (*files._record(seq, loc), loc >> 32)
