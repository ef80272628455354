"""On-disk format of message block files (``msgs/<n>.blk``) and the record scanner.

Block file:

    header  magic "PJSB" | version u8 | 3 pad | first_seq u64 | crc32 u32      (20 bytes)
    record* total_len u32 | kind u8 | seq u64 | ts i64 | subj_len u16 | hdr_len u32
            | subject | body | crc32 u32                                     (31 + body)

All integers little-endian; the crc32 covers the record from ``total_len`` to the end of the
body, so a torn or flipped record is detected. ``kind`` is a record kind in the low nibble
plus flags:

* ``MSG``     body = headers + payload (``hdr_len`` = header length). With ``COMPRESSED``
  the body is one Snappy block of headers + payload (see ``_compress``).
  With ``ERASED`` the record was overwritten in place with random bytes (secure delete).
* ``DELETE``  a tombstone for ``seq`` (body empty) or for ``[seq, seq + n)`` (body = n u64).
  A removal's tombstone goes into the block that is active when it is removed, as
  nats-server's does (a per-subject trim's and a secure erase's into the block that owns the
  sequence); a block's tombstones for earlier blocks' sequences (its "priors") are kept by its
  compaction and keep it from being unlinked while an earlier block still holds the record
  (``blockfiles``, ``compaction``); a skipped sequence is a tombstone in the block that was
  active when it was skipped.
* ``FLOOR``   every sequence below ``seq`` is gone (purge, compact, expiry, limits, removal of
  the first message). Always written to the active block; the newest floor wins.

The first sequence a block can hold is in its header, so an empty block still records where
the stream's sequence stands (last_seq = first_seq - 1) after a purge.
"""

from __future__ import annotations

import functools
import mmap
import os
import re
import struct
import zlib
from collections.abc import Iterator
from itertools import chain, repeat
from typing import NamedTuple

BLOCK_MAGIC = b"PJSB"
BLOCK_VERSION = 1
BLOCK_HDR = struct.Struct("<4sB3xQ")
BLOCK_HDR_LEN = BLOCK_HDR.size + 4

REC_HDR = struct.Struct("<IBQqHI")
REC_HDR_LEN = REC_HDR.size  # 27
CRC_LEN = 4
REC_OVERHEAD = REC_HDR_LEN + CRC_LEN  # 31
# zlib.crc32 over a record *including* its little-endian crc32 trailer always gives this
# residue, so a record is verified with one call and no slicing.
CRC_RESIDUE = 0x2144DF1C
# Records larger than this are refused (and lengths above it are treated as corruption).
MAX_RECORD = 1 << 30

KIND_MSG = 0
KIND_DELETE = 1
KIND_FLOOR = 2
KIND_MASK = 0x0F
FLAG_COMPRESSED = 0x10
FLAG_ERASED = 0x20

_U64 = struct.Struct("<Q")
# Every kind byte a record can carry (the resync's first test of an offset).
_KINDS = frozenset(
    k | f for k in (KIND_MSG, KIND_DELETE, KIND_FLOOR) for f in (0, FLAG_COMPRESSED, FLAG_ERASED)
)


@functools.lru_cache(maxsize=8)
def _candidates(top: int) -> re.Pattern[bytes]:
    """Offsets where a record could start in a buffer shorter than ``(top + 1) << 24`` bytes: a
    length whose low three bytes are not all zero and whose top byte is at most ``top``, then a
    kind byte. One C search per candidate, where a Python
    step per byte cost ~10x more (`resync`); zero runs, text and JSON give almost none."""
    kinds = b"".join(re.escape(bytes([k])) for k in sorted(_KINDS))
    return re.compile(
        rb"(?:[\x01-\xff][\x00-\xff]{2}|\x00[\x01-\xff][\x00-\xff]|\x00\x00[\x01-\xff])"
        + b"[\\x00-\\x%02x][" % top
        + kinds
        + b"]",
        re.DOTALL,
    )


#: The key of a header that carries a message's TTL (after a line's end: never the first line).
TTL_KEY = b"\r\nNats-TTL:"
# The kind `scan_records` yields for a run of damaged bytes it stepped over.
DAMAGED = -1
_pack_rec = REC_HDR.pack
_crc32 = zlib.crc32
_pack_crc = struct.Struct("<I").pack  # (a CRC's 4 bytes, as ``int.to_bytes(4, "little")``)


def encode_block_header(first_seq: int) -> bytes:
    head = BLOCK_HDR.pack(BLOCK_MAGIC, BLOCK_VERSION, first_seq)
    return head + _crc32(head).to_bytes(4, "little")


def decode_block_header(buf: bytes | mmap.mmap) -> int | None:
    """The block's first sequence, or None if the header is missing or damaged."""
    if len(buf) < BLOCK_HDR_LEN:
        return None
    head = buf[: BLOCK_HDR.size]
    if _crc32(head) != int.from_bytes(buf[BLOCK_HDR.size : BLOCK_HDR_LEN], "little"):
        return None
    magic, version, first_seq = BLOCK_HDR.unpack(head)
    if magic != BLOCK_MAGIC or version != BLOCK_VERSION:
        return None
    return int(first_seq)


def append_record(
    out: bytearray, kind: int, seq: int, ts: int, subject: bytes, hdr_len: int, body: bytes
) -> int:
    """Append one record to ``out``; return its length. ``body`` excludes the subject."""
    total = REC_OVERHEAD + len(subject) + len(body)
    head = _pack_rec(total, kind, seq, ts, len(subject), hdr_len)
    crc = _crc32(body, _crc32(subject, _crc32(head)))
    out += head
    out += subject
    out += body
    out += crc.to_bytes(4, "little")
    return total


def tombstone(seq: int, num: int, ts: int) -> bytes:
    """A DELETE record for ``[seq, seq + num)``. One sequence (a trim's, every put of a KV-shaped
    stream) is its header and the header's CRC (the empty subject and body leave it as it is),
    packed at once: `append_record`'s general way was ~1.2 µs a tombstone."""
    if num == 1:
        head = _pack_rec(REC_OVERHEAD, KIND_DELETE, seq, ts, 0, 0)
        return head + _crc32(head).to_bytes(4, "little")
    out = bytearray()
    append_record(out, KIND_DELETE, seq, ts, b"", 0, _U64.pack(num))
    return bytes(out)


def tombstones(seqs: list[int]) -> bytes:
    """`tombstone` ``(seq, 1, 0)`` of each of ``seqs``, joined: the same bytes, made in C-speed
    passes (the headers packed by ``map``, their CRCs by ``map``) — a run of per-subject trims
    (every put of a KV-shaped stream removes one message) without two Python calls per record."""
    heads = list(map(_pack_rec, repeat(REC_OVERHEAD), repeat(KIND_DELETE), seqs, repeat(0), repeat(0), repeat(0)))
    crcs = map(_pack_crc, map(_crc32, heads))
    return b"".join(chain.from_iterable(zip(heads, crcs, strict=True)))


def floor_record(seq: int, ts: int) -> bytes:
    out = bytearray()
    append_record(out, KIND_FLOOR, seq, ts, b"", 0, b"")
    return bytes(out)


def erased_record(seq: int, length: int) -> bytes:
    """A record of exactly ``length`` bytes marking ``seq`` erased, body random."""
    out = bytearray()
    append_record(out, KIND_MSG | FLAG_ERASED, seq, 0, b"", 0, os.urandom(length - REC_OVERHEAD))
    return bytes(out)


def delete_count(buf: bytes | memoryview | mmap.mmap, off: int, total: int) -> int:
    return 1 if total == REC_OVERHEAD else int(_U64.unpack_from(buf, off + REC_HDR_LEN)[0])


class Rec(NamedTuple):
    off: int
    total: int
    kind: int
    seq: int
    ts: int
    slen: int
    hlen: int


class ScanEnd(NamedTuple):
    """How a scan ended: ``good_end`` is where valid data stops (truncate there)."""

    good_end: int
    skipped: list[tuple[int, int]]  # (offset, length) of damaged records stepped over


def _valid_at(buf: bytes | mmap.mmap, off: int, n: int) -> int:
    """Length of a valid record at ``off``, or 0."""
    if n - off < REC_OVERHEAD:
        return 0
    total = int.from_bytes(buf[off : off + 4], "little")
    if total < REC_OVERHEAD or total > MAX_RECORD or off + total > n:
        return 0
    end = off + total - CRC_LEN
    if _crc32(buf[off:end]) != int.from_bytes(buf[end : end + CRC_LEN], "little"):
        return 0
    return total


def resync(buf: bytes | mmap.mmap, off: int, n: int) -> int:
    """Where the next valid record after a damaged one at ``off`` starts (``n``: none does).

    Where the damaged record's length still leads to a valid record that is it (a flipped
    payload byte, a torn in-place erase); otherwise every later offset is tried — a record is
    recognised by a plausible length and kind, then its checksum — so a flipped length field
    costs the records the flip hit, not the rest of the block (nats-server ``rebuildStateLocked``
    cuts the block at the first bad record)."""
    if n - off >= REC_OVERHEAD:
        total = int.from_bytes(buf[off : off + 4], "little")
        if REC_OVERHEAD <= total <= MAX_RECORD and off + total < n and _valid_at(buf, off + total, n):
            return off + total
    search = _candidates(min(n >> 24, MAX_RECORD >> 24)).search
    at = off + 1
    while True:
        m = search(buf, at, n)
        if m is None or m.start() > n - REC_OVERHEAD:
            return n
        at = m.start()
        total = int.from_bytes(buf[at : at + 4], "little")
        if REC_OVERHEAD <= total <= n - at and _valid_at(buf, at, n):
            return at
        at += 1


def next_record(
    buf: bytes | mmap.mmap, mv: memoryview, off: int, n: int, skipped: list[tuple[int, int]]
) -> tuple[int, int, int, int, int, int, int] | None:
    """The valid record at ``off`` as `Rec` fields, or the damaged bytes from ``off`` to the next
    valid record (`resync`) as ``(offset, length, DAMAGED, 0, 0, 0, 0)``, also appended to
    ``skipped``; None where no valid record follows (the end, or a torn tail: the block is cut
    at ``off``). ``mv``: a memoryview of ``buf``. One step of `scan_records`, which a block scan
    takes where its plain run (``scan_run.plain_run``) stops."""
    if n - off < REC_OVERHEAD:
        return None
    total, kind, seq, ts, slen, hlen = REC_HDR.unpack_from(buf, off)
    if total < REC_OVERHEAD or total > MAX_RECORD or off + total > n or _crc32(mv[off : off + total]) != CRC_RESIDUE:
        nxt = resync(buf, off, n)
        if nxt >= n:
            return None
        skipped.append((off, nxt - off))
        return off, nxt - off, DAMAGED, 0, 0, 0, 0
    return off, total, kind, seq, ts, slen, hlen  # a plain tuple: ~2x cheaper than Rec


def scan_records(
    buf: bytes | mmap.mmap, start: int, end_info: list[ScanEnd]
) -> Iterator[tuple[int, int, int, int, int, int, int]]:
    """Yield the valid records of a block body as `Rec` fields; append a ScanEnd to
    ``end_info`` at the end.

    A damaged record is stepped over to the next valid one (`resync`), and yielded as
    ``(offset, length, DAMAGED, 0, 0, 0, 0)`` — the bytes stepped over — so the caller knows
    which sequences fell between the records on either side. Where no valid record follows,
    the block is cut there (a torn tail from a crash mid-write, or a block cut short).
    """
    n = len(buf)
    off = start
    skipped: list[tuple[int, int]] = []
    mv = memoryview(buf)
    while (rec := next_record(buf, mv, off, n, skipped)) is not None:
        yield rec
        off = rec[0] + rec[1]
    end_info.append(ScanEnd(off, skipped))


def first_msg_seq(buf: bytes | mmap.mmap, off: int, n: int) -> int | None:
    """The sequence of the first message record among the valid records from ``off`` on (None:
    none before the next damage or the end) — where a run of damaged bytes stops naming lost
    sequences."""
    while off < n:
        total = _valid_at(buf, off, n)
        if not total:
            return None
        _total, kind, seq, _ts, _slen, _hlen = REC_HDR.unpack_from(buf, off)
        if kind & KIND_MASK == KIND_MSG:
            return int(seq)
        off += total
    return None


_NOT_MSG = KIND_MASK | FLAG_ERASED  # a record that is not a message's
_SEQ_AT = 5  # where a record's sequence lies in its header (after its length and kind)
#: The record layout's constants a span's search takes (`run_reader.find_in_span`, compiled:
#: it imports only the standard library, so the layout comes in as this, as ``BlockFiles.RUN_LAYOUT`` does).
SPAN_LAYOUT = (REC_HDR.unpack_from, REC_HDR_LEN, REC_OVERHEAD, _NOT_MSG, CRC_RESIDUE, _SEQ_AT)
#: What a block scan's run of plain messages takes (`scan_run.plain_run`, compiled, as above; it
#: reads `REC_HDR`'s fields itself): the record header's length, a record's overhead, the CRC
#: residue, the largest record, the key of a header that carries a TTL (``Nats-TTL``).
SCAN_LAYOUT = (REC_HDR_LEN, REC_OVERHEAD, CRC_RESIDUE, MAX_RECORD, TTL_KEY)
