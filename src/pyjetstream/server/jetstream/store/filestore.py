"""FileStore: messages in append-only block files (nats-server ``filestore.go``, simplified).

Directory layout (``FileStoreConfig.directory`` is the stream's directory)::

    meta.inf, meta.sum          stream definition (write_meta / read_meta), crash-safe
    msgs/<n>.blk                message blocks (format in ``_records``)
    msgs/index.snap             index snapshot, only between a clean stop and the next start
    obs/<consumer>/             consumer definition (meta.inf/.sum) and state (o.dat)

Durability. Every mutation is written to the OS (``pwrite``) before the call returns, or when
the outermost ``batch()`` exits; a process crash loses nothing that was acknowledged after
that. ``sync="always"`` also fsyncs before returning; ``sync="interval"`` (default, as
nats-server's ``sync_interval``) leaves fsync to :meth:`FileStore.sync`, which the caller runs
every ``sync_interval`` seconds (no background thread: the store is single-threaded).

Deletes. Removing the first message (limits, expiry, compact, workqueue acks in order) writes
one FLOOR record to the active block per commit; interior removals write a tombstone into the
block that owns the message; erase overwrites the record in place. Sealed blocks whose
messages are all gone are unlinked, and sealed blocks that are mostly dead are rewritten with
only their live records (atomic rename).

Recovery. A clean stop leaves an index snapshot that is loaded if it matches the block files.
Otherwise every block is scanned: records are checksummed, a damaged record whose length still
leads to a valid record is stepped over, and the file is cut at the first record that cannot
be trusted (a torn tail). What was dropped is reported in ``StreamState.lost``.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import os
import shutil
import struct
import zlib
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import cramjam

from . import _compress, _snapshot
from ._fileutil import fsync_dir, read_meta_file, write_file, write_meta_file
from ._index import SubjectTable, next_nonzero, zero_fill, zeros
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
from .base import (
    ACK_EXPLICIT,
    COMPRESSION_S2,
    ConsumerStoreBase,
    ErrCorruptRecord,
    ErrMsgTooLarge,
    LostData,
    StoreConfig,
    StoreError,
)
from .consumer_store import FileConsumerStore
from .indexed import IndexedStore

SYNC_INTERVAL = "interval"
SYNC_ALWAYS = "always"
DEFAULT_BLOCK_SIZE = 8 * 1024 * 1024
MIN_BLOCK_SIZE = 1024
# Rewrite a sealed block once its dead bytes exceed its live bytes and this much (capped by
# half a block): nats-server compacts at 2 MiB of waste.
COMPACT_MIN_BYTES = 2 * 1024 * 1024
# Sequential reads of sealed blocks go through a read-ahead window of this size.
READ_AHEAD = 256 * 1024
# Keep at most this many sealed-block descriptors open (the active block's is always open).
MAX_OPEN_FDS = 32

MSGS_DIR = "msgs"
OBS_DIR = "obs"
SNAPSHOT_FILE = "index.snap"
_unpack_rec = REC_HDR.unpack_from
_pack_rec = REC_HDR.pack
_pack_crc = struct.Struct("<I").pack
_crc32 = zlib.crc32


@dataclass(slots=True)
class FileStoreConfig:
    """Storage options of a file store (the limits are in :class:`StoreConfig`)."""

    directory: str
    block_size: int = DEFAULT_BLOCK_SIZE
    sync: str = SYNC_INTERVAL
    sync_interval: float = 120.0  # seconds; the caller's timer calls FileStore.sync()
    compact_min_bytes: int = COMPACT_MIN_BYTES

    def __post_init__(self) -> None:
        if self.sync not in (SYNC_INTERVAL, SYNC_ALWAYS):
            raise ValueError(f"sync must be 'interval' or 'always', not {self.sync!r}")
        if self.block_size < MIN_BLOCK_SIZE:
            raise ValueError(f"block_size must be at least {MIN_BLOCK_SIZE}")


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


class FileStore(IndexedStore):
    """Durable message store; see the module docstring for format and guarantees."""

    storage_type = "file"

    def __init__(self, fcfg: FileStoreConfig, cfg: StoreConfig | None = None) -> None:
        cfg = cfg or StoreConfig(name=os.path.basename(os.fspath(fcfg.directory)))
        super().__init__(cfg)
        self._fcfg = dataclasses.replace(fcfg, directory=os.fspath(fcfg.directory))
        self._dir = self._fcfg.directory
        self._msgs_dir = os.path.join(self._dir, MSGS_DIR)
        self._obs_dir = os.path.join(self._dir, OBS_DIR)
        self._block_size = self._fcfg.block_size
        self._compact_min = min(self._fcfg.compact_min_bytes, self._block_size // 2)
        self._sync_always = self._fcfg.sync == SYNC_ALWAYS
        self._compress = cfg.compression == COMPRESSION_S2
        self._offs: array[int] = array("I")
        self._plens: array[int] = array("I")
        self._blocks: list[_Block] = []
        self._firsts: list[int] = []
        self._mirror = bytearray()  # full content of the active block
        self._tombs: dict[_Block, bytearray] = {}
        self._maint: set[_Block] = set()
        self._fsync_pending: set[_Block] = set()
        self._dir_dirty = False
        self._floor_dirty = False
        self._floor_block: _Block | None = None
        self._open_fds: dict[_Block, None] = {}  # LRU of sealed blocks with an open fd
        self._ra: tuple[_Block, int, bytes] | None = None
        self._next_index = 1
        self._consumers: dict[str, FileConsumerStore] = {}

        os.makedirs(self._msgs_dir, exist_ok=True)
        existed = self._recover()
        if not self._blocks:
            self._new_active_block(self._last_seq + 1)
            self._flush_writes()
            self._dir_dirty = True
        else:
            active = self._blocks[-1]
            self._fd(active)
            with open(active.path, "rb") as f:
                self._mirror = bytearray(f.read())
        if not existed and cfg.first_seq > 1:
            self._purge(cfg.first_seq)
        if self._sync_always:
            self.sync()
        if cfg.max_age > 0:
            self.expire_msgs()
        self._enforce_limits(0)
        self._p_commit()

    @property
    def directory(self) -> str:
        return self._dir

    @property
    def file_config(self) -> FileStoreConfig:
        return dataclasses.replace(self._fcfg)

    # ------------------------------------------------------------------------------------
    # Blocks and descriptors
    # ------------------------------------------------------------------------------------
    def _block_path(self, index: int) -> str:
        return os.path.join(self._msgs_dir, f"{index}.blk")

    def _fd(self, blk: _Block) -> int:
        fd = blk.fd
        if fd is None:
            fd = blk.fd = os.open(blk.path, os.O_RDWR)
            if self._blocks and blk is not self._blocks[-1]:
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
            os.close(blk.fd)  # still in _fsync_pending if unsynced: sync() reopens it
            blk.fd = None

    def _block_for(self, seq: int) -> _Block:
        return self._blocks[bisect.bisect_right(self._firsts, seq) - 1]

    @property
    def _active(self) -> _Block:
        return self._blocks[-1]

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
        self._blocks.append(blk)
        self._firsts.append(first_seq)
        self._dir_dirty = True
        return blk

    def _roll(self, next_seq: int) -> None:
        """Seal the active block and start a new one whose first sequence is next_seq."""
        self._flush_writes()
        old = self._active
        if self._sync_always and old.fd is not None:
            os.fsync(old.fd)
            self._fsync_pending.discard(old)
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
        self._fsync_pending.discard(blk)
        self._open_fds.pop(blk, None)
        if blk.fd is not None:
            os.close(blk.fd)
            blk.fd = None
        i = self._blocks.index(blk)
        del self._blocks[i]
        del self._firsts[i]
        with contextlib.suppress(FileNotFoundError):
            os.unlink(blk.path)
        self._dir_dirty = True
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None

    def _persist_floor_in_active(self) -> None:
        """Make the active block hold the current floor before a block with it goes away."""
        self._floor_dirty = True
        self._flush_writes()
        if self._sync_always:
            self._fsync_all()

    # ------------------------------------------------------------------------------------
    # Writing
    # ------------------------------------------------------------------------------------
    # fileStoreMsgSize: len(4) + seq(8) + ts(8) + subj_len(2) + subject + [hdr_len(4) +
    # headers] + payload + hash(8) — what nats-server reports as stream bytes.
    _SIZE_BASE = 22 + 8
    _SIZE_HDR = 4

    def _p_append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> None:
        blob = None
        if self._compress:
            blob = _compress.compress(b"".join((hdr, data)))
        plen = REC_OVERHEAD + len(subject) + (len(blob) if blob is not None else len(hdr) + len(data))
        if plen > MAX_RECORD:
            raise ErrMsgTooLarge()
        act = self._blocks[-1]
        if act.size + plen > self._block_size and act.size > BLOCK_HDR_LEN:
            self._roll(seq)
            act = self._blocks[-1]
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
        self._offs.append(off)
        self._plens.append(plen)

    def _append_to(self, blk: _Block, rec: bytes) -> None:
        if blk is self._blocks[-1]:
            self._mirror += rec
        else:
            buf = self._tombs.get(blk)
            if buf is None:
                self._tombs[blk] = bytearray(rec)
            else:
                buf += rec
        blk.size += len(rec)

    def _flush_writes(self) -> None:
        """Hand every pending byte to the OS (no fsync)."""
        if self._floor_dirty:
            act = self._blocks[-1]
            rec = floor_record(self._first_seq, self._last_ts)
            self._mirror += rec
            act.size += len(rec)
            self._floor_block = act
            self._floor_dirty = False
        act = self._blocks[-1]
        if act.written < act.size:
            fd = self._fd(act)
            with memoryview(self._mirror) as mv:
                _pwrite_all(fd, mv[act.written : act.size], act.written)
            act.written = act.size
            self._fsync_pending.add(act)
        if self._tombs:
            for blk, buf in self._tombs.items():
                _pwrite_all(self._fd(blk), buf, blk.written)
                blk.written += len(buf)
                self._fsync_pending.add(blk)
            self._tombs.clear()

    def _fsync_all(self) -> None:
        for blk in self._fsync_pending:
            if blk.fd is not None:
                os.fdatasync(blk.fd)
            else:
                with contextlib.suppress(FileNotFoundError):
                    fd = os.open(blk.path, os.O_RDONLY)
                    try:
                        os.fdatasync(fd)
                    finally:
                        os.close(fd)
        self._fsync_pending.clear()
        if self._dir_dirty:
            fsync_dir(self._msgs_dir)
            self._dir_dirty = False

    def _p_commit(self) -> None:
        act = self._blocks[-1]
        if not (self._floor_dirty or self._tombs or self._maint or self._sync_always):
            # Fast path of a plain append: one pwrite of the new bytes.
            if act.written < act.size:
                pending = self._mirror[act.written :]
                fd = act.fd if act.fd is not None else self._fd(act)
                n = os.pwrite(fd, pending, act.written)
                if n != len(pending):
                    _pwrite_all(fd, pending[n:], act.written + n)
                act.written = act.size
                self._fsync_pending.add(act)
            return
        self._flush_writes()
        if self._maint:
            self._maintain()
        if self._sync_always:
            self._fsync_all()

    def _maintain(self) -> None:
        """Unlink sealed blocks with no message left; rewrite mostly-dead ones."""
        maint, self._maint = self._maint, set()
        compact_min = self._compact_min
        for blk in sorted(maint, key=lambda b: b.index):
            dead = blk.size - BLOCK_HDR_LEN - blk.live_bytes
            if blk.live_msgs and (dead < compact_min or dead < blk.live_bytes):
                continue  # the common case, decided without looking the block up
            if blk is self._blocks[-1] or blk not in self._blocks:
                continue
            if blk.live_msgs == 0:
                self._unlink_block(blk)
            else:
                self._rewrite_block(blk)
        self._flush_writes()

    def _slot_range(self, blk: _Block) -> tuple[int, int]:
        """Slot indexes [lo, hi) of the sequences a block owns."""
        i = self._blocks.index(blk)
        end_seq = self._firsts[i + 1] if i + 1 < len(self._blocks) else self._last_seq + 1
        lo = max(blk.first_seq - self._base, 0)
        hi = min(end_seq - self._base, len(self._sids))
        return lo, max(lo, hi)

    def _rewrite_block(self, blk: _Block, upto: int | None = None) -> bytearray:
        """Rewrite a block with only its live records (those <= upto if given)."""
        if self._floor_block is blk:
            self._persist_floor_in_active()
        self._flush_writes()
        fd = self._fd(blk)
        old = os.pread(fd, blk.written, 0) if blk is not self._blocks[-1] else bytes(self._mirror)
        new = bytearray(encode_block_header(blk.first_seq))
        lo, hi = self._slot_range(blk)
        if upto is not None:
            hi = min(hi, upto - self._base + 1)
        sids, offs, plens = self._sids, self._offs, self._plens
        live_msgs = live_bytes = 0
        for i in range(lo, hi):
            if sids[i]:
                off, plen = offs[i], plens[i]
                offs[i] = len(new)
                new += old[off : off + plen]
                live_msgs += 1
                live_bytes += plen
        tmp = blk.path + ".tmp"
        write_file(tmp, new, fsync=True)
        self._close_fd(blk)
        os.replace(tmp, blk.path)
        fsync_dir(self._msgs_dir)
        blk.size = blk.written = len(new)
        blk.live_msgs = live_msgs
        blk.live_bytes = live_bytes
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None
        return new

    # ------------------------------------------------------------------------------------
    # Removal hooks
    # ------------------------------------------------------------------------------------
    def _p_remove(self, seq: int, idx: int, erase: bool) -> None:
        blk = self._block_for(seq)
        plen = self._plens[idx]
        blk.live_msgs -= 1
        blk.live_bytes -= plen
        if erase:
            self._erase_record(blk, self._offs[idx], plen, seq)
        elif seq != self._first_seq:
            self._append_to(blk, tombstone(seq, 1, 0))
        self._plens[idx] = 0
        if blk is not self._blocks[-1]:
            self._maint.add(blk)

    def _erase_record(self, blk: _Block, off: int, plen: int, seq: int) -> None:
        rec = erased_record(seq, plen)
        if blk is self._blocks[-1]:
            self._mirror[off : off + plen] = rec
            if off >= blk.written:
                return  # still pending: the overwrite happens in memory
        _pwrite_all(self._fd(blk), rec, off)
        self._fsync_pending.add(blk)
        if self._ra is not None and self._ra[0] is blk:
            self._ra = None

    def _p_remove_range(self, lo: int, hi: int) -> None:
        base = self._base
        sids, plens = self._sids, self._plens
        active = self._blocks[-1]
        bi = bisect.bisect_right(self._firsts, base + lo) - 1
        while bi < len(self._blocks):
            blk = self._blocks[bi]
            a = max(lo, blk.first_seq - base)
            if a >= hi:
                break
            z = hi if bi + 1 >= len(self._blocks) else min(hi, self._firsts[bi + 1] - base)
            if z > a:
                seg = sids[a:z]
                blk.live_msgs -= len(seg) - seg.count(0)
                blk.live_bytes -= sum(plens[a:z])
                zero_fill(plens, a, z)
                if blk is not active:
                    self._maint.add(blk)
            bi += 1

    def _p_first_changed(self) -> None:
        self._floor_dirty = True

    def _p_skip(self, seq: int, num: int, ts: int) -> None:
        if self._msgs:
            self._append_to(self._blocks[-1], tombstone(seq, num, ts))
        else:
            self._floor_dirty = True  # floor = last + 1 after the skip

    def _p_purge(self, new_first: int) -> None:
        self._replace_all_blocks(new_first, with_floor=True)

    def _p_reset(self) -> None:
        self._replace_all_blocks(1, with_floor=False)

    def _replace_all_blocks(self, first_seq: int, with_floor: bool) -> None:
        """Start over with one empty block; durable before any old block is unlinked."""
        old = list(self._blocks)
        self._tombs.clear()
        self._maint.clear()
        self._floor_dirty = False
        self._ra = None
        self._blocks, self._firsts = [], []
        nb = self._new_active_block(first_seq)
        self._floor_block = None
        if with_floor:
            rec = floor_record(first_seq, self._last_ts)
            self._mirror += rec
            nb.size += len(rec)
            self._floor_block = nb
        self._flush_writes()
        if self._sync_always:
            self._fsync_all()
        for blk in old:
            self._fsync_pending.discard(blk)
            self._open_fds.pop(blk, None)
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(blk.path)
        self._dir_dirty = True

    def _p_truncate(self, seq: int) -> None:
        self._flush_writes()
        keep = self._block_for(seq)
        doomed = self._blocks[self._blocks.index(keep) + 1 :]
        for blk in reversed(doomed):
            self._tombs.pop(blk, None)
            self._maint.discard(blk)
            self._fsync_pending.discard(blk)
            self._open_fds.pop(blk, None)
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
            del self._blocks[-1], self._firsts[-1]
            os.unlink(blk.path)
            if self._floor_block is blk:
                self._floor_block = None
        self._dir_dirty = True
        # ``keep`` becomes the active block: rewrite it with the live records up to seq.
        self._ra = None
        self._open_fds.pop(keep, None)
        self._mirror = bytearray(os.pread(self._fd(keep), keep.written, 0))
        self._mirror = self._rewrite_block(keep, upto=seq)
        self._maint.discard(keep)
        self._floor_dirty = True

    def _p_slots_extend(self, n: int) -> None:
        self._offs.extend(zeros("I", n))
        self._plens.extend(zeros("I", n))

    def _p_slots_trim(self, k: int) -> None:
        del self._offs[:k], self._plens[:k]

    def _p_slots_cut(self, n: int) -> None:
        del self._offs[n:], self._plens[n:]

    def _p_config_changed(self, old: StoreConfig) -> None:
        self._compress = self._cfg.compression == COMPRESSION_S2

    # ------------------------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------------------------
    def _p_read(self, idx: int, seq: int) -> tuple[bytes, bytes]:
        off = self._offs[idx]
        plen = self._plens[idx]
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
    # Lifecycle
    # ------------------------------------------------------------------------------------
    def flush(self) -> None:
        if self._closed:
            return
        self._flush_writes()
        if self._maint:
            self._maintain()

    def sync(self) -> None:
        """Flush and fsync everything written since the last sync (interval policy timer)."""
        self.sync_later()()

    def sync_later(self) -> Callable[[], None]:
        """Flush now and return a function that fsyncs everything flushed so far.

        The function works on duplicated descriptors only, so an event loop can run it in a
        worker thread (``loop.run_in_executor(None, store.sync_later())``) and keep using the
        store meanwhile; what is written after this call is left for the next sync.
        """
        if self._closed:
            return _nothing
        self.flush()
        fds: list[int] = []
        dirs: list[str] = []
        for blk in self._fsync_pending:
            if blk.fd is not None:
                fds.append(os.dup(blk.fd))
            else:
                with contextlib.suppress(FileNotFoundError):
                    fds.append(os.open(blk.path, os.O_RDONLY))
        self._fsync_pending.clear()
        if self._dir_dirty:
            dirs.append(self._msgs_dir)
            self._dir_dirty = False
        for cs in self._consumers.values():
            if not cs.closed:
                cs.collect_sync(fds, dirs)

        def run() -> None:
            try:
                for fd in fds:
                    os.fdatasync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
            for d in dirs:
                with contextlib.suppress(FileNotFoundError):
                    fsync_dir(d)

        return run

    def stop(self) -> None:
        if self._closed:
            return
        for cs in list(self._consumers.values()):
            cs.stop()
        self.sync()
        with contextlib.suppress(OSError):
            self._write_snapshot()
        for blk in self._blocks:
            if blk.fd is not None:
                os.close(blk.fd)
                blk.fd = None
        self._open_fds.clear()
        self._closed = True

    def delete(self) -> None:
        if not self._closed:
            for cs in list(self._consumers.values()):
                cs.stop()
            for blk in self._blocks:
                if blk.fd is not None:
                    os.close(blk.fd)
                    blk.fd = None
            self._closed = True
        shutil.rmtree(self._dir, ignore_errors=True)
        parent = os.path.dirname(self._dir)
        with contextlib.suppress(OSError):
            fsync_dir(parent)

    # ------------------------------------------------------------------------------------
    # Metadata and consumers
    # ------------------------------------------------------------------------------------
    def write_meta(self, data: bytes) -> None:
        self._check_open()
        write_meta_file(self._dir, data)

    def read_meta(self) -> bytes | None:
        return read_meta_file(self._dir)

    def consumer_store(
        self, name: str, ack_policy: str = ACK_EXPLICIT, max_deliver: int = -1
    ) -> ConsumerStoreBase:
        self._check_open()
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise StoreError(f"invalid consumer name {name!r}")
        cs = self._consumers.get(name)
        if cs is None or cs.closed:
            cs = FileConsumerStore(
                os.path.join(self._obs_dir, name), name, self._sync_always, ack_policy, max_deliver
            )
            self._consumers[name] = cs
        else:
            cs.update_config(ack_policy, max_deliver)
        return cs

    def needs_sync(self) -> bool:
        """Whether anything was written since the last fsync (lets a sync timer skip work)."""
        return bool(self._fsync_pending or self._dir_dirty)

    def consumer_names(self) -> list[str]:
        try:
            entries = os.listdir(self._obs_dir)
        except FileNotFoundError:
            return []
        return sorted(e for e in entries if os.path.isdir(os.path.join(self._obs_dir, e)))

    # ------------------------------------------------------------------------------------
    # Snapshot
    # ------------------------------------------------------------------------------------
    def _tail_crc(self, blk: _Block) -> int:
        with open(blk.path, "rb") as f:
            f.seek(max(0, blk.written - _snapshot.TAIL_CHECK))
            return _crc32(f.read(_snapshot.TAIL_CHECK))

    def _write_snapshot(self) -> None:
        t = self._subjects
        header = {
            "base": self._base,
            "msgs": self._msgs,
            "bytes": self._bytes,
            "first_seq": self._first_seq,
            "first_ts": self._first_ts,
            "last_seq": self._last_seq,
            "last_ts": self._last_ts,
            "floor_block": self._floor_block.index if self._floor_block is not None else None,
            "lost": None if self._lost is None else [self._lost.msgs, self._lost.bytes],
            "blocks": [
                [b.index, b.first_seq, b.written, b.live_msgs, b.live_bytes, self._tail_crc(b)]
                for b in self._blocks
            ],
        }
        arrays = {
            "sids": self._sids,
            "tss": self._tss,
            "sizes": self._sizes,
            "nxt": self._nxt,
            "offs": self._offs,
            "plens": self._plens,
            "s_msgs": t.msgs,
            "s_first": t.first,
            "s_last": t.last,
        }
        path = os.path.join(self._msgs_dir, SNAPSHOT_FILE)
        write_file(path + ".tmp", _snapshot.encode(header, arrays, t.names), fsync=True)
        os.replace(path + ".tmp", path)
        fsync_dir(self._msgs_dir)

    def _load_snapshot(self, files: list[tuple[int, str]]) -> bool:
        path = os.path.join(self._msgs_dir, SNAPSHOT_FILE)
        try:
            with open(path, "rb") as f:
                buf = f.read()
        except FileNotFoundError:
            return False
        try:
            decoded = _snapshot.decode(buf)
            if decoded is None:
                return False
            header, arrays, names = decoded
            blocks: list[_Block] = []
            if [idx for idx, _ in files] != [b[0] for b in header["blocks"]]:
                return False
            for index, first_seq, size, live_msgs, live_bytes, tail in header["blocks"]:
                blk = _Block(index, first_seq, self._block_path(index), size)
                if os.path.getsize(blk.path) != size or self._tail_crc(blk) != tail:
                    return False
                blk.live_msgs, blk.live_bytes = live_msgs, live_bytes
                blocks.append(blk)
            n = len(arrays["sids"])
            if any(len(arrays[k]) != n for k in ("tss", "sizes", "nxt", "offs", "plens")):
                return False
            t = SubjectTable()
            t.names = names
            t.msgs, t.first, t.last = arrays["s_msgs"], arrays["s_first"], arrays["s_last"]
            t.ids = {name: sid for sid, name in enumerate(names) if name is not None}
            t.free = [sid for sid, name in enumerate(names) if name is None and sid]
            self._subjects = t
            self._sids, self._tss, self._sizes, self._nxt = (
                arrays["sids"],
                arrays["tss"],
                arrays["sizes"],
                arrays["nxt"],
            )
            self._offs, self._plens = arrays["offs"], arrays["plens"]
            self._base = header["base"]
            self._msgs, self._bytes = header["msgs"], header["bytes"]
            self._first_seq, self._first_ts = header["first_seq"], header["first_ts"]
            self._last_seq, self._last_ts = header["last_seq"], header["last_ts"]
            if header["lost"] is not None:
                self._lost = LostData(list(header["lost"][0]), header["lost"][1])
            self._blocks = blocks
            self._firsts = [b.first_seq for b in blocks]
            fb = header["floor_block"]
            self._floor_block = next((b for b in blocks if b.index == fb), None)
            return True
        except (KeyError, ValueError, TypeError, OSError):
            return False
        finally:
            # Never trust it twice: the blocks change from here on.
            os.unlink(path)
            fsync_dir(self._msgs_dir)

    # ------------------------------------------------------------------------------------
    # Recovery
    # ------------------------------------------------------------------------------------
    def _recover(self) -> bool:
        """Rebuild the index from disk; return whether any block existed."""
        files: list[tuple[int, str]] = []
        for name in os.listdir(self._msgs_dir):
            if name.endswith(".tmp"):
                os.unlink(os.path.join(self._msgs_dir, name))
            elif name.endswith(".blk") and name[:-4].isdigit():
                files.append((int(name[:-4]), name))
        files.sort()
        if files:
            self._next_index = files[-1][0] + 1
        if self._load_snapshot(files):
            return True
        if not files:
            return False
        self._scan_blocks(files)
        return True

    def _scan_blocks(self, files: list[tuple[int, str]]) -> None:
        sids, tss, sizes, nxt = self._sids, self._tss, self._sizes, self._nxt
        offs, plens = self._offs, self._plens
        bsid: dict[bytes, int] = {}
        names: list[str | None] = [None]
        last_idx: list[int] = [-1]
        base = -1
        max_seq = 0
        max_ts = 0
        hdr_last = 0
        floor = floor_ts = 0
        lost_msgs: list[int] = []
        maybe_lost: list[int] = []  # sequence fields of damaged records (may be damaged too)
        lost_bytes = 0
        blocks: list[_Block] = []
        decompressed_len = cramjam.snappy.decompress_raw_len
        size_base, size_hdr = self._SIZE_BASE, self._SIZE_HDR

        for index, name in files:
            path = os.path.join(self._msgs_dir, name)
            with open(path, "rb") as f:
                buf = f.read()
            first = decode_block_header(buf)
            if first is None:
                # Torn while being created, or damaged: nothing in it can be trusted.
                if len(buf) > BLOCK_HDR_LEN:
                    lost_bytes += len(buf)
                    os.replace(path, path + ".corrupt")
                else:
                    os.unlink(path)
                continue
            blk = _Block(index, first, path, len(buf))
            blocks.append(blk)
            hdr_last = max(hdr_last, first - 1)
            if base < 0:
                base = first
            ends: list[ScanEnd] = []
            for off, total, kind, seq, ts, slen, hlen in scan_records(buf, BLOCK_HDR_LEN, ends):
                k = kind & KIND_MASK
                if k == KIND_MSG:
                    if seq <= max_seq or seq < first:
                        lost_bytes += total  # out of order: cannot be placed
                        continue
                    idx = seq - base
                    gap = idx - len(sids)
                    if gap > 0:
                        _extend(sids, tss, sizes, nxt, offs, plens, gap, max_ts)
                    max_seq = seq
                    if kind & FLAG_ERASED:
                        _extend(sids, tss, sizes, nxt, offs, plens, 1, max_ts)
                        continue
                    at = off + REC_HDR_LEN
                    subj = buf[at : at + slen]
                    sid = bsid.get(subj)
                    if sid is None:
                        sid = bsid[subj] = len(names)
                        names.append(subj.decode())
                        last_idx.append(-1)
                    if kind & FLAG_COMPRESSED:
                        dlen = decompressed_len(buf[at + slen : off + total - CRC_LEN]) - hlen
                    else:
                        dlen = total - REC_OVERHEAD - slen - hlen
                    sids.append(sid)
                    tss.append(ts)
                    sizes.append(size_base + slen + dlen + (size_hdr + hlen if hlen else 0))
                    nxt.append(0)
                    offs.append(off)
                    plens.append(total)
                    li = last_idx[sid]
                    if li >= 0:
                        nxt[li] = seq
                    last_idx[sid] = idx
                    blk.live_msgs += 1
                    blk.live_bytes += total
                    max_ts = ts
                elif k == KIND_DELETE:
                    num = delete_count(buf, off, total)
                    for i in range(max(seq - base, 0), min(seq + num - base, len(sids))):
                        if sids[i]:
                            sids[i] = 0
                            sizes[i] = 0
                            blk.live_msgs -= 1
                            blk.live_bytes -= plens[i]
                            plens[i] = 0
                    end_seq = seq + num - 1
                    if end_seq > max_seq:
                        gap = end_seq - base + 1 - len(sids)
                        if gap > 0:
                            _extend(sids, tss, sizes, nxt, offs, plens, gap, ts)
                        max_seq = end_seq
                        max_ts = ts
                elif k == KIND_FLOOR and seq > floor:
                    floor, floor_ts = seq, ts
                    self._floor_block = blk
            end = ends[0]
            for off, total in end.skipped:
                lost_bytes += total
                if buf[off + 4] & KIND_MASK == KIND_MSG:
                    maybe_lost.append(int.from_bytes(buf[off + 5 : off + 13], "little"))
            if end.good_end < len(buf):
                torn = buf[end.good_end :]
                lost_bytes += len(torn)
                if len(torn) >= REC_HDR_LEN:
                    seq = int.from_bytes(torn[5:13], "little")
                    if torn[4] & KIND_MASK == KIND_MSG and seq == max_seq + 1:
                        lost_msgs.append(seq)
                os.truncate(path, end.good_end)
                blk.size = blk.written = end.good_end

        last_seq = max(max_seq, hdr_last, floor - 1)
        if base < 0:
            base = last_seq + 1
        gap = last_seq - base + 1 - len(sids)
        if gap > 0:
            _extend(sids, tss, sizes, nxt, offs, plens, gap, max(max_ts, floor_ts))
        self._blocks = blocks
        self._firsts = [b.first_seq for b in blocks]
        self._base = base
        self._last_seq = last_seq
        self._last_ts = max_ts if max_seq >= max(hdr_last, floor - 1) else floor_ts
        # Apply the floor: everything below it is gone.
        hi = min(floor - base, len(sids))
        if hi > 0:
            self._kill_range(0, hi)
        self._build_subjects(names)
        self._msgs = len(sids) - sids.count(0)
        self._bytes = sum(sizes)
        j = next_nonzero(sids, 0, len(sids)) if self._msgs else -1
        if j >= 0:
            self._first_seq = base + j
            self._first_ts = tss[j]
        else:
            # A store nothing was ever written to reports 0/0, as nats-server does.
            self._first_seq = 0 if last_seq == 0 and floor == 0 else last_seq + 1
            self._first_ts = 0
        for seq in maybe_lost:
            i = seq - base
            if 0 <= i < len(sids) and not sids[i]:
                lost_msgs.append(seq)
        if lost_bytes or lost_msgs:
            self._lost = LostData(sorted(set(lost_msgs)), lost_bytes)
        for blk in blocks[:-1]:
            self._maint.add(blk)
        if self._msgs == 0 and sids:
            self._clear_slots()
        else:
            self._maybe_trim()

    def _kill_range(self, lo: int, hi: int) -> None:
        """Mark live slots in [lo, hi) dead during recovery (block accounting included)."""
        sids, sizes, plens = self._sids, self._sizes, self._plens
        base = self._base
        i = next_nonzero(sids, lo, hi)
        while i >= 0:
            blk = self._block_for(base + i)
            blk.live_msgs -= 1
            blk.live_bytes -= plens[i]
            sids[i] = 0
            sizes[i] = 0
            plens[i] = 0
            i = next_nonzero(sids, i + 1, hi)

    def _build_subjects(self, names: list[str | None]) -> None:
        n = len(names)
        t = SubjectTable()
        msgs = zeros("Q", n)
        first = zeros("Q", n)
        last = zeros("Q", n)
        base = self._base
        for i, sid in enumerate(self._sids):
            if sid:
                if not msgs[sid]:
                    first[sid] = base + i
                msgs[sid] += 1
                last[sid] = base + i
        for sid in range(1, n):
            if not msgs[sid]:
                names[sid] = None
        t.names = names
        t.msgs, t.first, t.last = msgs, first, last
        t.ids = {name: sid for sid, name in enumerate(names) if name is not None}
        t.free = [sid for sid in range(1, n) if names[sid] is None]
        self._subjects = t


def _extend(
    sids: array[int],
    tss: array[int],
    sizes: array[int],
    nxt: array[int],
    offs: array[int],
    plens: array[int],
    n: int,
    ts: int,
) -> None:
    sids.extend(zeros("I", n))
    tss.extend(array("q", [ts]) * n)
    sizes.extend(zeros("I", n))
    nxt.extend(zeros("Q", n))
    offs.extend(zeros("I", n))
    plens.extend(zeros("I", n))


def _nothing() -> None:
    pass


def _pwrite_all(fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        offset += n
        view = view[n:]
