"""Removing many messages of the index at once — a subject purge's (nats-server ``PurgeEx``), a
run's trims for the limits: the messages to go found page by page (the pages' subject counts say
which to look in; a page of nothing else is taken whole, a dense one in a C-speed pass over its
slots), then each page they lie in emptied of them in one pass (a run of neighbours with array
slices), and each subject's first and last, the stream's first, fixed once — instead of one
`SeqIndex.remove` per message, each fixing them again.

Kept apart from `seqindex` (the page layout) and `seqquery` (the queries): functions over a
`SeqIndex`, which they change only through its pages and its own helpers.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import compress

from ._index import find_value, zero_fill
from .pages import Page
from .seqindex import DELS_MAX, SeqIndex

__all__ = ["locs_of", "of_subjects", "oldest_of", "over_limits", "remove_seqs", "trimmed"]


def oldest_of(
    index: SeqIndex, sids: Collection[int], n: int, limit: int, whole: list[Page] | None = None
) -> list[int]:
    """The oldest ``n`` messages at or below ``limit`` on the subjects ``sids``, ascending: page
    by page from the oldest of their firsts (`_page_of`), stopping once ``n`` are found.
    ``whole``: a sealed page whose live messages all go (its subject counts say so) is put
    there instead of listing its sequences — it is dropped whole, neither loaded nor looked
    at (`remove_seqs`); the sequences returned and the pages together are the oldest ``n``."""
    table = index.subjects
    first, last = table.first, table.last
    want = set(sids)
    lo = min(first[sid] for sid in want)
    hi = min(limit, max(last[sid] for sid in want))
    out: list[int] = []
    pages = index.pages
    i = index._pi(lo)
    few = len(want) <= _FEW
    taken = 0  # (messages of the pages put in ``whole``)
    while i < len(pages) and len(out) + taken < n:
        p = pages[i]
        i += 1
        if p.first > hi:
            break
        index.visits += 1
        if few:
            have = [(sid, c) for sid in want if (c := p.count(sid))]
        else:
            have = [(sid, c) for sid, c in p.subjects() if sid in want]
        if not have:
            continue
        if whole is not None and _all_of(index, p, have, hi, n - len(out) - taken):
            whole.append(p)
            taken += p.msgs
            continue
        index._use(p)
        out.extend(_page_of(index, p, have, lo, hi))
    index.steps += len(want)
    del out[n - taken :]
    return out


def over_limits(index: SeqIndex, max_msgs: int, max_bytes: int) -> list[tuple[int, int]]:
    """The oldest live messages ``(seq, sid)``, ascending, whose removal makes ``max_msgs`` and
    ``max_bytes`` (0: no limit) hold — what nats-server's ``enforceMsgLimit`` and
    ``enforceBytesLimit`` remove, the first message at a time, until they do: found page by
    page from the stream's first, each page's slots read in turn (a run's trim removes them
    together: `IndexedStore._remove_trimmed`)."""
    over = index.msgs - max_msgs if max_msgs > 0 else 0
    excess = index.bytes - max_bytes if max_bytes > 0 else 0
    out: list[tuple[int, int]] = []
    if over <= 0 and excess <= 0:
        return out
    left = index.msgs
    pages = index.pages
    i = index._pi(index.first_seq)
    while i < len(pages) and (over > 0 or excess > 0) and left:
        p = pages[i]
        i += 1
        if not p.msgs:
            continue
        index.visits += 1
        index._use(p)
        sids, sizes, first = p.sids, p.sizes, p.first
        for k in range(max(index.first_seq - first, 0), p.n):
            sid = sids[k]
            if sid:
                out.append((first + k, sid))
                over -= 1
                excess -= sizes[k]
                left -= 1
                if (over <= 0 and excess <= 0) or not left:
                    break
    return out


def _all_of(index: SeqIndex, p: Page, have: list[tuple[int, int]], hi: int, room: int) -> bool:
    """Whether every live message of page ``p`` goes (``have``: its live counts of the wanted
    subjects): the page holds nothing else, none past ``hi``, no more than ``room``, and it
    is sealed (the tail is the active block, which is not dropped)."""
    return (
        p is not index.tail
        and p.end - 1 <= hi
        and p.msgs <= room
        and sum(c for _, c in have) == p.msgs
    )


# A purge of at most this many subjects asks each page for each; of more, each page for its own.
_FEW = 8
# A page's wanted messages are picked by a pass over its slots when at least one slot in this many
# holds one, else found one by one (each a search of the slots).
_DENSE = 32


def of_subjects(
    index: SeqIndex, subjects: Collection[str], keep: int = 0, whole: list[Page] | None = None
) -> list[int]:
    """The messages on each of the literal ``subjects`` but its newest ``keep``, ascending
    (`IndexedStore.purge_subjects`): one to go is the subject's first (no page looked at), more
    are found by `oldest_of` (``whole``: as there; pages of different subjects are distinct);
    a subject with no more than ``keep`` has none to give."""
    table = index.subjects
    ids, msgs, first = table.ids, table.msgs, table.first
    seqs: list[int] = []
    for subject in set(subjects):
        sid = ids.get(subject, 0)
        count = msgs[sid] - keep if sid else 0
        if count == 1:  # (its oldest)
            seqs.append(first[sid])
        elif count > 0:
            seqs.extend(oldest_of(index, (sid,), count, index.last_seq, whole))
    seqs.sort()
    if whole:
        whole.sort(key=_first_of)
    return seqs


def _first_of(p: Page) -> int:
    return p.first


def _page_of(index: SeqIndex, p: Page, have: list[tuple[int, int]], lo: int, hi: int) -> Iterable[int]:
    """The sequences in ``[lo, hi]`` of page ``p`` on the subjects ``have`` (``(sid, live count
    here)``), ascending: every live one when the page holds nothing else, else a C-speed pass over
    the slots (``compress``) when they are dense, else a search per message."""
    f = p.first
    a, b = max(lo - f, 0), min(hi - f + 1, p.n)
    if a >= b:
        return ()
    count = sum(c for _, c in have)
    index.steps += min(count, b - a)
    span = range(f + a, f + b)
    if count == p.msgs:  # nothing else is live here
        return span if p.msgs == p.n else compress(span, p.sids[a:b])
    if count * _DENSE >= b - a:
        if len(have) == 1:
            return compress(span, map(have[0][0].__eq__, p.sids[a:b]))
        return compress(span, map({sid for sid, _ in have}.__contains__, p.sids[a:b]))
    found: list[int] = []
    sids = p.sids
    for sid, c in have:
        j = find_value(sids, sid, a, b)
        left = c  # (the page's live count of the subject: once all are found, nothing to search)
        while j >= 0:
            found.append(f + j)
            left -= 1
            j = _next_here(p, sid, j, b) if left > 0 else -1
    found.sort()
    return found


def _next_here(p: Page, sid: int, j: int, b: int) -> int:
    """The slot after ``j`` below ``b`` holding subject ``sid`` in page ``p``, or -1: its link
    (past a few dead slots), else a search — not a search of every slot up to it (a subject
    delete marker's roll-up found the marker far after the expired message that way)."""
    f, nxt, sids = p.first, p.nxt, p.sids
    k = j
    for _ in range(8):
        n = nxt[k]
        if not n or n - f >= b:
            break
        k = n - f
        held = sids[k]
        if held == sid:
            return k
        if held:  # (a link that does not lead to the subject: trust only a search)
            break
    return find_value(sids, sid, j + 1, b)


def trimmed(
    index: SeqIndex, seq: int, sids: Sequence[int], over: list[tuple[int, int]], maxp: int
) -> list[tuple[int, int]]:
    """``(seq, sid)`` of what the per-subject limit removes after a run stored from ``seq`` on
    (`IndexedStore._trim_run`; ``sids``: the run's subject ids): of each subject id in ``over``
    (with its count in the run) the oldest beyond the newest ``maxp`` — those stored before (its
    first and the links on), then the run's own (their positions in the run, looked up only when
    the run alone passes the limit)."""
    table = index.subjects
    msgs, first = table.msgs, table.first
    gone: list[tuple[int, int]] = []
    inside: dict[int, int] = {}
    for sid, c in over:
        extra = msgs[sid] - maxp
        before = min(extra, msgs[sid] - c)
        if before:
            s = first[sid]
            gone.append((s, sid))
            for _ in range(before - 1):
                s = index._subj_next(s, sid)
                gone.append((s, sid))
        if extra > before:
            inside[sid] = extra - before
    if inside:
        for k, sid in enumerate(sids):
            left = inside.get(sid)
            if left:
                gone.append((seq + k, sid))
                inside[sid] = left - 1
    return gone


def locs_of(index: SeqIndex, seqs: list[int]) -> list[int]:
    """The backend locators of the live messages at ``seqs`` (ascending)."""
    out: list[int] = []
    for p, a, b in _by_page(index, seqs):
        index.visits += 1
        f, locs = p.first, p.locs
        if seqs[b - 1] - seqs[a] == b - a - 1:  # neighbours: a slice
            out.extend(locs[seqs[a] - f : seqs[b - 1] - f + 1])
        else:
            out.extend(locs[seq - f] for seq in seqs[a:b])
    return out


def _by_page(index: SeqIndex, seqs: list[int]) -> Iterator[tuple[Page, int, int]]:
    """``(page, a, b)``: ``seqs[a:b]`` lie in that page, loaded — until the next page is asked
    for (loading one may evict another: use each page before taking the next)."""
    a, n = 0, len(seqs)
    while a < n:
        p = index.page(seqs[a])
        assert p is not None, "a live message's page"
        b = bisect_left(seqs, p.first + p.n, a)
        yield p, a, b
        a = b


def remove_seqs(index: SeqIndex, seqs: list[int], keep_last: bool = False, whole: Sequence[Page] = ()) -> None:
    """Remove the live messages at ``seqs`` (ascending) at once (see the module docstring).
    ``keep_last``: each subject's last message stays (a limit's trim), so a subject left with
    one message has it as its first too. ``whole``: sealed pages (ascending, none holding one
    of ``seqs``) whose every live message goes too — dropped whole by their resident counts,
    one step each, their slots neither loaded nor looked at (as `SeqIndex.remove_prefix`)."""
    lost: Counter[int] = Counter()
    nbytes = 0
    gone = len(seqs)
    head = index.first_seq
    moved = bool(seqs) and seqs[0] == head
    emptied: list[Page] = []
    for p, a, b in _by_page(index, seqs):
        index.visits += 1
        nbytes += _cut(index, p, seqs[a:b], lost)
        if not p.msgs and p is not index.tail:
            emptied.append(p)
    for p in whole:
        index.visits += 1
        lost.update(dict(p.subjects()))
        nbytes += p.bytes
        gone += p.msgs
        moved = moved or p.first <= head < p.end
        emptied.append(p)
    for p in emptied:
        index._drop_page(p)
    index.steps += len(seqs) + len(whole)
    index.msgs -= gone
    index.bytes -= nbytes
    table = index.subjects
    live = index.live
    first, last = table.first, table.last
    for sid, m in index._subjects_lose(lost):
        if not m:
            continue
        if m == 1:  # the one left is its first or its last
            one = last[sid] if keep_last or live(last[sid]) else first[sid]
            if keep_last or live(one):
                first[sid] = last[sid] = one
                continue
        if not live(table.first[sid]):
            table.first[sid] = index._subj_next(table.first[sid], sid)
        if not live(table.last[sid]):
            table.last[sid] = index._subj_prev(table.last[sid], sid)
    if moved:
        index._advance_first_from(head + 1)


def _cut(index: SeqIndex, p: Page, seqs: list[int], lost: Counter[int]) -> int:
    """Empty the slots of ``seqs`` (all in page ``p``, live): their subjects counted into
    ``lost``; returns their bytes."""
    f = p.first
    sids, sizes, locs = p.sids, p.sizes, p.locs
    counts: Counter[int] = Counter()
    c = len(seqs)
    if seqs[-1] - seqs[0] + 1 == c:  # neighbours: slices
        a, z = seqs[0] - f, seqs[-1] - f + 1
        counts.update(sids[a:z])
        b = sum(sizes[a:z])
        zero_fill(sids, a, z)
        zero_fill(sizes, a, z)
        zero_fill(locs, a, z)
    else:  # (counted and summed in C: a Counter's Python ``__missing__`` ran for each new subject)
        ks = [seq - f for seq in seqs]
        counts.update(map(sids.__getitem__, ks))
        b = sum(map(sizes.__getitem__, ks))
        for k in ks:
            sids[k] = sizes[k] = locs[k] = 0
    if p.image:
        if len(p.dels) + c > DELS_MAX:
            p.image = False
            p.dels = []
        else:
            p.dels.extend(seqs)
    for sid, m in counts.items():
        p.drop(sid, m)
    lost.update(counts)  # (into an empty Counter: a dict's update, in C)
    p.msgs -= c
    p.bytes -= b
    return b
