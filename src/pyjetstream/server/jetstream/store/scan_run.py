"""A block scan's run of plain message records (``BlockIndexes._scan_block``), compiled with mypyc
(``pyjetstream._compiled``): a crash restart before the stream state was written (``index.db``: at a
clean stop or a sync, every ``sync_interval``) scans the active block record by record, and the
general loop cost ~1.4 µs a record compiled around it (~37 Python trace events: the record
generator's tuple, the checks, five column appends, the subject's id).

`plain_run` is that loop's message case and nothing else: from ``off`` on it takes the records that
are a whole, checked message of the next sequence (kind ``MSG`` with no flag, the CRC residue right,
the sequence the next slot's), whose headers (if any) hold no ``Nats-TTL`` (a subject the block
meets for the first time gets its id as the general loop gives it) — exactly what the general loop does with such a record, without its
Python steps — and stops at the first record that is anything else (damaged, a tombstone, a floor,
erased, compressed, a gap, a TTL, the end), which the general loop then takes. Its
slots go to lists first and join the block's columns once a run (an array's ``extend`` from a list
is one C pass). nats-server's ``rebuildStateLocked`` walks a block's records the same way.

Compiled, a crash restart of 100,000 records over 1,000 subjects costs ~8.8k instructions a record
of the whole reopen, ~19k with the general loop alone (callgrind); in pure Python the byte-by-byte
reads cost more than ``struct``'s, so ``blockindex.PLAIN_RUNS`` takes the runs only where compiled.

The record layout comes in as ``_records.SCAN_LAYOUT`` (the module imports only the standard
library: the compiled group is closed).
"""

from __future__ import annotations

import sys
from array import array
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    # A native 64-bit integer where compiled (mypyc); an ordinary int in pure Python (annotations
    # are never evaluated there).
    from mypy_extensions import i64

    #: (the record header's length, a record's overhead, the CRC residue, the largest record, the
    #: ``Nats-TTL`` key a header is searched for).
    Layout = tuple[int, int, int, int, bytes]

__all__ = ["WINDOW", "plain_run"]

#: The block's bytes are read in windows of this many bytes (copied out of the map: a ``bytes``'
#: fields are read natively where a mapped file's are not — a record's header in ~5 ns rather than
#: ~100 for ``struct``'s ``unpack_from`` —, and a window no larger stays out of the heap's top).
WINDOW = 1 << 16
_LITTLE = sys.byteorder == "little"
_L64 = array("L").itemsize == 8


def plain_run(
    buf: Any,
    off: int,
    state: list[int],
    cols: tuple[Any, Any, Any, Any, Any],
    own: dict[bytes, int],
    last_idx: list[int],
    new_subject: Callable[[bytes], int],
    layout: Layout,
    crc32: Callable[[bytes], int],
) -> int:
    """Take the plain message records of ``buf`` (a block's bytes, or its map) from ``off`` on into
    the columns ``cols`` (the block's ``sids, tss, sizes, locs, nxt``); return the offset of the
    first record not taken. ``state``: the general loop's ``[start, nslots, max_seq, cur_ts,
    size_base, size_hdr]``, its middle three updated; ``own``: the block's subjects' ids;
    ``last_idx``: each id's last slot (-1: none yet), updated; ``new_subject``: the id of a subject
    met first (``_BlockScan.subject_id``). Header fields (``<IBQqHI``) are read byte by byte."""
    hdr_len, overhead, residue, max_record, ttl_key = layout
    nxt = cols[4]
    n: i64 = len(buf)
    start: int = state[0]
    base: i64 = state[1]
    max_seq: int = state[2]
    cur_ts: int = state[3]
    size_base: i64 = state[4]
    size_hdr: i64 = state[5]
    at: i64 = off
    head: i64 = hdr_len
    least: i64 = overhead
    data = b""
    lo: i64 = 0  # the window is data = buf[lo:end]
    end: i64 = 0
    new: tuple[list[int], list[int], list[int], list[int], list[int]] = ([], [], [], [], [])
    new_sids, new_tss, new_sizes, new_locs, new_nxt = new
    count: i64 = 0
    while n - at >= least:
        if at + least > end:
            lo, data = at, buf[at : min(n, at + WINDOW)]
            end = lo + len(data)
        r: i64 = at - lo
        total: i64 = data[r] | data[r + 1] << 8 | data[r + 2] << 16 | data[r + 3] << 24
        if data[r + 4] or total < least or total > max_record or at + total > n:
            break  # (not a plain message — kind MSG is 0, and no flag —, or no whole record)
        if at + total > end:  # (the window ends inside it: a new one from here)
            lo, data, r = at, buf[at : min(n, at + max(WINDOW, total))], 0
            end = lo + len(data)
        seq: int = data[r + 5] | data[r + 6] << 8 | data[r + 7] << 16 | data[r + 8] << 24
        if data[r + 9] or data[r + 10] or data[r + 11] or data[r + 12]:
            seq = _u64(data, r + 5)  # (a sequence of 2**32 or more)
        if seq != max_seq + 1 or seq - start != base + count or crc32(data[r : r + total]) != residue:
            break  # (not the next slot's, or damaged)
        slen: i64 = data[r + 21] | data[r + 22] << 8
        hlen: i64 = data[r + 23] | data[r + 24] << 8 | data[r + 25] << 16 | data[r + 26] << 24
        subj_at: i64 = r + head
        if slen + hlen > total - least or (hlen and data.find(ttl_key, subj_at + slen, subj_at + slen + hlen) >= 0):
            break  # (fields past the record's end, which the general loop reads as they lie; a TTL)
        subj = data[subj_at : subj_at + slen]
        sid = own.get(subj)
        if sid is None:
            sid = new_subject(subj)
        new_sizes.append(size_base + total - least - hlen + (size_hdr + hlen if hlen else 0))
        ts: int = _i64(data, r + 13)
        new_sids.append(sid)
        new_tss.append(ts)
        new_locs.append(int(at) << 32 | int(total))  # (an int: an offset of 2 GiB or more)
        new_nxt.append(0)
        li: i64 = last_idx[sid]
        if li >= base:
            new_nxt[li - base] = seq
        elif li >= 0:
            nxt[li] = seq
        last_idx[sid] = base + count
        max_seq, cur_ts = seq, ts
        count += 1
        at += total
    if count:
        _join(cols, new)
        state[1], state[2], state[3] = base + count, max_seq, cur_ts
    return at


def _join(cols: tuple[Any, Any, Any, Any, Any], new: tuple[list[int], list[int], list[int], list[int], list[int]]) -> None:
    """A run's slots (lists) onto the block's columns (arrays), each in C passes."""
    sids, tss, sizes, locs, nxt = cols
    _extend_u32(sids, new[0])
    _extend_i64(tss, new[1])
    _extend_u32(sizes, new[2])
    _extend_u64(locs, new[3])
    _extend_u64(nxt, new[4])


def _u64_bytes(values: list[int]) -> memoryview:
    """The bytes of ``values`` (each in [0, 2**64)) as unsigned 64-bit integers, converted in one C
    pass: ``"L"`` where it is 64 bits wide (its items convert with ``PyLong_AsUnsignedLong``, a
    loop over the digits; ``"Q"``'s and ``"q"``'s go through ``_PyLong_AsByteArray`` or an
    argument parser in CPython 3.11, ~300-500 instructions a value)."""
    return memoryview(array("L" if _L64 else "Q", values)).cast("B")


def _extend_u32(col: Any, values: list[int]) -> None:
    """``col.extend(values)`` for an ``array("I")`` (values below 2**32, as every "I" item): the
    low halves (little-endian) of `_u64_bytes`'s items, in C passes."""
    if _L64 and _LITTLE:
        col.frombytes(_u64_bytes(values).cast("I")[::2].tobytes())
    else:
        col.extend(values)


def _extend_u64(col: Any, values: list[int]) -> None:
    """``col.extend(values)`` for an ``array("Q")``, its bytes `_u64_bytes`'s."""
    col.frombytes(_u64_bytes(values))


def _extend_i64(col: Any, values: list[int]) -> None:
    """``col.extend(values)`` for an ``array("q")``: through `_u64_bytes` where none is negative (the
    same bytes)."""
    if min(values) >= 0:
        col.frombytes(_u64_bytes(values))
    else:
        col.extend(values)


def _i64(data: bytes, at: i64) -> int:
    """The little-endian signed 64-bit integer at ``at`` (two native 32-bit halves)."""
    low: i64 = data[at] | data[at + 1] << 8 | data[at + 2] << 16 | data[at + 3] << 24
    high: i64 = data[at + 4] | data[at + 5] << 8 | data[at + 6] << 16 | data[at + 7] << 24
    if high >= 1 << 31:
        high -= 1 << 32
    if high:
        return int(high) << 32 | int(low)
    return int(low)


def _u64(data: bytes, at: i64) -> int:
    """The little-endian unsigned 64-bit integer at ``at`` (two native 32-bit halves)."""
    low: i64 = data[at] | data[at + 1] << 8 | data[at + 2] << 16 | data[at + 3] << 24
    high: i64 = data[at + 4] | data[at + 5] << 8 | data[at + 6] << 16 | data[at + 7] << 24
    if high:
        return int(high) << 32 | int(low)
    return int(low)
