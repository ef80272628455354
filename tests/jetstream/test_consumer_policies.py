"""Deliver and replay policies on both targets: where each policy starts, what it delivers, how
``delivered``/``num_pending`` and the ack subject's pending count evolve, filters, headers_only,
``replay_policy: original`` and how purges move consumers."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import Msg, RawClient, headers, told
from tests.support.targets import Target

MS = 1_000_000


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


async def drain(client: RawClient, consumer: str, batch: int = 20) -> list[Msg]:
    """Everything the consumer hands out now (a no_wait pull), without the final status."""
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", consumer, inbox, {"batch": batch, "no_wait": True})
    out = []
    while True:
        msg = await sub.next()
        if msg.status:
            sub.unsubscribe()
            return out
        out.append(msg)
        if len(out) == batch:  # a filled batch ends without a status
            sub.unsubscribe()
            return out


async def test_deliver_policies(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    for i in range(9):  # s.a s.b s.c s.a s.b ...
        await client.publish_js("s." + "abc"[i % 3], f"m{i + 1}".encode())
    t5 = (await client.api("$JS.API.STREAM.MSG.GET.S", {"seq": 5}))["message"]["time"]
    specs: dict[str, dict[str, Any]] = {
        "ALL": {},
        "LAST": {"deliver_policy": "last"},
        "NEW": {"deliver_policy": "new"},
        "SEQ": {"deliver_policy": "by_start_sequence", "opt_start_seq": 4},
        "SEQ99": {"deliver_policy": "by_start_sequence", "opt_start_seq": 99},
        "TIME": {"deliver_policy": "by_start_time", "opt_start_time": t5},
        "LPS": {"deliver_policy": "last_per_subject", "filter_subject": "s.*"},
        "LASTB": {"deliver_policy": "last", "filter_subject": "s.b"},
        "FB": {"filter_subject": "s.b"},
    }
    expected_first = {
        "ALL": ([1, 2, 3, 4, 5, 6, 7, 8, 9], 9),
        "LAST": ([9], 1),
        "NEW": ([], 0),
        "SEQ": ([4, 5, 6, 7, 8, 9], 6),
        "SEQ99": ([], 0),
        "TIME": ([5, 6, 7, 8, 9], 5),
        "LPS": ([7, 8, 9], 3),
        "LASTB": ([8], 1),
        "FB": ([2, 5, 8], 3),
    }
    for name, spec in specs.items():
        created = await client.add_consumer("S", name, **spec)
        seqs, pending = expected_first[name]
        assert created["num_pending"] == pending, name
        msgs = await drain(client, name)
        assert [m.stream_seq for m in msgs] == seqs, name
        assert [m.num_pending for m in msgs] == list(range(len(seqs) - 1, -1, -1)), name
    await client.publish_js("s.b", b"n1")  # seq 10
    await client.publish_js("s.c", b"n2")  # seq 11
    for name in specs:
        # ⟨2.11+⟩ an explicit opt_start_seq beyond the stream is kept: SEQ99 waits for seq 99.
        want = 0 if name == "SEQ99" else 1 if name in ("FB", "LASTB") else 2
        info = await told(client, "S", name, want)
        assert info["num_pending"] == want, name
        if name == "SEQ99":
            assert info["delivered"]["stream_seq"] == 98, name
            continue
        msgs = await drain(client, name)
        assert [m.stream_seq for m in msgs] == ([10] if want == 1 else [10, 11]), name
        info = await client.consumer_info("S", name)
        # (the last message delivered: 10 for the s.b-filtered ones)
        assert info["delivered"]["stream_seq"] == (10 if want == 1 else 11), name
        assert info["num_pending"] == 0, name


async def test_starting_points_on_empty_and_purged_streams(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    for name, spec in {
        "ALL": {},
        "LAST": {"deliver_policy": "last"},
        "NEW": {"deliver_policy": "new"},
        "LPS": {"deliver_policy": "last_per_subject", "filter_subject": "s.>"},
        "SEQ": {"deliver_policy": "by_start_sequence", "opt_start_seq": 10},
    }.items():
        info = await client.add_consumer("S", name, **spec)
        assert info["delivered"]["stream_seq"] == (9 if name == "SEQ" else 0), name
    await client.publish_many("s.x", 2)
    for name in ("ALL", "LAST", "NEW", "LPS"):
        await told(client, "S", name, 2)
        assert [m.data for m in await drain(client, name)] == [b"m0", b"m1"], name
    # ⟨2.11+⟩ SEQ keeps its opt_start_seq 10 (it was moved back to 1 on an empty stream before).
    assert await drain(client, "SEQ") == []
    await client.api("$JS.API.STREAM.PURGE.S")
    after = await client.add_consumer("S", "AFTER")
    assert after["delivered"]["stream_seq"] == 2 and after["num_pending"] == 0
    await client.publish_many("s.y", 2)
    await told(client, "S", "AFTER", 2)
    assert [m.stream_seq for m in await drain(client, "AFTER")] == [3, 4]

    # A purge moves consumers past what was removed: pending acks below it are dropped.
    await client.add_consumer("S", "P")
    await client.publish_many("s.z", 3)
    assert len(await drain(client, "P", batch=2)) == 2
    await client.api("$JS.API.STREAM.PURGE.S")
    info = await client.consumer_info("S", "P")
    assert info["num_ack_pending"] == 0 and info["num_pending"] == 0
    assert info["ack_floor"]["stream_seq"] == 7 and info["delivered"]["stream_seq"] == 7
    await client.publish_js("s.z", b"fresh")
    await told(client, "S", "P", 1)
    assert [m.data for m in await drain(client, "P")] == [b"fresh"]


async def test_headers_only(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_js("s.a", b"payload", hdr=headers(("X-Key", "v")))
    await client.publish_js("s.a", b"12345")
    await client.add_consumer("S", "H", headers_only=True, ack_policy="none")
    first, second = await drain(client, "H")
    assert first.data == b"" and first.hdr == b"NATS/1.0\r\nX-Key: v\r\nNats-Msg-Size: 7\r\n\r\n"
    assert second.data == b"" and second.hdr == b"NATS/1.0\r\nNats-Msg-Size: 5\r\n\r\n"


async def test_replay_original(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_js("s.a", b"0")
    await asyncio.sleep(0.4)  # the gap the replay must reproduce (not a wait for a condition)
    await client.publish_js("s.a", b"1")
    sub = client.subscribe("d.r")
    await client.flush()
    await client.add_consumer("S", "R", deliver_subject="d.r", replay_policy="original", ack_policy="none")
    first = await sub.next()
    start = time.monotonic()
    second = await sub.next()
    assert (first.data, second.data) == (b"0", b"1")
    assert 0.3 <= time.monotonic() - start < 1.0
    # Once caught up, new messages go out immediately.
    await client.publish_js("s.a", b"2")
    start = time.monotonic()
    assert (await sub.next()).data == b"2"
    assert time.monotonic() - start < 0.3


async def test_filtered_consumer_info_tracks_stream(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    await client.add_consumer("S", "F", filter_subject="s.a")
    await client.publish_js("s.a", b"1")
    await client.publish_js("s.b", b"2")
    await told(client, "S", "F", 1)
    msgs = await drain(client, "F")
    assert [m.stream_seq for m in msgs] == [1]
    info = await client.consumer_info("S", "F")
    # ⟨2.11+⟩ the delivered stream sequence is the last delivered message (2.9 reported the end
    # of the stream: everything the consumer had looked at).
    assert info["delivered"] == {
        "consumer_seq": 1,
        "stream_seq": 1,
        "last_active": info["delivered"]["last_active"],
    }
    raw = json.dumps(info)
    assert '"num_pending": 0' in raw
