"""The block files of a stream as a set: their list and descriptors, each sealed block's saved
index, and recovery (nats-server ``msgBlock``'s index and ``rebuildState``). `BlockFiles`
(``blockfiles.py``) adds writing, reading and removal on top.

Block indexes. When a block is sealed (the active block rolls over) its slots — what
``SeqIndex`` keeps per sequence, per subject spans, TTLs, the newest floor — are written beside
it as ``<n>.idx`` with the block's size and the CRC of its whole content (nats-server keeps a
per-block index the same way). A sealed block changed later (a tombstone, an erase) is marked
stale and gets a fresh index on the next sync or stop; a compacted block gets one at once.

Recovery. `BlockIndexes.load` gives ``SeqIndex.rebuild`` one ``BlockSlots`` per block: read
from its index when that matches the block byte for byte (size, CRC, first sequence), else
scanned — after ``kill -9`` only the active block, plus any changed since its index was
written. A scan checks every record's checksum, steps over a damaged record whose length still
leads to a valid record, and cuts the file at the first record that cannot be trusted. What was
dropped is reported by `BlockIndexes.lost` — except a record cut short at the very end of
the last block: that is the write in flight when the process died, never acknowledged — and an
index whose block file is gone reports the block's messages lost.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import zlib
from array import array
from collections.abc import Iterator
from typing import Any

import cramjam

from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import get_header

from . import _compress, _snapshot
from ._fileutil import write_file
from ._index import zeros
from ._records import (
    BLOCK_HDR_LEN,
    CRC_LEN,
    FLAG_COMPRESSED,
    FLAG_ERASED,
    KIND_DELETE,
    KIND_FLOOR,
    KIND_MASK,
    KIND_MSG,
    MAX_RECORD,
    REC_HDR_LEN,
    REC_OVERHEAD,
    ScanEnd,
    decode_block_header,
    delete_count,
    scan_records,
)
from .backend import PayloadBackend
from .base import LostData
from .seqindex import SeqIndex
from .seqrecover import BlockSlots

# Keep at most this many sealed-block descriptors open (the active block's is always open).
MAX_OPEN_FDS = 32

_crc32 = zlib.crc32
_LEN_MASK = 0xFFFFFFFF
_TTL_KEY = b"\r\nNats-TTL:"
# A block's bytes while loading: read into memory, or mapped.
Bytes = bytes | mmap.mmap


class _Block:
    """One block file. ``size`` counts bytes appended (written or pending), ``written`` those
    handed to the OS; ``live_*`` count the records still holding a message."""

    __slots__ = ("fd", "first_seq", "index", "live_bytes", "live_msgs", "path", "size", "ttls", "written")

    def __init__(self, index: int, first_seq: int, path: str, size: int) -> None:
        self.index = index
        self.first_seq = first_seq
        self.path = path
        self.size = size
        self.written = size
        self.live_msgs = 0
        self.live_bytes = 0
        self.fd: int | None = None
        #: ``{seq: ttl}`` of its messages stored with a ``Nats-TTL`` (for its index), ascending.
        self.ttls: dict[int, int] = {}


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
            self.taken.add(sid)  # (a block index loaded later must not give it to another subject)
            self.next += 1
        return sid


class BlockIndexes(PayloadBackend):
    """The block files of one stream directory (``msgs/``): the list, descriptors, block indexes
    and recovery (see the module docstring)."""

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
        #: TTL entries looked at by block index writes (the complexity tests count them).
        self.ttl_steps = 0
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

    def _block_end(self, blk: _Block) -> int:
        """One past the last sequence a block owns."""
        i = self.blocks.index(blk)
        return self._firsts[i + 1] if i + 1 < len(self.blocks) else self.index.last_seq + 1

    def flush_writes(self) -> None:
        """Hand every pending byte to the OS (`BlockFiles`' writing side)."""
        raise NotImplementedError

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
                slots, scanned = self._load_block(
                    index, path, buf, index == last_index, max_seq, max_ts, known
                )
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
            slots.image = True
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
                    _extend_dead(slots, idx - nslots, cur_ts)
                nslots = idx + 1
                if kind & erased:
                    _extend_dead(slots, 1, cur_ts)
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
                end_seq = _scan_delete(slots, buf, off, total, seq, ts)
                if end_seq > max_seq:
                    gap = end_seq - start + 1 - nslots
                    if gap > 0:
                        _extend_dead(slots, gap, ts)
                        nslots += gap
                    max_seq = end_seq
                    cur_ts = ts
            elif k == KIND_FLOOR and seq > slots.floor:
                slots.floor, slots.floor_ts = seq, ts
        self._scan_end(blk, buf, is_last, max_seq, ends[0])
        slots.summarize()
        return slots

    def _scan_end(self, blk: _Block, buf: Bytes, is_last: bool, max_seq: int, end: ScanEnd) -> None:
        """What a block's scan stepped over or cut: counted lost (a torn tail of the last block is
        the write in flight, not a loss), and the file cut where the records stop being good."""
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
        index = self.index
        end = self._block_end(blk)
        slots = index.block_slots(blk.first_seq, end)
        # The block's own TTLs (ascending: appended in order), not all the store's: O(block).
        live = index.live
        ttls = [[seq, ttl] for seq, ttl in blk.ttls.items() if live(seq)]
        self.ttl_steps += len(blk.ttls)
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
        index.mark_image(blk.first_seq, end)

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
        """After recovery: the TTLs of the stored messages, each kept by its block for the block
        indexes to come."""
        for blk in self.blocks:
            blk.ttls = {}
        for seq, ttl in sorted(ttls.items()):
            if self.blocks and seq >= self._firsts[0]:
                self._block_for(seq).ttls[seq] = ttl

    def note_ttl(self, seq: int, ttl: int) -> None:
        """A message just appended (to the active block) carries a ``Nats-TTL`` of ``ttl``."""
        self.blocks[-1].ttls[seq] = ttl

    def account(self) -> None:
        """After the index was rebuilt: each block's live counts, from the index."""
        index = self.index
        for blk in self.blocks:
            page = index.page_in(blk.first_seq, self._block_end(blk))
            blk.live_msgs = page.msgs if page is not None else 0
            blk.live_bytes = sum(page.locs) & _LEN_MASK if page is not None else 0
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
        start = self._firsts[0] if self._firsts else index.first_seq
        for seq in self._maybe_lost:
            if start <= seq <= index.last_seq and not index.live(seq):
                lost.append(seq)
        if with_missing and self._missing_seqs:
            gone = [seq for seq in self._missing_seqs if seq >= self._floor[0] and not index.live(seq)]
            if gone:
                lost += gone
                nbytes += self._missing_bytes
        self._missing_seqs, self._missing_bytes = [], 0
        if not (nbytes or lost):
            return None
        return LostData(sorted(set(lost)), nbytes)


def _extend_dead(slots: BlockSlots, n: int, ts: int) -> None:
    """``n`` slots without a message at the end of a block's scanned slots."""
    slots.sids.extend(zeros("I", n))
    slots.tss.extend(array("q", [ts]) * n)
    slots.sizes.extend(zeros("I", n))
    slots.locs.extend(zeros("Q", n))
    slots.nxt.extend(zeros("Q", n))


def _scan_delete(slots: BlockSlots, buf: Bytes, off: int, total: int, seq: int, ts: int) -> int:
    """A tombstone met by a block's scan: the slots it names die (those of earlier blocks are
    kept in ``slots.deletes``); returns the last sequence it names."""
    num = delete_count(buf, off, total)
    start = slots.first
    if seq < start:
        slots.deletes.append((seq, min(num, start - seq), ts))
    sids, sizes, locs = slots.sids, slots.sizes, slots.locs
    for i in range(max(seq - start, 0), min(seq + num - start, len(sids))):
        if sids[i]:
            sids[i] = 0
            sizes[i] = 0
            locs[i] = 0
    return seq + num - 1


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
