"""A consumer's delivery state: where it is in the stream and what is delivered but not acked.

One object, one owner (nats-server ``consumer.go`` keeps these fields on ``consumer`` under its
lock; ``ConsumerState`` in ``store.go`` is what it persists). The names are nats-server's:

- ``sseq``: the next stream sequence to consider; ``dseq``: the next delivery (consumer) sequence.
- ``adflr`` / ``asflr``: the ack floor (delivery / stream sequence): everything at or below is done.
- ``pending``: delivered but not acked, stream seq → (delivery seq of the first delivery,
  delivery time ns), in delivery order (a `PendingArray`: columns indexed by sequence, no
  object per entry); ``index``
  (`PendingIndex`) keeps it in the order of the
  floor and of the ack-wait deadlines, so neither an ack nor the ack-wait timer walks it.
- ``rdc``: redelivery counts (stream seq → times redelivered); ``rdq``: the redelivery queue (an
  ``OrderedDict`` used as an ordered set: its head is taken in O(1), where a dict's first key
  costs a walk over the keys deleted before it).
- ``lss`` / ``lss_resume``: ``deliver_policy: last_per_subject``: the sequences still to send, and
  where to continue after them.
- ``ldt`` / ``lat``: the last delivery / ack (Unix ns) reported in ConsumerInfo.
- ``changed`` / ``gone`` / ``fresh``: the sequences whose pending entry or redelivery count changed
  since the state was last written, those retired for good (acked, dropped: no look-up needed) and
  the runs of first deliveries (no redelivery count to look up), from ``JOURNAL_MIN`` pending acks:
  what `packed` writes instead of the whole state.

Every change of these goes through a method here (ack, nak, progress, redeliver, purge, ...),
except the few field updates of the delivery loop's run loops (``delivery_loop.py``: the next
sequence, the delivery sequence and the new ``pending`` entries, a run's at once:
`PendingArray.add_run`), which stay inline there because they run once per message or run; the
loops tell `DeliveryState.delivered` once per run.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict, deque
from collections.abc import Callable, Mapping, Sequence
from itertools import chain

from pyjetstream.server.jetstream.pending_index import PendingIndex
from pyjetstream.server.jetstream.pending_map import PendingArray
from pyjetstream.server.jetstream.store.base import ConsumerState, SequencePair
from pyjetstream.server.jetstream.store.consumer_journal import PackedChanges, pack_consumer_changes
from pyjetstream.server.jetstream.store.consumer_store import (
    PackedState,
    pack_consumer_columns,
    pack_consumer_state,
)
from pyjetstream.server.jetstream.stored_acks import StoredAcks

__all__ = ["DeliveryState"]

# A state with at least this many pending acks is written as its changes since the last write
# (`packed`) while they and the changes written since the last whole state cost less than a whole
# write: a changed sequence ``JOURNAL_WEIGHT`` entries of it (a look-up at random in the maps,
# where a whole write walks them in order), a first delivery half of one (a look-up of what was
# just written), one gone for good a quarter (written as it is). Below it, the whole state (as
# cheap). A value above any state turns the journal off.
JOURNAL_MIN = 4096
JOURNAL_WEIGHT = 3


class DeliveryState:
    """Sequences, ack floors, pending acks and redeliveries of one consumer."""

    __slots__ = (
        "_journaled",
        "adflr",
        "asflr",
        "changed",
        "dseq",
        "fresh",
        "gone",
        "index",
        "lat",
        "ldt",
        "lss",
        "lss_resume",
        "pending",
        "rdc",
        "rdq",
        "sseq",
        "stored",
    )

    def __init__(self) -> None:
        self.sseq = 1
        self.dseq = 1
        self.adflr = 0
        self.asflr = 0
        self.pending = PendingArray()
        self.rdc: dict[int, int] = {}
        self.rdq: OrderedDict[int, None] = OrderedDict()
        self.lss: deque[int] = deque()  # (taken from the left, one at a time)
        self.lss_resume = 0
        self.ldt = 0
        self.lat = 0
        self.index = PendingIndex(30_000_000_000, [])
        # The store's floor and pending acks while a purge left them apart from these (None:
        # the store holds what these hold); reported and persisted in their place.
        self.stored: StoredAcks | None = None
        # The sequences whose pending entry or redelivery count changed since the last write
        # (None: not kept, the next write is the whole state), and how many were written as
        # changes since the last whole state.
        # Arrays: they copy each sequence, where a list would keep its int alive until the write
        # (an ack's sequence, parsed from its subject, is freed at once and its memory reused).
        self.changed: array[int] | None = None
        self.gone = array("Q")  # (kept while ``changed`` is)
        self.fresh: list[Sequence[int]] = []  # (kept while ``changed`` is: `PendingIndex.delivered`)
        self._journaled = 0

    def set_waits(self, ack_wait: int, backoff: list[int]) -> None:
        """The consumer's ack wait and backoff (ns): the deadlines of the pending acks."""
        index = self.index
        if ack_wait != index.wait or backoff != index.backoff:
            index.wait, index.backoff = ack_wait, list(backoff)
            index.rebuild(self.pending, self.rdc)

    # --- starting point, persistence ------------------------------------------------------------

    def start_at(self, sseq: int) -> None:
        """A fresh consumer starts at ``sseq`` (``selectStartingSeqNo``)."""
        self.sseq = sseq
        self.dseq = 1
        self.adflr = 0
        self.asflr = sseq - 1

    def restore(self, st: ConsumerState) -> None:
        """``readStoredState``: continue where the consumer was before the restart."""
        self.sseq = max(self.sseq, st.delivered.stream_seq + 1)
        self.dseq = st.delivered.consumer_seq + 1
        self.adflr = st.ack_floor.consumer_seq
        self.asflr = st.ack_floor.stream_seq
        self.pending = PendingArray(st.pending)
        self.rdc = {seq: n for seq, n in st.redelivered.items() if seq > self.asflr}
        self.index.rebuild(self.pending, self.rdc)
        self.stored = None
        self.changed = None

    def snapshot(self) -> ConsumerState:
        """A copy to persist (``writeState``): the floor as reported (`floor`) and the pending
        acks above it (`_persisted`)."""
        floor, pending, rdc = self._persisted()
        entries = pending.to_dict() if isinstance(pending, PendingArray) else dict(pending)
        return ConsumerState(SequencePair(self.dseq - 1, self.sseq - 1), SequencePair(*floor), entries, dict(rdc))

    def packed(self, whole: bool = False) -> PackedState | PackedChanges:
        """`snapshot`, packed for the consumer's store (what `StateWriter` writes): the pending
        acks' columns and the redelivery counts encoded in one C call (`pack_consumer_columns`),
        not copied first — or, from
        ``JOURNAL_MIN`` pending acks, while what changed since the last write (with what was
        written as changes since the last whole state, ``JOURNAL_WEIGHT``) costs less than a
        whole write, just that (`pack_consumer_changes`: the store appends it to its journal).
        Both C passes, no Python per entry; changes cost what changed, not what is pending,
        and a whole write comes at most once per a whole write's worth of changes. ``whole``:
        the whole state in any case (a graceful stop's last write, `StateWriter.close`)."""
        floor, pending, rdc = self._persisted()
        delivered, ack_floor = SequencePair(self.dseq - 1, self.sseq - 1), SequencePair(*floor)
        changed, gone, fresh, n = self.changed, self.gone, self.fresh, len(pending)
        if gone:  # (new ones only when used: a serial consumer's every confirmed ack packs)
            self.gone = array("Q")
        if fresh:
            self.fresh = []
        if changed is not None and pending is self.pending and not whole:
            firsts = array("Q", chain.from_iterable(fresh))
            cost = self._journaled + JOURNAL_WEIGHT * len(changed) + len(firsts) // 2 + len(gone) // 4
            if cost < n:
                self._journaled = cost
                self.changed = array("Q")
                values = list(chain.from_iterable(map(self.pending.run_values, fresh)))
                return pack_consumer_changes(delivered, ack_floor, changed, gone, pending, rdc, firsts, values)
        self.changed = array("Q") if n >= JOURNAL_MIN and self.stored is None else None
        self._journaled = 0
        if isinstance(pending, PendingArray):
            return pack_consumer_columns(delivered, ack_floor, pending.columns(), n, rdc)
        return pack_consumer_state(delivered, ack_floor, dict(pending), rdc)

    def _persisted(self) -> tuple[tuple[int, int], Mapping[int, tuple[int, int]], dict[int, int]]:
        """What is persisted: the floor as reported (`floor`) and the pending acks above it —
        the live maps when every one is (the caller copies or packs them before they change).
        An ack floor can pass pending acks (a purge's, then an ack one above its delivery
        sequence: ``moveAckFloor`` and the store's ``UpdateAcks`` both jump); nats-server's
        file then keeps them below its floor, which our consumer store refuses as its ``Update``
        does, so they are not written (a restart does not deliver them again)."""
        adflr, asflr = self.floor()
        pending: Mapping[int, tuple[int, int]] = self.pending
        rdc = self.rdc
        stale = self.stored.stale if self.stored is not None else None
        # (the index's oldest pending ack is the lowest: first deliveries go in stream order)
        if stale or (pending and self.index.next_pending(0, self.pending) <= asflr):
            kept = {s: p for s, p in self.pending.entries() if s > asflr}
            if stale:
                kept.update((s, (d, 0)) for s, d in stale.items() if s > asflr)
                kept = dict(sorted(kept.items()))
            pending = kept
            rdc = {s: n for s, n in rdc.items() if s > asflr}
        return (adflr, asflr), pending, rdc

    def floor(self) -> tuple[int, int]:
        """The ack floor (delivery, stream sequence) as reported: the store's
        (``infoWithSnapAndReply`` reads ``o.store``'s state)."""
        stored = self.stored
        if stored is None:
            return self.adflr, self.asflr
        return stored.adflr, stored.asflr

    def reset_to(self, sseq: int) -> None:
        """⟨2.14+⟩ ``CONSUMER.RESET`` (``resetLocalStartingSeq``): forget everything delivered and
        start over at ``sseq``, delivery sequences from 1."""
        self.release()
        self.sseq, self.dseq = sseq, 1
        self.adflr, self.asflr = 0, sseq - 1
        self.ldt = self.lat = 0

    def release(self) -> None:
        """The consumer is deleted (or reset): drop its pending acks, redelivery counts and queues now. Why:
        a consumer and its parts refer to each other, so the deleted one is freed only by the
        cycle collector, which ``pyjetstream serve`` runs seldom (``tune_gc``); its 100,000
        pending acks (~30 MiB) would be held until then. Reference counting frees these at once."""
        self.pending = PendingArray()
        self.rdc = {}
        self.rdq = OrderedDict()
        self.lss = deque()
        self.index.clear()
        self.stored = None
        self.changed = None

    # --- acks -----------------------------------------------------------------------------------

    def ack(self, sseq: int, dseq: int) -> tuple[int, int] | None:
        """AckExplicit: retire ``sseq``; returns its pending entry (None if it was not pending).

        The ack floor moves up to just below the oldest message still pending (``processAckMsg``).
        """
        pending = self.pending
        if self.stored is not None:
            self._store_ack(sseq, dseq)
        # (`PendingArray.take` inlined for a slot of its columns: the common case, once per ack)
        i = sseq - pending.base
        cols = pending.dseq
        if 0 <= i < len(cols) and (d := cols[i]):
            cols[i] = 0
            pending.n -= 1
            dseq = d - 1
            p: tuple[int, int] | None = (dseq, pending.ts[i])
        else:
            p = pending.take(sseq) if pending.old else None
            if p is not None:
                dseq = p[0]
        if not pending.n:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            self.index.clear()
        elif dseq == self.adflr + 1:
            self.adflr, self.asflr = dseq, sseq
            nxt = sseq + 1 if 0 <= i + 1 < len(cols) and cols[i + 1] else self.index.next_pending(sseq, pending)
            if nxt:
                j = nxt - pending.base  # (its first delivery's sequence, from the columns when there)
                pd = cols[j] - 1 if 0 <= j < len(cols) else pending[nxt][0]
                if pd > 0:
                    self.adflr, self.asflr = pd - 1, nxt - 1
        if self.rdc:
            self.rdc.pop(sseq, None)
        if self.rdq:
            self.rdq.pop(sseq, None)
        if self.changed is not None:
            self.gone.append(sseq)
        return p

    def ack_all(self, sseq: int, dseq: int) -> list[int] | None:
        """AckAll: retire everything up to ``sseq``; returns the pending acks it retired, oldest
        first (None: the ack was at or below the floor and changed nothing)."""
        if dseq <= self.adflr or sseq <= self.asflr:
            return None
        if self.stored is not None:
            self._store_ack(sseq, dseq)
        self.adflr, self.asflr = dseq, sseq
        retired = self.index.take_upto(sseq, self.pending)
        self._retire(retired)
        return retired

    def _store_ack(self, sseq: int, dseq: int) -> None:
        """The store's ``UpdateAcks`` while it differs from these (`StoredAcks`)."""
        assert self.stored is not None
        pending = self.pending
        self.stored.update_acks(
            dseq,
            sseq,
            pending.get(sseq),
            len(pending),
            (self.dseq - 1, self.sseq - 1),
            lambda s: self.index.next_pending(s, pending),
            lambda s: pending[s][0],
        )

    def _retire(self, seqs: list[int]) -> None:
        """These pending acks are done (AckAll, a purge): no more redeliveries of them."""
        pending, rdc, rdq = self.pending, self.rdc, self.rdq
        for s in seqs:
            del pending[s]
            rdc.pop(s, None)
            rdq.pop(s, None)
        if self.changed is not None:
            self.gone.extend(seqs)
        if not pending:
            self.index.clear()

    def delivered_none(self, sseq: int, dseq: int) -> None:
        """AckNone: a delivery is done as it goes out (the floor follows the deliveries)."""
        self.adflr = dseq
        self.asflr = sseq

    def nak(self, sseq: int, dseq: int) -> tuple[int, int] | None:
        """The pending entry a NAK applies to (None: not pending, or outside the delivered range)."""
        if dseq <= self.adflr or dseq > self.dseq:
            return None
        pending = self.pending  # (`PendingArray.get` inlined for a slot of its columns)
        i, cols = sseq - pending.base, pending.dseq
        if 0 <= i < len(cols):
            d = cols[i]
            return (d - 1, pending.ts[i]) if d else None
        return pending.old.get(sseq)

    def nak_later(self, sseq: int, delivered_ns: int) -> None:
        """``-NAK <delay>``: take it off the redelivery queue and restamp its delivery time so
        the ack wait expires after the delay."""
        p = self.pending[sseq]
        self.rdq.pop(sseq, None)
        self.pending[sseq] = (p[0], delivered_ns)
        self.index.stamped(sseq, delivered_ns, self.rdc.get(sseq, 0), self.pending)
        if self.changed is not None:
            self.changed.append(sseq)

    def progress(self, sseq: int, now_ns: int) -> bool:
        """``+WPI``: restart the ack wait of ``sseq``; False if it is not pending."""
        p = self.pending.get(sseq)
        if p is None:
            return False
        self.pending[sseq] = (p[0], now_ns)
        self.index.stamped(sseq, now_ns, self.rdc.get(sseq, 0), self.pending)
        if self.changed is not None:
            self.changed.append(sseq)
        return True

    # --- redelivery -----------------------------------------------------------------------------

    def redeliver(self, sseq: int) -> bool:
        """Queue ``sseq`` for redelivery; False if it is already queued."""
        if sseq in self.rdq:
            return False
        self.rdq[sseq] = None
        return True

    def redeliver_if_pending(self, sseq: int) -> bool:
        """A delivery reached nobody (``didNotDeliver``): send it again if still pending."""
        if sseq in self.pending and sseq not in self.rdq:
            self.rdq[sseq] = None
            return True
        return False

    def next_redeliveries(self, n: int) -> tuple[list[int], list[int]]:
        """Take up to ``n`` heads of the redelivery queue, each counted (``getNextMsg``'s
        ``incDeliveryCount``, for a run): (stream sequences, delivery counts), in queue order."""
        rdq, rdc = self.rdq, self.rdc
        take = rdq.popitem
        seqs: list[int] = []
        dcs: list[int] = []
        for _ in range(n if n < len(rdq) else len(rdq)):
            seq = take(last=False)[0]
            again = rdc[seq] = rdc.get(seq, 0) + 1
            seqs.append(seq)
            dcs.append(again + 1)
        if self.changed is not None:
            self.changed.extend(seqs)
        return seqs, dcs

    def unget_redeliveries(self, seqs: Sequence[int]) -> None:
        """Put redeliveries that did not go out back at the head of the queue, in their order,
        and uncount them; one no longer pending (acked meanwhile) is only uncounted."""
        rdq, rdc, pending = self.rdq, self.rdc, self.pending
        for seq in reversed(seqs):
            n = rdc.get(seq, 0) - 1
            if n > 0:
                rdc[seq] = n
            else:
                rdc.pop(seq, None)
            if seq in pending:
                rdq[seq] = None
                rdq.move_to_end(seq, last=False)
        if self.changed is not None:
            self.changed.extend(seqs)

    def redeliver_all(self, now_ns: int) -> None:
        """Queue every pending message for redelivery now (a new deliver subject)."""
        for seq in sorted(self.pending):
            self.rdq.setdefault(seq, None)
            pd, _ = self.pending[seq]
            self.pending[seq] = (pd, now_ns)
        self.index.rebuild(self.pending, self.rdc)
        self.changed = None

    def stop_tracking(self, seq: int) -> None:
        """``max_deliver`` reached: no more redeliveries of ``seq``."""
        self.pending.pop(seq, None)
        if self.changed is not None:
            self.changed.append(seq)

    def drop(self, seq: int) -> None:
        """A pending message disappeared from the stream: stop tracking it."""
        p = self.pending.pop(seq, None)
        self.rdc.pop(seq, None)
        if self.changed is not None:
            self.gone.append(seq)
        if p is not None and not self.pending:
            self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            self.index.clear()

    def delivered(self, ts: int, seqs: Sequence[int]) -> None:
        """A run of first deliveries at ``ts`` went out (the run loops wrote their pending
        entries): into the index, once per run."""
        self.index.delivered(ts, seqs, self)

    def redelivered(self, ts: int, seqs: list[int]) -> None:
        """A run of redeliveries went out at ``ts``: their ack waits start over (into the index
        once per run); each pending entry keeps the first delivery's sequence (nats-server
        ``trackPending``), which the ack floor follows."""
        pending = self.pending
        again = pending.restamp(seqs, ts)  # (one not pending was acked while it went out: an internal subscriber)
        if again:
            self.index.redelivered(ts, again, self.rdc, pending)
            if self.changed is not None:
                self.changed.extend(again)

    def expired(self, now: int, first_seq: int) -> tuple[list[int], int, bool]:
        """``checkPending``: queue every delivery whose ack wait (or backoff step) has passed, as
        the index hands them out (not a walk over every pending ack, as nats-server's).

        Messages gone from the stream (below ``first_seq``) or below the ack floor are dropped.
        Returns (the newly queued sequences, ns until the next one is due — 0: none —, whether
        anything was dropped).
        """
        pending = self.pending
        rdq = self.rdq
        rdc = self.rdc
        index = self.index
        expired: list[int] = []
        dropped = False
        for seq in index.due(now, pending):
            if seq < first_seq or seq <= self.asflr:
                p = pending.pop(seq, None)
                if p is None:
                    continue
                rdc.pop(seq, None)
                rdq.pop(seq, None)
                dropped = True
                if self.changed is not None:
                    self.gone.append(seq)
                if seq > self.asflr:
                    self.asflr = seq
                if p[0] > self.adflr:
                    self.adflr = p[0]
                continue
            if seq not in rdq:
                expired.append(seq)
        if expired:
            expired = sorted(set(expired))
            for seq in expired:
                rdq[seq] = None
            # Re-stamp so they keep their relative order but count as delivered "now" (what
            # ``checkPending`` persists). Not into the index: a queued redelivery leaves the
            # queue by going out (stamped then, as a run), by a stamp (``nak_later``) or retired.
            off = now - pending[expired[0]][1]
            for seq in expired:
                pd, ts = pending[seq]
                pending[seq] = (pd, ts + off)
            if self.changed is not None:
                self.changed.extend(expired)
        if not pending:
            rdq.clear()
            index.clear()
        nxt = index.next_deadline()
        return expired, (nxt - now if nxt > now else 0), dropped

    # --- stream changes -------------------------------------------------------------------------

    def purge(
        self,
        first_seq: int,
        now_ns: int,
        removed: Callable[[int], bool] | None = None,
        reset: bool = False,
        ack_all: bool = False,
        looked: int = 0,
    ) -> None:
        """Messages below ``first_seq`` are gone (purge, expiry): skip them (nats-server's consumer
        ``purge``); a pending one counts as acked (``updateAcks``: it is ack activity).

        ``removed`` (a purge of subjects inside the consumer's wider filter, ``isWider``): a pending
        ack above the new floor whose message the store no longer has is dropped too — like
        nats-server, only when the floor moved. ``reset`` (a stream purge): with nothing left
        pending, the floors are what was delivered, as nats-server's ``purge`` leaves them, and
        the store is told as nats-server's is (`StoredAcks`: each dropped ack, then the state,
        which it refuses when its own floor is higher; ``ack_all``: AckAll or flow control).
        ``looked``: where a search past the end left nats-server's ``o.sseq`` (the delivery
        loop's ``looked``), which such a write makes the delivered sequence."""
        delivered = (self.dseq - 1, self.sseq - 1)
        stored, floor = self.stored, (self.adflr, self.asflr)
        self.changed = None  # (the next write is the whole state)
        if reset:
            kept_sseq = self.sseq
            self.sseq = max(self.sseq, looked)
        if self.sseq < first_seq:
            self.sseq = first_seq
        if self.asflr < first_seq:
            self.asflr = first_seq - 1
            gone = self.index.take_upto(self.asflr, self.pending)
            if removed is not None:
                above = self.asflr
                gone += [seq for seq in self.pending if seq > above and removed(seq)]
            if reset and gone:  # (none dropped: the store's floor is at most the new one)
                if stored is None:
                    stored = StoredAcks(floor[0], floor[1], ack_all)
                stored.purge_acks(gone, self.pending, delivered)
            for seq in gone:
                self.lat = now_ns
                dseq = self.pending[seq][0]
                if dseq > self.adflr:
                    self.adflr = dseq
                    if self.adflr > self.dseq:
                        self.dseq = self.adflr
            self._retire(gone)
        if not self.pending:
            if reset:
                self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            self.rdc.clear()
            self.rdq.clear()
        if reset:  # writeStoreState: refused as an old update below the store's floor
            if stored is not None and self.asflr < stored.asflr:
                self.stored = stored
                self.sseq = max(kept_sseq, first_seq)  # (the store's delivered is reported)
            else:
                self.stored = None
        if self.lss:
            self.lss = deque(s for s in self.lss if s >= first_seq)
            if not self.lss:
                self.sseq = max(self.sseq, self.lss_resume)

    def needs(self, seq: int, explicit: bool) -> bool:
        """Interest retention: is ``seq`` (a matching message) still needed (``needAck``)?"""
        if seq <= self.asflr:
            return False
        if explicit and seq < self.sseq:
            return seq in self.pending
        return True
