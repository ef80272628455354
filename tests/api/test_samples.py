"""Round-trip JSON captured from a real nats-server 2.15.1 (tests/api/capture_samples.py).

Decoding a captured response into its wrapper class and encoding it again must give back
the server's bytes exactly: field names, order, omitempty, escaping, time format.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
import pytest

from pyjetstream.api import (
    RESPONSE_CLASSES,
    ApiResponse,
    ConsumerInfo,
    StreamInfo,
    codec,
    errors,
    headers,
)
from pyjetstream.api.ack import parse_ack_reply
from pyjetstream.api.advisories import ADVISORY_TYPES
from pyjetstream.api.headers import Status, status_block
from pyjetstream.api.responses import ConsumerInfoResponse, StreamCreateResponse, StreamInfoResponse
from pyjetstream.api.timefmt import NanoTime

DATA = Path(__file__).parent / "data"
RESPONSE_FILES = sorted(
    p
    for p in DATA.glob("*.json")
    if not p.name.endswith(".msg.json") and p.name not in ("MANIFEST.json", "pub_acks.json")
)
MSG_FILES = sorted(DATA.glob("*.msg.json"))
ERROR_FILES = [p for p in RESPONSE_FILES if b'"error":' in p.read_bytes()]


def _load_msg(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_samples_exist() -> None:
    manifest = json.loads((DATA / "MANIFEST.json").read_text())
    assert manifest["server_version"] == "2.15.1"
    assert len(RESPONSE_FILES) >= 50


@pytest.mark.parametrize("path", RESPONSE_FILES, ids=lambda p: p.stem)
def test_response_round_trips_byte_exact(path: Path) -> None:
    raw = path.read_bytes()
    rtype = json.loads(raw)["type"]
    cls = RESPONSE_CLASSES[rtype]
    resp = codec.decode_response(raw, cls)
    assert resp.type == rtype
    assert codec.encode(resp) == raw


@pytest.mark.parametrize("path", ERROR_FILES, ids=lambda p: p.stem)
def test_error_samples_match_error_table(path: Path) -> None:
    resp = codec.decode_response(path.read_bytes(), ApiResponse)
    assert resp.error is not None
    entry = errors.ERRORS_BY_CODE[resp.error.err_code]
    assert entry.code == resp.error.code
    # the table's template (placeholders as wildcards) matches the server's text
    parts = re.split(r"(\{\w+\})", entry.description)
    pattern = "".join(".+" if re.fullmatch(r"\{\w+\}", p) else re.escape(p) for p in parts)
    assert re.fullmatch(pattern, resp.error.description), (entry.description, resp.error.description)


def test_stream_info_payload_decodes_directly_and_via_wrapper() -> None:
    raw = (DATA / "stream_info_deleted.json").read_bytes()
    direct = codec.decode(raw, StreamInfo)  # unknown "type"/paging keys are ignored
    wrapped = codec.decode_response(raw, StreamInfoResponse).payload()
    assert direct == wrapped
    assert direct.state.deleted == [3]
    assert direct.state.num_deleted == 1
    assert direct.config.max_msgs == -1
    assert isinstance(direct.created, NanoTime) and not direct.created.is_zero
    rebuilt = StreamInfoResponse.from_payload(direct)
    assert rebuilt.payload() == direct
    assert rebuilt.type == StreamInfoResponse.TYPE


def test_create_response_from_payload_reproduces_server_bytes() -> None:
    raw = (DATA / "stream_create_full.json").read_bytes()
    info = codec.decode(raw, StreamInfo)
    resp = StreamCreateResponse.from_payload(info, did_create=True)
    assert codec.encode(resp) == raw


def test_consumer_info_wrapper_payload() -> None:
    raw = (DATA / "consumer_info_pull.json").read_bytes()
    info = codec.decode_response(raw, ConsumerInfoResponse).payload()
    assert isinstance(info, ConsumerInfo)
    assert info.config.backoff == [1_000_000_000, 2_000_000_000]
    assert info.delivered.last_active is not None
    assert codec.encode(ConsumerInfoResponse.from_payload(info)) == raw


def test_list_items_round_trip_as_models() -> None:
    raw = (DATA / "stream_list.json").read_bytes()
    resp = codec.decode_response(raw, RESPONSE_CLASSES[json.loads(raw)["type"]])
    for item in resp.streams:
        assert isinstance(item, StreamInfo)
        assert codec.decode(codec.encode(item), StreamInfo) == item


def test_pub_acks_byte_exact() -> None:
    acks = json.loads((DATA / "pub_acks.json").read_text())
    for name, raw in acks.items():
        resp = codec.decode_pub_ack(raw)
        if resp.error is None:
            expected = codec.encode_pub_ack(
                resp.stream, resp.seq, duplicate=resp.duplicate, domain=resp.domain
            )
        else:
            expected = codec.encode_pub_ack_error(resp.stream, resp.error)
        assert expected == raw.encode(), name
    assert codec.decode_pub_ack(acks["pub2"]).duplicate is True
    prefix = codec.pub_ack_prefix("ORDERS")
    assert codec.finish_pub_ack(prefix, 2, duplicate=True) == acks["pub2"].encode()
    assert codec.finish_pub_ack(prefix, 1) == acks["pub0"].encode()
    assert codec.decode_pub_ack(acks["pub3"]).error == errors.JSStreamWrongLastSequenceErrF(seq=2)


@pytest.mark.parametrize(
    "path", [p for p in MSG_FILES if p.name.startswith("advisory_")], ids=lambda p: p.stem
)
def test_advisories_round_trip(path: Path) -> None:
    msg = json.loads(path.read_text())
    raw = msg["payload"].encode()
    cls = ADVISORY_TYPES[json.loads(raw)["type"]]
    event = codec.decode(raw, cls)
    assert codec.encode(event) == raw
    assert msg["subject"].split(".")[-1] in (getattr(event, "consumer", ""), getattr(event, "stream", ""))


def test_delivered_ack_subjects_parse() -> None:
    for i in range(3):
        msg = _load_msg(f"pull_delivery_{i}.msg.json")
        md = parse_ack_reply(msg["reply"])
        assert (md.stream, md.consumer) == ("ORDERS", "PULL")
        assert md.num_delivered >= 1
        assert md.timestamp > 0
    first = parse_ack_reply(_load_msg("pull_delivery_0.msg.json")["reply"])
    redelivered = parse_ack_reply(_load_msg("pull_delivery_2.msg.json")["reply"])
    assert first.stream_seq == redelivered.stream_seq  # NAK'd then redelivered
    assert redelivered.num_delivered == first.num_delivered + 1
    assert redelivered.consumer_seq > first.consumer_seq
    # the ack timestamp is the store time MSG.GET reports for the same message
    stored = json.loads((DATA / "msg_get_seq_headers.json").read_text())["message"]
    assert first.timestamp == NanoTime.parse(stored["time"])


def test_status_blocks_byte_exact() -> None:
    def hdr(name: str) -> bytes:
        return _load_msg(name)["headers"].encode()

    assert status_block(Status.MESSAGE_NOT_FOUND) == hdr("direct_get_miss.msg.json")
    assert status_block(Status.bad_request("heartbeat value too large")) == hdr(
        "pull_status_400_heartbeat.msg.json"
    )
    expired = _load_msg("pull_status_408_expired.msg.json")["headers"]
    pending = int(expired.split(headers.PENDING_MESSAGES + ": ")[1].split("\r\n")[0])
    assert (
        status_block(
            Status.REQUEST_TIMEOUT, [(headers.PENDING_MESSAGES, pending), (headers.PENDING_BYTES, 0)]
        )
        == expired.encode()
    )


def test_direct_get_headers_use_time_format() -> None:
    block = _load_msg("direct_get_seq.msg.json")["headers"]
    fields = dict(line.split(": ", 1) for line in block.split("\r\n")[1:] if line)
    assert fields[headers.STREAM] == "FULL"
    assert fields[headers.SEQUENCE] == "1"
    ts = NanoTime.parse(fields[headers.TIME_STAMP])
    assert ts.isoformat() == fields[headers.TIME_STAMP]


def test_stored_msg_headers_are_raw_blocks() -> None:
    raw = (DATA / "msg_get_seq_headers.json").read_bytes()
    resp = codec.decode_response(raw, RESPONSE_CLASSES[json.loads(raw)["type"]])
    assert resp.message.hdrs.startswith(b"NATS/1.0\r\nNats-Msg-Id: m1\r\n")
    assert resp.message.data == b"payload 1"


def test_go_escaping_is_applied() -> None:
    raw = (DATA / "consumer_create_pull.json").read_bytes()
    assert b"\\u003c" in raw
    resp = codec.decode_response(raw, RESPONSE_CLASSES[json.loads(raw)["type"]])
    assert resp.config.description == "pull <c>"
    assert b"<" in codec.encode(resp, go_escape=False)
    assert msgspec.json.decode(codec.encode(resp)) == json.loads(raw)
