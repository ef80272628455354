"""`models.from_wire` reads a wire model attribute by attribute (the fast path); the general path
goes through builtins (`codec.to_builtins` + `codec.convert`). Differential: on both targets, the
infos a server reports — a stream with sources, transforms, limits and metadata, consumers with
backoff, start time, pause and priority groups, listed and asked one by one — come out of both paths
equal and encode to the same JSON."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from pyjetstream import api
from pyjetstream.api import codec
from pyjetstream.client import Client
from pyjetstream.client.jetstream import (
    AckPolicy,
    ConsumerConfig,
    JetStream,
    PriorityPolicy,
    StreamConfig,
)
from pyjetstream.client.jetstream import models as seconds_models
from pyjetstream.client.jetstream.models import StreamConsumerLimits


async def _raw(nc: Client, subject: str, body: dict[str, Any] | None = None) -> bytes:
    reply = await nc.request(subject, codec.encode(body) if body is not None else b"", timeout=10)
    return reply.data


def _general_path_unused(_model: Any) -> Any:
    raise AssertionError("the fast path fell back to the general one")


def _both(wire: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    with monkeypatch.context() as m:
        m.setattr(codec, "to_builtins", _general_path_unused)
        fast = seconds_models.from_wire(wire)
    with monkeypatch.context() as m:
        m.setattr(seconds_models, "FROM_ATTRIBUTES", False)
        general = seconds_models.from_wire(wire)
    return fast, general


def _wire_infos(stream_list: bytes, consumer_list: bytes) -> Iterator[Any]:
    yield from codec.decode(stream_list, api.StreamListResponse).streams or []
    yield from codec.decode(consumer_list, api.ConsumerListResponse).consumers or []


async def test_fast_and_general_paths_agree(js: JetStream, nc: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    await js.create_stream(StreamConfig(name="SRC", subjects=["src.>"]))
    await js.create_stream(
        StreamConfig(
            name="FW",
            subjects=["fw.>"],
            max_age=3600.5,
            duplicate_window=timedelta(seconds=90),
            consumer_limits=StreamConsumerLimits(inactive_threshold=30, max_ack_pending=100),
            subject_transform=api.SubjectTransformConfig(src="fw.>", dest="fwt.>"),
            sources=[api.StreamSource(name="SRC")],
            metadata={"owner": "explore2"},
            allow_msg_ttl=True,
        )
    )
    await js.publish("src.a", b"x")
    await js.create_consumer(
        "FW",
        ConsumerConfig(
            durable="C1",
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=12.25,
            backoff=[1, 2.5, 10],
            max_deliver=5,
            opt_start_time=datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
            deliver_policy=api.DeliverPolicy.BY_START_TIME,
            pause_until=datetime.now(UTC) + timedelta(hours=1),
            metadata={"k": "v"},
        ),
    )
    await js.create_consumer(
        "FW",
        ConsumerConfig(
            durable="C2",
            ack_policy=AckPolicy.NONE,
            priority_policy=PriorityPolicy.PINNED_CLIENT,
            priority_groups=["g"],
            priority_timeout=5,
            filter_subjects=["fwt.a", "fwt.b"],
        ),
    )
    await js.create_consumer("FW", ConsumerConfig(durable="C3"))
    stream_list = await _raw(nc, "$JS.API.STREAM.LIST")
    consumer_list = await _raw(nc, "$JS.API.CONSUMER.LIST.FW")
    infos = list(_wire_infos(stream_list, consumer_list))
    infos.append(codec.decode(await _raw(nc, "$JS.API.STREAM.INFO.FW"), api.StreamInfoResponse).payload())
    infos.append(codec.decode(await _raw(nc, "$JS.API.CONSUMER.INFO.FW.C1"), api.ConsumerInfoResponse).payload())
    assert len(infos) == 7
    for wire in infos:
        fast, general = _both(wire, monkeypatch)
        assert type(fast) is type(general) is seconds_models._SECONDS_OF[type(wire)]
        assert fast == general
        assert codec.encode(fast) == codec.encode(general)


def test_a_model_the_fast_path_cannot_take_goes_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value the attribute-wise conversion refuses sends the model the general way, same result."""
    wire = api.ConsumerConfig(durable_name="C", ack_wait=1_500_000_000, backoff=[10**9])

    def refuse(tp: type, value: Any) -> Any:
        raise TypeError("refused")

    expected = seconds_models.from_wire(wire)
    monkeypatch.setattr(seconds_models, "_from_attribute", refuse)
    converted = seconds_models.from_wire(wire)
    assert isinstance(converted, ConsumerConfig)
    assert converted == expected and converted.ack_wait == 1.5 and converted.backoff == [1]
