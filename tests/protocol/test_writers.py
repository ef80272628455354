"""Frame writers: a run framed by ``append_requests`` is the frames of ``append_pub`` /
``append_hpub``, one per message, and parses back as the same publishes."""

from __future__ import annotations

from pyjetstream.protocol.parser import ServerSideParser
from pyjetstream.protocol.writers import append_hpub, append_pub, append_requests


def test_append_requests_is_the_single_frames() -> None:
    subjects = [b"a.b", b"c", b"a.b"]
    hdrs: list[bytes | None] = [None, b"NATS/1.0\r\nX: 1\r\n\r\n", b"NATS/1.0\r\n\r\n"]
    payloads = [b"one", b"", b"three\r\n"]
    ids = [0, 9, 1234567]
    run: list[bytes] = []
    size = append_requests(run, subjects, b"_INBOX.x.", ids, hdrs, payloads)
    single: list[bytes] = []
    for subject, reply_id, hdr, payload in zip(subjects, ids, hdrs, payloads, strict=True):
        reply = b"_INBOX.x.%d" % reply_id
        if hdr is None:
            append_pub(single, subject, reply, payload)
        else:
            append_hpub(single, subject, reply, hdr, payload)
    assert b"".join(run) == b"".join(single)
    assert size == len(b"".join(run)) and len(run) == 3
    events = ServerSideParser().feed(b"".join(run))
    assert [(e.subject, e.reply, e.payload) for e in events] == [
        ("a.b", "_INBOX.x.0", b"one"),
        ("c", "_INBOX.x.9", b""),
        ("a.b", "_INBOX.x.1234567", b"three\r\n"),
    ]


def test_append_requests_of_nothing() -> None:
    out: list[bytes] = []
    assert append_requests(out, [], b"r.", range(0), [], []) == 0
    assert out == []


def test_append_requests_with_a_reply_suffix() -> None:
    """The id between a prefix and a suffix (a fast batch's ``<...>.<seq>.<op>.$FI`` replies)."""
    out: list[bytes] = []
    append_requests(out, [b"s", b"s"], b"_I.b.10.fail.", [7, 8], [None, b"NATS/1.0\r\n\r\n"], [b"x", b""], b".1.$FI")
    assert out == [
        b"PUB s _I.b.10.fail.7.1.$FI 1\r\nx\r\n",
        b"HPUB s _I.b.10.fail.8.1.$FI 12 12\r\nNATS/1.0\r\n\r\n\r\n",
    ]
