"""The parsers' fast path (a repeated control line is parsed once): same events as the general path,
whatever the chunking, for repeated, interleaved and header-carrying frames."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.protocol import ClientSideParser, Msg, Pub, ServerSideParser
from pyjetstream.protocol.events import PubRun
from pyjetstream.protocol.parser import NatsServerParser

frames = st.lists(
    st.sampled_from(
        [
            (b"PUB a.b 3\r\nabc\r\n", Pub("a.b", "", None, b"abc")),
            (b"PUB a.b 3\r\nxyz\r\n", Pub("a.b", "", None, b"xyz")),
            (b"PUB a.b r.1 3\r\nabc\r\n", Pub("a.b", "r.1", None, b"abc")),
            (b"PUB a.b 0\r\n\r\n", Pub("a.b", "", None, b"")),
            (b"HPUB a.b 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", Pub("a.b", "", b"NATS/1.0\r\n\r\n", b"hi")),
            (b"HPUB a.b r 0 2\r\nhi\r\n", Pub("a.b", "r", b"", b"hi")),
            (b"pub a.b 1\r\nz\r\n", Pub("a.b", "", None, b"z")),
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
