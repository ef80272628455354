"""Batched and multi-last direct get (ADR-31), ours vs nats-server 2.15.1, byte for byte.

Every reply of a request is compared (header blocks with ``Nats-Time-Stamp`` normalised), up to
and including the ``204 EOB`` or the error status that ends it.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.differential import (
    Step,
    direct,
    direct_batch,
    first_difference,
    kill_restart,
    req,
    restart,
    run_case,
)
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import Target

target_pair = pair_fixtures.target_pair


def pub(subject: str, data: str, *hdrs: tuple[str, str], reply: bool = True) -> Step:
    """A publish whose PubAck is not compared (PubAck bytes are the publish tests' subject)."""
    return Step("pub", subject, data.encode(), tuple(hdrs), reply, mask=("puback",))


def seeded(storage: str = "file") -> list:
    """Stream S: 10 messages over s.a, s.b, s.c.d (seq 5 with a header), seq 3 deleted."""
    steps = [
        req(
            "STREAM.CREATE.S",
            {"name": "S", "subjects": ["s.>"], "allow_direct": True, "storage": storage},
            mask=("config",),  # the config's 2.15 fields are tested elsewhere
        )
    ]
    for i in range(10):
        subject = ("s.a", "s.b", "s.c.d")[i % 3]
        hdrs = [("X-Hdr", "v")] if i == 4 else []
        steps.append(pub(subject, f"m{i}", *hdrs))
    steps.append(req("STREAM.MSG.DELETE.S", {"seq": 3}))
    return steps


BATCH_BODIES = [
    {"seq": 2, "batch": 3},
    {"seq": 1, "batch": 100},
    {"seq": 2, "batch": 4, "next_by_subj": "s.a"},
    {"batch": 100, "next_by_subj": "s.*"},
    {"seq": 4, "batch": 2, "max_bytes": 5},
    {"seq": 1, "batch": 5, "max_bytes": 12},
    {"seq": 9, "batch": 5},
    {"seq": 3, "batch": 2},
    {"seq": 50, "batch": 2},
    {"seq": 1, "batch": -1},
    {"seq": 4, "batch": 3, "no_hdr": True},
    {"start_time": "2000-01-01T00:00:00Z", "batch": 2},
    {"start_time": "2100-01-01T00:00:00Z", "batch": 2},
    {"multi_last": ["s.a", "s.b"]},
    {"multi_last": ["s.>"]},
    {"multi_last": ["s.>"], "up_to_seq": 6},
    {"multi_last": ["s.>"], "up_to_seq": 6, "batch": 1},
    {"multi_last": ["s.>"], "seq": 8},
    {"multi_last": ["s.>"], "max_bytes": 3},
    {"multi_last": ["s.*", "s.a", "s..x", "*"]},
    {"multi_last": ["x.>"]},
    {"multi_last": ["s.c.d"], "up_to_seq": 2},
    {"multi_last": ["s.>"], "up_to_time": "2000-01-01T00:00:00Z"},
    {"multi_last": ["s.>"], "up_to_time": "2100-01-01T00:00:00Z"},
]

ERROR_BODIES = [
    {"batch": 3},
    {"batch": 2, "no_hdr": True},
    {"multi_last": []},
    {"last_by_subj": "s.a", "batch": 2},
    {"seq": 1, "start_time": "2000-01-01T00:00:00Z"},
    {"start_time": "2000-01-01T00:00:00Z", "last_by_subj": "s.a"},
    {"multi_last": ["s.a"], "next_by_subj": "s.a"},
    {"multi_last": ["s.a"], "last_by_subj": "s.a"},
    {"multi_last": ["s.a"], "up_to_seq": 3, "up_to_time": "2000-01-01T00:00:00Z"},
    {"seq": -1, "batch": 2},
    {"multi_last": ["s.a"], "up_to_seq": -1},
    {"batch": 1.5, "seq": 1},
    {"seq": "x"},
    b"null",
    b"[]",
    b"  ",
    b"{",
]

CASES: dict[str, list] = {
    "batch-and-multi-last-file": seeded() + [direct_batch("S", body) for body in BATCH_BODIES],
    "batch-and-multi-last-memory": seeded("memory") + [direct_batch("S", body) for body in BATCH_BODIES],
    "errors": seeded() + [direct_batch("S", body) for body in ERROR_BODIES],
    "single-message-forms": [
        *seeded(),
        direct("S", {"start_time": "2000-01-01T00:00:00Z"}),
        direct("S", {"seq": 2, "no_hdr": True}),
        direct("S", {"seq": 1, "max_bytes": -1}),
        direct("S", {"seq": 1, "bogus": 1}),
        direct("S.s.a", {"no_hdr": True}),
        direct("S.s.a", {"max_bytes": 1}),
        direct("S.s.a", b"null"),
        direct("S.s.*"),
        direct("S.s.zz"),
        direct("S.s.a", {"batch": 2}),
        direct("S.s.a", {"seq": 1}),
        direct("S.s.a", {"multi_last": ["s.a"]}),
        direct("S.s.a", {"up_to_seq": 1}),
        direct("S.s.a", b"{"),
    ],
    "empty-stream": [
        req("STREAM.CREATE.E", {"name": "E", "subjects": ["e.>"], "allow_direct": True}, mask=("config",)),
        direct_batch("E", {"seq": 1, "batch": 2}),
        direct_batch("E", {"multi_last": ["e.>"]}),
        direct_batch("E", {"start_time": "2000-01-01T00:00:00Z", "batch": 2}),
        direct_batch("E", {"next_by_subj": "e.>", "batch": 3}),
        direct_batch("E", {"multi_last": ["e.>"], "up_to_time": "2100-01-01T00:00:00Z"}),
    ],
    "after-restart": [
        *seeded(),
        restart(),
        direct_batch("S", {"seq": 1, "batch": 4}),
        direct_batch("S", {"multi_last": ["s.>"], "up_to_seq": 7}),
        kill_restart(),
        direct_batch("S", {"seq": 2, "batch": 100, "next_by_subj": "s.b"}),
        direct_batch("S", {"multi_last": ["s.*"]}),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_direct_batch_matches_nats_server(name: str, target_pair: dict) -> None:
    steps = CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)


async def test_multi_last_too_many_subjects(target_pair: dict) -> None:
    """More than 1024 matching subjects: 413; a narrower filter still answers."""
    steps = [
        req(
            "STREAM.CREATE.M",
            {"name": "M", "subjects": ["m.>"], "allow_direct": True, "storage": "memory"},
            mask=("config",),
        ),
        *[pub(f"m.{i}", "x", reply=False) for i in range(1030)],
        direct_batch("M", {"multi_last": ["m.>"]}),
        direct_batch("M", {"multi_last": ["m.1", "m.2"], "batch": 1}),
    ]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)
    assert ours[-2]["got"][0]["hdr"] == "NATS/1.0 413 Too Many Results\r\n\r\n"


async def _times_case(target: Target) -> list[str]:
    """start_time / up_to_time between two groups of messages (the times are the target's own)."""
    c = await RawNats.connect(target.url)
    try:
        cfg = {"name": "T", "subjects": ["t.>"], "allow_direct": True}
        await c.request("$JS.API.STREAM.CREATE.T", json.dumps(cfg).encode())
        for i in range(3):
            await c.request(f"t.{i % 2}", b"early")
        await asyncio.sleep(0.05)
        middle = time.time_ns()
        await asyncio.sleep(0.05)
        for i in range(3):
            await c.request(f"t.{i % 2}", b"late", hdr=headers(("K", str(i))))
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(middle // 10**9)) + f".{middle % 10**9:09d}Z"
        out = []
        for body in (
            {"start_time": stamp, "batch": 10},
            {"start_time": stamp},
            {"multi_last": ["t.*"], "up_to_time": stamp},
            {"multi_last": ["t.1"], "up_to_time": stamp, "seq": 2},
        ):
            msgs = await c.request_many("$JS.API.DIRECT.GET.T", json.dumps(body).encode(), timeout=3) if (
                "batch" in body or "multi_last" in body
            ) else [await c.request("$JS.API.DIRECT.GET.T", json.dumps(body).encode())]
            for m in msgs:
                hdr = (m.hdr or b"").decode()
                out.append(
                    "|".join(line for line in hdr.split("\r\n") if not line.startswith("Nats-Time-Stamp"))
                    + m.data.decode()
                )
        await c.request("$JS.API.STREAM.DELETE.T", b"")
        return out
    finally:
        await c.close()


async def test_start_time_and_up_to_time_between_messages(target_pair: dict) -> None:
    theirs = await _times_case(target_pair["nats-server"])
    ours = await _times_case(target_pair["embedded"])
    assert ours == theirs
    assert any("late" in line for line in ours) and any("early" in line for line in ours)


async def _required_level(target: Target) -> list[str]:
    c = await RawNats.connect(target.url)
    out = []
    try:
        cfg = {"name": "L", "subjects": ["l.>"], "allow_direct": True}
        await c.request("$JS.API.STREAM.CREATE.L", json.dumps(cfg).encode())
        await c.request("l.a", b"x")
        for level in ("99", "x", "5", "-1", "6"):
            hdr = headers(("Nats-Required-Api-Level", level))
            for subject, body in (("$JS.API.DIRECT.GET.L", b'{"seq":1}'), ("$JS.API.DIRECT.GET.L.l.a", b"")):
                msg = await c.request(subject, body, hdr=hdr)
                status = (msg.hdr or b"").split(b"\r\n")[0].decode()
                out.append(f"{level} {subject}: {status} {msg.data.decode()}")
        await c.request("$JS.API.STREAM.DELETE.L", b"")
        return out
    finally:
        await c.close()


async def test_required_api_level_on_direct_get(target_pair: dict) -> None:
    theirs = await _required_level(target_pair["nats-server"])
    ours = await _required_level(target_pair["embedded"])
    assert ours == theirs
    assert any("412 Required Api Level" in line for line in ours)
