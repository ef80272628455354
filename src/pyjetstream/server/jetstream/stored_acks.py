"""What a consumer's store holds when it differs from the consumer's own ack state.

nats-server keeps a consumer's state twice: the consumer's fields (``o.adflr``, ``o.asflr``,
``o.pending``) and its store's copy (``consumerFileStore.state``), and ``CONSUMER.INFO`` reports
the store's ack floor (``infoWithSnapAndReply``). Normally the two agree. A stream purge is
where they part: the consumer's ``purge`` drops the pending acks of purged messages through
``updateAcks`` — the store's ``UpdateAcks`` moves *its* floor by the ack rules (a first delivery
one above the floor lifts it to below the next pending ack; an ack at or below the floor is
ignored, its pending entry kept) — and then writes its own state with ``writeStoreState``, which
the store refuses as an old update when the consumer's stream floor is below the store's
(``consumerFileStore.Update``: ``ErrStoreOldUpdate``). A wider consumer's purge leaves its own
floor at the stream's first message while its ack floor's delivery sequence has jumped to the
highest one dropped, so the next purge's first dropped delivery looks like the one after the
floor to the store: after a second purge nats-server reports a floor above acks still pending.

`StoredAcks` is that store copy while it differs: the floor, and the pending entries the store
kept that the consumer dropped (``stale``); the store's pending acks are the consumer's plus
those. `DeliveryState` keeps one only between a purge that left them apart and the next write
the store takes; acks move it as ``UpdateAcks`` would, and its floor is what is reported and
persisted (a restart loads the store's state, as nats-server's ``readStoredState``; the pending
acks at or below it are not written: see `DeliveryState.snapshot`)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping

__all__ = ["StoredAcks"]


class StoredAcks:
    """The store's ack floor and its pending entries beyond the consumer's (``stale``)."""

    __slots__ = ("adflr", "all_below", "asflr", "stale")

    def __init__(self, adflr: int, asflr: int, all_below: bool) -> None:
        self.adflr = adflr
        self.asflr = asflr
        self.stale: dict[int, int] = {}  # stream seq -> first delivery seq
        # AckAll / AckFlowControl: the store's floor retires everything at or below it.
        self.all_below = all_below

    def update_acks(
        self,
        dseq: int,
        sseq: int,
        entry: tuple[int, int] | None,
        held: int,
        delivered: tuple[int, int],
        next_above: Callable[[int], int],
        first_of: Callable[[int], int],
    ) -> None:
        """``consumerFileStore.UpdateAcks(dseq, sseq)``, called before the consumer drops its
        own pending ``entry`` for ``sseq`` (None: it has none). ``held``: how many of the
        consumer's pending acks the store holds (``entry``'s included); ``delivered``:
        (consumer, stream) sequences delivered; ``next_above(s)``: the consumer's oldest pending
        ack above ``s`` that the store holds (0: none), ``first_of(s)`` its first delivery."""
        stale = self.stale
        if dseq <= self.adflr:  # (an old replay to the store: ignored, the entry kept)
            if entry is not None and not (self.all_below and sseq <= self.asflr):
                stale[sseq] = entry[0]
            return
        if entry is None and sseq not in stale:
            return  # ErrStoreMsgNotFound
        if self.all_below:
            self.adflr, self.asflr = dseq, sseq
            self.stale = {s: d for s, d in stale.items() if s > sseq}
            return
        first = entry[0] if entry is not None else stale.pop(sseq)
        if 0 < first < dseq:
            dseq = first  # (the original delivery)
        if held - (entry is not None) + len(stale) == 0:
            self.adflr, self.asflr = delivered
        elif dseq == self.adflr + 1:
            self.adflr, self.asflr = dseq, sseq
            if delivered[0] > dseq:
                nxt = next_above(sseq)
                for s in stale:
                    if s > sseq and (not nxt or s < nxt):
                        nxt = s
                if nxt and nxt <= delivered[1]:
                    d = stale[nxt] if nxt in stale else first_of(nxt)
                    if d > 0:
                        self.adflr, self.asflr = d - 1, nxt - 1

    def purge_acks(
        self,
        gone: Iterable[int],
        pending: Mapping[int, tuple[int, int]],
        delivered: tuple[int, int],
    ) -> None:
        """A purge's ``updateAcks`` for each pending ack it drops (``gone``, all in ``pending``),
        before the consumer drops them. They are taken oldest first, so what the store still
        holds above one of them is the consumer's pending acks above it (Go's map order is
        random; with first deliveries in stream order the floor comes out the same)."""
        order = sorted(pending)
        gone = sorted(gone)

        def next_above(s: int) -> int:
            i = bisect_right(order, s)
            return order[i] if i < len(order) else 0

        def first_of(s: int) -> int:
            return pending[s][0]

        held = len(pending)
        for seq in gone:
            entry = pending[seq]
            self.update_acks(entry[0], seq, entry, held, delivered, next_above, first_of)
            held -= 1
