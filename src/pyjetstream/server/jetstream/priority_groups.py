"""⟨2.11+⟩ Priority groups of a pull consumer (ADR-42; nats-server ``consumer.go``).

A consumer with ``priority_policy`` and ``priority_groups`` takes pull requests that name one of
its groups. The policy decides which waiting request gets the next message:

- ``overflow``: a request with ``min_pending`` / ``min_ack_pending`` only gets messages once the
  consumer has that many pending (or unacknowledged) messages; others are passed over.
- ``pinned_client``: the first request without a pin id gets one (``assignNewPinId``, a
  ``PINNED`` advisory); from then on only requests carrying that ``id`` get messages, each with a
  ``Nats-Pin-Id`` header. A request with another id gets ``423``. The pin lapses when no request
  with it came for ``priority_timeout`` (an ``UNPINNED`` advisory, reason ``timeout``), or by
  ``CONSUMER.UNPIN`` (reason ``admin``).
- ``prioritized`` (⟨2.12+⟩): requests wait sorted by ``priority`` (0 first).

Like nats-server, the pin lives in memory only: after a restart the next request gets a new pin.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import TYPE_CHECKING

from pyjetstream.api import subjects as S
from pyjetstream.api.enums import PriorityPolicy
from pyjetstream.api.headers import PIN_ID, Status, pending_status_block, status_block
from pyjetstream.api.models_consumer import PriorityGroupState, PullRequest
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime
from pyjetstream.server.jetstream import advisories

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.pull_delivery import WaitingRequest

__all__ = ["PriorityGroups", "new_pin_id"]

_NUID_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#: The system's cryptographic source (what ``secrets.choice`` draws from; ``secrets`` imports ``hmac`` and
#: with it OpenSSL's digests, which a server's start does not load).
_SYSTEM_RANDOM = random.SystemRandom()
# ``423`` for a request whose pin id is not (or no longer) the current one, once it is picked.
_WRONG_PIN = (423, "Nats-Wrong-Pin-Id")

_NONE = PriorityPolicy.NONE  # (an enum member looked up once, not per request)


def new_pin_id() -> str:
    """A fresh pin id, 22 base-62 characters like nats-server's ``nuid.Next()``."""
    return "".join(_SYSTEM_RANDOM.choice(_NUID_DIGITS) for _ in range(22))


def _bad_request(reason: str) -> bytes:
    return status_block(Status.bad_request(reason))


class PriorityGroups:
    """The priority policy of one pull consumer, and its pin."""

    __slots__ = ("_pin_timer", "consumer", "pin_id", "pinned_ts")

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.pin_id = ""
        self.pinned_ts = 0
        self._pin_timer: asyncio.TimerHandle | None = None

    @property
    def policy(self) -> PriorityPolicy:
        return self.consumer.cfg.priority_policy

    def stop(self) -> None:
        if self._pin_timer is not None:
            self._pin_timer.cancel()
            self._pin_timer = None

    # --- requests ------------------------------------------------------------------------------

    def check_request(self, req: PullRequest) -> bytes | None:
        """The status refusing a (JSON) pull request, or None (``processNextMsgRequest``)."""
        policy = self.policy
        if policy == _NONE and not (req.min_pending or req.min_ack_pending or req.id) and 0 <= req.priority <= 9:
            return None  # (every pull request of a consumer without a priority policy: the checks below, at once)
        if (req.min_pending or req.min_ack_pending) and policy != PriorityPolicy.OVERFLOW:
            return _bad_request("Not a Overflow Priority consumer")
        if req.id and policy != PriorityPolicy.PINNED_CLIENT:
            return _bad_request("Not a Pinned Client Priority consumer")
        if req.priority < 0 or req.priority > 9:
            return _bad_request("Priority must be between 0 and 9")
        if policy == PriorityPolicy.NONE:
            return None
        if not req.group:
            return _bad_request("Priority Group missing")
        if req.group not in self.consumer.cfg.priority_groups:
            return _bad_request("Invalid Priority Group")
        if self.pin_id:
            if req.id == self.pin_id:
                self._arm(req.group)
            elif req.id:
                return status_block(Status.PIN_ID_MISMATCH)
        return None

    def passes_over(self, wr: WaitingRequest, need_pin: bool) -> int:
        """Whether the head request ``wr`` may take the next message (``nextWaiting``).

        Returns 0 (take it), 1 (pass it over: cycle to the back) or 2 (drop it: it was told 423).
        ``need_pin``: no pin is assigned yet, the first request without an id gets one.
        """
        policy = self.policy
        if policy == PriorityPolicy.PINNED_CLIENT:
            if need_pin:
                if not wr.pin_id:
                    if wr.group:
                        self._assign(wr)
                    return 0
                self._wrong_pin(wr)
                return 2
            if self.pin_id:
                if wr.pin_id == self.pin_id:
                    return 0
                if not wr.pin_id:
                    return 1
                self._wrong_pin(wr)
                return 2
        elif policy == PriorityPolicy.OVERFLOW and (wr.min_pending > 0 or wr.min_ack_pending > 0):
            consumer = self.consumer
            # (the consumer already counted the message being placed out of num pending)
            if not (
                (wr.min_pending > 0 and wr.min_pending <= consumer.npc + 1)
                or (wr.min_ack_pending > 0 and wr.min_ack_pending <= len(consumer.state.pending))
            ):
                return 1
        return 0

    def _wrong_pin(self, wr: WaitingRequest) -> None:
        self.consumer.pull.send_status(wr.reply, pending_status_block(_WRONG_PIN, wr.n, wr.max_bytes))

    def header_value(self) -> bytes:
        """``Nats-Pin-Id: <id>`` for a delivery of a pinned consumer."""
        return b"%s: %s\r\n" % (PIN_ID.encode(), self.pin_id.encode())

    # --- the pin -------------------------------------------------------------------------------

    def _assign(self, wr: WaitingRequest) -> None:
        """``assignNewPinId``: pin the client that sent ``wr``; it learns the id from the header."""
        self.pin_id = new_pin_id()
        self.pinned_ts = time.time_ns()
        wr.pin_id = self.pin_id
        self._arm(wr.group)
        consumer = self.consumer
        from pyjetstream.api.advisories import ConsumerGroupPinnedAdvisory  # Deferred: see advisories.py.

        advisories.publish(
            consumer.engine,
            S.advisory_consumer_pinned(consumer.stream.name, consumer.name),
            ConsumerGroupPinnedAdvisory(
                account=consumer.engine.account_name,
                stream=consumer.stream.name,
                consumer=consumer.name,
                group=wr.group,
                pinned_id=self.pin_id,
            ),
        )

    def release_claim(self) -> None:
        """The request that just got the pin could not take the message after all."""
        self._unassign()

    def _arm(self, group: str) -> None:
        """``setPinnedTimer``: the pin lapses after ``priority_timeout`` without a request."""
        if self._pin_timer is not None:
            self._pin_timer.cancel()
        ttl = self.consumer.cfg.priority_timeout / 1e9
        self._pin_timer = self.consumer.loop.call_later(ttl, self._expired, group)

    def _expired(self, group: str) -> None:
        self._pin_timer = None
        if not self.pin_id or self.consumer.closed:
            return
        self._unassign()
        self._unpinned(group, "timeout")
        self.consumer.kick()

    def _unassign(self) -> None:
        self.pin_id = ""
        self.pinned_ts = 0
        if self._pin_timer is not None:
            self._pin_timer.cancel()
            self._pin_timer = None

    def unpin(self, group: str) -> None:
        """``CONSUMER.UNPIN``: drop the pin (an ``admin`` UNPINNED advisory) and deliver again."""
        self._unassign()
        self._unpinned(group, "admin")
        self.consumer.kick()

    def _unpinned(self, group: str, reason: str) -> None:
        consumer = self.consumer
        from pyjetstream.api.advisories import ConsumerGroupUnpinnedAdvisory  # Deferred: see advisories.py.

        advisories.publish(
            consumer.engine,
            S.advisory_consumer_unpinned(consumer.stream.name, consumer.name),
            ConsumerGroupUnpinnedAdvisory(
                account=consumer.engine.account_name,
                stream=consumer.stream.name,
                consumer=consumer.name,
                group=group,
                reason=reason,
            ),
        )

    # --- info ----------------------------------------------------------------------------------

    def state(self) -> list[PriorityGroupState]:
        """ConsumerInfo ``priority_groups``: the first group with its pin (as nats-server reports)."""
        groups = self.consumer.cfg.priority_groups
        if not groups:
            return []
        return [
            PriorityGroupState(
                group=groups[0],
                pinned_client_id=self.pin_id,
                pinned_ts=NanoTime(self.pinned_ts) if self.pinned_ts else ZERO_TIME,
            )
        ]
