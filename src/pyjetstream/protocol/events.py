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
    """CONNECT: the client's options, as its JSON object."""

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
    """Consecutive complete PUB/HPUB frames of one read, any subject, reply and header block: one
    event, so the router routes the read's publishes together (nats-server's receiver-side
    batching: one lookup per distinct subject, each receiver given its messages at once).
    Publish *i* is ``(subjects[i], replies[i], hdrs[i], payloads[i])``, the very tuple the
    per-message path gets (``hdrs[i]`` None for a PUB, ``b""`` for an HPUB announcing no header
    bytes). Only a parser with ``pub_runs`` set makes them, from two publishes on."""

    subjects: list[str]
    replies: list[str]
    hdrs: list[bytes | None]
    payloads: list[bytes]


@dataclass(slots=True)
class FrameRun:
    """Consecutive complete HMSG frames for one subscription a client reads raw
    (``ClientSideParser.frame_sids``): one event, no object per message. ``buf`` holds the frames;
    ``offsets`` is flat, three per frame: where its header block starts, where its payload starts
    (= header end) and where the payload ends, all indexes into ``buf``: a list, or a numpy int64
    array when the parser's ``frame_scan`` found the run. A MSG frame with a reply subject (a consumer's
    delivery without headers) is a frame with an empty header block. Each frame's control line is in ``buf`` too,
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
    """SUB: ``queue`` is ``""`` outside a queue group."""

    subject: str
    queue: str
    sid: str


@dataclass(slots=True)
class Unsub:
    """UNSUB, at once or after ``max_msgs`` more messages."""

    sid: str
    max_msgs: int  # 0 means unsubscribe now


@dataclass(slots=True)
class Info:
    """INFO: the server's JSON object."""

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
