"""Encoders for every NATS op, both directions. They return ready-to-write bytes.

Subjects and payloads are passed as ``str``/``bytes``; the encoders do not validate subjects
(the server does, and a client validates before calling).
"""

from __future__ import annotations

import json
from typing import Any

from pyjetstream.protocol.limits import OK, PING, PONG
from pyjetstream.protocol.writers import (
    append_hmsg,
    append_hpub,
    append_msg,
    append_pub,
    hmsg_prefix,
    msg_prefix,
)

__all__ = [
    "OK",
    "PING",
    "PONG",
    "encode_connect",
    "encode_err",
    "encode_info",
    "encode_msg",
    "encode_pub",
    "encode_sub",
    "encode_unsub",
]


def _json(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# --- client → server -------------------------------------------------------------------------


def encode_connect(options: dict[str, Any]) -> bytes:
    return b"CONNECT " + _json(options) + b"\r\n"


def encode_pub(subject: str, payload: bytes, reply: str = "", hdr: bytes | None = None) -> bytes:
    """PUB, or HPUB when ``hdr`` (an encoded header block) is given (framed by protocol/writers)."""
    out: list[bytes] = []
    if hdr is None:
        append_pub(out, subject.encode(), reply.encode(), payload)
    else:
        append_hpub(out, subject.encode(), reply.encode(), hdr, payload)
    return b"".join(out)


def encode_sub(subject: str, sid: int | str, queue: str = "") -> bytes:
    if queue:
        return f"SUB {subject} {queue} {sid}\r\n".encode()
    return f"SUB {subject} {sid}\r\n".encode()


def encode_unsub(sid: int | str, max_msgs: int = 0) -> bytes:
    if max_msgs:
        return f"UNSUB {sid} {max_msgs}\r\n".encode()
    return f"UNSUB {sid}\r\n".encode()


# --- server → client -------------------------------------------------------------------------


def encode_info(info: dict[str, Any]) -> bytes:
    return b"INFO " + _json(info) + b"\r\n"


def encode_msg(
    subject: str, sid: str | int, payload: bytes, reply: str = "", hdr: bytes | None = None
) -> bytes:
    """MSG, or HMSG when ``hdr`` is given (the receiver must have negotiated headers)."""
    out: list[bytes] = []
    subj, sid_b, reply_b = subject.encode(), str(sid).encode(), reply.encode()
    if hdr is None:
        append_msg(out, msg_prefix(subj, sid_b), reply_b, payload)
    else:
        append_hmsg(out, hmsg_prefix(subj, sid_b), reply_b, hdr, payload)
    return b"".join(out)


def encode_err(text: str) -> bytes:
    """``-ERR '<text>'``: nats-server always wraps the text in single quotes."""
    return f"-ERR '{text}'\r\n".encode()
