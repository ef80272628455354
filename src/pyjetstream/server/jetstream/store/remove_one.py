"""One message removed from an evicted index page without loading the page (`remove_evicted`).

Why: a random ``STREAM.MSG.DELETE`` over 1M file-stored messages loaded the page it fell in each
time — the block's whole index file read, checked and decoded (~10-20 ms of CPU) — and the page
cache keeps a few pages, so nearly every delete did. nats-server's ``removeMsg``
(``fileStore.removeMsg`` → ``mb.loadMsgsWithLock``, ``mb.slotInfo``) reads the one message. Here
the slot is peeked from the index file (`SeqIndex.slot`, as a get by sequence does), its size
comes from the record (read as a get reads it), and the removal joins the page's ``dels``, which
are applied when its arrays are loaded again (`SeqIndex._load`) — what `SeqIndex.remove` does,
less the arrays.

A secure erase too: the record is overwritten and a tombstone written (`BlockFiles._erase_record`),
the block's index kept. Not taken (`IndexedStore._remove_at` then): a message that is its subject's
first or last or the stream's first (the next or previous one is looked up in the page), a page
with `DELS_MAX` removals pending, a page the peek loaded after all, a damaged record. A sequence
that holds no message is answered from the peek alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .base import ErrCorruptRecord
from .idx_peek import SPANNED
from .pages import Page
from .seqindex import DELS_MAX, SeqIndex, _removed

if TYPE_CHECKING:
    from .indexed import IndexedStore

__all__ = ["BY_SPAN", "PEEK_IN_PAGE", "evicted_page", "remove_evicted"]


def evicted_page(index: SeqIndex, seq: int) -> Page | None:
    """The evicted page covering ``seq`` when its slots can be peeked, else None. A loaded page
    covering it is made the hot one, as `SeqIndex.page` makes it (marked recently used): the
    removal by `IndexedStore._remove_at` then finds it there instead of by a second bisection
    (a random removal in a sealed page in memory: half of those over 1M messages)."""
    p = index.hot
    if p.first <= seq < p.first + p.n or index.peeker is None:
        return None
    found = index._covering(seq)
    if found is None:
        return None
    if found.loaded:
        index._use(found)
        index.hot = found
        return None
    return found if len(found.dels) < DELS_MAX else None


#: A removal in an evicted page finds its record as a random get does, in its block's span
#: (`PayloadBackend.read_located`: one read of the block, or none where the block cache holds
#: it), the subject id from the record's subject; False: the slot is read with its subject id
#: from the block's index file (three small reads, the file's checksum verified once), then the
#: record. The differential tests turn it off.
BY_SPAN = True

#: The slot is peeked in the evicted page `evicted_page` found (`peek_in`), not looked up again
#: by sequence (`SeqIndex.slot`: the hot page's range, the page's bisection, the loaded check
#: again). False: by `SeqIndex.slot`; the differential tests turn it off.
PEEK_IN_PAGE = True


def peek_in(index: SeqIndex, p: Page, seq: int) -> tuple[int, int, int] | None:
    """`SeqIndex.slot` of ``seq`` (``names`` False when `BY_SPAN`) in ``p``, the evicted page
    covering it (`evicted_page`): its removals since the image first, then its image's slot;
    where the page's index file cannot be used, `SeqIndex.slot` (which loads the page)."""
    if seq < index.first_seq or (p.dels and _removed(p.dels, seq)):
        return None
    got = index.peeker(p, seq - p.first, BY_SPAN)  # type: ignore[misc]
    if got is None:
        return index.slot(seq, not BY_SPAN)
    index.peeks += 1
    return got if got[0] else None


def remove_evicted(store: IndexedStore, seq: int, erase: bool, other: Callable[[int, bool], bool]) -> bool:
    """`IndexedStore.remove_msg`'s removal: here when ``seq`` lies in an evicted page, else by
    ``other`` (`IndexedStore._remove_at`; see the module docstring). Whether it was removed."""
    index = store._index
    p = evicted_page(index, seq)
    if p is None or seq == index.first_seq:
        return other(seq, erase)
    got = peek_in(index, p, seq) if PEEK_IN_PAGE else index.slot(seq, not BY_SPAN)
    if got is None:
        return False  # (no message there: nothing to load the page for)
    read = _by_record(store, seq, got) if got[0] < 0 and not p.loaded else None
    if read is None:
        if got[0] < 0 and not p.loaded:
            got = index.slot(seq)  # (the record was not found so: the slot by its subject id)
            if got is None:
                return False
        read = _by_slot(store, seq, got, p)
        if read is None:
            return other(seq, erase)
    sid, loc, subject, size = read
    table = index.subjects
    if p.loaded or seq in (table.first[sid], table.last[sid]):
        return other(seq, erase)
    store._backend.remove(seq, loc, erase)
    if p.loaded:  # (the backend loaded it after all)
        index.remove(p, seq - p.first)
    else:
        _drop(index, p, seq, sid, size)
    if store.on_removed is not None:
        store.on_removed(seq, subject)
    return True


def _by_record(store: IndexedStore, seq: int, got: tuple[int, int, int]) -> tuple[int, int, str, int] | None:
    """``(sid, loc, subject, size)`` of the message at ``seq`` from its record alone: ``got`` is
    its slot's span (``SPANNED``) or its locator (-1) without a subject id (`SeqIndex.slot` with
    ``names`` False). The locator is where the record was found (`read_located`), never the
    span. None: the record is not so found or fails a check (the caller reads the slot named)."""
    sid, _ts, loc = got
    backend = store._backend
    try:
        if sid == SPANNED:
            subject, slen, hlen, dlen, loc = backend.read_located(seq, loc)
        else:
            subject, _ts, hdr, data = backend.read_msg(seq, loc)
            slen, hlen, dlen = len(subject.encode()), len(hdr), len(data)
    except ErrCorruptRecord:
        backend.damaged.pop()  # (the slot read named verifies the index file: see `_msg_in`)
        return None
    sid = store._index.subjects.ids.get(subject, 0)
    if not sid:
        return None
    return sid, loc, subject, store.record_size(slen, hlen, dlen)


def _by_slot(store: IndexedStore, seq: int, got: tuple[int, int, int], p: Page) -> tuple[int, int, str, int] | None:
    """``(sid, loc, subject, size)`` of the message at ``seq`` from its named slot ``got`` and
    its record; None: the page was loaded meanwhile, or the record is damaged (dropped as a get
    drops it)."""
    sid, _ts, loc = got
    if p.loaded:
        return None
    try:
        hdr, data = store._read_payload(seq, loc)
    except ErrCorruptRecord:
        from .indexed import _drop_damaged  # (the damaged record is dropped as a get drops it)

        _drop_damaged(store)
        return None
    subject = store._index.subjects.names[sid] or ""
    return sid, loc, subject, store.record_size(len(subject.encode()), len(hdr), len(data))


def _drop(index: SeqIndex, p: Page, seq: int, sid: int, size: int) -> None:
    """`SeqIndex.remove` of slot ``seq`` of the evicted page ``p``, its arrays left on disk (the
    message is neither its subject's first or last nor the stream's first)."""
    p.msgs -= 1
    p.bytes -= size
    p.drop(sid, 1)
    p.dels.append(seq)
    index.msgs -= 1
    index.bytes -= size
    index.subjects.msgs[sid] -= 1
    if not p.msgs and p is not index.tail:
        index._drop_page(p)
