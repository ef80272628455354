"""`gojson.decode_go`'s fast path (`_decode_simple`, msgspec in C for an object of plain fields,
enums, times and nested objects of the same) gives what the Python scanner and checker give — the
same model or the same Go error — and declines every body it cannot answer alike."""

from __future__ import annotations

from typing import Any

import pytest

from pyjetstream.api import gojson
from pyjetstream.api.models_consumer import CreateConsumerRequest
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

# A consumer create's body: a nested config of plain fields, enums and times.
CONSUMER_BODIES = [
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"by_start_time","opt_start_time":"2026-11-29T14:00:00.5Z"}}',
    b'{"stream_name":"D","config":{"durable_name":"c","ack_policy":"explicit","ack_wait":30000000000,"max_deliver":-1}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"all","ack_policy":"none","replay_policy":"original"}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"last_per_subject","filter_subject":"a.>"},"action":"create"}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"by_start_sequence","opt_start_seq":5}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_seq":0,"description":"a-b"}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_seq":-0}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_seq":-1}}',
    b'{"stream_name":"D","config":{"name":"c","rate_limit_bps":18446744073709551616}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"sometimes"}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"ALL"}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":null}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":1}}',
    b'{"stream_name":"D","config":{"name":"c","ack_policy":"explicit","priority_policy":"pinned_client"}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_time":"yesterday"}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_time":"2026-13-01T00:00:00Z"}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_time":5}}',
    b'{"stream_name":"D","config":{"name":"c","opt_start_time":null}}',
    b'{"stream_name":"D","config":{"name":"c","pause_until":"2030-01-01T00:00:00+02:00"}}',
    b'{"stream_name":"D","config":{"name":"c","unknown":1}}',
    b'{"stream_name":"D","config":{"Name":"c"}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":["a","b"]}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"k":"v"}}}',
    b'{"stream_name":"D","config":{"name":"c","backoff":[1000000000]}}',
    b'{"stream_name":"D","config":{"name":"c","headers_only":"yes"}}',
    b'{"stream_name":"D","config":null}',
    b'{"stream_name":"D","config":[]}',
    b'{"stream_name":"D","config":"c"}',
    b'{"stream_name":"D","config":{"name":"c"},"config":{"durable_name":"d"}}',
    b'{"stream_name":"D","config":{"name":"c"}} {"config":{"durable_name":"d"}}',
    b'{"stream_name":"D","config":{"name":"c","deliver_policy":"all"},"action":"bogus"}',
    b'{"stream_name":"D","config":{"name":"caf\\u00e9"}}',
    b'{"stream_name":"D","pedantic":true,"config":{"name":"c","inactive_threshold":5000000000}}',
    # lists of strings and maps of strings (a source's consumer create names its stream in metadata)
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":[]}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":["a",null]}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":["a",1]}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":"a"}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":null}}',
    b'{"stream_name":"D","config":{"name":"c","filter_subjects":[["a"]]}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"k":null,"j":"v"}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"k":1}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"k":{"a":"b"}}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"K":"v","k":"w","k":"x"}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":["k"]}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":null}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"caf\u00e9":"v"}}}',
    b'{"stream_name":"D","config":{"name":"c","metadata":{"k":"-0"},"opt_start_seq":0}}',
    b'{"stream_name":"O1","config":{"deliver_policy":"all","ack_policy":"none","ack_wait":79200000000000,'
    b'"max_deliver":1,"filter_subject":"o.>","idle_heartbeat":1000000000,"flow_control":true,"direct":true,'
    b'"inactive_threshold":10000000000,"metadata":{"_nats.src.stream":"AGG","_nats.src.acc":"$G"},'
    b'"name":"JS_SRC_abcdefgh","sourcing":true}}',
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


@pytest.mark.parametrize("strict", [True, False])
def test_fast_path_equals_the_checker_for_nested_configs(strict: bool) -> None:
    for body in CONSUMER_BODIES + BODIES:
        assert _outcome(body, CreateConsumerRequest, strict, True) == _outcome(
            body, CreateConsumerRequest, strict, False
        ), body


def test_fast_path_takes_a_consumer_create() -> None:
    """A consumer create (a nested config with enums and a time, filter subjects, metadata: a
    source's consumer create) is the fast path's, as is a body with a case-folded key or a bad
    enum the checker's."""
    taken = [*CONSUMER_BODIES[:5], CONSUMER_BODIES[21], CONSUMER_BODIES[22], CONSUMER_BODIES[-1]]
    for body in taken:
        assert gojson._decode_simple(body, CreateConsumerRequest) is not None, body
    for body in (CONSUMER_BODIES[9], CONSUMER_BODIES[11], CONSUMER_BODIES[20], CONSUMER_BODIES[25]):
        assert gojson._decode_simple(body, CreateConsumerRequest) is None, body


def test_fast_path_takes_the_common_bodies() -> None:
    assert gojson._decode_simple(b'{"seq":1,"next_by_subj":"m.1"}', MsgGetRequest) == MsgGetRequest(
        seq=1, next_by_subj="m.1"
    )
    # (a list of strings is taken since session 14; one with anything else in it is not)
    assert gojson._decode_simple(b'{"multi_last":["a"]}', MsgGetRequest) == MsgGetRequest(multi_last=["a"])
    for declined in (b'{"Seq":1}', b'{"seq":-0}', b'{"seq":null}', b'{"multi_last":["a",null]}', b"{} {}"):
        assert gojson._decode_simple(declined, MsgGetRequest) is None
