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
        limits=AccountLimits.unlimited(),
        domain=engine.domain,
        # The request being answered is counted already, as nats-server does.
        api=ApiStats(total=engine.api_total, errors=engine.api_errors),
    )


HANDLERS = {ApiEndpoint.INFO: account_info}
