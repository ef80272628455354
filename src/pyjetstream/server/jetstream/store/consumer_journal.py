"""A consumer state's journal (``o.jnl``): the changes written since its last whole state.

Why: a consumer with 100,000 pending acks and acks flowing wrote its whole state every 100 ms
(nats-server's ``flushLoop`` does too, ``encodeConsumerState``) — a C pass over every pending
ack, but each one a few cache misses in a dict of that size: ~10 ms a write in the server, ~5%
of its CPU. While what changed since the last write is fewer entries than the state holds, a
write is those changes (`PackedChanges`, ``DeliveryState.packed``): the entries of the sequences
whose pending ack or redelivery count changed — as they are now, or their absence — and the
floors, appended here. The whole state is written again (a slot, ``FileConsumerStore``) once
the changes written since add up to the entries it holds, so a write costs O(changes)
amortized whatever the number pending.

A record: header (`_HDR`: magic, version, the generation of the slot it follows, its index
from 1, the floors, the number of changes, the body's length), the body (msgpack: sequences,
their pending entries or None, their redelivery counts or None), crc32 of both. A restart
takes the newest valid slot and applies the records that follow that generation, in order,
up to the first that does not check out (a torn append, or one left from before that slot).
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections import deque
from collections.abc import Mapping, MutableMapping, Sequence
from itertools import repeat

import msgspec

from .base import ConsumerState, SequencePair

__all__ = ["JOURNAL_FILE", "PackedChanges", "encode_changes", "pack_consumer_changes", "replay"]

JOURNAL_FILE = "o.jnl"
_MAGIC = b"PJSJ"
_VERSION = 4
# magic, version, pad, base generation, index, ack floor (consumer, stream), delivered (consumer,
# stream), #changes, body length
_HDR = struct.Struct("<4sB3xQQQQQQQQ")
# Whether a replayed record's first deliveries go into the pending map in one call where they can
# (none of them pending yet, all past the stored columns: `StoredPending.add_new`; a dict's
# ``update``) rather than one ``__setitem__`` each: the switch of that fast path
# (tests/store/test_journal_replay.py proves both restore the same state).
BULK_FIRSTS = True
# Whether a replayed record's sequences gone for good leave the maps in C passes where they can (a
# dict's ``pop`` mapped over them; one stretch of the stored columns: `StoredPending.drop_run`)
# rather than two ``pop`` calls each: the switch of that fast path (test_journal_replay.py too).
BULK_GONE = True
_ENCODER = msgspec.msgpack.Encoder()
# (gone, changed sequences, their entries, their counts, first deliveries, their entries): the
# sequences as arrays of int64 (bytes)
_DECODER = msgspec.msgpack.Decoder(
    tuple[bytes, bytes, list[tuple[int, int] | None], list[int | None] | None, bytes, list[tuple[int, int] | None]]
)


def _seqs(data: bytes) -> array[int]:
    a = array("Q")
    a.frombytes(data)
    return a


class PackedChanges(msgspec.Struct):
    """A consumer's changes since its last write, ready to append: the floors, and the entries
    of the sequences that changed (``body``, `pack_consumer_changes`)."""

    delivered: SequencePair
    ack_floor: SequencePair
    nchg: int
    body: bytes

    def apply(self, st: ConsumerState) -> None:
        """Bring ``st`` (the state these changes follow) up to date: the sequences gone leave
        both maps, then each changed one takes its entry and count as written (None: none), and
        each first delivery its entry (it has no count)."""
        gone_b, seqs_b, entries, counts, firsts_b, first_entries = _DECODER.decode(self.body)
        gone, seqs, firsts = _seqs(gone_b), _seqs(seqs_b), _seqs(firsts_b)
        pending, redelivered = st.pending, st.redelivered
        if not (BULK_GONE and _drop_gone(pending, redelivered, gone)):
            for seq in gone:
                pending.pop(seq, None)
                redelivered.pop(seq, None)
        if not (BULK_FIRSTS and _add_firsts(pending, firsts, first_entries)):
            for seq, entry in zip(firsts, first_entries, strict=True):
                if entry is None:
                    pending.pop(seq, None)
                else:
                    pending[seq] = entry
        for seq, entry, count in zip(seqs, entries, counts or [None] * len(seqs), strict=True):
            if entry is None:
                pending.pop(seq, None)
            else:
                pending[seq] = entry
            if count is None:
                redelivered.pop(seq, None)
            else:
                redelivered[seq] = count
        st.delivered = SequencePair(self.delivered.consumer_seq, self.delivered.stream_seq)
        st.ack_floor = SequencePair(self.ack_floor.consumer_seq, self.ack_floor.stream_seq)


def _drop_gone(pending: MutableMapping[int, tuple[int, int]], redelivered: dict[int, int], gone: array[int]) -> bool:
    """`PackedChanges.apply`'s sequences gone for good in C passes: ``pop(seq, None)`` mapped over
    them for a dict, `StoredPending.drop_run` for a slot's stored columns when it can (a crash
    while acks flow leaves up to one such entry per pending ack in the journal). False, nothing
    done, for the caller's one by one (the same end state)."""
    if not gone:
        return True
    if type(pending) is dict:
        deque(map(pending.pop, gone, repeat(None)), maxlen=0)
    else:
        drop_run = getattr(pending, "drop_run", None)
        if drop_run is None or not drop_run(gone):
            return False
    if type(redelivered) is dict:
        deque(map(redelivered.pop, gone, repeat(None)), maxlen=0)
    else:
        for seq in gone:
            redelivered.pop(seq, None)
    return True


def _add_firsts(pending: MutableMapping[int, tuple[int, int]], seqs: array[int], entries: list[tuple[int, int] | None]) -> bool:
    """`PackedChanges.apply`'s first deliveries in one C pass, when every one has an entry: into
    a dict by ``update``, into a slot's stored columns by `add_new` when it can take them so (a
    crash after a burst of deliveries leaves ~one such entry per pending ack in the journal: one
    ``__setitem__`` each made a restart with 60,000 of them ~25x a clean one's consumer
    restore). False, nothing done, for the caller's one by one (the same end state)."""
    if len(seqs) != len(entries) or None in entries:
        return False
    if type(pending) is dict:
        pending.update(zip(seqs, entries, strict=True))
        return True
    add_new = getattr(pending, "add_new", None)
    return add_new is not None and bool(add_new(seqs, entries))


def pack_consumer_changes(
    delivered: SequencePair,
    ack_floor: SequencePair,
    seqs: Sequence[int],
    gone: Sequence[int],
    pending: Mapping[int, tuple[int, int]],
    redelivered: dict[int, int],
    firsts: Sequence[int] = (),
    first_values: list[tuple[int, int] | None] | None = None,
) -> PackedChanges:
    """The sequences ``gone`` for good (acked, dropped: written as they are, nothing looked up),
    the entries of ``seqs`` as the maps hold them now and those of the first deliveries
    ``firsts`` as ``pending`` holds them (no redelivery count yet: a count set since is in
    ``seqs``), applied after ``gone`` (one gone and then delivered — an ack run ahead — is
    looked up; ``first_values``: their entries already looked up), in one msgpack call: C
    passes (``map`` of the maps' ``get``), no Python per entry. A sequence listed twice is written twice, the same entry each time (applying it
    again changes nothing)."""
    counts = list(map(redelivered.get, seqs)) if redelivered else None
    body = _ENCODER.encode(
        (
            _bytes(gone),
            _bytes(seqs),
            list(map(pending.get, seqs)),
            counts,
            _bytes(firsts),
            list(map(pending.get, firsts)) if first_values is None else first_values,
        )
    )
    return PackedChanges(delivered, ack_floor, len(seqs) + len(gone) + len(firsts), body)


def _bytes(seqs: Sequence[int]) -> bytes:
    """Sequences as int64 bytes (an array's own, else copied into one)."""
    return (seqs if isinstance(seqs, array) else array("Q", seqs)).tobytes()


def encode_changes(c: PackedChanges, base: int, index: int) -> bytes:
    """A journal record: ``c`` following slot generation ``base``, the ``index``-th since."""
    header = _HDR.pack(
        _MAGIC,
        _VERSION,
        base,
        index,
        c.ack_floor.consumer_seq,
        c.ack_floor.stream_seq,
        c.delivered.consumer_seq,
        c.delivered.stream_seq,
        c.nchg,
        len(c.body),
    )
    crc = zlib.crc32(c.body, zlib.crc32(header))
    return b"".join((header, c.body, crc.to_bytes(4, "little")))


def replay(buf: bytes, base: int, st: ConsumerState) -> tuple[int, int]:
    """Apply to ``st`` (slot generation ``base``'s state) the records of ``buf`` that follow it,
    in order; stop at the first that does not (another base, an index out of turn, a bad crc,
    a cut). Returns (records applied, the offset after the last one: where the next goes)."""
    off = index = 0
    view = memoryview(buf)
    while off + _HDR.size + 4 <= len(buf):
        magic, version, rbase, rindex, afc, afs, dc, ds, nchg, blen = _HDR.unpack_from(buf, off)
        end = off + _HDR.size + blen
        if magic != _MAGIC or version != _VERSION or rbase != base or rindex != index + 1 or end + 4 > len(buf):
            break
        if zlib.crc32(view[off:end]) != int.from_bytes(buf[end : end + 4], "little"):
            break
        changes = PackedChanges(SequencePair(dc, ds), SequencePair(afc, afs), nchg, bytes(view[off + _HDR.size : end]))
        try:
            changes.apply(st)
        except msgspec.DecodeError:  # (a crc that checks out over bytes we did not write)
            break
        index, off = rindex, end + 4
    return index, off
