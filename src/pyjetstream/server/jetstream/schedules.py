"""Message schedules of a stream (ADR-51, ``allow_msg_schedules``; nats-server's scheduler.go).

A schedule is the message on a subject that carries ``Nats-Schedule`` (one per subject: it is
stored with a subject roll-up). When it fires, the stream stores a new message on
``Nats-Schedule-Target``: the schedule's own body and headers, or those of the last message on
``Nats-Schedule-Source``, without the ``Nats-Schedule*``, ``Nats-Expected-*``, ``Nats-Msg-Id``,
``Nats-TTL`` and ``Nats-Rollup`` headers, plus ``Nats-Scheduler: <schedule subject>``,
``Nats-Schedule-Next`` (the next run, or ``purge`` for a one-off, which removes the schedule) and
the schedule's ``Nats-Schedule-TTL`` / ``-Rollup`` as ``Nats-TTL`` / ``Nats-Rollup``.

The schedules live in the stream's messages, so a restart (or ``kill -9``) rebuilds them from the
last message of every subject.
"""

from __future__ import annotations

import functools
import heapq
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.schedules import Schedule, load_location, next_run
from pyjetstream.api.timefmt import parse_time
from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import append_headers, get_header
from pyjetstream.protocol.subjects import compile_filter, is_valid_publish_subject
from pyjetstream.server.jetstream.store.base import StoreError

if TYPE_CHECKING:
    import asyncio

    from pyjetstream.server.jetstream.stream import Stream

HDR_SCHEDULE = b"Nats-Schedule"
HDR_TARGET = b"Nats-Schedule-Target"
HDR_SOURCE = b"Nats-Schedule-Source"
HDR_TTL = b"Nats-Schedule-TTL"
HDR_ROLLUP = b"Nats-Schedule-Rollup"
HDR_TIME_ZONE = b"Nats-Schedule-Time-Zone"
HDR_NEXT = b"Nats-Schedule-Next"
HDR_SCHEDULER = b"Nats-Scheduler"
#: A ``Nats-Schedule:`` line (``HDR_SCHEDULE in hdr`` is also true of ``Nats-Scheduler``, of every
#: produced message, and of the other ``Nats-Schedule-*`` headers).
SCHEDULE_LINE = b"\r\n" + HDR_SCHEDULE + b":"
#: The headers a produced message does not carry over (``removeHeaderIfPrefixPresent``).
_NOT_CARRIED = (b"Nats-Schedule", b"Nats-Expected-", b"Nats-Msg-Id:", b"Nats-TTL:", b"Nats-Rollup:")
NEXT_PURGE = b"purge"
MIN_FIRE_NS = 250_000_000  # nats-server never fires its schedule timer sooner than this
NS_PER_S = 1_000_000_000


def _raw(hdr: bytes, name: bytes) -> bytes | None:
    """A header's value as nats-server's ``sliceHeader`` sees it: None when absent, b"" when empty."""
    key = b"\r\n" + name + b":"
    at = hdr.find(key)
    if at < 0:
        return None
    return get_header(hdr, name) or b""


def schedule_of(hdr: bytes, ts: int, now: int | None = None) -> Schedule | ApiError | None:
    """When the schedule in ``hdr`` fires next after ``ts`` (nats-server ``nextMessageSchedule``):
    None when there is none, the error when the pattern or time zone is invalid."""
    zone_raw = _raw(hdr, HDR_TIME_ZONE)
    try:
        zone = load_location(None if zone_raw is None else zone_raw.decode())
    except (ValueError, UnicodeDecodeError):
        return E.JSMessageSchedulesTimeZoneInvalidErr()
    pattern = get_header(hdr, HDR_SCHEDULE) or b""
    sched = next_run(pattern.decode(errors="replace"), zone, ts, time.time_ns() if now is None else now)
    if sched is None:
        return E.JSMessageSchedulesPatternInvalidErr()
    return sched if sched.at else None


def _ttl_ok(hdr: bytes) -> tuple[str, bool]:
    raw = get_header(hdr, HDR_TTL)
    if not raw:
        return "", True
    try:
        parse_message_ttl(raw.decode())
    except (ValueError, UnicodeDecodeError):
        return "", False
    return raw.decode(), True


def check_publish(stream: Stream, subject: str, hdr: bytes) -> tuple[bytes, ApiError | None]:
    """The schedule checks of a published (not sourced) message, in nats-server's order; the
    headers to store (a schedule gets ``Nats-Rollup: sub``) or the error."""
    cfg = stream.cfg
    allowed = cfg.allow_msg_schedules
    sched = schedule_of(hdr, time.time_ns())
    if isinstance(sched, ApiError):
        return hdr, sched if allowed else E.JSMessageSchedulesDisabledErr()
    if sched is not None:
        if not allowed:
            return hdr, E.JSMessageSchedulesDisabledErr()
        ttl, ok = _ttl_ok(hdr)
        if not ok:
            return hdr, E.JSMessageSchedulesTTLInvalidErr()
        rollup = _raw(hdr, HDR_ROLLUP)
        if rollup and rollup != b"sub":
            return hdr, E.JSMessageSchedulesRollupInvalidErr()
        if ttl and not cfg.allow_msg_ttl:
            return hdr, E.JSMessageTTLDisabledErr()
        target = (get_header(hdr, HDR_TARGET) or b"").decode(errors="replace")
        if not target or not is_valid_publish_subject(target) or target == subject:
            return hdr, E.JSMessageSchedulesTargetInvalidErr()
        source = (get_header(hdr, HDR_SOURCE) or b"").decode(errors="replace")
        if source and (source in (target, subject) or not is_valid_publish_subject(source)):
            return hdr, E.JSMessageSchedulesSourceInvalidErr()
        if not _in_subjects(cfg.subjects, target):
            return hdr, E.JSMessageSchedulesTargetInvalidErr()
        if source and not _in_subjects(cfg.subjects, source):
            return hdr, E.JSMessageSchedulesSourceInvalidErr()
        own_rollup = _raw(hdr, b"Nats-Rollup")
        if not own_rollup:
            hdr = append_headers(hdr, [("Nats-Rollup", "sub")])
        elif own_rollup != b"sub":
            return hdr, E.JSMessageSchedulesRollupInvalidErr()
    next_value = _raw(hdr, HDR_NEXT)
    if next_value:
        # Clients may only use Nats-Schedule-Next to purge a schedule, naming it in Nats-Scheduler.
        if next_value != NEXT_PURGE:
            return hdr, E.JSMessageSchedulesSchedulerInvalidErr()
        scheduler = (_raw(hdr, HDR_SCHEDULER) or b"").decode(errors="replace")
        if not scheduler or scheduler == subject or not is_valid_publish_subject(scheduler):
            return hdr, E.JSMessageSchedulesSchedulerInvalidErr()
        if not allowed:
            return hdr, E.JSMessageSchedulesDisabledErr()
        try:
            last = stream.store.load_last_msg(scheduler)
        except StoreError:
            last = None
        if last is not None and _raw(last.hdr or b"", HDR_SCHEDULE) is None:
            return hdr, E.JSMessageSchedulesSchedulerInvalidErr()
    elif _raw(hdr, HDR_SCHEDULER):
        return hdr, E.JSMessageSchedulesSchedulerInvalidErr()
    return hdr, None


def _in_subjects(subjects: list[str], subject: str) -> bool:
    """Whether a valid publish subject is one of the stream's (nats-server asks
    ``SubjectsCollide``, which for a literal subject is a match of it: a compiled filter)."""
    for match in _matchers(tuple(subjects)):
        if match(subject):
            return True
    return False


@functools.lru_cache(maxsize=64)
def _matchers(subjects: tuple[str, ...]) -> tuple[Callable[[str], bool], ...]:
    """The compiled filters of a stream's subjects (once per subject list, not per check)."""
    return tuple(compile_filter(s) for s in subjects)


def _strip(hdr: bytes) -> bytes:
    """Drop the headers a produced message must not carry (``removeHeaderIfPrefixPresent``)."""
    lines = hdr.split(b"\r\n")
    return b"\r\n".join([lines[0], *[line for line in lines[1:] if not line.startswith(_NOT_CARRIED)]])


class MsgSchedules:
    """The schedules of one stream, by subject: ``(seq of the schedule message, next run ns)``.

    Their next runs are also kept in a heap (``(next run ns, subject)``; an entry whose schedule
    has gone or moved since is skipped when it comes up), so a new schedule, the timer and a run
    cost O(log n) with 100,000 schedules, not a walk over all of them (nats-server keeps them in a
    timing wheel, ``thw``). ``steps`` counts the heap entries and schedules looked at.
    """

    def __init__(self, stream: Stream) -> None:
        self.stream = stream
        self.entries: dict[str, tuple[int, int]] = {}
        self.inflight: set[str] = set()
        self._heap: list[tuple[int, str]] = []
        self.steps = 0
        self._timer: asyncio.TimerHandle | None = None
        self._deadline = 0
        self._running = False

    # --- what the stream tells us ---------------------------------------------------------

    def rebuild(self) -> None:
        """After a (re)start: every subject whose last message is a schedule."""
        store = self.stream.store
        now = time.time_ns()
        for subject in store.subjects_totals(">"):
            try:
                msg = store.load_last_msg(subject)
            except StoreError:
                continue
            if msg.hdr and SCHEDULE_LINE in msg.hdr:
                sched = schedule_of(msg.hdr, msg.ts, now)
                if isinstance(sched, Schedule):
                    self.entries[subject] = (msg.seq, sched.at)
        self._heap = [(at, subject) for subject, (_, at) in self.entries.items()]
        heapq.heapify(self._heap)
        self._reset_timer()

    def on_stored(self, seq: int, subject: str, hdr: bytes, ts: int) -> None:
        """A message was stored (the store hook of nats-server's ``storeRawMsg``)."""
        sched = schedule_of(hdr, ts) if hdr and SCHEDULE_LINE in hdr else None
        if isinstance(sched, Schedule):
            self._set(subject, seq, sched.at)
            self.inflight.discard(subject)
            if self._timer is None or sched.at < self._deadline:  # (else the timer stays as it is)
                self._reset_timer()
        elif not (hdr and get_header(hdr, HDR_SCHEDULER)):
            self.remove(subject)
        if hdr and HDR_NEXT in hdr:
            value = get_header(hdr, HDR_NEXT)
            scheduler = (get_header(hdr, HDR_SCHEDULER) or b"").decode(errors="replace")
            if value and value != NEXT_PURGE and scheduler in self.entries:
                try:
                    at = parse_time(value.decode())
                except (ValueError, UnicodeDecodeError):
                    return
                self._set(scheduler, self.entries[scheduler][0], at)
                self.inflight.discard(scheduler)
                self._reset_timer()

    def stored_plain(self, subjects: list[str]) -> None:
        """`on_stored` for a run's stretch: messages without a ``Nats-Schedule*`` or
        ``Nats-Scheduler`` header, each of which ends the schedule on its subject."""
        for subject in subjects:
            self.remove(subject)

    def purge_target(self, hdr: bytes) -> str:
        """The schedule a stored ``Nats-Schedule-Next: purge`` message ends ("" when none)."""
        if get_header(hdr, HDR_NEXT) != NEXT_PURGE:
            return ""
        scheduler = (get_header(hdr, HDR_SCHEDULER) or b"").decode(errors="replace")
        if scheduler:
            self.remove(scheduler)
        return scheduler

    def _set(self, subject: str, seq: int, at: int) -> None:
        """The schedule on ``subject`` (its message ``seq``) runs next at ``at``."""
        self.entries[subject] = (seq, at)
        heap = self._heap
        if len(heap) > 2 * len(self.entries) + 64:
            self.steps += len(heap)
            heap = self._heap = [(a, s) for a, s in heap if self._current(a, s)]
            heapq.heapify(heap)
        heapq.heappush(heap, (at, subject))

    def _current(self, at: int, subject: str) -> bool:
        """A heap entry still names its schedule's next run."""
        entry = self.entries.get(subject)
        return entry is not None and entry[1] == at

    def _next_at(self) -> int:
        """The earliest next run of a schedule (0: none); stale heap entries dropped on the way."""
        heap = self._heap
        while heap and not self._current(*heap[0]):
            heapq.heappop(heap)
            self.steps += 1
        return heap[0][0] if heap else 0

    def remove(self, subject: str) -> None:
        if self.entries.pop(subject, None) is not None:
            self.inflight.discard(subject)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    # --- firing ---------------------------------------------------------------------------

    def _reset_timer(self) -> None:
        if self._running or self.stream.closed:
            return
        if not self.entries:
            self.stop()
            self._deadline = 0
            return
        now = time.time_ns()
        fire_in = max(self._next_at() - now, MIN_FIRE_NS)
        deadline = now + fire_in
        if self._timer is not None and self._deadline and deadline > self._deadline:
            return  # never push a pending run later (it would never run under load)
        self.stop()
        self._deadline = deadline
        self._timer = self.stream.server.loop.call_later(fire_in / 1e9, self._run)

    def _run(self) -> None:
        self._timer = None
        self._deadline = 0
        if self.stream.closed:
            return
        self._running = True
        # The produced messages of one firing are written (and shown to consumers) together, as
        # a read's publishes are: one commit, not one per message.
        self.stream.writes.hold_for_read()
        try:
            for target, hdr, payload in self._due(time.time_ns()):
                self.stream.ingest.store_internal(target, hdr, payload)
        finally:
            self._running = False
        self._reset_timer()

    def _due(self, now: int) -> list[tuple[str, bytes, bytes]]:
        """The messages the due schedules produce, by schedule sequence (``getScheduledMessages``)."""
        store = self.stream.store
        out: list[tuple[int, str, bytes, bytes]] = []
        heap = self._heap
        held: list[tuple[int, str]] = []  # due but still being produced: looked at again next time
        while heap and heap[0][0] <= now:
            at, subject = heapq.heappop(heap)
            self.steps += 1
            if not self._current(at, subject):
                continue
            if subject in self.inflight:
                held.append((at, subject))
                continue
            seq = self.entries[subject][0]
            try:
                msg = store.load_msg(seq)
            except StoreError:
                self.remove(subject)
                continue
            hdr = msg.hdr or b""
            sched = schedule_of(hdr, at, now)
            target = (get_header(hdr, HDR_TARGET) or b"").decode(errors="replace")
            ttl, ttl_ok = _ttl_ok(hdr)
            if not isinstance(sched, Schedule) or not ttl_ok or not target:
                self.remove(subject)
                continue
            rollup = (get_header(hdr, HDR_ROLLUP) or b"").decode(errors="replace")
            source = (get_header(hdr, HDR_SOURCE) or b"").decode(errors="replace")
            body_hdr, body = hdr, msg.data
            if source:
                try:
                    src = store.load_last_msg(source)
                    body_hdr, body = src.hdr or b"", src.data
                except StoreError:
                    pass  # no message on the source: the schedule's own content
            produced = _strip(body_hdr) if body_hdr else b"NATS/1.0\r\n\r\n"
            extra = [("Nats-Scheduler", subject)]
            extra.append(("Nats-Schedule-Next", sched.next_header() if sched.repeat else "purge"))
            if ttl:
                extra.append(("Nats-TTL", ttl))
            if rollup:
                extra.append(("Nats-Rollup", rollup))
            out.append((seq, target, append_headers(produced, extra), body))
            self.inflight.add(subject)
        for item in held:
            heapq.heappush(heap, item)
        out.sort(key=lambda item: item[0])
        return [(target, hdr, body) for _, target, hdr, body in out]
