"""Batch publishing for one write task: fast-ingest (``publishMode=fast``) and atomic batches
(``publishMode=atomic``), on the client's [`JetStream.fast_publisher`][pyjetstream.client.jetstream.context.JetStream.fast_publisher] / [`JetStream.batch_publisher`][pyjetstream.client.jetstream.context.JetStream.batch_publisher].

Both keep the sink exactly-once through the rows' ``Nats-Msg-Id`` (derived or given), because
nats-server 2.15 honours message ids inside batches (``checkMsgHeadersPreClusteredProposal``,
jetstream_batching.go), each in its own way:

- **fast**: a message whose id is already in the duplicate window is skipped — not stored, no error,
  flow control goes on — and the batch's PubAck counts it (``count`` is the batch sequence reached).
  So a retried task simply sends its whole partition again as a new fast batch and only what is
  missing is stored. One fast batch per task; the stream must allow it (``allow_batched``, 2.14+).
- **atomic**: a batch containing an id already stored (or the same id twice) is refused as a whole
  (10201 *atomic publish batch contains duplicate message id*): nothing of it is stored. A retried
  task whose rows were (partly) stored by an earlier attempt gets that answer for the batches that
  overlap; their rows are then published one by one with the same ids (the pipelined
  `publisher.Publisher`), which stores exactly the missing ones. Batches hold at most
  ``atomicBatchSize`` rows (nats-server's per-batch limit, ``limits { batch { max_msgs } }``, is
  1000 by default; a lower one refuses a larger batch with 10199 *atomic publish batch is too
  large: N*, which fails the task: the limit is not visible to a client). A batch is staged in full
  and committed with its last row; any failure before the commit discards it (the client's batch
  context manager), so a failed task never leaves part of a batch in the stream. A commit that is
  not answered within ``ackTimeout`` is sent again as a new batch (up to ``publishRetries`` times):
  if the first commit did land, the new one is refused as a duplicate and falls back as above.
  Two batches are open at a time: the next one is staged while the last one's commit is answered,
  and committed only after that answer (so batches land in row order, and a refused batch still
  leaves nothing after it: the next one, staged, is discarded).

Either mode on a server that is too old fails the task with the client's ``FeatureNotSupported``
text (which names the nats-server version needed); a stream that does not allow the mode fails it
with the server's error (10205 *batch publish is disabled*, 10174 *atomic publish is disabled*).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.errors import (
    JSAtomicPublishContainsDuplicateMessageErr,
    JSAtomicPublishDisabledErr,
    JSAtomicPublishTooLargeBatchErrF,
    JSBatchPublishDisabledErr,
)
from pyjetstream.client import Client
from pyjetstream.client.errors import TimeoutError as ClientTimeoutError
from pyjetstream.client.jetstream import JetStream, jetstream
from pyjetstream.client.jetstream.batch import FastPublisher
from pyjetstream.client.jetstream.errors import (
    BatchPublishError,
    FeatureNotSupported,
    JetStreamAPIError,
    NoStreamResponse,
)
from pyjetstream.client.msg import HeadersArg
from pyjetstream.spark.errors import PublishError
from pyjetstream.spark.publisher import NO_RESPONDERS_WAIT, Publisher, PublishStats

__all__ = ["AtomicBatchPublisher", "FastBatchPublisher"]

Message = tuple[str, bytes, HeadersArg | None]


def _refusal(mode: str, exc: Exception) -> PublishError:
    """The task's error for a refused batch: the server's text and code, and what to change."""
    if isinstance(exc, FeatureNotSupported):
        return PublishError(f"publishMode={mode}: {exc}")
    if isinstance(exc, NoStreamResponse):
        return PublishError(f"publishMode={mode}: JetStream refused a batch: no stream matches the subject")
    if isinstance(exc, JetStreamAPIError):
        text = f"{exc.description} (error {exc.err_code})"
        if exc.err_code == JSBatchPublishDisabledErr.err_code:
            text += "; the stream needs allow_batched (nats-server 2.14+) for publishMode=fast"
        elif exc.err_code == JSAtomicPublishDisabledErr.err_code:
            text += "; the stream needs allow_atomic (nats-server 2.12+) for publishMode=atomic"
        elif exc.err_code == JSAtomicPublishTooLargeBatchErrF.err_code:
            text += "; set the atomicBatchSize option to at most that (the server's batch max_msgs)"
        return PublishError(f"publishMode={mode}: JetStream refused a batch: {text}")
    return PublishError(f"publishMode={mode}: {exc}")


class FastBatchPublisher:
    """The task's rows as one fast-ingest batch (gap mode ``fail``: the batch stops at the first
    lost or refused message, and the task fails with the server's error)."""

    def __init__(self, nc: Client, *, flow: int, ack_timeout: float) -> None:
        self.js: JetStream = jetstream(nc)
        self.flow = flow
        self.ack_timeout = ack_timeout
        self.stats = PublishStats()
        self._pub: FastPublisher | None = None
        self._sent = 0

    async def start(self) -> None:
        """Opens the batch (its first message tells whether the stream takes it)."""
        pub = self.js.fast_publisher(gap="fail", flow=self.flow, ack_timeout=self.ack_timeout)
        try:
            self._pub = await pub.__aenter__()
        except Exception as exc:
            raise _refusal("fast", exc) from exc

    async def publish_many(self, messages: Iterable[Message]) -> None:
        pub = self._pub
        assert pub is not None
        rows = list(messages)
        try:
            await pub.add_many(rows)
            self._sent += len(rows)
        except Exception as exc:
            raise _refusal("fast", exc) from exc

    async def flush(self) -> PublishStats:
        """Commits the batch (an end-of-batch marker, nothing more stored) and checks that the
        server reached every message."""
        pub, self._pub = self._pub, None
        assert pub is not None
        try:
            if not self._sent:
                return self.stats
            ack = await pub.commit()
        except Exception as exc:
            raise _refusal("fast", exc) from exc
        finally:
            await pub.__aexit__(None, None, None)
        if ack.count != self._sent:
            raise PublishError(
                f"publishMode=fast: the batch's PubAck counts {ack.count} messages of {self._sent} sent"
            )
        stats = self.stats
        stats.published = ack.count  # stored, or skipped as duplicates: the PubAck does not say which
        stats.last_seq = ack.seq
        return stats

    async def close(self) -> None:
        """After a failure: ends the batch (a fast batch is not atomic; what was stored stays)."""
        pub, self._pub = self._pub, None
        if pub is not None:
            with contextlib.suppress(Exception):
                await pub.__aexit__(None, None, None)


class _BeforeFailed(Exception):
    """The batch before this one failed: this one is discarded before its commit."""


async def _settled(task: asyncio.Future[None]) -> None:
    """Wait for ``task`` to end, whatever its outcome (the failure is reported elsewhere)."""
    with contextlib.suppress(BaseException):
        await task


class AtomicBatchPublisher:
    """The task's rows as consecutive atomic batches of at most ``batch_size`` rows."""

    def __init__(self, nc: Client, *, batch_size: int, window: int, ack_timeout: float, retries: int) -> None:
        self.nc = nc
        self.js: JetStream = jetstream(nc, timeout=ack_timeout)
        self.batch_size = batch_size
        self.window = window
        self.ack_timeout = ack_timeout
        self.retries = retries
        self.stats = PublishStats()
        self._pending: list[Message] = []
        self._fallback: Publisher | None = None
        self._last: asyncio.Task[None] | None = None  # the batch last handed over (staging or committing)

    async def start(self) -> None:
        try:
            await self.js.require(Feature.ATOMIC_BATCH)
        except Exception as exc:
            raise _refusal("atomic", exc) from exc

    async def publish_many(self, messages: Iterable[Message]) -> None:
        pending = self._pending
        size = self.batch_size
        for message in messages:
            pending.append(message)
            if len(pending) >= size:
                self._pending = []
                await self._hand_over(pending)
                pending = self._pending

    async def flush(self) -> PublishStats:
        if self._pending:
            batch, self._pending = self._pending, []
            await self._hand_over(batch)
        last, self._last = self._last, None
        if last is not None:
            await last
        if self._fallback is not None:
            extra = await self._fallback.flush()
            self.stats.published += extra.published
            self.stats.duplicates += extra.duplicates
            self.stats.retries += extra.retries
            self._note_seqs(extra.first_seq, extra.last_seq)
        return self.stats

    async def close(self) -> None:
        last, self._last = self._last, None
        if last is not None:  # after a failure: the batch staged behind it is discarded
            await _settled(last)
        if self._fallback is not None:
            await self._fallback.close()

    async def _hand_over(self, batch: list[Message]) -> None:
        """Start ``batch`` (staged now, committed once the one before it is answered), then wait
        for the one before it: at most two batches are open."""
        before = self._last
        self._last = asyncio.ensure_future(self._publish_batch(batch, before))
        if before is not None:
            try:
                await before
            except BaseException:
                last, self._last = self._last, None
                await _settled(last)  # it saw the failure before its commit: discarded
                raise

    async def _publish_batch(self, batch: list[Message], before: asyncio.Future[None] | None = None) -> None:
        """Stage every row, commit with the last — once ``before`` (the batch before it) is
        answered; all or nothing. Retried on a lost answer."""
        attempts = 0
        while True:
            attempts += 1
            try:
                async with self.js.batch_publisher(timeout=self.ack_timeout) as pub:
                    await pub.add_many(batch[:-1])
                    if before is not None:
                        try:
                            await asyncio.shield(before)
                        except BaseException:
                            raise _BeforeFailed from None  # leaving the block discards this batch
                        before = None
                    subject, data, headers = batch[-1]
                    ack = await pub.commit(subject, data, headers=headers)
            except JetStreamAPIError as exc:
                if exc.err_code == JSAtomicPublishContainsDuplicateMessageErr.err_code:
                    await self._publish_one_by_one(batch)
                    return
                raise _refusal("atomic", exc) from exc
            except (ClientTimeoutError, TimeoutError, NoStreamResponse) as exc:
                if attempts > self.retries:
                    if isinstance(exc, NoStreamResponse):
                        raise _refusal("atomic", exc) from exc
                    raise PublishError(
                        f"publishMode=atomic: no answer to an atomic batch commit after {attempts} attempts "
                        f"of {self.ack_timeout}s each"
                    ) from exc
                self.stats.retries += 1
                if isinstance(exc, NoStreamResponse):
                    await asyncio.sleep(NO_RESPONDERS_WAIT)  # a stream leader may be moving
                continue
            except (BatchPublishError, FeatureNotSupported) as exc:
                raise _refusal("atomic", exc) from exc
            self.stats.published += ack.count or len(batch)
            self._note_seqs(ack.seq - len(batch) + 1, ack.seq)
            return

    async def _publish_one_by_one(self, batch: list[Message]) -> None:
        """A batch that overlaps rows an earlier attempt stored: each row with its id, so the
        stream keeps only the missing ones."""
        if self._fallback is None:
            self._fallback = Publisher(self.nc, window=self.window, ack_timeout=self.ack_timeout, retries=self.retries)
            await self._fallback.start()
        await self._fallback.publish_many(batch)

    def _note_seqs(self, first: int, last: int) -> None:
        stats = self.stats
        if first > 0 and (not stats.first_seq or first < stats.first_seq):
            stats.first_seq = first
        stats.last_seq = max(stats.last_seq, last)
