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

The hot path takes the replies as raw frames (:meth:`Client.subscribe_frames`: every frame of a
received chunk in one call, no message object each). A message stored without headers gets
nats-server's fixed header block (``dgb`` in stream.go: ``Nats-Stream``, ``Nats-Subject``,
``Nats-Sequence``, ``Nats-Time-Stamp``, ``Nats-Num-Pending``, ``Nats-Last-Sequence``, in that order),
so one regex match at the frame's header offset gives subject, sequence and time stamp as bytes,
and the payload is a slice; Arrow turns the byte columns into strings, integers and timestamps once
per batch. A message with headers of its own (or a status) takes the general header split.
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
_DIRECT_B = frozenset(h.encode() for h in DIRECT_GET_HEADERS)
_STREAM_B, _SUBJECT_B, _SEQUENCE_B, _TIME_STAMP_B = (h.encode() for h in (STREAM, SUBJECT, SEQUENCE, TIME_STAMP))


def _fixed_block(stream: str) -> re.Pattern[bytes]:
    """nats-server's header block of a batched direct get reply for a message without headers."""
    return re.compile(
        b"NATS/1\\.0\r\n"
        + STREAM.encode() + b": " + re.escape(stream.encode()) + b"\r\n"
        + SUBJECT.encode() + b": ([^\r\n]+)\r\n"
        + SEQUENCE.encode() + b": ([0-9]+)\r\n"
        + TIME_STAMP.encode() + b": ([^\r\n]+)\r\n"
        + NUM_PENDING.encode() + b": [0-9]+\r\n"
        + LAST_SEQUENCE.encode() + b": [0-9]+\r\n\r\n"
    )  # fmt: skip


def _own_headers(pairs: list[tuple[bytes, bytes]]) -> list[tuple[str, list[str]]] | None:
    """The message's own headers (``[(name, [values])]``, first-seen order), or ``None``."""
    own: dict[str, list[str]] = {}
    for name, value in pairs:
        if name not in _DIRECT_B:
            own.setdefault(name.decode(), []).append(value.strip().decode())
    return list(own.items()) or None


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
        self.cursor = RangeCursor(stream, first, last, schema, ReplyColumns)
        self._request_subject = request_subject
        self._fixed = _fixed_block(stream).fullmatch
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
        fixed = self._fixed
        self._received += len(offsets) // 3
        if not cur.done and not self._past_end(buf, offsets):
            # The hot loop: every reply of the run is within the range.
            add_fields = fields.append
            add_data = datas.append
            it = iter(offsets)
            for h, p, e in zip(it, it, it, strict=True):
                m = fixed(buf, h, p)
                if m is not None:
                    add_fields(m.groups())
                    add_data(buf[p:e])
                elif not self._on_other(buf[h:p], buf[p:e]):
                    return
        else:
            it = iter(offsets)
            for h, p, e in zip(it, it, it, strict=True):
                m = fixed(buf, h, p)
                if m is None:
                    if not self._on_other(buf[h:p], buf[p:e]):
                        return
                elif not cur.done:
                    if int(m.group(2)) > cur.last:
                        cur.done = True
                    else:
                        fields.append(m.groups())
                        datas.append(buf[p:e])
        if fields:
            cur.cursor = int(fields[-1][1])

    def _past_end(self, buf: bytes, offsets: list[int]) -> bool:
        """Whether the run may hold a message past the range's end: replies come in sequence order,
        so the run's last message tells (the one before a closing status, usually)."""
        fixed = self._fixed
        j = len(offsets) - 3
        for _ in range(2):
            if j < 0:
                break
            m = fixed(buf, offsets[j], offsets[j + 1])
            if m is not None:
                return int(m.group(2)) > self.cursor.last
            j -= 3
        return True

    def _on_other(self, raw: bytes, data: bytes) -> bool:
        """A reply the fixed layout does not match: a status, or a message with headers of its own.
        False when the read failed."""
        if raw[8:9] == b" " and not data:  # a status: "NATS/1.0 204 EOB", "NATS/1.0 404 ..."
            self._received -= 1
            return self._on_status(raw)
        if not raw:
            self._fail(f"reading stream {self.stream!r}: direct get reply without headers")
            return False
        cur = self.cursor
        if cur.done:
            return True
        # nats-server appends its headers after the message's own (so the last value wins in the dict).
        pairs = [line.partition(b":")[::2] for line in raw.split(b"\r\n")[1:] if line]
        fields = dict(pairs)
        seq = (fields.get(_SEQUENCE_B) or b"0").strip()
        if int(seq) > cur.last:
            cur.done = True
            return True
        own = None if pairs and pairs[0][0] == _STREAM_B else _own_headers(pairs)
        cols = cur.cols
        if own is not None:
            cols.headers[len(cols.fields)] = own
        cols.fields.append((fields.get(_SUBJECT_B, b"").strip(), seq, fields.get(_TIME_STAMP_B, b"").strip()))
        cols.data.append(data)
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
