"""Persisting a consumer: its definition (``meta.inf``) and its state (``o.dat``) in the file store.

A mixin of :class:`~pyjetstream.server.jetstream.consumer.Consumer`. The consumer's memory is the
truth; the store gets a snapshot shortly after changes (coalescing many acks into one write),
like nats-server's consumer file store, which writes its state from a background flusher. The
write (a file replace: milliseconds on ext4) happens in one writer thread, off the event loop,
except with ``sync: always``. A crash loses at most ``STATE_FLUSH_DELAY`` of acks, which then come
back as redeliveries; a graceful stop writes the final state.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api.codec import decode, encode
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.timefmt import format_time, parse_time
from pyjetstream.server.jetstream.store.base import (
    ConsumerState,
    ConsumerStoreBase,
    SequencePair,
    StoreError,
)

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["ConsumerMeta", "StatePersistence", "decode_consumer_meta", "encode_consumer_meta"]

# How soon changed state is written (at most this many writes per second per consumer: 1/delay).
STATE_FLUSH_DELAY = 0.1


class ConsumerMeta(msgspec.Struct):
    """What a file consumer store persists about its consumer (``meta.inf``)."""

    name: str
    created: str
    config: ConsumerConfig


def encode_consumer_meta(name: str, cfg: ConsumerConfig, created: int) -> bytes:
    return encode(ConsumerMeta(name=name, created=format_time(created), config=cfg), go_escape=False)


def decode_consumer_meta(data: bytes) -> tuple[str, ConsumerConfig, int]:
    meta = decode(data, ConsumerMeta)
    return meta.name, meta.config, parse_time(meta.created)


@functools.cache
def _state_writer() -> concurrent.futures.ThreadPoolExecutor:
    """One thread writing consumer state files for every consumer, in order."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="consumer-state")


class StatePersistence:
    """Writing and reading back the consumer's state. Mixed into Consumer."""

    # Provided by Consumer.
    stream: Stream
    engine: Any
    server: Any
    loop: Any
    name: str
    closed: bool
    store: ConsumerStoreBase | None
    sseq: int
    dseq: int
    adflr: int
    asflr: int
    pending: dict[int, tuple[int, int]]
    rdc: dict[int, int]

    if TYPE_CHECKING:

        def _ack_wait_s(self, next_ns: int) -> float: ...
        def _arm_pending_timer(self, delay: float) -> None: ...

    def _init_persistence(self) -> None:
        self._flush_handle: Any = None
        self._write_future: concurrent.futures.Future[None] | None = None

    def _apply_stored_state(self) -> None:
        """``readStoredState``: continue where the consumer was before the restart."""
        assert self.store is not None
        st = self.store.state()
        self.sseq = max(self.sseq, st.delivered.stream_seq + 1)
        self.dseq = st.delivered.consumer_seq + 1
        self.adflr = st.ack_floor.consumer_seq
        self.asflr = st.ack_floor.stream_seq
        self.pending = {seq: st.pending[seq] for seq in sorted(st.pending)}
        self.rdc = {seq: n for seq, n in st.redelivered.items() if seq > self.asflr}
        if self.pending:
            # Check pending soon after a restart: whatever was due while down is due now.
            delay = min(0.5, self._ack_wait_s(0))
            self._arm_pending_timer(delay)

    def _dirty(self) -> None:
        """The state changed: write it to the consumer's store shortly."""
        if self._flush_handle is None and self.store is not None and not self.closed:
            delay = 0.0 if self.engine.sync_always else STATE_FLUSH_DELAY
            self._flush_handle = self.loop.call_later(delay, self._flush_store)

    def _flush_store(self) -> None:
        """Snapshot the state and hand it to the writer (in the loop when ``sync: always``)."""
        self._flush_handle = None
        if self.store is None:
            return
        pending = self._write_future
        if pending is not None and not pending.done():
            self._dirty()  # one write at a time: try again after this one
            return
        state = ConsumerState(
            SequencePair(self.dseq - 1, self.sseq - 1),
            SequencePair(self.adflr, self.asflr),
            dict(self.pending),
            dict(self.rdc),
        )
        if self.engine.sync_always or self.closed:
            self._write_state(state)
        else:
            # A state write is a file replace (milliseconds on ext4): keep it off the event loop.
            self._write_future = _state_writer().submit(self._write_state, state)

    def _wait_for_writer(self) -> None:
        pending, self._write_future = self._write_future, None
        if pending is not None:
            with contextlib.suppress(Exception):
                pending.result(timeout=10)

    def _write_state(self, state: ConsumerState) -> None:
        """Runs in the state writer thread (or in the loop); only this touches the store then."""
        assert self.store is not None
        try:
            self.store.update(state)
        except (StoreError, OSError) as exc:
            self.server.logger.error(
                "JetStream consumer '%s > %s' could not write its state: %s", self.stream.name, self.name, exc
            )

    def _close_store(self, delete: bool) -> None:
        """Stop: write the final state (or drop everything with ``delete``) and close the store."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._wait_for_writer()
        if self.store is None:
            return
        if not delete:
            self._flush_store()
        with contextlib.suppress(StoreError, OSError):
            if delete:
                self.store.delete()
            else:
                self.store.stop()
