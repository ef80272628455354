"""`gojson.decode_go`'s fast path (`_decode_simple`, msgspec in C for a flat object of plain
fields) gives what the Python scanner and checker give — the same model or the same Go error —
and declines every body it cannot answer alike."""

from __future__ import annotations

from typing import Any

import pytest

from pyjetstream.api import gojson
from pyjetstream.api.models_msg import MsgGetRequest
from pyjetstream.api.requests import StreamInfoRequest, StreamPurgeRequest

BODIES = [
    b'{"seq":5}',
    b'{"seq": 1, "next_by_subj": "m.1"}',
    b'{"last_by_subj":"a.b"}',
    b'{"seq":1,"seq":2}',
    b'{"Seq":3}',
    b'{"seq":3,"SEQ":4}',
    b'{"seq":-1}',
    b'{"seq":-0}',
    b'{"seq":0}',
    b'{"seq":18446744073709551615}',
    b'{"seq":18446744073709551616}',
    b'{"seq":1.0}',
    b'{"seq":1e3}',
    b'{"seq":"1"}',
    b'{"seq":true}',
    b'{"seq":null}',
    b'{"no_hdr":true,"batch":3}',
    b'{"no_hdr":1}',
    b'{"batch":-2}',
    b'{"batch":9223372036854775808}',
    b'{"last_by_subj":"\\u00e9"}',
    b'{"last_by_subj":"\\ud800"}',
    b'{"last_by_subj":"caf\xc3\xa9"}',
    b'{"last_by_subj":"\xd1"}',
    b'{"unknown":1}',
    b'{"seq":1} {"seq":2}',
    b'{"seq":1}   ',
    b"  {}",
    b"",
    b"null",
    b"[]",
    b"5",
    b'{"seq":1',
    b'{"multi_last":["a.*"]}',
    b'{"start_time":"2024-01-01T00:00:00Z"}',
    b'{"keep":3,"filter":"x.>"}',
    b'{"keep":-3}',
    b'{"deleted_details":true,"subjects_filter":">","offset":10}',
]


def _outcome(body: bytes, cls: type, strict: bool, fast: bool) -> Any:
    try:
        return ("ok", gojson.decode_go(body, cls, strict, fast=fast))
    except gojson.GoJsonError as exc:
        return ("error", str(exc))


@pytest.mark.parametrize("cls", [MsgGetRequest, StreamPurgeRequest, StreamInfoRequest])
@pytest.mark.parametrize("strict", [True, False])
def test_fast_path_equals_the_checker(cls: type, strict: bool) -> None:
    for body in BODIES:
        assert _outcome(body, cls, strict, True) == _outcome(body, cls, strict, False), body


def test_fast_path_takes_the_common_bodies() -> None:
    assert gojson._decode_simple(b'{"seq":1,"next_by_subj":"m.1"}', MsgGetRequest) == MsgGetRequest(
        seq=1, next_by_subj="m.1"
    )
    for declined in (b'{"Seq":1}', b'{"seq":-0}', b'{"seq":null}', b'{"multi_last":["a"]}', b"{} {}"):
        assert gojson._decode_simple(declined, MsgGetRequest) is None
