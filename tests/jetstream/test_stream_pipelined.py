"""Differential: publishes a pipelining publisher writes in one go, ours vs nats-server.

The embedded server stores a run of header-less publishes to one stream that one read brought in
one pass (``StreamIngest.ingest_run``); nats-server handles each on its own. Every answer must be
the same, in the same order — limits reached in the middle of a run, a message too large, a
message with headers between the others, publishes without a reply — and so must the stream's
state afterwards.
"""

from __future__ import annotations

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.differential import first_difference, pipelined, pub, req, run_case

target_pair = pair_fixtures.target_pair
limits_pair = pair_fixtures.limits_pair


def create(name: str, **cfg: object) -> object:
    return req(f"STREAM.CREATE.{name}", {"name": name, "subjects": [f"{name.lower()}.>"], **cfg})


def info(name: str) -> object:
    return req(f"STREAM.INFO.{name}")


def run(subject: str, n: int, size: int = 8) -> list:
    return [pub(subject, f"{i:0{size}d}") for i in range(n)]


KB100 = "x" * 100_000

CASES: dict[str, list] = {
    "file": [create("S"), pipelined(*run("s.a", 40)), pipelined(*run("s.b", 3)), info("S")],
    "memory": [create("S", storage="memory"), pipelined(*run("s.a", 40)), info("S")],
    "one-reply-subject": [create("S"), pipelined(*run("s.a", 20), same_reply=True), info("S")],
    "subjects-alternating": [
        create("S", storage="memory"),
        pipelined(*run("s.a", 3), *run("s.b", 1), *run("s.a", 4), *run("s.c", 2)),
        info("S"),
    ],
    "some-without-reply": [
        create("S"),
        pipelined(
            pub("s.a", "1"), pub("s.a", "2", reply=False), pub("s.a", "3"), pub("s.a", "4", reply=False)
        ),
        info("S"),
    ],
    "headers-between": [
        create("S", duplicate_window=60_000_000_000),
        pipelined(
            *run("s.a", 3),
            pub("s.a", "dup", ("Nats-Msg-Id", "m1")),
            *run("s.a", 3),
            pub("s.a", "dup", ("Nats-Msg-Id", "m1")),
            pub("s.a", "exp", ("Nats-Expected-Last-Sequence", "8")),
            *run("s.a", 2),
        ),
        info("S"),
    ],
    "max-msgs-discard-new": [
        create("S", max_msgs=5, discard="new"),
        pipelined(*run("s.a", 3)),
        pipelined(*run("s.a", 4)),
        info("S"),
    ],
    "max-msgs-discard-old": [
        create("S", max_msgs=5),
        pipelined(*run("s.a", 3)),
        pipelined(*run("s.a", 4)),
        pipelined(*run("s.a", 8)),
        info("S"),
    ],
    "max-bytes-discard-new": [
        create("S", storage="memory", max_bytes=200, discard="new"),
        pipelined(*run("s.a", 10, 20)),
        info("S"),
    ],
    "max-bytes-discard-old": [
        create("S", max_bytes=300),
        pipelined(*run("s.a", 3, 20)),
        pipelined(*run("s.a", 10, 20)),
        info("S"),
    ],
    "per-subject-discard-new": [
        create("S", max_msgs_per_subject=3, discard="new", discard_new_per_subject=True),
        pipelined(*run("s.a", 2)),
        pipelined(*run("s.a", 3), *run("s.b", 4)),
        info("S"),
    ],
    "per-subject-kv-like": [
        create("S", max_msgs_per_subject=1, storage="memory"),
        pipelined(*run("s.a", 6)),
        req("STREAM.MSG.GET.S", {"last_by_subj": "s.a"}),
        info("S"),
    ],
    "max-msg-size": [
        create("S", max_msg_size=10),
        pipelined(pub("s.a", "short"), pub("s.a", "x" * 11), pub("s.a", "short2"), pub("s.a", "y" * 20)),
        info("S"),
    ],
    "with-consumer": [
        create("S"),
        req(
            "CONSUMER.CREATE.S.C",
            {"stream_name": "S", "config": {"durable_name": "C", "filter_subject": "s.b"}},
        ),
        pipelined(*run("s.a", 5), *run("s.b", 5)),
        req("CONSUMER.INFO.S.C", mask=("ts", "created")),
        info("S"),
    ],
    "interest-retention": [
        create("S", retention="interest"),
        pipelined(*run("s.a", 5)),
        info("S"),
    ],
    "max-age": [create("S", max_age=3_600_000_000_000), pipelined(*run("s.a", 5)), info("S")],
}

# Server limits max_file_store 1 MiB / max_memory_store 512 KiB (see pair_fixtures.LIMITS): the
# limit is reached in the middle of what the publisher wrote.
LIMIT_CASES: dict[str, list] = {
    "memory-limit-reached": [
        create("M", storage="memory"),
        pipelined(*[pub("m.a", KB100) for _ in range(7)]),
        info("M"),
    ],
    "file-limit-reached": [create("F"), pipelined(*[pub("f.a", KB100) for _ in range(12)]), info("F")],
    "account-bytes-small-messages": [
        create("M", storage="memory"),
        pipelined(*[pub("m.a", KB100) for _ in range(4)]),
        pipelined(*[pub("m.b", "x" * 1000) for _ in range(150)]),
        info("M"),
    ],
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_pipelined_publishes_match_nats_server(name: str, target_pair: dict) -> None:
    steps = CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)


@pytest.mark.parametrize("name", sorted(LIMIT_CASES))
async def test_pipelined_publishes_at_the_limits_match_nats_server(name: str, limits_pair: dict) -> None:
    steps = LIMIT_CASES[name]
    theirs = await run_case(limits_pair["nats-server"], steps)
    ours = await run_case(limits_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)
