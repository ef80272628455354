"""Account usage and limits as returned by ``$JS.API.INFO`` (nats-server jetstream.go).

Limits use -1 for "unlimited" (the server default). ``api.level`` and the ``reserved_*``
counters are ⟨2.11+⟩ and, as in nats-server 2.11+, always written (older servers omit them).
"""

from __future__ import annotations

from ._wire import WireStruct, always, always_new

__all__ = ["AccountInfo", "AccountLimits", "ApiStats", "Tier"]


class AccountLimits(WireStruct):
    max_memory: int = always(0)
    max_storage: int = always(0)
    max_streams: int = always(0)
    max_consumers: int = always(0)
    max_ack_pending: int = always(0)
    memory_max_stream_bytes: int = always(0)
    storage_max_stream_bytes: int = always(0)
    max_bytes_required: bool = always(False)

    @classmethod
    def unlimited(cls) -> AccountLimits:
        """What a default JetStream account reports: -1 everywhere."""
        return cls(
            max_memory=-1,
            max_storage=-1,
            max_streams=-1,
            max_consumers=-1,
            max_ack_pending=-1,
            memory_max_stream_bytes=-1,
            storage_max_stream_bytes=-1,
        )


class ApiStats(WireStruct):
    level: int = always(0)  # ⟨2.11+⟩ JetStream API level
    total: int = always(0)
    errors: int = always(0)
    inflight: int = 0


class Tier(WireStruct):
    memory: int = always(0)
    storage: int = always(0)
    reserved_memory: int = always(0)  # ⟨2.11+⟩
    reserved_storage: int = always(0)  # ⟨2.11+⟩
    streams: int = always(0)
    consumers: int = always(0)
    limits: AccountLimits = always_new(AccountLimits)


class AccountInfo(WireStruct):
    """``JetStreamAccountStats``: the totals (a flattened `Tier`), domain, API stats, tiers."""

    memory: int = always(0)
    storage: int = always(0)
    reserved_memory: int = always(0)  # ⟨2.11+⟩
    reserved_storage: int = always(0)  # ⟨2.11+⟩
    streams: int = always(0)
    consumers: int = always(0)
    limits: AccountLimits = always_new(AccountLimits)
    domain: str = ""
    api: ApiStats = always_new(ApiStats)
    tiers: dict[str, Tier] = {}
