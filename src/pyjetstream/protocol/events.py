"""Events produced by the parsers: one class per protocol operation.

Client→server ops (what the server parses): Connect, Pub, Sub, Unsub, Ping, Pong.
Server→client ops (what a client parses): Info, Msg, Ping, Pong, Ok, Err.
A ``ProtocolViolation`` ends a stream of events: the parser accepts nothing after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class Connect:
    options: dict[str, Any]


@dataclass(slots=True)
class Pub:
    """PUB or HPUB. ``hdr`` is the raw header block (``None`` for PUB)."""

    subject: str
    reply: str
    hdr: bytes | None
    payload: bytes


@dataclass(slots=True)
class PubRun:
    """Consecutive PUBs with the same ``PUB <subject> <size>`` line (no reply, no headers): one
    event for a pipelining publisher's run, so the router looks the subject up once. Only a parser
    with ``pub_runs`` set makes them (the embedded server, on connections without per-message
    checks); every payload has the same size."""

    subject: str
    payloads: list[bytes]


@dataclass(slots=True)
class ReplyRun:
    """Consecutive PUBs with the same subject and size and a reply each (``PUB <subject> <reply>
    <size>``, no headers): a pipelining requester's or JetStream publisher's run, one event so the
    router looks the subject up once. ``replies[i]`` (UTF-8 bytes, as on the wire) goes with
    ``payloads[i]``. Only a parser with ``pub_runs`` set makes them, as :class:`PubRun`."""

    subject: str
    replies: list[bytes]
    payloads: list[bytes]


@dataclass(slots=True)
class HPubRun:
    """Consecutive HPUBs with a reply and a header block each (``HPUB <subject> <reply> <hdr>
    <total>``, ``hdr`` > 0): the Spark sink's rows (a message id and an expected stream each, a
    subject per row), one event so that the router hands a stream its run in one call. Frame
    *i* is the publish ``(subjects[i], replies[i], hdrs[i], payloads[i])``. Only a parser with
    ``pub_runs`` set makes them, as :class:`PubRun`; subjects and replies are ASCII."""

    subjects: list[str]
    replies: list[str]
    hdrs: list[bytes]
    payloads: list[bytes]


@dataclass(slots=True)
class AckRun:
    """Consecutive reply-less PUBs to one JetStream consumer's ack subjects
    (``PUB $JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending> <size>``, no headers):
    what a client acking every message as it arrives sends, one event so the router looks the
    consumer up once and the consumer takes the run in one call. ``prefix`` is
    ``$JS.ACK.<stream>.<consumer>.``; ``tails[i]`` is what follows it (five tokens of ASCII
    digits, none empty, as on the wire) and goes with ``payloads[i]``. Only a parser with
    ``pub_runs`` set makes them, as :class:`PubRun`; a publish to ``prefix + tails[i]`` is what
    each stands for."""

    prefix: str
    tails: list[bytes]
    payloads: list[bytes]


@dataclass(slots=True)
class FrameRun:
    """Consecutive complete HMSG frames for one subscription a client reads raw
    (``ClientSideParser.frame_sids``): one event, no object per message. ``buf`` holds the frames;
    ``offsets`` is flat, three per frame: where its header block starts, where its payload starts
    (= header end) and where the payload ends, all indexes into ``buf``: a list, or a numpy int64
    array when the parser's ``frame_scan`` found the run. Each frame's control line is in ``buf`` too,
    ending (CRLF) right before its header block: a reader that needs subjects or reply subjects (a
    consumer's deliveries) finds frame *i*'s line after frame *i-1*'s payload and CRLF, and the first
    frame's after the last LF before it."""

    sid: int
    buf: bytes
    offsets: Any  # list[int] | numpy.ndarray


@dataclass(slots=True)
class MsgRun:
    """Consecutive complete MSG frames without a reply for one subscription a client reads in runs
    (``ClientSideParser.msg_run_sids``): one event, no object per message — a bulk requester's
    replies (the Spark sink's PubAcks on one wildcard inbox). ``subjects[i]`` (bytes, as on the
    wire) goes with ``payloads[i]``."""

    sid: int
    subjects: list[bytes]
    payloads: list[bytes]


@dataclass(slots=True)
class Sub:
    subject: str
    queue: str
    sid: str


@dataclass(slots=True)
class Unsub:
    sid: str
    max_msgs: int  # 0 means unsubscribe now


@dataclass(slots=True)
class Info:
    info: dict[str, Any]


@dataclass(slots=True)
class Msg:
    """MSG or HMSG as a client receives it. ``sid`` is the subscription id the client chose."""

    subject: str
    sid: int
    reply: str
    hdr: bytes | None
    payload: bytes


@dataclass(slots=True)
class Err:
    """``-ERR '<text>'``; ``text`` is without the quotes."""

    text: str


class _Singleton:
    __slots__ = ()

    def __repr__(self) -> str:
        return type(self).__name__


class Ping(_Singleton):
    pass


class Pong(_Singleton):
    pass


class Ok(_Singleton):
    pass


PING_EVENT = Ping()
PONG_EVENT = Pong()
OK_EVENT = Ok()


@dataclass(slots=True)
class ProtocolViolation:
    """The peer broke the protocol. ``err`` is the ``-ERR`` text nats-server sends (``None``: close silently).

    An HPUB refused for its size carries ``(subject, header size, total size)`` in ``hpub`` and
    what of its header block was already read in ``head``: the server traces such a message
    (nats-server ``sendMsgTraceIngressErrEvent``)."""

    err: str | None
    detail: str = ""
    hpub: tuple[str, int, int] | None = None
    head: bytes = b""


ClientOp = Connect | Pub | Sub | Unsub | Ping | Pong | ProtocolViolation
ServerOp = Info | Msg | Ping | Pong | Ok | Err | ProtocolViolation
