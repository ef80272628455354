"""Slots of evicted pages read from the block index files (``<n>.idx``), without loading the page.

A sealed block's page that was evicted from memory is asked for one slot at a time by some reads
(`SeqIndex.peeker`): a get ``next_by_subj`` from 1 looks at the first message of a subject, which
lies in the first block. `IndexPeeks` answers from the block's index file: three small reads the
first time a window of `PEEK_WINDOW` slots around the slot is asked; the second time, that window
is read whole and kept (the last `PEEK_WINDOWS`). nats-server keeps a block's cache after a read
(``loadMsgsWithLock``) until it expires; reading the slot from the file each time cost an open,
three reads and a close per get (~10 µs). Why not the whole window at the first time: a random
read seldom comes back to its window, and reading 10 KiB for one slot cost it ~4 µs more.

The file's layout (where its arrays lie; its checksum checked by ``_snapshot.layout``) is read
once per file, and the file is kept open (the last `PEEK_FDS`, as the block files keep theirs):
an open and a close per get were ~1.3 µs of a random get's ~7 µs here. `IndexPeeks.forget` drops
what was read of a file that was written again or removed, and closes it.
"""

from __future__ import annotations

import os
import struct
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from . import _snapshot

__all__ = ["PEEK_FDS", "PEEK_SEEN", "PEEK_WINDOW", "PEEK_WINDOWS", "IndexPeeks"]

# The arrays are written as they are in memory (native order, ``_snapshot``).
# Windows: slots per window (4 + 8 + 8 bytes each), windows kept (~160 KiB), and how many windows
# asked once are remembered.
PEEK_WINDOW = 128
PEEK_WINDOWS = 64
PEEK_SEEN = 4096
#: Index files kept open at most.
PEEK_FDS = 32
_U32 = struct.Struct("=I")
_I64 = struct.Struct("=q")
_U64 = struct.Struct("=Q")

if TYPE_CHECKING:
    _Cols: TypeAlias = tuple[array[int], array[int], array[int]]


@dataclass(slots=True, frozen=True)
class _IdxLayout:
    """Where a block index file's slot arrays lie: slots, and the byte offsets of sids, tss, locs."""

    n: int
    sids: int
    tss: int
    locs: int


class IndexPeeks:
    """What was read of the block index files for single slots (owned by `BlockIndexes`)."""

    __slots__ = ("_fds", "_layouts", "_seen", "_windows", "reads")

    def __init__(self) -> None:
        # Where the slot arrays lie in each block's index file (read once per file).
        self._layouts: dict[int, _IdxLayout | None] = {}
        # Windows of those arrays already read, least recently used first:
        # block index << 40 | window -> (sids, tss, locs).
        self._windows: dict[int, _Cols] = {}
        self._seen: set[int] = set()  # windows asked once (the next ask reads one)
        self._fds: dict[int, int] = {}  # open index files by block index, least recently used first
        self.reads = 0  # windows read (a complexity-test counter)

    def slot(self, index: int, path: str, first_seq: int, j: int) -> tuple[int, int, int] | None:
        """Slot ``j`` of block ``index`` (its index file at ``path``, its first sequence
        ``first_seq``): ``(sid, ts, loc)``, ``(0, 0, 0)`` for a slot without a message, None when
        the file cannot be used."""
        w = j // PEEK_WINDOW
        key = index << 40 | w  # (an int: cheaper to hash than a pair)
        cols = self._windows.pop(key, None)
        if cols is None:
            lay = self._layout(index, path, first_seq)
            if lay is None:
                return None
            if key not in self._seen:
                if len(self._seen) >= PEEK_SEEN:
                    self._seen.clear()
                self._seen.add(key)
                fd = self._fd(index, path)
                return None if fd is None else _read_slot(lay, fd, j)
            fd = self._fd(index, path)
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

    def forget(self, index: int) -> None:
        """Block ``index``'s index file was written again or removed: what was read of it goes
        (and it is closed)."""
        self._layouts.pop(index, None)
        fd = self._fds.pop(index, None)
        if fd is not None:
            os.close(fd)
        for key in [key for key in self._windows if key >> 40 == index]:
            del self._windows[key]
        self._seen = {key for key in self._seen if key >> 40 != index}

    def close(self) -> None:
        """Close every index file kept open (the store stops or closes its files)."""
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def _fd(self, index: int, path: str) -> int | None:
        """Block ``index``'s index file, open (None: it cannot be opened)."""
        fds = self._fds
        fd = fds.pop(index, None)
        if fd is None:
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                return None
            if len(fds) >= PEEK_FDS:
                os.close(fds.pop(next(iter(fds))))
        fds[index] = fd  # (most recently used last)
        return fd

    def _layout(self, index: int, path: str, first_seq: int) -> _IdxLayout | None:
        if index in self._layouts:
            return self._layouts[index]
        lay = self._layouts[index] = _read_layout(path, first_seq)
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


def _read_layout(path: str, first_seq: int) -> _IdxLayout | None:
    try:
        with open(path, "rb") as f:
            got = _snapshot.layout(f.read())
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
    return _IdxLayout(n, cols[0][1], cols[1][1], cols[2][1])
