"""The order of a consumer's pending acks, by stream sequence and by deadline.

A consumer's pending acks are a map (stream seq → (delivery seq, delivery time), a
`PendingArray`): that is what
acks, NAKs and the persisted state need. Two questions need an order as well, and answering them
by walking the dict makes their cost grow with the number of pending acks — nats-server's
``checkPending`` walks every pending ack each time its timer fires, and its ``moveAckFloor`` walks
the stream sequences above the floor:

- the ack-wait timer: which pending acks are due now, and when is the next one due;
- the ack floor: which pending message is the oldest once the oldest is acked (and, for AckAll or a
  purge, which are at or below a sequence).

`PendingIndex` keeps both orders beside the dict, with the dict as the one truth (an entry
here whose message is no longer pending, or was stamped again since, is skipped when it comes up):

- first deliveries come in ascending stream sequence and a whole delivery pass shares one
  timestamp, so they are recorded per pass run — ``(time, sequences)``, a ``range`` when the run's
  sequences follow each other, else an ``array`` — in one deque for the timer (popped when their
  ack wait has passed) and one for the floor (walked by a cursor that only moves forward);
- a run of redeliveries shares its pass's timestamp too: without ``backoff`` (every delivery then
  waits the same ack wait) it is one more timeline entry, a ``list`` of its sequences in the order
  they went out; with ``backoff`` each goes into the heap, by its own deadline;
- a delivery stamped again on its own (``+WPI``, ``-NAK`` with a delay) goes into a heap by deadline.

So an ack, a NAK, a redelivery, a floor move and each expiry cost O(1) amortized or O(log n),
whatever the number pending. Both deques are cleared when nothing is pending and rebuilt from the
dict when they hold more runs than there are pending acks (a floor held back by one message, a long
ack wait), or more redeliveries than twice the pending acks (the same messages NAKed again and again
within one ack wait), which bounds their memory by the pending acks.

``steps`` counts the entries looked at (the step counter the complexity tests read).
"""

from __future__ import annotations

import heapq
import operator
from array import array
from bisect import bisect_right
from collections import deque
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any

from pyjetstream.server.jetstream.pending_map import PendingArray

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.delivery_state import DeliveryState

__all__ = ["PendingIndex", "run_seqs", "seqs_of"]

Pending = Mapping[int, tuple[int, int]]  # (a `PendingArray`; a dict in tests)

# Whether a rebuild where every pending ack waits the same (no backoff, or nothing redelivered
# yet) makes the heap and the floor order from the `PendingArray`'s columns in C passes, rather
# than one Python step per pending ack: the switch of that fast path (tests/jetstream/
# test_pending_map.py proves both equal). A restart with 100,000 pending acks spent ~25 ms there.
COLUMN_REBUILD = True
# Whether such a rebuild (no backoff step in play) whose delivery times never go down along the
# sequences puts them back as timeline runs (`_time_runs`) rather than into the heap: the switch of
# that fast path (test_pending_map.py's test_a_rebuild_into_time_runs_is_due_as_the_heap).
TIME_RUNS = True


def run_seqs(run: Sequence[tuple[Any, ...]], i: int, j: int) -> Sequence[int]:
    """The stream sequences of the first deliveries ``run[i:j]`` (store tuples, the sequence
    second): a ``range`` when they follow each other, else an ``array``."""
    first, last = run[i][1], run[j - 1][1]
    if last - first == j - i - 1:
        return range(first, last + 1)
    return array("q", map(_SEQ, run[i:j]))


def seqs_of(seqs: list[int]) -> Sequence[int]:
    """``seqs`` (ascending) as a ``range`` when they follow each other, else an ``array``."""
    if seqs[-1] - seqs[0] == len(seqs) - 1:
        return range(seqs[0], seqs[-1] + 1)
    return array("q", seqs)


_SEQ = operator.itemgetter(1)


class PendingIndex:
    """The pending acks of one consumer in delivery order (floor) and deadline order (timer)."""

    __slots__ = ("_again", "_heap", "_order", "_pos", "_timeline", "backoff", "steps", "wait")

    def __init__(self, wait: int, backoff: list[int]) -> None:
        self.wait = wait  # the ack wait (ns)
        self.backoff = backoff
        self._timeline: deque[tuple[int, Sequence[int]]] = deque()  # (first delivery time, seqs)
        self._order: deque[Sequence[int]] = deque()  # first deliveries, ascending
        self._pos = 0  # the floor cursor: index into ``_order[0]``
        self._heap: list[tuple[int, int, int]] = []  # (deadline, delivery time, seq)
        self._again = 0  # the sequences of the redelivery runs (``list`` entries) in ``_timeline``
        self.steps = 0

    def wait_for(self, dc: int) -> int:
        """The ack wait of a delivery redelivered ``dc`` times (``backoff`` steps, else ack wait)."""
        backoff = self.backoff
        if backoff:
            return backoff[dc if dc < len(backoff) else -1]
        return self.wait

    # --- recording ------------------------------------------------------------------------------

    def delivered(self, ts: int, seqs: Sequence[int], state: DeliveryState) -> None:
        """A run of first deliveries at ``ts`` (ascending stream sequences) of ``state`` (their
        pending entries are new: changed since its last write)."""
        if state.changed is not None:
            state.fresh.append(seqs)
        timeline = self._timeline
        timeline.append((ts, seqs))
        order = self._order
        order.append(seqs)
        limit = state.pending.n + 64
        if len(timeline) > limit or len(order) > limit:
            self.rebuild(state.pending, state.rdc)

    def stamped(self, seq: int, ts: int, dc: int, pending: Pending) -> None:
        """``seq`` was stamped again at ``ts`` (redelivered ``dc`` times so far); the entries it
        and others replaced are dropped once they outnumber the pending acks."""
        if len(self._heap) > 2 * len(pending) + 64:
            self._compact_heap(pending)
        heapq.heappush(self._heap, (ts + self.wait_for(dc), ts, seq))

    def redelivered(self, ts: int, seqs: list[int], rdc: dict[int, int], pending: Pending) -> None:
        """A run of redeliveries at ``ts`` (each now pending with that time): one timeline entry
        when every delivery waits the ack wait, else each into the heap by its backoff step."""
        if self.backoff:
            for seq in seqs:
                self.stamped(seq, ts, rdc.get(seq, 0), pending)
            return
        self._timeline.append((ts, seqs))
        again = self._again = self._again + len(seqs)
        if again > 2 * len(pending) + 64 or len(self._timeline) > len(pending) + 64:
            self.rebuild(pending, rdc)

    def rebuild(self, pending: Pending, rdc: dict[int, int]) -> None:
        """Start over from the dict: every pending ack into the heap, the floor order from its
        keys (a restart, a change of ack wait or backoff, or runs piling up)."""
        self.steps += len(pending)
        timeline: deque[tuple[int, Sequence[int]]] | None = None
        if COLUMN_REBUILD and isinstance(pending, PendingArray) and not (self.backoff and rdc):
            # (every deadline is its delivery time + one wait: zip makes the heap's tuples in C)
            seqs, times = pending.live()
            timeline = _time_runs(seqs, times) if TIME_RUNS else None
            if timeline is None:
                heap = list(zip(map(operator.add, times, repeat(self.wait_for(0))), times, seqs, strict=True))
            else:
                heap = []
            order: Sequence[int] = seqs
        else:
            wait_for = self.wait_for
            entries = pending.entries() if isinstance(pending, PendingArray) else pending.items()
            heap = [(ts + wait_for(rdc.get(seq, 0)), ts, seq) for seq, (_, ts) in entries]
            order = array("q", sorted(pending))
        heapq.heapify(heap)
        self._heap = heap
        self._timeline = timeline if timeline is not None else deque()
        self._again = 0
        self._order = deque([order]) if pending else deque()
        self._pos = 0

    def clear(self) -> None:
        """Nothing is pending."""
        self._timeline.clear()
        self._again = 0
        self._order.clear()
        self._pos = 0
        self._heap = []

    # --- the timer ------------------------------------------------------------------------------

    def due(self, now: int, pending: Pending) -> list[int]:
        """The pending acks whose ack wait has passed at ``now`` (each once: taken out of the
        index; the caller stamps again what it redelivers)."""
        found: list[int] = []
        timeline = self._timeline
        first_wait = self.wait_for(0)
        while timeline and timeline[0][0] + first_wait <= now:
            ts, seqs = timeline.popleft()
            self.steps += len(seqs)
            if type(seqs) is list:  # a redelivery run
                self._again -= len(seqs)
            for seq in seqs:
                p = pending.get(seq)
                if p is not None and p[1] == ts:
                    found.append(seq)
        heap = self._heap
        while heap and heap[0][0] <= now:
            _, ts, seq = heapq.heappop(heap)
            self.steps += 1
            p = pending.get(seq)
            if p is not None and p[1] == ts:
                found.append(seq)
        if len(heap) > 2 * len(pending) + 64:
            self._compact_heap(pending)
        return found

    def _compact_heap(self, pending: Pending) -> None:
        self.steps += len(self._heap)
        heap = [e for e in self._heap if (p := pending.get(e[2])) is not None and p[1] == e[1]]
        heapq.heapify(heap)
        self._heap = heap

    def next_deadline(self) -> int:
        """When the next pending ack is due (0: none recorded)."""
        best = 0
        if self._timeline:
            best = self._timeline[0][0] + self.wait_for(0)
        if self._heap and (not best or self._heap[0][0] < best):
            best = self._heap[0][0]
        return best

    # --- the floor ------------------------------------------------------------------------------

    def next_pending(self, after: int, pending: PendingArray) -> int:
        """The oldest pending ack above stream sequence ``after`` (0: none). The cursor moves
        past what is not pending any more, once (`PendingArray.live_from`: a run's acked slots
        skipped in C); it stops at the oldest pending ack (which, when the floor's message was
        just acked, is the answer)."""
        order = self._order
        i = self._pos
        while order:
            seqs = order[0]
            n = len(seqs)
            i = pending.live_from(seqs, i)
            self.steps += i - self._pos + 1
            if i < n:
                break
            order.popleft()
            i = self._pos = 0
        self._pos = j = i
        for seqs in order:
            n = len(seqs)
            while j < n:
                seq = seqs[j]
                if seq > after and seq in pending:
                    return seq
                self.steps += 1
                j += 1
            j = 0
        return 0

    def take_upto(self, seq: int, pending: PendingArray) -> list[int]:
        """The pending acks at or below ``seq`` (AckAll, a purge), oldest first; the cursor stops
        at the first one above (a run's part found by bisection, its pending ones picked in C:
        `PendingArray.live_of`)."""
        out: list[int] = []
        order = self._order
        i = self._pos
        while order:
            seqs = order[0]
            n = len(seqs)
            k = n if seqs[n - 1] <= seq else bisect_right(seqs, seq, i)
            self.steps += k - i
            out += pending.live_of(seqs, i, k)
            if k < n:
                self._pos = k
                return out
            order.popleft()
            i = 0
        self._pos = 0
        return out


def _time_runs(seqs: Sequence[int], times: array[int]) -> deque[tuple[int, Sequence[int]]] | None:
    """A rebuild's timeline runs, ``(time, sequences)`` as first deliveries record them, when the
    delivery times never go down along the sequences (first deliveries, nothing redelivered out of
    order) and share a time in runs (a pass's, at most one run per 8 pending acks): due in the
    order the heap would give them, without a tuple per pending ack (a restart with 100,000
    pending: ~15 ms less of ``checkPending``'s setup, nats-server's ``readStoredState``). None:
    the heap.

    One Python step per run, none per pending ack: each run's end is found by a binary search
    (``bisect_right``, as if the times were sorted), then checked — its times all equal to its
    first, compared as bytes in place (one ``memcmp``), and its time above the run before — so
    runs that cover the columns prove them sorted; times out of order fail a check (None). A
    pass comparing every neighbour made a Python int of each time twice: ~15 ms at 100,000."""
    n = len(times)
    if not n:
        return deque()
    raw, width = times.tobytes(), times.itemsize
    runs: deque[tuple[int, Sequence[int]]] = deque()
    most = n // 8 + 1  # (a cut per 8 pending acks at most)
    a, before = 0, None
    while a < n:
        t = times[a]
        if before is not None and t <= before:
            return None  # (out of order: the heap)
        b = bisect_right(times, t, a)  # (> a: times[a] is t)
        at = a * width
        if len(runs) == most or not raw.startswith(raw[at : at + width] * (b - a), at):
            return None
        runs.append((t, seqs[a:b]))
        a, before = b, t
    return runs
