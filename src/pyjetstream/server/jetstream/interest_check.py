"""Interest retention: the messages one consumer stopped needing that nobody else needs now.

A stored message of an interest stream is one some consumer needs (a message nobody needs is not
stored, or goes at its last ack), so when one consumer stops needing some — it is deleted
(nats-server ``cleanupNoInterestMessages``), or a ``CONSUMER.RESET`` moves it past messages it had
not acked (``resetStartingSeq`` → ``checkStateForInterestStream``) — only those can have lost their
last taker. `lost_interest` looks at them alone: the sequences ``lo``..``hi`` under that consumer's
filter, and of those only the ones it needed before (``needed``).

Two bounds keep the walk from growing with the stream:

- below every consumer's ack floor nobody needs a message: that prefix is compacted at once
  (nats-server ``checkInterestState``'s ``Compact``);
- above it, a consumer whose filter takes every subject the walked one takes needs each of those
  messages from its own start on (``max(sseq, asflr + 1)``: `DeliveryState.needs` is true for a
  matching message there), so the walk stops at the lowest such start (`covered_from`). A lagging
  consumer deleted beside others that lag too, or reset while they do, looks at nothing —
  nats-server walks up to 100,000 messages there (``bailThresh``) and defers a larger walk.
  `BOUND_BY_COVERING` off walks to ``hi`` (the differential test proves both leave the same).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from pyjetstream.protocol.subjects import is_subset
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, StoredMsg

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.store.base import MessageStore
    from pyjetstream.server.jetstream.stream import Stream
    from pyjetstream.server.jetstream.subject_filter import SubjectFilter

#: The walk stops where a consumer taking every subject the walked one takes needs them all
#: (`covered_from`); off: it goes on to ``hi``.
BOUND_BY_COVERING = True


def covers(wide: SubjectFilter, narrow: SubjectFilter) -> bool:
    """Whether every subject ``narrow`` takes is taken by ``wide`` too (each of its filters a
    subset of one of ``wide``'s: nats-server ``subjectIsSubsetMatch``)."""
    if wide.match_all:
        return True
    if narrow.match_all:
        return False
    return all(any(is_subset(f, g) for g in wide.filters) for f in narrow.filters)


def covered_from(consumers: Iterable[Consumer], walked: SubjectFilter, lo: int, hi: int) -> int:
    """The lowest sequence from which some consumer of ``consumers`` whose filter covers
    ``walked`` needs every message it takes (``hi + 1`` when none does before ``hi``). Stops as
    soon as one covers from ``lo``: the walk is then empty."""
    first = hi + 1
    for consumer in consumers:
        st = consumer.state
        start = max(st.sseq, st.asflr + 1)
        if start < first and covers(consumer.filter, walked):
            first = start
            if first <= lo:
                break
    return first


def _next(store: MessageStore, filters: list[str], seq: int) -> tuple[StoredMsg, int]:
    if len(filters) == 1:
        return store.load_next_msg(filters[0], seq)
    return store.load_next_msg_multi(filters, seq)


def lost_interest(
    stream: Stream, walked: Consumer, lo: int, hi: int, needed: Callable[[int, str], bool] | None
) -> bool:
    """Remove what nobody needs any more of the messages ``lo``..``hi`` under ``walked``'s filter
    that ``walked`` needed (``needed``; None: all of them); whether any was removed. The
    stream's ``interest_checked`` counts the messages looked at (a step count)."""
    store = stream.store
    consumers = stream.consumers.values()
    removed = False
    state = store.fast_state()
    if consumers:
        # (not past the last message: a floor beyond it would move first_seq further)
        floor = min(min(c.state.asflr for c in consumers), state.last_seq)
        if floor >= state.first_seq:
            removed = store.compact(floor + 1) > 0
            state = store.fast_state()
    seq = max(lo, state.first_seq)
    hi = min(hi, state.last_seq)
    if BOUND_BY_COVERING and seq <= hi:
        hi = min(hi, covered_from(consumers, walked.filter, seq, hi) - 1)
    filters = walked.filter.store_filters()
    match = stream.csl.match
    while seq <= hi:
        try:
            msg, seq = _next(store, filters, seq)
        except ErrStoreEOF:
            break
        if seq > hi:
            break
        stream.interest_checked += 1
        subject = msg.subject
        if (needed is None or needed(seq, subject)) and not any(c.needs_ack(seq, subject) for c in match(subject)):
            removed = store.remove_msg(seq) or removed
        seq += 1
    return removed
