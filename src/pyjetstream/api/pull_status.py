"""What a status message on a pull request's inbox means — the one classifier for every receiver.

nats-server answers a pull request (``$JS.API.CONSUMER.MSG.NEXT``) on its reply inbox with messages
and, with an empty payload and a ``NATS/1.0 <code> <description>`` header line, statuses. The
client's fetch/consume (``client/jetstream/pull.py``) and Spark's range reader
(``spark/range_reader.py``) both need to tell them apart; nats.go does it in ``checkMsg`` /
``handleStatusMsg`` (jetstream/pull.go). Each receiver decides what to *do* with the answer.
"""

from __future__ import annotations

import enum

__all__ = ["PullStatus", "classify_pull_status"]


class PullStatus(enum.Enum):
    """The kinds of status a pull request's inbox receives."""

    HEARTBEAT = "heartbeat"  # 100 Idle Heartbeat: nothing but activity
    END = "end"  # 404 No Messages / 408 Request Timeout: the request is over, no error
    MAX_BYTES = "max_bytes"  # 409 Message Size Exceeds MaxBytes: over, the next message is too big
    BATCH_COMPLETED = "batch_completed"  # 409 Batch Completed: over
    CONSUMER_DELETED = "consumer_deleted"  # 409 Consumer Deleted: the consumer is gone
    PUSH_BASED = "push_based"  # 409 Consumer is push based: pulls can never work
    LEADERSHIP_CHANGE = "leadership_change"  # 409 Leadership Change: pull again
    CONFLICT = "conflict"  # any other 409 (Exceeded MaxWaiting, MaxRequestBatch …): this pull failed
    BAD_REQUEST = "bad_request"  # 400: the request itself is wrong
    NO_RESPONDERS = "no_responders"  # 503: nobody listens on MSG.NEXT (the consumer does not exist)
    PIN_ID_MISMATCH = "pin_id_mismatch"  # ⟨2.11+⟩ 423: the pull's pin id is not the group's pinned one
    OTHER = "other"  # any other code


def classify_pull_status(status: int, description: str) -> PullStatus:
    """Classify a pull status by code and description (descriptions compared case-insensitively,
    as nats.go does with ``strings.Contains(strings.ToLower(...))``)."""
    if status == 100:
        return PullStatus.HEARTBEAT
    if status == 404 or status == 408:
        return PullStatus.END
    if status == 409:
        low = description.lower()
        if "message size exceeds maxbytes" in low:
            return PullStatus.MAX_BYTES
        if "batch completed" in low:
            return PullStatus.BATCH_COMPLETED
        if "consumer deleted" in low:
            return PullStatus.CONSUMER_DELETED
        if "push based" in low:
            return PullStatus.PUSH_BASED
        if "leadership change" in low:
            return PullStatus.LEADERSHIP_CHANGE
        return PullStatus.CONFLICT
    if status == 400:
        return PullStatus.BAD_REQUEST
    if status == 503:
        return PullStatus.NO_RESPONDERS
    if status == 423:
        return PullStatus.PIN_ID_MISMATCH
    return PullStatus.OTHER
