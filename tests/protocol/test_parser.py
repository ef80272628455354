"""The sans-IO protocol: parse/encode round trips and framing at every byte boundary."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.protocol import (
    ClientSideParser,
    Connect,
    Err,
    Info,
    Msg,
    Ok,
    Ping,
    Pong,
    ProtocolViolation,
    Pub,
    ServerSideParser,
    Sub,
    Unsub,
    encode_connect,
    encode_err,
    encode_headers,
    encode_info,
    encode_msg,
    encode_pub,
    encode_sub,
    encode_unsub,
    parse_headers,
)

token = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789_-$", min_size=1, max_size=8)
subject = st.lists(token, min_size=1, max_size=4).map(".".join)
payload = st.binary(max_size=300)
header_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABCXYZ", min_size=1, max_size=10)
header_value = st.text(alphabet="abc xyz0123456789:;,./", max_size=20).map(str.strip)
headers = st.dictionaries(header_name, st.lists(header_value, min_size=1, max_size=3), max_size=4)


def feed_in_chunks(parser, data: bytes, cuts: list[int]) -> list:
    events = []
    last = 0
    for cut in sorted(set(c % (len(data) + 1) for c in cuts)):
        events += parser.feed(data[last:cut])
        last = cut
    events += parser.feed(data[last:])
    return events


def client_ops():
    pub = st.builds(
        lambda s, r, p, h: (
            encode_pub(s, p, r, encode_headers(h) if h is not None else None),
            Pub(s, r, encode_headers(h) if h is not None else None, p),
        ),
        subject,
        st.one_of(st.just(""), subject),
        payload,
        st.one_of(st.none(), headers),
    )
    sub = st.builds(
        lambda s, q, sid: (encode_sub(s, sid, q), Sub(s, q, str(sid))),
        subject,
        st.one_of(st.just(""), token),
        st.integers(1, 10**6),
    )
    unsub = st.builds(
        lambda sid, m: (encode_unsub(sid, m), Unsub(str(sid), m)), st.integers(1, 10**6), st.integers(0, 99)
    )
    ping = st.just((b"PING\r\n", Ping()))
    connect = st.builds(
        lambda v, n: (encode_connect({"verbose": v, "name": n}), Connect({"verbose": v, "name": n})),
        st.booleans(),
        token,
    )
    return st.one_of(pub, sub, unsub, ping, connect)


def same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    return a == b or isinstance(a, Ping | Pong | Ok)


@given(st.lists(client_ops(), min_size=1, max_size=8), st.lists(st.integers(0, 10**5), max_size=10))
def test_server_side_parses_any_split_identically(ops, cuts) -> None:
    wire = b"".join(op[0] for op in ops)
    whole = ServerSideParser().feed(wire)
    split = feed_in_chunks(ServerSideParser(), wire, cuts)
    assert len(whole) == len(ops) == len(split)
    for got_whole, got_split, (_, expected) in zip(whole, split, ops, strict=True):
        assert same(got_whole, expected)
        assert same(got_split, expected)


def server_ops():
    msg = st.builds(
        lambda s, sid, r, p, h: (
            encode_msg(s, sid, p, r, encode_headers(h) if h is not None else None),
            Msg(s, sid, r, encode_headers(h) if h is not None else None, p),
        ),
        subject,
        st.integers(1, 10**9),
        st.one_of(st.just(""), subject),
        payload,
        st.one_of(st.none(), headers),
    )
    info = st.builds(
        lambda n: (encode_info({"server_id": n, "proto": 1}), Info({"server_id": n, "proto": 1})), token
    )
    err = st.builds(
        lambda t: (encode_err(t), Err(t)), st.sampled_from(["Stale Connection", "Invalid Subject"])
    )
    simple = st.sampled_from([(b"PING\r\n", Ping()), (b"PONG\r\n", Pong()), (b"+OK\r\n", Ok())])
    return st.one_of(msg, info, err, simple)


@given(st.lists(server_ops(), min_size=1, max_size=8), st.lists(st.integers(0, 10**5), max_size=10))
def test_client_side_parses_any_split_identically(ops, cuts) -> None:
    wire = b"".join(op[0] for op in ops)
    split = feed_in_chunks(ClientSideParser(), wire, cuts)
    assert len(split) == len(ops)
    for got, (_, expected) in zip(split, ops, strict=True):
        assert same(got, expected)


@given(
    headers, st.sampled_from([0, 100, 404, 408, 503]), st.sampled_from(["", "No Messages", "Idle Heartbeat"])
)
def test_headers_round_trip(hdrs, status, description) -> None:
    if not status:
        description = ""
    block = parse_headers(encode_headers(hdrs, status, description))
    assert block.headers == hdrs
    assert block.status == status
    assert block.description == description


def test_ops_are_case_insensitive_and_whitespace_runs_split() -> None:
    events = ServerSideParser().feed(b"pub foo  5\r\nhello\r\nSuB\tfoo \t q   7\r\nuNsUb 7  3 \r\nping\r\n")
    assert events == [Pub("foo", "", None, b"hello"), Sub("foo", "q", "7"), Unsub("7", 3), events[3]]
    assert isinstance(events[3], Ping)


def test_bare_lf_ends_a_control_line() -> None:
    assert ServerSideParser().feed(b"PUB a 2\nhi\r\n") == [Pub("a", "", None, b"hi")]


def test_unknown_op_is_a_violation_and_stops_the_parser() -> None:
    parser = ServerSideParser()
    events = parser.feed(b"PING\r\nFOO bar\r\nPING\r\n")
    assert isinstance(events[0], Ping)
    assert events[1] == ProtocolViolation("Unknown Protocol Operation", events[1].detail)
    assert len(events) == 2
    assert parser.feed(b"PING\r\n") == []


def test_payload_without_crlf_is_a_violation() -> None:
    events = ServerSideParser().feed(b"PUB a 2\r\nhiXX")
    assert events[0].err == "Unknown Protocol Operation"


def test_max_payload_is_enforced_before_reading_the_payload() -> None:
    events = ServerSideParser(max_payload=10).feed(b"PUB a 11\r\n")
    assert events == [ProtocolViolation("Maximum Payload Violation")]
    events = ServerSideParser(max_payload=10).feed(b"HPUB a 5 11\r\n")
    assert events == [ProtocolViolation("Maximum Payload Violation", hpub=("a", 5, 11))]


def test_an_oversized_hpub_keeps_the_header_block_read_so_far() -> None:
    """What the server needs to trace it (nats-server ``sendMsgTraceIngressErrEvent``)."""
    hdr = b"NATS/1.0\r\nNats-Trace-Dest: t\r\n\r\n"
    events = ServerSideParser(max_payload=40).feed(b"HPUB a %d 99\r\n%bxx" % (len(hdr), hdr))
    assert events == [ProtocolViolation("Maximum Payload Violation", hpub=("a", len(hdr), 99), head=hdr)]
    events = ServerSideParser(max_payload=40).feed(b"HPUB a %d 99\r\nNATS/1.0\r\nNats" % len(hdr))
    assert events[0].head == b"NATS/1.0\r\nNats"


def test_max_control_line_with_and_without_line_end() -> None:
    long_subject = "a" * 5000
    events = ServerSideParser().feed(f"SUB {long_subject} 1\r\n".encode())
    assert events == [ProtocolViolation("maximum control line exceeded")]
    events = ServerSideParser().feed(f"PUB {long_subject}".encode())
    assert events == [ProtocolViolation("maximum control line exceeded")]
    # CONNECT may be long (JWTs); it is not subject to the limit.
    big = encode_connect({"jwt": "x" * 6000})
    assert isinstance(ServerSideParser().feed(big)[0], Connect)


def test_bad_sizes_and_arg_counts_close_silently() -> None:
    for wire in (
        b"PUB a b c 1\r\n",
        b"PUB a x\r\n",
        b"HPUB a 5 2\r\n",
        b"SUB a\r\n",
        b"UNSUB\r\n",
        b"CONNECT {\r\n",
    ):
        events = ServerSideParser().feed(wire)
        assert len(events) == 1 and isinstance(events[0], ProtocolViolation), wire
        assert events[0].err is None


def test_hpub_with_empty_header_block_keeps_it() -> None:
    events = ServerSideParser().feed(b"HPUB a 12 12\r\nNATS/1.0\r\n\r\n\r\n")
    assert events == [Pub("a", "", b"NATS/1.0\r\n\r\n", b"")]


def test_status_line_parsing() -> None:
    block = parse_headers(b"NATS/1.0 408 Request Timeout\r\nNats-Pending-Messages: 3\r\n\r\n")
    assert (block.status, block.description) == (408, "Request Timeout")
    assert block.get("nats-pending-messages") == "3"
    assert parse_headers(b"NATS/1.0 503\r\n\r\n").status == 503
