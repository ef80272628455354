"""Stream config, state and info (nats-server stream.go / store.go).

Field order and omit-empty are nats-server 2.15's (Go struct order and tags), so encoded JSON
matches nats-server byte for byte. Fields newer than the embedded server's features are parsed
(clients send them, nats-server answers with them) but only honoured where the server says so.
"""

from __future__ import annotations

from ._wire import WireStruct, always, always_new
from .enums import DiscardPolicy, PersistMode, RetentionPolicy, StorageType, StoreCompression
from .models_common import (
    ApiError,
    ClusterInfo,
    ExternalStream,
    LostStreamData,
    Placement,
    SubjectTransformConfig,
)
from .timefmt import ZERO_TIME, NanoTime

__all__ = [
    "RePublish",
    "StreamAlternate",
    "StreamConfig",
    "StreamConsumerLimits",
    "StreamConsumerSource",
    "StreamInfo",
    "StreamSource",
    "StreamSourceInfo",
    "StreamState",
]


class StreamConsumerLimits(WireStruct):
    """⟨2.10+⟩ defaults applied to consumers of the stream."""

    inactive_threshold: int = 0  # ns
    max_ack_pending: int = 0


class RePublish(WireStruct):
    src: str = ""
    dest: str = always("")
    headers_only: bool = False


class StreamConsumerSource(WireStruct):
    """⟨2.14+⟩ ``StreamSource.consumer``: source through a named durable consumer of the origin."""

    name: str = ""
    deliver_subject: str = ""


class StreamSource(WireStruct):
    """A mirror or one of ``sources``."""

    name: str = always("")
    opt_start_seq: int = 0
    opt_start_time: NanoTime | None = None
    filter_subject: str = ""
    subject_transforms: list[SubjectTransformConfig] = []  # ⟨2.10+⟩
    external: ExternalStream | None = None
    consumer: StreamConsumerSource | None = None  # ⟨2.14+⟩


class StreamConfig(WireStruct):
    """``StreamConfig`` with Go zero values as defaults (the server applies its own defaults).

    Durations (``max_age``, ``duplicate_window``, ``subject_delete_marker_ttl``) are int ns.
    ``compression``, ``consumer_limits`` and ``allow_msg_ttl`` have no ``omitempty`` in Go: always
    written (older servers ignore them). ``metadata`` carries ``_nats.req.level`` once a server
    stored the config (`pyjetstream.api.versioning`).
    """

    name: str = always("")
    description: str = ""
    subjects: list[str] = []
    retention: RetentionPolicy = always(RetentionPolicy.LIMITS)
    max_consumers: int = always(0)
    max_msgs: int = always(0)
    max_bytes: int = always(0)
    max_age: int = always(0)
    max_msgs_per_subject: int = always(0)
    max_msg_size: int = 0
    discard: DiscardPolicy = always(DiscardPolicy.OLD)
    storage: StorageType = always(StorageType.FILE)
    num_replicas: int = always(0)
    no_ack: bool = False
    duplicate_window: int = 0
    placement: Placement | None = None
    mirror: StreamSource | None = None
    sources: list[StreamSource] = []
    compression: StoreCompression = always(StoreCompression.NONE)  # ⟨2.10+⟩
    first_seq: int = 0  # ⟨2.10+⟩
    subject_transform: SubjectTransformConfig | None = None  # ⟨2.10+⟩
    republish: RePublish | None = None
    allow_direct: bool = always(False)
    mirror_direct: bool = always(False)
    discard_new_per_subject: bool = False
    sealed: bool = always(False)
    deny_delete: bool = always(False)
    deny_purge: bool = always(False)
    allow_rollup_hdrs: bool = always(False)
    consumer_limits: StreamConsumerLimits = always_new(StreamConsumerLimits)  # ⟨2.10+⟩
    allow_msg_ttl: bool = always(False)  # ⟨2.11+⟩
    subject_delete_marker_ttl: int = 0  # ⟨2.11+⟩ ns
    allow_msg_counter: bool = False  # ⟨2.12+⟩ counters (ADR-49)
    allow_atomic: bool = False  # ⟨2.12+⟩
    allow_msg_schedules: bool = False  # ⟨2.12+⟩ message schedules (ADR-51)
    persist_mode: PersistMode = PersistMode.DEFAULT  # ⟨2.12+⟩ (omitempty on Go's int enum)
    allow_batched: bool = False  # ⟨2.14+⟩
    metadata: dict[str, str] = {}  # ⟨2.10+⟩


class StreamState(WireStruct):
    """Stream state. Empty stream: seqs 0 and times `ZERO_TIME`."""

    messages: int = always(0)
    bytes: int = always(0)
    first_seq: int = always(0)
    first_ts: NanoTime = always(ZERO_TIME)
    last_seq: int = always(0)
    last_ts: NanoTime = always(ZERO_TIME)
    num_subjects: int = 0
    subjects: dict[str, int] = {}  # only with STREAM.INFO subjects_filter
    num_deleted: int = 0
    deleted: list[int] = []  # only with STREAM.INFO deleted_details
    lost: LostStreamData | None = None
    consumer_count: int = always(0)


class StreamSourceInfo(WireStruct):
    name: str = always("")
    external: ExternalStream | None = None
    lag: int = always(0)
    seq: int = 0  # ⟨2.15+⟩ the origin's highest sequence sourced so far
    active: int = always(0)  # ns since last contact, -1 if never
    error: ApiError | None = None
    filter_subject: str = ""  # ⟨2.10+⟩
    subject_transforms: list[SubjectTransformConfig] = []  # ⟨2.10+⟩


class StreamAlternate(WireStruct):
    name: str = always("")
    domain: str = ""
    cluster: str = always("")


class StreamInfo(WireStruct):
    config: StreamConfig = always_new(StreamConfig)
    created: NanoTime = always(ZERO_TIME)
    state: StreamState = always_new(StreamState)
    domain: str = ""
    cluster: ClusterInfo | None = None
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] = []
    alternates: list[StreamAlternate] = []
    ts: NanoTime | None = None  # ⟨2.10+⟩ when the info was gathered (always set by servers)
