"""Read one sequence range of a stream through a consumer: a partition's reader where batched
direct get cannot serve the read (:mod:`.partition` picks).

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
"""

from __future__ import annotations

import asyncio

import pyarrow as pa

from pyjetstream.api import PullRequest, encode, parse_ack_reply
from pyjetstream.api.pull_status import PullStatus, classify_pull_status
from pyjetstream.api.timefmt import NS_PER_S
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.protocol.subjects import subject_matches, subjects_overlap
from pyjetstream.spark.arrow_batch import MessageColumns
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
        self.cursor = RangeCursor(first, last, lambda: MessageColumns(stream, schema))
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
        self._sub = await self.nc.subscribe(self._inbox, cb=self._on_msg)
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
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted."""
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
            if self._outstanding <= 0:
                self._pull()
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
        return cur.take()

    def _pull(self) -> None:
        batch = max(1, min(self.opts.batch_size, self.cursor.remaining))
        request = PullRequest(batch=batch, expires=int(PULL_EXPIRES_S * NS_PER_S))
        self._outstanding = batch
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

    def _on_msg(self, msg: Msg) -> None:
        reply = msg.reply
        if not reply.startswith("$JS.ACK."):
            self._on_status(msg)
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
            if not self._local_filter or any(subject_matches(f, msg.subject) for f in self._local_filter):
                cur.cols.append(msg.subject, seq, ts, msg.raw_headers, msg.data)
            if seq >= cur.last or pending == 0:
                cur.done = True
        if cur.done or self._outstanding <= 0 or len(cur.cols) >= self.opts.batch_size:
            self._wake.set()  # type: ignore[union-attr]

    def _on_status(self, msg: Msg) -> None:
        status = msg.status
        kind = classify_pull_status(status, msg.description)
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
                f"reading stream {self.stream!r}: unexpected status {status} {msg.description}"
            )
        self._wake.set()  # type: ignore[union-attr]
