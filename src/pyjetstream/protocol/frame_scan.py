"""Find a run of HMSG frames for one subscription in a received buffer with array operations.

A bulk reader (batched direct get, a consumer's deliveries: thousands of messages per request) gets
every frame of a received chunk from `parser.ClientSideParser` in one `events.FrameRun`;
the parser walks the frames one by one (one regex match per control line, ``parser._HMSG_LINE``).
`hmsg_run` finds the same run without a Python step per frame, with numpy (the ``spark`` extra;
this module is imported only by readers that pass it to ``Client.subscribe_frames``). It takes the
first frame's control line and picks one of two finders:

- the frames all start with the first one's ``HMSG <subject> <sid> `` (no reply subject: direct get
  replies to one inbox): every position where that prefix could start (its first byte, then the whole
  prefix compared there);
- otherwise (a reply subject, a consumer's deliveries of many subjects; or ``MSG <subject> <sid> <reply>
  <total>``, a consumer's deliveries without headers, header size 0): every ``HMSG `` (``MSG ``) where a frame
  of the run can start (the run's start, or right after a CRLF: where a payload ends) and, per
  candidate, its line's CR and space positions (``searchsorted`` into each byte's positions): four or
  five single-space-separated tokens, no tab or LF, the sid token equal to the first's (the LF and
  tab positions are looked up only when the buffer holds a tab or an LF outside a CRLF: two of the
  five passes over the buffer the finder used to make, the most expensive part of it);

then, for both, the two sizes (``<header size> <total size>\r\n``, as nats-server's
``processHeaderMsgArgs`` reads them: decimal digits, at most 10 each), so where its header block,
payload and the next op start; and the run: the frames that chain from the first one, each starting
exactly where the previous one's payload and CRLF end. A candidate inside a payload (a payload that
holds the prefix) or another op between two frames ends the run there; whatever follows is left to the
parser's general loop, which parses it as before. Only frames found by the chain are returned, so the
result is the one the per-frame walk gives (same frames, same offsets).
"""

from __future__ import annotations

import numpy as np

from pyjetstream.protocol.limits import MAX_SIZE_DIGITS

__all__ = ["hmsg_run"]

_SIZES = 2 * MAX_SIZE_DIGITS + 3  # "<hdr> <total>\r\n" at its longest
_COLS = np.arange(_SIZES)
_DIGIT_COLS = np.arange(MAX_SIZE_DIGITS)
_POW10 = 10 ** np.arange(MAX_SIZE_DIGITS - 1, -1, -1, dtype=np.int64)
_POW10F = _POW10.astype(np.float64)


def _numbers(a: np.ndarray, stop: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Per row, the decimal number of ``width`` (1-10, checked) digits ending before ``stop`` in ``a``:
    the ten bytes before ``stop``, the leading ones masked, dotted with the powers of ten."""
    window = a[np.maximum(stop[:, None] - MAX_SIZE_DIGITS + _DIGIT_COLS, 0)].astype(np.int64) - 48
    window[_DIGIT_COLS < MAX_SIZE_DIGITS - width[:, None]] = 0
    return window @ _POW10


def hmsg_run(buf: bytes, first: tuple[int, int, int], line: bytes) -> tuple[np.ndarray, int, bool] | None:
    """The frames of a run that starts with the complete frame ``first`` (its header start, payload
    start and payload end in ``buf``; ``line`` its control line, as servers write it: single spaces),
    then every complete frame right after it for the same sid; None for a line not in that form (the
    parser's walk takes the run)."""
    parts = line.split(b" ")
    if not all(parts):
        return None
    if parts[0] == b"MSG" and len(parts) == 5:  # a consumer's delivery without headers
        return _any_run(buf, first, parts[2], msg=True)
    if parts[0] != b"HMSG" or not 5 <= len(parts) <= 6:
        return None
    if len(parts) == 5:
        return _prefix_run(buf, first, b" ".join(parts[:3]) + b" ")
    return _any_run(buf, first, parts[2])


def _prefix_run(buf: bytes, first: tuple[int, int, int], prefix: bytes) -> tuple[np.ndarray, int, bool]:
    """The run of frames whose control lines start with ``prefix`` (``HMSG <subject> <sid> ``: no
    reply subject).

    Returns ``(offsets, pos, broken)``: ``offsets`` flat int64, three per frame as
    `events.FrameRun` holds them; ``pos`` where the next op starts; ``broken`` when the run
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
    return _chain(first, cand, ok, head, hdr, end, pos)


def _chain(
    first: tuple[int, int, int],
    cand: np.ndarray,
    ok: np.ndarray,
    head: np.ndarray,
    hdr: np.ndarray,
    end: np.ndarray,
    pos: int,
) -> tuple[np.ndarray, int, bool]:
    """The frames that chain from ``first``: candidate ``i`` (whole when ``ok``) has its header block
    at ``head``, ``hdr`` bytes of it, and its payload ending at ``end``."""
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


_HMSG = np.frombuffer(b"HMSG ", np.uint8)
_MSG = np.frombuffer(b"MSG ", np.uint8)


def _after(positions: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per ``at``: the first of ``positions`` at or after it, and whether there is one."""
    i = np.searchsorted(positions, at)
    has = i < len(positions)
    if not len(positions):
        return at, has
    return positions[np.minimum(i, len(positions) - 1)], has


def _checked_numbers(a: np.ndarray, stop: np.ndarray, width: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the decimal number of ``width`` (1-10) bytes ending before ``stop``, and whether they
    are all digits (bytes, wrapping below "0"; the dot product in float64, exact below 2**53). The
    window is as wide as the widest number here, not `MAX_SIZE_DIGITS`: a third of the work for the
    2-4 digit sizes of a run of small messages."""
    cols = min(max(int(width.max(initial=1)), 1), MAX_SIZE_DIGITS)
    at = _DIGIT_COLS[:cols]
    window = a[np.maximum(stop[:, None] - cols + at, 0)] - np.uint8(48)
    window[at < cols - width[:, None]] = 0
    return (window @ _POW10F[MAX_SIZE_DIGITS - cols :]).astype(np.int64), np.asarray((window < 10).all(axis=1))


def _any_run(
    buf: bytes, first: tuple[int, int, int], sid: bytes, msg: bool = False
) -> tuple[np.ndarray, int, bool]:
    """The run of frames for ``sid`` whose control lines are ``HMSG <subject> <sid> [<reply>] <hdr>
    <total>`` with any subject and reply (what ``parser._HMSG_LINE`` matches: single spaces, no tab,
    CR or LF in a token, 1-10 digits per size); with ``msg``, ``MSG <subject> <sid> [<reply>] <total>``
    (a consumer's deliveries without headers: header size 0)."""
    word = _MSG if msg else _HMSG
    fields = 3 if msg else 4  # spaces in a line without a reply subject
    pos = first[2] + 2
    a = np.frombuffer(buf, np.uint8)
    size = len(a)
    if size - pos < 16:  # "HMSG s 1 0 0\r\n\r\n" at the least
        return np.array(first, np.int64), pos, False
    region = a[pos:]
    cr = np.flatnonzero(region == 13)
    cr += pos
    # A frame of the run starts at pos or right after the CRLF that ends the previous payload: the
    # candidates are the "HMSG " there (the chain below links only those anyway).
    crlf = cr[a[np.minimum(cr + 1, size - 1)] == 10]
    crlf = crlf[crlf + 1 < size]
    cand: np.ndarray = np.concatenate((np.array([pos], np.int64), crlf + 2))
    cand = cand[cand < size - 5]
    cand = cand[a[cand] == word[0]]
    if len(cand):
        cand = cand[(a[cand[:, None] + np.arange(len(word))] == word).all(axis=1)]
    if not len(cand) or cand[0] != pos:
        return np.array(first, np.int64), pos, False
    line_end, ok = _after(cr, cand)
    ok &= line_end + 1 < size
    line_end = np.where(ok, line_end, size - 2)
    if np.count_nonzero(region == 10) == len(crlf):
        # Every LF ends a CRLF: none is inside a line (its CR would end the line before it).
        ok &= a[line_end + 1] == 10
    else:
        lf_at, has_lf = _after(np.flatnonzero(region == 10) + pos, cand)
        ok &= has_lf & (lf_at == line_end + 1)
    if buf.find(b"\t", pos) >= 0:
        tab_at, has_tab = _after(np.flatnonzero(region == 9) + pos, cand)
        ok &= ~has_tab | (tab_at > line_end)
    sp = np.flatnonzero(region == 32) + pos
    k = np.searchsorted(sp, cand)
    spaces = np.searchsorted(sp, line_end) - k  # in the line
    # A MSG without a reply subject is no frame of the run (the parser makes it a Msg).
    ok &= (spaces == fields + 1) if msg else ((spaces == fields) | (spaces == fields + 1))
    spaces = np.where(ok, spaces, fields)
    last_sp = len(sp) - 1

    def space(j: np.ndarray | int) -> np.ndarray:
        return sp[np.minimum(k + j, last_sp)]

    s0, s1, s2, s3 = space(0), space(1), space(2), space(3)
    # "HMSG " ("MSG "), a subject, the sid
    ok &= (s0 == cand + len(word) - 1) & (s1 > s0 + 1) & (s2 - s1 - 1 == len(sid))
    sid_arr = np.frombuffer(sid, np.uint8)
    ok &= (a[np.minimum(s1[:, None] + 1 + np.arange(len(sid)), size - 1)] == sid_arr).all(axis=1)
    ok &= (spaces == fields) | (s3 > s2 + 1)  # a reply subject of one byte or more
    before_total = space(spaces - 1)
    total_width = line_end - before_total - 1
    ok &= (total_width >= 1) & (total_width <= MAX_SIZE_DIGITS)
    if msg:
        hdr = np.zeros(len(cand), np.int64)
    else:
        hdr_width = before_total - np.where(spaces == 5, s3, s2) - 1
        ok &= (hdr_width >= 1) & (hdr_width <= MAX_SIZE_DIGITS)
        hdr, hdr_ok = _checked_numbers(a, before_total, np.where(ok, hdr_width, 1))
        ok &= hdr_ok
    total, total_ok = _checked_numbers(a, line_end, np.where(ok, total_width, 1))
    ok &= total_ok
    head = line_end + 2
    end = head + total
    ok &= (hdr <= total) & (end + 2 <= size)
    end_ok = np.minimum(end, size - 2)
    ok &= (a[end_ok] == 13) & (a[end_ok + 1] == 10)
    return _chain(first, cand, ok, head, hdr, end, pos)
