"""Push consumers: delivery interest, idle heartbeats, flow control and the rate limit.

`PushDelivery` is the push side of a
`Consumer` (nats-server ``consumer.go``
``updateDeliveryInterest``, ``sendIdleHeartbeat``, ``sendFlowControl``, ``processFlowControl``):

- A push consumer delivers only while its deliver subject has *exact* interest: a plain
  subscription on exactly that subject, or, with ``deliver_group``, a queue subscription on it in
  that group (nats-server's ``registerNotification`` ignores wildcard subscribers). Losing interest
  starts the inactivity timer (ephemerals, or durables with ``inactive_threshold``).
- Idle heartbeats go out every ``idle_heartbeat`` without a delivery while bound.
- Flow control: the window starts at 2 MiB and doubles per answered request up to 32 MiB; a
  request (``100 FlowControl Request`` with reply ``$JS.FC.<S>.<C>.<id>``) goes out when more than
  half the window is unanswered, and delivery stalls above the window.
- ``rate_limit_bps`` is a token bucket in bytes (bits / 8) with a burst of the max payload size.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING

from pyjetstream.api.constants import FLOW_CONTROL_INITIAL_WINDOW, FLOW_CONTROL_MAX_WINDOW
from pyjetstream.api.enums import AckPolicy
from pyjetstream.api.headers import LAST_CONSUMER, LAST_STREAM, Status, heartbeat_block, status_block
from pyjetstream.api.subjects import flow_control_subject, flow_control_subscription
from pyjetstream.protocol.headers import get_header
from pyjetstream.server.jetstream import delivery_loop

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.host import Connection, Host, InternalSubscription, Receiver

__all__ = ["DeliverInterest", "PushDelivery", "RateLimiter"]

_FC_REQUEST = status_block(Status.FLOW_CONTROL)
_FC_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DEFAULT_MAX_PAYLOAD = 1024 * 1024


class DeliverInterest:
    """Routes subscription changes to the push consumers delivering to that exact subject.

    One per account's JetStream (``JetStreamEngine.deliver_interest``, made by `of` at its first
    push consumer, closed when the engine stops): a single ``on_interest_change`` listener and a
    dict lookup per change, instead of every consumer inspecting every SUB/UNSUB.
    """

    def __init__(self, server: Host) -> None:
        self.by_subject: dict[str, set[PushDelivery]] = {}
        self._remove = server.on_interest_change(self._changed)

    @staticmethod
    def of(consumer: Consumer) -> DeliverInterest:
        """The consumer's engine's (made now if it has none)."""
        engine = consumer.engine
        reg: DeliverInterest | None = engine.deliver_interest
        if reg is None:
            reg = engine.deliver_interest = DeliverInterest(consumer.server)
        return reg

    def close(self) -> None:
        """Stop listening (the engine stopped)."""
        self._remove()
        self.by_subject.clear()

    def add(self, subject: str, consumer: PushDelivery) -> None:
        self.by_subject.setdefault(subject, set()).add(consumer)

    def discard(self, subject: str, consumer: PushDelivery) -> None:
        watchers = self.by_subject.get(subject)
        if watchers is not None:
            watchers.discard(consumer)
            if not watchers:
                del self.by_subject[subject]

    def _changed(self, sub: Receiver, added: bool) -> None:
        watchers = self.by_subject.get(sub.subject)
        if watchers:
            for consumer in list(watchers):
                consumer.interest_changed()


class RateLimiter:
    """A token bucket over bytes (Go's ``rate.Limiter`` as the consumer uses it)."""

    __slots__ = ("burst", "last", "rate", "tokens")

    def __init__(self, bytes_per_second: float, burst: int) -> None:
        self.rate = bytes_per_second
        self.burst = burst
        self.tokens = float(burst)
        self.last = time.monotonic()

    def delay_for(self, size: int) -> float:
        """Seconds to wait before ``size`` bytes may go (0: take them now)."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= size or self.rate <= 0:
            self.tokens -= size
            return 0.0
        return (size - self.tokens) / self.rate


class PushDelivery:
    """Interest, heartbeats, flow control and the rate limit of a push consumer."""

    __slots__ = (
        "_fc_sub",
        "_hb_timer",
        "active",
        "consumer",
        "dsubj",
        "fcid",
        "fcsz",
        "last_delivery",
        "maxpb",
        "pblimit",
        "pbytes",
        "rate",
    )

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.dsubj = consumer.cfg.deliver_subject
        self.active = False  # the deliver subject has interest (``push_bound``)
        self.pblimit = 0  # flow control: the largest window
        self.maxpb = 0  # flow control: the current window (0: no flow control)
        self.pbytes = 0  # bytes delivered and not yet answered by a flow-control response
        self.fcsz = 0
        self.fcid = ""  # the outstanding flow-control request's reply subject
        self.rate: RateLimiter | None = None
        self._hb_timer: asyncio.Handle | None = None
        self.last_delivery = 0.0  # monotonic
        self._fc_sub: InternalSubscription | None = None

    def start(self) -> None:
        consumer = self.consumer
        cfg = consumer.cfg
        DeliverInterest.of(consumer).add(self.dsubj, self)
        if cfg.flow_control:
            self.pblimit = FLOW_CONTROL_MAX_WINDOW
            self.maxpb = FLOW_CONTROL_INITIAL_WINDOW
            self._fc_sub = consumer.server.subscribe_internal(
                flow_control_subscription(consumer.stream.name, consumer.name), self._on_flow_control
            )
        if cfg.rate_limit_bps:
            self.set_rate_limit(cfg.rate_limit_bps)
        self.active = self.has_interest()
        if consumer.dthresh and not self.active:
            consumer.start_inactivity_timer(consumer.dthresh)
        if cfg.idle_heartbeat:
            self.last_delivery = time.monotonic()
            self._hb_timer = consumer.loop.call_later(cfg.idle_heartbeat / 1e9, self._heartbeat)

    def stop(self) -> None:
        registry = self.consumer.engine.deliver_interest  # (none made to be told of a stop)
        if registry is not None and self.consumer.cfg.deliver_subject:
            registry.discard(self.dsubj, self)
        if self._fc_sub is not None:
            self._fc_sub.unsubscribe()
            self._fc_sub = None
        if self._hb_timer is not None:
            self._hb_timer.cancel()
            self._hb_timer = None
        self.active = False

    # --- interest ------------------------------------------------------------------------------

    def has_interest(self) -> bool:
        return self.consumer.server.deliver_interest(self.dsubj, self.consumer.cfg.deliver_group or "")

    def interest_changed(self) -> None:
        if not self.consumer.closed:
            self.update_interest(self.has_interest())

    def update_interest(self, interest: bool) -> None:
        """``updateDeliveryInterest``: (un)bind, and run the inactivity timer while unbound."""
        consumer = self.consumer
        if interest and not self.active:
            consumer.kick()
        self.active = interest
        if not interest:
            if not consumer.inactivity_timer_running() and consumer.dthresh:
                consumer.start_inactivity_timer(consumer.dthresh)
        else:
            consumer.stop_inactivity_timer()

    def update_deliver_subject(self, subject: str) -> None:
        """A durable push consumer moved to a new deliver subject: resend what is pending."""
        consumer = self.consumer
        if consumer.closed or not consumer.cfg.deliver_subject or subject == self.dsubj:
            return
        if consumer.state.pending:
            consumer.state.redeliver_all(time.time_ns())
            consumer.acks.arm(consumer.cfg.ack_wait / 1e9)
        registry = DeliverInterest.of(consumer)
        registry.discard(self.dsubj, self)
        self.dsubj = subject
        registry.add(subject, self)
        self.update_interest(self.has_interest())

    # --- heartbeats ----------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        self._hb_timer = None
        consumer = self.consumer
        if consumer.closed:
            return
        if consumer.delivery.scheduled:
            # A delivery pass is due (a stored message was signalled after its PubAck went out):
            # it goes first, as nats-server's consumer delivers what it was signalled before its
            # heartbeat timer comes round again. A heartbeat in between would name the delivery
            # before it while the publisher already has its PubAck (nats.c's sequence-mismatch
            # test saw it: its next message, the one it rewrites, was that heartbeat).
            self._hb_timer = consumer.loop.call_soon(self._heartbeat)
            return
        interval = consumer.cfg.idle_heartbeat / 1e9
        due = self.last_delivery + interval
        now = time.monotonic()
        if now >= due - 0.001:
            if self.active:
                self.send_idle_heartbeat(self.dsubj)
                # Flow-control acks: ask for one at the end of the stream too.
                if consumer.cfg.ack_policy == AckPolicy.FLOW_CONTROL and consumer.state.pending and not self.fcid:
                    self._send_flow_control()
                # nats-server's loop goes round after a heartbeat: a filtered consumer that
                # finds nothing moves past the end of the stream (the next heartbeat says so).
                # A pass that would find nothing and change nothing is not run.
                if not (delivery_loop.REST_UNPASSED and consumer.delivery.at_rest()):
                    consumer.kick()
            self.last_delivery = now
            due = now + interval
        self._hb_timer = consumer.loop.call_later(max(due - now, 0.001), self._heartbeat)

    def send_idle_heartbeat(self, subject: str) -> None:
        """``sendIdleHeartbeat`` (the sequences: `DeliveryLoop.heartbeat_seqs`)."""
        dseq, sseq = self.consumer.delivery.heartbeat_seqs()
        self.consumer.server.publish_internal(subject, b"", hdr=heartbeat_block(dseq, sseq, self.fcid))

    # --- flow control --------------------------------------------------------------------------

    def after_delivery(self, size: int) -> bool:
        """Account a delivered message against the window; ask for a response when due
        (``shouldSendFlowControl``; with flow-control acks also when max_ack_pending is hit).
        True when a request went out (the delivery pass reads on after it)."""
        self.pbytes += size
        if not self.fcid:
            if self.pbytes > self.maxpb // 2 or self._acks_need_response():
                self._send_flow_control()
                return True
        elif self.pbytes - self.fcsz >= self.maxpb:
            self.fcsz += size
        return False

    def fc_room(self) -> int:
        """The bytes `after_delivery` may count from here with nothing else due — no request to
        send (``pbytes`` stays at most half the window, or at most ``fcsz`` + the window less one
        while one is out) and the window not passed —, so that a delivery pass counts them in
        ``pbytes`` itself and calls `after_delivery` only for the message that passes them
        (``DeliveryPass.frame_run``). -1 with flow-control acks: every delivery looks at the
        pending count (`_acks_need_response`)."""
        if self.consumer.cfg.ack_policy == AckPolicy.FLOW_CONTROL:
            return -1
        if not self.fcid:
            return self.maxpb // 2 - self.pbytes
        return min(self.maxpb, self.fcsz + self.maxpb - 1) - self.pbytes

    def _acks_need_response(self) -> bool:
        consumer = self.consumer
        cfg = consumer.cfg
        return (
            cfg.ack_policy == AckPolicy.FLOW_CONTROL
            and cfg.max_ack_pending > 0
            and len(consumer.state.pending) >= cfg.max_ack_pending
        )

    def _send_flow_control(self) -> None:
        consumer = self.consumer
        token = "".join(random.choice(_FC_DIGITS) for _ in range(4))
        reply = flow_control_subject(consumer.stream.name, consumer.name, token)
        self.fcsz, self.fcid = self.pbytes, reply
        consumer.server.publish_internal(self.dsubj, b"", reply=reply, hdr=_FC_REQUEST)

    def _on_flow_control(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Connection | None
    ) -> None:
        """``processFlowControl``: only the latest request counts; widen the window and resume."""
        if self.consumer.closed or subject != self.fcid:
            return
        if self.maxpb < self.pblimit:
            self.maxpb = min(self.maxpb * 2, self.pblimit)
        self.pbytes = max(self.pbytes - self.fcsz, 0)
        self.fcid, self.fcsz = "", 0
        consumer = self.consumer
        consumer.kick()
        if consumer.cfg.ack_policy == AckPolicy.FLOW_CONTROL and hdr:
            # ⟨2.14+⟩ ADR-60: the response acks everything up to the sequences it names.
            lsseq = _int_header(hdr, LAST_STREAM)
            if lsseq > 0:
                consumer.acks.ack(lsseq, max(_int_header(hdr, LAST_CONSUMER), 0), 1, False)

    # --- rate limit ----------------------------------------------------------------------------

    def set_rate_limit(self, bps: int) -> None:
        if not bps:
            self.rate = None
            return
        consumer = self.consumer
        max_size = consumer.stream.cfg.max_msg_size
        if max_size <= 0:
            max_size = int(getattr(consumer.server.options, "max_payload", 0) or DEFAULT_MAX_PAYLOAD)
        self.rate = RateLimiter(bps / 8, max_size)

    def rate_delay(self, size: int) -> bool:
        """True when ``size`` bytes must wait; the delivery pass resumes after the wait."""
        assert self.rate is not None
        wait = self.rate.delay_for(size)
        if wait <= 0:
            return False
        self.consumer.delivery.delay(wait)
        return True


def _int_header(hdr: bytes, name: str) -> int:
    value = get_header(hdr, name.encode())
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0
