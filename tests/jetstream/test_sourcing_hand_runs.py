"""A mirror's or source's feed is handed its consumer's runs of new messages in one call, with their numbers
(``DeliveryPass.hand_run`` → ``_Feed._take_run``, switch ``delivery_pass.HAND_RUNS``), where the pass formatted
an ack reply for each message and the feed parsed it back (``parse_ack_reply``); counted on an embedded server
in this process:

- on = off: a mirror and sources (of a limits origin, of a work-queue origin whose durable is acked by flow
  control: every message looked at by ``PushDelivery.after_delivery``, and of a filtered, transformed
  source) catching up messages with and without headers, large ones that cut runs at the flow-control
  window, deleted ones, then live publishes one at a time: the same copies, the same source infos, the
  same left in the work-queue origin;
- no ack reply of a new message is parsed with it on (one a message off);
- a message into one of n origins, one each written at once, costs the same server steps at 20 and 200
  origins, and reads no index of its origin (its consumer at the end: ``indexed.LAST_STORED``).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import nats
import pytest
from tests.jetstream.scale_steps import count_calls, embedded, pub_frame, publish_in_one_write
from tests.support.steps import counting

from pyjetstream.server.jetstream import delivery_pass, sourcing
from pyjetstream.server.jetstream.store.seqindex import SeqIndex
from pyjetstream.server.server import Server

TIMEOUT = 30.0
STAMP = re.compile(rb"(Nats-Stream-Source: \S+ )\d+( [^\r]*?)( \S+)?\r\n")


async def _request(nc: Any, subject: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    reply = await nc.request(subject, json.dumps(body or {}).encode(), timeout=TIMEOUT)
    answer: dict[str, Any] = json.loads(reply.data)
    assert "error" not in answer, answer
    return answer


async def _wait(server: Server, want: dict[str, int]) -> None:
    engine = server.jetstream_engines()[0]
    for _ in range(1200):
        if all(engine.streams[name].store.fast_state().msgs >= n for name, n in want.items()):
            return
        await asyncio.sleep(0.05)
    raise AssertionError({name: engine.streams[name].store.fast_state().msgs for name in want})


def _held(server: Server, name: str) -> list[Any]:
    store = server.jetstream_engines()[0].streams[name].store
    state = store.fast_state()
    out = []
    for seq in range(state.first_seq, state.last_seq + 1):
        try:
            m = store.load_msg(seq)
        except Exception:
            continue
        out.append((m.seq if name == "MIR" else 0, m.subject, STAMP.sub(rb"\1\2\r\n", m.hdr or b""), m.data))
    return out


def _record_taken(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """What each feed takes from its held deliveries (`_Feed._flush`, `SourceFeed.take_plain`): each
    delivery's message and numbers but its consumer's name (an ephemeral's has a random suffix)."""
    taken: dict[str, list[Any]] = {}
    for owner, name in ((sourcing._Feed, "_flush"), (sourcing.SourceFeed, "take_plain")):
        real = getattr(owner, name)

        def wrapper(feed: Any, *args: Any, __real: Any = real) -> Any:
            for subject, hdr, payload, d in feed._pending:
                taken.setdefault(f"{feed.kind} {feed.iname}", []).append((subject, hdr, payload, *d[1:]))
            return __real(feed, *args)

        monkeypatch.setattr(owner, name, wrapper)
    return taken


async def _world(monkeypatch: pytest.MonkeyPatch, hand: bool) -> list[Any]:
    monkeypatch.setattr(delivery_pass, "HAND_RUNS", hand)
    taken = _record_taken(monkeypatch)
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            await _request(nc, "$JS.API.STREAM.CREATE.L", {"name": "L", "subjects": ["l.>"], "storage": "file"})
            await _request(
                nc, "$JS.API.STREAM.CREATE.W", {"name": "W", "subjects": ["w.>"], "retention": "workqueue"}
            )
            for i in range(400):
                hdrs = {"K": str(i)} if i % 3 == 0 else None
                payload = b"%d." % i + (b"x" * 30_000 if i % 10 == 4 else b"")
                await nc.publish(f"l.{i % 4}", payload, headers=hdrs)
                if i % 2:
                    await nc.publish(f"w.{i % 3}", payload, headers=hdrs)
            await nc.flush()
            for seq in range(50, 90, 7):
                await _request(nc, "$JS.API.STREAM.MSG.DELETE.L", {"seq": seq})
            await _request(nc, "$JS.API.STREAM.CREATE.MIR", {"name": "MIR", "mirror": {"name": "L"}})
            sources = [
                {"name": "L"},
                {"name": "W"},
                {"name": "L", "subject_transforms": [{"src": "l.1", "dest": "t.1"}]},
            ]
            await _request(nc, "$JS.API.STREAM.CREATE.AGG", {"name": "AGG", "sources": sources, "storage": "file"})
            held = 400 - 6
            await _wait(server, {"MIR": held, "AGG": held + 200 + 100 - 2})
            for i in range(60):  # (live: one message a pass)
                await nc.publish(f"l.{i % 4}", b"live %d" % i, headers={"K": "v"} if i % 2 else None)
                await nc.publish(f"w.{i % 3}", b"live %d" % i)
                await nc.flush()
            await _wait(server, {"MIR": held + 60, "AGG": held + 200 + 100 - 2 + 60 + 60 + 15})
            await asyncio.sleep(0.3)
            info = await _request(nc, "$JS.API.STREAM.INFO.AGG")
            origins = {s["name"] + (s.get("subject_transforms") or [{}])[0].get("dest", ""): (s["lag"], s.get("seq")) for s in info["sources"]}
            wq = server.jetstream_engines()[0].streams["W"].store.fast_state().msgs
            engine = server.jetstream_engines()[0]
            mirror, origin = engine.streams["MIR"].store, engine.streams["L"].store
            stamps = [mirror.load_msg(m[0]).ts == origin.load_msg(m[0]).ts for m in _held(server, "MIR")]
            assert all(stamps)  # (a mirror's copy keeps its origin's timestamp)
            # (the deliveries' timestamps are each run's own: compared with the origin's above, not here)
            delivered = {k: [t[:-2] + t[-1:] for t in v] for k, v in taken.items()}
            return [_held(server, "MIR"), sorted(_held(server, "AGG")), origins, wq, delivered]
        finally:
            await nc.close()


async def test_handed_runs_copy_what_one_by_one_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    with count_calls(monkeypatch, sourcing, "parse_ack_reply") as parsed:
        on = await _world(monkeypatch, True)
    parsed_on = parsed["parse_ack_reply"]
    with count_calls(monkeypatch, sourcing, "parse_ack_reply") as parsed:
        off = await _world(monkeypatch, False)
    assert on == off
    assert parsed_on == 0, parsed_on  # (on: no ack reply parsed; heartbeats and flow control are not)
    assert parsed["parse_ack_reply"] >= 3 * 394, parsed  # (off: one a message a feed took)


async def _steps(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[float, int]:
    """The server's Python steps per message and its origins' index walks while one message into each of
    ``n`` origins, written at once, is sourced by ``AGG`` (waited for in the store, not by STREAM.INFO)."""
    async with embedded() as server:
        nc = await nats.connect(f"nats://127.0.0.1:{server.port}")
        try:
            for i in range(n):
                await _request(nc, f"$JS.API.STREAM.CREATE.O{i}", {"name": f"O{i}", "subjects": [f"o.{i}.>"], "storage": "file"})
                await nc.publish(f"o.{i}.first", b"1")
            agg = {"name": "AGG", "sources": [{"name": f"O{i}"} for i in range(n)], "storage": "file"}
            await _request(nc, "$JS.API.STREAM.CREATE.AGG", agg)
            await _wait(server, {"AGG": n})
            await asyncio.sleep(0.2)
            frames = [pub_frame(f"o.{i}.x", b"x") for i in range(n)]
            with count_calls(monkeypatch, SeqIndex, "next_slots") as walks:
                with counting(where=lambda frame: "/pyjetstream/server/" in frame.f_code.co_filename) as steps:
                    await publish_in_one_write(server, frames)
                    await _wait(server, {"AGG": 2 * n})
            return steps.count / n, walks["next_slots"]
        finally:
            await nc.close()


async def test_the_steps_of_a_sourced_message_do_not_grow_with_the_origins(monkeypatch: pytest.MonkeyPatch) -> None:
    small, walks_small = await _steps(20, monkeypatch)
    large, walks_large = await _steps(200, monkeypatch)
    assert large <= 1.15 * small, (small, large)
    assert walks_small <= 2 and walks_large <= 2, (walks_small, walks_large)  # (each origin's read: its last stored)
