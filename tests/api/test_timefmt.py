"""Go time.Time / time.Duration wire formats, to the nanosecond."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyjetstream.api.timefmt import (
    ZERO_TIME,
    NanoTime,
    format_go_duration,
    format_time,
    ns_to_seconds,
    ns_to_timedelta,
    parse_go_duration,
    parse_time,
    seconds_to_ns,
    timedelta_to_ns,
)

MAX_TIME = parse_time("9999-12-31T23:59:59.999999999Z")
RFC3339NANO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{0,8}[1-9])?Z\Z")


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "1970-01-01T00:00:00Z"),
        (1672671845123456789, "2023-01-02T15:04:05.123456789Z"),
        (1672671845100000000, "2023-01-02T15:04:05.1Z"),
        (1672671845000000001, "2023-01-02T15:04:05.000000001Z"),
        (1626816911825973000, "2021-07-20T21:35:11.825973Z"),
        (-1, "1969-12-31T23:59:59.999999999Z"),
        (ZERO_TIME, "0001-01-01T00:00:00Z"),
        (MAX_TIME, "9999-12-31T23:59:59.999999999Z"),
    ],
)
def test_format_matches_go_rfc3339nano(ns: int, text: str) -> None:
    assert format_time(ns) == text
    assert parse_time(text) == ns


def test_zero_time_is_go_zero() -> None:
    assert ZERO_TIME == -62135596800 * 10**9
    assert NanoTime(ZERO_TIME).is_zero
    assert NanoTime(ZERO_TIME).to_datetime() == datetime(1, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "utc"),
    [
        ("2023-01-02T17:04:05.5+02:00", "2023-01-02T15:04:05.5Z"),
        ("2023-01-02T10:34:05-04:30", "2023-01-02T15:04:05Z"),
        ("2023-01-02t15:04:05z", "2023-01-02T15:04:05Z"),
        ("2023-01-02T15:04:05.1234567891234Z", "2023-01-02T15:04:05.123456789Z"),  # Go drops digits past ns
        ("2023-01-02T15:04:05.000Z", "2023-01-02T15:04:05Z"),
        ("2024-02-29T00:00:00+00:00", "2024-02-29T00:00:00Z"),
        ("0001-01-01T01:00:00+01:00", "0001-01-01T00:00:00Z"),
    ],
)
def test_parse_any_offset(text: str, utc: str) -> None:
    assert format_time(parse_time(text)) == utc


@pytest.mark.parametrize(
    "text",
    [
        "",
        "2023-01-02",
        "2023-01-02 15:04:05Z",
        "2023-01-02T15:04:05",  # no zone
        "2023-13-01T00:00:00Z",
        "2023-02-30T00:00:00Z",
        "2023-01-02T24:00:00Z",
        "2023-01-02T15:60:00Z",
        "2023-01-02T15:04:60Z",
        "2023-01-02T15:04:05.Z",
        "2023-01-02T15:04:05+2:00",
        "2023-01-02T15:04:05+24:00",
        "2023-01-02T15:04:05Zjunk",
    ],
)
def test_parse_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_time(text)


@given(st.integers(min_value=ZERO_TIME, max_value=MAX_TIME))
def test_time_round_trip_ns_precision(ns: int) -> None:
    text = format_time(ns)
    assert RFC3339NANO.match(text)
    assert parse_time(text) == ns
    assert NanoTime.parse(text).isoformat() == text


@given(st.datetimes(timezones=st.just(UTC)))
def test_agrees_with_datetime_at_microsecond_precision(dt: datetime) -> None:
    t = NanoTime.from_datetime(dt)
    assert t.to_datetime() == dt
    expected = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if dt.microsecond:
        expected += f".{dt.microsecond:06d}".rstrip("0")
    assert t.isoformat() == expected.replace(f"{dt.year}-", f"{dt.year:04d}-", 1) + "Z"


@given(
    st.integers(min_value=ZERO_TIME + 86400 * 10**9, max_value=MAX_TIME - 86400 * 10**9),
    st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59),
)
def test_offsets_denote_the_same_instant(ns: int, offset_minutes: int) -> None:
    tz = timezone(timedelta(minutes=offset_minutes))
    seconds, frac = divmod(ns, 10**9)
    local = datetime.fromtimestamp(seconds, tz)
    sign = "+" if offset_minutes >= 0 else "-"
    hh, mm = divmod(abs(offset_minutes), 60)
    text = local.strftime("%Y-%m-%dT%H:%M:%S").zfill(19) + f".{frac:09d}{sign}{hh:02d}:{mm:02d}"
    assert parse_time(text) == ns


def test_nanotime_behaves_as_int_and_prints_iso() -> None:
    t = NanoTime.parse("2023-01-02T15:04:05.123456789Z")
    assert t == 1672671845123456789
    assert t + 1 == 1672671845123456790
    assert str(t) == f"{t}" == "1672671845123456789"  # safe to put in an ack subject
    assert repr(t) == "NanoTime('2023-01-02T15:04:05.123456789Z')"
    assert NanoTime.from_datetime(datetime(2023, 1, 2, 15, 4, 5, 123456)) == 1672671845123456000
    assert NanoTime.from_seconds(1.5) == 1_500_000_000
    assert abs(NanoTime.now() - NanoTime.from_datetime(datetime.now(UTC))) < 5 * 10**9


@pytest.mark.parametrize(
    ("ns", "text"),
    [  # from Go's time_test.go durationTests
        (0, "0s"),
        (1, "1ns"),
        (1100, "1.1µs"),
        (2200 * 1000, "2.2ms"),
        (3300 * 10**6, "3.3s"),
        ((4 * 60 + 5) * 10**9, "4m5s"),
        ((4 * 60 + 5) * 10**9 + 10**6, "4m5.001s"),
        ((5 * 3600 + 6 * 60 + 7) * 10**9 + 10**6, "5h6m7.001s"),
        (8 * 60 * 10**9 + 1, "8m0.000000001s"),
        (2**63 - 1, "2562047h47m16.854775807s"),
        (-(2**63), "-2562047h47m16.854775808s"),
        (3600 * 10**9, "1h0m0s"),
        (-1, "-1ns"),
        (30 * 10**9, "30s"),
        (500 * 10**6, "500ms"),
    ],
)
def test_format_go_duration(ns: int, text: str) -> None:
    assert format_go_duration(ns) == text


@pytest.mark.parametrize(
    ("text", "ns"),
    [  # from Go's parseDurationTests
        ("0", 0),
        ("5s", 5 * 10**9),
        ("30s", 30 * 10**9),
        ("1478s", 1478 * 10**9),
        ("-5s", -5 * 10**9),
        ("+5s", 5 * 10**9),
        ("-0", 0),
        ("+0", 0),
        ("5.0s", 5 * 10**9),
        ("5.6s", 5600 * 10**6),
        ("5.s", 5 * 10**9),
        (".5s", 500 * 10**6),
        ("1.004s", 1004 * 10**6),
        ("100.00100s", 100001 * 10**6),
        ("10ns", 10),
        ("11us", 11000),
        ("12µs", 12000),
        ("12μs", 12000),
        ("13ms", 13 * 10**6),
        ("15m", 15 * 60 * 10**9),
        ("16h", 16 * 3600 * 10**9),
        ("3h30m", (3 * 3600 + 30 * 60) * 10**9),
        ("10.5s4m", (4 * 60 + 10) * 10**9 + 500 * 10**6),
        ("-2m3.4s", -((2 * 60 + 3) * 10**9 + 400 * 10**6)),
        ("1h2m3s4ms5us6ns", 3723004005006),
        ("39h9m14.425s", (39 * 3600 + 9 * 60 + 14) * 10**9 + 425 * 10**6),
        ("0.100000000000000000000h", 6 * 60 * 10**9),
    ],
)
def test_parse_go_duration(text: str, ns: int) -> None:
    assert parse_go_duration(text) == ns


@pytest.mark.parametrize("text", ["", "3", "-", "s", ".", "-.", ".s", "+.s", "3000000h", "1d", "5S", "1h 2m"])
def test_parse_go_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_go_duration(text)


@given(st.integers(min_value=-(2**63) + 1, max_value=2**63 - 1))
def test_go_duration_round_trip(ns: int) -> None:
    assert parse_go_duration(format_go_duration(ns)) == ns


def test_duration_helpers() -> None:
    assert seconds_to_ns(1.5) == 1_500_000_000
    assert seconds_to_ns(30) == 30_000_000_000
    assert ns_to_seconds(2_500_000_000) == 2.5
    assert timedelta_to_ns(timedelta(minutes=2, microseconds=3)) == 120_000_003_000
    assert ns_to_timedelta(120_000_003_999) == timedelta(minutes=2, microseconds=3)
    assert ns_to_timedelta(-1_500) == timedelta(microseconds=-1)


def test_format_time_of_many_seconds_past_its_cache() -> None:
    """`format_time` keeps the date and clock of recent whole seconds (a bounded dict, started
    again when full): times of the same second with other fractions, and more distinct seconds
    than it keeps, format as without it."""
    from pyjetstream.api import timefmt
    from pyjetstream.api.timefmt import NS_PER_S

    base = 1_795_906_397 * NS_PER_S
    for k in range(timefmt._SECONDS_MAX + 100):
        ns = base + k * 7 * NS_PER_S + (k * 1_000_003) % NS_PER_S
        want = datetime.fromtimestamp(ns // NS_PER_S, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        frac = f".{ns % NS_PER_S:09d}".rstrip("0").rstrip(".")
        assert format_time(ns) == want + frac + "Z"
        assert format_time(ns - ns % NS_PER_S) == want + "Z"
    assert len(timefmt._SECONDS) <= timefmt._SECONDS_MAX


def _parse_or_error(text: str) -> int | str:
    try:
        return parse_time(text)
    except ValueError:
        return "ValueError"


_TIME_TAILS = ["Z", "z", ".5Z", ".000000001Z", ".1234567891234Z", ".Z", ".12a4Z", "X5Z", ".١٢Z", ".²Z", "+00:00", "-01:30"]


@given(
    st.sampled_from(["2024-02-29T23:59:59", "2023-02-29T00:00:00", "1970-01-01T00:00:00", "9999-12-31T23:59:59"]),
    st.lists(st.sampled_from(_TIME_TAILS) | st.text(alphabet="0123456789.Zz:+-a٣", max_size=12), min_size=1, max_size=8),
)
def test_parse_time_with_seconds_seen_is_the_whole_parse(head: str, tails: list[str]) -> None:
    """`timefmt.SECONDS_SEEN` (a time whose whole seconds were parsed lately reads only its
    fraction) answers every string, well formed or not, as the whole parse does: each tail is
    parsed after the same seconds were seen, with the switch on and off."""
    import pyjetstream.api.timefmt as timefmt

    texts = [head + tail for tail in tails]
    try:
        timefmt.SECONDS_SEEN = False
        whole = [_parse_or_error(t) for t in texts]
        timefmt.SECONDS_SEEN = True
        timefmt._PARSED.clear()
        _parse_or_error(head + "Z")
        seen = [_parse_or_error(t) for t in texts]
    finally:
        timefmt.SECONDS_SEEN = True
    assert seen == whole


def test_parse_time_of_seconds_seen_reads_the_fraction_alone() -> None:
    """A second time of the same whole seconds is not matched against the pattern again
    (counted: the pattern's matches), and many distinct seconds keep the table bounded."""
    import pyjetstream.api.timefmt as timefmt

    timefmt._PARSED.clear()
    calls = 0
    real = timefmt._RFC3339

    class Counting:
        def match(self, text: str) -> re.Match[str] | None:
            nonlocal calls
            calls += 1
            return real.match(text)

    timefmt._RFC3339 = Counting()  # type: ignore[assignment]
    try:
        first = parse_time("2026-11-29T08:00:01.25Z")
        assert calls == 1
        assert parse_time("2026-11-29T08:00:01.000000750Z") - first == 750 - 250_000_000
        assert parse_time("2026-11-29T08:00:01Z") == first - 250_000_000
        assert calls == 1
        for s in range(timefmt._SECONDS_MAX + 10):
            parse_time(format_time(s * 1_000_000_000))
        assert len(timefmt._PARSED) <= timefmt._SECONDS_MAX
    finally:
        timefmt._RFC3339 = real
