"""The core NATS client: one connection, publish/subscribe/request, flush, drain, reconnect.

Ordering is the point of this module. Every byte we send — PUB, SUB, UNSUB, PING — goes through one
write buffer (``_wbuf``) in call order, and the buffer goes to the socket in order. So ``flush()``'s
PING is on the wire after every SUB and PUB issued before it, and its PONG (the server answers PINGs
in order) proves the server processed them all. (nats-py writes its flush PING ahead of still-buffered
SUBs; a subscriber could then miss messages published right after ``subscribe(); flush()``.)

Write coalescing: writes append to ``_wbuf``. The first publish of an event-loop turn goes to the
socket at once (request/reply latency); what follows in the same turn accumulates and one ``call_soon``
callback hands it over at the end of the turn, or as soon as it reaches ``WRITE_CHUNK`` — so a burst of
publishes becomes a few large writes. When the transport's own buffer passes its high-water mark,
``await publish()`` waits for it to drain.

While disconnected, publishes stay in ``_wbuf`` (up to ``pending_size``); SUB/UNSUB are not buffered
but rebuilt from the subscription table on reconnect: CONNECT, then every SUB (with the remaining
auto-unsubscribe count), then the buffered publishes, then one PING per ``flush()`` still waiting.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import enum
import inspect
import logging
import re
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, cast

from pyjetstream.api.durations import Duration, seconds, seconds_or_none
from pyjetstream.client.errors import (
    AuthorizationError,
    BadSubjectError,
    BadSubscriptionError,
    ConnectionClosedError,
    ConnectionDrainingError,
    DrainTimeoutError,
    MaxPayloadError,
    NatsError,
    NoServersError,
    OutboundBufferLimitError,
    ProtocolError,
    StaleConnectionError,
    TimeoutError,
    why_not_connected,
)
from pyjetstream.client.handshake import Handshake, connect_fields, wants_tls
from pyjetstream.client.inbox import NUID
from pyjetstream.client.msg import BLOCK_END, BLOCK_START, HeadersArg, Msg, encode_user_headers
from pyjetstream.client.options import (
    DEFAULT_PENDING_SIZE,
    DEFAULT_SUB_PENDING_BYTES_LIMIT,
    DEFAULT_SUB_PENDING_MSGS_LIMIT,
    DEFAULT_URL,
    ClientOptions,
    ErrorCallback,
    EventCallback,
    ServerAddress,
    ServerPool,
    split_servers,
)
from pyjetstream.client.reconnect import ReconnectPolicy
from pyjetstream.client.request_mux import RequestMux, expire
from pyjetstream.client.server_errors import error_from_server, server_keeps_connection
from pyjetstream.client.sub_table import SubscriptionTable
from pyjetstream.client.subscription import FramesCallback, MsgCallback, RunsCallback, Subscription
from pyjetstream.client.transport import WireProtocol
from pyjetstream.protocol import (
    MAX_PAYLOAD,
    PING,
    PONG,
    ClientSideParser,
    Err,
    FrameRun,
    Info,
    MsgRun,
    Ok,
    Ping,
    Pong,
    ProtocolViolation,
    encode_connect,
    encode_sub,
    encode_unsub,
)
from pyjetstream.protocol import Msg as WireMsg
from pyjetstream.protocol.parser import FrameScan
from pyjetstream.protocol.subjects import is_valid_subject
from pyjetstream.protocol.writers import append_hpub, append_pub, append_requests, hpub_line, pub_line

logger = logging.getLogger("pyjetstream.client")

# Hand the buffer to the transport right away once a burst reaches this size (else once per loop turn).
WRITE_CHUNK = 64 * 1024
# Subjects already validated; bounded so that unique subjects (inboxes) cannot grow it forever.
_SUBJECT_CACHE_MAX = 4096
_WHITESPACE = re.compile(r"\s")


class Status(enum.IntEnum):
    DISCONNECTED = 0
    CONNECTING = 1
    CONNECTED = 2
    RECONNECTING = 3
    DRAINING_SUBS = 4
    DRAINING_PUBS = 5
    CLOSED = 6


def _check_subject(subject: str, *, wildcards: bool) -> None:
    if not subject or _WHITESPACE.search(subject):
        raise BadSubjectError(f"invalid subject {subject!r}")
    if wildcards and not is_valid_subject(subject):
        raise BadSubjectError(f"invalid subject {subject!r}")


class Client:
    """A NATS connection. Create it with ``await pyjetstream.client.connect(...)``."""

    def __init__(self, options: ClientOptions) -> None:
        self._opts = options
        self._pool = ServerPool(options.servers, randomize=not options.dont_randomize)
        self._status = Status.DISCONNECTED
        self._loop: asyncio.AbstractEventLoop | None = None
        self._proto: WireProtocol | None = None
        # The transport user writes go to: set only once the handshake completed (None while reconnecting).
        self._transport: asyncio.Transport | None = None
        self._parser = ClientSideParser()
        self._frame_sids: set[int] = set()  # subscriptions read as raw frames (subscribe_frames)
        self._parser.frame_sids = self._frame_sids
        self._msg_run_sids: set[int] = set()  # subscriptions read in runs (subscribe_runs)
        self._parser.msg_run_sids = self._msg_run_sids
        self._frame_scan: FrameScan | None = None  # their run finder (subscribe_frames' ``scan``)
        self._hs: Handshake | None = None
        self._server_info: dict[str, Any] = {}
        self._max_payload = MAX_PAYLOAD
        self._wbuf = bytearray()
        self._flush_scheduled = False
        self._write_paused = False
        self._writable: asyncio.Future[None] | None = None
        self._pongs: deque[asyncio.Future[None] | None] = deque()
        self._pings_outstanding = 0
        self._ping_timer: asyncio.TimerHandle | None = None
        self._subs = SubscriptionTable()
        self._valid_subjects: dict[str, bytes] = {}
        self._nuid = NUID()
        self._requests = RequestMux(self)
        self._reconnect_policy = ReconnectPolicy(options, self._pool)
        self._fatal_error: NatsError | None = None
        self._reconnect_task: asyncio.Task[None] | None = None
        self._closing: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Future[Any]] = set()
        self._last_error: Exception | None = None
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0
        self.reconnects = 0
        self.errors_received = 0

    # ===================================================================== properties

    @property
    def is_connected(self) -> bool:
        return self._transport is not None and self._status in (
            Status.CONNECTED,
            Status.DRAINING_SUBS,
            Status.DRAINING_PUBS,
        )

    @property
    def is_closed(self) -> bool:
        return self._status is Status.CLOSED

    @property
    def is_reconnecting(self) -> bool:
        return self._status is Status.RECONNECTING

    @property
    def is_draining(self) -> bool:
        return self._status in (Status.DRAINING_SUBS, Status.DRAINING_PUBS)

    @property
    def status(self) -> Status:
        return self._status

    @property
    def connected_url(self) -> str | None:
        current = self._pool.current
        return current.url if current is not None and self.is_connected else None

    @property
    def servers(self) -> list[str]:
        """Every URL in the server pool, discovered ones included."""
        return [s.url for s in self._pool]

    @property
    def discovered_servers(self) -> list[str]:
        return [s.url for s in self._pool if s.implicit]

    @property
    def server_info(self) -> dict[str, Any]:
        """The latest INFO from the server (a copy)."""
        return dict(self._server_info)

    @property
    def max_payload(self) -> int:
        return self._max_payload

    @property
    def client_id(self) -> int | None:
        return self._server_info.get("client_id")

    @property
    def last_error(self) -> Exception | None:
        return self._last_error

    @property
    def stats(self) -> dict[str, int]:
        return {
            "in_msgs": self.in_msgs,
            "out_msgs": self.out_msgs,
            "in_bytes": self.in_bytes,
            "out_bytes": self.out_bytes,
            "reconnects": self.reconnects,
            "errors_received": self.errors_received,
        }

    @property
    def pending_data_size(self) -> int:
        """Bytes buffered by the client and not yet handed to the socket."""
        return len(self._wbuf)

    @property
    def options(self) -> ClientOptions:
        return self._opts

    def new_inbox(self) -> str:
        """A unique subject under ``inbox_prefix``, for replies."""
        return f"{self._opts.inbox_prefix}.{self._nuid.next()}"

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ===================================================================== publish

    def publish_nowait(
        self,
        subject: str,
        payload: bytes = b"",
        *,
        reply: str = "",
        headers: HeadersArg | None = None,
    ) -> None:
        """Buffer a publish without awaiting: the synchronous core of ``publish``.

        For bulk producers (the JetStream layer): it never waits for socket buffer space, so call
        ``await client.wait_writable()`` (or ``flush()``) now and then to bound memory.
        """
        status = self._status
        if status >= Status.DRAINING_PUBS:
            if status is Status.CLOSED:
                raise ConnectionClosedError("connection closed")
            raise ConnectionDrainingError("connection is draining: publishing is over")
        subj = self._valid_subjects.get(subject)
        if subj is None:
            subj = self._remember_subject(subject)
        if reply:
            if _WHITESPACE.search(reply):
                raise BadSubjectError(f"invalid reply subject {reply!r}")
            reply_b = reply.encode()
        else:
            reply_b = b""
        if type(payload) is not bytes:
            # Before anything is buffered: a failure halfway through would corrupt the stream.
            payload = memoryview(payload).tobytes()
        size = len(payload)
        if headers is None:
            if size > self._max_payload:
                raise MaxPayloadError(f"payload of {size} bytes exceeds max_payload {self._max_payload}")
            head = pub_line(subj, reply_b, size)
            hdr = b""
        else:
            hdr = encode_user_headers(headers)
            total = len(hdr) + size
            if total > self._max_payload:
                raise MaxPayloadError(
                    f"headers + payload of {total} bytes exceed max_payload {self._max_payload}"
                )
            head = hpub_line(subj, reply_b, len(hdr), total)
        buf = self._wbuf
        if self._transport is None and len(buf) + len(head) + len(hdr) + size > self._opts.pending_size:
            raise OutboundBufferLimitError(
                f"reconnect buffer full ({len(buf)} of {self._opts.pending_size} bytes)"
            )
        # The control line comes from protocol/writers (the one PUB/HPUB framing); appending the
        # parts to the bytearray copies the payload once, where a join would copy it twice.
        buf += head
        if hdr:
            buf += hdr
        buf += payload
        buf += b"\r\n"
        self.out_msgs += 1
        self.out_bytes += size
        if self._transport is not None:
            if len(buf) >= WRITE_CHUNK:
                self._flush_writes()
            elif not self._flush_scheduled:
                # First write of this loop turn goes out now (latency); later ones coalesce until
                # the end of the turn (throughput).
                self._flush_scheduled = True
                buf = self._wbuf
                self._wbuf = bytearray()
                self._transport.write(buf)
                self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    def publish_requests_nowait(
        self,
        messages: Sequence[tuple[str, bytes, HeadersArg | None]],
        reply_prefix: str,
        reply_ids: Sequence[int],
        reply_suffix: str = "",
    ) -> None:
        """Buffer a run of publishes, message *i* with the reply ``<reply_prefix><reply_ids[i]><reply_suffix>``:
        [`publish_nowait`][] of each, checked first and framed in one pass (one write, no reply
        string per message) — for a bulk producer that numbers its requests, such as the Spark
        sink's pipelined JetStream publishes (one wildcard subscription takes every reply).

        All or nothing: an invalid subject, header block or size raises before anything is
        buffered.
        """
        self._check_publishing()
        if _WHITESPACE.search(reply_prefix) or _WHITESPACE.search(reply_suffix):
            raise BadSubjectError(f"invalid reply subject {reply_prefix + '<n>' + reply_suffix!r}")
        subjects, hdrs, payloads, size = self._checked_run(messages)
        frames: list[bytes] = []
        length = append_requests(
            frames, subjects, reply_prefix.encode(), reply_ids, hdrs, payloads, reply_suffix.encode()
        )
        self._buffer_run(frames, length, len(payloads), size)

    def publish_many_nowait(self, messages: Sequence[tuple[str, bytes, HeadersArg | None]]) -> None:
        """Buffer a run of publishes without replies: [`publish_nowait`][] of each, checked first
        and buffered with one write (all or nothing) — for a bulk producer such as the staged
        messages of an atomic batch."""
        self._check_publishing()
        subjects, hdrs, payloads, size = self._checked_run(messages)
        frames: list[bytes] = []
        length = 0
        for subj, hdr, payload in zip(subjects, hdrs, payloads, strict=True):
            if hdr is None:
                length += append_pub(frames, subj, b"", payload)
            else:
                length += append_hpub(frames, subj, b"", hdr, payload)
        self._buffer_run(frames, length, len(payloads), size)

    def _check_publishing(self) -> None:
        status = self._status
        if status >= Status.DRAINING_PUBS:
            if status is Status.CLOSED:
                raise ConnectionClosedError("connection closed")
            raise ConnectionDrainingError("connection is draining: publishing is over")

    def _checked_run(
        self, messages: Sequence[tuple[str, bytes, HeadersArg | None]]
    ) -> tuple[list[bytes], list[bytes | None], list[bytes], int]:
        """Each message checked as [`publish_nowait`][] checks it: the encoded subjects, header
        blocks and payloads, and the payloads' total size."""
        valid = self._valid_subjects
        max_payload = self._max_payload
        subjects: list[bytes] = []
        hdrs: list[bytes | None] = []
        payloads: list[bytes] = []
        size = 0
        for subject, payload, headers in messages:
            subj = valid.get(subject)
            if subj is None:
                subj = self._remember_subject(subject)
            subjects.append(subj)
            if type(payload) is not bytes:
                payload = memoryview(payload).tobytes()
            payloads.append(payload)
            n = len(payload)
            size += n
            if headers is None:
                hdrs.append(None)
                if n > max_payload:
                    raise MaxPayloadError(f"payload of {n} bytes exceeds max_payload {max_payload}")
            else:
                if type(headers) is not bytes or not (
                    headers.startswith(BLOCK_START) and headers.endswith(BLOCK_END)
                ):
                    headers = encode_user_headers(headers)  # (raises for bytes that are not a block)
                hdrs.append(headers)
                if len(headers) + n > max_payload:
                    raise MaxPayloadError(
                        f"headers + payload of {len(headers) + n} bytes exceed max_payload {max_payload}"
                    )
        return subjects, hdrs, payloads, size

    def _buffer_run(self, frames: list[bytes], length: int, count: int, size: int) -> None:
        """Buffer a run's frames (``length`` bytes, ``count`` messages, ``size`` payload bytes) as
        [`publish_nowait`][] buffers one: the reconnect buffer's limit, then a write."""
        buf = self._wbuf
        if self._transport is None and len(buf) + length > self._opts.pending_size:
            raise OutboundBufferLimitError(
                f"reconnect buffer full ({len(buf)} of {self._opts.pending_size} bytes)"
            )
        buf += b"".join(frames)
        self.out_msgs += count
        self.out_bytes += size
        if self._transport is not None:
            if len(buf) >= WRITE_CHUNK:
                self._flush_writes()
            elif not self._flush_scheduled:
                self._flush_scheduled = True
                self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    async def publish(
        self,
        subject: str,
        payload: bytes = b"",
        *,
        reply: str = "",
        headers: HeadersArg | None = None,
    ) -> None:
        """Publish ``payload`` to ``subject``. Returns once buffered (``flush()`` to wait for the server).

        ``headers``: a mapping of name to a ``str`` or a list of ``str`` (repeated header), or a HeaderBlock.
        """
        self.publish_nowait(subject, payload, reply=reply, headers=headers)
        if self._write_paused:
            await self.wait_writable()

    async def wait_writable(self) -> None:
        """Wait until the socket's write buffer is below its low-water mark (no-op when it is)."""
        while self._write_paused and self._transport is not None:
            if self._writable is None or self._writable.done():
                self._writable = self._loop.create_future()  # type: ignore[union-attr]
            await asyncio.shield(self._writable)

    def _remember_subject(self, subject: str) -> bytes:
        """Validate ``subject`` once and cache its encoded form for the PUB lines that follow."""
        _check_subject(subject, wildcards=False)
        if len(self._valid_subjects) >= _SUBJECT_CACHE_MAX:
            self._valid_subjects.clear()
        encoded = subject.encode()
        self._valid_subjects[subject] = encoded
        return encoded

    # ===================================================================== subscribe

    async def subscribe(
        self,
        subject: str,
        queue: str = "",
        cb: MsgCallback | None = None,
        *,
        max_msgs: int = 0,
        pending_msgs_limit: int = DEFAULT_SUB_PENDING_MSGS_LIMIT,
        pending_bytes_limit: int = DEFAULT_SUB_PENDING_BYTES_LIMIT,
    ) -> Subscription:
        """Subscribe to ``subject`` (wildcards allowed), optionally in ``queue`` group.

        With ``cb`` (plain or ``async`` function) messages go to it; without, iterate ``sub.messages``
        or call ``sub.next_msg()``. ``max_msgs`` > 0 auto-unsubscribes after that many messages.
        The SUB is buffered like a publish: ``await flush()`` to know the server has it.
        """
        self._check_can_subscribe()
        _check_subject(subject, wildcards=True)
        if queue and _WHITESPACE.search(queue):
            raise BadSubjectError(f"invalid queue group {queue!r}")
        return self._add_subscription(subject, queue, cb, max_msgs, pending_msgs_limit, pending_bytes_limit)

    async def subscribe_frames(
        self,
        subject: str,
        cb: FramesCallback,
        scan: FrameScan | None = None,
        on_msg: MsgCallback | None = None,
    ) -> Subscription:
        """Subscribe with a raw-frame callback, for bulk readers: the messages of ``subject`` that
        carry headers come as ``cb(buf, offsets)``, every complete frame of a received chunk in one
        call, where frame *i*'s header block is ``buf[offsets[3i]:offsets[3i+1]]`` and its payload
        ``buf[offsets[3i+1]:offsets[3i+2]]`` — no [`Msg`][] per message. Each frame's control line
        (subject, reply subject) ends right before its header block (`FrameRun`).

        A message that does not come as a frame (one without headers, or a frame the fast parser does
        not take) goes to ``on_msg`` as a [`Msg`][] when given, else to ``cb`` as a run of one
        (header block and payload only: no control line before it).

        ``scan``: a run finder for the parser (`pyjetstream.protocol.frame_scan.hmsg_run`, which
        needs numpy) that finds a chunk's frames with array operations instead of one step per frame;
        ``offsets`` is then a flat numpy array (the same values). It serves every raw-read subscription
        of this connection from then on.
        """

        def one(msg: Msg) -> None:
            hdr = msg.raw_headers or b""
            cb(hdr + msg.data, [0, len(hdr), len(hdr) + len(msg.data)])

        sub = await self.subscribe(subject, cb=on_msg or one)
        sub._frames_cb = cb
        self._frame_sids.add(sub.sid)
        if scan is not None:
            self._frame_scan = self._parser.frame_scan = scan
        return sub

    async def subscribe_runs(self, subject: str, runs_cb: RunsCallback, cb: MsgCallback) -> Subscription:
        """Subscribe reading replies in runs, for a bulk requester (the Spark sink's PubAcks): the
        messages of ``subject`` without headers and without a reply come as ``runs_cb(subjects,
        payloads)``, every complete frame of a received chunk in one call (subjects as bytes) — no
        [`Msg`][] per message; any other message (with headers: a status reply such as 503, or
        one whose payload arrives in a later chunk as a run of one) comes to ``cb``, as with
        [`subscribe`][]."""
        sub = await self.subscribe(subject, cb=cb)
        sub._runs_cb = runs_cb
        self._msg_run_sids.add(sub.sid)
        return sub

    def _check_can_subscribe(self) -> None:
        if self._status is Status.CLOSED:
            raise ConnectionClosedError("connection closed")
        if self.is_draining:
            raise ConnectionDrainingError("connection is draining: no new subscriptions")

    def _add_subscription(
        self,
        subject: str,
        queue: str,
        cb: MsgCallback | None,
        max_msgs: int,
        pending_msgs_limit: int,
        pending_bytes_limit: int,
    ) -> Subscription:
        sid = self._subs.next_sid()
        sub = Subscription(self, sid, subject, queue, cb, max_msgs, pending_msgs_limit, pending_bytes_limit)
        self._subs.add(sub)
        self._send_proto(encode_sub(subject, sid, queue))
        if max_msgs > 0:
            self._send_proto(encode_unsub(sid, max_msgs))
        return sub

    def _unsubscribe(self, sub: Subscription, limit: int) -> None:
        if self._status is Status.CLOSED:
            raise ConnectionClosedError("connection closed")
        if not self._subs.holds(sub):
            if sub.is_closed:
                return
            raise BadSubscriptionError("unknown subscription")
        if limit <= 0 or sub._received >= limit:
            self._frame_sids.discard(sub.sid)
            self._msg_run_sids.discard(sub.sid)
            self._subs.discard(sub)
            self._send_proto(encode_unsub(sub.sid))
            sub._abort()
        else:
            sub._max = limit
            self._send_proto(encode_unsub(sub.sid, limit))

    async def _drain_subscription(self, sub: Subscription) -> None:
        if self._status is Status.CLOSED:
            raise ConnectionClosedError("connection closed")
        timeout = self._opts.drain_timeout
        try:
            async with asyncio.timeout(timeout):
                if self._subs.holds(sub):
                    await self._drain_subs([sub], timeout)
                await sub._wait_drained()
        except builtins.TimeoutError as exc:
            raise DrainTimeoutError(f"subscription drain did not finish within {timeout}s") from exc

    async def _drain_subs(self, subs: list[Subscription], timeout: float) -> None:
        """UNSUB each, PING/PONG so nothing more is in flight for them, then let their queues empty."""
        for sub in subs:
            sub._draining = True
            self._send_proto(encode_unsub(sub.sid))
        try:
            await self.flush(timeout)
        finally:
            for sub in subs:
                self._subs.discard(sub)
                sub._finish()
        await asyncio.gather(*(sub._wait_drained() for sub in subs))

    # ===================================================================== request / reply

    async def request(
        self,
        subject: str,
        payload: bytes = b"",
        timeout: Duration = 2.0,
        headers: HeadersArg | None = None,
    ) -> Msg:
        """Publish a request and wait for the first reply, over the client's one muxed inbox.

        Raises ``NoRespondersError`` when nobody subscribes to ``subject``, ``TimeoutError`` when no
        reply comes within ``timeout`` (seconds or a ``timedelta``).
        """
        if timeout.__class__ is not float:
            timeout = seconds(timeout)
        return await self._requests.request(subject, payload, timeout, headers)

    # ===================================================================== flush / rtt

    async def flush(self, timeout: Duration = 10.0) -> None:
        """Wait until the server has processed everything sent before this call (PING → PONG).

        Called while reconnecting, the PING goes out once the connection is back (after the
        re-sent subscriptions and buffered publishes), still within ``timeout``.
        """
        timeout = seconds(timeout)
        if self._status is Status.CLOSED:
            raise ConnectionClosedError("connection closed")
        fut: asyncio.Future[None] = self._loop.create_future()  # type: ignore[union-attr]
        self._pongs.append(fut)
        if self._transport is not None:
            self._wbuf += PING
            self._flush_writes()
        timer = self._loop.call_later(timeout, expire, fut, f"flush timed out after {timeout}s")  # type: ignore[union-attr]
        try:
            await fut
        finally:
            timer.cancel()

    async def rtt(self, timeout: Duration = 10.0) -> float:
        """Round-trip time to the server in seconds (one PING/PONG)."""
        start = time.perf_counter()
        await self.flush(timeout)
        return time.perf_counter() - start

    # ===================================================================== write path

    def _send_proto(self, data: bytes) -> None:
        """SUB/UNSUB: written only while connected (the reconnect replay rebuilds them otherwise)."""
        if self._transport is None:
            return
        self._wbuf += data
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush_writes)  # type: ignore[union-attr]

    def send_buffered(self) -> None:
        """Hand everything buffered to the socket now instead of at the end of this loop turn."""
        self._flush_writes()

    def _flush_writes(self) -> None:
        self._flush_scheduled = False
        transport = self._transport
        if transport is None or not self._wbuf:
            return
        # Hand the buffer itself over (no copy); the transport owns it from here.
        buf = self._wbuf
        self._wbuf = bytearray()
        transport.write(buf)

    def _pause_writing(self, proto: WireProtocol) -> None:
        if proto is self._proto:
            self._write_paused = True

    def _resume_writing(self, proto: WireProtocol) -> None:
        if proto is self._proto:
            self._set_writable()

    def _set_writable(self) -> None:
        self._write_paused = False
        fut = self._writable
        if fut is not None and not fut.done():
            fut.set_result(None)

    # ===================================================================== read path

    def _data_received(self, proto: WireProtocol, data: bytes) -> None:
        if proto is not self._proto:
            return
        try:
            events = self._parser.feed(data)
            if self._hs is not None:
                for event in events:
                    self._handshake_event(proto, event)
                return
            subs = self._subs.by_sid
            resp_sid = self._requests.sid
            in_msgs = in_bytes = 0
            for event in events:
                if type(event) is WireMsg:
                    sid = event.sid
                    in_msgs += 1
                    in_bytes += len(event.payload)
                    if sid == resp_sid:
                        self._requests.deliver(event)
                        continue
                    sub = subs.get(sid)
                    if sub is None:
                        continue
                    msg = Msg(event.subject, event.payload, event.reply, event.hdr, sid, self, sub)
                    if not sub._deliver(msg):
                        # Reached its auto-unsubscribe count: the server removed it too.
                        if subs.get(sid) is sub:
                            del subs[sid]
                        sub._finish()
                elif type(event) is FrameRun:
                    offsets = event.offsets
                    in_msgs += len(offsets) // 3
                    in_bytes += int(offsets[-1] - offsets[0])
                    sub = subs.get(event.sid)
                    if sub is not None:
                        sub._deliver_frames(event.buf, offsets)
                elif type(event) is MsgRun:
                    run = cast(MsgRun, event)  # (the parser's ServerOp union leaves the run events out)
                    payloads = run.payloads
                    in_msgs += len(payloads)
                    in_bytes += sum(map(len, payloads))
                    sub = subs.get(run.sid)
                    if sub is not None:
                        sub._deliver_msg_run(run.subjects, payloads)
                else:
                    self._control_event(proto, event)
            self.in_msgs += in_msgs
            self.in_bytes += in_bytes
        except Exception as exc:  # never let an exception reach the transport (it would drop the socket)
            logger.exception("error while processing data from the server")
            self._report_error(exc)

    def _control_event(self, proto: WireProtocol, event: object) -> None:
        kind = type(event)
        if kind is Ping:
            self._wbuf += PONG
            self._flush_writes()
        elif kind is Pong:
            # Exactly one entry per PONG: the server answers PINGs in order, and an entry whose
            # flush timed out must still absorb its own PONG (else a later flush returns early).
            self._pings_outstanding = 0
            if self._pongs:
                fut = self._pongs.popleft()
                if fut is not None and not fut.done():
                    fut.set_result(None)
        elif kind is Info:
            self._process_info(event.info, initial=False)  # type: ignore[attr-defined]
        elif kind is Err:
            self._process_err(proto, event.text)  # type: ignore[attr-defined]
        elif kind is ProtocolViolation:
            self._report_error(ProtocolError(f"unparsable data from the server: {event.detail}"))  # type: ignore[attr-defined]
            self._abort(proto)
        elif kind is Ok:
            pass

    def _process_err(self, proto: WireProtocol, text: str) -> None:
        self.errors_received += 1
        exc = error_from_server(text)
        if isinstance(exc, StaleConnectionError):
            self._abort(proto)
            return
        if not server_keeps_connection(text):
            # The server closes the connection after these: close the client rather than reconnect
            # and repeat the offence (nats.go closes on them too).
            self._fatal_error = exc
        self._report_error(exc)

    def _process_info(self, info: dict[str, Any], *, initial: bool) -> None:
        self._server_info = info
        self._max_payload = int(info.get("max_payload") or MAX_PAYLOAD)
        urls = info.get("connect_urls")
        if urls:
            added = self._pool.add_discovered(list(urls), randomize=not self._opts.dont_randomize)
            if added and not initial:
                self._fire(self._opts.discovered_server_cb)

    def _handshake_event(self, proto: WireProtocol, event: object) -> None:
        hs = self._hs
        assert hs is not None
        kind = type(event)
        if kind is Info:
            if not hs.info.done():
                hs.info.set_result(event.info)  # type: ignore[attr-defined]
            else:
                self._process_info(event.info, initial=True)  # type: ignore[attr-defined]
        elif kind is Pong:
            if not hs.pong.done():
                hs.pong.set_result(None)
        elif kind is Ping:
            if proto.transport is not None:
                proto.transport.write(PONG)
        elif kind is Err:
            self.errors_received += 1
            hs.fail(error_from_server(event.text))  # type: ignore[attr-defined]
        elif kind is ProtocolViolation:
            hs.fail(ProtocolError(f"unparsable data from the server: {event.detail}"))  # type: ignore[attr-defined]

    # ===================================================================== connect / handshake

    async def _connect(self) -> None:
        """Initial connect: one pass over the pool."""
        self._loop = asyncio.get_running_loop()
        self._status = Status.CONNECTING
        errors: list[str] = []
        auth_error: AuthorizationError | None = None
        for server in list(self._pool):
            try:
                await self._attempt(server)
            except AuthorizationError as exc:
                auth_error = exc
                errors.append(f"{server.url}: {exc}")
                continue
            except (OSError, NatsError, builtins.TimeoutError, ssl.SSLError) as exc:
                errors.append(f"{server.url}: {why_not_connected(exc)}")
                continue
            self._on_connected(server)
            return
        self._status = Status.CLOSED
        if auth_error is not None:
            raise auth_error
        if len(errors) == 1:
            raise NoServersError(f"could not connect to {errors[0]}")
        raise NoServersError("could not connect to any server: " + "; ".join(errors))

    async def _attempt(self, server: ServerAddress) -> None:
        """Open a connection to ``server`` and complete the handshake (or raise, leaving nothing open)."""
        server.last_attempt = time.monotonic()
        try:
            async with asyncio.timeout(self._opts.connect_timeout):
                await self._open(server)
        except builtins.TimeoutError as exc:
            self._drop_attempt()
            raise TimeoutError(f"timed out after {self._opts.connect_timeout:g}s") from exc
        except BaseException:
            self._drop_attempt()
            raise

    def _drop_attempt(self) -> None:
        proto = self._proto
        self._hs = None
        self._proto = None
        if proto is not None and proto.transport is not None:
            proto.transport.abort()

    async def _open(self, server: ServerAddress) -> None:
        loop = self._loop
        assert loop is not None
        self._parser = ClientSideParser()
        self._parser.frame_sids = self._frame_sids
        self._parser.msg_run_sids = self._msg_run_sids
        self._parser.frame_scan = self._frame_scan
        hs = self._hs = Handshake(loop)
        proto = WireProtocol(self)
        self._proto = proto
        opts = self._opts
        if server.websocket:
            # Deferred: only ws:// and wss:// connections need wsproto.
            from pyjetstream.client.websocket import open_websocket

            # TLS from the first byte for wss://, or for ws:// with a context given (as nats:// + tls=).
            ctx = (opts.tls or ssl.create_default_context()) if server.tls or opts.tls is not None else None
            await open_websocket(loop, proto, server, ctx, opts.tls_hostname)
        else:
            await loop.create_connection(lambda: proto, server.host, server.port)
        info = await hs.info
        self._pool.current = server
        self._process_info(info, initial=True)
        if wants_tls(opts, server, info):
            ctx = opts.tls or ssl.create_default_context()
            assert proto.transport is not None
            transport = await loop.start_tls(
                proto.transport,
                proto,
                ctx,
                server_hostname=opts.tls_hostname or server.host,
                ssl_handshake_timeout=opts.connect_timeout,
            )
            if transport is None:  # pragma: no cover - only when the loop is closing
                raise ConnectionClosedError("TLS upgrade failed")
            proto.connection_made(transport)
        assert proto.transport is not None
        proto.transport.write(encode_connect(connect_fields(opts, server, info)) + PING)
        await hs.pong

    def _on_connected(self, server: ServerAddress) -> None:
        """Handshake done: replay subscriptions, buffered publishes and waiting flushes, in that order."""
        proto = self._proto
        assert proto is not None and proto.transport is not None
        self._hs = None
        self._transport = proto.transport
        self._status = Status.CONNECTED
        self._fatal_error = None
        self._pings_outstanding = 0
        self._write_paused = False
        server.did_connect = True
        server.reconnects = 0
        server.last_auth_error = ""
        self._pool.current = server
        out = self._subs.replay()
        out += self._wbuf
        # Keepalive PINGs of the old connection are moot; flushes still waiting get a fresh PING.
        waiting: deque[asyncio.Future[None] | None] = deque(
            f for f in self._pongs if f is not None and not f.done()
        )
        self._pongs = waiting
        out += PING * len(waiting)
        self._wbuf = bytearray()
        if out:
            self._transport.write(out)
        self._arm_ping_timer()

    # ===================================================================== keepalive

    def _arm_ping_timer(self) -> None:
        if self._ping_timer is not None:
            self._ping_timer.cancel()
        if self._opts.ping_interval > 0:
            self._ping_timer = self._loop.call_later(self._opts.ping_interval, self._ping_tick)  # type: ignore[union-attr]

    def _ping_tick(self) -> None:
        self._ping_timer = None
        if self._transport is None or self._status is Status.CLOSED:
            return
        self._pings_outstanding += 1
        if self._pings_outstanding > self._opts.max_outstanding_pings:
            self._report_error(StaleConnectionError("server did not answer our PINGs"))
            self._abort(self._proto)
            return
        self._pongs.append(None)
        self._wbuf += PING
        self._flush_writes()
        self._arm_ping_timer()

    # ===================================================================== disconnect / reconnect

    def _abort(self, proto: WireProtocol | None) -> None:
        """Drop the socket now; ``connection_lost`` then decides between reconnect and close."""
        if proto is not None and proto.transport is not None:
            proto.transport.abort()

    def _connection_lost(self, proto: WireProtocol, exc: Exception | None) -> None:
        if proto is not self._proto:
            return
        self._proto = None
        if self._hs is not None:
            self._hs.fail(ConnectionError(f"connection lost during handshake: {exc}"))
            return
        was_connected = self._transport is not None
        self._transport = None
        self._set_writable()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
            self._ping_timer = None
        if self._status is Status.CLOSED or not was_connected:
            return
        if self._fatal_error is not None:
            # Already reported when the -ERR arrived.
            self._track(asyncio.ensure_future(self._close(None)))
        elif self._opts.reconnect and not self.is_draining:
            self._status = Status.RECONNECTING
            self._fire(self._opts.disconnected_cb)
            self._reconnect_task = self._loop.create_task(self._reconnect_loop())  # type: ignore[union-attr]
        else:
            self._track(asyncio.ensure_future(self._close(None)))

    async def _reconnect_loop(self) -> None:
        """Try servers as the reconnect policy hands them out until one completes the handshake."""
        policy = self._reconnect_policy
        last_error: Exception | None = None
        async with contextlib.aclosing(
            policy.attempts(lambda: self._status is Status.RECONNECTING)
        ) as servers:
            async for server in servers:
                try:
                    await self._attempt(server)
                except AuthorizationError as exc:
                    last_error = exc
                    self._report_error(exc)
                    policy.auth_failed(server, exc)
                    continue
                except (OSError, NatsError, builtins.TimeoutError, ssl.SSLError) as exc:
                    last_error = exc
                    continue
                if self._status is not Status.RECONNECTING:
                    self._drop_attempt()
                    return
                self.reconnects += 1
                self._on_connected(server)
                self._reconnect_task = None
                self._fire(self._opts.reconnected_cb)
                return
        if self._status is Status.RECONNECTING:
            self._reconnect_task = None
            why = why_not_connected(last_error) if last_error is not None else "no server left to try"
            err = NoServersError(f"no server reachable after reconnect attempts (last error: {why})")
            await self._close(err)

    # ===================================================================== drain / close

    async def drain(self) -> None:
        """Unsubscribe everything, process what was already received, flush publishes, then close.

        Raises ``DrainTimeoutError`` (after closing) when this takes longer than ``drain_timeout``.
        """
        if self._status is Status.CLOSED:
            return
        if self.is_draining:
            if self._closing is None:
                self._closing = self._loop.create_future()  # type: ignore[union-attr]
            await asyncio.shield(self._closing)
            return
        if self._status is Status.RECONNECTING:
            await self.close()
            return
        timeout = self._opts.drain_timeout
        deadline = time.monotonic() + timeout
        error: NatsError | None = None
        self._status = Status.DRAINING_SUBS
        try:
            subs = [s for s in self._subs.values() if s is not self._requests.subscription]
            async with asyncio.timeout(timeout):
                await self._drain_subs(subs, timeout)
                self._status = Status.DRAINING_PUBS
                await self.flush(max(0.0, deadline - time.monotonic()))
        except (builtins.TimeoutError, TimeoutError):
            error = DrainTimeoutError(f"drain did not finish within {timeout}s")
        except NatsError as exc:
            error = exc
        await self._close(error)
        if isinstance(error, DrainTimeoutError):
            raise error

    async def close(self) -> None:
        """Send what is buffered, close the connection and stop every subscription."""
        await self._close(None)

    async def _close(self, error: Exception | None) -> None:
        loop = self._loop or asyncio.get_running_loop()
        if self._status is Status.CLOSED:
            if self._closing is not None:
                await asyncio.shield(self._closing)
            return
        was_connected = self._transport is not None
        self._status = Status.CLOSED
        if self._closing is None:
            self._closing = loop.create_future()
        if self._ping_timer is not None:
            self._ping_timer.cancel()
            self._ping_timer = None
        task = self._reconnect_task
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        self._reconnect_task = None
        proto, transport = self._proto, self._transport
        if transport is not None and self._wbuf:
            transport.write(bytes(self._wbuf))
        self._wbuf = bytearray()
        self._transport = None
        self._proto = None
        self._hs = None
        self._set_writable()
        if proto is not None and proto.transport is not None:
            proto.transport.close()  # sends what the transport still buffers, then closes
            with contextlib.suppress(builtins.TimeoutError, asyncio.CancelledError):
                async with asyncio.timeout(2.0):
                    await asyncio.shield(proto.closed)
        closed = ConnectionClosedError("connection closed")
        for fut in self._pongs:
            if fut is not None and not fut.done():
                fut.set_exception(closed)
        self._pongs.clear()
        self._requests.fail_all(closed)
        self._subs.abort_all(closed)
        if error is not None:
            self._report_error(error)
        if was_connected:
            self._fire(self._opts.disconnected_cb)
        self._fire(self._opts.closed_cb)
        if not self._closing.done():
            self._closing.set_result(None)
        current = asyncio.current_task()
        pending = [t for t in self._tasks if t is not current and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=5.0)

    # ===================================================================== callbacks

    def _fire(self, cb: Callable[..., Awaitable[None] | None] | None, *args: Any) -> None:
        if cb is None:
            return
        try:
            result = cb(*args)
        except Exception:
            logger.exception("error in client callback %r", cb)
            return
        if result is not None and inspect.isawaitable(result):
            self._track(asyncio.ensure_future(result))

    def _track(self, fut: asyncio.Future[Any]) -> None:
        self._tasks.add(fut)
        fut.add_done_callback(self._task_done)

    def _task_done(self, fut: asyncio.Future[Any]) -> None:
        self._tasks.discard(fut)
        if not fut.cancelled() and fut.exception() is not None:
            logger.error("error in client callback task", exc_info=fut.exception())

    def _report_error(self, exc: Exception) -> None:
        self._last_error = exc
        if self._opts.error_cb is None:
            logger.error("nats: %s", exc)
            return
        self._fire(self._opts.error_cb, exc)


async def connect(
    servers: str | list[str] = DEFAULT_URL,
    *,
    name: str | None = None,
    user: str | None = None,
    password: str | None = None,
    token: str | None = None,
    nkeys_seed: str | bytes | Path | None = None,
    user_credentials: str | bytes | Path | None = None,
    tls: ssl.SSLContext | None = None,
    tls_hostname: str | None = None,
    connect_timeout: Duration = 2.0,
    reconnect: bool = True,
    max_reconnect_attempts: int = 60,
    reconnect_time_wait: Duration = 2.0,
    reconnect_jitter: Duration | None = None,
    dont_randomize: bool = False,
    ping_interval: Duration = 120.0,
    max_outstanding_pings: int = 2,
    no_echo: bool = False,
    verbose: bool = False,
    pedantic: bool = False,
    inbox_prefix: str = "_INBOX",
    pending_size: int = DEFAULT_PENDING_SIZE,
    error_cb: ErrorCallback | None = None,
    disconnected_cb: EventCallback | None = None,
    reconnected_cb: EventCallback | None = None,
    closed_cb: EventCallback | None = None,
    discovered_server_cb: EventCallback | None = None,
    drain_timeout: Duration = 30.0,
) -> Client:
    """Connect to NATS and return a ready ``Client``.

    ``servers``: one URL, a comma-separated string or a list (``nats://``, ``tls://``; credentials may
    be in the URL: ``nats://user:pass@host``, ``nats://token@host``). The pool is shuffled unless
    ``dont_randomize``; servers announced in INFO ``connect_urls`` are added to it.

    Auth: ``token``; ``user``/``password``; ``nkeys_seed`` (seed string or file); ``user_credentials``
    (a ``.creds`` file path or its text: user JWT + seed). nkey/JWT auth signs the server's nonce.

    TLS: ``tls`` (an ``SSLContext``), a ``tls://`` URL, or a server that requires TLS upgrades the
    connection after INFO (with the default context when none is given); ``tls_hostname`` overrides
    the name verified.

    Reconnect: on connection loss, servers are tried in turn, each at most ``max_reconnect_attempts``
    times in a row (-1: forever), waiting ``reconnect_time_wait`` plus a random jitter (default 0.1 s,
    1 s for TLS) between attempts on the same server. Up to ``pending_size`` bytes of publishes are
    kept meanwhile and sent after the subscriptions are restored.

    Durations (``connect_timeout``, ``reconnect_time_wait``, ``ping_interval``, ``drain_timeout``, and
    every ``timeout`` of the client) are seconds, an ``int`` or a ``float``, or a ``timedelta``.

    Keepalive: a PING every ``ping_interval`` seconds; ``max_outstanding_pings`` unanswered ones mean
    the connection is stale (reconnect). Callbacks (plain or async functions): ``error_cb(exc)``,
    ``disconnected_cb()``, ``reconnected_cb()``, ``closed_cb()``, ``discovered_server_cb()``.
    """
    options = ClientOptions(
        servers=split_servers(servers),
        name=name,
        user=user,
        password=password,
        token=token,
        nkeys_seed=nkeys_seed,
        user_credentials=user_credentials,
        tls=tls,
        tls_hostname=tls_hostname,
        connect_timeout=seconds(connect_timeout),
        reconnect=reconnect,
        max_reconnect_attempts=max_reconnect_attempts,
        reconnect_time_wait=seconds(reconnect_time_wait),
        reconnect_jitter=seconds_or_none(reconnect_jitter),
        dont_randomize=dont_randomize,
        ping_interval=seconds(ping_interval),
        max_outstanding_pings=max_outstanding_pings,
        no_echo=no_echo,
        verbose=verbose,
        pedantic=pedantic,
        inbox_prefix=inbox_prefix,
        pending_size=pending_size,
        error_cb=error_cb,
        disconnected_cb=disconnected_cb,
        reconnected_cb=reconnected_cb,
        closed_cb=closed_cb,
        discovered_server_cb=discovered_server_cb,
        drain_timeout=seconds(drain_timeout),
    )
    client = Client(options)
    await client._connect()
    return client
