"""Batch publishing (ADR-50): atomic batches (2.12+) and fast-ingest batches (2.14+).

Both are async context managers that cannot leave a half-open batch behind.

**Atomic** ([`BatchPublisher`][], ``js.batch_publisher()``; stream ``allow_atomic``): every
message carries ``Nats-Batch-Id`` and ``Nats-Batch-Sequence`` (1, 2, …); nothing is stored until the
commit, then all or nothing, with one PubAck (``batch``, ``count``). The first message is a request
(the server answers an empty message, or the error: atomic publish disabled …), later ones are plain
publishes (every ``ack_every``-th a request, as flow control). The last carries
``Nats-Batch-Commit: 1`` (or ``eob``, 2.14+: commit without storing that message). Leaving the
``async with`` without a commit *discards* the batch at once: one more message with a sequence gap
makes the server abandon it (10176) instead of holding it for its 10 s timeout.

**Fast ingest** ([`FastPublisher`][], ``js.fast_publisher()``; stream ``allow_batched``): not
atomic and not limited in size — the fastest way to load a stream. The control state travels in the
reply subject ``<inbox>.<id>.<flow>.<gap>.<seq>.<op>.$FI`` (op 0 start, 1 append, 2 commit, 3 commit
without storing, 4 ping) on one inbox subscription per batch. The server answers the first message
with ``{"type":"ack","seq":N,"msgs":F}`` and then every F messages; the publisher keeps at most
``max_outstanding_acks`` × F messages unacknowledged (backpressure), follows the server's F, and
reports ``{"type":"gap"}`` / ``{"type":"err"}`` messages. Leaving the ``async with`` ends the batch
(commit without storing a message) whether or not an exception is on its way.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.durations import Duration, seconds_or_none
from pyjetstream.api.fast_batch import (
    GAP_FAIL,
    GAP_OK,
    MAX_FLOW,
    OP_APPEND,
    OP_COMMIT,
    OP_COMMIT_EOB,
    OP_PING,
    OP_START,
    BatchFlowAck,
    BatchFlowErr,
    BatchFlowGap,
    fast_batch_reply,
    fast_batch_reply_parts,
)
from pyjetstream.api.headers import BATCH_COMMIT, BATCH_COMMIT_ALL, BATCH_COMMIT_EOB, BATCH_ID, BATCH_SEQUENCE
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_msg import PubAck
from pyjetstream.client.errors import NoRespondersError, TimeoutError
from pyjetstream.client.inbox import next_nuid
from pyjetstream.client.jetstream.errors import (
    BatchPublishError,
    InvalidOption,
    NoStreamResponse,
    api_exception,
)
from pyjetstream.client.jetstream.publish import Headers, pub_ack_from_reply, publish_headers
from pyjetstream.protocol import HeaderBlock

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.msg import Msg
    from pyjetstream.client.subscription import Subscription

HeadersArg = Mapping[str, str | Iterable[str]] | HeaderBlock | bytes | None

MAX_ATOMIC_BATCH = 1000  # nats-server's default per-batch limit
DEFAULT_FLOW = 100  # fast ingest: ask for an ack every 100 messages at most (the server may lower it)
DEFAULT_MAX_OUTSTANDING_ACKS = 2  # ADR-50: 2 is "generally optimal"


_BATCH_ID_B = BATCH_ID.encode()
_BATCH_SEQUENCE_B = BATCH_SEQUENCE.encode()


def _with_batch(headers: Headers | bytes | None, extra: list[tuple[str, str]]) -> Headers | bytes:
    if isinstance(headers, bytes):  # an encoded block: the batch headers go before its blank line
        return headers[:-2] + "".join(f"{name}: {value}\r\n" for name, value in extra).encode() + b"\r\n"
    out: Headers = dict(headers) if headers else {}
    out.update(extra)
    return out


def _headers(headers: HeadersArg, options: dict[str, Any]) -> Headers | bytes | None:
    """``publish_headers`` of the user's headers and options; an encoded block (``bytes``, see
    `pyjetstream.client.msg.HeadersArg`) is sent as it is, so it takes no options."""
    if isinstance(headers, bytes):
        if options:
            raise InvalidOption("publish options cannot be added to an encoded header block")
        return headers
    return publish_headers(headers, **options)


class BatchPublisher:
    """An atomic batch: ``async with js.batch_publisher() as batch: await batch.add(...); await
    batch.commit(...)``. ``ack_every`` > 0 also waits for the server every that many messages."""

    def __init__(self, js: JetStream, *, ack_every: int = 0, timeout: Duration | None = None) -> None:
        if ack_every < 0:
            raise InvalidOption("ack_every cannot be negative")
        self._js = js
        self.batch_id = next_nuid()
        self._ack_every = ack_every
        self._timeout = seconds_or_none(timeout) or js.timeout
        self._seq = 0
        self._last_subject = ""
        self._closed = False
        self.ack: PubAck | None = None

    @property
    def size(self) -> int:
        """Messages added so far."""
        return self._seq

    @property
    def is_closed(self) -> bool:
        return self._closed

    async def __aenter__(self) -> BatchPublisher:
        await self._js.require(Feature.ATOMIC_BATCH)
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._closed:
            return
        await self.discard()
        if exc_type is None:
            raise BatchPublishError(f"batch {self.batch_id} was not committed: discarded")

    async def add(self, subject: str, data: bytes = b"", *, headers: HeadersArg = None, **options: Any) -> None:
        """Stage a message (``options``: ``publish``'s ``msg_id``, ``expect_*``, ``ttl``)."""
        self._check_open()
        if self._seq + 1 >= MAX_ATOMIC_BATCH:
            raise BatchPublishError(f"an atomic batch holds at most {MAX_ATOMIC_BATCH} messages")
        own = _headers(headers, options)  # before the sequence moves: a refused option stages nothing
        self._seq += 1
        hdrs = _with_batch(own, [(BATCH_ID, self.batch_id), (BATCH_SEQUENCE, str(self._seq))])
        self._last_subject = subject
        nc = self._js.nc
        if self._seq == 1 or (self._ack_every and self._seq % self._ack_every == 0):
            reply = await self._request(subject, data, hdrs)
            if reply.data:  # an error PubAck; an empty reply is the flow ack
                self._closed = True
                pub_ack_from_reply(reply)  # raises the server's error
                raise BatchPublishError(f"unexpected reply to batch message {self._seq}")
        else:
            await nc.publish(subject, data, headers=hdrs)

    async def add_many(self, messages: Sequence[tuple[str, bytes, HeadersArg]]) -> None:
        """[`add`][] of each ``(subject, data, headers)`` in order (no publish options): the
        messages [`add`][] sends as requests (the first, every ``ack_every``-th) one by one, the
        plain publishes between them as one run (``Client.publish_many_nowait``) — for a bulk
        loader (the Spark sink's ``publishMode=atomic``)."""
        nc = self._js.nc
        batch_id = self.batch_id.encode()
        i = 0
        n = len(messages)
        while i < n:
            self._check_open()
            nxt = self._seq + 1
            ack_every = self._ack_every
            if nxt == 1 or (ack_every and nxt % ack_every == 0) or nxt >= MAX_ATOMIC_BATCH:
                subject, data, headers = messages[i]
                await self.add(subject, data, headers=headers)  # (a request, or the size error)
                i += 1
                continue
            # The plain publishes up to the next request, and below the batch's size limit.
            end = min(n, i + MAX_ATOMIC_BATCH - nxt)
            if ack_every:
                end = min(end, i + ack_every - nxt % ack_every)
            run: list[tuple[str, bytes, Headers | bytes | None]] = []
            seq = self._seq
            for subject, data, headers in messages[i:end]:
                seq += 1
                own = _headers(headers, {})
                if isinstance(own, bytes):  # _with_batch's bytes, framed at once
                    block: Headers | bytes = b"%b%b: %b\r\n%b: %d\r\n\r\n" % (
                        own[:-2],
                        _BATCH_ID_B,
                        batch_id,
                        _BATCH_SEQUENCE_B,
                        seq,
                    )
                else:
                    block = _with_batch(own, [(BATCH_ID, self.batch_id), (BATCH_SEQUENCE, str(seq))])
                run.append((subject, data, block))
            nc.publish_many_nowait(run)
            self._seq = seq
            self._last_subject = run[-1][0]
            i = end
            await nc.wait_writable()

    async def commit(
        self, subject: str | None = None, data: bytes = b"", *, headers: HeadersArg = None, **options: Any
    ) -> PubAck:
        """Commit: with ``subject``, this last message is stored too; without, the batch ends with the
        messages added so far (``Nats-Batch-Commit: eob``, 2.14+). Returns the batch's PubAck."""
        self._check_open()
        if subject is None:
            if not self._seq:
                raise BatchPublishError("nothing to commit")
            await self._js.require(Feature.BATCH_EOB)
            subject, commit = self._last_subject, BATCH_COMMIT_EOB
        else:
            commit = BATCH_COMMIT_ALL
        self._seq += 1
        extra = [(BATCH_ID, self.batch_id), (BATCH_SEQUENCE, str(self._seq)), (BATCH_COMMIT, commit)]
        hdrs = _with_batch(_headers(headers, options) if commit == BATCH_COMMIT_ALL else None, extra)
        self._closed = True
        reply = await self._request(subject, data if commit == BATCH_COMMIT_ALL else b"", hdrs)
        self.ack = pub_ack_from_reply(reply)
        return self.ack

    async def discard(self) -> None:
        """Abandon the batch now: nothing of it is stored (a no-op once committed or discarded)."""
        if self._closed:
            return
        self._closed = True
        if not self._seq:
            return
        # A message after a gap in the sequence makes the server drop the batch (10176) right away.
        hdrs: Headers = {BATCH_ID: self.batch_id, BATCH_SEQUENCE: str(self._seq + 2)}
        try:
            await self._request(self._last_subject, b"", hdrs)
        except (TimeoutError, NoStreamResponse):
            pass  # the server drops it after its own timeout (10 s without messages)

    async def _request(self, subject: str, data: bytes, headers: Headers | bytes) -> Msg:
        try:
            return await self._js.nc.request(subject, data, timeout=self._timeout, headers=headers)
        except NoRespondersError:
            self._closed = True
            raise NoStreamResponse() from None

    def _check_open(self) -> None:
        if self._closed:
            raise BatchPublishError(f"batch {self.batch_id} is already committed or discarded")


# --- fast ingest ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FastPubAck:
    """What ``FastPublisher.add`` returns: this message's batch sequence and the highest batch
    sequence the server acknowledged so far (with ``gap="fail"``: everything up to it is stored)."""

    batch_sequence: int
    ack_sequence: int


@dataclass(frozen=True, slots=True)
class BatchGap:
    """Messages ``expected`` up to (not including) ``seq`` were lost."""

    expected: int
    seq: int


class FastPublisher:
    """A fast-ingest batch: ``async with js.fast_publisher() as pub: await pub.add(...)``; leaving
    the block ends the batch (``pub.ack`` is then the final PubAck with ``batch``/``count``).

    ``gap="fail"`` (default) stops the batch at the first lost message, so what is stored has no
    holes; ``gap="ok"`` carries on. ``flow``: ack every that many messages at most (the server may
    ask for acks more often); ``max_outstanding_acks``: how many acks may be outstanding before
    ``add`` waits; ``ack_timeout``: how long it waits (then it pings the batch once)."""

    def __init__(
        self,
        js: JetStream,
        *,
        gap: str = "fail",
        flow: int = DEFAULT_FLOW,
        max_outstanding_acks: int = DEFAULT_MAX_OUTSTANDING_ACKS,
        ack_timeout: Duration | None = None,
    ) -> None:
        if gap not in (GAP_FAIL, GAP_OK):
            raise InvalidOption(f'gap must be "{GAP_FAIL}" or "{GAP_OK}"')
        if not 1 <= flow <= MAX_FLOW:
            raise InvalidOption(f"flow must be between 1 and {MAX_FLOW}")
        if max_outstanding_acks < 1:
            raise InvalidOption("max_outstanding_acks must be at least 1")
        self._js = js
        self.batch_id = next_nuid()
        self._gap = gap
        self._flow = flow
        self._max_outstanding = max_outstanding_acks
        self._ack_timeout = seconds_or_none(ack_timeout) or js.timeout
        self._inbox = ""
        self._prefix = ""
        self._sub: Subscription | None = None
        self._seq = 0
        self._last_subject = ""
        self._acked = 0
        self._msgs = flow  # the server's current ack frequency
        self._changed: asyncio.Event = asyncio.Event()
        self._final: asyncio.Future[Msg] | None = None
        self._first: asyncio.Future[None] | None = None
        self._closed = False
        self.ack: PubAck | None = None
        self.gaps: list[BatchGap] = []
        self.errors: list[tuple[int, ApiError]] = []

    @property
    def size(self) -> int:
        return self._seq

    @property
    def ack_sequence(self) -> int:
        return self._acked

    async def __aenter__(self) -> FastPublisher:
        await self._js.require(Feature.FAST_BATCH)
        nc = self._js.nc
        self._inbox = nc.new_inbox()
        self._prefix = f"{self._inbox}.{self.batch_id}"
        loop = asyncio.get_running_loop()
        self._final = loop.create_future()
        self._first = loop.create_future()
        self._sub = await nc.subscribe(self._prefix + ".>", cb=self._on_reply)
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if not self._closed and self._seq:
                await self.commit()
        finally:
            self._close()

    def _reply(self, seq: int, op: int) -> str:
        return fast_batch_reply(self._inbox, self.batch_id, self._flow, self._gap == GAP_OK, seq, op)

    def _on_reply(self, msg: Msg) -> None:
        if self._first is not None and not self._first.done():
            self._first.set_result(None)
        if msg.is_no_responders():
            self._settle(msg)
            return
        try:
            doc = msgspec.json.decode(msg.data)
            kind = doc.get("type") if isinstance(doc, dict) else None
            if kind == "ack":
                ack = msgspec.convert(doc, BatchFlowAck)
                self._acked = max(self._acked, ack.seq)
                if ack.msgs:
                    self._msgs = ack.msgs
            elif kind == "gap":
                gap = msgspec.convert(doc, BatchFlowGap)
                self.gaps.append(BatchGap(gap.last_seq, gap.seq))
            elif kind == "err":
                err = msgspec.convert(doc, BatchFlowErr)
                if err.error is not None:
                    self.errors.append((err.seq, err.error))
            else:  # a PubAck: the batch is over (committed, or refused)
                self._settle(msg)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        self._changed.set()

    def _settle(self, msg: Msg) -> None:
        if self._final is not None and not self._final.done():
            self._final.set_result(msg)
        self._changed.set()

    async def _wait_change(self) -> None:
        self._changed.clear()
        await asyncio.wait_for(self._changed.wait(), self._ack_timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise BatchPublishError(f"fast batch {self.batch_id} is over")
        if self._final is None:
            raise BatchPublishError("use the fast publisher in `async with`")
        if self._final.done():
            self._closed = True
            self.ack = pub_ack_from_reply(self._final.result())  # raises the server's error
            raise BatchPublishError(f"fast batch {self.batch_id} ended early")
        if self._gap == "fail" and (self.errors or self.gaps):
            raise BatchPublishError(self._failure())

    def _failure(self) -> str:
        if self.errors:
            seq, err = self.errors[0]
            return f"fast batch stopped at message {seq}: {api_exception(err)}"
        gap = self.gaps[0]
        return f"fast batch stopped: messages {gap.expected} to {gap.seq - 1} were lost"

    async def add(self, subject: str, data: bytes = b"", *, headers: HeadersArg = None, **options: Any) -> FastPubAck:
        """Publish one message of the batch (``options``: ``publish``'s ``msg_id``, ``expect_*``,
        ``ttl``); waits while too many acks are outstanding."""
        self._check_open()
        self._seq += 1
        seq = self._seq
        self._last_subject = subject
        nc = self._js.nc
        hdrs = _headers(headers, options)
        await nc.publish(subject, data, reply=self._reply(seq, OP_START if seq == 1 else OP_APPEND), headers=hdrs)
        if seq == 1:
            # The first answer says whether the stream takes fast batches, and at what flow.
            assert self._first is not None
            try:
                await asyncio.wait_for(asyncio.shield(self._first), self._ack_timeout)
            except builtins.TimeoutError:
                self._closed = True
                raise TimeoutError(f"no answer to the start of fast batch {self.batch_id}") from None
            self._check_open()
        await self._flow_wait(seq)
        return FastPubAck(seq, self._acked)

    async def add_many(self, messages: Sequence[tuple[str, bytes, HeadersArg]]) -> None:
        """[`add`][] of each ``(subject, data, headers)`` in order (no publish options), every run
        that flow control lets out sent at once (``Client.publish_requests_nowait``), with the same
        waits as [`add`][] — for a bulk loader (the Spark sink's ``publishMode=fast``)."""
        i = 0
        if messages and not self._seq:  # the first goes alone: its answer says whether the stream takes it
            subject, data, headers = messages[0]
            await self.add(subject, data, headers=headers)
            i = 1
        nc = self._js.nc
        head, tail = fast_batch_reply_parts(self._inbox, self.batch_id, self._flow, self._gap == GAP_OK, OP_APPEND)
        while i < len(messages):
            self._check_open()
            # add() sends message s, then waits while s >= acked + msgs * outstanding: so every
            # message up to that bound goes out without a wait, and the wait comes after the run.
            room = self._acked + self._msgs * self._max_outstanding - self._seq
            run = [(s, d, _headers(h, {})) for s, d, h in messages[i : i + max(1, room)]]
            first = self._seq + 1
            nc.publish_requests_nowait(run, head, range(first, first + len(run)), tail)
            self._seq += len(run)
            self._last_subject = run[-1][0]
            i += len(run)
            await nc.wait_writable()
            await self._flow_wait(self._seq)

    async def _flow_wait(self, seq: int) -> None:
        """Wait while too many acks are outstanding after message ``seq`` (pinging once if the ack
        seems lost)."""
        pinged = False
        while self._acked + self._msgs * self._max_outstanding <= seq:
            self._check_open()
            try:
                await self._wait_change()
            except builtins.TimeoutError:
                if pinged:
                    raise TimeoutError(f"no flow ack for fast batch {self.batch_id}") from None
                pinged = True  # the ack may be lost: a ping makes the server repeat the last one
                await self._js.nc.publish(self._last_subject, b"", reply=self._reply(self._seq, OP_PING))

    async def commit(
        self, subject: str | None = None, data: bytes = b"", *, headers: HeadersArg = None, **options: Any
    ) -> PubAck:
        """End the batch: with ``subject`` this last message is stored too; without, nothing more is
        stored. Returns the PubAck (``batch``, ``count``)."""
        if self._closed:
            raise BatchPublishError(f"fast batch {self.batch_id} is over")
        if self._final is None:
            raise BatchPublishError("use the fast publisher in `async with`")
        if subject is None and not self._seq:
            raise BatchPublishError("nothing to commit")
        self._closed = True
        self._seq += 1
        nc = self._js.nc
        if subject is None:
            await nc.publish(self._last_subject, b"", reply=self._reply(self._seq, OP_COMMIT_EOB))
        else:
            hdrs = _headers(headers, options)
            await nc.publish(subject, data, reply=self._reply(self._seq, OP_COMMIT), headers=hdrs)
        try:
            reply = await asyncio.wait_for(asyncio.shield(self._final), self._ack_timeout)
        except builtins.TimeoutError:
            raise TimeoutError(f"no PubAck for fast batch {self.batch_id}") from None
        self.ack = pub_ack_from_reply(reply)
        if self._gap == "fail" and (self.errors or self.gaps):
            raise BatchPublishError(self._failure())
        return self.ack

    def _close(self) -> None:
        self._closed = True
        sub = self._sub
        if sub is not None and not sub.is_closed:
            sub.unsubscribe_nowait()
