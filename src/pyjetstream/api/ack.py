"""The ack reply subject of a delivered JetStream message, and ack payloads.

v1 (every server 2.9–2.12, and what the embedded server emits), 9 tokens:

    $JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<timestamp ns>.<pending>

v2 (ADR-15; nats-server main behind a flag), 11+ tokens:

    $JS.ACK.<domain or _>.<account hash>.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>[.<random>…]

Clients derive the message metadata from it (`parse_ack_reply`). Acking = publishing
one of the payloads below to that subject (nats-server consumer.go ``processAck``).
"""

from __future__ import annotations

import json
from enum import Enum
from typing import NamedTuple

import msgspec

from .constants import ACK_PREFIX
from .timefmt import NanoTime, parse_go_duration

__all__ = [
    "ACK",
    "ACK_OK",
    "ACK_PREFIX",
    "NAK",
    "NEXT",
    "PROGRESS",
    "TERM",
    "AckAction",
    "AckKind",
    "MsgMetadata",
    "SequencePair",
    "ack_prefix",
    "ack_reply_subject",
    "ack_reply_subject_v2",
    "ack_subscription",
    "nak_payload",
    "next_payload",
    "parse_ack_payload",
    "parse_ack_reply",
    "term_payload",
]

ACK = b"+ACK"
ACK_OK = b"+OK"  # deprecated synonym of +ACK; an empty payload acks too
NAK = b"-NAK"
PROGRESS = b"+WPI"  # work in progress: resets the ack timer
NEXT = b"+NXT"
TERM = b"+TERM"


def ack_reply_subject(
    stream: str,
    consumer: str,
    delivered: int,
    stream_seq: int,
    consumer_seq: int,
    timestamp_ns: int,
    pending: int,
) -> str:
    """v1 ack reply subject (what nats-server puts in the delivered MSG's reply)."""
    return f"$JS.ACK.{stream}.{consumer}.{delivered}.{stream_seq}.{consumer_seq}.{timestamp_ns}.{pending}"


def ack_reply_subject_v2(
    domain: str,
    account_hash: str,
    stream: str,
    consumer: str,
    delivered: int,
    stream_seq: int,
    consumer_seq: int,
    timestamp_ns: int,
    pending: int,
    token: str,
) -> str:
    """v2 ack reply subject; an empty ``domain`` is written as ``_``."""
    return (
        f"$JS.ACK.{domain or '_'}.{account_hash}.{stream}.{consumer}."
        f"{delivered}.{stream_seq}.{consumer_seq}.{timestamp_ns}.{pending}.{token}"
    )


def ack_prefix(stream: str, consumer: str) -> str:
    """What every v1 ack reply subject of a consumer begins with: ``$JS.ACK.<S>.<C>.``."""
    return f"{ACK_PREFIX}{stream}.{consumer}."


def ack_subscription(stream: str, consumer: str) -> str:
    """The server's subscription for a consumer's v1 acks: ``$JS.ACK.<S>.<C>.*.*.*.*.*``."""
    return f"$JS.ACK.{stream}.{consumer}.*.*.*.*.*"


class SequencePair(NamedTuple):
    stream: int
    consumer: int


class MsgMetadata(msgspec.Struct, frozen=True):
    """What a client learns from an ack reply subject.

    A frozen struct rather than a frozen dataclass: every message an ordered consumer or a KV
    watcher hands out makes one, and a frozen dataclass's ``__init__`` sets each of its nine
    fields through ``object.__setattr__`` (~25× the cost of the struct's, measured in
    `parse_ack_reply`).
    """

    stream: str
    consumer: str
    num_delivered: int
    stream_seq: int
    consumer_seq: int
    timestamp: NanoTime  # message store time, Unix ns
    num_pending: int
    domain: str = ""
    account_hash: str = ""  # v2 only

    @property
    def sequence(self) -> SequencePair:
        return SequencePair(self.stream_seq, self.consumer_seq)


def parse_ack_reply(subject: str) -> MsgMetadata:
    """Parse a v1 (9 tokens) or v2 (≥ 11 tokens) ack reply subject; ``ValueError`` otherwise.

    Accepts what nats.go and nats.py accept: 9 tokens, or 11 and more (the random token of
    v2 is optional to them). A v2 domain of ``_`` means no domain.
    """
    tokens = subject.split(".")
    n = len(tokens)
    if n < 9 or tokens[0] != "$JS" or tokens[1] != "ACK" or n == 10:
        raise ValueError(f"not a JetStream ack subject: {subject!r}")
    if n == 9:
        domain, account_hash, rest = "", "", tokens[2:]
    else:
        domain = "" if tokens[2] == "_" else tokens[2]
        account_hash, rest = tokens[3], tokens[4:11]
    stream, consumer = rest[0], rest[1]
    try:
        delivered, sseq, cseq, ts, pending = map(int, rest[2:7])
    except ValueError:
        raise ValueError(f"not a JetStream ack subject: {subject!r}") from None
    if not stream or not consumer:
        raise ValueError(f"not a JetStream ack subject: {subject!r}")
    return MsgMetadata(
        stream=stream,
        consumer=consumer,
        num_delivered=delivered,
        stream_seq=sseq,
        consumer_seq=cseq,
        timestamp=NanoTime(ts),
        num_pending=pending,
        domain=domain,
        account_hash=account_hash,
    )


# --- payloads -------------------------------------------------------------------------------


def nak_payload(delay_ns: int | None = None) -> bytes:
    """``-NAK`` or, with a delay, ``-NAK {"delay": <ns>}`` (nats.go/nats.py format)."""
    if delay_ns is None:
        return NAK
    return b'-NAK {"delay": %d}' % delay_ns


def term_payload(reason: str = "") -> bytes:
    """``+TERM`` or ``+TERM <reason>`` (the reason form needs ⟨2.10.4+⟩; 2.9.10 ignores it)."""
    return TERM if not reason else TERM + b" " + reason.encode()


def next_payload(request: bytes | int | None = None) -> bytes:
    """``+NXT`` optionally followed by a pull request (JSON bytes or a batch count)."""
    if request is None:
        return NEXT
    if isinstance(request, int):
        return b"%s %d" % (NEXT, request)
    return NEXT + b" " + request


class AckKind(Enum):
    ACK = "ack"
    NAK = "nak"
    PROGRESS = "progress"
    NEXT = "next"
    TERM = "term"


class AckAction(msgspec.Struct, frozen=True):
    """A parsed ack payload.

    ``delay_ns`` is the NAK delay (``None`` = redeliver now; an unparsable argument is a plain
    NAK, as in nats-server). ``reason`` is the ``+TERM`` reason (⟨2.10.4+⟩; 2.9.10 only
    accepts an exact ``+TERM`` and ignores the payload otherwise — check ``reason`` to
    emulate). ``request`` is what follows ``+NXT`` (a pull request body, possibly empty).
    """

    kind: AckKind
    delay_ns: int | None = None
    reason: str = ""
    request: bytes = b""


# The argument-less actions, shared: parsing the common acks allocates nothing (the server
# classifies every ack with this function).
_ACK_ACTION = AckAction(AckKind.ACK)
_NAK_ACTION = AckAction(AckKind.NAK)
_PROGRESS_ACTION = AckAction(AckKind.PROGRESS)
_NEXT_ACTION = AckAction(AckKind.NEXT)
_TERM_ACTION = AckAction(AckKind.TERM)


def parse_ack_payload(payload: bytes) -> AckAction | None:
    """Classify an ack payload like nats-server's ``processAck``; ``None`` if it is none of them."""
    if not payload or payload == ACK or payload == ACK_OK:
        return _ACK_ACTION
    if payload.startswith(NEXT):
        request = payload[len(NEXT) :].strip()
        return AckAction(AckKind.NEXT, request=request) if request else _NEXT_ACTION
    if payload.startswith(NAK):
        delay = _nak_delay(payload[len(NAK) :].strip())
        return _NAK_ACTION if delay is None else AckAction(AckKind.NAK, delay_ns=delay)
    if payload == PROGRESS:
        return _PROGRESS_ACTION
    if payload == TERM:
        return _TERM_ACTION
    if payload.startswith(TERM + b" "):
        return AckAction(AckKind.TERM, reason=payload[len(TERM) :].strip().decode("utf-8", "replace"))
    return None


def _nak_delay(arg: bytes) -> int | None:
    """``-NAK {"delay": ns}`` (keys matched case-insensitively, as Go does) or ``-NAK 5s``."""
    if not arg:
        return None
    try:
        if arg[:1] == b"{":
            doc = json.loads(arg)
            if not isinstance(doc, dict):
                return None
            delay = {str(k).lower(): v for k, v in doc.items()}.get("delay", 0)
            return delay if isinstance(delay, int) and not isinstance(delay, bool) else None
        return parse_go_duration(arg.decode())
    except (ValueError, UnicodeDecodeError):
        return None
