"""Persisting a consumer: its definition (``meta.inf``) and its state (``o.dat``) in the file store.

`StateWriter` belongs to one `Consumer`.
The consumer's memory (its `DeliveryState`) is
the truth; the store gets a snapshot shortly after changes (coalescing many acks into one write),
like nats-server's consumer file store, which writes its state from a background flusher. The
snapshot is packed in the loop (`DeliveryState.packed`: the maps encoded in one C call each, ~2 ms
for 100,000 pending acks, nothing copied) — from ``JOURNAL_MIN`` pending acks, while fewer entries
changed since the last write than are pending, only those, which the store appends to its journal
(``store/consumer_journal.py``); the write (a header, a crc, one ``pwrite`` into a state slot or
at the journal's end) happens in the event loop for a small state or set of changes
(``STATE_INLINE_MAX``), else — or any write with ``sync: always`` (its fsync) — in one writer
thread.

Durability, as nats-server's: its ``flushLoop`` encodes the whole state (``encodeConsumerState``:
every pending ack) and writes it at most every 100 ms, fsynced only with ``sync: always``; so a
crash loses up to ~100 ms of acks and deliveries, which come back as redeliveries (at least once
holds). Ours writes every ``STATE_FLUSH_DELAY`` (100 ms) too while a write costs under a tenth of
that; a write costs time in proportion to the pending acks (~2 ms for 100,000), so the next one
waits at least ``STATE_WRITE_SHARE`` times what the last one took (at most ``STATE_FLUSH_MAX``):
writing state then takes a bounded share of the CPU however many acks are pending, and the crash
window grows with it (past 100 ms from ~500,000 pending). What a write took is its threads' CPU time
(``time.thread_time``), not the wall clock: on a loaded machine a small write waits for a core far
longer than it works, and that wait must not stretch the crash window. A graceful stop writes the
final state.

Beyond nats-server: an ack that carries a reply (``ack_sync``, nats.go's double ack) is confirmed
only once the state holding it is written — to the OS, as a stored message is, and fsynced with
``sync: always`` — so a confirmed ack survives ``kill -9`` (issue #27; nats-server's
``updateAcks`` sends the reply at once and its ``flushLoop`` writes up to 100 ms later).
`StateWriter.confirm` holds the reply; the replies of every ack handled in one loop turn share
one write at the start of the next (group commit: ``call_soon`` runs after the turn's reads),
and the timed write, left set, then writes only what changed after it (`_timed_flush`: serial
acks made and cancelled a timer each). The state files stay open between the writes made in
the loop (`_fileutil.HotFiles`), and a small state's write is not timed (`_snapshot`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import time
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api.codec import decode, encode
from pyjetstream.api.models_consumer import ConsumerConfig
from pyjetstream.api.timefmt import format_time, parse_time
from pyjetstream.server.jetstream.store.base import (
    ConsumerState,
    ConsumerStoreBase,
    StoreError,
)
from pyjetstream.server.jetstream.store.consumer_journal import PackedChanges
from pyjetstream.server.jetstream.store.consumer_store import PackedState

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer

__all__ = ["ConsumerMeta", "StateWriter", "decode_consumer_meta", "encode_consumer_meta"]

# How soon changed state is written (at most this many writes per second per consumer: 1/delay).
STATE_FLUSH_DELAY = 0.1
# The next write waits at least this many times the last write's cost, and at most this long.
STATE_WRITE_SHARE = 10
STATE_FLUSH_MAX = 1.0
# A state with at most this many pending acks is written in the loop (encoded in ~0.1 ms, one
# pwrite): handing it to the writer thread cost more than that on a busy machine, where the thread
# waits for the GIL and a core — and its wait is time the state on disk lags behind (issue #27).
STATE_INLINE_MAX = 2048
# A graceful stop writes the whole state (a state slot), not the changes since the last write
# (the journal), as nats-server's ``consumerFileStore.Stop`` writes ``encodeState``: the next start
# decodes that slot alone. With the journal left behind a restart replayed every record of it (a
# consumer that delivered 100,000 messages since its last whole write: ~100,000 entries put one by
# one on top of the slot's columns). Off: the last write as any other (the differential test,
# tests/jetstream/test_restart_steps.py, proves the same state restored either way).
STOP_WRITES_WHOLE = True


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


class StateWriter:
    """Writes a consumer's state to its store shortly after changes, and reads it back."""

    __slots__ = (
        "_commit_due",
        "_cost",
        "_flush_handle",
        "_replies",
        "_unwritten",
        "_write_future",
        "consumer",
        "durable",
        "store",
    )

    def __init__(self, consumer: Consumer, store: ConsumerStoreBase | None) -> None:
        self.consumer = consumer
        self.store = store
        # Whether an ack's reply waits for its write (`confirm`): the store writes a file.
        self.durable = store is not None and store.persistent
        self._flush_handle: asyncio.TimerHandle | None = None
        self._cost = 0.0  # CPU seconds the last finished write took (its snapshot and its store update)
        self._write_future: concurrent.futures.Future[bool] | None = None
        self._replies: list[str] = []  # ack replies waiting for the next commit
        self._commit_due = False  # a commit is scheduled (next loop turn, or after the writer thread)
        self._unwritten = False  # the state changed since the last write's snapshot (`dirty`)

    def stored_state(self) -> ConsumerState | None:
        """What the store holds from before a restart (None: a new consumer)."""
        if self.store is None or not self.store.has_state():
            return None
        return self.store.state()

    def write_start(self) -> None:
        """A new consumer's start, written before its create is answered (nats-server's
        ``SetStarting`` in ``selectStartingSeqNo``): for a start a restart would not select again
        (deliver new, last, by time), which a crash before a timed write would have moved."""
        if self.store is not None:
            self._write(self.consumer.state.packed())

    def write_meta(self) -> None:
        """The definition changed (an update): rewrite ``meta.inf``."""
        consumer = self.consumer
        if self.store is not None:
            with contextlib.suppress(StoreError, OSError):
                self.store.write_meta(encode_consumer_meta(consumer.name, consumer.cfg, consumer.created))

    def reset(self, sseq: int) -> None:
        """⟨2.14+⟩ ``CONSUMER.RESET`` (``store.Reset``): the store starts over after ``sseq``
        (its state may go backwards only this way); written at once."""
        store = self._settle()
        if store is None:
            return
        try:
            store.reset(sseq)
        except (StoreError, OSError) as exc:
            self._log_failure("reset", exc)

    def dirty(self) -> None:
        """The state changed: write it to the consumer's store shortly — with ``sync: always``
        too, as nats-server's ``flushLoop`` (at most every 100 ms, fsynced): what a client was
        answered for (an ack with a reply) is written at once by `confirm`, the rest (plain acks,
        deliveries) a crash turns into redeliveries."""
        consumer = self.consumer
        self._unwritten = True
        if self._flush_handle is None and self.store is not None and not consumer.closed:
            delay = min(max(STATE_FLUSH_DELAY, STATE_WRITE_SHARE * self._cost), STATE_FLUSH_MAX)
            self._flush_handle = consumer.loop.call_later(delay, self._timed_flush)

    def confirm(self, reply: str) -> None:
        """Send the reply to an ack (or any message on the ack subject) once the consumer's state
        as it is now is written (`_commit`, next loop turn); at once when nothing is written."""
        consumer = self.consumer
        if not self.durable or consumer.closed:
            consumer.server.publish_internal(reply, b"")
            return
        self._replies.append(reply)
        if not self._commit_due:
            self._commit_due = True
            consumer.loop.call_soon(self._commit)

    def _commit(self) -> None:
        """Group commit: write the state once for every reply held since the last commit, then
        send them. After the writer thread's write when one is under way (one write at a time,
        in order: an older snapshot must not land after this one)."""
        pending = self._write_future
        loop = self.consumer.loop
        if pending is not None and not pending.done():
            pending.add_done_callback(lambda _f: self._commit_from_writer(loop))
            return
        self._commit_due = False
        replies, self._replies = self._replies, []
        if not replies or self.store is None:
            return
        # This write covers every change so far; the timed write stays set (cancelled here and
        # set again by the next delivery, it was a timer made and dropped per serial ack) and
        # writes only what changes after this snapshot (`_timed_flush`).
        self._unwritten = False
        state, snap_cost = self._snapshot()
        if self.consumer.engine.sync_always:
            # An fsync takes milliseconds of waiting: in the writer thread, while the loop reads
            # on and the next acks gather for the next commit (which waits for this one).
            future = _state_writer().submit(self._write, state, snap_cost)
            self._write_future = future
            future.add_done_callback(lambda f: self._replies_from_writer(loop, f, replies))
            return
        if self._write(state, snap_cost):  # (not written, not confirmed: the ack times out, is retried)
            self._send(replies)

    def _send(self, replies: list[str]) -> None:
        publish = self.consumer.server.publish_internal
        for reply in replies:
            publish(reply, b"")

    def _replies_from_writer(
        self, loop: asyncio.AbstractEventLoop, future: concurrent.futures.Future[bool], replies: list[str]
    ) -> None:
        """(In the writer thread.) A commit's write is done: its replies go, if it was written."""
        if future.exception() is None and future.result():
            with contextlib.suppress(RuntimeError):  # (the loop is gone: a server shut down)
                loop.call_soon_threadsafe(self._send, replies)

    def _commit_from_writer(self, loop: asyncio.AbstractEventLoop) -> None:
        """(In the writer thread, its write done.) The commit's turn, unless the loop is gone (a
        server shut down meanwhile: its final write held the acks)."""
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._commit)

    def _timed_flush(self) -> None:
        """The timed write (`dirty`): skipped when a commit has written every change since it
        was set (`_commit` leaves the timer set)."""
        self._flush_handle = None
        if self._unwritten:
            self._flush()

    def _flush(self, whole: bool = False) -> None:
        """Snapshot the state and write it: in the loop when small (and not fsynced), else in
        the writer thread; ``whole``: the whole state, not its changes (`DeliveryState.packed`).
        No timed write is set when it runs (`_timed_flush` cleared its own; `close` cancels it)."""
        if self.store is None or self._commit_due:  # a commit is about to write it all
            return
        pending = self._write_future
        if pending is not None and not pending.done():
            self.dirty()  # one write at a time: try again after this one
            return
        consumer = self.consumer
        self._unwritten = False
        state, snap_cost = self._snapshot(whole)
        small = state.nchg if isinstance(state, PackedChanges) else state.npend
        if consumer.closed or (small <= STATE_INLINE_MAX and not consumer.engine.sync_always):
            self._write(state, snap_cost)
        else:
            # Encoding a large state, or an fsync, takes milliseconds: keep it off the event loop.
            self._write_future = _state_writer().submit(self._write, state, snap_cost)

    def _snapshot(self, whole: bool = False) -> tuple[PackedState | PackedChanges, float]:
        """The state packed for the store (`DeliveryState.packed`), and the CPU time that took —
        -1 for a state of at most ``STATE_INLINE_MAX`` pending acks: packed and written in
        ~0.1 ms, its cost could never hold the next write back (only one of over a tenth of
        ``STATE_FLUSH_DELAY`` does, `dirty`), so neither is timed (two clock reads each, ~3 µs
        of a confirmed ack's ~40)."""
        st = self.consumer.state
        if st.pending.n <= STATE_INLINE_MAX:
            return st.packed(whole), -1.0
        started = time.thread_time()
        state = st.packed(whole)
        return state, time.thread_time() - started

    def _settle(self) -> ConsumerStoreBase | None:
        """Before a reset or a close: no timed write pending, the writer thread's last write
        done; the store to go on with (None: there is none)."""
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._wait_for_writer()
        return self.store

    def _wait_for_writer(self) -> None:
        pending, self._write_future = self._write_future, None
        if pending is not None:
            with contextlib.suppress(Exception):
                pending.result(timeout=10)

    def _write(self, state: PackedState | PackedChanges, snap_cost: float = 0.0) -> bool:
        """Runs in the state writer thread (or in the loop); only this touches the store then.
        The write's whole cost (``snap_cost``: its snapshot's) is known only once it is done: the
        next write waits for it (`dirty`), not for a part of it (-1: a small state's, not timed:
        `_snapshot`). False: the store refused it."""
        assert self.store is not None
        started = time.thread_time() if snap_cost >= 0 else -1.0
        try:
            if isinstance(state, PackedChanges):
                self.store.adopt_changes(state)
            else:
                self.store.adopt_packed(state)
        except (StoreError, OSError) as exc:
            self.consumer.state.changed = None  # (the next write is the whole state)
            self._log_failure("write", exc)
            return False
        finally:
            self._cost = snap_cost + time.thread_time() - started if started >= 0 else 0.0
        return True

    def _log_failure(self, action: str, exc: Exception) -> None:
        """One log line for a state ``action`` ("write", "reset") the store refused."""
        consumer = self.consumer
        consumer.server.logger.error(
            "JetStream consumer '%s > %s' could not %s its state: %s",
            consumer.stream.name,
            consumer.name,
            action,
            exc,
        )

    def close(self, delete: bool, stream_deleted: bool = False) -> None:
        """Stop: write the final state (or drop everything with ``delete``) and close the store
        (``stream_deleted``: the stream's store goes whole, nothing to write or remove here)."""
        store = self._settle()
        if store is None:
            return
        replies, self._replies = self._replies, []
        self._commit_due = False
        if not delete:
            self._flush(whole=STOP_WRITES_WHOLE)
            publish = self.consumer.server.publish_internal
            for reply in replies:  # the final write holds their acks
                publish(reply, b"")
        with contextlib.suppress(StoreError, OSError):
            if delete and stream_deleted:
                store.stream_delete()
            elif delete:
                store.delete()
            else:
                store.stop()
