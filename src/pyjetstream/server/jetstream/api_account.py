"""``$JS.API.INFO``: account usage, limits and API statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.enums import StorageType
from pyjetstream.api.models_account import AccountLimits, ApiStats
from pyjetstream.api.responses import AccountInfoResponse
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch
from pyjetstream.api.versioning import JS_API_LEVEL

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine


def account_info(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> AccountInfoResponse:
    memory, storage = engine.usage()
    # nats-server reservedStorage: the max_bytes the account's streams reserve, per storage.
    reserved = {StorageType.MEMORY: 0, StorageType.FILE: 0}
    for stream in engine.streams.values():
        if stream.cfg.max_bytes > 0:
            reserved[stream.cfg.storage] += stream.cfg.max_bytes
    return AccountInfoResponse(
        memory=memory,
        storage=storage,
        reserved_memory=reserved[StorageType.MEMORY],
        reserved_storage=reserved[StorageType.FILE],
        streams=len(engine.streams),
        consumers=engine.num_consumers(),
        limits=_limits(engine),
        domain=engine.domain,
        # The request being answered is counted already, as nats-server does.
        api=ApiStats(level=JS_API_LEVEL, total=engine.api_total, errors=engine.api_errors),
    )


def _limits(engine: JetStreamEngine) -> AccountLimits:
    """The account's JetStream limits as nats-server reports them (-1: not limited)."""
    own = engine.limits
    limits = AccountLimits.unlimited()
    limits.max_memory = own.max_memory
    limits.max_storage = own.max_store
    limits.max_streams = own.max_streams
    limits.max_consumers = own.max_consumers
    limits.max_ack_pending = own.max_ack_pending
    limits.max_bytes_required = own.max_bytes_required
    return limits


HANDLERS = {ApiEndpoint.INFO: account_info}
