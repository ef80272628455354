"""Find a run of HMSG frames for one subscription in a received buffer with array operations.

A bulk reader (batched direct get: thousands of replies per request) gets every frame of a
received chunk from :class:`.parser.ClientSideParser` in one :class:`.events.FrameRun`; the
parser walks the frames one by one (one regex match per control line). :func:`hmsg_run` finds
the same run without a Python step per frame, with numpy (the ``spark`` extra; this module is
imported only by readers that pass it to ``Client.subscribe_frames``):

1. every position where the first frame's control-line prefix (``HMSG <subject> <sid> ``) could
   start: the prefix's first byte, then the whole prefix compared at those positions;
2. at each, the two sizes (``<header size> <total size>\\r\\n``, as nats-server's ``processHeaderMsgArgs``
   reads them: decimal digits, at most 10 each), so where its header block, payload and the next op
   start;
3. the run: the frames that chain from the first one, each starting exactly where the previous
   one's payload and CRLF end. A candidate inside a payload (a payload that holds the prefix) or
   another op between two frames ends the run there; whatever follows is left to the parser's general
   loop, which parses it as before. Only frames found by the chain are returned, so the result is the
   one the per-frame walk gives (same frames, same offsets).
"""

from __future__ import annotations

import numpy as np

from pyjetstream.protocol.limits import MAX_SIZE_DIGITS

__all__ = ["hmsg_run"]

_SIZES = 2 * MAX_SIZE_DIGITS + 3  # "<hdr> <total>\r\n" at its longest
_COLS = np.arange(_SIZES)
_DIGIT_COLS = np.arange(MAX_SIZE_DIGITS)
_POW10 = 10 ** np.arange(MAX_SIZE_DIGITS - 1, -1, -1, dtype=np.int64)


def _numbers(a: np.ndarray, stop: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Per row, the decimal number of ``width`` (1-10, checked) digits ending before ``stop`` in ``a``:
    the ten bytes before ``stop``, the leading ones masked, dotted with the powers of ten."""
    window = a[np.maximum(stop[:, None] - MAX_SIZE_DIGITS + _DIGIT_COLS, 0)].astype(np.int64) - 48
    window[_DIGIT_COLS < MAX_SIZE_DIGITS - width[:, None]] = 0
    return window @ _POW10


def hmsg_run(buf: bytes, first: tuple[int, int, int], prefix: bytes) -> tuple[np.ndarray, int, bool]:
    """The frames of a run that starts with the complete frame ``first`` (its header start, payload
    start and payload end in ``buf``), then every complete frame right after it whose control line
    starts with ``prefix`` (``HMSG <subject> <sid> ``: no reply subject).

    Returns ``(offsets, pos, broken)``: ``offsets`` flat int64, three per frame as
    :class:`.events.FrameRun` holds them; ``pos`` where the next op starts; ``broken`` when the run
    ended at something other than the buffer's end or a frame of another kind (a candidate the chain
    did not reach: the caller walks the rest frame by frame, so a payload full of prefixes cannot
    make it scan the buffer again and again).
    """
    pos = first[2] + 2
    a = np.frombuffer(buf, np.uint8)
    size = len(a)
    plen = len(prefix)
    lim = size - plen - _SIZES  # a candidate must have room for its whole sizes window
    if lim <= pos:
        return np.array(first, np.int64), pos, False
    pre = np.frombuffer(prefix, np.uint8)
    cand = np.flatnonzero(a[pos:lim] == pre[0])
    cand += pos
    if len(cand) and plen > 1:
        cand = cand[(a[cand[:, None] + np.arange(plen)] == pre).all(axis=1)]
    if not len(cand) or cand[0] != pos:
        return np.array(first, np.int64), pos, False
    win = a[(cand + plen)[:, None] + _COLS]
    digits = win - 48  # uint8: a non-digit wraps to >= 10
    isdigit = digits < 10
    sp = np.argmin(isdigit, axis=1)  # the first non-digit: the space between the sizes
    after = ~isdigit & (_COLS > sp[:, None])
    cr = np.argmax(after, axis=1)  # the first non-digit after it: the CR
    rows = np.arange(len(cand))
    ok = (
        (sp >= 1)
        & (sp <= MAX_SIZE_DIGITS)
        & (win[rows, sp] == 32)
        & (cr - sp - 1 >= 1)
        & (cr - sp - 1 <= MAX_SIZE_DIGITS)
        & (cr <= _SIZES - 2)
    )
    cr = np.minimum(cr, _SIZES - 2)
    ok &= (win[rows, cr] == 13) & (win[rows, cr + 1] == 10)
    line = cand + plen
    hdr = _numbers(a, line + sp, np.where(ok, sp, 0))
    total = _numbers(a, line + cr, np.where(ok, cr - sp - 1, 0))
    head = cand + plen + cr + 2
    end = head + total
    ok &= (hdr <= total) & (end + 2 <= size)
    end_ok = np.minimum(end, size - 2)
    ok &= (a[end_ok] == 13) & (a[end_ok + 1] == 10)
    nxt = end + 2
    # Frame k+1 of the run is the candidate where frame k ends; the first that is not, or is not a
    # whole frame, ends the run (a frame k whose successor is no candidate still belongs to it).
    linked = np.zeros(len(cand), bool)
    linked[:-1] = cand[1:] == nxt[:-1]
    bad = np.flatnonzero(~ok)
    stop = len(cand) if not len(bad) else int(bad[0])  # frames 0..stop-1 are whole
    unlinked = np.flatnonzero(~linked[:stop])
    broken = False
    if len(unlinked):
        last = int(unlinked[0])  # frames 0..last chain; what follows frame `last` is something else
        broken = last + 1 < len(cand) and cand[last + 1] < nxt[last]  # a candidate inside its payload
        count = last + 1
    else:
        count = stop  # stopped at an incomplete or malformed frame (or none)
    out = np.empty((count + 1, 3), np.int64)
    out[0] = first
    out[1:, 0] = head[:count]
    out[1:, 1] = head[:count] + hdr[:count]
    out[1:, 2] = end[:count]
    return out.ravel(), int(nxt[count - 1]) if count else pos, bool(broken)
