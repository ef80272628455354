"""Object store layout on top of a stream (ADR-20; nats.go ``jetstream/object.go``).

Bucket ``b`` is stream ``OBJ_b`` with subjects ``$O.b.C.>`` (chunks, one subject per object
nuid) and ``$O.b.M.>`` (metadata, subject token = base64url(name) with padding). The meta
message is [`ObjectInfo`][] JSON, published with ``Nats-Rollup: sub``.
"""

from __future__ import annotations

import base64
import hashlib
from typing import Protocol, Self

from ._wire import WireStruct, always
from .enums import DiscardPolicy, StorageType, StoreCompression
from .models_common import Placement
from .models_stream import StreamConfig
from .timefmt import ZERO_TIME, NanoTime, parse_time

__all__ = [
    "OBJ_BUCKETS_FILTER",
    "OBJ_DEFAULT_CHUNK_SIZE",
    "OBJ_DIGEST_PREFIX",
    "OBJ_STREAM_PREFIX",
    "ObjectInfo",
    "ObjectLink",
    "ObjectMetaOptions",
    "ObjectModTime",
    "decode_object_name",
    "encode_object_name",
    "obj_bucket_from_stream",
    "obj_chunk_subject",
    "obj_chunks_filter",
    "obj_meta_filter",
    "obj_meta_subject",
    "obj_stream_config",
    "obj_stream_name",
    "object_digest",
]

OBJ_STREAM_PREFIX = "OBJ_"
OBJ_DEFAULT_CHUNK_SIZE = 128 * 1024
OBJ_DIGEST_PREFIX = "SHA-256="
OBJ_BUCKETS_FILTER = "$O.*.C.>"
"""STREAM.NAMES ``subject`` filter that lists object store buckets (strip ``OBJ_``)."""


def obj_stream_name(bucket: str) -> str:
    return OBJ_STREAM_PREFIX + bucket


def obj_bucket_from_stream(stream: str) -> str | None:
    return stream[len(OBJ_STREAM_PREFIX) :] if stream.startswith(OBJ_STREAM_PREFIX) else None


def encode_object_name(name: str) -> str:
    """Subject token for an object name: URL-safe base64 *with* ``=`` padding (Go URLEncoding)."""
    return base64.urlsafe_b64encode(name.encode()).decode()


def decode_object_name(token: str) -> str:
    return base64.urlsafe_b64decode(token.encode()).decode()


def obj_chunk_subject(bucket: str, nuid: str) -> str:
    return f"$O.{bucket}.C.{nuid}"


def obj_meta_subject(bucket: str, name: str) -> str:
    return f"$O.{bucket}.M.{encode_object_name(name)}"


def obj_chunks_filter(bucket: str) -> str:
    return f"$O.{bucket}.C.>"


def obj_meta_filter(bucket: str) -> str:
    return f"$O.{bucket}.M.>"


class _Digest(Protocol):
    def digest(self) -> bytes: ...


def object_digest(data_or_hash: bytes | _Digest) -> str:
    """``SHA-256=`` + base64url (padded) of the SHA-256 of the content (pass bytes or a hash object)."""
    digest = (
        hashlib.sha256(data_or_hash).digest() if isinstance(data_or_hash, bytes) else data_or_hash.digest()
    )
    return OBJ_DIGEST_PREFIX + base64.urlsafe_b64encode(digest).decode()


class ObjectModTime(NanoTime):
    """``mtime`` of an object: RFC3339 like every time, but also tolerates the empty string
    nats.py writes for deleted objects (read as the zero time)."""

    __slots__ = ()

    @classmethod
    def parse(cls, text: str) -> Self:
        return cls(ZERO_TIME if text == "" else parse_time(text))


class ObjectLink(WireStruct):
    bucket: str = always("")
    name: str = ""  # empty = link to the whole bucket


class ObjectMetaOptions(WireStruct):
    link: ObjectLink | None = None
    max_chunk_size: int = 0


class ObjectInfo(WireStruct):
    """The meta message (Go ``ObjectInfo`` = ``ObjectMeta`` + bucket state fields)."""

    name: str = always("")
    description: str = ""
    headers: dict[str, list[str]] = {}
    metadata: dict[str, str] = {}
    options: ObjectMetaOptions | None = None
    bucket: str = always("")
    nuid: str = always("")
    size: int = always(0)
    mtime: ObjectModTime = always(ObjectModTime(ZERO_TIME))
    chunks: int = always(0)
    digest: str = ""
    deleted: bool = False


def obj_stream_config(
    bucket: str,
    *,
    description: str = "",
    ttl_ns: int = 0,
    max_bytes: int = 0,
    storage: StorageType = StorageType.FILE,
    replicas: int = 1,
    placement: Placement | None = None,
    compression: bool = False,
    metadata: dict[str, str] | None = None,
) -> StreamConfig:
    """The stream config nats.go's ``CreateObjectStore`` sends for a bucket."""
    return StreamConfig(
        name=obj_stream_name(bucket),
        description=description,
        subjects=[obj_chunks_filter(bucket), obj_meta_filter(bucket)],
        max_age=ttl_ns,
        max_bytes=max_bytes or -1,
        storage=storage,
        num_replicas=replicas,
        placement=placement,
        discard=DiscardPolicy.NEW,
        allow_rollup_hdrs=True,
        allow_direct=True,
        metadata=dict(metadata or {}),
        compression=StoreCompression.S2 if compression else StoreCompression.NONE,
    )
