"""``$JS.API.INFO``: account usage, limits and API statistics."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.models_account import AccountLimits, ApiStats
from pyjetstream.api.responses import AccountInfoResponse
from pyjetstream.api.subjects import ApiEndpoint, ApiMatch

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine


def account_info(engine: JetStreamEngine, match: ApiMatch, payload: bytes, reply: str) -> AccountInfoResponse:
    memory, storage = engine.usage()
    return AccountInfoResponse(
        memory=memory,
        storage=storage,
        streams=len(engine.streams),
        consumers=engine.num_consumers(),
        limits=_limits(engine),
        domain=engine.domain,
        # The request being answered is counted already, as nats-server does.
        api=ApiStats(total=engine.api_total, errors=engine.api_errors),
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
