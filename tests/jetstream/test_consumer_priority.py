"""⟨2.11+⟩ Priority groups (ADR-42) on both targets: config rules, pull request checks (400s),
``overflow`` thresholds, ``pinned_client`` pins (``Nats-Pin-Id``, 423s, expiry after
``priority_timeout``, ``CONSUMER.UNPIN`` and its errors, PINNED/UNPINNED advisories),
``prioritized`` ordering, and ConsumerInfo ``priority_groups``.

The pinned scenario is also run against both servers in one test and the normalised transcripts
compared (pin ids, times and inboxes vary)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from pathlib import Path
from typing import Any

from tests.jetstream.consumer_helpers import Msg, RawClient, wait_for
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

MS = 1_000_000
API = "$JS.API.CONSUMER."


def body(**cfg: Any) -> dict[str, Any]:
    cfg.setdefault("ack_policy", "explicit")
    return {"stream_name": "S", "config": cfg}


async def pull(client: RawClient, consumer: str, req: Any, n: int = 1, wait: float = 2.0) -> list[Msg]:
    """Send one pull request; collect up to ``n`` replies, stopping at a terminal status."""
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, req)
    await client.flush()
    out: list[Msg] = []
    try:
        for _ in range(n):
            m = await sub.next(wait)
            out.append(m)
            if m.status and m.status != "100":
                break
    finally:
        sub.unsubscribe()
    return out


async def test_priority_config_rules(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        cases = [
            (dict(priority_policy="overflow"), 10159),
            (dict(priority_policy="overflow", priority_groups=[""]), 10161),
            (dict(priority_policy="overflow", priority_groups=["bad.name"]), 10162),
            (dict(priority_policy="overflow", priority_groups=["A"], deliver_subject="d"), 10178),
            (dict(priority_groups=["A"]), 10196),
            (dict(priority_timeout=1000), 10197),
        ]
        for cfg, code in cases:
            resp = await client.api(API + "CREATE.S.C", body(**cfg))
            assert resp["error"]["err_code"] == code, (cfg, resp)
        made = await client.api(API + "CREATE.S.P", body(priority_policy="pinned_client", priority_groups=["A"]))
        assert made["config"]["priority_timeout"] == 120_000 * MS  # the default pin TTL
        assert made["priority_groups"] == [{"group": "A", "pinned_ts": "0001-01-01T00:00:00Z"}]
        plain = await client.api(API + "CREATE.S.N", body())
        assert "priority_groups" not in plain and "priority_policy" not in plain["config"]
    finally:
        await client.close()


async def test_pull_request_checks_and_overflow(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 4)
        await client.add_consumer("S", "O", priority_policy="overflow", priority_groups=["A"])
        await client.add_consumer("S", "P", priority_policy="pinned_client", priority_groups=["A"])
        refusals = [
            ("O", {"batch": 1}, "Bad Request - Priority Group missing"),
            ("O", {"batch": 1, "group": "B"}, "Bad Request - Invalid Priority Group"),
            ("O", {"batch": 1, "group": "A", "id": "x"}, "Bad Request - Not a Pinned Client Priority consumer"),
            ("O", {"batch": 1, "group": "A", "priority": 10}, "Bad Request - Priority must be between 0 and 9"),
            ("P", {"batch": 1, "group": "A", "min_pending": 2}, "Bad Request - Not a Overflow Priority consumer"),
        ]
        for consumer, req, text in refusals:
            (m,) = await pull(client, consumer, req)
            assert (m.status, m.description) == ("400", text), req
        # Below its threshold a request is passed over, until it expires.
        (m,) = await pull(client, "O", {"batch": 1, "group": "A", "min_pending": 10, "expires": 500 * MS})
        assert (m.status, m.header("Nats-Pending-Messages")) == ("408", "1")
        (m,) = await pull(client, "O", {"batch": 1, "group": "A", "min_pending": 2, "expires": 500 * MS})
        assert m.stream_seq == 1
        (m,) = await pull(client, "O", {"batch": 1, "group": "A", "min_ack_pending": 1, "expires": 500 * MS})
        assert m.stream_seq == 2  # one is unacknowledged
        # A non-JSON request carries no group: nats-server takes it as it is.
        (m,) = await pull(client, "O", b"")
        assert m.stream_seq == 3
    finally:
        await client.close()


def normalise(line: str) -> str:
    line = re.sub(r'"(created|ts|timestamp|pinned_ts)":"2[^"]*"', r'"\1":"T"', line)
    line = re.sub(r'"(id|pinned_id|pinned_client_id)":"[^"]*"', r'"\1":"ID"', line)
    line = re.sub(r"Nats-Pin-Id: \w+", "Nats-Pin-Id: ID", line)
    line = re.sub(r"(\$JS\.ACK\.[^.]+\.[^.]+\.\d+\.\d+\.\d+)\.\d+\.", r"\1.TS.", line)
    line = re.sub(r',"metadata":\{[^}]*\}', "", line)
    return re.sub(r"_RAWINBOX\.\d+\.", "_RAWINBOX.X.", line)


async def pinned_transcript(url: str) -> list[str]:
    out: list[str] = []
    client = await RawClient.connect(url)
    try:
        pinned = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.PINNED.>")
        unpinned = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.>")
        await client.add_stream("S", ["s.>"])
        await client.publish_many("s.a", 4)
        made = await client.api(
            API + "CREATE.S.P",
            body(priority_policy="pinned_client", priority_groups=["A"], priority_timeout=1500 * MS),
        )
        out.append(normalise(json.dumps(made["config"], separators=(",", ":"))))

        def record(step: str, msgs: list[Msg]) -> None:
            for m in msgs:
                out.append(normalise(f"{step}: {m.reply} {m.hdr!r} {m.data!r}"))

        first = await pull(client, "P", {"batch": 1, "group": "A", "expires": 2000 * MS})
        record("first", first)
        pin = first[0].header("Nats-Pin-Id")
        assert pin and len(pin) == 22
        record("wrong id", await pull(client, "P", {"batch": 1, "group": "A", "id": "wrong", "expires": 500 * MS}))
        record("no id", await pull(client, "P", {"batch": 1, "group": "A", "expires": 500 * MS}))
        record("pin", await pull(client, "P", {"batch": 1, "group": "A", "id": pin, "expires": 500 * MS}))
        info = await client.consumer_info("S", "P")
        assert info["priority_groups"][0]["pinned_client_id"] == pin
        out.append(normalise(json.dumps(info["priority_groups"], separators=(",", ":"))))
        for req in (b"", b"{}", b'{"group":"B"}', b'{"group":"a.b"}'):
            out.append(normalise((await client.request(API + "UNPIN.S.P", req)).data.decode()))
        for subject in ("UNPIN.X.P", "UNPIN.S.X", "UNPIN.S.P"):
            out.append(normalise((await client.request(API + subject, b'{"group":"A"}')).data.decode()))
        info = await client.consumer_info("S", "P")
        out.append(normalise(json.dumps(info["priority_groups"], separators=(",", ":"))))
        record("old pin", await pull(client, "P", {"batch": 1, "group": "A", "id": pin, "expires": 500 * MS}))
        repinned = await pull(client, "P", {"batch": 1, "group": "A", "expires": 500 * MS})
        record("new pin", repinned)
        assert repinned[0].header("Nats-Pin-Id") not in (None, pin)
        # Without requests for priority_timeout the pin lapses.
        for _ in range(40):
            info = await client.consumer_info("S", "P")
            if "pinned_client_id" not in info["priority_groups"][0]:
                break
            await asyncio.sleep(0.1)
        out.append(normalise(json.dumps(info["priority_groups"], separators=(",", ":"))))

        # The two pins, the admin unpin and the lapse: nats-server sends each advisory from its
        # send queue after the change it reports, so wait for them (fewer: the transcripts differ).
        async def advised() -> bool:
            return pinned.queue.qsize() + unpinned.queue.qsize() >= 4

        with contextlib.suppress(AssertionError):
            await wait_for(advised)
        events = [json.loads(m.data) for m in pinned.drain() + unpinned.drain()]
        for e in events:
            out.append(normalise(json.dumps(e, separators=(",", ":"))))
    finally:
        await client.close()
    return out


async def test_pinned_client_same_as_nats_server(tmp_path: Path) -> None:
    results = {}
    for kind in (NATS_SERVER, EMBEDDED):
        target = make_target(kind, tmp_path / kind)
        try:
            results[kind] = await pinned_transcript(target.url)
        finally:
            target.stop()
    ours, theirs = results[EMBEDDED], results[NATS_SERVER]
    assert any("423 Nats-Pin-Id mismatch" in line for line in theirs)
    assert any("423 Nats-Wrong-Pin-Id" in line for line in theirs)
    assert any('"reason":"timeout"' in line for line in theirs)
    assert ours == theirs


async def test_prioritized_serves_lower_priority_first(server: Target) -> None:
    client = await RawClient.connect(server.url)
    try:
        await client.add_stream("S", ["s.>"])
        await client.add_consumer("S", "Q", priority_policy="prioritized", priority_groups=["A"])
        subs = {}
        for prio in (5, 1, 3):
            inbox = client.new_inbox()
            subs[prio] = client.subscribe(inbox)
            client.pull("S", "Q", inbox, {"batch": 2, "group": "A", "priority": prio, "expires": 5000 * MS})
        await client.flush()

        async def all_waiting() -> bool:
            # nats-server queues pull requests for the consumer's own goroutine: an info asked right
            # after the flush can come before they are counted (seen under load in CI).
            return (await client.consumer_info("S", "Q"))["num_waiting"] == 3

        await wait_for(all_waiting)
        await client.publish_many("s.a", 4)
        got = {p: [m.stream_seq for m in await s.collect(2)] for p, s in subs.items() if p != 5}
        assert got == {1: [1, 2], 3: [3, 4]}
        await subs[5].expect_none(0.3)
    finally:
        await client.close()
