"""Which JetStream API level each feature needs (ADR-44), and which nats-server release brought it.

A server reports its level in INFO (``api_lvl``, 2.12+) and in ``$JS.API.INFO`` (``api.level``, 2.11+);
older servers report neither (level 0). nats-server 2.11 is level 1, 2.12 level 2, 2.14 level 4,
2.15 level 5 (measured against the binaries). A client checks a request's feature against the level
*before* sending it: an older server would misread the request silently (a TTL header it does not know
is stored as a plain header, a pause request is never answered) instead of refusing it.
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["Feature", "api_level_from_info", "level_version"]


class Feature(enum.Enum):
    """A JetStream feature newer than 2.10: ``(description, API level, first nats-server release)``."""

    MSG_TTL = ("per-message TTL", 1, "2.11")
    SUBJECT_DELETE_MARKERS = ("subject delete markers (limit marker TTL)", 1, "2.11")
    CONSUMER_PAUSE = ("consumer pause", 1, "2.11")
    PRIORITY_GROUPS = ("priority groups", 1, "2.11")
    BATCH_GET = ("batch direct get", 1, "2.11")
    EXPECTED_LAST_SUBJECT_FILTER = ("expected last sequence for a subject filter", 1, "2.11")
    COUNTERS = ("counters", 2, "2.12")
    ATOMIC_BATCH = ("atomic batch publish", 2, "2.12")
    SCHEDULES = ("message schedules", 2, "2.12")
    PRIORITIZED = ("prioritized pulls", 2, "2.12")
    FAST_BATCH = ("fast-ingest batch publish", 4, "2.14")
    BATCH_EOB = ("committing an atomic batch without a final message (eob)", 4, "2.14")
    CONSUMER_RESET = ("consumer reset", 4, "2.14")
    ACK_FLOW_CONTROL = ("flow-control acks (ack_policy flow_control, ADR-60)", 4, "2.14")
    DURABLE_SOURCING = ("mirroring or sourcing through a named durable consumer (ADR-60)", 4, "2.14")
    SCHEDULE_CRON = ("interval, cron and sourced schedules", 4, "2.14")

    def __init__(self, description: str, level: int, version: str) -> None:
        self.description = description
        self.level = level
        self.version = version


def level_version(level: int) -> str:
    """The first nats-server release at ``level`` (for messages)."""
    return {0: "2.10", 1: "2.11", 2: "2.12", 3: "2.12", 4: "2.14", 5: "2.15"}.get(level, f"level {level}")


def api_level_from_info(info: dict[str, Any]) -> int | None:
    """INFO's ``api_lvl`` (``None`` when the server does not announce one)."""
    value = info.get("api_lvl")
    return value if isinstance(value, int) and not isinstance(value, bool) else None
