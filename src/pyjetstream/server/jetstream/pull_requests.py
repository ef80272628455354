"""Pull requests: parsing, the waiting queue, and the status messages sent to requesters.

Mirrors nats-server ``consumer.go`` (``nextReqFromMsg``, ``waitQueue``, ``waitingRequest``): a
request asks for ``batch`` messages (optionally capped by ``max_bytes``) to be sent to its reply
subject until ``expires``. Requests are served round robin: one that still wants more moves to
the back of the queue after each message.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Iterator

from pyjetstream.api.timefmt import format_go_duration

__all__ = [
    "PullRequestError",
    "WaitQueue",
    "WaitingRequest",
    "heartbeat_status",
    "parse_pull_request",
    "pending_status",
    "simple_status",
]

PENDING_MSGS = "Nats-Pending-Messages"
PENDING_BYTES = "Nats-Pending-Bytes"


def simple_status(code: int, description: str) -> bytes:
    """``NATS/1.0 <code> <description>`` with no other header."""
    return b"NATS/1.0 %d %s\r\n\r\n" % (code, description.encode())


def pending_status(code: int, description: str, msgs: int, nbytes: int) -> bytes:
    """A terminal status carrying what the request still wanted (nats-server's exact layout)."""
    return b"NATS/1.0 %d %s\r\n%s: %d\r\n%s: %d\r\n\r\n" % (
        code,
        description.encode(),
        PENDING_MSGS.encode(),
        msgs,
        PENDING_BYTES.encode(),
        nbytes,
    )


def heartbeat_status(last_consumer_seq: int, last_stream_seq: int, stalled: str = "") -> bytes:
    """``100 Idle Heartbeat`` with the last delivered consumer/stream sequences (and a stalled FC)."""
    hdr = b"NATS/1.0 100 Idle Heartbeat\r\nNats-Last-Consumer: %d\r\nNats-Last-Stream: %d\r\n" % (
        last_consumer_seq,
        last_stream_seq,
    )
    if stalled:
        hdr += b"Nats-Consumer-Stalled: " + stalled.encode() + b"\r\n"
    return hdr + b"\r\n"


NO_MESSAGES = simple_status(404, "No Messages")
REQUESTS_PENDING = simple_status(408, "Requests Pending")
MAX_WAITING_EXCEEDED = simple_status(409, "Exceeded MaxWaiting")
PUSH_BASED = simple_status(409, "Consumer is push based")
CONSUMER_DELETED = simple_status(409, "Consumer Deleted")


class PullRequestError(ValueError):
    """An unusable pull request; ``str()`` is the reason after ``Bad Request - ``."""


class ParsedPullRequest:
    __slots__ = ("batch", "expires", "heartbeat", "max_bytes", "no_wait")

    def __init__(self, batch: int, expires: int, max_bytes: int, no_wait: bool, heartbeat: int) -> None:
        self.batch = batch
        self.expires = expires  # ns from now, 0 = never
        self.max_bytes = max_bytes
        self.no_wait = no_wait
        self.heartbeat = heartbeat  # ns, 0 = none


def _int_field(doc: dict[str, object], key: str) -> int:
    value = doc.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise PullRequestError(f"json: cannot unmarshal {type(value).__name__} into Go struct field")
    return value


def parse_pull_request(body: bytes) -> ParsedPullRequest:
    """``nextReqFromMsg``: empty ⇒ batch 1; JSON; a bare integer ⇒ batch N; anything else ⇒ batch 1."""
    req = body.strip()
    if not req:
        return ParsedPullRequest(1, 0, 0, False, 0)
    if req[:1] == b"{":
        try:
            doc = json.loads(req)
        except json.JSONDecodeError as exc:
            raise PullRequestError(go_json_error(exc)) from None
        except ValueError:
            raise PullRequestError("invalid JSON") from None
        if not isinstance(doc, dict):
            raise PullRequestError("json: cannot unmarshal request")
        # Go matches JSON keys case-insensitively.
        doc = {str(k).lower(): v for k, v in doc.items()}
        batch = _int_field(doc, "batch")
        expires = _int_field(doc, "expires")
        max_bytes = _int_field(doc, "max_bytes")
        heartbeat = _int_field(doc, "idle_heartbeat")
        no_wait = doc.get("no_wait") is True
        if heartbeat > 0 and heartbeat * 2 > expires:
            raise PullRequestError("heartbeat value too large")
        return ParsedPullRequest(max(batch, 1), expires, max_bytes, no_wait, heartbeat)
    try:
        return ParsedPullRequest(max(int(req), 1), 0, 0, False, 0)
    except ValueError:
        return ParsedPullRequest(1, 0, 0, False, 0)


_GO_JSON_CONTEXT = {
    "Expecting property name enclosed in double quotes": "looking for beginning of object key string",
    "Expecting value": "looking for beginning of value",
    "Expecting ':' delimiter": "after object key",
    "Expecting ',' delimiter": "after object key:value pair",
    "Extra data": "after top-level value",
}


def go_json_error(exc: json.JSONDecodeError) -> str:
    """The text Go's ``encoding/json`` gives for the same syntax error (common cases)."""
    if exc.pos >= len(exc.doc):
        return "unexpected end of JSON input"
    context = _GO_JSON_CONTEXT.get(exc.msg)
    if context is None:
        return exc.msg
    return f"invalid character {exc.doc[exc.pos]!r} {context}"


def max_expires_status(limit_ns: int) -> bytes:
    return simple_status(409, f"Exceeded MaxRequestExpires of {format_go_duration(limit_ns)}")


class WaitingRequest:
    """One pull request waiting for messages (``waitingRequest``)."""

    __slots__ = (
        "checked",
        "delivered",
        "expires",
        "hb",
        "hbt",
        "max_bytes",
        "n",
        "no_wait",
        "received",
        "reply",
    )

    def __init__(
        self, reply: str, batch: int, max_bytes: int, expires: float, no_wait: bool, hb: float
    ) -> None:
        now = time.monotonic()
        self.reply = reply
        self.n = batch  # messages still wanted
        self.delivered = 0
        self.max_bytes = max_bytes  # bytes still allowed (0 = no limit)
        self.expires = expires  # monotonic deadline, 0 = none
        self.no_wait = no_wait
        self.hb = hb  # heartbeat interval in seconds (0 = none)
        self.hbt = now + hb if hb else 0.0  # next heartbeat due
        self.received = now
        self.checked = -1  # the delivery pass that last saw interest in ``reply``

    def timeout_status(self) -> bytes:
        return pending_status(408, "Request Timeout", self.n, self.max_bytes)


class WaitQueue:
    """The bounded FIFO of waiting requests (``waitQueue``), capacity ``max_waiting``."""

    __slots__ = ("_q", "capacity", "last")

    def __init__(self, capacity: int) -> None:
        self._q: deque[WaitingRequest] = deque()
        self.capacity = capacity
        self.last = time.monotonic()  # last request received (inactivity tracking)

    def __len__(self) -> int:
        return len(self._q)

    def __bool__(self) -> bool:
        return bool(self._q)

    def __iter__(self) -> Iterator[WaitingRequest]:
        return iter(self._q)

    def is_full(self) -> bool:
        return len(self._q) >= self.capacity

    def add(self, wr: WaitingRequest) -> bool:
        if len(self._q) >= self.capacity:
            return False
        self._q.append(wr)
        self.last = wr.received
        return True

    def peek(self) -> WaitingRequest | None:
        return self._q[0] if self._q else None

    def pop(self) -> WaitingRequest:
        """Account one delivery to the head request; it moves to the back if it wants more."""
        q = self._q
        wr = q[0]
        wr.delivered += 1
        wr.n -= 1
        if wr.n <= 0:
            q.popleft()
        elif len(q) > 1:
            q.popleft()
            q.append(wr)
        return wr

    def remove_head(self) -> None:
        self._q.popleft()

    def retain(self, keep: list[WaitingRequest]) -> None:
        self._q = deque(keep)

    def clear(self) -> list[WaitingRequest]:
        items = list(self._q)
        self._q.clear()
        return items
