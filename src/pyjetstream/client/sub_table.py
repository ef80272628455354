"""The connection's subscription table: sid → [`Subscription`][], sid allocation, reconnect replay.

One owner for that state (nats.go keeps it in ``Conn.subs`` and rebuilds it in ``resendSubscriptions``).
The connection's read path looks messages up in `SubscriptionTable.by_sid` directly (hot path);
everything else goes through the methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.protocol import encode_sub, encode_unsub

if TYPE_CHECKING:
    from pyjetstream.client.subscription import Subscription


class SubscriptionTable:
    """Live subscriptions of one connection, by sid (sids are never reused)."""

    __slots__ = ("_next_sid", "by_sid")

    def __init__(self) -> None:
        self.by_sid: dict[int, Subscription] = {}
        self._next_sid = 1

    def next_sid(self) -> int:
        sid = self._next_sid
        self._next_sid += 1
        return sid

    def add(self, sub: Subscription) -> None:
        self.by_sid[sub.sid] = sub

    def get(self, sid: int) -> Subscription | None:
        return self.by_sid.get(sid)

    def holds(self, sub: Subscription) -> bool:
        """``sub`` is the live subscription under its sid (not one already removed)."""
        return self.by_sid.get(sub.sid) is sub

    def discard(self, sub: Subscription) -> None:
        if self.by_sid.get(sub.sid) is sub:
            del self.by_sid[sub.sid]

    def values(self) -> list[Subscription]:
        return list(self.by_sid.values())

    def __len__(self) -> int:
        return len(self.by_sid)

    def replay(self) -> bytearray:
        """SUB (and UNSUB with the remaining count) for every subscription, to re-send after a reconnect
        (nats.go ``resendSubscriptions``). Draining ones are left out; one whose auto-unsubscribe
        count is already reached is finished and removed instead."""
        out = bytearray()
        for sid, sub in list(self.by_sid.items()):
            if sub._draining:
                continue
            out += encode_sub(sub.subject, sid, sub.queue)
            if sub._max:
                remaining = sub._max - sub._received
                if remaining <= 0:
                    del self.by_sid[sid]
                    sub._finish()
                    continue
                out += encode_unsub(sid, remaining)
        return out

    def abort_all(self, exc: Exception) -> None:
        """The connection closed: every subscription ends with ``exc``."""
        for sub in list(self.by_sid.values()):
            sub._abort(exc)
        self.by_sid.clear()
