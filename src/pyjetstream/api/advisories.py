"""Advisory and metric payloads (nats-server jetstream_events.go).

Every event carries ``type``, ``id`` (a nuid) and ``timestamp``; ``type`` defaults to the
class's ``TYPE``. Subjects are built by `pyjetstream.api.subjects`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ._wire import WireStruct, always, always_new
from .enums import AdvisoryAction
from .models_common import PeerInfo
from .models_stream import StreamState
from .timefmt import ZERO_TIME, NanoTime

__all__ = [
    "ADVISORY_TYPES",
    "ApiAuditAdvisory",
    "ConsumerAckMetric",
    "ConsumerActionAdvisory",
    "ConsumerDeliveryExceededAdvisory",
    "ConsumerDeliveryNakAdvisory",
    "ConsumerDeliveryTerminatedAdvisory",
    "ConsumerGroupPinnedAdvisory",
    "ConsumerGroupUnpinnedAdvisory",
    "ConsumerLeaderElectedAdvisory",
    "ConsumerPauseAdvisory",
    "ConsumerQuorumLostAdvisory",
    "RestoreCompleteAdvisory",
    "RestoreCreateAdvisory",
    "ServerOutOfSpaceAdvisory",
    "ServerRemovedAdvisory",
    "SnapshotCompleteAdvisory",
    "SnapshotCreateAdvisory",
    "StreamActionAdvisory",
    "StreamBatchAbandonedAdvisory",
    "StreamLeaderElectedAdvisory",
    "StreamQuorumLostAdvisory",
    "TypedEvent",
]

_ADV = "io.nats.jetstream.advisory.v1."


class TypedEvent(WireStruct):
    TYPE: ClassVar[str] = ""

    type: str = always("")
    id: str = always("")
    timestamp: NanoTime = always(ZERO_TIME)

    def __post_init__(self) -> None:
        if not self.type:
            self.type = self.TYPE


class ApiAuditAdvisory(TypedEvent):
    """``$JS.EVENT.ADVISORY.API``; ``client`` is nats-server's ClientInfo object, kept as a dict."""

    TYPE = _ADV + "api_audit"
    server: str = always("")
    client: dict[str, Any] | None = always(None)
    subject: str = always("")
    request: str = ""
    response: str = always("")
    domain: str = ""


class StreamActionAdvisory(TypedEvent):
    TYPE = _ADV + "stream_action"
    stream: str = always("")
    action: AdvisoryAction = always(AdvisoryAction.CREATE)
    template: str = ""
    domain: str = ""


class StreamBatchAbandonedAdvisory(TypedEvent):
    """⟨2.12+⟩ ``$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.<stream>``: an atomic batch was dropped;
    ``reason`` is ``timeout`` | ``large`` | ``incomplete`` | ``unsupported``."""

    TYPE = _ADV + "stream_batch_abandoned"
    account: str = ""
    stream: str = always("")
    domain: str = ""
    batch: str = always("")
    reason: str = always("")


class StreamWriteErrorAdvisory(TypedEvent):
    """pyjetstream only: ``$JS.EVENT.ADVISORY.STREAM.WRITE_ERROR.<stream>``, sent once when an I/O
    error freezes a stream's writes (nats-server 2.14+ freezes the same way but only logs)."""

    TYPE = _ADV + "stream_write_error"
    stream: str = always("")
    error: str = always("")
    domain: str = ""


class ConsumerActionAdvisory(TypedEvent):
    TYPE = _ADV + "consumer_action"
    stream: str = always("")
    consumer: str = always("")
    action: AdvisoryAction = always(AdvisoryAction.CREATE)
    domain: str = ""


class ConsumerPauseAdvisory(TypedEvent):
    """⟨2.11+⟩ ``$JS.EVENT.ADVISORY.CONSUMER.PAUSE.<S>.<C>``; a resume has the zero time (or the
    past deadline) as ``pause_until`` (Go never omits a time.Time)."""

    TYPE = _ADV + "consumer_pause"
    stream: str = always("")
    consumer: str = always("")
    paused: bool = always(False)
    pause_until: NanoTime = always(ZERO_TIME)
    domain: str = ""


class ConsumerGroupPinnedAdvisory(TypedEvent):
    """⟨2.11+⟩ ``$JS.EVENT.ADVISORY.CONSUMER.PINNED.<S>.<C>``."""

    TYPE = _ADV + "consumer_group_pinned"
    account: str = ""
    stream: str = always("")
    consumer: str = always("")
    domain: str = ""
    group: str = always("")
    pinned_id: str = always("")


class ConsumerGroupUnpinnedAdvisory(TypedEvent):
    """⟨2.11+⟩ ``$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.<S>.<C>``; ``reason`` is ``admin`` or ``timeout``."""

    TYPE = _ADV + "consumer_group_unpinned"
    account: str = ""
    stream: str = always("")
    consumer: str = always("")
    domain: str = ""
    group: str = always("")
    reason: str = always("")


class ConsumerAckMetric(TypedEvent):
    """``$JS.EVENT.METRIC.CONSUMER.ACK.<S>.<C>``, sampled per ``sample_freq``; ``ack_time`` in ns."""

    TYPE = "io.nats.jetstream.metric.v1.consumer_ack"
    stream: str = always("")
    consumer: str = always("")
    consumer_seq: int = always(0)
    stream_seq: int = always(0)
    ack_time: int = always(0)
    deliveries: int = always(0)
    domain: str = ""


class ConsumerDeliveryExceededAdvisory(TypedEvent):
    TYPE = _ADV + "max_deliver"
    stream: str = always("")
    consumer: str = always("")
    stream_seq: int = always(0)
    deliveries: int = always(0)
    domain: str = ""


class ConsumerDeliveryNakAdvisory(TypedEvent):
    TYPE = _ADV + "nak"
    stream: str = always("")
    consumer: str = always("")
    consumer_seq: int = always(0)
    stream_seq: int = always(0)
    deliveries: int = always(0)
    domain: str = ""


class ConsumerDeliveryTerminatedAdvisory(TypedEvent):
    TYPE = _ADV + "terminated"
    stream: str = always("")
    consumer: str = always("")
    consumer_seq: int = always(0)
    stream_seq: int = always(0)
    deliveries: int = always(0)
    reason: str = ""  # ⟨2.10.4+⟩
    domain: str = ""


class SnapshotCreateAdvisory(TypedEvent):
    TYPE = _ADV + "snapshot_create"
    stream: str = always("")
    state: StreamState = always_new(StreamState)
    client: dict[str, Any] | None = always(None)
    domain: str = ""


class SnapshotCompleteAdvisory(TypedEvent):
    TYPE = _ADV + "snapshot_complete"
    stream: str = always("")
    start: NanoTime = always(ZERO_TIME)
    end: NanoTime = always(ZERO_TIME)
    client: dict[str, Any] | None = always(None)
    domain: str = ""


class RestoreCreateAdvisory(TypedEvent):
    TYPE = _ADV + "restore_create"
    stream: str = always("")
    client: dict[str, Any] | None = always(None)
    domain: str = ""


class RestoreCompleteAdvisory(TypedEvent):
    TYPE = _ADV + "restore_complete"
    stream: str = always("")
    start: NanoTime = always(ZERO_TIME)
    end: NanoTime = always(ZERO_TIME)
    bytes: int = always(0)
    client: dict[str, Any] | None = always(None)
    domain: str = ""


class StreamLeaderElectedAdvisory(TypedEvent):
    TYPE = _ADV + "stream_leader_elected"
    account: str = ""
    stream: str = always("")
    leader: str = always("")
    replicas: list[PeerInfo] | None = always(None)
    domain: str = ""


class StreamQuorumLostAdvisory(TypedEvent):
    TYPE = _ADV + "stream_quorum_lost"
    account: str = ""
    stream: str = always("")
    replicas: list[PeerInfo] | None = always(None)
    domain: str = ""


class ConsumerLeaderElectedAdvisory(TypedEvent):
    TYPE = _ADV + "consumer_leader_elected"
    account: str = ""
    stream: str = always("")
    consumer: str = always("")
    leader: str = always("")
    replicas: list[PeerInfo] | None = always(None)
    domain: str = ""


class ConsumerQuorumLostAdvisory(TypedEvent):
    TYPE = _ADV + "consumer_quorum_lost"
    account: str = ""
    stream: str = always("")
    consumer: str = always("")
    replicas: list[PeerInfo] | None = always(None)
    domain: str = ""


class ServerOutOfSpaceAdvisory(TypedEvent):
    TYPE = _ADV + "server_out_of_space"
    server: str = always("")
    server_id: str = always("")
    stream: str = ""
    cluster: str = always("")
    domain: str = ""


class ServerRemovedAdvisory(TypedEvent):
    TYPE = _ADV + "server_removed"
    server: str = always("")
    server_id: str = always("")
    cluster: str = always("")
    domain: str = ""


ADVISORY_TYPES: dict[str, type[TypedEvent]] = {
    cls.TYPE: cls
    for cls in (
        ApiAuditAdvisory,
        StreamActionAdvisory,
        StreamBatchAbandonedAdvisory,
        ConsumerActionAdvisory,
        ConsumerPauseAdvisory,
        ConsumerGroupPinnedAdvisory,
        ConsumerGroupUnpinnedAdvisory,
        ConsumerAckMetric,
        ConsumerDeliveryExceededAdvisory,
        ConsumerDeliveryNakAdvisory,
        ConsumerDeliveryTerminatedAdvisory,
        SnapshotCreateAdvisory,
        SnapshotCompleteAdvisory,
        RestoreCreateAdvisory,
        RestoreCompleteAdvisory,
        StreamLeaderElectedAdvisory,
        StreamQuorumLostAdvisory,
        ConsumerLeaderElectedAdvisory,
        ConsumerQuorumLostAdvisory,
        ServerOutOfSpaceAdvisory,
        ServerRemovedAdvisory,
    )
}
"""Every advisory/metric ``type`` string → its class."""
