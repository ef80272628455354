"""One client connection: an asyncio Protocol that parses ops and hands publishes to the router.

Speed notes (this is the per-message path):

- bytes are parsed by the sans-IO `NatsServerParser` into a list of events per read;
- the connection owns its output (nats-server ``client.deliverMsg``): `ClientConnection.deliver`
  appends a routed message's frame parts to ``out`` (a list of bytes, with the
  `pyjetstream.protocol.writers`) and has one ``flush_out`` write everything with one
  ``transport.write``: at the end of the client read that made the output (``Server.end_read``,
  nats-server ``flushClients`` at the end of ``readLoop``), else at the end of the event-loop turn;
- ``pending_limit`` caches "max_pending minus what the transport still holds" so the slow-consumer
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
import os
import random
import socket
import ssl
import time
from typing import TYPE_CHECKING, Any, cast

from pyjetstream.api.timefmt import format_go_duration
from pyjetstream.protocol.events import Connect, Ping, ProtocolViolation, Pub, PubRun, Sub, Unsub
from pyjetstream.protocol.limits import OK, PING, PONG
from pyjetstream.protocol.parser import NatsServerParser
from pyjetstream.protocol.subjects import is_valid_publish_subject
from pyjetstream.protocol.writers import CRLF, append_hmsg, append_msg, hmsg_prefix, msg_prefix
from pyjetstream.server import msgtrace
from pyjetstream.server.auth import AuthDecision, PendingCheck
from pyjetstream.server.log import TRACE
from pyjetstream.server.msgtrace import DEST_HDR_B as TRACE_DEST
from pyjetstream.server.msgtrace import MIN_TRACED_HDR, has_trace_parent
from pyjetstream.server.permissions import ConnectionPermissions, pub_violation, sub_violation
from pyjetstream.server.sublist import SublistError
from pyjetstream.server.subscription import Subscription
from pyjetstream.server.tls import spki_sha256

if TYPE_CHECKING:
    from pyjetstream.server.accounts import Account
    from pyjetstream.server.server import Server

__all__ = ["ClientConnection", "ClosedReason"]

# The first server PING goes out this soon after CONNECT (nats-server firstClientPingInterval), plus
# up to a fifth at random, to measure the RTT, unless ping_interval is shorter. Before CONNECT the
# timer runs the full ping_interval (nats-server sets the short one in processConnect).
FIRST_PING_INTERVAL = 2.0
# Output queued in one loop turn is written as soon as it reaches this size (an eighth of
# max_pending, within these bounds): it bounds memory and lets the slow-consumer check and the
# producer stall see what the socket really accepts.
EARLY_FLUSH_MAX = 32 * 1024
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

    #: set by :mod:`pyjetstream.server.websocket` for a client inside WebSocket frames (its TLS, if
    #: any, is the WebSocket listener's: no NATS-level TLS upgrade)
    websocket = False

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
        self.echo = True
        self.headers = False
        self.no_responders = False
        self.protocol = 0
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
        # Set when messages delivered here must pass perms.deliver_allowed (read by Server.route).
        self.deliver_filter: ConnectionPermissions | None = None
        # Publishes that need per-message checks (before CONNECT, verbose, pedantic) take the slow path.
        self.checked_pubs = True
        self.auth_required = server.authenticator.info_auth_required
        self.nonce = ""  # set when INFO carries one (nkey users sign it)
        self._held: list[Any] | None = None  # events received while a bcrypt check runs
        # --- subscriptions by sid
        self.subs: dict[str, Subscription] = {}
        # --- output
        self.out: list[bytes] = []
        # ``deliver``'s last shown subject (a consumer's stream subject), its subscription and prefix
        self._shown_sub: Subscription | None = None
        self._shown = ""
        self._shown_prefix = b""
        self.out_size = 0
        self.dirty = False  # a flush_out is scheduled for this loop turn
        self._loop = server.loop
        self.tls_pending = False  # INFO sent, TLS handshake not finished: hold output
        self.peercert: dict[str, Any] | None = None  # the verified client certificate (mTLS)
        self._tls_task: asyncio.Task[None] | None = None
        self.closed = False
        self.lost = False  # connection_lost() has run: the socket is gone
        self.close_reason = ""
        self.max_pending = opts.max_pending
        self.early_flush = max(EARLY_FLUSH_MIN, min(EARLY_FLUSH_MAX, opts.max_pending // 8))
        self.pending_limit = min(opts.max_pending, self.early_flush)
        self.write_paused = False
        self._write_deadline_timer: asyncio.TimerHandle | None = None
        self.written = 0  # bytes handed to the transport by flush_out
        self._write_deadline_mark = 0  # ``written`` when the running write deadline started
        self.stalled_producers: list[ClientConnection] = []
        self.stalled = False
        self._stall_timer: asyncio.TimerHandle | None = None
        # Seconds this producer has been stalled since its socket was last read (nats-server
        # ``c.in.tst``), and when the current stall began.
        self.stall_total = 0.0
        self._stall_started = 0.0
        self.stalls = 0  # times producers were stalled by this consumer (nats-server ``c.stalls``)
        # --- stats (nats-server counts message bytes: headers + payload)
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0
        self.start_wall_ns = time.time_ns()
        self.start = time.monotonic()
        self.last_activity = self.start
        self.stop_wall_ns = 0  # set when the connection ends
        self.stop = 0.0
        # --- ping / timers
        self.pings_out = 0
        self.rtt = 0.0
        self._ping_sent_at = 0.0
        self._last_in = self.start
        self._ping_timer: asyncio.TimerHandle | None = None
        self._auth_timer: asyncio.TimerHandle | None = None
        self.trace = server.trace

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
        self.transport = transport
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
        self._set_write_limits()
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
            if not self._check_peer_certificate(transport):
                return
            transport.write(info)
        elif ssl_context is None:
            transport.write(info)
        else:
            # INFO is written by the TLS task once reading is paused: uvloop starts reading after
            # connection_made() returns (a pause_reading() in here does not hold), and the client's
            # ClientHello, answering INFO, must reach the TLS layer, not the NATS parser.
            self.tls_pending = True
            self._tls_task = loop.create_task(self._start_tls(ssl_context, info))
        if self.auth_required:
            self._auth_timer = loop.call_later(opts.auth_timeout, self._auth_timeout)
        self._ping_timer = loop.call_later(opts.ping_interval, self._ping_timer_fired)

    async def _start_tls(self, ssl_context: ssl.SSLContext, info: bytes) -> None:
        """TLS as nats-server does it: INFO in the clear, then the client's handshake; with
        ``allow_non_tls`` a client that does not start a handshake stays in the clear.
        (``handshake_first`` connections arrive with TLS done: the listener does it.)"""
        server = self.server
        tls = server.options.tls
        timeout = tls.timeout if tls is not None else 2.0
        transport = self.transport
        if transport is None or self.closed:
            return
        transport.pause_reading()
        transport.write(info)
        if server.options.allow_non_tls and not await self._client_starts_tls(timeout):
            if not self.closed:
                self.tls_pending = False
                transport.resume_reading()
                if self.out:
                    self.flush_out()
            return
        try:
            upgraded = await server.loop.start_tls(
                self.transport,  # type: ignore[arg-type]
                self,
                ssl_context,
                server_side=True,
                ssl_handshake_timeout=timeout,
            )
        except Exception as exc:  # handshake failure or timeout: nats-server closes without -ERR
            if not self.closed:
                self.log(logging.ERROR, f"TLS handshake error: {exc or type(exc).__name__}")
                self.abort(ClosedReason.TLS_HANDSHAKE)
            return
        if self.closed or upgraded is None:
            if upgraded is not None:
                upgraded.abort()
            return
        self.transport = upgraded
        if not self._check_peer_certificate(upgraded):
            return
        self.tls_pending = False
        self._set_write_limits()
        if self.out:
            self.flush_out()

    async def _client_starts_tls(self, timeout: float) -> bool:
        """``allow_non_tls``: whether the client's first byte opens a TLS record (0x16), peeked
        on a duplicate of the socket so the TLS layer or the parser still reads it."""

        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return False
        loop = self.server.loop
        dup = socket.socket(fileno=os.dup(sock.fileno()))
        dup.setblocking(False)
        ready: asyncio.Future[None] = loop.create_future()

        def readable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_reader(dup.fileno(), readable)
        try:
            await asyncio.wait_for(ready, timeout)
            first = dup.recv(1, socket.MSG_PEEK)
        except (TimeoutError, OSError):
            return False
        finally:
            loop.remove_reader(dup.fileno())
            dup.close()
        return first == b"\x16"

    def _check_peer_certificate(self, transport: Any) -> bool:
        """Keep the verified client certificate (``verify_and_map``) and enforce pinned_certs."""
        tls = self.server.options.tls
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or tls is None:
            return True
        self.peercert = ssl_object.getpeercert() or None
        if tls.pinned_certs:

            der = ssl_object.getpeercert(binary_form=True)
            if der is None or spki_sha256(der) not in tls.pinned_certs:
                self.log(logging.ERROR, "TLS handshake error: peer certificate does not match a pinned cert")
                self.abort(ClosedReason.TLS_HANDSHAKE)
                return False
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if not self.closed:
            self.closed = True
            self.close_reason = ClosedReason.READ_ERROR if exc else ClosedReason.CLIENT_CLOSED
        self._cleanup()
        self.server.connection_gone(self)

    def _set_write_limits(self) -> None:
        # Above this the transport calls pause_writing(): the consumer is falling behind and
        # producers publishing to it are stalled (nats-server: 3/4 of max_pending).
        high = max(self.max_pending * 3 // 4, 64 * 1024)
        if self.transport is not None:
            self.transport.set_write_buffer_limits(high=high, low=high // 2)

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
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
        # Publishes needing per-message checks (trace, before CONNECT, verbose, pedantic) take
        # _slow_pub; the common case is two length reads and the route call.
        slow = self.trace or self.checked_pubs
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
                        if not self._traced_pub(subject, reply, hdr, payload, slow):
                            if self.closed:
                                return
                            continue
                    else:
                        if (slow or (hdr is not None and not self.headers)) and not self._slow_pub(
                            Pub(subject, reply, hdr, payload)
                        ):
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
                    if slow or (not self.headers and any(h is not None for h in ev.hdrs)):
                        # per message after all (a second CONNECT turned checks on; headers refused)
                        events[i - 1 : i] = list(zip(ev.subjects, ev.replies, ev.hdrs, ev.payloads, strict=True))
                        i -= 1
                        continue
                    payloads = ev.payloads
                    n = len(payloads)
                    done = self.server.route_msgs(ev.subjects, ev.replies, ev.hdrs, payloads, self)
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
                    slow = self.trace or self.checked_pubs
                    continue
                if not self._process_other(ev, cls):
                    return
        finally:
            self.in_msgs += n_msgs
            self.in_bytes += n_bytes

    def _slow_pub(self, ev: Pub) -> bool:
        """PUB checks off the fast path; False when the message must not be routed."""
        if self.trace:
            self._trace_pub(ev)
        if ev.hdr is not None and not self.headers:
            self.log(logging.ERROR, "message headers not supported")
            self.close(ClosedReason.HEADER_VIOLATION)
            return False
        return not self.checked_pubs or self._check_pub(ev)

    def _traced_pub(self, subject: str, reply: str, hdr: bytes, payload: bytes, slow: bool) -> bool:
        """A publish that may be traced (`pyjetstream.server.msgtrace`): the trace starts
        before the publish checks (nats-server ``initMsgTrace`` in the parser), so that a
        refused publish is reported as the ingress error; the event goes out once it is routed.
        False when the message was not routed."""
        skip, trace = msgtrace.start(self, subject, hdr, len(hdr) + len(payload))
        if skip:
            return False
        if trace is None:
            if (slow or not self.headers) and not self._slow_pub(Pub(subject, reply, hdr, payload)):
                return False
            self.server.route(subject, reply, hdr, payload, self)
            return True
        if (slow or not self.headers) and not self._slow_pub(Pub(subject, reply, hdr, payload)):
            if not self.closed:  # still open: the publish permissions refused it
                trace.ingress_error(f'Permissions Violation for Publish to "{subject}"')
                trace.send()
            return False
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

    def _check_pub(self, ev: Pub) -> bool:
        """The slow path for PUB: before CONNECT, pedantic subject check, verbose +OK."""
        if self._before_connect_denied():
            return False
        if self.pedantic and not is_valid_publish_subject(ev.subject):
            self.enqueue(ERR_INVALID_PUB_SUBJECT)
        perms = self.perms
        if perms is not None and perms.restricts_publish and not perms.can_publish(ev.subject):
            self.publish_violation(ev.subject)
            return False
        if self.verbose:
            self.enqueue(OK)
        return True

    def _trace_pub(self, ev: Pub) -> None:
        if ev.hdr is None:
            self.log(TRACE, f"<<- [PUB {ev.subject} {ev.reply} {len(ev.payload)}]")
        else:
            total = len(ev.hdr) + len(ev.payload)
            self.log(TRACE, f"<<- [HPUB {ev.subject} {ev.reply} {len(ev.hdr)} {total}]")
        limit = self.server.options.max_traced_msg_len
        body = (ev.hdr or b"") + ev.payload
        if limit and len(body) > limit:
            body = body[:limit]
        self.log(TRACE, f"<<- MSG_PAYLOAD: [{body!r}]")

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
            others = sum(
                1 for c in self.server.clients.values() if c is not self and c.account is self.account and c.connected
            )
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
        self.deliver_filter = perms if perms is not None and perms.filters_delivery else None

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
        self.echo = bool(o.get("echo", True))
        self.headers = bool(o.get("headers", False)) and not self.server.options.no_header_support
        self.no_responders = bool(o.get("no_responders", False))
        self.name = str(o.get("name", ""))
        self.lang = str(o.get("lang", ""))
        self.version = str(o.get("version", ""))
        if self.no_responders and not self.headers:
            self.send_err_and_close(ERR_NO_RESPONDERS_HEADERS, ClosedReason.NO_RESPONDERS_HEADERS)
            return
        if not self.connected:
            self._set_first_ping_timer()
        self.connected = True
        perms = self.perms
        self.checked_pubs = self.verbose or self.pedantic or (perms is not None and perms.restricts_publish)
        self.parser.pub_runs = not (self.checked_pubs or self.trace) and self.server.options.runs
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if self.verbose:
            self.enqueue(OK)

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
        sub = Subscription(ev.subject, sid, ev.queue, client=self)
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
        """Queue bytes for this connection; they go out at the end of this loop turn."""
        if self.closed:
            return
        self.out.append(data)
        self._queued(len(data), None)

    def deliver(
        self,
        sub: Subscription,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        producer: ClientConnection | None,
        shown: str | None = None,
    ) -> bool:
        """Frame one routed message for ``sub`` into this connection's output (nats-server
        ``client.deliverMsg``); False when this connection does not take it (no echo, permissions).

        ``shown`` is the subject the MSG line names when it is not the routed one (a stored
        message delivered to a consumer's inbox). The frame is appended as parts (see
        `pyjetstream.protocol.writers`); a literal subscription's reply-less MSG line is cached.
        Auto-unsubscribe (``UNSUB <sid> <max>``) takes effect here, as do the slow-consumer check and
        the producer stall (`_queued`).
        """
        if producer is self and not self.echo:
            return False
        deliver_filter = self.deliver_filter
        if deliver_filter is not None and not deliver_filter.deliver_allowed(
            shown or subject, reply, sub.queue or ""
        ):
            return False
        sub.delivered += 1
        if sub.max_msgs and sub.delivered >= sub.max_msgs:
            self.remove_sub(sub)  # auto-unsubscribe: this is the last message it gets
        out = self.out
        if hdr is None or not self.headers:
            size = len(payload)
            if shown is not None or not sub.literal:
                if not shown:  # a wildcard subscription: mostly a new subject each time
                    prefix = msg_prefix(subject.encode(), sub.sid_b)
                elif sub is self._shown_sub and shown == self._shown:
                    # A consumer's deliveries name the same few stream subjects over and over:
                    # the last one's MSG prefix is kept.
                    prefix = self._shown_prefix
                else:
                    prefix = self._shown_prefix = msg_prefix(shown.encode(), sub.sid_b)
                    self._shown_sub, self._shown = sub, shown
                n = append_msg(out, prefix, reply.encode() if reply else b"", payload)
            elif reply:
                n = append_msg(out, sub.msg_prefix, reply.encode(), payload)
            else:
                if size == sub.msg_line_size:
                    line = sub.msg_line
                else:
                    line = sub.msg_line = b"%b%d\r\n" % (sub.msg_prefix, size)
                    sub.msg_line_size = size
                out.append(line)
                out.append(payload)
                out.append(CRLF)
                n = len(line) + size + 2
        else:
            size = len(hdr) + len(payload)
            if shown is not None or not sub.literal:
                prefix = hmsg_prefix((shown or subject).encode(), sub.sid_b)
            else:
                prefix = sub.hmsg_prefix
            n = append_hmsg(out, prefix, reply.encode() if reply else b"", hdr, payload)
        if self.trace:
            self._trace_msg(sub, shown or subject, reply, hdr, size)
        self.out_msgs += 1
        self.out_bytes += size
        self._queued(n, producer)
        return True

    def takes_frames(self, sub: Subscription) -> bool:
        """Whether a server-side sender (a consumer's delivery pass) may frame messages for ``sub``
        straight into `out` with `pyjetstream.protocol.writers` and account for them
        in runs (`frames_queued`): true when `deliver` would check nothing per message
        for it — no deliver permissions, no trace, no auto-unsubscribe — on an open connection."""
        return self.deliver_filter is None and not self.trace and not sub.max_msgs and not self.closed

    def frames_room(self) -> int:
        """Bytes that may be framed into `out` before `_queued` would write early."""
        return self.pending_limit - self.out_size

    def frames_queued(self, sub: Subscription, msgs: int, msg_bytes: int, size: int) -> None:
        """``msgs`` frames for ``sub`` (``msg_bytes`` of headers and payloads, ``size`` bytes in
        all) were appended to `out` (see `takes_frames`): count them as
        `deliver` does, and schedule, write early or cut as `_queued` does."""
        sub.delivered += msgs
        self.out_msgs += msgs
        self.out_bytes += msg_bytes
        self._queued(size, None)

    def frame_msgs(
        self,
        items: list[Any],
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
    ) -> None:
        """Frame a run's deliveries to this connection (``Server.route_msgs``): ``items`` is
        ``[room, sub, i, sub, i, ...]``, message ``i`` of the run for ``sub`` (``sub`` None:
        ``i`` is a frame of bytes, a no-responders answer), in delivery order. Each message is
        framed and counted as `deliver` frames and counts it — the router has already
        made `deliver`'s per-delivery decisions (echo, permissions, the delivered count) —
        and the flush is scheduled; the pending-limit and stall checks are the router's to ask
        for (`frames_checked`), where per-message delivery would make them."""
        if self.closed:
            return
        out = self.out
        append = out.append
        headers = self.headers
        trace = self.trace
        size = data = msgs = 0
        for k in range(1, len(items), 2):
            sub = items[k]
            i = items[k + 1]
            if sub is None:
                append(i)
                size += len(i)
                continue
            payload = payloads[i]
            hdr = hdrs[i]
            reply = replies[i]
            if hdr is None or not headers:
                plen = len(payload)
                if not sub.literal:
                    size += append_msg(out, msg_prefix(subjects[i].encode(), sub.sid_b), reply.encode(), payload)
                elif reply:
                    size += append_msg(out, sub.msg_prefix, reply.encode(), payload)
                else:
                    if plen == sub.msg_line_size:
                        line = sub.msg_line
                    else:
                        line = sub.msg_line = b"%b%d\r\n" % (sub.msg_prefix, plen)
                        sub.msg_line_size = plen
                    append(line)
                    append(payload)
                    append(CRLF)
                    size += len(line) + plen + 2
            else:
                plen = len(hdr) + len(payload)
                prefix = sub.hmsg_prefix if sub.literal else hmsg_prefix(subjects[i].encode(), sub.sid_b)
                size += append_hmsg(out, prefix, reply.encode(), hdr, payload)
            data += plen
            msgs += 1
            if trace:
                self._trace_msg(sub, subjects[i], reply, hdr, plen)
        self.out_msgs += msgs
        self.out_bytes += data
        self.out_size += size
        self._schedule_flush()

    def frames_checked(self, producer: ClientConnection | None) -> None:
        """`_queued`'s checks after `frame_msgs`: write early and cut a slow consumer
        past the pending limit, stall ``producer`` while this transport is above its high-water
        mark."""
        if self.out_size > self.pending_limit:
            self.overflow()
        if self.write_paused and producer is not None:
            producer.stall(self)

    def may_stall(self, consumer: ClientConnection) -> bool:
        """Whether `stall` would stall this producer for ``consumer`` now."""
        return (
            not self.stalled
            and not self.closed
            and consumer is not self
            and self.transport is not None
            and self.stall_total < STALL_TOTAL
        )

    def _schedule_flush(self) -> None:
        """Write `out` when the client read being processed is done (``Server.end_read``,
        nats-server ``flushClients``), outside a read at the end of this loop turn — once either
        way. The run deliveries call it once per run; `_queued`, once per message, keeps
        the same lines inline."""
        if not self.dirty:
            self.dirty = True
            pcd = self.server.pcd
            if pcd is None:
                self._loop.call_soon(self.flush_out)
            else:  # a read is being processed: written when it is done (Server.end_read)
                pcd.append(self)

    def _trace_msg(self, sub: Subscription, subject: str, reply: str, hdr: bytes | None, size: int) -> None:
        args = f"{subject} {sub.sid} {reply + ' ' if reply else ''}"
        if hdr is None or not self.headers:
            self.log(TRACE, f"->> [MSG {args}{size}]")
        else:
            self.log(TRACE, f"->> [HMSG {args}{len(hdr)} {size}]")

    def _queued(self, n: int, producer: ClientConnection | None) -> None:
        """``n`` more bytes are in ``out``: schedule the flush (once per loop turn), write early and
        cut a slow consumer past the pending limit (`overflow`), and stall a producer while
        this connection's transport is above its high-water mark (`stall`)."""
        self.out_size += n
        if not self.dirty:
            self.dirty = True
            pcd = self.server.pcd
            if pcd is None:
                self._loop.call_soon(self.flush_out)
            else:  # a read is being processed: written when it is done (Server.end_read)
                pcd.append(self)
        if self.out_size > self.pending_limit:
            self.overflow()
        if self.write_paused and producer is not None:
            producer.stall(self)

    def flush_out(self) -> None:
        self.dirty = False
        out = self.out
        transport = self.transport
        if not out or self.closed or transport is None or self.tls_pending:
            return
        data = out[0] if len(out) == 1 else b"".join(out)
        self.out = []
        self.out_size = 0
        transport.write(data)
        self.written += len(data)
        self.last_activity = time.monotonic()
        buffered = transport.get_write_buffer_size()
        self.pending_limit = min(self.max_pending - buffered, self.early_flush)
        if buffered and self._write_deadline_timer is None:
            self._start_write_deadline()

    def pending_bytes(self) -> int:
        buffered = self.transport.get_write_buffer_size() if self.transport and not self.closed else 0
        return self.out_size + buffered

    def overflow(self) -> None:
        """``out_size`` passed ``pending_limit``: write now, and cut a slow consumer.

        Writing early keeps one loop turn's output bounded; what the socket does not take stays
        in the transport, and when that passes max_pending the client is a slow consumer.
        """
        if self.closed or self.transport is None:
            return
        self.flush_out()
        if self.transport.get_write_buffer_size() <= self.max_pending:
            return
        self.server.slow_consumers += 1
        self.account.slow_consumers += 1
        self.log(logging.INFO, f"Slow Consumer Detected: MaxPending of {self.max_pending} Exceeded")
        # nats-server marks a slow consumer closed without flushing pending data or an -ERR.
        self.abort(ClosedReason.SLOW_CONSUMER_PENDING)

    def _start_write_deadline(self) -> None:
        """The socket did not take all we wrote: what is written so far must be out within
        write_deadline (nats-server sets the deadline on each write of ``flushOutbound``; a write
        the socket has not finished by then cuts the client, whatever max_pending allows)."""
        self._write_deadline_mark = self.written
        self._write_deadline_timer = self.server.loop.call_later(
            self.server.options.write_deadline, self._write_deadline_check
        )

    def _write_deadline_check(self) -> None:
        self._write_deadline_timer = None
        if self.closed or self.transport is None:
            return
        buffered = self.transport.get_write_buffer_size()
        if not buffered:
            return
        if self.written - buffered >= self._write_deadline_mark:
            # That write finished in time; what was written since gets its own deadline.
            self._start_write_deadline()
            return
        self.server.slow_consumers += 1
        self.account.slow_consumers += 1
        deadline = format_go_duration(int(self.server.options.write_deadline * 1e9))
        self.log(
            logging.INFO,
            f"Slow Consumer Detected: WriteDeadline of {deadline} exceeded with 1 chunks of {buffered} total bytes.",
        )
        self.abort(ClosedReason.SLOW_CONSUMER_DEADLINE)

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
        self.closed = True
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
            self._write_deadline_timer,
            self._stall_timer,
            self._expiry_timer,
        ):
            if timer is not None:
                timer.cancel()
        self._ping_timer = self._auth_timer = self._write_deadline_timer = self._stall_timer = None
        self._expiry_timer = None
        if self._tls_task is not None and not self._tls_task.done():
            self._tls_task.cancel()
        self.out = []
        self.out_size = 0
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


def _redact(options: dict[str, Any]) -> str:

    shown = {k: ("[REDACTED]" if k in ("pass", "auth_token", "sig") else v) for k, v in options.items()}
    return json.dumps(shown)
