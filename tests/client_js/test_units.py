"""Server-free checks: error mapping, config constructors, publish headers, pull-status rules, options."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta

import pytest

from pyjetstream import api
from pyjetstream.api import ApiError, JetStreamApiError
from pyjetstream.client.errors import NatsError
from pyjetstream.client.jetstream import ConsumerConfig, StreamConfig, errors
from pyjetstream.client.jetstream.context import generate_consumer_name, validate_stream_name
from pyjetstream.client.jetstream.msg import JetStreamMsg
from pyjetstream.client.jetstream.publish import publish_headers
from pyjetstream.client.jetstream.pull import PullOptions, StatusKind, classify_status
from pyjetstream.client.msg import Msg
from pyjetstream.protocol import HeaderBlock


@pytest.mark.parametrize(
    ("err_code", "cls"),
    [
        (10059, errors.StreamNotFound),
        (10014, errors.ConsumerNotFound),
        (10037, errors.MsgNotFound),
        (10058, errors.StreamNameAlreadyInUse),
        (10148, errors.ConsumerExists),
        (10149, errors.ConsumerDoesNotExist),
        (10071, errors.WrongLastSequence),
        (10164, errors.WrongLastSequence),
        (10039, errors.JetStreamNotEnabledForAccount),
        (10999, errors.JetStreamAPIError),
    ],
)
def test_api_errors_map_by_err_code(err_code: int, cls: type) -> None:
    exc = errors.api_exception(ApiError(code=404, err_code=err_code, description="from the server"))
    assert type(exc) is cls
    assert (exc.code, exc.err_code, exc.description) == (404, err_code, "from the server")
    assert isinstance(exc, errors.JetStreamError) and isinstance(exc, NatsError)
    assert isinstance(exc, JetStreamApiError)  # the shared API's exception type catches it too
    assert exc.api_error == ApiError(code=404, err_code=err_code, description="from the server")


def test_error_defaults_hierarchy_and_pickling() -> None:
    exc = errors.StreamNotFound()
    assert (exc.code, exc.err_code, exc.description) == (404, 10059, "stream not found")
    assert "err_code=10059" in str(exc)
    assert isinstance(errors.KeyNotFound(), errors.MsgNotFound)
    assert isinstance(errors.KeyDeleted(), errors.KeyNotFound)
    assert isinstance(errors.KeyExists(), errors.WrongLastSequence)
    assert isinstance(errors.BucketNotFound(), errors.StreamNotFound)
    client_side = errors.MsgAlreadyAcked()
    assert client_side.api_error is None and client_side.err_code == 0
    deleted = errors.ConsumerDeleted()
    assert deleted.code == 409 and "status 409" in str(deleted)
    again = pickle.loads(pickle.dumps(errors.StreamNotFound("gone", code=404, err_code=10059)))
    assert type(again) is errors.StreamNotFound and again.description == "gone"
    assert "api_exception" in errors.__all__ and "NatsError" not in errors.__all__


def test_consumer_config_constructor() -> None:
    cfg = ConsumerConfig(
        durable="CONS",
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=timedelta(seconds=3),
        backoff=[timedelta(seconds=1), 2],
        opt_start_time=datetime(2024, 1, 2, tzinfo=UTC),
    )
    assert isinstance(cfg, api.ConsumerConfig) and isinstance(cfg, ConsumerConfig)
    assert cfg.durable_name == "CONS" and cfg.ack_wait == 3 and cfg.ack_wait.ns == 3_000_000_000
    assert cfg.backoff == [1, 2]
    assert cfg.opt_start_time == api.NanoTime.from_datetime(datetime(2024, 1, 2, tzinfo=UTC))
    with pytest.raises(ValueError):
        ConsumerConfig(durable="A", durable_name="B")
    stream = StreamConfig(name="S", max_age=timedelta(minutes=1))
    assert isinstance(stream, api.StreamConfig) and stream.max_age == 60
    assert StreamConfig.__struct_fields__ == api.StreamConfig.__struct_fields__
    assert api.encode(stream) == api.encode(api.StreamConfig(name="S", max_age=60_000_000_000))


def test_publish_headers() -> None:
    assert publish_headers(None) is None
    hdrs = publish_headers(
        {"A": "1", "B": ["x", "y"]},
        msg_id="id",
        expect_stream="S",
        expect_last_sequence=0,
        expect_last_sequence_per_subject=0,
        expect_last_msg_id="prev",
    )
    assert hdrs == {
        "A": "1",
        "B": ["x", "y"],
        "Nats-Msg-Id": "id",
        "Nats-Expected-Stream": "S",
        "Nats-Expected-Last-Sequence": "0",
        "Nats-Expected-Last-Subject-Sequence": "0",
        "Nats-Expected-Last-Msg-Id": "prev",
    }
    block = HeaderBlock({"X": ["1", "2"]})
    assert publish_headers(block, msg_id="m") == {"X": ["1", "2"], "Nats-Msg-Id": "m"}


@pytest.mark.parametrize(
    ("status", "description", "kind", "exc"),
    [
        (100, "Idle Heartbeat", StatusKind.HEARTBEAT, None),
        (404, "No Messages", StatusKind.END, None),
        (408, "Request Timeout", StatusKind.END, None),
        (409, "Message Size Exceeds MaxBytes", StatusKind.END, errors.MaxBytesExceeded),
        (409, "Batch Completed", StatusKind.END, None),
        (409, "Consumer Deleted", StatusKind.TERMINAL, errors.ConsumerDeleted),
        (409, "Consumer is push based", StatusKind.TERMINAL, errors.ConsumerIsPushBased),
        (409, "Leadership Change", StatusKind.ERROR, errors.ConsumerLeadershipChanged),
        (409, "Exceeded MaxWaiting", StatusKind.ERROR, errors.PullStatusError),
        (400, "Bad Request - heartbeat value too large", StatusKind.TERMINAL, errors.BadRequest),
        (503, "", StatusKind.NO_RESPONDERS, errors.ConsumerNotFound),
    ],
)
def test_pull_status_classification(
    status: int, description: str, kind: StatusKind, exc: type | None
) -> None:
    got_kind, got_exc = classify_status(status, description)
    assert got_kind is kind
    if exc is None:
        assert got_exc is None
    else:
        assert type(got_exc) is exc


def test_pull_options_defaults_and_validation() -> None:
    opts = PullOptions.build()
    assert (opts.max_messages, opts.max_bytes, opts.expires, opts.heartbeat) == (500, 0, 30.0, 15.0)
    assert (opts.threshold_messages, opts.threshold_bytes) == (250, 0)
    by_bytes = PullOptions.build(max_bytes=1024, expiry=60)
    assert (by_bytes.max_messages, by_bytes.threshold_bytes, by_bytes.heartbeat) == (1_000_000, 512, 30.0)
    assert PullOptions.build(expiry=4, ordered=True).heartbeat == 2.0
    assert PullOptions.build(expiry=30, ordered=True).heartbeat == 5.0
    for bad in (
        {"max_messages": 0},
        {"max_bytes": -1},
        {"expiry": 0},
        {"expiry": 2, "heartbeat": 1.5},
        {"max_messages": 10, "threshold_messages": 11},
    ):
        with pytest.raises(errors.InvalidOption):
            PullOptions.build(**bad)  # type: ignore[arg-type]


def test_names() -> None:
    for bad in ("a.b", "a b", "a*", "a>", "a/b"):
        with pytest.raises(errors.InvalidStreamName):
            validate_stream_name(bad)
    with pytest.raises(errors.StreamNameRequired):
        validate_stream_name("")
    names = {generate_consumer_name() for _ in range(100)}
    assert len(names) == 100 and all(len(n) == 8 and n.isalnum() for n in names)


async def test_msg_metadata_and_ack_state_without_server() -> None:
    raw = Msg("ORDERS.new", b"x", reply="$JS.ACK.ORDERS.CONS.2.7.5.1700000000000000000.3")
    msg = JetStreamMsg(raw)
    meta = msg.metadata()
    assert (
        meta.stream,
        meta.consumer,
        meta.num_delivered,
        meta.stream_seq,
        meta.consumer_seq,
        meta.num_pending,
    ) == (
        "ORDERS",
        "CONS",
        2,
        7,
        5,
        3,
    )
    assert msg.size == len("ORDERS.new") + len(raw.reply) + 1
    with pytest.raises(errors.MsgNotBound):
        await msg.ack()
    with pytest.raises(errors.NotJSMessage):
        JetStreamMsg(Msg("a", b"", reply="_INBOX.x")).metadata()
    with pytest.raises(errors.MsgNoReply):
        await JetStreamMsg(Msg("a", b"")).ack()
