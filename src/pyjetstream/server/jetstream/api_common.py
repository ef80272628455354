"""Helpers shared by the API handlers: request decoding and error replies."""

from __future__ import annotations

from typing import TypeVar

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api import responses as R
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.gojson import GoJsonError, decode_go
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.subjects import ApiEndpoint

T = TypeVar("T")

_EMPTY_OBJECTS = (b"", b"{}")


def is_empty_request(payload: bytes) -> bool:
    """nats-server ``isEmptyRequest``: no bytes, ``{}``, or a JSON object without keys."""
    stripped = payload.strip()
    if stripped in _EMPTY_OBJECTS:
        return True
    value = decode_json_value(stripped)
    return isinstance(value, dict) and not value


_NOT_JSON = object()


def decode_json_value(payload: bytes) -> object:
    """``payload`` as Go's ``json.Unmarshal`` into ``any`` sees it, or ``_NOT_JSON`` when Go refuses it.

    Go takes invalid UTF-8 inside a string as U+FFFD rather than refusing the document (msgspec
    raises ``UnicodeDecodeError``, which must not escape a handler: the request would go unanswered).
    """
    try:
        return msgspec.json.decode(payload)
    except UnicodeDecodeError:
        pass
    except msgspec.DecodeError:
        return _NOT_JSON
    try:
        return msgspec.json.decode(payload.decode("utf-8", "replace").encode())
    except msgspec.DecodeError:
        return _NOT_JSON


def has_json_body(payload: bytes) -> bool:
    """nats-server's ``isJSONObjectOrArray``: the INFO, NAMES and LIST requests read a body only
    when it starts (after white space) with ``{`` or ``[``; any other body is no body."""
    return payload.lstrip(b" \t\r\n")[:1] in (b"{", b"[")


def decode_request(payload: bytes, kind: type[T], strict: bool = True) -> T:
    """Decode a request body as nats-server's ``unmarshalRequest``: an empty body is the zero
    request; anything Go's decoder refuses is 10025 ``invalid JSON: <Go's error>``; with
    ``strict`` (the default, ``jetstream { strict }``) an unknown field is refused too."""
    try:
        return decode_go(payload, kind, strict)
    except GoJsonError as exc:
        raise JetStreamApiError(E.JSInvalidJSONErr(err=str(exc))) from exc


def encode_response(response: msgspec.Struct) -> bytes:
    """JSON as Go's encoder writes it: compact, with ``<``, ``>`` and ``&`` escaped (every API reply
    and advisory goes through here)."""
    return codec.encode(response)


#: The response model of each endpoint an account's API answers (its ``type`` string and paging
#: fields). Not the templates (gone from 2.15's API) nor the system account's META, SERVER and
#: ACCOUNT requests: nats-server answers those to nobody else.
RESPONSE_TYPES: dict[ApiEndpoint, type[R.ApiResponse]] = {
    ApiEndpoint.INFO: R.AccountInfoResponse,
    ApiEndpoint.STREAM_CREATE: R.StreamCreateResponse,
    ApiEndpoint.STREAM_UPDATE: R.StreamUpdateResponse,
    ApiEndpoint.STREAM_NAMES: R.StreamNamesResponse,
    ApiEndpoint.STREAM_LIST: R.StreamListResponse,
    ApiEndpoint.STREAM_INFO: R.StreamInfoResponse,
    ApiEndpoint.STREAM_DELETE: R.StreamDeleteResponse,
    ApiEndpoint.STREAM_PURGE: R.StreamPurgeResponse,
    ApiEndpoint.STREAM_SNAPSHOT: R.StreamSnapshotResponse,
    ApiEndpoint.STREAM_RESTORE: R.StreamRestoreResponse,
    ApiEndpoint.STREAM_MSG_GET: R.MsgGetResponse,
    ApiEndpoint.STREAM_MSG_DELETE: R.MsgDeleteResponse,
    ApiEndpoint.STREAM_PEER_REMOVE: R.StreamRemovePeerResponse,
    ApiEndpoint.STREAM_LEADER_STEPDOWN: R.StreamLeaderStepDownResponse,
    ApiEndpoint.STREAM_PEER_EVACUATE: R.StreamEvacuatePeerResponse,
    ApiEndpoint.STREAM_CANCEL_MOVE: R.StreamCancelMoveResponse,
    ApiEndpoint.CONSUMER_CREATE: R.ConsumerCreateResponse,
    ApiEndpoint.CONSUMER_DURABLE_CREATE: R.ConsumerCreateResponse,
    ApiEndpoint.CONSUMER_NAMES: R.ConsumerNamesResponse,
    ApiEndpoint.CONSUMER_LIST: R.ConsumerListResponse,
    ApiEndpoint.CONSUMER_INFO: R.ConsumerInfoResponse,
    ApiEndpoint.CONSUMER_DELETE: R.ConsumerDeleteResponse,
    ApiEndpoint.CONSUMER_LEADER_STEPDOWN: R.ConsumerLeaderStepDownResponse,
    ApiEndpoint.CONSUMER_PAUSE: R.ConsumerPauseResponse,
    ApiEndpoint.CONSUMER_UNPIN: R.ConsumerUnpinResponse,
}

# The lists nats-server's handler makes before any check (so an error answer carries ``[]``, not
# ``null``): jsStreamListRequest, jsConsumerNamesRequest, jsConsumerListRequest.
_PRESET: dict[ApiEndpoint, str] = {
    ApiEndpoint.STREAM_LIST: "streams",
    ApiEndpoint.CONSUMER_NAMES: "consumers",
    ApiEndpoint.CONSUMER_LIST: "consumers",
}


def error_response(endpoint: ApiEndpoint, error: ApiError) -> R.ApiResponse | None:
    """The answer of ``endpoint``'s handler refusing a request before doing anything (its own
    response type, as nats-server's handler initialises it); None for an endpoint without one."""
    model = RESPONSE_TYPES.get(endpoint)
    if model is None:
        return None
    response = model(error=error)
    preset = _PRESET.get(endpoint)
    if preset is not None:
        setattr(response, preset, [])
    return response
