"""Frame writers that append a frame's parts to a caller's buffer, without copying payloads.

h11's writers put bytes into a caller's ``write`` callable; here the caller owns a ``list[bytes]``
(a connection's output, joined once per flush) and a writer appends the control line and
references to the header block and payload it was given — never a copy of them. Each returns
the number of bytes it appended, so the caller can keep its pending-bytes count without
measuring again.

The server's hot paths pre-encode what repeats: ``MSG <subject> <sid> `` is the *prefix* of a
subscription's frames (`msg_prefix` / `hmsg_prefix`, cached on literal
subscriptions), and the rest of the control line depends only on the reply and the sizes. The
client frames PUB/HPUB with `pub_line` / `hpub_line` (its output is one
``bytearray``, so it takes the control line and appends the parts itself), and
`append_pub` / `append_hpub` are those lines plus the parts for a ``list`` buffer.
`append_requests` frames a whole run of publishes with numbered replies at once (a bulk
producer's pipelined JetStream publishes: the Spark sink).

Wire shapes (nats-server ``client.go`` ``msgHeader`` / nats.go ``publish``):

    MSG <subject> <sid> [reply] <size>\\r\\n<payload>\\r\\n
    HMSG <subject> <sid> [reply] <hdr size> <total size>\\r\\n<hdr><payload>\\r\\n
    PUB <subject> [reply] <size>\\r\\n<payload>\\r\\n
    HPUB <subject> [reply] <hdr size> <total size>\\r\\n<hdr><payload>\\r\\n
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

__all__ = [
    "CRLF",
    "append_hmsg",
    "append_hpub",
    "append_msg",
    "append_pub",
    "append_requests",
    "hmsg_prefix",
    "hpub_line",
    "msg_prefix",
    "pub_line",
]

CRLF: Final = b"\r\n"  # (Final: a constant in compiled code, not a global lookup)


def msg_prefix(subject: bytes, sid: bytes) -> bytes:
    """``MSG <subject> <sid> ``: the start of every MSG line for one subscription and subject."""
    return b"MSG %b %b " % (subject, sid)


def hmsg_prefix(subject: bytes, sid: bytes) -> bytes:
    """``HMSG <subject> <sid> ``."""
    return b"HMSG %b %b " % (subject, sid)


def append_msg(out: list[bytes], prefix: bytes, reply: bytes, payload: bytes) -> int:
    """Append ``<prefix>[reply ]<size>\\r\\n<payload>\\r\\n`` (``prefix`` from `msg_prefix`)."""
    size = len(payload)
    tail = b"%b %d\r\n" % (reply, size) if reply else b"%d\r\n" % size
    out.append(prefix)
    out.append(tail)
    out.append(payload)
    out.append(CRLF)
    return len(prefix) + len(tail) + size + 2


def append_hmsg(out: list[bytes], prefix: bytes, reply: bytes, hdr: bytes, payload: bytes) -> int:
    """Append ``<prefix>[reply ]<hdr size> <total>\\r\\n<hdr><payload>\\r\\n`` (`hmsg_prefix`)."""
    hsize = len(hdr)
    size = hsize + len(payload)
    tail = b"%b %d %d\r\n" % (reply, hsize, size) if reply else b"%d %d\r\n" % (hsize, size)
    out.append(prefix)
    out.append(tail)
    out.append(hdr)
    out.append(payload)
    out.append(CRLF)
    return len(prefix) + len(tail) + size + 2


def pub_line(subject: bytes, reply: bytes, size: int) -> bytes:
    """``PUB <subject> [reply] <size>\\r\\n``: the control line of a PUB (nats.go ``publish``)."""
    if reply:
        return b"PUB %b %b %d\r\n" % (subject, reply, size)
    return b"PUB %b %d\r\n" % (subject, size)


def hpub_line(subject: bytes, reply: bytes, hsize: int, total: int) -> bytes:
    """``HPUB <subject> [reply] <hdr size> <total>\\r\\n``: the control line of an HPUB."""
    if reply:
        return b"HPUB %b %b %d %d\r\n" % (subject, reply, hsize, total)
    return b"HPUB %b %d %d\r\n" % (subject, hsize, total)


def append_pub(out: list[bytes], subject: bytes, reply: bytes, payload: bytes) -> int:
    """Append ``PUB <subject> [reply] <size>\\r\\n<payload>\\r\\n``."""
    size = len(payload)
    line = pub_line(subject, reply, size)
    out.append(line)
    out.append(payload)
    out.append(CRLF)
    return len(line) + size + 2


def append_hpub(out: list[bytes], subject: bytes, reply: bytes, hdr: bytes, payload: bytes) -> int:
    """Append ``HPUB <subject> [reply] <hdr size> <total>\\r\\n<hdr><payload>\\r\\n``."""
    hsize = len(hdr)
    size = hsize + len(payload)
    line = hpub_line(subject, reply, hsize, size)
    out.append(line)
    out.append(hdr)
    out.append(payload)
    out.append(CRLF)
    return len(line) + size + 2


def append_requests(
    out: list[bytes],
    subjects: list[bytes],
    reply_prefix: bytes,
    reply_ids: Sequence[int],
    hdrs: list[bytes | None],
    payloads: list[bytes],
    reply_suffix: bytes = b"",
) -> int:
    """Append one PUB (``hdrs[i]`` None) or HPUB frame per message, message *i* with the reply
    ``<reply_prefix><reply_ids[i]><reply_suffix>`` (the id in decimal), each frame one ``bytes``: the frames
    `append_pub` / `append_hpub` would append, for a run in one call instead of a
    call and four parts per message. Returns the number of bytes appended."""
    total = 0
    append = out.append
    for i in range(len(payloads)):
        payload = payloads[i]
        hdr = hdrs[i]
        if hdr is None:
            frame = b"PUB %b %b%d%b %d\r\n%b\r\n" % (
                subjects[i],
                reply_prefix,
                reply_ids[i],
                reply_suffix,
                len(payload),
                payload,
            )
        else:
            hsize = len(hdr)
            frame = b"HPUB %b %b%d%b %d %d\r\n%b%b\r\n" % (
                subjects[i],
                reply_prefix,
                reply_ids[i],
                reply_suffix,
                hsize,
                hsize + len(payload),
                hdr,
                payload,
            )
        append(frame)
        total += len(frame)
    return total
