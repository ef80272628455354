"""``api.headers``: the row block an idempotent writer sends is the block the client encodes."""

from __future__ import annotations

import pytest

from pyjetstream.api.headers import EXPECTED_STREAM, MSG_ID, publish_block, publish_block_frame
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
