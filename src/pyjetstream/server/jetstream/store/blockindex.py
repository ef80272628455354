"""The block files of a stream as a set: their list and descriptors, each sealed block's saved
index, and recovery (nats-server ``msgBlock``'s index and ``rebuildState``). `BlockFiles`
(``blockfiles.py``) adds writing, reading and removal on top.

Block indexes. When a block is sealed (the active block rolls over) its slots — what
``SeqIndex`` keeps per sequence, per subject spans, TTLs, the newest floor — are written beside
it as ``<n>.idx`` with the block's size and the CRC of its whole content (nats-server keeps a
per-block index the same way) — and its tombstones for earlier blocks' sequences, which the stream
state also lists for the blocks it vouches for. A sealed block changed later (a trim's tombstone, an erase) is marked
stale and gets a fresh index on the next sync or stop; a compacted block gets one at once.

Recovery. `BlockIndexes.load` gives ``SeqIndex.rebuild`` one ``BlockSlots`` per block: read
from its index when that matches the block byte for byte (size, CRC, first sequence), else
scanned — after ``kill -9`` only the active block (and of it only the records after those the
stream state saw, when it vouches for them: `BlockIndexes.replay_tail`), plus any changed since
its index was written. A scan checks every record's checksum, steps over damaged bytes to the next valid
record (``_records.resync``) and cuts the file only where no valid record follows; a damaged
block header is written again (``_damage.repair_header``). What was dropped is reported by
`BlockIndexes.lost`, sequence by sequence (``_damage.ScanDamage``) — except a record cut short at
the very end of the last block: that is the write in flight when the process died, never
acknowledged — and an index whose block file is gone reports the block's messages lost. A block
the stream state vouches for is not read at start: a record damaged in it is found when it is
read (``PayloadBackend.damaged``), dropped and listed lost then.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import mmap
import os
import zlib
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from pyjetstream import _compiled
from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import get_header

from . import _compress, _snapshot, prior_tombs
from ._damage import ScanDamage, in_flight, repair_header
from ._fileutil import open_fds_max, remove_file, write_file
from ._index import zeros
from ._records import (
    BLOCK_HDR_LEN,
    CRC_LEN,
    DAMAGED,
    FLAG_COMPRESSED,
    FLAG_ERASED,
    KIND_DELETE,
    KIND_FLOOR,
    KIND_MASK,
    KIND_MSG,
    REC_HDR_LEN,
    REC_OVERHEAD,
    SCAN_LAYOUT,
    TTL_KEY,
    ScanEnd,
    decode_block_header,
    delete_count,
    next_record,
    scan_records,
)
from .backend import PayloadBackend
from .base import ErrCorruptRecord, LostData
from .idx_peek import IndexPeeks
from .pages import Page
from .seqindex import Arrays, SeqIndex
from .seqrecover import BlockSlots, append_slots

_crc32 = zlib.crc32
_LEN_MASK = 0xFFFFFFFF
# The stream state (``FileStore``): the index's resident part and the block list.
STATE_FILE = "index.db"
# A block's bytes while loading: read into memory, or mapped.
Bytes = bytes | mmap.mmap
# Whether a restart after ``kill -9`` reads only the active block's records written after the
# stream state (`BlockIndexes._vouched_head`, `replay_tail`), its page the state's, rather than the
# whole block: the switch of that fast path (tests/store/test_restart_steps.py proves both recover
# the same store at every point of a crash).
TAIL_REPLAY = True
# Whether a block scan takes its runs of plain message records in `scan_run.plain_run` (compiled),
# each such record one step of a loop without a Python object, rather than one `_BlockScan.record`
# each (~1.4 µs a record): the switch of that fast path (tests/store/test_scan_runs.py proves both
# recover the same store from every block the damage and crash tests make). None: where the compiled
# modules are in use (``_compiled.active``) — in pure Python the run's byte-by-byte reads cost more
# than ``struct``'s (~2.9 against ~1.8 µs a record).
PLAIN_RUNS: bool | None = None


class _Block:
    """One block file. ``size`` counts bytes appended (written or pending), ``written`` those
    handed to the OS; ``live_*`` count the records still holding a message."""

    __slots__ = (
        "fd", "first_seq", "index", "live_bytes", "live_msgs", "ours", "path", "prior_bytes", "priors", "size",
        "trim_bytes", "ttls", "written",
    )

    def __init__(self, index: int, first_seq: int, path: str, size: int) -> None:
        self.index = index
        self.first_seq = first_seq
        self.path = path
        self.size = size
        self.written = size
        self.live_msgs = 0
        self.live_bytes = 0
        #: Bytes of the tombstones of ``max_msgs_per_subject`` trims appended to it since it was
        #: written whole: not dead bytes to `BlockFiles._compacts` (nats-server writes none).
        self.trim_bytes = 0
        #: ``seq, num`` pairs of the tombstones in it for earlier blocks' sequences (a removal in a
        #: sealed block writes its tombstone into the active block, nats-server's
        #: ``removeMsgFromBlock`` → ``lmb.writeTombstone``), and their bytes: not dead to
        #: `BlockFiles._compacts` while an earlier block may still hold the record
        #: (``numPriorTombs``).
        self.priors: array[int] = array("Q")
        self.prior_bytes = 0
        self.fd: int | None = None
        #: ``{seq: ttl}`` of its messages stored with a ``Nats-TTL`` (for its index), ascending.
        self.ttls: dict[int, int] = {}
        #: Every record in it was written by this process (a block started here, not found on
        #: disk): ``BlockFiles.read_run`` need not check their CRCs (nats-server's ``cbit``).
        self.ours = False


class _SubjectIds:
    """Subject ids while blocks are loaded: those the blocks' indexes use, and new ones above
    all of them for subjects only a scan finds (so ids rarely clash in ``SeqIndex.rebuild``).

    The stream state's table (`seed`) is taken in at the first block read again (`learn`,
    `id_for`), not before: after a clean stop the state vouches for every block, none is read,
    and a KV bucket's 100,000 subjects were encoded into this map for nothing (~20 ms a restart).
    ``seeded`` counts the subjects taken in (a step count for the tests)."""

    __slots__ = ("_names", "ids", "next", "seeded", "taken")

    def __init__(self) -> None:
        self.ids: dict[bytes, int] = {}
        self.taken: set[int] = set()  # one subject per id: a scanned block must not share one
        self.next = 1
        self._names: list[str | None] | None = None  # the table to take in at first use
        self.seeded = 0

    def seed(self, names: list[str | None]) -> None:
        """Start from a subject table's ids (``names[sid]``; None: a free id)."""
        self._names = names
        self.next = max(self.next, len(names))

    def _take_in(self, names: list[str | None]) -> None:
        self._names = None
        for sid, name in enumerate(names):
            if name is not None:
                self.ids[name.encode()] = sid
                self.taken.add(sid)
        self.seeded += len(self.ids)

    def learn(self, slots: BlockSlots) -> None:
        if self._names is not None:
            self._take_in(self._names)
        for sid, name in zip(slots.ids, slots.names, strict=True):
            key = name.encode()
            if key not in self.ids and sid not in self.taken:
                self.ids[key] = sid
                self.taken.add(sid)
            if sid >= self.next:
                self.next = sid + 1

    def id_for(self, subject: bytes) -> int:
        if self._names is not None:
            self._take_in(self._names)
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
        index.loader = self.load_page  # a sealed block's page: loaded on demand, saved when evicted
        index.peeker = self.peek_slot  # (or one slot read from its image)
        index.saver = self.save_page
        self.msgs_dir = msgs_dir
        self._block_size = block_size
        self._compact_min = compact_min
        self._sync_always = sync_always
        self._compress = compress
        #: ``read_run`` skips the CRC of records in blocks this process wrote (``_Block.ours``);
        #: False (``FileStoreConfig.trust_own_records``): every read checks every record.
        self.trust_own = True
        self.blocks: list[_Block] = []
        self._firsts: list[int] = []
        # Full content of the active block; None after a restart until something needs it
        # (`BlockFiles.active_bytes`).
        self._mirror: bytearray | None = bytearray()
        self._tombs: dict[_Block, bytearray] = {}
        self._maint: set[_Block] = set()
        #: Sealed blocks a lazy tombstone went into: looked at for maintenance once it is written.
        self._maint_later: set[_Block] = set()
        self._tombs_due = False  # pending tombstones the next commit must write
        self._active_full = False  # tombstones took the active block past the block size
        self._lazy_bytes = 0  # bytes of sealed-block tombstones pending
        self.fsync_pending: set[_Block] = set()
        self.dir_dirty = False
        self._floor_dirty = False
        self._floor_block: _Block | None = None
        self._open_fds: dict[_Block, None] = {}  # LRU of sealed blocks with an open fd
        self._ra: tuple[_Block, int, bytes] | None = None
        self._next_index = 1
        self._lost_bytes = 0
        self._lost_seqs: list[int] = []
        self._damage = ScanDamage()  # the sequences damaged or cut blocks no longer hold
        #: The priors of the blocks the stream state vouched for at `load`, as ``(seq, num, ts)``.
        self.kept_deletes: list[tuple[int, int, int]] = []
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
        self.blocks_read = 0  # blocks whose file recovery read (a counter for the complexity tests)
        self.slots_scanned = 0  # slots block scans made (a counter for the complexity tests)
        # The active block's records after what the stream state vouched for (`replay_tail`): the
        # block, the offset they start at.
        self._tail: tuple[_Block, int] | None = None
        self.writes = 0  # block files written to (one per file per flush; a complexity-test counter)
        self.maint_passes = 0  # `_maintain` passes (a complexity-test counter)
        self.index_writes = 0  # block indexes written (`_write_index`; a complexity-test counter)
        # Slots of evicted pages read from the index files (`peek_slot`), checked by their records.
        self.peeks = IndexPeeks(self._idx_path, self._vouch_slot)
        # The size of each block as the stream state on disk lists it (see `drop_state`), and how
        # many times a state was found out of date since (`FileStore` writes it again then).
        self._state_sizes: dict[int, int] = {}
        self.state_drops = 0
        self._open = False  # `BlockFiles.open_active` ran: blocks are written to from then on
        index._rebuilding = True  # (no page is saved before that either)
        # Where the last good commit left things: (last_seq, last_ts, blocks, active block size, its priors).
        self._good: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)

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
                self._keep_open(blk)
        elif blk in self._open_fds:
            self._open_fds[blk] = self._open_fds.pop(blk)  # LRU touch
        return fd

    def _keep_open(self, blk: _Block) -> None:
        """Put sealed ``blk``'s open descriptor last in the LRU of those kept open (the active
        block's is always open, outside it), closing the least recently used past `open_fds_max`."""
        self._open_fds[blk] = None
        if len(self._open_fds) > open_fds_max():
            self._close_fd(next(iter(self._open_fds)))

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
        self.peeks.close()

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

    def state(self) -> dict[str, Any]:
        """The block list for the stream state (``FileStore``): each block's file as it is now
        (size, tail CRC) and its live counts, and the newest floor."""
        self._state_sizes = {b.index: b.written for b in self.blocks}
        return {
            "floor_block": self._floor_block.index if self._floor_block is not None else None,
            "floor": list(self._floor),
            "blocks": [[*self._row(b), b in self._stale_idx] for b in self.blocks],
        }

    def _row(self, blk: _Block) -> list[int]:
        """A block's row in the state: index, first sequence, size, live counts, tail CRC, and the
        last sequence and timestamp its page reaches (where a scan of the next block starts)."""
        end = self._block_end(blk)
        page = self.index.page_in(blk.first_seq, end, load=False)
        last, ts = blk.first_seq - 1, 0
        if page is not None and page.n:
            last = page.first + page.n - 1
            ts = page.tss[-1] if page.loaded else page.ts_last
        return [
            blk.index,
            blk.first_seq,
            blk.written,
            blk.live_msgs,
            blk.live_bytes,
            self._tail_crc(blk),
            last,
            ts,
        ]

    def _vouched(self, row: list[Any], path: str) -> _Block | None:
        """The block a state's row describes, if its file is still as the state saw it (same size
        and tail: a change to a block since — a tombstone, a rewrite — changes both; an erase in
        place, which does not, discards the state when it happens)."""
        index, first_seq, size, live_msgs, live_bytes, tail, _last, _ts, stale = row
        blk = _Block(index, first_seq, path, size)
        try:
            if os.path.getsize(path) != size or self._tail_crc(blk) != tail:
                return None
        except OSError:
            return None
        blk.live_msgs, blk.live_bytes = live_msgs, live_bytes
        if stale or index not in self._idx_found:
            self._stale_idx.add(blk)  # written again at the next sync (the last block's is not kept)
        return blk

    def _vouched_head(self, row: list[Any], path: str) -> _Block | None:
        """The active block a state's row describes, grown since (appends after the state was
        written, then ``kill -9``), when the bytes the state saw are still as it saw them (the CRC
        of their tail; the block is only appended to — a change in place or a cut back drops the
        state, ``drop_state``): the state's page holds their slots, so only the records after
        them are read (`replay_tail`), not the whole block (~2 µs a record). nats-server's
        ``recoverFullState`` rebuilds the last block whole when its last checksum differs.
        None: the whole block is read (``TAIL_REPLAY`` off, or the bytes differ)."""
        if not TAIL_REPLAY:
            return None
        index, first_seq, size, live_msgs, live_bytes, tail, _last, _ts, _stale = row
        blk = _Block(index, first_seq, path, size)
        try:
            grown = os.path.getsize(path)
            if grown <= size or self._tail_crc(blk) != tail:
                return None
        except OSError:
            return None
        blk.size = blk.written = grown
        blk.live_msgs, blk.live_bytes = live_msgs, live_bytes  # (`account` counts them again)
        self._tail = (blk, size)
        return blk

    def replay_tail(self) -> None:
        """After the index is recovered from the state: the active block's records the state did
        not see (`_vouched_head`), scanned from where it stopped and put into the index as the
        writes that made them did (`seqrecover.append_slots`: messages appended, tombstones
        applied, a floor's prefix removed); a torn tail is cut as a scan of the whole block cuts
        it. Costs the records written since the state, not the block's."""
        found, self._tail = self._tail, None
        if found is None:
            return
        blk, at = found
        index = self.index
        with mapped(blk.path) as buf:
            slots, max_seq, end = self._scan_block(blk, buf, index.last_seq, index.last_ts, _SubjectIds(), True, at)
            self._scan_end(blk, buf, True, max_seq, end)
        self._damage.keep_dead_if_damaged(blk)
        prior_tombs.from_tail(blk, slots.deletes)
        append_slots(index, slots)
        if slots.floor > self._floor[0]:
            self._floor = (slots.floor, slots.floor_ts)
            self._floor_block = blk

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

    def load(
        self,
        files: list[tuple[int, str]],
        state: dict[str, Any] | None = None,
        names: list[str | None] | None = None,
    ) -> Iterator[tuple[int, int, BlockSlots | None]]:
        """Every block for ``SeqIndex.recover``, in order, as ``(first, end, slots)``, one block at a
        time: None for a block the stream state (``state``: its block list; ``names``: its
        subjects) vouches for (`_vouched`: not read at all), else its slots — from the block's
        saved index when it matches the block byte for byte (size and CRC of the whole file), else
        from a scan (the active block after a crash, or one changed since its index was written).
        A scan cuts torn tails, steps over damaged records and notes what was lost (see `lost`);
        an index whose block file is gone reports the block's messages lost."""
        known = _SubjectIds()  # subject -> id, as the state and the blocks loaded so far number them
        if names is not None:
            known.seed(names)
        listed = state["blocks"] if state is not None else []
        rows = {row[0]: row for row in listed}
        self._damage.known_end = {row[0]: row[6] + 1 for row in listed}
        self._state_sizes = {row[0]: row[2] for row in listed}
        # Where each block ended when the state was written (the next block's first sequence).
        ends = {a[0]: b[1] for a, b in itertools.pairwise(listed)}
        floor, floor_ts = state["floor"] if state is not None else (0, 0)
        priors = state.get("priors") or {} if state is not None else {}  # (`prior_tombs.state_rows`)
        floor_from_index = False
        max_seq = max_ts = 0
        last_index = files[-1][0] if files else -1
        present = {index for index, _ in files}
        for index in sorted(self._idx_found - present):
            self._note_missing(index)
        pending: tuple[int, int, BlockSlots | None] | None = None
        for index, name in files:
            path = os.path.join(self.msgs_dir, name)
            row = rows.get(index)
            blk = self._vouched(row, path) if row is not None else None
            if blk is None and row is not None and index == last_index and state is not None and state["open"]:
                blk = self._vouched_head(row, path)  # (grown since: the rest is `replay_tail`'s)
            if blk is not None:
                self.blocks.append(blk)
                self._firsts.append(blk.first_seq)
                if state is not None and index == state["floor_block"]:
                    self._floor_block = blk
                max_seq, max_ts = max(max_seq, row[6]), max(max_ts, row[7])  # type: ignore[index]
                if index in priors:
                    prior_tombs.found(self, blk, priors[index], False, True)
                item: tuple[int, int, BlockSlots | None] = (blk.first_seq, ends.get(index, 1 << 63), None)
            else:
                with mapped(path) as buf:
                    slots, scanned = self._load_block(
                        index, path, buf, index == last_index, max_seq, max_ts, known, row[1] if row else 0
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
                blk = self.blocks[-1]
                if slots.deletes:  # (its priors)
                    prior_tombs.found(self, blk, [x for s, n, _t in slots.deletes for x in (s, n)], scanned)
                blk.live_msgs = sum(slots.s_msgs)
                blk.live_bytes = sum(slots.locs) & _LEN_MASK
                item = (blk.first_seq, 1 << 63, slots)
            if pending is not None:
                yield pending[0], min(pending[1], item[0]), pending[2]
            pending = item
        if pending is not None:
            yield pending
        self._floor = (floor, floor_ts)
        if floor_from_index:
            # The newest floor is known from an index, not from the record itself: write it
            # again into the active block, so it never depends on where the record sits.
            self._floor_dirty = True
        self._idx_found = set()

    def _load_block(
        self,
        index: int,
        path: str,
        buf: Bytes,
        is_last: bool,
        max_seq: int,
        max_ts: int,
        known: _SubjectIds,
        hint: int,
    ) -> tuple[BlockSlots | None, bool]:
        """One block's slots (from its index, else a scan) and whether it was scanned; the
        block joins the list. A damaged header is repaired (``_damage.repair_header``; ``hint``: the first
        sequence the stream state lists for it, 0: none); None for a block torn while created."""
        first = decode_block_header(buf)
        if first is None:
            first = repair_header(path, self._idx_path(index), buf, hint, max_seq, index)
            self._lost_bytes += BLOCK_HDR_LEN if first is not None else 0
            if first is None:  # torn while being created: nothing was ever in it
                os.unlink(path)
                self._drop_index_file(index)
                return None, False
        self.blocks_read += 1
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
        slots, max_seq, end = self._scan_block(blk, buf, max_seq, max_ts, known)
        self._scan_end(blk, buf, is_last, max_seq, end)
        self._damage.keep_dead_if_damaged(blk)
        return slots, True

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
            if header["first"] != first:
                return None
            if header["size"] != len(buf) or header["crc"] != _crc32(buf):
                # Older than its block (a tombstone since) or the block is damaged: which sequences
                # were gone when it was written still holds (a scan's damage is told by it).
                self._damage.dead[index] = (first, arrays["sids"])
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
            if "x_seqs" in arrays:  # (its tombstones for earlier blocks' sequences)
                slots.deletes = [(seq, num, 0) for seq, num in zip(arrays["x_seqs"], arrays["x_nums"], strict=True)]
            n = len(slots.sids)
            if any(len(a) != n for a in (slots.tss, slots.sizes, slots.locs, slots.nxt)):
                return None
            k = len(slots.ids)
            if any(len(a) != k for a in (slots.s_msgs, slots.s_first, slots.s_last)) or len(names) != k:
                return None
            for seq, ttl in header["ttls"]:
                self.found_ttls[int(seq)] = int(ttl)
            if "ttl_seqs" in arrays:
                seqs, vals = arrays["ttl_seqs"], arrays["ttl_vals"]
                if len(seqs) != len(vals):
                    return None
                self.found_ttls.update(zip(seqs, vals, strict=True))
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
        self, blk: _Block, buf: Bytes, max_seq: int, prev_ts: int, known: _SubjectIds, recover: bool = True,
        at: int = BLOCK_HDR_LEN,
    ) -> tuple[BlockSlots, int, ScanEnd]:
        """A block's records from offset ``at`` as its slots (sequences above ``max_seq``), the last
        sequence seen, where the scan stopped (`_scan_end`). A subject gets ``known``'s id for it, or
        the next, which the index adopts. ``recover`` False: a page read again while running.

        Runs of plain messages are taken by `scan_run.plain_run` (compiled; ``PLAIN_RUNS``), every
        other record — and, with the switch off, every record — by `_BlockScan.take`."""
        scan = _BlockScan(self, blk, buf, max_seq, prev_ts, known, recover)
        ends: list[ScanEnd] = []
        if not (_compiled.active if PLAIN_RUNS is None else PLAIN_RUNS):
            scan.take(scan_records(buf, at, ends))
        else:
            # Deferred: only a block scan (a crash restart, an index that cannot be read) runs it, and
            # a start that scans no block imports it not (tests/server/test_startup_imports.py).
            from .scan_run import plain_run

            st, cols, own, n = scan.st, scan.cols, scan.own, len(buf)
            skipped: list[tuple[int, int]] = []
            with memoryview(buf) as mv:
                while True:
                    at = plain_run(buf, at, st, cols, own, scan.last_idx, scan.subject_id, SCAN_LAYOUT, _crc32)
                    rec = next_record(buf, mv, at, n, skipped)
                    if rec is None:
                        break
                    at = rec[0] + rec[1]
                    scan.take((rec,))
            ends.append(ScanEnd(at, skipped))
        slots = scan.slots
        slots.summarize()
        self.slots_scanned += len(slots.sids)
        return slots, scan.st[_MAX_SEQ], ends[0]

    def _scan_end(self, blk: _Block, buf: Bytes, is_last: bool, max_seq: int, end: ScanEnd) -> None:
        """What a block's scan stepped over or cut: the bytes counted lost (a torn tail of the last
        block is the write in flight, not a loss), the sequences of a cut tail noted (`lost` names
        them, ``_damage``), and the file cut where the records stop being good."""
        for _off, total in end.skipped:
            self._lost_bytes += total
        if end.good_end < len(buf):
            torn = buf[end.good_end :]
            # (a cut the stream state saw past is damage even where it looks like a write in flight)
            known = self._damage.known_end.get(blk.index, 0) > max_seq + 1
            damaged = known or not (is_last and in_flight(torn))
            if damaged:
                self._lost_bytes += len(torn)
            self._damage.tail(blk, blk.first_seq - 1, max_seq, torn, damaged)
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

    def _drop_index_file(self, index: int, aside: str | None = None) -> None:
        self.peeks.forget(index)
        remove_file(self._idx_path(index), aside)

    def _write_index(self, blk: _Block, content: bytes | bytearray) -> None:
        """Save a sealed block's slots beside it (``content`` = the block file's bytes), so a
        restart after a crash loads them instead of scanning the block (nats-server writes a
        per-block index the same way). Written whole and renamed into place; not fsynced: the
        CRC check at load catches an index that did not reach the disk."""
        index = self.index
        self.index_writes += 1
        end = self._block_end(blk)
        slots = index.block_slots(blk.first_seq, end)
        # The block's own TTLs (ascending: appended in order), not all the store's: O(block);
        # those of live messages (a slot's subject id, read off the slots just taken), as two
        # arrays (a pair list per message in the JSON header cost a GC-tracked list each).
        sids, first, n = slots.sids, slots.first, len(slots.sids)
        ttl_of = blk.ttls
        live = [seq for seq in ttl_of if 0 <= seq - first < n and sids[seq - first]]
        self.ttl_steps += len(ttl_of)
        header = {
            "first": blk.first_seq,
            "size": len(content),
            "crc": _crc32(content),
            "floor": self._floor[0],
            "floor_ts": self._floor[1],
            "ttls": [],  # (an index written before the arrays below kept them here)
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
            "ttl_seqs": array("Q", live),
            "ttl_vals": array("q", map(ttl_of.__getitem__, live)),
            "x_seqs": blk.priors[0::2],
            "x_nums": blk.priors[1::2],
        }
        names: list[str | None] = list(slots.names)
        path = self._idx_path(blk.index)
        if self._state_sizes.get(blk.index) == blk.written:
            # The state vouches for this block file, and with it for the page's image it listed
            # (its removals since are the page's ``dels`` there): a new image out-dates it.
            self.drop_state()
        write_file(path + ".tmp", _snapshot.encode(header, arrays, names), fsync=False)
        os.replace(path + ".tmp", path)
        self.peeks.forget(blk.index)
        self.peeks.note_locs(blk.index, slots.locs)
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

    # ------------------------------------------------------------------------------------
    # Pages of sealed blocks: loaded from the block's index on demand, saved before eviction
    # ------------------------------------------------------------------------------------
    def _page_block(self, page: Page) -> _Block | None:
        """The block a page lies in (None: none does any more)."""
        i = bisect.bisect_right(self._firsts, page.first) - 1
        if i < 0:
            return None
        end = self._firsts[i + 1] if i + 1 < len(self.blocks) else 1 << 63
        return self.blocks[i] if page.first + page.n <= end else None

    def load_page(self, page: Page) -> Arrays:
        """An evicted page's slots (``SeqIndex.loader``; nats-server loads a block's cache): from
        its block's saved index, which it was evicted only once written; a scan of the block
        when that cannot be read."""
        blk = self._page_block(page)
        if blk is None:
            raise ErrCorruptRecord(f"no block holds sequence {page.first}")
        cols = self._page_from_index(blk, page)
        return cols if cols is not None else self._page_from_scan(blk, page)

    def _page_from_index(self, blk: _Block, page: Page) -> Arrays | None:
        try:
            with open(self._idx_path(blk.index), "rb") as f:
                decoded = _snapshot.decode(f.read())
        except OSError:
            return None
        if decoded is None:
            return None
        header, arrays, _names = decoded
        try:
            if int(header["first"]) != blk.first_seq:
                return None
            lo = page.first - blk.first_seq
            hi = lo + page.n
            sids, tss, sizes, locs, nxt = (arrays[k] for k in ("sids", "tss", "sizes", "locs", "nxt"))
        except (KeyError, ValueError, TypeError):
            return None
        if any(len(c) < hi for c in (sids, tss, sizes, locs, nxt)):
            return None
        if lo or hi < len(sids):
            return sids[lo:hi], tss[lo:hi], sizes[lo:hi], locs[lo:hi], nxt[lo:hi]
        return sids, tss, sizes, locs, nxt

    def _page_from_scan(self, blk: _Block, page: Page) -> Arrays:
        """A page's slots from a scan of its block, as the running index sees them: subjects by
        their ids now (one the index no longer has holds no message), nothing below the first
        sequence."""
        self.flush_writes()
        known = _SubjectIds()
        known.seed(self.index.subjects.names)
        limit = known.next
        with mapped(blk.path) as buf:
            slots = self._scan_block(blk, buf, page.first - 1, 0, known, recover=False)[0]
        n = len(slots.sids)
        if n < page.n:
            _extend_dead(slots, page.n - n, slots.tss[-1] if n else 0)
        cols = [slots.sids[: page.n], slots.tss[: page.n], slots.sizes[: page.n], slots.locs[: page.n]]
        sids, sizes, locs = cols[0], cols[2], cols[3]
        floor = self.index.first_seq - page.first
        for k in range(page.n):
            if sids[k] and (sids[k] >= limit or k < floor):
                sids[k] = sizes[k] = locs[k] = 0
        prior_tombs.unnamed(self.blocks, blk, page.first, sids, sizes, locs)  # (later blocks' tombstones for it)
        return sids, cols[1], sizes, locs, slots.nxt[: page.n]

    def peek_slot(self, page: Page, k: int, loc_only: bool = False) -> tuple[int, int, int] | None:
        """Slot ``k`` of an evicted page as its image holds it (``SeqIndex.peeker``), read from
        its block's index file by `IndexPeeks` (None when that file cannot be used: the page is
        loaded then, as `load_page` does). ``loc_only`` is taken only where the image has a
        message in each of the page's slots (its live ones and those removed since, ``dels``,
        are all of them): the locator alone then says the slot is live."""
        firsts = self._firsts  # (`_page_block` inline: a step of every random get of an evicted page)
        i = bisect.bisect_right(firsts, page.first) - 1
        if i < 0 or (i + 1 < len(firsts) and page.first + page.n > firsts[i + 1]):
            return None
        blk = self.blocks[i]
        return self.peeks.slot(
            blk.index,
            blk.first_seq,
            page.first - blk.first_seq + k,
            loc_only and page.msgs + len(page.dels) == page.n,
        )

    def _vouch_slot(self, seq: int, slot: tuple[int, int, int]) -> bool:
        """Whether the record at a slot's locator is the live message at ``seq`` with the slot's
        subject and timestamp (`IndexPeeks`: a slot read from an index file whose checksum was
        not verified). A record that fails is not listed damaged here: the file is verified
        whole next, and a load of the page reads the block itself."""
        sid, ts, loc = slot
        damaged = len(self.damaged)
        try:
            subject, rts, _hdr, _data = self.read_msg(seq, loc)
        except (ErrCorruptRecord, OSError, ValueError):
            del self.damaged[damaged:]
            return False
        names = self.index.subjects.names
        return rts == ts and 0 < sid < len(names) and names[sid] == subject

    def save_page(self, page: Page) -> bool:
        """Write a page's image, its block's index (``SeqIndex.saver``: before it is evicted)."""
        blk = self._page_block(page)
        if blk is None or blk is self.blocks[-1]:
            return False
        try:
            self.flush_writes()
            self._write_index(blk, os.pread(self._fd(blk), blk.written, 0))
        except OSError:
            return False
        return page.image

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
        """After recovery: each block's live counts, from its page where the index changed it
        since the block was read (a floor, or a later block's tombstone); sealed blocks are looked
        at for maintenance."""
        index = self.index
        nblocks = len(self.blocks)
        for i, blk in enumerate(self.blocks):
            end = self._firsts[i + 1] if i + 1 < nblocks else index.last_seq + 1
            page = index.page_in(blk.first_seq, end, load=False)
            if page is None:
                blk.live_msgs = blk.live_bytes = 0
                continue
            if blk in self._stale_idx:
                page.image = False  # (its index is missing or older than the block)
            if page.msgs != blk.live_msgs:
                index.page_in(blk.first_seq, end)  # (loaded)
                blk.live_msgs = page.msgs
                blk.live_bytes = sum(page.locs) & _LEN_MASK
        for blk in self.blocks[:-1]:
            self._maint.add(blk)
        # The newest floor is the one the index applied; keep pointing at its block.
        if self._floor_block is not None and self._floor_block not in self.blocks:
            self._floor_block = None

    def _next_first(self, blk: _Block) -> int | None:
        """The first sequence of the block after ``blk`` (None: it is the last)."""
        i = self.blocks.index(blk) if blk in self.blocks else -1
        return self._firsts[i + 1] if 0 <= i < len(self.blocks) - 1 else None

    def lost(self, gone: list[Page] | None = None) -> LostData | None:
        """What the load dropped: bytes cut or stepped over, the sequences that held messages no
        longer found (a damaged record, or the torn record right after the last), and the
        messages of block files gone whose index remained — less those the stream state's page
        of such a block (``gone``) says were removed. (A block unlinked because its messages were
        all removed leaves no index: nothing of it is reported.)"""
        index = self.index
        lost = list(self._lost_seqs)
        nbytes = self._lost_bytes
        lost += self._damage.seqs(self._next_first, index.live, self._floor[0])
        if self._missing_seqs:
            removed = {seq for p in gone or [] for seq in p.dels}
            floor = self._floor[0]
            missing = [s for s in self._missing_seqs if s >= floor and s not in removed and not index.live(s)]
            if missing:
                lost += missing
                nbytes += self._missing_bytes
        self._missing_seqs, self._missing_bytes = [], 0
        if not (nbytes or lost):
            return None
        return LostData(sorted(set(lost)), nbytes)

    def save_images(self) -> None:
        """Every sealed page without a current image gets one (before the stream state is
        written, so that after a restart any page can be evicted and loaded again)."""
        index = self.index
        for page in index.pages:
            if not page.image and page is not index.tail and page.n:
                index._use(page)
                self.save_page(page)

    def drop_state(self) -> None:
        """The stream state on disk no longer describes the blocks (a change it could not notice:
        an erase in place, a sealed page's image written again); the next sync or stop writes it
        again, and a restart meanwhile reads every block (from its index file)."""
        if not self._state_sizes:
            return  # (none on disk)
        self._state_sizes = {}
        self.state_drops += 1
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.msgs_dir, STATE_FILE))


# `_BlockScan.st`'s fields (`scan_run.plain_run` reads and updates them too).
_START, _NSLOTS, _MAX_SEQ, _CUR_TS = 0, 1, 2, 3


class _BlockScan:
    """One block scan's state (``BlockIndexes._scan_block``): its slots, the block's subjects by id
    (``own``), each id's last slot (``last_idx``, for the ``nxt`` links), and in ``st`` — shared with
    `scan_run.plain_run` — ``[start, nslots, max_seq, cur_ts, size_base, size_hdr]``."""

    __slots__ = ("blk", "buf", "cols", "damage", "known", "last_idx", "note_ttl", "own", "recover", "slots", "st", "store")

    def __init__(
        self, store: BlockIndexes, blk: _Block, buf: Bytes, max_seq: int, prev_ts: int, known: _SubjectIds,
        recover: bool,
    ) -> None:
        self.store, self.blk, self.buf, self.known, self.recover = store, blk, buf, known, recover
        slots = self.slots = BlockSlots(max(blk.first_seq, max_seq + 1))
        self.cols = (slots.sids, slots.tss, slots.sizes, slots.locs, slots.nxt)
        self.st = [slots.first, 0, max_seq, prev_ts, store.size_base, store.size_hdr]
        self.own: dict[bytes, int] = {}  # this block's subjects, by the ids ``known`` gives them
        self.last_idx: list[int] = [-1] * known.next
        self.note_ttl = store._note_ttl if recover else _no_ttl
        self.damage = store._damage if recover else ScanDamage()

    def take(self, recs: Iterable[tuple[int, int, int, int, int, int, int]]) -> None:
        """Records (or runs of damaged bytes, ``DAMAGED``) into the slots, in order: the general
        loop of a block scan. The scan's state is kept in locals while it runs (``st`` is
        written back before anything reads it: a tombstone, damage, the end), the columns'
        appends bound once: pure Python takes every record here (``PLAIN_RUNS`` off), and an
        attribute or list lookup per field cost a fifth of a crash restart's scan."""
        st, slots, buf, own_get, last_idx = self.st, self.slots, self.buf, self.own.get, self.last_idx
        start, nslots, max_seq, cur_ts, size_base, size_hdr = st
        sids_append, tss_append, sizes_append = slots.sids.append, slots.tss.append, slots.sizes.append
        locs_append, nxt_append, nxt, note_ttl = slots.locs.append, slots.nxt.append, slots.nxt, self.note_ttl
        for off, total, kind, seq, ts, slen, hlen in recs:
            k = kind & KIND_MASK
            if k == KIND_MSG:
                if seq <= max_seq or seq < start:
                    if self.recover:
                        self.store._lost_bytes += total  # out of order: cannot be placed
                    continue
                max_seq, idx = seq, seq - start
                if idx != nslots:
                    _extend_dead(slots, idx - nslots, cur_ts)
                nslots = idx + 1
                if kind & FLAG_ERASED:
                    _extend_dead(slots, 1, cur_ts)
                    continue
                at = off + REC_HDR_LEN
                if kind & FLAG_COMPRESSED:
                    dlen = _compress.decompressed_len(buf[at + slen : off + total - CRC_LEN]) - hlen
                else:
                    dlen = total - REC_OVERHEAD - slen - hlen
                subj = buf[at : at + slen]
                sid = own_get(subj)
                if sid is None:
                    sid = self.subject_id(subj)  # (``last_idx`` grown in place)
                sids_append(sid)
                tss_append(ts)
                if hlen:
                    sizes_append(size_base + slen + dlen + size_hdr + hlen)
                    note_ttl(buf, at + slen, hlen, kind, off + total, seq)
                else:
                    sizes_append(size_base + slen + dlen)
                locs_append(off << 32 | total)
                nxt_append(0)
                li = last_idx[sid]
                if li >= 0:
                    nxt[li] = seq
                last_idx[sid] = idx
                cur_ts = ts
                continue
            st[_NSLOTS], st[_MAX_SEQ], st[_CUR_TS] = nslots, max_seq, cur_ts
            if kind == DAMAGED:  # bytes [off, off + total) stepped over
                self.damage.gap(self.blk, self.blk.first_seq - 1, max_seq, buf, off + total)
            elif k == KIND_DELETE:
                end_seq = _scan_delete(slots, buf, off, total, seq, ts, self.damage.tombed)
                if end_seq > max_seq:
                    gap = end_seq - start + 1 - nslots
                    if gap > 0:
                        _extend_dead(slots, gap, ts)
                        nslots += gap
                    max_seq, cur_ts = end_seq, ts
            elif k == KIND_FLOOR and seq > slots.floor:
                slots.floor, slots.floor_ts = seq, ts
        st[_NSLOTS], st[_MAX_SEQ], st[_CUR_TS] = nslots, max_seq, cur_ts

    def subject_id(self, subj: bytes) -> int:
        """The id of a subject the block meets for the first time (``known``'s, or the next), listed
        among the block's subjects (`scan_run.plain_run` asks it too)."""
        slots = self.slots
        sid = self.own[subj] = self.known.id_for(subj)
        slots.ids.append(sid)
        slots.names.append(subj.decode())
        last_idx = self.last_idx
        if sid >= len(last_idx):
            last_idx.extend([-1] * (sid + 1 - len(last_idx)))
        return sid


def _no_ttl(buf: Bytes, at: int, hlen: int, kind: int, end: int, seq: int) -> None:
    """`BlockIndexes._note_ttl` of a scan that is not a recovery's: nothing to note."""


def _extend_dead(slots: BlockSlots, n: int, ts: int) -> None:
    """``n`` slots without a message at the end of a block's scanned slots."""
    slots.sids.extend(zeros("I", n))
    slots.tss.extend(array("q", [ts]) * n)
    slots.sizes.extend(zeros("I", n))
    slots.locs.extend(zeros("Q", n))
    slots.nxt.extend(zeros("Q", n))


def _scan_delete(
    slots: BlockSlots, buf: Bytes, off: int, total: int, seq: int, ts: int, tombed: list[tuple[int, int]]
) -> int:
    """A tombstone met by a block's scan: the slots it names die (those of earlier blocks are
    kept in ``slots.deletes``; all noted in ``tombed``); returns the last sequence it names."""
    num = delete_count(buf, off, total)
    tombed.append((seq, seq + num - 1))
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
def mapped(path: str) -> Iterator[Bytes]:
    """A block file's bytes (or the stream state's), mapped rather than read: loading reads each
    block once (CRC or scan) and keeps nothing of it, so nothing is copied into the heap (where a
    freed 8 MiB buffer stays in the process's resident memory)."""
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
    if hdr.find(TTL_KEY) < 0:
        return 0
    raw = get_header(hdr, b"Nats-TTL")
    if raw:
        with contextlib.suppress(ValueError, UnicodeDecodeError):
            return parse_message_ttl(raw.decode()) or 0
    return 0
