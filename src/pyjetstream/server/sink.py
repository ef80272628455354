"""A connection's output: the one place messages are framed into a client's buffer.

nats-server's ``client.deliverMsg`` appends a message's frame to the receiving client's outbound
buffer, counts it, and at the end of the producer's read flushes every client it wrote to
(``flushClients``); past ``max_pending`` the client is a slow consumer, and a producer writing to a
client whose socket is behind is stalled (``stalledWait``). `FrameSink` is that buffer and those
checks for one connection, and every framer writes through it:

- `FrameSink.deliver`: one routed message (``Server.route``, message tracing, a direct get), with
  the per-delivery decisions (no echo, deliver permissions, the delivered count, auto-unsubscribe);
- `FrameSink.frame_items`: a run's deliveries to this connection (``Router.route_msgs``, which made
  those decisions while routing), in one call;
- `FrameSink.frame`: the frame itself, which both use (MSG or HMSG, a literal subscription's
  pre-encoded line start, a consumer's shown subject);
- a consumer's delivery pass frames into `FrameSink.out` with `pyjetstream.protocol.writers` itself
  where `FrameSink.takes_frames` says nothing is checked per message, and accounts for each run with
  `FrameSink.count`;
- `FrameSink.append`: bytes of the server's own (PONG, +OK, -ERR, a no-responders answer).

What is buffered is counted against the connection's pending limit (`FrameSink.limit`: an eighth of
max_pending at most, less what the transport still holds): past it the connection writes early and
cuts a slow consumer (``ClientConnection.overflow``); while the transport is above its high-water
mark (`FrameSink.write_paused`) a producer is stalled (``ClientConnection.stall``). `FrameSink.flush`
writes it all with one ``transport.write`` once per client read (``Server.end_read``) or loop turn;
a socket that has not taken a write within the write deadline cuts the client (nats-server's
``flushOutbound`` deadline).
"""


from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any, Final

from pyjetstream.protocol.writers import CRLF, append_hmsg, append_msg, hmsg_prefix, msg_prefix

if TYPE_CHECKING:
    from pyjetstream.server.subscription import Subscription

__all__ = ["FrameSink"]

# How many of a wildcard subscription's subjects keep their MSG line start (`FrameSink.frame`).
_PREFIXES_KEPT: Final = 512
# Why a slow consumer is cut (nats-server ``ClosedState``; ``client.ClosedReason`` has them all).
SLOW_CONSUMER_PENDING = "Slow Consumer (Pending Bytes)"
SLOW_CONSUMER_DEADLINE = "Slow Consumer (Write Deadline)"
# The mean size of a buffered part from which `FrameSink.flush` hands the parts to one ``writev``
# instead of joining them (16 KiB payloads: 3 parts of ~5.5 KiB a message; 16 B ones: ~15 B).
_WRITEV_PART: Final = 1024


class Totals:
    """The server's message totals over its client connections, gone ones' included (``/varz``
    ``in_msgs``, ``in_bytes``, ``out_msgs``, ``out_bytes``; nats-server's ``Server.inMsgs`` …
    ``outBytes``, added as it counts each client's), counted where each connection counts its own:
    `FrameSink.took` (a read's publishes) and each delivery framed. Why: summed over the connections
    at each ``/varz``, a request cost ~0.7 µs a connection. One object the server and every sink
    share (``Server.totals``), compiled with them: its counts are native fields."""

    __slots__ = ("in_bytes", "in_msgs", "out_bytes", "out_msgs")

    def __init__(self) -> None:
        self.in_msgs = 0
        self.in_bytes = 0
        self.out_msgs = 0
        self.out_bytes = 0


class FrameSink:
    """One connection's output buffer, its counts and the framers that fill it (see the module
    docstring). ``conn`` is the `ClientConnection`, ``server`` its server (the read's ``pcd``)."""

    __slots__ = (
        "_deadline",
        "_deadline_mark",
        "_shown",
        "_shown_prefix",
        "_shown_sub",
        "bytes",
        "closed",
        "conn",
        "deliver_filter",
        "dirty",
        "early_flush",
        "echo",
        "headers",
        "hold",
        "in_bytes",
        "in_msgs",
        "limit",
        "max_pending",
        "msgs",
        "out",
        "queue_slot",
        "queue_stamp",
        "server",
        "size",
        "totals",
        "trace",
        "transport",
        "write_paused",
        "written",
    )

    def __init__(self, conn: Any, server: Any, max_pending: int, early_flush: int) -> None:
        self.conn = conn
        self.server = server
        self.transport: Any = None
        self.max_pending = max_pending
        self.early_flush = early_flush
        self.out: list[bytes] = []
        self.size = 0  # bytes in ``out``
        # ``size`` past which the connection writes early: an eighth of max_pending at most, less
        # what the transport still holds (see the module docstring).
        self.limit = min(max_pending, early_flush)
        self.hold = False  # INFO sent, TLS handshake not finished: output waits
        self.written = 0  # bytes handed to the transport
        self._deadline: Any = None  # the running write deadline's timer
        self._deadline_mark = 0  # ``written`` when it started
        self.msgs = 0  # messages framed (nats-server ``outMsgs``)
        self.bytes = 0  # their header and payload bytes (``outBytes``)
        self.in_msgs = 0  # messages the connection published (nats-server ``inMsgs``): `took`
        self.in_bytes = 0  # their header and payload bytes (``inBytes``)
        self.totals: Totals = server.totals  # the server's of all four
        self.dirty = False  # a flush is scheduled
        self.closed = False
        self.write_paused = False
        # What the connection's CONNECT and permissions decided (see ``ClientConnection``).
        self.headers = False
        self.echo = True
        self.deliver_filter: Any = None
        self.trace = False
        # ``deliver``'s last shown subject (a consumer's stream subject), its subscription and prefix.
        self._shown_sub: Any = None
        self._shown = ""
        self._shown_prefix = b""
        # The router's, for a queue segment (`router._Run.slot_of`): the segment that last picked a
        # member on this connection (its number) and the connection's `_Slot` there (None: its
        # deliveries are decided per message) — nats-server's per-client ``pcd`` entry, a field
        # read instead of a lookup per pick.
        self.queue_stamp = 0
        self.queue_slot: Any = None

    # ------------------------------------------------------------------ accounting

    def schedule(self) -> None:
        """Write `out` when the client read being processed is done (``Server.end_read``,
        nats-server ``flushClients``), outside a read at the end of this loop turn — once either way."""
        if not self.dirty:
            self.dirty = True
            pcd = self.server.pcd
            if pcd is None:
                self.server.loop.call_soon(self.flush)
            else:  # a read is being processed: written when it is done
                pcd.append(self.conn)

    def queued(self, n: int, producer: Any) -> None:
        """``n`` more bytes are in `out`: schedule the flush, write early and cut a slow consumer
        past the pending limit, stall ``producer`` while the transport is above its high-water mark."""
        self.size += n
        if not self.dirty:
            self.schedule()
        if self.size > self.limit:
            self.overflow()
        if self.write_paused and producer is not None:
            producer.stall(self.conn)

    def check(self, producer: Any) -> None:
        """`queued`'s checks for frames already counted (``Server.route_msgs``, where per-message
        delivery would make them)."""
        if self.size > self.limit:
            self.overflow()
        if self.write_paused and producer is not None:
            producer.stall(self.conn)

    def room(self) -> int:
        """Bytes that may still be framed into `out` before `queued` would write early."""
        return self.limit - self.size

    def count(self, sub: Any, msgs: int, data: int, size: int) -> None:
        """``msgs`` frames for ``sub`` (``data`` bytes of headers and payloads, ``size`` bytes in
        all) were appended to `out` by a sender that frames itself (see `takes_frames`): counted
        as `deliver` counts, checked as `queued` checks."""
        sub.delivered += msgs
        self.sent(msgs, data)
        self.queued(size, None)

    def sent(self, msgs: int, data: int) -> None:
        """``msgs`` messages of ``data`` header and payload bytes delivered: counted on the
        connection (``/connz`` out_msgs/out_bytes) and in the server's `Totals` (``/varz``) — the
        one place both are kept, for `deliver`, `count` and `frame_items`."""
        self.msgs += msgs
        self.bytes += data
        totals = self.totals
        totals.out_msgs += msgs
        totals.out_bytes += data

    def took(self, msgs: int, data: int) -> None:
        """A read's publishes: ``msgs`` messages of ``data`` header and payload bytes, counted on the
        connection and in the server's `Totals` (negative: a message not processed after all)."""
        self.in_msgs += msgs
        self.in_bytes += data
        totals = self.totals
        totals.in_msgs += msgs
        totals.in_bytes += data

    def takes_frames(self, sub: Any) -> bool:
        """Whether a server-side sender (a consumer's delivery pass) may frame messages for ``sub``
        into `out` itself and `count` them in runs: when `deliver` would check nothing per message
        — no deliver permissions, no trace, no auto-unsubscribe — on an open connection."""
        return self.deliver_filter is None and not self.trace and not sub.max_msgs and not self.closed

    def append(self, data: bytes) -> None:
        """Bytes of the server's own (a PONG, an -ERR, a no-responders answer)."""
        if not self.closed:
            self.out.append(data)
            self.queued(len(data), None)

    # ------------------------------------------------------------------ writing

    def flush(self) -> None:
        """Write everything buffered with one ``transport.write``, or one ``writelines`` (a
        ``writev``, as nats-server's ``flushOutbound`` writes its ``net.Buffers``) when its parts
        are large: joining them first copied every payload once more; small frames are joined (a
        part's own cost in a ``writev`` outweighs copying it). The pending limit then leaves room
        for what the transport still holds."""
        self.dirty = False
        out = self.out
        transport = self.transport
        if not out or self.closed or transport is None or self.hold:
            return
        self.out = []
        if len(out) > 1 and self.size >= len(out) * _WRITEV_PART:
            size = sum(map(len, out))
            transport.writelines(out)
        else:
            data = out[0] if len(out) == 1 else b"".join(out)
            size = len(data)
            transport.write(data)
        self.size = 0
        self.written += size
        self.conn.last_activity = time.monotonic()
        buffered = transport.get_write_buffer_size()
        self.limit = min(self.max_pending - buffered, self.early_flush)
        if buffered and self._deadline is None:
            self._start_deadline()

    def pending(self) -> int:
        """Bytes not yet taken by the socket: buffered here and in the transport."""
        buffered = self.transport.get_write_buffer_size() if self.transport is not None and not self.closed else 0
        return self.size + buffered

    def overflow(self) -> None:
        """`size` passed `limit`: write now, and cut a slow consumer. Writing early keeps one
        read's output bounded; what the socket does not take stays in the transport, and when that
        passes max_pending the client is a slow consumer (closed without a flush or an -ERR, as
        nats-server marks it)."""
        if self.closed or self.transport is None:
            return
        self.flush()
        if self.transport.get_write_buffer_size() <= self.max_pending:
            return
        self.server.slow_consumers += 1
        self.conn.account.slow_consumers += 1
        self.conn.log(logging.INFO, f"Slow Consumer Detected: MaxPending of {self.max_pending} Exceeded")
        self.conn.abort(SLOW_CONSUMER_PENDING)

    def _start_deadline(self) -> None:
        """The socket did not take all we wrote: what is written so far must be out within
        write_deadline (nats-server sets the deadline on each write of ``flushOutbound``; a write
        the socket has not finished by then cuts the client, whatever max_pending allows)."""
        self._deadline_mark = self.written
        self._deadline = self.server.loop.call_later(self.server.options.write_deadline, self._deadline_check)

    def _deadline_check(self) -> None:
        self._deadline = None
        if self.closed or self.transport is None:
            return
        buffered = self.transport.get_write_buffer_size()
        if not buffered:
            return
        if self.written - buffered >= self._deadline_mark:
            # That write finished in time; what was written since gets its own deadline.
            self._start_deadline()
            return
        self.server.slow_consumers += 1
        self.conn.account.slow_consumers += 1
        deadline = self.server.write_deadline_text
        self.conn.log(
            logging.INFO,
            f"Slow Consumer Detected: WriteDeadline of {deadline} exceeded with 1 chunks of {buffered} total bytes.",
        )
        self.conn.abort(SLOW_CONSUMER_DEADLINE)

    def stop(self) -> None:
        """The connection is gone: no write deadline, nothing kept."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.out = []
        self.size = 0

    # ------------------------------------------------------------------ framing

    def frame(
        self, sub: Subscription, subject: str, reply: str, hdr: bytes | None, payload: bytes, shown: str | None
    ) -> int:
        """Append the frame of one message for ``sub`` (``shown``, when not "", the subject the
        line names instead of the routed one: a stored message delivered to a consumer's inbox);
        returns its size. MSG when there is no header block or the client does not take headers,
        else HMSG (nats-server ``msgHeader``); the line start is pre-encoded on a literal
        subscription, a reply-less line with its size is kept for the next message of that size."""
        out = self.out
        if hdr is None or not self.headers:
            if shown:
                if sub is self._shown_sub and shown == self._shown:
                    # A consumer's deliveries name the same few stream subjects over and over.
                    prefix = self._shown_prefix
                else:
                    prefix = self._shown_prefix = msg_prefix(shown.encode(), sub.sid_b)
                    self._shown_sub = sub
                    self._shown = shown
            elif not sub.literal:  # a wildcard subscription: its recent subjects' line starts kept
                prefixes = sub.prefixes
                if prefixes is None:
                    prefixes = sub.prefixes = {}
                cached = prefixes.get(subject)
                if cached is None:
                    if len(prefixes) >= _PREFIXES_KEPT:
                        prefixes.clear()
                    cached = prefixes[subject] = msg_prefix(subject.encode(), sub.sid_b)
                prefix = cached
            elif reply:
                prefix = sub.msg_prefix or sub.msg_start()
            else:
                size = len(payload)
                if size == sub.msg_line_size:
                    line = sub.msg_line
                else:
                    line = sub.msg_line = b"%b%d\r\n" % (sub.msg_prefix or sub.msg_start(), size)
                    sub.msg_line_size = size
                out.append(line)
                out.append(payload)
                out.append(CRLF)
                return len(line) + size + 2
            return append_msg(out, prefix, reply.encode(), payload)
        if shown or not sub.literal:
            prefix = hmsg_prefix((shown or subject).encode(), sub.sid_b)
        else:
            prefix = sub.hmsg_prefix or sub.hmsg_start()
        return append_hmsg(out, prefix, reply.encode(), hdr, payload)

    def deliver(
        self,
        sub: Any,
        subject: str,
        reply: str,
        hdr: bytes | None,
        payload: bytes,
        producer: Any,
        shown: str | None = None,
    ) -> bool:
        """Frame one routed message for ``sub`` (nats-server ``client.deliverMsg``); False when the
        connection does not take it (no echo, deliver permissions). Auto-unsubscribe
        (``UNSUB <sid> <max>``) takes effect here, as do the slow-consumer check and the producer
        stall (`queued`)."""
        if producer is not None and producer is self.conn and not self.echo:
            return False
        deliver_filter = self.deliver_filter
        if deliver_filter is not None and not deliver_filter.deliver_allowed(shown or subject, reply, sub.queue or ""):
            return False
        sub.delivered += 1
        if sub.max_msgs and sub.delivered >= sub.max_msgs:
            self.conn.remove_sub(sub)  # auto-unsubscribe: this is the last message it gets
        n = self.frame(sub, subject, reply, hdr, payload, shown)
        size = len(payload) if hdr is None or not self.headers else len(hdr) + len(payload)
        if self.trace:
            self.conn.trace_msg(sub, shown or subject, reply, hdr, size)
        self.sent(1, size)
        self.queued(n, producer)
        return True

    def frame_items(
        self,
        items: list[Any],
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
    ) -> None:
        """Frame a run's deliveries to this connection (``Router.route_msgs``): ``items`` is
        ``[room, sub, lo, hi, sub, lo, hi, ...]``, messages ``lo`` to ``hi`` (not included) of the run
        for ``sub`` (``sub`` None: ``lo`` is a frame of bytes, a no-responders answer; ``lo`` -1:
        ``hi`` is the list of the messages picked for a queue group member), in delivery order.
        Each message is framed (`frame`) and counted as `deliver` frames and counts it — the router
        has made `deliver`'s per-delivery decisions — and the flush is scheduled; the pending-limit
        and stall checks are the router's to ask for (`check`), where per-message delivery would
        make them."""
        if self.closed:
            return
        headers = self.headers
        trace = self.trace
        size = data = msgs = 0
        for k in range(1, len(items), 3):
            sub = items[k]
            if sub is None:
                frame: bytes = items[k + 1]
                self.out.append(frame)
                size += len(frame)
                continue
            lo: int = items[k + 1]
            if lo < 0:  # the messages picked for a queue group member
                picks: list[int] = items[k + 2]
                msgs += len(picks)
                for i in picks:
                    hdr = hdrs[i]
                    payload = payloads[i]
                    size += self.frame(sub, subjects[i], replies[i], hdr, payload, "")
                    plen = len(payload) if hdr is None or not headers else len(hdr) + len(payload)
                    data += plen
                    if trace:
                        self.conn.trace_msg(sub, subjects[i], replies[i], hdr, plen)
                continue
            hi: int = items[k + 2]
            msgs += hi - lo
            for i in range(lo, hi):
                hdr = hdrs[i]
                payload = payloads[i]
                size += self.frame(sub, subjects[i], replies[i], hdr, payload, "")
                plen = len(payload) if hdr is None or not headers else len(hdr) + len(payload)
                data += plen
                if trace:
                    self.conn.trace_msg(sub, subjects[i], replies[i], hdr, plen)
        self.sent(msgs, data)
        self.size += size
        if not self.dirty:
            self.schedule()
