"""Read one sequence range of a stream with batched direct get: the fast path of a partition.

One ``$JS.API.DIRECT.GET.<stream>`` request ``{"seq": cursor+1, "batch": n, "next_by_subj": f}``
brings up to ``n`` stored messages (deleted and purged sequences skipped, only subject ``f``'s
if a filter is given), each as a reply carrying ``Nats-Sequence`` / ``Nats-Subject`` /
``Nats-Time-Stamp``, then a ``204 EOB`` status with ``Nats-Num-Pending`` (what matches after the
last one sent). No consumer is created, nothing is left behind on the server. This mirrors
nats-server's ``getDirectRequest`` batch mode (2.11, API level 1); the stream must have
``allow_direct``. Anything else (older server, no direct get, several filter subjects) reads
through :class:`.range_reader.RangeReader`'s ephemeral consumer.

The read stops when a message past the range's last sequence arrives (dropped), the range's
last sequence was read, the server says nothing more matches (``Nats-Num-Pending: 0`` or
``404``). The timestamps stay text until the batch is built: Arrow parses them in one call.
The ``headers`` column is the message's own headers, without those direct get adds.
"""

from __future__ import annotations

import asyncio

import pyarrow as pa

from pyjetstream.api import MsgGetRequest, encode
from pyjetstream.api.headers import LAST_SEQUENCE, NUM_PENDING, SEQUENCE, STREAM, SUBJECT, TIME_STAMP
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.spark.arrow_batch import MessageColumns
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.options import JetStreamOptions

__all__ = ["DIRECT_GET_HEADERS", "DirectRangeReader"]

# The headers direct get adds to a stored message (nats-server's ``JSStream`` … ``JSNumPending``).
DIRECT_GET_HEADERS = frozenset({STREAM, SUBJECT, SEQUENCE, TIME_STAMP, LAST_SEQUENCE, NUM_PENDING})


class DirectRangeReader:
    """Reads ``first <= seq <= last`` of ``stream`` (optionally one subject filter) into Arrow batches
    on an open connection ``nc`` (the caller owns it)."""

    def __init__(
        self,
        nc: Client,
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
        self.first = first
        self.last = last
        self.subject = subject
        self.schema = schema
        self.cursor = first - 1
        self.done = first > last
        self.read_count = 0
        self._cols = MessageColumns(stream, schema)
        self._sub: Subscription | None = None
        self._inbox = ""
        self._request_subject = ""
        self._reply_done: asyncio.Event | None = None
        self._received = 0
        self._error: Exception | None = None

    async def open(self, request_subject: str) -> None:
        self._request_subject = request_subject
        self._reply_done = asyncio.Event()
        self._inbox = self.nc.new_inbox()
        self._sub = await self.nc.subscribe(self._inbox, cb=self._on_msg)

    async def close(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None and not self.nc.is_closed:
            try:
                await sub.unsubscribe()
            except Exception:
                pass

    async def next_batch(self) -> pa.RecordBatch | None:
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted."""
        if not self.done:
            await self._request(min(self.opts.batch_size, self.last - self.cursor))
        if not len(self._cols):
            return None
        cols, self._cols = self._cols, MessageColumns(self.stream, self.schema)
        self.read_count += len(cols)
        return cols.to_batch()

    async def _request(self, batch: int) -> None:
        done = self._reply_done
        assert done is not None
        done.clear()
        self._received = 0
        request = MsgGetRequest(seq=self.cursor + 1, next_by_subj=self.subject, batch=batch)
        self.nc.publish_nowait(self._request_subject, encode(request), reply=self._inbox)
        try:
            await asyncio.wait_for(done.wait(), self.opts.connect.request_timeout)
        except TimeoutError:
            raise JetStreamSparkError(
                f"reading stream {self.stream!r}: batch direct get from sequence {self.cursor + 1} "
                f"timed out after {self.opts.connect.request_timeout}s"
            ) from None
        if self._error is not None:
            raise self._error
        if self.cursor >= self.last:
            self.done = True

    def _on_msg(self, msg: Msg) -> None:
        block = msg.header_block
        if block is None:
            self._fail(f"reading stream {self.stream!r}: direct get reply without headers")
            return
        status = block.status
        if status and not msg.data:
            if status == 204:  # EOB: this request is over
                if block.get(NUM_PENDING) == "0" or self._received == 0:
                    self.done = True
            elif status == 404:  # nothing at or after the cursor matches
                self.done = True
            else:
                self._fail(f"reading stream {self.stream!r}: direct get answered {status} {block.description}")
                return
            self._reply_done.set()  # type: ignore[union-attr]
            return
        self._received += 1
        if self.done:
            return
        seq = int(block.get(SEQUENCE) or 0)
        if seq > self.last:
            self.done = True
            return
        self.cursor = seq
        own = [(k, v) for k, v in block.headers.items() if k not in DIRECT_GET_HEADERS]
        self._cols.append(block.get(SUBJECT) or "", seq, block.get(TIME_STAMP) or "", own or None, msg.data)

    def _fail(self, text: str) -> None:
        self._error = JetStreamSparkError(text)
        self._reply_done.set()  # type: ignore[union-attr]
