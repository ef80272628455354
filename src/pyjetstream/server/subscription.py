"""A subscription as the router sees it: a client's (``client`` set) or the server's own (``callback`` set).

Kept apart from `pyjetstream.server.sublist` (which indexes them and is compiled with mypyc,
see ``pyjetstream._compiled``): the router and ``ClientConnection.deliver`` read and write these
attributes on every message, which interpreted code does fastest on a plain ``__slots__`` class, and
the server subclasses it (``InternalSub``).
"""

from __future__ import annotations

from typing import Any

from pyjetstream.protocol.subjects import has_wildcard
from pyjetstream.protocol.writers import hmsg_prefix, msg_prefix

__all__ = ["Subscription"]


class Subscription:
    """One subscription: a client's (``client`` and its ``sink`` set) or the server's own (``callback`` set).

    ``msg_prefix``/``hmsg_prefix`` hold ``b"MSG <subject> <sid> "``/``b"HMSG …"`` for literal
    subscriptions, whose delivered subject is always their own.
    """

    __slots__ = (
        "callback",
        "client",
        "closed",
        "delivered",
        "hmsg_prefix",
        "literal",
        "max_msgs",
        "msg_line",
        "msg_line_size",
        "msg_prefix",
        "queue",
        "sid",
        "sid_b",
        "sink",
        "subject",
    )

    def __init__(
        self,
        subject: str,
        sid: str,
        queue: str = "",
        client: Any = None,
        callback: Any = None,
    ) -> None:
        self.subject = subject
        self.sid = sid
        self.sid_b = sid.encode()
        self.queue = queue
        self.client = client
        #: The client connection's output (`FrameSink`), None for the server's own subscriptions.
        self.sink: Any = client.sink if client is not None else None
        self.callback = callback
        self.max_msgs = 0
        self.delivered = 0
        self.closed = False
        self.literal = not has_wildcard(subject)
        # A literal subscription is only ever delivered its own subject: pre-encode the MSG line start.
        if self.literal:
            self.msg_prefix = msg_prefix(subject.encode(), self.sid_b)
            self.hmsg_prefix = hmsg_prefix(subject.encode(), self.sid_b)
        else:
            self.msg_prefix = self.hmsg_prefix = b""
        # The whole ``MSG <subject> <sid> <size>\r\n`` line of the last size delivered without a
        # reply (the router's direct path: a publisher usually repeats one size).
        self.msg_line = b""
        self.msg_line_size = -1

    def __repr__(self) -> str:
        queue = f" queue={self.queue!r}" if self.queue else ""
        return f"<Subscription {self.subject!r} sid={self.sid!r}{queue}>"
