"""Ack processing, redelivery timing and the ack-related advisories (nats-server ``consumer.go``).

`AckProcessor` is the consumer's ack subscriber (``processAck`` and friends), its
pending timer (``checkPending``), which queues deliveries whose ack wait (or ``backoff`` step)
has passed for redelivery, and what a delivery pass takes off that queue (``redeliveries``: the
count, ``max_deliver``, the read). It applies every ack to the consumer's
`DeliveryState` and publishes the
NAK / TERMINATED / MAX_DELIVERIES advisories and the sampled ack metrics.

The ack subject is ``$JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>``; the server
only reads the delivery count, stream sequence and delivery sequence from it. The payload is
classified by `pyjetstream.api.ack.parse_ack_payload`, the one place that knows the forms.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from typing import TYPE_CHECKING

from pyjetstream.api import subjects as S
from pyjetstream.api.ack import ACK, NAK, AckKind, parse_ack_payload
from pyjetstream.api.enums import AckPolicy, RetentionPolicy
from pyjetstream.api.headers import no_responders_block
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.consumer_config import sample_frequency

if TYPE_CHECKING:
    from pyjetstream.api.advisories import TypedEvent
    from pyjetstream.server.jetstream.consumer import Consumer
    from pyjetstream.server.jetstream.host import Connection
    from pyjetstream.server.jetstream.store.base import MsgTuple

__all__ = ["ACK_WAIT_DELAY", "AckProcessor"]

# An ack subject token that is not a number (Go parses -1 into an unsigned: the largest value).
_NOT_A_NUMBER = 2**64 - 1
# Added to timer delays so bursts that expire together are handled together (``ackWaitDelay``).
ACK_WAIT_DELAY = 0.001
# What follows ``$JS.ACK.<stream>.<consumer>.`` in every ack of a run, joined by LF: five tokens of
# ASCII digits each, none empty (what ``on_ack`` reads with ``int`` as the embedded server wrote it).
_ACK_TAILS = re.compile(r"(?:[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+\n)*[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")


class AckProcessor:
    """Acks, NAKs, TERMs, progress and the redelivery timer of one consumer."""

    __slots__ = (
        "_activity",
        "_ahead",
        "_explicit",
        "_limits",
        "_maxp",
        "_naked",
        "_plain",
        "_prefix_len",
        "_ptmr_end",
        "_several",
        "consumer",
        "ptmr",
        "state",
    )

    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer
        self.state = consumer.state
        self.ptmr: asyncio.TimerHandle | None = None
        self._ptmr_end = 0.0  # when ``ptmr`` fires (the loop's clock)
        self._prefix_len = len(consumer.ack_prefix)
        self._naked = S.advisory_msg_naked(consumer.stream.name, consumer.name)
        self.configure()

    def configure(self) -> None:
        """Read once per config (not per ack) what every ack looks at; the consumer calls this
        again when its config changes."""
        cfg = self.consumer.cfg
        self._explicit = cfg.ack_policy == AckPolicy.EXPLICIT
        self._several = cfg.ack_policy in (AckPolicy.ALL, AckPolicy.FLOW_CONTROL)  # an ack retires all below
        self._ahead = cfg.flow_control  # acks may run ahead of what was delivered
        self._maxp = cfg.max_ack_pending
        self._activity = cfg.inactive_threshold > 0
        self._limits = self.consumer.retention == RetentionPolicy.LIMITS  # acks remove nothing
        # An ``+ACK`` then only retires the message (``ack`` inlined in ``on_ack``): no ack
        # sampling (read from the config: the consumer updates its ``sfreq`` after this).
        self._plain = self._explicit and self._limits and not sample_frequency(cfg)
        self.state.set_waits(cfg.ack_wait, cfg.backoff or [])

    def stop(self) -> None:
        if self.ptmr is not None:
            self.ptmr.cancel()
            self.ptmr = None

    # --- inbound acks --------------------------------------------------------------------------

    def on_ack(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Connection | None
    ) -> None:
        """``processAck``: runs synchronously for every publish to this consumer's ack subjects."""
        consumer = self.consumer
        if consumer.closed:
            return
        parts = subject[self._prefix_len :].split(".")
        if len(parts) != 5:
            # nats-server's subscription only takes five tokens here: as if nobody listened.
            if reply and client is not None and client.no_responders:
                consumer.server.publish_internal(reply, b"", hdr=no_responders_block(subject))
            return
        try:
            dc, sseq, dseq = int(parts[0]), int(parts[1]), int(parts[2])
        except ValueError:  # not numbers we wrote: nats-server reads -1 as an unsigned, the largest
            dc, sseq, dseq = (int(t) if t.isdigit() else _NOT_A_NUMBER for t in parts[:3])
        skip_reply = sseq == 0
        # ⟨2.11+⟩ an ack (or term) beyond what was delivered is ignored, without an ack reply
        # (``processAckMsg`` returns false), unless flow control may run ahead.
        beyond = sseq >= self.state.sseq and not self._ahead
        if payload == ACK:  # the common case first, without classifying the payload
            if beyond:
                skip_reply = True
            elif self._plain:  # ``ack`` for AckExplicit on a limits stream, without sampling
                st = self.state
                was = st.pending.n
                p = st.ack(sseq, dseq)
                consumer.writer.dirty()
                st.lat = time.time_ns()
                if p is not None and was >= self._maxp > 0:
                    consumer.kick()
            else:
                self.ack(sseq, dseq, dc, True)
            action = None
        else:
            action = parse_ack_payload(payload)
        if action is not None:
            kind = action.kind
            if kind is AckKind.ACK:
                if beyond:
                    skip_reply = True
                else:
                    self.ack(sseq, dseq, dc, True)
            elif kind is AckKind.NEXT:
                if not beyond:
                    self.ack(sseq, dseq, dc, True)
                if reply:
                    consumer.pull.process_request(reply, action.request)
                skip_reply = True
            elif kind is AckKind.NAK:
                self.nak(sseq, dseq, dc, action.delay_ns)
            elif kind is AckKind.PROGRESS:
                self.progress(sseq)
            else:
                self.term(sseq, dseq, dc, action.reason, acked=not beyond)
                skip_reply = skip_reply or beyond
        if reply and not skip_reply:
            # Sent once the state holding this ack is written (``StateWriter.confirm``): a
            # confirmed ack survives a crash (nats-server's ``updateAcks`` answers at once).
            consumer.writer.confirm(reply)
        if self._activity:
            consumer.suppress_deletion()

    def on_ack_run(
        self,
        subjects: list[str],
        replies: list[str],
        hdrs: list[bytes | None],
        payloads: list[bytes],
        client: Connection | None,
    ) -> None:
        """``processAck`` for a run of publishes to this consumer's ack subjects, in order (the
        router's ``InternalSub.run``: what `on_ack` would get one by one). When every
        subject's tail is five digit tokens (one regex over them all, the tokens split in one
        pass), a reply-less ``+ACK`` is applied here as `on_ack` applies it and what the run
        defers to its end has no effect before the loop's next turn (persisting the state, the
        last-activity time, the delivery kick for ``max_ack_pending``, the inactivity timer), and
        a reply-less ``-NAK`` goes to `nak` with the tokens already read (whether anyone listens
        for its advisory asked once per run: nothing in a run subscribes); anything else goes to
        `on_ack`. Stops once ``client`` is closed (a slow consumer cut
        by an advisory), after which its connection processes nothing."""
        consumer = self.consumer
        n = len(payloads)
        plen = self._prefix_len
        tails = "\n".join([s[plen:] for s in subjects])
        if not _ACK_TAILS.fullmatch(tails):
            for i in range(n):
                if consumer.closed or (client is not None and client.closed):
                    return
                self.on_ack(subjects[i], replies[i], hdrs[i], payloads[i], client)
            return
        st = self.state
        plain = self._plain
        ahead = self._ahead
        maxp = self._maxp
        acked = kick = False
        advise: bool | None = None  # (asked at the run's first NAK)
        tokens = tails.replace("\n", ".").split(".")  # five per ack: dc, sseq, dseq, ts, pending
        sseqs = list(map(int, tokens[1::5]))
        dseqs = list(map(int, tokens[2::5]))
        for i in range(n):
            if consumer.closed:
                return
            payload = payloads[i]
            if payload == NAK and not replies[i]:
                if advise is None:
                    advise = consumer.server.has_interest(self._naked)
                self.nak(sseqs[i], dseqs[i], int(tokens[5 * i]), None, advise)
                if client is not None and client.closed:
                    break
                continue
            if payload == ACK and not replies[i]:
                sseq = sseqs[i]
                if sseq >= st.sseq and not ahead:
                    pass  # beyond what was delivered: ignored (see on_ack)
                elif plain:  # ``ack`` for AckExplicit on a limits stream, without sampling
                    was = st.pending.n
                    if st.ack(sseq, dseqs[i]) is not None and was >= maxp > 0:
                        kick = True
                    acked = True
                else:
                    self.ack(sseq, dseqs[i], int(tokens[5 * i]), True)
                continue
            self.on_ack(subjects[i], replies[i], hdrs[i], payloads[i], client)
            if client is not None and client.closed:
                break
        if acked:
            consumer.writer.dirty()
            st.lat = time.time_ns()
            if kick:
                consumer.kick()
        if self._activity:
            consumer.suppress_deletion()

    def ack(self, sseq: int, dseq: int, dc: int, sample: bool) -> None:
        """``processAckMsg``: retire ``sseq`` (and, for AckAll, everything below it)."""
        consumer = self.consumer
        st = self.state
        maxp = self._maxp
        retired: list[int] | None = None
        if self._explicit:
            was = st.pending.n
            p = st.ack(sseq, dseq)
            if p is not None and sample and consumer.sfreq:
                self._sample_ack(sseq, dseq, dc, p)
            need_signal = p is not None and maxp > 0 and was >= maxp
        elif self._several:
            need_signal = maxp > 0 and st.pending.n >= maxp
            retired = st.ack_all(sseq, dseq)
            if retired is None:
                return
        else:
            return
        consumer.writer.dirty()
        st.lat = time.time_ns()
        if not self._limits:
            stream = consumer.stream
            stream.ack_msg(sseq)
            # AckAll: the stream hears of what was pending below too (nats-server's ackAllSeqs),
            # not of every sequence below the ack.
            for seq in retired or ():
                if seq != sseq:
                    stream.ack_msg(seq)
        if need_signal:
            consumer.kick()

    def nak(self, sseq: int, dseq: int, dc: int, delay_ns: int | None, advise: bool | None = None) -> None:
        """``processNak``: redeliver now, or after the requested delay. ``advise``: whether the
        NAK advisory has a listener (None: ask)."""
        consumer = self.consumer
        st = self.state
        if st.nak(sseq, dseq) is None:
            return
        if advise is None:
            advise = consumer.server.has_interest(self._naked)
        if advise:  # (the event built only for a listener)
            from pyjetstream.api.advisories import ConsumerDeliveryNakAdvisory  # Deferred: see advisories.py.

            self._advisory(
                self._naked,
                ConsumerDeliveryNakAdvisory(
                    stream=consumer.stream.name,
                    consumer=consumer.name,
                    consumer_seq=dseq,
                    stream_seq=sseq,
                    deliveries=dc,
                ),
            )
        if delay_ns is not None:
            # Pretend the ack wait started ``delay`` ago relative to now (expired == now).
            st.nak_later(sseq, time.time_ns() - consumer.cfg.ack_wait + delay_ns)
            consumer.dirty()
            if self.ptmr is not None:
                self.arm(0.01)
            return
        st.redeliver(sseq)
        consumer.kick()

    def term(self, sseq: int, dseq: int, dc: int, reason: str, acked: bool = True) -> None:
        """``processTerm``: like an ack (no more redeliveries) plus the TERMINATED advisory (sent
        even for a sequence beyond what was delivered, which acks nothing)."""
        consumer = self.consumer
        if acked:
            self.ack(sseq, dseq, dc, False)
        # Deferred: see advisories.py.
        from pyjetstream.api.advisories import ConsumerDeliveryTerminatedAdvisory

        self._advisory(
            S.advisory_msg_terminated(consumer.stream.name, consumer.name),
            ConsumerDeliveryTerminatedAdvisory(
                stream=consumer.stream.name,
                consumer=consumer.name,
                consumer_seq=dseq,
                stream_seq=sseq,
                deliveries=dc,
                reason=reason,
            ),
        )

    def progress(self, sseq: int) -> None:
        """``+WPI``: the message is being worked on; restart its ack wait."""
        if self.state.progress(sseq, time.time_ns()):
            self.consumer.dirty()

    # --- redelivery ------------------------------------------------------------------------------

    def ack_wait_s(self, next_ns: int) -> float:
        """Seconds until ``next_ns`` (or the ack wait) passes, plus the batching delay."""
        return (next_ns if next_ns > 0 else self.consumer.cfg.ack_wait) / 1e9 + ACK_WAIT_DELAY

    def arm(self, delay: float) -> None:
        """(Re)start the pending timer."""
        if self.ptmr is not None:
            self.ptmr.cancel()
        loop = self.consumer.loop
        delay = max(delay, 0.0)
        self._ptmr_end = loop.time() + delay
        self.ptmr = loop.call_later(delay, self.check_pending)

    def redelivered(self, ts: int, seqs: list[int]) -> None:
        """A run of redeliveries went out at ``ts`` (``trackPending`` for each): their ack waits
        start over (``DeliveryState.redelivered``) and the pending timer fires no later than
        the shortest of them — a ``backoff`` step may be shorter than what it is set for."""
        st = self.state
        st.redelivered(ts, seqs)
        if self.consumer.cfg.ack_policy == AckPolicy.FLOW_CONTROL:
            return
        index = st.index
        if index.backoff:
            rdc = st.rdc
            wait = min(index.wait_for(rdc.get(seq, 0)) for seq in seqs)
        else:
            wait = index.wait
        delay = wait / 1e9 + ACK_WAIT_DELAY
        if self.ptmr is None or self._ptmr_end > self.consumer.loop.time() + delay:
            self.arm(delay)

    def arm_if_idle(self) -> None:
        """A delivery is now pending: make sure the timer runs (flow-control acks: no ack wait)."""
        if self.ptmr is None and self.consumer.cfg.ack_policy != AckPolicy.FLOW_CONTROL:
            self.arm(self.ack_wait_s(0))

    def check_pending(self) -> None:
        """``checkPending``: queue every delivery whose ack wait (or backoff step) has passed."""
        self.ptmr = None
        consumer = self.consumer
        if consumer.closed:
            return
        first = consumer.stream.store.fast_state().first_seq
        expired, nxt, dropped = self.state.expired(time.time_ns(), first)
        if expired:
            consumer.kick()
        if self.state.pending:
            self.arm(self.ack_wait_s(nxt))
        if dropped:
            consumer.dirty()

    def redeliveries(self, n: int) -> tuple[list[MsgTuple], list[int]]:
        """``getNextMsg``'s redelivery branch for a run: up to ``n`` messages from the head of
        the redelivery queue and their delivery counts, in queue order (empty: the queue is).

        Each is counted (``incDeliveryCount``); one past ``max_deliver`` does not go out
        (`max_deliveries_exceeded`), nor one gone from the stream (``DeliveryState.drop``); the
        rest are read in one store call (``load_msgs``, in stream order: a run of them costs one
        call, not a ``LoadMsg`` each). A pass puts back what it did not send
        (``DeliveryState.unget_redeliveries``)."""
        st = self.state
        maxdc = self.consumer.cfg.max_deliver
        load = self.consumer.stream.store.load_msgs
        while st.rdq:
            seqs, dcs = st.next_redeliveries(n)
            if maxdc > 0 and max(dcs) > maxdc:
                keep = [i for i, dc in enumerate(dcs) if dc <= maxdc]
                for i, dc in enumerate(dcs):
                    if dc > maxdc:
                        self.max_deliveries_exceeded(seqs[i], dc)
                seqs, dcs = [seqs[i] for i in keep], [dcs[i] for i in keep]
            ordered = sorted(seqs)
            msgs = load(ordered)
            if len(msgs) != len(seqs) or ordered != seqs:
                found = {m[1]: m for m in msgs}
                msgs, kept = [], []
                for seq, dc in zip(seqs, dcs, strict=True):
                    m = found.get(seq)
                    if m is None:
                        st.drop(seq)  # gone from the stream (limits, delete): nothing to redeliver
                        continue
                    msgs.append(m)
                    kept.append(dc)
                dcs = kept
            if msgs:
                return msgs, dcs
        return [], []

    def max_deliveries_exceeded(self, seq: int, dc: int) -> None:
        """A redelivery would pass ``max_deliver``: stop tracking it, advise once."""
        consumer = self.consumer
        if dc == consumer.cfg.max_deliver + 1:
            # Deferred: see advisories.py.
            from pyjetstream.api.advisories import ConsumerDeliveryExceededAdvisory

            self._advisory(
                S.advisory_max_deliveries(consumer.stream.name, consumer.name),
                ConsumerDeliveryExceededAdvisory(
                    stream=consumer.stream.name, consumer=consumer.name, stream_seq=seq, deliveries=dc - 1
                ),
            )
        self.state.stop_tracking(seq)
        consumer.dirty()

    # --- advisories ------------------------------------------------------------------------------

    def _advisory(self, subject: str, event: TypedEvent) -> None:
        advisories.publish(self.consumer.engine, subject, event)

    def _sample_ack(self, sseq: int, dseq: int, dc: int, p: tuple[int, int]) -> None:
        """``sampleAck``: publish an ack latency metric for a ``sample_freq`` share of acks."""
        consumer = self.consumer
        freq = consumer.sfreq
        if freq <= 0 or (freq < 100 and random.randrange(100) > freq):
            return
        subject = S.metric_consumer_ack(consumer.stream.name, consumer.name)
        if not consumer.server.has_interest(subject):
            return
        from pyjetstream.api.advisories import ConsumerAckMetric  # Deferred: see advisories.py.

        self._advisory(
            subject,
            ConsumerAckMetric(
                stream=consumer.stream.name,
                consumer=consumer.name,
                consumer_seq=dseq,
                stream_seq=sseq,
                ack_time=time.time_ns() - p[1],
                deliveries=dc,
            ),
        )
