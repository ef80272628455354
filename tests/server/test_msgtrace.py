"""Message tracing (2.11, ADR-41) on both targets: the events a traced message produces.

Every test publishes with ``Nats-Trace-Dest`` (or a sampled ``traceparent``) and compares the
decoded event with what nats-server 2.15.1 sends, field by field, leaving out what differs by
nature (server ids, names, times, sequences, connection ids). Each event also re-encodes to the
received bytes (Go's field order and omit-empty). Where nothing must arrive (a trace-only message,
a refused trace), a later message that must arrive shows it did not, without waiting on a clock.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client
from nats.aio.subscription import Subscription
from tests.support.operator import Operator
from tests.support.targets import Target

from pyjetstream.api import codec
from pyjetstream.api.msgtrace import MSG_TRACE_DEST, MSG_TRACE_ONLY, MsgTraceEvent
from pyjetstream.server.jetstream.s2 import decompress_stream

StartServer = Callable[..., Target]
TIMEOUT = 10.0
DEST = "trace.out"

ACCOUNTS = {
    "A": {
        "users": [{"user": "a", "password": "a"}],
        "exports": [{"stream": "ev.>"}, {"stream": "evt.>"}, {"service": "svc.>"}, {"service": "tsvc.>", "allow_trace": True}],
    },
    "B": {
        "users": [{"user": "b", "password": "b", "permissions": {"publish": {"deny": ["denied.>", "tdeny.>"]}}}],
        "imports": [
            {"stream": {"account": "A", "subject": "ev.>"}, "prefix": "imp"},
            {"stream": {"account": "A", "subject": "evt.>"}, "allow_trace": True},
            {"service": {"account": "A", "subject": "svc.>"}, "to": "req.>"},
            {"service": {"account": "A", "subject": "tsvc.>"}},
        ],
    },
    "T": {
        "users": [{"user": "t", "password": "t"}],
        "msg_trace": {"dest": "trace.acc", "sampling": 100},
    },
}


@asynccontextmanager
async def _connect(target: Target, user: str = "", **kwargs: Any) -> AsyncIterator[Client]:
    creds = {"user": user, "password": user} if user else {}
    nc = await nats.connect(target.url, allow_reconnect=False, **creds, **kwargs)
    try:
        yield nc
    finally:
        await nc.close()


def _trace(headers: dict[str, str] | None = None, only: str = "") -> dict[str, str]:
    out = {MSG_TRACE_DEST: DEST, **(headers or {})}
    if only:
        out[MSG_TRACE_ONLY] = only
    return out


async def _event(sub: Subscription) -> dict[str, Any]:
    """The next trace event, checked to re-encode byte for byte, without what differs by nature."""
    msg = await sub.next_msg(timeout=TIMEOUT)
    event = codec.decode(msg.data, MsgTraceEvent)
    assert codec.encode(event) == msg.data
    doc = json.loads(msg.data)
    server = doc["server"]
    assert server["ver"] == "2.15.1" and server["name"] and server["id"] and server["time"] and server["seq"] > 0
    doc["server"] = {k: v for k, v in server.items() if k not in ("name", "host", "id", "seq", "time")}
    for e in doc["events"]:
        assert e.pop("ts")
        e.pop("cid", None)
    return doc


async def _ready(nc: Client, traces: Subscription, subject: str, events: int) -> None:
    """Wait until a trace-only probe on ``subject`` reaches ``events`` receivers: another
    connection's subscriptions are not known to be in place after its ``flush()`` (nats-py 2.16
    writes the PING ahead of a SUB still in its buffer). Probes are trace-only: nobody gets them."""
    for _ in range(100):
        await nc.publish(subject, b"probe", headers=_trace(only="true"))
        if len((await _event(traces))["events"]) - 1 >= events:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"interest on {subject!r} never reached {events} receivers")


def _in(subj: str, name: str = "tracer", acc: str = "$G", error: str = "") -> dict[str, Any]:
    e: dict[str, Any] = {"type": "in", "kind": 0, "name": name, "acc": acc, "subj": subj}
    if error:
        e["error"] = error
    return e


def _eg(sub: str, name: str = "subber", queue: str = "", acc: str = "", error: str = "") -> dict[str, Any]:
    e: dict[str, Any] = {"type": "eg", "kind": 0, "name": name}
    if acc:
        e["acc"] = acc
    e["sub"] = sub
    if queue:
        e["queue"] = queue
    if error:
        e["error"] = error
    return e


def _js(stream: str, subject: str = "", error: str = "", nointerest: bool = False) -> dict[str, Any]:
    e: dict[str, Any] = {"type": "js", "stream": stream}
    if subject:
        e["subject"] = subject
    if nointerest:
        e["nointerest"] = True
    if error:
        e["error"] = error
    return e


def _server_block(jetstream: bool) -> dict[str, Any]:
    return {
        "ver": "2.15.1",
        "feature_flags": {
            "js_ack_fc_v2": False,
            "js_api_reply_v2": False,
            "js_raft_delete_range": True,
            "js_snapshot_sources": False,
        },
        "jetstream": jetstream,
        "flags": 7 if jetstream else 0,
    }


def _request(headers: dict[str, str], payload: bytes) -> dict[str, Any]:
    """The ``request`` block: the headers sorted by name (a Go map), the size as sent by nats-py."""
    block = b"NATS/1.0\r\n" + b"".join(f"{k}: {v}\r\n".encode() for k, v in headers.items()) + b"\r\n"
    return {"header": {k: [headers[k]] for k in sorted(headers)}, "msgsize": len(block) + len(payload)}


# ----------------------------------------------------------------------------- core routing


async def test_traced_delivery_to_plain_and_queue_subscribers(server: Target) -> None:
    async with _connect(server, name="tracer") as nc, _connect(server, name="subber") as sc:
        traces = await nc.subscribe(DEST)
        plain = await sc.subscribe("foo")
        queued = await sc.subscribe("foo", queue="q")
        await _ready(nc, traces, "foo", 2)
        headers = _trace({"X": "1", "A": "2"})
        await nc.publish("foo", b"hello", headers=headers)
        event = await _event(traces)
        got = [await plain.next_msg(timeout=TIMEOUT), await queued.next_msg(timeout=TIMEOUT)]
    assert event == {
        "server": _server_block(True),
        "request": _request(headers, b"hello"),
        "events": [_in("foo"), _eg("foo"), _eg("foo", queue="q")],
    }
    for msg in got:  # delivered as published, the trace headers included
        assert msg.data == b"hello" and msg.headers == headers


async def test_trace_only_is_traced_but_not_delivered(server: Target) -> None:
    async with _connect(server, name="tracer") as nc, _connect(server, name="subber") as sc:
        traces = await nc.subscribe(DEST)
        plain = await sc.subscribe("foo")
        await sc.subscribe("foo", queue="q")
        await _ready(nc, traces, "foo", 2)
        events = []
        for only in ("true", "1", "on", "TRUE"):
            await nc.publish("foo", b"hidden", headers=_trace(only=only))
            events.append(await _event(traces))
        await nc.publish("foo", b"seen", headers=_trace(only="yes"))  # not a value that means "only"
        seen = await _event(traces)
        first = await plain.next_msg(timeout=TIMEOUT)
    for event in events:
        assert event["events"] == [_in("foo"), _eg("foo"), _eg("foo", queue="q")]
    assert seen["events"] == [_in("foo"), _eg("foo"), _eg("foo", queue="q")]
    assert first.data == b"seen"  # none of the trace-only messages came before it


async def test_trace_without_subscribers_and_no_echo(server: Target) -> None:
    async with _connect(server, name="tracer", no_echo=True) as nc:
        traces = await nc.subscribe(DEST)
        await nc.subscribe("self")
        await nc.flush()
        await nc.publish("nobody", b"x", headers=_trace())
        nobody = await _event(traces)
        await nc.publish("self", b"x", headers=_trace())
        echo = await _event(traces)
    assert nobody["events"] == [_in("nobody")]
    assert echo["events"] == [_in("self"), _eg("self", name="tracer", error="Not delivered because of no echo")]


async def test_invalid_or_disabled_destination_is_not_traced(server: Target) -> None:
    async with _connect(server, name="tracer") as nc, _connect(server, name="subber") as sc:
        traces = await nc.subscribe(DEST)
        sub = await sc.subscribe("foo")
        await _ready(nc, traces, "foo", 1)
        # An invalid destination: delivered untraced; trace-only: dropped.
        await nc.publish("foo", b"1", headers={MSG_TRACE_DEST: "bad..dest"})
        await nc.publish("foo", b"2", headers={MSG_TRACE_DEST: "bad..dest", MSG_TRACE_ONLY: "true"})
        # "trace disabled" (what a stored traced message carries) and the pre-2.11 origin header.
        await nc.publish("foo", b"3", headers={MSG_TRACE_DEST: "trace disabled"})
        await nc.publish("foo", b"4", headers=_trace({"Nats-Trace-Origin-Account": "X"}))
        await nc.publish("foo", b"5", headers=_trace())
        event = await _event(traces)
        got = [(await sub.next_msg(timeout=TIMEOUT)).data for _ in range(4)]
    assert got == [b"1", b"3", b"4", b"5"]
    assert event["events"] == [_in("foo"), _eg("foo")]  # the first event is the last message's


async def test_permissions_publish_and_destination(start_server: StartServer) -> None:
    target = start_server(jetstream=False, accounts=ACCOUNTS)
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))

    async with _connect(target, "b", name="tracer", error_cb=on_error) as nc:
        traces = await nc.subscribe(DEST)
        ok = await nc.subscribe("ok.x")
        await nc.flush()
        await nc.publish("denied.x", b"x", headers=_trace())
        denied = await _event(traces)
        # A destination the user may not publish to: -ERR for it, the message is dropped.
        await nc.publish("ok.x", b"dropped", headers={MSG_TRACE_DEST: "tdeny.out"})
        await nc.publish("ok.x", b"kept")
        first = await ok.next_msg(timeout=TIMEOUT)
    assert denied["server"] == _server_block(False)
    assert denied["events"] == [_in("denied.x", acc="B", error='Permissions Violation for Publish to "denied.x"')]
    assert first.data == b"kept"
    assert any('publish to "denied.x"' in e for e in errors) and any('publish to "tdeny.out"' in e for e in errors)


# ----------------------------------------------------------------------------- JetStream


async def _api(nc: Client, subject: str, body: Any = None) -> dict[str, Any]:
    msg = await nc.request(subject, json.dumps(body).encode() if body is not None else b"", timeout=TIMEOUT)
    return json.loads(msg.data)


async def test_stream_capture_and_trace_only(server: Target) -> None:
    async with _connect(server, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        acks = await nc.subscribe("acks")
        await _api(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["js.>"]})
        await nc.publish("js.a", b"stored", reply="acks", headers=_trace())
        stored = await _event(traces)
        ack = json.loads((await acks.next_msg(timeout=TIMEOUT)).data)
        # Trace-only: every check, no store and no PubAck (the next ack is the next message's).
        await nc.publish("js.b", b"only", reply="acks", headers=_trace(only="true"))
        only = await _event(traces)
        await nc.publish("js.c", b"next", reply="acks")
        next_ack = json.loads((await acks.next_msg(timeout=TIMEOUT)).data)
        info = await _api(nc, "$JS.API.STREAM.INFO.S")
        got = await _api(nc, "$JS.API.STREAM.MSG.GET.S", {"seq": 1})
    assert stored["events"] == [_in("js.a"), _js("S", "js.a")]
    assert ack == {"stream": "S", "seq": 1}
    assert only["events"] == [_in("js.b"), _js("S", "js.b")]
    assert next_ack == {"stream": "S", "seq": 2}
    assert info["state"]["messages"] == 2 and info["state"]["num_subjects"] == 2
    # The stored copy's trace is turned off, so that its deliveries are not traced again.
    hdrs = base64.b64decode(got["message"]["hdrs"])
    assert hdrs == b"NATS/1.0\r\nNats-Trace-Dest: trace disabled\r\n\r\n"


async def test_stream_beside_subscribers(server: Target) -> None:
    """One ``js`` and one ``eg`` per receiver, in the order they were matched: the embedded server
    takes plain subscriptions in the order they were made and queue groups last; nats-server's
    order varies from run to run (its sublist keeps subscriptions in Go maps), so it is not
    compared."""
    async with _connect(server, name="tracer") as nc, _connect(server, name="subber") as sc:
        traces = await nc.subscribe(DEST)
        await _api(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["foo"]})
        await sc.subscribe("foo")
        await sc.subscribe("foo", queue="q")
        await _ready(nc, traces, "foo", 3)
        await nc.publish("foo", b"x", headers=_trace())
        event = await _event(traces)
    events = event["events"]
    assert events[0] == _in("foo")
    assert sorted(events[1:], key=lambda e: (e["type"], e.get("queue", ""))) == [
        _eg("foo"),
        _eg("foo", queue="q"),
        _js("S", "foo"),
    ]


async def test_stream_refusals_are_the_js_error(server: Target) -> None:
    async with _connect(server, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        acks = await nc.subscribe("acks")
        await _api(nc, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["js.>"]})
        results = []
        for headers in (
            _trace({"Nats-Msg-Id": "m1"}),
            _trace({"Nats-Msg-Id": "m1"}),  # a duplicate: acknowledged as one, the trace says so
            _trace({"Nats-Expected-Last-Sequence": "7"}),
            _trace({"Nats-Expected-Last-Sequence": "7"}, only="true"),  # refused: answered anyway
            _trace({"Nats-Expected-Last-Subject-Sequence": "9"}),
            _trace({"Nats-Expected-Last-Msg-Id": "zz"}),
            _trace({"Nats-Expected-Stream": "OTHER"}),
            _trace({"Nats-Rollup": "sub"}),
        ):
            await nc.publish("js.a", b"x", reply="acks", headers=headers)
            event = await _event(traces)
            ack = json.loads((await acks.next_msg(timeout=TIMEOUT)).data)
            results.append((event["events"][1], ack))
    assert results == [
        (_js("S", "js.a"), {"stream": "S", "seq": 1}),
        (_js("S", error="msgid is duplicate"), {"stream": "S", "seq": 1, "duplicate": True}),
        (_js("S", error="last sequence mismatch: 7 vs 1"), _ack_error(10071, "wrong last sequence: 1")),
        (_js("S", error="last sequence mismatch: 7 vs 1"), _ack_error(10071, "wrong last sequence: 1")),
        (_js("S", error="last sequence by subject mismatch: 9 vs 1"), _ack_error(10071, "wrong last sequence: 1")),
        (_js("S", error='last msgid mismatch: "zz" vs "m1"'), _ack_error(10070, "wrong last msg ID: m1")),
        (_js("S", error="expected stream does not match"), _ack_error(10060, "expected stream does not match")),
        (
            _js("S", error="rollup not permitted"),
            _ack_error(10111, "rollup not permitted", code=500),
        ),
    ]


def _ack_error(err_code: int, description: str, code: int = 400) -> dict[str, Any]:
    return {"error": {"code": code, "err_code": err_code, "description": description}, "stream": "S", "seq": 0}


async def test_interest_stream_without_consumers_reports_no_interest(server: Target) -> None:
    async with _connect(server, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        await _api(nc, "$JS.API.STREAM.CREATE.I", {"name": "I", "subjects": ["i.>"], "retention": "interest"})
        await nc.publish("i.a", b"x", headers=_trace())
        event = await _event(traces)
    assert event["events"] == [_in("i.a"), _js("I", "i.a", nointerest=True)]


# ----------------------------------------------------------------------------- accounts


@pytest.fixture
def accounts(start_server: StartServer) -> Target:
    return start_server(jetstream=False, accounts=ACCOUNTS)


async def test_stream_export_with_and_without_allow_trace(accounts: Target) -> None:
    async with _connect(accounts, "a", name="A-conn") as a, _connect(accounts, "b", name="B-conn") as b:
        traces = await a.subscribe(DEST)
        imp = await b.subscribe("imp.ev.>")
        await b.subscribe("imp.ev.x", queue="qq")
        allowed = await b.subscribe("evt.>")
        await _ready(a, traces, "ev.x", 2)
        await _ready(a, traces, "evt.x", 2)
        await a.publish("ev.x", b"only", headers=_trace(only="true"))
        only = await _event(traces)
        await a.publish("ev.x", b"1", headers=_trace())
        untraced = await _event(traces)
        got = await imp.next_msg(timeout=TIMEOUT)
        await a.publish("evt.x", b"2", headers=_trace())
        traced = await _event(traces)
        got_allowed = await allowed.next_msg(timeout=TIMEOUT)
    se = {"type": "se", "acc": "B", "to": "imp.ev.x"}
    assert only["events"] == [_in("ev.x", name="A-conn", acc="A"), se, se]
    assert untraced["events"] == [_in("ev.x", name="A-conn", acc="A"), se, se]
    assert got.data == b"1" and got.headers == _trace()  # the trace-only one never arrived
    assert traced["events"] == [
        _in("evt.x", name="A-conn", acc="A"),
        {"type": "se", "acc": "B", "to": "evt.x"},
        _eg("evt.>", name="B-conn", acc="B"),
    ]
    assert got_allowed.data == b"2"


async def test_service_import_with_and_without_allow_trace(accounts: Target) -> None:
    async with _connect(accounts, "a", name="A-conn") as a, _connect(accounts, "b", name="B-conn") as b:
        traces = await b.subscribe(DEST)
        svc = await a.subscribe("svc.>")
        tsvc = await a.subscribe("tsvc.>")
        # Both subscriptions are live once each has taken a message of A's own (nats-py 2.16's
        # flush() writes its PING ahead of a SUB still in its buffer, so a flush proves nothing).
        for sub, subject in ((svc, "svc.ready"), (tsvc, "tsvc.ready")):
            await a.publish(subject, b"ready")
            assert (await sub.next_msg(timeout=TIMEOUT)).data == b"ready"
        await b.publish("req.one", b"q", reply="rep", headers=_trace())
        plain = await _event(traces)
        got = await svc.next_msg(timeout=TIMEOUT)
        await b.publish("tsvc.one", b"only", reply="rep", headers=_trace(only="1"))
        only = await _event(traces)
        await b.publish("tsvc.one", b"q", reply="rep", headers=_trace())
        traced = await _event(traces)
        got_traced = await tsvc.next_msg(timeout=TIMEOUT)
    assert plain["events"] == [
        _in("req.one", name="B-conn", acc="B"),
        {"type": "si", "acc": "A", "from": "req.one", "to": "svc.one"},
    ]
    # Not traced past the import: the exporter's copy has tracing turned off.
    assert got.headers is not None and got.headers[MSG_TRACE_DEST] == "trace disabled"
    si = {"type": "si", "acc": "A", "from": "tsvc.one", "to": "tsvc.one"}
    eg = _eg("tsvc.>", name="A-conn", acc="A")
    assert only["events"] == [_in("tsvc.one", name="B-conn", acc="B"), si, eg]
    assert traced["events"] == [_in("tsvc.one", name="B-conn", acc="B"), si, eg]
    # Traced past it: the destination is a reply subject of the exporter (the trace-only one
    # never arrived).
    assert got_traced.data == b"q"
    assert got_traced.headers is not None and got_traced.headers[MSG_TRACE_DEST].startswith("_R_.")


async def test_traceparent_with_account_destination(accounts: Target) -> None:
    async with _connect(accounts, "t", name="tracer") as nc:
        traces = await nc.subscribe("trace.acc")
        sub = await nc.subscribe("foo")
        await nc.flush()
        parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"
        await nc.publish("foo", b"1", headers={"traceparent": f"{parent}-00"})  # not sampled
        await nc.publish("foo", b"2", headers={"TraceParent": f"{parent}-01", "X": "y"})
        event = await _event(traces)
        got = [(await sub.next_msg(timeout=TIMEOUT)).data for _ in range(2)]
    assert event["request"]["header"] == {"TraceParent": [f"{parent}-01"], "X": ["y"]}
    assert event["events"] == [_in("foo", acc="T"), _eg("foo", name="tracer")]
    assert got == [b"1", b"2"]


async def test_traceparent_ignored_without_account_destination(server: Target) -> None:
    async with _connect(server, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        await nc.flush()
        await nc.publish("foo", b"1", headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
        await nc.publish("foo", b"2", headers=_trace())
        event = await _event(traces)
    assert event["request"]["header"] == {MSG_TRACE_DEST: [DEST]}


# ----------------------------------------------------------------------------- configuration


@pytest.mark.parametrize(
    ("account", "error"),
    [
        ({"msg_trace": {"dest": "bad..dest"}}, 'Trace destination "bad..dest" is not valid'),
        ({"msg_trace": {"dest": "t.x", "sampling": 0}}, "sampling value 0 is invalid, needs to be [1..100]"),
        ({"msg_trace": {"dest": "t.x", "sampling": "x%"}}, 'Invalid trace destination sampling value "x%"'),
        ({"msg_trace": {"dest": "t.x", "other": 1}}, 'Unknown field "other" parsing account message trace'),
        ({"exports": [{"stream": "s.>", "allow_trace": True}]}, "Detected allow_trace directive on non-service"),
    ],
)
def test_trace_configuration_errors(start_server: StartServer, account: dict[str, Any], error: str) -> None:
    accounts = {"A": {"users": [{"user": "a", "password": "a"}], **account}}
    with pytest.raises(RuntimeError) as excinfo:
        start_server(jetstream=False, accounts=accounts)
    assert error in str(excinfo.value)


async def test_subscription_deny_is_an_egress_error(start_server: StartServer) -> None:
    users = [
        {"user": "p", "password": "p"},
        {"user": "s", "password": "s", "permissions": {"subscribe": {"allow": ["foo.*"], "deny": ["foo.secret"]}}},
    ]
    target = start_server(jetstream=False, authorization={"users": users})
    async with _connect(target, "p", name="tracer") as nc, _connect(target, "s", name="subber") as sc:
        traces = await nc.subscribe(DEST)
        await sc.subscribe("foo.*")
        await _ready(nc, traces, "foo.open", 1)
        await nc.publish("foo.secret", b"x", headers=_trace())
        event = await _event(traces)
    error = "Not delivered because subscription denies this subject"
    assert event["events"] == [_in("foo.secret"), _eg("foo.*", error=error)]


async def test_stream_import_into_a_stream(start_server: StartServer) -> None:
    accounts = {**ACCOUNTS, "B": {**ACCOUNTS["B"], "jetstream": "enabled"}}
    target = start_server(accounts=accounts)
    async with _connect(target, "a", name="A-conn") as a, _connect(target, "b", name="B-conn") as b:
        traces = await a.subscribe(DEST)
        await _api(b, "$JS.API.STREAM.CREATE.S", {"name": "S", "subjects": ["evt.>"]})
        await _ready(a, traces, "evt.x", 2)
        await a.publish("evt.x", b"1", headers=_trace())
        event = await _event(traces)
        info = await _api(b, "$JS.API.STREAM.INFO.S")
    assert event["server"] == _server_block(True)
    assert event["events"] == [
        _in("evt.x", name="A-conn", acc="A"),
        {"type": "se", "acc": "B", "to": "evt.x"},
        _js("S", "evt.x"),
    ]
    assert info["state"]["messages"] == 1  # the trace-only probes were not stored


async def test_max_payload_is_the_ingress_error(start_server: StartServer) -> None:
    """An oversized traced HPUB closes the connection, and is still reported from the part of its
    header block the server had read (nats-server ``sendMsgTraceIngressErrEvent``)."""
    target = start_server(jetstream=False, max_payload=100)
    async with _connect(target, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        await nc.flush()
        reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
        await reader.readline()  # INFO
        writer.write(b'CONNECT {"verbose":false,"headers":true,"name":"big"}\r\nPING\r\n')
        assert await reader.readline() == b"PONG\r\n"
        hdr = b"NATS/1.0\r\nNats-Trace-Dest: trace.out\r\n\r\n"
        writer.write(b"HPUB foo %d %d\r\n%b%b\r\n" % (len(hdr), len(hdr) + 200, hdr, b"x" * 200))
        assert await reader.readline() == b"-ERR 'Maximum Payload Violation'\r\n"
        event = await _event(traces)
        writer.close()
    assert event["request"] == {"header": {MSG_TRACE_DEST: [DEST]}, "msgsize": len(hdr) + 200}
    assert event["events"] == [_in("foo", name="big", error="maximum payload exceeded")]


@pytest.mark.parametrize(("accept", "encoding"), [("gzip", "gzip"), ("snappy", "snappy"), ("br", "identity")])
async def test_accept_encoding_compresses_the_event(server: Target, accept: str, encoding: str) -> None:
    async with _connect(server, name="tracer") as nc:
        traces = await nc.subscribe(DEST)
        await nc.publish("foo", b"x", headers=_trace({"Accept-Encoding": accept}))
        msg = await traces.next_msg(timeout=TIMEOUT)
    assert msg.headers == {"Content-Encoding": encoding}
    if encoding == "gzip":
        data = gzip.decompress(msg.data)
    elif encoding == "snappy":
        data = decompress_stream(msg.data)
    else:
        data = msg.data
    event = json.loads(data)
    assert event["events"][0]["subj"] == "foo" and event["request"]["header"]["Accept-Encoding"] == [accept]


async def test_operator_mode_account_trace_claim(start_server: StartServer, tmp_path: Path) -> None:
    """An account JWT's ``trace`` (``dest``, ``sampling``) is its ``msg_trace``."""
    op = Operator(tmp_path / "nsc")
    op.account("T", trace={"dest": "trace.jwt", "sampling": 100})
    target = start_server(jetstream=False, **op.settings())
    creds, _, _ = op.user("T", "tracer")
    nc = await nats.connect(target.url, user_credentials=str(creds), allow_reconnect=False, name="tracer")
    try:
        traces = await nc.subscribe("trace.jwt")
        await nc.publish("foo", b"1", headers={"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
        event = await _event(traces)
    finally:
        await nc.close()
    assert event["events"] == [_in("foo", acc=op.pub("T"))]
