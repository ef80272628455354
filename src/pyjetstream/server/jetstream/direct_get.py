"""``$JS.API.DIRECT.GET.<stream>[.<subject>]``: messages served raw, with stream headers appended.

Only subscribed when the stream has ``allow_direct`` (or ``mirror_direct``); otherwise requests
get nats-server's 503 no-responders. Errors are status-only messages (``408 …``, ``404 …``).

Besides one message (``seq`` | ``last_by_subj`` | ``next_by_subj``), ADR-31's batched forms:
``batch`` (+ ``max_bytes``, ``start_time``, ``next_by_subj``) streams up to ``batch`` messages,
each with ``Nats-Num-Pending`` / ``Nats-Last-Sequence``, then an empty ``204 EOB`` message;
``multi_last`` sends the last message of every matching subject (at or below ``up_to_seq`` /
``up_to_time``) in sequence order, then an EOB that also carries ``Nats-UpTo-Sequence``.
Mirrors nats-server's ``processDirectGetRequest``, ``getDirectRequest`` and ``getDirectMulti``
(stream.go) and the stores' ``MultiLastMsgs``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api import codec
from pyjetstream.api import headers as H
from pyjetstream.api.headers import Status, status_block
from pyjetstream.api.models_msg import MsgGetRequest
from pyjetstream.api.timefmt import format_time
from pyjetstream.server.jetstream.api_level import required_level_refused
from pyjetstream.server.jetstream.store.base import StoreError

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.host import Receiver
    from pyjetstream.server.jetstream.store.base import StoredMsg
    from pyjetstream.server.jetstream.stream import Stream

EMPTY_REQUEST = status_block(Status.EMPTY_REQUEST)
MALFORMED_REQUEST = status_block(Status.MALFORMED_REQUEST)
BAD_REQUEST = status_block(Status.DIRECT_BAD_REQUEST)
NOT_FOUND = status_block(Status.MESSAGE_NOT_FOUND)
NO_RESULTS = status_block(Status.NO_RESULTS)
TOO_MANY_RESULTS = status_block(Status.TOO_MANY_RESULTS)
REQUIRED_API_LEVEL = status_block(Status.REQUIRED_API_LEVEL)
PREFIX_TOKENS = 5  # $JS.API.DIRECT.GET.<stream>
MAX_MULTI_RESULTS = 1024  # nats-server's maxAllowedResponses for multi_last


class TooManyResults(Exception):
    """More than `MAX_MULTI_RESULTS` subjects matched a multi_last request."""


def _decode(payload: bytes) -> MsgGetRequest:
    """Go's ``json.Unmarshal``: ``null`` leaves the zero request; blank input is an error."""
    if payload.strip() == b"null":
        return MsgGetRequest()
    return codec.decode(payload, MsgGetRequest)


def _conflicting(req: MsgGetRequest) -> bool:
    """The option combinations nats-server refuses with ``408 Bad Request``."""
    return bool(
        (req.seq > 0 and req.last_by_subj)
        or (req.seq > 0 and req.start_time is not None)
        or (req.start_time is not None and req.last_by_subj)
        or (req.last_by_subj and req.next_by_subj)
        or (req.last_by_subj and req.batch > 0)
        or (req.last_by_subj and req.multi_last)
        or (req.next_by_subj and req.multi_last)
        or (req.up_to_seq > 0 and req.up_to_time is not None)
    )


class DirectGet:
    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self._stream_line = f"{H.STREAM}: {stream.name}\r\n".encode()

    def _send(self, reply: str, hdr: bytes | None, data: bytes = b"") -> None:
        self.stream.server.publish_internal(reply, data, "", hdr)

    def on_request(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        if not reply:
            return
        if hdr is not None and required_level_refused(hdr):
            return self._send(reply, REQUIRED_API_LEVEL)
        if not payload:
            return self._send(reply, EMPTY_REQUEST)
        try:
            req = _decode(payload)
        except (msgspec.DecodeError, ValueError):
            return self._send(reply, MALFORMED_REQUEST)
        if req.seq < 0 or req.up_to_seq < 0:  # a Go uint64 does not take a negative number
            return self._send(reply, MALFORMED_REQUEST)
        if (
            req.seq == 0
            and not req.last_by_subj
            and not req.next_by_subj
            and not req.multi_last
            and req.start_time is None
        ):
            return self._send(reply, EMPTY_REQUEST)
        if _conflicting(req):
            return self._send(reply, BAD_REQUEST)
        self._answer(reply, req)

    def on_last_by_subject(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any
    ) -> None:
        if not reply:
            return
        if hdr is not None and required_level_refused(hdr):
            return self._send(reply, REQUIRED_API_LEVEL)
        req = MsgGetRequest()
        if payload:
            try:
                req = _decode(payload)
            except (msgspec.DecodeError, ValueError):
                return self._send(reply, MALFORMED_REQUEST)
            if req.seq < 0 or req.up_to_seq < 0:
                return self._send(reply, MALFORMED_REQUEST)
        key = subject.split(".", PREFIX_TOKENS)[-1] if subject.count(".") >= PREFIX_TOKENS else ""
        if not key:
            return self._send(reply, BAD_REQUEST)
        # Only no_hdr (and max_bytes) make sense here: the subject already names the message.
        if (
            req.last_by_subj
            or req.next_by_subj
            or req.multi_last
            or req.seq
            or req.batch
            or req.start_time is not None
            or req.up_to_seq
            or req.up_to_time is not None
        ):
            return self._send(reply, BAD_REQUEST)
        req.last_by_subj = key
        self._answer(reply, req)

    # --- answers ------------------------------------------------------------------------
    def _max_bytes(self, req: MsgGetRequest) -> int:
        """``max_bytes``, or the server's max_pending when unset (as nats-server)."""
        return req.max_bytes or self.stream.server.options.max_pending

    def _stream_headers(self, msg: StoredMsg, pending: tuple[int, int] | None) -> bytes:
        """The stored header block with Nats-Stream … appended (genHeader's order)."""
        if pending is not None:
            return self._reply_headers(msg.hdr, msg.subject, msg.seq, msg.ts, *pending)
        base = msg.hdr if msg.hdr and len(msg.hdr) > 2 else b"NATS/1.0\r\n\r\n"
        return b"%b%bNats-Subject: %b\r\nNats-Sequence: %d\r\nNats-Time-Stamp: %b\r\n\r\n" % (
            base[:-2],
            self._stream_line,
            msg.subject.encode(),
            msg.seq,
            format_time(msg.ts).encode(),
        )

    def _batch_headers(self, msg: StoredMsg, pending: int, last_seq: int) -> bytes:
        """`_stream_headers` of a batch reply (the same bytes: nats-server's ``dgb`` lines
        after the stored headers), formatted in one step."""
        return self._reply_headers(msg.hdr, msg.subject, msg.seq, msg.ts, pending, last_seq)

    def _reply_headers(
        self, hdr: bytes | None, subject: str, seq: int, ts: int, pending: int, last_seq: int
    ) -> bytes:
        """`_batch_headers` from a message's fields (a `MsgTuple`'s, for multi_last)."""
        base = hdr if hdr and len(hdr) > 2 else b"NATS/1.0\r\n\r\n"
        return b"%b%bNats-Subject: %b\r\nNats-Sequence: %d\r\nNats-Time-Stamp: %b\r\nNats-Num-Pending: %d\r\nNats-Last-Sequence: %d\r\n\r\n" % (
            base[:-2],
            self._stream_line,
            subject.encode(),
            seq,
            format_time(ts).encode(),
            pending,
            last_seq,
        )

    def _answer(self, reply: str, req: MsgGetRequest) -> None:
        if req.multi_last:
            return self._answer_multi(reply, req)
        store = self.stream.store
        seq = store.get_seq_from_time(req.start_time) if req.start_time is not None else req.seq
        batch = req.batch
        is_batch = batch != 0
        filt = req.next_by_subj
        pending = valid_through = 0
        if is_batch:
            pending, valid_through = store.num_pending(seq, filt or ">")
        else:
            batch = 1
        max_bytes = self._max_bytes(req) if is_batch else 0  # (one message: no byte budget)
        sent_bytes = last_seq = 0
        # A batch's replies go to one inbox: its one receiving subscription is looked up once and
        # each reply framed straight onto that connection (as a consumer's delivery pass does); a
        # receiver that went away meanwhile is closed, which sends the rest the routed way.
        server = self.stream.server
        rsub = _client_receiver(server.lone_receiver(reply)) if is_batch else None
        direct = 0
        i = 0
        while i < batch:
            try:
                if seq > 0 and not filt:
                    if i == 0 and not is_batch:
                        msg = store.load_msg(seq)
                    else:
                        msg, seq = store.load_next_msg(">", seq)
                    seq += 1
                elif filt:
                    msg, seq = store.load_next_msg(filt, max(seq, 1))
                    seq += 1
                else:
                    msg = store.load_last_msg(req.last_by_subj)
            except (StoreError, OSError) as exc:
                if not isinstance(exc, StoreError):
                    self.stream.server.logger.error(
                        "JetStream failed to load a message of stream '%s': %s", self.stream.name, exc
                    )
                if batch > 1 and i > 0:
                    seq = store.fast_state().last_seq + 1
                    break
                return self._send(reply, NOT_FOUND)
            hdr: bytes | None = None
            if not req.no_hdr:
                if is_batch:
                    pending = max(pending - 1, 0)
                    hdr = self._batch_headers(msg, pending, last_seq)
                else:
                    hdr = self._stream_headers(msg, None)
            last_seq = msg.seq
            if rsub is not None and not rsub.closed:
                rsub.client.deliver(rsub, reply, "", hdr, msg.data, None)  # type: ignore[union-attr]
                direct += 1
            else:
                server.publish_internal(reply, msg.data, "", hdr)
            sent_bytes += len(msg.subject) + len(msg.hdr or b"") + len(msg.data)
            i += 1
            if sent_bytes >= max_bytes:
                break
        if direct:
            server.count_matches(direct)
        if is_batch:
            if store.fast_state().last_seq > valid_through:
                pending, _ = store.num_pending(seq, filt or ">")
            self._send(
                reply, status_block(Status.EOB, [(H.NUM_PENDING, pending), (H.LAST_SEQUENCE, last_seq)])
            )

    def _answer_multi(self, reply: str, req: MsgGetRequest) -> None:
        store = self.stream.store
        max_bytes = self._max_bytes(req)
        up_to = req.up_to_seq
        if req.up_to_time is not None:
            up_to = store.get_seq_from_time(req.up_to_time)
            # A ceiling at or before the first message would select messages after up_to_time.
            if up_to <= store.fast_state().first_seq:
                return self._send(reply, NO_RESULTS)
            up_to -= 1
        if up_to == 0:
            up_to = store.fast_state().last_seq
        try:
            seqs = multi_last_seqs(self.stream, req.multi_last, up_to)
        except TooManyResults:
            return self._send(reply, TOO_MANY_RESULTS)
        if not seqs:
            return self._send(reply, NO_RESULTS)
        pending, last_seq = self._send_multi(reply, req, seqs, max_bytes)
        if pending < 0:
            return self._send(reply, NOT_FOUND)
        eob = [(H.NUM_PENDING, pending), (H.LAST_SEQUENCE, last_seq), (H.UP_TO_SEQUENCE, up_to)]
        self._send(reply, status_block(Status.EOB, eob))

    def _send_multi(self, reply: str, req: MsgGetRequest, seqs: list[int], max_bytes: int) -> tuple[int, int]:
        """The messages of a multi_last answer, up to ``max_bytes`` and ``batch``, from
        ``req.seq`` on: read in one store call (``load_msgs``), each framed straight onto the
        requester's connection when it is the reply's lone receiver (as a batch is), with
        ``_reply_headers`` (the time stamp's date formatted once per second). Returns the
        num-pending and last sequence for the end-of-batch status; (-1, 0) when a message could
        not be read (404, as nats-server when its load fails)."""
        store = self.stream.store
        try:
            msgs = store.load_msgs([seq for seq in seqs if seq >= req.seq])
        except (StoreError, OSError):
            return -1, 0
        server = self.stream.server
        rsub = _client_receiver(server.lone_receiver(reply))
        pending = len(seqs)
        last_seq = sent = sent_bytes = direct = k = 0
        for seq in seqs:
            pending = max(pending - 1, 0)
            if seq < req.seq:
                continue
            if k >= len(msgs) or msgs[k][1] != seq:
                return -1, 0
            subject, _, ts, hdr, data = msgs[k]
            k += 1
            headers = self._reply_headers(hdr, subject, seq, ts, pending, last_seq)
            if rsub is not None and not rsub.closed:
                rsub.client.deliver(rsub, reply, "", headers, data, None)  # type: ignore[union-attr]
                direct += 1
            else:
                self._send(reply, headers, data)
            last_seq = seq
            sent_bytes += len(subject) + len(hdr or b"") + len(data)
            if sent_bytes >= max_bytes:
                break
            sent += 1
            if req.batch > 0 and sent >= req.batch:
                break
        if direct:
            server.count_matches(direct)
        return pending, last_seq


def multi_last_seqs(stream: Stream, filters: list[str], max_seq: int) -> list[int]:
    """The last sequence at or below ``max_seq`` of every subject matching any filter, sorted
    (nats-server's ``multiLastSeqs``): a subject whose last message is past ``max_seq`` counts
    with its newest earlier message, if it has one. One visit per matching subject."""
    seqs = stream.store.multi_last_seqs(filters, max_seq)
    if len(seqs) > MAX_MULTI_RESULTS:
        raise TooManyResults
    return seqs


def _client_receiver(rsub: Receiver | None) -> Receiver | None:
    """A client's subscription: a reply subject that reaches an internal one (a mirror's feed
    ``takes_deliveries``) is routed."""
    return rsub if rsub is not None and rsub.client is not None else None
