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
            out += [(ev.sid, ev.buf[o[i] : o[i + 1]], ev.buf[o[i + 1] : o[i + 2]]) for i in range(0, len(o), 3)]
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
