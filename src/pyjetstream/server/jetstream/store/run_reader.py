"""The file store's read-ahead loop (`BlockFiles.read_run`), compiled with mypyc
(``pyjetstream._compiled``): a consumer's delivery pass reads its next messages in runs, and per
message this loop was the largest part of a delivery's CPU (a push consumer on ``pc.>`` over 2,000
subjects, in process: 0.43 of ~0.8 µs per delivered message in pure Python).

Per message: the index page's columns (bound once per page), the record unpacked and its header
and payload sliced in a read-ahead window — a sealed block's (``BlockFiles.window``: its file read
ahead, nats-server's ``loadMsgs`` cache) or the active block's (a copy of its mirror from the first
record read there) — and the message's tuple. A record that fails a check (length, sequence, a
flag, the CRC of a block not written by this process) or is compressed goes to
``BlockFiles.read_checked`` (which decompresses it or notes it damaged).

The record layout comes in as ``BlockFiles.RUN_LAYOUT`` (``_records`` is its one place), and the
module imports only the standard library (the compiled group is closed). `find_in_span` (a
random get's search for its record in a span of its block, ``BlockFiles._spanned``) is here to be
compiled too: ~1.2 µs of a ~5 µs random get over 10M messages in pure Python, ~0.85 compiled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    # A native 64-bit integer where compiled (mypyc); named in annotations alone, which pure Python
    # never evaluates (``from __future__ import annotations``): an ordinary int there.
    from mypy_extensions import i64

__all__ = ["find_in_span", "read_records"]

#: The active block's window covers every sequence from its first record on.
_NO_END = 1 << 62

#: A sparse run's window of the active block (fewer than a quarter of the sequences it spans: a
#: wildcard consumer's tenth, a redelivery run) reaches from the record to the last of the run's
#: next records lying within about this many bytes of it (judged by the record's length), where it
#: was the record alone: a consumer on a tenth of the subjects paid a ``mirror_window`` call per
#: message (~1.2 µs of a ~2.5 µs read), now one per ~4 KiB. Records farther apart are still copied
#: one by one (a redelivery run's: no span between them). 0 turns it off (the record alone).
SPARSE_REACH = 4096


def read_records(
    files: Any,
    seqs: list[int],
    layout: tuple[Callable[[bytes, int], tuple[int, int, int, int, int, int]], int, int, int, int, int],
    crc32: Callable[[bytes], int],
) -> list[tuple[str, int, int, bytes, bytes]]:
    """The messages at ``seqs`` (ascending; those not there are skipped) of the `BlockFiles`
    ``files`` as ``(subject, seq, ts, hdr, payload)`` tuples. ``layout``: (the record header's
    ``unpack_from``, its length, the CRC's length, the CRC residue, the flags read elsewhere, the
    locator's length mask); ``crc32``: the checksum (``zlib.crc32``; a test counts its calls)."""
    unpack, hdr_len, crc_len, residue, not_plain, len_mask = layout
    index = files.index
    names: list[str] = index.subjects.names
    active: int = files.active_first()
    n = len(seqs)
    last = seqs[n - 1] if n else 0
    act_ours: bool = files.trust_own and files.blocks[-1].ours
    # The window last filled: its block's sequences [ra_lo, ra_hi), its bytes [ra_off, ra_end).
    ra_lo = ra_hi = ra_off = ra_end = 0
    ra_data = b""
    ra_ours = False
    out: list[tuple[str, int, int, bytes, bytes]] = []
    lo = hi = 0
    sids: Any = None
    tss: Any = None
    locs: Any = None
    seq: int
    for k in range(n):
        seq = seqs[k]
        if not lo <= seq < hi:
            p = index.page(seq)
            if p is None:
                continue
            lo = p.first
            hi = lo + p.n
            sids, tss, locs = p.sids, p.tss, p.locs
        i = seq - lo
        sid: int = sids[i]
        if not sid:
            continue
        loc: int = locs[i]
        off = loc >> 32
        plen = loc & len_mask
        if not (ra_lo <= seq < ra_hi and ra_off <= off and off + plen <= ra_end):
            if seq >= active:
                # (to the run's last record there; where the run's sequences are sparse — fewer
                # than a quarter of those it spans, as a redelivery run's —, to the last of its
                # next ones within `SPARSE_REACH` bytes: `_within_reach`)
                if last - seq < 4 * (n - k):
                    ra_data = files.mirror_window(off, plen, last)
                else:
                    to = _within_reach(seqs, k, n, SPARSE_REACH // plen)
                    ra_data = files.mirror_window(off, plen, to, SPARSE_REACH)
                ra_lo, ra_hi, ra_off, ra_ours = active, _NO_END, off, act_ours
            else:
                window = files.window(seq, off, plen)
                if window is None:  # (cut short since it was indexed: noted damaged)
                    continue
                ra_lo, ra_hi, ra_off, ra_data, ra_ours = window
            ra_end = ra_off + len(ra_data)
        at = off - ra_off
        total, kind, rseq, _ts, slen, hlen = unpack(ra_data, at)
        subject = names[sid]
        if total != plen or rseq != seq or kind & not_plain or (not ra_ours and crc32(ra_data[at : at + plen]) != residue):
            got = files.read_checked(seq, loc)
            if got is not None:
                out.append((subject, seq, tss[i], got[0], got[1]))
            continue
        body_at = at + hdr_len + slen
        end = at + plen - crc_len
        if hlen:
            hdr_end = body_at + hlen
            out.append((subject, seq, tss[i], ra_data[body_at:hdr_end], ra_data[hdr_end:end]))
        else:
            out.append((subject, seq, tss[i], b"", ra_data[body_at:end]))
    return out


def _within_reach(seqs: list[int], k: int, n: int, reach: int) -> int:
    """The last of ``seqs[k:n]`` at most ``reach`` sequences past ``seqs[k]`` (``seqs[k]`` itself
    when none is): where a sparse run's window of the active block ends."""
    limit = seqs[k] + reach
    j = k + 1
    while j < n and seqs[j] <= limit:
        j += 1
    return seqs[j - 1]


def find_in_span(
    data: bytes,
    seq: int,
    lo: i64,
    hi: i64,
    layout: tuple[Callable[[bytes, int], tuple[int, int, int, int, int, int]], int, int, int, int, int],
    crc32: Callable[[bytes], int],
) -> tuple[bytes, int, int, int, int, int] | None:
    """The checked message record of ``seq`` in ``data[lo:hi]`` (a span of a block, or the
    block's bytes kept whole: no copy of the span), ``(its bytes, kind, timestamp, subject
    length, header length, its offset in data)``, None when not there. Found by walking the
    records from ``lo`` — a record's start, the span's — by their lengths (each one's first four
    bytes, little-endian, none shorter than a record's overhead nor reaching past ``hi``) to the
    one whose header holds ``seq`` at ``seq_at`` (its low byte compared first), then its kind and
    CRC checked. Only a record the records from ``lo`` lead to is taken: a payload can hold a
    whole valid record of another sequence, CRC and all (a get would answer the copy's bytes; a
    removal, which erases the record where it is found, would overwrite the other message).
    nats-server's ``indexCacheBuf`` walks a block's records so to know where each one starts.

    Compiled with ``i64`` offsets (native integers; tagged ones cost an operation per byte taken
    and per shift), a random get over 10M messages walks ~32 records of its span. Before, the
    sequence's 8 bytes were looked for with ``find`` from near a guess of the record's place, then
    the records from ``lo`` walked to prove the one found: ~10,400 instructions a get for the
    search, ~4,800 now (callgrind). ``layout`` (``_records.SPAN_LAYOUT``): (the record header's
    ``unpack_from``, its length, the smallest record's length, the kinds and flags of records
    that are not a message's, the CRC residue, where the sequence lies in the header)."""
    unpack, hdr_len, overhead, not_msg, residue, seq_at = layout
    head: i64 = hdr_len
    least: i64 = overhead
    where: i64 = seq_at
    low: i64 = seq & 0xFF
    at: i64 = lo
    while at + head <= hi:
        total: i64 = data[at] | data[at + 1] << 8
        if data[at + 2] or data[at + 3]:  # (a record of 64 KiB or more)
            total |= data[at + 2] << 16 | data[at + 3] << 24
        if total < least or at + total > hi:
            return None
        if data[at + where] == low:
            _total, kind, rseq, ts, slen, hlen = unpack(data, at)
            if rseq == seq and not kind & not_msg:
                rec = data[at : at + total]
                if crc32(rec) == residue:
                    return rec, kind, ts, slen, hlen, at
        at += total
    return None
