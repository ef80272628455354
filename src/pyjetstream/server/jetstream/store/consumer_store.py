"""Consumer state stores (nats-server ``consumerMemStore`` / ``consumerFileStore``).

The state machine (delivered, ack floor, pending, redelivered) follows nats-server's
``UpdateDelivered`` / ``UpdateAcks``; the file variant persists it to ``o.dat`` as one
atomic replace per update (or per ``batch()``), fsynced when the sync policy is ``always``.

A consumer hands its whole state over as a `PackedState` (`pack_consumer_columns`: its pending
acks' columns as they are in memory and its redelivered map, in one msgpack call, at C speed;
`pack_consumer_state` for a dict) and the file store writes those bytes as they are
(`FileConsumerStore.adopt_packed`); the maps are decoded again only when something asks for
them (`state`, an update).
"""

from __future__ import annotations

import contextlib
import operator
import os
import struct
import zlib
from array import array
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from itertools import chain, compress, repeat

import msgspec

from ._fileutil import HOT_FILES, fsync_dir, fsync_paths, read_meta_file, write_meta_file
from .base import (
    ACK_ALL,
    ACK_EXPLICIT,
    ACK_NONE,
    ConsumerState,
    ConsumerStoreBase,
    ErrBadConsumerState,
    ErrNoAckPolicy,
    ErrStoreClosed,
    ErrStoreMsgNotFound,
    SequencePair,
)
from .consumer_journal import JOURNAL_FILE, PackedChanges, encode_changes, replay

_STATE_MAGIC = b"PJSC"
_STATE_VERSION = 4
# magic, version, pad, ack floor (consumer, stream), delivered (consumer, stream), #pending, #redelivered
_STATE_HDR_V1 = struct.Struct("<4sB3xQQQQQQ")
# Version 2 adds the write's generation: the state lives in two slot files written in turn (see
# FileConsumerStore), and the newer valid one is the state.
_STATE_HDR_V2 = struct.Struct("<4sB3xQQQQQQQ")
# Version 3 adds the body's length: the maps are one msgpack value (`pack_consumer_state`), not
# columns of 8-byte integers. Version 4 (the same header) lets the pending acks be the consumer's
# columns (`pack_consumer_columns`) in place of a map.
_STATE_HDR = struct.Struct("<4sB3xQQQQQQQQ")
# A slot is cut to its record's length only when it holds this much more than the record.
_SLOT_SLACK = 64 * 1024
_MAPS_ENCODER = msgspec.msgpack.Encoder()
# The pending acks: a map, or columns (first sequence, delivery sequences + 1 with 0 where
# none is pending, delivery times, both int64 in this machine's order; the entries below the
# first sequence).
_Columns = tuple[int, bytes, bytes, dict[int, tuple[int, int]]]
_MAPS_DECODER = msgspec.msgpack.Decoder(tuple[dict[int, tuple[int, int]] | _Columns, dict[int, int]])


def column_entries(base: int, dseq: array[int], ts: array[int]) -> Iterator[tuple[int, tuple[int, int]]]:
    """The pending acks of columns (slot ``i``: stream sequence ``base + i``; ``dseq`` the
    delivery sequence + 1, 0: none): (seq, (delivery seq, time)), ascending — C iterators only,
    no Python step per entry."""
    keys = compress(range(base, base + len(dseq)), dseq)
    values = zip(map(operator.sub, compress(dseq, dseq), repeat(1)), compress(ts, dseq), strict=True)
    return zip(keys, values, strict=True)


# Whether a state slot's pending columns stay columns (`StoredPending`, adopted as they are by
# ``PendingArray.from_stored``) rather than a dict of one tuple per pending ack: the switch of that
# fast path (tests/jetstream/test_pending_map.py proves both restore the same state).
COLUMN_RESTORE = True


class StoredPending(MutableMapping[int, tuple[int, int]]):
    """A state slot's pending acks as the columns they were stored as (o.dat version 4), so a
    restart with 100,000 pending acks does not make 100,000 tuples into a dict (~15 ms) that
    ``DeliveryState.restore`` then turns back into columns (~10 ms) and `ConsumerState.copy`
    copies (~4 ms); nats-server's ``readStoredState`` decodes its pending map once. Reads look at
    the columns; writes (a journal's replay after a crash, ``update_delivered``/``update_acks``)
    go to a small dict of what changed since the slot (``_w``: the entry, None: gone), which
    ``PendingArray`` applies on top of the columns it adopts (`stored`). Only a walk over the
    entries once something was written makes the whole dict (``materialized`` counts the entries
    made so: the step count of the tests). The columns are never written, so a copy shares them."""

    __slots__ = ("_d", "_w", "base", "dseq", "n", "old", "stored_n", "ts")
    materialized = 0  # entries made into a dict (class-wide step counter)
    counted = 0  # column slots looked at to count the entries (class-wide step counter)

    def __init__(
        self, base: int, dseq: array[int], ts: array[int], old: dict[int, tuple[int, int]], stored_n: int = -1
    ) -> None:
        """``stored_n``: the entries of the columns and ``old``, when known (a copy's, or the count
        the slot's header keeps: counting the columns' empty slots makes a Python int of each,
        ~2-3 ms of a restart at 100,000)."""
        self.base, self.dseq, self.ts, self.old = base, dseq, ts, old
        if stored_n < 0:
            StoredPending.counted += len(dseq)
            stored_n = len(old) + len(dseq) - dseq.count(0)
        self.stored_n = self.n = stored_n
        self._w: dict[int, tuple[int, int] | None] = {}
        self._d: dict[int, tuple[int, int]] | None = None

    def columns(self) -> tuple[int, array[int], array[int], dict[int, tuple[int, int]]] | None:
        """The stored columns (base, delivery seqs + 1, times, the entries below ``base``) when
        nothing was written since (what `encode_consumer_state` packs as they are), else None."""
        return None if self._d is not None or self._w else (self.base, self.dseq, self.ts, self.old)

    def stored(self) -> tuple[int, array[int], array[int], dict[int, tuple[int, int]], dict[int, tuple[int, int] | None]] | None:
        """The stored columns and the writes since (None: the whole dict is the truth)."""
        return None if self._d is not None else (self.base, self.dseq, self.ts, self.old, self._w)

    def _dict(self) -> dict[int, tuple[int, int]]:
        d = self._d
        if d is None:
            d = dict(chain(self.old.items(), column_entries(self.base, self.dseq, self.ts)))
            for seq, entry in self._w.items():
                if entry is None:
                    d.pop(seq, None)
                else:
                    d[seq] = entry
            self._d = d
            StoredPending.materialized += len(d)
        return d

    def __copy__(self) -> StoredPending:
        other = StoredPending(self.base, self.dseq, self.ts, self.old, self.stored_n)
        other.n, other._w = self.n, dict(self._w)
        if self._d is not None:
            other._d = dict(self._d)
        return other

    def __len__(self) -> int:
        return len(self._d) if self._d is not None else self.n

    def _column(self, seq: int) -> tuple[int, int] | None:
        """The stored entry of ``seq`` (None: none)."""
        i = seq - self.base
        if 0 <= i < len(self.dseq):
            d = self.dseq[i]
            return (d - 1, self.ts[i]) if d else None
        return self.old.get(seq)

    def __getitem__(self, seq: int) -> tuple[int, int]:
        if self._d is not None:
            return self._d[seq]
        entry = self._w[seq] if seq in self._w else self._column(seq)
        if entry is None:
            raise KeyError(seq)
        return entry

    def __contains__(self, seq: object) -> bool:
        if self._d is not None:
            return seq in self._d
        if type(seq) is not int:
            return False
        return (self._w[seq] if seq in self._w else self._column(seq)) is not None

    def __iter__(self) -> Iterator[int]:
        if self._d is not None or self._w:
            return iter(self._dict())
        return chain(self.old, compress(range(self.base, self.base + len(self.dseq)), self.dseq))

    def __setitem__(self, seq: int, entry: tuple[int, int]) -> None:
        if self._d is not None:
            self._d[seq] = entry
            return
        if seq not in self:
            self.n += 1
        self._w[seq] = entry

    def __delitem__(self, seq: int) -> None:
        if self._d is not None:
            del self._d[seq]
            return
        if seq not in self:
            raise KeyError(seq)
        self.n -= 1
        self._w[seq] = None

    def drop_run(self, seqs: Sequence[int]) -> bool:
        """``self.pop(seq, None)`` for each of ``seqs``, in C passes, when they are one stretch of
        consecutive sequences (in any order) that nothing was written to since and no entry below
        the stored columns is in (a journal's acks in order): the columns' live slots there are
        the ones gone, each marked so in the writes. False, nothing done, otherwise (one by one)."""
        if self._d is not None or not seqs:
            return False
        lo, hi, w, old = min(seqs), max(seqs), self._w, self.old
        if hi - lo + 1 != len(seqs) or len(set(seqs)) != len(seqs):
            return False
        if (old and next(reversed(old)) >= lo) or not w.keys().isdisjoint(range(lo, hi + 1)):
            return False  # (below the columns only what is not pending: `old` ascends, all below)
        a, b = max(lo - self.base, 0), min(hi - self.base + 1, len(self.dseq))
        if a < b:
            live = list(compress(range(self.base + a, self.base + b), self.dseq[a:b]))
            w.update(zip(live, repeat(None)))
            self.n -= len(live)
        return True

    def add_new(self, seqs: Sequence[int], entries: Sequence[tuple[int, int]]) -> bool:
        """``self[seq] = entry`` for each pair, in C passes, when none of ``seqs`` is here yet:
        all past the stored columns (so neither in them nor in the entries below them) and none
        written since (a journal's first deliveries, `consumer_journal.PackedChanges.apply`).
        False, nothing done, otherwise (the caller sets them one by one)."""
        if len(seqs) != len(entries):
            return False
        if self._d is not None:
            self._d.update(zip(seqs, entries, strict=True))
            return True
        w = self._w
        if not seqs or min(seqs) < self.base + len(self.dseq) or not w.keys().isdisjoint(seqs):
            return False
        before = len(w)
        w.update(zip(seqs, entries, strict=True))
        self.n += len(w) - before  # (a sequence listed twice counts once, as one by one)
        return True


def _pending_map(
    pending: dict[int, tuple[int, int]] | _Columns, npend: int = -1
) -> MutableMapping[int, tuple[int, int]]:
    """A slot's decoded pending acks: a map as it is; columns as `StoredPending` (a dict when
    ``COLUMN_RESTORE`` is off, or the entries below the columns are not below them in order as
    ``PendingArray.old`` keeps them). ``npend``: the count the slot's header keeps (the writer's
    ``len`` of the pending acks, under the slot's CRC), taken as the columns' count when it can
    be one; else they are counted."""
    if isinstance(pending, dict):
        return pending
    base, dseq_b, ts_b, old = pending
    dseq, ts = array("q"), array("q")
    dseq.frombytes(dseq_b)
    ts.frombytes(ts_b)
    if len(dseq) != len(ts):
        raise msgspec.DecodeError("pending columns of unequal lengths")
    if COLUMN_RESTORE and (not old or (next(reversed(old)) < base and list(old) == sorted(old))):
        return StoredPending(base, dseq, ts, old, npend if len(old) <= npend <= len(old) + len(dseq) else -1)
    return dict(chain(old.items(), column_entries(base, dseq, ts)))


class PackedState(msgspec.Struct):
    """A consumer state ready to write: its sequences, and its pending and redelivered maps
    already encoded (``body``, `pack_consumer_state`)."""

    delivered: SequencePair
    ack_floor: SequencePair
    npend: int
    nred: int
    body: bytes

    def unpack(self) -> ConsumerState:
        pending, redelivered = _MAPS_DECODER.decode(self.body)
        return ConsumerState(
            SequencePair(self.delivered.consumer_seq, self.delivered.stream_seq),
            SequencePair(self.ack_floor.consumer_seq, self.ack_floor.stream_seq),
            _pending_map(pending, self.npend),
            redelivered,
        )


def pack_consumer_state(
    delivered: SequencePair,
    ack_floor: SequencePair,
    pending: dict[int, tuple[int, int]],
    redelivered: dict[int, int],
) -> PackedState:
    """The maps in one msgpack call: one C pass over each, ~2 ms for 100,000 pending acks where
    copying the dict alone took as long and the columns of `encode_consumer_state`'s version 2
    (a key list, two value columns, a sort of the redelivery counts) ~15 ms more. A consumer
    packs its live maps in the loop (nothing changes them meanwhile), so nothing is copied."""
    body = _MAPS_ENCODER.encode((pending, redelivered))
    return PackedState(delivered, ack_floor, len(pending), len(redelivered), body)


def pack_consumer_columns(
    delivered: SequencePair,
    ack_floor: SequencePair,
    columns: tuple[int, array[int], array[int], dict[int, tuple[int, int]]],
    npend: int,
    redelivered: dict[int, int],
) -> PackedState:
    """`pack_consumer_state` for pending acks held as columns (``PendingArray``: first sequence,
    delivery sequences + 1, times, the entries below): the columns' bytes as they are (a copy,
    no look at each entry), ~0.5 µs for 1,000 pending acks where making them a dict to pack
    took ~150 µs."""
    base, dseq, ts, old = columns
    body = _MAPS_ENCODER.encode(((base, dseq.tobytes(), ts.tobytes(), old), redelivered))
    return PackedState(delivered, ack_floor, npend, len(redelivered), body)


#: What a state machine holds as its decoded state while its state is packed (`adopt_packed`):
#: never changed nor handed out (``_st`` decodes the packed state into a new one first).
_NO_STATE = ConsumerState()


class _ConsumerStateMachine(ConsumerStoreBase):
    def __init__(self, name: str, ack_policy: str = ACK_EXPLICIT, max_deliver: int = -1) -> None:
        self.name = name
        self._ack_policy = ack_policy
        self._max_deliver = max_deliver
        self._state = ConsumerState()
        # The state as a consumer handed it over (`adopt_packed`), its maps not decoded (None:
        # ``_state`` is the state), and the changes handed over since (`adopt_changes`: the
        # state is the two together; ``_unwritten``: those not in the journal yet).
        self._packed: PackedState | None = None
        self._changes: list[PackedChanges] = []
        self._unwritten: list[PackedChanges] = []
        self._batch_depth = 0
        self._dirty = False
        self.closed = False

    # --- persistence hooks -------------------------------------------------------------
    def _persist(self) -> None:
        """Write the state (file variant)."""

    def _changed(self) -> None:
        self._dirty = True
        if not self._batch_depth:
            self.flush()

    def flush(self) -> None:
        if self._dirty and not self.closed:
            self._persist()
            self._dirty = False

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if not self._batch_depth:
                self.flush()

    def _check(self) -> None:
        if self.closed:
            raise ErrStoreClosed()

    # --- state -------------------------------------------------------------------------
    @property
    def _st(self) -> ConsumerState:
        """The state, its maps decoded first if they arrived packed and its changes applied
        (what an update changes: the next write is then the whole state)."""
        packed = self._packed
        if packed is not None or self._changes:
            st = packed.unpack() if packed is not None else self._state
            for changes in self._changes:
                changes.apply(st)
            self._st = st
        return self._state

    @_st.setter
    def _st(self, state: ConsumerState) -> None:
        self._state = state
        self._packed = None
        if self._changes:  # (new lists only when used: a consumer's every state write comes here)
            self._changes = []
        if self._unwritten:
            self._unwritten = []

    def _sequences(self) -> tuple[SequencePair, SequencePair]:
        """The state's delivered and ack floor, without decoding its maps."""
        last: PackedState | PackedChanges | ConsumerState
        last = self._changes[-1] if self._changes else self._packed or self._state
        return last.delivered, last.ack_floor

    def state(self) -> ConsumerState:
        return self._st.copy()

    def update_config(self, ack_policy: str, max_deliver: int = -1) -> None:
        if ack_policy not in (ACK_NONE, ACK_ALL, ACK_EXPLICIT):
            raise ValueError(f"unknown ack policy {ack_policy!r}")
        self._ack_policy = ack_policy
        self._max_deliver = max_deliver

    def set_starting(self, sseq: int) -> None:
        self._check()
        self._st.delivered.stream_seq = sseq
        if self._ack_policy == ACK_NONE:
            self._st.ack_floor.stream_seq = sseq
        self._changed()

    def reset(self, sseq: int) -> None:
        self._check()
        self._st = ConsumerState()
        self._st.delivered.stream_seq = sseq
        self._st.ack_floor.stream_seq = sseq
        self._changed()

    def update(self, state: ConsumerState) -> None:
        self.adopt(state.copy())

    def adopt(self, state: ConsumerState) -> None:
        """`update`, keeping ``state`` itself (the caller gives it up): a consumer's snapshot of
        100,000 pending acks is not copied again on its way to the file."""
        self._check()
        self._check_sequences(state.delivered, state.ack_floor, state.pending)
        self._st = state
        self._changed()

    def adopt_packed(self, packed: PackedState) -> None:
        """`adopt` for a state already packed (a consumer's `DeliveryState.packed`): kept, and
        written, as it is. Its pending acks are not looked at one by one (what makes packing
        cheap): a consumer's lie within its floor and what it delivered (``DeliveryState``
        leaves out any at or below its floor when it packs, and delivers below ``sseq``)."""
        self._check()
        self._check_sequences(packed.delivered, packed.ack_floor)
        self._st = _NO_STATE  # (no state made per write: ``_packed`` is the state from here on)
        self._packed = packed
        self._changed()

    def adopt_changes(self, changes: PackedChanges) -> None:
        """The changes of a consumer's state since the last one it handed over (its
        `DeliveryState.packed` when few changed): kept on top of it, and appended to the
        journal. Refused where there is no journal following the state (a memory store, or
        a write that failed since the last whole state): the consumer writes its whole state."""
        self._check()
        if not self._journal_ok():
            raise ErrBadConsumerState("no journal follows the consumer state")
        self._check_sequences(changes.delivered, changes.ack_floor)
        self._changes.append(changes)
        self._unwritten.append(changes)
        self._changed()

    def _journal_ok(self) -> bool:
        return False

    def _check_sequences(
        self, delivered: SequencePair, ack_floor: SequencePair, pending: Mapping[int, tuple[int, int]] | None = None
    ) -> None:
        """An update's floor within what it delivered, its ``pending`` acks between them, and
        not behind the state's (``Update``)."""
        if ack_floor.consumer_seq > delivered.consumer_seq:
            raise ErrBadConsumerState("bad ack floor for consumer")
        if ack_floor.stream_seq > delivered.stream_seq:
            raise ErrBadConsumerState("bad ack floor for stream")
        # min/max are two C passes; only a bad entry needs the loop (to name the first one).
        if pending and (min(pending) <= ack_floor.stream_seq or max(pending) > delivered.stream_seq):
            for seq in pending:
                if seq <= ack_floor.stream_seq or seq > delivered.stream_seq:
                    raise ErrBadConsumerState(f"bad pending entry, sequence [{seq}] out of range")
        cur_delivered, cur_floor = self._sequences()
        if delivered.consumer_seq < cur_delivered.consumer_seq or ack_floor.stream_seq < cur_floor.stream_seq:
            raise ErrBadConsumerState("old update ignored")

    def update_delivered(self, dseq: int, sseq: int, dc: int, ts: int) -> None:
        self._check()
        st = self._st
        if dc != 1 and self._ack_policy == ACK_NONE:
            raise ErrNoAckPolicy()
        if dseq <= st.ack_floor.consumer_seq:
            return
        if self._ack_policy != ACK_NONE:
            if sseq <= st.delivered.stream_seq:
                p = st.pending.get(sseq)
                if p is not None:
                    # Keep the original delivery sequence, refresh the delivery time.
                    st.pending[sseq] = (p[0], ts)
            else:
                st.pending[sseq] = (dseq, ts)
            if dseq > st.delivered.consumer_seq:
                st.delivered.consumer_seq = dseq
            if sseq > st.delivered.stream_seq:
                st.delivered.stream_seq = sseq
            if dc > 1:
                if 0 < self._max_deliver < dc:
                    st.pending.pop(sseq, None)
                if st.redelivered.get(sseq, 0) < dc - 1:
                    st.redelivered[sseq] = dc - 1
        else:
            if dseq > st.delivered.consumer_seq:
                st.delivered.consumer_seq = dseq
                st.ack_floor.consumer_seq = dseq
            if sseq > st.delivered.stream_seq:
                st.delivered.stream_seq = sseq
                st.ack_floor.stream_seq = sseq
        self._changed()

    def update_acks(self, dseq: int, sseq: int) -> None:
        self._check()
        st = self._st
        if self._ack_policy == ACK_NONE:
            raise ErrNoAckPolicy()
        if dseq <= st.ack_floor.consumer_seq:
            return
        if sseq not in st.pending:
            if st.redelivered.pop(sseq, None) is not None:
                self._changed()
            raise ErrStoreMsgNotFound()
        if self._ack_policy == ACK_ALL:
            st.ack_floor.consumer_seq = dseq
            st.ack_floor.stream_seq = sseq
            for seq in [s for s in st.pending if s <= sseq]:
                del st.pending[seq]
                st.redelivered.pop(seq, None)
            for seq in [s for s in st.redelivered if s <= sseq]:
                del st.redelivered[seq]
            self._changed()
            return
        # Explicit ack.
        orig_dseq = st.pending.pop(sseq)[0]
        if dseq > orig_dseq > 0:
            dseq = orig_dseq
        if not st.pending:
            st.ack_floor.consumer_seq = st.delivered.consumer_seq
            st.ack_floor.stream_seq = st.delivered.stream_seq
        elif dseq == st.ack_floor.consumer_seq + 1:
            st.ack_floor.consumer_seq = dseq
            st.ack_floor.stream_seq = sseq
            if st.delivered.consumer_seq > dseq:
                # The floor moves up to just below the oldest still-pending message: acks mostly
                # come in order, so probe the next sequence before scanning them all.
                nxt = sseq + 1 if sseq + 1 in st.pending else min(st.pending)
                p_dseq = st.pending[nxt][0]
                if p_dseq > 0:
                    st.ack_floor.consumer_seq = p_dseq - 1
                    st.ack_floor.stream_seq = nxt - 1
        st.redelivered.pop(sseq, None)
        self._changed()

    # --- metadata / lifecycle defaults (memory) ---------------------------------------------
    def has_state(self) -> bool:
        return False


class MemoryConsumerStore(_ConsumerStateMachine):
    """Consumer state in RAM (streams with memory storage)."""

    def __init__(
        self,
        name: str,
        ack_policy: str = ACK_EXPLICIT,
        max_deliver: int = -1,
        on_delete: Callable[[str], object] | None = None,
    ) -> None:
        super().__init__(name, ack_policy, max_deliver)
        self._meta: bytes | None = None
        self._on_delete = on_delete

    def write_meta(self, data: bytes) -> None:
        self._meta = bytes(data)

    def read_meta(self) -> bytes | None:
        return self._meta

    def stop(self) -> None:
        self.closed = True

    def delete(self) -> None:
        self.closed = True
        self._meta = None
        if self._on_delete is not None:
            self._on_delete(self.name)


def encode_consumer_state(st: ConsumerState, generation: int = 0) -> bytes:
    """A state slot (``o.dat``) holding ``st``, from the write's ``generation`` (`encode_packed`);
    pending acks still as their stored columns (`StoredPending`) are packed as columns."""
    pending = st.pending
    cols = pending.columns() if isinstance(pending, StoredPending) else None
    if cols is not None:
        return encode_packed(pack_consumer_columns(st.delivered, st.ack_floor, cols, len(pending), st.redelivered), generation)
    if not isinstance(pending, dict):
        pending = dict(pending)
    return encode_packed(pack_consumer_state(st.delivered, st.ack_floor, pending, st.redelivered), generation)


def encode_packed(p: PackedState, generation: int = 0) -> bytes:
    """A state slot (``o.dat``): the header (with the write's ``generation`` and the body's
    length), the body (the maps, msgpack), then the crc32 of all that."""
    header = _STATE_HDR.pack(
        _STATE_MAGIC,
        _STATE_VERSION,
        p.ack_floor.consumer_seq,
        p.ack_floor.stream_seq,
        p.delivered.consumer_seq,
        p.delivered.stream_seq,
        p.npend,
        p.nred,
        generation,
        len(p.body),
    )
    crc = zlib.crc32(p.body, zlib.crc32(header))
    return b"".join((header, p.body, crc.to_bytes(4, "little")))


def slot_generation(buf: bytes) -> int:
    """The generation a state slot's header names (-1: no header to read; 1: version 1), without
    checking or decoding the rest (`decode_consumer_state_gen` does). Every version from 2 on
    keeps it in the same place (version 3 appends the body's length; 4 has 3's header)."""
    if len(buf) < _STATE_HDR_V2.size or buf[:4] != _STATE_MAGIC:
        return -1
    version = buf[4]
    if version == 1:
        return 1
    if not 2 <= version <= _STATE_VERSION:
        return -1
    return int.from_bytes(buf[_STATE_HDR_V1.size : _STATE_HDR_V2.size], "little")


def decode_consumer_state(buf: bytes) -> ConsumerState:
    return decode_consumer_state_gen(buf)[0]


def decode_consumer_state_gen(buf: bytes) -> tuple[ConsumerState, int]:
    """A state slot's state and generation. Bytes after the record are ignored (a slot is
    rewritten in place, see `FileConsumerStore`); a version-1 ``o.dat`` is generation 1 (the
    slot ``o.dat`` holds the odd ones); versions 1 and 2 (columns) are read as they were written."""
    if len(buf) < _STATE_HDR_V1.size + 4:
        raise ErrBadConsumerState("consumer state file is corrupt")
    magic, version = buf[:4], buf[4]
    if magic != _STATE_MAGIC or version not in (1, 2, 3, _STATE_VERSION):
        raise ErrBadConsumerState("consumer state file has an unknown format")
    hdr = {1: _STATE_HDR_V1, 2: _STATE_HDR_V2}.get(version, _STATE_HDR)
    if len(buf) < hdr.size + 4:
        raise ErrBadConsumerState("consumer state file is corrupt")
    _m, _v, afc, afs, dc, ds, npend, nred, *rest = hdr.unpack_from(buf, 0)
    if version >= 3:
        end = hdr.size + rest[1]
    else:
        end = hdr.size + 8 * (3 * npend + 2 * nred)
    if version == 1 and len(buf) != end + 4:
        raise ErrBadConsumerState("consumer state file is corrupt")
    if len(buf) < end + 4 or zlib.crc32(memoryview(buf)[:end]) != int.from_bytes(buf[end : end + 4], "little"):
        raise ErrBadConsumerState("consumer state file is corrupt")
    gen = rest[0] if rest else 1
    if version >= 3:
        try:
            return PackedState(SequencePair(dc, ds), SequencePair(afc, afs), npend, nred, buf[hdr.size : end]).unpack(), gen
        except (msgspec.DecodeError, ValueError):  # (a crc that checks out over bytes we did not write)
            raise ErrBadConsumerState("consumer state file is corrupt") from None

    def arr(code: str, n: int, off: int) -> tuple[array[int], int]:
        a = array(code)
        a.frombytes(buf[off : off + 8 * n])
        return a, off + 8 * n

    off = hdr.size
    ps, off = arr("Q", npend, off)
    pd, off = arr("Q", npend, off)
    pt, off = arr("q", npend, off)
    rs, off = arr("Q", nred, off)
    rc, off = arr("Q", nred, off)
    state = ConsumerState(
        SequencePair(dc, ds),
        SequencePair(afc, afs),
        {s: (d, t) for s, d, t in zip(ps, pd, pt, strict=True)},
        dict(zip(rs, rc, strict=True)),
    )
    return state, gen


def _slots_error(failed: dict[int, tuple[bool, str]]) -> str | None:
    """Why no slot could be used: the last unreadable slot's error, else the first's that did not
    decode (in slot order)."""
    error: str | None = None
    for i in sorted(failed):
        unreadable, why = failed[i]
        error = why if unreadable else error or why
    return error


def _make_dir(directory: str) -> bool:
    """Create a consumer's directory; whether it is new. One ``mkdir`` for a new consumer (as
    nats-server's ``MkdirAll`` in ``ConsumerStore``), the parents only for a stream's first."""
    try:
        os.mkdir(directory)
    except FileExistsError:
        return False
    except FileNotFoundError:
        os.makedirs(directory, exist_ok=True)
    return True


class FileConsumerStore(_ConsumerStateMachine):
    """Consumer state persisted under ``<stream dir>/obs/<name>/`` (meta.inf, meta.sum, and the
    state in two slots, ``o.dat`` and ``o.dat.b``).

    Durability as nats-server's ``consumerFileStore``: its directory, definition and state are
    fsynced when written only with ``sync: always`` (nats-server: ``MkdirAll`` and
    ``writeFileWithOptionalSync``); otherwise the stream's interval sync (`collect_sync`)
    fsyncs what was written since — where nats-server leaves a consumer's files to the OS.

    Why two slots written in place, where nats-server replaces ``o.dat`` whole: an ack with a
    reply waits for its state write (issue #27), so a write must be cheap — a file replace costs
    ~280 µs of CPU on ext4 (the rename over an existing file starts its writeback), one
    ``pwrite`` ~1 µs. Writing in place can tear (a ``kill -9`` may stop a multi-page write
    between pages; a power cut anywhere), so writes alternate between the slots and each record
    carries a generation and a crc: the newest slot that checks out is the state, and a torn
    write leaves the one before it, which already held every ack confirmed until then.
    """

    STATE_FILE = "o.dat"
    persistent = True
    SLOT_FILES = ("o.dat", "o.dat.b")  # odd generations, even ones (a version-1 o.dat is 1)
    WRITTEN_FILES = (*SLOT_FILES, JOURNAL_FILE)  # what `_pwrite` writes

    def __init__(
        self,
        directory: str,
        name: str,
        sync_always: bool = False,
        ack_policy: str = ACK_EXPLICIT,
        max_deliver: int = -1,
    ) -> None:
        super().__init__(name, ack_policy, max_deliver)
        self.directory = directory
        self._sync_always = sync_always
        self._paths = {name: os.path.join(directory, name) for name in self.WRITTEN_FILES}
        created = _make_dir(directory)
        if created and sync_always:
            fsync_dir(os.path.dirname(directory))
        self._has_state = False
        self._unsynced = False
        # What the next interval sync must fsync besides the state: the new directory's entry
        # in its parent, the definition files.
        self._new_dir = created and not sync_always
        self._meta_unsynced = False
        self._fresh_meta = created  # (no definition written in the directory yet)
        # Why the state file could not be used (corrupt, unknown format, unreadable): the
        # consumer then starts without it, as nats-server's readStoredState ignores the error,
        # so it redelivers rather than loses (issue #15); the caller logs this.
        self.state_error: str | None = None
        self._gen = 0  # the generation of the last state written (or read)
        self._slot_sizes = [0, 0]  # bytes in each slot file
        self._written: set[str] = set()  # slot files written since the last interval sync
        # The journal (`consumer_journal`): records after slot generation ``_gen`` and the bytes
        # they take; not to be appended to (``_jok`` False) after a write failed or before the
        # first whole state is written or read.
        self._jindex = self._jsize = 0
        self._jok = False
        self.decoded = 0  # state slots decoded (a step count: one per restart, two after a torn write)
        if not created:  # (a new directory has no state to read)
            self._load()

    def _load(self) -> None:
        """Take the newest slot that decodes; ``state_error`` only when a slot exists and none
        does (a bad slot beside a good one is a torn write, not damage). The slots are decoded
        newest first by the generation their headers name (`slot_generation`), and the older
        one only when the newer does not decode: both hold a whole state, and decoding both
        doubled a restart's cost of a consumer with many pending acks (~20 ms each at 100,000)."""
        failed: dict[int, tuple[bool, str]] = {}  # slot -> (unreadable, why)
        slots: list[tuple[int, int, bytes]] = []  # (generation named, slot, bytes)
        for i, name in enumerate(self.SLOT_FILES):
            try:
                with open(os.path.join(self.directory, name), "rb") as f:
                    buf = f.read()
            except FileNotFoundError:
                continue
            except OSError as exc:
                failed[i] = (True, f"consumer state file is unreadable: {exc.strerror or exc}")
                continue
            self._slot_sizes[i] = len(buf)
            slots.append((slot_generation(buf), i, buf))
        best: tuple[int, ConsumerState] | None = None
        for _named, i, buf in sorted(slots, key=lambda s: (-s[0], s[1])):
            self.decoded += 1
            try:
                state, gen = decode_consumer_state_gen(buf)
            except ErrBadConsumerState as exc:
                failed[i] = (False, str(exc))
                continue
            best = (gen, state)
            break
        if best is None:
            self.state_error = _slots_error(failed)
            return
        self._gen, state = best
        try:
            with open(os.path.join(self.directory, JOURNAL_FILE), "rb") as f:
                self._jindex, self._jsize = replay(f.read(), self._gen, state)
        except FileNotFoundError:
            pass
        except OSError:  # (unreadable: the slot alone, as after a crash before the appends)
            self._jsize = -1  # (the next whole write cuts the journal)
        self._st = state
        self._jok = self._jsize >= 0
        self._has_state = True

    def _journal_ok(self) -> bool:
        return self._jok

    def has_state(self) -> bool:
        return self._has_state

    def _persist(self) -> None:
        """Append the changes handed over since the last write to the journal, or write the
        whole state; after a failure only a whole state is written (until one succeeds)."""
        ok, self._jok = self._jok, False
        if ok and self._unwritten:
            self._append_changes()
        else:
            self._write_slot()
        self._jok = True

    def _append_changes(self) -> None:
        """One ``pwrite`` of the records at the journal's end (and ``fdatasync`` with
        ``sync: always``)."""
        records = []
        for changes in self._unwritten:
            self._jindex += 1
            records.append(encode_changes(changes, self._gen, self._jindex))
        data = b"".join(records)
        created = self._jsize == 0
        self._pwrite(JOURNAL_FILE, data, self._jsize)
        self._jsize += len(data)
        self._unwritten = []
        self._written_file(JOURNAL_FILE, created)

    def _pwrite(self, name: str, data: bytes, at: int, size: int = -1) -> None:
        """Write ``data`` at ``at`` in file ``name`` (fdatasync'd with ``sync: always``); cut
        the file to ``size`` after (-1: leave its length). The file stays open for the next
        write when written in the event loop (`_fileutil.HotFiles`)."""
        fd, kept = HOT_FILES.fd(self, name, self._paths[name])
        try:
            off = os.pwrite(fd, data, at)
            if off < len(data):
                view = memoryview(data)
                while off < len(data):
                    off += os.pwrite(fd, view[off:], at + off)
            if size >= 0:
                os.ftruncate(fd, size)
            if self._sync_always:
                os.fdatasync(fd)
        except BaseException:
            if kept:
                HOT_FILES.drop(self, (name,))
            raise
        finally:
            if not kept:
                os.close(fd)

    def _written_file(self, name: str, created: bool) -> None:
        """``name`` was written: its directory entry fsynced now when new (``sync: always``),
        else both for the next interval sync."""
        if self._sync_always:
            if created:
                fsync_dir(self.directory)
        else:
            self._written.add(name)
            self._unsynced = True

    def _write_slot(self) -> None:
        """Write the whole state over the older slot: one ``pwrite`` (and ``fdatasync`` with
        ``sync: always``); the slot is cut only when it has grown far past the record. The
        journal is cut after: its records followed the slot before (a torn write of this one
        leaves that one and them)."""
        gen = self._gen + 1
        packed = self._packed if not self._changes else None
        data = encode_packed(packed, gen) if packed is not None else encode_consumer_state(self._st, gen)
        slot = 1 - gen % 2
        name = self.SLOT_FILES[slot]
        size = max(self._slot_sizes[slot], len(data))
        cut = size > len(data) + _SLOT_SLACK
        if cut:
            size = len(data)
        self._pwrite(name, data, 0, size if cut else -1)
        created = self._slot_sizes[slot] == 0
        self._slot_sizes[slot] = size
        self._gen = gen
        self._written_file(name, created)
        if self._jsize:  # (not fsynced: a record of an older generation is never applied)
            with contextlib.suppress(FileNotFoundError):
                os.truncate(os.path.join(self.directory, JOURNAL_FILE), 0)
        self._jindex = self._jsize = 0

    def needs_sync(self) -> bool:
        """Whether something written is not fsynced yet (the stream's sync timer asks)."""
        return self._dirty or self._unsynced or self._meta_unsynced or self._new_dir

    def collect_sync(self, files: list[str], dirs: list[str]) -> None:
        """Flush, and add what an fsync must cover (see FileStore.sync_later): paths, not open
        descriptors — 10,000 consumers created within one sync interval would otherwise hold
        30,000 descriptors at once (EMFILE); a path opened when its turn comes gives the file
        written last, which is at least as new as the one this sync was for."""
        self.flush()
        if self._new_dir:
            dirs.append(os.path.dirname(self.directory))
            self._new_dir = False
        if self._meta_unsynced:
            files.extend(os.path.join(self.directory, name) for name in ("meta.inf", "meta.sum"))
            dirs.append(self.directory)
            self._meta_unsynced = False
        if not self._unsynced:
            return
        files.extend(os.path.join(self.directory, name) for name in sorted(self._written))
        self._written.clear()
        dirs.append(self.directory)
        self._unsynced = False

    def sync(self) -> None:
        """Flush and fsync the state file (for the interval sync policy)."""
        files: list[str] = []
        dirs: list[str] = []
        self.collect_sync(files, dirs)
        fsync_paths(files, dirs)

    def write_meta(self, data: bytes) -> None:
        self._check()
        write_meta_file(self.directory, data, fsync=self._sync_always, fresh=self._fresh_meta)
        self._fresh_meta = False
        self._meta_unsynced = not self._sync_always

    def read_meta(self) -> bytes | None:
        return read_meta_file(self.directory)

    def stop(self) -> None:
        if self.closed:
            return
        self.flush()
        self.closed = True
        HOT_FILES.drop(self, self.WRITTEN_FILES)

    def stream_delete(self) -> None:
        super().stream_delete()
        HOT_FILES.drop(self, self.WRITTEN_FILES)

    def delete(self) -> None:
        """Remove the consumer's files (nats-server ``removeAllWithRetry``, its directory's entry
        fsynced only with ``sync: always``)."""
        self.closed = True
        HOT_FILES.drop(self, self.WRITTEN_FILES)
        # Deferred: shutil imports bz2 and lzma (~1.5 ms of every start that recovers a consumer).
        import shutil

        shutil.rmtree(self.directory, ignore_errors=True)
        if self._sync_always:
            with contextlib.suppress(FileNotFoundError):
                fsync_dir(os.path.dirname(self.directory))
