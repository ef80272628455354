"""``Stream``: a handle on one stream — info, purge, stored messages and its consumers.

Getting a stored message uses ``DIRECT.GET`` when the stream allows it (``allow_direct``; any replica
answers, the reply is the raw message with ``Nats-Stream``/``-Sequence``/``-Subject``/``-Time-Stamp``
headers) and ``STREAM.MSG.GET`` otherwise (JSON with base64 headers and data).

⟨2.11+⟩ ``get_batch`` and ``get_last_msgs_for`` are one batched ``DIRECT.GET`` each (ADR-31): the
replies come to one inbox, each a raw message, then an empty ``204 EOB`` status; both are async
iterators and need ``allow_direct``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api.api_levels import Feature
from pyjetstream.api.codec import encode
from pyjetstream.api.headers import SEQUENCE, STREAM, SUBJECT, TIME_STAMP
from pyjetstream.api.models_msg import MsgDeleteRequest, MsgGetRequest
from pyjetstream.api.requests import StreamInfoRequest, StreamPurgeRequest
from pyjetstream.api.responses import (
    MsgDeleteResponse,
    MsgGetResponse,
    StreamInfoResponse,
    StreamPurgeResponse,
)
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime
from pyjetstream.client.errors import NoRespondersError
from pyjetstream.client.errors import TimeoutError as NatsTimeoutError
from pyjetstream.client.jetstream.errors import (
    InvalidOption,
    JetStreamError,
    MsgDeleteUnsuccessful,
    MsgNotFound,
)
from pyjetstream.client.jetstream.models import from_wire
from pyjetstream.protocol import HeaderBlock, parse_headers

if TYPE_CHECKING:
    from pyjetstream.api.durations import Duration
    from pyjetstream.api.models_consumer import ConsumerConfig
    from pyjetstream.client.jetstream.consumer import PullConsumer
    from pyjetstream.client.jetstream.context import ConsumerResetResult, JetStream
    from pyjetstream.client.jetstream.models import ConsumerInfo, ConsumerPauseResponse, StreamInfo
    from pyjetstream.client.jetstream.ordered import OrderedConsumer, OrderedConsumerConfig
    from pyjetstream.client.jetstream.push import PushConsumer
    from pyjetstream.client.msg import Msg


@dataclass(slots=True)
class RawStreamMsg:
    """A message as stored in a stream (nats.go ``RawStreamMsg``)."""

    subject: str
    sequence: int
    data: bytes
    header_block: HeaderBlock | None
    time: NanoTime

    @property
    def headers(self) -> dict[str, str] | None:
        """``{name: first value}``; ``None`` when the message has no headers."""
        block = self.header_block
        if block is None:
            return None
        return {name: values[0] for name, values in block.headers.items() if values}


def raw_msg_from_direct(reply: Msg, stream: str) -> RawStreamMsg:
    """Decode a DIRECT.GET reply (nats.go ``convertDirectGetMsgResponseToMsg``)."""
    if not reply.data and reply.raw_headers is not None and reply.status:
        if reply.status == 404:
            raise MsgNotFound()
        raise JetStreamError(reply.description or "unable to get message", code=reply.status)
    block = reply.header_block
    if block is None:
        raise JetStreamError("direct get reply without headers")
    try:
        seq = int(block.get(SEQUENCE) or "")
    except ValueError:
        raise JetStreamError("direct get reply without a valid Nats-Sequence header") from None
    stamp = block.get(TIME_STAMP)
    time = NanoTime.parse(stamp) if stamp else NanoTime(ZERO_TIME)
    if block.get(STREAM) is None:
        raise JetStreamError("direct get reply without a Nats-Stream header")
    return RawStreamMsg(block.get(SUBJECT) or "", seq, reply.data, block, time)


class Stream:
    """A stream handle (nats.go ``jetstream.Stream``); get one from ``JetStream`` methods."""

    def __init__(self, js: JetStream, info: StreamInfo) -> None:
        self._js = js
        self._info = info
        self._name = info.config.name

    @property
    def name(self) -> str:
        return self._name

    # --- info --------------------------------------------------------------------------------------

    async def info(self, *, subject_filter: str | None = None, deleted_details: bool = False) -> StreamInfo:
        """Fresh info. ``subject_filter`` fills ``state.subjects`` (message count per matching subject,
        every page fetched); ``deleted_details`` fills ``state.deleted``."""
        subjects: dict[str, int] = {}
        offset = 0
        while True:
            body = None
            if subject_filter or deleted_details:
                body = StreamInfoRequest(
                    offset=offset, deleted_details=deleted_details, subjects_filter=subject_filter or ""
                )
            resp = await self._js._request(self._js.api.stream_info(self._name), body, StreamInfoResponse)
            info: StreamInfo = from_wire(resp.payload())
            page = info.state.subjects
            subjects.update(page)
            offset = len(subjects)
            if not subject_filter or not page or resp.total <= offset:
                break
        cached = info
        if subject_filter:
            info.state.subjects = subjects
            # Keep the per-subject details out of the cache (nats.go does the same).
            cached = _without_subjects(info)
        self._info = cached
        return info

    def cached_info(self) -> StreamInfo:
        """The info from the last server call, without a round trip."""
        return self._info

    # --- purge ---------------------------------------------------------------------------------------

    async def purge(
        self, *, subject: str | None = None, sequence: int | None = None, keep: int | None = None
    ) -> int:
        """Remove messages: all, only ``subject``'s, those below ``sequence``, or all but the newest
        ``keep`` (``sequence`` and ``keep`` exclude each other). Returns how many were purged."""
        if sequence is not None and keep is not None:
            raise InvalidOption("sequence and keep cannot be combined")
        body = None
        if subject or sequence or keep:
            body = StreamPurgeRequest(seq=sequence or 0, filter=subject or "", keep=keep or 0)
        resp = await self._js._request(self._js.api.stream_purge(self._name), body, StreamPurgeResponse)
        if not resp.success:
            raise JetStreamError(f"purge of stream {self._name!r} failed")
        return resp.purged

    # --- stored messages -----------------------------------------------------------------------------

    async def get_msg(
        self, seq: int, *, next_by_subject: str | None = None, direct: bool | None = None
    ) -> RawStreamMsg:
        """The message at ``seq`` or, with ``next_by_subject``, the first at/after ``seq`` on that
        subject (wildcards allowed). [`MsgNotFound`][] if there is none."""
        request = MsgGetRequest(seq=seq, next_by_subj=next_by_subject or "")
        return await self._get(request, direct)

    async def get_last_msg_for_subject(self, subject: str, *, direct: bool | None = None) -> RawStreamMsg:
        """The newest message on ``subject``. [`MsgNotFound`][] if there is none."""
        return await self._get(MsgGetRequest(last_by_subj=subject), direct)

    async def _get(self, request: MsgGetRequest, direct: bool | None) -> RawStreamMsg:
        use_direct = self._info.config.allow_direct if direct is None else direct
        if use_direct:
            try:
                return await self._direct_get(request)
            except JetStreamError as exc:
                # Chosen for the caller (the stream allows direct gets): in a cluster the replicas'
                # direct-get responders come up a moment after the stream is created, while the
                # leader already answers STREAM.MSG.GET — ask it instead of failing.
                if direct is not None or exc.code != 503:
                    raise
        resp = await self._js._request(self._js.api.stream_msg_get(self._name), request, MsgGetResponse)
        stored = resp.message
        if stored is None:
            raise MsgNotFound()
        block = parse_headers(stored.hdrs) if stored.hdrs else None
        return RawStreamMsg(stored.subject, stored.seq, stored.data, block, stored.time)

    async def _direct_get(self, request: MsgGetRequest) -> RawStreamMsg:
        js = self._js
        if request.last_by_subj:
            subject, body = js.api.direct_get_last(self._name, request.last_by_subj), b""
        else:
            subject, body = js.api.direct_get(self._name), encode(request)
        try:
            reply = await js.nc.request(subject, body, timeout=js.timeout)
        except NoRespondersError:
            raise JetStreamError(f"no responders for direct get on stream {self._name!r}", code=503) from None
        return raw_msg_from_direct(reply, self._name)

    async def get_batch(
        self,
        batch: int,
        *,
        seq: int | None = None,
        subject: str | None = None,
        start_time: datetime | None = None,
        max_bytes: int | None = None,
    ) -> AsyncIterator[RawStreamMsg]:
        """Up to ``batch`` stored messages in one request (2.11+, ``allow_direct``): from sequence
        ``seq`` (default 1) or the first at/after ``start_time``, only ``subject``'s (wildcards
        allowed) if given, at most ``max_bytes`` in total. ``async for msg in stream.get_batch(10)``."""
        if batch <= 0:
            raise InvalidOption("batch must be positive")
        if seq is not None and start_time is not None:
            raise InvalidOption("seq and start_time cannot be combined")
        request = MsgGetRequest(
            seq=seq or (0 if start_time is not None else 1),
            next_by_subj=subject or "",
            batch=batch,
            max_bytes=max_bytes or 0,
            start_time=_nano(start_time),
        )
        async for msg in self._direct_batch(request):
            yield msg

    async def get_last_msgs_for(
        self,
        subjects: Iterable[str],
        *,
        up_to_seq: int | None = None,
        up_to_time: datetime | None = None,
        batch: int | None = None,
    ) -> AsyncIterator[RawStreamMsg]:
        """The last message of every subject matching ``subjects`` (filters, wildcards allowed) in one
        request (2.11+, ``allow_direct``), as the stream was at ``up_to_seq`` / ``up_to_time``; in
        sequence order. ``batch`` caps how many come back."""
        filters = list(subjects)
        if not filters:
            raise InvalidOption("at least one subject is required")
        if up_to_seq is not None and up_to_time is not None:
            raise InvalidOption("up_to_seq and up_to_time cannot be combined")
        request = MsgGetRequest(
            multi_last=filters, up_to_seq=up_to_seq or 0, up_to_time=_nano(up_to_time), batch=batch or 0
        )
        async for msg in self._direct_batch(request):
            yield msg

    async def _direct_batch(self, request: MsgGetRequest) -> AsyncIterator[RawStreamMsg]:
        """One batched DIRECT.GET: the replies until ``204 EOB`` (a 404 means nothing matched)."""
        js = self._js
        await js.require(Feature.BATCH_GET)
        if not self._info.config.allow_direct and not self._info.config.mirror_direct:
            raise InvalidOption(f"batch get needs allow_direct on stream {self._name!r}")
        nc = js.nc
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        try:
            nc.publish_nowait(js.api.direct_get(self._name), encode(request), reply=inbox)
            while True:
                try:
                    reply = await sub.next_msg(timeout=js.timeout)
                except NatsTimeoutError:
                    raise JetStreamError(f"batch get on stream {self._name!r} timed out") from None
                status = reply.status if reply.raw_headers is not None and not reply.data else 0
                if status == 204 or status == 404:
                    return
                if status == 503:
                    raise JetStreamError(f"no responders for direct get on stream {self._name!r}", code=503)
                if status:
                    raise JetStreamError(reply.description or "batch get failed", code=status)
                yield raw_msg_from_direct(reply, self._name)
        finally:
            if not sub.is_closed:
                sub.unsubscribe_nowait()

    async def delete_msg(self, seq: int) -> None:
        """Delete the message at ``seq`` (marked deleted, not overwritten)."""
        await self._delete(seq, no_erase=True)

    async def secure_delete_msg(self, seq: int) -> None:
        """Delete the message at ``seq`` and overwrite it with random data (slower)."""
        await self._delete(seq, no_erase=False)

    async def _delete(self, seq: int, *, no_erase: bool) -> None:
        request = MsgDeleteRequest(seq=seq, no_erase=no_erase)
        resp = await self._js._request(self._js.api.stream_msg_delete(self._name), request, MsgDeleteResponse)
        if not resp.success:
            raise MsgDeleteUnsuccessful()

    # --- consumers -----------------------------------------------------------------------------------

    async def create_consumer(self, config: ConsumerConfig) -> PullConsumer:
        """Create a pull consumer on this stream (see `JetStream.create_consumer`)."""
        return await self._js.create_consumer(self._name, config)

    async def update_consumer(self, config: ConsumerConfig) -> PullConsumer:
        """Update one of this stream's consumers (see `JetStream.update_consumer`)."""
        return await self._js.update_consumer(self._name, config)

    async def create_or_update_consumer(self, config: ConsumerConfig) -> PullConsumer:
        """Create a pull consumer on this stream, or update it if it exists."""
        return await self._js.create_or_update_consumer(self._name, config)

    async def consumer(self, name: str) -> PullConsumer:
        """A handle on an existing consumer of this stream ([`ConsumerNotFound`][pyjetstream.client.jetstream.errors.ConsumerNotFound] if missing)."""
        return await self._js.consumer(self._name, name)

    async def delete_consumer(self, name: str) -> None:
        """Delete one of this stream's consumers."""
        await self._js.delete_consumer(self._name, name)

    async def ordered_consumer(self, config: OrderedConsumerConfig | None = None) -> OrderedConsumer:
        """An ordered consumer of this stream: in order, exactly once, recreated after a gap."""
        return await self._js.ordered_consumer(self._name, config)

    async def create_push_consumer(self, config: ConsumerConfig) -> PushConsumer:
        """Create a push consumer on this stream (a ``deliver_subject`` is required)."""
        return await self._js.create_push_consumer(self._name, config)

    async def update_push_consumer(self, config: ConsumerConfig) -> PushConsumer:
        """Update one of this stream's push consumers."""
        return await self._js.update_push_consumer(self._name, config)

    async def create_or_update_push_consumer(self, config: ConsumerConfig) -> PushConsumer:
        """Create a push consumer on this stream, or update it if it exists."""
        return await self._js.create_or_update_push_consumer(self._name, config)

    async def push_consumer(self, name: str) -> PushConsumer:
        """A handle on an existing push consumer of this stream."""
        return await self._js.push_consumer(self._name, name)

    async def pause_consumer(self, name: str, until: datetime | Duration) -> ConsumerPauseResponse:
        """Deliver nothing until ``until``: a ``datetime`` or a duration from now (2.11+)."""
        return await self._js.pause_consumer(self._name, name, until)

    async def resume_consumer(self, name: str) -> ConsumerPauseResponse:
        """Resume a paused consumer of this stream (2.11+)."""
        return await self._js.resume_consumer(self._name, name)

    async def unpin_consumer(self, name: str, group: str) -> None:
        """Drop the pinned client of priority group ``group`` (2.11+)."""
        await self._js.unpin_consumer(self._name, name, group)

    async def reset_consumer(self, name: str, seq: int | None = None) -> ConsumerResetResult:
        """Deliver again from ``seq`` (default: the consumer's start); 2.14+."""
        return await self._js.reset_consumer(self._name, name, seq)

    def list_consumers(self) -> AsyncIterator[ConsumerInfo]:
        """Every consumer's info (``async for``)."""
        return self._js.list_consumers(self._name)

    def consumer_names(self) -> AsyncIterator[str]:
        """The names of this stream's consumers."""
        return self._js.consumer_names(self._name)

    def __repr__(self) -> str:
        return f"<Stream name={self._name!r}>"


def _nano(when: datetime | None) -> NanoTime | None:
    if when is None:
        return None
    return NanoTime.from_datetime(when if when.tzinfo is not None else when.replace(tzinfo=UTC))


def _without_subjects(info: StreamInfo) -> StreamInfo:
    state = msgspec.structs.replace(info.state, subjects={})
    return msgspec.structs.replace(info, state=state)
