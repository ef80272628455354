"""The array run finder (``frame_scan.hmsg_run``) gives the parser the very frames of its
frame-by-frame walk, whatever the chunking: payloads that hold the control-line prefix, other sids,
other ops, bare frames, partial frames."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.protocol.events import FrameRun
from pyjetstream.protocol.parser import ClientSideParser

np = pytest.importorskip("numpy")
from pyjetstream.protocol.frame_scan import hmsg_run  # noqa: E402  (needs numpy)

PREFIX = b"HMSG _INBOX.x 7 "


def _frame(hdr: bytes, payload: bytes) -> bytes:
    return PREFIX + b"%d %d\r\n" % (len(hdr), len(hdr) + len(payload)) + hdr + payload + b"\r\n"


pieces = st.one_of(
    st.builds(
        lambda i, payload: _frame(b"NATS/1.0\r\nA: %d\r\n\r\n" % i, payload),
        st.integers(0, 10**6),
        st.one_of(
            st.binary(max_size=40),
            st.just(PREFIX + b"12 30\r\n"),  # a payload that holds a control line
            st.just(b"\r\n" + PREFIX + b"2 2\r\nab"),
        ),
    ),
    st.sampled_from(
        [
            b"PING\r\n",
            b"HMSG other 8 12 14\r\nNATS/1.0\r\n\r\nab\r\n",
            b"HMSG _INBOX.x 7 r.1 12 12\r\nNATS/1.0\r\n\r\n\r\n",
            b"MSG _INBOX.x 7 3\r\nabc\r\n",
            b"HMSG _INBOX.x 7 12 12\n",  # a bare LF line (no frame without its payload)
        ]
    ),
)


def _frames(events: list[object]) -> list[object]:
    out: list[object] = []
    for ev in events:
        if isinstance(ev, FrameRun):
            o = [int(x) for x in ev.offsets]
            out += [
                (ev.sid, ev.buf[o[i] : o[i + 1]], ev.buf[o[i + 1] : o[i + 2]]) for i in range(0, len(o), 3)
            ]
        else:
            out.append(ev)
    return out


def _parse(data: bytes, cuts: list[int], scan: bool) -> list[object]:
    parser = ClientSideParser()
    parser.frame_sids = {7, 8}
    parser.frame_scan = hmsg_run if scan else None
    events: list[object] = []
    last = 0
    for cut in [*sorted(c % (len(data) + 1) for c in cuts), len(data)]:
        events += parser.feed(data[last:cut])
        last = cut
    return _frames(events)


@given(st.lists(pieces, max_size=30), st.lists(st.integers(min_value=0), max_size=4))
def test_the_run_finder_finds_the_frames_of_the_walk(chosen: list[bytes], cuts: list[int]) -> None:
    data = b"".join(chosen)
    assert _parse(data, cuts, scan=True) == _parse(data, cuts, scan=False)


def test_a_long_run_is_one_event_of_array_offsets() -> None:
    data = b"".join(_frame(b"NATS/1.0\r\nK: v\r\n\r\n", b"%05d" % i) for i in range(1000))
    parser = ClientSideParser()
    parser.frame_sids = {7}
    parser.frame_scan = hmsg_run
    (run,) = parser.feed(data + b"PING\r\n")[:1]
    assert isinstance(run, FrameRun) and isinstance(run.offsets, np.ndarray)
    o = run.offsets.tolist()
    assert [run.buf[o[i + 1] : o[i + 2]] for i in range(0, len(o), 3)] == [b"%05d" % i for i in range(1000)]


def _delivery(subject: bytes, reply: bytes, hdr: bytes | None, payload: bytes, sid: bytes = b"7") -> bytes:
    """A consumer's delivery: HMSG, or MSG for ``hdr`` None (a message without headers)."""
    if hdr is None:
        return b"MSG %s %s %s %d\r\n" % (subject, sid, reply, len(payload)) + payload + b"\r\n"
    line = b"HMSG %s %s %s %d %d\r\n" % (subject, sid, reply, len(hdr), len(hdr) + len(payload))
    return line + hdr + payload + b"\r\n"


deliveries = st.one_of(
    st.builds(
        lambda i, j, hdr, payload: _delivery(
            b"s.%d" % i, b"$JS.ACK.S.C.1.%d.%d.1700000000000000000.%d" % (j, j, i), hdr, payload
        ),
        st.integers(0, 10**6),
        st.integers(0, 10**9),
        st.sampled_from([b"NATS/1.0\r\nA: 1\r\n\r\n", None]),
        st.one_of(
            st.binary(max_size=40),
            st.just(b"HMSG s.1 7 r 2 2\r\nab"),  # a payload that holds a control line
            st.just(b"\r\nHMSG s.1 7 r 12 12\r\n"),
        ),
    ),
    st.sampled_from(
        [
            _delivery(b"a", b"r", b"", b"x"),  # no header block, in a frame with one
            _delivery(b"a", b"r", b"NATS/1.0\r\n\r\n", b"", sid=b"8"),  # another raw sid
            _delivery(b"a", b"r", b"NATS/1.0\r\n\r\n", b"", sid=b"77"),
            _delivery(b"a\tb", b"r", b"NATS/1.0\r\n\r\n", b"p"),  # a tab in the subject
            b"HMSG a 7  r 12 13\r\nNATS/1.0\r\n\r\np\r\n",  # two spaces
            b"HMSG a 7 r 12345678901 13\r\nNATS/1.0\r\n\r\np\r\n",  # 11 digits
            b"HMSG a 7 r x12 13\r\nNATS/1.0\r\n\r\np\r\n",
            b"HMSG a 7 r 12 13\nNATS/1.0\r\n\r\np\r\n",  # a bare LF
            b"HMSG a 7 r 12 11\r\nNATS/1.0\r\n\r\np\r\n",  # header size over total
            b"HMSG _INBOX.x 7 12 14\r\nNATS/1.0\r\n\r\nab\r\n",  # no reply subject
            b"HMSG a 7 r s 12 14\r\nNATS/1.0\r\n\r\nab\r\n",  # a token too many
            b"PING\r\n",
            b"MSG a 7 r 3\r\nabc\r\n",
            b"MSG a 7 3\r\nabc\r\n",  # no reply subject: a Msg
            b"MSG a 8 r 3\r\nabc\r\n",  # another raw sid
            b"MSG a 7  r 3\r\nabc\r\n",  # two spaces
            b"MSG a 7 r 12345678901\r\nabc\r\n",  # 11 digits
            b"MSG a\tb 7 r 3\r\nabc\r\n",  # a tab in the subject
            b"MSG a 7 r 3\r\nabc",  # no CRLF after the payload
            b"HMSG a 7 r 12 14\r\nNATS/1.0\r\n\r\nab",  # no CRLF after the payload
        ]
    ),
)


@given(st.lists(deliveries, max_size=30), st.lists(st.integers(min_value=0), max_size=4))
def test_the_run_finder_finds_a_consumers_deliveries_as_the_walk_does(
    chosen: list[bytes], cuts: list[int]
) -> None:
    """Frames with reply subjects and many subjects (a consumer's deliveries): the finder's token
    checks accept exactly the lines the walk's pattern matches."""
    data = b"".join(chosen)
    assert _parse(data, cuts, scan=True) == _parse(data, cuts, scan=False)


@pytest.mark.parametrize("hdr", [b"NATS/1.0\r\nK: v\r\n\r\n", None], ids=["HMSG", "MSG"])
def test_a_long_run_of_deliveries_is_one_event_of_array_offsets(hdr: bytes | None) -> None:
    """Deliveries with headers (HMSG) or without (MSG with a reply subject): one run, array offsets."""
    data = b"".join(
        _delivery(b"s.%d" % (i % 16), b"$JS.ACK.S.C.1.%d.%d.0.0" % (i, i), hdr, b"%05d" % i)
        for i in range(1000)
    )
    parser = ClientSideParser()
    parser.frame_sids = {7}
    parser.frame_scan = hmsg_run
    (run,) = parser.feed(data + b"PING\r\n")[:1]
    assert isinstance(run, FrameRun) and isinstance(run.offsets, np.ndarray)
    o = run.offsets.tolist()
    assert [run.buf[o[i + 1] : o[i + 2]] for i in range(0, len(o), 3)] == [b"%05d" % i for i in range(1000)]
