"""The file store's payload backend: append-only block files (nats-server ``msgBlock``).

Format in ``_records``. Every record a message lives in is addressed by the index's locator
``offset << 32 | record length`` inside the block that owns the sequence.

Deletes. Removing the first message (limits, expiry, compact, workqueue acks in order) writes
one FLOOR record to the active block per commit; interior removals write a tombstone into the
block that owns the message; erase overwrites the record in place. Sealed blocks whose
messages are all gone are unlinked, and sealed blocks that are mostly dead are rewritten with
only their live records (atomic rename).

Recovery. :meth:`BlockFiles.records` scans every block and yields its records for
``SeqIndex.rebuild``: records are checksummed, a damaged record whose length still leads to a
valid record is stepped over, and the file is cut at the first record that cannot be trusted.
What was dropped is reported by :meth:`BlockFiles.lost` — except a record cut short at the very
end of the last block: that is the write in flight when the process died, never acknowledged.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import struct
import zlib
from collections.abc import Iterator
from typing import Any

import cramjam

from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import get_header

from . import _compress, _snapshot
from ._fileutil import fsync_dir, write_file
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
from .base import COMPRESSION_S2, ErrCorruptRecord, ErrMsgTooLarge, LostData, StoreConfig
from .seqindex import REC_BLOCK, REC_DELETE, REC_FLOOR, REC_GAP, REC_MSG, Record, SeqIndex

# Sequential reads of sealed blocks go through a read-ahead window of this size.
READ_AHEAD = 256 * 1024
# Keep at most this many sealed-block descriptors open (the active block's is always open).
MAX_OPEN_FDS = 32

_unpack_rec = REC_HDR.unpack_from
_pack_rec = REC_HDR.pack
_pack_crc = struct.Struct("<I").pack
_crc32 = zlib.crc32
_LEN_MASK = 0xFFFFFFFF
_TTL_KEY = b"\r\nNats-TTL:"


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
        self._new_active_block(next_seq)
        # The sealed block now takes part in the sealed-fd LRU.
        self._open_fds[old] = None
        if len(self._open_fds) > MAX_OPEN_FDS:
            self._close_fd(next(iter(self._open_fds)))
        self._maint.add(old)

    def _unlink_block(self, blk: _Block) -> None:
        if self._floor_block is blk:
            self._persist_floor_in_active()
        self._tombs.pop(blk, None)
        self.fsync_pending.discard(blk)
        self._open_fds.pop(blk, None)
        if blk.fd is not None:
            os.close(blk.fd)
            blk.fd = None
        i = self.blocks.index(blk)
        del self.blocks[i]
        del self._firsts[i]
        with contextlib.suppress(FileNotFoundError):
            os.unlink(blk.path)
        self.dir_dirty = True
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None

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
        return off << 32 | plen

    def _append_to(self, blk: _Block, rec: bytes) -> None:
        if blk is self.blocks[-1]:
            self._mirror += rec
        else:
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
            rec = floor_record(self.index.first_seq, self.index.last_ts)
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
        for blk in self.blocks[nblocks:]:
            self._tombs.pop(blk, None)
            self._maint.discard(blk)
            self.fsync_pending.discard(blk)
            self._open_fds.pop(blk, None)
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
            with contextlib.suppress(OSError):
                os.unlink(blk.path)
            if self._floor_block is blk:
                self._floor_block = None
                self._floor_dirty = True
        del self.blocks[nblocks:], self._firsts[nblocks:]
        act = self.blocks[-1]
        self._maint.discard(act)
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
            self.fsync_pending.discard(blk)
            self._open_fds.pop(blk, None)
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(blk.path)
        self.dir_dirty = True

    def truncate(self, seq: int) -> None:
        self.flush_writes()
        keep = self._block_for(seq)
        doomed = self.blocks[self.blocks.index(keep) + 1 :]
        for blk in reversed(doomed):
            self._tombs.pop(blk, None)
            self._maint.discard(blk)
            self.fsync_pending.discard(blk)
            self._open_fds.pop(blk, None)
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
            del self.blocks[-1], self._firsts[-1]
            os.unlink(blk.path)
            if self._floor_block is blk:
                self._floor_block = None
        self.dir_dirty = True
        # ``keep`` becomes the active block: rewrite it with the live records up to seq.
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
            "blocks": [
                [b.index, b.first_seq, b.written, b.live_msgs, b.live_bytes, self._tail_crc(b)]
                for b in self.blocks
            ],
        }

    def restore(self, header: dict[str, Any], files: list[tuple[int, str]]) -> bool:
        """Take the block list of a snapshot if every block file still matches it."""
        if [idx for idx, _ in files] != [b[0] for b in header["blocks"]]:
            return False
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
        return True

    # ------------------------------------------------------------------------------------
    # Recovery
    # ------------------------------------------------------------------------------------
    def list_files(self) -> list[tuple[int, str]]:
        """The block files, in order (left-over temporary files are removed)."""
        files: list[tuple[int, str]] = []
        for name in os.listdir(self.msgs_dir):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(self.msgs_dir, name))
            elif name.endswith(".blk") and name[:-4].isdigit():
                files.append((int(name[:-4]), name))
        files.sort()
        if files:
            self._next_index = files[-1][0] + 1
        return files

    def records(self, files: list[tuple[int, str]]) -> Iterator[Record]:
        """Scan every block and yield its records for ``SeqIndex.rebuild``.

        Cuts torn tails, steps over damaged records and notes what was lost (see :meth:`lost`).
        """
        max_seq = floor = 0
        decompressed_len = cramjam.snappy.decompress_raw_len
        size_base, size_hdr = self.size_base, self.size_hdr
        last_index = files[-1][0] if files else -1
        for index, name in files:
            path = os.path.join(self.msgs_dir, name)
            with open(path, "rb") as f:
                buf = f.read()
            first = decode_block_header(buf)
            if first is None:
                # Torn while being created, or damaged: nothing in it can be trusted.
                if len(buf) > BLOCK_HDR_LEN:
                    self._lost_bytes += len(buf)
                    os.replace(path, path + ".corrupt")
                else:
                    os.unlink(path)
                continue
            blk = _Block(index, first, path, len(buf))
            self.blocks.append(blk)
            self._firsts.append(first)
            yield REC_BLOCK, first, 0, b"", 0, 0
            ends: list[ScanEnd] = []
            for off, total, kind, seq, ts, slen, hlen in scan_records(buf, BLOCK_HDR_LEN, ends):
                k = kind & KIND_MASK
                if k == KIND_MSG:
                    if seq <= max_seq or seq < first:
                        self._lost_bytes += total  # out of order: cannot be placed
                        continue
                    max_seq = seq
                    if kind & FLAG_ERASED:
                        yield REC_GAP, seq, 0, b"", 0, 0
                        continue
                    at = off + REC_HDR_LEN
                    if kind & FLAG_COMPRESSED:
                        dlen = decompressed_len(buf[at + slen : off + total - CRC_LEN]) - hlen
                    else:
                        dlen = total - REC_OVERHEAD - slen - hlen
                    size = size_base + slen + dlen + (size_hdr + hlen if hlen else 0)
                    if hlen:
                        self._note_ttl(buf, at + slen, hlen, kind, off + total, seq)
                    yield REC_MSG, seq, ts, buf[at : at + slen], size, off << 32 | total
                elif k == KIND_DELETE:
                    num = delete_count(buf, off, total)
                    max_seq = max(max_seq, seq + num - 1)
                    yield REC_DELETE, seq, ts, b"", num, 0
                elif k == KIND_FLOOR and seq > floor:
                    floor = seq
                    self._floor_block = blk
                    yield REC_FLOOR, seq, ts, b"", 0, 0
            end = ends[0]
            for off, total in end.skipped:
                self._lost_bytes += total
                if buf[off + 4] & KIND_MASK == KIND_MSG:
                    self._maybe_lost.append(int.from_bytes(buf[off + 5 : off + 13], "little"))
            if end.good_end < len(buf):
                torn = buf[end.good_end :]
                if not (index == last_index and _in_flight(torn)):
                    # Damage, not a write cut short by a crash: report what is gone.
                    self._lost_bytes += len(torn)
                    if len(torn) >= REC_HDR_LEN:
                        seq = int.from_bytes(torn[5:13], "little")
                        if torn[4] & KIND_MASK == KIND_MSG and seq == max_seq + 1:
                            self._lost_seqs.append(seq)
                os.truncate(path, end.good_end)
                blk.size = blk.written = end.good_end

    def _note_ttl(self, buf: bytes, at: int, hlen: int, kind: int, end: int, seq: int) -> None:
        """Keep the TTL of a message whose headers carry ``Nats-TTL`` (restored after a crash)."""
        if kind & FLAG_COMPRESSED:
            hdr = _compress.decompress(buf[at : end - CRC_LEN])[:hlen]
        else:
            hdr = buf[at : at + hlen]
        if _TTL_KEY not in hdr:
            return
        raw = get_header(hdr, b"Nats-TTL")
        if raw:
            with contextlib.suppress(ValueError, UnicodeDecodeError):
                ttl = parse_message_ttl(raw.decode())
                if ttl:
                    self.found_ttls[seq] = ttl

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

    def lost(self) -> LostData | None:
        """What the scan dropped: bytes cut or stepped over, and the sequences that held
        messages no longer found (a damaged record, or the torn record right after the last)."""
        index = self.index
        lost = list(self._lost_seqs)
        start = self._firsts[0] if self._firsts else index.base
        for seq in self._maybe_lost:
            i = seq - index.base
            if i < len(index.sids) and seq >= start and (i < 0 or not index.sids[i]):
                lost.append(seq)
        if not (self._lost_bytes or lost):
            return None
        return LostData(sorted(set(lost)), self._lost_bytes)


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
