"""JetStream enumerations, valued by their exact wire strings.

nats-server (de)serialises its int enums as lowercase strings. Unmarshalling is an exact
match except where noted: ``discard`` is case-insensitive (Go lowercases it first) and
``deliver_policy`` accepts ``"undefined"`` as ``all``. ``_missing_`` reproduces both, and
msgspec honours ``_missing_`` when decoding.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "AckPolicy",
    "AdvisoryAction",
    "ConsumerAction",
    "DeliverPolicy",
    "DiscardPolicy",
    "PersistMode",
    "PriorityPolicy",
    "ReplayPolicy",
    "RetentionPolicy",
    "StorageType",
    "StoreCompression",
]


class RetentionPolicy(StrEnum):
    LIMITS = "limits"
    INTEREST = "interest"
    WORKQUEUE = "workqueue"


class DiscardPolicy(StrEnum):
    OLD = "old"
    NEW = "new"

    @classmethod
    def _missing_(cls, value: object) -> DiscardPolicy | None:
        # stream.go: DiscardPolicy.UnmarshalJSON does strings.ToLower(string(data)).
        if isinstance(value, str):
            lowered = value.lower()
            for member in cls:
                if member.value == lowered:
                    return member
        return None


class StorageType(StrEnum):
    FILE = "file"
    MEMORY = "memory"


class StoreCompression(StrEnum):
    """⟨2.10+⟩ ``compression``."""

    NONE = "none"
    S2 = "s2"


class PersistMode(StrEnum):
    """⟨2.12+⟩ ``persist_mode``: ``async`` acknowledges before the write is flushed."""

    DEFAULT = "default"
    ASYNC = "async"

    @classmethod
    def _missing_(cls, value: object) -> PersistMode | None:
        # stream.go: PersistModeType.UnmarshalJSON takes `""` as the default (case-sensitive).
        return cls.DEFAULT if value == "" else None


class DeliverPolicy(StrEnum):
    ALL = "all"
    LAST = "last"
    NEW = "new"
    BY_START_SEQUENCE = "by_start_sequence"
    BY_START_TIME = "by_start_time"
    LAST_PER_SUBJECT = "last_per_subject"

    @classmethod
    def _missing_(cls, value: object) -> DeliverPolicy | None:
        # consumer.go: `case jsonString("all"), jsonString("undefined"): *p = DeliverAll`.
        return cls.ALL if value == "undefined" else None


class AckPolicy(StrEnum):
    NONE = "none"
    ALL = "all"
    EXPLICIT = "explicit"
    FLOW_CONTROL = "flow_control"  # ⟨2.14+⟩ ADR-60: acked by flow-control responses (push only)


class ReplayPolicy(StrEnum):
    INSTANT = "instant"
    ORIGINAL = "original"


class PriorityPolicy(StrEnum):
    """⟨2.11+⟩ ``priority_policy`` (``prioritized`` is ⟨2.12+⟩)."""

    NONE = "none"
    OVERFLOW = "overflow"
    PINNED_CLIENT = "pinned_client"
    PRIORITIZED = "prioritized"


class ConsumerAction(StrEnum):
    """⟨2.10+⟩ ``action`` of a consumer create request; ``""`` = create or update."""

    CREATE_OR_UPDATE = ""
    CREATE = "create"
    UPDATE = "update"


class AdvisoryAction(StrEnum):
    """``action`` of stream/consumer action advisories."""

    CREATE = "create"
    DELETE = "delete"
    MODIFY = "modify"
