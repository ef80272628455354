"""Object store on a stream (ADR-20; nats.go ``jetstream/object.go``). Layout: `pyjetstream.api.objstore`.

An object is a run of chunk messages on ``$O.<bucket>.C.<nuid>`` (128 KiB by default) plus one meta
message on ``$O.<bucket>.M.<base64url(name)>`` ([`ObjectInfo`][] JSON, ``Nats-Rollup: sub`` so only
the latest meta is kept) carrying size, chunk count and the SHA-256 digest. Putting a new version
writes new chunks under a fresh nuid, then the meta, then purges the old chunks; reading streams the
chunks through an ordered consumer and verifies the digest at the end.
"""

from __future__ import annotations

import hashlib
import os
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import msgspec

from pyjetstream.api import codec, names
from pyjetstream.api.durations import Duration, Seconds, seconds_or_none, to_ns
from pyjetstream.api.enums import DeliverPolicy, StorageType
from pyjetstream.api.headers import ROLLUP, ROLLUP_SUBJECT
from pyjetstream.api.models_common import Placement
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.api.objstore import (
    OBJ_BUCKETS_FILTER,
    OBJ_DEFAULT_CHUNK_SIZE,
    ObjectInfo,
    ObjectLink,
    ObjectMetaOptions,
    ObjectModTime,
    obj_bucket_from_stream,
    obj_chunk_subject,
    obj_meta_filter,
    obj_meta_subject,
    obj_stream_config,
    obj_stream_name,
    object_digest,
)
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.client.errors import NatsError
from pyjetstream.client.inbox import next_nuid
from pyjetstream.client.jetstream.errors import (
    BadObjectMeta,
    BucketExists,
    BucketNotFound,
    CantGetBucket,
    DigestMismatch,
    InvalidBucketName,
    JetStreamError,
    MsgIteratorClosed,
    MsgNotFound,
    NoLinkToDeleted,
    NoLinkToLink,
    NoObjectsFound,
    ObjectAlreadyExists,
    ObjectNameRequired,
    ObjectNotFound,
    StreamNameAlreadyInUse,
    StreamNotFound,
    UpdateMetaDeleted,
)
from pyjetstream.client.jetstream.ordered import (
    OrderedConsumer,
    OrderedConsumerConfig,
    OrderedMessagesContext,
    next_or_caught_up,
)

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.context import JetStream
    from pyjetstream.client.jetstream.models import StreamInfo
    from pyjetstream.client.jetstream.msg import JetStreamMsg
    from pyjetstream.client.jetstream.publish import PubAckFuture
    from pyjetstream.client.jetstream.stream import Stream

GET_BUFFER_BYTES = 8 * 1024 * 1024  # chunks requested ahead while reading an object

PutSource = (
    bytes
    | bytearray
    | memoryview
    | os.PathLike[str]
    | BinaryIO
    | AsyncIterable[bytes]
    | Iterable[bytes]
    | Any
)


@dataclass
class ObjectStoreConfig:
    """A bucket's configuration (nats.go ``ObjectStoreConfig``); ``ttl`` (how long an object is kept;
    0: no limit) is seconds (an ``int``, a ``float`` or a ``timedelta``), read back as seconds."""

    bucket: str
    description: str = ""
    ttl: Duration = 0.0
    max_bytes: int = 0
    storage: StorageType = StorageType.FILE
    replicas: int = 1
    placement: Placement | None = None
    compression: bool = False
    metadata: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ttl = Seconds(self.ttl)


@dataclass
class ObjectMeta:
    """What the application says about an object it puts (nats.go ``ObjectMeta``)."""

    name: str
    description: str = ""
    headers: dict[str, list[str]] = field(default_factory=dict)
    metadata: dict[str, str] = field(default_factory=dict)
    max_chunk_size: int = 0


@dataclass(frozen=True, slots=True)
class ObjectStoreStatus:
    bucket: str
    description: str
    ttl: Seconds
    storage: StorageType
    replicas: int
    sealed: bool
    size: int
    is_compressed: bool
    metadata: dict[str, str]
    stream_info: StreamInfo
    backing_store: str = "JetStream"


def _check_bucket(bucket: str) -> None:
    if not names.is_valid_bucket_name(bucket):
        raise InvalidBucketName(f"invalid bucket name {bucket!r}")


async def _chunks(source: PutSource, size: int) -> AsyncIterator[bytes]:
    """Cut any supported source into chunks of at most ``size`` bytes."""
    if isinstance(source, bytes | bytearray | memoryview):
        view = memoryview(source)
        for start in range(0, len(view), size):
            yield bytes(view[start : start + size])
        return
    if isinstance(source, os.PathLike | Path):
        with open(source, "rb") as fh:  # noqa: ASYNC230 - chunk reads are short; no thread hop per chunk
            while chunk := fh.read(size):
                yield chunk
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            chunk = read(size)
            if hasattr(chunk, "__await__"):
                chunk = await chunk
            if not chunk:
                return
            yield bytes(chunk)
    pending = bytearray()
    if hasattr(source, "__aiter__"):
        async for piece in source:
            pending += piece
            while len(pending) >= size:
                yield bytes(pending[:size])
                del pending[:size]
    else:
        for piece in source:
            pending += piece
            while len(pending) >= size:
                yield bytes(pending[:size])
                del pending[:size]
    if pending:
        yield bytes(pending)


class ObjectResult:
    """An object being read: ``async for chunk in result`` or ``await result.read()``.

    The digest and size are checked after the last chunk ([`DigestMismatch`][] otherwise).
    ``info`` is the object's [`ObjectInfo`][]."""

    def __init__(self, info: ObjectInfo, messages: OrderedMessagesContext | None) -> None:
        self.info = info
        self._messages = messages
        self._hash = hashlib.sha256()
        self._size = 0
        self._chunks = 0
        self._done = messages is None
        if self._done:
            self._verify()

    def __aiter__(self) -> ObjectResult:
        return self

    async def __anext__(self) -> bytes:
        if self._done:
            raise StopAsyncIteration
        assert self._messages is not None
        try:
            msg = await self._messages.next()
        except MsgIteratorClosed:
            raise StopAsyncIteration from None
        chunk = msg.data
        self._hash.update(chunk)
        self._size += len(chunk)
        self._chunks += 1
        # The meta says how many chunks there are (the server's pending count is not always exact).
        if self._chunks >= self.info.chunks or self._size >= self.info.size:
            self._done = True
            self._messages.stop()
            self._verify()
        return chunk

    def _verify(self) -> None:
        if self._size != self.info.size or object_digest(self._hash) != self.info.digest:
            if self.info.size == 0 and self._size == 0 and not self.info.digest:
                return
            raise DigestMismatch()

    async def read(self) -> bytes:
        """The whole object."""
        out = bytearray()
        async for chunk in self:
            out += chunk
        return bytes(out)

    def close(self) -> None:
        """Stop reading the object's chunks."""
        if self._messages is not None:
            self._messages.stop()

    async def __aenter__(self) -> ObjectResult:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()


class ObjectStore:
    """An object-store bucket (nats.go ``jetstream.ObjectStore``); get one with ``js.object_store(b)``."""

    def __init__(self, js: JetStream, bucket: str, stream: Stream) -> None:
        self._js = js
        self._bucket = bucket
        self._stream = stream
        # Through an account import the store's subjects carry the API prefix too (nats.go).
        self._pub_prefix = f"{js.api_prefix}." if js.custom_prefix else ""

    @property
    def bucket(self) -> str:
        return self._bucket

    # --- put ---------------------------------------------------------------------------------------

    async def put(self, meta: ObjectMeta | str, data: PutSource) -> ObjectInfo:
        """Store an object from bytes, a file path, a binary file, or an (async) iterable of bytes.

        The data is cut in chunks (``meta.max_chunk_size``, default 128 KiB), published pipelined,
        hashed with SHA-256; an object of the same name is replaced (its chunks purged afterwards)."""
        if isinstance(meta, str):
            meta = ObjectMeta(name=meta)
        if not meta.name:
            raise ObjectNameRequired()
        chunk_size = meta.max_chunk_size or OBJ_DEFAULT_CHUNK_SIZE
        try:
            existing: ObjectInfo | None = await self.get_info(meta.name, show_deleted=True)
        except ObjectNotFound:
            existing = None
        nuid = next_nuid()
        chunk_subject = self._pub_prefix + obj_chunk_subject(self._bucket, nuid)
        digest = hashlib.sha256()
        size = chunks = 0
        in_flight: deque[PubAckFuture] = deque()
        try:
            async for chunk in _chunks(data, chunk_size):
                digest.update(chunk)
                size += len(chunk)
                chunks += 1
                in_flight.append(await self._js.publish_async(chunk_subject, chunk))
                while in_flight and in_flight[0].done():
                    in_flight.popleft().result()
            while in_flight:
                await in_flight.popleft()
            info = ObjectInfo(
                name=meta.name,
                description=meta.description,
                headers=dict(meta.headers),
                metadata=dict(meta.metadata),
                options=ObjectMetaOptions(max_chunk_size=meta.max_chunk_size)
                if meta.max_chunk_size
                else None,
                bucket=self._bucket,
                nuid=nuid,
                size=size,
                mtime=ObjectModTime(NanoTime.now()),
                chunks=chunks,
                digest=object_digest(digest),
            )
            await self._publish_meta(info)
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            await self._purge_quietly(obj_chunk_subject(self._bucket, nuid))
            raise
        if existing is not None and not existing.deleted and existing.nuid:
            await self._stream.purge(subject=obj_chunk_subject(self._bucket, existing.nuid))
        return info

    async def put_bytes(self, name: str, data: bytes) -> ObjectInfo:
        """Store ``data`` as object ``name``."""
        return await self.put(ObjectMeta(name=name), data)

    async def put_string(self, name: str, data: str) -> ObjectInfo:
        """Store ``data`` (UTF-8) as object ``name``."""
        return await self.put(ObjectMeta(name=name), data.encode())

    async def put_file(self, path: str | os.PathLike[str], name: str | None = None) -> ObjectInfo:
        """Store a file, under its path as name unless ``name`` is given."""
        return await self.put(ObjectMeta(name=name or os.fspath(path)), Path(path))

    async def _publish_meta(self, info: ObjectInfo) -> None:
        subject = self._pub_prefix + obj_meta_subject(self._bucket, info.name)
        await self._js.publish(subject, codec.encode(info), headers={ROLLUP: ROLLUP_SUBJECT})

    async def _purge_quietly(self, subject: str) -> None:
        try:
            await self._stream.purge(subject=subject)
        except (NatsError, OSError):
            pass

    # --- get ---------------------------------------------------------------------------------------

    async def get_info(self, name: str, *, show_deleted: bool = False) -> ObjectInfo:
        """The object's meta ([`ObjectNotFound`][] if missing or deleted, unless ``show_deleted``);
        ``mtime`` is when the meta was stored."""
        if not name:
            raise ObjectNameRequired()
        try:
            raw = await self._stream.get_last_msg_for_subject(obj_meta_subject(self._bucket, name))
        except MsgNotFound:
            raise ObjectNotFound() from None
        info = _decode_info(raw.data)
        if info.deleted and not show_deleted:
            raise ObjectNotFound()
        info.mtime = ObjectModTime(raw.time)
        return info

    async def get(self, name: str, *, show_deleted: bool = False) -> ObjectResult:
        """Read an object (following links); iterate the result or ``await result.read()``."""
        info = await self.get_info(name, show_deleted=show_deleted)
        if info.options is not None and info.options.link is not None:
            link = info.options.link
            if not link.name:
                raise CantGetBucket()
            store = self if link.bucket == self._bucket else await self._js.object_store(link.bucket)
            return await store.get(link.name)
        if info.chunks == 0 or info.size == 0:
            return ObjectResult(info, None)
        config = OrderedConsumerConfig(filter_subjects=[obj_chunk_subject(self._bucket, info.nuid)])
        consumer = await self._js.ordered_consumer(self._stream.name, config)
        messages = await consumer.messages(max_bytes=GET_BUFFER_BYTES)
        return ObjectResult(info, messages)

    async def get_bytes(self, name: str) -> bytes:
        """Object ``name``'s content, its digest checked ([`ObjectNotFound`][] if missing)."""
        result = await self.get(name)
        return await result.read()

    async def get_string(self, name: str) -> str:
        """Object ``name``'s content decoded as UTF-8."""
        return (await self.get_bytes(name)).decode()

    async def get_file(self, name: str, path: str | os.PathLike[str]) -> ObjectInfo:
        """Write the object to ``path``; returns its info."""
        result = await self.get(name)
        with open(path, "wb") as fh:  # noqa: ASYNC230 - sequential chunk writes
            async for chunk in result:
                fh.write(chunk)
        return result.info

    # --- meta changes ------------------------------------------------------------------------------

    async def update_meta(self, name: str, meta: ObjectMeta) -> ObjectInfo:
        """Change name, description, headers and metadata (not the content)."""
        info = await self.get_info(name, show_deleted=True)
        if info.deleted:
            raise UpdateMetaDeleted()
        if meta.name != name:
            try:
                await self.get_info(meta.name)
            except ObjectNotFound:
                pass
            else:
                raise ObjectAlreadyExists()
        updated = msgspec.structs.replace(
            info,
            name=meta.name,
            description=meta.description,
            headers=dict(meta.headers),
            metadata=dict(meta.metadata),
        )
        await self._publish_meta(updated)
        if meta.name != name:
            await self._stream.purge(subject=obj_meta_subject(self._bucket, name))
        return updated

    async def delete(self, name: str) -> None:
        """Delete an object: a deleted-marker meta replaces it and its chunks are purged."""
        info = await self.get_info(name, show_deleted=True)
        if info.deleted:
            return
        marker = msgspec.structs.replace(
            info, deleted=True, size=0, chunks=0, digest="", mtime=ObjectModTime(NanoTime.now())
        )
        await self._publish_meta(marker)
        if info.nuid:
            await self._stream.purge(subject=obj_chunk_subject(self._bucket, info.nuid))

    async def add_link(self, name: str, obj: ObjectInfo) -> ObjectInfo:
        """A link named ``name`` to the object ``obj`` (of this or another bucket)."""
        if not name:
            raise ObjectNameRequired()
        if obj.deleted:
            raise NoLinkToDeleted()
        if obj.options is not None and obj.options.link is not None:
            raise NoLinkToLink()
        return await self._put_link(name, ObjectLink(bucket=obj.bucket, name=obj.name))

    async def add_bucket_link(self, name: str, store: ObjectStore) -> ObjectInfo:
        """A link named ``name`` to a whole bucket."""
        if not name:
            raise ObjectNameRequired()
        return await self._put_link(name, ObjectLink(bucket=store.bucket))

    async def _put_link(self, name: str, link: ObjectLink) -> ObjectInfo:
        try:
            existing: ObjectInfo | None = await self.get_info(name)
        except ObjectNotFound:
            existing = None
        if existing is not None and (existing.options is None or existing.options.link is None):
            raise ObjectAlreadyExists()
        info = ObjectInfo(
            name=name,
            bucket=self._bucket,
            nuid=next_nuid(),
            mtime=ObjectModTime(NanoTime.now()),
            options=ObjectMetaOptions(link=link),
        )
        await self._publish_meta(info)
        return info

    async def seal(self) -> None:
        """Make the bucket read-only (its stream is sealed)."""
        info = await self._stream.info()
        config = msgspec.structs.replace(info.config, sealed=True)
        self._stream = await self._js.update_stream(config)

    # --- listing -------------------------------------------------------------------------------------

    async def watch(
        self, *, include_history: bool = False, ignore_deletes: bool = False, updates_only: bool = False
    ) -> ObjectWatcher:
        """Object infos: the current ones first (every version with ``include_history``), then
        ``None`` once, then changes as they happen."""
        deliver = DeliverPolicy.ALL if include_history else DeliverPolicy.LAST_PER_SUBJECT
        if updates_only:
            deliver = DeliverPolicy.NEW
        config = OrderedConsumerConfig(
            filter_subjects=[obj_meta_filter(self._bucket)], deliver_policy=deliver
        )
        consumer = await self._js.ordered_consumer(self._stream.name, config)
        messages = await consumer.messages()
        info = consumer.cached_info()
        initial_empty = updates_only or info.num_pending == 0
        return ObjectWatcher(consumer, messages, ignore_deletes=ignore_deletes, init_done=initial_empty)

    async def list(self, *, show_deleted: bool = False) -> list[ObjectInfo]:
        """Every object's info; [`NoObjectsFound`][] if there is none."""
        watcher = await self.watch(ignore_deletes=not show_deleted)
        found: list[ObjectInfo] = []
        try:
            async for info in watcher:
                if info is None:
                    break
                found.append(info)
        finally:
            watcher.stop()
        if not found:
            raise NoObjectsFound()
        return found

    async def status(self) -> ObjectStoreStatus:
        """The bucket's status: its configuration, size and whether it is sealed."""
        return _status(self._bucket, await self._stream.info())

    def __repr__(self) -> str:
        return f"<ObjectStore bucket={self._bucket!r}>"


def _decode_info(data: bytes) -> ObjectInfo:
    try:
        return codec.decode(data, ObjectInfo)
    except msgspec.DecodeError:
        raise BadObjectMeta() from None


def _status(bucket: str, info: StreamInfo) -> ObjectStoreStatus:
    cfg = info.config
    return ObjectStoreStatus(
        bucket=bucket,
        description=cfg.description,
        ttl=Seconds(cfg.max_age),
        storage=cfg.storage,
        replicas=cfg.num_replicas,
        sealed=cfg.sealed,
        size=info.state.bytes,
        is_compressed=cfg.compression is not None and cfg.compression.value == "s2",
        metadata=dict(cfg.metadata),
        stream_info=info,
    )


class ObjectWatcher:
    """``async for info in watcher`` (``None`` once after the initial infos); ``stop()`` ends it."""

    def __init__(
        self,
        consumer: OrderedConsumer,
        messages: OrderedMessagesContext,
        *,
        ignore_deletes: bool,
        init_done: bool,
    ) -> None:
        self._consumer = consumer
        self._messages = messages
        self._ignore_deletes = ignore_deletes
        self._out: deque[ObjectInfo | None] = deque()
        self.init_done = init_done
        if init_done:
            self._out.append(None)

    async def next(self, timeout: Duration | None = None) -> ObjectInfo | None:
        """The next object's info (or the ``None`` marker); ``TimeoutError`` after ``timeout``."""
        timeout = seconds_or_none(timeout)
        while not self._out:
            if self.init_done:
                msg = await self._messages.next(timeout)
            else:
                found = await next_or_caught_up(self._consumer, self._messages, timeout)
                if found is None:
                    self.init_done = True
                    self._out.append(None)
                    continue
                msg = found
            info = self._info_from(msg)
            if info is not None and not (self._ignore_deletes and info.deleted):
                self._out.append(info)
            if not self.init_done and msg.metadata().num_pending == 0:
                self.init_done = True
                self._out.append(None)
        return self._out.popleft()

    @staticmethod
    def _info_from(msg: JetStreamMsg) -> ObjectInfo | None:
        try:
            info = _decode_info(msg.data)
        except BadObjectMeta:
            return None
        info.mtime = ObjectModTime(msg.metadata().timestamp)
        return info

    def __aiter__(self) -> ObjectWatcher:
        return self

    async def __anext__(self) -> ObjectInfo | None:
        try:
            return await self.next()
        except MsgIteratorClosed:
            raise StopAsyncIteration from None

    def stop(self) -> None:
        """Stop watching."""
        self._messages.stop()

    async def __aenter__(self) -> ObjectWatcher:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.stop()


class ObjectStoreManager:
    """Bucket management on the JetStream context (held by [`JetStream`][], which delegates to it)."""

    def __init__(self, js: JetStream) -> None:
        self._js = js

    async def object_store(self, bucket: str) -> ObjectStore:
        """Bind to an existing bucket ([`BucketNotFound`][pyjetstream.client.jetstream.errors.BucketNotFound] if there is none)."""
        _check_bucket(bucket)
        try:
            stream = await self._js.stream(obj_stream_name(bucket))
        except StreamNotFound:
            raise BucketNotFound() from None
        return ObjectStore(self._js, bucket, stream)

    async def create_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        try:
            stream = await self._js.create_stream(_stream_config(config))
        except StreamNameAlreadyInUse as exc:
            raise BucketExists(
                f"bucket {config.bucket!r} already exists", code=exc.code, err_code=exc.err_code
            ) from None
        return ObjectStore(self._js, config.bucket, stream)

    async def update_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        try:
            stream = await self._js.update_stream(_stream_config(config))
        except StreamNotFound:
            raise BucketNotFound() from None
        return ObjectStore(self._js, config.bucket, stream)

    async def create_or_update_object_store(self, config: ObjectStoreConfig) -> ObjectStore:
        stream = await self._js.create_or_update_stream(_stream_config(config))
        return ObjectStore(self._js, config.bucket, stream)

    async def delete_object_store(self, bucket: str) -> None:
        _check_bucket(bucket)
        try:
            await self._js.delete_stream(obj_stream_name(bucket))
        except StreamNotFound:
            raise BucketNotFound() from None

    async def object_store_names(self) -> AsyncIterator[str]:
        async for name in self._js.stream_names(subject=OBJ_BUCKETS_FILTER):
            bucket = obj_bucket_from_stream(name)
            if bucket is not None:
                yield bucket

    async def object_stores(self) -> AsyncIterator[ObjectStoreStatus]:
        async for info in self._js.list_streams(subject=OBJ_BUCKETS_FILTER):
            bucket = obj_bucket_from_stream(info.config.name)
            if bucket is not None:
                yield _status(bucket, info)


def _stream_config(config: ObjectStoreConfig) -> StreamConfig:
    _check_bucket(config.bucket)
    if config.replicas < 0:
        raise JetStreamError("replicas must not be negative")
    return obj_stream_config(
        config.bucket,
        description=config.description,
        ttl_ns=to_ns(config.ttl),
        max_bytes=config.max_bytes,
        storage=config.storage,
        replicas=config.replicas or 1,
        placement=config.placement,
        compression=config.compression,
        metadata=config.metadata,
    )
