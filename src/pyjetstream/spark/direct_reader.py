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
_DIRECT_B = frozenset(h.encode() for h in DIRECT_GET_HEADERS)
_STREAM_B, _SUBJECT_B, _SEQUENCE_B, _TIME_STAMP_B = (h.encode() for h in (STREAM, SUBJECT, SEQUENCE, TIME_STAMP))


def _own_headers(pairs: list[tuple[bytes, bytes]]) -> list[tuple[str, list[str]]] | None:
    """The message's own headers (``[(name, [values])]``, first-seen order), or ``None``."""
    own: dict[str, list[str]] = {}
    for name, value in pairs:
        if name not in _DIRECT_B:
            own.setdefault(name.decode(), []).append(value.strip().decode())
    return list(own.items()) or None


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
        self._pending = False  # a request is out
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
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted. The next request goes
        out before this batch is handed over, so the server sends while Spark consumes."""
        if not self.done:
            if not self._pending:
                self._send()
            await self._wait()
        if not len(self._cols):
            return None
        cols, self._cols = self._cols, MessageColumns(self.stream, self.schema)
        if not self.done:
            self._send()
        self.read_count += len(cols)
        return cols.to_batch()

    def _send(self) -> None:
        assert self._reply_done is not None
        self._reply_done.clear()
        self._received = 0
        self._pending = True
        batch = min(self.opts.batch_size, self.last - self.cursor)
        request = MsgGetRequest(seq=self.cursor + 1, next_by_subj=self.subject, batch=batch)
        self.nc.publish_nowait(self._request_subject, encode(request), reply=self._inbox)

    async def _wait(self) -> None:
        assert self._reply_done is not None
        try:
            await asyncio.wait_for(self._reply_done.wait(), self.opts.connect.request_timeout)
        except TimeoutError:
            raise JetStreamSparkError(
                f"reading stream {self.stream!r}: batch direct get from sequence {self.cursor + 1} "
                f"timed out after {self.opts.connect.request_timeout}s"
            ) from None
        finally:
            self._pending = False
        if self._error is not None:
            raise self._error
        if self.cursor >= self.last:
            self.done = True

    def _on_msg(self, msg: Msg) -> None:
        raw = msg.raw_headers
        if raw is None:
            self._fail(f"reading stream {self.stream!r}: direct get reply without headers")
            return
        if raw[8:9] == b" " and not msg.data:  # a status: "NATS/1.0 204 EOB", "NATS/1.0 404 ..."
            self._on_status(msg)
            return
        self._received += 1
        if self.done:
            return
        # The hot path: a split of the header block instead of a full header parse. nats-server
        # appends its headers after the message's own (so the last value wins in the dict).
        pairs = [line.partition(b":")[::2] for line in raw.split(b"\r\n")[1:] if line]
        fields = dict(pairs)
        seq = int(fields.get(_SEQUENCE_B) or 0)
        if seq > self.last:
            self.done = True
            return
        self.cursor = seq
        own = None if pairs and pairs[0][0] == _STREAM_B else _own_headers(pairs)
        self._cols.append(
            fields.get(_SUBJECT_B, b"").strip().decode(),
            seq,
            fields.get(_TIME_STAMP_B, b"").strip().decode(),
            own,
            msg.data,
        )

    def _on_status(self, msg: Msg) -> None:
        block = msg.header_block
        assert block is not None
        status = block.status
        if status == 204:  # EOB: this request is over
            if block.get(NUM_PENDING) == "0" or self._received == 0:
                self.done = True
        elif status == 404:  # nothing at or after the cursor matches
            self.done = True
        else:
            self._fail(f"reading stream {self.stream!r}: direct get answered {status} {block.description}")
            return
        self._reply_done.set()  # type: ignore[union-attr]

    def _fail(self, text: str) -> None:
        self._error = JetStreamSparkError(text)
        self._reply_done.set()  # type: ignore[union-attr]
