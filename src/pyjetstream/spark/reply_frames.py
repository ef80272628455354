"""Batched direct get replies to Arrow columns with array operations: no Python step per row.

The replies arrive as raw frames (``Client.subscribe_frames``: buffers and the offsets of each
frame's header block and payload). `ReplyFrames` keeps them as received and builds a batch's
columns at once:

- nats-server ends every reply's header block with the same lines in the same order
  (`DIRECT_BATCH_TAIL`: ``dgb`` in stream.go, after the message's own
  headers), so the last eight CRs before a payload mark those lines: found for every row with one
  ``==`` over the bytes and a ``searchsorted``, checked label by label with array compares;
- each field (subject, sequence, time stamp, the own header lines, the payload) is a byte range per
  row; Arrow gathers the ranges of a column into one array (a binary array over the received bytes
  whose values alternate field, gap, field …, then ``take`` of every other value) and converts it
  (string, int64, timestamp) in C++.

A batch with a row that is not in that layout (a server that writes the headers another way) is
built row by row from a full header parse instead (`_parsed_batch`), so the result is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from pyjetstream.api.headers import DIRECT_BATCH_TAIL, SEQUENCE, SUBJECT, TIME_STAMP
from pyjetstream.protocol import parse_headers
from pyjetstream.spark.arrow_batch import (
    byte_ranges,
    header_lines_array,
    join_chunks,
    record_batch,
    wants_headers,
)

__all__ = ["ReplyFrames"]

_HEAD = b"NATS/1.0\r\n"
_TAIL_LINES = len(DIRECT_BATCH_TAIL) + 2
_EIGHT = np.arange(8)  # the tail's lines, the blank line, and the line before them


class ReplyFrames:
    """The direct get replies of one batch as received: per chunk the buffer and the header start,
    payload start and payload end of each message (statuses left out). ``last``: rows past this
    sequence (a range's end, reached over deleted sequences) are dropped when the batch is built."""

    __slots__ = ("chunks", "drop", "last", "n", "schema", "stream")

    def __init__(self, stream: str, schema: pa.Schema, drop: frozenset[str], last: int) -> None:
        self.stream = stream
        self.schema = schema
        self.drop = drop
        self.last = last
        self.chunks: list[tuple[bytes, np.ndarray, np.ndarray, np.ndarray]] = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, buf: bytes, heads: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        if len(heads):
            self.chunks.append((buf, heads, starts, ends))
            self.n += len(heads)

    def to_batch(self) -> pa.RecordBatch:
        buf, h, s, e = self._joined()
        cols = _tail_columns(buf, h, s, self.stream)
        if cols is None:
            return _parsed_batch(self.stream, self.schema, self.drop, self.last, buf, h, s, e)
        subjects, seqs, stamps, own_end = cols
        seq = seqs.to_numpy(zero_copy_only=False)
        if len(seq) and seq[-1] > self.last:  # replies come in sequence order
            keep = int(np.searchsorted(seq, self.last, side="right"))
            h, s, e, own_end = h[:keep], s[:keep], e[:keep], own_end[:keep]
            subjects, seqs, stamps = subjects[:keep], seqs[:keep], stamps[:keep]
        headers = None
        if wants_headers(self.schema):
            typ = self.schema.field("headers").type
            own = own_end > h + len(_HEAD)
            if own.any():
                headers = header_lines_array(byte_ranges(buf, h + len(_HEAD), own_end), typ, self.drop)
            else:
                headers = pa.nulls(len(h), typ)
        return record_batch(self.stream, self.schema, subjects, seqs, stamps, headers, byte_ranges(buf, s, e))

    def _joined(self) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
        """All chunks as one buffer and its offsets."""
        buf, (h, s, e) = join_chunks(self.chunks, 3)
        return buf, h, s, e


def _tail_columns(
    buf: bytes, h: np.ndarray, s: np.ndarray, stream: str
) -> tuple[pa.Array, pa.Array, pa.Array, np.ndarray] | None:
    """Subject (string), sequence (int64) and store time (int64 ns) of every row from the direct get
    lines at the end of its header block, and where its own header lines end; None when a row's
    block does not end in that layout."""
    n = len(h)
    if not n:
        empty = pa.array([], pa.int64())
        return pa.array([], pa.string()), empty, empty, np.empty(0, np.int64)
    a = np.frombuffer(buf, np.uint8)
    cr = np.flatnonzero(a == 13)
    k = np.searchsorted(cr, s)  # cr[k-1] is the blank line's CR (s - 2)
    if int(k.min()) < _TAIL_LINES:
        return None
    # line_end[j]: the CR ending the j-th line counted from the blank line (0) backwards.
    line_end = [cr[k - 1 - j] for j in range(_TAIL_LINES)]
    before = line_end[-1]  # ends the line before the tail ("NATS/1.0" or the last own header)
    ok = (line_end[0] == s - 2) & (before >= h + len(_HEAD) - 2)
    labels = [f"{name}: ".encode() for name in DIRECT_BATCH_TAIL]
    labels[0] = f"{DIRECT_BATCH_TAIL[0]}: {stream}\r\n".encode()  # the stream line, whole
    # The "NATS/1.0" line, then each label at its line's start: its first eight bytes (as one
    # 64-bit word: they tell the six labels apart) and the rest of it.
    at = [h] + [line_end[_TAIL_LINES - 1 - i] + 2 for i in range(len(labels))]
    texts = [_HEAD, *labels]
    for p, t in zip(at, texts, strict=True):
        word = np.frombuffer(t[:8], np.uint64)[0]
        ok &= a[np.minimum(p[:, None] + _EIGHT, len(a) - 1)].view(np.uint64)[:, 0] == word
        if len(t) > 8:
            rest = np.frombuffer(t[8:], np.uint8)
            ok &= (a[np.minimum(p[:, None] + (8 + np.arange(len(rest))), len(a) - 1)] == rest).all(axis=1)
    for i, label in enumerate(labels[1:], 1):  # a value of one byte or more
        ok &= line_end[_TAIL_LINES - 2 - i] > at[i + 1] + len(label)
    ok &= a[np.minimum(line_end[0] + 1, len(a) - 1)] == 10
    for j in range(1, _TAIL_LINES):
        ok &= a[line_end[j] + 1] == 10
    if not ok.all():
        return None
    field = {name: i for i, name in enumerate(DIRECT_BATCH_TAIL)}

    def value(name: str) -> pa.BinaryArray:
        i = field[name]
        start = line_end[_TAIL_LINES - 1 - i] + 2 + len(name) + 2
        return byte_ranges(buf, start, line_end[_TAIL_LINES - 2 - i])

    try:
        subjects = value(SUBJECT).cast(pa.string())
        seqs = value(SEQUENCE).cast(pa.string()).cast(pa.int64())
        stamps = value(TIME_STAMP).cast(pa.string()).cast(pa.timestamp("ns", "UTC")).cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return subjects, seqs, stamps, before + 2


def _parsed_batch(
    stream: str,
    schema: pa.Schema,
    drop: frozenset[str],
    last: int,
    buf: bytes,
    h: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
) -> pa.RecordBatch:
    """The batch from a full header parse of each reply (a layout `_tail_columns` does not know)."""
    subjects: list[str] = []
    seqs: list[int] = []
    stamps: list[str] = []
    headers: list[Any] = []
    data: list[bytes] = []
    for hi, si, ei in zip(h.tolist(), s.tolist(), e.tolist(), strict=True):
        block = parse_headers(buf[hi:si])
        seq = int(block.get(SEQUENCE) or "0")
        if seq > last:
            break
        subjects.append(block.get(SUBJECT) or "")
        seqs.append(seq)
        stamps.append(block.get(TIME_STAMP) or "")
        own = [(k, v) for k, v in block.headers.items() if k not in drop]
        headers.append(own or None)
        data.append(buf[si:ei])
    ts = pa.array(stamps, pa.string()).cast(pa.timestamp("ns", "UTC")).cast(pa.int64())
    return record_batch(
        stream,
        schema,
        pa.array(subjects, pa.string()),
        pa.array(seqs, pa.int64()),
        ts,
        headers,
        pa.array(data, pa.binary()),
    )
