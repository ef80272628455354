"""A client's subscriptions: SUB/UNSUB, the raw-frame and run readers, draining a subscription."""

from __future__ import annotations

import asyncio
import builtins

from pyjetstream.client.core import (
    WHITESPACE,
    ClientCore,
    Status,
    check_subject,
)
from pyjetstream.client.errors import (
    BadSubjectError,
    BadSubscriptionError,
    ConnectionClosedError,
    ConnectionDrainingError,
    DrainTimeoutError,
)
from pyjetstream.client.msg import Msg
from pyjetstream.client.options import DEFAULT_SUB_PENDING_BYTES_LIMIT, DEFAULT_SUB_PENDING_MSGS_LIMIT
from pyjetstream.client.subscription import FramesCallback, MsgCallback, RunsCallback, Subscription
from pyjetstream.protocol import encode_sub, encode_unsub
from pyjetstream.protocol.parser import FrameScan


class Subscriber(ClientCore):
    """Subscribing and unsubscribing."""

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
        check_subject(subject, wildcards=True)
        if queue and WHITESPACE.search(queue):
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
        carry headers or a reply subject (a consumer's deliveries; one without headers has an empty
        header block) come as ``cb(buf, offsets)``, every complete frame of a received chunk in one
        call, where frame *i*'s header block is ``buf[offsets[3i]:offsets[3i+1]]`` and its payload
        ``buf[offsets[3i+1]:offsets[3i+2]]`` — no [`Msg`][] per message. Each frame's control line
        (subject, reply subject) ends right before its header block (`FrameRun`).

        A message that does not come as a frame (one without headers or reply subject, or a frame the fast parser does
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
        sub = Subscription(self, sid, subject, queue, cb, max_msgs, pending_msgs_limit, pending_bytes_limit)  # type: ignore[arg-type]
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
