"""A JetStream consumer: its lifecycle, starting position, num pending, pause, reset, inactivity
and info (nats-server ``consumer.go``).

A ``Consumer`` is composed of one object per concept, each in its own file, and owns what none of
them does (the config, the starting position, num pending, the pause and inactivity timers):

- ``state`` — `DeliveryState`: sequences,
  ack floors, pending acks, redelivery counts and queue (ack, nak, redeliver, purge, ...).
- ``delivery`` — `DeliveryLoop`: the delivery
  loop (``loopAndGatherMsgs``, ``getNextMsg``, ``deliverMsg``): ``kick`` (the loop's own, bound
  here) schedules a pass that hands out what can go now, in runs, framed straight onto the
  receiver's connection where nothing needs a look per message.
- ``acks`` — `AckProcessor`: the ack subscriber, the
  ack-wait / backoff timer and the ack advisories.
- ``pull`` — `PullDelivery`: pull requests,
  the waiting queue and their statuses.
- ``push`` — `PushDelivery`: deliver-subject
  interest, idle heartbeats, flow control and the rate limit.
- ``writer`` — `StateWriter`: the
  persisted state.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

import msgspec

from pyjetstream.api import errors as E
from pyjetstream.api import headers as H
from pyjetstream.api import subjects as S
from pyjetstream.api.ack import ack_prefix
from pyjetstream.api.codec import encode, go_json_error, loads_go
from pyjetstream.api.enums import AckPolicy, DeliverPolicy, RetentionPolicy
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_consumer import ConsumerConfig, ConsumerInfo, SequenceInfo
from pyjetstream.api.responses import ConsumerResetResponse
from pyjetstream.api.timefmt import ZERO_TIME, NanoTime
from pyjetstream.api.versioning import with_dynamic
from pyjetstream.protocol.headers import get_header
from pyjetstream.server.jetstream import advisories
from pyjetstream.server.jetstream.acks import AckProcessor
from pyjetstream.server.jetstream.api_level import required_level_refused
from pyjetstream.server.jetstream.consumer_config import filters_of, sample_frequency
from pyjetstream.server.jetstream.consumer_persistence import StateWriter
from pyjetstream.server.jetstream.delivery_loop import DeliveryLoop
from pyjetstream.server.jetstream.delivery_state import DeliveryState
from pyjetstream.server.jetstream.pull_delivery import PullDelivery
from pyjetstream.server.jetstream.push_delivery import PushDelivery
from pyjetstream.server.jetstream.store.base import ConsumerState, ConsumerStoreBase, ErrStoreMsgNotFound
from pyjetstream.server.jetstream.subject_filter import SubjectFilter

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.host import Connection, InternalSubscription
    from pyjetstream.server.jetstream.stream import Stream

__all__ = ["Consumer"]

_STREAM_IDENTITY = H.STREAM_IDENTITY.encode()  # ⟨2.15⟩ echoed on a reset that asks for it
#: A reset on an interest stream looks only at what it skipped (its old ack floor up to its new
#: start: `Stream.check_interest_skipped`), as nats-server; off: at every message of the stream.
RESET_CHECKS_SKIPPED = True
# nats-server adds up to a second of jitter to the inactivity threshold of pull consumers.
_JITTER_MIN, _JITTER_MAX = 0.1, 1.0


class Consumer:
    """One consumer of a stream; made by ``consumer_create.add_consumer`` or at a restart by
    ``consumer_recovery.recover_consumers``, then ``start()``-ed."""

    def __init__(
        self,
        stream: Stream,
        cfg: ConsumerConfig,
        name: str,
        created: int,
        store: ConsumerStoreBase | None,
    ) -> None:
        self.stream = stream
        self.engine = stream.engine
        self.server = stream.server
        self.loop = stream.server.loop
        self.name = name
        # (annotated: the component objects read these in their __init__, inside an import cycle)
        self.cfg: ConsumerConfig = cfg
        self.created = created
        self.closed = False
        self.retention: RetentionPolicy = stream.cfg.retention
        self.state: DeliveryState = DeliveryState()
        # num pending: matching messages at/after sseq, valid through stream seq npf
        self.npc = 0
        self.npf = 0
        # last_per_subject counts subjects, not messages: recount lazily after new messages.
        self._lps = cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        self._npc_dirty = False
        # the store's bulk_removals when num pending was last counted (single removals come
        # through dec_stream_pending)
        self._np_bulk = 0
        self.filter = SubjectFilter(filters_of(cfg))
        self.sfreq = sample_frequency(cfg)
        self.ack_prefix: str = ack_prefix(stream.name, name)
        self._subs: list[InternalSubscription] = []
        # inactivity: the delete timer and its period (seconds, 0 = never)
        self._dtmr: asyncio.TimerHandle | None = None
        self.dthresh = 0.0
        # ⟨2.11+⟩ pause: the timer that resumes delivery at ``cfg.pause_until`` (``uptmr``)
        self.uptmr: asyncio.TimerHandle | None = None
        self.delivery = DeliveryLoop(self)
        # "Something may be deliverable": the loop's own bound method, no call in between (acks
        # and new messages kick often).
        self.kick: Callable[[], None] = self.delivery.kick
        self.writer = StateWriter(self, store)
        self.acks = AckProcessor(self)
        self.pull = PullDelivery(self)
        self.push = PushDelivery(self)
        self.update_inactive_threshold(start=False)

    # --- lifecycle ---------------------------------------------------------------------------

    @property
    def is_pull(self) -> bool:
        return not self.cfg.deliver_subject

    @property
    def is_durable(self) -> bool:
        return bool(self.cfg.durable_name)

    def start(self, restored: ConsumerState | None = None) -> None:
        """Restore or select the starting position, subscribe, and start delivering
        (``restored``: the state a stream restore brings)."""
        stored = restored if restored is not None else self.writer.stored_state()
        if stored is not None:
            self.state.restore(stored)
            if self.state.pending:
                self.stream.note_pending(self)
                if self.cfg.ack_policy == AckPolicy.FLOW_CONTROL:
                    # No ack wait: what was not acknowledged before the restart goes out again.
                    self.state.redeliver_all(time.time_ns())
                else:
                    # Check pending soon after a restart: whatever was due while down is due now.
                    self.acks.arm(min(0.5, self.acks.ack_wait_s(0)))
        else:
            self._select_starting_seq()
            if not self._start_reselected():
                self.writer.write_start()
        self._stream_num_pending()
        self.delivery.start()
        server = self.server
        stream, name = self.stream.name, self.name
        # nats-server subscribes ``$JS.ACK.<S>.<C>.*.*.*.*.*``; ``>`` matches the same acks with one
        # trie step instead of five (every ack subject is unique, so none is a cache hit) and
        # on_ack answers the other shapes as no subscription would.
        # An AckNone consumer has no ack subscription at all: an ack with a reply gets the core
        # 503 no-responders answer, as from nats-server.
        if self.cfg.ack_policy not in (AckPolicy.NONE, AckPolicy.FLOW_CONTROL):
            self._subs.append(
                server.subscribe_internal(ack_prefix(stream, name) + ">", self.acks.on_ack, run=self.acks.on_ack_run)
            )
        self._subs.append(
            server.subscribe_internal(S.JSApi().consumer_msg_next(stream, name), self.pull.on_request)
        )
        self._subs.append(
            server.subscribe_internal(S.JSApi().consumer_reset(stream, name), self._on_reset_request)
        )
        if self.is_pull:
            if self.dthresh:
                self.start_inactivity_timer(self.dthresh)
        else:
            self.push.start()
        self._update_pause_state()
        self.kick()

    def stop(self, delete: bool = False, advisory: bool = False, stream_deleted: bool = False) -> None:
        """Stop delivering; with ``delete`` also drop the persisted state (and tell pull waiters;
        ``stream_deleted``: the stream's store removes it whole)."""
        if self.closed:
            return
        if delete and advisory:
            advisories.consumer_action(self.engine, self.stream.name, self.name, "delete")
        if delete and self.is_pull:
            self.pull.release_all()
        self.closed = True
        for sub in self._subs:
            sub.unsubscribe()
        self._subs.clear()
        self.acks.stop()
        self.pull.stop()
        self.stop_inactivity_timer()
        self.push.stop()
        if self.uptmr is not None:
            self.uptmr.cancel()
            self.uptmr = None
        self.delivery.stop()
        self.writer.close(delete, stream_deleted)
        if delete:
            self.stream.remove_consumer(self.name)
            self.state.release()

    def delete(self) -> None:
        """Delete with the advisory (API delete, inactivity)."""
        self.stop(delete=True, advisory=True)

    def update_config(self, cfg: ConsumerConfig) -> None:
        """Apply an already validated update (``updateConfig``)."""
        old = self.cfg
        if cfg.deliver_subject != old.deliver_subject:
            self.push.update_deliver_subject(cfg.deliver_subject)
        if cfg.ack_wait != old.ack_wait and self.acks.ptmr is not None:
            self.acks.arm(0.1)
        if cfg.rate_limit_bps != old.rate_limit_bps:
            self.push.set_rate_limit(cfg.rate_limit_bps)
        self.cfg = cfg
        self.acks.configure()
        self.sfreq = sample_frequency(cfg)
        if filters_of(cfg) != filters_of(old):
            self.filter = SubjectFilter(filters_of(cfg))
            self.stream.consumer_filters_changed(self)
        if cfg.inactive_threshold != old.inactive_threshold:
            self.update_inactive_threshold()
        if (cfg.pause_until or ZERO_TIME) != (old.pause_until or ZERO_TIME):
            self._update_pause_state()
            self.send_pause_advisory()
        self.writer.write_meta()
        self._stream_num_pending()
        self.kick()

    def dirty(self) -> None:
        """The delivery state changed: persist it soon."""
        self.writer.dirty()

    # --- the Stream contract -----------------------------------------------------------------

    def matches_subject(self, subject: str) -> bool:
        return self.filter.matches(subject)

    def signal_new(self, seq: int, subject: str) -> None:
        """A message was stored (``seq == 0``: something changed, re-check)."""
        if self.closed:
            return
        if seq == 0:
            self._stream_num_pending()
            self.kick()
            return
        if not self.filter.matches(subject):
            return
        if seq > self.npf:
            self.npc += 1  # (also for last_per_subject: only the starting set is per subject)
        if seq < self.state.sseq:
            return
        receiving = self.push.active if self.cfg.deliver_subject else self.pull.waiting
        if receiving and not self.delivery.scheduled:
            self.kick()

    def signal_matched(self, seq: int) -> None:
        """`signal_new` for a stored message ``seq`` (> 0) whose subject the stream's consumer
        index already matched to this consumer's filters (``signalConsumers``' ``csl.Match``, then
        ``processStreamSignal``): the filter is not asked again, and the delivery state only when
        someone waits for a message. With 10,000 consumers each publish lands on a consumer whose
        objects are out of the CPU's caches: every object not touched is a cache miss saved."""
        if self.closed:
            return
        if seq > self.npf:
            self.npc += 1
        if self.cfg.deliver_subject:
            if not self.push.active:
                return
        elif not self.pull.waiting:
            return
        if seq >= self.state.sseq and not self.delivery.scheduled:
            self.kick()

    def needs_ack(self, seq: int, subject: str) -> bool:
        """Interest retention: does this consumer still need ``seq``? (``needAck``)."""
        if not self.filter.match_all and not self.filter.matches(subject):
            return False
        return self.state.needs(seq, self.cfg.ack_policy == AckPolicy.EXPLICIT)

    def on_stream_purged(self, first_seq: int, wider: bool = False, reset: bool = False) -> None:
        """Messages below ``first_seq`` are gone (purge, expiry): skip them (``purge``); ``wider``
        (a purge of subjects inside this consumer's filter): also drop the pending acks of the
        messages it removed; ``reset``: a stream purge (see `DeliveryState.purge`)."""
        if self.closed:
            return
        removed = self._msg_removed if wider else None
        ack_all = self.cfg.ack_policy in (AckPolicy.ALL, AckPolicy.FLOW_CONTROL)
        self.state.purge(first_seq, time.time_ns(), removed, reset, ack_all, self.delivery.looked)
        self.dirty()
        self.check_removed()
        self.kick()

    def _msg_removed(self, seq: int) -> bool:
        try:
            self.stream.store.subject_for_seq(seq)
        except ErrStoreMsgNotFound:
            return True
        return False

    # --- starting position -------------------------------------------------------------------

    def _start_reselected(self) -> bool:
        """Whether a restart that finds no stored state selects the same start again: deliver all or
        from a sequence (what is gone from the stream by then is gone either way). Then a new
        consumer's state is written at its first change, not at its create: one file less per
        create than nats-server, which writes it at once (``SetStarting``). Deliver new, last or
        by time would start elsewhere after a crash: theirs is written at once, as nats-server's."""
        cfg = self.cfg
        return cfg.opt_start_seq != 0 or cfg.deliver_policy == DeliverPolicy.ALL

    def _select_starting_seq(self) -> None:
        """``selectStartingSeqNo``."""
        cfg = self.cfg
        store = self.stream.store
        state = store.fast_state()
        policy = cfg.deliver_policy
        st = self.state
        if cfg.opt_start_seq == 0:
            if policy == DeliverPolicy.ALL:
                sseq = state.first_seq
            elif policy == DeliverPolicy.LAST:
                sseq = state.last_seq
                if not self.filter.match_all:
                    sseq = max(store.filtered_state(1, f).last for f in self.filter.filters)
            elif policy == DeliverPolicy.LAST_PER_SUBJECT and self.stream.cfg.max_msgs_per_subject == 1:
                sseq = state.first_seq  # every message is the last of its subject
            elif policy == DeliverPolicy.LAST_PER_SUBJECT:
                lasts = store.multi_last_seqs(self.filter.store_filters(), state.last_seq)
                if lasts:
                    st.lss = deque(lasts)
                    st.lss_resume = state.last_seq
                    sseq = st.lss[0]
                else:
                    sseq = state.last_seq
            elif cfg.opt_start_time is not None:
                sseq = store.get_seq_from_time(int(cfg.opt_start_time))
            else:
                sseq = state.last_seq + 1
        else:
            sseq = cfg.opt_start_seq
        # 2.11+: an explicit opt_start_seq beyond the stream is kept (it waits for that sequence).
        if state.first_seq == 0 and cfg.opt_start_seq == 0:
            sseq = 1
        elif sseq > state.last_seq and cfg.opt_start_seq == 0:
            sseq = state.last_seq + 1
        elif sseq < state.first_seq:
            sseq = state.first_seq
        st.start_at(sseq)

    # --- num pending -------------------------------------------------------------------------

    def _stream_num_pending(self) -> int:
        """Recount ``npc`` from the store (``streamNumPending``)."""
        store = self.stream.store
        lps = self.cfg.deliver_policy == DeliverPolicy.LAST_PER_SUBJECT
        total = 0
        through = 0
        sseq = self.state.sseq
        for f in self.filter.store_filters():
            n, valid = store.num_pending(sseq, f, lps)
            total += n
            through = max(through, valid)
        state = store.fast_state()
        self._npc_dirty = False
        self.npc = total
        self.npf = max(through, state.last_seq)
        self._np_bulk = store.bulk_removals
        return total

    def dec_stream_pending(self, seq: int, subject: str) -> None:
        """The store removed the message at ``seq`` on its own (a limit, a delete, a TTL): one
        not delivered yet under our filter leaves num pending (``decStreamPending``), so no
        removal costs a recount."""
        if seq >= self.state.sseq and self.filter.matches(subject):
            self.npc -= 1

    def check_removed(self) -> None:
        """Recount pending after the store removed many messages at once (purge, compact, an
        expired prefix, truncate: its ``bulk_removals`` moved; nats-server recounts on ``md <
        -1``). One removed alone came through `dec_stream_pending`."""
        if self._npc_dirty or self.stream.store.bulk_removals != self._np_bulk:
            self._stream_num_pending()

    def check_num_pending_on_eof(self) -> None:
        """A delivery pass found nothing after sseq: num pending is 0 once sseq is past the end."""
        last = self.stream.store.last_seq()
        if self.state.sseq > last and self.npc != 0:
            self.npc = 0
            self.npf = last

    def num_pending(self) -> int:
        self.check_removed()
        return self.npc if self.npc > 0 else 0

    def _check_num_pending(self) -> int:
        """``checkNumPending``: the running count for info, never more than the stream could hold
        from sseq on."""
        self.check_removed()
        store = self.stream.store  # (its last sequence and count: no `StreamState` made for two fields)
        last = store.last_seq()
        sseq = self.state.sseq
        if sseq > last:
            self.npc = 0
        elif self.npc > 0:
            self.npc = min(self.npc, store.totals()[0], last - sseq + 1)
        return self.num_pending()

    # --- reset ⟨2.14+⟩ ---------------------------------------------------------------------------

    def _on_reset_request(
        self, subject: str, reply: str, hdr: bytes | None, payload: bytes, client: Connection | None
    ) -> None:
        """``processResetReq``: ``$JS.API.CONSUMER.RESET.<S>.<C>`` is the consumer's own
        subscription (so a missing consumer gets 503 no responders). ``{"seq": N}`` restarts at
        N, an empty body at the ack floor; the reply is the ConsumerInfo with ``reset_seq``."""
        if not reply or self.closed:
            return
        response = ConsumerResetResponse()
        if required_level_refused(hdr):
            response.error = E.JSRequiredApiLevelErr()
            self.server.publish_internal(reply, encode(response))
            return
        # A reset that names an expected stream identity (a durable source, ADR-60) is not
        # refused on a mismatch: the reply carries the identity, and the source decides.
        identity = self.stream.identity if hdr and get_header(hdr, _STREAM_IDENTITY) is not None else ""
        try:
            seq = self.reset(_reset_seq(payload))
        except JetStreamApiError as exc:
            response.error = exc.error
        else:
            info = self.info()
            # As a create or info reply: the server's _nats.ver / _nats.level in the metadata.
            info.config = msgspec.structs.replace(info.config, metadata=with_dynamic(info.config.metadata))
            response = ConsumerResetResponse.from_payload(info, reset_seq=seq)
        if identity and response.error is None:
            rhdr = b"NATS/1.0\r\n%s: %s\r\n\r\n" % (_STREAM_IDENTITY, identity.encode())
            self.server.publish_internal(reply, encode(response), hdr=rhdr)
            return
        self.server.publish_internal(reply, encode(response))

    def reset(self, seq: int) -> int:
        """``resetStartingSeq``: the sequence delivery restarts from; raises 10204 when the
        deliver policy does not allow it."""
        cfg = self.cfg
        if seq == 0:
            seq = self.state.asflr + 1
        elif cfg.deliver_policy == DeliverPolicy.ALL:
            pass
        elif cfg.deliver_policy == DeliverPolicy.BY_START_SEQUENCE:
            if seq < cfg.opt_start_seq:
                raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="below start seq"))
        elif cfg.deliver_policy == DeliverPolicy.BY_START_TIME and cfg.opt_start_time is not None:
            if seq < self.stream.store.get_seq_from_time(int(cfg.opt_start_time)):
                raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="below start time"))
        else:
            raise JetStreamApiError(E.JSConsumerInvalidResetErr(err="not allowed"))
        seq = max(seq, 1)
        skipped = self.state.asflr + 1  # (what it had not acked below the new start: no longer needed)
        self.state.reset_to(seq)
        self.delivery.looked = 0  # the heartbeats' position follows the reset
        self.writer.reset(seq - 1)
        if self.retention == RetentionPolicy.INTEREST:
            # What this consumer skipped may now be needed by nobody (checkStateForInterestStream).
            if RESET_CHECKS_SKIPPED:
                self.stream.check_interest_skipped(self, skipped, seq - 1)
            else:
                self.stream.check_interest_state()
        self._stream_num_pending()
        self.dirty()
        self.kick()
        return seq

    # --- pause ⟨2.11+⟩ ----------------------------------------------------------------------------

    def paused_for(self) -> int:
        """Nanoseconds until ``pause_until`` (0: not paused)."""
        until = self.cfg.pause_until
        if until is None or until == ZERO_TIME:
            return 0
        return max(until - time.time_ns(), 0)

    def _update_pause_state(self) -> None:
        """``updatePauseState``: while ``pause_until`` is ahead, a timer resumes delivery then."""
        if self.uptmr is not None:
            self.uptmr.cancel()
            self.uptmr = None
        remaining = self.paused_for()
        if remaining <= 0 or self.closed:
            return
        self.uptmr = self.loop.call_later(remaining / 1e9, self._resume)

    def _resume(self) -> None:
        """The pause deadline passed: advise and deliver again."""
        remaining = self.paused_for()
        if remaining > 0:
            # The wall clock ran behind the loop's timer: wait the rest. (Read once: a second
            # read in _update_pause_state could find it over and then schedule nothing, leaving
            # a push consumer, which nothing else kicks, paused for good.)
            self.uptmr = self.loop.call_later(remaining / 1e9, self._resume)
            return
        self.uptmr = None
        if self.closed:
            return
        self.send_pause_advisory()
        self.kick()

    def send_pause_advisory(self) -> None:
        """``sendPauseAdvisoryLocked``: ``$JS.EVENT.ADVISORY.CONSUMER.PAUSE.<S>.<C>``."""
        from pyjetstream.api.advisories import ConsumerPauseAdvisory  # Deferred: see advisories.py.

        until = self.cfg.pause_until
        advisories.publish(
            self.engine,
            S.advisory_consumer_pause(self.stream.name, self.name),
            ConsumerPauseAdvisory(
                stream=self.stream.name,
                consumer=self.name,
                paused=self.paused_for() > 0,
                pause_until=NanoTime(until) if until is not None else ZERO_TIME,
            ),
        )

    # --- inactivity ----------------------------------------------------------------------------

    def update_inactive_threshold(self, start: bool = True) -> None:
        """``updateInactiveThreshold``: the delete timer's period (with nats-server's jitter)."""
        threshold = self.cfg.inactive_threshold / 1e9
        if threshold > 0:
            if not self.cfg.deliver_subject:
                threshold += random.uniform(_JITTER_MIN, _JITTER_MAX)
            self.dthresh = threshold
        else:
            self.dthresh = 0.0
        if start:
            self.stop_inactivity_timer()
            if self.dthresh and (not self.cfg.deliver_subject or not self.push.active):
                self.start_inactivity_timer(self.dthresh)

    def start_inactivity_timer(self, delay: float) -> None:
        self.stop_inactivity_timer()
        self._dtmr = self.loop.call_later(max(delay, 0.001), self._delete_not_active)

    def stop_inactivity_timer(self) -> None:
        if self._dtmr is not None:
            self._dtmr.cancel()
            self._dtmr = None

    def inactivity_timer_running(self) -> bool:
        return self._dtmr is not None

    def suppress_deletion(self) -> None:
        """Ack activity keeps the consumer alive."""
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self._dtmr is not None:
                self.start_inactivity_timer(self.dthresh)
        else:
            self.pull.waiting.last = time.monotonic()

    def _delete_not_active(self) -> None:
        """``deleteNotActive``: delete unless interest or activity came back meanwhile."""
        self._dtmr = None
        if self.closed:
            return
        if self.cfg.deliver_subject:
            if self.push.active:
                return
        else:
            waiting = self.pull.waiting
            elapsed = time.monotonic() - waiting.last
            if elapsed <= self.cfg.inactive_threshold / 1e9:
                self.start_inactivity_timer(self.dthresh - elapsed)
                return
            self.pull.process_waiting(eos=True)
            if waiting:
                self.start_inactivity_timer(self.dthresh)
                return
        self.delete()

    # --- info --------------------------------------------------------------------------------

    def info(self) -> ConsumerInfo:
        """``ConsumerInfo`` as nats-server reports it (``infoWithSnap``)."""
        num_waiting = 0
        if self.is_pull:
            self.pull.process_waiting(eos=False)
            num_waiting = len(self.pull.waiting)
        st = self.state
        adflr, asflr = st.floor()  # (the store's, as nats-server reports)
        pause_remaining = self.paused_for()
        return ConsumerInfo(
            stream_name=self.stream.name,
            name=self.name,
            created=NanoTime(self.created),
            config=self.cfg,
            delivered=SequenceInfo(
                consumer_seq=st.dseq - 1,
                stream_seq=st.sseq - 1,
                last_active=NanoTime(st.ldt) if st.ldt else None,
            ),
            ack_floor=SequenceInfo(
                consumer_seq=adflr,
                stream_seq=asflr,
                last_active=NanoTime(st.lat) if st.lat else None,
            ),
            num_ack_pending=len(st.pending),
            num_redelivered=len(st.rdc),
            num_waiting=num_waiting,
            num_pending=self._check_num_pending(),
            push_bound=bool(self.cfg.deliver_subject) and self.push.active,
            paused=pause_remaining > 0,
            pause_remaining=pause_remaining,
            ts=NanoTime(time.time_ns()),
            priority_groups=self.pull.priority.state(),
        )


def _reset_seq(payload: bytes) -> int:
    """The ``seq`` of a ``CONSUMER.RESET`` body (empty: 0); Go's decoding errors as 10025."""
    if not payload:
        return 0
    try:
        doc = loads_go(payload)
    except json.JSONDecodeError as exc:
        raise JetStreamApiError(_invalid_json(go_json_error(exc))) from None
    except ValueError:
        raise JetStreamApiError(_invalid_json("invalid JSON")) from None
    if not isinstance(doc, dict):
        raise JetStreamApiError(
            _invalid_json(
                f"json: cannot unmarshal {_go_type(doc)} into Go value of type server.JSApiConsumerResetRequest"
            )
        )
    value = {str(k).lower(): v for k, v in doc.items()}.get("seq", 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise JetStreamApiError(
            _invalid_json(
                f"json: cannot unmarshal {_go_type(value)} into Go struct field "
                "JSApiConsumerResetRequest.seq of type uint64"
            )
        )
    return value


def _go_type(value: object) -> str:
    """How Go's decoder names a JSON value in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (int, float)):
        return f"number {value}" if isinstance(value, int) and value < 0 else "number"
    if isinstance(value, list):
        return "array"
    return "object"


def _invalid_json(reason: str) -> ApiError:
    return ApiError(code=400, err_code=10025, description=f"invalid JSON: {reason}")
