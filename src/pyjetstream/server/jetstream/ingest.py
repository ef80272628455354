"""A stream's ingest limits: ``jetstream { max_buffered_size, max_buffered_msgs }`` (2.11+).

nats-server queues every publish into a stream on an in-process queue (``mset.msgs``) bounded by
these two limits (defaults 128 MiB and 100,000 messages); a publish that does not fit is dropped
and, when it has a reply subject, answered ``429 Too Many Requests`` with error 10167 — before
any of the stream's own checks (``queueInbound`` in stream.go; ``ipQueue.push``). The size of an
entry is ``len(subject) + len(reply) + len(headers) + len(payload)``.

The embedded server stores each publish in the callback that receives it, so its queue never
holds more than the message being pushed: the message-count limit cannot be reached (nats-server
refuses only when the queue already holds the limit), while a single message larger than the
size limit is refused exactly as nats-server refuses it on an empty queue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.codec import encode_pub_ack_error
from pyjetstream.api.headers import Status, status_block

if TYPE_CHECKING:
    from pyjetstream.server.options import ServerOptions

DEFAULT_MAX_BUFFERED_MSGS = 100_000  # nats-server streamDefaultMaxQueueMsgs
DEFAULT_MAX_BUFFERED_SIZE = 128 * 1024 * 1024  # streamDefaultMaxQueueBytes
TOO_MANY_REQUESTS = status_block(Status.TOO_MANY_REQUESTS)


class IngestLimits:
    """The limits one stream applies to what it is handed (nats-server reads them at stream creation)."""

    __slots__ = ("max_msgs", "max_size")

    def __init__(self, options: ServerOptions) -> None:
        self.max_msgs = options.jetstream_max_buffered_msgs or DEFAULT_MAX_BUFFERED_MSGS
        size = options.jetstream_max_buffered_size or DEFAULT_MAX_BUFFERED_SIZE
        self.max_size = size if size > 0 else 0  # a negative size is a huge uint64 in Go: no limit

    def refuses(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, queued: int = 0) -> bool:
        """Whether a message does not fit the queue (``queued`` entries already waiting)."""
        if 0 < self.max_msgs <= queued:
            return True
        if not self.max_size:
            return False
        size = len(subject) + len(reply) + len(hdr or b"") + len(payload)
        return size > self.max_size


def too_many_requests(stream: str) -> tuple[bytes, bytes]:
    """The ``(headers, body)`` of nats-server's 429 answer to a publish the queue refused."""
    return TOO_MANY_REQUESTS, encode_pub_ack_error(stream, E.JSStreamTooManyRequests())
