"""Message schedules (ADR-51 and 2.14's additions) on both targets, against nats-server 2.15.1:
the config rules, every publish error (10186-10192, 10203, 10212, 10223), an ``@at`` one-off
that purges itself, an ``@every`` schedule with a source and a TTL, cron with a time zone, and a
schedule that keeps firing after ``kill -9``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target


@pytest.fixture
async def raw(server: Target) -> AsyncIterator[RawNats]:
    client = await RawNats.connect(server.url)
    yield client
    await client.close()


async def api(client: RawNats, subject: str, body: Any = b"") -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    msg = await client.request(f"$JS.API.{subject}", data, timeout=10)
    return msg.json()


async def pub(client: RawNats, subject: str, data: bytes = b"", hdr: bytes | None = None) -> dict[str, Any]:
    msg = await client.request(subject, data, hdr=hdr, timeout=10)
    return msg.json()


async def wait_for(check: Callable[[], Awaitable[Any]], timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = await check()
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.1)


def parse_hdrs(raw_b64: str) -> list[tuple[str, str]]:
    lines = base64.b64decode(raw_b64).decode().split("\r\n")[1:]
    return [tuple(line.split(": ", 1)) for line in lines if line]  # type: ignore[misc]


def rfc3339(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


async def create(client: RawNats, name: str = "S", **cfg: Any) -> dict[str, Any]:
    body = {"name": name, "subjects": ["s.>"], "allow_msg_schedules": True, **cfg}
    return await api(client, f"STREAM.CREATE.{name}", body)


async def test_schedule_config_rules(raw: RawNats) -> None:
    resp = await create(raw, discard="new")
    assert resp["error"]["description"] == "message scheduling cannot use discard new"
    cfg = (await create(raw, deny_purge=True))["config"]
    assert (cfg["allow_msg_schedules"], cfg["allow_rollup_hdrs"], cfg["deny_purge"]) == (True, True, False)
    resp = await api(raw, "STREAM.UPDATE.S", {**cfg, "allow_msg_schedules": False})
    assert resp["error"]["description"] == "message schedules can not be disabled"
    resp = await api(raw, "STREAM.CREATE.M", {"name": "M", "mirror": {"name": "S"}, "allow_msg_schedules": True})
    assert resp["error"]["err_code"] == 10186
    resp = await api(raw, "STREAM.CREATE.X", {"name": "X", "sources": [{"name": "S"}], "allow_msg_schedules": True})
    assert resp["error"] == {
        "code": 400,
        "err_code": 10187,
        "description": "stream source can not also schedule messages",
    }


async def test_schedule_publish_errors(raw: RawNats) -> None:
    await create(raw)
    await api(raw, "STREAM.CREATE.OFF", {"name": "OFF", "subjects": ["off.>"]})
    later = rfc3339(datetime.now(UTC) + timedelta(hours=1))

    def sched(*pairs: tuple[str, str]) -> bytes:
        return headers(*pairs)

    cases: list[tuple[str, bytes, int]] = [
        ("off.a", sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "off.t")), 10188),
        ("s.a", sched(("Nats-Schedule", "@at nope"), ("Nats-Schedule-Target", "s.t")), 10189),
        ("s.a", sched(("Nats-Schedule", "@every 500ms"), ("Nats-Schedule-Target", "s.t")), 10189),
        ("s.a", sched(("Nats-Schedule", "1 2 3"), ("Nats-Schedule-Target", "s.t")), 10189),
        ("s.a", sched(("Nats-Schedule", f"@at {later}")), 10190),
        ("s.a", sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.a")), 10190),
        ("s.a", sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "other")), 10190),
        ("s.a", sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.*")), 10190),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-TTL", "x")),
            10191,
        ),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Rollup", "all")),
            10192,
        ),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Rollup", "all")),
            10192,
        ),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Source", "s.t")),
            10203,
        ),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Source", "o.x")),
            10203,
        ),
        ("s.a", sched(("Nats-Schedule-Next", "soon"), ("Nats-Scheduler", "s.b")), 10212),
        ("s.a", sched(("Nats-Schedule-Next", "purge")), 10212),
        ("s.a", sched(("Nats-Scheduler", "s.b")), 10212),
        ("s.a", sched(("Nats-Schedule-Time-Zone", "Mars/Olympus")), 10223),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-Time-Zone", "UTC")),
            10189,
        ),
        (
            "s.a",
            sched(("Nats-Schedule", f"@at {later}"), ("Nats-Schedule-Target", "s.t"), ("Nats-Schedule-TTL", "5s")),
            10166,
        ),
    ]
    for subject, hdr, code in cases:
        resp = await pub(raw, subject, b"x", hdr)
        assert resp.get("error", {}).get("err_code") == code, (hdr, resp)
    state = (await api(raw, "STREAM.INFO.S"))["state"]
    assert state["messages"] == 0


async def test_at_fires_once_and_purges_itself(raw: RawNats) -> None:
    await create(raw)
    when = rfc3339(datetime.now(UTC) + timedelta(seconds=1))
    hdr = headers(("Nats-Schedule", f"@at {when}"), ("Nats-Schedule-Target", "s.out"), ("Custom", "kept"))
    ack = await pub(raw, "s.sched", b"payload", hdr)
    assert ack["seq"] == 1
    stored = (await api(raw, "STREAM.MSG.GET.S", {"seq": 1}))["message"]
    assert parse_hdrs(stored["hdrs"])[-1] == ("Nats-Rollup", "sub")

    async def fired() -> dict[str, Any] | None:
        got = await api(raw, "STREAM.MSG.GET.S", {"last_by_subj": "s.out"})
        return got.get("message")

    msg = await wait_for(fired)
    assert msg is not None and base64.b64decode(msg["data"]) == b"payload"
    assert parse_hdrs(msg["hdrs"]) == [("Custom", "kept"), ("Nats-Scheduler", "s.sched"), ("Nats-Schedule-Next", "purge")]

    async def purged() -> bool:
        info = await api(raw, "STREAM.INFO.S", {"subjects_filter": ">"})
        return info["state"].get("subjects") == {"s.out": 1}

    assert await wait_for(purged)


async def test_every_with_source_and_ttl(raw: RawNats) -> None:
    await create(raw, allow_msg_ttl=True)
    await pub(raw, "s.src", b"from-source", headers(("Src", "1")))
    hdr = headers(
        ("Nats-Schedule", "@every 1s"),
        ("Nats-Schedule-Target", "s.out"),
        ("Nats-Schedule-Source", "s.src"),
        ("Nats-Schedule-TTL", "30s"),
    )
    assert "error" not in await pub(raw, "s.sched", b"own", hdr)

    async def two_runs() -> list[dict[str, Any]] | None:
        info = await api(raw, "STREAM.INFO.S", {"subjects_filter": ">"})
        if info["state"].get("subjects", {}).get("s.out", 0) >= 2:
            return info
        return None

    assert await wait_for(two_runs)
    msg = (await api(raw, "STREAM.MSG.GET.S", {"last_by_subj": "s.out"}))["message"]
    assert base64.b64decode(msg["data"]) == b"from-source"
    hdrs = parse_hdrs(msg["hdrs"])
    assert [k for k, _ in hdrs] == ["Src", "Nats-Scheduler", "Nats-Schedule-Next", "Nats-TTL"]
    assert hdrs[1] == ("Nats-Scheduler", "s.sched") and hdrs[3] == ("Nats-TTL", "30s")
    nxt = datetime.fromisoformat(hdrs[2][1].replace("Z", "+00:00"))
    assert abs((nxt - datetime.now(UTC)).total_seconds()) < 5
    # Purging the schedule with Nats-Schedule-Next: purge stops it.
    resp = await pub(raw, "s.stop", b"", headers(("Nats-Schedule-Next", "purge"), ("Nats-Scheduler", "s.sched")))
    assert "error" not in resp, resp
    info = await api(raw, "STREAM.INFO.S", {"subjects_filter": "s.sched"})
    assert info["state"].get("subjects", {}) == {}


async def test_cron_in_a_time_zone(raw: RawNats) -> None:
    await create(raw)
    hdr = headers(
        ("Nats-Schedule", "* * * * * *"),
        ("Nats-Schedule-Target", "s.out"),
        ("Nats-Schedule-Time-Zone", "Asia/Kolkata"),
    )
    assert "error" not in await pub(raw, "s.cron", b"tick", hdr)

    async def fired() -> dict[str, Any] | None:
        return (await api(raw, "STREAM.MSG.GET.S", {"last_by_subj": "s.out"})).get("message")

    msg = await wait_for(fired)
    assert msg is not None
    nxt = dict(parse_hdrs(msg["hdrs"]))["Nats-Schedule-Next"]
    assert nxt.endswith("+05:30"), nxt


async def test_schedule_survives_kill_9(start_server: Callable[..., Target]) -> None:
    srv = start_server()
    client = await RawNats.connect(srv.url)
    await create(client)
    hdr = headers(("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "s.out"))
    assert "error" not in await pub(client, "s.sched", b"tick", hdr)
    await client.close()
    srv.kill()
    srv.start()
    client = await RawNats.connect(srv.url)
    try:

        async def fired_after_restart() -> bool:
            info = await api(client, "STREAM.INFO.S", {"subjects_filter": ">"})
            return info["state"].get("subjects", {}).get("s.out", 0) >= 2

        assert await wait_for(fired_after_restart)
    finally:
        await client.close()


async def test_plain_publishes_in_one_read_end_the_schedule_on_their_subject(raw: RawNats) -> None:
    """Publishes written together reach the stream as one run (the embedded server stores such a
    stretch in one pass): a plain message among them on a schedule's subject ends that schedule,
    as one published alone does (nats-server: a message without a schedule header replaces it)."""
    await create(raw)
    every = headers(("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "s.out"))
    assert "error" not in await pub(raw, "s.sched", b"", every)
    answers = await raw.request_pipelined(
        [("s.a", b"1", True, None), ("s.sched", b"plain", True, None), ("s.b", b"2", True, None)]
    )
    assert [a.json()["seq"] if a else None for a in answers] == [2, 3, 4]
    # A second schedule made after the first was ended: once it has fired, the first would have.
    later = headers(("Nats-Schedule", "@every 1s"), ("Nats-Schedule-Target", "s.out2"))
    assert "error" not in await pub(raw, "s.sched2", b"", later)

    async def fired() -> dict[str, Any] | None:
        info = await api(raw, "STREAM.INFO.S", {"subjects_filter": ">"})
        subjects = info["state"].get("subjects", {})
        return subjects if subjects.get("s.out2") else None

    subjects = await wait_for(fired)
    assert subjects is not None and "s.out" not in subjects, subjects


async def test_schedule_headers_are_read_as_getheader_finds_them(raw: RawNats) -> None:
    """The schedule headers of a block are read once (``schedule_headers``): as nats-server's
    ``getHeader`` finds each — the first line of exactly that name — so a header whose name only
    begins like one is not it, and a repeated one counts once, its first value."""
    await create(raw)
    when = rfc3339(datetime.now(UTC) + timedelta(seconds=1))
    hdr = headers(
        ("Nats-Schedule-Targets", "s.wrong"),
        ("Nats-Schedule", f"@at {when}"),
        ("Nats-Schedule-Target", "s.out"),
        ("Nats-Schedule-Target", "s.other"),
    )
    ack = await pub(raw, "s.sched", b"payload", hdr)
    assert ack.get("seq") == 1, ack
    # Without a target of the right name the schedule is refused (10190), whatever is like it.
    refused = await pub(raw, "s.sched2", b"", headers(("Nats-Schedule-Targets", "s.out"), ("Nats-Schedule", f"@at {when}")))
    assert refused.get("error", {}).get("err_code") == 10190, refused

    async def fired() -> dict[str, int] | None:
        info = await api(raw, "STREAM.INFO.S", {"subjects_filter": ">"})
        subjects: dict[str, int] = info["state"].get("subjects") or {}
        return subjects if "s.out" in subjects and "s.sched" not in subjects else None

    assert await wait_for(fired) == {"s.out": 1}
