"""``$JS.API.INFO``: account usage, limits and API statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.enums import StorageType
from pyjetstream.api.models_account import AccountLimits, ApiStats, Tier
from pyjetstream.api.responses import AccountInfoResponse
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch
from pyjetstream.api.versioning import JS_API_LEVEL
from pyjetstream.server.options import AccountJetStreamLimits

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine


def account_info(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> AccountInfoResponse:
    memory, storage = engine.usage()
    # nats-server reservedStorage: the max_bytes the account's streams reserve, per storage.
    reserved = {storage: engine.reserved(storage) for storage in (StorageType.MEMORY, StorageType.FILE)}
    response = AccountInfoResponse(
        memory=memory,
        storage=storage,
        reserved_memory=reserved[StorageType.MEMORY],
        reserved_storage=reserved[StorageType.FILE],
        streams=len(engine.streams),
        consumers=engine.num_consumers(),
        limits=_limits(engine.configured_limits),
        domain=engine.domain,
        # The request being answered is counted already, as nats-server does.
        api=ApiStats(level=JS_API_LEVEL, total=engine.api_total, errors=engine.api_errors),
    )
    tiers = engine.configured_limits.tiers
    if tiers:
        # JetStreamUsage with tiers: the account's limits are Go's zero value, each tier (this
        # node's streams are all in R1) has its usage and limits, an unused tier its limits.
        response.limits = AccountLimits()
        response.tiers = {name: Tier(limits=_limits(own)) for name, own in tiers.items()}
        r1 = response.tiers.setdefault("R1", Tier())
        if engine.streams or "R1" in tiers:
            r1.memory, r1.storage = memory, storage
            r1.reserved_memory, r1.reserved_storage = reserved[StorageType.MEMORY], reserved[StorageType.FILE]
            r1.streams, r1.consumers = len(engine.streams), engine.num_consumers()
        else:
            del response.tiers["R1"]
    return response


def _limits(own: AccountJetStreamLimits) -> AccountLimits:
    """The account's JetStream limits as nats-server reports them (-1: not limited)."""
    return AccountLimits(
        max_memory=own.max_memory,
        max_storage=own.max_store,
        max_streams=own.max_streams,
        max_consumers=own.max_consumers,
        max_ack_pending=own.max_ack_pending,
        memory_max_stream_bytes=own.memory_max_stream_bytes,
        storage_max_stream_bytes=own.store_max_stream_bytes,
        max_bytes_required=own.max_bytes_required,
    )


HANDLERS = {ApiEndpoint.INFO: account_info}
