"""Read one sequence range of a stream: the work of one Spark partition.

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
from collections.abc import Iterator

import pyarrow as pa

from pyjetstream.api import PullRequest, encode, parse_ack_reply
from pyjetstream.api.pull_status import PullStatus, classify_pull_status
from pyjetstream.api.timefmt import NS_PER_S
from pyjetstream.client import Client, Msg, Subscription
from pyjetstream.protocol.subjects import subject_matches, subjects_overlap
from pyjetstream.spark.arrow_batch import MessageColumns
from pyjetstream.spark.connection import TaskLoop, open_client
from pyjetstream.spark.direct_reader import DirectRangeReader
from pyjetstream.spark.errors import JetStreamSparkError
from pyjetstream.spark.jsapi import JetStreamApi
from pyjetstream.spark.options import JetStreamOptions

__all__ = ["RangeReader", "read_range"]

# A pull request that brings nothing for this long is re-checked against the consumer's state
# (messages may have been removed after the consumer counted them as pending).
PULL_EXPIRES_S = 2.0
# How long past its expiry a pull may stay silent before it is taken as over.
PULL_GRACE_S = 1.0


class RangeReader:
    """Reads messages with ``first <= seq <= last`` of ``stream`` into Arrow column batches."""

    def __init__(
        self,
        opts: JetStreamOptions,
        stream: str,
        first: int,
        last: int,
        subjects: tuple[str, ...],
        schema: pa.Schema,
    ) -> None:
        self.opts = opts
        self.stream = stream
        self.first = first
        self.last = last
        self.subjects = subjects
        self.schema = schema
        self.cursor = first - 1  # last stream sequence seen
        self.done = first > last
        self.read_count = 0
        self._nc: Client | None = None
        self._api: JetStreamApi | None = None
        self._sub: Subscription | None = None
        self._consumer = ""
        self._server_filter: tuple[str, ...] = ()
        self._local_filter: tuple[str, ...] = ()
        self._cols = self._new_columns()
        self._outstanding = 0  # messages the current pull request may still bring
        self._wake: asyncio.Event | None = None
        self._error: Exception | None = None
        self._lost = False

    def _new_columns(self) -> MessageColumns:
        return MessageColumns(self.stream, self.schema)

    # --- lifecycle ---------------------------------------------------------------------------

    async def open(self) -> None:
        if self.done:
            return
        self._wake = asyncio.Event()
        self._nc = await open_client(self.opts.connect)
        self._api = JetStreamApi(self._nc, self.opts.connect.request_timeout)
        self._plan_filters()
        inbox = self._nc.new_inbox()
        self._inbox = inbox
        self._sub = await self._nc.subscribe(inbox, cb=self._on_msg)
        await self._create_consumer()

    def _plan_filters(self) -> None:
        subjects = tuple(dict.fromkeys(self.subjects))
        if len(subjects) <= 1:
            self._server_filter = subjects
            return
        assert self._api is not None
        overlap = any(subjects_overlap(a, b) for i, a in enumerate(subjects) for b in subjects[i + 1 :])
        if self._api.supports_multi_filter() and not overlap:
            self._server_filter = subjects
        else:
            # nats-server 2.9 takes one filter, and no server takes overlapping ones: filter here.
            self._local_filter = subjects

    async def _create_consumer(self) -> None:
        assert self._api is not None
        info = await self._api.create_reader(
            self.stream, start_seq=self.cursor + 1, filter_subjects=self._server_filter
        )
        self._consumer = info.name
        self._outstanding = 0
        if info.num_pending == 0:
            self.done = True

    async def close(self) -> None:
        nc = self._nc
        self._nc = None
        if nc is None:
            return
        try:
            if self._consumer and self._api is not None and not nc.is_closed:
                try:
                    await self._api.delete_consumer(self.stream, self._consumer)
                except Exception:
                    pass  # the server removes it after its inactive threshold anyway
        finally:
            await nc.close()

    # --- reading -----------------------------------------------------------------------------

    async def next_batch(self) -> pa.RecordBatch | None:
        """Up to ``batch_size`` rows, or ``None`` once the range is exhausted."""
        wake = self._wake
        while not self.done and len(self._cols) < self.opts.batch_size:
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
            before = self.cursor
            try:
                await asyncio.wait_for(wake.wait(), PULL_EXPIRES_S + PULL_GRACE_S)
            except TimeoutError:
                # Past its expiry and no status came back: that pull is over (a consumer that
                # vanished answers nothing; nats-server's API subscription swallows the request).
                self._outstanding = 0
            if self._error is not None:
                raise self._error
            if self._outstanding <= 0 and self.cursor == before and not self.done:
                await self._check_progress()
        if self._error is not None:
            raise self._error
        if not len(self._cols):
            return None
        cols, self._cols = self._cols, self._new_columns()
        self.read_count += len(cols)
        return cols.to_batch()

    def _pull(self) -> None:
        assert self._nc is not None
        remaining = self.last - self.cursor
        batch = max(1, min(self.opts.batch_size, remaining))
        request = PullRequest(batch=batch, expires=int(PULL_EXPIRES_S * NS_PER_S))
        self._outstanding = batch
        self._nc.publish_nowait(
            self._api.api.consumer_msg_next(self.stream, self._consumer),  # type: ignore[union-attr]
            encode(request),
            reply=self._inbox,
        )

    async def _check_progress(self) -> None:
        """A pull ended with nothing new: is anything left for this range?"""
        assert self._api is not None
        try:
            info = await self._api.consumer_info(self.stream, self._consumer)
        except Exception:
            # The consumer is gone (inactive threshold, server restart): start again from the cursor.
            await self._create_consumer()
            return
        if info.num_pending == 0 or info.delivered.stream_seq >= self.last:
            self.done = True

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
        if self.done:
            return
        if seq > self.last:
            self.done = True
        else:
            self.cursor = seq
            if not self._local_filter or any(subject_matches(f, msg.subject) for f in self._local_filter):
                self._cols.append(msg.subject, seq, ts, msg.raw_headers, msg.data)
            if seq >= self.last or pending == 0:
                self.done = True
        if self.done or self._outstanding <= 0 or len(self._cols) >= self.opts.batch_size:
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


def read_range(
    opts: JetStreamOptions,
    stream: str,
    first: int,
    last: int,
    subjects: tuple[str, ...],
    schema: pa.Schema,
) -> Iterator[pa.RecordBatch]:
    """Synchronous iterator of Arrow batches for a Spark ``read`` (runs its own event loop).

    Batched direct get (:mod:`.direct_reader`) where the server (2.11+) and the stream
    (``allow_direct``) allow it and at most one subject filters the read; otherwise an
    ephemeral consumer (:class:`RangeReader`)."""
    if first > last:
        return
    loop = TaskLoop()
    try:
        direct = loop.run(_open_direct(opts, stream, first, last, subjects, schema))
        reader: RangeReader | DirectRangeReader
        if direct is not None:
            reader = direct
        else:
            reader = consumer_reader = RangeReader(opts, stream, first, last, subjects, schema)
        try:
            if direct is None:
                loop.run(consumer_reader.open())
            while True:
                batch = loop.run(reader.next_batch())
                if batch is None:
                    break
                yield batch
        finally:
            loop.run(reader.close())
            if direct is not None:
                loop.run(direct.nc.close())
    finally:
        loop.close()


async def _open_direct(
    opts: JetStreamOptions,
    stream: str,
    first: int,
    last: int,
    subjects: tuple[str, ...],
    schema: pa.Schema,
) -> DirectRangeReader | None:
    """A batched direct get reader on its own connection, or ``None`` when it cannot serve the read."""
    subjects = tuple(dict.fromkeys(subjects))
    if not opts.direct_get or len(subjects) > 1:
        return None
    nc = await open_client(opts.connect)
    try:
        api = JetStreamApi(nc, opts.connect.request_timeout)
        if await api.supports_batch_get():
            info = await api.stream_info(stream)
            if info.config.allow_direct:
                reader = DirectRangeReader(nc, opts, stream, first, last, subjects[0] if subjects else "", schema)
                await reader.open(api.api.direct_get(stream))
                return reader
    except BaseException:
        await nc.close()
        raise
    await nc.close()
    return None
