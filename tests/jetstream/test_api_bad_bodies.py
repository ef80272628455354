"""API request bodies that are not clean JSON, on both targets: every one is answered, as nats-server
2.15.1 answers it.

Found by scripts/fuzz.py: a body with invalid UTF-8 (``"&\\xd1"\\x05\\xe8`` to ``CONSUMER.LIST``) made
the embedded server's handler raise, so the request went unanswered. Go's decoder takes invalid
UTF-8 as U+FFFD instead of refusing it, names the rune (or the invalid byte) its scanner stopped at,
and the INFO, NAMES and LIST requests read a body only when it starts with ``{`` or ``[``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.support.targets import Target

API = "$JS.API."


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    await c.add_stream("S", ["s.>"])
    await c.add_consumer("S", "D")
    yield c
    await c.close()


BAD_BODIES = [
    # (subject, body, the error code and description, or None for a success)
    ("CONSUMER.LIST.S", b'"&\xd1"\x05\xe8', None),  # the fuzzer's body: not an object, so no body
    ("CONSUMER.NAMES.S", b"\xd1", None),
    ("STREAM.NAMES", b"abc", None),
    ("STREAM.LIST", b'"x"', None),
    ("STREAM.INFO.S", b"5", None),
    (
        "STREAM.LIST",
        b"[1]",
        (10025, "invalid JSON: json: cannot unmarshal array into Go value of type server.JSApiStreamListRequest"),
    ),
    ("STREAM.NAMES", b'{"x\xd1":1}', (10025, 'invalid JSON: json: unknown field "x\ufffd"')),
    (
        "CONSUMER.LIST.S",
        b'{"offset":"\xd1"}',
        (
            10025,
            "invalid JSON: json: cannot unmarshal string into Go struct field JSApiConsumersRequest.offset of type int",
        ),
    ),
    ("CONSUMER.INFO.S.D", b'{"x\xd1":1}', (10038, "expected an empty request payload")),
    ("CONSUMER.DELETE.S.X", b'"&\xd1"', (10038, "expected an empty request payload")),
    (
        "STREAM.MSG.GET.S",
        b"\xd1",
        (10025, "invalid JSON: invalid character '\\xd1' looking for beginning of value at offset 1"),
    ),
    (
        "STREAM.MSG.GET.S",
        b" \xc3\xa9",
        (10025, "invalid JSON: invalid character '\u00e9' looking for beginning of value at offset 3"),
    ),
    (
        "STREAM.SNAPSHOT.S",
        b'"&\xd1"\x05\xe8',
        (10025, "invalid JSON: json: cannot unmarshal string into Go value of type server.JSApiStreamSnapshotRequest"),
    ),
    ("CONSUMER.RESET.S.D", b"\xd1", (10025, "invalid JSON: invalid character '\\xd1' looking for beginning of value")),
    (
        "CONSUMER.RESET.S.D",
        b'"\xd1" 5',
        (10025, "invalid JSON: invalid character '5' after top-level value"),
    ),
    ("CONSUMER.RESET.S.D", b'{"x\xd1":1}', None),  # reset ignores unknown fields
]


async def test_bad_bodies_are_answered_as_nats_server_answers(client: RawClient) -> None:
    for subject, body, expected in BAD_BODIES:
        resp = await client.api(API + subject, body)
        error = resp.get("error")
        got = None if error is None else (error["err_code"], error["description"])
        assert got == expected, (subject, body, resp)


async def test_invalid_utf8_in_a_config_string_is_taken_as_the_replacement_character(client: RawClient) -> None:
    resp = await client.api(API + "STREAM.CREATE.X", b'{"name":"X","subjects":["x.\xd1"],"description":"\xd1"}')
    assert "error" not in resp, resp
    assert resp["config"]["description"] == "\ufffd"
    assert resp["config"]["subjects"] == ["x.\ufffd"]
    resp = await client.api(
        API + "CONSUMER.CREATE.S.W", b'{"stream_name":"S","config":{"ack_policy":"explicit","description":"a\xd1"}}'
    )
    assert "error" not in resp, resp
    assert resp["config"]["description"] == "a\ufffd"
