"""Consumer API handlers: create (all subject forms), info, names, list, delete (``jetstream_api.go``).

``CONSUMER.MSG.NEXT`` is not here: each pull consumer subscribes its own next-message subject, as
nats-server does.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api import errors as E
from pyjetstream.api.constants import JS_API_LIST_LIMIT, JS_API_NAMES_LIMIT
from pyjetstream.api.enums import AckPolicy, RetentionPolicy
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.headers import STREAM_IDENTITY, header_block
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_consumer import ConsumerConfig, ConsumerInfo, CreateConsumerRequest
from pyjetstream.api.requests import (
    ConsumerListRequest,
    ConsumerNamesRequest,
    ConsumerPauseRequest,
    ConsumerUnpinRequest,
)
from pyjetstream.api.responses import (
    ApiResponse,
    ConsumerCreateResponse,
    ConsumerDeleteResponse,
    ConsumerInfoResponse,
    ConsumerListResponse,
    ConsumerNamesResponse,
    ConsumerPauseResponse,
    ConsumerUnpinResponse,
)
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime
from pyjetstream.api.versioning import consumer_required_level, with_dynamic, with_required_level
from pyjetstream.protocol.headers import get_header
from pyjetstream.server.jetstream.api_common import decode_request, has_json_body, is_empty_request
from pyjetstream.server.jetstream.consumer_config import GROUP_NAME as _GROUP_NAME
from pyjetstream.server.jetstream.consumer_config import new_ephemeral_name
from pyjetstream.server.jetstream.consumer_create import add_consumer

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["HANDLERS", "shown"]

_STREAM_IDENTITY_B = STREAM_IDENTITY.encode()


def _lookup_stream(engine: JetStreamEngine, name: str) -> Stream:
    stream = engine.streams.get(name)
    if stream is None:
        raise JetStreamApiError(E.JSStreamNotFoundErr())
    return stream


def _check_subject_form(match: ApiMatch, req: CreateConsumerRequest) -> CreateConsumerRequest:
    """The rules tying the request subject to the config (durable/ephemeral/named/filtered), in
    nats-server 2.15's order (``jsConsumerCreateRequest``)."""
    cfg = req.config
    durable_legacy = match.endpoint == ApiEndpoint.CONSUMER_DURABLE_CREATE
    name = cfg.name if match.legacy and not durable_legacy else match.consumer
    if name and ("/" in name or "\\" in name):
        raise JetStreamApiError(E.JSConsumerNameContainsPathSeparatorsErr())
    if durable_legacy:
        if not cfg.durable_name:
            raise JetStreamApiError(E.JSConsumerDurableNameNotSetErr())
        if cfg.durable_name != name:
            raise JetStreamApiError(E.JSConsumerDurableNameNotMatchSubjectErr())
        cfg = msgspec.structs.replace(cfg, name=name)
    elif match.legacy:
        if cfg.durable_name:
            raise JetStreamApiError(E.JSConsumerEphemeralWithDurableNameErr())
    else:
        if cfg.durable_name and cfg.durable_name != name:
            raise JetStreamApiError(E.JSConsumerDurableNameNotMatchSubjectErr())
        cfg = msgspec.structs.replace(cfg, name=name)
    if match.filter_subject:
        if cfg.filter_subjects:
            raise JetStreamApiError(E.JSConsumerMultipleFiltersNotAllowed())
        if cfg.filter_subject != match.filter_subject:
            raise JetStreamApiError(E.JSConsumerCreateFilterSubjectMismatchErr())
    req.config = cfg
    return req


def consumer_create(
    engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str
) -> ApiResponse | tuple[ApiResponse, bytes]:
    response = ConsumerCreateResponse()
    try:
        req = decode_request(payload, CreateConsumerRequest, engine.strict)
        if match.stream != req.stream_name:
            raise JetStreamApiError(E.JSStreamMismatchErr())
        req = _check_subject_form(match, req)
        if req.config.num_replicas > 1:
            raise JetStreamApiError(E.JSStreamReplicasNotSupportedErr())
        stream = _lookup_stream(engine, req.stream_name)
        req.config = _sourcing_consumer(stream, req.config)
        # ⟨2.15⟩ A direct or sourcing consumer learns its stream's identity, and one created with
        # a stale identity (the stream was recreated) is refused, so a source can start over.
        identity = ""
        if req.config.direct or req.config.sourcing:
            identity = stream.identity
            expected = get_header(engine.request_hdr, _STREAM_IDENTITY_B) if engine.request_hdr else None
            if expected and expected.decode(errors="replace") != identity:
                raise JetStreamApiError(E.JSConsumerStreamIdentityMismatchF(msg=identity))
        metadata = with_required_level(req.config.metadata, consumer_required_level(req.config))
        req.config = msgspec.structs.replace(req.config, metadata=metadata)
        consumer = add_consumer(stream, req.config, req.action, req.pedantic)
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    if consumer.paused_for() > 0:
        consumer.send_pause_advisory()  # (published after this reply, as nats-server does)
    created = ConsumerCreateResponse.from_payload(shown(consumer.info()))
    if identity:
        return created, header_block(((STREAM_IDENTITY, identity),))
    return created


def _sourcing_consumer(stream: Stream, cfg: ConsumerConfig) -> ConsumerConfig:
    """⟨2.14+⟩ ADR-60, as ``jsConsumerCreateRequest`` on a standalone server.

    A sourcing stream asks for a direct ``sourcing`` consumer under a stable name. On a
    work-queue or interest origin an ephemeral ``ack none`` consumer would lose what it sent, so
    it becomes a durable of that name acked by flow control (``ack_wait``, ``max_deliver`` and
    ``inactive_threshold`` unset); on a limits origin the name gets a random suffix, since each
    request makes a new ephemeral consumer. A durable sourcing consumer asked for again keeps its
    starting position (the request is then a reset to its ack floor, ``add_consumer``)."""
    if cfg.direct and cfg.sourcing and cfg.name:
        if stream.cfg.retention in (RetentionPolicy.INTEREST, RetentionPolicy.WORKQUEUE):
            cfg = msgspec.structs.replace(
                cfg,
                direct=False,
                durable_name=cfg.name,
                ack_policy=AckPolicy.FLOW_CONTROL,
                ack_wait=0,
                max_deliver=0,
                inactive_threshold=0,
            )
        else:
            cfg = msgspec.structs.replace(cfg, name=f"{cfg.name}-{new_ephemeral_name()}")
    existing = stream.consumers.get(cfg.name) if cfg.name else None
    if existing is not None and cfg.sourcing and cfg.durable_name:
        cfg = msgspec.structs.replace(
            cfg,
            deliver_policy=existing.cfg.deliver_policy,
            opt_start_seq=existing.cfg.opt_start_seq,
            opt_start_time=existing.cfg.opt_start_time,
        )
    return cfg


def shown(info: ConsumerInfo) -> ConsumerInfo:
    """The info as create/info replies show it: the config's metadata gains the server's
    ``_nats.ver`` / ``_nats.level`` (``setDynamicConsumerInfoMetadata``; CONSUMER.LIST shows the
    stored metadata only)."""
    info.config = msgspec.structs.replace(info.config, metadata=with_dynamic(info.config.metadata))
    return info


def _named_consumer(engine: JetStreamEngine, match: ApiMatch, payload: bytes) -> Consumer:
    """The consumer an INFO/DELETE subject names (these requests take no body)."""
    if not is_empty_request(payload):
        raise JetStreamApiError(E.JSNotEmptyRequestErr())
    consumer = _lookup_stream(engine, match.stream).consumers.get(match.consumer)
    if consumer is None:
        raise JetStreamApiError(E.JSConsumerNotFoundErr())
    return consumer


def consumer_info(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = ConsumerInfoResponse()
    try:
        consumer = _named_consumer(engine, match, payload)
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    return ConsumerInfoResponse.from_payload(shown(consumer.info()))


def consumer_delete(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = ConsumerDeleteResponse()
    try:
        consumer = _named_consumer(engine, match, payload)
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    consumer.delete()
    response.success = True
    return response


def consumer_pause(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    """⟨2.11+⟩ ``CONSUMER.PAUSE.<S>.<C>`` (``jsConsumerPauseRequest``): ``{"pause_until": T}``
    pauses until T, anything else that is not a JSON object (an empty body) resumes."""
    response = ConsumerPauseResponse()
    try:
        body = payload.strip()
        req = ConsumerPauseRequest()
        if body[:1] in (b"{", b"["):
            req = decode_request(body, ConsumerPauseRequest, engine.strict)
        stream = _lookup_stream(engine, match.stream)
        consumer = stream.consumers.get(match.consumer)
        if consumer is None:
            raise JetStreamApiError(E.JSConsumerNotFoundErr())
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    until = req.pause_until
    zero = until == ZERO_TIME
    cfg = msgspec.structs.replace(consumer.cfg, pause_until=None if zero else NanoTime(until))
    # The required API level follows the pause (setStaticConsumerMetadata on pause/resume).
    cfg.metadata = with_required_level(cfg.metadata, consumer_required_level(cfg))
    consumer.update_config(cfg)
    response.pause_until = NanoTime(until)
    remaining = until - time.time_ns()
    if not zero and remaining > 0:
        response.paused = True
        response.pause_remaining = remaining
    return response


def _invalid_json(reason: str) -> ApiError:
    return ApiError(code=400, err_code=10025, description=f"invalid JSON: {reason}")


def consumer_unpin(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    """⟨2.11+⟩ ``CONSUMER.UNPIN.<S>.<C>`` ``{"group": G}`` (``jsConsumerUnpinRequest``): drop the
    group's pin so the next request gets a new one."""
    response = ConsumerUnpinResponse()
    try:
        body = payload.strip()
        if not body:
            raise JetStreamApiError(_invalid_json("unexpected end of JSON input"))
        req = decode_request(body, ConsumerUnpinRequest, engine.strict)
        if not req.group:
            raise JetStreamApiError(_invalid_json("consumer group not specified"))
        if not _GROUP_NAME.fullmatch(req.group):
            raise JetStreamApiError(E.JSConsumerInvalidGroupNameErr())
        stream = _lookup_stream(engine, match.stream)
        consumer = stream.consumers.get(match.consumer)
        if consumer is None:
            raise JetStreamApiError(E.JSConsumerNotFoundErr())
        if req.group not in consumer.cfg.priority_groups:
            raise JetStreamApiError(E.JSConsumerInvalidPriorityGroupErr())
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    consumer.pull.priority.unpin(req.group)
    return response


def _paged_consumers(
    engine: JetStreamEngine, match: ApiMatch, payload: bytes, kind: type, limit: int
) -> tuple[list[Consumer], int, int]:
    """One page of the stream's public consumers by name: ``(page, offset, total)``. The sorted
    names are kept by the stream's consumer index (sorted once per change), so a page costs its
    own size, not a sort of every consumer as nats-server's ``getPublicConsumers`` + sort."""
    req = decode_request(payload, kind, engine.strict) if has_json_body(payload) else kind()
    stream = _lookup_stream(engine, match.stream)
    # Direct consumers (used by sources and mirrors) are not listed (``getPublicConsumers``).
    names = stream.csl.public_names()
    offset = min(max(req.offset, 0), len(names))
    consumers = stream.consumers
    return [consumers[n] for n in names[offset : offset + limit]], offset, len(names)


def consumer_names(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = ConsumerNamesResponse(consumers=[])
    try:
        consumers, offset, total = _paged_consumers(
            engine, match, payload, ConsumerNamesRequest, JS_API_NAMES_LIMIT
        )
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    response.consumers = [c.name for c in consumers]
    response.total, response.offset, response.limit = total, offset, JS_API_NAMES_LIMIT
    return response


def consumer_list(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = ConsumerListResponse(consumers=[])
    try:
        consumers, offset, total = _paged_consumers(engine, match, payload, ConsumerListRequest, JS_API_LIST_LIMIT)
    except JetStreamApiError as exc:
        response.error = exc.error
        return response
    response.consumers = [c.info() for c in consumers]
    response.total, response.offset, response.limit = total, offset, JS_API_LIST_LIMIT
    return response


HANDLERS = {
    ApiEndpoint.CONSUMER_CREATE: consumer_create,
    ApiEndpoint.CONSUMER_DURABLE_CREATE: consumer_create,
    ApiEndpoint.CONSUMER_INFO: consumer_info,
    ApiEndpoint.CONSUMER_DELETE: consumer_delete,
    ApiEndpoint.CONSUMER_NAMES: consumer_names,
    ApiEndpoint.CONSUMER_LIST: consumer_list,
    ApiEndpoint.CONSUMER_PAUSE: consumer_pause,
    ApiEndpoint.CONSUMER_UNPIN: consumer_unpin,
}
