"""Message trace events (nats-server 2.11+ ``msgtrace.go``): the wire shape only.

A message published with ``Nats-Trace-Dest: <subject>`` makes nats-server publish one
`MsgTraceEvent` per server it crosses to that subject: the server (``ServerInfo`` of
``events.go``), the request (its headers, sorted by name as Go marshals a map, and its size), and
the events in the order nats-server appends them: ingress (``in``), subject mapping (``sm``),
stream export (``se``), service import (``si``), JetStream (``js``, the stream that stored it) and
one egress (``eg``) per receiving subscription. ``Nats-Trace-Only: true`` traces without
delivering. The embedded server produces them in ``pyjetstream.server.msgtrace``; the models also
let clients and the tests read nats-server's events.
"""

from __future__ import annotations

import msgspec

from ._wire import WireStruct, always, always_new
from .headers import (
    MSG_TRACE_DEST,
    MSG_TRACE_DEST_DISABLED,
    MSG_TRACE_HOP,
    MSG_TRACE_ONLY,
    MSG_TRACE_ORIGIN_ACCOUNT,
)
from .timefmt import ZERO_TIME, NanoTime

__all__ = [
    "MSG_TRACE_DEST",
    "MSG_TRACE_DEST_DISABLED",
    "MSG_TRACE_HOP",
    "MSG_TRACE_ONLY",
    "MSG_TRACE_ORIGIN_ACCOUNT",
    "TRACE_PARENT",
    "MsgTrace",
    "MsgTraceEgress",
    "MsgTraceEvent",
    "MsgTraceIngress",
    "MsgTraceJetStream",
    "MsgTraceRequest",
    "MsgTraceServiceImport",
    "MsgTraceStreamExport",
    "MsgTraceSubjectMapping",
    "TraceServerInfo",
]

# (The header names are `pyjetstream.api.headers`', re-exported.)
TRACE_PARENT = "traceparent"


class TraceServerInfo(WireStruct):
    """``events.go`` ``ServerInfo`` (also the ``server`` of system events)."""

    name: str = always("")
    host: str = always("")
    id: str = always("")
    cluster: str = ""
    domain: str = ""
    ver: str = always("")
    tags: list[str] = []
    metadata: dict[str, str] = {}
    feature_flags: dict[str, bool] = {}
    jetstream: bool = always(False)
    flags: int = always(0)  # ServerCapability bits: 1 JetStream, 2 binary snapshot, 4 account NRG
    seq: int = always(0)
    time: NanoTime = always(ZERO_TIME)


class MsgTraceRequest(WireStruct):
    header: dict[str, list[str]] = {}
    msgsize: int = 0


class _Base(WireStruct, tag_field="type"):
    ts: NanoTime = always(ZERO_TIME)


class MsgTraceIngress(_Base, tag="in"):
    kind: int = always(0)  # the connection kind: 0 client, 1 router, 2 gateway, 3 system, 4 leaf
    cid: int = always(0)
    name: str = ""
    acc: str = always("")
    subj: str = always("")
    error: str = ""


class MsgTraceSubjectMapping(_Base, tag="sm"):
    to: str = always("")


class MsgTraceStreamExport(_Base, tag="se"):
    acc: str = always("")
    to: str = always("")


class MsgTraceServiceImport(_Base, tag="si"):
    acc: str = always("")
    # ``from`` is a Python keyword: the field is renamed on the wire.
    from_: str = msgspec.field(default_factory=str, name="from")
    to: str = always("")


class MsgTraceJetStream(_Base, tag="js"):
    stream: str = always("")
    subject: str = ""
    nointerest: bool = False
    error: str = ""


class MsgTraceEgress(_Base, tag="eg"):
    kind: int = always(0)
    cid: int = always(0)
    name: str = ""
    hop: str = ""
    acc: str = ""
    sub: str = ""
    queue: str = ""
    error: str = ""


MsgTrace = (
    MsgTraceIngress
    | MsgTraceSubjectMapping
    | MsgTraceStreamExport
    | MsgTraceServiceImport
    | MsgTraceJetStream
    | MsgTraceEgress
)


class MsgTraceEvent(WireStruct):
    server: TraceServerInfo = always_new(TraceServerInfo)
    request: MsgTraceRequest = always_new(MsgTraceRequest)
    hops: int = 0
    events: list[MsgTrace] = always_new(list)
