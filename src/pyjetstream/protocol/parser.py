"""Incremental, sans-IO parsers for the NATS wire protocol.

Two verbs, as in h11: ``feed(bytes) -> list[event]``. Bytes may arrive split at any boundary; the
parser keeps what it has not consumed. ``ServerSideParser`` reads what clients send (ops are
case-insensitive, as nats-server matches them); ``ClientSideParser`` reads what servers send.

Framing facts (nats-server ``parser.go``): a control line ends at LF, a CR before it is dropped;
arguments are split on *runs* of spaces/tabs (nats.py sends ``PUB subj  5``); a payload is exactly
the announced size followed by a mandatory CRLF.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import partial
from typing import Any, Final

from pyjetstream.protocol.events import (
    OK_EVENT,
    PING_EVENT,
    PONG_EVENT,
    ClientOp,
    Connect,
    Err,
    FrameRun,
    Info,
    Msg,
    MsgRun,
    ProtocolViolation,
    Pub,
    PubRun,
    ServerOp,
    Sub,
    Unsub,
)
from pyjetstream.protocol.limits import MAX_CONTROL_LINE, MAX_PAYLOAD, MAX_SIZE_DIGITS

ERR_UNKNOWN_OP: Final = "Unknown Protocol Operation"
ERR_MAX_PAYLOAD: Final = "Maximum Payload Violation"
ERR_MAX_CONTROL_LINE: Final = "maximum control line exceeded"


def _parse_size(token: bytes) -> int:
    """A decimal size as nats-server's ``parseSize``: digits only, at most 10 of them, else -1."""
    if not token or len(token) > MAX_SIZE_DIGITS or not token.isdigit():
        return -1
    return int(token)


# A fast-path parse ``(kind, x, need)``; ``need`` is the payload size and the event is
# ``_complete(x, payload)`` for COMPLETE, ``x(payload)`` for MAKE (``x`` a partial over the parsed
# parts) and ``x + (payload,)`` for TUPLE (``x`` the event's leading fields ``(subject, reply,
# None)``, for a subclass that takes plain tuples: see ``ServerSideParser.pub_tuples``); HTUPLE is
# an HPUB's ``(subject, reply, header size)``, the tuple ``(subject, reply, hdr, payload)`` once the
# body is split. With ``pub_runs`` a complete TUPLE or HTUPLE frame starts a :class:`PubRun`.
# FRAMES: an HMSG, or a MSG with a reply subject, for a sid in ``ClientSideParser.frame_sids``; ``x`` is
# ``(sid, header size, line)`` (0 for a MSG) and the frame starts a :class:`FrameRun`. MSGS: a reply-less MSG for a sid in
# ``ClientSideParser.msg_run_sids``; ``x`` is ``(sid, subject)`` and the frame starts a :class:`MsgRun`.
COMPLETE: Final = 0
MAKE: Final = 1
TUPLE: Final = 2
FRAMES: Final = 3
HTUPLE: Final = 4
MSGS: Final = 5
FastLine = tuple[int, Any, int]

# Reply-less PUB/HPUB control lines a server-side parser has parsed, with their parse, shared by
# every connection of the process (one table per ``pub_tuples``): a publisher cycling over many
# subjects (or many publishers over the same ones) has each line split and decoded once, and the
# router and the framers get the same subject ``str`` each time (its hash cached). A parse is
# the same whatever the connection, but for the limits, checked on each hit. A line is kept the
# second time it is seen (`_SEEN` holds the hashes of the lines seen once): a line unique to its
# message (a reply to a request's own inbox) costs a hash in a set, not an entry kept alive.
# Bounded: lines of at most LINE_CACHE_LEN bytes, each table emptied when it holds LINE_CACHE_SIZE.
LINE_CACHE_SIZE: Final = 4096
LINE_CACHE_LEN: Final = 256
_PUB_LINES: Final[dict[bytes, FastLine]] = {}
_TUPLE_LINES: Final[dict[bytes, FastLine]] = {}
_SEEN: Final[set[int]] = set()


class _FrameParser:
    """Shared framing: control lines, then (for message ops) a payload of a known size."""

    pub_runs = False  # see ServerSideParser

    def __init__(self, max_control_line: int, max_payload: int) -> None:
        self.max_control_line = max_control_line
        self.max_payload = max_payload
        # Unconsumed bytes from earlier feeds. ``bytes`` (not bytearray): slicing a payload out of
        # it is then a single copy.
        self._rest = b""
        # Later reads of an awaited payload that several reads have not completed yet (after
        # ``_rest``), and their size: joined once, when the frame is complete (see `feed`).
        self._more: list[bytes] = []
        self._more_size = 0
        self._broken = False
        # When not None: makes the event of the op waiting for its payload of ``_need`` bytes
        # (without CRLF).
        self._awaiting: Callable[[bytes], Any] | None = None
        self._need = 0
        # The last remembered fast-path control line (without CR LF) and its parse.
        self._last_line = b""
        self._last_hit: FastLine | None = None
        # Lines parsed before, by any connection (server side: `_PUB_LINES`); None on the client side.
        self._lines: dict[bytes, FastLine] | None = None

    def feed(self, data: bytes) -> list[Any]:
        """The events of the frames completed by ``data``; what is left of it is kept for the next feed.

        A frame split across reads is completed without copying the whole read: a payload whose
        first bytes came earlier is joined with just the head of ``data`` that completes it, and the
        rest of ``data`` is parsed where it lies (nats-server keeps such a message's bytes in its
        ``msgBuf`` the same way); only a control line split across reads — a few bytes — is
        prepended to the read. Large payloads make every read end mid-frame: joining the
        remainder with the whole next read copied every byte once more."""
        if self._broken:
            return []
        buf = bytes(data)
        events: list[Any] = []
        pos = 0
        rest = self._rest
        if rest:
            if self._awaiting is None:  # a control line split across reads (it has no LF yet)
                buf = rest + buf
            else:
                missing = self._need + 2 - len(rest) - self._more_size
                if len(buf) < missing:  # the payload continues in later reads: joined when complete
                    self._more.append(buf)
                    self._more_size += len(buf)
                    return events
                view = memoryview(buf)
                if missing >= 2 and buf[missing - 2] == 13 and buf[missing - 1] == 10:
                    # The payload, joined in one copy (its CR LF checked where it lies).
                    event = self._awaiting(b"".join([rest, *self._more, view[: missing - 2]]))
                    self._awaiting = None
                    if event is not None:
                        events.append(event)
                else:  # the CR LF split too, or missing: the general loop checks and reports it
                    self._scan(b"".join([rest, *self._more, view[:missing]]), 0, events)
                self._more = []
                self._more_size = 0
                if self._broken:
                    self._rest = b""
                    return events
                pos = missing
        pos = self._scan(buf, pos, events)
        self._rest = b"" if self._broken else buf[pos:]
        return events

    def _scan(self, buf: bytes, pos: int, events: list[Any]) -> int:
        """Append the events of the complete frames in ``buf`` from ``pos`` on; returns where the
        first incomplete one starts (the state machine: exempt from the function size limit)."""
        append = events.append
        size = len(buf)
        find = buf.find
        max_line = self.max_control_line
        complete = self._complete
        lines = self._lines
        while pos < size:
            if self._awaiting is not None:
                end = pos + self._need
                if end + 2 > size:
                    break
                if buf[end] != 13 or buf[end + 1] != 10:
                    events.append(self._violation(ERR_UNKNOWN_OP, "payload not followed by CRLF"))
                    break
                event = self._awaiting(buf[pos:end])
                self._awaiting = None
                pos = end + 2
                if event is not None:
                    events.append(event)
                continue
            nl = find(b"\n", pos)
            if nl < 0:
                if size - pos > max_line and self._limits_line(buf, pos):
                    events.append(self._violation(ERR_MAX_CONTROL_LINE))
                break
            line_end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
            line = buf[pos:line_end]
            # Hot path (PUB/HPUB on the server side, MSG on the client side): a known line, or one
            # the fast parser accepts, and the payload sliced straight out when it is all here.
            repeat = line == self._last_line
            if repeat:
                hit = self._last_hit
            elif line_end - pos <= max_line:
                # (the shared lines are PUB / HPUB lines: a SUB line is not looked up)
                hit = lines.get(line) if lines is not None and buf[pos] != 83 else None
                if hit is None or hit[2] > self.max_payload:
                    try:
                        hit = self._fast_line(line)  # (a native call when compiled: not through a bound method)
                    except UnicodeDecodeError:  # the full parse below closes the connection
                        hit = None
            else:
                hit = None
            if hit is not None:
                kind, x, need = hit
                start = nl + 1
                end = start + need
                if end + 2 <= size:
                    if buf[end] != 13 or buf[end + 1] != 10:
                        events.append(self._violation(ERR_UNKNOWN_OP, "payload not followed by CRLF"))
                        break
                    if kind == TUPLE or kind == HTUPLE:
                        if self.pub_runs:  # more publishes may follow: one PubRun for them all
                            pos = self._pub_run(buf, start, end, kind, x, append)
                            continue
                        if kind == TUPLE:
                            events.append(x + (buf[start:end],))  # noqa: RUF005  (2x faster than unpacking)
                        else:
                            mid = start + x[2]
                            events.append((x[0], x[1], buf[start:mid], buf[mid:end]))
                    elif kind == FRAMES:
                        pos = self._frame_run(buf, start, end, x, append)
                        continue
                    elif kind == MSGS:
                        pos = self._msg_run(buf, start, end, x, append)
                        continue
                    elif kind == COMPLETE:
                        events.append(complete(x, buf[start:end]))
                    else:
                        events.append(x(buf[start:end]))
                    pos = end + 2
                else:
                    self._awaiting = _awaiting_maker(kind, x, complete)
                    self._need = need
                    pos = start
                continue
            pos = nl + 1
            try:
                event = self._control_line(line)
            except UnicodeDecodeError:
                # Subjects, sids and replies are text here: a line that is not UTF-8 closes the
                # connection (nats-server, which keeps subjects as bytes, accepts it).
                event = self._violation(None, "control line is not UTF-8")
            if event is not None:
                events.append(event)
                if isinstance(event, ProtocolViolation):
                    if event.hpub is not None:  # an oversized HPUB: the header block read so far
                        event.head = buf[pos : pos + event.hpub[1]]
                    break
        return pos

    def _pub_run(
        self, buf: bytes, start: int, end: int, kind: int, x: tuple[Any, ...], append: Callable[[Any], None]
    ) -> int:
        """Collect the complete publish at ``start:end`` (its fast-path parse ``kind``, ``x``) and
        every complete PUB/HPUB frame right after it that the fast path takes (any subject, reply
        and header block) into one `PubRun`; returns the position after them. A lone
        publish stays a tuple. Anything else (another op, a line the fast path leaves to the
        general loop, a partial frame, a payload not followed by CR LF) ends the run and is left to
        the general loop, which parses or reports it as it would without runs: the frames taken
        are exactly the ones the fast path would have made into tuples, one by one."""
        subjects = [x[0]]
        replies = [x[1]]
        if kind == TUPLE:
            hdrs: list[bytes | None] = [None]
            payloads = [buf[start:end]]
        else:
            mid = start + x[2]
            hdrs = [buf[start:mid]]
            payloads = [buf[mid:end]]
        pos = end + 2
        size = len(buf)
        find = buf.find
        max_line = self.max_control_line
        lines = self._lines
        while pos < size:
            nl = find(b"\n", pos)
            if nl < 0:
                break
            line_end = nl - 1 if nl > pos and buf[nl - 1] == 13 else nl
            line = buf[pos:line_end]
            if line == self._last_line:
                hit = self._last_hit
            elif line_end - pos <= max_line:
                # (the shared lines are PUB / HPUB lines: a SUB line is not looked up)
                hit = lines.get(line) if lines is not None and buf[pos] != 83 else None
                if hit is None or hit[2] > self.max_payload:
                    try:
                        hit = self._fast_line(line)
                    except UnicodeDecodeError:
                        break
            else:
                break
            if hit is None:
                break
            k, y, need = hit
            begin = nl + 1
            stop = begin + need
            if stop + 2 > size or buf[stop] != 13 or buf[stop + 1] != 10:
                break
            # (its parse typed: compiled, its items are read natively, not by generic subscripts)
            if k == TUPLE:
                pub: tuple[str, str, None] = y
                hdrs.append(None)
                payloads.append(buf[begin:stop])
                subjects.append(pub[0])
                replies.append(pub[1])
            elif k == HTUPLE:
                hpub: tuple[str, str, int] = y
                mid = begin + hpub[2]
                hdrs.append(buf[begin:mid])
                payloads.append(buf[mid:stop])
                subjects.append(hpub[0])
                replies.append(hpub[1])
            else:
                break
            pos = stop + 2
        if len(payloads) == 1:
            append((subjects[0], replies[0], hdrs[0], payloads[0]))
        else:
            append(PubRun(subjects, replies, hdrs, payloads))
        return pos

    def _frame_run(
        self, buf: bytes, start: int, end: int, x: tuple[int, int, bytes], append: Callable[[Any], None]
    ) -> int:
        """See `ClientSideParser._frame_run` (only a client parser makes FRAMES hits)."""
        raise NotImplementedError

    def _msg_run(
        self, buf: bytes, start: int, end: int, x: tuple[int, bytes], append: Callable[[Any], None]
    ) -> int:
        """See `ClientSideParser._msg_run` (only a client parser makes MSGS hits)."""
        raise NotImplementedError

    def _fast_line(self, line: bytes) -> FastLine | None:
        """Parse a hot op's control line, or None to take the general path (which reports any
        error). A line without a reply goes to ``_remember``: a publisher repeats the same
        ``PUB <subject> <size>`` line, and the split/decode/int work is then done once for all of
        them (a reply is usually unique to its message: not worth remembering)."""
        return None

    def _remember(self, line: bytes, hit: FastLine) -> FastLine:
        self._last_line = line
        self._last_hit = hit
        return hit

    def _limits_line(self, buf: bytes, pos: int) -> bool:
        """Whether the line starting at ``pos`` is subject to the control line limit."""
        return True

    def _violation(self, err: str | None, detail: str = "") -> ProtocolViolation:
        self._broken = True
        return ProtocolViolation(err, detail)

    def _expect_payload(self, op: tuple[Any, ...], need: int) -> None:
        self._awaiting = partial(self._complete, op)
        self._need = need

    def _control_line(self, line: bytes) -> Any:
        raise NotImplementedError

    def _complete(self, op: tuple[Any, ...], body: bytes) -> Any:
        raise NotImplementedError

    @property
    def buffered(self) -> int:
        """Bytes received but not yet turned into events."""
        return len(self._rest) + self._more_size


def _awaiting_maker(kind: int, x: Any, complete: Callable[[Any, bytes], Any]) -> Callable[[bytes], Any]:
    """The event maker of a fast-path line whose payload has not all arrived yet."""
    if kind == TUPLE:
        return partial(_tuple_event, x)
    if kind == HTUPLE:
        return partial(_htuple_event, x)
    if kind == FRAMES:
        return partial(_frame_event, x)
    if kind == MSGS:
        return partial(_msg_run_event, x)
    if kind == COMPLETE:
        return partial(complete, x)
    return x  # type: ignore[no-any-return]


def _tuple_event(head: tuple[Any, ...], body: bytes) -> tuple[Any, ...]:
    return (*head, body)


def _htuple_event(head: tuple[Any, ...], body: bytes) -> tuple[Any, ...]:
    """An HPUB's tuple: ``head`` is ``(subject, reply, header size)``."""
    mid = head[2]
    return (head[0], head[1], body[:mid], body[mid:])


def _frame_event(head: tuple[int, int, bytes], body: bytes) -> FrameRun:
    """A raw-read frame whose payload arrived in a later feed: a run of one, its control line put
    back before it (a frame's control line always ends right before its header block)."""
    start = len(head[2]) + 2
    return FrameRun(head[0], head[2] + b"\r\n" + body, [start, start + head[1], start + len(body)])


def _msg_run_event(head: tuple[int, bytes], body: bytes) -> MsgRun:
    """A run-read MSG whose payload arrived in a later feed: a run of one."""
    return MsgRun(head[0], [head[1]], [body])


def _fast_size(token: bytes) -> int:
    """A size token the fast path accepts (-1: let the general path judge it)."""
    if len(token) > MAX_SIZE_DIGITS or not token.isdigit():
        return -1
    return int(token)


class ServerSideParser(_FrameParser):
    """Parses the client→server ops: CONNECT PUB HPUB SUB UNSUB PING PONG.

    A subclass that sets ``pub_tuples`` (and overrides ``_complete`` to match) gets each PUB/HPUB
    as a plain ``(subject, reply, hdr, payload)`` tuple instead of a `Pub`: the embedded
    server's `NatsServerParser` does, a tuple costs a fraction of an event object on its
    hottest path.
    """

    pub_tuples = False
    #: With ``pub_tuples``: turn consecutive complete publishes of a read into one :class:`PubRun`
    #: (set by the server connection: only when no publish needs a per-message check, and only
    #: while the server's ``runs`` option is on).
    pub_runs = False

    def __init__(
        self,
        max_control_line: int = MAX_CONTROL_LINE,
        max_payload: int = MAX_PAYLOAD,
    ) -> None:
        super().__init__(max_control_line, max_payload)
        # The subject and size of the last ``PUB <subject> <reply> <size>`` line: a requester (or a
        # JetStream publisher) sends the same subject and size with a new reply each time, so the
        # line cannot be remembered whole, but its subject's ``str`` (hash cached for the router's
        # lookup) and its size can.
        self._pub_subject_b = b""
        self._pub_subject = ""
        self._pub_size_tok = b""
        self._pub_size = 0
        self._lines = _TUPLE_LINES if self.pub_tuples else _PUB_LINES

    def feed(self, data: bytes) -> list[ClientOp]:
        return super().feed(data)

    def _fast_line(self, line: bytes) -> FastLine | None:
        if line.startswith(b"PUB "):  # the hottest op: its size check inlined
            args = line.split()
            n = len(args)
            tok = args[-1]
            if n == 4 and tok == self._pub_size_tok and args[1] == self._pub_subject_b:
                # The last request line's subject and size with a new reply (see __init__).
                size = self._pub_size
                if size <= self.max_payload:
                    if self.pub_tuples:
                        return TUPLE, (self._pub_subject, args[2].decode(), None), size
                    return COMPLETE, (self._pub_subject, args[2].decode(), 0), size
            if (n == 3 or n == 4) and tok.isdigit() and len(tok) <= MAX_SIZE_DIGITS:
                size = int(tok)
                if size <= self.max_payload:
                    head: tuple[str, str, int | None]
                    if self.pub_tuples:
                        kind, head = TUPLE, (args[1].decode(), args[2].decode() if n == 4 else "", None)
                    else:
                        kind, head = COMPLETE, (args[1].decode(), args[2].decode() if n == 4 else "", 0)
                    if n == 4:
                        self._pub_subject_b, self._pub_subject = args[1], head[0]
                        self._pub_size_tok, self._pub_size = tok, size
                        return kind, head, size
                    # Remembered (``_remember``, inlined for the hot path).
                    hit = self._last_hit = kind, head, size
                    self._last_line = line
                    self._share(line, hit)
                    return hit
        elif line.startswith(b"HPUB "):
            args = line.split()
            n = len(args)
            if n == 4 or n == 5:
                hdr = _fast_size(args[-2])
                total = _fast_size(args[-1])
                if 0 <= hdr <= total <= self.max_payload:
                    reply = args[2].decode() if n == 5 else ""
                    if self.pub_tuples:
                        hit = HTUPLE, (args[1].decode(), reply, hdr), total
                    else:
                        hit = COMPLETE, (args[1].decode(), reply, hdr or -1), total
                    if n == 5:
                        return hit
                    self._share(line, hit)
                    return self._remember(line, hit)
        return None

    def _share(self, line: bytes, hit: FastLine) -> None:
        """Keep a reply-less line's parse for every connection (`_PUB_LINES`) the second time it
        is seen."""
        lines = self._lines
        if lines is None or len(line) > LINE_CACHE_LEN:
            return
        key = hash(line)  # (computed by the table's lookup: cached in the bytes)
        seen = _SEEN
        if key not in seen:
            if len(seen) >= LINE_CACHE_SIZE:
                seen.clear()
            seen.add(key)
            return
        if len(lines) >= LINE_CACHE_SIZE:
            lines.clear()
        lines[line] = hit

    def _limits_line(self, buf: bytes, pos: int) -> bool:
        # nats-server applies the limit to op arguments, not to CONNECT (which may carry a long JWT).
        return buf[pos : pos + 7].upper() != b"CONNECT"

    def _control_line(self, line: bytes) -> ClientOp | None:
        args = line.split()
        if line.startswith(b"SUB ") and len(args) == 3 and len(line) <= self.max_control_line:
            # The op a client sends most after PUB (a subscriber's start-up: thousands in a row).
            return Sub(args[1].decode(), "", args[2].decode())
        if not args:
            # nats-server tolerates empty lines between ops.
            return None
        op = args[0].upper()
        if len(line) > self.max_control_line and op != b"CONNECT":
            return self._violation(ERR_MAX_CONTROL_LINE)
        if op == b"PUB":
            return self._pub(args)
        if op == b"HPUB":
            return self._hpub(args)
        if op == b"PING":
            return PING_EVENT
        if op == b"PONG":
            return PONG_EVENT
        if op == b"SUB":
            return self._sub(args)
        if op == b"UNSUB":
            return self._unsub(args)
        if op == b"CONNECT":
            return self._connect(line)
        return self._violation(ERR_UNKNOWN_OP, f"unknown op {op[:16]!r}")

    def _pub(self, args: list[bytes]) -> ClientOp | None:
        if len(args) == 3:
            subject, reply, size_tok = args[1], b"", args[2]
        elif len(args) == 4:
            subject, reply, size_tok = args[1], args[2], args[3]
        else:
            return self._violation(None, "processPub Parse Error")
        size = _parse_size(size_tok)
        if size < 0:
            return self._violation(None, "processPub Bad or Missing Size")
        if size > self.max_payload:
            return self._violation(ERR_MAX_PAYLOAD)
        self._expect_payload((subject.decode(), reply.decode(), 0), size)
        return None

    def _hpub(self, args: list[bytes]) -> ClientOp | None:
        if len(args) == 4:
            subject, reply, hdr_tok, tot_tok = args[1], b"", args[2], args[3]
        elif len(args) == 5:
            subject, reply, hdr_tok, tot_tok = args[1], args[2], args[3], args[4]
        else:
            return self._violation(None, "processHeaderPub Parse Error")
        hdr = _parse_size(hdr_tok)
        total = _parse_size(tot_tok)
        if hdr < 0 or total < 0 or hdr > total:
            return self._violation(None, "processHeaderPub Bad or Missing Size")
        if total > self.max_payload:
            violation = self._violation(ERR_MAX_PAYLOAD)
            if hdr > 0:
                violation.hpub = (subject.decode(), hdr, total)
            return violation
        self._expect_payload((subject.decode(), reply.decode(), hdr or -1), total)
        return None

    def _complete(self, op: tuple[Any, ...], body: bytes) -> Pub:
        subject, reply, hdr_len = op
        if hdr_len == 0:
            return Pub(subject, reply, None, body)
        if hdr_len < 0:  # HPUB announcing an empty header block
            return Pub(subject, reply, b"", body)
        return Pub(subject, reply, body[:hdr_len], body[hdr_len:])

    def _sub(self, args: list[bytes]) -> ClientOp:
        if len(args) == 3:
            return Sub(args[1].decode(), "", args[2].decode())
        if len(args) == 4:
            return Sub(args[1].decode(), args[2].decode(), args[3].decode())
        return self._violation(None, "processSub Parse Error")

    def _unsub(self, args: list[bytes]) -> ClientOp:
        if len(args) == 2:
            return Unsub(args[1].decode(), 0)
        if len(args) == 3:
            max_msgs = _parse_size(args[2])
            if max_msgs < 0:
                return self._violation(None, "processUnsub Bad or Missing Size")
            return Unsub(args[1].decode(), max_msgs)
        return self._violation(None, "processUnsub Parse Error")

    def _connect(self, line: bytes) -> ClientOp:
        body = line[7:].strip()
        try:
            options = json.loads(body)
        except ValueError:
            return self._violation(None, "CONNECT with invalid JSON")
        if not isinstance(options, dict):
            return self._violation(None, "CONNECT with invalid JSON")
        return Connect(options)


_OPS_WITH_ARGS = (b"PUB", b"SUB", b"UNSUB", b"HPUB")
_BLANKS: Final = b" \t"


class NatsServerParser(ServerSideParser):
    """The embedded server's parser: `ServerSideParser` answering malformed lines as
    nats-server does, and PUB/HPUB as plain ``(subject, reply, hdr, payload)`` tuples.

    nats-server's parser (``parser.go``) is a byte state machine; a few malformed lines it answers
    differently from a line splitter: an empty or whitespace-led line and a bare ``PUB``/``SUB``/
    ``UNSUB``/``HPUB`` are ``Unknown Protocol Operation``, and an unparsable ``UNSUB`` max means
    "now". A tuple is a fraction of the cost of a `Pub` on the per-message path.
    """

    pub_tuples = True

    def feed(self, data: bytes) -> list[Any]:  # tuples for PUB/HPUB, events for the rest
        return _FrameParser.feed(self, data)

    def _control_line(self, line: bytes) -> Any:
        # Hot path: every real op line is longer than 5 bytes or is PING/PONG.
        if len(line) > 5 and line[0] not in _BLANKS:
            return super()._control_line(line)
        if not line or line[0] in _BLANKS:
            return self._violation(ERR_UNKNOWN_OP, "empty or indented line")
        if line.upper() in _OPS_WITH_ARGS:
            return self._violation(ERR_UNKNOWN_OP, "op without arguments")
        return super()._control_line(line)

    def _complete(self, op: tuple[Any, ...], body: bytes) -> Any:
        subject, reply, hdr_len = op
        if not hdr_len:
            return subject, reply, None, body
        if hdr_len < 0:  # HPUB announcing an empty header block
            return subject, reply, b"", body
        return subject, reply, body[:hdr_len], body[hdr_len:]

    def _unsub(self, args: list[bytes]) -> Any:
        if len(args) == 3 and not args[2].isdigit():
            return Unsub(args[1].decode(), 0)
        return super()._unsub(args)


# An HMSG control line for one sid (``%s``) as servers write it (single spaces, CRLF): header and total size.
_MSG_LINE = rb"MSG ([^ \t\r\n]+) %%s (\d{1,%d})\r\n" % MAX_SIZE_DIGITS
_HMSG_LINE = rb"HMSG [^ \t\r\n]+ %%s (?:[^ \t\r\n]+ )?(\d{1,%d}) (\d{1,%d})\r\n" % (MAX_SIZE_DIGITS, MAX_SIZE_DIGITS)


# A run finder (``frame_scan.hmsg_run``): (buffer, first frame's offsets, its control line) ->
# (flat offsets of the run, position after it, whether it broke on a frame it could not chain), or
# None for a control line it does not take (the frame-by-frame walk then takes the run).
FrameScan = Callable[[bytes, tuple[int, int, int], bytes], tuple[Any, int, bool] | None]


class ClientSideParser(_FrameParser):
    """Parses the server→client ops: INFO MSG HMSG PING PONG +OK -ERR.

    ``frame_sids``: subscriptions read raw. Their HMSG frames, and MSG frames with a reply subject (a
    consumer's deliveries of messages without headers: an empty header block), come as `FrameRun` events,
    every complete frame in a row for the same sid in one event (offsets into the received bytes,
    no object per message), for a reader that takes thousands of replies per request (batched
    direct get). Set by the client; any other frame ends a run and is parsed as usual.
    """

    def __init__(self, max_control_line: int = 64 * 1024, max_payload: int = 64 * 1024 * 1024) -> None:
        # A client trusts its server: the limits only guard against runaway buffers.
        super().__init__(max_control_line, max_payload)
        self.frame_sids: set[int] | frozenset[int] = frozenset()
        self._frame_lines: dict[int, re.Pattern[bytes]] = {}
        # Subscriptions whose reply-less MSG frames come as :class:`MsgRun` events.
        self.msg_run_sids: set[int] | frozenset[int] = frozenset()
        self._msg_lines: dict[int, re.Pattern[bytes]] = {}
        # A run finder for the raw-read sids (``frame_scan.hmsg_run``: array operations, no step per
        # frame), or None: frame by frame. Off for the rest of a feed once it reports a broken run.
        self.frame_scan: FrameScan | None = None
        self._scan_off = False

    def feed(self, data: bytes) -> list[ServerOp]:
        self._scan_off = False
        return super().feed(data)

    def _fast_line(self, line: bytes) -> FastLine | None:
        if line.startswith(b"MSG "):
            args = line.split()
            n = len(args)
            if n == 4 or n == 5:
                sid = args[2]
                size = _fast_size(args[-1])
                if size >= 0 and sid.isdigit():
                    if n == 5:
                        isid = int(sid)
                        if isid in self.frame_sids:  # a consumer's delivery without headers
                            return FRAMES, (isid, 0, line), size
                        return COMPLETE, (args[1].decode(), isid, args[3].decode(), 0), size
                    isid = int(sid)
                    if isid in self.msg_run_sids:
                        return MSGS, (isid, args[1]), size
                    make = partial(Msg, args[1].decode(), int(sid), "", None)
                    return self._remember(line, (MAKE, make, size))
        elif line.startswith(b"HMSG "):
            args = line.split()
            n = len(args)
            if n == 5 or n == 6:
                sid = args[2]
                hdr = _fast_size(args[-2])
                total = _fast_size(args[-1])
                if 0 <= hdr <= total and sid.isdigit():
                    isid = int(sid)
                    if isid in self.frame_sids:
                        return FRAMES, (isid, hdr, line), total
                    reply = args[3].decode() if n == 6 else ""
                    hit = COMPLETE, (args[1].decode(), isid, reply, hdr or -1), total
                    return hit if n == 6 else self._remember(line, hit)
        return None

    def _frame_run(
        self, buf: bytes, start: int, end: int, x: tuple[int, int, bytes], append: Callable[[Any], None]
    ) -> int:
        """The complete HMSG frame at ``start:end`` (header size ``x[1]``) and every complete
        frame right after it for the same sid, as one `FrameRun`; returns the position
        after them. One regex match per further frame; anything else (another op or sid, a partial
        or malformed frame) is left to the general loop."""
        sid = x[0]
        scan = self.frame_scan
        if scan is not None and not self._scan_off:
            run = scan(buf, (start, start + x[1], end), x[2])
            if run is not None:
                found, pos, broken = run
                self._scan_off = broken
                append(FrameRun(sid, buf, found))
                return pos
        offsets = [start, start + x[1], end]
        pos = end + 2
        size = len(buf)
        line = self._frame_lines.get(sid)
        if line is None:
            line = self._frame_lines[sid] = re.compile(_HMSG_LINE % str(sid).encode())
        match = line.match
        while pos < size:
            m = match(buf, pos)
            if m is None:
                break
            hdr_b, total_b = m.groups()
            start = m.end()
            end = start + int(total_b)
            if end + 2 > size or buf[end] != 13 or buf[end + 1] != 10:
                break
            hdr = start + int(hdr_b)
            if hdr > end:
                break
            offsets += (start, hdr, end)
            pos = end + 2
        append(FrameRun(sid, buf, offsets))
        return pos

    def _msg_run(
        self, buf: bytes, start: int, end: int, x: tuple[int, bytes], append: Callable[[Any], None]
    ) -> int:
        """The complete reply-less MSG frame at ``start:end`` (subject ``x[1]``) and every complete
        reply-less MSG frame right after it for the same sid, as one `MsgRun`; returns the
        position after them. One regex match per further frame (single spaces, within the control
        line limit); anything else (another op or sid, a reply, a partial or malformed frame) is
        left to the general loop."""
        sid, subject = x
        subjects = [subject]
        payloads = [buf[start:end]]
        pos = end + 2
        size = len(buf)
        line = self._msg_lines.get(sid)
        if line is None:
            line = self._msg_lines[sid] = re.compile(_MSG_LINE % str(sid).encode())
        match = line.match
        max_line = self.max_control_line
        while pos < size:
            m = match(buf, pos)
            if m is None:
                break
            start = m.end()
            if start - 2 - pos > max_line:
                break
            end = start + int(m.group(2))
            if end + 2 > size or buf[end] != 13 or buf[end + 1] != 10:
                break
            subjects.append(m.group(1))
            payloads.append(buf[start:end])
            pos = end + 2
        append(MsgRun(sid, subjects, payloads))
        return pos

    def _control_line(self, line: bytes) -> ServerOp | None:
        head = line[:4]
        if head == b"MSG " or head == b"MSG\t":
            return self._msg(line.split())
        if head == b"HMSG":
            return self._hmsg(line.split())
        if head == b"PING":
            return PING_EVENT
        if head == b"PONG":
            return PONG_EVENT
        if head == b"+OK":
            return OK_EVENT
        if head == b"-ERR":
            text = line[4:].strip()
            if len(text) >= 2 and text[:1] == b"'" and text[-1:] == b"'":
                text = text[1:-1]
            return Err(text.decode("utf-8", "replace"))
        if head == b"INFO":
            try:
                info = json.loads(line[4:].strip())
            except ValueError:
                return self._violation(None, "INFO with invalid JSON")
            return Info(info)
        if not line.strip():
            return None
        return self._violation(ERR_UNKNOWN_OP, f"unknown op {line[:16]!r}")

    def _msg(self, args: list[bytes]) -> ServerOp | None:
        if len(args) == 4:
            subject, sid, reply, size_tok = args[1], args[2], b"", args[3]
        elif len(args) == 5:
            subject, sid, reply, size_tok = args[1], args[2], args[3], args[4]
        else:
            return self._violation(None, "MSG Parse Error")
        size = _parse_size(size_tok)
        if size < 0 or not sid.isdigit():
            return self._violation(None, "MSG Bad Size or Sid")
        self._expect_payload((subject.decode(), int(sid), reply.decode(), 0), size)
        return None

    def _hmsg(self, args: list[bytes]) -> ServerOp | None:
        if len(args) == 5:
            subject, sid, reply, hdr_tok, tot_tok = args[1], args[2], b"", args[3], args[4]
        elif len(args) == 6:
            subject, sid, reply, hdr_tok, tot_tok = args[1], args[2], args[3], args[4], args[5]
        else:
            return self._violation(None, "HMSG Parse Error")
        hdr = _parse_size(hdr_tok)
        total = _parse_size(tot_tok)
        if hdr < 0 or total < 0 or hdr > total or not sid.isdigit():
            return self._violation(None, "HMSG Bad Size or Sid")
        self._expect_payload((subject.decode(), int(sid), reply.decode(), hdr or -1), total)
        return None

    def _complete(self, op: tuple[Any, ...], body: bytes) -> Msg:
        subject, sid, reply, hdr_len = op
        if hdr_len == 0:
            return Msg(subject, sid, reply, None, body)
        if hdr_len < 0:
            return Msg(subject, sid, reply, b"", body)
        return Msg(subject, sid, reply, body[:hdr_len], body[hdr_len:])
