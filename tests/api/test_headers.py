"""``api.headers``: the row block an idempotent writer sends is the block the client encodes."""

from __future__ import annotations

import pytest

from pyjetstream.api.headers import (
    EXPECTED_STREAM,
    LAST_CONSUMER,
    LAST_STREAM,
    MSG_ID,
    REQUIRED_API_LEVEL,
    STREAM_IDENTITY,
    Status,
    header_block,
    heartbeat_block,
    publish_block,
    publish_block_frame,
    status_block,
    status_prefix,
)
from pyjetstream.protocol.headers import encode_headers, get_header


@pytest.mark.parametrize(("msg_id", "stream"), [("a.1.2.ff.1", "ORDERS"), ("x", ""), ("", "S"), ("", "")])
def test_publish_block_is_what_the_client_encodes(msg_id: str, stream: str) -> None:
    headers = {}
    if msg_id:
        headers[MSG_ID] = msg_id
    if stream:
        headers[EXPECTED_STREAM] = stream
    want = encode_headers(headers) if headers else None
    assert publish_block(msg_id, stream) == want
    if msg_id:
        head, tail = publish_block_frame(stream)
        block = head + msg_id.encode() + tail
        assert block == want
        assert get_header(block, MSG_ID.encode()) == msg_id.encode()


@pytest.mark.parametrize(
    "pairs",
    [
        [(REQUIRED_API_LEVEL, 5), (STREAM_IDENTITY, "a1b2")],
        [(LAST_CONSUMER, 7), (LAST_STREAM, 1_000_000)],
        [("Content-Encoding", "gzip")],
    ],
)
def test_header_block_is_what_the_client_encodes(pairs: list[tuple[str, str | int]]) -> None:
    """The blocks the server attaches to what it sends itself are the client's encoding of the
    same headers, in the order given, and each header reads back."""
    block = header_block(pairs)
    assert block == encode_headers({name: str(value) for name, value in pairs})
    for name, value in pairs:
        assert get_header(block, name.encode()) == str(value).encode()


def test_a_status_prefix_begins_its_status_blocks() -> None:
    assert heartbeat_block(1, 2).startswith(status_prefix(Status.IDLE_HEARTBEAT[0]))
    assert status_block(Status.FLOW_CONTROL).startswith(status_prefix(100))
    assert not status_block(Status.NO_MESSAGES).startswith(status_prefix(100))


@pytest.mark.parametrize("seqs", [(0, 0), (1, 2), (4, 9), (2**63 - 1, 2**64 - 1), (17, 0)])
@pytest.mark.parametrize("stalled", ["", "$JS.FC.S.C.abcd"])
def test_heartbeat_block_formatted_in_one_step_is_status_blocks(
    monkeypatch: pytest.MonkeyPatch, seqs: tuple[int, int], stalled: str
) -> None:
    """`heartbeat_block`'s one-step format (``FAST_HEARTBEAT``) makes `status_block`'s bytes."""
    from pyjetstream.api import headers

    fast = heartbeat_block(*seqs, stalled)
    monkeypatch.setattr(headers, "FAST_HEARTBEAT", False)
    assert fast == heartbeat_block(*seqs, stalled)
    extra = [(headers.LAST_CONSUMER, seqs[0]), (headers.LAST_STREAM, seqs[1])]
    if stalled:
        extra.append((headers.CONSUMER_STALLED, stalled))
    assert fast == status_block(Status.IDLE_HEARTBEAT, extra)
