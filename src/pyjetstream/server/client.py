"""One client connection: an asyncio Protocol that parses ops and hands publishes to the router.

Speed notes (this is the per-message path):

- bytes are parsed by the sans-IO `NatsServerParser` into a list of events per read: a read's
  consecutive publishes are one `PubRun`, routed together (``Server.route_msgs``);
- the connection's output is its `FrameSink` (nats-server ``client.deliverMsg``): routed messages are
  framed into ``sink.out`` (a list of bytes, with `pyjetstream.protocol.writers`) and one
  `ClientConnection.flush_out` writes everything with one ``transport.write``: at the end of the
  client read that made the output (``Server.end_read``, nats-server ``flushClients`` at the end of
  ``readLoop``), else at the end of the event-loop turn;
- ``sink.limit`` caches "max_pending minus what the transport still holds" so the slow-consumer
  check on each delivery is one comparison.

Behaviour follows nats-server 2.9 ``client.go``: CONNECT defaults (verbose and pedantic are on until
a CONNECT turns them off), the exact ``-ERR`` texts and which of them close the connection, server
PINGs and stale connections, auth timeout, slow consumers (closed without a flush or ``-ERR``) and
the producer stall that precedes that.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import socket
import time
from collections.abc import Callable
from operator import attrgetter
from typing import TYPE_CHECKING, Any, cast

from pyjetstream.protocol.events import Connect, Ping, ProtocolViolation, Pub, PubRun, Sub, Unsub
from pyjetstream.protocol.limits import OK, PING, PONG
from pyjetstream.protocol.parser import NatsServerParser
from pyjetstream.protocol.subjects import is_valid_publish_subject
from pyjetstream.server import msgtrace
from pyjetstream.server.auth import AuthDecision, PendingCheck
from pyjetstream.server.log import TRACE
from pyjetstream.server.msgtrace import DEST_HDR_B as TRACE_DEST
from pyjetstream.server.msgtrace import MIN_TRACED_HDR, has_trace_parent
from pyjetstream.server.permissions import ConnectionPermissions, pub_violation, sub_violation
from pyjetstream.server.sink import FrameSink
from pyjetstream.server.sublist import SublistError
from pyjetstream.server.subscription import Subscription
from pyjetstream.server.tls import check_peer_certificate, start_tls

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.options import Permissions
    from pyjetstream.server.server import Server

__all__ = ["ClientConnection", "ClosedReason"]

# The first server PING goes out this soon after CONNECT (nats-server firstClientPingInterval), plus
# up to a fifth at random, to measure the RTT, unless ping_interval is shorter. Before CONNECT the
# timer runs the full ping_interval (nats-server sets the short one in processConnect).
FIRST_PING_INTERVAL = 2.0
# Output queued in one loop turn is written as soon as it reaches this size (an eighth of
# max_pending, within these bounds): it bounds memory and lets the slow-consumer check and the
# producer stall see what the socket really accepts. The upper bound is one read's worth (uvloop
# reads 256 KiB): a read of large payloads then leaves in one write, as nats-server's
# flushOutbound hands all pending output to one writev (at 32 KiB, 16 KiB payloads cost a write
# syscall every 2-3 messages against nats-server's one per ~25-50).
EARLY_FLUSH_MAX = 256 * 1024
EARLY_FLUSH_MIN = 16 * 1024
# A producer publishing to a consumer whose transport is above its high-water mark (3/4 of
# max_pending) stops being processed and read until that consumer drains, for STALL_MIN (STALL_MAX
# once the consumer holds max_pending), and for at most STALL_TOTAL in all per read of the
# producer's socket (nats-server client.go stallClientMinDuration / stallClientMaxDuration /
# stallTotalAllowed, checked in stalledWait). Past that budget the producer is read and routed at
# full speed again: the slow consumer's backlog grows until max_pending or the write deadline cuts
# it, and the producer's other subscribers never wait longer than the budget for it.
STALL_MIN = 0.002
STALL_MAX = 0.005
STALL_TOTAL = 0.010


class ClosedReason:
    """Why a connection ended: nats-server's ``ClosedState`` strings (``/connz`` ``reason``)."""

    CLIENT_CLOSED = "Client Closed"
    AUTH_TIMEOUT = "Authentication Timeout"
    AUTH_VIOLATION = "Authentication Failure"
    AUTH_EXPIRED = "Authentication Expired"
    AUTH_REVOKED = "Authentication Revoked"
    SLOW_CONSUMER_PENDING = "Slow Consumer (Pending Bytes)"
    SLOW_CONSUMER_DEADLINE = "Slow Consumer (Write Deadline)"
    READ_ERROR = "Read Error"
    PARSE_ERROR = "Parse Error"
    STALE = "Stale Connection"
    PROTOCOL_VIOLATION = "Protocol Violation"
    BAD_PROTOCOL = "Bad Client Protocol Version"
    MAX_CONNECTIONS = "Maximum Connections Exceeded"
    MAX_PAYLOAD = "Maximum Message Payload Exceeded"
    MAX_CONTROL_LINE = "Maximum Control Line Exceeded"
    SHUTDOWN = "Server Shutdown"
    TLS_HANDSHAKE = "TLS Handshake Failure"
    HEADER_VIOLATION = "Message Header Violation"
    NO_RESPONDERS_HEADERS = "No Responders Requires Headers"


_ERR_CLOSE_REASONS = {
    "Unknown Protocol Operation": ClosedReason.PARSE_ERROR,
    "Maximum Payload Violation": ClosedReason.MAX_PAYLOAD,
    "maximum control line exceeded": ClosedReason.MAX_CONTROL_LINE,
}

# CONNECT fields and the JSON types nats-server's ClientOpts accepts (a mismatch fails
# json.Unmarshal, and the connection is closed without an -ERR).
_CONNECT_TYPES: dict[str, type | tuple[type, ...]] = {
    "verbose": bool,
    "pedantic": bool,
    "tls_required": bool,
    "echo": bool,
    "headers": bool,
    "no_responders": bool,
    "new_account": bool,
    "auth_token": str,
    "user": str,
    "pass": str,
    "name": str,
    "lang": str,
    "version": str,
    "nkey": str,
    "sig": str,
    "jwt": str,
    "account": str,
    "protocol": int,
}


def _err(text: str) -> bytes:
    return f"-ERR '{text}'\r\n".encode()


ERR_AUTH_VIOLATION = _err("Authorization Violation")
ERR_AUTH_TIMEOUT = _err("Authentication Timeout")
ERR_STALE = _err("Stale Connection")
ERR_INVALID_SUBJECT = _err("Invalid Subject")
ERR_INVALID_PUB_SUBJECT = _err("Invalid Publish Subject")
ERR_BAD_PROTOCOL = _err("invalid client protocol")
ERR_NO_RESPONDERS_HEADERS = _err("no responders requires headers support")
ERR_MAX_SUBS = _err("maximum subscriptions exceeded")
ERR_MAX_CONNECTIONS = _err("maximum connections exceeded")
ERR_MAX_ACCOUNT_CONNECTIONS = _err("maximum account active connections exceeded")
ERR_AUTH_EXPIRED = _err("User Authentication Expired")
ERR_AUTH_REVOKED = _err("User Authentication Revoked")


_find = bytes.find  # the trace-header test on the hot path (see _process)


class ClientConnection(asyncio.Protocol):
    """A client's TCP connection (``kind`` Client, ``type`` nats in ``/connz``)."""

    #: set by `pyjetstream.server.websocket` for a client inside WebSocket frames (its TLS, if
    #: any, is the WebSocket listener's: no NATS-level TLS upgrade)
    websocket = False
    #: Frame one routed message into this connection's output: `FrameSink.deliver`.
    deliver: Callable[..., bool]
    #: Write what the sink holds (`FrameSink.flush`), and write early past its limit
    #: (`FrameSink.overflow`: a slow consumer is cut there).
    flush_out: Callable[[], None]
    overflow: Callable[[], None]

    def __init__(self, server: Server) -> None:
        self.server = server
        opts = server.options
        self.cid = server.next_cid()
        self.transport: asyncio.Transport | None = None
        self.parser = NatsServerParser(opts.max_control_line, opts.max_payload)
        self.ip = ""
        self.port = 0
        # --- CONNECT state; nats-server's defaults before (and under) a CONNECT.
        self.connected = False
        self.authenticating = False
        self.verbose = True
        self.pedantic = True
        self.no_responders = False
        self.protocol = 0
        self.first_pong = False  # a PING after CONNECT was answered (nats-server firstPongSent)
        self.name = ""
        self.lang = ""
        self.version = ""
        self.user = ""
        # The account this connection's subscriptions and publishes live in (set on CONNECT).
        self.account: Account = server.global_account
        # Operator mode: what the user JWT grants (permissions, limits, expiry).
        self.identity: Any = None
        self.max_subs = 0  # per-user limit (JWT ``subs``); 0 = the server's max_subscriptions
        self._expiry_timer: asyncio.TimerHandle | None = None
        self.connect_opts: dict[str, Any] = {"verbose": True, "pedantic": True, "echo": True}
        # The authenticated user's permissions; None (no checks at all) for most connections.
        self.perms: ConnectionPermissions | None = None
        # Publishes that need per-message checks (before CONNECT, verbose, pedantic) take the slow path.
        self.checked_pubs = True
        self.auth_required = server.authenticator.info_auth_required
        self.nonce = ""  # set when INFO carries one (nkey users sign it)
        self._held: list[Any] | None = None  # events received while a bcrypt check runs
        # --- subscriptions by sid
        self.subs: dict[str, Subscription] = {}
        # --- output: framed into the sink, which writes it (flush_out)
        self.max_pending = opts.max_pending
        early_flush = max(EARLY_FLUSH_MIN, min(EARLY_FLUSH_MAX, opts.max_pending // 8))
        sink = self.sink = FrameSink(self, server, opts.max_pending, early_flush)
        sink.trace = server.trace
        self.deliver = sink.deliver
        self.took = sink.took  # a read's publishes counted (in_msgs, in_bytes and the server's totals)
        self.flush_out = sink.flush
        self.overflow = sink.overflow
        self._loop = server.loop
        self.peercert: dict[str, Any] | None = None  # the verified client certificate (mTLS)
        self._tls_task: asyncio.Task[None] | None = None
        self.closed = False
        self.lost = False  # connection_lost() has run: the socket is gone
        self.close_reason = ""
        self.stalled_producers: list[ClientConnection] = []
        self.stalled = False
        self._stall_timer: asyncio.TimerHandle | None = None
        # Seconds this producer has been stalled since its socket was last read (nats-server
        # ``c.in.tst``), and when the current stall began.
        self.stall_total = 0.0
        self._stall_started = 0.0
        self.stalls = 0  # times producers were stalled by this consumer (nats-server ``c.stalls``)
        # --- stats (nats-server counts message bytes: headers + payload)
        self.start_wall_ns = time.time_ns()
        self.start = time.monotonic()
        self.last_activity = self.start
        self.stop_wall_ns = 0  # set when the connection ends
        self.stop = 0.0
        # What `pyjetstream.server.monitor.connection_info` keeps of it between /connz requests
        # (its fields that never change, the texts of its last activity and RTT): made at the first.
        self.connz_kept: Any = None
        # --- ping / timers
        self.pings_out = 0
        self.rtt = 0.0
        #: Its ``Nats-Request-Info`` values through service imports, with the RTT each names
        #: (`imports._with_request_info`); None until its first such request.
        self.request_infos: dict[bool, tuple[float, bytes]] | None = None
        self._ping_sent_at = 0.0
        self._last_in = self.start
        self._ping_timer: asyncio.TimerHandle | None = None
        self._auth_timer: asyncio.TimerHandle | None = None
        self.trace = server.trace

    # ------------------------------------------------------- output state (the sink's)

    @property
    def echo(self) -> bool:
        return self.sink.echo

    @property
    def headers(self) -> bool:
        return self.sink.headers

    @property
    def deliver_filter(self) -> ConnectionPermissions | None:
        """Set when messages delivered here must pass ``perms.deliver_allowed``."""
        return self.sink.deliver_filter

    # What the connection published and was sent: counted on its sink (`FrameSink.took`, ``msgs``).
    in_msgs = property(attrgetter("sink.in_msgs"))
    in_bytes = property(attrgetter("sink.in_bytes"))
    out_msgs = property(attrgetter("sink.msgs"))
    out_bytes = property(attrgetter("sink.bytes"))

    # ----------------------------------------------------------------- identity

    def __repr__(self) -> str:
        return f"<ClientConnection cid={self.cid} {self.ip}:{self.port}>"

    @property
    def log_prefix(self) -> str:
        """nats-server's ``127.0.0.1:4321 - cid:5 - "v2.16.0:python3:name"`` prefix."""
        prefix = f"{self.ip}:{self.port} - cid:{self.cid}"
        if self.connected and (self.version or self.lang or self.name):
            desc = f"v{self.version}:{self.lang}"
            if self.name:
                desc += f":{self.name}"
            prefix += f' - "{desc}"'
        return prefix

    def log(self, level: int, message: str) -> None:
        logger = self.server.logger
        if logger.isEnabledFor(level):
            logger.log(level, "%s - %s", self.log_prefix, message)

    # ------------------------------------------------------------ asyncio hooks

    def connection_made(self, base: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have the same methods.
        transport = cast(asyncio.Transport, base)
        self.transport = self.sink.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        if peer:
            self.ip, self.port = peer[0], peer[1]
        server = self.server
        opts = server.options
        self.set_write_limits()
        self.log(logging.DEBUG, "Client connection created")
        ssl_context = None if self.websocket else server.ssl_context
        info = server.info_for(self)
        if not server.register_client(self):
            transport.write(info)
            self.log(logging.ERROR, "maximum connections exceeded")
            self.send_err_and_close(ERR_MAX_CONNECTIONS, ClosedReason.MAX_CONNECTIONS)
            return
        loop = server.loop
        if transport.get_extra_info("ssl_object") is not None:  # handshake_first: TLS done
            if not check_peer_certificate(self, transport):
                return
            transport.write(info)
        elif ssl_context is None:
            transport.write(info)
        else:
            # INFO is written by the TLS task once reading is paused: uvloop starts reading after
            # connection_made() returns (a pause_reading() in here does not hold), and the client's
            # ClientHello, answering INFO, must reach the TLS layer, not the NATS parser.
            self.sink.hold = True
            self._tls_task = loop.create_task(start_tls(self, ssl_context, info))
        if self.auth_required:
            self._auth_timer = loop.call_later(opts.auth_timeout, self._auth_timeout)
        self._ping_timer = loop.call_later(opts.ping_interval, self._ping_timer_fired)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.closed:
            self.closed = self.sink.closed = True
            self.close_reason = ClosedReason.READ_ERROR if exc else ClosedReason.CLIENT_CLOSED
        self._cleanup()
        self.server.connection_gone(self)

    def set_write_limits(self) -> None:
        # Above this the transport calls pause_writing(): the consumer is falling behind and
        # producers publishing to it are stalled (nats-server: 3/4 of max_pending).
        high = max(self.max_pending * 3 // 4, 64 * 1024)
        if self.transport is not None:
            self.transport.set_write_buffer_limits(high=high, low=high // 2)

    def pause_writing(self) -> None:
        self.sink.write_paused = True

    def resume_writing(self) -> None:
        self.sink.write_paused = False
        self._release_producers()

    def eof_received(self) -> bool:
        return False

    # ----------------------------------------------------------------- reading

    def data_received(self, data: bytes) -> None:
        self._last_in = self.last_activity = time.monotonic()
        self.stall_total = 0.0  # a new read: a new stall budget (nats-server resetReadLoopStallTime)
        server = self.server
        outer = server.begin_read()
        try:
            events = self.parser.feed(data)
            if self._held is not None:
                self._held.extend(events)
                return
            self._process(events)
        except Exception:
            # A bug must cost one connection, not the server.
            server.logger.exception("%s - internal error processing client data", self.log_prefix)
            self.close(ClosedReason.PROTOCOL_VIOLATION)
        finally:
            if outer:
                server.end_read()  # the read's store writes, then its output (flushClients)

    def _process(self, events: list[Any]) -> None:
        route = self.server.route
        # Checks (trace, before CONNECT, verbose, pedantic): _slow_pub; mappings (per read, as nats-server).
        slow = (checks := self.trace or self.checked_pubs) or self.account.mapped
        n_msgs = n_bytes = 0
        i = 0
        try:
            while i < len(events):
                ev = events[i]
                i += 1
                if self.closed:
                    return
                cls = ev.__class__
                if cls is tuple:  # PUB/HPUB (see NatsServerParser)
                    subject, reply, hdr, payload = ev
                    if (
                        hdr is not None
                        and len(hdr) >= MIN_TRACED_HDR
                        and (_find(hdr, TRACE_DEST) >= 0 or (self.account.trace_dest and has_trace_parent(hdr)))
                    ):  # may be traced (msgtrace.may_be_traced, inlined: this is the hot path)
                        if not self.traced_pub(subject, reply, hdr, payload, slow):
                            if self.closed:
                                return
                            continue
                    else:
                        if slow or (hdr is not None and not self.headers):
                            subject = self._slow_pub(Pub(subject, reply, hdr, payload))
                            if subject is None:
                                if self.closed:
                                    return
                                continue
                        route(subject, reply, hdr, payload, self)
                    n_msgs += 1
                    n_bytes += len(payload) if hdr is None else len(hdr) + len(payload)
                    if self.stalled:
                        self._held = events[i:]
                        return
                    continue
                if cls is PubRun:
                    if checks or (not self.headers and any(h is not None for h in ev.hdrs)):
                        # per message after all (a second CONNECT turned checks on; headers refused)
                        events[i - 1 : i] = list(zip(ev.subjects, ev.replies, ev.hdrs, ev.payloads, strict=True))
                        i -= 1
                        continue
                    payloads = ev.payloads
                    n = len(payloads)
                    subjects = self.account.map_subjects(ev.subjects, ev.hdrs) if slow else ev.subjects
                    done = self.server.route_msgs(subjects, ev.replies, ev.hdrs, payloads, self)
                    hdrs = ev.hdrs
                    if done < n:
                        rest = PubRun(ev.subjects[done:], ev.replies[done:], hdrs[done:], payloads[done:])
                        payloads = payloads[:done]
                        hdrs = hdrs[:done]
                    n_msgs += done
                    n_bytes += sum(map(len, payloads)) + sum(map(len, filter(None, hdrs)))
                    if self.closed:
                        return
                    if done < n:  # the consumer stalled this producer mid-run
                        self._held = [rest, *events[i:]]
                        return
                    if self.stalled:
                        self._held = events[i:]
                        return
                    continue
                if cls is Connect:
                    if self.trace:
                        self.log(TRACE, f"<<- [CONNECT {_redact(ev.options)}]")
                    if self._process_connect(ev) and not self.closed:
                        # A bcrypt check is running: hold the rest until it is decided.
                        self._held = events[i:]
                        if self.transport is not None:
                            self.transport.pause_reading()
                        return
                    slow = (checks := self.trace or self.checked_pubs) or self.account.mapped
                    continue
                if not self._process_other(ev, cls):
                    return
        finally:
            self.took(n_msgs, n_bytes)

    def _slow_pub(self, ev: Pub, trace: msgtrace.MsgTrace | None = None) -> str | None:
        """PUB checks off the fast path: the subject to route, None when the message must not be
        routed. The subject is the account's mapping of it (nats-server maps in the parser, after
        the PUB line is traced and before the permissions are checked, so those apply to the
        mapped subject; a traced message records the mapping as an ``sm`` event)."""
        if self.trace:
            _trace_pub(self, ev)
        if ev.hdr is not None and not self.headers:
            self.log(logging.ERROR, "message headers not supported")
            self.close(ClosedReason.HEADER_VIOLATION)
            return None
        subject = _mapped(self, ev.subject, trace) if self.account.mapped else ev.subject
        if self.checked_pubs and not self._check_pub(ev, subject):
            if trace is not None and not self.closed:  # still open: the publish permissions refused it
                trace.ingress_error(f'Permissions Violation for Publish to "{subject}"')
            return None
        return subject

    def traced_pub(self, subject: str, reply: str, hdr: bytes, payload: bytes, slow: bool) -> bool:
        """A publish that may be traced (`pyjetstream.server.msgtrace`): the trace starts
        before the publish checks (nats-server ``initMsgTrace`` in the parser), so that a
        refused publish is reported as the ingress error; the event goes out once it is routed.
        False when the message was not routed."""
        skip, trace = msgtrace.start(self, subject, hdr, len(hdr) + len(payload))
        if skip:
            return False
        if slow or not self.headers or self.account.mapped:  # (a run's traced message: not mapped yet)
            checked = self._slow_pub(Pub(subject, reply, hdr, payload), trace)
            if checked is None:
                if trace is not None and not self.closed:
                    trace.send()
                return False
            subject = checked
        if trace is None:
            self.server.route(subject, reply, hdr, payload, self)
            return True
        msgtrace.route(trace, subject, reply, hdr, payload, self, self.account)
        trace.send()
        return True

    def publish_violation(self, subject: str) -> None:
        """nats-server ``pubPermissionViolation``: ``-ERR`` (instead of +OK), the message is
        dropped, the connection stays."""
        self.enqueue(pub_violation(subject))
        self.log(logging.ERROR, f'Publish Violation - User "{self.user}", Subject "{subject}"')

    def _process_other(self, ev: Any, cls: type) -> bool:
        """SUB, UNSUB, PING, PONG and protocol violations; False when processing must stop."""
        if cls is Sub and not self.trace and (self.connected or not self.auth_required):
            self._process_sub(ev)  # (a subscriber's start-up: thousands in a row)
            return True
        trace = self.trace
        if cls is ProtocolViolation:
            self._protocol_violation(ev)
            return False
        if self._before_connect_denied():
            return False
        if cls is Sub:
            if trace:
                self.log(TRACE, f"<<- [SUB {ev.subject} {ev.queue} {ev.sid}]")
            self._process_sub(ev)
        elif cls is Unsub:
            if trace:
                self.log(TRACE, f"<<- [UNSUB {ev.sid} {ev.max_msgs or ''}]")
            self._process_unsub(ev)
        elif cls is Ping:
            if trace:
                self.log(TRACE, "<<- [PING]")
            self.enqueue(PONG)
            if trace:
                self.log(TRACE, "->> [PONG]")
            self.first_pong = self.connected  # nats-server firstPongSent: async INFOs from now on
        else:  # Pong
            if trace:
                self.log(TRACE, "<<- [PONG]")
            self.pings_out = 0
            if self._ping_sent_at:
                self.rtt = time.monotonic() - self._ping_sent_at
                self._ping_sent_at = 0.0
        return True

    def _before_connect_denied(self) -> bool:
        """nats-server: with auth required, anything before CONNECT is an authorization violation."""
        if self.connected or not self.auth_required:
            return False
        self.auth_violation()
        return True

    def _check_pub(self, ev: Pub, subject: str) -> bool:
        """The slow path for PUB: before CONNECT, pedantic subject check, the permissions (of the
        mapped ``subject``), verbose +OK."""
        if self._before_connect_denied():
            return False
        if self.pedantic and not is_valid_publish_subject(ev.subject):
            self.enqueue(ERR_INVALID_PUB_SUBJECT)
        perms = self.perms
        if perms is not None and perms.restricts_publish and not perms.can_publish(subject):
            self.publish_violation(subject)
            return False
        if self.verbose:
            self.enqueue(OK)
        return True

    # ------------------------------------------------------------- CONNECT

    def _process_connect(self, ev: Connect) -> bool:
        """Apply a CONNECT; True when it waits for a bcrypt check (see _held)."""
        options = ev.options
        for key, kind in _CONNECT_TYPES.items():
            value = options.get(key)
            if value is None:
                continue
            bad = not isinstance(value, kind) or (kind is int and isinstance(value, bool))
            if bad:
                self.log(logging.ERROR, f"CONNECT with a bad {key!r} value")
                self.close(ClosedReason.PARSE_ERROR)
                return False
        # Like json.Unmarshal onto the previous options: present keys override.
        merged = self.connect_opts
        merged.update({k: v for k, v in options.items() if v is not None})
        if self.server.authenticator.required and not self.connected:
            decision = self.server.authenticator.check(merged, self.nonce, self.peercert)
            if isinstance(decision, PendingCheck):
                self.authenticating = True
                self.server.loop.run_in_executor(None, decision.run).add_done_callback(self._bcrypt_done)
                return True
            if not decision.ok:
                self.auth_violation(decision.user)
                return False
            self._authenticated(decision)
        self._finish_connect()
        return False

    def _bcrypt_done(self, fut: asyncio.Future[AuthDecision]) -> None:
        self.authenticating = False
        if self.closed:
            return
        try:
            decision = fut.result()
        except Exception:  # a failed check is a failed authentication
            decision = AuthDecision(False, str(self.connect_opts.get("user") or ""))
        if not decision.ok:
            self.auth_violation(decision.user)
            return
        self._authenticated(decision)
        self._finish_connect()
        self._resume_held()

    def _authenticated(self, decision: AuthDecision) -> None:
        self.user = decision.user
        self.account = self.server.lookup_account(decision.account)
        if decision.identity is not None:
            self._apply_identity(decision.identity)
            return
        perms = self.server.authenticator.permissions_for(decision)
        if perms is not None:
            self.perms = ConnectionPermissions(perms)
            self._update_deliver_filter()

    def _apply_identity(self, identity: Any) -> None:
        """A user JWT's permissions and limits, and its account's (nats-server ``RegisterUser``)."""
        self.identity = identity
        if identity.permissions is not None:
            self.perms = ConnectionPermissions(identity.permissions)
            self._update_deliver_filter()
        limits = self.account.limits
        subs = [n for n in (identity.max_subs, limits.max_subscriptions if limits else -1) if n >= 0]
        if subs:
            self.max_subs = min(subs) or -1  # 0 in a JWT: no subscriptions at all
        payloads = [n for n in (identity.max_payload, limits.max_payload if limits else -1) if n >= 0]
        if payloads:
            self.parser.max_payload = min([self.parser.max_payload, *payloads])
        if identity.expires:
            delay = max(0.0, identity.expires - time.time())
            self._expiry_timer = self.server.loop.call_later(delay, self._jwt_expired)
        if limits is not None and limits.max_connections >= 0:
            others = len(self.account.clients)  # (connected ones: `Server.join_account`)
            if others >= limits.max_connections:
                self.log(logging.ERROR, "maximum account active connections exceeded")
                self.send_err_and_close(ERR_MAX_ACCOUNT_CONNECTIONS, ClosedReason.MAX_CONNECTIONS)

    def _jwt_expired(self) -> None:
        self._expiry_timer = None
        if not self.closed:
            self.log(logging.INFO, "User JWT expired")
            self.send_err_and_close(ERR_AUTH_EXPIRED, ClosedReason.AUTH_EXPIRED)

    def revoked(self) -> None:
        """The account's JWT revoked this user: nats-server closes with this error."""
        if not self.closed:
            self.send_err_and_close(ERR_AUTH_REVOKED, ClosedReason.AUTH_REVOKED)

    def _update_deliver_filter(self) -> None:
        perms = self.perms
        self.sink.deliver_filter = perms if perms is not None and perms.filters_delivery else None

    def reconfigured(self, perms: Permissions | None, keep: bool = False) -> None:
        """A configuration reload: the user's new permissions (``keep``: unchanged, as for a JWT
        identity) and the server's trace level; what a publish is checked for follows them."""
        if not keep:
            self.perms = ConnectionPermissions(perms) if perms is not None else None
            self._update_deliver_filter()
        self.trace = self.server.trace
        self.checked_pubs = self.verbose or self.pedantic or (self.perms is not None and self.perms.restricts_publish)
        self.parser.pub_runs = not (self.checked_pubs or self.trace) and self.server.options.runs

    def _finish_connect(self) -> None:
        o = self.connect_opts
        if o.get("account") or o.get("new_account"):
            # nats-server: naming an account in CONNECT is an authorization error.
            self.auth_violation(str(o.get("user") or ""))
            return
        protocol = o.get("protocol", 0)
        if protocol < 0 or protocol > 1:
            self.send_err_and_close(ERR_BAD_PROTOCOL, ClosedReason.BAD_PROTOCOL)
            return
        self.protocol = protocol
        self.verbose = bool(o.get("verbose", True))
        self.pedantic = bool(o.get("pedantic", True))
        self.sink.echo = bool(o.get("echo", True))
        self.sink.headers = bool(o.get("headers", False)) and not self.server.options.no_header_support
        self.no_responders = bool(o.get("no_responders", False))
        self.name = str(o.get("name", ""))
        self.lang = str(o.get("lang", ""))
        self.version = str(o.get("version", ""))
        if self.no_responders and not self.headers:
            self.send_err_and_close(ERR_NO_RESPONDERS_HEADERS, ClosedReason.NO_RESPONDERS_HEADERS)
            return
        if not self.connected:
            self._set_first_ping_timer()
            self.server.join_account(self)
        self.connected = True
        perms = self.perms
        self.checked_pubs = self.verbose or self.pedantic or (perms is not None and perms.restricts_publish)
        self.parser.pub_runs = not (self.checked_pubs or self.trace) and self.server.options.runs
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if self.verbose:
            self.enqueue(OK)

    def max_connections_exceeded(self) -> None:
        """nats-server ``maxConnExceeded``: a reload lowered max_connections below the clients there are."""
        self.log(logging.ERROR, "maximum connections exceeded")
        self.send_err_and_close(ERR_MAX_CONNECTIONS, ClosedReason.MAX_CONNECTIONS)

    def auth_violation(self, user: str = "") -> None:
        self.log(logging.ERROR, f'authentication error - User "{user}"')
        self.send_err_and_close(ERR_AUTH_VIOLATION, ClosedReason.AUTH_VIOLATION)

    def _auth_timeout(self) -> None:
        self._auth_timer = None
        if self.closed or self.connected:
            return
        self.log(logging.ERROR, "Authentication Timeout")
        self.send_err_and_close(ERR_AUTH_TIMEOUT, ClosedReason.AUTH_TIMEOUT)

    # --------------------------------------------------------------- SUB/UNSUB

    def _process_sub(self, ev: Sub) -> None:
        sid = ev.sid
        perms = self.perms
        if perms is not None:
            if not perms.can_subscribe(ev.subject, ev.queue):
                self._sub_violation(ev)
                return
            if perms.deny_filter and self.deliver_filter is None:
                self._update_deliver_filter()
        if sid in self.subs:  # nats-server: re-using a sid is a no-op
            if self.verbose:
                self.enqueue(OK)
            return
        max_subs = self.max_subs or self.server.options.max_subscriptions
        if max_subs and len(self.subs) >= max(max_subs, 0):
            self.log(logging.ERROR, "maximum subscriptions exceeded")
            self.enqueue(ERR_MAX_SUBS)
            return
        sub = Subscription(ev.subject, sid, ev.queue, self)
        try:
            self.account.add_subscription(sub)
        except SublistError:
            self.enqueue(ERR_INVALID_SUBJECT)
            return
        self.subs[sid] = sub
        if self.verbose:
            self.enqueue(OK)

    def _sub_violation(self, ev: Sub) -> None:
        self.enqueue(sub_violation(ev.subject, ev.queue))
        queue = f', Queue: "{ev.queue}"' if ev.queue else ""
        self.log(
            logging.ERROR,
            f'Subscription Violation - User "{self.user}", Subject "{ev.subject}"{queue}, SID {ev.sid}',
        )

    def _process_unsub(self, ev: Unsub) -> None:
        sub = self.subs.get(ev.sid)
        if sub is not None:
            if ev.max_msgs and sub.delivered < ev.max_msgs:
                sub.max_msgs = ev.max_msgs
            else:
                self.remove_sub(sub)
        if self.verbose:
            self.enqueue(OK)

    def remove_sub(self, sub: Subscription) -> None:
        if sub.closed:
            return
        sub.closed = True
        if self.subs.get(sub.sid) is sub:
            del self.subs[sub.sid]
        self.account.remove_subscription(sub)
        if self.trace:
            self.log(TRACE, f"<-> [DELSUB {sub.sid}]")

    # ------------------------------------------------------------------ writing

    def enqueue(self, data: bytes) -> None:
        """Queue bytes for this connection; they go out at the end of this read or loop turn."""
        self.sink.append(data)

    def may_stall(self, consumer: ClientConnection) -> bool:
        """Whether `stall` would stall this producer for ``consumer`` now."""
        return (
            not self.stalled
            and not self.closed
            and consumer is not self
            and self.transport is not None
            and self.stall_total < STALL_TOTAL
        )

    def trace_msg(self, sub: Subscription, subject: str, reply: str, hdr: bytes | None, size: int) -> None:
        args = f"{subject} {sub.sid} {reply + ' ' if reply else ''}"
        if hdr is None or not self.headers:
            self.log(TRACE, f"->> [MSG {args}{size}]")
        else:
            self.log(TRACE, f"->> [HMSG {args}{len(hdr)} {size}]")

    def pending_bytes(self) -> int:
        return self.sink.pending()

    def stall(self, consumer: ClientConnection) -> None:
        """Stop processing and reading this producer until ``consumer`` drains, for a few
        milliseconds at most (nats-server ``client.stalledWait``).

        ``_process`` notices ``stalled`` after the route call and holds the rest of the batch.
        A producer that has used its STALL_TOTAL for this read is not stalled again: it goes on
        routing, so a consumer that does not read is cut (max_pending, write deadline) while the
        producer's other subscribers keep receiving.
        """
        if self.stalled or self.closed or consumer is self or self.transport is None:
            return
        budget = STALL_TOTAL - self.stall_total
        if budget <= 0:
            return
        ttl = STALL_MAX if consumer.pending_bytes() >= consumer.max_pending else STALL_MIN
        loop = self.server.loop
        self.stalled = True
        self._stall_started = loop.time()
        self.server.stalled_clients += 1  # nats-server stalledWait counts every stall
        consumer.stalls += 1
        consumer.stalled_producers.append(self)
        self.transport.pause_reading()
        self._stall_timer = loop.call_later(min(ttl, budget), self.unstall)

    def unstall(self) -> None:
        if not self.stalled:
            return
        self.stalled = False
        self.stall_total += self.server.loop.time() - self._stall_started
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        self._resume_held()

    def _resume_held(self) -> None:
        """Process events held back (by a stall or a bcrypt check), then read again."""
        if self.closed or self.authenticating:
            return
        held, self._held = self._held, None
        if held:
            self._process(held)
        if not self.closed and self._held is None and not self.stalled and self.transport is not None:
            self.transport.resume_reading()

    def _release_producers(self) -> None:
        producers, self.stalled_producers = self.stalled_producers, []
        loop = self.server.loop
        for producer in producers:
            # Not from inside the transport's resume_writing(): on the next loop pass.
            loop.call_soon(producer.unstall)

    # ------------------------------------------------------------------- errors

    def _protocol_violation(self, ev: ProtocolViolation) -> None:
        if ev.hpub is not None and ev.head and self.connected and self.headers:
            # nats-server sendMsgTraceIngressErrEvent: a traced message refused for its size is
            # still reported, from the part of its header block already read.
            subject, _, total = ev.hpub
            _, trace = msgtrace.start(self, subject, ev.head, total, "maximum payload exceeded")
            if trace is not None:
                trace.send()
        if ev.err:
            self.log(logging.ERROR, f"{ev.err}{': ' + ev.detail if ev.detail else ''}")
            self.send_err_and_close(_err(ev.err), _ERR_CLOSE_REASONS.get(ev.err, ClosedReason.PARSE_ERROR))
        else:
            self.log(logging.ERROR, f"Client parser ERROR: {ev.detail}")
            self.close(ClosedReason.PROTOCOL_VIOLATION)

    def send_err_and_close(self, err: bytes, reason: str) -> None:
        self.enqueue(err)
        self.close(reason)

    # ------------------------------------------------------------------ closing

    def close(self, reason: str, flush: bool = True) -> None:
        """Close after writing what is queued (``flush=False``: drop it, like nats-server does
        for slow consumers)."""
        if self.closed:
            return
        if flush:
            self.flush_out()
        self.closed = self.sink.closed = True
        self.close_reason = reason
        if self.transport is not None:
            if flush:
                self.transport.close()
            else:
                self.transport.abort()
        self._cleanup()

    def abort(self, reason: str) -> None:
        self.close(reason, flush=False)

    def _cleanup(self) -> None:
        """Release subscriptions and timers once (connection_lost may follow close)."""
        if self.stop_wall_ns:
            return
        self.stop_wall_ns = time.time_ns()
        self.stop = time.monotonic()
        for timer in (
            self._ping_timer,
            self._auth_timer,
            self._stall_timer,
            self._expiry_timer,
        ):
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._stall_timer = None
        self.sink.stop()
        self._expiry_timer = None
        if self._tls_task is not None and not self._tls_task.done():
            self._tls_task.cancel()
        self._release_producers()
        # Recorded for /connz?state=closed while the subscriptions are still listed.
        self.server.unregister_client(self)
        for sub in list(self.subs.values()):
            self.remove_sub(sub)
        self.log(logging.DEBUG, f"Client connection closed: {self.close_reason}")

    # -------------------------------------------------------------------- PINGs

    def _set_first_ping_timer(self) -> None:
        """nats-server ``setFirstPingTimer`` on CONNECT: a short first PING (2 s + up to 20 %)."""
        opts = self.server.options
        delay = opts.ping_interval
        if not opts.disable_short_first_ping:
            delay = min(delay, FIRST_PING_INTERVAL)
        delay += random.uniform(0, delay / 5)
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        self._ping_timer = self.server.loop.call_later(delay, self._ping_timer_fired)

    def _ping_timer_fired(self) -> None:
        self._ping_timer = None
        if self.closed:
            return
        opts = self.server.options
        now = time.monotonic()
        # nats-server skips its PING when the client was active within the interval, once the
        # RTT is known (the first PING measures it).
        if self.rtt and now - self._last_in < opts.ping_interval:
            self.log(logging.DEBUG, "Delaying PING due to client activity")
        elif self.pings_out + 1 > opts.ping_max:
            self.log(logging.DEBUG, "Stale Client Connection - Closing")
            self.server.stale_connections += 1
            self.send_err_and_close(ERR_STALE, ClosedReason.STALE)
            return
        else:
            self.pings_out += 1
            self._ping_sent_at = now
            self.enqueue(PING)
            if self.trace:
                self.log(TRACE, "->> [PING]")
        self._ping_timer = self.server.loop.call_later(opts.ping_interval, self._ping_timer_fired)


def _trace_pub(conn: ClientConnection, ev: Pub) -> None:
    """The trace lines of a PUB/HPUB (nats-server ``traceInOp`` and ``traceMsg``)."""
    if ev.hdr is None:
        conn.log(TRACE, f"<<- [PUB {ev.subject} {ev.reply} {len(ev.payload)}]")
    else:
        total = len(ev.hdr) + len(ev.payload)
        conn.log(TRACE, f"<<- [HPUB {ev.subject} {ev.reply} {len(ev.hdr)} {total}]")
    limit = conn.server.options.max_traced_msg_len
    body = (ev.hdr or b"") + ev.payload
    if limit and len(body) > limit:
        body = body[:limit]
    conn.log(TRACE, f"<<- MSG_PAYLOAD: [{body!r}]")


def _mapped(conn: ClientConnection, subject: str, trace: msgtrace.MsgTrace | None) -> str:
    """The account's mapping of a publish's subject (nats-server ``selectMappedSubject`` in the
    parser), traced as its ``MAPPING`` line and, for a traced message, its ``sm`` event."""
    mapped = conn.account.map_subject(subject)
    if mapped != subject:
        if conn.trace:
            conn.log(TRACE, f"<<- [MAPPING {subject} -> {mapped}]")
        if trace is not None:
            trace.subject_mapping(mapped)
    return mapped


def _redact(options: dict[str, Any]) -> str:

    shown = {k: ("[REDACTED]" if k in ("pass", "auth_token", "sig") else v) for k, v in options.items()}
    return json.dumps(shown)
