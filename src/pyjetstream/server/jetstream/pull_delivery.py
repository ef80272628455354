"""Pull consumers: ``CONSUMER.MSG.NEXT`` requests, the waiting queue, statuses, inactivity.

A mixin of :class:`~pyjetstream.server.jetstream.consumer.Consumer` (nats-server ``consumer.go``
``processNextMsgRequest``, ``nextWaiting``, ``processWaiting``, ``deleteNotActive``). The status
messages and their headers are nats-server's, byte for byte; ``409 Batch Completed`` is ⟨2.10+⟩.
"""

from __future__ import annotations

import random
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.server.jetstream.pull_requests import (
    CONSUMER_DELETED,
    MAX_WAITING_EXCEEDED,
    NO_MESSAGES,
    PUSH_BASED,
    REQUESTS_PENDING,
    PullRequestError,
    WaitingRequest,
    WaitQueue,
    heartbeat_status,
    max_expires_status,
    parse_pull_request,
    pending_status,
    simple_status,
)

if TYPE_CHECKING:
    from pyjetstream.api.models_consumer import ConsumerConfig

__all__ = ["PullDelivery"]

# nats-server adds up to a second of jitter to the inactivity threshold of pull consumers.
_JITTER_MIN, _JITTER_MAX = 0.1, 1.0


class PullDelivery:
    """Pull request handling and consumer inactivity. Mixed into Consumer."""

    # Provided by Consumer.
    cfg: ConsumerConfig
    server: Any
    loop: Any
    closed: bool
    sseq: int
    dseq: int
    rdq: dict[int, None]
    active: bool
    _pass: int

    if TYPE_CHECKING:

        def _kick(self) -> None: ...
        def num_pending(self) -> int: ...
        def delete(self) -> None: ...

    def _init_pull(self) -> None:
        self.waiting = WaitQueue(self.cfg.max_waiting if not self.cfg.deliver_subject else 0)
        self._wtmr: Any = None
        self._wtmr_at = 0.0
        self._dtmr: Any = None
        self.dthresh = 0.0
        self._update_inactive_threshold(start=False)

    def _start_pull(self) -> None:
        if self.dthresh:
            self._start_inactivity_timer(self.dthresh)

    def _stop_pull(self) -> None:
        if self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None
        self._stop_inactivity_timer()

    # --- requests ------------------------------------------------------------------------------

    def _on_pull_request(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        if not reply or self.closed:
            return
        if self.cfg.deliver_subject:
            self.server.publish_internal(reply, b"", hdr=PUSH_BASED)
            return
        self._process_next_request(reply, payload)

    def _send_status(self, reply: str, hdr: bytes) -> None:
        self.server.publish_internal(reply, b"", hdr=hdr)

    def _process_next_request(self, reply: str, body: bytes) -> None:
        """``processNextMsgRequest``: validate a pull request and queue it."""
        if self.closed:
            return
        if self.cfg.deliver_subject:
            self._send_status(reply, PUSH_BASED)
            return
        try:
            req = parse_pull_request(body)
        except PullRequestError as exc:
            self._send_status(reply, simple_status(400, f"Bad Request - {exc}"))
            return
        cfg = self.cfg
        if cfg.max_batch > 0 and req.batch > cfg.max_batch:
            self._send_status(reply, simple_status(409, f"Exceeded MaxRequestBatch of {cfg.max_batch}"))
            return
        if req.expires and cfg.max_expires > 0 and req.expires > cfg.max_expires:
            self._send_status(reply, max_expires_status(cfg.max_expires))
            return
        if req.max_bytes > 0 and cfg.max_bytes > 0 and req.max_bytes > cfg.max_bytes:
            self._send_status(reply, simple_status(409, f"Exceeded MaxRequestMaxBytes of {cfg.max_bytes}"))
            return
        waiting = self.waiting
        if waiting.is_full():
            self._process_waiting(eos=False)
        if req.no_wait:
            msgs_pending = self.num_pending() + len(self.rdq)
            if msgs_pending == 0 and not req.expires:
                waiting.last = time.monotonic()
                self._send_status(reply, NO_MESSAGES)
                return
            if msgs_pending > 0 and msgs_pending < self._process_waiting(eos=False):
                waiting.last = time.monotonic()
                self._send_status(reply, REQUESTS_PENDING)
                return
        now = time.monotonic()
        expires = now + req.expires / 1e9 if req.expires else 0.0
        wr = WaitingRequest(reply, req.batch, req.max_bytes, expires, req.no_wait, req.heartbeat / 1e9)
        if not waiting.add(wr):
            self._send_status(reply, MAX_WAITING_EXCEEDED)
            return
        if expires and (not self._wtmr or expires < self._wtmr_at):
            self._arm_waiting_timer(expires)
        if wr.hbt and (not self._wtmr or wr.hbt < self._wtmr_at):
            self._arm_waiting_timer(wr.hbt)
        self._kick()

    def _next_waiting(self, size: int) -> WaitingRequest | None:
        """``nextWaiting``: the request the next message (of ``size`` bytes) goes to."""
        waiting = self.waiting
        has_interest = self.server.has_interest
        current = self._pass
        while waiting:
            wr = waiting.peek()
            assert wr is not None
            if wr.max_bytes > 0:
                if size <= wr.max_bytes:
                    wr.max_bytes -= size
                    if wr.max_bytes == 0:
                        wr.n = 1  # deliver this one, then the request is done
                else:
                    self._send_status(
                        wr.reply, pending_status(409, "Message Size Exceeds MaxBytes", wr.n, wr.max_bytes)
                    )
                    waiting.remove_head()
                    continue
            if not wr.expires or time.monotonic() < wr.expires:
                if wr.checked == current:
                    return waiting.pop()
                if has_interest(wr.reply):
                    wr.checked = current
                    return waiting.pop()
            else:
                self._send_status(wr.reply, wr.timeout_status())
            waiting.remove_head()
        return None

    def _send_batch_completed(self, reply: str, remaining_bytes: int) -> None:
        """⟨2.10+⟩ the batch is full but the request still allowed bytes."""
        self._send_status(reply, pending_status(409, "Batch Completed", 0, remaining_bytes))

    def _process_waiting(self, eos: bool) -> int:
        """``processWaiting``: expire, drop the uninterested, heartbeat; returns batches wanted.

        ``eos`` (end of stream) also ends ``no_wait`` requests that already got something.
        """
        waiting = self.waiting
        if not waiting:
            return 0
        now = time.monotonic()
        has_interest = self.server.has_interest
        keep: list[WaitingRequest] = []
        wanted = 0
        fexp = 0.0
        changed = False
        for wr in waiting:
            if (eos and wr.no_wait and wr.delivered > 0) or (wr.expires and now >= wr.expires):
                self._send_status(wr.reply, wr.timeout_status())
                changed = True
                continue
            if not has_interest(wr.reply):
                changed = True
                continue
            wanted += wr.n
            if wr.hbt:
                if now >= wr.hbt:
                    self._send_status(wr.reply, heartbeat_status(self.dseq - 1, self.sseq - 1))
                    wr.hbt = now + wr.hb
                if not fexp or wr.hbt < fexp:
                    fexp = wr.hbt
            if wr.expires and (not fexp or wr.expires < fexp):
                fexp = wr.expires
            keep.append(wr)
        if changed:
            waiting.retain(keep)
        if fexp:
            self._arm_waiting_timer(fexp)
        elif self._wtmr is not None:
            self._wtmr.cancel()
            self._wtmr = None
        return wanted

    def _arm_waiting_timer(self, when: float) -> None:
        if self._wtmr is not None:
            if self._wtmr_at == when:
                return
            self._wtmr.cancel()
        self._wtmr_at = when
        self._wtmr = self.loop.call_later(max(when - time.monotonic(), 0.001), self._waiting_timer)

    def _waiting_timer(self) -> None:
        self._wtmr = None
        if self.closed:
            return
        self._process_waiting(eos=True)
        if self.waiting:
            self._kick()

    def _release_waiting(self) -> None:
        """The consumer is being deleted: tell every waiting request (``releaseAnyPendingRequests``)."""
        for wr in self.waiting.clear():
            self._send_status(wr.reply, CONSUMER_DELETED)

    # --- inactivity ----------------------------------------------------------------------------

    def _update_inactive_threshold(self, start: bool = True) -> None:
        """``updateInactiveThreshold``: the delete timer's period (with nats-server's jitter)."""
        threshold = self.cfg.inactive_threshold / 1e9
        if threshold > 0:
            if not self.cfg.deliver_subject:
                threshold += random.uniform(_JITTER_MIN, _JITTER_MAX)
            self.dthresh = threshold
        else:
            self.dthresh = 0.0
        if start:
            self._stop_inactivity_timer()
            if self.dthresh and (not self.cfg.deliver_subject or not self.active):
                self._start_inactivity_timer(self.dthresh)

    def _start_inactivity_timer(self, delay: float) -> None:
        self._stop_inactivity_timer()
        self._dtmr = self.loop.call_later(max(delay, 0.001), self._delete_not_active)

    def _stop_inactivity_timer(self) -> None:
        if self._dtmr is not None:
            self._dtmr.cancel()
            self._dtmr = None

    def _suppress_deletion(self) -> None:
        """Ack activity keeps the consumer alive."""
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self._dtmr is not None:
                self._start_inactivity_timer(self.dthresh)
        else:
            self.waiting.last = time.monotonic()

    def _delete_not_active(self) -> None:
        """``deleteNotActive``: delete unless interest or activity came back meanwhile."""
        self._dtmr = None
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self.active:
                return
        else:
            elapsed = time.monotonic() - self.waiting.last
            if elapsed <= self.cfg.inactive_threshold / 1e9:
                self._start_inactivity_timer(self.dthresh - elapsed)
                return
            self._process_waiting(eos=True)
            if self.waiting:
                self._start_inactivity_timer(self.dthresh)
                return
        self.delete()
