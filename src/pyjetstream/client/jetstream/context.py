"""The JetStream context: ``js = jetstream(nc)`` — streams, consumers, publishing, KV and object stores.

Every management call is a request to the JetStream API (``$JS.API.…``, or ``$JS.<domain>.API.…`` /
a custom prefix) whose JSON answer is decoded with the shared API models; an error in the answer is
raised as the matching [`errors`][pyjetstream.client.jetstream.errors] class. No responders on the API
means JetStream is not enabled ([`JetStreamNotEnabled`][]).
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import itertools
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import msgspec

from pyjetstream.api import codec, models_consumer, models_stream, names
from pyjetstream.api.api_levels import Feature, api_level_from_info
from pyjetstream.api.durations import Duration, seconds, seconds_or_none
from pyjetstream.api.enums import AckPolicy, ConsumerAction
from pyjetstream.api.models_consumer import CreateConsumerRequest
from pyjetstream.api.models_msg import PubAck
from pyjetstream.api.requests import (
    ConsumerListRequest,
    ConsumerNamesRequest,
    ConsumerPauseRequest,
    ConsumerResetRequest,
    ConsumerUnpinRequest,
    StreamListRequest,
    StreamNamesRequest,
)
from pyjetstream.api.responses import (
    AccountInfoResponse,
    ApiResponse,
    ConsumerCreateResponse,
    ConsumerDeleteResponse,
    ConsumerInfoResponse,
    ConsumerListResponse,
    ConsumerNamesResponse,
    ConsumerResetResponse,
    ConsumerUnpinResponse,
    StreamCreateResponse,
    StreamDeleteResponse,
    StreamInfoResponse,
    StreamListResponse,
    StreamNamesResponse,
    StreamUpdateResponse,
)
from pyjetstream.api.subjects import JSApi
from pyjetstream.api.timefmt import NS_PER_S, ZERO_TIME, NanoTime
from pyjetstream.client.errors import NoRespondersError
from pyjetstream.client.inbox import DIGITS, next_nuid
from pyjetstream.client.jetstream.backup import (
    BackupProgress,
    ProgressCallback,
    backup_stream,
    restore_stream,
)
from pyjetstream.client.jetstream.batch import (
    DEFAULT_FLOW,
    DEFAULT_MAX_OUTSTANDING_ACKS,
    BatchPublisher,
    FastPublisher,
)
from pyjetstream.client.jetstream.consumer import PullConsumer
from pyjetstream.client.jetstream.counter import Counter
from pyjetstream.client.jetstream.counter import counter as counter_for
from pyjetstream.client.jetstream.errors import (
    AsyncPublishReplySubjectSet,
    ConsumerDoesNotExist,
    ConsumerExists,
    ConsumerMultipleFilterSubjectsNotSupported,
    ConsumerNameRequired,
    ConsumerNotFound,
    FeatureNotSupported,
    InvalidConsumerName,
    InvalidStreamName,
    InvalidSubject,
    JetStreamError,
    JetStreamNotEnabled,
    NoStreamResponse,
    NotPushConsumer,
    StreamNameRequired,
    StreamNotFound,
    api_exception,
)
from pyjetstream.client.jetstream.kv import KeyValue, KeyValueConfig, KeyValueManager, KeyValueStatus
from pyjetstream.client.jetstream.models import (
    ConsumerInfo,
    ConsumerPauseResponse,
    StreamInfo,
    from_wire,
    to_wire,
)
from pyjetstream.client.jetstream.object_store import (
    ObjectStore,
    ObjectStoreConfig,
    ObjectStoreManager,
    ObjectStoreStatus,
)
from pyjetstream.client.jetstream.ordered import OrderedConsumer, OrderedConsumerConfig
from pyjetstream.client.jetstream.publish import (
    DEFAULT_ACK_TIMEOUT,
    DEFAULT_MAX_PENDING,
    DEFAULT_RETRY_ATTEMPTS,
    DEFAULT_RETRY_WAIT,
    AsyncErrorHandler,
    AsyncPublisher,
    MsgSchedule,
    PubAckFuture,
    headers_of,
    pub_ack_from_reply,
    publish_features,
    publish_headers,
)
from pyjetstream.client.jetstream.push import PushConsumer
from pyjetstream.client.jetstream.stream import Stream
from pyjetstream.protocol import HeaderBlock

if TYPE_CHECKING:
    from pyjetstream.api.models_account import AccountInfo
    from pyjetstream.client.connection import Client
    from pyjetstream.client.msg import Msg

R = TypeVar("R", bound=ApiResponse)

DEFAULT_API_TIMEOUT = 5.0
# JSClusterNotAvailErr: no meta leader at the moment (an election is under way)
_CLUSTER_NOT_AVAILABLE = 10008
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")
_NO_ACTION_BEFORE = (2, 10, 0)  # servers before 2.10 ignore the consumer-create "action"
# The client takes either kind of config: the Python API's (durations in seconds) or the wire
# model (integer ns, as the CLI builds them); the class says which.
StreamConfig = models_stream.StreamConfig
ConsumerConfig = models_consumer.ConsumerConfig

HeadersArg = Mapping[str, str | Iterable[str]] | HeaderBlock


class ConsumerResetResult(NamedTuple):
    """What ``reset_consumer`` returns (nats.go ``ConsumerResetResponse``): the consumer's info after
    the reset and the stream sequence delivery restarts from."""

    info: ConsumerInfo
    reset_seq: int


def _pause_time(until: datetime | Duration | None) -> NanoTime:
    """A pause's end: a ``datetime`` (naive = UTC), or a duration from now (seconds or a timedelta)."""
    if until is None:
        return NanoTime(ZERO_TIME)
    if not isinstance(until, datetime):
        return NanoTime(NanoTime.now() + round(seconds(until) * NS_PER_S))
    if until.tzinfo is None:
        until = until.replace(tzinfo=UTC)
    return NanoTime.from_datetime(until)


def validate_stream_name(name: str) -> None:
    if not name:
        raise StreamNameRequired()
    if names.has_invalid_name_chars(name) or names.has_path_separators(name):
        raise InvalidStreamName(f"invalid stream name {name!r}")


def validate_consumer_name(name: str) -> None:
    if not name:
        raise ConsumerNameRequired()
    if names.has_invalid_name_chars(name) or names.has_path_separators(name):
        raise InvalidConsumerName(f"invalid consumer name {name!r}")


def generate_consumer_name() -> str:
    """An 8-character name for an ephemeral consumer (nats.go: hash of a NUID, base-62 digits)."""
    digest = hashlib.sha256(next_nuid().encode()).digest()
    return "".join(DIGITS[b % len(DIGITS)] for b in digest[:8])


def _same_consumer_config(requested: ConsumerConfig, existing: ConsumerConfig) -> bool:
    """Every field the request sets (not at its zero value) matches the existing config (compared
    as wire JSON, so a config in seconds and one in ns compare by what they say)."""
    wanted = codec.to_builtins(to_wire(requested))
    have = codec.to_builtins(existing)
    default = codec.to_builtins(models_consumer.ConsumerConfig())
    return all(value == default.get(field) or value == have.get(field) for field, value in wanted.items())


class JetStream:
    """JetStream on one core connection (nats.go ``jetstream.JetStream``); create with [`jetstream`][]."""

    def __init__(
        self,
        nc: Client,
        *,
        domain: str | None = None,
        api_prefix: str | None = None,
        timeout: Duration = DEFAULT_API_TIMEOUT,
        publish_async_max_pending: int = DEFAULT_MAX_PENDING,
        publish_async_backpressure: bool = True,
        publish_async_stall_wait: Duration | None = None,
        publish_async_timeout: Duration = DEFAULT_ACK_TIMEOUT,
        publish_async_error_handler: AsyncErrorHandler | None = None,
        retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
        retry_wait: Duration = DEFAULT_RETRY_WAIT,
    ) -> None:
        self.nc = nc
        self.domain = domain or ""
        self.api = JSApi.for_domain(domain, api_prefix)
        # A custom prefix (an account import) also prefixes KV/object-store subjects (nats.go useJSPfx).
        self.custom_prefix = bool(api_prefix)
        self.timeout = seconds(timeout)
        self.retry_attempts = retry_attempts
        self.retry_wait = seconds(retry_wait)
        self._publisher = AsyncPublisher(
            self,
            nc,
            max_pending=publish_async_max_pending,
            backpressure=publish_async_backpressure,
            stall_wait=seconds_or_none(publish_async_stall_wait),
            ack_timeout=seconds(publish_async_timeout),
            retry_attempts=retry_attempts,
            retry_wait=self.retry_wait,
            error_handler=publish_async_error_handler,
        )
        self._kv = KeyValueManager(self)
        self._obj = ObjectStoreManager(self)
        self._api_level: tuple[object, int] | None = None  # (server_id, level) from $JS.API.INFO

    @property
    def api_prefix(self) -> str:
        return self.api.prefix

    @property
    def conn(self) -> Client:
        return self.nc

    def server_version(self) -> tuple[int, int, int]:
        """The connected server's version from INFO (``(0, 0, 0)`` when unknown)."""
        match = _VERSION.match(str(self.nc.server_info.get("version", "")))
        return (int(match[1]), int(match[2]), int(match[3])) if match else (0, 0, 0)

    # --- API level (ADR-44) ---------------------------------------------------------------------------

    async def api_level(self) -> int:
        """The server's JetStream API level: INFO's ``api_lvl`` (2.12+), else ``$JS.API.INFO``'s
        ``api.level`` (2.11, asked once per server), else 0 (2.10 and older)."""
        info = self.nc.server_info
        level = api_level_from_info(info)
        if level is not None:
            return level
        server_id = info.get("server_id")
        cached = self._api_level
        if cached is not None and cached[0] == server_id:
            return cached[1]
        account = await self.account_info()
        level = account.api.level if account.api is not None else 0
        self._api_level = (server_id, level)
        return level

    async def require(self, feature: Feature) -> None:
        """Raise [`FeatureNotSupported`][] unless the server's API level has ``feature``."""
        level = await self.api_level()
        if level < feature.level:
            raise FeatureNotSupported(feature, level, str(self.nc.server_info.get("version", "")))

    # --- API plumbing ------------------------------------------------------------------------------

    async def _request(
        self, subject: str, body: Any, response_type: type[R], timeout: float | None = None
    ) -> R:
        """One API call: encode ``body`` (a model, bytes or None), decode the answer, raise its error.

        In a cluster an API request can go unanswered while the meta or stream leader is being
        elected (the node that held it was killed), or be answered "JetStream system temporarily
        unavailable" (10008). Both are retried ``retry_attempts`` times (``-1``: until answered)
        after ``retry_wait``, as publishes are; every API request is safe to repeat (creates are
        idempotent for an identical config, and a repeated delete at worst reports "not found").
        """
        payload = b"" if body is None else body if isinstance(body, bytes) else codec.encode(to_wire(body))
        attempt = 0
        while True:
            retry = self.retry_attempts < 0 or attempt < self.retry_attempts
            attempt += 1
            try:
                msg = await self.nc.request(subject, payload, timeout=timeout or self.timeout)
            except NoRespondersError:
                raise JetStreamNotEnabled() from None
            except builtins.TimeoutError:
                if not retry:
                    raise
                await asyncio.sleep(self.retry_wait)
                continue
            try:
                resp = codec.decode_response(msg.data, response_type)
            except msgspec.DecodeError as exc:
                raise JetStreamError(f"invalid response from {subject}: {exc}") from None
            if resp.error is not None:
                if resp.error.err_code == _CLUSTER_NOT_AVAILABLE and retry:
                    await asyncio.sleep(self.retry_wait)
                    continue
                raise api_exception(resp.error)
            return resp

    async def account_info(self) -> AccountInfo:
        """Usage and limits of this account's JetStream."""
        resp = await self._request(self.api.info(), None, AccountInfoResponse)
        return resp.payload()

    # --- streams -------------------------------------------------------------------------------------

    async def create_stream(self, config: StreamConfig) -> Stream:
        """Create a stream (idempotent for an identical config; else `StreamNameAlreadyInUse`).
        Durations in ``config`` are seconds (`pyjetstream.StreamConfig`)."""
        validate_stream_name(config.name)
        await self._require_stream_features(config)
        resp = await self._request(self.api.stream_create(config.name), config, StreamCreateResponse)
        return Stream(self, from_wire(resp.payload()))

    async def update_stream(self, config: StreamConfig) -> Stream:
        """Update an existing stream ([`StreamNotFound`][] if there is none)."""
        validate_stream_name(config.name)
        await self._require_stream_features(config)
        resp = await self._request(self.api.stream_update(config.name), config, StreamUpdateResponse)
        return Stream(self, from_wire(resp.payload()))

    async def _require_stream_features(self, config: StreamConfig) -> None:
        """A server before 2.14 would ignore ``StreamSource.consumer`` and read the origin
        through an ephemeral consumer instead, silently unreliable: refuse it before sending."""
        origins = [config.mirror] if config.mirror is not None else []
        if any(src.consumer is not None for src in [*origins, *config.sources]):
            await self.require(Feature.DURABLE_SOURCING)

    async def create_or_update_stream(self, config: StreamConfig) -> Stream:
        """Update the stream, or create it if there is none."""
        try:
            return await self.update_stream(config)
        except StreamNotFound:
            return await self.create_stream(config)

    async def stream(self, name: str) -> Stream:
        """A handle on an existing stream (its info is fetched)."""
        return Stream(self, await self._stream_info(name))

    async def _stream_info(self, name: str, body: Any = None) -> StreamInfo:
        validate_stream_name(name)
        resp = await self._request(self.api.stream_info(name), body, StreamInfoResponse)
        info: StreamInfo = from_wire(resp.payload())
        return info

    async def delete_stream(self, name: str) -> None:
        """Delete a stream and its messages and consumers ([`StreamNotFound`][] if there is none)."""
        validate_stream_name(name)
        resp = await self._request(self.api.stream_delete(name), None, StreamDeleteResponse)
        if not resp.success:
            raise JetStreamError(f"stream {name!r} was not deleted")

    async def list_streams(self, *, subject: str | None = None) -> AsyncIterator[StreamInfo]:
        """Every stream's info (all pages); ``subject`` keeps streams that listen on it."""
        offset = 0
        while True:
            req = StreamListRequest(offset=offset, subject=subject or "")
            resp = await self._request(self.api.stream_list(), req, StreamListResponse)
            page = resp.streams or []
            for info in page:
                yield from_wire(info)
            offset += len(page)
            if not page or offset >= resp.total:
                return

    async def stream_names(self, *, subject: str | None = None) -> AsyncIterator[str]:
        """Every stream name (all pages); ``subject`` keeps streams that listen on it."""
        offset = 0
        while True:
            req = StreamNamesRequest(offset=offset, subject=subject or "")
            resp = await self._request(self.api.stream_names(), req, StreamNamesResponse)
            page = resp.streams or []
            for name in page:
                yield name
            offset += len(page)
            if not page or offset >= resp.total:
                return

    async def stream_name_by_subject(self, subject: str) -> str:
        """The name of the stream that stores ``subject`` ([`StreamNotFound`][] if none)."""
        if not subject or any(c.isspace() for c in subject):
            raise InvalidSubject(f"invalid subject {subject!r}")
        req = StreamNamesRequest(subject=subject)
        resp = await self._request(self.api.stream_names(), req, StreamNamesResponse)
        if not resp.streams:
            raise StreamNotFound(f"no stream matches subject {subject!r}")
        return resp.streams[0]

    # --- consumers -------------------------------------------------------------------------------------

    async def create_consumer(self, stream: str, config: ConsumerConfig) -> PullConsumer:
        """Create a consumer; an existing one with a different config raises [`ConsumerExists`][].
        Without ``durable_name``/``name`` it is an ephemeral consumer with a generated name."""
        return await self._upsert_consumer(stream, config, ConsumerAction.CREATE)

    async def update_consumer(self, stream: str, config: ConsumerConfig) -> PullConsumer:
        """Update an existing consumer ([`ConsumerDoesNotExist`][] if missing)."""
        return await self._upsert_consumer(stream, config, ConsumerAction.UPDATE)

    async def create_or_update_consumer(self, stream: str, config: ConsumerConfig) -> PullConsumer:
        """Create a pull consumer on ``stream``, or update it if it exists."""
        return await self._upsert_consumer(stream, config, ConsumerAction.CREATE_OR_UPDATE)

    async def create_push_consumer(self, stream: str, config: ConsumerConfig) -> PushConsumer:
        """Create a push consumer (``deliver_subject`` required; nats.go ``CreatePushConsumer``)."""
        return await self._upsert_push_consumer(stream, config, ConsumerAction.CREATE)

    async def update_push_consumer(self, stream: str, config: ConsumerConfig) -> PushConsumer:
        """Update an existing push consumer ([`ConsumerDoesNotExist`][] if missing)."""
        return await self._upsert_push_consumer(stream, config, ConsumerAction.UPDATE)

    async def create_or_update_push_consumer(self, stream: str, config: ConsumerConfig) -> PushConsumer:
        """Create a push consumer (a ``deliver_subject`` is required), or update it if it exists."""
        return await self._upsert_push_consumer(stream, config, ConsumerAction.CREATE_OR_UPDATE)

    async def push_consumer(self, stream: str, name: str) -> PushConsumer:
        """A handle on an existing push consumer ([`NotPushConsumer`][] for a pull consumer)."""
        info = await self._consumer_info(stream, name)
        if not info.config.deliver_subject:
            raise NotPushConsumer()
        return PushConsumer(self, stream, info)

    async def _upsert_push_consumer(
        self, stream: str, config: ConsumerConfig, action: ConsumerAction
    ) -> PushConsumer:
        if not config.deliver_subject:
            raise NotPushConsumer()
        pull = await self._upsert_consumer(stream, config, action)
        return PushConsumer(self, stream, pull.cached_info())

    async def _upsert_consumer(
        self, stream: str, config: ConsumerConfig, action: ConsumerAction
    ) -> PullConsumer:
        validate_stream_name(stream)
        name = config.name or config.durable_name
        if not name:
            if action is ConsumerAction.UPDATE:
                raise ConsumerNameRequired()
            name = generate_consumer_name()
        validate_consumer_name(name)
        legacy = self.server_version() < _NO_ACTION_BEFORE
        if legacy and len(config.filter_subjects) == 1 and not config.filter_subject:
            # 2.9 servers only know filter_subject (nats.go does the same translation).
            config = msgspec.structs.replace(
                config, filter_subject=config.filter_subjects[0], filter_subjects=[]
            )
        if legacy and action is not ConsumerAction.CREATE_OR_UPDATE:
            await self._emulate_action(stream, name, config, action)
        if config.ack_policy == AckPolicy.FLOW_CONTROL:
            await self.require(Feature.ACK_FLOW_CONTROL)
        filter_subject = config.filter_subject if not config.filter_subjects else None
        subject = self.api.consumer_create(stream, name, filter_subject)
        request = CreateConsumerRequest(stream_name=stream, config=config, action=action)
        resp = await self._request(subject, request, ConsumerCreateResponse)
        info = from_wire(resp.payload())
        if len(config.filter_subjects) > 1 and not info.config.filter_subjects:
            raise ConsumerMultipleFilterSubjectsNotSupported()
        return PullConsumer(self, stream, info)

    async def _emulate_action(
        self, stream: str, name: str, config: ConsumerConfig, action: ConsumerAction
    ) -> None:
        """Before 2.10 the server treats every create as create-or-update: check first."""
        try:
            existing: ConsumerInfo | None = await self._consumer_info(stream, name)
        except ConsumerNotFound:
            existing = None
        if action is ConsumerAction.UPDATE and existing is None:
            raise ConsumerDoesNotExist()
        if action is ConsumerAction.CREATE and existing is not None:
            if not _same_consumer_config(config, existing.config):
                raise ConsumerExists()

    async def consumer(self, stream: str, name: str) -> PullConsumer:
        """A handle on an existing consumer ([`ConsumerNotFound`][pyjetstream.client.jetstream.errors.ConsumerNotFound] if missing)."""
        return PullConsumer(self, stream, await self._consumer_info(stream, name))

    async def _consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self._request(self.api.consumer_info(stream, name), None, ConsumerInfoResponse)
        info: ConsumerInfo = from_wire(resp.payload())
        return info

    async def delete_consumer(self, stream: str, name: str) -> None:
        """Delete a consumer ([`ConsumerNotFound`][pyjetstream.client.jetstream.errors.ConsumerNotFound] if there is none)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        resp = await self._request(self.api.consumer_delete(stream, name), None, ConsumerDeleteResponse)
        if not resp.success:
            raise JetStreamError(f"consumer {name!r} was not deleted")

    async def pause_consumer(
        self, stream: str, name: str, until: datetime | Duration
    ) -> ConsumerPauseResponse:
        """Deliver nothing until ``until`` — a ``datetime``, or a duration from now (seconds or a
        ``timedelta``) — (2.11+; heartbeats go on). The answer has ``paused``, ``pause_until`` and
        ``pause_remaining`` (seconds)."""
        return await self._pause(stream, name, until)

    async def resume_consumer(self, stream: str, name: str) -> ConsumerPauseResponse:
        """End a pause now (2.11+)."""
        return await self._pause(stream, name, None)

    async def _pause(
        self, stream: str, name: str, until: datetime | Duration | None
    ) -> ConsumerPauseResponse:
        validate_stream_name(stream)
        validate_consumer_name(name)
        await self.require(Feature.CONSUMER_PAUSE)
        body = ConsumerPauseRequest(pause_until=_pause_time(until)) if until is not None else None
        resp = await self._request(self.api.consumer_pause(stream, name), body, ConsumerPauseResponse)
        return resp

    async def unpin_consumer(self, stream: str, name: str, group: str) -> None:
        """Drop the pinned client of priority group ``group`` (2.11+): the next pull gets the pin."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        await self.require(Feature.PRIORITY_GROUPS)
        body = ConsumerUnpinRequest(group=group)
        await self._request(self.api.consumer_unpin(stream, name), body, ConsumerUnpinResponse)

    async def reset_consumer(self, stream: str, name: str, seq: int | None = None) -> ConsumerResetResult:
        """Deliver again from stream sequence ``seq`` (default: the consumer's own start), dropping
        pending acks and redeliveries (2.14+; nats.go ``ResetConsumer`` / ``ResetConsumerToSequence``)."""
        validate_stream_name(stream)
        validate_consumer_name(name)
        await self.require(Feature.CONSUMER_RESET)
        # nats-server 2.14/2.15 leave a reset of a missing consumer unanswered: ask first, so a
        # missing consumer is ConsumerNotFound at once rather than a timeout (resets are rare).
        await self._consumer_info(stream, name)
        body = ConsumerResetRequest(seq=seq) if seq else None
        resp = await self._request(self.api.consumer_reset(stream, name), body, ConsumerResetResponse)
        return ConsumerResetResult(from_wire(resp.payload()), resp.reset_seq)

    async def ordered_consumer(
        self, stream: str, config: OrderedConsumerConfig | None = None
    ) -> OrderedConsumer:
        """An ordered consumer: in-order delivery that recreates its server consumer as needed."""
        validate_stream_name(stream)
        return OrderedConsumer(self, stream, config or OrderedConsumerConfig())

    async def list_consumers(self, stream: str) -> AsyncIterator[ConsumerInfo]:
        """Every consumer's info on ``stream`` (all pages)."""
        validate_stream_name(stream)
        offset = 0
        while True:
            req = ConsumerListRequest(offset=offset)
            resp = await self._request(self.api.consumer_list(stream), req, ConsumerListResponse)
            page = resp.consumers or []
            for info in page:
                yield from_wire(info)
            offset += len(page)
            if not page or offset >= resp.total:
                return

    async def consumer_names(self, stream: str) -> AsyncIterator[str]:
        """The names of ``stream``'s consumers, page by page as the server lists them."""
        validate_stream_name(stream)
        offset = 0
        while True:
            req = ConsumerNamesRequest(offset=offset)
            resp = await self._request(self.api.consumer_names(stream), req, ConsumerNamesResponse)
            page = resp.consumers or []
            for name in page:
                yield name
            offset += len(page)
            if not page or offset >= resp.total:
                return

    # --- publishing ------------------------------------------------------------------------------------

    async def publish(
        self,
        subject: str,
        data: bytes = b"",
        *,
        headers: HeadersArg | None = None,
        msg_id: str | None = None,
        expect_stream: str | None = None,
        expect_last_sequence: int | None = None,
        expect_last_sequence_per_subject: int | None = None,
        expect_last_msg_id: str | None = None,
        expect_last_subject: str | None = None,
        ttl: Duration | str | None = None,
        schedule: MsgSchedule | None = None,
        retry_attempts: int | None = None,
        retry_wait: Duration | None = None,
        timeout: Duration | None = None,
    ) -> PubAck:
        """Publish into a stream and wait for its [`PubAck`][].

        ``msg_id`` deduplicates within the stream's window; the ``expect_*`` options make the stream
        refuse the message unless they hold (`WrongLastSequence` …); with
        ``expect_last_subject`` (2.11+), ``expect_last_sequence_per_subject`` is checked against the
        last message on that subject filter. ``ttl`` (seconds, a timedelta or ``"never"``; 2.11+,
        the stream needs ``allow_msg_ttl``) expires this message; ``schedule`` (a
        [`MsgSchedule`][]; 2.12+) makes it a schedule the server publishes from. No responders
        (no stream, or a leader change) is retried ``retry_attempts`` times (``-1``: forever) every
        ``retry_wait`` seconds, then [`NoStreamResponse`][]. An option the server's API level
        lacks raises [`FeatureNotSupported`][] before anything is sent.
        """
        hdrs = publish_headers(
            headers,
            msg_id=msg_id,
            expect_stream=expect_stream,
            expect_last_sequence=expect_last_sequence,
            expect_last_sequence_per_subject=expect_last_sequence_per_subject,
            expect_last_msg_id=expect_last_msg_id,
            expect_last_subject=expect_last_subject,
            ttl=ttl,
            schedule=schedule,
        )
        if ttl is not None or schedule is not None or expect_last_subject is not None:
            for feature in publish_features(ttl, schedule, expect_last_subject):
                await self.require(feature)
        attempts = self.retry_attempts if retry_attempts is None else retry_attempts
        wait = self.retry_wait if retry_wait is None else seconds(retry_wait)
        limit = seconds(timeout) if timeout else self.timeout
        for attempt in itertools.count():
            try:
                reply = await self.nc.request(subject, data, timeout=limit, headers=hdrs)
            except NoRespondersError:
                if 0 <= attempts <= attempt:
                    raise NoStreamResponse() from None
                await asyncio.sleep(wait)
                continue
            return pub_ack_from_reply(reply)
        raise AssertionError("unreachable")

    async def publish_msg(self, msg: Msg, **options: Any) -> PubAck:
        """``publish`` of a core message (its subject, data and headers), with the same options."""
        headers = options.pop("headers", None) or headers_of(msg)
        return await self.publish(msg.subject, msg.data, headers=headers, **options)

    async def publish_async(
        self,
        subject: str,
        data: bytes = b"",
        *,
        headers: HeadersArg | None = None,
        msg_id: str | None = None,
        expect_stream: str | None = None,
        expect_last_sequence: int | None = None,
        expect_last_sequence_per_subject: int | None = None,
        expect_last_msg_id: str | None = None,
        expect_last_subject: str | None = None,
        ttl: Duration | str | None = None,
        schedule: MsgSchedule | None = None,
        stall_wait: Duration | None = None,
    ) -> PubAckFuture:
        """Publish without waiting for the ack: returns a future of the [`PubAck`][].

        Many publishes are in flight at once over one reply subscription. When
        ``publish_async_max_pending`` are outstanding this waits for room (at most ``stall_wait``
        seconds if given) or, without backpressure, raises [`TooManyStalledMsgs`][pyjetstream.client.jetstream.errors.TooManyStalledMsgs] at once.
        The options are ``publish``'s.
        """
        hdrs = publish_headers(
            headers,
            msg_id=msg_id,
            expect_stream=expect_stream,
            expect_last_sequence=expect_last_sequence,
            expect_last_sequence_per_subject=expect_last_sequence_per_subject,
            expect_last_msg_id=expect_last_msg_id,
            expect_last_subject=expect_last_subject,
            ttl=ttl,
            schedule=schedule,
        )
        if ttl is not None or schedule is not None or expect_last_subject is not None:
            for feature in publish_features(ttl, schedule, expect_last_subject):
                await self.require(feature)
        return await self._publisher.publish(subject, data, hdrs, seconds_or_none(stall_wait))

    async def publish_msg_async(self, msg: Msg, **options: Any) -> PubAckFuture:
        """[`publish_async`][pyjetstream.client.jetstream.context.JetStream.publish_async] of a ready `Msg` (its subject, data and headers); ``options`` as `publish_async`'s."""
        if msg.reply:
            raise AsyncPublishReplySubjectSet()
        headers = options.pop("headers", None) or headers_of(msg)
        return await self.publish_async(msg.subject, msg.data, headers=headers, **options)

    def publish_async_pending(self) -> int:
        """Async publishes still waiting for their ack."""
        return self._publisher.pending

    async def publish_async_complete(self, timeout: Duration | None = None) -> None:
        """Until every async publish so far is acknowledged (or failed); ``TimeoutError`` after ``timeout``."""
        await self._publisher.complete(seconds_or_none(timeout))

    # --- batch publishing (batch.py) --------------------------------------------------------------------

    def batch_publisher(self, *, ack_every: int = 0, timeout: Duration | None = None) -> BatchPublisher:
        """An atomic batch (2.12+, stream ``allow_atomic``), to use in ``async with``: ``add`` messages,
        then ``commit``; all are stored or none. Leaving the block uncommitted discards the batch."""
        return BatchPublisher(self, ack_every=ack_every, timeout=seconds_or_none(timeout))

    def fast_publisher(
        self,
        *,
        gap: str = "fail",
        flow: int = DEFAULT_FLOW,
        max_outstanding_acks: int = DEFAULT_MAX_OUTSTANDING_ACKS,
        ack_timeout: Duration | None = None,
    ) -> FastPublisher:
        """A fast-ingest batch (2.14+, stream ``allow_batched``), to use in ``async with``: flow-controlled
        by the server, the fastest way to load a stream; the block's end commits it."""
        return FastPublisher(
            self,
            gap=gap,
            flow=flow,
            max_outstanding_acks=max_outstanding_acks,
            ack_timeout=seconds_or_none(ack_timeout),
        )

    # --- counters (counter.Counter) ---------------------------------------------------------------------

    async def counter(self, stream_name: str) -> Counter:
        """The counters of stream ``stream_name`` (2.12+, ``allow_msg_counter``): ``add`` / ``load`` /
        ``get`` / ``get_many``."""
        return await counter_for(self, stream_name)

    async def backup_stream(
        self, stream: str, directory: str | Path, *, consumers: bool = True, check: bool = False,
        progress: ProgressCallback | None = None,
    ) -> BackupProgress:
        """Back ``stream`` up into ``directory`` as the nats CLI does (``backup.json`` + ``stream.tar.s2``);
        see `backup`."""
        validate_stream_name(stream)
        return await backup_stream(self, stream, directory, consumers=consumers, check=check, progress=progress)

    async def restore_stream(
        self, directory: str | Path, *, config: dict[str, Any] | None = None,
        progress: ProgressCallback | None = None,
    ) -> Stream:
        """Restore a backup directory (made here or by ``nats stream backup``) into a new stream."""
        info = await restore_stream(self, directory, config=config, progress=progress)
        return Stream(self, from_wire(info))

    # --- key-value buckets (kv.KeyValueManager) --------------------------------------------------------

    async def key_value(self, bucket: str) -> KeyValue:
        """Bind to an existing bucket (`BucketNotFound` if there is none)."""
        return await self._kv.key_value(bucket)

    async def create_key_value(self, config: KeyValueConfig) -> KeyValue:
        """Create a bucket (idempotent for an identical config; else `BucketExists`)."""
        return await self._kv.create_key_value(config)

    async def update_key_value(self, config: KeyValueConfig) -> KeyValue:
        """Change an existing bucket's configuration (`BucketNotFound` if there is none)."""
        return await self._kv.update_key_value(config)

    async def create_or_update_key_value(self, config: KeyValueConfig) -> KeyValue:
        """Create a KV bucket, or update its configuration if it exists."""
        return await self._kv.create_or_update_key_value(config)

    async def delete_key_value(self, bucket: str) -> None:
        """Delete a KV bucket and every key in it."""
        await self._kv.delete_key_value(bucket)

    def key_value_store_names(self) -> AsyncIterator[str]:
        """The names of every bucket."""
        return self._kv.key_value_store_names()

    def key_value_stores(self) -> AsyncIterator[KeyValueStatus]:
        """The status of every bucket."""
        return self._kv.key_value_stores()

    # --- object stores (object_store.ObjectStoreManager) -----------------------------------------------

    async def object_store(self, bucket: str) -> ObjectStore:
        """Bind to an existing bucket (`BucketNotFound` if there is none)."""
        return await self._obj.object_store(bucket)

    async def create_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        """Create an object-store bucket ([`BucketExists`][pyjetstream.client.jetstream.errors.BucketExists] if one with another configuration exists)."""
        return await self._obj.create_object_store(config)

    async def update_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        """Update an object-store bucket's configuration ([`BucketNotFound`][pyjetstream.client.jetstream.errors.BucketNotFound] if there is none)."""
        return await self._obj.update_object_store(config)

    async def create_or_update_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        """Create an object-store bucket, or update its configuration if it exists."""
        return await self._obj.create_or_update_object_store(config)

    async def delete_object_store(self, bucket: str) -> None:
        """Delete an object-store bucket and every object in it."""
        await self._obj.delete_object_store(bucket)

    def object_store_names(self) -> AsyncIterator[str]:
        """The names of the account's object-store buckets."""
        return self._obj.object_store_names()

    def object_stores(self) -> AsyncIterator[ObjectStoreStatus]:
        """The status of each of the account's object-store buckets."""
        return self._obj.object_stores()

    def __repr__(self) -> str:
        return f"<JetStream prefix={self.api.prefix!r}>"


def jetstream(
    nc: Client,
    *,
    domain: str | None = None,
    api_prefix: str | None = None,
    timeout: Duration = DEFAULT_API_TIMEOUT,
    publish_async_max_pending: int = DEFAULT_MAX_PENDING,
    publish_async_backpressure: bool = True,
    publish_async_stall_wait: Duration | None = None,
    publish_async_timeout: Duration = DEFAULT_ACK_TIMEOUT,
    publish_async_error_handler: AsyncErrorHandler | None = None,
    retry_attempts: int = DEFAULT_RETRY_ATTEMPTS,
    retry_wait: Duration = DEFAULT_RETRY_WAIT,
) -> JetStream:
    """A JetStream context on ``nc`` (nats.go ``jetstream.New`` / ``NewWithDomain`` / ``NewWithAPIPrefix``).

    ``timeout``: API calls and synchronous publishes (seconds or a ``timedelta``, as every duration
    here; see `pyjetstream.api.durations`). Async publishing:
    ``publish_async_max_pending`` in flight at most; when full, wait (``publish_async_backpressure``,
    at most ``publish_async_stall_wait`` s if set) or fail at once; an ack not received within
    ``publish_async_timeout`` fails its future; ``publish_async_error_handler(js, msg, exc)`` hears
    about every failed async publish.
    """
    return JetStream(
        nc,
        domain=domain,
        api_prefix=api_prefix,
        timeout=timeout,
        publish_async_max_pending=publish_async_max_pending,
        publish_async_backpressure=publish_async_backpressure,
        publish_async_stall_wait=publish_async_stall_wait,
        publish_async_timeout=publish_async_timeout,
        publish_async_error_handler=publish_async_error_handler,
        retry_attempts=retry_attempts,
        retry_wait=retry_wait,
    )


new = jetstream
