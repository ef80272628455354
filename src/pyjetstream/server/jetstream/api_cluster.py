"""Clustered-only endpoints a single node still answers, as a standalone nats-server does.

Leader step-down and peer removal need a RAFT group; a standalone nats-server answers them with
``10010 JetStream clustering support required`` (503), before looking the stream up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.responses import (
    ApiResponse,
    ConsumerLeaderStepDownResponse,
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
    ApiEndpoint.CONSUMER_LEADER_STEPDOWN: _cluster_required(ConsumerLeaderStepDownResponse),
}
