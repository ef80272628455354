"""Stream API handlers: create, update, info, delete, names, list, purge, msg get, msg delete."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import errors as E
from pyjetstream.api.enums import StorageType
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import ApiError, ClusterInfo
from pyjetstream.api.models_msg import MsgDeleteRequest, MsgGetRequest, StoredMsg
from pyjetstream.api.models_stream import StreamConfig, StreamInfo
from pyjetstream.api.requests import (
    StreamConfigRequest,
    StreamInfoRequest,
    StreamListRequest,
    StreamNamesRequest,
    StreamPurgeRequest,
)
from pyjetstream.api.responses import (
    ApiResponse,
    MsgDeleteResponse,
    MsgGetResponse,
    StreamCreateResponse,
    StreamDeleteResponse,
    StreamInfoResponse,
    StreamListResponse,
    StreamNamesResponse,
    StreamPurgeResponse,
    StreamUpdateResponse,
)
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.api.versioning import (
    copy_required_level,
    stream_required_level,
    with_dynamic,
    with_required_level,
)
from pyjetstream.protocol.subjects import subjects_overlap
from pyjetstream.server.jetstream import advisories, stream_index
from pyjetstream.server.jetstream.api_common import (
    decode_json_value,
    decode_request,
    has_json_body,
    is_empty_request,
)
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, ErrStoreMsgNotFound, StoreError
from pyjetstream.server.jetstream.stream import Stream
from pyjetstream.server.jetstream.stream_config import (
    StreamLookup,
    check_stream_config,
    check_stream_update,
    invalid,
)

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine

NAMES_LIMIT = 1024  # JSApiNamesLimit
LIST_LIMIT = 256  # JSApiListLimit
SUBJECTS_LIMIT = 100_000  # JSMaxSubjectDetails

def _error(response: ApiResponse, exc: JetStreamApiError) -> ApiResponse:
    response.error = exc.error
    return response


def _lookup(engine: JetStreamEngine, name: str) -> Stream:
    stream = engine.streams.get(name)
    if stream is None:
        raise JetStreamApiError(E.JSStreamNotFoundErr())
    return stream


def _shown(info: StreamInfo) -> StreamInfo:
    """The info as create/update/info replies show it: the config's metadata gains the server's
    ``_nats.ver`` / ``_nats.level`` (``setDynamicStreamMetadata``; STREAM.LIST shows the stored
    metadata only)."""
    info.config = msgspec.structs.replace(info.config, metadata=with_dynamic(info.config.metadata))
    return info


def _info_response(cls: type[Any], stream: Stream, **extra: object) -> ApiResponse:
    return cls.from_payload(_shown(stream.info()), **extra)


def _create_response(stream: Stream) -> ApiResponse:
    # nats-server leaves the domain out of create replies only (info, update and list carry it).
    info = _shown(stream.info())
    info.domain = ""
    return StreamCreateResponse.from_payload(info, did_create=True)


_WILD_CHARS = frozenset("*>")  # a subject holding neither has no wildcard token (see _check_overlap)


def _lookup_config(engine: JetStreamEngine) -> StreamLookup:
    def lookup(name: str) -> StreamConfig | None:
        stream = engine.streams.get(name)
        return stream.cfg if stream is not None else None

    return lookup


def _check_overlap(engine: JetStreamEngine, cfg: StreamConfig) -> None:
    """nats-server's ``subjectsOverlap``: no subject of another stream may collide with one of ours (10065).

    nats-server compares with every subject of every stream: O(streams), cheap in Go (its create
    stays at ~2 ms of CPU from 100 to 10,000 streams), 5 ms a create here at 10,000 (7.5 ms in all,
    3.4x nats-server's). A subject without wildcards collides exactly with the stream subjects that
    match it, and every stream subscribes to its subjects in the account's sublist
    (`Stream._subscribe_inbound`): one match of the subject there finds them (`_capturing`). Only a
    config with a wildcard subject is compared with every stream. With `stream_index.INDEXED` the
    streams compared are those the account's subject trie says may collide
    (`StreamIndex.candidates`), for any subject: a KV bucket (``$KV.<b>.>``) beside 3,000 took
    14 ms of CPU, 4.5 µs a stream, in this loop and the reservations'."""
    others: Iterable[Stream]
    if stream_index.INDEXED:
        others = [engine.streams[name] for name in set().union(*map(engine.stream_index.candidates, cfg.subjects))]
    elif all(not _WILD_CHARS.intersection(subject) for subject in cfg.subjects):
        for subject in cfg.subjects:
            if any(name != cfg.name for name in _capturing(engine, subject)):
                raise JetStreamApiError(E.JSStreamSubjectOverlapErr())
        return
    else:
        others = engine.streams.values()
    for other in others:
        if other.name != cfg.name and any(subjects_overlap(a, b) for a in cfg.subjects for b in other.cfg.subjects):
            raise JetStreamApiError(E.JSStreamSubjectOverlapErr())


def _capturing(engine: JetStreamEngine, subject: str) -> list[str]:
    """The streams of ``engine`` that capture ``subject`` (no wildcards): those whose inbound
    subscription (its callback their ingest's ``on_msg``) the account's sublist matches it to."""
    names = []
    for sub in engine.server.sublist.match(subject)[0]:
        owner = getattr(getattr(sub.callback, "__self__", None), "stream", None)
        name = getattr(owner, "name", None)
        stream = engine.streams.get(name) if isinstance(name, str) else None
        if stream is None or id(stream) != id(owner):  # (id: an identity test mypy does not narrow on)
            continue
        if sub.callback == stream.ingest.on_msg:
            names.append(stream.name)
    return names


def _config(req: StreamConfigRequest) -> StreamConfig:
    """The config of a create/update request, without ``pedantic``, its metadata carrying the
    level its features require (``setStaticStreamMetadata``)."""
    fields = {f: getattr(req, f) for f in StreamConfig.__struct_fields__}
    cfg = StreamConfig(**fields)
    cfg.metadata = with_required_level(cfg.metadata, stream_required_level(cfg))
    return cfg


def _names_storage(payload: bytes) -> bool:
    """Whether a (decodable) create request sets ``storage`` itself."""
    body = decode_json_value(payload)
    return isinstance(body, dict) and "storage" in body


def stream_create(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    """nats-server 2.15 ``jsStreamCreateRequest`` then ``addStreamWithAssignment``, in their order."""
    response = StreamCreateResponse()
    try:
        req = decode_request(payload, StreamConfigRequest, engine.strict)
        cfg = _config(req)
        if match.stream != cfg.name:
            raise JetStreamApiError(E.JSStreamMismatchErr())
        if "/" in cfg.name or "\\" in cfg.name:
            raise JetStreamApiError(E.JSStreamNameContainsPathSeparatorsErr())
        if cfg.sealed:
            raise invalid("stream configuration for create can not be sealed")
        if cfg.mirror_direct and cfg.mirror is None:
            raise invalid("stream has no mirror but does have mirror direct")
        # jsNonClusteredStreamLimitsCheck, on the config as sent, before checkStreamCfg. Its
        # byte check sees Go's zero StorageType when the request names no storage, which is
        # neither file nor memory: only the stream count applies then.
        if _names_storage(payload):
            refused = engine.check_new_stream_limits(cfg, unchecked=True)
        else:
            refused = engine.check_stream_limit(cfg.name, cfg.num_replicas)
        if refused is not None:
            raise JetStreamApiError(refused)
        cfg = check_stream_config(cfg, _lookup_config(engine), req.pedantic, engine.max_bytes_limits)
        if cfg.num_replicas > 1:
            raise JetStreamApiError(E.JSStreamReplicasNotSupportedErr())
        existing = engine.streams.get(cfg.name)
        if existing is not None:
            cfg.metadata = copy_required_level(cfg.metadata, existing.cfg.metadata)
            if existing.cfg != cfg:
                raise JetStreamApiError(E.JSStreamNameExistErr())
            return _create_response(existing)
        reservation = engine.check_reservation(cfg)  # addStream's own check, on the checked config
        if reservation is not None:
            raise JetStreamApiError(reservation)
        _check_overlap(engine, cfg)
        try:
            stream = engine.add_stream(cfg)
        except (StoreError, OSError) as exc:
            raise JetStreamApiError(E.JSStreamCreateErrF(err=str(exc))) from exc
    except JetStreamApiError as exc:
        return _error(response, exc)
    advisories.stream_action(engine, stream.name, "create")
    return _create_response(stream)


def stream_update(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    """nats-server 2.15 ``jsStreamUpdateRequest`` then ``configUpdateCheck``, in their order."""
    response = StreamUpdateResponse()
    try:
        req = decode_request(payload, StreamConfigRequest, engine.strict)
        checked = check_stream_config(_config(req), _lookup_config(engine), req.pedantic, engine.max_bytes_limits)
        if match.stream != checked.name:
            raise JetStreamApiError(E.JSStreamMismatchErr())
        stream = _lookup(engine, match.stream)
        # configUpdateCheck checks the checked config once more: what the first pass turned on
        # (allow_msg_ttl for subject_delete_marker_ttl) meets the rules it breaks (a counter
        # stream cannot use message TTLs). A placement the first pass kept stays: its explicit
        # empty tags (stored as None, shown as {}) are no empty placement to Go's second pass.
        cfg = check_stream_config(checked, _lookup_config(engine), req.pedantic, engine.max_bytes_limits)
        if cfg.placement is None and checked.placement is not None:
            cfg = msgspec.structs.replace(cfg, placement=checked.placement)
        if cfg.num_replicas > 1:
            raise JetStreamApiError(E.JSStreamReplicasNotSupportedErr())
        cfg = check_stream_update(stream.cfg, cfg)
        if cfg.republish is not None and not cfg.republish.dest:
            # stream.update: an empty republish destination is "all" (stored as ">"), a rule of
            # the update alone (a create keeps it empty, republishing nothing).
            cfg = msgspec.structs.replace(cfg, republish=msgspec.structs.replace(cfg.republish, dest=">"))
        reservation = engine.check_reservation(cfg, stream.cfg)
        if reservation is not None:
            raise JetStreamApiError(reservation)
        _check_overlap(engine, cfg)
        _check_consumer_limits(stream, cfg)
        try:
            stream.update(cfg)
        except (StoreError, OSError) as exc:
            raise JetStreamApiError(E.JSStreamUpdateErrF(err=str(exc))) from exc
    except JetStreamApiError as exc:
        return _error(response, exc)
    engine.account_usage_changed()
    advisories.stream_action(engine, stream.name, "modify")
    return _info_response(StreamUpdateResponse, stream)


def _check_consumer_limits(stream: Stream, cfg: StreamConfig) -> None:
    """updateWithAdvisory: new consumer_limits must not be exceeded by an existing consumer
    (10069 naming them; nats-server lists them in map order, here sorted)."""
    old, new = stream.cfg.consumer_limits, cfg.consumer_limits
    threshold, pending = new.inactive_threshold, new.max_ack_pending
    if not (
        (threshold > 0 and threshold != old.inactive_threshold) or (pending > 0 and pending != old.max_ack_pending)
    ):
        return
    bad = sorted(
        name
        for name, consumer in stream.consumers.items()
        if (threshold > 0 and consumer.cfg.inactive_threshold > threshold)
        or (pending > 0 and consumer.cfg.max_ack_pending > pending)
    )
    if bad:
        raise JetStreamApiError(E.JSStreamUpdateErrF(err=f"change to limits violates consumers: {', '.join(bad)}"))


def stream_info(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamInfoResponse()
    try:
        stream = _lookup(engine, match.stream)
        req = decode_request(payload, StreamInfoRequest, engine.strict) if has_json_body(payload) else StreamInfoRequest()
    except JetStreamApiError as exc:
        return _error(response, exc)
    info: StreamInfo = _shown(stream.info("", req.deleted_details))
    # A single server is its streams' leader (nats-server ``clusterInfo`` without a Raft group).
    info.cluster = ClusterInfo(leader=engine.server.server.server_name)
    total = offset = limit = 0
    if req.subjects_filter:
        asked = max(req.offset, 0)
        matched, page, in_order = stream.store.subjects_sorted_page(req.subjects_filter, asked, SUBJECTS_LIMIT)
        if matched:  # nats-server fills the paging fields only when some subject matched
            total, offset, limit = matched, asked, SUBJECTS_LIMIT  # (the offset as asked, even past the end)
            # A page in name order is written as is, not sorted again (`codec.presorted`).
            info.state.subjects = cast("dict[str, int]", codec.presorted(page)) if in_order and page else page
    return StreamInfoResponse.from_payload(info, total=total, offset=offset, limit=limit)


def stream_delete(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamDeleteResponse()
    try:
        if not is_empty_request(payload):
            raise JetStreamApiError(E.JSNotEmptyRequestErr())
        _lookup(engine, match.stream)
    except JetStreamApiError as exc:
        return _error(response, exc)
    try:
        engine.delete_stream(match.stream)
    except (StoreError, OSError) as exc:
        return _error(response, JetStreamApiError(E.JSStreamDeleteErrF(err=str(exc))))
    advisories.stream_action(engine, match.stream, "delete")
    response.success = True
    return response


def _filtered(engine: JetStreamEngine, filter_subject: str) -> list[Stream]:
    """The streams (by name) with a subject that collides with ``filter_subject`` (all without
    one; nats-server ``filteredStreams``, which asks every stream): with `stream_index.INDEXED`
    only those the subject trie gives are asked — a client's look-up of the stream of a subject
    (nats.go ``StreamNameBySubject``, a subscribe without a stream name) beside 10,000 KV
    buckets asked them all."""
    if not filter_subject:
        return engine.streams_by_name()
    if stream_index.INDEXED:
        found = [engine.streams[name] for name in sorted(engine.stream_index.candidates(filter_subject))]
        return [s for s in found if s.matches(filter_subject)]
    return [s for s in engine.streams_by_name() if s.matches(filter_subject)]


def _page(
    engine: JetStreamEngine, payload: bytes, limit: int, kind: type[StreamNamesRequest | StreamListRequest]
) -> tuple[list[Stream], int, int]:
    """The page of streams a NAMES or LIST request asks for (an optional ``subject`` filter and
    ``offset``; both take the same body), with the total and the offset in force."""
    req = decode_request(payload, kind, engine.strict) if has_json_body(payload) else kind()
    streams = _filtered(engine, req.subject)
    offset = min(max(req.offset, 0), len(streams))
    return streams[offset : offset + limit], len(streams), offset


def stream_names(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamNamesResponse()
    try:
        page, total, offset = _page(engine, payload, NAMES_LIMIT, StreamNamesRequest)
    except JetStreamApiError as exc:
        return _error(response, exc)
    response.streams = [s.name for s in page] or None
    response.total, response.offset, response.limit = total, offset, NAMES_LIMIT
    return response


def stream_list(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamListResponse(streams=[])
    try:
        page, total, offset = _page(engine, payload, LIST_LIMIT, StreamListRequest)
    except JetStreamApiError as exc:
        return _error(response, exc)
    response.streams = [s.info() for s in page]
    response.total, response.offset, response.limit = total, offset, LIST_LIMIT
    return response


def stream_purge(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = StreamPurgeResponse()
    try:
        # jsStreamPurgeRequest: a body is read only when it is a JSON object or array
        # (isJSONObjectOrArray), and checked before the stream is looked up.
        body = payload.lstrip(b" \t\r\n")
        req = (
            decode_request(payload, StreamPurgeRequest, engine.strict)
            if body[:1] in (b"{", b"[")
            else StreamPurgeRequest()
        )
        if req.seq and req.keep:
            raise JetStreamApiError(E.JSBadRequestErr())
        stream = _lookup(engine, match.stream)
        if stream.cfg.sealed:
            raise JetStreamApiError(E.JSStreamSealedErr())
        if stream.cfg.deny_purge:
            raise JetStreamApiError(E.JSStreamPurgeFailedF(err="stream purge not permitted"))
        try:
            response.purged = stream.purge(req.filter, req.seq, req.keep)
        except (StoreError, OSError) as exc:
            raise JetStreamApiError(E.JSStreamPurgeFailedF(err=str(exc))) from exc
    except JetStreamApiError as exc:
        return _error(response, exc)
    response.success = True
    return response


def stream_msg_get(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    """nats-server's ``jsMsgGetRequest``: the body is checked (empty, JSON, no batch, one way to
    name the message) before the stream is looked up."""
    response = MsgGetResponse()
    try:
        if is_empty_request(payload):
            raise JetStreamApiError(E.JSBadRequestErr())
        req = decode_request(payload, MsgGetRequest, engine.strict)
        if req.batch > 0 or req.max_bytes > 0:  # batches are DIRECT.GET's
            raise JetStreamApiError(E.JSBadRequestErr())
        if (
            (req.seq > 0 and req.last_by_subj)
            or (req.seq == 0 and not req.last_by_subj and not req.next_by_subj and req.start_time is None)
            or (req.seq > 0 and req.start_time is not None)
            or (req.start_time is not None and req.last_by_subj)
            or (req.next_by_subj and req.last_by_subj)
        ):
            raise JetStreamApiError(E.JSBadRequestErr())
        stream = _lookup(engine, match.stream)
        msg = load_for_get(stream, req)
        if msg is None:
            raise JetStreamApiError(E.JSNoMessageFoundErr())
    except JetStreamApiError as exc:
        return _error(response, exc)
    response.message = StoredMsg(
        subject=msg.subject, seq=msg.seq, hdrs=b"" if req.no_hdr else msg.hdr, data=msg.data,
        time=NanoTime(msg.ts),
    )
    return response


def load_for_get(stream: Stream, req: MsgGetRequest):
    """The message a MSG.GET request names, or None (``start_time`` first gives the sequence)."""
    store = stream.store
    seq = store.get_seq_from_time(req.start_time) if req.start_time is not None else req.seq
    try:
        if req.next_by_subj:
            return store.load_next_msg(req.next_by_subj, max(seq, 1))[0]
        if seq > 0:
            return store.load_msg(seq)
        return store.load_last_msg(req.last_by_subj)
    except (ErrStoreMsgNotFound, ErrStoreEOF):
        return None
    except (StoreError, OSError) as exc:  # nats-server answers any load failure as not found
        stream.server.logger.error("JetStream failed to load a message of stream '%s': %s", stream.name, exc)
        return None


def stream_msg_delete(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
    response = MsgDeleteResponse()
    try:
        # nats-server's jsMsgDeleteRequest: the body is checked before the stream is looked up.
        if is_empty_request(payload):
            raise JetStreamApiError(E.JSBadRequestErr())
        req = decode_request(payload, MsgDeleteRequest, engine.strict)
        stream = _lookup(engine, match.stream)
        if stream.cfg.sealed:
            raise JetStreamApiError(E.JSStreamSealedErr())
        if stream.cfg.deny_delete:
            raise JetStreamApiError(E.JSStreamMsgDeleteFailedF(err="message delete not permitted"))
        try:
            deleted = stream.delete_msg(req.seq, erase=not req.no_erase)
        except (StoreError, OSError) as exc:
            raise JetStreamApiError(E.JSStreamMsgDeleteFailedF(err=str(exc))) from exc
        if not deleted:
            raise JetStreamApiError(_delete_miss(stream, req.seq))
    except JetStreamApiError as exc:
        return _error(response, exc)
    response.success = True
    return response


def _delete_miss(stream: Stream, seq: int) -> ApiError:
    """nats-server's answer for deleting a message that is not there depends on the store:
    the file store fails (10057 with the store's text) outside [first, last] and reports an
    interior gap as not found (10043); the memory store always says 10043."""
    if stream.cfg.storage == StorageType.FILE:
        state = stream.store.fast_state()
        if seq > state.last_seq:
            return E.JSStreamMsgDeleteFailedF(err="stream store EOF")
        if seq < state.first_seq or seq == 0:
            return E.JSStreamMsgDeleteFailedF(err="no message found")
    return E.JSSequenceNotFoundErrF(seq=seq)


HANDLERS = {
    ApiEndpoint.STREAM_CREATE: stream_create,
    ApiEndpoint.STREAM_UPDATE: stream_update,
    ApiEndpoint.STREAM_INFO: stream_info,
    ApiEndpoint.STREAM_DELETE: stream_delete,
    ApiEndpoint.STREAM_NAMES: stream_names,
    ApiEndpoint.STREAM_LIST: stream_list,
    ApiEndpoint.STREAM_PURGE: stream_purge,
    ApiEndpoint.STREAM_MSG_GET: stream_msg_get,
    ApiEndpoint.STREAM_MSG_DELETE: stream_msg_delete,
}
