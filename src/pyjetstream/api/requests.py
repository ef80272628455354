"""API request bodies not covered by the stream/consumer/msg modules (nats-server jetstream_api.go).

Every request may also arrive empty; decode with `pyjetstream.api.codec.decode_request`,
which treats an empty payload like Go's zero value.
"""

from __future__ import annotations

from ._wire import WireStruct, always, always_new
from .models_common import Placement
from .models_stream import StreamConfig, StreamState
from .timefmt import ZERO_TIME, NanoTime

__all__ = [
    "ApiPagedRequest",
    "ConsumerListRequest",
    "ConsumerNamesRequest",
    "ConsumerPauseRequest",
    "ConsumerResetRequest",
    "ConsumerUnpinRequest",
    "LeaderStepdownRequest",
    "MetaServerRemoveRequest",
    "StreamConfigRequest",
    "StreamInfoRequest",
    "StreamListRequest",
    "StreamNamesRequest",
    "StreamPurgeRequest",
    "StreamRemovePeerRequest",
    "StreamRestoreRequest",
    "StreamSnapshotRequest",
]


class ApiPagedRequest(WireStruct):
    offset: int = always(0)


class StreamNamesRequest(ApiPagedRequest):
    subject: str = ""  # only streams whose subjects overlap this filter


class StreamListRequest(ApiPagedRequest):
    subject: str = ""


class ConsumerNamesRequest(ApiPagedRequest):
    pass


class ConsumerListRequest(ApiPagedRequest):
    pass


class StreamInfoRequest(ApiPagedRequest):
    deleted_details: bool = False
    subjects_filter: str = ""  # fill state.subjects for subjects matching this (paged by offset)


class StreamConfigRequest(StreamConfig):
    """STREAM.CREATE/UPDATE body: a StreamConfig plus ⟨2.11+⟩ ``pedantic``."""

    pedantic: bool = False


class StreamPurgeRequest(WireStruct):
    """Purge up to (not incl.) ``seq``, only ``filter`` subjects, or keeping ``keep`` (seq+keep ⇒ 10003)."""

    seq: int = 0
    filter: str = ""
    keep: int = 0


class StreamSnapshotRequest(WireStruct):
    deliver_subject: str = always("")
    no_consumers: bool = False
    chunk_size: int = 0
    window_size: int = 0  # ⟨2.12+⟩ unacknowledged bytes in flight (1 KiB – 32 MiB, default 8 MiB)
    jsck: bool = False  # check message checksums first


class StreamRestoreRequest(WireStruct):
    config: StreamConfig = always_new(StreamConfig)
    state: StreamState = always_new(StreamState)


class StreamRemovePeerRequest(WireStruct):
    peer: str = always("")


class LeaderStepdownRequest(WireStruct):
    placement: Placement | None = None


class MetaServerRemoveRequest(WireStruct):
    peer: str = always("")  # server name
    peer_id: str = ""


class ConsumerPauseRequest(WireStruct):
    """⟨2.11+⟩ ``CONSUMER.PAUSE``; zero time (or absent) resumes."""

    pause_until: NanoTime = always(ZERO_TIME)


class ConsumerUnpinRequest(WireStruct):
    """⟨2.11+⟩ ``CONSUMER.UNPIN``."""

    group: str = always("")


class ConsumerResetRequest(WireStruct):
    """⟨2.14+⟩ ``CONSUMER.RESET``: deliver again from stream sequence ``seq`` (0: the consumer's start)."""

    seq: int = 0
