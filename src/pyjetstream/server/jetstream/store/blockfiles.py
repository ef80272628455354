"""The file store's payload backend: append-only block files (nats-server ``msgBlock``).

Format in ``_records``. Every record a message lives in is addressed by the index's locator
``offset << 32 | record length`` inside the block that owns the sequence.

Deletes. Removing the first message (limits, expiry, compact, workqueue acks in order) writes
one FLOOR record to the active block per commit; interior removals write a tombstone into the
block that owns the message; erase overwrites the record in place. Sealed blocks whose
messages are all gone are unlinked, and sealed blocks that are mostly dead are rewritten with
only their live records (atomic rename).

Block indexes. When a block is sealed (the active block rolls over) its slots — what
``SeqIndex`` keeps per sequence, per subject spans, TTLs, the newest floor — are written beside
it as ``<n>.idx`` with the block's size and the CRC of its whole content (nats-server keeps a
per-block index the same way). A sealed block changed later (a tombstone, an erase) is marked
stale and gets a fresh index on the next sync or stop; a compacted block gets one at once.

Recovery. `BlockFiles.load` gives ``SeqIndex.rebuild`` one ``BlockSlots`` per block: read
from its index when that matches the block byte for byte (size, CRC, first sequence), else
scanned — after ``kill -9`` only the active block, plus any changed since its index was
written. A scan checks every record's checksum, steps over a damaged record whose length still
leads to a valid record, and cuts the file at the first record that cannot be trusted. What was
dropped is reported by `BlockFiles.lost` — except a record cut short at the very end of
the last block: that is the write in flight when the process died, never acknowledged — and an
index whose block file is gone reports the block's messages lost.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import mmap
import os
import struct
import time
import zlib
from array import array
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

import cramjam

from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import get_header

from . import _compress, _snapshot
from ._fileutil import fsync_dir, write_file
from ._index import zeros
from ._records import (
    BLOCK_HDR_LEN,
    CRC_LEN,
    CRC_RESIDUE,
    FLAG_COMPRESSED,
    FLAG_ERASED,
    KIND_DELETE,
    KIND_FLOOR,
    KIND_MASK,
    KIND_MSG,
    MAX_RECORD,
    REC_HDR,
    REC_HDR_LEN,
    REC_OVERHEAD,
    ScanEnd,
    decode_block_header,
    delete_count,
    encode_block_header,
    erased_record,
    floor_record,
    scan_records,
    tombstone,
)
from .backend import PayloadBackend
from .base import COMPRESSION_S2, ErrCorruptRecord, ErrMsgTooLarge, LostData, MsgTuple, StoreConfig
from .seqindex import BlockSlots, SeqIndex

# Sequential reads of sealed blocks go through a read-ahead window of this size.
READ_AHEAD = 256 * 1024
# Keep at most this many sealed-block descriptors open (the active block's is always open).
MAX_OPEN_FDS = 32

_unpack_rec = REC_HDR.unpack_from
_pack_rec = REC_HDR.pack
_pack_crc = struct.Struct("<I").pack
_crc32 = zlib.crc32
_time_ns = time.time_ns
_LEN_MASK = 0xFFFFFFFF
_NOT_PLAIN = FLAG_ERASED | FLAG_COMPRESSED  # records read_run leaves to read()
_TTL_KEY = b"\r\nNats-TTL:"
# A block's bytes while loading: read into memory, or mapped.
Bytes = bytes | mmap.mmap


class _Block:
    """One block file. ``size`` counts bytes appended (written or pending), ``written`` those
    handed to the OS; ``live_*`` count the records still holding a message."""

    __slots__ = ("fd", "first_seq", "index", "live_bytes", "live_msgs", "path", "size", "written")

    def __init__(self, index: int, first_seq: int, path: str, size: int) -> None:
        self.index = index
        self.first_seq = first_seq
        self.path = path
        self.size = size
        self.written = size
        self.live_msgs = 0
        self.live_bytes = 0
        self.fd: int | None = None


class _SubjectIds:
    """Subject ids while blocks are loaded: those the blocks' indexes use, and new ones above
    all of them for subjects only a scan finds (so ids rarely clash in ``SeqIndex.rebuild``)."""

    __slots__ = ("ids", "next", "taken")

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self.taken: set[int] = set()  # one subject per id: a scanned block must not share one
        self.next = 1

    def learn(self, slots: BlockSlots) -> None:
        for sid, name in zip(slots.ids, slots.names, strict=True):
            key = name.encode()
            if key not in self.ids and sid not in self.taken:
                self.ids[key] = sid
                self.taken.add(sid)
            if sid >= self.next:
                self.next = sid + 1

    def id_for(self, subject: bytes) -> int:
        sid = self.ids.get(subject, 0)
        if not sid:
            sid = self.ids[subject] = self.next
            self.next += 1
        return sid


class BlockFiles(PayloadBackend):
    """The block files of one stream directory (``msgs/``)."""

    # fileStoreMsgSize: len(4) + seq(8) + ts(8) + subj_len(2) + subject + [hdr_len(4) +
    # headers] + payload + hash(8) — what nats-server reports as stream bytes.
    size_base = 22 + 8
    size_hdr = 4

    def __init__(
        self,
        index: SeqIndex,
        msgs_dir: str,
        block_size: int,
        compact_min: int,
        sync_always: bool,
        compress: bool,
    ) -> None:
        super().__init__(index)
        self.msgs_dir = msgs_dir
        self._block_size = block_size
        self._compact_min = compact_min
        self._sync_always = sync_always
        self._compress = compress
        self.blocks: list[_Block] = []
        self._firsts: list[int] = []
        self._mirror = bytearray()  # full content of the active block
        self._tombs: dict[_Block, bytearray] = {}
        self._maint: set[_Block] = set()
        self.fsync_pending: set[_Block] = set()
        self.dir_dirty = False
        self._floor_dirty = False
        self._floor_block: _Block | None = None
        self._open_fds: dict[_Block, None] = {}  # LRU of sealed blocks with an open fd
        self._ra: tuple[_Block, int, bytes] | None = None
        self._next_index = 1
        self._lost_bytes = 0
        self._lost_seqs: list[int] = []
        self._maybe_lost: list[int] = []
        #: ``{seq: ttl}`` of the messages the scan found with a valid ``Nats-TTL`` header.
        self.found_ttls: dict[int, int] = {}
        # ``{seq: ttl}`` of the messages in the blocks that carry ``Nats-TTL`` (for their indexes).
        self._ttls: dict[int, int] = {}
        # The newest floor written (seq, ts): every block index carries it.
        self._floor: tuple[int, int] = (0, 0)
        self._idx_found: set[int] = set()
        self._stale_idx: set[_Block] = set()  # sealed blocks whose index is missing or stale
        self._missing_seqs: list[int] = []
        self._missing_bytes = 0
        # Where the last good commit left things: (last_seq, last_ts, blocks, active block size).
        self._good: tuple[int, int, int, int] = (0, 0, 0, 0)

    # ------------------------------------------------------------------------------------
    # Blocks and descriptors
    # ------------------------------------------------------------------------------------
    def _block_path(self, index: int) -> str:
        return os.path.join(self.msgs_dir, f"{index}.blk")

    def _fd(self, blk: _Block) -> int:
        fd = blk.fd
        if fd is None:
            fd = blk.fd = os.open(blk.path, os.O_RDWR)
            if self.blocks and blk is not self.blocks[-1]:
                self._open_fds[blk] = None
                if len(self._open_fds) > MAX_OPEN_FDS:
                    old = next(iter(self._open_fds))
                    self._close_fd(old)
        elif blk in self._open_fds:
            self._open_fds[blk] = self._open_fds.pop(blk)  # LRU touch
        return fd

    def _close_fd(self, blk: _Block) -> None:
        self._open_fds.pop(blk, None)
        if blk.fd is not None:
            os.close(blk.fd)  # still in fsync_pending if unsynced: sync reopens it
            blk.fd = None

    def close_all(self) -> None:
        """Close every descriptor (stop, delete, or a simulated crash)."""
        for blk in self.blocks:
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
        self._open_fds.clear()

    def _block_for(self, seq: int) -> _Block:
        return self.blocks[bisect.bisect_right(self._firsts, seq) - 1]

    def _new_active_block(self, first_seq: int) -> _Block:
        index = self._next_index
        self._next_index += 1
        path = self._block_path(index)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        header = encode_block_header(first_seq)
        blk = _Block(index, first_seq, path, 0)
        blk.fd = fd
        blk.size = len(header)
        self._mirror = bytearray(header)
        self.blocks.append(blk)
        self._firsts.append(first_seq)
        self.dir_dirty = True
        return blk

    def open_active(self) -> None:
        """After recovery: start a first block, or load the last one as the active block."""
        if not self.blocks:
            self._new_active_block(self.index.last_seq + 1)
            self.flush_writes()
            self.dir_dirty = True
        else:
            active = self.blocks[-1]
            self._stale_idx.discard(active)
            self._drop_index_file(active.index)  # it is written to again from here on
            self._fd(active)
            with open(active.path, "rb") as f:
                self._mirror = bytearray(f.read())

    def _roll(self, next_seq: int) -> None:
        """Seal the active block and start a new one whose first sequence is next_seq."""
        self.flush_writes()
        old = self.blocks[-1]
        if self._sync_always and old.fd is not None:
            os.fsync(old.fd)
            self.fsync_pending.discard(old)
        with contextlib.suppress(OSError):  # without it, a crash scans this block: slower, not wrong
            self._write_index(old, self._mirror)
        self._new_active_block(next_seq)
        # The sealed block now takes part in the sealed-fd LRU.
        self._open_fds[old] = None
        if len(self._open_fds) > MAX_OPEN_FDS:
            self._close_fd(next(iter(self._open_fds)))
        self._maint.add(old)

    def _unlink_block(self, blk: _Block) -> None:
        if self._floor_block is blk:
            self._persist_floor_in_active()
        i = self.blocks.index(blk)
        if self._ttls:
            end = self._firsts[i + 1] if i + 1 < len(self.blocks) else self.index.last_seq + 1
            for seq in [seq for seq in self._ttls if blk.first_seq <= seq < end]:
                del self._ttls[seq]
        del self.blocks[i]
        del self._firsts[i]
        self._forget_block_file(blk)

    def _forget_block_file(self, blk: _Block) -> None:
        """Drop a block that has left the block list: pending writes, descriptor, its index
        (first, so an index never outlives its block and reports its messages lost) and file."""
        self._tombs.pop(blk, None)
        self._maint.discard(blk)
        self._stale_idx.discard(blk)
        self.fsync_pending.discard(blk)
        self._open_fds.pop(blk, None)
        if blk.fd is not None:
            os.close(blk.fd)
            blk.fd = None
        self._drop_index_file(blk.index)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(blk.path)
        self.dir_dirty = True
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None
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
        mirror = self._mirror
        mirror += rec
        mirror += _pack_crc(_crc32(rec))
        act.size = off + plen
        act.live_msgs += 1
        act.live_bytes += plen
        if hdr and _TTL_KEY in hdr:
            ttl = _ttl_of(hdr)
            if ttl:
                self._ttls[seq] = ttl
        return off << 32 | plen

    def append_run(self, seq: int, subject: bytes, payloads: list[bytes]) -> tuple[array[int], array[int]]:
        """`append` for header-less payloads, the records framed with comprehensions and
        joined into the active block's mirror at once; stops before a record that would need the
        next block (unless it is the first: the block is sealed then, as `append` does,
        while the index is whole)."""
        if self._compress:
            return super().append_run(seq, subject, payloads)
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
        self, seq: int, subjects: list[bytes], hdrs: list[bytes], payloads: list[bytes]
    ) -> tuple[array[int], array[int]]:
        """`append` for messages with a subject and a header block each (a read's Spark
        rows), the records framed in one loop and joined into the active block's mirror at once;
        stops before a record that would need the next block, as `append_run`. A block
        with a ``Nats-TTL`` (kept per message for recovery) or a compressed store takes
        `append` per message."""
        if self._compress or _TTL_KEY in b"".join(hdrs):  # (a join: no line is found across two blocks)
            return super().append_hrun(seq, subjects, hdrs, payloads)
        plens, offs = self._fit_run(
            seq, [REC_OVERHEAD + len(s) + len(h) + len(p) for s, h, p in zip(subjects, hdrs, payloads, strict=True)]
        )
        m = len(plens)
        time_ns = _time_ns
        tss = [time_ns() for _ in plens]
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
        self._mirror += b"".join(parts)
        act = self.blocks[-1]
        m = len(plens)
        start, end = offs[0], offs[m]
        act.size = end
        act.live_msgs += m
        act.live_bytes += end - start
        return array("q", tss), array("Q", [o << 32 | n for o, n in zip(offs, plens, strict=False)])

    def _append_to(self, blk: _Block, rec: bytes) -> None:
        if blk is self.blocks[-1]:
            self._mirror += rec
        else:
            self._stale_idx.add(blk)
            buf = self._tombs.get(blk)
            if buf is None:
                self._tombs[blk] = bytearray(rec)
            else:
                buf += rec
        blk.size += len(rec)

    def flush_writes(self) -> None:
        """Hand every pending byte to the OS (no fsync)."""
        if self._floor_dirty:
            act = self.blocks[-1]
            self._floor = (self.index.first_seq, self.index.last_ts)
            rec = floor_record(*self._floor)
            self._mirror += rec
            act.size += len(rec)
            self._floor_block = act
            self._floor_dirty = False
        act = self.blocks[-1]
        if act.written < act.size:
            fd = self._fd(act)
            with memoryview(self._mirror) as mv:
                _pwrite_all(fd, mv[act.written : act.size], act.written)
            act.written = act.size
            self.fsync_pending.add(act)
        if self._tombs:
            for blk, buf in self._tombs.items():
                _pwrite_all(self._fd(blk), buf, blk.written)
                blk.written += len(buf)
                self.fsync_pending.add(blk)
            self._tombs.clear()

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
        if not (self._floor_dirty or self._tombs or self._maint or self._sync_always):
            # Fast path of a plain append: one pwrite of the new bytes.
            if act.written < act.size:
                pending = self._mirror[act.written :]
                fd = act.fd if act.fd is not None else self._fd(act)
                n = _io.pwrite(fd, pending, act.written)
                if n != len(pending):
                    _pwrite_all(fd, pending[n:], act.written + n)
                act.written = act.size
                self.fsync_pending.add(act)
            index = self.index
            self._good = (index.last_seq, index.last_ts, len(self.blocks), act.written)
            return
        self.flush_writes()
        if self._maint:
            self._maintain()
        if self._sync_always:
            self.fsync_all()
        index = self.index
        self._good = (index.last_seq, index.last_ts, len(self.blocks), self.blocks[-1].written)

    def mark_good(self) -> None:
        """What is written now is the point a failed commit goes back to."""
        index = self.index
        self._good = (index.last_seq, index.last_ts, len(self.blocks), self.blocks[-1].written)

    def rollback(self) -> tuple[int, int] | None:
        """Take back the appends since the last good commit: blocks started since are removed,
        the active block is cut back to its good size (a partly written record included), and
        its pending bytes are dropped. Tombstones and floors stay pending: they are retried."""
        last_seq, last_ts, nblocks, written = self._good
        if not nblocks:
            return None
        doomed = self.blocks[nblocks:]
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
            self._mirror = self._mirror[:written]
        self._ra = None
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
        """Unlink sealed blocks with no message left; rewrite mostly-dead ones."""
        maint, self._maint = self._maint, set()
        compact_min = self._compact_min
        for blk in sorted(maint, key=lambda b: b.index):
            dead = blk.size - BLOCK_HDR_LEN - blk.live_bytes
            if blk.live_msgs and (dead < compact_min or dead < blk.live_bytes):
                continue  # the common case, decided without looking the block up
            if blk is self.blocks[-1] or blk not in self.blocks:
                continue
            if blk.live_msgs == 0:
                self._unlink_block(blk)
            else:
                self._rewrite_block(blk)
        self.flush_writes()

    def _slot_range(self, blk: _Block) -> tuple[int, int]:
        """Index slots [lo, hi) of the sequences a block owns."""
        index = self.index
        i = self.blocks.index(blk)
        end_seq = self._firsts[i + 1] if i + 1 < len(self.blocks) else index.last_seq + 1
        lo = max(blk.first_seq - index.base, 0)
        hi = min(end_seq - index.base, len(index.sids))
        return lo, max(lo, hi)

    def _rewrite_block(self, blk: _Block, upto: int | None = None) -> bytearray:
        """Rewrite a block with only its live records (those <= upto if given)."""
        if self._floor_block is blk:
            self._persist_floor_in_active()
        self.flush_writes()
        fd = self._fd(blk)
        old = os.pread(fd, blk.written, 0) if blk is not self.blocks[-1] else bytes(self._mirror)
        new = bytearray(encode_block_header(blk.first_seq))
        lo, hi = self._slot_range(blk)
        index = self.index
        if upto is not None:
            hi = min(hi, upto - index.base + 1)
        sids, locs = index.sids, index.locs
        live_msgs = live_bytes = 0
        for i in range(lo, hi):
            if sids[i]:
                loc = locs[i]
                off, plen = loc >> 32, loc & _LEN_MASK
                locs[i] = len(new) << 32 | plen
                new += old[off : off + plen]
                live_msgs += 1
                live_bytes += plen
        tmp = blk.path + ".tmp"
        write_file(tmp, new, fsync=True)
        self._close_fd(blk)
        os.replace(tmp, blk.path)
        fsync_dir(self.msgs_dir)
        blk.size = blk.written = len(new)
        blk.live_msgs = live_msgs
        blk.live_bytes = live_bytes
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None
        if blk is not self.blocks[-1]:
            with contextlib.suppress(OSError):
                self._write_index(blk, new)
        return new

    # ------------------------------------------------------------------------------------
    # Removal
    # ------------------------------------------------------------------------------------
    def remove(self, seq: int, loc: int, erase: bool) -> None:
        blk = self._block_for(seq)
        plen = loc & _LEN_MASK
        blk.live_msgs -= 1
        blk.live_bytes -= plen
        if erase:
            self._erase_record(blk, loc >> 32, plen, seq)
        elif seq != self.index.first_seq:
            self._append_to(blk, tombstone(seq, 1, 0))
        if blk is not self.blocks[-1]:
            self._maint.add(blk)

    def _erase_record(self, blk: _Block, off: int, plen: int, seq: int) -> None:
        rec = erased_record(seq, plen)
        if blk is self.blocks[-1]:
            self._mirror[off : off + plen] = rec
            if off >= blk.written:
                return  # still pending: the overwrite happens in memory
        if blk is not self.blocks[-1]:
            self._stale_idx.add(blk)
            self._drop_index_file(blk.index)  # it would still list the erased message
        _pwrite_all(self._fd(blk), rec, off)
        self.fsync_pending.add(blk)
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None

    def remove_range(self, lo: int, hi: int) -> None:
        index = self.index
        base = index.base
        sids, locs = index.sids, index.locs
        active = self.blocks[-1]
        bi = bisect.bisect_right(self._firsts, base + lo) - 1
        while bi < len(self.blocks):
            blk = self.blocks[bi]
            a = max(lo, blk.first_seq - base)
            if a >= hi:
                break
            z = hi if bi + 1 >= len(self.blocks) else min(hi, self._firsts[bi + 1] - base)
            if z > a:
                seg = sids[a:z]
                blk.live_msgs -= len(seg) - seg.count(0)
                # Record lengths sit in the low 32 bits; their sum stays below 2**32 in a block.
                blk.live_bytes -= sum(locs[a:z]) & _LEN_MASK
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
        self._stale_idx.clear()
        self._ttls = {}
        self._floor_dirty = False
        self._ra = None
        self.blocks, self._firsts = [], []
        nb = self._new_active_block(first_seq)
        self._floor_block = None
        if with_floor:
            rec = floor_record(first_seq, self.index.last_ts)
            self._mirror += rec
            nb.size += len(rec)
            self._floor_block = nb
        self.flush_writes()
        if self._sync_always:
            self.fsync_all()
        for blk in old:
            self._forget_block_file(blk)
        self._floor = (first_seq, self.index.last_ts) if with_floor else (0, 0)

    def truncate(self, seq: int) -> None:
        self.flush_writes()
        keep = self._block_for(seq)
        doomed = self.blocks[self.blocks.index(keep) + 1 :]
        for blk in reversed(doomed):
            del self.blocks[-1], self._firsts[-1]
            self._forget_block_file(blk)
        # ``keep`` becomes the active block: rewrite it with the live records up to seq.
        self._stale_idx.discard(keep)
        self._drop_index_file(keep.index)
        self._ttls = {k: v for k, v in self._ttls.items() if k <= seq}
        self._ra = None
        self._open_fds.pop(keep, None)
        self._mirror = bytearray(os.pread(self._fd(keep), keep.written, 0))
        self._mirror = self._rewrite_block(keep, upto=seq)
        self._maint.discard(keep)
        self._floor_dirty = True

    def config_changed(self, cfg: StoreConfig) -> None:
        self._compress = cfg.compression == COMPRESSION_S2

    # ------------------------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------------------------
    def read(self, seq: int, loc: int) -> tuple[bytes, bytes]:
        off = loc >> 32
        plen = loc & _LEN_MASK
        if seq >= self._firsts[-1]:
            rec = bytes(self._mirror[off : off + plen])
        else:
            rec = self._read_sealed(self._block_for(seq), off, plen)
        total, kind, rseq, _ts, slen, hlen = _unpack_rec(rec, 0)
        if total != plen or rseq != seq or kind & FLAG_ERASED:
            raise ErrCorruptRecord(f"record for sequence {seq} does not match the index")
        if _crc32(rec) != CRC_RESIDUE:
            raise ErrCorruptRecord(f"record for sequence {seq} failed its checksum")
        body_at = REC_HDR_LEN + slen
        if kind & FLAG_COMPRESSED:
            body = _compress.decompress(rec[body_at:-CRC_LEN])
            return body[:hlen], body[hlen:]
        return rec[body_at : body_at + hlen], rec[body_at + hlen : -CRC_LEN]

    def read_run(self, slots: list[int]) -> list[MsgTuple]:
        """`PayloadBackend.read_run` in one loop (a consumer's read-ahead): the active
        block's mirror, the record checks and the index's columns bound once, each message's tuple
        built where its record is read, and a sealed block's read-ahead window (`_read_sealed`)
        sliced here while the records are in it. A record that is compressed or fails a check goes
        through [`read`][pyjetstream.client.jetstream.object_store.ObjectResult.read] (which decompresses it, or raises its error)."""
        index = self.index
        base, locs, tss, sids, names = index.base, index.locs, index.tss, index.sids, index.subjects.names
        firsts = self._firsts
        active = firsts[-1]
        mirror = self._mirror
        unpack, crc, read = _unpack_rec, _crc32, self.read
        len_mask, not_plain, residue = _LEN_MASK, _NOT_PLAIN, CRC_RESIDUE
        hdr_len, crc_end = REC_HDR_LEN, -CRC_LEN
        # The read-ahead window last filled: its block's sequences [ra_lo, ra_hi), its bytes
        # [ra_off, ra_end) of that block.
        ra_lo = ra_hi = ra_off = ra_end = 0
        ra_data = b""
        out: list[MsgTuple] = []
        append = out.append
        for i in slots:
            seq = base + i
            loc = locs[i]
            off = loc >> 32
            plen = loc & len_mask
            if seq >= active:
                rec = bytes(mirror[off : off + plen])
            elif ra_lo <= seq < ra_hi and ra_off <= off and off + plen <= ra_end:
                rec = ra_data[off - ra_off : off - ra_off + plen]
            else:
                j = bisect.bisect_right(firsts, seq) - 1
                rec = self._read_sealed(self.blocks[j], off, plen)
                _blk, ra_off, ra_data = self._ra  # type: ignore[misc]  # _read_sealed set it
                ra_end = ra_off + len(ra_data)
                ra_lo, ra_hi = firsts[j], firsts[j + 1]
            total, kind, rseq, _ts, slen, hlen = unpack(rec, 0)
            subject: str = names[sids[i]]  # type: ignore[assignment]  # a live message's subject is named
            if total != plen or rseq != seq or kind & not_plain or crc(rec) != residue:
                hdr, data = read(seq, loc)
                append((subject, seq, tss[i], hdr, data))
                continue
            body_at = hdr_len + slen
            if hlen:
                append((subject, seq, tss[i], rec[body_at : body_at + hlen], rec[body_at + hlen : crc_end]))
            else:
                append((subject, seq, tss[i], b"", rec[body_at:crc_end]))
        return out

    def _read_sealed(self, blk: _Block, off: int, plen: int) -> bytes:
        ra = self._ra
        if ra is not None and ra[0] is blk:
            start = off - ra[1]
            if start >= 0 and start + plen <= len(ra[2]):
                return ra[2][start : start + plen]
        want = max(plen, min(READ_AHEAD, blk.written - off))
        data = os.pread(self._fd(blk), want, off)
        if len(data) < plen:
            raise ErrCorruptRecord(f"short read in block {blk.index}")
        self._ra = (blk, off, data)
        return data[:plen]

    # ------------------------------------------------------------------------------------
    # Snapshot (the block list; the index snapshots itself)
    # ------------------------------------------------------------------------------------
    def _tail_crc(self, blk: _Block) -> int:
        """The checksum of the block's tail; -1 for a block file that is gone (deleted under a
        running server: the snapshot still lists it, so the next start reports its messages lost)."""
        if not os.path.exists(blk.path):
            return -1
        with open(blk.path, "rb") as f:
            f.seek(max(0, blk.written - _snapshot.TAIL_CHECK))
            return _crc32(f.read(_snapshot.TAIL_CHECK))

    def snapshot(self) -> dict[str, Any]:
        return {
            "floor_block": self._floor_block.index if self._floor_block is not None else None,
            "floor": list(self._floor),
            "blocks": [
                [b.index, b.first_seq, b.written, b.live_msgs, b.live_bytes, self._tail_crc(b)]
                for b in self.blocks
            ],
        }

    def restore(self, header: dict[str, Any], files: list[tuple[int, str]]) -> bool:
        """Take the block list of a snapshot if every block file still matches it."""
        if [idx for idx, _ in files] != [b[0] for b in header["blocks"]]:
            return False
        floor_seq, floor_ts = header["floor"]
        blocks: list[_Block] = []
        for index, first_seq, size, live_msgs, live_bytes, tail in header["blocks"]:
            blk = _Block(index, first_seq, self._block_path(index), size)
            if tail < 0 or os.path.getsize(blk.path) != size or self._tail_crc(blk) != tail:
                return False
            blk.live_msgs, blk.live_bytes = live_msgs, live_bytes
            blocks.append(blk)
        self.blocks = blocks
        self._firsts = [b.first_seq for b in blocks]
        fb = header["floor_block"]
        self._floor_block = next((b for b in blocks if b.index == fb), None)
        self._floor = (int(floor_seq), int(floor_ts))
        # Sealed blocks without an index (scanned at an earlier start) get one on the next sync.
        self._stale_idx = {b for b in blocks[:-1] if b.index not in self._idx_found}
        self._idx_found = set()
        return True

    # ------------------------------------------------------------------------------------
    # Recovery
    # ------------------------------------------------------------------------------------
    def list_files(self) -> list[tuple[int, str]]:
        """The block files, in order (left-over temporary files are removed; the block indexes
        found are noted for [`load`][pyjetstream.client.jetstream.counter.Counter.load])."""
        files: list[tuple[int, str]] = []
        self._idx_found = set()
        for name in os.listdir(self.msgs_dir):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(self.msgs_dir, name))
            elif name.endswith(".blk") and name[:-4].isdigit():
                files.append((int(name[:-4]), name))
            elif name.endswith(".idx") and name[:-4].isdigit():
                self._idx_found.add(int(name[:-4]))
        files.sort()
        if files:
            self._next_index = files[-1][0] + 1
        return files

    def load(self, files: list[tuple[int, str]]) -> list[BlockSlots]:
        """Every block's slots for ``SeqIndex.rebuild``, in order: from the block's saved index
        when it matches the block byte for byte (size and CRC of the whole file), else from a
        scan of the block (the active block after a crash, or one changed since its index was
        written). A scan cuts torn tails, steps over damaged records and notes what was lost
        (see [`lost`][pyjetstream.api.models_stream.StreamState.lost]); an index whose block file is gone reports the block's messages lost.
        """
        out: list[BlockSlots] = []
        known = _SubjectIds()  # subject -> id, as the blocks loaded so far number them
        max_seq = max_ts = 0
        floor = floor_ts = 0
        floor_from_index = False
        last_index = files[-1][0] if files else -1
        present = {index for index, _ in files}
        for index in sorted(self._idx_found - present):
            self._note_missing(index)
        for index, name in files:
            path = os.path.join(self.msgs_dir, name)
            with _mapped(path) as buf:
                slots, scanned = self._load_block(index, path, buf, index == last_index, max_seq, max_ts, known)
            if slots is None:
                continue
            if not scanned:
                known.learn(slots)
            if slots.floor > floor:
                floor, floor_ts = slots.floor, slots.floor_ts
                floor_from_index = not scanned
                self._floor_block = self.blocks[-1] if scanned else None
            if slots.sids:
                max_seq = slots.first + len(slots.sids) - 1
                max_ts = slots.tss[-1]
            out.append(slots)
        self._floor = (floor, floor_ts)
        if floor_from_index:
            # The newest floor is known from an index, not from the record itself: write it
            # again into the active block, so it never depends on where the record sits.
            self._floor_dirty = True
        self._idx_found = set()
        return out

    def _load_block(
        self, index: int, path: str, buf: Bytes, is_last: bool, max_seq: int, max_ts: int, known: _SubjectIds
    ) -> tuple[BlockSlots | None, bool]:
        """One block's slots (from its index, else a scan) and whether it was scanned; the
        block joins the list. None for a block whose header is damaged (set aside, its bytes
        counted lost)."""
        first = decode_block_header(buf)
        if first is None:
            # Torn while being created, or damaged: nothing in it can be trusted.
            if len(buf) > BLOCK_HDR_LEN:
                self._lost_bytes += len(buf)
                os.replace(path, path + ".corrupt")
            else:
                os.unlink(path)
            self._drop_index_file(index)
            return None, False
        slots = None
        if index in self._idx_found:
            slots = self._read_index(index, buf, first, max_seq)
            if slots is None:
                self._drop_index_file(index)  # it disagrees with its block
        blk = _Block(index, first, path, len(buf))
        self.blocks.append(blk)
        self._firsts.append(first)
        if slots is not None:
            return slots, False
        if not is_last:
            self._stale_idx.add(blk)
        return self._scan_block(blk, buf, is_last, max_seq, max_ts, known), True

    def _read_index(self, index: int, buf: Bytes, first: int, max_seq: int) -> BlockSlots | None:
        """The saved index of block ``index`` if it still describes ``buf`` exactly."""
        try:
            with open(self._idx_path(index), "rb") as f:
                decoded = _snapshot.decode(f.read())
        except OSError:
            return None
        if decoded is None:
            return None
        header, arrays, names = decoded
        try:
            if header["size"] != len(buf) or header["crc"] != _crc32(buf) or header["first"] != first:
                return None
            if first <= max_seq:
                return None  # overlaps the blocks before it: only a scan can sort that out
            slots = BlockSlots(first)
            slots.sids, slots.tss, slots.sizes = arrays["sids"], arrays["tss"], arrays["sizes"]
            slots.locs, slots.nxt, slots.ids = arrays["locs"], arrays["nxt"], arrays["ids"]
            slots.s_msgs, slots.s_first, slots.s_last = arrays["s_msgs"], arrays["s_first"], arrays["s_last"]
            slots.names = [n or "" for n in names]
            slots.floor, slots.floor_ts = int(header["floor"]), int(header["floor_ts"])
            n = len(slots.sids)
            if any(len(a) != n for a in (slots.tss, slots.sizes, slots.locs, slots.nxt)):
                return None
            k = len(slots.ids)
            if any(len(a) != k for a in (slots.s_msgs, slots.s_first, slots.s_last)) or len(names) != k:
                return None
            for seq, ttl in header["ttls"]:
                self.found_ttls[int(seq)] = int(ttl)
        except (KeyError, ValueError, TypeError):
            return None
        return slots

    def _note_missing(self, index: int) -> None:
        """A block index whose block file is gone: its live messages are lost (reported once
        the remaining blocks are loaded, for the sequences none of them holds)."""
        try:
            with open(self._idx_path(index), "rb") as f:
                decoded = _snapshot.decode(f.read())
            if decoded is not None:
                header, arrays, _names = decoded
                first = int(header["first"])
                sids, sizes = arrays["sids"], arrays["sizes"]
                for k, sid in enumerate(sids):
                    if sid:
                        self._missing_seqs.append(first + k)
                        self._missing_bytes += sizes[k]
        except (OSError, KeyError, ValueError, TypeError):
            pass
        self._drop_index_file(index)

    def _scan_block(
        self, blk: _Block, buf: Bytes, is_last: bool, max_seq: int, prev_ts: int, known: _SubjectIds
    ) -> BlockSlots:
        """Scan one block's records into its slots (sequences above ``max_seq`` only). A
        subject gets the id ``known`` has for it (the blocks before numbered it), or the next
        one, so the index adopts the block's ids as they are."""
        first = blk.first_seq
        slots = BlockSlots(max(first, max_seq + 1))
        start = slots.first
        sids, tss, sizes, locs, nxt = slots.sids, slots.tss, slots.sizes, slots.locs, slots.nxt
        names, ids = slots.names, slots.ids
        own: dict[bytes, int] = {}  # this block's subjects, by the ids ``known`` gives them
        last_idx: list[int] = [-1] * known.next
        cur_ts = prev_ts
        decompressed_len = cramjam.snappy.decompress_raw_len
        size_base, size_hdr = self.size_base, self.size_hdr

        def extend(n: int, ts: int) -> None:
            sids.extend(zeros("I", n))
            tss.extend(array("q", [ts]) * n)
            sizes.extend(zeros("I", n))
            locs.extend(zeros("Q", n))
            nxt.extend(zeros("Q", n))

        ends: list[ScanEnd] = []
        # The per-record loop of a crash restart: everything it touches is a local.
        sids_append, tss_append, sizes_append = sids.append, tss.append, sizes.append
        locs_append, nxt_append, own_get = locs.append, nxt.append, own.get
        kind_mask, kind_msg, erased, compressed = KIND_MASK, KIND_MSG, FLAG_ERASED, FLAG_COMPRESSED
        hdr_len, overhead = REC_HDR_LEN, REC_OVERHEAD
        nslots = 0
        for off, total, kind, seq, ts, slen, hlen in scan_records(buf, BLOCK_HDR_LEN, ends):
            k = kind & kind_mask
            if k == kind_msg:
                if seq <= max_seq or seq < start:
                    self._lost_bytes += total  # out of order: cannot be placed
                    continue
                max_seq = seq
                idx = seq - start
                if idx != nslots:
                    extend(idx - nslots, cur_ts)
                nslots = idx + 1
                if kind & erased:
                    extend(1, cur_ts)
                    continue
                at = off + hdr_len
                if kind & compressed:
                    dlen = decompressed_len(buf[at + slen : off + total - CRC_LEN]) - hlen
                else:
                    dlen = total - overhead - slen - hlen
                subj = buf[at : at + slen]
                sid = own_get(subj)
                if sid is None:
                    sid = own[subj] = known.id_for(subj)
                    ids.append(sid)
                    names.append(subj.decode())
                    if sid >= len(last_idx):
                        last_idx.extend([-1] * (sid + 1 - len(last_idx)))
                sids_append(sid)
                tss_append(ts)
                if hlen:
                    sizes_append(size_base + slen + dlen + size_hdr + hlen)
                    self._note_ttl(buf, at + slen, hlen, kind, off + total, seq)
                else:
                    sizes_append(size_base + slen + dlen)
                locs_append(off << 32 | total)
                nxt_append(0)
                li = last_idx[sid]
                if li >= 0:
                    nxt[li] = seq
                last_idx[sid] = idx
                cur_ts = ts
            elif k == KIND_DELETE:
                num = delete_count(buf, off, total)
                if seq < start:
                    slots.deletes.append((seq, min(num, start - seq), ts))
                for i in range(max(seq - start, 0), min(seq + num - start, len(sids))):
                    if sids[i]:
                        sids[i] = 0
                        sizes[i] = 0
                        locs[i] = 0
                end_seq = seq + num - 1
                if end_seq > max_seq:
                    gap = end_seq - start + 1 - nslots
                    if gap > 0:
                        extend(gap, ts)
                        nslots += gap
                    max_seq = end_seq
                    cur_ts = ts
            elif k == KIND_FLOOR and seq > slots.floor:
                slots.floor, slots.floor_ts = seq, ts
        end = ends[0]
        for off, total in end.skipped:
            self._lost_bytes += total
            if buf[off + 4] & KIND_MASK == KIND_MSG:
                self._maybe_lost.append(int.from_bytes(buf[off + 5 : off + 13], "little"))
        if end.good_end < len(buf):
            torn = buf[end.good_end :]
            if not (is_last and _in_flight(torn)):
                # Damage, not a write cut short by a crash: report what is gone.
                self._lost_bytes += len(torn)
                if len(torn) >= REC_HDR_LEN:
                    seq = int.from_bytes(torn[5:13], "little")
                    if torn[4] & KIND_MASK == KIND_MSG and seq == max_seq + 1:
                        self._lost_seqs.append(seq)
            os.truncate(blk.path, end.good_end)
            blk.size = blk.written = end.good_end
        slots.summarize()
        return slots

    def _note_ttl(self, buf: Bytes, at: int, hlen: int, kind: int, end: int, seq: int) -> None:
        """Keep the TTL of a message whose headers carry ``Nats-TTL`` (restored after a crash)."""
        if kind & FLAG_COMPRESSED:
            hdr = _compress.decompress(buf[at : end - CRC_LEN])[:hlen]
        else:
            hdr = buf[at : at + hlen]
        ttl = _ttl_of(hdr)
        if ttl:
            self.found_ttls[seq] = ttl

    # ------------------------------------------------------------------------------------
    # Block indexes (``<n>.idx`` beside ``<n>.blk``)
    # ------------------------------------------------------------------------------------
    def _idx_path(self, index: int) -> str:
        return os.path.join(self.msgs_dir, f"{index}.idx")

    def _drop_index_file(self, index: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._idx_path(index))

    def _write_index(self, blk: _Block, content: bytes | bytearray) -> None:
        """Save a sealed block's slots beside it (``content`` = the block file's bytes), so a
        restart after a crash loads them instead of scanning the block (nats-server writes a
        per-block index the same way). Written whole and renamed into place; not fsynced: the
        CRC check at load catches an index that did not reach the disk."""
        i = self.blocks.index(blk)
        index = self.index
        end = self._firsts[i + 1] if i + 1 < len(self.blocks) else index.last_seq + 1
        slots = index.block_slots(blk.first_seq, end)
        ttls = [
            [seq, ttl]
            for seq, ttl in self._ttls.items()
            if blk.first_seq <= seq < end and index.live_slot(seq) >= 0
        ]
        header = {
            "first": blk.first_seq,
            "size": len(content),
            "crc": _crc32(content),
            "floor": self._floor[0],
            "floor_ts": self._floor[1],
            "ttls": ttls,
        }
        arrays = {
            "sids": slots.sids,
            "tss": slots.tss,
            "sizes": slots.sizes,
            "locs": slots.locs,
            "nxt": slots.nxt,
            "ids": slots.ids,
            "s_msgs": slots.s_msgs,
            "s_first": slots.s_first,
            "s_last": slots.s_last,
        }
        names: list[str | None] = list(slots.names)
        path = self._idx_path(blk.index)
        write_file(path + ".tmp", _snapshot.encode(header, arrays, names), fsync=False)
        os.replace(path + ".tmp", path)
        self._stale_idx.discard(blk)

    def refresh_indexes(self, limit: int = 0) -> None:
        """Write the index of sealed blocks changed since their index was written (a
        tombstone, an erase, a scan at start), ``limit`` at most (0: all), so the next crash
        scans none of them. Everything pending is flushed first: an index describes the file."""
        if not self._stale_idx:
            return
        self.flush_writes()
        active = self.blocks[-1]
        for blk in sorted(self._stale_idx, key=lambda b: b.index):
            self._stale_idx.discard(blk)
            if blk is active or blk not in self.blocks:
                continue
            self._write_index(blk, os.pread(self._fd(blk), blk.written, 0))
            limit -= 1
            if limit == 0:
                break

    def keep_ttls(self, ttls: dict[int, int]) -> None:
        """After recovery: the TTLs of the stored messages, for the block indexes to come."""
        self._ttls = dict(ttls)

    def account(self) -> None:
        """After the index was rebuilt: each block's live counts, from the index."""
        index = self.index
        sids, locs = index.sids, index.locs
        for blk in self.blocks:
            lo, hi = self._slot_range(blk)
            seg = sids[lo:hi]
            blk.live_msgs = len(seg) - seg.count(0)
            blk.live_bytes = sum(locs[lo:hi]) & _LEN_MASK
        for blk in self.blocks[:-1]:
            self._maint.add(blk)
        # The newest floor is the one the index applied; keep pointing at its block.
        if self._floor_block is not None and self._floor_block not in self.blocks:
            self._floor_block = None

    def lost(self, with_missing: bool = True) -> LostData | None:
        """What the load dropped: bytes cut or stepped over, and the sequences that held
        messages no longer found (a damaged record, or the torn record right after the last;
        ``with_missing``: the messages of block files gone whose index remained)."""
        index = self.index
        lost = list(self._lost_seqs)
        nbytes = self._lost_bytes
        start = self._firsts[0] if self._firsts else index.base
        for seq in self._maybe_lost:
            i = seq - index.base
            if i < len(index.sids) and seq >= start and (i < 0 or not index.sids[i]):
                lost.append(seq)
        if with_missing and self._missing_seqs:
            gone = [seq for seq in self._missing_seqs if seq >= self._floor[0] and index.live_slot(seq) < 0]
            if gone:
                lost += gone
                nbytes += self._missing_bytes
        self._missing_seqs, self._missing_bytes = [], 0
        if not (nbytes or lost):
            return None
        return LostData(sorted(set(lost)), nbytes)


@functools.lru_cache(maxsize=64)
def _run_record(subject_len: int, payload_len: int) -> struct.Struct:
    """A header-less message record up to its CRC — header, subject and (``payload_len`` ≥ 0)
    the payload — as one struct, so that a run's records are one ``pack`` each
    (``BlockFiles.append_run``)."""
    body = f"{payload_len}s" if payload_len >= 0 else ""
    return struct.Struct(REC_HDR.format + f"{subject_len}s" + body)


@contextlib.contextmanager
def _mapped(path: str) -> Iterator[Bytes]:
    """A block file's bytes, mapped rather than read: loading reads each block once (CRC or
    scan) and keeps nothing of it, so nothing is copied into the heap (where a freed 8 MiB
    buffer stays in the process's resident memory)."""
    with open(path, "rb") as f:
        if not os.fstat(f.fileno()).st_size:
            yield b""
            return
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        yield mm
    finally:
        with contextlib.suppress(BufferError):
            mm.close()


def _ttl_of(hdr: bytes) -> int:
    """The TTL of a header block carrying a valid ``Nats-TTL`` (0: none)."""
    if _TTL_KEY not in hdr:
        return 0
    raw = get_header(hdr, b"Nats-TTL")
    if raw:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            return parse_message_ttl(raw.decode()) or 0
    return 0


def _in_flight(torn: bytes) -> bool:
    """Whether the end of the last block is a record cut short (its length runs past the end
    of the file): the write in flight when the process died, never acknowledged, so recovery
    cuts it without reporting it as lost. A complete record that fails its checksum is damage."""
    if len(torn) < 4:
        return True
    total = int.from_bytes(torn[:4], "little")
    return REC_OVERHEAD <= total <= MAX_RECORD and total > len(torn)


class _FileIO:
    """The one place block bytes are written (tests put a failing disk in its place)."""

    pwrite = staticmethod(os.pwrite)


_io = _FileIO()


def _pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = _io.pwrite(fd, view, offset)
        offset += n
        view = view[n:]
