"""The parsers' fast path (a repeated control line is parsed once): same events as the general path,
whatever the chunking, for repeated, interleaved and header-carrying frames."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.protocol import ClientSideParser, Msg, Pub, ServerSideParser
from pyjetstream.protocol import parser as parser_module
from pyjetstream.protocol.events import FrameRun, MsgRun, PubRun
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
            # HPUBs with a reply and headers: the Spark sink's rows, and lines that look alike.
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
            # JetStream acks, and lines that look alike (nothing special to the parser).
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
            assert len(ev.payloads) == len(ev.hdrs) == len(ev.replies) == len(ev.subjects) > 1
            out.extend(zip(ev.subjects, ev.replies, ev.hdrs, ev.payloads, strict=True))
        else:
            out.append(ev)
    return out


@given(frames, st.lists(st.integers(min_value=0), max_size=6))
def test_pub_runs_are_the_same_frames(chosen: list[tuple[bytes, Pub]], cuts: list[int]) -> None:
    """With ``pub_runs`` (a server connection without per-message checks), consecutive complete
    publishes come as one PubRun: expanded, exactly the tuples without it, whatever the chunking."""
    data = b"".join(raw for raw, _ in chosen * 3)
    expected = [(ev.subject, ev.reply, ev.hdr, ev.payload) for _, ev in chosen * 3]
    parser = NatsServerParser()
    parser.pub_runs = True
    assert _expand_runs(_feed_in(parser, data, cuts)) == expected


def _large_frames() -> tuple[bytes, list[tuple[str, str, bytes | None, bytes]]]:
    """Publishes of 0 B to 64 KiB (and one past a 256 KiB read), with and without headers."""
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    wanted: list[tuple[str, str, bytes | None, bytes]] = []
    for i, size in enumerate([16384, 1, 65536, 0, 16384, 300_000, 4000, 16]):
        payload = bytes([65 + i % 26]) * size
        wanted.append((f"s.{i}", "r" if i % 3 == 0 else "", hdr if i % 2 else None, payload))
    data = b"".join(
        b"PUB %b %b%d\r\n%b\r\n" % (s.encode(), (r + " ").encode() if r else b"", len(p), p)
        if h is None
        else b"HPUB %b %b%d %d\r\n%b%b\r\n" % (s.encode(), (r + " ").encode() if r else b"", len(h), len(h) + len(p), h, p)
        for s, r, h, p in wanted
    )
    return data, wanted


def test_large_payloads_split_across_reads_at_every_size_boundary() -> None:
    """Payloads up to past a read's size arrive split anywhere: a payload completed from the head of
    the next read (and one spanning several reads, joined once) gives the frames an unsplit feed
    gives; nothing is left buffered. Reads of every size around the frames' own sizes, and a cut at
    every byte around each frame boundary."""
    data, wanted = _large_frames()
    for read in [1000, 4095, 4096, 16384, 16411, 65535, 65536, 65537, 262144]:
        for runs in (False, True):
            parser = NatsServerParser()
            parser.pub_runs = runs
            events: list[object] = []
            for at in range(0, len(data), read):
                events += parser.feed(data[at : at + read])
            assert _expand_runs(events) == wanted, (read, runs)
            assert parser.buffered == 0
    ends: list[int] = []
    at = 0
    for _s, _r, h, p in wanted:  # each frame's line end, payload start and end, and frame end
        line = data.index(b"\n", at) + 1
        at = line + (len(h) if h is not None else 0) + len(p) + 2
        ends += [line, at - 2, at]
    for edge in ends:
        for cut in range(max(edge - 3, 0), min(edge + 3, len(data))):
            parser = NatsServerParser()
            parser.pub_runs = True
            got = parser.feed(data[:cut]) + parser.feed(data[cut : cut + 70000]) + parser.feed(data[cut + 70000 :])
            assert _expand_runs(got) == wanted, cut


def test_a_split_payload_not_followed_by_crlf_is_a_violation() -> None:
    parser = NatsServerParser()
    assert parser.feed(b"PUB a 10\r\n01234") == []
    assert parser.feed(b"567") == []
    events = parser.feed(b"89XYPUB b 0\r\n\r\n")
    assert len(events) == 1 and events[0].err == "Unknown Protocol Operation"
    assert parser.feed(b"PUB c 0\r\n\r\n") == [] and parser.buffered == 0


def _run(*frames: tuple[str, str, bytes | None, bytes]) -> PubRun:
    return PubRun([f[0] for f in frames], [f[1] for f in frames], [f[2] for f in frames], [f[3] for f in frames])


def test_pub_run_collects_a_pipelined_burst_and_stops_at_a_bad_frame() -> None:
    parser = NatsServerParser()
    parser.pub_runs = True
    events = parser.feed(b"".join(b"PUB s 2\r\n%02d\r\n" % i for i in range(50)) + b"PUB s 2\r\nabXY")
    assert events[0] == _run(*[("s", "", None, b"%02d" % i) for i in range(50)])
    assert events[1].err == "Unknown Protocol Operation"


def test_pub_run_takes_any_subject_reply_and_header_block() -> None:
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    parser = NatsServerParser()
    parser.pub_runs = True
    data = (
        b"PUB a.1 2\r\nab\r\nPUB a.2 _INBOX.x.1 1\r\nc\r\nHPUB a.3 r %d %d\r\n%bde\r\n"
        b"HPUB a.4 0 1\r\nf\r\nPUB $JS.ACK.S.C.1.2.3.4.5 4\r\n+ACK\r\nPING\r\nPUB a.5 0\r\n\r\n"
    ) % (len(hdr), len(hdr) + 2, hdr)
    assert parser.feed(data) == [
        _run(
            ("a.1", "", None, b"ab"),
            ("a.2", "_INBOX.x.1", None, b"c"),
            ("a.3", "r", hdr, b"de"),
            ("a.4", "", b"", b"f"),
            ("$JS.ACK.S.C.1.2.3.4.5", "", None, b"+ACK"),
        ),
        NatsServerParser().feed(b"PING\r\n")[0],
        ("a.5", "", None, b""),  # a lone publish stays a tuple
    ]


def test_pub_run_stops_at_what_the_fast_path_would_not_take() -> None:
    """A frame the fast path leaves to the general loop ends the run there and is parsed (or
    reported) as without runs: a separator the split sees, a line longer than allowed, a payload
    over the limit, a partial frame, a lower-case op."""
    two = b"PUB s _INBOX.x.0 2\r\n00\r\nPUB s _INBOX.x.1 2\r\n01\r\n"
    first = _run(("s", "_INBOX.x.0", None, b"00"), ("s", "_INBOX.x.1", None, b"01"))

    def parser(**limits: int) -> NatsServerParser:
        p = NatsServerParser(**limits)
        p.pub_runs = True
        return p

    events = parser(max_control_line=40).feed(two + b"PUB s r\x0bq 2\r\nab\r\n")
    assert events[0] == first and events[1].err is None and "processPub" in events[1].detail
    events = parser(max_control_line=40).feed(two + b"PUB s %b 2\r\nab\r\n" % (b"r" * 40))
    assert events[0] == first and events[1].err == "maximum control line exceeded"
    events = parser(max_payload=2).feed(two + b"PUB s 3\r\nabc\r\n")
    assert events[0] == first and events[1].err == "Maximum Payload Violation"
    p = parser()
    assert p.feed(two + b"PUB s _INBOX.x.99 2\r\na") == [first]
    assert p.feed(b"b\r\n") == [("s", "_INBOX.x.99", None, b"ab")]
    assert parser().feed(two + b"pub s 1\r\nz\r\n" + two) == [first, ("s", "", None, b"z"), first]


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


def test_lines_parsed_once_for_every_connection() -> None:
    """A reply-less PUB/HPUB line parsed by one connection's parser is, once seen twice, a hit for
    another's (the same subject ``str``: its hash cached for the router), with each parser's own
    limits: a smaller max_payload still refuses it, a larger one takes it. The table is bounded;
    a line seen once is not kept. The tables are the process's: other tests in this worker may have
    filled them up to a cut, so the test starts them empty (they are caches: nothing is lost)."""
    for table in (parser_module._TUPLE_LINES, parser_module._PUB_LINES, parser_module._SEEN):
        table.clear()
    first, second = NatsServerParser(), NatsServerParser()
    first.pub_runs = second.pub_runs = True
    data = b"".join(b"PUB cyc.%d 2\r\nab\r\n" % i for i in range(300))
    first.feed(data)
    assert b"PUB cyc.7 2" not in parser_module._TUPLE_LINES
    a = first.feed(data)[0]
    assert b"PUB cyc.7 2" in parser_module._TUPLE_LINES
    b = second.feed(data)[0]
    assert isinstance(a, PubRun) and isinstance(b, PubRun)
    assert a.subjects == b.subjects == [f"cyc.{i}" for i in range(300)]
    assert all(x is y for x, y in zip(a.subjects, b.subjects, strict=True))
    head = b"HPUB cyc.h 12 14\r\nNATS/1.0\r\n\r\nhi\r\n"
    assert first.feed(head) == [("cyc.h", "", b"NATS/1.0\r\n\r\n", b"hi")]
    first.feed(b"PUB x 0\r\n\r\n" + head)  # (seen twice: kept)
    assert second.feed(head)[0][0] is first.feed(head)[0][0]
    small = NatsServerParser(max_payload=1)
    assert small.feed(b"PUB cyc.7 2\r\nab\r\n")[0].err == "Maximum Payload Violation"
    assert ServerSideParser().feed(b"PUB cyc.7 2\r\nab\r\n") == [Pub("cyc.7", "", None, b"ab")]
    big = NatsServerParser()
    many = b"".join(b"PUB many.%d 0\r\n\r\n" % i for i in range(parser_module.LINE_CACHE_SIZE + 10))
    big.feed(many)
    big.feed(many)
    assert len(parser_module._TUPLE_LINES) <= parser_module.LINE_CACHE_SIZE
    assert len(parser_module._SEEN) <= parser_module.LINE_CACHE_SIZE
    long_subject = b"x" * (parser_module.LINE_CACHE_LEN + 1)
    big.feed(b"PUB %b 0\r\n\r\n" % long_subject)
    assert b"PUB %b 0" % long_subject not in parser_module._TUPLE_LINES
