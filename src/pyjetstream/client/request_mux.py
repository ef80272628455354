"""Request/reply over one muxed inbox: a single ``<inbox>.<nuid>.*`` subscription for every request.

nats.go's ``respMux`` / ``createNewRequestAndSend``: each request gets a token appended to the shared
prefix as its reply subject, and the reply is matched back to the waiting future by that token. One
subscription serves every request, so a request costs one PUB and no SUB/UNSUB.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from pyjetstream.client.errors import NoRespondersError, TimeoutError
from pyjetstream.client.msg import HeadersArg, Msg

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client
    from pyjetstream.client.subscription import Subscription
    from pyjetstream.protocol import Msg as WireMsg


def expire(fut: asyncio.Future[Any], what: str) -> None:
    if not fut.done():
        fut.set_exception(TimeoutError(what))


class RequestMux:
    """The requests in flight on one connection and the inbox subscription their replies come to."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self.subscription: Subscription | None = None
        self._prefix = ""
        self._prefix_len = 0
        self.pending: dict[str, asyncio.Future[Msg]] = {}
        self._token = 0

    @property
    def sid(self) -> int:
        """The inbox subscription's sid (-1 before the first request)."""
        return self.subscription.sid if self.subscription is not None else -1

    async def request(self, subject: str, payload: bytes, timeout: float, headers: HeadersArg | None) -> Msg:
        client = self._client
        if self.subscription is None:
            client._check_can_subscribe()
            self._subscribe()
        self._token += 1
        token = str(self._token)
        loop = client._loop
        assert loop is not None
        fut: asyncio.Future[Msg] = loop.create_future()
        self.pending[token] = fut
        timer = loop.call_later(timeout, expire, fut, f"no reply to request on {subject!r} within {timeout}s")
        try:
            client.publish_nowait(subject, payload, reply=self._prefix + token, headers=headers)
            if client._write_paused:
                await client.wait_writable()
            msg = await fut
        finally:
            timer.cancel()
            self.pending.pop(token, None)
        if msg.is_no_responders():
            raise NoRespondersError(f"no responders on {subject!r}")
        return msg

    def _subscribe(self) -> None:
        client = self._client
        prefix = f"{client.options.inbox_prefix}.{client._nuid.next()}."
        self._prefix = prefix
        self._prefix_len = len(prefix)
        self.subscription = client._add_subscription(prefix + "*", "", None, 0, 0, 0)

    def deliver(self, wmsg: WireMsg) -> None:
        """A message on the inbox subscription: complete the request its token names (late ones are dropped)."""
        fut = self.pending.pop(wmsg.subject[self._prefix_len :], None)
        if fut is not None and not fut.done():
            fut.set_result(Msg(wmsg.subject, wmsg.payload, wmsg.reply, wmsg.hdr, wmsg.sid, self._client, None))

    def fail_all(self, exc: Exception) -> None:
        for fut in self.pending.values():
            if not fut.done():
                fut.set_exception(exc)
        self.pending.clear()
