"""A received message, and the conversion of user headers to a wire header block.

Headers on a ``Msg``:
- ``msg.headers`` is a ``dict[str, str]`` (first value of each name, names as sent) or ``None`` when the
  message carried no header block — the view most code wants, and what nats-py offers;
- ``msg.header_block`` is the full ``HeaderBlock`` (every value of repeated names, status, description);
- ``msg.raw_headers`` is the header block as received (bytes) for zero-cost forwarding;
- ``msg.status`` / ``msg.description`` surface an inline status (``503``, ``404 No Messages`` …), 0/"" if none.
Headers are parsed lazily, on first access, so a subscriber that never looks pays nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from pyjetstream.client.errors import BadSubjectError, HeaderError
from pyjetstream.protocol import HeaderBlock, encode_headers, parse_headers
from pyjetstream.protocol import HeaderError as WireHeaderError

if TYPE_CHECKING:
    from pyjetstream.client.connection import Client
    from pyjetstream.client.subscription import Subscription

#: Headers to publish: a mapping (``str`` or list-of-``str`` values), a ``HeaderBlock``, or a block
#: already encoded (``bytes``: ``NATS/1.0\r\n…\r\n\r\n`` as ``protocol.encode_headers`` writes it),
#: which bulk producers (the Spark sink) frame themselves and which is sent as is.
HeadersArg = Mapping[str, str | Iterable[str]] | HeaderBlock | bytes

BLOCK_START = b"NATS/1.0"  # an encoded header block starts and ends so
BLOCK_END = b"\r\n\r\n"


def encode_user_headers(headers: HeadersArg) -> bytes:
    """A header block from a mapping (``str`` or list-of-``str`` values), a ``HeaderBlock``, or
    an encoded block (checked to start and end as one)."""
    if isinstance(headers, bytes):
        if not headers.startswith(BLOCK_START) or not headers.endswith(BLOCK_END):
            raise HeaderError(f"not an encoded header block: {headers[:40]!r}")
        return headers
    try:
        if isinstance(headers, HeaderBlock):
            return encode_headers(headers.headers, headers.status, headers.description)
        return encode_headers(headers)
    except WireHeaderError as exc:
        raise HeaderError(str(exc)) from exc


_EMPTY_BLOCK = HeaderBlock({}, 0, "")


class Msg:
    """A message delivered to a subscription (or returned by ``request``)."""

    __slots__ = ("_block", "_client", "_sub", "data", "raw_headers", "reply", "sid", "subject")

    def __init__(
        self,
        subject: str,
        data: bytes = b"",
        reply: str = "",
        raw_headers: bytes | None = None,
        sid: int = 0,
        client: Client | None = None,
        subscription: Subscription | None = None,
    ) -> None:
        self.subject = subject
        self.data = data
        self.reply = reply
        self.raw_headers = raw_headers
        self.sid = sid
        self._client = client
        self._sub = subscription
        self._block: HeaderBlock | None = None

    @property
    def header_block(self) -> HeaderBlock | None:
        """All headers with every value, plus status/description; ``None`` without a header block."""
        if self.raw_headers is None:
            return None
        block = self._block
        if block is None:
            if not self.raw_headers:
                block = _EMPTY_BLOCK
            else:
                try:
                    block = parse_headers(self.raw_headers)
                except WireHeaderError:
                    block = _EMPTY_BLOCK
            self._block = block
        return block

    @property
    def headers(self) -> dict[str, str] | None:
        """``{name: first value}``; ``None`` when the message had no header block."""
        block = self.header_block
        if block is None:
            return None
        return {name: values[0] for name, values in block.headers.items() if values}

    @property
    def status(self) -> int:
        """Inline status code (``503``, ``404``, ``408``, ``100`` …); 0 for an ordinary message."""
        block = self.header_block
        return block.status if block is not None else 0

    @property
    def description(self) -> str:
        block = self.header_block
        return block.description if block is not None else ""

    @property
    def subscription(self) -> Subscription | None:
        return self._sub

    @property
    def client(self) -> Client | None:
        return self._client

    def is_no_responders(self) -> bool:
        """The server's ``503`` answer to a request nobody listens to."""
        return self.raw_headers is not None and not self.data and self.status == 503

    async def respond(self, data: bytes = b"", headers: HeadersArg | None = None) -> None:
        """Publish ``data`` to this message's reply subject."""
        if not self.reply:
            raise BadSubjectError("message has no reply subject to respond to")
        if self._client is None:
            raise BadSubjectError("message is not bound to a client")
        await self._client.publish(self.reply, data, headers=headers)

    def __repr__(self) -> str:
        data = self.data if len(self.data) <= 64 else self.data[:64] + b"..."
        extra = f" reply={self.reply!r}" if self.reply else ""
        if self.raw_headers is not None:
            extra += f" headers={self.header_block!r}"
        return f"<Msg subject={self.subject!r}{extra} data={data!r}>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Msg):
            return NotImplemented
        return (self.subject, self.reply, self.data, self.raw_headers) == (
            other.subject,
            other.reply,
            other.data,
            other.raw_headers,
        )

    __hash__ = None  # type: ignore[assignment]
