"""JetStream header names, their special values, and the inline status messages.

nats-server looks headers up case-sensitively at line start, so these exact spellings
matter. Status messages are header-only messages whose first line is
``NATS/1.0 <code> <description>``; `status_block` builds them byte-exact, with extra
headers appended the way the server writes them (``Name: value\\r\\n``).
"""

from __future__ import annotations

from collections.abc import Iterable

from .timefmt import format_go_duration

__all__ = [
    "BATCH_COMMIT",
    "BATCH_COMMIT_ALL",
    "BATCH_COMMIT_EOB",
    "BATCH_ID",
    "BATCH_SEQUENCE",
    "CONSUMER_STALLED",
    "COUNTER_SOURCES",
    "DESCRIPTION",
    "DIRECT_BATCH_TAIL",
    "EXPECTED_LAST_MSG_ID",
    "EXPECTED_LAST_SEQUENCE",
    "EXPECTED_LAST_SUBJECT_SEQUENCE",
    "EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT",
    "EXPECTED_STREAM",
    "INCR",
    "KV_OPERATION",
    "LAST_CONSUMER",
    "LAST_SEQUENCE",
    "LAST_STREAM",
    "MARKER_REASON",
    "MSG_ID",
    "MSG_SIZE",
    "MSG_TRACE_DEST",
    "MSG_TRACE_DEST_DISABLED",
    "MSG_TRACE_HOP",
    "MSG_TRACE_ONLY",
    "MSG_TRACE_ORIGIN_ACCOUNT",
    "NATS_PREFIX",
    "NUM_PENDING",
    "PENDING_BYTES",
    "PENDING_MESSAGES",
    "PIN_ID",
    "REQUEST_INFO",
    "REQUIRED_API_LEVEL",
    "ROLLUP",
    "ROLLUP_ALL",
    "ROLLUP_SUBJECT",
    "SCHEDULE",
    "SCHEDULER",
    "SCHEDULE_NEXT",
    "SCHEDULE_SOURCE",
    "SCHEDULE_TARGET",
    "SCHEDULE_TIME_ZONE",
    "SCHEDULE_TTL",
    "SEQUENCE",
    "STATUS",
    "STREAM",
    "STREAM_IDENTITY",
    "STREAM_SOURCE",
    "SUBJECT",
    "TIME_STAMP",
    "TTL",
    "UP_TO_SEQUENCE",
    "Status",
    "header_block",
    "header_lines",
    "heartbeat_block",
    "no_responders_block",
    "only_these_nats_headers",
    "pending_status_block",
    "publish_block",
    "publish_block_frame",
    "status_block",
    "status_prefix",
]

# Publishing into a stream.
MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQUENCE = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"  # ⟨2.11+⟩
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
ROLLUP = "Nats-Rollup"
ROLLUP_SUBJECT = "sub"  # purge the subject, keep this message
ROLLUP_ALL = "all"  # purge the stream, keep this message
TTL = "Nats-TTL"  # ⟨2.11+⟩ per-message TTL ("10s", "1h", seconds, or "never")
REQUEST_INFO = "Nats-Request-Info"  # server-internal; stripped from stored messages
REQUIRED_API_LEVEL = "Nats-Required-Api-Level"  # ⟨2.11+⟩ refuse the request below this API level

# ⟨2.12+⟩ atomic batch publish (ADR-50): every message carries the id and its 1-based sequence,
# the last also the commit ("1"; ⟨2.14⟩ "eob" commits without storing the message carrying it).
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
BATCH_COMMIT_ALL = "1"
BATCH_COMMIT_EOB = "eob"

# ⟨2.11+⟩ message tracing (``msgtrace.py`` has the events): the destination subject, the hop, the
# origin account and trace-only. Here, not there: a server reads them on every traced publish but
# makes the event models only for a traced message (issue 24: start-up imports).
MSG_TRACE_DEST = "Nats-Trace-Dest"
MSG_TRACE_HOP = "Nats-Trace-Hop"
MSG_TRACE_ORIGIN_ACCOUNT = "Nats-Trace-Origin-Account"
MSG_TRACE_ONLY = "Nats-Trace-Only"
#: The ``Nats-Trace-Dest`` value that turns tracing off (nats-server ``MsgTraceDestDisabled``, not
#: a valid subject): what a stored traced message carries, so that its deliveries are not traced.
MSG_TRACE_DEST_DISABLED = "trace disabled"

# ⟨2.12+⟩ counters (ADR-49): "+N" / "-N" on an empty body; sourced counters carry their origins.
INCR = "Nats-Incr"
COUNTER_SOURCES = "Nats-Counter-Sources"

# ⟨2.12+⟩ message schedules (ADR-51): "@at <RFC 3339>", ⟨2.14⟩ "@every <dur>", cron, "@hourly" ...
SCHEDULE = "Nats-Schedule"
SCHEDULE_TARGET = "Nats-Schedule-Target"
SCHEDULE_SOURCE = "Nats-Schedule-Source"  # ⟨2.14⟩ publish the last message of this subject
SCHEDULE_TTL = "Nats-Schedule-TTL"
SCHEDULE_TIME_ZONE = "Nats-Schedule-Time-Zone"  # ⟨2.14⟩ IANA zone, cron only
SCHEDULER = "Nats-Scheduler"  # on a produced message: the schedule subject
SCHEDULE_NEXT = "Nats-Schedule-Next"  # on a produced message: the next run

# Added by the server: direct get / republish / sourcing.
STREAM = "Nats-Stream"
SUBJECT = "Nats-Subject"
SEQUENCE = "Nats-Sequence"
TIME_STAMP = "Nats-Time-Stamp"  # RFC3339Nano UTC
LAST_SEQUENCE = "Nats-Last-Sequence"
MSG_SIZE = "Nats-Msg-Size"  # headers_only deliveries / republish
STREAM_SOURCE = "Nats-Stream-Source"
STREAM_IDENTITY = "Nats-Stream-Identity"  # ⟨2.15+⟩ a stream's identity (a hash of its creation time)
NUM_PENDING = "Nats-Num-Pending"  # ⟨2.11+⟩ batched direct get
UP_TO_SEQUENCE = "Nats-UpTo-Sequence"  # ⟨2.11+⟩
MARKER_REASON = "Nats-Marker-Reason"  # ⟨2.11+⟩ "MaxAge" | "Purge" | "Remove"
# What a batched direct get reply's header block ends with, in this order, one line each, then the
# blank line (nats-server's ``dgb`` template in stream.go, appended by ``genHeader`` after a message's
# own headers; the embedded server writes the same).
DIRECT_BATCH_TAIL = (STREAM, SUBJECT, SEQUENCE, TIME_STAMP, NUM_PENDING, LAST_SEQUENCE)

# Consumer statuses.
PENDING_MESSAGES = "Nats-Pending-Messages"
PENDING_BYTES = "Nats-Pending-Bytes"
LAST_CONSUMER = "Nats-Last-Consumer"
LAST_STREAM = "Nats-Last-Stream"
CONSUMER_STALLED = "Nats-Consumer-Stalled"
PIN_ID = "Nats-Pin-Id"  # ⟨2.11+⟩

# KV.
KV_OPERATION = "KV-Operation"  # "DEL" | "PURGE" (absent = put)

# Pseudo-headers clients (nats.go, nats.py) derive from the status line.
STATUS = "Status"
DESCRIPTION = "Description"


class Status:
    """Status codes and the exact descriptions nats-server sends with them."""

    IDLE_HEARTBEAT = (100, "Idle Heartbeat")
    FLOW_CONTROL = (100, "FlowControl Request")
    EOB = (204, "EOB")  # ⟨2.11+⟩ end of a batched direct get
    BAD_REQUEST = (400, "Bad Request")
    NO_MESSAGES = (404, "No Messages")
    MESSAGE_NOT_FOUND = (404, "Message Not Found")  # direct get miss
    NO_RESULTS = (404, "No Results")  # ⟨2.11+⟩ multi-last direct get that matched nothing
    REQUEST_TIMEOUT = (408, "Request Timeout")
    REQUESTS_PENDING = (408, "Requests Pending")
    INTEREST_EXPIRED = (408, "Interest Expired")
    EMPTY_REQUEST = (408, "Empty Request")  # direct get
    MALFORMED_REQUEST = (408, "Malformed Request")  # direct get
    DIRECT_BAD_REQUEST = (408, "Bad Request")  # direct get
    MAX_BYTES_EXCEEDED = (409, "Message Size Exceeds MaxBytes")
    MAX_WAITING_EXCEEDED = (409, "Exceeded MaxWaiting")
    PUSH_BASED = (409, "Consumer is push based")
    CONSUMER_DELETED = (409, "Consumer Deleted")
    LEADERSHIP_CHANGE = (409, "Leadership Change")
    SERVER_SHUTDOWN = (409, "Server Shutdown")
    BATCH_COMPLETED = (409, "Batch Completed")  # ⟨2.10+⟩
    REQUIRED_API_LEVEL = (412, "Required Api Level")  # ⟨2.11+⟩ direct get with Nats-Required-Api-Level too high
    TOO_MANY_RESULTS = (413, "Too Many Results")  # ⟨2.11+⟩ multi-last direct get over 1024 subjects
    TOO_MANY_REQUESTS = (429, "Too Many Requests")  # ⟨2.11+⟩ a stream's ingest queue is full
    PIN_ID_MISMATCH = (423, "Nats-Pin-Id mismatch")  # ⟨2.11+⟩
    NO_RESPONDERS = (503, "")  # sent without a description

    @staticmethod
    def bad_request(reason: str) -> tuple[int, str]:
        """``400 Bad Request - <reason>`` for an unparsable pull request."""
        return (400, f"Bad Request - {reason}")

    @staticmethod
    def max_request_batch(limit: int) -> tuple[int, str]:
        return (409, f"Exceeded MaxRequestBatch of {limit}")

    @staticmethod
    def max_request_expires(limit_ns: int) -> tuple[int, str]:
        """The limit is printed as a Go duration, e.g. ``Exceeded MaxRequestExpires of 1m0s``."""
        return (409, f"Exceeded MaxRequestExpires of {format_go_duration(limit_ns)}")

    @staticmethod
    def max_request_max_bytes(limit: int) -> tuple[int, str]:
        return (409, f"Exceeded MaxRequestMaxBytes of {limit}")


def publish_block_frame(expected_stream: str = "") -> tuple[bytes, bytes]:
    """``(head, tail)`` of the header block an idempotent writer (the Spark sink) gives each row:
    ``head + <message id> + tail`` is `publish_block` of that id — ``Nats-Msg-Id`` then,
    when given, ``Nats-Expected-Stream`` — so a batch's blocks are framed with one format each.
    The bytes ``protocol.encode_headers`` makes of the same two headers."""
    stream_line = f"\r\n{EXPECTED_STREAM}: {expected_stream}".encode() if expected_stream else b""
    return f"NATS/1.0\r\n{MSG_ID}: ".encode(), stream_line + b"\r\n\r\n"


def publish_block(msg_id: str = "", expected_stream: str = "") -> bytes | None:
    """The header block of a row: its ``Nats-Msg-Id`` and ``Nats-Expected-Stream`` (each left out
    when empty; ``None`` when both are)."""
    if msg_id:
        head, tail = publish_block_frame(expected_stream)
        return head + msg_id.encode() + tail
    if expected_stream:
        return f"NATS/1.0\r\n{EXPECTED_STREAM}: {expected_stream}\r\n\r\n".encode()
    return None


def header_block(headers: Iterable[tuple[str, str | int]]) -> bytes:
    """A plain header block, ``NATS/1.0\\r\\nName: value\\r\\n…\\r\\n``, in the order given (the
    bytes ``protocol.encode_headers`` makes of the same pairs): what the server attaches to the
    requests and replies it makes itself (a sourcing consumer's create, a flow-control answer,
    a consumer create's ``Nats-Stream-Identity``, a trace's ``Content-Encoding``)."""
    return ("NATS/1.0\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n").encode()


def status_prefix(code: int) -> bytes:
    """How a status message with this code begins (``NATS/1.0 100 ``): what a reader that only
    needs the code matches (a sourcing consumer telling heartbeats and flow control from data)."""
    return b"NATS/1.0 %d " % code


def status_block(status: tuple[int, str], headers: Iterable[tuple[str, str | int]] = ()) -> bytes:
    """The header block of a status message, e.g.
    ``NATS/1.0 408 Request Timeout\\r\\nNats-Pending-Messages: 4\\r\\nNats-Pending-Bytes: 0\\r\\n\\r\\n``.
    """
    code, description = status
    line = f"NATS/1.0 {code} {description}" if description else f"NATS/1.0 {code}"
    parts = [line, *(f"{name}: {value}" for name, value in headers)]
    return ("\r\n".join(parts) + "\r\n\r\n").encode()


def pending_status_block(status: tuple[int, str], msgs: int, nbytes: int) -> bytes:
    """A terminal pull status carrying what the request still wanted (``Nats-Pending-Messages`` /
    ``Nats-Pending-Bytes``), in nats-server's exact layout."""
    return status_block(status, ((PENDING_MESSAGES, msgs), (PENDING_BYTES, nbytes)))


def heartbeat_block(last_consumer_seq: int, last_stream_seq: int, stalled: str = "") -> bytes:
    """``100 Idle Heartbeat`` with the last delivered consumer/stream sequences and, while flow
    control is stalled, the flow-control reply subject (``Nats-Consumer-Stalled``). Without a
    stall, `status_block`'s bytes for it formatted in one step (`FAST_HEARTBEAT`): a push
    consumer sends one each idle interval, 1,000 a second for a stream sourcing 1,000 streams."""
    if FAST_HEARTBEAT and not stalled and type(last_consumer_seq) is int and type(last_stream_seq) is int:
        return _HEARTBEAT % (last_consumer_seq, last_stream_seq)
    extra: list[tuple[str, str | int]] = [(LAST_CONSUMER, last_consumer_seq), (LAST_STREAM, last_stream_seq)]
    if stalled:
        extra.append((CONSUMER_STALLED, stalled))
    return status_block(Status.IDLE_HEARTBEAT, extra)


#: `heartbeat_block` without a stall formats `_HEARTBEAT` (off: `status_block` each time; the same bytes).
FAST_HEARTBEAT = True
_HEARTBEAT = status_block(Status.IDLE_HEARTBEAT, ((LAST_CONSUMER, "%d"), (LAST_STREAM, "%d")))


def no_responders_block(subject: str) -> bytes:
    """``503`` no responders as nats-server 2.11+ writes it, naming the request's subject
    (``Nats-Subject``)."""
    return status_block(Status.NO_RESPONDERS, ((SUBJECT, subject),))


#: Every header a stream's publish checks look at begins with it (``Nats-Msg-Id``, ``Nats-Expected-*``,
#: ``Nats-TTL``, ``Nats-Rollup``, ``Nats-Incr``, ``Nats-Schedule*``, ``Nats-Batch-*``, …).
NATS_PREFIX = b"Nats-"


def header_lines(*names: str) -> tuple[bytes, ...]:
    """``\r\n<name>:`` for each name: how nats-server's ``getHeader`` finds a header in a block."""
    return tuple(f"\r\n{name}:".encode() for name in names)


def only_these_nats_headers(hdr: bytes, lines: tuple[bytes, ...]) -> bool:
    """Whether ``Nats-`` occurs in an encoded header block only as the names in ``lines``
    (`header_lines`), each at most once — anything else, even inside a value, says no.

    Lets a server skip the lookups of the headers a block cannot hold: one count and a substring
    test per name instead of one search per header its checks could read."""
    count = hdr.count(NATS_PREFIX)
    if not count:
        return True
    for line in lines:
        if hdr.find(line) >= 0:
            count -= 1
            if not count:  # (each line holds one ``Nats-`` where no other line can match: none left)
                return True
    return False
