"""API response wrappers and their ``type`` strings (nats-server jetstream_api.go).

Go builds responses by embedding ``ApiResponse{type, error}``, sometimes ``ApiPaged{total,
offset, limit}``, and a *pointer* to the payload (StreamInfo, ConsumerInfo, account stats),
so the payload's fields sit at the top level and vanish when the pointer is nil (error
responses). The wrappers here are those flattened shapes: payload fields that Go always
writes are ``X | None = None`` (present on success, absent on error). Convert with
`payload` / `from_payload`. ``type`` defaults to the class's ``TYPE``.

Error responses keep Go's exact shape: e.g. a STREAM.INFO error still carries
``"total":0,"offset":0,"limit":0`` and a STREAM.NAMES error ``"streams":null``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from ._wire import WireStruct, always
from .models_account import AccountInfo, AccountLimits, ApiStats, Tier
from .models_common import ApiError, ClusterInfo
from .models_consumer import ConsumerConfig, ConsumerInfo, PriorityGroupState, SequenceInfo
from .models_msg import StoredMsg
from .models_stream import StreamAlternate, StreamConfig, StreamInfo, StreamSourceInfo, StreamState
from .timefmt import ZERO_TIME, NanoTime

_PRE = "io.nats.jetstream.api.v1."

ACCOUNT_INFO_RESPONSE_TYPE = _PRE + "account_info_response"
ACCOUNT_PURGE_RESPONSE_TYPE = _PRE + "account_purge_response"
STREAM_CREATE_RESPONSE_TYPE = _PRE + "stream_create_response"
STREAM_UPDATE_RESPONSE_TYPE = _PRE + "stream_update_response"
STREAM_INFO_RESPONSE_TYPE = _PRE + "stream_info_response"
STREAM_DELETE_RESPONSE_TYPE = _PRE + "stream_delete_response"
STREAM_NAMES_RESPONSE_TYPE = _PRE + "stream_names_response"
STREAM_LIST_RESPONSE_TYPE = _PRE + "stream_list_response"
STREAM_PURGE_RESPONSE_TYPE = _PRE + "stream_purge_response"
STREAM_MSG_GET_RESPONSE_TYPE = _PRE + "stream_msg_get_response"
STREAM_MSG_DELETE_RESPONSE_TYPE = _PRE + "stream_msg_delete_response"
STREAM_SNAPSHOT_RESPONSE_TYPE = _PRE + "stream_snapshot_response"
STREAM_RESTORE_RESPONSE_TYPE = _PRE + "stream_restore_response"
STREAM_REMOVE_PEER_RESPONSE_TYPE = _PRE + "stream_remove_peer_response"
STREAM_EVACUATE_PEER_RESPONSE_TYPE = _PRE + "stream_evacuate_peer_response"  # ⟨2.15+⟩
STREAM_CANCEL_MOVE_RESPONSE_TYPE = _PRE + "stream_cancel_move_response"  # ⟨2.15+⟩
STREAM_LEADER_STEPDOWN_RESPONSE_TYPE = _PRE + "stream_leader_stepdown_response"
STREAM_TEMPLATE_CREATE_RESPONSE_TYPE = _PRE + "stream_template_create_response"
STREAM_TEMPLATE_INFO_RESPONSE_TYPE = _PRE + "stream_template_info_response"
STREAM_TEMPLATE_DELETE_RESPONSE_TYPE = _PRE + "stream_template_delete_response"
STREAM_TEMPLATE_NAMES_RESPONSE_TYPE = _PRE + "stream_template_names_response"
CONSUMER_CREATE_RESPONSE_TYPE = _PRE + "consumer_create_response"
CONSUMER_INFO_RESPONSE_TYPE = _PRE + "consumer_info_response"
CONSUMER_DELETE_RESPONSE_TYPE = _PRE + "consumer_delete_response"
CONSUMER_NAMES_RESPONSE_TYPE = _PRE + "consumer_names_response"
CONSUMER_LIST_RESPONSE_TYPE = _PRE + "consumer_list_response"
CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE = _PRE + "consumer_leader_stepdown_response"
CONSUMER_PAUSE_RESPONSE_TYPE = _PRE + "consumer_pause_response"  # ⟨2.11+⟩
CONSUMER_UNPIN_RESPONSE_TYPE = _PRE + "consumer_unpin_response"  # ⟨2.11+⟩
CONSUMER_RESET_RESPONSE_TYPE = _PRE + "consumer_reset_response"  # ⟨2.14+⟩
META_LEADER_STEPDOWN_RESPONSE_TYPE = _PRE + "meta_leader_stepdown_response"
META_SERVER_REMOVE_RESPONSE_TYPE = _PRE + "meta_server_remove_response"
SYSTEM_OVERLOADED_TYPE = _PRE + "system_overloaded"  # ApiResponse carrying 10023 when API queue is full


class ApiResponse(WireStruct):
    """``{type, error}``; also usable directly for any error reply: ``ApiResponse(type=T, error=e)``."""

    TYPE: ClassVar[str] = ""

    type: str = always("")
    error: ApiError | None = None

    def __post_init__(self) -> None:
        if not self.type:
            self.type = self.TYPE


class PagedResponse(ApiResponse):
    total: int = always(0)
    offset: int = always(0)
    limit: int = always(0)


class _Flattened:
    """Mixin for wrappers that embed a payload struct's fields (Go ``*Payload`` embedding)."""

    __slots__ = ()
    PAYLOAD: ClassVar[type[WireStruct]]

    def payload(self) -> Any:
        """The embedded payload as its own model (``None`` fields fall back to its defaults)."""
        cls = self.PAYLOAD
        values = {f: getattr(self, f) for f in cls.__struct_fields__}
        return cls(**{k: v for k, v in values.items() if v is not None})

    @classmethod
    def from_payload(cls, payload: WireStruct, **extra: Any) -> Self:
        values = {f: getattr(payload, f) for f in payload.__struct_fields__}
        return cls(**values, **extra)


# --- account ------------------------------------------------------------------------------


class AccountInfoResponse(_Flattened, ApiResponse):
    TYPE = ACCOUNT_INFO_RESPONSE_TYPE
    PAYLOAD = AccountInfo

    memory: int | None = None
    storage: int | None = None
    reserved_memory: int | None = None  # ⟨2.11+⟩
    reserved_storage: int | None = None  # ⟨2.11+⟩
    streams: int | None = None
    consumers: int | None = None
    limits: AccountLimits | None = None
    domain: str = ""
    api: ApiStats | None = None
    tiers: dict[str, Tier] = {}


class AccountPurgeResponse(ApiResponse):
    TYPE = ACCOUNT_PURGE_RESPONSE_TYPE
    initiated: bool = False


# --- streams ------------------------------------------------------------------------------


class _StreamInfoBody(_Flattened, ApiResponse):
    PAYLOAD = StreamInfo

    config: StreamConfig | None = None
    created: NanoTime | None = None
    state: StreamState | None = None
    domain: str = ""
    cluster: ClusterInfo | None = None
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] = []
    alternates: list[StreamAlternate] = []
    ts: NanoTime | None = None


class StreamCreateResponse(_StreamInfoBody):
    TYPE = STREAM_CREATE_RESPONSE_TYPE
    did_create: bool = False


class StreamUpdateResponse(_StreamInfoBody):
    TYPE = STREAM_UPDATE_RESPONSE_TYPE


class StreamInfoResponse(_Flattened, PagedResponse):
    """Paging fields refer to ``state.subjects`` (limit 100000 when ``subjects_filter`` is used)."""

    TYPE = STREAM_INFO_RESPONSE_TYPE
    PAYLOAD = StreamInfo

    config: StreamConfig | None = None
    created: NanoTime | None = None
    state: StreamState | None = None
    domain: str = ""
    cluster: ClusterInfo | None = None
    mirror: StreamSourceInfo | None = None
    sources: list[StreamSourceInfo] = []
    alternates: list[StreamAlternate] = []
    ts: NanoTime | None = None


class StreamDeleteResponse(ApiResponse):
    TYPE = STREAM_DELETE_RESPONSE_TYPE
    success: bool = False


class StreamNamesResponse(PagedResponse):
    """``streams`` is ``null`` when empty (Go nil slice), as nats-server sends it."""

    TYPE = STREAM_NAMES_RESPONSE_TYPE
    streams: list[str] | None = always(None)


class StreamListResponse(PagedResponse):
    TYPE = STREAM_LIST_RESPONSE_TYPE
    streams: list[StreamInfo] | None = always(None)
    missing: list[str] = []


class StreamPurgeResponse(ApiResponse):
    TYPE = STREAM_PURGE_RESPONSE_TYPE
    success: bool = False
    purged: int = always(0)


class MsgGetResponse(ApiResponse):
    TYPE = STREAM_MSG_GET_RESPONSE_TYPE
    message: StoredMsg | None = None


class MsgDeleteResponse(ApiResponse):
    TYPE = STREAM_MSG_DELETE_RESPONSE_TYPE
    success: bool = False


class StreamSnapshotResponse(ApiResponse):
    TYPE = STREAM_SNAPSHOT_RESPONSE_TYPE
    config: StreamConfig | None = None
    state: StreamState | None = None


class StreamRestoreResponse(ApiResponse):
    TYPE = STREAM_RESTORE_RESPONSE_TYPE
    deliver_subject: str = always("")


class StreamRemovePeerResponse(ApiResponse):
    TYPE = STREAM_REMOVE_PEER_RESPONSE_TYPE
    success: bool = False


class StreamEvacuatePeerResponse(ApiResponse):
    """⟨2.15+⟩"""

    TYPE = STREAM_EVACUATE_PEER_RESPONSE_TYPE
    success: bool = False


class StreamCancelMoveResponse(ApiResponse):
    """⟨2.15+⟩"""

    TYPE = STREAM_CANCEL_MOVE_RESPONSE_TYPE
    success: bool = False


class StreamLeaderStepDownResponse(ApiResponse):
    TYPE = STREAM_LEADER_STEPDOWN_RESPONSE_TYPE
    success: bool = False


# --- stream templates (deprecated; removed after 2.12) -------------------------------------


class StreamTemplateConfig(WireStruct):
    name: str = always("")
    config: StreamConfig | None = always(None)
    max_streams: int = always(0)


class StreamTemplateInfo(WireStruct):
    config: StreamTemplateConfig | None = always(None)
    streams: list[str] | None = always(None)


class _StreamTemplateInfoBody(_Flattened, ApiResponse):
    PAYLOAD = StreamTemplateInfo

    config: StreamTemplateConfig | None = None
    streams: list[str] | None = None


class StreamTemplateCreateResponse(_StreamTemplateInfoBody):
    TYPE = STREAM_TEMPLATE_CREATE_RESPONSE_TYPE


class StreamTemplateInfoResponse(_StreamTemplateInfoBody):
    TYPE = STREAM_TEMPLATE_INFO_RESPONSE_TYPE


class StreamTemplateDeleteResponse(ApiResponse):
    TYPE = STREAM_TEMPLATE_DELETE_RESPONSE_TYPE
    success: bool = False


class StreamTemplateNamesResponse(PagedResponse):
    TYPE = STREAM_TEMPLATE_NAMES_RESPONSE_TYPE
    streams: list[str] | None = always(None)  # Go: Templates []string `json:"streams"`


# --- consumers ----------------------------------------------------------------------------


class _ConsumerInfoBody(_Flattened, ApiResponse):
    PAYLOAD = ConsumerInfo

    stream_name: str | None = None
    name: str | None = None
    created: NanoTime | None = None
    config: ConsumerConfig | None = None
    delivered: SequenceInfo | None = None
    ack_floor: SequenceInfo | None = None
    num_ack_pending: int | None = None
    num_redelivered: int | None = None
    num_waiting: int | None = None
    num_pending: int | None = None
    cluster: ClusterInfo | None = None
    push_bound: bool = False
    paused: bool = False
    pause_remaining: int = 0
    ts: NanoTime | None = None
    priority_groups: list[PriorityGroupState] = []


class ConsumerCreateResponse(_ConsumerInfoBody):
    TYPE = CONSUMER_CREATE_RESPONSE_TYPE


class ConsumerInfoResponse(_ConsumerInfoBody):
    TYPE = CONSUMER_INFO_RESPONSE_TYPE


class ConsumerDeleteResponse(ApiResponse):
    TYPE = CONSUMER_DELETE_RESPONSE_TYPE
    success: bool = False


class ConsumerNamesResponse(PagedResponse):
    """nats-server 2.9.10 sends ``"consumers":[]`` when empty (it pre-allocates the slice)."""

    TYPE = CONSUMER_NAMES_RESPONSE_TYPE
    consumers: list[str] | None = always(None)


class ConsumerListResponse(PagedResponse):
    TYPE = CONSUMER_LIST_RESPONSE_TYPE
    consumers: list[ConsumerInfo] | None = always(None)
    missing: list[str] = []


class ConsumerLeaderStepDownResponse(ApiResponse):
    TYPE = CONSUMER_LEADER_STEPDOWN_RESPONSE_TYPE
    success: bool = False


class ConsumerPauseResponse(ApiResponse):
    TYPE = CONSUMER_PAUSE_RESPONSE_TYPE
    paused: bool = always(False)
    pause_until: NanoTime = always(ZERO_TIME)
    pause_remaining: int = 0


class ConsumerUnpinResponse(ApiResponse):
    TYPE = CONSUMER_UNPIN_RESPONSE_TYPE


class ConsumerResetResponse(_ConsumerInfoBody):
    """⟨2.14+⟩ the consumer's info after the reset, and the sequence it restarts from."""

    TYPE = CONSUMER_RESET_RESPONSE_TYPE
    reset_seq: int = always(0)  # (Go writes it on errors too)


# --- meta (system account) -----------------------------------------------------------------


class MetaLeaderStepDownResponse(ApiResponse):
    TYPE = META_LEADER_STEPDOWN_RESPONSE_TYPE
    success: bool = False


class MetaServerRemoveResponse(ApiResponse):
    TYPE = META_SERVER_REMOVE_RESPONSE_TYPE
    success: bool = False


RESPONSE_CLASSES: dict[str, type[ApiResponse]] = {
    cls.TYPE: cls
    for cls in (
        AccountInfoResponse,
        AccountPurgeResponse,
        StreamCreateResponse,
        StreamUpdateResponse,
        StreamInfoResponse,
        StreamDeleteResponse,
        StreamNamesResponse,
        StreamListResponse,
        StreamPurgeResponse,
        MsgGetResponse,
        MsgDeleteResponse,
        StreamSnapshotResponse,
        StreamRestoreResponse,
        StreamRemovePeerResponse,
        StreamEvacuatePeerResponse,
        StreamCancelMoveResponse,
        StreamLeaderStepDownResponse,
        StreamTemplateCreateResponse,
        StreamTemplateInfoResponse,
        StreamTemplateDeleteResponse,
        StreamTemplateNamesResponse,
        ConsumerCreateResponse,
        ConsumerInfoResponse,
        ConsumerDeleteResponse,
        ConsumerNamesResponse,
        ConsumerListResponse,
        ConsumerLeaderStepDownResponse,
        ConsumerPauseResponse,
        ConsumerUnpinResponse,
        ConsumerResetResponse,
        MetaLeaderStepDownResponse,
        MetaServerRemoveResponse,
    )
}
"""Every response ``type`` string → its wrapper class."""


__all__ = [
    name for name in dict(globals()) if name.endswith(("Response", "_TYPE")) and not name.startswith("_")
] + [
    "RESPONSE_CLASSES",
    "ApiResponse",
    "PagedResponse",
    "StreamTemplateConfig",
    "StreamTemplateInfo",
]
