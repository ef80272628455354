"""Key-Value store layout on top of a stream (ADR-8; nats.go ``jetstream/kv.go``).

Bucket ``b`` is stream ``KV_b`` with subjects ``$KV.b.>``; key ``k`` is subject ``$KV.b.k``.
A put is a publish (PubAck seq = revision); delete/purge are empty messages with
``KV-Operation: DEL`` / ``PURGE`` (+ ``Nats-Rollup: sub`` for purge).
"""

from __future__ import annotations

from enum import StrEnum

from .constants import DEFAULT_DUPLICATE_WINDOW_NS, UNLIMITED
from .enums import DiscardPolicy, StorageType, StoreCompression
from .headers import KV_OPERATION, ROLLUP, ROLLUP_SUBJECT
from .models_common import Placement, SubjectTransformConfig
from .models_stream import RePublish, StreamConfig, StreamSource

__all__ = [
    "KV_BUCKETS_FILTER",
    "KV_MAX_HISTORY",
    "KV_STREAM_PREFIX",
    "KV_SUBJECT_PREFIX",
    "KvOperation",
    "kv_bucket_from_stream",
    "kv_delete_headers",
    "kv_key_from_subject",
    "kv_purge_headers",
    "kv_stream_config",
    "kv_stream_name",
    "kv_stream_subjects",
    "kv_subject",
]

KV_STREAM_PREFIX = "KV_"
KV_SUBJECT_PREFIX = "$KV."
KV_MAX_HISTORY = 64
KV_BUCKETS_FILTER = "$KV.*.>"
"""STREAM.NAMES ``subject`` filter that lists KV buckets (strip ``KV_`` from the names)."""


class KvOperation(StrEnum):
    PUT = "PUT"  # never sent as a header: a put has no KV-Operation header
    DELETE = "DEL"
    PURGE = "PURGE"


def kv_stream_name(bucket: str) -> str:
    return KV_STREAM_PREFIX + bucket


def kv_bucket_from_stream(stream: str) -> str | None:
    return stream[len(KV_STREAM_PREFIX) :] if stream.startswith(KV_STREAM_PREFIX) else None


def kv_subject(bucket: str, key: str) -> str:
    """``$KV.<bucket>.<key>`` (also for watch filters such as ``>`` or ``a.*``)."""
    return f"$KV.{bucket}.{key}"


def kv_key_from_subject(bucket: str, subject: str) -> str | None:
    prefix = f"$KV.{bucket}."
    return subject[len(prefix) :] if subject.startswith(prefix) else None


def kv_stream_subjects(bucket: str) -> list[str]:
    return [f"$KV.{bucket}.>"]


def kv_delete_headers() -> dict[str, str]:
    return {KV_OPERATION: KvOperation.DELETE.value}


def kv_purge_headers() -> dict[str, str]:
    return {KV_OPERATION: KvOperation.PURGE.value, ROLLUP: ROLLUP_SUBJECT}


def kv_stream_config(
    bucket: str,
    *,
    description: str = "",
    history: int = 1,
    ttl_ns: int = 0,
    max_value_size: int = 0,
    max_bytes: int = 0,
    storage: StorageType = StorageType.FILE,
    replicas: int = 1,
    placement: Placement | None = None,
    republish: RePublish | None = None,
    mirror: StreamSource | None = None,
    sources: list[StreamSource] | None = None,
    compression: bool = False,
    metadata: dict[str, str] | None = None,
    limit_marker_ttl_ns: int = 0,
) -> StreamConfig:
    """The stream config nats.go's ``CreateKeyValue`` sends for a bucket.

    ``history`` 1..64; 0 limits mean unlimited (-1); the duplicate window is 2 min or the
    TTL if shorter. Mirrors/sources are named ``KV_<bucket>`` and sources from another bucket
    get a ``$KV.<src>.>`` → ``$KV.<bucket>.>`` transform. ``limit_marker_ttl_ns`` (⟨2.11+⟩)
    sets ``subject_delete_marker_ttl`` and ``allow_msg_ttl``.
    """
    if not 1 <= history <= KV_MAX_HISTORY:
        raise ValueError(f"history must be between 1 and {KV_MAX_HISTORY}")
    duplicate_window = DEFAULT_DUPLICATE_WINDOW_NS
    if 0 < ttl_ns < duplicate_window:
        duplicate_window = ttl_ns
    cfg = StreamConfig(
        name=kv_stream_name(bucket),
        description=description,
        max_msgs_per_subject=history,
        max_bytes=max_bytes or UNLIMITED,
        max_age=ttl_ns,
        max_msg_size=max_value_size or UNLIMITED,
        storage=storage,
        num_replicas=replicas or 1,
        placement=placement,
        allow_rollup_hdrs=True,
        deny_delete=True,
        duplicate_window=duplicate_window,
        max_msgs=UNLIMITED,
        max_consumers=UNLIMITED,
        allow_direct=True,
        republish=republish,
        compression=StoreCompression.S2 if compression else StoreCompression.NONE,
        discard=DiscardPolicy.NEW,
        metadata=dict(metadata or {}),
    )
    if limit_marker_ttl_ns > 0:
        cfg.subject_delete_marker_ttl = limit_marker_ttl_ns
        cfg.allow_msg_ttl = True
    if mirror is not None:
        if not mirror.name.startswith(KV_STREAM_PREFIX):
            mirror.name = kv_stream_name(mirror.name)
        cfg.mirror = mirror
        cfg.mirror_direct = True
    elif sources:
        for src in sources:
            source_bucket = kv_bucket_from_stream(src.name)
            if source_bucket is None:
                source_bucket = src.name
                src.name = kv_stream_name(src.name)
            if src.external is None or source_bucket != bucket:
                src.subject_transforms = [
                    SubjectTransformConfig(src=f"$KV.{source_bucket}.>", dest=f"$KV.{bucket}.>")
                ]
            cfg.sources.append(src)
        cfg.subjects = kv_stream_subjects(bucket)
    else:
        cfg.subjects = kv_stream_subjects(bucket)
    return cfg
