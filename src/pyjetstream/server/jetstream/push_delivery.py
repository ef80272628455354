"""Push consumers: delivery interest, idle heartbeats, flow control and the rate limit.

A mixin of :class:`~pyjetstream.server.jetstream.consumer.Consumer` (nats-server ``consumer.go``):

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

import random
import time
import weakref
from typing import TYPE_CHECKING, Any

from pyjetstream.api.constants import FLOW_CONTROL_INITIAL_WINDOW, FLOW_CONTROL_MAX_WINDOW
from pyjetstream.server.jetstream.pull_requests import heartbeat_status

if TYPE_CHECKING:
    from pyjetstream.api.models_consumer import ConsumerConfig
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["DeliverInterest", "PushDelivery", "RateLimiter"]

_FC_REQUEST = b"NATS/1.0 100 FlowControl Request\r\n\r\n"
_FC_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
DEFAULT_MAX_PAYLOAD = 1024 * 1024


class DeliverInterest:
    """Routes subscription changes to the push consumers delivering to that exact subject.

    One per server: a single ``on_interest_change`` listener and a dict lookup per change,
    instead of every consumer inspecting every SUB/UNSUB.
    """

    _registries: weakref.WeakKeyDictionary[Any, DeliverInterest] = weakref.WeakKeyDictionary()

    def __init__(self, server: Any) -> None:
        self.by_subject: dict[str, set[PushDelivery]] = {}
        self._remove = server.on_interest_change(self._changed)

    @classmethod
    def of(cls, server: Any) -> DeliverInterest:
        reg = cls._registries.get(server)
        if reg is None:
            reg = cls._registries[server] = cls(server)
        return reg

    def add(self, subject: str, consumer: PushDelivery) -> None:
        self.by_subject.setdefault(subject, set()).add(consumer)

    def discard(self, subject: str, consumer: PushDelivery) -> None:
        watchers = self.by_subject.get(subject)
        if watchers is not None:
            watchers.discard(consumer)
            if not watchers:
                del self.by_subject[subject]

    def _changed(self, sub: Any, added: bool) -> None:
        watchers = self.by_subject.get(sub.subject)
        if watchers:
            for consumer in list(watchers):
                consumer._interest_changed()


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
    """Interest, heartbeats, flow control, rate limit and inactivity. Mixed into Consumer."""

    # Provided by Consumer.
    cfg: ConsumerConfig
    stream: Stream
    server: Any
    loop: Any
    name: str
    closed: bool
    sseq: int
    dseq: int
    pending: dict[int, tuple[int, int]]
    rdq: dict[int, None]
    _delay_handle: Any

    if TYPE_CHECKING:

        def _kick(self) -> None: ...
        def _delay(self, seconds: float) -> None: ...
        def _arm_pending_timer(self, delay: float) -> None: ...
        def delete(self) -> None: ...
        def _update_inactive_threshold(self) -> None: ...
        def _start_inactivity_timer(self, delay: float) -> None: ...
        def _stop_inactivity_timer(self) -> None: ...

    _dtmr: Any
    dthresh: float

    def _init_push(self) -> None:
        self.dsubj = self.cfg.deliver_subject
        self.active = False
        self.pblimit = 0
        self.maxpb = 0
        self.pbytes = 0
        self.fcsz = 0
        self.fcid = ""
        self.rate: RateLimiter | None = None
        self._hb_timer: Any = None
        self._last_delivery = 0.0
        self._fc_sub: Any = None

    def _start_push(self) -> None:
        cfg = self.cfg
        DeliverInterest.of(self.server).add(self.dsubj, self)
        if cfg.flow_control:
            self.pblimit = FLOW_CONTROL_MAX_WINDOW
            self.maxpb = FLOW_CONTROL_INITIAL_WINDOW
            self._fc_sub = self.server.subscribe_internal(
                f"$JS.FC.{self.stream.name}.{self.name}.*", self._on_flow_control
            )
        if cfg.rate_limit_bps:
            self._set_rate_limit(cfg.rate_limit_bps)
        self.active = self._has_delivery_interest()
        if self.dthresh and not self.active:
            self._start_inactivity_timer(self.dthresh)
        if cfg.idle_heartbeat:
            self._last_delivery = time.monotonic()
            self._hb_timer = self.loop.call_later(cfg.idle_heartbeat / 1e9, self._heartbeat)

    def _stop_push(self) -> None:
        if self.cfg.deliver_subject:
            DeliverInterest.of(self.server).discard(self.dsubj, self)
        if self._fc_sub is not None:
            self._fc_sub.unsubscribe()
            self._fc_sub = None
        if self._hb_timer is not None:
            self._hb_timer.cancel()
            self._hb_timer = None
        self.active = False

    # --- interest ------------------------------------------------------------------------------

    def _has_delivery_interest(self) -> bool:
        subject = self.dsubj
        psubs, qsubs = self.server.sublist.match(subject)
        group = self.cfg.deliver_group
        if not group:
            return any(s.subject == subject for s in psubs)
        return any(s.subject == subject and s.queue == group for members in qsubs for s in members)

    def _interest_changed(self) -> None:
        if not self.closed:
            self._update_delivery_interest(self._has_delivery_interest())

    def _update_delivery_interest(self, interest: bool) -> None:
        """``updateDeliveryInterest``: (un)bind, and run the inactivity timer while unbound."""
        if interest and not self.active:
            self._kick()
        self.active = interest
        if not interest:
            if self._dtmr is None and self.dthresh:
                self._start_inactivity_timer(self.dthresh)
        else:
            self._stop_inactivity_timer()

    def _update_deliver_subject(self, subject: str) -> None:
        """A durable push consumer moved to a new deliver subject: resend what is pending."""
        if self.closed or not self.cfg.deliver_subject or subject == self.dsubj:
            return
        if self.pending:
            now = time.time_ns()
            for seq in sorted(self.pending):
                self.rdq.setdefault(seq, None)
                pd, _ = self.pending[seq]
                self.pending[seq] = (pd, now)
            self._arm_pending_timer(self.cfg.ack_wait / 1e9)
        registry = DeliverInterest.of(self.server)
        registry.discard(self.dsubj, self)
        self.dsubj = subject
        registry.add(subject, self)
        self._update_delivery_interest(self._has_delivery_interest())

    # --- heartbeats ----------------------------------------------------------------------------

    def _heartbeat(self) -> None:
        self._hb_timer = None
        if self.closed:
            return
        interval = self.cfg.idle_heartbeat / 1e9
        due = self._last_delivery + interval
        now = time.monotonic()
        if now >= due - 0.001:
            if self.active:
                self._send_idle_heartbeat(self.dsubj)
            self._last_delivery = now
            due = now + interval
        self._hb_timer = self.loop.call_later(max(due - now, 0.001), self._heartbeat)

    def _send_idle_heartbeat(self, subject: str) -> None:
        hdr = heartbeat_status(self.dseq - 1, self.sseq - 1, self.fcid)
        self.server.publish_internal(subject, b"", hdr=hdr)

    # --- flow control --------------------------------------------------------------------------

    def _after_push_delivery(self, size: int) -> None:
        """Account a delivered message against the window; ask for a response when due."""
        self.pbytes += size
        if not self.fcid:
            if self.pbytes > self.maxpb // 2:
                self._send_flow_control()
        elif self.pbytes - self.fcsz >= self.maxpb:
            self.fcsz += size

    def _send_flow_control(self) -> None:
        token = "".join(random.choice(_FC_DIGITS) for _ in range(4))
        reply = f"$JS.FC.{self.stream.name}.{self.name}.{token}"
        self.fcsz, self.fcid = self.pbytes, reply
        self.server.publish_internal(self.dsubj, b"", reply=reply, hdr=_FC_REQUEST)

    def _on_flow_control(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        """``processFlowControl``: only the latest request counts; widen the window and resume."""
        if self.closed or subject != self.fcid:
            return
        if self.maxpb < self.pblimit:
            self.maxpb = min(self.maxpb * 2, self.pblimit)
        self.pbytes = max(self.pbytes - self.fcsz, 0)
        self.fcid, self.fcsz = "", 0
        self._kick()

    # --- rate limit ----------------------------------------------------------------------------

    def _set_rate_limit(self, bps: int) -> None:
        if not bps:
            self.rate = None
            return
        max_size = self.stream.cfg.max_msg_size
        if max_size <= 0:
            max_size = int(getattr(self.server.options, "max_payload", 0) or DEFAULT_MAX_PAYLOAD)
        self.rate = RateLimiter(bps / 8, max_size)

    def _rate_delay(self, size: int) -> bool:
        """True when ``size`` bytes must wait; the delivery pass resumes after the wait."""
        assert self.rate is not None
        wait = self.rate.delay_for(size)
        if wait <= 0:
            return False
        self._delay(wait)
        return True
