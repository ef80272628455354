"""Message schedules (ADR-51, nats-server 2.12+, 2.14's additions): the ``Nats-Schedule`` grammar.

As nats-server's ``parseMsgSchedule`` (server/scheduler.go) and ``parseCron`` (server/cron.go,
after robfig/cron) read it:

* ``@at <RFC 3339 time>`` — once (no time zone allowed);
* ``@every <Go duration>`` — repeating, at least one second apart (no time zone allowed); the
  next run is the stored time rounded to the second plus the interval, or, if that has passed
  (a restart), now rounded plus the interval, so a backlog fires only once;
* a 6-field cron pattern ``sec min hour dom month dow`` (``*``, ``?``, ranges, steps, lists,
  month and weekday names), or ``@yearly``/``@annually``/``@monthly``/``@weekly``/``@daily``/
  ``@midnight``/``@hourly``, in ``Nats-Schedule-Time-Zone`` (an IANA zone) or UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache

from pyjetstream.api.timefmt import parse_go_duration, parse_time

NS_PER_S = 1_000_000_000
_STAR_BIT = 1 << 63

_PREDEFINED = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
_MONTHS = {n: i + 1 for i, n in enumerate("jan feb mar apr may jun jul aug sep oct nov dec".split())}
_DAYS = {n: i for i, n in enumerate("sun mon tue wed thu fri sat".split())}
# (min, max, names) of the six fields.
_BOUNDS: list[tuple[int, int, dict[str, int] | None]] = [
    (0, 59, None),
    (0, 59, None),
    (0, 23, None),
    (1, 31, None),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
]


#: Every schedule header's name begins with it: ``Nats-Schedule``, ``Nats-Schedule-*``, ``Nats-Scheduler``.
SCHEDULE_HEADER_PREFIX = b"Nats-Schedule"


def schedule_headers(hdr: bytes) -> dict[bytes, bytes]:
    """A header block's ``Nats-Schedule*`` and ``Nats-Scheduler`` headers by name, each as
    nats-server's ``getHeader``/``sliceHeader`` finds it (the first line of that name, its value
    without the spaces before it — a tab or a space after it stays, so ``"s.t\t"`` is not a valid
    target there either; absent: not in the dict, empty: ``b""``).

    One split of the block: a schedule publish's checks, its store hook and its firing read up
    to eight of these headers, which were eight searches of the block each time."""
    found: dict[bytes, bytes] = {}
    for line in hdr.split(b"\r\n")[1:]:  # (the first line is the status line)
        if line.startswith(SCHEDULE_HEADER_PREFIX):
            name, colon, value = line.partition(b":")
            if colon and name not in found:
                found[name] = value.lstrip(b" ")
    return found


#: The roll-up a schedule is stored with (nats-server ``genHeader(hdr, JSMsgRollup, "sub")``) and the
#: block's end: ``block[:-2] + ROLLUP_SUB_LINE`` appends it.
ROLLUP_SUB_LINE = b"Nats-Rollup: sub\r\n\r\n"


def produced_block(carried: bytes, scheduler: str, next_run: str, ttl: str, rollup: str) -> bytes:
    """The header block of a message a schedule produces: the headers it carries over
    (``carried``, a block), then ``Nats-Scheduler``, ``Nats-Schedule-Next`` and, when the schedule
    has them, ``Nats-TTL`` and ``Nats-Rollup`` (nats-server ``getScheduledMessages``'s
    ``genHeader`` calls, in that order)."""
    head, tail = produced_parts(carried, next_run, ttl, rollup)
    return head + scheduler.encode() + tail


def produced_parts(carried: bytes, next_run: str, ttl: str, rollup: str) -> tuple[bytes, bytes]:
    """`produced_block` but for the scheduler's name, which goes between the two parts: the same
    for the schedules of a firing whose blocks differ only in their target."""
    lines = f"\r\nNats-Schedule-Next: {next_run}\r\n"
    if ttl:
        lines += f"Nats-TTL: {ttl}\r\n"
    if rollup:
        lines += f"Nats-Rollup: {rollup}\r\n"
    return carried[:-2] + b"Nats-Scheduler: ", lines.encode() + b"\r\n"


class Schedule:
    """When a schedule fires next: ``at`` (unix ns) in zone ``zone``; ``repeat`` for all but @at."""

    __slots__ = ("at", "repeat", "zone")

    def __init__(self, at: int, repeat: bool, zone: tzinfo) -> None:
        self.at = at
        self.repeat = repeat
        self.zone = zone

    def next_header(self) -> str:
        """The ``Nats-Schedule-Next`` value: Go's RFC3339Nano in the schedule's zone."""
        return format_rfc3339_nano(self.at, self.zone)


def load_location(value: str | None) -> tzinfo | None:
    """The zone of a ``Nats-Schedule-Time-Zone`` value (None: header absent); ValueError when
    empty or unknown (10223)."""
    if value is None:
        return None
    if not value:
        raise ValueError("empty time zone")
    if value == "UTC":
        return UTC
    # Deferred: start-up time (zoneinfo and its tz path scan; only a schedule with a zone needs it).
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ValueError(f"unknown time zone {value!r}") from exc


def next_run(pattern: str, zone: tzinfo | None, ts: int, now: int) -> Schedule | None:
    """When ``pattern`` fires next after ``ts`` (unix ns); None when the pattern is invalid.
    An empty pattern gives ``Schedule(0, False, UTC)`` (no schedule)."""
    if not pattern:
        return Schedule(0, False, UTC)
    if pattern.startswith("@at "):
        return None if zone is not None else _at_schedule(pattern[4:])
    if pattern.startswith("@every "):
        every = _every_ns(pattern[7:])
        if zone is not None or every is None:
            return None
        nxt = _round_second(ts) + every
        if nxt < now:
            nxt = _round_second(now) + every
        return Schedule(nxt, True, UTC)
    pattern = _PREDEFINED.get(pattern, pattern)
    loc = zone or UTC
    first = _next_cron(pattern, loc, ts)
    if first is None:
        return None
    nxt = first
    if nxt < now:
        later = _next_cron(pattern, loc, _round_second(now))
        if later is None:
            return None
        nxt = later
    return Schedule(nxt, True, loc)


@lru_cache(maxsize=1024)
def _at_schedule(text: str) -> Schedule | None:
    """An ``@at`` time's one run (None: invalid). Cached (a `Schedule` is not changed once
    made): schedules are published and fire again and again with the few patterns an
    application uses, and the stream reads a schedule's pattern when it is published, stored and
    fired."""
    try:
        return Schedule(parse_time(text), False, UTC)
    except ValueError:
        return None


@lru_cache(maxsize=1024)
def _every_ns(text: str) -> int | None:
    """An ``@every`` interval, at least a second (None: invalid or shorter). Cached as `_at_ns`."""
    try:
        every = parse_go_duration(text)
    except ValueError:
        return None
    return every if every >= NS_PER_S else None


def _round_second(ns: int) -> int:
    """Go ``Time.Round(time.Second)``: halves round up."""
    return (ns + NS_PER_S // 2) // NS_PER_S * NS_PER_S


def format_rfc3339_nano(ns: int, zone: tzinfo) -> str:
    """Go ``Format(time.RFC3339Nano)`` of ``ns`` in ``zone`` (``Z`` for UTC, else ``+hh:mm``)."""
    seconds, frac = divmod(ns, NS_PER_S)
    dt = datetime.fromtimestamp(seconds, UTC).astimezone(zone)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        text += f".{frac:09d}".rstrip("0")
    offset = dt.utcoffset() or timedelta(0)
    if not offset:
        return text + "Z"
    total = int(offset.total_seconds())
    sign = "+" if total >= 0 else "-"
    hh, mm = divmod(abs(total) // 60, 60)
    return f"{text}{sign}{hh:02d}:{mm:02d}"


# --- cron ------------------------------------------------------------------------------------


def _parse_int(expr: str) -> int:
    if not expr or not (expr.isascii() and (expr.isdigit() or (expr[0] in "+-" and expr[1:].isdigit()))):
        raise ValueError(f"failed to parse int from {expr}")
    num = int(expr)
    if num < 0:
        raise ValueError(f"negative number ({num}) not allowed: {expr}")
    return num


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _parse_int(expr)


def _range_bits(expr: str, lo: int, hi: int, names: dict[str, int] | None) -> int:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    single = len(low_high) == 1
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = lo, hi, _STAR_BIT
    else:
        start = _int_or_name(low_high[0], names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], names)
        else:
            raise ValueError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _parse_int(range_and_step[1])
        if single:
            end = hi
        if step > 1:
            extra = 0
    else:
        raise ValueError(f"too many slashes: {expr}")
    if start < lo or end > hi or start > end or step == 0:
        raise ValueError(f"bad range: {expr}")
    bits = 0
    for i in range(start, end + 1, step):
        bits |= 1 << i
    return bits | extra


def _field_bits(field: str, lo: int, hi: int, names: dict[str, int] | None) -> int:
    bits = 0
    for expr in (e for e in field.split(",") if e):
        bits |= _range_bits(expr, lo, hi, names)
    return bits


def _weekday(dt: datetime) -> int:
    return (dt.weekday() + 1) % 7  # Go: Sunday = 0


def _day_matches(dom: int, dow: int, dt: datetime) -> bool:
    dom_match = bool(1 << dt.day & dom)
    dow_match = bool(1 << _weekday(dt) & dow)
    if dom & _STAR_BIT or dow & _STAR_BIT:
        return dom_match and dow_match
    return dom_match or dow_match


def _wall(loc: tzinfo, year: int, month: int, day: int, hour: int = 0) -> datetime:
    """Go ``time.Date`` with month and day overflow normalised."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    base = datetime(year, month, 1, hour, tzinfo=loc)
    return base + timedelta(days=day - 1) if day != 1 else base


def _add(dt: datetime, delta: timedelta, loc: tzinfo) -> datetime:
    """Go ``Time.Add``: absolute time, shown in ``loc``."""
    return (dt.astimezone(UTC) + delta).astimezone(loc)


def _next_cron(pattern: str, loc: tzinfo, ts: int) -> int | None:
    fields = pattern.split()
    if len(fields) != 6:
        return None
    try:
        sec, minute, hour, dom, month, dow = (
            _field_bits(f, lo, hi, names) for f, (lo, hi, names) in zip(fields, _BOUNDS, strict=True)
        )
    except ValueError:
        return None
    seconds = ts // NS_PER_S  # Truncate(time.Second), then the upcoming second
    nxt = datetime.fromtimestamp(seconds + 1, UTC).astimezone(loc)
    truncated = False
    year_limit = nxt.year + 5
    while True:  # WRAP
        if nxt.year > year_limit:
            return None
        wrapped = False
        while not (1 << nxt.month) & month:
            if not truncated:
                truncated = True
                nxt = _wall(loc, nxt.year, nxt.month, 1)
            nxt = _wall(loc, nxt.year, nxt.month + 1, nxt.day, nxt.hour)
            if nxt.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(dom, dow, nxt):
            if not truncated:
                truncated = True
                nxt = _wall(loc, nxt.year, nxt.month, nxt.day)
            nxt = _wall(loc, nxt.year, nxt.month, nxt.day + 1, nxt.hour)
            if nxt.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.hour) & hour:
            if not truncated:
                truncated = True
                nxt = _wall(loc, nxt.year, nxt.month, nxt.day, nxt.hour)
            nxt = _add(nxt, timedelta(hours=1), loc)
            if nxt.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.minute) & minute:
            if not truncated:
                truncated = True
                nxt = nxt.replace(second=0, microsecond=0)
            nxt = _add(nxt, timedelta(minutes=1), loc)
            if nxt.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << nxt.second) & sec:
            if not truncated:
                truncated = True
                nxt = nxt.replace(microsecond=0)
            nxt = _add(nxt, timedelta(seconds=1), loc)
            if nxt.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return int(nxt.timestamp()) * NS_PER_S
