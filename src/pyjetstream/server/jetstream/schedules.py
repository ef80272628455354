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

import heapq
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pyjetstream.api import errors as E
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.schedules import (
    ROLLUP_SUB_LINE,
    SCHEDULE_HEADER_PREFIX,
    Schedule,
    load_location,
    next_run,
    produced_block,
    produced_parts,
    schedule_headers,
)
from pyjetstream.api.timefmt import parse_time
from pyjetstream.api.ttl import parse_message_ttl
from pyjetstream.protocol.headers import get_header
from pyjetstream.protocol.subjects import is_valid_publish_subject
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
#: The schedules of a firing whose blocks differ only in their target's value (a publisher's
#: schedules, one target each) share what the rest of the block makes of them (`_Shapes`): one
#: block of each shape read and checked, not each; False: each read alone (`MsgSchedules._produced`;
#: the differential test compares the two).
SHAPES = True


#: A block's schedule headers by name (`schedule_headers`: one pass over the block).
Found = dict[bytes, bytes]


def _text(found: Found, name: bytes) -> str:
    return found.get(name, b"").decode(errors="replace")


def schedule_of(found: Found, ts: int, now: int | None = None) -> Schedule | ApiError | None:
    """When the schedule of a block (its `schedule_headers`) fires next after ``ts``
    (nats-server ``nextMessageSchedule``): None when there is none, the error when the pattern
    or time zone is invalid."""
    zone_raw = found.get(HDR_TIME_ZONE)
    try:
        zone = None if zone_raw is None else load_location(zone_raw.decode())
    except (ValueError, UnicodeDecodeError):
        return E.JSMessageSchedulesTimeZoneInvalidErr()
    pattern = found.get(HDR_SCHEDULE, b"")
    sched = next_run(pattern.decode(errors="replace"), zone, ts, time.time_ns() if now is None else now)
    if sched is None:
        return E.JSMessageSchedulesPatternInvalidErr()
    return sched if sched.at else None


def _ttl_ok(found: Found) -> tuple[str, bool]:
    raw = found.get(HDR_TTL)
    if not raw:
        return "", True
    try:
        parse_message_ttl(raw.decode())
    except (ValueError, UnicodeDecodeError):
        return "", False
    return raw.decode(), True


def check_publish(stream: Stream, subject: str, hdr: bytes) -> tuple[bytes, ApiError | None, Found]:
    """The schedule checks of a published (not sourced) message, in nats-server's order
    (``processJetStreamMsg``); the headers to store (a schedule gets ``Nats-Rollup: sub``) or
    the error, and the block's schedule headers (read once: `MsgSchedules.on_stored` takes them)."""
    found = schedule_headers(hdr)
    checked = _check_schedule(stream, subject, found)
    if isinstance(checked, ApiError):
        return hdr, checked, found
    if checked:  # a schedule: stored with a subject roll-up
        own_rollup = get_header(hdr, b"Nats-Rollup")
        if not own_rollup:
            hdr = hdr[:-2] + ROLLUP_SUB_LINE
        elif own_rollup != b"sub":
            return hdr, E.JSMessageSchedulesRollupInvalidErr(), found
    return hdr, _check_next(stream, subject, found), found


#: The headers a run's stretch takes in a schedule's block (`stretch_schedule`): the schedule's own.
_STRETCH_HEADERS = frozenset((HDR_SCHEDULE, HDR_TARGET, HDR_SOURCE, HDR_TTL, HDR_ROLLUP, HDR_TIME_ZONE))
#: Every header line nats-server's checks may read starts so (``getHeader`` is case-sensitive).
_NATS_LINE = b"\r\nNats-"


def stretch_schedule(stream: Stream, subject: str, hdr: bytes) -> tuple[bytes, Found] | None:
    """A published block that a run's stretch may store as a valid schedule (``ingest_run.py``):
    its only ``Nats-`` headers are the schedule's own (pattern, target, source, TTL, roll-up,
    time zone — so no check of `StreamIngest.process` but the schedule's can refuse it, and
    there is no message id, TTL or roll-up of its own) and `check_publish` would pass it. Returns
    the block as stored (with ``Nats-Rollup: sub``, as `check_publish` gives it) and its schedule
    headers, or None: `StreamIngest.process` takes it (an error, a duplicate header, any other
    ``Nats-`` header)."""
    found = schedule_headers(hdr)
    if hdr.count(_NATS_LINE) != len(found) or not found.keys() <= _STRETCH_HEADERS:
        return None
    if _check_schedule(stream, subject, found) is not True:
        return None
    return hdr[:-2] + ROLLUP_SUB_LINE, found


#: Where a schedule block's target value starts (`schedule_shape`).
_TARGET_LINE = b"\r\n" + HDR_TARGET + b":"
#: A block `stretch_schedule` took, around its target's value: ``(head, tail, its headers)``.
Shape = tuple[bytes, bytes, Found]


def schedule_shape(hdr: bytes, found: Found) -> Shape | None:
    """A block `stretch_schedule` took, cut around its target's value, so that the next blocks of
    a run that differ from it only there (a publisher's schedules: one target each) are taken by
    `same_schedule` without being parsed and checked again."""
    cut = _target_cut(hdr)
    if cut is None:
        return None
    start, end = cut
    return hdr[:start], hdr[end:], found


def _target_cut(hdr: bytes) -> tuple[int, int] | None:
    """Where the value of a block's first ``Nats-Schedule-Target`` line lies (after its colon, up to
    its line's end), None without one: where `schedule_shape` and a firing's `_Shapes` cut a block."""
    start = hdr.find(_TARGET_LINE)
    if start < 0:
        return None
    start += len(_TARGET_LINE)
    end = hdr.find(b"\r\n", start)
    return (start, end) if end >= 0 else None


def same_schedule(stream: Stream, subject: str, hdr: bytes, shape: Shape) -> tuple[bytes, Found] | None:
    """`stretch_schedule` of a block that is ``shape``'s but for its target's value (it starts
    with the head, ends with the tail and the value between is one line): its headers are the
    shape's with that target, and of the checks only the target's and source's can differ (the
    pattern, time zone, TTL and roll-up are the same bytes; the subject is checked again)."""
    head, tail, found = shape
    value = hdr[len(head) : len(hdr) - len(tail)]
    if len(hdr) < len(head) + len(tail) or value.find(b"\r") >= 0 or value.find(b"\n") >= 0:
        return None
    found = {**found, HDR_TARGET: value.lstrip(b" ")}  # (as `schedule_headers` reads it)
    if _check_target(stream, subject, found) is not True:
        return None
    return hdr[:-2] + ROLLUP_SUB_LINE, found


def _check_schedule(stream: Stream, subject: str, found: Found) -> ApiError | bool:
    """The schedule of a block (nats-server ``getMessageSchedule``: also the time zone of a
    block without a pattern), its TTL, roll-up, target and source; True: a valid schedule,
    False: none."""
    cfg = stream.cfg
    allowed = cfg.allow_msg_schedules
    sched = schedule_of(found, time.time_ns())
    if isinstance(sched, ApiError):
        return sched if allowed else E.JSMessageSchedulesDisabledErr()
    if sched is None:
        return False
    if not allowed:
        return E.JSMessageSchedulesDisabledErr()
    ttl, ok = _ttl_ok(found) if HDR_TTL in found else ("", True)
    if not ok:
        return E.JSMessageSchedulesTTLInvalidErr()
    rollup = found.get(HDR_ROLLUP)
    if rollup and rollup != b"sub":
        return E.JSMessageSchedulesRollupInvalidErr()
    if ttl and not cfg.allow_msg_ttl:
        return E.JSMessageTTLDisabledErr()
    return _check_target(stream, subject, found)


def _check_target(stream: Stream, subject: str, found: Found) -> ApiError | bool:
    """`_check_schedule`'s checks of a valid schedule's target and source (True: they pass)."""
    target = _text(found, HDR_TARGET)
    if not target or not is_valid_publish_subject(target) or target == subject:
        return E.JSMessageSchedulesTargetInvalidErr()
    source = _text(found, HDR_SOURCE)
    if source and (source in (target, subject) or not is_valid_publish_subject(source)):
        return E.JSMessageSchedulesSourceInvalidErr()
    if not _in_subjects(stream, target):
        return E.JSMessageSchedulesTargetInvalidErr()
    if source and not _in_subjects(stream, source):
        return E.JSMessageSchedulesSourceInvalidErr()
    return True


def _check_next(stream: Stream, subject: str, found: Found) -> ApiError | None:
    """``Nats-Schedule-Next``: clients may only use it to purge a schedule, naming it in
    ``Nats-Scheduler``."""
    next_value = found.get(HDR_NEXT)
    if not next_value:
        return E.JSMessageSchedulesSchedulerInvalidErr() if found.get(HDR_SCHEDULER) else None
    if next_value != NEXT_PURGE:
        return E.JSMessageSchedulesSchedulerInvalidErr()
    scheduler = _text(found, HDR_SCHEDULER)
    if not scheduler or scheduler == subject or not is_valid_publish_subject(scheduler):
        return E.JSMessageSchedulesSchedulerInvalidErr()
    if not stream.cfg.allow_msg_schedules:
        return E.JSMessageSchedulesDisabledErr()
    try:
        last = stream.store.load_last_msg(scheduler)
    except StoreError:
        last = None
    if last is not None and get_header(last.hdr or b"", HDR_SCHEDULE) is None:
        return E.JSMessageSchedulesSchedulerInvalidErr()
    return None


def _in_subjects(stream: Stream, subject: str) -> bool:
    """Whether a valid publish subject is one of the stream's (nats-server asks
    ``SubjectsCollide``, which for a literal subject is a match of it: the stream's subjects
    compiled once per config, ``StreamIngest.subject_filters``)."""
    for match in stream.ingest.subject_filters:
        if match(subject):
            return True
    return False


def _read(hdr: bytes) -> tuple[Found, bytes]:
    """A schedule's block read once for its firing: its schedule headers (as
    `schedule_headers` reads them) and what of it a produced message carries (`_strip`)."""
    lines = hdr.split(b"\r\n")
    found: Found = {}
    kept = [lines[0]]
    for line in lines[1:]:
        if not line.startswith(_NOT_CARRIED):
            kept.append(line)
        elif line.startswith(SCHEDULE_HEADER_PREFIX):
            name, colon, value = line.partition(b":")
            if colon and name not in found:
                found[name] = value.lstrip(b" ")
    return found, b"\r\n".join(kept)


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
            if msg.hdr and msg.hdr.find(SCHEDULE_LINE) >= 0:
                sched = schedule_of(schedule_headers(msg.hdr), msg.ts, now)
                if isinstance(sched, Schedule):
                    self.entries[subject] = (msg.seq, sched.at)
        self._heap = [(at, subject) for subject, (_, at) in self.entries.items()]
        heapq.heapify(self._heap)
        self._reset_timer()

    def on_stored(self, seq: int, subject: str, hdr: bytes, ts: int, found: Found | None = None) -> str:
        """A message was stored (the store hook of nats-server's ``storeRawMsg``); ``found``: its
        schedule headers, when the publish checks have read them. Returns the schedule that a
        stored ``Nats-Schedule-Next: purge`` message ends, for the stream to purge ("": none)."""
        if found is None:
            found = schedule_headers(hdr) if hdr and hdr.find(HDR_SCHEDULE) >= 0 else {}
        sched = schedule_of(found, ts) if HDR_SCHEDULE in found else None
        if isinstance(sched, Schedule):
            self._set(subject, seq, sched.at)
            self.inflight.discard(subject)
            if self._timer is None or sched.at < self._deadline:  # (else the timer stays as it is)
                self._reset_timer()
        elif not found.get(HDR_SCHEDULER):
            self.remove(subject)
        value = found.get(HDR_NEXT)
        if not value:
            return ""
        scheduler = _text(found, HDR_SCHEDULER)
        if value == NEXT_PURGE:
            if scheduler:
                self.remove(scheduler)
            return scheduler
        if scheduler in self.entries:
            try:
                at = parse_time(value.decode())
            except (ValueError, UnicodeDecodeError):
                return ""
            self._set(scheduler, self.entries[scheduler][0], at)
            self.inflight.discard(scheduler)
            self._reset_timer()
        return ""

    def stored_schedules(self, first: int, subjects: list[str], tss: Sequence[int], founds: list[Found]) -> None:
        """`on_stored` for a run's stretch of schedules stored from ``first`` on (each valid, with
        no ``Nats-Schedule-Next`` or ``Nats-Scheduler``: `stretch_schedule`), the timer looked at
        once, for the earliest of their next runs."""
        earliest = 0
        discard = self.inflight.discard
        for i, subject in enumerate(subjects):
            sched = schedule_of(founds[i], tss[i])
            if isinstance(sched, Schedule):
                self._set(subject, first + i, sched.at)
                discard(subject)
                if not earliest or sched.at < earliest:
                    earliest = sched.at
            else:  # (not met: the stretch checked it)
                self.remove(subject)
        if earliest and (self._timer is None or earliest < self._deadline):
            self._reset_timer()

    def stored_plain(self, subjects: list[str]) -> None:
        """`on_stored` for a run's stretch: messages without a ``Nats-Schedule*`` or
        ``Nats-Scheduler`` header, each of which ends the schedule on its subject."""
        for subject in subjects:
            self.remove(subject)

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
            self.stream.ingest.store_internal_run(self._due(time.time_ns()))
        finally:
            self._running = False
        self._reset_timer()

    def _due(self, now: int) -> list[tuple[str, bytes, bytes, Found]]:
        """The messages the due schedules produce, by schedule sequence (``getScheduledMessages``),
        each with its schedule headers (the two it is given: what it carries over has none); the
        schedules read together (``load_msgs``)."""
        heap = self._heap
        due: list[tuple[int, int, str]] = []  # (schedule sequence, run, subject)
        taken: set[str] = set()
        held: list[tuple[int, str]] = []  # due but still being produced: looked at again next time
        while heap and heap[0][0] <= now:
            at, subject = heapq.heappop(heap)
            self.steps += 1
            if not self._current(at, subject):
                continue
            if subject in self.inflight or subject in taken:
                held.append((at, subject))
                continue
            taken.add(subject)
            due.append((self.entries[subject][0], at, subject))
        for item in held:
            heapq.heappush(heap, item)
        if not due:
            return []
        due.sort()
        msgs = {msg[1]: msg for msg in self.stream.store.load_msgs([seq for seq, _, _ in due])}
        out: list[tuple[str, bytes, bytes, Found]] = []
        shapes = _Shapes(now) if SHAPES else None
        for seq, at, subject in due:
            msg = msgs.get(seq)
            produced: tuple[str, bytes, bytes, Found] | bool | None = None
            if msg is not None:
                hdr = msg[3] or b""
                produced = shapes.produced(subject, at, hdr, msg[4]) if shapes is not None else False
                if isinstance(produced, bool):  # (False: not taken by shape)
                    produced = self._produced(subject, at, now, hdr, msg[4])
            if produced is None or isinstance(produced, bool):
                self.remove(subject)
                continue
            out.append(produced)
            self.inflight.add(subject)
        return out

    def _produced(
        self, subject: str, at: int, now: int, hdr: bytes, data: bytes
    ) -> tuple[str, bytes, bytes, Found] | None:
        """What the schedule on ``subject`` (its block and body) produces when it runs at ``at``:
        the target, block, body and the block's schedule headers; None when it is no longer a
        valid schedule (it is dropped)."""
        found, carried = _read(hdr)
        target = _text(found, HDR_TARGET)
        made = _made(found, at, now)
        if made is None or not target:
            return None
        following, ttl, rollup = made
        source = _text(found, HDR_SOURCE)
        if source:
            try:
                src = self.stream.store.load_last_msg(source)
                carried, data = _strip(src.hdr) if src.hdr else b"", src.data
            except StoreError:
                pass  # no message on the source: the schedule's own content
        block = produced_block(carried or _EMPTY_BLOCK, subject, following, ttl, rollup)
        return target, block, data, {HDR_SCHEDULER: subject.encode(), HDR_NEXT: following.encode()}


_EMPTY_BLOCK = b"NATS/1.0\r\n\r\n"


def _made(found: Found, at: int, now: int) -> tuple[str, str, str] | None:
    """What a schedule's headers (but its target and source) make of what it produces when it runs
    at ``at``: ``Nats-Schedule-Next`` (its next run, or purge), the TTL and the roll-up; None when
    it is no longer a valid schedule."""
    sched = schedule_of(found, at, now) if HDR_SCHEDULE in found else None
    ttl, ttl_ok = _ttl_ok(found)
    if not isinstance(sched, Schedule) or not ttl_ok:
        return None
    return sched.next_header() if sched.repeat else "purge", ttl, _text(found, HDR_ROLLUP)


#: What a shape makes (`_Shapes`): the produced block's two parts around the scheduler's name and
#: the ``Nats-Schedule-Next`` value; None: not a valid schedule; False: not taken by shape.
_Shape = tuple[bytes, bytes, bytes] | bool | None


class _Shapes:
    """The blocks of one firing's schedules by shape — a block cut around its target's value
    (``Nats-Schedule-Target``'s first line, as `schedule_shape` cuts a run's) and the time it runs
    at —, each shape's block read and checked once (`_read`, `_made`): the next ones of that shape
    differ from it only in the target, the one thing `MsgSchedules._produced` reads of a block
    that they do not share (with the schedule's own subject, which is not in the block). A block
    with a ``Nats-Schedule-Source`` is not taken (its content comes from another message)."""

    __slots__ = ("known", "now")

    def __init__(self, now: int) -> None:
        self.now = now
        self.known: dict[tuple[bytes, bytes, int], _Shape] = {}

    def produced(self, subject: str, at: int, hdr: bytes, data: bytes) -> tuple[str, bytes, bytes, Found] | bool | None:
        """`MsgSchedules._produced` of a block taken by shape; False: not taken (no target line,
        a source), `_produced` then reads it."""
        cut = _target_cut(hdr)
        if cut is None:
            return False
        start, end = cut
        key = (hdr[:start], hdr[end:], at)
        known = self.known
        shape = known[key] if key in known else known.setdefault(key, self._shape(hdr, at))
        if shape is None or isinstance(shape, bool):
            return shape
        target = hdr[start:end].lstrip(b" ")
        if not target:
            return None
        head, tail, following = shape
        return target.decode(errors="replace"), head + subject.encode() + tail, data, {HDR_SCHEDULER: subject.encode(), HDR_NEXT: following}

    def _shape(self, hdr: bytes, at: int) -> _Shape:
        found, carried = _read(hdr)
        if found.get(HDR_SOURCE):
            return False
        made = _made(found, at, self.now)
        if made is None:
            return None
        following, ttl, rollup = made
        head, tail = produced_parts(carried or _EMPTY_BLOCK, following, ttl, rollup)
        return head, tail, following.encode()
