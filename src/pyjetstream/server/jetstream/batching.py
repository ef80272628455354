"""What atomic and fast-ingest batches share (nats-server's ``batching`` struct, jetstream_batching.go):
the ``jetstream { limits { batch {} } }`` values with each kind's defaults, the open batches of
one stream with their idle timers and the count of open batches of that kind the engine keeps,
and the checks a batched message meets before its kind's own (``processJetStreamAtomicBatchMsg``
and ``processJetStreamFastBatchMsg`` both start with them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar

from pyjetstream.api import errors as E
from pyjetstream.api.models_common import ApiError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine
    from pyjetstream.server.jetstream.stream import Stream


@dataclass
class BatchLimits:
    """The ``batch {}`` limits a server applies to atomic and fast batches."""

    max_msgs: int
    max_inflight_per_stream: int
    max_inflight_total: int
    timeout: float

    @classmethod
    def from_options(cls, options: object, defaults: BatchLimits) -> BatchLimits:
        """The configured ``batch`` limits; an absent or non-positive value takes the default."""
        limits = getattr(options, "jetstream_limits", None)

        def pick(name: str, default: float) -> float:
            value = getattr(limits, name, 0) or 0
            return value if value > 0 else default

        return cls(
            max_msgs=int(pick("batch_max_msgs", defaults.max_msgs)),
            max_inflight_per_stream=int(pick("batch_max_inflight_per_stream", defaults.max_inflight_per_stream)),
            max_inflight_total=int(pick("batch_max_inflight_total", defaults.max_inflight_total)),
            timeout=float(pick("batch_timeout", defaults.timeout)),
        )


class BatchInflight:
    """The count of open batches of one kind over the engine's streams (nats-server's
    ``globalInflightAtomicBatches`` / ``globalInflightFastBatches``)."""

    def __init__(self) -> None:
        self.count = 0


def engine_inflight(engine: JetStreamEngine, kind: str) -> BatchInflight:
    name = f"{kind}_batches_inflight"
    inflight = getattr(engine, name, None)
    if inflight is None:
        inflight = BatchInflight()
        setattr(engine, name, inflight)
    return inflight


class _Timed(Protocol):
    timer: asyncio.TimerHandle | None
    deadline: float


B = TypeVar("B", bound=_Timed)


class OpenBatches(Generic[B]):
    """The open batches of one kind in one stream, by batch id: admitted within the limits,
    forgotten at the end or after ``limits.timeout`` without a message (``on_timeout``, by
    default just `remove`)."""

    def __init__(
        self, stream: Stream, kind: str, limits: BatchLimits, on_timeout: Callable[[str], None] | None = None
    ) -> None:
        self.stream = stream
        self.limits = limits
        self.inflight = engine_inflight(stream.engine, kind)
        self.on_timeout = on_timeout or self.remove
        self.batches: dict[str, B] = {}

    def __len__(self) -> int:
        return len(self.batches)

    def __contains__(self, batch_id: str) -> bool:
        return batch_id in self.batches

    def get(self, batch_id: str) -> B | None:
        return self.batches.get(batch_id)

    def full(self) -> bool:
        """Whether one more open batch would pass the per-stream or the engine-wide limit."""
        limits = self.limits
        return (
            len(self.batches) + 1 > limits.max_inflight_per_stream
            or self.inflight.count + 1 > limits.max_inflight_total
        )

    def add(self, batch_id: str, batch: B) -> B:
        self.inflight.count += 1
        self.batches[batch_id] = batch
        return batch

    def remove(self, batch_id: str) -> None:
        batch = self.batches.pop(batch_id, None)
        if batch is None:
            return
        self.inflight.count -= 1
        if batch.timer is not None:
            batch.timer.cancel()

    def clear(self) -> None:
        for batch_id in list(self.batches):
            self.remove(batch_id)

    def arm(self, batch_id: str, batch: B) -> None:
        """(Re)start the batch's idle timer: ``limits.timeout`` from now.

        Called for every message of a batch, so it only moves the batch's deadline; the one timer a
        batch has fires at the deadline it was set for and, when messages came since, re-arms
        itself for what is left (a cancel and a new ``call_later`` per message cost ~1 µs)."""
        loop = self.stream.server.loop
        batch.deadline = loop.time() + self.limits.timeout
        if batch.timer is None:
            batch.timer = loop.call_later(self.limits.timeout, self._idle, batch_id, batch)

    def _idle(self, batch_id: str, batch: B) -> None:
        """The batch's timer fired: expire it if no message came for ``limits.timeout``, else wait
        for the rest (the remaining time is read once: a timer that fires a little early — uvloop
        rounds to milliseconds — re-arms for the remainder instead of arming nothing)."""
        if self.batches.get(batch_id) is not batch:
            return
        loop = self.stream.server.loop
        left = batch.deadline - loop.time()
        if left > 0:
            batch.timer = loop.call_later(left, self._idle, batch_id, batch)
            return
        batch.timer = None
        self.on_timeout(batch_id)


def batched_msg_refused(stream: Stream, hdr: bytes, payload: bytes) -> ApiError | None:
    """The first checks of a batched message, as of any publish: sealed, the account's storage
    limits, the message size."""
    cfg = stream.cfg
    if cfg.sealed:
        return E.JSStreamSealedErr()
    limit_error = stream.engine.check_account_limits(cfg.storage)
    if limit_error is not None:
        return limit_error
    if len(hdr) + len(payload) > stream.ingest.max_size:
        return E.JSStreamMessageExceedsMaximumErr()
    return None


def stored_subject(stream: Stream, subject: str) -> str:
    """The subject a batched message is checked and stored under: the stream's subject transform
    applied where it matches."""
    return stream.ingest.transformed(subject)
