"""Ack processing, redelivery and the ack-related advisories (nats-server ``consumer.go``).

A mixin of :class:`~pyjetstream.server.jetstream.consumer.Consumer`: ``processAck`` and friends,
the pending timer (``checkPending``) that queues expired deliveries for redelivery, ``backoff``,
``max_deliver`` with its MAX_DELIVERIES advisory, NAK/TERM advisories and sampled ack metrics.

The ack subject is ``$JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>``; the server
only reads the delivery count, stream sequence and delivery sequence from it.
"""

from __future__ import annotations

import json
import random
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api import subjects as S
from pyjetstream.api.advisories import (
    ConsumerAckMetric,
    ConsumerDeliveryExceededAdvisory,
    ConsumerDeliveryNakAdvisory,
    ConsumerDeliveryTerminatedAdvisory,
)
from pyjetstream.api.enums import AckPolicy, RetentionPolicy
from pyjetstream.api.timefmt import parse_go_duration
from pyjetstream.server.jetstream import advisories

if TYPE_CHECKING:
    from pyjetstream.api.models_consumer import ConsumerConfig
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["AckProcessing"]

ACK = b"+ACK"
ACK_OK = b"+OK"
NAK = b"-NAK"
PROGRESS = b"+WPI"
NEXT = b"+NXT"
TERM = b"+TERM"
_NO_RESPONDERS = b"NATS/1.0 503\r\n\r\n"
# Added to timer delays so bursts that expire together are handled together (``ackWaitDelay``).
ACK_WAIT_DELAY = 0.001


class AckProcessing:
    """Acks, NAKs, TERMs, progress, redelivery timing. Mixed into Consumer."""

    # Provided by Consumer.
    cfg: ConsumerConfig
    stream: Stream
    engine: Any
    server: Any
    loop: Any
    name: str
    closed: bool
    sseq: int
    dseq: int
    adflr: int
    asflr: int
    pending: dict[int, tuple[int, int]]
    rdc: dict[int, int]
    rdq: dict[int, None]
    lat: int
    sfreq: int
    retention: RetentionPolicy
    _ack_prefix: str

    if TYPE_CHECKING:

        def _kick(self) -> None: ...
        def _dirty(self) -> None: ...
        def _process_next_request(self, reply: str, body: bytes) -> None: ...
        def _suppress_deletion(self) -> None: ...

    def _init_acks(self) -> None:
        self._ptmr: Any = None
        self._pending_dels = 0
        self._ack_prefix_len = len(self._ack_prefix)

    def _stop_acks(self) -> None:
        if self._ptmr is not None:
            self._ptmr.cancel()
            self._ptmr = None

    # --- inbound acks --------------------------------------------------------------------------

    def _on_ack(self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Any) -> None:
        """``processAck``: runs synchronously for every publish to this consumer's ack subjects."""
        if self.closed:
            return
        parts = subject[self._ack_prefix_len :].split(".")
        if len(parts) != 5:
            # nats-server's subscription only takes five tokens here: as if nobody listened.
            if reply and client is not None and client.no_responders:
                self.server.publish_internal(reply, b"", hdr=_NO_RESPONDERS)
            return
        try:
            dc, sseq, dseq = int(parts[0]), int(parts[1]), int(parts[2])
        except ValueError:  # not numbers we wrote: nats-server reads those as -1 (matching nothing)
            dc, sseq, dseq = (int(t) if t.isdigit() else -1 for t in parts[:3])
        skip_reply = sseq == 0
        if not payload or payload == ACK or payload == ACK_OK:
            self._process_ack_msg(sseq, dseq, dc, True)
        elif payload.startswith(NEXT):
            self._process_ack_msg(sseq, dseq, dc, True)
            if reply:
                self._process_next_request(reply, payload[len(NEXT) :])
            skip_reply = True
        elif payload.startswith(NAK):
            self._process_nak(sseq, dseq, dc, payload[len(NAK) :])
        elif payload == PROGRESS:
            self._progress(sseq)
        elif payload == TERM or payload.startswith(TERM + b" "):
            # ⟨2.10.4+⟩ ``+TERM <reason>``; 2.9.10 only knew the exact ``+TERM``.
            reason = payload[len(TERM) :].strip().decode("utf-8", "replace")
            self._process_term(sseq, dseq, dc, reason)
        if reply and not skip_reply:
            self.server.publish_internal(reply, b"")
        if self.cfg.inactive_threshold > 0:
            self._suppress_deletion()

    def _process_ack_msg(self, sseq: int, dseq: int, dc: int, sample: bool) -> None:
        """``processAckMsg``: retire ``sseq`` (and, for AckAll, everything below it)."""
        policy = self.cfg.ack_policy
        pending = self.pending
        maxp = self.cfg.max_ack_pending
        need_signal = False
        acked: list[int] | None = None
        if policy == AckPolicy.EXPLICIT:
            p = pending.pop(sseq, None)
            if p is not None:
                if sample and self.sfreq:
                    self._sample_ack(sseq, dseq, dc, p)
                if maxp > 0 and len(pending) + 1 >= maxp:
                    need_signal = True
                dseq = p[0]
                self._pending_dels += 1
                if self._pending_dels > 4096:
                    self._pending_deleted(0)
            if not pending:
                self.adflr, self.asflr = self.dseq - 1, self.sseq - 1
            elif dseq == self.adflr + 1:
                self.adflr, self.asflr = dseq, sseq
                # The floor moves up to just below the oldest message still pending.
                nxt = sseq + 1 if sseq + 1 in pending else self._first_pending_after(sseq)
                if nxt:
                    pd = self.pending[nxt][0]
                    if pd > 0:
                        self.adflr, self.asflr = pd - 1, nxt - 1
            if self.rdc:
                self.rdc.pop(sseq, None)
            if self.rdq:
                self.rdq.pop(sseq, None)
        elif policy == AckPolicy.ALL:
            if dseq <= self.adflr or sseq <= self.asflr:
                return
            if maxp > 0 and len(pending) >= maxp:
                need_signal = True
            floor = self.asflr
            self.adflr, self.asflr = dseq, sseq
            gone = [s for s in pending if s <= sseq]
            for s in gone:
                del pending[s]
            self._pending_deleted(len(gone))
            for s in [s for s in self.rdc if s <= sseq]:
                del self.rdc[s]
            for s in [s for s in self.rdq if s <= sseq]:
                del self.rdq[s]
            if self.retention != RetentionPolicy.LIMITS:
                acked = list(range(max(floor + 1, 1), sseq + 1))
        else:
            return
        self._dirty()
        self.lat = time.time_ns()
        if self.retention != RetentionPolicy.LIMITS:
            if acked is not None:
                for seq in acked:
                    self.stream.ack_msg(seq)
            else:
                self.stream.ack_msg(sseq)
        if need_signal:
            self._kick()

    def _process_nak(self, sseq: int, dseq: int, dc: int, arg: bytes) -> None:
        """``processNak``: redeliver now, or after the requested delay."""
        if dseq <= self.adflr or dseq > self.dseq:
            return
        p = self.pending.get(sseq)
        if p is None:
            return
        self._advisory(
            S.advisory_msg_naked(self.stream.name, self.name),
            ConsumerDeliveryNakAdvisory(
                stream=self.stream.name, consumer=self.name, consumer_seq=dseq, stream_seq=sseq, deliveries=dc
            ),
        )
        delay = _nak_delay(arg.strip())
        if delay is not None:
            # Pretend the ack wait started ``delay`` ago relative to now (expired == now).
            self.rdq.pop(sseq, None)
            ts = time.time_ns() - self.cfg.ack_wait + delay
            self.pending[sseq] = (p[0], ts)
            self._dirty()
            if self._ptmr is not None:
                self._arm_pending_timer(0.01)
            return
        if sseq not in self.rdq:
            self.rdq[sseq] = None
        self._kick()

    def _process_term(self, sseq: int, dseq: int, dc: int, reason: str) -> None:
        """``processTerm``: like an ack (no more redeliveries) plus the TERMINATED advisory."""
        self._process_ack_msg(sseq, dseq, dc, False)
        self._advisory(
            S.advisory_msg_terminated(self.stream.name, self.name),
            ConsumerDeliveryTerminatedAdvisory(
                stream=self.stream.name,
                consumer=self.name,
                consumer_seq=dseq,
                stream_seq=sseq,
                deliveries=dc,
                reason=reason,
            ),
        )

    def _progress(self, sseq: int) -> None:
        """``+WPI``: the message is being worked on; restart its ack wait."""
        p = self.pending.get(sseq)
        if p is None:
            return
        self.pending[sseq] = (p[0], time.time_ns())
        self._dirty()

    def _first_pending_after(self, sseq: int) -> int:
        """The smallest pending stream sequence above ``sseq`` (0: none).

        Probes the next sequences first (acks mostly come in order, so it is usually the very
        next one), then scans: nats-server loops over the sequences.
        """
        pending = self.pending
        limit = min(self.sseq, sseq + 65)
        for ss in range(sseq + 1, limit):
            if ss in pending:
                return ss
        if limit >= self.sseq:
            return 0
        return min((ss for ss in pending if ss > sseq), default=0)

    def _pending_deleted(self, n: int = 1) -> None:
        """Rebuild the pending dict once deletions dominate it.

        A dict keeps deleted slots until it is resized, and iterating it walks them: acking
        thousands of messages in order would make every scan of ``pending`` slower and slower.
        """
        self._pending_dels += n
        if self._pending_dels > 4096 and self._pending_dels > 2 * len(self.pending):
            self.pending = dict(self.pending)
            self._pending_dels = 0

    # --- redelivery ------------------------------------------------------------------------------

    def _ack_wait_s(self, next_ns: int) -> float:
        return (next_ns if next_ns > 0 else self.cfg.ack_wait) / 1e9 + ACK_WAIT_DELAY

    def _arm_pending_timer(self, delay: float) -> None:
        if self._ptmr is not None:
            self._ptmr.cancel()
        self._ptmr = self.loop.call_later(max(delay, 0.0), self._check_pending)

    def _check_pending(self) -> None:
        """``checkPending``: queue every delivery whose ack wait (or backoff step) has passed."""
        self._ptmr = None
        if self.closed:
            return
        pending = self.pending
        first = self.stream.store.fast_state().first_seq
        now = time.time_ns()
        ttl = self.cfg.ack_wait
        backoff = self.cfg.backoff
        nbo = len(backoff)
        nxt = backoff[-1] if nbo else ttl
        expired: list[int] = []
        dirty = False
        rdq = self.rdq
        rdc = self.rdc
        for seq, (pd, ts) in list(pending.items()):
            if seq < first or seq <= self.asflr:
                # Gone from the stream (or below the floor): no longer pending.
                del pending[seq]
                rdc.pop(seq, None)
                rdq.pop(seq, None)
                dirty = True
                if seq > self.asflr:
                    self.asflr = seq
                if pd > self.adflr:
                    self.adflr = pd
                continue
            elapsed = now - ts
            deadline = ttl
            if nbo:
                dc = rdc.get(seq, 0)
                nbi = dc + 1
                if dc + 1 >= nbo:
                    dc = nbo - 1
                    nbi = dc
                deadline = backoff[dc]
                if backoff[nbi] < nxt:
                    nxt = backoff[nbi]
            if elapsed >= deadline:
                if seq not in rdq:
                    expired.append(seq)
            elif deadline - elapsed < nxt:
                nxt = deadline - elapsed
        if expired:
            expired.sort()
            for seq in expired:
                rdq[seq] = None
            # Re-stamp so they keep their relative order but count as delivered "now".
            off = now - pending[expired[0]][1]
            for seq in expired:
                pd, ts = pending[seq]
                pending[seq] = (pd, ts + off)
            self._kick()
        if pending:
            self._arm_pending_timer(self._ack_wait_s(nxt))
        else:
            rdq.clear()
        if dirty:
            self._dirty()

    def _max_deliveries_exceeded(self, seq: int, dc: int) -> None:
        """A redelivery would pass ``max_deliver``: stop tracking it, advise once."""
        maxdc = self.cfg.max_deliver
        if dc == maxdc + 1:
            self._advisory(
                S.advisory_max_deliveries(self.stream.name, self.name),
                ConsumerDeliveryExceededAdvisory(
                    stream=self.stream.name, consumer=self.name, stream_seq=seq, deliveries=dc - 1
                ),
            )
        self.pending.pop(seq, None)
        self._dirty()

    # --- advisories ------------------------------------------------------------------------------

    def _advisory(self, subject: str, event: Any) -> None:
        advisories.publish(self.engine, subject, event)

    def _sample_ack(self, sseq: int, dseq: int, dc: int, p: tuple[int, int]) -> None:
        """``sampleAck``: publish an ack latency metric for a ``sample_freq`` share of acks."""
        freq = self.sfreq
        if freq <= 0 or (freq < 100 and random.randrange(100) > freq):
            return
        subject = S.metric_consumer_ack(self.stream.name, self.name)
        if not self.server.has_interest(subject):
            return
        self._advisory(
            subject,
            ConsumerAckMetric(
                stream=self.stream.name,
                consumer=self.name,
                consumer_seq=dseq,
                stream_seq=sseq,
                ack_time=time.time_ns() - p[1],
                deliveries=dc,
            ),
        )


def _nak_delay(arg: bytes) -> int | None:
    """The delay of ``-NAK {"delay": ns}`` / ``-NAK 5s``; None for a plain (or unparsable) NAK."""
    if not arg:
        return None
    try:
        if arg[:1] == b"{":
            doc = json.loads(arg)
            if not isinstance(doc, dict):
                return None
            value = {str(k).lower(): v for k, v in doc.items()}.get("delay", 0)
            if isinstance(value, bool) or not isinstance(value, int):
                return None
            return value
        return parse_go_duration(arg.decode())
    except (ValueError, UnicodeDecodeError):
        return None
