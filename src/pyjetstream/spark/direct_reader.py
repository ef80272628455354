"""Read one sequence range of a stream with batched direct get: the fast path of a partition.

One ``$JS.API.DIRECT.GET.<stream>`` request ``{"seq": cursor+1, "batch": n, "next_by_subj": f}``
brings up to ``n`` stored messages (deleted and purged sequences skipped, only subject ``f``'s
if a filter is given), each as a reply carrying ``Nats-Sequence`` / ``Nats-Subject`` /
``Nats-Time-Stamp``, then a ``204 EOB`` status with ``Nats-Num-Pending`` (what matches after the
last one sent). No consumer is created, nothing is left behind on the server. This mirrors
nats-server's ``getDirectRequest`` batch mode (2.11, API level 1); the stream must have
``allow_direct``. :mod:`.partition` decides when this reader serves a read.

The read stops when a message past the range's last sequence arrives (dropped), the range's
last sequence was read, the server says nothing more matches (``Nats-Num-Pending: 0`` or
``404``). The ``headers`` column is the message's own headers, without those direct get adds.

The replies come as raw frames (:meth:`Client.subscribe_frames`: every frame of a received chunk
in one call, no message object each). nats-server ends every reply's header block with the same
headers in the same order (``dgb`` in stream.go: ``Nats-Stream``, ``Nats-Subject``,
``Nats-Sequence``, ``Nats-Time-Stamp``, ``Nats-Num-Pending``, ``Nats-Last-Sequence``; after the
message's own headers, if it has any), so one regex match at the frame's header offset gives
subject, sequence and time stamp as bytes (and the message's own header lines), and the payload is
a slice; Arrow turns the byte columns into strings, integers and timestamps once per batch, and the
own header lines are parsed per batch.
"""

from __future__ import annotations

import asyncio
import re

import pyarrow as pa

from pyjetstream.api import MsgGetRequest, encode
from pyjetstream.api.headers import LAST_SEQUENCE, NUM_PENDING, SEQUENCE, STREAM, SUBJECT, TIME_STAMP
from pyjetstream.client import Client, Subscription
from pyjetstream.protocol import parse_headers
from pyjetstream.spark.arrow_batch import ReplyColumns
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions
from pyjetstream.spark.range_cursor import RangeCursor

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


def encode_header_lines(headers: list[tuple[str, list[str]]]) -> bytes:
    """``Name: value\\r\\n`` lines (what :class:`.arrow_batch.ReplyColumns` keeps per row)."""
    return b"".join(f"{name}: {value}\r\n".encode() for name, values in headers for value in values)


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
        self.cursor = RangeCursor(first, last, lambda: ReplyColumns(stream, schema, DIRECT_GET_HEADERS))
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
        self._sub = await self.nc.subscribe_frames(self._inbox, self._on_frames)

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

    def _on_frames(self, buf: bytes, offsets: list[int]) -> None:
        """A run of replies: ``offsets`` holds (header start, payload start, payload end) per frame."""
        cur = self.cursor
        cols = cur.cols
        fields = cols.fields
        datas = cols.data
        match = self._match
        self._received += len(offsets) // 3
        check = cur.done or self._past_end(buf, offsets)
        last = cur.last
        it = iter(offsets)
        for h, p, e in zip(it, it, it, strict=True):
            m = match(buf, h, p)
            if m is None:  # a status (or a layout this reader does not know)
                if not self._on_other(buf[h:p], buf[p:e]):
                    return
                continue
            row = m.groups()  # (own header lines, subject, sequence, time stamp)
            if check:  # the run may cross the range's end (replies come in sequence order)
                if cur.done:
                    continue
                if int(row[2]) > last:
                    cur.done = True
                    continue
            fields.append(row)
            datas.append(buf[p:e])
        if fields:
            cur.cursor = int(fields[-1][2])

    def _past_end(self, buf: bytes, offsets: list[int]) -> bool:
        """Whether the run may hold a message past the range's end: replies come in sequence order,
        so the run's last message tells (the one before a closing status, usually)."""
        j = len(offsets) - 3
        for _ in range(2):
            if j < 0:
                break
            m = self._match(buf, offsets[j], offsets[j + 1])
            if m is not None:
                return int(m.group(3)) > self.cursor.last
            j -= 3
        return True

    def _on_other(self, raw: bytes, data: bytes) -> bool:
        """A reply whose header block does not end as nats-server writes it: a status ends the
        request; a message is read through a general header parse. False when the read failed."""
        if raw[8:9] == b" " and not data:  # a status: "NATS/1.0 204 EOB", "NATS/1.0 404 ..."
            self._received -= 1
            return self._on_status(raw)
        try:
            block = parse_headers(raw)
            seq = int(block.get(SEQUENCE) or "")
        except ValueError:
            self._fail(f"reading stream {self.stream!r}: direct get reply without its headers: {raw[:200]!r}")
            return False
        cur = self.cursor
        if cur.done:
            return True
        if seq > cur.last:
            cur.done = True
            return True
        cols = cur.cols
        own = [(k, v) for k, v in block.headers.items() if k not in DIRECT_GET_HEADERS]
        subject, stamp = (block.get(SUBJECT) or "").encode(), (block.get(TIME_STAMP) or "").encode()
        cols.fields.append((encode_header_lines(own), subject, str(seq).encode(), stamp))
        cols.data.append(data)
        cur.cursor = seq
        return True

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
