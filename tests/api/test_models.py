"""Model behaviour: Go-omitempty mapping, unknown fields, enums, request decoding, full round-trips."""

from __future__ import annotations

import enum
import importlib
import json
import pkgutil
import types
import typing
from typing import Any

import msgspec
import pytest

import pyjetstream.api as api
from pyjetstream.api import codec
from pyjetstream.api._wire import WireStruct
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime


def _all_models() -> list[type[WireStruct]]:
    # Every module of the package first: ``pyjetstream.api`` loads its names on first use, so a model
    # whose module nothing imported yet would not be a subclass to find.
    for info in pkgutil.iter_modules(api.__path__, api.__name__ + "."):
        importlib.import_module(info.name)
    seen: list[type[WireStruct]] = []
    todo = [WireStruct]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return sorted((c for c in seen if c.__module__.startswith("pyjetstream.api")), key=lambda c: c.__name__)


MODELS = _all_models()


def _sample(tp: Any, depth: int = 0) -> Any:
    """A non-default value of type ``tp`` (recursively fills structs)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _sample(inner[0], depth)
    if origin is list:
        return [_sample(typing.get_args(tp)[0], depth + 1)]
    if origin is dict:
        _key_t, val_t = typing.get_args(tp)
        return {"k<&>": _sample(val_t, depth + 1)}
    if isinstance(tp, type):
        if issubclass(tp, NanoTime):
            return tp(1672671845123456789)
        if issubclass(tp, enum.Enum):
            return list(tp)[-1]
        if tp is bool:
            return True
        if tp is int:
            return 7
        if tp is str:
            return "v<1>&"
        if tp is bytes:
            return b"\x00\xffNATS"
        if issubclass(tp, msgspec.Struct):
            return _populate(tp, depth + 1)
    if tp is Any:
        return {"any": 1}
    raise AssertionError(f"no sample for {tp!r}")


def _populate(cls: type, depth: int = 0) -> Any:
    hints = typing.get_type_hints(cls)
    values = {}
    for f in msgspec.structs.fields(cls):
        if f.name == "type":  # keeps the class's TYPE
            continue
        values[f.name] = _sample(hints[f.name], depth)
    return cls(**values)


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_every_model_round_trips_with_every_field_set(cls: type) -> None:
    obj = _populate(cls)
    raw = codec.encode(obj)
    doc = json.loads(raw)
    # set fields are never omitted, under their wire names (a tagged union member adds its tag)
    tag_field = cls.__struct_config__.tag_field
    assert set(doc) == {f.encode_name for f in msgspec.structs.fields(cls)} | ({tag_field} if tag_field else set())
    assert codec.decode(raw, cls) == obj
    assert b"<" not in raw and b"&" not in raw  # Go HTML escaping


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_every_model_decodes_from_empty_object(cls: type) -> None:
    obj = codec.decode(b"{}", cls)
    assert codec.decode(codec.encode(obj), cls) == obj


def test_stream_config_defaults_emit_what_go_always_emits() -> None:
    assert codec.encode(api.StreamConfig(name="S")) == (
        b'{"name":"S","retention":"limits","max_consumers":0,"max_msgs":0,"max_bytes":0,"max_age":0,'
        b'"max_msgs_per_subject":0,"discard":"old","storage":"file","num_replicas":0,"compression":"none",'
        b'"allow_direct":false,"mirror_direct":false,"sealed":false,"deny_delete":false,"deny_purge":false,'
        b'"allow_rollup_hdrs":false,"consumer_limits":{},"allow_msg_ttl":false}'
    )


def test_stream_config_2_10_fields_emit_in_go_order() -> None:
    cfg = api.StreamConfig(
        name="S",
        compression=api.StoreCompression.NONE,
        consumer_limits=api.StreamConsumerLimits(),
        first_seq=10,
        metadata={"b": "2", "a": "1"},
        allow_msg_ttl=True,
        subject_delete_marker_ttl=5,
    )
    doc = codec.encode(cfg).decode()
    keys = list(json.loads(doc))
    assert keys.index("compression") < keys.index("first_seq") < keys.index("allow_direct")
    assert keys[-5:] == [
        "allow_rollup_hdrs",
        "consumer_limits",
        "allow_msg_ttl",
        "subject_delete_marker_ttl",
        "metadata",
    ]
    assert '"consumer_limits":{}' in doc
    assert '"metadata":{"a":"1","b":"2"}' in doc  # Go sorts map keys


def test_consumer_config_minimal_encoding() -> None:
    assert codec.encode(api.ConsumerConfig()) == (
        b'{"deliver_policy":"all","ack_policy":"none","replay_policy":"instant","num_replicas":0}'
    )
    cfg = api.ConsumerConfig(
        durable_name="D", ack_policy=api.AckPolicy.EXPLICIT, priority_policy=api.PriorityPolicy.NONE
    )
    assert b"priority_policy" not in codec.encode(cfg)
    assert cfg.is_pull and cfg.is_durable
    assert not api.ConsumerConfig(deliver_subject="x").is_pull


def test_sequence_info_and_state_always_fields() -> None:
    assert codec.encode(api.SequenceInfo()) == b'{"consumer_seq":0,"stream_seq":0}'
    assert codec.encode(api.StreamState()) == (
        b'{"messages":0,"bytes":0,"first_seq":0,"first_ts":"0001-01-01T00:00:00Z","last_seq":0,'
        b'"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}'
    )
    assert codec.encode(api.LostStreamData()) == b'{"msgs":null,"bytes":0}'


def test_unknown_fields_are_ignored() -> None:
    raw = (
        b'{"name":"S","allow_msg_counter":true,"persist_mode":"async","future":{"x":[1,2]},"subjects":["a"]}'
    )
    cfg = codec.decode(raw, api.StreamConfig)
    assert cfg.name == "S" and cfg.subjects == ["a"]
    req = codec.decode(
        b'{"stream_name":"S","config":{"ack_policy":"explicit","x":1},"action":"create"}',
        api.CreateConsumerRequest,
    )
    assert req.action is api.ConsumerAction.CREATE
    assert req.config.ack_policy is api.AckPolicy.EXPLICIT


def test_enum_decoding_follows_go() -> None:
    assert codec.decode(b'{"discard":"NEW"}', api.StreamConfig).discard is api.DiscardPolicy.NEW
    assert (
        codec.decode(b'{"deliver_policy":"undefined"}', api.ConsumerConfig).deliver_policy
        is api.DeliverPolicy.ALL
    )
    assert codec.encode(api.DeliverPolicy.BY_START_SEQUENCE) == b'"by_start_sequence"'
    with pytest.raises(codec.DecodeError):
        codec.decode(b'{"retention":"Limits"}', api.StreamConfig)
    with pytest.raises(codec.DecodeError):
        codec.decode(b'{"ack_policy":"sometimes"}', api.ConsumerConfig)


def test_null_means_zero_value_like_go() -> None:
    cfg = codec.decode(
        b'{"name":"S","description":null,"subjects":null,"placement":null,"max_age":null}', api.StreamConfig
    )
    assert cfg == api.StreamConfig(name="S")
    req = codec.decode_request(
        b'{"stream_name":"S","config":{"durable_name":null,"backoff":[1,2]}}', api.CreateConsumerRequest
    )
    assert req.config.backoff == [1, 2] and req.config.durable_name == ""
    # a null list element stays an error (Go would read 0 there; no client sends it)
    with pytest.raises(codec.DecodeError):
        codec.decode(b'{"backoff":[1,null]}', api.ConsumerConfig)


def test_types_are_strict_like_go() -> None:
    for bad in (
        b'{"max_age":"5s"}',
        b'{"max_msgs":1.5}',
        b'{"sealed":"true"}',
        b'{"subjects":"a"}',
        b"[1]",
        b"{",
    ):
        with pytest.raises(codec.DecodeError):
            codec.decode(bad, api.StreamConfig)


def test_times_decode_null_as_zero_and_reject_garbage() -> None:
    assert codec.decode(b'{"first_ts":null}', api.StreamState).first_ts == ZERO_TIME
    with pytest.raises(codec.DecodeError):
        codec.decode(b'{"first_ts":"yesterday"}', api.StreamState)
    with pytest.raises(codec.DecodeError):
        codec.decode(b'{"first_ts":5}', api.StreamState)
    cfg = codec.decode(b'{"opt_start_time":"2020-01-02T03:04:05.000000006+01:00"}', api.ConsumerConfig)
    assert codec.encode(cfg).count(b'"opt_start_time":"2020-01-02T02:04:05.000000006Z"') == 1


def test_decode_request_empty_is_zero_request() -> None:
    for body in (b"", b"  ", b"null", b"{}"):
        assert codec.decode_request(body, api.StreamInfoRequest) == api.StreamInfoRequest()
    req = codec.decode_request(b'{"subjects_filter":">","offset":5}', api.StreamInfoRequest)
    assert (req.subjects_filter, req.offset, req.deleted_details) == (">", 5, False)
    assert codec.encode(api.StreamNamesRequest()) == b'{"offset":0}'


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"", api.PullRequest(batch=1)),
        (b" 10 ", api.PullRequest(batch=10)),
        (b"abc", api.PullRequest(batch=1)),  # nats-server: anything else is one message
        (b"1.5", api.PullRequest(batch=1)),
        (b'{"batch":0}', api.PullRequest(batch=1)),
        (
            b'{"batch":5,"expires":1000000000,"no_wait":true}',
            api.PullRequest(batch=5, expires=10**9, no_wait=True),
        ),
        (
            b'{"batch":2,"expires":10,"max_bytes":100,"idle_heartbeat":5,"group":"g","min_pending":3,"future":1}',
            api.PullRequest(batch=2, expires=10, max_bytes=100, idle_heartbeat=5, group="g", min_pending=3),
        ),
    ],
)
def test_decode_pull_request(body: bytes, expected: api.PullRequest) -> None:
    assert codec.decode_pull_request(body) == expected


@pytest.mark.parametrize("body", [b'{"batch":"x"}', b"{", b'{"idle_heartbeat":5}'])
def test_decode_pull_request_rejects(body: bytes) -> None:
    with pytest.raises(ValueError):
        codec.decode_pull_request(body)


def test_pull_request_encoding_matches_clients() -> None:
    # nats.py fetch: {"batch":n,"expires":…,"no_wait":true}
    raw = codec.encode(api.PullRequest(batch=10, expires=4_999_900_000, no_wait=True))
    assert raw == b'{"expires":4999900000,"batch":10,"no_wait":true}'


def test_response_type_defaults_and_errors() -> None:
    resp = api.StreamDeleteResponse(success=True)
    assert codec.encode(resp) == b'{"type":"io.nats.jetstream.api.v1.stream_delete_response","success":true}'
    err = api.ApiResponse(type=api.STREAM_CREATE_RESPONSE_TYPE, error=api.errors.JSStreamNotFoundErr())
    assert codec.encode(err) == (
        b'{"type":"io.nats.jetstream.api.v1.stream_create_response",'
        b'"error":{"code":404,"err_code":10059,"description":"stream not found"}}'
    )
    names_err = api.StreamNamesResponse(error=api.errors.JSNotEnabledForAccountErr())
    assert codec.encode(names_err).endswith(b'"total":0,"offset":0,"limit":0,"streams":null}')
    with pytest.raises(api.JetStreamApiError) as exc:
        codec.raise_for_error(codec.decode_response(codec.encode(err), api.StreamCreateResponse))
    assert exc.value.err_code == 10059
    codec.raise_for_error(resp)  # no error: no exception


def test_account_info_response_payload() -> None:
    info = api.AccountInfo(limits=api.AccountLimits.unlimited(), api=api.ApiStats(total=3, errors=1))
    resp = api.AccountInfoResponse.from_payload(info)
    raw = codec.encode(resp)
    assert raw.startswith(b'{"type":"io.nats.jetstream.api.v1.account_info_response","memory":0,"storage":0,')
    assert codec.decode_response(raw, api.AccountInfoResponse).payload() == info
    assert codec.decode(raw, api.AccountInfo) == info
    # error: every payload field absent, as with Go's nil embedded pointer
    assert codec.encode(api.AccountInfoResponse(error=api.errors.JSNotEnabledForAccountErr())) == (
        b'{"type":"io.nats.jetstream.api.v1.account_info_response",'
        b'"error":{"code":503,"err_code":10039,"description":"JetStream not enabled for account"}}'
    )


def test_response_classes_cover_every_type_constant() -> None:
    constants = {v for k, v in vars(api.responses).items() if k.endswith("_RESPONSE_TYPE")}
    assert constants == set(api.RESPONSE_CLASSES)
    for rtype, cls in api.RESPONSE_CLASSES.items():
        assert cls().type == rtype


def test_models_are_independent_instances() -> None:
    a, b = api.StreamInfo(), api.StreamInfo()
    a.config.subjects.append("x")
    assert b.config.subjects == []
    assert a.config is not b.config


def test_to_builtins_for_display() -> None:
    out = codec.to_builtins(api.StreamState(first_ts=NanoTime(0)))
    assert out["first_ts"] == "1970-01-01T00:00:00Z"


def test_presorted_map_is_written_as_the_deterministic_encoder_writes_it() -> None:
    """`codec.presorted` (STREAM.INFO's subjects page, in name order already) gives the bytes of
    the map sorted by the encoder: Go's order, Go's escaping (``<`` ``>`` ``&``, U+2028/9)."""
    subjects = {"b.<x>": 1, "a.&": 2, "é.1": 3, "a.\u2028": 4, 'q."\\': 5, "Z": 6, "a.b": 7, "a": 8}
    assert list(subjects) != sorted(subjects)
    wanted = codec.encode(api.StreamState(messages=1, subjects=subjects))
    page = {k: subjects[k] for k in sorted(subjects)}
    got = codec.encode(api.StreamState(messages=1, subjects=typing.cast("dict[str, int]", codec.presorted(page))))
    assert got == wanted
    assert json.loads(got)["subjects"] == subjects
