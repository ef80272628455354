"""Message tracing (nats-server 2.11+ ``msgtrace.go``, ADR-41): what a traced message did here.

A client publishes with ``Nats-Trace-Dest: <subject>`` (or, where its account configures
``msg_trace { dest, sampling }``, with a sampled W3C ``traceparent``); the server then publishes
one `MsgTraceEvent` to that subject, in the publisher's account,
describing what it did with the message: the ingress (``in``: who published it, on what, and the
error that stopped it), the stream exports (``se``) and service imports (``si``) it crossed, the
stream that took it (``js``: the subject stored under, ``nointerest``, or the error that refused
it) and one egress (``eg``) per subscription it was delivered to. ``Nats-Trace-Only: true`` (or
``1``/``on``) traces without delivering: every check runs, the events say where the message would
have gone, and nothing is delivered or stored.

Tracing stays off the hot path: a message without headers costs nothing, one with a header block
shorter than `MIN_TRACED_HDR` a length test, a longer one a ``bytes.find``
(`may_be_traced`, inlined by the client); a traced message is routed by `route`, this
module's copy of ``Server.route`` that records the events (nats-server ``processMsgResults`` and
``deliverMsg`` with ``c.pa.trace`` set). Internal subscriptions that take part in a trace (a
stream's ingest, the import forwarders) carry a ``traced`` callback that receives the
`MsgTrace`; other internal subscriptions get the message as usual and no egress, as
nats-server records none for its internal callbacks.

The embedded server is a single node (no routes, gateways or leaf nodes), so there is never a
``Nats-Trace-Hop`` to add and each traced message gives exactly one event.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pyjetstream.api import codec
from pyjetstream.api.headers import (
    MSG_TRACE_DEST,
    MSG_TRACE_DEST_DISABLED,
    MSG_TRACE_ONLY,
    MSG_TRACE_ORIGIN_ACCOUNT,
    header_block,
)
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.api.versioning import SERVER_VERSION
from pyjetstream.protocol.headers import MIN_TRACED_HDR, TRACE_PARENT, has_trace_parent, set_header
from pyjetstream.protocol.subjects import is_valid_publish_subject

if TYPE_CHECKING:
    from pyjetstream.api.msgtrace import MsgTraceIngress, MsgTraceJetStream
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.client import ClientConnection
    from pyjetstream.server.server import Server
    from pyjetstream.server.subscription import Subscription

__all__ = [
    "DEST_DISABLED",
    "MsgTrace",
    "TracedCallback",
    "disable",
    "has_trace_parent",
    "may_be_traced",
    "route",
    "start",
]

DEST_DISABLED = MSG_TRACE_DEST_DISABLED
DEST_DISABLED_B = DEST_DISABLED.encode()
DEST_HDR_B = MSG_TRACE_DEST.encode()
_HDR_LINE = b"NATS/1.0\r\n"
_TRACE_PARENT = TRACE_PARENT

# Egress errors (nats-server ``errMsgTrace*``).
ERR_NO_ECHO = "Not delivered because of no echo"
ERR_SUB_DENY = "Not delivered because subscription denies this subject"
ERR_SUB_CLOSED = "Not delivered because subscription is closed"
ERR_CLIENT_CLOSED = "Not delivered because client is closed"

#: The ``feature_flags`` nats-server 2.15.1 reports in its ServerInfo by default (its
#: ``getMergedFeatureFlags``); the embedded server reports the same so that events compare equal.
DEFAULT_FEATURE_FLAGS = {
    "js_ack_fc_v2": False,
    "js_api_reply_v2": False,
    "js_raft_delete_range": True,
    "js_snapshot_sources": False,
}
#: ServerInfo ``flags`` with JetStream on: JetStream | binary stream snapshot | account NRG, as
#: nats-server 2.15.1 sets them (``SetJetStreamEnabled`` ...).
JETSTREAM_FLAGS = 7

TracedCallback = Callable[["MsgTrace", str, str, "bytes | None", bytes, Any], None]


def may_be_traced(hdr: bytes, account: Account) -> bool:
    """Could this header block start a trace? (The client's hot path inlines the first test.)"""
    if len(hdr) < MIN_TRACED_HDR:
        return False
    return hdr.find(DEST_HDR_B) >= 0 or (bool(account.trace_dest) and has_trace_parent(hdr))


def _sampled(value: bytes) -> bool:
    """A W3C ``traceparent`` whose flags have the sampled bit (``00-<trace>-<parent>-01``)."""
    parts = value.split(b"-")
    if len(parts) != 4 or len(parts[3]) != 2:
        return False
    try:
        return bool(int(parts[3], 16) & 1)
    except ValueError:
        return False


def trace_headers(hdr: bytes) -> tuple[dict[str, list[str]], bool] | None:
    """The headers as a map when they ask for a trace, and whether only ``traceparent`` does
    (nats-server ``genHeaderMapIfTraceHeadersPresent``: names keep their case, empty values are
    left out, a ``Nats-Trace-Dest`` of ``trace disabled`` means no trace)."""
    if not hdr.startswith(_HDR_LINE):
        return None
    keys: list[bytes] = []
    vals: list[bytes] = []
    dest_found = parent_found = False
    i, n = len(_HDR_LINE), len(hdr)
    while i < n:
        colon = hdr.find(b":", i)
        if colon < 0:
            break
        key = hdr[i:colon]
        i = colon + 1
        while i < n and hdr[i] in b" \t":
            i += 1
        nl = hdr.find(b"\r\n", i)
        if nl < 0:
            break
        end = nl
        while end > i and hdr[end - 1] in b" \t":
            end -= 1
        val = hdr[i:end]
        if key and val:
            vals.append(val)
            if not parent_found and key.lower() == _TRACE_PARENT:
                parent_found = _sampled(val)
            elif not dest_found and key == DEST_HDR_B:
                if val == DEST_DISABLED_B:
                    return None
                dest_found = True
            keys.append(key)
        i = nl + 2
    if not dest_found and not parent_found:
        return None
    headers: dict[str, list[str]] = {}
    for k, v in zip(keys, vals, strict=True):
        headers.setdefault(k.decode(errors="replace"), []).append(v.decode(errors="replace"))
    # Go marshals a map with its keys sorted.
    return dict(sorted(headers.items())), not dest_found and parent_found


def _sample(sampling: int) -> bool:
    if sampling <= 0 or sampling >= 100:
        return True
    return random.randrange(100) <= sampling


def disable(hdr: bytes) -> bytes:
    """``Nats-Trace-Dest: trace disabled``: the message goes on, untraced (nats-server
    ``setHeader(MsgTraceDest, MsgTraceDestDisabled, ...)``)."""
    return set_header(hdr, DEST_HDR_B, DEST_DISABLED_B)


def start(
    conn: ClientConnection, subject: str, hdr: bytes, size: int, ingress_error: str = ""
) -> tuple[bool, MsgTrace | None]:
    """Start tracing a client's message (nats-server ``initMsgTrace``).

    Returns ``(skip, trace)``: ``trace`` when the message is traced; ``skip`` when it must not
    be processed at all — a trace-only message whose trace cannot be made (invalid destination,
    ``Nats-Trace-Origin-Account``), or a destination the publisher may not publish to (answered
    with the permissions ``-ERR`` here)."""
    found = trace_headers(hdr)
    if found is None:
        return False, None
    headers, external = found
    trace_only = False
    account = conn.account
    dest = ""
    if not external:
        only = headers.get(MSG_TRACE_ONLY)
        trace_only = only is not None and only[0].lower() in ("1", "true", "on")
        dest = headers.get(MSG_TRACE_DEST, [""])[0]
        if not dest:
            return trace_only, None
    origin = headers.get(MSG_TRACE_ORIGIN_ACCOUNT)
    if origin is not None:
        conn.log(
            logging.ERROR,
            f'Message tracing disabled because of header "{MSG_TRACE_ORIGIN_ACCOUNT}" with value="{origin[0]}"',
        )
        return trace_only, None
    if external:
        dest, sampling = account.trace_dest, account.trace_sampling
        if not dest or not _sample(sampling):
            return False, None
    if not is_valid_publish_subject(dest):
        conn.log(logging.ERROR, f'Destination "{dest}" is not valid, won\'t be able to trace events')
        return trace_only, None
    perms = conn.perms
    if perms is not None and perms.restricts_publish and not perms.can_publish(dest):
        conn.publish_violation(dest)
        return True, None
    # Deferred (here and in MsgTrace): the event models are made for a traced message only, not
    # at start-up (issue 24, tests/server/test_startup_imports.py).
    from pyjetstream.api.msgtrace import MsgTraceIngress

    trace = MsgTrace(conn.server, account, dest, trace_only, headers, size)
    encoding = headers.get("Accept-Encoding")
    if encoding:
        trace.encoding = _content_encoding(encoding[0])
    trace.event.events.append(
        MsgTraceIngress(
            ts=NanoTime.now(),
            kind=0,
            cid=conn.cid,
            name=conn.name,
            acc=account.name,
            subj=subject,
            error=ingress_error,
        )
    )
    return False, trace


def _content_encoding(accept: str) -> str:
    """How the event is sent for an ``Accept-Encoding`` (nats-server ``getCompressionType``):
    ``snappy`` (an S2/Snappy stream) for one naming snappy or s2, ``gzip``, else ``identity``."""
    accept = accept.lower()
    if "snappy" in accept or "s2" in accept:
        return "snappy"
    if "gzip" in accept:
        return "gzip"
    return "identity"


class MsgTrace:
    """One traced message's event, filled in as the message is routed (nats-server ``msgTrace``)."""

    __slots__ = ("account", "dest", "encoding", "event", "js", "only", "server")

    def __init__(
        self, server: Server, account: Account, dest: str, only: bool, headers: dict[str, list[str]], size: int
    ) -> None:
        from pyjetstream.api.msgtrace import MsgTraceEvent, MsgTraceRequest

        self.server = server
        self.account = account
        self.dest = dest
        self.only = only
        self.event = MsgTraceEvent(request=MsgTraceRequest(header=headers, msgsize=size))
        self.js: MsgTraceJetStream | None = None
        #: ``Content-Encoding`` of the event, from the message's ``Accept-Encoding`` ("": none).
        self.encoding = ""

    @property
    def ingress(self) -> MsgTraceIngress:
        return self.event.events[0]  # type: ignore[return-value]

    def ingress_error(self, error: str) -> None:
        self.ingress.error = error

    def egress(self, conn: ClientConnection, sub: Subscription, error: str = "") -> None:
        """One ``eg`` event (nats-server ``addEgressEvent``): ``acc`` only when the receiver's
        account is not the publisher's (across a service import or a stream export)."""
        from pyjetstream.api.msgtrace import MsgTraceEgress

        acc = conn.account.name
        self.event.events.append(
            MsgTraceEgress(
                ts=NanoTime.now(),
                kind=0,
                cid=conn.cid,
                name=conn.name,
                acc=acc if acc != self.ingress.acc else "",
                sub=sub.subject,
                queue=sub.queue or "",
                error=error,
            )
        )

    def subject_mapping(self, to: str) -> None:
        """The account mapped the subject to ``to`` (nats-server ``addSubjectMappingEvent``)."""
        from pyjetstream.api.msgtrace import MsgTraceSubjectMapping

        self.event.events.append(MsgTraceSubjectMapping(ts=NanoTime.now(), to=to))

    def stream_export(self, account: str, to: str) -> None:
        from pyjetstream.api.msgtrace import MsgTraceStreamExport

        self.event.events.append(MsgTraceStreamExport(ts=NanoTime.now(), acc=account, to=to))

    def service_import(self, account: str, from_: str, to: str) -> None:
        from pyjetstream.api.msgtrace import MsgTraceServiceImport

        self.event.events.append(MsgTraceServiceImport(ts=NanoTime.now(), acc=account, from_=from_, to=to))

    def jetstream(self, stream: str) -> None:
        """The message reached a stream (nats-server ``addJetStreamEvent``)."""
        from pyjetstream.api.msgtrace import MsgTraceJetStream

        self.js = MsgTraceJetStream(ts=NanoTime.now(), stream=stream)
        self.event.events.append(self.js)

    def jetstream_stored(self, subject: str, no_interest: bool) -> None:
        """Every check passed: the subject it is (or would be) stored under, and whether an
        interest stream skips it (nats-server ``updateJetStreamEvent``)."""
        js = self.js
        if js is not None:
            js.subject = subject
            js.nointerest = no_interest
            js.ts = NanoTime.now()

    def jetstream_error(self, error: str) -> None:
        if self.js is not None and not self.js.error:
            self.js.error = error

    def send(self) -> None:
        """Publish the event to the destination in the publisher's account (nats-server
        ``sendEvent`` → ``sendInternalAccountSysMsg``: the ServerInfo is stamped as it goes out)."""
        from pyjetstream.api.msgtrace import TraceServerInfo

        server = self.server
        server.event_seq += 1
        jetstream = server.jetstream_enabled
        self.event.server = TraceServerInfo(
            name=server.server_name,
            host=server.options.host,
            id=server.server_id,
            ver=SERVER_VERSION,
            feature_flags=DEFAULT_FEATURE_FLAGS,
            jetstream=jetstream,
            flags=JETSTREAM_FLAGS if jetstream else 0,
            seq=server.event_seq,
            time=NanoTime(time.time_ns()),
        )
        body = codec.encode(self.event)
        hdr = None
        if self.encoding:
            # Deferred (both): start-up imports only what is used; a compressed trace is rare.
            if self.encoding == "gzip":
                import gzip

                body = gzip.compress(body)
            elif self.encoding == "snappy":  # what nats-server's s2 writer in Snappy mode makes
                import cramjam

                body = bytes(cramjam.snappy.compress(body))
            hdr = header_block((("Content-Encoding", self.encoding),))
        self.account.publish_internal(self.dest, body, hdr=hdr)


def _deliver(
    trace: MsgTrace,
    sub: Subscription,
    subject: str,
    reply: str,
    hdr: bytes | None,
    payload: bytes,
    client: ClientConnection | None,
    traced: bool,
) -> bool:
    """One subscription's delivery (nats-server ``deliverMsg`` with a trace): the checks that
    would refuse it, each with its egress error; a trace-only message stops after the egress."""
    conn = sub.client
    if conn is None:  # internal: its own traced callback records what it does
        cb = getattr(sub, "traced", None)
        sub.delivered += 1
        try:
            if cb is not None and traced:
                cb(trace, subject, reply, hdr, payload, client)
            else:
                sub.callback(subject, reply, hdr, payload, client)
        except Exception:
            trace.server.logger.exception("internal subscription callback for %r failed", sub.subject)
        return True
    if not traced:
        return trace.only or conn.deliver(sub, subject, reply, hdr, payload, client)
    if client is not None and client is conn and not client.echo:
        trace.egress(client, sub, ERR_NO_ECHO)
        return False
    deliver_filter = conn.deliver_filter
    if deliver_filter is not None and not deliver_filter.deliver_allowed(subject, reply, sub.queue or ""):
        trace.egress(conn, sub, ERR_SUB_DENY)
        return False
    if sub.closed:
        trace.egress(conn, sub, ERR_SUB_CLOSED)
        return False
    if conn.closed:
        trace.egress(conn, sub, ERR_CLIENT_CLOSED)
        return False
    trace.egress(conn, sub)
    if trace.only:
        return True
    return conn.deliver(sub, subject, reply, hdr, payload, client)


def route(
    trace: MsgTrace,
    subject: str,
    reply: str,
    hdr: bytes | None,
    payload: bytes,
    client: ClientConnection | None,
    account: Account,
) -> bool:
    """``Server.route`` for a traced message: every matching subscription, queue members picked
    as usual, each delivery recorded (nats-server ``processMsgResults`` with ``c.pa.trace``).

    A stream import's shadow (`subscription.Shadow`) first gets an ``se`` event and delivers to
    its importer's subscription under the importer's subject; without the import's
    ``allow_trace`` the message goes on untraced — or, trace-only, nowhere. Returns whether anyone
    received it (a trace-only message counts as received)."""
    server = trace.server
    psubs, qsubs = account.sublist.match(subject)
    receivers = list(psubs)
    if qsubs:
        receivers.extend(server.router.pick_queue_members(qsubs, client))
    delivered = False
    for sub in receivers:
        if sub.closed and sub.client is None:
            continue
        traced = True
        to = subject
        origin = sub.origin
        if origin is not None:
            link = sub.link
            to = link.local(subject)
            trace.stream_export(link.importer.name, to)
            traced = link.imp.allow_trace
            if not traced and trace.only:
                delivered = True
                continue
            sub = origin
        if _deliver(trace, sub, to, reply, hdr, payload, client, traced):
            delivered = True
    if not delivered and reply and client is not None and client.no_responders:
        server.no_responders(client, reply, subject)
    return delivered
