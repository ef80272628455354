"""⟨2.11+⟩ Consumer pause and resume on both targets: ``CONSUMER.PAUSE`` replies and errors, the
PAUSE advisories, no deliveries while paused (heartbeats go on), ConsumerInfo ``paused`` /
``pause_remaining``, the automatic resume at ``pause_until``, and the pause surviving a restart
and a ``kill -9``."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import Target

MS = 1_000_000
PAUSE = "$JS.API.CONSUMER.PAUSE."
ADVISORY = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE."


def rfc3339(dt: datetime) -> str:
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def in_seconds(s: float) -> str:
    return rfc3339(datetime.now(UTC) + timedelta(seconds=s))


def without_timing(doc: dict[str, Any]) -> dict[str, Any]:
    """The reply with the clock-dependent ``pause_remaining`` checked and dropped."""
    out = dict(doc)
    remaining = out.pop("pause_remaining", None)
    if out.get("paused"):
        assert isinstance(remaining, int) and remaining > 0
    else:
        assert remaining is None
    return out


async def test_pause_replies_errors_and_advisories(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        advisories = client.subscribe(ADVISORY + ">")
        await client.add_stream("S", ["s.>"])
        # Errors: missing stream, missing consumer, bad JSON (lookups come after decoding).
        missing_stream = await client.api(PAUSE + "X.C", {"pause_until": in_seconds(60)})
        assert missing_stream["error"]["err_code"] == 10059
        assert (missing_stream["paused"], missing_stream["pause_until"]) == (False, "0001-01-01T00:00:00Z")
        assert (await client.api(PAUSE + "S.C", {}))["error"]["err_code"] == 10014
        await client.add_consumer("S", "C")
        assert (await client.api(PAUSE + "S.C", b"{bad"))["error"]["err_code"] == 10025
        assert (await client.api(PAUSE + "S.C", b'{"pause_until": 5}'))["error"]["err_code"] == 10025

        paused = await client.api(PAUSE + "S.C", b'{"pause_until":"2090-01-01T02:00:00.5+02:00"}')
        assert without_timing(paused) == {
            "type": "io.nats.jetstream.api.v1.consumer_pause_response",
            "paused": True,
            "pause_until": "2090-01-01T00:00:00.5Z",  # kept in UTC
        }
        info = await client.consumer_info("S", "C")
        assert info["paused"] is True and info["pause_remaining"] > 0
        assert info["config"]["pause_until"] == "2090-01-01T00:00:00.5Z"

        # A plain update keeps the pause (only CONSUMER.PAUSE changes it).
        updated = await client.add_consumer("S", "C", description="d")
        assert updated["config"]["pause_until"] == "2090-01-01T00:00:00.5Z" and updated["paused"]

        resumed = await client.api(PAUSE + "S.C", b"")
        assert resumed == {
            "type": "io.nats.jetstream.api.v1.consumer_pause_response",
            "paused": False,
            "pause_until": "0001-01-01T00:00:00Z",
        }
        past = await client.api(PAUSE + "S.C", {"pause_until": "2020-01-01T00:00:00Z"})
        assert without_timing(past) == {
            "type": "io.nats.jetstream.api.v1.consumer_pause_response",
            "paused": False,
            "pause_until": "2020-01-01T00:00:00Z",
        }
        info = await client.consumer_info("S", "C")
        assert "paused" not in info and "pause_remaining" not in info
        # A body that is not a JSON object resumes too.
        assert (await client.api(PAUSE + "S.C", b"null"))["paused"] is False

        created = await client.add_consumer("S", "D", pause_until="2090-01-01T00:00:00Z")
        assert created["paused"] is True and created["config"]["pause_until"] == "2090-01-01T00:00:00Z"
        events = [(m.subject, json.loads(m.data)) for m in await advisories.collect(6, timeout=10)]
        for _, event in events:
            assert event.pop("type") == "io.nats.jetstream.advisory.v1.consumer_pause"
            assert event.pop("id") and event.pop("timestamp")
        assert events == [
            (ADVISORY + "S.C", {"stream": "S", "consumer": "C", "paused": True, "pause_until": "2090-01-01T00:00:00.5Z"}),
            # the update re-advised the pause
            (ADVISORY + "S.C", {"stream": "S", "consumer": "C", "paused": True, "pause_until": "2090-01-01T00:00:00.5Z"}),
            (ADVISORY + "S.C", {"stream": "S", "consumer": "C", "paused": False, "pause_until": "0001-01-01T00:00:00Z"}),
            (ADVISORY + "S.C", {"stream": "S", "consumer": "C", "paused": False, "pause_until": "2020-01-01T00:00:00Z"}),
            (ADVISORY + "S.C", {"stream": "S", "consumer": "C", "paused": False, "pause_until": "0001-01-01T00:00:00Z"}),
            (ADVISORY + "S.D", {"stream": "S", "consumer": "D", "paused": True, "pause_until": "2090-01-01T00:00:00Z"}),
        ]
    finally:
        await client.close()


async def test_paused_consumers_deliver_nothing_until_resumed(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        advisories = client.subscribe(ADVISORY + ">")
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 3)
        await client.add_consumer("S", "PULL")
        await client.add_consumer("S", "PUSH", deliver_subject="d.push", idle_heartbeat=200 * MS)
        push = client.subscribe("d.push")
        await client.flush()
        await push.collect(3)
        # Pause both for ~3 s; new messages wait.
        until = in_seconds(3.0)
        for name in ("PULL", "PUSH"):
            assert (await client.api(PAUSE + f"S.{name}", {"pause_until": until}))["paused"] is True
        start = time.monotonic()
        await client.publish_many("s.a", 2, prefix="late")
        inbox = client.new_inbox()
        pulled = client.subscribe(inbox)
        client.pull("S", "PULL", inbox, {"batch": 5, "expires": 8_000 * MS, "idle_heartbeat": 250 * MS})
        await client.flush()
        # While paused: pull heartbeats and push heartbeats, no messages.
        first = await pulled.next(3)
        assert first.status == "100" and first.description == "Idle Heartbeat"
        beat = await push.next(3)
        assert beat.status == "100" and beat.description == "Idle Heartbeat"
        assert time.monotonic() - start < 2.9
        # At pause_until they resume on their own and say so.
        msgs = []
        while len(msgs) < 5:
            m = await pulled.next(8)
            if not m.status:
                msgs.append(m)
        assert time.monotonic() - start >= 2.5
        assert [m.stream_seq for m in msgs] == [1, 2, 3, 4, 5]
        got: list[Msg] = []

        async def push_resumed() -> bool:
            got.extend(m for m in push.drain() if not m.status)
            return len(got) >= 2

        await wait_for(push_resumed, timeout=8)
        resumed = [json.loads(m.data) for m in await advisories.collect(4, timeout=10)]
        assert [(a["consumer"], a["paused"]) for a in resumed][-2:] in (
            [("PULL", False), ("PUSH", False)],
            [("PUSH", False), ("PULL", False)],
        )
        info = await client.consumer_info("S", "PULL")
        assert "paused" not in info
    finally:
        await client.close()


async def test_pause_survives_restart_and_kill(server: Target) -> None:
    client = await RawClient.connect(server.url)
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 2)
    await client.add_consumer("S", "D", durable_name="D")
    assert (await client.api(PAUSE + "S.D", {"pause_until": "2090-01-01T00:00:00Z"}))["paused"]
    await client.close()

    for stop in (server.restart, server.kill):
        if stop is server.kill:
            server.kill()
            server.start()
        else:
            server.restart()
        client = await RawClient.connect(server.url)
        try:
            info = await client.consumer_info("S", "D")
            assert info["paused"] is True and info["config"]["pause_until"] == "2090-01-01T00:00:00Z"
            inbox = client.new_inbox()
            sub = client.subscribe(inbox)
            client.pull("S", "D", inbox, {"batch": 1, "expires": 500 * MS})
            await client.flush()
            assert (await sub.next(3)).status == "408"  # still paused: nothing delivered
        finally:
            await client.close()

    client = await RawClient.connect(server.url)
    try:
        assert (await client.api(PAUSE + "S.D", b""))["paused"] is False
        inbox = client.new_inbox()
        sub = client.subscribe(inbox)
        client.pull("S", "D", inbox, {"batch": 2, "expires": 3_000 * MS})
        assert [m.stream_seq for m in await sub.collect(2)] == [1, 2]
    finally:
        await client.close()
