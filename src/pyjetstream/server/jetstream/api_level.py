"""The JetStream API level this server implements, and the ``Nats-Required-Api-Level`` check.

nats-server 2.15's ``JSApiLevel`` is 5. A request (or a batch message, or a direct get, or a pull
request) whose ``Nats-Required-Api-Level`` header is not a Go ``int`` or is above it is refused
(``errorOnRequiredApiLevel`` in jetstream_versioning.go): 10185 for API requests, consumer resets
and batches, the ``412 Required Api Level`` status for a direct get and a pull request.

Every ``$JS.API`` handler of nats-server checks it, most of them first (after the clustered-mode
leader checks a single node does not have). The router applies `level_refusal` to every
endpoint of its table before the handler runs, so no handler can forget it; the subscribers that
are not the router's (a consumer's MSG.NEXT and RESET, a stream's DIRECT.GET, batch publishes)
call `required_level_refused` themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_consumer import CreateConsumerRequest
from pyjetstream.api.requests import ConsumerPauseRequest
from pyjetstream.api.responses import ApiResponse
from pyjetstream.api.subjects import ApiEndpoint
from pyjetstream.api.versioning import JS_API_LEVEL
from pyjetstream.server.jetstream.api_common import (
    decode_request,
    error_response,
    has_json_body,
    is_empty_request,
)

SERVER_API_LEVEL = JS_API_LEVEL
_GO_INT = re.compile(rb"[+-]?[0-9]+")  # what Go's strconv.Atoi takes
_INT64 = range(-(1 << 63), 1 << 63)  # and its range (a 64-bit int)
REQUIRED_API_LEVEL = H.REQUIRED_API_LEVEL.encode()
_KEY = b"\r\n" + REQUIRED_API_LEVEL + b":"


def requested_level(hdr: bytes | None) -> bytes:
    """The header's value as nats-server's ``sliceHeader`` cuts it: the first line starting with
    the (case-sensitive) name and ``:``, leading spaces skipped, the rest up to the CRLF kept (so
    a trailing space or a tab makes it no number)."""
    if not hdr:
        return b""
    idx = hdr.find(_KEY)
    if idx < 0:
        return b""
    start = idx + len(_KEY)
    while start < len(hdr) and hdr[start] == 0x20:
        start += 1
    end = hdr.find(b"\r\n", start)
    return bytes(hdr[start : len(hdr) if end < 0 else end])


def required_level_refused(hdr: bytes | None) -> bool:
    """``errorOnRequiredApiLevel``: the header asks for more than this server's level, or is not
    a number ``strconv.Atoi`` takes (an empty value asks for nothing)."""
    level = requested_level(hdr)
    if not level:
        return False
    if _GO_INT.fullmatch(level) is None:
        return True
    value = int(level)
    return value not in _INT64 or value > SERVER_API_LEVEL


def _json_error(payload: bytes, kind: type[object], strict: bool) -> ApiError | None:
    try:
        decode_request(payload, kind, strict)
    except E.JetStreamApiError as exc:
        return exc.error
    return None


def _pause_body_error(payload: bytes, strict: bool) -> ApiError | None:
    return _json_error(payload.strip(), ConsumerPauseRequest, strict) if has_json_body(payload) else None


def _cluster_required(payload: bytes, strict: bool) -> ApiError | None:
    return E.JSClusterRequiredErr()


# The checks a nats-server handler makes before the level (and before the account's JetStream)
# on a single node: when one of them refuses the request, the handler answers with its error
# instead (jetstream_api.go). (payload, strict) -> that error, or None.
_EARLIER: dict[ApiEndpoint, Callable[[bytes, bool], ApiError | None]] = {
    # jsConsumerCreateRequest decodes the body first.
    ApiEndpoint.CONSUMER_CREATE: lambda p, s: _json_error(p, CreateConsumerRequest, s),
    ApiEndpoint.CONSUMER_DURABLE_CREATE: lambda p, s: _json_error(p, CreateConsumerRequest, s),
    # jsConsumerPauseRequest decodes a JSON body first.
    ApiEndpoint.CONSUMER_PAUSE: _pause_body_error,
    # jsConsumerInfoRequest refuses a body first (10038).
    ApiEndpoint.CONSUMER_INFO: lambda p, s: None if is_empty_request(p) else E.JSNotEmptyRequestErr(),
    # The RAFT-group endpoints answer 10010 "clustering support required" first on a single node.
    ApiEndpoint.STREAM_LEADER_STEPDOWN: _cluster_required,
    ApiEndpoint.STREAM_PEER_REMOVE: _cluster_required,
    ApiEndpoint.STREAM_PEER_EVACUATE: _cluster_required,
    ApiEndpoint.STREAM_CANCEL_MOVE: _cluster_required,
    ApiEndpoint.CONSUMER_LEADER_STEPDOWN: _cluster_required,
}


def earlier_error(endpoint: ApiEndpoint, payload: bytes, strict: bool) -> ApiError | None:
    """The error ``endpoint``'s handler answers before looking at the level, if any."""
    check = _EARLIER.get(endpoint)
    return None if check is None else check(payload, strict)


def level_refusal(endpoint: ApiEndpoint, hdr: bytes | None, payload: bytes, strict: bool) -> ApiResponse | None:
    """The 10185 answer of ``endpoint`` to a request asking for a level above ours, in the
    endpoint's own response type; None when the level is fine or an earlier check of the
    handler answers first."""
    if not required_level_refused(hdr) or earlier_error(endpoint, payload, strict) is not None:
        return None
    return error_response(endpoint, E.JSRequiredApiLevelErr())
