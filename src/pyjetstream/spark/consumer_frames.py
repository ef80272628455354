"""A consumer's deliveries to Arrow columns with array operations: no Python step per row.

The consumer reader (`range_reader`) takes its deliveries as raw frames
(``Client.subscribe_frames``): buffers and each frame's header block and payload offsets, with the
frame's control line ``HMSG <subject> <sid> <reply> <hdr> <total>`` right before its header block.
`ConsumerFrames` keeps them as received and builds a batch's columns at once:

- the control lines are byte ranges (each ends two bytes before its header block and starts two
  after the previous frame's payload); Arrow splits them at the spaces: subject and reply subject;
- the reply subject is the delivery's ack subject, ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.
  <cseq>.<ts>.<pending>`` (nats-server's ``ackReply`` in consumer.go); Arrow splits it at the dots:
  the stream sequence and the store time (ns) as int64;
- the header block is the message's own (``NATS/1.0`` and its lines), the payload one slice.

A batch with a row in another shape (the ack subject's longer form with a domain and an account
hash, a line with other fields) is built row by row instead (`_parsed_rows`), so the result
is the same as the one-message-at-a-time reader's (`arrow_batch.MessageColumns`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pyjetstream.api import parse_ack_reply
from pyjetstream.spark.arrow_batch import (
    MessageColumns,
    byte_ranges,
    header_lines_array,
    header_ranges_array,
    join_chunks,
    record_batch,
    wants_headers,
)

__all__ = ["ConsumerFrames", "line_starts"]

_HEAD = b"NATS/1.0\r\n"
_NO_DROP: frozenset[str] = frozenset()
_ACK_TOKENS = 9  # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>


def line_starts(buf: bytes, h: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Where each frame's control line starts: after the previous frame's payload and CRLF, and for
    the first frame after the last LF before it (the end of whatever op came before)."""
    ls = np.empty(len(h), np.int64)
    if len(h):
        ls[0] = buf.rfind(b"\n", 0, int(h[0]) - 2) + 1
        ls[1:] = e[:-1] + 2
    return ls


class ConsumerFrames:
    """The deliveries of one batch as received: per chunk the buffer and the control-line start,
    header start, payload start and payload end of each message (statuses left out). ``last``: rows
    past this sequence (the range's end) are dropped when the batch is built."""

    __slots__ = ("chunks", "last", "n", "schema", "stream")

    def __init__(self, stream: str, schema: pa.Schema, last: int) -> None:
        self.stream = stream
        self.schema = schema
        self.last = last
        self.chunks: list[tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.n = 0

    def __len__(self) -> int:
        return self.n

    def add(self, buf: bytes, ls: np.ndarray, h: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        if len(h):
            self.chunks.append((buf, ls, h, s, e))
            self.n += len(h)

    def add_msg(self, subject: str, reply: str, raw_headers: bytes | None, data: bytes) -> None:
        """A delivery that came as a [`Msg`][] (one without headers): framed as it came, so it
        keeps its place in the batch."""
        hdr = raw_headers or b""
        line = b"HMSG %s 0 %s %d %d\r\n" % (subject.encode(), reply.encode(), len(hdr), len(hdr) + len(data))
        h = len(line)
        self.add(
            line + hdr + data,
            np.zeros(1, np.int64),
            np.array([h], np.int64),
            np.array([h + len(hdr)], np.int64),
            np.array([h + len(hdr) + len(data)], np.int64),
        )

    def to_batch(self) -> pa.RecordBatch:
        buf, ls, h, s, e = self._joined()
        if not len(h):
            return MessageColumns(self.stream, self.schema).to_batch()
        meta = _line_fields(byte_ranges(buf, ls, h - 2))
        if meta is None:
            return _parsed_rows(self.stream, self.schema, self.last, buf, ls, h, s, e)
        subjects, seqs, stamps = meta
        keep = seqs.to_numpy(zero_copy_only=False) <= self.last
        if not keep.all():
            mask = pa.array(keep)
            h, s, e = h[keep], s[keep], e[keep]
            subjects, seqs, stamps = subjects.filter(mask), seqs.filter(mask), stamps.filter(mask)
        subjects = subjects.cast(pa.string())
        headers = self._headers(buf, h, s) if wants_headers(self.schema) else None
        return record_batch(self.stream, self.schema, subjects, seqs, stamps, headers, byte_ranges(buf, s, e))

    def _headers(self, buf: bytes, h: np.ndarray, s: np.ndarray) -> pa.Array:
        """The ``headers`` column from each frame's header block (``h``..``s``; none when equal)."""
        typ = self.schema.field("headers").type
        size = s - h
        if (size == len(_HEAD) + 2).any():  # a header block with no line: an empty map, as a parse gives
            headers = pa.array(
                [_block_headers(buf[hi:si]) for hi, si in zip(h.tolist(), s.tolist(), strict=True)], typ
            )
        elif (size > 0).any():
            has = size > 0  # the lines after "NATS/1.0", each with its CRLF; none without a block
            own = byte_ranges(buf, np.where(has, h + len(_HEAD), h), np.where(has, s - 2, h))
            headers = header_ranges_array(own, typ, _NO_DROP)
            if headers is None:
                headers = header_lines_array(own, typ, _NO_DROP)
        else:
            headers = pa.nulls(len(h), typ)
        return headers

    def _joined(self) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """All chunks as one buffer and its offsets, control lines included."""
        buf, (ls, h, s, e) = join_chunks(self.chunks, 4)
        return buf, ls, h, s, e


def _line_fields(lines: pa.BinaryArray) -> tuple[pa.BinaryArray, pa.Int64Array, pa.Int64Array] | None:
    """Per frame, from its control line ``HMSG <subject> <sid> <reply> <hdr> <total>`` (``lines``, one
    row each; ``MSG <subject> <sid> <reply> <total>`` for a delivery without headers): the subject, and
    from the reply subject ``$JS.ACK.<stream>.<consumer>.<delivered>.
    <sseq>.<cseq>.<ts>.<pending>`` the stream sequence and the store time (ns), cast by Arrow — found
    with numpy over the positions of the spaces and dots in the lines' one data buffer. None when a
    line has not five spaces (four for a MSG), a reply subject not eight dots, or ``sseq``/``ts`` does not cast to
    int64 (the row-by-row parse takes the batch)."""
    n = len(lines)
    offs = np.frombuffer(lines.buffers()[1], np.int32)[lines.offset : lines.offset + n + 1].astype(np.int64)
    buf = lines.buffers()[2]
    a = np.frombuffer(buf, np.uint8)
    ls, le = offs[:-1], offs[1:]
    sp = np.flatnonzero(a == 32)
    k = np.searchsorted(sp, ls)
    fields = np.where(a[np.minimum(ls, len(a) - 1)] == 72, 5, 4)  # HMSG: a header size; MSG: none
    if ((np.searchsorted(sp, le) - k) != fields).any():
        return None
    reply_lo, reply_hi = sp[k + 2] + 1, sp[k + 3]
    dots = np.flatnonzero(a == 46)
    d = np.searchsorted(dots, reply_lo)
    if ((np.searchsorted(dots, reply_hi) - d) != _ACK_TOKENS - 1).any():
        return None
    try:
        seqs = byte_ranges(buf, dots[d + 4] + 1, dots[d + 5]).cast(pa.string()).cast(pa.int64())
        stamps = byte_ranges(buf, dots[d + 6] + 1, dots[d + 7]).cast(pa.string()).cast(pa.int64())
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
    return byte_ranges(buf, sp[k] + 1, sp[k + 1]), seqs, stamps


def _block_headers(block: bytes) -> list[tuple[str, list[str]]] | None:
    """One row's headers as the one-message reader gives them (``MessageColumns``)."""
    if not block:
        return None
    from pyjetstream.protocol import parse_headers

    try:
        return list(parse_headers(block).headers.items())
    except ValueError:
        return []


def _parsed_rows(
    stream: str,
    schema: pa.Schema,
    last: int,
    buf: bytes,
    ls: np.ndarray,
    h: np.ndarray,
    s: np.ndarray,
    e: np.ndarray,
) -> pa.RecordBatch:
    """The batch row by row, from each frame's control line and its ack subject's full parse."""
    cols = MessageColumns(stream, schema)
    for li, hi, si, ei in zip(ls.tolist(), h.tolist(), s.tolist(), e.tolist(), strict=True):
        parts = buf[li : hi - 2].split()
        meta = parse_ack_reply(parts[3].decode())
        if meta.stream_seq > last:
            continue
        cols.append(parts[1].decode(), meta.stream_seq, int(meta.timestamp), buf[hi:si] or None, buf[si:ei])
    return cols.to_batch()
