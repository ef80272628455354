"""Read one sequence range of a stream through a consumer: a partition's reader where batched
direct get cannot serve the read (`partition` picks).

An ephemeral pull consumer starts at the range's first sequence (``AckNone``: nothing to
ack, nothing left behind) and is asked for at most as many messages as sequences remain in
the range, so a partition never reads far past its end. The read stops when

- a message at or past the range's last sequence arrives (later ones are dropped), or
- a message says nothing more is pending in the stream (``pending`` = 0 in its ack subject:
  the rest of the range was deleted, purged or does not match the filter), or
- the consumer reported nothing pending when it was created (empty range or stream).

The stream's metadata comes from each message's ack reply subject
(``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>``), so reading
needs no per-message request.

The deliveries come as raw frames (``Client.subscribe_frames`` with the parser's array run finder
`hmsg_run`: every frame of a received chunk in one call, as
offset arrays, no step per frame; a message without headers is a ``MSG`` frame with an empty header
block) and are kept as received (`consumer_frames.ConsumerFrames`,
which builds a batch's columns with array operations); per chunk the reader reads only the last
message's ack subject. A message the parser hands over as a [`Msg`][] joins the same batch.
Where the read filters subjects itself (overlapping filters, or several on a server that takes one)
every message comes as a [`Msg`][]. The next pull request goes out while the current one still
has up to a batch to deliver, so the server sends while the reader builds and Spark consumes.
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pyarrow as pa

from pyjetstream.api import PullRequest, encode, parse_ack_reply
from pyjetstream.api.pull_status import PullStatus, classify_pull_status
from pyjetstream.api.timefmt import NS_PER_S
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.protocol import parse_headers
from pyjetstream.protocol.frame_scan import hmsg_run
from pyjetstream.protocol.subjects import subject_matches, subjects_overlap
from pyjetstream.spark.arrow_batch import MessageColumns
from pyjetstream.spark.consumer_frames import ConsumerFrames, line_starts
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.jsapi import JetStreamApi
from pyjetstream.spark.options import JetStreamOptions
from pyjetstream.spark.range_cursor import RangeCursor

__all__ = ["RangeReader"]

# A pull request that brings nothing for this long is re-checked against the consumer's state
# (messages may have been removed after the consumer counted them as pending).
PULL_EXPIRES_S = 2.0
# How long past its expiry a pull may stay silent before it is taken as over.
PULL_GRACE_S = 1.0


class RangeReader:
    """Reads messages with ``first <= seq <= last`` of ``stream`` into Arrow column batches, on an
    open connection ``nc`` (the caller owns it)."""

    def __init__(
        self,
        nc: Client,
        opts: JetStreamOptions,
        stream: str,
        first: int,
        last: int,
        subjects: tuple[str, ...],
        schema: pa.Schema,
    ) -> None:
        self.nc = nc
        self.opts = opts
        self.stream = stream
        self.subjects = subjects
        self.schema = schema
        self.cursor: RangeCursor[Any] = RangeCursor(first, last, lambda: MessageColumns(stream, schema))
        self._api = JetStreamApi(nc, opts.connect.request_timeout)
        self._sub: Subscription | None = None
        self._inbox = ""
        self._consumer = ""
        self._server_filter: tuple[str, ...] = ()
        self._local_filter: tuple[str, ...] = ()
        self._outstanding = 0  # messages the current pull request may still bring
        self._wake: asyncio.Event | None = None
        self._error: Exception | None = None
        self._lost = False

    # --- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        if self.cursor.done:
            return
        self._wake = asyncio.Event()
        self._plan_filters()
        self._inbox = self.nc.new_inbox()
        if self._local_filter:
            self._sub = await self.nc.subscribe(self._inbox, cb=self._on_msg)
        else:
            stream, schema, last = self.stream, self.schema, self.cursor.last
            self.cursor.new_columns = lambda: ConsumerFrames(stream, schema, last)
            self.cursor.cols = self.cursor.new_columns()
            self._sub = await self.nc.subscribe_frames(
                self._inbox, self._on_frames, scan=hmsg_run, on_msg=self._on_msg
            )
        await self._create_consumer()

    def _plan_filters(self) -> None:
        subjects = tuple(dict.fromkeys(self.subjects))
        if len(subjects) <= 1:
            self._server_filter = subjects
            return
        overlap = any(subjects_overlap(a, b) for i, a in enumerate(subjects) for b in subjects[i + 1 :])
        if self._api.supports_multi_filter() and not overlap:
            self._server_filter = subjects
        else:
            # nats-server 2.9 takes one filter, and no server takes overlapping ones: filter here.
            self._local_filter = subjects

    async def _create_consumer(self) -> None:
        info = await self._api.create_reader(
            self.stream, start_seq=self.cursor.cursor + 1, filter_subjects=self._server_filter
        )
        self._consumer = info.name
        self._outstanding = 0
        if info.num_pending == 0:
            self.cursor.done = True

    async def close(self) -> None:
        """Removes the consumer (the connection stays open: the caller closes it)."""
        sub, self._sub = self._sub, None
        if self.nc.is_closed:
            return
        if self._consumer:
            consumer, self._consumer = self._consumer, ""
            try:
                await self._api.delete_consumer(self.stream, consumer)
            except Exception:
                pass  # the server removes it after its inactive threshold anyway
        if sub is not None:
            try:
                await sub.unsubscribe()
            except Exception:
                pass

    # --- reading -----------------------------------------------------------------------------

    async def next_batch(self) -> pa.RecordBatch | None:
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted. The next pull is asked
        for before the batch is handed over."""
        wake = self._wake
        cur = self.cursor
        while not cur.done and len(cur.cols) < self.opts.batch_size:
            assert wake is not None
            if self._error is not None:
                raise self._error
            if self._lost:
                self._lost = False
                await self._create_consumer()
                continue
            self._top_up()
            wake.clear()
            before = cur.cursor
            try:
                await asyncio.wait_for(wake.wait(), PULL_EXPIRES_S + PULL_GRACE_S)
            except TimeoutError:
                # Past its expiry and no status came back: that pull is over (a consumer that
                # vanished answers nothing; nats-server's API subscription swallows the request).
                self._outstanding = 0
            if self._error is not None:
                raise self._error
            if self._outstanding <= 0 and cur.cursor == before and not cur.done:
                await self._check_progress()
        if self._error is not None:
            raise self._error
        batch = cur.take()
        if not cur.done and not self._lost:
            self._top_up()
        return batch

    def _top_up(self) -> None:
        """Ask for the next batch while at most one batch is still to come (so up to two are in
        flight), never for more messages than sequences are left in the range."""
        size = self.opts.batch_size
        if self._outstanding > size:
            return
        want = min(size, self.cursor.remaining - max(self._outstanding, 0))
        if want > 0 or self._outstanding <= 0:
            self._pull(max(1, want))

    def _pull(self, batch: int) -> None:
        request = PullRequest(batch=batch, expires=int(PULL_EXPIRES_S * NS_PER_S))
        self._outstanding = max(self._outstanding, 0) + batch
        self.nc.publish_nowait(
            self._api.api.consumer_msg_next(self.stream, self._consumer), encode(request), reply=self._inbox
        )

    async def _check_progress(self) -> None:
        """A pull ended with nothing new: is anything left for this range?"""
        try:
            info = await self._api.consumer_info(self.stream, self._consumer)
        except Exception:
            # The consumer is gone (inactive threshold, server restart): start again from the cursor.
            await self._create_consumer()
            return
        if info.num_pending == 0 or info.delivered.stream_seq >= self.cursor.last:
            self.cursor.done = True

    def _on_frames(self, buf: bytes, offsets: Any) -> None:
        """A run of deliveries (and statuses): ``offsets`` holds (header start, payload start, payload
        end) per frame (a list, or an array)."""
        off = np.asarray(offsets, np.int64).reshape(-1, 3)
        h, s, e = off[:, 0], off[:, 1], off[:, 2]
        ls = line_starts(buf, h, e)
        a = np.frombuffer(buf, np.uint8)
        # A status ("NATS/1.0 408 Request Timeout", …) has no payload and a code after the version.
        status = (s == e) & (s - h > 9) & (a[np.minimum(h + 8, len(a) - 1)] == 32)
        if not status.any():
            self._add(buf, ls, h, s, e)
            return
        begin = 0
        for i in np.flatnonzero(status).tolist():
            self._add(buf, ls[begin:i], h[begin:i], s[begin:i], e[begin:i])
            begin = i + 1
            block = parse_headers(buf[int(h[i]) : int(s[i])])
            self._on_status(block.status, block.description)
        self._add(buf, ls[begin:], h[begin:], s[begin:], e[begin:])

    def _add(self, buf: bytes, ls: np.ndarray, h: np.ndarray, s: np.ndarray, e: np.ndarray) -> None:
        """Deliveries of a run: kept for the batch, the cursor moved to the last one's stream sequence
        (a fresh consumer delivers in sequence order); one past the range's end ends the read."""
        n = len(h)
        if not n:
            return
        self._outstanding -= n
        cur = self.cursor
        if cur.done:
            return
        j = n - 1
        # HMSG <subject> <sid> <reply> <hdr> <total>, or MSG <subject> <sid> <reply> <total>
        parts = buf[int(ls[j]) : int(h[j]) - 2].split(b" ")
        reply = parts[3] if len(parts) == (6 if parts[0] == b"HMSG" else 5) else b""
        tokens = reply.split(b".")
        if len(tokens) == 9:
            seq, pending = int(tokens[5]), int(tokens[8])
        else:
            meta = parse_ack_reply(reply.decode())
            seq, pending = meta.stream_seq, meta.num_pending
        cur.cols.add(buf, ls, h, s, e)  # rows past the end are dropped when the batch is built
        cur.cursor = min(seq, cur.last)
        if seq >= cur.last or pending == 0:
            cur.done = True
        if cur.done or self._outstanding <= 0 or len(cur.cols) >= self.opts.batch_size:
            self._wake.set()  # type: ignore[union-attr]

    def _on_msg(self, msg: Msg) -> None:
        reply = msg.reply
        if not reply.startswith("$JS.ACK."):
            self._on_status(msg.status, msg.description)
            return
        tokens = reply.split(".")
        if len(tokens) == 9:
            seq = int(tokens[5])
            ts = int(tokens[7])
            pending = int(tokens[8])
        else:
            meta = parse_ack_reply(reply)
            seq, ts, pending = meta.stream_seq, int(meta.timestamp), meta.num_pending
        self._outstanding -= 1
        cur = self.cursor
        if cur.done:
            return
        if seq > cur.last:
            cur.done = True
        else:
            cur.cursor = seq
            cols = cur.cols
            if isinstance(cols, ConsumerFrames):
                cols.add_msg(msg.subject, reply, msg.raw_headers, msg.data)
            elif not self._local_filter or any(subject_matches(f, msg.subject) for f in self._local_filter):
                cols.append(msg.subject, seq, ts, msg.raw_headers, msg.data)
            if seq >= cur.last or pending == 0:
                cur.done = True
        if cur.done or self._outstanding <= 0 or len(cur.cols) >= self.opts.batch_size:
            self._wake.set()  # type: ignore[union-attr]

    def _on_status(self, status: int, description: str) -> None:
        kind = classify_pull_status(status, description)
        if kind is PullStatus.HEARTBEAT:
            return
        if kind is PullStatus.END:  # no messages / request expired: this pull is over
            self._outstanding = 0
        elif kind is PullStatus.NO_RESPONDERS or kind is PullStatus.CONSUMER_DELETED:
            self._lost = True  # removed under us (inactive threshold, restart): recreate at the cursor
            self._outstanding = 0
        elif status == 409:
            self._outstanding = 0  # Leadership Change, Exceeded MaxWaiting …: pull again
        else:
            self._error = JetStreamSparkError(
                f"reading stream {self.stream!r}: unexpected status {status} {description}"
            )
        self._wake.set()  # type: ignore[union-attr]
