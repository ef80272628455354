"""Differential: schedules a pipelining publisher writes in one go, and their firing, ours vs
nats-server.

The embedded server stores a read's run of valid schedules in one pass (``Run._schedules``) and a
firing's produced messages in one pass (``StreamIngest.store_internal_run``); nats-server handles
each on its own. Every answer must be the same, in the same order — new schedules, a schedule
replacing an earlier message or schedule on its subject (its roll-up), the same subject twice in
one read, invalid schedules and other headers in the middle — and so must the stream's state,
the stored blocks and what a firing produces.
"""

from __future__ import annotations

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.differential import first_difference, next_msg, pipelined, pub, req, run_case, sub

target_pair = pair_fixtures.target_pair

FAR = "@at 2099-01-01T00:00:00Z"
PAST = "@at 2000-01-01T00:00:00Z"  # due at once: fires as soon as it is stored


def create(**cfg: object) -> object:
    return req("STREAM.CREATE.S", {"name": "S", "subjects": ["s.>"], "allow_msg_schedules": True, **cfg})


def info() -> object:
    return req("STREAM.INFO.S", {"subjects_filter": ">"})


def last(subject: str) -> object:
    return req("STREAM.MSG.GET.S", {"last_by_subj": subject})


def schedule(
    subject: str, target: str, pattern: str = FAR, *more: tuple[str, str], data: str = "d"
) -> object:
    return pub(subject, data, ("Nats-Schedule", pattern), ("Nats-Schedule-Target", target), *more)


def schedules(n: int, start: int = 0, pattern: str = FAR) -> list[object]:
    return [schedule(f"s.s.{i}", f"s.t.{i}", pattern, data=f"d{i}") for i in range(start, start + n)]


CASES: dict[str, list] = {
    "new-schedules": [create(), pipelined(*schedules(20)), info(), last("s.s.3"), last("s.s.19")],
    "memory": [create(storage="memory"), pipelined(*schedules(12)), info(), last("s.s.5")],
    "replacing-messages-and-schedules": [
        create(),
        pipelined(*[pub(f"s.s.{i % 3}", f"plain{i}") for i in range(9)]),
        pipelined(*schedules(5)),
        pipelined(*schedules(3, 1), schedule("s.s.2", "s.t.x"), schedule("s.s.2", "s.t.y"), *schedules(2, 6)),
        info(),
        last("s.s.2"),
    ],
    "plain-messages-between": [
        create(),
        pipelined(
            *schedules(3), pub("s.s.1", "ends it"), *schedules(2, 3), pub("s.p", "p"), *schedules(2, 5)
        ),
        info(),
    ],
    "invalid-and-other-headers-between": [
        create(duplicate_window=60_000_000_000),
        pipelined(
            *schedules(2),
            schedule("s.s.a", "x.outside"),
            schedule("s.s.b", "s.s.b"),
            schedule("s.s.c", "s.t.c", "@at soon"),
            schedule("s.s.d", "s.t.d", FAR, ("Nats-Schedule-TTL", "5m")),
            schedule("s.s.e", "s.t.e", FAR, ("Nats-Rollup", "all")),
            schedule("s.s.f", "s.t.f", FAR, ("Nats-Msg-Id", "m1")),
            schedule("s.s.g", "s.t.g", FAR, ("Nats-Msg-Id", "m1")),
            schedule("s.s.h", "s.t.h", FAR, ("Nats-Expected-Stream", "S")),
            schedule("s.s.i", "s.t.i", FAR, ("Nats-Expected-Stream", "OTHER")),
            schedule("s.s.j", "s.t.j", "0 0 * * * *", ("Nats-Schedule-Time-Zone", "Europe/Amsterdam")),
            schedule("s.s.k", "s.t.k", FAR, ("Nats-Schedule-Source", "s.s.0")),
            schedule("s.s.l", "s.t.l", FAR, ("Nats-Schedule-Source", "x.outside")),
            schedule("s.s.m", "s.t.m", FAR, ("Nats-Schedule-Time-Zone", "Nowhere/Never")),
            schedule("s.s.n", "s.t.n", FAR, ("X-Other", "kept")),
            *schedules(2, 2),
        ),
        info(),
        last("s.s.n"),
        last("s.s.k"),
    ],
    "same-shape-other-targets": [  # (blocks compared around their target: each target checked)
        create(),
        pipelined(
            *schedules(2),
            schedule("s.s.a", "x.outside"),
            schedule("s.s.b", "s.s.b"),
            schedule("s.s.c", "s.s.0"),
            schedule("s.s.d", "s.t d"),
            schedule("s.s.e", "s.t.*"),
            schedule("s.s.f", ""),
            schedule("s.s.g", "  s.t.g\t"),
            schedule("s.s.h", "  s.t.h"),
            schedule("s.s.i", "s.t.i "),
            *schedules(2, 2),
        ),
        info(),
        last("s.s.g"),
    ],
    "same-shape-with-a-source": [
        create(),
        pub("s.src", "from the source"),
        pipelined(
            *[schedule(f"s.s.{i}", f"s.t.{i}", FAR, ("Nats-Schedule-Source", "s.src")) for i in range(3)],
            schedule("s.s.x", "s.src", FAR, ("Nats-Schedule-Source", "s.src")),
            schedule("s.src2", "s.t.y", FAR, ("Nats-Schedule-Source", "s.src2")),
            *[schedule(f"s.s.{i}", f"s.t.{i}", FAR, ("Nats-Schedule-Source", "s.src")) for i in range(3, 5)],
        ),
        info(),
    ],
    "ttl-schedules-where-ttls-are-allowed": [
        create(allow_msg_ttl=True),
        pipelined(*[schedule(f"s.s.{i}", f"s.t.{i}", FAR, ("Nats-Schedule-TTL", "5m")) for i in range(4)]),
        info(),
        last("s.s.2"),
    ],
    "too-large-once-rolled-up": [
        create(max_msg_size=200),
        pipelined(*schedules(2), schedule("s.s.big", "s.t.big", data="x" * 120), *schedules(2, 2)),
        info(),
    ],
}


def fire_case(n: int, *more: tuple[str, str]) -> list:
    """``n`` schedules due at once, published in one go: what a consumer of their targets gets
    (one by one, in order: the wait) and the stream's state after."""
    consumer = {
        "stream_name": "S",
        "config": {"deliver_subject": "dlv", "ack_policy": "none", "filter_subject": "s.t.>"},
    }
    return [
        create(allow_msg_ttl=True),
        req("CONSUMER.CREATE.S", consumer, mask=("config.name", "name", "created", "ts")),
        sub("dlv"),
        pipelined(*[schedule(f"s.s.{i}", f"s.t.{i}", PAST, *more, data=f"d{i}") for i in range(n)]),
        *[next_msg() for _ in range(n)],
        info(),
    ]


FIRE_CASES: dict[str, list] = {
    "plain": fire_case(10),
    "many": fire_case(100),  # (more than the store removes one by one)
    "with-headers-carried": fire_case(6, ("X-Kept", "yes")),
    "with-ttl": fire_case(4, ("Nats-Schedule-TTL", "5m")),
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_pipelined_schedules_match_nats_server(name: str, target_pair: dict) -> None:
    steps = CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)


@pytest.mark.parametrize("name", sorted(FIRE_CASES))
async def test_schedules_fired_together_match_nats_server(name: str, target_pair: dict) -> None:
    steps = FIRE_CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)
