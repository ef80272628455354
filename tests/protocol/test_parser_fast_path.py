"""The parsers' fast path (a repeated control line is parsed once): same events as the general path,
whatever the chunking, for repeated, interleaved and header-carrying frames."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.protocol import ClientSideParser, Msg, Pub, ServerSideParser
from pyjetstream.protocol.events import AckRun, FrameRun, HPubRun, MsgRun, PubRun, ReplyRun
from pyjetstream.protocol.parser import NatsServerParser

_SPARK_HDR = b"NATS/1.0\r\nNats-Msg-Id: a1\r\nNats-Expected-Stream: S\r\n\r\n"
_SPARK_ROW = b"HPUB s.1 _INBOX.x.1 %d %d\r\n%babc\r\n" % (len(_SPARK_HDR), len(_SPARK_HDR) + 3, _SPARK_HDR)

frames = st.lists(
    st.sampled_from(
        [
            (b"PUB a.b 3\r\nabc\r\n", Pub("a.b", "", None, b"abc")),
            (b"PUB a.b 3\r\nxyz\r\n", Pub("a.b", "", None, b"xyz")),
            (b"PUB a.b r.1 3\r\nabc\r\n", Pub("a.b", "r.1", None, b"abc")),
            # Requests: the same subject and size with new replies (the subject/size memo, runs).
            (b"PUB a.b r.2 3\r\nxyz\r\n", Pub("a.b", "r.2", None, b"xyz")),
            (b"PUB a.b r.\xc3\xa9 3\r\nxyz\r\n", Pub("a.b", "r.\u00e9", None, b"xyz")),
            (b"PUB a.b  r.3\t3\r\nxyz\r\n", Pub("a.b", "r.3", None, b"xyz")),
            (b"PUB a.c r.2 3\r\nabc\r\n", Pub("a.c", "r.2", None, b"abc")),
            (b"PUB a.b r.1 2\r\nab\r\n", Pub("a.b", "r.1", None, b"ab")),
            (b"PUB a.b 0\r\n\r\n", Pub("a.b", "", None, b"")),
            (b"HPUB a.b 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", Pub("a.b", "", b"NATS/1.0\r\n\r\n", b"hi")),
            (b"HPUB a.b r 0 2\r\nhi\r\n", Pub("a.b", "r", b"", b"hi")),
            # HPUBs with a reply and headers (runs of them are HPubRuns with pub_runs): the Spark
            # sink's rows, and lines that look alike.
            (b"HPUB a.b r.1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", Pub("a.b", "r.1", b"NATS/1.0\r\n\r\n", b"hi")),
            (
                b"HPUB a.c r.2 12 15\r\nNATS/1.0\r\n\r\nhey\r\n",
                Pub("a.c", "r.2", b"NATS/1.0\r\n\r\n", b"hey"),
            ),
            (b"HPUB a.b  r.3\t12 12\r\nNATS/1.0\r\n\r\n\r\n", Pub("a.b", "r.3", b"NATS/1.0\r\n\r\n", b"")),
            (
                b"HPUB a.b r.\xc3\xa9 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
                Pub("a.b", "r.\u00e9", b"NATS/1.0\r\n\r\n", b"hi"),
            ),
            (
                b"HPUB a.\xc3\xa9 r.5 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
                Pub("a.\u00e9", "r.5", b"NATS/1.0\r\n\r\n", b"hi"),
            ),
            (b"HPUB a.b r.4 12 14\nNATS/1.0\r\n\r\nhi\r\n", Pub("a.b", "r.4", b"NATS/1.0\r\n\r\n", b"hi")),
            (b"HPUB a.b r.6 0 2\r\nhi\r\n", Pub("a.b", "r.6", b"", b"hi")),
            (b"hpub a.b r.7 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", Pub("a.b", "r.7", b"NATS/1.0\r\n\r\n", b"hi")),
            (_SPARK_ROW, Pub("s.1", "_INBOX.x.1", _SPARK_HDR, b"abc")),
            (b"pub a.b 1\r\nz\r\n", Pub("a.b", "", None, b"z")),
            # JetStream acks (runs of them are AckRuns with pub_runs), and lines that look alike.
            (b"PUB $JS.ACK.S.C.1.2.3.4.5 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.1.2.3.4.5", "", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1.3.4.4.0  4\r\n-NAK\r\n", Pub("$JS.ACK.S.C.1.3.4.4.0", "", None, b"-NAK")),
            (b"PUB $JS.ACK.S.C.2.3.9.7.1\t5\r\n+TERM\r\n", Pub("$JS.ACK.S.C.2.3.9.7.1", "", None, b"+TERM")),
            (b"PUB $JS.ACK.S.D.1.2.3.4.5 4\r\n+WPI\r\n", Pub("$JS.ACK.S.D.1.2.3.4.5", "", None, b"+WPI")),
            (b"PUB $JS.ACK.S.C.1.2.3.4.5 4\n+ACK\r\n", Pub("$JS.ACK.S.C.1.2.3.4.5", "", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1.2.3.4.5 r 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.1.2.3.4.5", "r", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C. 1.2.3.4.5 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.", "1.2.3.4.5", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1.2.x.4.5 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.1.2.x.4.5", "", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1..3.4.5 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.1..3.4.5", "", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1.2.3.4 4\r\n+ACK\r\n", Pub("$JS.ACK.S.C.1.2.3.4", "", None, b"+ACK")),
            (b"PUB $JS.ACK..C.1.2.3.4.5 4\r\n+ACK\r\n", Pub("$JS.ACK..C.1.2.3.4.5", "", None, b"+ACK")),
            (b"PUB $JS.ACK.S.C.1.2.3.4.5 0\r\n\r\n", Pub("$JS.ACK.S.C.1.2.3.4.5", "", None, b"")),
            (
                b'PUB $JS.ACK.S.C.1.2.3.4.5 12\r\n+NXT {"a":1}\r\n',
                Pub("$JS.ACK.S.C.1.2.3.4.5", "", None, b'+NXT {"a":1}'),
            ),
        ]
    ),
    min_size=1,
    max_size=12,
)


def _feed_in(parser: ServerSideParser | ClientSideParser, data: bytes, cuts: list[int]) -> list[object]:
    events: list[object] = []
    last = 0
    for cut in [*sorted({c % (len(data) + 1) for c in cuts}), len(data)]:
        events.extend(parser.feed(data[last:cut]))
        last = cut
    return events


@given(frames, st.lists(st.integers(min_value=0), max_size=6))
def test_server_fast_path_matches_frames(chosen: list[tuple[bytes, Pub]], cuts: list[int]) -> None:
    data = b"".join(raw for raw, _ in chosen)
    assert _feed_in(ServerSideParser(), data, cuts) == [event for _, event in chosen]


def test_repeated_line_keeps_each_payload() -> None:
    parser = ServerSideParser()
    data = b"".join(b"PUB s 2\r\n%02d\r\n" % i for i in range(50))
    assert [ev.payload for ev in parser.feed(data)] == [b"%02d" % i for i in range(50)]


def test_repeated_line_then_bad_size_is_still_checked() -> None:
    parser = ServerSideParser(max_payload=4)
    events = parser.feed(b"PUB s 2\r\nab\r\nPUB s 2\r\nab\r\nPUB s 5\r\nabcde\r\n")
    assert events[:2] == [Pub("s", "", None, b"ab")] * 2
    assert events[2].err == "Maximum Payload Violation"


def test_repeated_line_missing_crlf_is_a_violation() -> None:
    parser = ServerSideParser()
    events = parser.feed(b"PUB s 2\r\nab\r\nPUB s 2\r\nabXY")
    assert events[0] == Pub("s", "", None, b"ab")
    assert events[1].err == "Unknown Protocol Operation"


@given(st.lists(st.integers(min_value=0), max_size=6))
def test_client_fast_path_msg_and_hmsg(cuts: list[int]) -> None:
    data = (
        b"MSG a 1 2\r\nhi\r\nMSG a 1 2\r\nho\r\nMSG a 1 r.x 2\r\nhi\r\n"
        b"HMSG a 2 12 14\r\nNATS/1.0\r\n\r\nhi\r\nHMSG a 2 12 14\r\nNATS/1.0\r\n\r\nho\r\n"
    )
    assert _feed_in(ClientSideParser(), data, cuts) == [
        Msg("a", 1, "", None, b"hi"),
        Msg("a", 1, "", None, b"ho"),
        Msg("a", 1, "r.x", None, b"hi"),
        Msg("a", 2, "", b"NATS/1.0\r\n\r\n", b"hi"),
        Msg("a", 2, "", b"NATS/1.0\r\n\r\n", b"ho"),
    ]


@given(frames, st.lists(st.integers(min_value=0), max_size=6))
def test_pub_tuples_subclass_gets_the_same_fields(chosen: list[tuple[bytes, Pub]], cuts: list[int]) -> None:
    """The embedded server's parser (``pub_tuples``): each PUB/HPUB as a plain tuple of the very
    fields a Pub event has, whatever the chunking."""
    data = b"".join(raw for raw, _ in chosen)
    expected = [(ev.subject, ev.reply, ev.hdr, ev.payload) for _, ev in chosen]
    assert _feed_in(NatsServerParser(), data, cuts) == expected


def _expand_runs(events: list[object]) -> list[object]:
    out: list[object] = []
    for ev in events:
        if isinstance(ev, PubRun):
            assert len(ev.payloads) > 1 and len({len(p) for p in ev.payloads}) == 1
            out.extend((ev.subject, "", None, p) for p in ev.payloads)
        elif isinstance(ev, ReplyRun):
            assert len(ev.payloads) == len(ev.replies) > 1 and len({len(p) for p in ev.payloads}) == 1
            out.extend(
                (ev.subject, r.decode(), None, p) for r, p in zip(ev.replies, ev.payloads, strict=True)
            )
        elif isinstance(ev, HPubRun):
            assert len(ev.payloads) == len(ev.hdrs) == len(ev.replies) == len(ev.subjects) > 1
            assert all(ev.hdrs) and all(ev.replies)
            out.extend(zip(ev.subjects, ev.replies, ev.hdrs, ev.payloads, strict=True))
        elif isinstance(ev, AckRun):
            assert len(ev.payloads) == len(ev.tails) >= 1 and all(t.count(b".") == 4 for t in ev.tails)
            out.extend(
                (ev.prefix + t.decode(), "", None, p) for t, p in zip(ev.tails, ev.payloads, strict=True)
            )
        else:
            out.append(ev)
    return out


@given(frames, st.lists(st.integers(min_value=0), max_size=6))
def test_pub_runs_are_the_same_frames(chosen: list[tuple[bytes, Pub]], cuts: list[int]) -> None:
    """With ``pub_runs`` (a server connection without per-message checks), consecutive identical
    reply-less PUB lines come as one PubRun: expanded, exactly the tuples without it."""
    data = b"".join(raw for raw, _ in chosen * 3)
    expected = [(ev.subject, ev.reply, ev.hdr, ev.payload) for _, ev in chosen * 3]
    parser = NatsServerParser()
    parser.pub_runs = True
    assert _expand_runs(_feed_in(parser, data, cuts)) == expected


def test_pub_run_collects_a_pipelined_burst_and_stops_at_a_bad_frame() -> None:
    parser = NatsServerParser()
    parser.pub_runs = True
    events = parser.feed(b"".join(b"PUB s 2\r\n%02d\r\n" % i for i in range(50)) + b"PUB s 2\r\nabXY")
    # The first frame of a line is a tuple; the repeats after it are one run.
    assert events[0] == ("s", "", None, b"00")
    assert events[1] == PubRun("s", [b"%02d" % i for i in range(1, 50)])
    assert events[2].err == "Unknown Protocol Operation"


def test_reply_run_collects_requests_and_stops_at_what_the_fast_path_would_not_take() -> None:
    """A pipelining requester's PUBs (same subject and size, a reply each) are one ReplyRun; a
    frame the fast path would split differently, a longer line than allowed or a partial
    frame ends it and is parsed as before."""
    parser = NatsServerParser(max_control_line=40)
    parser.pub_runs = True
    burst = b"".join(b"PUB s _INBOX.x.%d 2\r\n%02d\r\n" % (i, i) for i in range(20))
    events = parser.feed(
        burst + b"PUB s r\x0bq 2\r\nab\r\n"  # a separator inside the reply: 5 arguments, a violation
    )
    assert events[0] == ReplyRun(
        "s", [b"_INBOX.x.%d" % i for i in range(20)], [b"%02d" % i for i in range(20)]
    )
    assert events[1].err is None and "processPub" in events[1].detail
    parser = NatsServerParser(max_control_line=40)
    parser.pub_runs = True
    long_reply = b"r" * 40
    two = b"PUB s _INBOX.x.0 2\r\n00\r\nPUB s _INBOX.x.1 2\r\n01\r\n"
    events = parser.feed(two + b"PUB s %b 2\r\nab\r\n" % long_reply)
    assert events[0] == ReplyRun("s", [b"_INBOX.x.0", b"_INBOX.x.1"], [b"00", b"01"])
    assert events[1].err == "maximum control line exceeded"
    parser = NatsServerParser(max_control_line=40)
    parser.pub_runs = True
    events = parser.feed(two[:24] + b"PUB s %b 2\r\nab\r\n" % long_reply)
    assert events[0] == ("s", "_INBOX.x.0", None, b"00")
    assert events[1].err == "maximum control line exceeded"
    parser = NatsServerParser()
    parser.pub_runs = True
    events = parser.feed(burst + b"PUB s _INBOX.x.99 2\r\na")
    assert events == [
        ReplyRun("s", [b"_INBOX.x.%d" % i for i in range(20)], [b"%02d" % i for i in range(20)])
    ]
    assert parser.feed(b"b\r\n") == [("s", "_INBOX.x.99", None, b"ab")]


def test_ack_run_collects_acks_to_one_consumer_and_stops_at_what_the_fast_path_would_not_take() -> None:
    """Reply-less PUBs to one consumer's ack subjects in a row (single or double blank before the
    size, any payload) are one AckRun; another consumer's ack starts another; a frame the fast
    path would split differently, a longer line than allowed, a payload over the limit or a
    partial frame ends it and is parsed (or reported) as before."""

    def ack(i: int, payload: bytes = b"+ACK", consumer: bytes = b"C") -> bytes:
        blanks = b" " * (1 + i % 2)  # nats-py writes two blanks (its empty reply), we write one
        return b"PUB $JS.ACK.S.%b.1.%d.%d.17.0%b%d\r\n%b\r\n" % (
            consumer,
            i,
            i,
            blanks,
            len(payload),
            payload,
        )

    def tokens(*seqs: int) -> list[bytes]:
        return [b"1.%d.%d.17.0" % (i, i) for i in seqs]

    parser = NatsServerParser(max_control_line=60, max_payload=16)
    parser.pub_runs = True
    burst = b"".join(ack(i) for i in range(1, 6)) + ack(6, b"-NAK")
    third = ack(3, b"+TERM", b"D")
    events = parser.feed(burst + third + ack(7)[:10])
    assert events == [
        AckRun("$JS.ACK.S.C.", tokens(1, 2, 3, 4, 5, 6), [b"+ACK"] * 5 + [b"-NAK"]),
        AckRun("$JS.ACK.S.D.", tokens(3), [b"+TERM"]),
    ]
    assert parser.feed(ack(7)[10:] + ack(8)[:-1]) == [AckRun("$JS.ACK.S.C.", tokens(7), [b"+ACK"])]
    assert parser.feed(b"\n" + ack(9)) == [
        ("$JS.ACK.S.C.1.8.8.17.0", "", None, b"+ACK"),
        AckRun("$JS.ACK.S.C.", tokens(9), [b"+ACK"]),
    ]
    long_line = b"PUB $JS.ACK.S.C.1.2.3.%d.0 4\r\n+ACK\r\n" % (10**40)
    events = parser.feed(ack(1) + ack(2) + long_line)
    assert events[0] == AckRun("$JS.ACK.S.C.", tokens(1, 2), [b"+ACK"] * 2)
    assert events[1].err == "maximum control line exceeded"
    parser = NatsServerParser(max_payload=16)
    parser.pub_runs = True
    events = parser.feed(ack(1) + b"PUB $JS.ACK.S.C.1.2.3.4.5 17\r\n" + b"x" * 17 + b"\r\n")
    assert events[0] == AckRun("$JS.ACK.S.C.", tokens(1), [b"+ACK"])
    assert events[1].err == "Maximum Payload Violation"
    parser = NatsServerParser()
    parser.pub_runs = True
    events = parser.feed(ack(1) + b"PUB $JS.ACK.S.C.1.2.3.4.5 4\r\n+ACKXY")
    assert events[0] == AckRun("$JS.ACK.S.C.", tokens(1), [b"+ACK"])
    assert events[1].err == "Unknown Protocol Operation"
    parser = NatsServerParser()  # without pub_runs (a connection with per-message checks): tuples
    assert parser.feed(ack(1)) == [("$JS.ACK.S.C.1.1.1.17.0", "", None, b"+ACK")]


def test_request_memo_rechecks_the_payload_limit() -> None:
    parser = NatsServerParser(max_payload=4)
    assert parser.feed(b"PUB s r.1 3\r\nabc\r\n") == [("s", "r.1", None, b"abc")]
    parser.max_payload = 2  # as a connection's account limit may lower it
    assert parser.feed(b"PUB s r.2 3\r\nabc\r\n")[0].err == "Maximum Payload Violation"


client_frames = st.lists(
    st.sampled_from(
        [
            b"HMSG in 7 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
            b"HMSG in 7 r.1 18 18\r\nNATS/1.0\r\nA: b\r\n\r\n\r\n",
            b"HMSG in 7 0 3\r\nabc\r\n",
            b"MSG in 7 2\r\nno\r\n",
            b"HMSG other 8 12 14\r\nNATS/1.0\r\n\r\nho\r\n",
            b"MSG other 8 2\r\nhm\r\n",
            b"PING\r\n",
        ]
    ),
    min_size=1,
    max_size=14,
)


def _as_msgs(events: list[object]) -> list[object]:
    """FrameRuns expanded to the Msg events the same frames make without ``frame_sids``."""
    out: list[object] = []
    for ev in events:
        if isinstance(ev, FrameRun):
            offsets = ev.offsets
            assert len(offsets) % 3 == 0 and offsets
            for i in range(0, len(offsets), 3):
                h, p, e = offsets[i : i + 3]
                out.append(Msg("in", ev.sid, "", ev.buf[h:p] or b"", ev.buf[p:e]))
        elif isinstance(ev, Msg) and ev.sid == 7 and ev.hdr is not None:
            out.append(Msg("in", 7, "", ev.hdr, ev.payload))  # the generic path's frames: no reply kept
        else:
            out.append(ev)
    return out


@given(client_frames, st.lists(st.integers(min_value=0), max_size=6))
def test_frame_runs_are_the_same_frames(chosen: list[bytes], cuts: list[int]) -> None:
    """HMSG frames of a raw-read sid come as FrameRuns (offsets into the received bytes), whatever
    the chunking: expanded, the very header blocks and payloads of the general path; other sids,
    MSG frames and other ops are untouched."""
    data = b"".join(chosen)
    plain = ClientSideParser().feed(data)
    parser = ClientSideParser()
    parser.frame_sids = {7}
    assert _as_msgs(_feed_in(parser, data, cuts)) == _as_msgs(plain)


def test_a_frame_run_takes_every_complete_frame_in_a_row() -> None:
    parser = ClientSideParser()
    parser.frame_sids = {7}
    frame = b"HMSG in 7 12 15\r\nNATS/1.0\r\n\r\n%03d\r\n"
    data = b"".join(frame % i for i in range(100))
    events = parser.feed(data + b"HMSG in 7 12 15\r\nNATS/1.0\r\n\r\n1")  # and a partial one
    assert len(events) == 1 and isinstance(events[0], FrameRun)
    run = events[0]
    assert [run.buf[run.offsets[i + 1] : run.offsets[i + 2]] for i in range(0, 300, 3)] == [
        b"%03d" % i for i in range(100)
    ]
    (last,) = parser.feed(b"23\r\n")
    assert isinstance(last, FrameRun) and last.buf[last.offsets[1] : last.offsets[2]] == b"123"


reply_frames = st.lists(
    st.sampled_from(
        [
            b"MSG _R.x.1 7 2\r\nno\r\n",
            b"MSG _R.x.22 7 0\r\n\r\n",
            b"MSG _R.x.3 7 6\r\nab\r\ncd\r\n",
            b"MSG _R.x.4  7\t3\r\nabc\r\n",  # runs of whitespace: the fast path's split, not the run's regex
            b"MSG _R.x.5 7 r.1 2\r\nre\r\n",
            b"HMSG _R.x.6 7 12 14\r\nNATS/1.0\r\n\r\nhi\r\n",
            b"MSG other 8 2\r\nhm\r\n",
            b"MSG _R.x.9 17 2\r\nzz\r\n",
            b"PING\r\n",
        ]
    ),
    min_size=1,
    max_size=14,
)


def _runs_as_msgs(events: list[object]) -> list[object]:
    """MsgRuns expanded to the Msg events the same frames make without ``msg_run_sids``."""
    out: list[object] = []
    for ev in events:
        if isinstance(ev, MsgRun):
            assert ev.subjects and len(ev.subjects) == len(ev.payloads)
            out += [
                Msg(s.decode(), ev.sid, "", None, p) for s, p in zip(ev.subjects, ev.payloads, strict=True)
            ]
        else:
            out.append(ev)
    return out


@given(reply_frames, st.lists(st.integers(min_value=0), max_size=6))
def test_msg_runs_are_the_same_frames(chosen: list[bytes], cuts: list[int]) -> None:
    """Reply-less MSG frames of a run-read sid come as MsgRuns, whatever the chunking: expanded, the
    very subjects and payloads of the general path; frames with a reply or headers, other sids
    and other ops are untouched."""
    data = b"".join(chosen)
    plain = ClientSideParser().feed(data)
    parser = ClientSideParser()
    parser.msg_run_sids = {7}
    assert _runs_as_msgs(_feed_in(parser, data, cuts)) == _runs_as_msgs(plain)


def test_a_msg_run_takes_every_complete_frame_in_a_row() -> None:
    parser = ClientSideParser()
    parser.msg_run_sids = {7}
    data = b"".join(b"MSG _R.x.%d 7 3\r\n%03d\r\n" % (i, i) for i in range(100))
    events = parser.feed(data + b"MSG _R.x.100 7 3\r\n1")  # and a partial one
    assert events == [MsgRun(7, [b"_R.x.%d" % i for i in range(100)], [b"%03d" % i for i in range(100)])]
    assert parser.feed(b"00\r\n") == [MsgRun(7, [b"_R.x.100"], [b"100"])]
    parser = ClientSideParser(max_control_line=20)
    parser.msg_run_sids = {7}
    events = parser.feed(b"MSG _R.x.1 7 1\r\na\r\nMSG _R.x.12345678901 7 1\r\nb\r\n")
    assert events[0] == MsgRun(7, [b"_R.x.1"], [b"a"])  # the long line is the general path's to judge
    assert len(events) == 2 and not isinstance(events[1], MsgRun)
