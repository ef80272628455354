"""Read one sequence range of a stream with batched direct get: the fast path of a partition.

One ``$JS.API.DIRECT.GET.<stream>`` request ``{"seq": cursor+1, "batch": n, "next_by_subj": f}``
brings up to ``n`` stored messages (deleted and purged sequences skipped, only subject ``f``'s
if a filter is given), each as a reply carrying ``Nats-Sequence`` / ``Nats-Subject`` /
``Nats-Time-Stamp``, then a ``204 EOB`` status with ``Nats-Num-Pending`` (what matches after the
last one sent). No consumer is created, nothing is left behind on the server. This mirrors
nats-server's ``getDirectRequest`` batch mode (2.11, API level 1); the stream must have
``allow_direct``. `partition` decides when this reader serves a read.

The read stops when a message past the range's last sequence arrives (dropped), the range's
last sequence was read, the server says nothing more matches (``Nats-Num-Pending: 0`` or
``404``). The ``headers`` column is the message's own headers, without those direct get adds.

The replies come as raw frames ([`Client.subscribe_frames`][pyjetstream.client.connection.Client.subscribe_frames] with the parser's array run finder
`hmsg_run`: every frame of a received chunk in one call, as
offset arrays, no step per frame); they are kept as received (`reply_frames.ReplyFrames`)
and a batch's columns are built from the bytes with array operations when Spark takes it. Per chunk
the reader only tells statuses from messages (one array compare) and reads the last message's
sequence (one regex match), which moves the cursor and tells whether the range's end was passed.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import numpy as np
import pyarrow as pa

from pyjetstream.api import MsgGetRequest, encode
from pyjetstream.api.headers import LAST_SEQUENCE, NUM_PENDING, SEQUENCE, STREAM, SUBJECT, TIME_STAMP
from pyjetstream.client import Client, Subscription
from pyjetstream.protocol import parse_headers
from pyjetstream.protocol.frame_scan import hmsg_run
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions
from pyjetstream.spark.range_cursor import RangeCursor
from pyjetstream.spark.reply_frames import ReplyFrames

__all__ = ["DIRECT_GET_HEADERS", "DirectRangeReader"]

# The headers direct get adds to a stored message (nats-server's ``JSStream`` … ``JSNumPending``).
DIRECT_GET_HEADERS = frozenset({STREAM, SUBJECT, SEQUENCE, TIME_STAMP, LAST_SEQUENCE, NUM_PENDING})


def _direct_tail(stream: str) -> bytes:
    """The headers nats-server's batched direct get puts on every reply, in its order (``dgb`` in
    stream.go; appended with ``genHeader`` after a message's own headers): subject, sequence and
    time stamp captured."""
    return (
        STREAM.encode() + b": " + re.escape(stream.encode()) + b"\r\n"
        + SUBJECT.encode() + b": ([^\r\n]+)\r\n"
        + SEQUENCE.encode() + b": ([0-9]+)\r\n"
        + TIME_STAMP.encode() + b": ([^\r\n]+)\r\n"
        + NUM_PENDING.encode() + b": [0-9]+\r\n"
        + LAST_SEQUENCE.encode() + b": [0-9]+\r\n\r\n"
    )  # fmt: skip


def _reply_block(stream: str) -> re.Pattern[bytes]:
    """The header block of a reply: the message's own header lines (group 1, empty if it has none),
    then the direct get ones."""
    return re.compile(b"NATS/1\\.0\r\n((?:[^\r\n]*\r\n)*?)" + _direct_tail(stream))


class DirectRangeReader:
    """Reads ``first <= seq <= last`` of ``stream`` (optionally one subject filter) into Arrow batches
    on an open connection ``nc`` (the caller owns it), asking ``request_subject`` (the stream's
    ``DIRECT.GET`` subject)."""

    def __init__(
        self,
        nc: Client,
        request_subject: str,
        opts: JetStreamOptions,
        stream: str,
        first: int,
        last: int,
        subject: str,
        schema: pa.Schema,
    ) -> None:
        self.nc = nc
        self.opts = opts
        self.stream = stream
        self.subject = subject
        self.cursor = RangeCursor(first, last, lambda: ReplyFrames(stream, schema, DIRECT_GET_HEADERS, last))
        self._request_subject = request_subject
        self._match = _reply_block(stream).fullmatch
        self._sub: Subscription | None = None
        self._inbox = ""
        self._reply_done: asyncio.Event | None = None
        self._received = 0
        self._pending = False  # a request is out
        self._error: Exception | None = None

    async def open(self) -> None:
        self._reply_done = asyncio.Event()
        self._inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe_frames(self._inbox, self._on_frames, scan=hmsg_run)

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None and not self.nc.is_closed:
            try:
                await sub.unsubscribe()
            except Exception:
                pass

    async def next_batch(self) -> pa.RecordBatch | None:
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted. The next request goes
        out before this batch is handed over, so the server sends while Spark consumes."""
        cur = self.cursor
        if not cur.done:
            if not self._pending:
                self._send()
            await self._wait()
        batch = cur.take()
        if batch is not None and not cur.done:
            self._send()
        return batch

    def _send(self) -> None:
        assert self._reply_done is not None
        self._reply_done.clear()
        self._received = 0
        self._pending = True
        cur = self.cursor
        batch = min(self.opts.batch_size, cur.remaining)
        request = MsgGetRequest(seq=cur.cursor + 1, next_by_subj=self.subject, batch=batch)
        self.nc.publish_nowait(self._request_subject, encode(request), reply=self._inbox)

    async def _wait(self) -> None:
        assert self._reply_done is not None
        try:
            await asyncio.wait_for(self._reply_done.wait(), self.opts.connect.request_timeout)
        except TimeoutError:
            raise JetStreamSparkError(
                f"reading stream {self.stream!r}: batch direct get from sequence {self.cursor.cursor + 1} "
                f"timed out after {self.opts.connect.request_timeout}s"
            ) from None
        finally:
            self._pending = False
        if self._error is not None:
            raise self._error
        cur = self.cursor
        if cur.cursor >= cur.last:
            cur.done = True

    def _on_frames(self, buf: bytes, offsets: Any) -> None:
        """A run of replies: ``offsets`` holds (header start, payload start, payload end) per frame
        (a list, or an array from the run finder)."""
        off = np.asarray(offsets, np.int64).reshape(-1, 3)
        h, s, e = off[:, 0], off[:, 1], off[:, 2]
        a = np.frombuffer(buf, np.uint8)
        # A status ("NATS/1.0 204 EOB", "NATS/1.0 404 ...") has no payload and a code after the version.
        status = (s == e) & (s - h > 9) & (a[np.minimum(h + 8, len(a) - 1)] == 32)
        if not status.any():
            self._add(buf, h, s, e)
            return
        begin = 0
        for i in np.flatnonzero(status).tolist():
            self._add(buf, h[begin:i], s[begin:i], e[begin:i])
            begin = i + 1
            if not self._on_status(buf[int(h[i]) : int(s[i])]):
                return
        self._add(buf, h[begin:], s[begin:], e[begin:])

    def _add(self, buf: bytes, h: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        """Messages of a reply run: kept for the batch, the cursor moved to the last one's sequence
        (replies come in sequence order); one past the range's end ends the read."""
        n = len(h)
        if not n:
            return
        self._received += n
        cur = self.cursor
        if cur.done:
            return
        j = n - 1
        raw = buf[int(h[j]) : int(s[j])]
        m = self._match(raw)
        try:
            seq = int(m.group(3)) if m is not None else int(parse_headers(raw).get(SEQUENCE) or "")
        except ValueError:
            self._fail(f"reading stream {self.stream!r}: direct get reply without its headers: {raw[:200]!r}")
            return
        cur.cols.add(buf, h, s, e)  # rows past the end are dropped when the batch is built
        cur.cursor = min(seq, cur.last)
        if seq >= cur.last:
            cur.done = True

    def _on_status(self, raw: bytes) -> bool:
        block = parse_headers(raw)
        status = block.status
        if status == 204:  # EOB: this request is over
            if block.get(NUM_PENDING) == "0" or self._received == 0:
                self.cursor.done = True
        elif status == 404:  # nothing at or after the cursor matches
            self.cursor.done = True
        else:
            self._fail(f"reading stream {self.stream!r}: direct get answered {status} {block.description}")
            return False
        self._reply_done.set()  # type: ignore[union-attr]
        return True

    def _fail(self, text: str) -> None:
        self._error = JetStreamSparkError(text)
        self._reply_done.set()  # type: ignore[union-attr]
