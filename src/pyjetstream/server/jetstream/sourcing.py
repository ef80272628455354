"""Stream mirrors and sources (nats-server ``stream.go``: ``setupMirrorConsumer``,
``processInboundMirrorMsg``, ``setSourceConsumer``, ``processInboundSourceMsg``,
``startingSequenceForSources``, ``sourceInfo``).

A mirror or a source reads its origin through a push consumer on the origin stream, asked for
with an ordinary ``CONSUMER.CREATE`` request (through ``external.api`` when set), exactly as
nats-server 2.15 does, so a local origin and one behind a domain's API prefix take the same path:
``direct`` and ``sourcing``, ack none, flow control and a 1 s idle heartbeat, delivering to a
private ``$JS.M.<id>`` / ``$JS.S.<id>`` subject, under a stable name (``JS_MIRROR_<hash>`` /
``JS_SRC_<hash>``). A limits origin makes it an ephemeral hidden consumer (the name gets a random
suffix); a work-queue or interest origin makes it a durable acked by flow control (ADR-60), since
an ``ack none`` consumer would drop what it sent and lose interest while nobody reads: our
flow-control responses name the last origin sequence stored (``Nats-Last-Stream``), and only that
is acked. Asked for again (after a gap, a restart) the durable resets to its ack floor; what comes
again is skipped. Removing the mirror/source or deleting the stream deletes it (best effort).
With ``StreamSource.consumer`` (ADR-60 "durable sourcing") the consumer is the user's: it is only
reset (``CONSUMER.RESET``) and must use ``ack_policy: flow_control`` (10214 / 10217 otherwise).
Each delivery's ack reply carries the origin sequence, the delivery sequence, the timestamp and
the pending count, which is all the tracking needs:

- a **mirror** stores each message at the origin's sequence with the origin's timestamp; sequences
  the origin no longer has (deleted, expired, filtered out) are skipped, so sequences stay aligned.
- a **source** stores each message as if it were published here (next sequence, this stream's
  limits and de-duplication) with ``Nats-Stream-Source: <index name> <origin seq>`` added; after a
  restart each source's position is found by scanning back for the latest such header.

A gap in delivery sequences, a heartbeat announcing deliveries we did not get, or 10 s of silence
(the stream's one health check of all its feeds, every 10 s) make the feed recreate its consumer from
the last origin sequence it stored + 1. Creation
is retried at most every 2 s (``sourceConsumerRetryThreshold``) while the origin is missing, so an
origin created (or re-created) later is picked up.

Index names and the header are nats-server 2.10's: ``"<name>[:<api hash>] <filter> <dest>"`` and
``"<name>[:<api hash>] <seq> <filter> <dest>"`` (filter and destination ``>`` when unset), which
lets one origin be sourced several times with different filters. 2.9's two-field header
(``"<name> <seq>"``) is read too. Like nats-server 2.10.14+, a sourced copy loses the publisher's
``Nats-Expected-*`` headers (the origin checked them).
"""

from __future__ import annotations

import random
import time
from asyncio import Handle, TimerHandle
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, cast

import msgspec

from pyjetstream._hashes import sha256
from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api.codec import decode_response, encode
from pyjetstream.api.enums import AckPolicy, DeliverPolicy
from pyjetstream.api.models_common import ApiError, ExternalStream
from pyjetstream.api.models_consumer import ConsumerConfig, CreateConsumerRequest
from pyjetstream.api.models_stream import StreamConfig, StreamConsumerSource, StreamSource, StreamSourceInfo
from pyjetstream.api.responses import ConsumerCreateResponse
from pyjetstream.api.subjects import domain_api_to_local
from pyjetstream.api.timefmt import NanoTime
from pyjetstream.protocol.headers import append_headers, get_header, remove_header
from pyjetstream.server.jetstream.direct_get import DirectGet
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, ErrStoreMsgNotFound, StoreError
from pyjetstream.server.subject_transform import SubjectTransform, TransformError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.host import InternalSubscription
    from pyjetstream.server.jetstream.store.base import MsgTuple
    from pyjetstream.server.jetstream.stream import Stream

__all__ = [
    "MirrorFeed",
    "SourceFeed",
    "StreamSourcing",
    "api_hash",
    "index_name",
    "parse_ack_reply",
    "parse_source_header",
    "source_header",
]

NS = 1_000_000_000
HEARTBEAT = 1.0  # sourceHealthHB: the origin consumer's idle heartbeat
HEALTH_CHECK_INTERVAL = 10.0  # sourceHealthCheckInterval: how often a stream checks all its feeds
STALLED_AFTER = HEALTH_CHECK_INTERVAL  # silence that makes a feed recreate its consumer
DELETE_REPLY_WAIT = 1.0  # how long a consumer delete's reply is waited for
RETRY_THRESHOLD = 2.0  # sourceConsumerRetryThreshold: least time between two consumer requests
CREATE_TIMEOUT = 5.0  # no reply to CONSUMER.CREATE after this: try again
INACTIVE_THRESHOLD_NS = 10 * NS  # what 2.15 asks for: an ephemeral origin consumer left unread goes
DURABLE_RESET_TIMEOUT = 5.0  # srcDurableConsumerWaitTime: no reply to CONSUMER.RESET (a missing consumer)
ACK_WAIT_NS = 22 * 3600 * NS  # what nats-server puts in the request (ack none: never used)
CAUGHT_UP = 10  # dgetCaughtUpThresh: a mirror_direct mirror answers direct gets once this close
API_PREFIX = "$JS.API"
DIRECT_GET_QUEUE = "_sys_"
WARN_EVERY = 60.0  # the same storing error is logged once a minute (nats-server RateLimitWarnf)

HDR_STREAM_SOURCE = H.STREAM_SOURCE.encode()
HDR_STREAM_IDENTITY = H.STREAM_IDENTITY.encode()  # 2.15
STREAM_IDENTITY_MISMATCH = E.JSConsumerStreamIdentityMismatchF.err_code
REQUIRED_API_LEVEL_ERR = E.JSRequiredApiLevelErr.err_code
INVALID_JSON_ERR = E.JSInvalidJSONErr.err_code
HDR_LAST_CONSUMER = H.LAST_CONSUMER.encode()
HDR_LAST_STREAM = H.LAST_STREAM.encode()
HDR_CONSUMER_STALLED = H.CONSUMER_STALLED.encode()
_EXPECTED_PREFIX = b"\r\nNats-Expected-"
_NATS_LINE = b"NATS/1.0\r\n"
_SEQ_MARK, _SUBJECT_MARK = "\x00seq\x00", "\x00subject\x00"  # (`SourceFeed._stamp_parts`: no name holds a NUL)
_CONTROL_PREFIX = H.status_prefix(H.Status.IDLE_HEARTBEAT[0])  # heartbeats and flow control
_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_SYSTEM_RANDOM = random.SystemRandom()  # (``secrets.choice``'s source, without ``secrets``' import of OpenSSL's digests)
_SEQ_MISMATCH = E.JSStreamSequenceNotMatchErr().err_code


# --- names and headers ------------------------------------------------------------------------


def api_hash(value: str) -> str:
    """nats-server ``getHash``: 8 base-62 characters of the SHA-256 of ``value``."""
    digest = sha256(value.encode()).digest()
    return "".join(_DIGITS[b % 62] for b in digest[:8])


def _token() -> str:
    """8 random base-62 characters (the ``$JS.M.<id>`` / ``$JSC.R.<id>`` / consumer name suffix)."""
    return "".join(_SYSTEM_RANDOM.choice(_DIGITS) for _ in range(8))


def index_name(src: StreamSource) -> str:
    """nats-server ``composeIName``: name (``:<hash of the api prefix>`` when external, then
    ``:C=<hash of the consumer name>`` when read through a named durable consumer, ADR-60),
    filter(s) and destination(s), space separated; several transforms are joined with ``\\f``."""
    name = src.name
    if src.external is not None:
        name = f"{name}:{api_hash(src.external.api)}"
    if src.consumer is not None:
        name = f"{name}:C={api_hash(src.consumer.name)}"
    if not src.subject_transforms:
        return f"{name} {src.filter_subject or '>'} >"
    sources = "\f".join(t.src or ">" for t in src.subject_transforms)
    destinations = "\f".join(t.dest or ">" for t in src.subject_transforms)
    return f"{name} {sources} {destinations}"


def consumer_index_name(src: StreamSource) -> str:
    """nats-server ``composeCName``: the origin (with the api prefix hash when external) and the
    durable consumer's name; two sources may not read through the same one (10216)."""
    name = src.name
    if src.external is not None:
        name = f"{name}:{api_hash(src.external.api)}"
    return f"{name} {src.consumer.name if src.consumer is not None else ''}"


def source_header(iname: str, seq: int, subject: str = "", ident: str = "") -> str:
    """The ``Nats-Stream-Source`` value for origin sequence ``seq`` (``genSourceHeader``):
    ``<name> <seq> <filter> <dest> <subject> [<identity>]``. 2.12+ appends the message's subject
    at the origin (counter sources key on it); 2.15 appends the origin's stream identity when the
    source consumer's create reply carried one, so a restarted sourcing stream still knows it."""
    name, _, rest = iname.partition(" ")
    if ident:
        return f"{name} {seq} {rest} {subject} {ident}"
    return f"{name} {seq} {rest} {subject}" if subject else f"{name} {seq} {rest}"


def parse_source_header(value: str) -> tuple[str, str, int, str]:
    """``(origin name, index name, origin seq, origin identity)`` from a ``Nats-Stream-Source``
    value (nats-server 2.15 ``streamAndSeq``). The index name is ``""`` for the headers of servers
    before 2.10 (``"<name> <seq>"`` or, before 2.2.1, the origin ack reply); the identity is the
    optional sixth token (2.15); ``("", "", 0, "")`` if unreadable."""
    if value.startswith("$JS.ACK."):
        tokens = value.split(".")
        if len(tokens) != 9 or not tokens[5].isdigit():
            return "", "", 0, ""
        return tokens[2], "", int(tokens[5]), ""
    fields = value.split(" ")
    if len(fields) < 2 or len(fields) == 3 or not fields[1].isdigit():
        return "", "", 0, ""
    if len(fields) == 2:
        return fields[0], "", int(fields[1]), ""
    ident = fields[5] if len(fields) >= 6 else ""
    return fields[0], f"{fields[0]} {fields[2]} {fields[3]}", int(fields[1]), ident


def stable_hash(stream: Stream) -> str:
    """``createStableConsumerHash``: the sourcing stream, its account (and JetStream domain)."""
    engine = stream.engine
    key = f"{stream.name} {engine.server.name}"
    if engine.domain:
        key = f"{key} {engine.domain}"
    return api_hash(key)


#: The names a stream sources more than once, for the last ``sources`` list asked about
#: (`_sourced_twice`); off: each name counted over the list at each call.
COUNT_ONCE = True
_last_counted: tuple[list[StreamSource], int, frozenset[str]] | None = None
names_counted = 0  # sources walked to count their names (a step count for the tests)


def _sourced_twice(sources: list[StreamSource]) -> frozenset[str]:
    """The origins ``sources`` names more than once. Why kept: each feed of a stream asks for its
    consumer's name with the stream's whole list (at its start, its create and its delete), and
    counting the list for each made a stream sourcing n streams cost O(n²) — ~3 million steps at
    1,000 sources. A config's ``sources`` list is not changed once made (a new config is a new list)."""
    global _last_counted, names_counted
    last = _last_counted
    if last is not None and last[0] is sources and last[1] == len(sources):
        return last[2]
    seen: set[str] = set()
    twice: set[str] = set()
    for other in sources:
        (twice if other.name in seen else seen).add(other.name)
    names_counted += len(sources)
    _last_counted = (sources, len(sources), frozenset(twice))
    return _last_counted[2]


def source_consumer_name(stream: Stream, src: StreamSource, sources: list[StreamSource]) -> str:
    """``createSourcingConsumerHash``: the origin consumer of one of ``stream``'s ``sources``
    is named by the stream alone; when the origin is sourced more than once, each name takes in
    its source's index name."""
    global names_counted
    key = stable_hash(stream)
    if COUNT_ONCE:
        shared = src.name in _sourced_twice(sources)
    else:
        names_counted += len(sources)
        shared = sum(1 for other in sources if other.name == src.name) > 1
    if shared:
        key = f"{key} {index_name(src)}"
    return f"JS_SRC_{api_hash(key)}"


class Delivery(NamedTuple):
    """What an origin consumer's ack reply says about a delivered message."""

    consumer: str
    delivered: int  # delivery count
    sseq: int  # origin stream sequence
    dseq: int  # consumer (delivery) sequence
    ts: int  # origin timestamp, ns
    pending: int


def parse_ack_reply(reply: str) -> Delivery | None:
    """``$JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>`` (2.9), or the 2.10 form
    with ``<domain>.<account hash>`` after ``ACK`` (and a random token at the end). Once per
    message a mirror or source takes: the numbers converted one by one (a list of them, sliced and
    unpacked, was a tenth of a mirror's catching up, ~0.5 µs a message)."""
    tokens = reply.split(".")
    n = len(tokens)
    if n == 9:
        b = 3
    elif n == 11 or n == 12:
        b = 5
    else:
        return None
    if tokens[0] != "$JS" or tokens[1] != "ACK":
        return None
    try:
        return _new(
            Delivery,
            (tokens[b], int(tokens[b + 1]), int(tokens[b + 2]), int(tokens[b + 3]), int(tokens[b + 4]), int(tokens[b + 5])),
        )
    except ValueError:
        return None


_new = tuple.__new__  # (a `Delivery` made without the NamedTuple's ``__new__``, a Python call: ~0.35 -> 0.17 µs)


def _strip_for_source(hdr: bytes) -> bytes:
    """Drop the origin's own ``Nats-Stream-Source`` (daisy chains) and the publisher's
    ``Nats-Expected-*`` preconditions, which the origin already checked."""
    hdr = remove_header(hdr, HDR_STREAM_SOURCE)
    while True:
        idx = hdr.find(_EXPECTED_PREFIX)
        if idx < 0:
            return hdr
        end = hdr.find(b"\r\n", idx + 2)
        hdr = hdr[:idx] + hdr[end:]


def _compile_transforms(src: StreamSource) -> list[SubjectTransform]:
    """The subject transforms of a mirror/source that rename (a transform without destination
    only filters, which the consumer already did)."""
    out = []
    for t in src.subject_transforms:
        if t.dest:
            try:
                out.append(SubjectTransform.compile(t.src, t.dest))
            except TransformError:  # refused at create; recovered configs are trusted
                continue
    return out


def _int_header(hdr: bytes, name: bytes) -> int:
    raw = get_header(hdr, name)
    return int(raw) if raw and raw.isdigit() else 0


# --- one origin -------------------------------------------------------------------------------


class _Feed:
    """One origin being read, a mirror or one source (nats-server ``sourceInfo``)."""

    kind: ClassVar[str] = ""  # "M" (mirror) or "S" (source): the deliver subject's second token
    API_LEVEL: ClassVar[int] = 5  # what the consumer create asks for (4 for a mirror)
    REPORTS_SEQ: ClassVar[bool] = True  # StreamSourceInfo.seq: the highest origin sequence taken

    def __init__(self, stream: Stream, cfg: StreamSource) -> None:
        self.stream = stream
        self.server = stream.server
        self.loop = stream.server.loop
        self.cfg = cfg
        self.name = cfg.name
        self.iname = index_name(cfg)
        self.cname = ""  # the current origin consumer ("" while none is established)
        self.sseq = 0  # last origin sequence taken
        self.taken = 0  # highest origin sequence stored here (StreamSourceInfo.seq, 2.15)
        self.dseq = 0  # last delivery sequence seen from the current consumer
        self.lag = 0
        self.err: ApiError | None = None
        self.last = 0.0  # monotonic time of the last contact (0: never)
        self.lreq = float("-inf")  # monotonic time of the last consumer request
        self.sip = False  # setup in progress: waiting for the CONSUMER.CREATE reply
        self.closed = False
        #: ⟨2.15⟩ the origin's Nats-Stream-Identity, as its last consumer create answered it: a
        #: source sends it back, and an origin recreated since refuses (10225), so we start over.
        self.ident = ""
        self._transforms = _compile_transforms(cfg)
        self._deliver_sub: Any = None
        self._reply_sub: Any = None
        self._reply_subject = ""
        self._request: ConsumerConfig | None = None  # the consumer create being asked for
        self._level = 0  # the API level it asks for (0: a plain consumer, for older origins)
        #: Deliveries before the create reply arrived, in order: `_delivery`'s arguments, or a
        #: run's (`_take_run`) as ``(None, consumer, msgs, dseq, npc)``.
        self._early: list[tuple[Any, ...]] = []
        #: Deliveries of the pass's run not processed yet (``ServerOptions.runs``: `_flush`).
        self._pending: list[tuple[str, bytes | None, bytes, Delivery]] = []
        self._runs = bool(getattr(stream.server.options, "runs", True))
        self._timeout: TimerHandle | None = None
        self._retry: Handle | None = None
        self._warned: tuple[str, float] = ("", 0.0)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Request the consumer on the next loop turn (after the API reply that created us, and
        once every recovered stream is up); its health is checked with the stream's other feeds
        (`StreamSourcing._check_health`)."""
        self._retry = self.loop.call_soon(self._setup)

    def stop(self) -> None:
        if self.closed:
            return
        if self.stream.closed:  # deleted: what it held goes with it
            self._pending = []
        self._flush()
        self.closed = True
        self._cancel()
        if self._retry is not None:
            self._retry.cancel()
        self._retry = None

    def _cancel(self) -> None:
        """Drop the current consumer (nats-server ``cancelSourceInfo``): it is no longer read, so
        the origin removes it after its inactivity threshold."""
        self._flush()  # what was delivered before is taken first, as one by one
        for sub in (self._deliver_sub, self._reply_sub):
            if sub is not None:
                sub.unsubscribe()
        self._deliver_sub = self._reply_sub = None
        self._reply_subject = ""
        self._early.clear()
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self.cname = ""
        self.sip = False

    def _restart(self) -> None:
        """Something was missed or went wrong: drop the consumer and ask for a new one."""
        self._cancel()
        self._schedule_setup()

    def _schedule_setup(self) -> None:
        """``scheduleSetupMirrorConsumerRetryAsap``: as soon as the retry threshold allows."""
        if self.closed or self._retry is not None:
            return
        wait = RETRY_THRESHOLD - (time.monotonic() - self.lreq)
        delay = wait + random.uniform(0.01, 0.06) if wait > 0 else 0.0
        self._retry = self.loop.call_later(delay, self._setup)

    def check_health(self, now: float) -> None:
        """A consumer established and silent for longer than `STALLED_AFTER` (no delivery, no
        heartbeat) is recreated."""
        if self.cname and not self.sip and now - self.last > STALLED_AFTER:
            self._restart()

    # --- the consumer request ----------------------------------------------------------------

    def _setup(self) -> None:
        self._retry = None
        if self.closed or self.stream.closed:
            return
        self._cancel()
        if time.monotonic() - self.lreq < RETRY_THRESHOLD:
            self._schedule_setup()
            return
        self.lreq = time.monotonic()
        ext = self.cfg.external
        if self.cfg.consumer is not None:
            self._setup_durable(self.cfg.consumer)
            return
        if ext is not None and ext.deliver:
            deliver = f"{ext.deliver}.{self.kind}.{_token()}".replace("..", ".")
        else:
            deliver = f"$JS.{self.kind}.{_token()}"
        config = self._start_position(self._base_config(deliver))
        filters = [t.src or ">" for t in self.cfg.subject_transforms]
        if self.cfg.filter_subject or len(filters) == 1:
            config.filter_subject = self.cfg.filter_subject or filters[0]
        elif filters:
            config.filter_subjects = filters
        self._deliver_sub = self._take_deliveries(deliver)
        self._request = config
        self._send_create(self.API_LEVEL)

    def _send_create(self, level: int) -> None:
        """Send the consumer create (``trySetupSourceConsumer`` / ``setupMirrorConsumer``).

        The consumer has a stable name and ``sourcing`` set, so a work-queue or interest origin
        makes it a durable acked by flow control (ADR-60); the request asks for API ``level``
        (and a source for the origin's identity). An origin too old for that refuses it (10185,
        or 10025 for the unknown field): a source asks again at level 4, then both without
        ``sourcing``, under a unique name (``_downgrade``)."""
        config = self._request
        assert config is not None
        self._level = level
        if level:
            config.sourcing = True
            config.name = self.consumer_name()
        else:
            config.sourcing = False
            config.name = f"{self.consumer_name()}_{_token()}"
        subject = f"{API_PREFIX}.CONSUMER.CREATE.{self.name}"
        if config.filter_subject:
            subject = f"{subject}.{config.name}.{config.filter_subject}"
        subject = self._api(subject)
        request = encode(CreateConsumerRequest(stream_name=self.name, config=config))
        if self._reply_sub is not None:  # a downgraded retry: stale answers go nowhere
            self._reply_sub.unsubscribe()
        self._reply_subject = f"$JSC.R.{_token()}"
        self._reply_sub = self.server.subscribe_internal(self._reply_subject, self._on_create_reply)
        self.sip = True
        if self._timeout is None:
            self._timeout = self.loop.call_later(CREATE_TIMEOUT, self._on_create_timeout)
        hdr = None
        if level >= 5:
            hdr = H.header_block(((H.REQUIRED_API_LEVEL, level), (H.STREAM_IDENTITY, self.ident)))
        elif level:
            hdr = H.header_block(((H.REQUIRED_API_LEVEL, level),))
        self.server.publish_internal(subject, request, reply=self._reply_subject, hdr=hdr)

    def _downgrade(self, error: ApiError) -> bool:
        """An origin that does not know sourcing consumers (or this API level): ask again."""
        if not self._level or error.err_code not in (REQUIRED_API_LEVEL_ERR, INVALID_JSON_ERR):
            return False
        self._send_create(self._level - 1 if self._level > 4 else 0)
        return True

    def consumer_name(self, sources: list[StreamSource] | None = None) -> str:
        """The stable name of this feed's consumer on the origin (``JS_MIRROR_`` / ``JS_SRC_``),
        among the stream's ``sources`` (its current ones unless given)."""
        raise NotImplementedError

    def metadata(self) -> dict[str, str]:
        """Who made the consumer, for users who see it on the origin (ADR-60)."""
        tag = "mirror" if self.kind == "M" else "src"
        meta = {f"_nats.{tag}.stream": self.stream.name, f"_nats.{tag}.acc": self.stream.engine.server.name}
        if self.stream.engine.domain:
            meta[f"_nats.{tag}.domain"] = self.stream.engine.domain
        return meta

    def delete_consumer(self, sources: list[StreamSource] | None = None) -> None:
        """``tryDeleteSourcingConsumer``: the mirror or source is gone; one best-effort request
        removes its durable consumer from a work-queue or interest origin (an ephemeral one of a
        limits origin had a suffix: the request finds nothing, and it expires by itself)."""
        if self.cfg.consumer is not None:
            return  # the user's
        subject = f"{API_PREFIX}.CONSUMER.DELETE.{self.name}.{self.consumer_name(sources)}"
        subject = self._api(subject)
        reply = f"$JSC.R.{_token()}"
        subs: list[Any] = []
        subs.append(self.server.subscribe_internal(reply, lambda *_: subs[0].unsubscribe()))
        self.loop.call_later(DELETE_REPLY_WAIT, subs[0].unsubscribe)  # no answer: give up
        self.server.publish_internal(subject, b"", reply=reply)

    def _setup_durable(self, durable: StreamConsumerSource) -> None:
        """⟨ADR-60⟩ ``StreamSource.consumer``: the origin's durable consumer is the user's, so it
        is never created or deleted here, only reset (``CONSUMER.RESET`` with an empty body: back
        to its ack floor, delivery sequences from 1). Its deliver subject is subscribed once the
        reply confirms ``ack_policy: flow_control`` (as nats-server, which subscribes only then):
        what it delivers before is not acked, so the reset brings it again."""
        subject = f"{API_PREFIX}.CONSUMER.RESET.{self.name}.{durable.name}"
        subject = self._api(subject)
        self._reply_subject = f"$JSC.R.{_token()}"
        self._reply_sub = self.server.subscribe_internal(self._reply_subject, self._on_create_reply)
        self.sip = True
        self._timeout = self.loop.call_later(DURABLE_RESET_TIMEOUT, self._on_create_timeout)
        hdr = None
        if self.kind == "S":  # a source asks for API level 5 and the origin's identity
            hdr = H.header_block(((H.REQUIRED_API_LEVEL, 5), (H.STREAM_IDENTITY, self.ident)))
        self.server.publish_internal(subject, b"", reply=self._reply_subject, hdr=hdr)

    def _api(self, subject: str) -> str:
        """An API request's subject: under ``external.api`` when set (an empty prefix too, as
        nats-server: the request then goes nowhere). A prefix of this server's own JetStream
        domain is answered here: pyjetstream's, as before the domain became subject mappings —
        nats-server maps only clients' publishes, so its streams cannot source through it."""
        ext = self.cfg.external
        if ext is None:
            return subject
        subject = subject.replace(API_PREFIX, ext.api, 1).replace("..", ".")
        local = domain_api_to_local(subject, self.stream.engine.domain)
        return subject if local is None else local

    def _base_config(self, deliver: str) -> ConsumerConfig:
        return ConsumerConfig(
            deliver_subject=deliver,
            ack_policy=AckPolicy.NONE,
            ack_wait=ACK_WAIT_NS,
            max_deliver=1,
            idle_heartbeat=int(HEARTBEAT * NS),
            flow_control=True,
            direct=True,
            inactive_threshold=INACTIVE_THRESHOLD_NS,
            metadata=self.metadata(),
        )

    def _start_position(self, config: ConsumerConfig) -> ConsumerConfig:
        raise NotImplementedError

    def _on_create_timeout(self) -> None:
        self._timeout = None
        if not self.closed and self.sip:
            self._restart()

    def _on_create_reply(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        if self.closed or subject != self._reply_subject:
            return
        self._reply_sub.unsubscribe()
        self._reply_sub = None
        self._reply_subject = ""
        if self._timeout is not None:
            self._timeout.cancel()
            self._timeout = None
        self.sip = False
        try:
            response = decode_response(payload, ConsumerCreateResponse)
        except (msgspec.DecodeError, ValueError):
            self.server.logger.warning("JetStream bad %s consumer create response: %r", self.role, payload)
            response = ConsumerCreateResponse(error=E.JSInvalidJSONErr(err="bad consumer create response"))
        if response.error is not None and response.error.err_code == STREAM_IDENTITY_MISMATCH:
            # The origin was recreated: take it again from its start (nats-server 2.15 retries
            # at once with the source state reset).
            self.server.logger.warning(
                "JetStream source stream %r for stream %r was recreated, resetting source state",
                self.name,
                self.stream.name,
            )
            self.sseq = self.dseq = 0
            self.ident = ""
            self.lreq = float("-inf")
            self._restart()
            return
        if response.error is not None and self._downgrade(response.error):
            return
        if response.error is not None or not response.name:
            self.server.logger.warning(
                "JetStream error response for create %s consumer: %s", self.role, response.error
            )
            self.err = response.error
            self._restart()
            return
        durable = self.cfg.consumer
        if durable is not None and (
            response.config is None or response.config.ack_policy != AckPolicy.FLOW_CONTROL
        ):
            # The user's consumer must ack by flow control (nats-server checks the reset reply).
            self.err = self.requires_ack_fc()
            self._restart()
            return
        self.err = None
        identity = get_header(hdr, HDR_STREAM_IDENTITY) if hdr else None
        ident = identity.decode(errors="replace") if identity else ""
        if self.kind == "S" and ident and self.ident and ident != self.ident:
            # Recreated though it did not refuse (2.15 ``trySetupSourceConsumer``): start over.
            self.server.logger.warning(
                "JetStream source stream %r for stream %r was recreated, resetting source state",
                self.name,
                self.stream.name,
            )
            self.sseq = 0
        self.ident = ident
        delivered = response.delivered.stream_seq if response.delivered is not None else 0
        self._established(response.name, delivered)
        self.last = time.monotonic()
        if durable is not None:
            self._deliver_sub = self._take_deliveries(durable.deliver_subject)
        early, self._early = self._early, []
        for args in early:
            if args[0] is not None:
                self._on_delivery(args[0], args[1], args[2], args[3], None)
            else:
                self._take_run(*args[1:])

    def _established(self, cname: str, delivered: int) -> None:
        self.cname = cname
        self.dseq = 0

    @property
    def role(self) -> str:
        return "mirror" if self.kind == "M" else "source"

    def requires_ack_fc(self) -> ApiError:
        """The error a named consumer without ``ack_policy: flow_control`` leaves in the info."""
        raise NotImplementedError

    # --- deliveries --------------------------------------------------------------------------

    def _take_deliveries(self, deliver: str) -> InternalSubscription:
        """Subscribe to the consumer's deliveries. The consumer's delivery pass hands them to us
        itself, a run read at a time (``takes_deliveries``: `Router.lone_receiver`), rather than
        routing each: a mirror catching up 1M messages cost 14 µs of CPU per message, 3.8x
        nats-server's, a third of it reading and routing one message at a time. A run of new messages
        comes in calls of many with their numbers (`_take_run`, ``delivery_pass.HAND_RUNS``), not an
        ack reply each to parse back. Nothing here acts on that consumer but by closing this
        subscription (`_cancel`), which ends the pass's run. ``ServerOptions.runs`` off: each
        delivery is routed, one at a time."""
        return self.server.subscribe_internal(
            deliver, self._on_delivery, takes_deliveries=self._runs, takes_runs=self._take_run if self._runs else None
        )

    def _on_delivery(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        try:
            self._delivery(subject, reply, hdr, payload)
        except Exception:  # as `Router.route` logs a failing internal callback (the pass calls us)
            self.server.logger.exception("JetStream %s of '%s' failed on a delivery", self.role, self.stream.name)

    def _delivery(self, subject: str, reply: str, hdr: bytes | None, payload: bytes) -> None:
        if self.closed:
            return
        if self.sip:  # delivered before the create reply arrived: hold until it does
            self._early.append((subject, reply, hdr, payload))
            return
        if not payload and hdr and hdr.startswith(_CONTROL_PREFIX):
            self._flush()
            self._on_control(reply, hdr)
            return
        d = parse_ack_reply(reply)
        if d is None or not self.cname or d.consumer != self.cname:
            return  # from a consumer we no longer read
        self.last = time.monotonic()
        if d.delivered > 1:
            return
        # ``subject`` is the message's own (the consumer's shown subject, not our deliver subject).
        if not self._runs:
            self._process(subject, hdr, payload, d)
            return
        if not self._pending:
            self._flush_soon()
        self._pending.append((subject, hdr, payload, d))

    def _take_run(self, consumer: str, msgs: list[MsgTuple], dseq: int, npc: int) -> None:
        """A delivery pass's run of new messages of ``consumer``, handed with their numbers
        (`DeliveryPass.hand_run`): message *i* is delivery ``dseq + i`` with ``max(npc - i - 1, 0)``
        pending, what its ack reply says, so each is held as `_delivery` holds it (a first
        delivery, never a control message) without an ack reply formatted and parsed back."""
        try:
            if self.closed:
                return
            if self.sip:  # (before the create reply: held, in order with the other deliveries)
                self._early.append((None, consumer, msgs, dseq, npc))
                return
            if not self.cname or consumer != self.cname:
                return  # from a consumer we no longer read
            self.last = time.monotonic()
            held = [
                (subject, hdr or None, payload, _new(Delivery, (consumer, 1, seq, dseq + i, ts, npc - i - 1 if npc - i > 1 else 0)))
                for i, (subject, seq, ts, hdr, payload) in enumerate(msgs)
            ]
            if not self._pending:
                self._flush_soon()
            self._pending += held
        except Exception:  # (as `_on_delivery`)
            self.server.logger.exception("JetStream %s of '%s' failed on a delivery", self.role, self.stream.name)

    def _flush_soon(self) -> None:
        """The first delivery of a run is held: `_flush` once the read (or loop turn) ends."""
        self.server.after_read(self._flush)

    def _flush(self) -> None:
        """Process the deliveries held since the pass's run began (``ServerOptions.runs``), in
        order: each stretch of them that would take `_process`'s plain way (`_plain_end`) stored
        in one pass (`_process_run`: ``StreamIngest.process_sourced_run``), every other delivery —
        or a stretch the stream does not take so — through `_process`, as if processed as it
        came; the rest skipped once the consumer was dropped for one (`_restart`), as `_delivery`
        skips what comes from a consumer no longer read. Whatever acts on the feed's positions or
        the store (a control message, a restart, a stop, the info) flushes first."""
        pending = self._pending
        if not pending:
            return
        self._pending = []
        n = len(pending)
        at = 0
        while at < n:
            if self.closed or pending[at][3].consumer != self.cname:
                return
            end = self._plain_end(pending, at)
            if end - at > 1 and self._process_run(pending[at:end]):
                at = end
                continue
            for subject, hdr, payload, d in pending[at : max(end, at + 1)]:
                if self.closed or d.consumer != self.cname:
                    return
                self._process(subject, hdr, payload, d)
            at = max(end, at + 1)

    def _plain_end(self, pending: list[tuple[str, bytes | None, bytes, Delivery]], at: int) -> int:
        """Where the stretch of ``pending`` from ``at`` on that `_process` would each take the
        plain way (nothing skipped, nothing missed) ends (``at``: the first is not so)."""
        raise NotImplementedError

    def _process_run(self, pending: list[tuple[str, bytes | None, bytes, Delivery]]) -> bool:
        """Take ``pending`` (a `_plain_end` stretch) in one store pass (False: the stream does not
        take them so; nothing done)."""
        raise NotImplementedError

    def _run_taken(
        self, pending: list[tuple[str, bytes | None, bytes, Delivery]], taken: tuple[int, ApiError | None]
    ) -> None:
        """The positions after `_process_run` stored the first ``taken[0]`` copies: those of the
        last stored; a write that failed for the next is warned about and the consumer recreated
        from there, as `_process` does for one copy."""
        done, error = taken
        if done:
            d = pending[done - 1][3]
            self.sseq, self.dseq = d.sseq, d.dseq
            if self.REPORTS_SEQ:  # a source's highest origin sequence stored (a mirror's is its own)
                self.taken = max(self.taken, d.sseq)
        last = pending[done][3] if error is not None else pending[-1][3]
        self.lag = last.pending - 1 if last.pending else 0
        if error is not None:
            self._warn(error)
            self._restart()

    def _on_control(self, reply: str, hdr: bytes) -> None:
        if not self.cname:
            return
        self.last = time.monotonic()
        if reply:  # flow control: answer with what is stored (acks a flow_control consumer)
            self.loop.call_soon(self._answer_flow_control, reply)
            return
        last_delivered = _int_header(hdr, HDR_LAST_CONSUMER)
        if last_delivered and last_delivered != self.dseq:
            self._restart()  # the consumer sent something we did not get
            return
        stalled = get_header(hdr, HDR_CONSUMER_STALLED)
        if stalled:
            self.server.publish_internal(stalled.decode(), b"")

    def _answer_flow_control(self, reply: str) -> None:
        """``handleFlowControl``: the response names the last delivery and origin sequence taken
        (``Nats-Last-Consumer`` / ``Nats-Last-Stream``); an ADR-60 ``flow_control`` consumer
        acks up to that stream sequence, so only what this stream stored leaves the origin.
        Messages are stored as they are processed, so anything taken by now is in the store."""
        hdr = H.header_block(((H.LAST_CONSUMER, self.dseq), (H.LAST_STREAM, self.sseq)))
        self.server.publish_internal(reply, b"", hdr=hdr)

    def _process(self, subject: str, hdr: bytes | None, payload: bytes, d: Delivery) -> None:
        raise NotImplementedError

    def _transform(self, subject: str) -> str:
        for transform in self._transforms:
            out = transform.match_and_apply(subject)
            if out is not None:
                return out
        return subject

    def _warn(self, error: ApiError) -> None:
        text = str(error.description)
        now = time.monotonic()
        if text != self._warned[0] or now - self._warned[1] > WARN_EVERY:
            self._warned = (text, now)
            self.server.logger.warning(
                "Error processing inbound %s %r for '%s': %s", self.role, self.iname, self.stream.name, text
            )

    # --- info --------------------------------------------------------------------------------

    def info(self) -> StreamSourceInfo:
        """``sourceInfo``: ``active`` is the time since the last contact, -1 if there was none."""
        self._flush()
        ext = self.cfg.external
        return StreamSourceInfo(
            name=self.name,
            external=ExternalStream(api=ext.api, deliver=ext.deliver) if ext is not None else None,
            lag=self.lag,
            seq=self.taken if self.REPORTS_SEQ else 0,
            active=int((time.monotonic() - self.last) * NS) if self.last else -1,
            error=self.err,
            filter_subject=self.cfg.filter_subject,
            subject_transforms=list(self.cfg.subject_transforms),
        )


class MirrorFeed(_Feed):
    """The origin of a mirror: copies keep the origin's sequences and timestamps."""

    REPORTS_SEQ: ClassVar[bool] = False  # 2.15 reports the highest sourced sequence for sources only

    kind = "M"
    API_LEVEL = 4

    def consumer_name(self, sources: list[StreamSource] | None = None) -> str:
        return f"JS_MIRROR_{stable_hash(self.stream)}"

    def __init__(self, stream: Stream, cfg: StreamSource) -> None:
        super().__init__(stream, cfg)
        self._direct_subs: list[Any] = []

    def stop(self) -> None:
        super().stop()
        self.drop_direct()

    def _setup(self) -> None:
        self.sseq = self.stream.store.fast_state().last_seq
        super()._setup()

    def _start_position(self, config: ConsumerConfig) -> ConsumerConfig:
        """From our last sequence + 1; the configured start only while the mirror never held
        anything."""
        state = self.stream.store.fast_state()
        config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
        config.opt_start_seq = state.last_seq + 1
        if state.msgs == 0 and state.first_seq == 0:
            config.opt_start_seq = self.cfg.opt_start_seq
            if not self.cfg.opt_start_seq and self.cfg.opt_start_time is not None:
                config.opt_start_time = self.cfg.opt_start_time
                config.deliver_policy = DeliverPolicy.BY_START_TIME
        if not config.opt_start_seq and config.opt_start_time is None:
            config.deliver_policy = DeliverPolicy.ALL
        return config

    def requires_ack_fc(self) -> ApiError:
        return E.JSMirrorConsumerRequiresAckFCErr()

    def _established(self, cname: str, delivered: int) -> None:
        # Whatever the origin no longer has up to where its consumer starts is skipped here. A
        # named durable consumer restarts at its ack floor, which may be behind what we hold.
        last = self.stream.store.fast_state().last_seq
        self._skip_to(delivered)
        super()._established(cname, delivered)
        self.sseq = max(delivered, last)

    def _skip_to(self, seq: int) -> None:
        """Skip our sequences up to ``seq`` (nats-server ``skipMsgs``)."""
        store = self.stream.store
        last = store.fast_state().last_seq
        if seq > last:
            try:
                store.skip_msgs(last + 1, seq - last)
            except StoreError as exc:
                self.server.logger.error("JetStream mirror '%s' could not skip: %s", self.stream.name, exc)

    def _process(self, subject: str, hdr: bytes | None, payload: bytes, d: Delivery) -> None:
        """``processInboundMirrorMsg``."""
        previous = (self.lag, self.sseq, self.dseq)
        if d.sseq <= self.sseq:
            # Already have it (a named consumer reset to its ack floor brings it again): only
            # the delivery count moves on.
            if d.dseq == self.dseq + 1:
                self.dseq += 1
            return
        if d.sseq == self.sseq + 1:
            self.dseq = d.dseq
            self.sseq = d.sseq
        elif d.dseq == self.dseq + 1:
            # Consecutive deliveries with a hole in origin sequences: gone upstream (or filtered).
            self._skip_to(d.sseq - 1)
            self.dseq += 1
            self.sseq = d.sseq
        else:
            self._restart()
            return
        self.lag = d.pending - 1 if d.pending else 0
        if self.stream.cfg.mirror_direct and not self._direct_subs and d.pending < CAUGHT_UP:
            self._subscribe_direct()
        error = self.stream.ingest.process_sourced(self._transform(subject), hdr, payload, seq=d.sseq, ts=d.ts)
        if error is None:
            return
        if error.err_code == _SEQ_MISMATCH and d.sseq <= self.stream.store.fast_state().last_seq:
            # Older than what we hold (the origin was re-created): wait for it to catch up.
            self.lag, self.sseq, self.dseq = previous
            return
        if error.err_code != _SEQ_MISMATCH:
            self._warn(error)
        _, self.sseq, self.dseq = previous
        self._restart()

    def _plain_end(self, pending: list[tuple[str, bytes | None, bytes, Delivery]], at: int) -> int:
        """Each the next origin sequence (``processInboundMirrorMsg``'s plain case)."""
        want = self.sseq + 1
        end = at
        while end < len(pending) and pending[end][3].sseq == want:
            end += 1
            want += 1
        return end

    def _process_run(self, pending: list[tuple[str, bytes | None, bytes, Delivery]]) -> bool:
        """`_process` for each of ``pending`` in one store pass, the origin's sequences and
        timestamps kept."""
        seqs = [d.sseq for _, _, _, d in pending]
        if self._transforms:
            subjects = [self._transform(subject) for subject, _, _, _ in pending]
        else:
            subjects = [subject for subject, _, _, _ in pending]
        hdrs = [hdr or b"" for _, hdr, _, _ in pending]
        payloads = [payload for _, _, payload, _ in pending]
        stamps = [d.ts for _, _, _, d in pending]
        taken = self.stream.ingest.process_sourced_run(subjects, hdrs, payloads, seqs, stamps)
        if taken is None:
            return False
        self._run_taken(pending, taken)
        last = pending[min(taken[0], len(pending) - 1)][3]
        if self.stream.cfg.mirror_direct and not self._direct_subs and last.pending < CAUGHT_UP:
            self._subscribe_direct()
        return True

    # --- mirror direct -----------------------------------------------------------------------

    def _subscribe_direct(self) -> None:
        """``subscribeToMirrorDirect``: answer direct gets for the origin's name, in the same
        queue group as the origin, once caught up."""

        direct = DirectGet(self.stream)
        prefix = f"$JS.API.DIRECT.GET.{self.name}"
        server = self.server
        self._direct_subs = [
            server.subscribe_internal(prefix, direct.on_request, queue=DIRECT_GET_QUEUE),
            server.subscribe_internal(prefix + ".>", direct.on_last_by_subject, queue=DIRECT_GET_QUEUE),
        ]

    def drop_direct(self) -> None:
        for sub in self._direct_subs:
            sub.unsubscribe()
        self._direct_subs = []


class SourceFeed(_Feed):
    """One of a stream's sources: copies are new messages of this stream, stamped with their origin."""

    kind = "S"

    def consumer_name(self, sources: list[StreamSource] | None = None) -> str:
        return source_consumer_name(self.stream, self.cfg, self.stream.cfg.sources if sources is None else sources)

    def __init__(self, stream: Stream, cfg: StreamSource, sourcing: StreamSourcing | None = None) -> None:
        super().__init__(stream, cfg)
        self.start_ts = 0  # after a restart: this stream's last message time (see _start_position)
        self.sourcing = sourcing  # the stream's sources, whose flush takes this feed's runs (SHARED_FLUSH)
        self._stamp: tuple[str, bytes, bytes, bytes] = ("", b"", b"", b"")  # (`_stamp_parts`)

    def _flush_soon(self) -> None:
        if SHARED_FLUSH and self.sourcing is not None:
            self.sourcing.flush_soon(self)
        else:
            super()._flush_soon()

    def take_plain(self) -> list[tuple[str, bytes | None, bytes, Delivery]] | None:
        """The deliveries held, taken off the feed, when `_flush` would store them all in one
        stretch (`_plain_end`: each the next delivery, from the current consumer); None (nothing
        taken) otherwise."""
        pending = self._pending
        if not pending or self.closed or pending[0][3].consumer != self.cname:
            return None
        if self._plain_end(pending, 0) != len(pending):
            return None
        self._pending = []
        return pending

    def copies(self, pending: list[tuple[str, bytes | None, bytes, Delivery]]) -> tuple[list[str], list[bytes], list[bytes]]:
        """Subjects, header blocks and payloads of ``pending``'s copies: each stamped with its
        origin (``Nats-Stream-Source``) as `_process` stamps it, under the transformed subject."""
        if FAST_STAMP:
            head, mid, tail = self._stamp_parts()
            hdrs = [
                (_strip_for_source(hdr)[:-2] if hdr else _NATS_LINE) + b"%b%d%b%b%b" % (head, d.sseq, mid, subject.encode(), tail)
                if subject
                else self.stamped(hdr, subject, d.sseq)
                for subject, hdr, _, d in pending
            ]
        else:
            hdrs = [self.stamped(hdr, subject, d.sseq) for subject, hdr, _, d in pending]
        if self._transforms:
            subjects = [self._transform(subject) for subject, _, _, _ in pending]
        else:
            subjects = [subject for subject, _, _, _ in pending]
        return subjects, hdrs, [payload for _, _, payload, _ in pending]

    def stamped(self, hdr: bytes | None, subject: str, seq: int) -> bytes:
        """The header block of the copy of origin sequence ``seq``: ``hdr`` without the origin's
        own ``Nats-Stream-Source`` and the publisher's expectations (`_strip_for_source`), with
        ours appended (`source_header`)."""
        stamp = (HDR_STREAM_SOURCE.decode(), source_header(self.iname, seq, subject, self.ident))
        return append_headers(_strip_for_source(hdr) if hdr else None, [stamp])

    def _stamp_parts(self) -> tuple[bytes, bytes, bytes]:
        """`stamped`'s line as three parts around the sequence and the subject (`FAST_STAMP`), made
        again when the origin's identity changed: ``Nats-Stream-Source: <name> `` ·seq· `` <filter>
        <dest> `` ·subject· ``[ <identity>]`` and the block's end."""
        parts = self._stamp
        if parts[0] != self.ident or not parts[1]:
            # Cut from the general path's own block (`stamped`, marks for the sequence and the
            # subject): the line's layout lives in `source_header` and `append_headers` alone.
            block = self.stamped(None, _SUBJECT_MARK, cast(int, _SEQ_MARK)).removeprefix(_NATS_LINE)
            head, _, rest = block.partition(_SEQ_MARK.encode())
            mid, _, tail = rest.partition(_SUBJECT_MARK.encode())
            parts = self._stamp = (self.ident, head, mid, tail)
        return parts[1], parts[2], parts[3]

    def put_back(self, pending: list[tuple[str, bytes | None, bytes, Delivery]]) -> None:
        """Give back what `take_plain` took (not stored) and flush it the feed's own way."""
        self._pending = pending + self._pending
        self._flush()

    def _start_position(self, config: ConsumerConfig) -> ConsumerConfig:
        """From the last origin sequence taken + 1. Before any, the configured start; after a
        restart that found none of ours (purged, expired), this stream's last message time, as
        nats-server does, rather than everything again."""
        seq = self.sseq + 1
        cfg = self.cfg
        if seq > 1:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = seq
        elif cfg.opt_start_seq > 0:
            config.deliver_policy = DeliverPolicy.BY_START_SEQUENCE
            config.opt_start_seq = cfg.opt_start_seq
        elif cfg.opt_start_time is not None:
            start = int(cfg.opt_start_time)
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = NanoTime(max(start, self.start_ts))
        elif self.start_ts:
            config.deliver_policy = DeliverPolicy.BY_START_TIME
            config.opt_start_time = NanoTime(self.start_ts)
        return config

    def requires_ack_fc(self) -> ApiError:
        return E.JSSourceConsumerRequiresAckFCErr()

    def _established(self, cname: str, delivered: int) -> None:
        super()._established(cname, delivered)
        # A named durable consumer restarts at its ack floor, which may be behind what we took.
        self.sseq = max(self.sseq, delivered)

    def _process(self, subject: str, hdr: bytes | None, payload: bytes, d: Delivery) -> None:
        """``processInboundSourceMsg``."""
        previous = (self.sseq, self.dseq)
        if d.sseq <= self.sseq:
            # Taken already (a named consumer reset to its ack floor brings it again).
            if d.dseq == self.dseq + 1:
                self.dseq += 1
            return
        if d.dseq == self.dseq + 1:
            self.dseq = d.dseq
            self.sseq = d.sseq
        elif d.dseq > self.dseq:
            self._restart()  # missed a delivery: start again after the last one taken
            return
        else:
            return
        self.lag = d.pending - 1 if d.pending else 0
        error = self.stream.ingest.process_sourced(self._transform(subject), self.stamped(hdr, subject, d.sseq), payload)
        if error is not None:
            self._warn(error)
            self.sseq, self.dseq = previous
            self._restart()
        elif d.sseq > self.taken:
            self.taken = d.sseq

    def _plain_end(self, pending: list[tuple[str, bytes | None, bytes, Delivery]], at: int) -> int:
        """Each the next delivery, of an origin sequence not taken yet
        (``processInboundSourceMsg``'s plain case)."""
        sseq, dseq = self.sseq, self.dseq
        end = at
        while end < len(pending):
            d = pending[end][3]
            if d.sseq <= sseq or d.dseq != dseq + 1:
                break
            sseq, dseq = d.sseq, d.dseq
            end += 1
        return end

    def _process_run(self, pending: list[tuple[str, bytes | None, bytes, Delivery]]) -> bool:
        """`_process` for each of ``pending`` in one store pass, each copy stamped with its
        origin as `_process` stamps it."""
        subjects, hdrs, payloads = self.copies(pending)
        taken = self.stream.ingest.process_sourced_run(subjects, hdrs, payloads)
        if taken is None:
            return False
        self._run_taken(pending, taken)
        return True


# --- a stream's feeds -------------------------------------------------------------------------


#: A run of copies is stamped by formatting each one's ``Nats-Stream-Source`` line from parts made once
#: (`SourceFeed._stamp_parts`), not by `source_header` and `append_headers` (its text, a list, a tuple and
#: an encode each): ~1.2 µs a copy of a catch-up; off: `SourceFeed.stamped` for each.
FAST_STAMP = True

#: The sources' feeds of a stream hold their deliveries for one flush of them all (`StreamSourcing.flush_soon`),
#: which stores every feed's plain stretch in one store pass; off: each feed flushes (and stores) alone.
SHARED_FLUSH = True
shared_flushes = 0  # `StreamSourcing._flush_sources` calls (a step count for the tests)
health_checks = 0  # `StreamSourcing._check_health` calls (a step count for the tests)


class StreamSourcing:
    """The mirror or the sources of one stream; the stream calls start/stop/update/info."""

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.mirror: MirrorFeed | None = None
        self.sources: dict[str, SourceFeed] = {}
        self._waiting: list[SourceFeed] = []  # feeds holding deliveries, in the order of their first
        self._health: TimerHandle | None = None  # the next health check of every feed

    def _arm_health(self) -> None:
        """Start the health check's ticker, once the stream has a feed."""
        if self._health is None and (self.mirror is not None or self.sources):
            self._health = self.stream.server.loop.call_later(HEALTH_CHECK_INTERVAL, self._check_health)

    def _check_health(self) -> None:
        """Every `HEALTH_CHECK_INTERVAL`, one look at each feed (`_Feed.check_health`): those silent
        for `STALLED_AFTER` recreate their consumer. Why one ticker for the stream: nats-server 2.15's
        ``processAllSourceMsgs`` (and ``processMirrorMsgs``) checks all of a stream's sources on one
        10 s ticker; a timer of each feed each second was 1,000 timer callbacks a second at 1,000
        sources, each a push and a pop of the event loop's heap (its entries compared in Python)."""
        global health_checks
        self._health = None
        self._arm_health()
        health_checks += 1
        now = time.monotonic()
        feeds: list[_Feed] = [self.mirror] if self.mirror is not None else list(self.sources.values())
        for feed in feeds:
            feed.check_health(now)

    def flush_soon(self, feed: SourceFeed) -> None:
        """``feed`` holds deliveries: all such feeds are flushed together when the read (or loop
        turn) ends. Why: each origin's consumer hands its feed what its pass read, and with many
        origins a publish spread over them made each message a pass of its own, so each was one
        feed's flush and one store call of the stream: 1,000 sources cost 4.35x per sourced message
        what 10 did. nats-server takes every source's messages off one queue (``processAllSourceMsgs``)."""
        if not self._waiting:
            self.stream.server.after_read(self._flush_sources)
        self._waiting.append(feed)

    def _flush_sources(self) -> None:
        """Flush the waiting feeds in order: each one's plain stretch (`SourceFeed.take_plain`) joins
        one store pass with the next ones' (`_store_together`); a feed with anything else holding
        (a gap, a consumer dropped, an origin sequence taken already) flushes alone (`_Feed._flush`)
        after what came before it is stored — as each flushing alone, in the same order."""
        global shared_flushes
        shared_flushes += 1
        feeds, self._waiting = self._waiting, []
        together: list[tuple[SourceFeed, list[tuple[str, bytes | None, bytes, Delivery]]]] = []
        for feed in feeds:
            if not feed._pending:
                continue  # flushed since (its info, a control message) or listed twice
            pending = feed.take_plain()
            if pending is not None:
                together.append((feed, pending))
                continue
            self._store_together(together)
            together = []
            feed._flush()
        self._store_together(together)

    def _store_together(self, together: list[tuple[SourceFeed, list[tuple[str, bytes | None, bytes, Delivery]]]]) -> None:
        """Store the feeds' stretches in one `StreamIngest.process_sourced_run`, each feed's positions
        moved as its own `_process_run` moves them. When the stream does not take them so (None) each
        feed flushes its own; when a write failed, the feed it failed for warns and starts over from
        there (`_Feed._run_taken`) and those after it flush their own, as they would have alone."""
        if len(together) < 2:
            for feed, pending in together:
                feed.put_back(pending)
            return
        subjects: list[str] = []
        hdrs: list[bytes] = []
        payloads: list[bytes] = []
        for feed, pending in together:
            copies = feed.copies(pending)
            subjects += copies[0]
            hdrs += copies[1]
            payloads += copies[2]
        taken = self.stream.ingest.process_sourced_run(subjects, hdrs, payloads)
        done, error = taken if taken is not None else (0, None)
        for i, (feed, pending) in enumerate(together):
            n = len(pending)
            if done >= n:
                feed._run_taken(pending, (n, None))
                done -= n
                continue
            if error is not None:
                feed._run_taken(pending, (done, error))
            else:  # not taken so (None): from here on, each feed its own way
                if done:
                    feed._run_taken(pending[:done], (done, None))
                feed.put_back(pending[done:])
            for later, rest in together[i + 1 :]:
                later.put_back(rest)
            return

    def start(self) -> None:
        cfg = self.stream.cfg
        if cfg.mirror is not None:
            self.mirror = MirrorFeed(self.stream, cfg.mirror)
            self.mirror.start()
        elif cfg.sources:
            feeds = [SourceFeed(self.stream, src, self) for src in cfg.sources]
            self.sources = {feed.iname: feed for feed in feeds}
            self._find_positions(feeds, after_restart=True)
            for feed in feeds:
                feed.start()
        self._arm_health()

    def stop(self, delete: bool = False) -> None:
        """Stop every feed; when the stream is deleted, also ask each origin to delete the
        consumer a feed made there (nats-server does it on a stream delete)."""
        if self.mirror is not None:
            if delete:
                self.mirror.delete_consumer()
            self.mirror.stop()
            self.mirror = None
        for feed in self.sources.values():
            if delete:
                feed.delete_consumer()
            feed.stop()
        self.sources.clear()
        self._waiting = []  # (each flushed its own as it stopped)
        if self._health is not None:
            self._health.cancel()
            self._health = None

    def update(self, old: StreamConfig, new: StreamConfig) -> None:
        """Sources added are started, removed ones stopped. The mirror itself cannot change, but
        removing it promotes the stream to a normal one (2.12+): mirroring stops."""
        if self.mirror is not None and new.mirror is None:
            self.mirror.drop_direct()
            self.mirror.delete_consumer()
            self.mirror.stop()
            self.mirror = None
        if self.mirror is not None and new.mirror is not None:
            self.mirror.cfg = new.mirror
            if not new.mirror_direct:
                self.mirror.drop_direct()
        wanted = {index_name(src): src for src in new.sources}
        removed = [self.sources.pop(i) for i in list(self.sources) if i not in wanted]
        # A consumer is deleted only when no source of the new config asks for that name (one
        # whose filter changed keeps the stable name of its origin, nats-server ``update``).
        def used(src: StreamSource, sources: list[StreamSource]) -> tuple[str, str]:
            origin = consumer_index_name(src)  # the origin (and its API prefix hash)
            return origin, source_consumer_name(self.stream, src, sources)

        still_used = {used(src, new.sources) for src in new.sources if src.consumer is None}
        for gone in removed:
            if used(gone.cfg, old.sources) not in still_used:
                gone.delete_consumer(old.sources)
            gone.stop()
        added: list[SourceFeed] = []
        for iname, src in wanted.items():
            feed = self.sources.get(iname)
            if feed is not None:
                feed.cfg = src  # same origin and filters; other fields apply from the next request
                continue
            feed = SourceFeed(self.stream, src, self)
            self.sources[iname] = feed
            added.append(feed)
        if added:
            self._find_positions(added, after_restart=False)
            for feed in added:
                feed.start()
            self._arm_health()

    def _find_positions(self, feeds: list[SourceFeed], after_restart: bool) -> None:
        """``startingSequenceForSources``: scan back for each source's latest copied message."""
        store = self.stream.store
        state = store.fast_state()
        if after_restart and state.last_ts:
            for feed in feeds:
                feed.start_ts = state.last_ts
        if not state.msgs:
            return
        wanted = {feed.iname: feed for feed in feeds}
        seq = state.last_seq
        while wanted and seq >= state.first_seq:
            try:
                msg = store.load_prev_msg(seq)
            except (ErrStoreMsgNotFound, ErrStoreEOF, StoreError):
                return
            seq = msg.seq - 1
            value = get_header(msg.hdr, HDR_STREAM_SOURCE) if msg.hdr else None
            if not value:
                continue
            name, iname, sseq, ident = parse_source_header(value.decode(errors="replace"))
            if iname:
                found = wanted.pop(iname, None)
                if found is not None:
                    found.sseq = found.taken = sseq
                    found.ident = ident  # the origin's identity, checked on the consumer create
            elif name:  # a 2.9 header: it is ours if the origin's name matches
                for feed in [f for f in wanted.values() if f.iname.split(" ", 1)[0] == name]:
                    del wanted[feed.iname]
                    feed.sseq = feed.taken = sseq

    def mirror_info(self) -> StreamSourceInfo | None:
        return self.mirror.info() if self.mirror is not None else None

    def sources_info(self) -> list[StreamSourceInfo]:
        if self._waiting:  # (what each feed holds stored together, before each info flushes its own)
            self._flush_sources()
        return [feed.info() for feed in self.sources.values()]
