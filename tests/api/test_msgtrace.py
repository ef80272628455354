"""Message trace events (2.11+): nats-server 2.15.1's own events, traced live, decode with
:mod:`pyjetstream.api.msgtrace` and encode back byte for byte (the embedded server does not trace
yet, so only nats-server answers here)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from tests.support.targets import NATS_SERVER, Target, make_target

from pyjetstream.api import codec
from pyjetstream.api.msgtrace import (
    MSG_TRACE_DEST,
    MSG_TRACE_ONLY,
    MsgTraceEgress,
    MsgTraceEvent,
    MsgTraceIngress,
    MsgTraceJetStream,
    MsgTraceServiceImport,
)


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    t = make_target(NATS_SERVER, Path(tmp_path_factory.mktemp("msgtrace")))
    yield t
    t.stop()


async def test_nats_servers_trace_events_round_trip(target: Target) -> None:
    nc = await nats.connect(target.url, name="tracer")
    try:
        traces = await nc.subscribe("trace.out")
        await nc.subscribe("foo", queue="q")
        await nc.request("$JS.API.STREAM.CREATE.S", b'{"name":"S","subjects":["foo"]}', timeout=10)
        await nc.publish("foo", b"hello", headers={MSG_TRACE_DEST: "trace.out", "X": "1"})
        await nc.publish("foo", b"again", headers={MSG_TRACE_DEST: "trace.out", MSG_TRACE_ONLY: "true"})
        raws = [(await traces.next_msg(timeout=10)).data for _ in range(2)]
        info = json.loads((await nc.request("$JS.API.STREAM.INFO.S", b"", timeout=10)).data)
    finally:
        await nc.close()
    assert info["state"]["messages"] == 1  # the trace-only message was not stored
    for raw in raws:
        event = codec.decode(raw, MsgTraceEvent)
        assert codec.encode(event) == raw
        assert event.server.ver and event.server.jetstream and event.server.time
        ingress, stored, egress = event.events
        assert isinstance(ingress, MsgTraceIngress)
        assert (ingress.kind, ingress.name, ingress.acc, ingress.subj) == (0, "tracer", "$G", "foo")
        assert isinstance(stored, MsgTraceJetStream) and (stored.stream, stored.subject) == ("S", "foo")
        assert isinstance(egress, MsgTraceEgress) and (egress.sub, egress.queue) == ("foo", "q")
    first = codec.decode(raws[0], MsgTraceEvent)
    assert first.request.header == {MSG_TRACE_DEST: ["trace.out"], "X": ["1"]}
    assert first.request.msgsize > 0


def test_service_import_field_order_and_names() -> None:
    """Go's ``MsgTraceServiceImport`` field order: ``acc``, ``from``, ``to``."""
    event = MsgTraceEvent(events=[MsgTraceServiceImport(acc="A", from_="x", to="y")])
    raw = codec.encode(event)
    assert b'"events":[{"type":"si","ts":"0001-01-01T00:00:00Z","acc":"A","from":"x","to":"y"}]' in raw
    assert codec.decode(raw, MsgTraceEvent) == event
