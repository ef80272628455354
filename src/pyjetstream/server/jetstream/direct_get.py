"""``$JS.API.DIRECT.GET.<stream>[.<subject>]``: messages served raw, with stream headers appended.

Only subscribed when the stream has ``allow_direct`` (or ``mirror_direct``); otherwise requests
get nats-server's 503 no-responders. Errors are status-only messages (``408 …``, ``404 …``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api import codec
from pyjetstream.api.models_msg import MsgGetRequest
from pyjetstream.api.timefmt import format_time
from pyjetstream.protocol.headers import EMPTY_HEADER

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.stream import Stream

EMPTY_REQUEST = b"NATS/1.0 408 Empty Request\r\n\r\n"
MALFORMED_REQUEST = b"NATS/1.0 408 Malformed Request\r\n\r\n"
BAD_REQUEST = b"NATS/1.0 408 Bad Request\r\n\r\n"
NOT_FOUND = b"NATS/1.0 404 Message Not Found\r\n\r\n"
PREFIX_TOKENS = 5  # $JS.API.DIRECT.GET.<stream>


class DirectGet:
    def __init__(self, stream: Stream) -> None:
        self.stream = stream

    def _status(self, reply: str, hdr: bytes) -> None:
        self.stream.server.publish_internal(reply, b"", hdr=hdr)

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        if not payload:
            return self._status(reply, EMPTY_REQUEST)
        try:
            req = codec.decode(payload, MsgGetRequest)  # Go semantics: null is the zero value
        except (msgspec.DecodeError, ValueError):
            return self._status(reply, MALFORMED_REQUEST)
        if req.seq < 0:  # a Go uint64 does not take a negative number
            return self._status(reply, MALFORMED_REQUEST)
        if req.seq == 0 and not req.last_by_subj and not req.next_by_subj:
            return self._status(reply, EMPTY_REQUEST)
        if (req.seq > 0 and req.last_by_subj) or (req.last_by_subj and req.next_by_subj):
            return self._status(reply, BAD_REQUEST)
        self._answer(reply, req)

    def on_last_by_subject(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        if not reply:
            return
        if payload:
            return self._status(reply, BAD_REQUEST)
        key = subject.split(".", PREFIX_TOKENS)[-1] if subject.count(".") >= PREFIX_TOKENS else ""
        if not key:
            return self._status(reply, BAD_REQUEST)
        self._answer(reply, MsgGetRequest(last_by_subj=key))

    def _answer(self, reply: str, req: MsgGetRequest) -> None:
        from pyjetstream.server.jetstream.api_stream import load_for_get

        msg = load_for_get(self.stream, req)
        if msg is None:
            return self._status(reply, NOT_FOUND)
        extra = (
            f"Nats-Stream: {self.stream.name}\r\nNats-Subject: {msg.subject}\r\n"
            f"Nats-Sequence: {msg.seq}\r\nNats-Time-Stamp: {format_time(msg.ts)}\r\n"
        ).encode()
        base = msg.hdr or EMPTY_HEADER
        self.stream.server.publish_internal(reply, msg.data, hdr=base[:-2] + extra + b"\r\n")
