"""A consumer's pending acks as arrays indexed by stream sequence, not a dict of tuples.

nats-server keeps ``o.pending`` as a Go map of sequence → ``*Pending``; a Python dict of
sequence → (delivery seq, time) tuples costs three heap objects per pending ack (the tuple, its
delivery-sequence int, the key), and with 100,000 pending a random ack's ``pop`` and a delivery's
insert each touch several cache lines in ~15 MB (issue 24, dimension 5: the ack + next delivery
grew 1.7–2× from 1,000 to 100,000 pending, mostly that memory traffic).

First deliveries come in ascending stream sequence, mostly without gaps, so `PendingArray`
keeps two ``array("q")`` columns — the first delivery's sequence (+1, 0: not pending) and the
delivery time — where slot ``i`` is stream sequence ``base + i``. An ack clears one slot, a
delivery run extends both columns in one C call; nothing is allocated per entry. What the
columns cannot hold densely goes to a small dict, ``old`` (every key below ``base``):

- a run that starts far past the end (a filtered consumer's sparse matches) moves the live
  slots there and starts the columns over at the run;
- once the columns are less than half live (old stragglers held while newer ones are acked),
  the sparse prefix moves there and is cut off.

So the columns hold at most about twice their live slots plus 1,024, each slot is moved or cut
once (amortized O(1) per delivery) and every operation is O(1) whatever the number pending.
It is a ``MutableMapping`` with the dict's order (ascending sequence, which is delivery order:
what `DeliveryState` relied on), so general code reads it as it read the dict; the hot paths
(`DeliveryState.ack`, the delivery loop's runs) use `take`, `add_run` and ``n``.
"""

from __future__ import annotations

import operator
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from itertools import chain, compress, repeat
from typing import TypeGuard, cast

from pyjetstream.server.jetstream.store.consumer_store import StoredPending, column_entries

__all__ = ["PendingArray"]

Entry = tuple[int, int]
_TIME = operator.itemgetter(1)

# A run starting more than this many slots (and more than the columns' length) past the end
# starts the columns over (see the module docstring); the slack in the density rule too.
SLACK = 1024
# Whether a restore fills the columns in C passes (`PendingArray._fill`) where they come out dense,
# rather than one entry at a time: the switch of that fast path (tests/jetstream/test_pending_map.py
# proves both equal).
BULK_FILL = True
# Whether `PendingArray.live` answers columns with no acked slot and nothing below them as a
# ``range`` and a copy of the times (the switch of that fast path; test_pending_map.py proves both equal).
RANGE_LIVE = True
# Whether a restore's writes replayed on the stored columns (a journal's, after a crash) that are
# acks of one stretch and first deliveries of one stretch past the columns' end go in by C passes
# (`PendingArray._extend_writes`) rather than one ``take`` or ``__setitem__`` each: the switch of
# that fast path (tests/store/test_journal_replay.py proves both restore the same state).
BULK_WRITES = True


class PendingArray(MutableMapping[int, Entry]):
    """Stream sequence → (delivery sequence of the first delivery, delivery time ns)."""

    __slots__ = ("_lo", "base", "dseq", "n", "old", "steps", "ts")

    def __init__(self, entries: Mapping[int, Entry] | None = None) -> None:
        self.base = 0  # the stream sequence of slot 0
        self.dseq = array("q")  # the delivery sequence + 1 (0: not pending)
        self.ts = array("q")  # the delivery time
        self.old: dict[int, Entry] = {}  # entries below ``base``, ascending
        self.n = 0  # live entries, columns and ``old``
        self._lo = 0  # no live slot below this one
        self.steps = 0  # slots moved or cut (the step counter of the complexity tests)
        if entries:
            self._fill(entries)

    def _fill(self, entries: Mapping[int, Entry]) -> None:
        """The entries of a restore (``DeliveryState.restore``: the stored state). Where the
        columns come out dense enough to need no dict (the span from the first to the last at
        most twice the entries, plus ``SLACK``), they are made at once — in C passes without a
        gap, else written into zeroed columns in one plain loop; one ``__setitem__`` each,
        100,000 pending acks took ~40-50 ms of a restart (nats-server's whole restart is ~0.4 µs
        a pending ack) —; else one by one as they would have been delivered. A state slot's
        stored columns (`StoredPending`, the fast path of ``consumer_store.COLUMN_RESTORE``) are
        taken as they are: a copy of each column, no entry looked at, then the writes made on
        them since (a journal's replay) one by one."""
        stored = entries.stored() if isinstance(entries, StoredPending) else None
        if stored is not None:
            base, dseq, ts, old, writes = stored
            self.base, self.dseq, self.ts, self.old = base, dseq[:], ts[:], dict(old)
            self.n = cast(StoredPending, entries).stored_n  # (counted when the slot was decoded)
            if BULK_WRITES and writes and self._extend_writes(writes):
                return
            for seq in sorted(writes):  # (a journal replayed after the slot: what changed since)
                entry = writes[seq]
                if entry is None:
                    self.take(seq)
                else:
                    self[seq] = entry
            return
        keys = sorted(entries)
        base, n = keys[0], len(keys)
        span = keys[-1] - base + 1
        if not BULK_FILL or span > 2 * n + SLACK:
            for seq in keys:
                self[seq] = entries[seq]
            return
        values = list(map(entries.__getitem__, keys))
        dseqs = map(operator.add, map(operator.itemgetter(0), values), repeat(1))
        times = map(operator.itemgetter(1), values)
        if span == n:  # (no gap: the columns are the values as they are)
            self.dseq, self.ts = array("q", dseqs), array("q", times)
        else:  # (gaps: zero slots, the entries written over them)
            dseq, ts = array("q", bytes(8 * span)), array("q", bytes(8 * span))
            for i, d, t in zip(map(operator.sub, keys, repeat(base)), dseqs, times, strict=True):
                dseq[i] = d
                ts[i] = t
            self.dseq, self.ts = dseq, ts
        self.base, self.n = base, n

    def _extend_writes(self, writes: Mapping[int, Entry | None]) -> bool:
        """`_fill`'s writes (seq → entry, None: gone) in C passes when they are acks of every live
        slot between the first and the last of them, from the columns' base on (None), and first deliveries
        of one stretch at or past the columns' end above them (entries), either or both: the
        acked slots zeroed by one slice assignment (as ``take`` zeroes each), then what `_append`
        would make of each first delivery in turn (the columns started over when nothing is
        pending, a gap before them zero slots) by one ``extend`` per column, as `add_run` does.
        A crash after a burst of deliveries or of acks leaves one such write per pending ack,
        ~10 trace events each one by one. False, nothing changed, for any other shape (replayed
        one by one, ascending)."""
        gone = sorted(compress(writes, map(operator.is_, writes.values(), repeat(None))))  # (acked)
        keys = sorted(compress(writes, map(operator.is_not, writes.values(), repeat(None))))
        if gone and keys and gone[-1] > keys[0]:
            return False
        dseq = self.dseq
        live, a, b = 0, 0, 0
        if gone:  # (the live slots from the first to the last of them within the columns: all gone)
            lo, end = gone[0], self.base + len(dseq)
            if lo < self.base:
                return False
            a, b = lo - self.base, min(gone[-1] + 1, end) - self.base
            if a < b:
                if list(compress(range(lo, lo + b - a), dseq[a:b])) != gone[: bisect_left(gone, end)]:
                    return False
                live = b - a - dseq[a:b].count(0)
        n = self.n - live
        if keys:
            k, first = len(keys), keys[0]
            gap = first - self.base - len(dseq)
            if keys[-1] - first + 1 != k or gap < 0:
                return False
            if (n or not gap) and gap > 1 and (not dseq or (gap > SLACK and gap > len(dseq))):
                return False  # (sparse: into ``old``, `_append`'s own way)
        if live:
            dseq[a:b] = array("q", bytes(8 * (b - a)))
            self.n = n
        if keys:
            self._extend(keys, writes)
        return True

    def _extend(self, keys: list[int], writes: Mapping[int, Entry | None]) -> None:
        """`_extend_writes`' first deliveries, checked there: one stretch at or past the end."""
        dseq, first = self.dseq, keys[0]
        gap = first - self.base - len(dseq)
        if not self.n and gap:
            self.reset()
            self.base, gap = first, 0
        dseq, ts = self.dseq, self.ts
        if gap:
            zeros = array("q", bytes(8 * gap))
            dseq.extend(zeros)
            ts.extend(zeros)
        values = cast(list[Entry], list(map(writes.__getitem__, keys)))  # (no None: checked there)
        dseq.extend(map(operator.add, map(operator.itemgetter(0), values), repeat(1)))
        ts.extend(map(_TIME, values))
        self.n += len(keys)
        if len(dseq) > 2 * (self.n - len(self.old)) + SLACK:
            self._shed()

    # --- the mapping ----------------------------------------------------------------------------

    def __len__(self) -> int:
        return self.n

    def __contains__(self, seq: object) -> bool:
        if type(seq) is not int:
            return False
        i = seq - self.base
        if 0 <= i < len(self.dseq):
            return self.dseq[i] != 0
        return seq in self.old

    def __getitem__(self, seq: int) -> Entry:
        i = seq - self.base
        if 0 <= i < len(self.dseq):
            d = self.dseq[i]
            if d:
                return d - 1, self.ts[i]
            raise KeyError(seq)
        return self.old[seq]

    def get(self, seq: int, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        i = seq - self.base
        if 0 <= i < len(self.dseq):
            d = self.dseq[i]
            return (d - 1, self.ts[i]) if d else default
        return self.old.get(seq, default)

    def __setitem__(self, seq: int, entry: Entry) -> None:
        i = seq - self.base
        dseq = self.dseq
        if 0 <= i < len(dseq):
            if not dseq[i]:
                self.n += 1
                if i < self._lo:
                    self._lo = i
            dseq[i], self.ts[i] = entry[0] + 1, entry[1]
        elif i >= len(dseq) or not self.n:
            self._append(seq, entry[0], entry[1])
        else:  # below the columns: kept in ``old`` (a dict keeps its order: rebuilt sorted)
            old = self.old
            if seq not in old:
                self.n += 1
                if old and seq < next(reversed(old)):
                    old[seq] = entry
                    self.old = dict(sorted(old.items()))
                    return
            old[seq] = entry

    def __delitem__(self, seq: int) -> None:
        if self.take(seq) is None:
            raise KeyError(seq)

    def pop(self, seq: int, *default: Entry | None) -> Entry | None:  # type: ignore[override]
        p = self.take(seq)
        if p is None:
            if default:
                return default[0]
            raise KeyError(seq)
        return p

    def take(self, seq: int) -> Entry | None:
        """Remove ``seq``: its entry, None if it was not pending (``pop(seq, None)``)."""
        i = seq - self.base
        dseq = self.dseq
        if 0 <= i < len(dseq):
            d = dseq[i]
            if not d:
                return None
            dseq[i] = 0
            self.n -= 1  # (emptied: the zero slots stay until the next run, `add_run`)
            return d - 1, self.ts[i]
        old = self.old
        if seq not in old:
            return None
        self.n -= 1
        return old.pop(seq)

    def __iter__(self) -> Iterator[int]:
        return chain(list(self.old), compress(range(self.base, self.base + len(self.dseq)), self.dseq))

    def entries(self) -> Iterator[tuple[int, Entry]]:
        """``items()`` without a look-up per key: (seq, entry), ascending; C iterators only, no
        Python step per entry."""
        return chain(list(self.old.items()), column_entries(self.base, self.dseq, self.ts))

    def live(self) -> tuple[Sequence[int], array[int]]:
        """The pending sequences, ascending, and their delivery times: C passes over the columns
        (what `PendingIndex.rebuild` orders); columns with no slot acked and nothing below them
        (a restart after deliveries nobody acked yet) are a ``range`` and a copy of the times
        (~10 ms less at 100,000 than an array made from an iterator)."""
        dseq, old = self.dseq, self.old
        if RANGE_LIVE and not old and self.n == len(dseq):
            return range(self.base, self.base + len(dseq)), self.ts[:]
        seqs = array("q", chain(old, compress(range(self.base, self.base + len(dseq)), dseq)))
        times = array("q", chain(map(_TIME, old.values()), compress(self.ts, dseq)))
        return seqs, times

    def columns(self) -> tuple[int, array[int], array[int], dict[int, Entry]]:
        """What the whole state write packs as it is (`pack_consumer_columns`): the first
        sequence, the columns from the first live slot, the entries below."""
        lo = self._first_slot()
        if not lo:
            return self.base, self.dseq, self.ts, self.old
        return self.base + lo, self.dseq[lo:], self.ts[lo:], self.old

    def to_dict(self) -> dict[int, Entry]:
        """The entries as a dict, ascending (what the whole state write packs)."""
        return dict(self.entries())

    def reset(self) -> None:
        """Nothing is pending any more: the columns emptied in place (no new objects: a consumer
        whose acks keep up empties them at every ack)."""
        del self.dseq[:]
        del self.ts[:]
        if self.old:
            self.old = {}
        self.n = self._lo = 0

    def clear(self) -> None:
        self.base = 0
        self.dseq = array("q")
        self.ts = array("q")
        self.old = {}
        self.n = self._lo = 0

    def first(self) -> int:
        """The lowest pending sequence (0: none)."""
        if self.old:
            return next(iter(self.old))
        i = self._first_slot()
        return self.base + i if i < len(self.dseq) else 0

    def _first_slot(self) -> int:
        """The columns' first live slot (their length: none); the cursor moves past what it
        walked, once."""
        i = self._next_live(self._lo, len(self.dseq))
        self.steps += i - self._lo
        self._lo = i
        return i

    def restamp(self, seqs: Iterable[int], ts: int) -> list[int]:
        """Redeliveries ``seqs`` went out at ``ts``: those still pending get that time (their
        first delivery's sequence kept); returns them, in order."""
        base, dseq, times = self.base, self.dseq, self.ts
        end = len(dseq)
        again: list[int] = []
        for seq in seqs:
            i = seq - base
            if 0 <= i < end:
                if dseq[i]:
                    times[i] = ts
                    again.append(seq)
            elif seq in self.old:
                self.old[seq] = (self.old[seq][0], ts)
                again.append(seq)
        return again

    def live_from(self, seqs: Sequence[int], i: int) -> int:
        """The index of the first pending sequence of ``seqs[i:]`` (ascending; ``len(seqs)``:
        none). A ``range`` inside the columns is searched a chunk at a time in C (the floor
        cursor's walk over what was acked: no Python step per acked slot)."""
        n = len(seqs)
        if i < n and self._spans(seqs):
            off = seqs.start - self.base
            return self._next_live(off + i, off + n) - off
        while i < n and seqs[i] not in self:
            i += 1
        return i

    def live_of(self, seqs: Sequence[int], i: int, j: int) -> list[int]:
        """The pending sequences of ``seqs[i:j]`` (ascending), in order; a ``range`` inside the
        columns in C."""
        if i >= j:
            return []
        if self._spans(seqs):
            base = self.base
            a, b = seqs.start - base + i, seqs.start - base + j
            return list(compress(range(base + a, base + b), self.dseq[a:b]))
        return [s for s in seqs[i:j] if s in self]

    def _spans(self, seqs: Sequence[int]) -> TypeGuard[range]:
        """Whether ``seqs`` is a ``range`` of step 1 inside the columns (read from slices of them)."""
        return (
            type(seqs) is range
            and seqs.step == 1
            and seqs.start >= self.base
            and seqs.stop <= self.base + len(self.dseq)
        )

    def _next_live(self, a: int, b: int) -> int:
        """The first live slot of the columns in ``[a, b)`` (``b``: none)."""
        dseq = self.dseq
        if a < b and dseq[a]:
            return a
        while a < b:
            chunk = dseq[a : min(a + 256, b)]
            k = next(compress(range(len(chunk)), chunk), -1)
            if k >= 0:
                return a + k
            a += len(chunk)
        return b

    def run_values(self, seqs: Sequence[int]) -> list[Entry | None]:
        """The entries of ``seqs`` (None: not pending), as ``list(map(self.get, seqs))``; a
        ``range`` inside the columns (a run of first deliveries) is read from slices of them,
        C calls but for the slots acked since."""
        if not self._spans(seqs):
            return list(map(self.get, seqs))
        base, dseq = self.base, self.dseq
        i, j = seqs.start - base, seqs.stop - base
        live = dseq[i:j]
        values: list[Entry | None] = list(zip(map(operator.sub, live, repeat(1)), self.ts[i:j], strict=True))
        for k in compress(range(j - i), map(operator.not_, live)):
            values[k] = None
        return values

    # --- first deliveries -----------------------------------------------------------------------

    def add_run(self, seqs: Sequence[int], dseq: int, ts: int) -> None:
        """First deliveries ``seqs`` (ascending, above every pending sequence) at ``ts``, their
        delivery sequences ``dseq``, ``dseq + 1``, ...: a ``range`` adjoining the columns'
        end goes in with one C call per column."""
        cols = self.dseq
        if type(seqs) is range and seqs.start == self.base + len(cols) and seqs.step == 1:
            k = len(seqs)  # (with nothing pending too: the columns go on after their zero slots)
            if k == 1:
                cols.append(dseq + 1)
                self.ts.append(ts)
            else:
                cols.extend(range(dseq + 1, dseq + 1 + k))
                self.ts.extend(array("q", (ts,)) * k)
            n = self.n = self.n + k
            if len(cols) > 2 * (n - len(self.old)) + SLACK:
                self._shed()
            return
        if len(seqs) < 2 or seqs[-1] - seqs[0] + 1 <= 2 * len(seqs):
            append = self._append  # (each past the columns' end: first deliveries)
            for seq in seqs:
                append(seq, dseq, ts)
                dseq += 1
            return
        # A sparse run (a filtered consumer's matches far apart): into ``old`` in one C call,
        # the columns (moved there first) starting after it.
        if not self.n:
            self.reset()
        elif self.dseq:
            self._move_old(len(self.dseq))
        if seqs[0] < self.base:  # (below what is pending: one by one, kept in order)
            for seq in seqs:
                self[seq] = (dseq, ts)
                dseq += 1
            return
        k = len(seqs)
        self.old.update(zip(seqs, zip(range(dseq, dseq + k), repeat(ts)), strict=False))
        self.n += k
        self.base = seqs[-1] + 1

    def _append(self, seq: int, d: int, ts: int) -> None:
        """A new entry at or past the columns' end (or the first one)."""
        dseq = self.dseq
        gap = seq - self.base - len(dseq)
        if not self.n and gap:  # (nothing pending: the columns start over, else go on)
            self.reset()
            self.base, gap = seq, 0
        if gap > 1 and (not dseq or (gap > SLACK and gap > len(dseq))):
            # sparse (no columns, or far past them): into ``old``, the columns starting after it
            if dseq:
                self._move_old(len(dseq))
            self.old[seq] = (d, ts)
            self.n += 1
            self.base = seq + 1
            return
        elif gap:
            zeros = array("q", bytes(8 * gap))
            dseq.extend(zeros)
            self.ts.extend(zeros)
        dseq.append(d + 1)
        self.ts.append(ts)
        self.n += 1
        if len(dseq) > 2 * (self.n - len(self.old)) + SLACK:
            self._shed()

    def _shed(self) -> None:
        """The columns are less than half live: move the sparse prefix's live slots to ``old``
        until the rest is at least about half live, and cut the prefix off."""
        dseq = self.dseq
        end, live, cut = len(dseq), self.n - len(self.old), self._first_slot()
        while cut < end and end - cut > 2 * live + SLACK // 2:  # (a chunk at a time: C counts)
            step = min(max((end - cut - 2 * live) // 2, 1), 256, end - cut)
            live -= step - dseq[cut : cut + step].count(0)
            cut += step
        if 8 * live < end - cut:  # (what is left is sparse too: a filtered consumer's far apart
            cut = end  # matches; they go to ``old`` and so do the next ones, `_append`)
        self._move_old(cut)

    def _move_old(self, cut: int) -> None:
        """Move the live slots below ``cut`` to ``old`` and drop those slots."""
        dseq, ts, base, old = self.dseq, self.ts, self.base, self.old
        self.steps += cut
        for i in compress(range(cut), dseq[:cut]):
            old[base + i] = (dseq[i] - 1, ts[i])
        del dseq[:cut]
        del ts[:cut]
        self.base = base + cut
        self._lo = 0
