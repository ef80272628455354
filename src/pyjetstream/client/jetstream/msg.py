"""A message delivered by a JetStream consumer: data, headers, metadata and the acks.

Acknowledging is publishing a payload to the message's reply subject (the ack subject, see
`pyjetstream.api.ack`): ``+ACK``, ``-NAK`` (optionally ``{"delay": ns}``), ``+WPI``, ``+TERM``
(optionally with a reason). An acknowledgement is final: a second ``ack``/``nak``/``term`` raises
[`MsgAlreadyAcked`][] (``in_progress`` may be sent any number of times before).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.ack import ACK, PROGRESS, MsgMetadata, nak_payload, parse_ack_reply, term_payload
from pyjetstream.api.durations import Duration, to_ns
from pyjetstream.client.jetstream.errors import MsgAlreadyAcked, MsgNoReply, MsgNotBound, NotJSMessage

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client
    from pyjetstream.client.msg import Msg
    from pyjetstream.protocol import HeaderBlock

DEFAULT_DOUBLE_ACK_TIMEOUT = 5.0


class JetStreamMsg:
    """A JetStream message (nats.go ``jetstream.Msg``) wrapping the core message ``raw``."""

    __slots__ = ("_acked", "_client", "_meta", "raw")

    def __init__(self, raw: Msg, client: Client | None = None) -> None:
        self.raw = raw
        self._client = client if client is not None else raw.client
        self._acked = False
        self._meta: MsgMetadata | None = None

    # --- content ---------------------------------------------------------------------------------

    @property
    def data(self) -> bytes:
        return self.raw.data

    @property
    def subject(self) -> str:
        return self.raw.subject

    @property
    def reply(self) -> str:
        return self.raw.reply

    @property
    def headers(self) -> dict[str, str] | None:
        """``{name: first value}``, ``None`` without headers (``header_block`` has every value)."""
        return self.raw.headers

    @property
    def header_block(self) -> HeaderBlock | None:
        return self.raw.header_block

    @property
    def size(self) -> int:
        """What the server counts against a pull request's ``max_bytes``."""
        raw = self.raw
        return len(raw.subject) + len(raw.reply) + len(raw.raw_headers or b"") + len(raw.data)

    def metadata(self) -> MsgMetadata:
        """Stream/consumer sequences, delivery count, pending and timestamp, from the ack subject."""
        meta = self._meta
        if meta is None:
            try:
                meta = self._meta = parse_ack_reply(self.raw.reply)
            except ValueError:
                raise NotJSMessage() from None
        return meta

    @property
    def is_acked(self) -> bool:
        return self._acked

    # --- acknowledgements ------------------------------------------------------------------------

    async def ack(self) -> None:
        """Acknowledge: the message was processed."""
        await self._send(ACK)

    async def double_ack(self, timeout: Duration = DEFAULT_DOUBLE_ACK_TIMEOUT) -> None:
        """Acknowledge and wait until the server confirms it processed the ack (``TimeoutError`` if
        it does not within ``timeout`` seconds)."""
        client = self._check()
        await client.request(self.raw.reply, ACK, timeout=timeout)
        self._acked = True

    async def nak(self) -> None:
        """Negative ack: redeliver now."""
        await self._send(nak_payload())

    async def nak_with_delay(self, delay: Duration) -> None:
        """Negative ack: redeliver after ``delay`` (seconds or a ``timedelta``)."""
        await self._send(nak_payload(to_ns(delay)))

    async def in_progress(self) -> None:
        """Still working on it: resets the server's ack-wait timer (may be sent repeatedly)."""
        client = self._check()
        client.publish_nowait(self.raw.reply, PROGRESS)
        await client.wait_writable()

    async def term(self) -> None:
        """Never redeliver this message."""
        await self._send(term_payload())

    async def term_with_reason(self, reason: str) -> None:
        """``term`` with a reason for the server's advisory (nats-server 2.10.4+; older servers
        ignore a ``+TERM`` that carries a reason)."""
        await self._send(term_payload(reason))

    async def _send(self, payload: bytes) -> None:
        client = self._check()
        client.publish_nowait(self.raw.reply, payload)
        self._acked = True
        await client.wait_writable()

    def _check(self) -> Client:
        if self._acked:
            raise MsgAlreadyAcked()
        if not self.raw.reply:
            raise MsgNoReply()
        if self._client is None:
            raise MsgNotBound()
        return self._client

    def __repr__(self) -> str:
        data = self.data if len(self.data) <= 64 else self.data[:64] + b"..."
        return f"<JetStreamMsg subject={self.subject!r} reply={self.reply!r} data={data!r}>"
