"""Clustered-only endpoints a single node still answers, as a standalone nats-server does.

Leader step-down, peer removal and (2.15) peer evacuation and move cancelling need a RAFT group; a standalone nats-server answers them with
``10010 JetStream clustering support required`` (503), before looking the stream up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.responses import (
    ApiResponse,
    ConsumerLeaderStepDownResponse,
    StreamCancelMoveResponse,
    StreamEvacuatePeerResponse,
    StreamLeaderStepDownResponse,
    StreamRemovePeerResponse,
)
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine


def _cluster_required(cls: type[ApiResponse]):
    def handler(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> ApiResponse:
        return cls(error=E.JSClusterRequiredErr())

    return handler


HANDLERS = {
    ApiEndpoint.STREAM_LEADER_STEPDOWN: _cluster_required(StreamLeaderStepDownResponse),
    ApiEndpoint.STREAM_PEER_REMOVE: _cluster_required(StreamRemovePeerResponse),
    ApiEndpoint.STREAM_PEER_EVACUATE: _cluster_required(StreamEvacuatePeerResponse),  # 2.15
    ApiEndpoint.STREAM_CANCEL_MOVE: _cluster_required(StreamCancelMoveResponse),  # 2.15
    ApiEndpoint.CONSUMER_LEADER_STEPDOWN: _cluster_required(ConsumerLeaderStepDownResponse),
}
