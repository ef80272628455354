"""Key-value store on a stream (ADR-8; nats.go ``jetstream/kv.go``). Layout: `pyjetstream.api.kv`.

A bucket is the stream ``KV_<bucket>``; a key is the subject ``$KV.<bucket>.<key>``; its revisions are
the stream's messages on that subject (``history`` of them kept). Puts are publishes (revision = the
stream sequence); ``create``/``update`` are publishes with an expected last subject sequence; deletes
and purges are empty messages marked ``KV-Operation: DEL|PURGE``. Reads use direct get; watching uses
an ordered consumer (last value per key first, then live updates).

⟨2.11+⟩ TTLs (ADR-48): ``limit_marker_ttl`` on the bucket makes the server leave a marker (with that
TTL) where ``ttl`` (max age) removed a key's last value, so watchers see the removal; ``create`` and
``purge`` take a per-key ``ttl`` (``Nats-TTL``). A marker the server wrote (``Nats-Marker-Reason``)
reads as a purge (``MaxAge``, ``Purge``) or a delete (``Remove``), as in nats.go.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyjetstream.api import names
from pyjetstream.api.api_levels import Feature
from pyjetstream.api.durations import Duration, Seconds, seconds, seconds_or_none, to_ns
from pyjetstream.api.enums import DeliverPolicy, StorageType
from pyjetstream.api.headers import EXPECTED_LAST_SUBJECT_SEQUENCE, KV_OPERATION, MARKER_REASON
from pyjetstream.api.kv import (
    KV_BUCKETS_FILTER,
    KV_MAX_HISTORY,
    KvOperation,
    kv_bucket_from_stream,
    kv_delete_headers,
    kv_purge_headers,
    kv_stream_config,
    kv_stream_name,
)
from pyjetstream.api.models_common import Placement
from pyjetstream.api.models_stream import RePublish, StreamConfig, StreamSource
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.client.jetstream.errors import (
    BucketExists,
    BucketNotFound,
    HistoryTooLarge,
    InvalidBucketName,
    InvalidKey,
    JetStreamError,
    KeyDeleted,
    KeyExists,
    KeyNotFound,
    KeyValueConfigRequired,
    MsgIteratorClosed,
    MsgNotFound,
    NoKeysFound,
    StreamNameAlreadyInUse,
    StreamNotFound,
    WrongLastSequence,
)
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.ordered import (
    OrderedConsumer,
    OrderedConsumerConfig,
    OrderedMessagesContext,
    next_or_caught_up,
)
from pyjetstream.protocol import HeaderBlock

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.models import StreamInfo
    from pyjetstream.client.jetstream.stream import RawStreamMsg, Stream

DEFAULT_PURGE_DELETES_OLDER_THAN = 30 * 60.0  # seconds (nats.go)
_NO_TTL = Seconds.from_ns(0)
ALL_KEYS = ">"


@dataclass
class KeyValueConfig:
    """A bucket's configuration (nats.go ``KeyValueConfig``). ``ttl`` (how long a value is kept; 0: no
    limit) and ``limit_marker_ttl`` (⟨2.11+⟩ how long a marker lives where ``ttl`` removed a key; 0:
    no markers) are seconds (an ``int``, a ``float`` or a ``timedelta``), read back as seconds."""

    bucket: str
    description: str = ""
    max_value_size: int = 0
    history: int = 1
    ttl: Duration = 0.0
    max_bytes: int = 0
    storage: StorageType = StorageType.FILE
    replicas: int = 1
    placement: Placement | None = None
    republish: RePublish | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] = field(default_factory=list)
    compression: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    limit_marker_ttl: Duration = 0.0

    def __post_init__(self) -> None:
        self.ttl = Seconds(self.ttl)
        self.limit_marker_ttl = Seconds(self.limit_marker_ttl)


@dataclass(frozen=True, slots=True)
class KeyValueEntry:
    """One revision of a key. ``delta`` is how many newer revisions (in the watch) follow it."""

    bucket: str
    key: str
    value: bytes
    revision: int
    created: NanoTime
    delta: int = 0
    operation: KvOperation = KvOperation.PUT


@dataclass(frozen=True, slots=True)
class KeyValueStatus:
    bucket: str
    values: int
    history: int
    ttl: Seconds
    bytes: int
    is_compressed: bool
    stream_info: StreamInfo
    backing_store: str = "JetStream"
    limit_marker_ttl: Seconds = _NO_TTL
    metadata: dict[str, str] = field(default_factory=dict)


def _operation(block_get: str | None, marker_reason: str | None = None) -> KvOperation:
    if block_get == KvOperation.DELETE.value:
        return KvOperation.DELETE
    if block_get == KvOperation.PURGE.value:
        return KvOperation.PURGE
    if marker_reason:  # a marker the server wrote (nats.go: Remove is a delete, MaxAge/Purge a purge)
        return KvOperation.DELETE if marker_reason == "Remove" else KvOperation.PURGE
    return KvOperation.PUT


def _block_operation(block: HeaderBlock) -> KvOperation:
    return _operation(block.get(KV_OPERATION), block.get(MARKER_REASON))


def _check_bucket(bucket: str) -> None:
    if not names.is_valid_bucket_name(bucket):
        raise InvalidBucketName(f"invalid bucket name {bucket!r}")


def _check_key(key: str) -> None:
    if not names.is_valid_kv_key(key):
        raise InvalidKey(f"invalid key {key!r}")


class KeyValue:
    """A key-value bucket (nats.go ``jetstream.KeyValue``); get one with ``js.key_value(bucket)``."""

    def __init__(self, js: JetStream, bucket: str, stream: Stream) -> None:
        self._js = js
        self._bucket = bucket
        self._stream = stream
        cfg = stream.cached_info().config
        self._read_prefix = f"$KV.{bucket}."
        self._put_prefix = self._read_prefix
        if cfg.mirror is not None:
            # A mirror stores the origin's subjects; writes go to the origin bucket.
            origin = kv_bucket_from_stream(cfg.mirror.name) or cfg.mirror.name
            self._read_prefix = f"$KV.{origin}."
            external = cfg.mirror.external
            if external is not None and external.api:
                self._put_prefix = f"{external.api}.$KV.{origin}."
            else:
                self._put_prefix = self._read_prefix
        elif js.custom_prefix:
            self._put_prefix = f"{js.api_prefix}.$KV.{bucket}."

    @property
    def bucket(self) -> str:
        return self._bucket

    # --- reads ---------------------------------------------------------------------------------------

    async def get(self, key: str, revision: int | None = None) -> KeyValueEntry:
        """The latest value of ``key`` (or the given ``revision``). [`KeyNotFound`][] if the key has
        none; [`KeyDeleted`][] (a ``KeyNotFound``) if it was deleted or purged."""
        _check_key(key)
        subject = self._read_prefix + key
        try:
            if revision:
                raw = await self._stream.get_msg(revision)
            else:
                raw = await self._stream.get_last_msg_for_subject(subject)
        except MsgNotFound:
            raise KeyNotFound() from None
        if raw.subject != subject:
            raise KeyNotFound()
        entry = self._entry_from_raw(key, raw)
        if entry.operation is not KvOperation.PUT:
            raise KeyDeleted(entry=entry)
        return entry

    def _entry_from_raw(self, key: str, raw: RawStreamMsg) -> KeyValueEntry:
        block = raw.header_block
        op = _block_operation(block) if block is not None else KvOperation.PUT
        return KeyValueEntry(self._bucket, key, raw.data, raw.sequence, raw.time, 0, op)

    def _entry_from_msg(self, msg: JetStreamMsg) -> KeyValueEntry:
        meta = msg.metadata()
        raw = msg.raw
        op = KvOperation.PUT
        if raw.raw_headers:
            block = raw.header_block
            if block is not None:
                op = _block_operation(block)
        key = raw.subject[len(self._read_prefix) :]
        return KeyValueEntry(
            self._bucket, key, raw.data, meta.stream_seq, meta.timestamp, meta.num_pending, op
        )

    # --- writes --------------------------------------------------------------------------------------

    async def put(self, key: str, value: bytes) -> int:
        """Set ``key`` to ``value``; returns the new revision."""
        _check_key(key)
        ack = await self._js.publish(self._put_prefix + key, value)
        return ack.seq

    async def create(self, key: str, value: bytes, *, ttl: Duration | None = None) -> int:
        """Set ``key`` only if it has no value (or was deleted/purged); else [`KeyExists`][].
        ``ttl`` (seconds or a ``timedelta``; 2.11+, the bucket needs ``limit_marker_ttl``) removes it
        after that long."""
        try:
            return await self._update(key, value, 0, ttl)
        except KeyExists as exists:
            try:
                await self.get(key)
            except KeyDeleted as deleted:
                return await self._update(key, value, deleted.entry.revision, ttl)
            except KeyNotFound:
                pass
            raise exists

    async def update(self, key: str, value: bytes, last: int) -> int:
        """Set ``key`` only if its latest revision is ``last``; else [`KeyExists`][]."""
        return await self._update(key, value, last, None)

    async def _update(self, key: str, value: bytes, last: int, ttl: Duration | None) -> int:
        _check_key(key)
        try:
            ack = await self._js.publish(
                self._put_prefix + key, value, expect_last_sequence_per_subject=last, ttl=ttl
            )
        except WrongLastSequence as exc:
            raise KeyExists(exc.description, code=exc.code, err_code=exc.err_code) from None
        return ack.seq

    async def delete(self, key: str, *, last_revision: int | None = None) -> None:
        """Mark ``key`` deleted (its history is kept); ``last_revision`` makes it conditional."""
        await self._marker(key, kv_delete_headers(), last_revision)

    async def purge(
        self, key: str, *, last_revision: int | None = None, ttl: Duration | None = None
    ) -> None:
        """Remove every revision of ``key``, leaving one purge marker; with ``ttl`` (seconds or a
        ``timedelta``, 2.11+) the marker itself goes after that long."""
        await self._marker(key, kv_purge_headers(), last_revision, ttl)

    async def _marker(
        self, key: str, headers: dict[str, str], last_revision: int | None, ttl: Duration | None = None
    ) -> None:
        _check_key(key)
        if last_revision is not None:
            headers[EXPECTED_LAST_SUBJECT_SEQUENCE] = str(last_revision)
        try:
            await self._js.publish(self._put_prefix + key, b"", headers=headers, ttl=ttl)
        except WrongLastSequence as exc:
            raise KeyExists(exc.description, code=exc.code, err_code=exc.err_code) from None

    async def purge_deletes(self, *, older_than: Duration = DEFAULT_PURGE_DELETES_OLDER_THAN) -> None:
        """Remove delete/purge markers (and what they hide). Markers younger than ``older_than``
        (seconds or a ``timedelta``) are kept, alone; ``older_than`` <= 0 removes them all."""
        older_than = seconds(older_than)
        markers: list[KeyValueEntry] = []
        watcher = await self.watch_all()
        try:
            async for entry in watcher:
                if entry is None:
                    break
                if entry.operation is not KvOperation.PUT:
                    markers.append(entry)
        finally:
            watcher.stop()
        limit = time.time_ns() - to_ns(older_than)
        for entry in markers:
            keep = 1 if older_than > 0 and entry.created > limit else 0
            await self._stream.purge(subject=self._read_prefix + entry.key, keep=keep or None)

    # --- listing and watching --------------------------------------------------------------------------

    async def watch(
        self,
        keys: str | list[str],
        *,
        include_history: bool = False,
        ignore_deletes: bool = False,
        updates_only: bool = False,
        meta_only: bool = False,
        resume_from_revision: int = 0,
    ) -> KeyWatcher:
        """Watch keys (filters with ``*``/``>`` allowed): first the current value of each (every
        revision with ``include_history``), then ``None`` once, then live updates. Deletes come as
        entries with a DEL/PURGE ``operation`` unless ``ignore_deletes``; ``meta_only`` drops values."""
        filters = [keys] if isinstance(keys, str) else list(keys)
        for key in filters:
            if not names.is_valid_kv_search_key(key):
                raise InvalidKey(f"invalid key filter {key!r}")
        if include_history and updates_only:
            raise JetStreamError("include_history and updates_only cannot be combined")
        deliver = DeliverPolicy.LAST_PER_SUBJECT
        if include_history:
            deliver = DeliverPolicy.ALL
        if updates_only:
            deliver = DeliverPolicy.NEW
        config = OrderedConsumerConfig(
            filter_subjects=[self._read_prefix + key for key in filters],
            deliver_policy=deliver,
            headers_only=meta_only,
        )
        if resume_from_revision > 0:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = resume_from_revision
        consumer = await self._js.ordered_consumer(self._stream.name, config)
        watcher = KeyWatcher(self, consumer, ignore_deletes=ignore_deletes, updates_only=updates_only)
        await watcher._start()
        return watcher

    async def watch_filtered(self, keys: list[str], **options: bool | int) -> KeyWatcher:
        """[`watch`][] on several key filters at once (nats.go ``WatchFiltered``): one consumer,
        the filtering done by the server."""
        return await self.watch(list(keys), **options)  # type: ignore[arg-type]

    async def watch_all(self, **options: bool | int) -> KeyWatcher:
        """[`watch`][] on every key."""
        return await self.watch(ALL_KEYS, **options)  # type: ignore[arg-type]

    async def list_keys(self, *filters: str) -> AsyncIterator[str]:
        """The keys that have a value (optionally only those matching ``filters``, filtered by the
        server; nats.go ``ListKeysFiltered``)."""
        watcher = await self.watch(list(filters) or ALL_KEYS, ignore_deletes=True, meta_only=True)
        try:
            async for entry in watcher:
                if entry is None:
                    return
                yield entry.key
        finally:
            watcher.stop()

    async def keys(self, *filters: str) -> list[str]:
        """Every key that has a value; [`NoKeysFound`][] if there is none."""
        found = [key async for key in self.list_keys(*filters)]
        if not found:
            raise NoKeysFound()
        return found

    async def history(self, key: str) -> list[KeyValueEntry]:
        """Every revision the bucket keeps for ``key``, oldest first; [`KeyNotFound`][] if none."""
        _check_key(key)
        watcher = await self.watch(key, include_history=True)
        entries: list[KeyValueEntry] = []
        try:
            async for entry in watcher:
                if entry is None:
                    break
                entries.append(entry)
        finally:
            watcher.stop()
        if not entries:
            raise KeyNotFound()
        return entries

    async def status(self) -> KeyValueStatus:
        """The bucket's status: values, history, TTL, bytes, compression."""
        return _status(self._bucket, await self._stream.info())

    def __repr__(self) -> str:
        return f"<KeyValue bucket={self._bucket!r}>"


def _status(bucket: str, info: StreamInfo) -> KeyValueStatus:
    cfg = info.config
    return KeyValueStatus(
        bucket=bucket,
        values=info.state.messages,
        history=cfg.max_msgs_per_subject,
        ttl=Seconds(cfg.max_age),
        bytes=info.state.bytes,
        is_compressed=cfg.compression is not None and cfg.compression.value == "s2",
        stream_info=info,
        limit_marker_ttl=Seconds(cfg.subject_delete_marker_ttl),
        metadata=dict(cfg.metadata),
    )


class KeyWatcher:
    """``async for entry in watcher``: entries, with one ``None`` marking the end of the initial
    values; ``await watcher.next(timeout)`` does the same one at a time; ``stop()`` ends it."""

    def __init__(self, kv: KeyValue, consumer: OrderedConsumer, *, ignore_deletes: bool, updates_only: bool):
        self._kv = kv
        self._consumer = consumer
        self._ignore_deletes = ignore_deletes
        self._updates_only = updates_only
        self._messages: OrderedMessagesContext | None = None
        self._out: deque[KeyValueEntry | None] = deque()
        self.init_done = False

    async def _start(self) -> None:
        self._messages = await self._consumer.messages()
        info = self._consumer.cached_info()
        if self._updates_only or (info.num_pending == 0 and info.delivered.consumer_seq == 0):
            self._init_finished()

    def _init_finished(self) -> None:
        if not self.init_done:
            self.init_done = True
            self._out.append(None)

    async def next(self, timeout: Duration | None = None) -> KeyValueEntry | None:
        """The next entry (or the ``None`` marker); ``TimeoutError`` after ``timeout`` (seconds or a
        ``timedelta``)."""
        timeout = seconds_or_none(timeout)
        deadline = None if timeout is None else asyncio.get_running_loop().time() + timeout
        while not self._out:
            assert self._messages is not None
            remaining = None
            if deadline is not None:
                remaining = max(0.0, deadline - asyncio.get_running_loop().time())
            if self.init_done:
                msg = await self._messages.next(remaining)
            else:
                found = await next_or_caught_up(self._consumer, self._messages, remaining)
                if found is None:
                    self._init_finished()
                    continue
                msg = found
            entry = self._kv._entry_from_msg(msg)
            if not (self._ignore_deletes and entry.operation is not KvOperation.PUT):
                self._out.append(entry)
            if entry.delta == 0:
                self._init_finished()
        return self._out.popleft()

    def __aiter__(self) -> KeyWatcher:
        return self

    async def __anext__(self) -> KeyValueEntry | None:
        try:
            return await self.next()
        except MsgIteratorClosed:
            raise StopAsyncIteration from None

    def stop(self) -> None:
        """Stop watching."""
        if self._messages is not None:
            self._messages.stop()

    async def __aenter__(self) -> KeyWatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()


class KeyValueManager:
    """Bucket management on the JetStream context (held by [`JetStream`][], which delegates to it)."""

    def __init__(self, js: JetStream) -> None:
        self._js = js

    async def key_value(self, bucket: str) -> KeyValue:
        """Bind to an existing bucket ([`BucketNotFound`][pyjetstream.client.jetstream.errors.BucketNotFound] if there is none)."""
        _check_bucket(bucket)
        try:
            stream = await self._js.stream(kv_stream_name(bucket))
        except StreamNotFound:
            raise BucketNotFound() from None
        if stream.cached_info().config.max_msgs_per_subject < 1:
            raise JetStreamError(f"bucket {bucket!r} is malformed")
        return KeyValue(self._js, bucket, stream)

    async def create_key_value(self, config: KeyValueConfig) -> KeyValue:
        """Create a bucket (idempotent for an identical config; else [`BucketExists`][pyjetstream.client.jetstream.errors.BucketExists])."""
        stream_config = await self._stream_config(config)
        try:
            stream = await self._js.create_stream(stream_config)
        except StreamNameAlreadyInUse as exc:
            raise BucketExists(
                f"bucket {config.bucket!r} already exists", code=exc.code, err_code=exc.err_code
            ) from None
        return KeyValue(self._js, config.bucket, stream)

    async def update_key_value(self, config: KeyValueConfig) -> KeyValue:
        """Change an existing bucket's configuration ([`BucketNotFound`][pyjetstream.client.jetstream.errors.BucketNotFound] if there is none)."""
        stream_config = await self._stream_config(config)
        try:
            stream = await self._js.update_stream(stream_config)
        except StreamNotFound:
            raise BucketNotFound() from None
        return KeyValue(self._js, config.bucket, stream)

    async def create_or_update_key_value(self, config: KeyValueConfig) -> KeyValue:
        stream = await self._js.create_or_update_stream(await self._stream_config(config))
        return KeyValue(self._js, config.bucket, stream)

    async def _stream_config(self, config: KeyValueConfig) -> StreamConfig:
        stream_config = _stream_config(config)
        if config is not None and config.limit_marker_ttl:
            await self._js.require(Feature.SUBJECT_DELETE_MARKERS)
        return stream_config

    async def delete_key_value(self, bucket: str) -> None:
        _check_bucket(bucket)
        try:
            await self._js.delete_stream(kv_stream_name(bucket))
        except StreamNotFound:
            raise BucketNotFound() from None

    async def key_value_store_names(self) -> AsyncIterator[str]:
        """The names of every bucket."""
        async for name in self._js.stream_names(subject=KV_BUCKETS_FILTER):
            bucket = kv_bucket_from_stream(name)
            if bucket is not None:
                yield bucket

    async def key_value_stores(self) -> AsyncIterator[KeyValueStatus]:
        """The status of every bucket."""
        async for info in self._js.list_streams(subject=KV_BUCKETS_FILTER):
            bucket = kv_bucket_from_stream(info.config.name)
            if bucket is not None:
                yield _status(bucket, info)


def _stream_config(config: KeyValueConfig) -> StreamConfig:
    if config is None:
        raise KeyValueConfigRequired()
    _check_bucket(config.bucket)
    if config.history > KV_MAX_HISTORY:
        raise HistoryTooLarge()
    stream_config = kv_stream_config(
        config.bucket,
        description=config.description,
        history=config.history or 1,
        ttl_ns=to_ns(config.ttl),
        max_value_size=config.max_value_size,
        max_bytes=config.max_bytes,
        storage=config.storage,
        replicas=config.replicas,
        placement=config.placement,
        republish=config.republish,
        mirror=config.mirror,
        sources=list(config.sources) or None,
        compression=config.compression,
        metadata=config.metadata,
        limit_marker_ttl_ns=to_ns(config.limit_marker_ttl),
    )
    if stream_config.mirror is not None:
        # Mirrors do not deduplicate; nats-server refuses a mirror with a duplicate window.
        stream_config.duplicate_window = 0
    return stream_config


__all__ = [
    "KeyValue",
    "KeyValueConfig",
    "KeyValueEntry",
    "KeyValueManager",
    "KeyValueStatus",
    "KeyWatcher",
]
