"""Slots of evicted pages read from the block index files (``<n>.idx``), without loading the page.

A sealed block's page that was evicted from memory is asked for one slot at a time by some reads
(`SeqIndex.peeker`): a get ``next_by_subj`` from 1 looks at the first message of a subject, which
lies in the first block. `IndexPeeks` answers from the block's index file: three small reads the
first time a window of `PEEK_WINDOW` slots around the slot is asked — one, the locator, for a get
by sequence where the image has a message in every slot (`SeqIndex.slot` with ``names`` False: the
record holds the subject and timestamp) —; the second time among the last `PEEK_SEEN` windows asked,
that window is read whole and kept (the last `PEEK_WINDOWS`): for a get by sequence its locators
alone, one read, without verifying the file's checksum (`IndexPeeks._loc`). nats-server keeps a block's cache after
a read (``loadMsgsWithLock``) until it expires; reading the slot from the file each time cost an
open, three reads and a close per get (~10 µs). Why not the whole window at the first time: a random
read seldom comes back to its window, and reading 10 KiB for one slot cost it ~4 µs more; and why
only the last 256 windows asked: random gets over 1M messages (7,800 windows) came back to a window
seen among 4,096 for half of them, and read it whole for a window kept one time in a hundred.

The file's layout (where its arrays lie; its checksum checked by ``_snapshot.file_layout`` before a
window is read whole, or a single slot that its record does not vouch for, `IndexPeeks._one_slot`) is read
once per file, and the file is kept open (the last ``_fileutil.open_fds_max()``, as many as the
block files keep of theirs):
an open and a close per get were ~1.3 µs of a random get's ~7 µs here. `IndexPeeks.forget` drops
what was read of a file that was written again or removed, and closes it.
"""

from __future__ import annotations

import os
import struct
from array import array
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

from msgspec import Struct

from . import _snapshot
from ._fileutil import open_fds_max

__all__ = ["PEEK_SEEN", "PEEK_WINDOW", "PEEK_WINDOWS", "SPAN", "SPANNED", "SPANS_AFTER", "SPAN_MAX", "IndexPeeks"]

# The arrays are written as they are in memory (native order, ``_snapshot``).
# Windows: slots per window (4 + 8 + 8 bytes each), windows kept (~160 KiB), and how many windows
# asked once are remembered.
PEEK_WINDOW = 128
PEEK_WINDOWS = 64
PEEK_SEEN = 256
# Spans (`IndexPeeks._loc`): one record offset kept per this many slots of a sealed block
# (4 bytes per 64 messages: 0.06 B a message, ~3 MiB at 50M messages); a span read at most this
# long (longer: the locator is read instead); the locator reads of a block after which its spans
# are read from its index file (a block whose index this process wrote has them from the write;
# reading them costs what ~250 gets save). Why 64 and not 16: a random get reads its span and
# walks its records from the span's start to its own (`run_reader.find_in_span`); spans of 16
# records (~0.8 KB read and ~8 records walked a get with 16 B messages, against ~3.3 KB and ~32)
# cost ~2,000 fewer callgrind instructions a get over 10M messages (40.2k against 42.3k, in
# process: 5%) and take records up to 1 KiB in one read (256 B at 64), but their offsets are
# resident for every block a process wrote or got from often: 0.25 B a stored message, ~12.5 MiB
# at 50M, where resident memory is to stay near nats-server's, flat (session 18, 49a7d5d tried it).
SPAN = 64
SPAN_MAX = 16 * 1024
SPANS_AFTER = 64
_SPAN_CHUNK = 1024 * 8 * SPAN  # bytes of locators read at a time (a whole number of spans)
#: The subject id `IndexPeeks.slot` answers for a span: ``(SPANNED, 0, offset << 32 | length)``,
#: the bytes of the block that hold the slot's record among its neighbours'.
SPANNED = -2
_U32 = struct.Struct("=I")
_I64 = struct.Struct("=q")
_U64 = struct.Struct("=Q")

if TYPE_CHECKING:
    _Cols: TypeAlias = tuple[array[int], array[int], array[int]]


class _IdxLayout(Struct, frozen=True):
    """Where a block index file's slot arrays lie: slots, and the byte offsets of sids, tss, locs;
    whether the file's checksum was verified."""

    n: int
    sids: int
    tss: int
    locs: int
    checked: bool


class IndexPeeks:
    """What was read of the block index files for single slots (owned by `BlockIndexes`)."""

    __slots__ = ("_asks", "_fds", "_layouts", "_locs", "_path_of", "_seen", "_spans", "_vouch", "_windows", "reads")

    def __init__(
        self, path_of: Callable[[int], str], vouch: Callable[[int, tuple[int, int, int]], bool] | None = None
    ) -> None:
        self._path_of = path_of  # a block's index file (by block index)
        # Whether the record a slot read from an unverified file points at is the slot's message
        # (by its sequence: `slot`); None: every slot's file is verified whole first.
        self._vouch = vouch
        # Where the slot arrays lie in each block's index file (read once per file).
        self._layouts: dict[int, _IdxLayout | None] = {}
        # Windows of those arrays already read, least recently used first:
        # block index << 40 | window -> (sids, tss, locs).
        self._windows: dict[int, _Cols] = {}
        # Windows of locators alone (gets by sequence, `_loc`), keyed and kept as ``_windows``.
        self._locs: dict[int, array[int]] = {}
        # Windows asked once lately (the next ask reads one), least recently asked first.
        self._seen: dict[int, None] = {}
        self._fds: dict[int, int] = {}  # open index files by block index, least recently used first
        # Each block's record offsets at every `SPAN`-th slot and the end of its last record
        # (0: unknown), by block index; locator reads asked of blocks without them yet.
        self._spans: dict[int, array[int]] = {}
        self._asks: dict[int, int] = {}
        self.reads = 0  # windows read (a complexity-test counter)

    def slot(self, index: int, first_seq: int, j: int, loc_only: bool = False) -> tuple[int, int, int] | None:
        """Slot ``j`` of block ``index`` (its first sequence ``first_seq``): ``(sid, ts, loc)``,
        ``(0, 0, 0)`` for a slot without a message, None when the file cannot be used.
        ``loc_only`` (the caller knows every slot of the image holds a message, and reads the
        subject and timestamp from the record): a slot not in a window kept is ``(-1, 0, loc)``,
        one read of the file instead of three, or its span ``(SPANNED, 0, span)`` (`_loc`)."""
        if loc_only:  # (`_span` inline: the step of every random get over an evicted page)
            spans = self._spans.get(index)
            g = j // SPAN + 1
            if spans is not None and g < len(spans):
                a, b = spans[g - 1], spans[g]
                if 0 < a < b <= a + SPAN_MAX:
                    return (SPANNED, 0, a << 32 | (b - a))
        w = j // PEEK_WINDOW
        key = index << 40 | w  # (an int: cheaper to hash than a pair)
        cols = self._windows.pop(key, None)
        if cols is None:
            if loc_only:
                return self._loc(index, first_seq, j, key)
            lay = self._layouts[index] if index in self._layouts else self._layout(index, first_seq)
            if lay is None:
                return None
            if self._first_ask(key):
                return self._one_slot(index, first_seq, j, lay)
            if not lay.checked:
                lay = self._check(index, first_seq)
                if lay is None:
                    return None
            fd = self._fd(index)
            cols = None if fd is None else _read_window(lay, fd, w * PEEK_WINDOW, PEEK_WINDOW)
            if cols is None:
                return None
            self.reads += 1
            if len(self._windows) >= PEEK_WINDOWS:
                del self._windows[next(iter(self._windows))]
        self._windows[key] = cols  # (most recently used last)
        i = j - w * PEEK_WINDOW
        sids, tss, locs = cols
        if i >= len(sids):
            return None
        sid = sids[i]
        return (sid, tss[i], locs[i]) if sid else (0, 0, 0)

    def _loc(
        self, index: int, first_seq: int, j: int, key: int, spans: bool = True
    ) -> tuple[int, int, int] | None:
        """`slot` with ``loc_only`` for a slot whose window is not kept whole: the slot's span
        ``(SPANNED, 0, span)`` when the block's spans are known and it is short (no read here:
        the caller finds the record in it — one read of the block instead of a read of the index
        file and one of the block, ~1.5 µs of system call saved per random get); otherwise
        ``(-1, 0, loc)`` from a window of locators kept (read when its window is asked a second
        time among the last `PEEK_SEEN`) or the one locator read. The file's checksum is not
        verified for it — a locator is checked by the record it points at — where reading the
        window whole would verify the whole file first (~5 MB read and CRCed per block: random
        gets over 10M messages came back to a window often enough to check a file every few
        hundred gets). ``spans`` False: the locator (a span where the record was not found).
        (`slot` looked for the span first.)"""
        lay = self._layouts[index] if index in self._layouts else self._layout(index, first_seq)
        if lay is None or j >= lay.n:
            return None
        if spans and index not in self._spans:
            asks = self._asks[index] = self._asks.get(index, 0) + 1
            if asks >= SPANS_AFTER and self._read_spans(index, lay):
                got = self._span(index, j)
                if got:
                    return (SPANNED, 0, got)
        locs = self._locs.pop(key, None)
        if locs is None:
            fd = self._fd(index)
            if fd is None:
                return None
            if self._first_ask(key):
                return _read_loc(lay, fd, j)
            locs = _read_locs(lay, fd, j - j % PEEK_WINDOW, PEEK_WINDOW)
            if locs is None:
                return None
            self.reads += 1
            if len(self._locs) >= PEEK_WINDOWS:
                del self._locs[next(iter(self._locs))]
        self._locs[key] = locs  # (most recently used last)
        loc = locs[j % PEEK_WINDOW]
        return (-1, 0, loc) if loc else (0, 0, 0)

    def _one_slot(self, index: int, first_seq: int, j: int, lay: _IdxLayout) -> tuple[int, int, int] | None:
        """Slot ``j`` read alone (three small reads). From a file not verified yet, a slot that
        names a message is checked by the record it points at (``vouch``: its sequence, checksum,
        subject and timestamp); a slot without one, or one the record does not vouch for, has
        the file verified whole first. Why: verifying a block's index file reads and CRCs all of
        it, ~5 MB for a block that lost 1M sequences in its middle, which a restart paid to peek
        at the first live slot (`seqstate._first_live`) and a ``next_by_subj`` get from 1 paid
        at its first ask of each block."""
        fd = self._fd(index)
        if fd is None:
            return None
        if not lay.checked and self._vouch is not None:
            got = _read_slot(lay, fd, j)
            if got is not None and got[0] and self._vouch(first_seq + j, got):
                return got
        if not lay.checked:
            checked = self._check(index, first_seq)
            fd = None if checked is None else self._fd(index)
            if checked is None or fd is None:
                return None
            lay = checked
        return _read_slot(lay, fd, j)

    def _first_ask(self, key: int) -> bool:
        """Whether window ``key`` was not asked for among the last `PEEK_SEEN` windows asked
        (then it is noted, the least recently asked forgotten past them: the caller reads the one
        slot); False: asked once lately, the caller reads the window whole and keeps it."""
        seen = self._seen
        if seen.pop(key, 0) is None:  # (asked once lately: None)
            return False
        seen[key] = None
        if len(seen) > PEEK_SEEN:
            del seen[next(iter(seen))]
        return True

    def locator(self, index: int, first_seq: int, j: int) -> int | None:
        """Slot ``j``'s locator read from block ``index``'s file (0: no message there; None:
        the file cannot be used), its span not asked: the record was not found in it."""
        got = self._loc(index, first_seq, j, index << 40 | j // PEEK_WINDOW, False)
        return None if got is None else got[2]

    def note_locs(self, index: int, locs: array[int]) -> None:
        """Block ``index``'s index file was just written with these locators: its spans."""
        self._spans[index] = _spans_of(locs)
        self._asks.pop(index, None)

    def _span(self, index: int, j: int) -> int:
        """Slot ``j``'s span in block ``index`` (``offset << 32 | length``), 0 when not known
        or longer than `SPAN_MAX`."""
        spans = self._spans.get(index)
        g = j // SPAN + 1
        if spans is None or g >= len(spans):
            return 0
        a, b = spans[g - 1], spans[g]
        return a << 32 | (b - a) if 0 < a < b <= a + SPAN_MAX else 0

    def _read_spans(self, index: int, lay: _IdxLayout) -> bool:
        """Read block ``index``'s spans from its index file's locator column (~1.3 MB for 8 MiB
        of small records, read in chunks into one small buffer: ~0.4 ms, what ~250 gets save;
        hence `SPANS_AFTER`); False when that cannot be done."""
        fd = self._fd(index)
        if fd is None or not lay.n:
            return False
        out, buf = array("I"), bytearray(_SPAN_CHUNK)
        view = memoryview(buf)
        last = 0
        for lo in range(0, lay.n, _SPAN_CHUNK // 8):
            size = 8 * min(_SPAN_CHUNK // 8, lay.n - lo)
            try:
                if os.preadv(fd, [view[:size]], lay.locs + 8 * lo) != size:
                    return False
            except OSError:
                return False
            locs = view[:size].cast("Q")
            out.extend([loc >> 32 for loc in locs[::SPAN]])
            last = locs[-1]
        out.append(_record_end(last))
        self._spans[index] = out
        self._asks.pop(index, None)
        return True

    def forget(self, index: int) -> None:
        """Block ``index``'s index file was written again or removed: what was read of it goes
        (and it is closed)."""
        self._layouts.pop(index, None)
        self._spans.pop(index, None)
        self._asks.pop(index, None)
        fd = self._fds.pop(index, None)
        if fd is not None:
            os.close(fd)
        for kept in (self._windows, self._locs):
            for key in [key for key in kept if key >> 40 == index]:
                del kept[key]
        self._seen = {key: None for key in self._seen if key >> 40 != index}

    def close(self) -> None:
        """Close every index file kept open (the store stops or closes its files)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def _fd(self, index: int) -> int | None:
        """Block ``index``'s index file, open (None: it cannot be opened)."""
        fds = self._fds
        fd = fds.pop(index, None)
        if fd is None:
            try:
                fd = os.open(self._path_of(index), os.O_RDONLY)
            except OSError:
                return None
            if len(fds) >= open_fds_max():
                os.close(fds.pop(next(iter(fds))))
        fds[index] = fd  # (most recently used last)
        return fd

    def _layout(self, index: int, first_seq: int) -> _IdxLayout | None:
        """The file's layout from its header alone (its checksum verified by `_check` before a
        subject id or a timestamp is read: a locator is checked by the record it points at)."""
        lay = self._layouts[index] = _read_layout(self._path_of(index), first_seq, False)
        return lay

    def _check(self, index: int, first_seq: int) -> _IdxLayout | None:
        """The file's layout with its checksum verified (None: it fails; the file is not used)."""
        lay = self._layouts[index] = _read_layout(self._path_of(index), first_seq, True)
        return lay


def _read_slot(lay: _IdxLayout, fd: int, j: int) -> tuple[int, int, int] | None:
    """Slot ``j`` of an open index file, three small reads (None: the file cannot be used)."""
    if j >= lay.n:
        return None
    try:
        sid = _U32.unpack(os.pread(fd, 4, lay.sids + 4 * j))[0]
        ts = _I64.unpack(os.pread(fd, 8, lay.tss + 8 * j))[0] if sid else 0
        loc = _U64.unpack(os.pread(fd, 8, lay.locs + 8 * j))[0] if sid else 0
    except (OSError, struct.error):
        return None
    return sid, ts, loc


def _read_loc(lay: _IdxLayout, fd: int, j: int) -> tuple[int, int, int] | None:
    """Slot ``j``'s locator alone, as ``(-1, 0, loc)``; ``(0, 0, 0)`` when it is 0 (no message
    there: a removal zeroes the locator with the subject id)."""
    if j >= lay.n:
        return None
    try:
        loc: int = _U64.unpack(os.pread(fd, 8, lay.locs + 8 * j))[0]
    except (OSError, struct.error):
        return None
    return (-1, 0, loc) if loc else (0, 0, 0)


def _read_locs(lay: _IdxLayout, fd: int, lo: int, size: int) -> array[int] | None:
    """The locators of slots [lo, lo + size) of an open index file (fewer at its end), None when
    it cannot be used."""
    n = min(size, lay.n - lo)
    try:
        locs = array("Q", os.pread(fd, 8 * n, lay.locs + 8 * lo))
    except (OSError, ValueError):
        return None
    return locs if len(locs) == n else None


def _spans_of(locs: array[int]) -> array[int]:
    """The record offsets of every `SPAN`-th slot of a block and the end of its last record
    (0 where a slot holds no message: a span next to it is not used)."""
    out = array("I", [loc >> 32 for loc in locs[::SPAN]])
    out.append(_record_end(locs[-1] if locs else 0))
    return out


def _record_end(loc: int) -> int:
    """Where the record a locator (``offset << 32 | length``) names ends (0: no record)."""
    return (loc >> 32) + (loc & 0xFFFFFFFF) if loc else 0


def _read_window(lay: _IdxLayout, fd: int, lo: int, size: int) -> _Cols | None:
    """Slots [lo, lo + size) of an open index file (fewer at its end), None when it cannot be used."""
    if lo >= lay.n:
        return None
    n = min(size, lay.n - lo)
    try:
        sids, tss, locs = array("I"), array("q"), array("Q")
        sids.frombytes(os.pread(fd, 4 * n, lay.sids + 4 * lo))
        tss.frombytes(os.pread(fd, 8 * n, lay.tss + 8 * lo))
        locs.frombytes(os.pread(fd, 8 * n, lay.locs + 8 * lo))
    except (OSError, ValueError):
        return None
    if not len(sids) == len(tss) == len(locs) == n:
        return None
    return sids, tss, locs


def _read_layout(path: str, first_seq: int, check: bool) -> _IdxLayout | None:
    try:
        got = _snapshot.file_layout(path, check)
    except OSError:
        return None
    if got is None:
        return None
    header, where = got
    try:
        if int(header["first"]) != first_seq:
            return None
        cols = [where[key] for key in ("sids", "tss", "locs")]
    except (KeyError, ValueError, TypeError):
        return None
    if [c[0] for c in cols] != ["I", "q", "Q"]:
        return None
    n = min(cols[0][2] // 4, cols[1][2] // 8, cols[2][2] // 8)
    return _IdxLayout(n, cols[0][1], cols[1][1], cols[2][1], check)
