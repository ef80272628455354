"""Ack reply subjects (v1/v2) and ack payloads."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.api.ack import (
    ACK,
    NAK,
    AckAction,
    AckKind,
    MsgMetadata,
    ack_reply_subject,
    ack_reply_subject_v2,
    ack_subscription,
    nak_payload,
    next_payload,
    parse_ack_payload,
    parse_ack_reply,
    term_payload,
)
from pyjetstream.api.timefmt import NanoTime


def test_parse_v1() -> None:
    md = parse_ack_reply("$JS.ACK.ORDERS.PULL.2.4.3.1795245555190930235.7")
    assert md == MsgMetadata(
        stream="ORDERS",
        consumer="PULL",
        num_delivered=2,
        stream_seq=4,
        consumer_seq=3,
        timestamp=NanoTime(1795245555190930235),
        num_pending=7,
    )
    assert md.sequence.stream == 4 and md.sequence.consumer == 3
    assert md.timestamp.isoformat() == "2026-11-21T07:19:15.190930235Z"


def test_parse_v2() -> None:
    md = parse_ack_reply("$JS.ACK.hub.ACCHASH.ORDERS.PULL.1.10.9.1700000000000000000.0.rAnD0m")
    assert (md.domain, md.account_hash, md.stream, md.consumer) == ("hub", "ACCHASH", "ORDERS", "PULL")
    assert (md.num_delivered, md.stream_seq, md.consumer_seq, md.num_pending) == (1, 10, 9, 0)
    no_domain = parse_ack_reply("$JS.ACK._.H.S.C.1.2.3.4.5.tok")
    assert no_domain.domain == ""
    # 11 tokens (no random token) and extra tokens are accepted like nats.go / nats.py
    assert parse_ack_reply("$JS.ACK._.H.S.C.1.2.3.4.5").stream_seq == 2
    assert parse_ack_reply("$JS.ACK.d.H.S.C.1.2.3.4.5.t.more").consumer_seq == 3


@pytest.mark.parametrize(
    "subject",
    [
        "",
        "$JS.ACK.S.C.1.2.3.4",  # 8 tokens
        "$JS.ACK.S.C.1.2.3.4.5.6",  # 10 tokens
        "$JS.ACK.S.C.x.2.3.4.5",
        "$JS.NAK.S.C.1.2.3.4.5",
        "_INBOX.a.b.c.d.e.f.g.h",
        "$JS.ACK..C.1.2.3.4.5",
    ],
)
def test_parse_rejects(subject: str) -> None:
    with pytest.raises(ValueError):
        parse_ack_reply(subject)


@given(
    st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    st.integers(1, 2**63),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**64 - 1),
    st.integers(0, 2**63 - 1),
    st.integers(0, 2**64 - 1),
)
def test_build_parse_round_trip(
    stream: str, consumer: str, dc: int, sseq: int, cseq: int, ts: int, pending: int
) -> None:
    v1 = ack_reply_subject(stream, consumer, dc, sseq, cseq, ts, pending)
    assert len(v1.split(".")) == 9
    md = parse_ack_reply(v1)
    assert (
        md.stream,
        md.consumer,
        md.num_delivered,
        md.stream_seq,
        md.consumer_seq,
        md.timestamp,
        md.num_pending,
    ) == (
        stream,
        consumer,
        dc,
        sseq,
        cseq,
        ts,
        pending,
    )
    v2 = ack_reply_subject_v2("", "HASH", stream, consumer, dc, sseq, cseq, ts, pending, "tok")
    assert len(v2.split(".")) == 12
    md2 = parse_ack_reply(v2)
    assert (md2.domain, md2.account_hash, md2.stream_seq, md2.num_pending) == ("", "HASH", sseq, pending)


def test_ack_subscription() -> None:
    assert ack_subscription("S", "C") == "$JS.ACK.S.C.*.*.*.*.*"


def test_payload_builders() -> None:
    assert nak_payload() == b"-NAK"
    assert nak_payload(1_000_000_000) == b'-NAK {"delay": 1000000000}'
    assert term_payload() == b"+TERM"
    assert term_payload("bad data") == b"+TERM bad data"
    assert next_payload() == b"+NXT"
    assert next_payload(5) == b"+NXT 5"
    assert next_payload(b'{"batch":2}') == b'+NXT {"batch":2}'


@pytest.mark.parametrize(
    ("payload", "action"),
    [
        (b"", AckAction(AckKind.ACK)),
        (b"+ACK", AckAction(AckKind.ACK)),
        (b"+OK", AckAction(AckKind.ACK)),
        (b"-NAK", AckAction(AckKind.NAK)),
        (b'-NAK {"delay": 1000000000}', AckAction(AckKind.NAK, delay_ns=1_000_000_000)),
        (b"-NAK 5s", AckAction(AckKind.NAK, delay_ns=5_000_000_000)),
        (b"-NAK 1m30s", AckAction(AckKind.NAK, delay_ns=90_000_000_000)),
        (b"-NAK garbage", AckAction(AckKind.NAK)),  # unparsable delay: plain NAK
        (b'-NAK {"delay": 1.5}', AckAction(AckKind.NAK)),
        (b"-NAK {bad json", AckAction(AckKind.NAK)),
        (b"+WPI", AckAction(AckKind.PROGRESS)),
        (b"+NXT", AckAction(AckKind.NEXT)),
        (b"+NXT 10", AckAction(AckKind.NEXT, request=b"10")),
        (b'+NXT {"batch":2,"no_wait":true}', AckAction(AckKind.NEXT, request=b'{"batch":2,"no_wait":true}')),
        (b"+TERM", AckAction(AckKind.TERM)),
        (b"+TERM not processable", AckAction(AckKind.TERM, reason="not processable")),
    ],
)
def test_parse_payload(payload: bytes, action: AckAction) -> None:
    assert parse_ack_payload(payload) == action


@pytest.mark.parametrize("payload", [b"+ACKX", b"ack", b"+WPI ", b"+TERMINATE", b"hello"])
def test_unknown_payloads(payload: bytes) -> None:
    assert parse_ack_payload(payload) is None


def test_constants() -> None:
    assert (ACK, NAK) == (b"+ACK", b"-NAK")
