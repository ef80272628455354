"""Differential: what survives a restart (graceful and ``kill -9``), ours vs nats-server.

File streams come back with config, creation time, messages, deletes, purge floors and their
de-duplication window; memory streams are gone, as with a standalone nats-server.
"""

from __future__ import annotations

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.differential import (
    first_difference,
    kill_restart,
    pub,
    req,
    restart,
    run_case,
    wait_msgs,
)

target_pair = pair_fixtures.target_pair

NS = 1_000_000_000


def create(name: str, **cfg: object) -> object:
    return req(f"STREAM.CREATE.{name}", {"name": name, **cfg})


def info(name: str, body: object = b"") -> object:
    return req(f"STREAM.INFO.{name}", body)


def filled(name: str = "F", n: int = 6, **cfg: object) -> list:
    steps = [create(name, subjects=[f"{name.lower()}.*"], **cfg)]
    steps += [pub(f"{name.lower()}.{'ab'[i % 2]}", f"m{i}", ("Nats-Msg-Id", f"id{i}")) for i in range(n)]
    return steps


def after_restart(stop: object, no_erase: bool = True) -> list:
    # nats-server 2.9.10 forgets a no_erase delete on kill -9 (its delete map lives in an index
    # file written later); ours keeps it (a tombstone record), so that step is graceful-only.
    deletes = [req("STREAM.MSG.DELETE.F", {"seq": 3})]
    if no_erase:
        deletes.append(req("STREAM.MSG.DELETE.F", {"seq": 4, "no_erase": True}))
    return [
        *filled(),
        create("M", storage="memory"),
        pub("M", "lost"),
        *deletes,
        stop,
        req("STREAM.NAMES"),
        info("F", {"deleted_details": True, "subjects_filter": ">"}),
        info("M"),
        req("STREAM.MSG.GET.F", {"seq": 5}),
        req("STREAM.MSG.GET.F", {"last_by_subj": "f.a"}),
        pub("f.a", "again", ("Nats-Msg-Id", "id1")),
        pub("f.b", "new", ("Nats-Expected-Last-Msg-Id", "id5")),
        pub("f.b", "newer", ("Nats-Expected-Last-Subject-Sequence", "7")),
        info("F"),
    ]


CASES: dict[str, list] = {
    "restart": after_restart(restart()),
    "kill-9": after_restart(kill_restart(), no_erase=False),
    "purge-floor-survives": [
        *filled(),
        req("STREAM.PURGE.F"),
        restart(),
        info("F"),
        pub("f.a", "x"),
    ],
    "compact-survives-kill": [
        *filled(),
        req("STREAM.PURGE.F", {"seq": 4}),
        kill_restart(),
        info("F"),
        pub("f.a", "x"),
    ],
    "limits-apply-after-restart": [
        *filled(max_msgs_per_subject=2),
        kill_restart(),
        info("F", {"subjects_filter": ">"}),
        pub("f.a", "x"),
        info("F", {"subjects_filter": ">"}),
    ],
    "max-age-after-restart": [
        *filled(max_age=NS // 2),
        restart(),
        wait_msgs("F", 0),
        info("F"),
    ],
    "update-survives": [
        *filled(),
        req("STREAM.UPDATE.F", {"name": "F", "subjects": ["f.*", "g"], "max_msgs": 4, "description": "u"}),
        restart(),
        info("F"),
        pub("g", "x"),
    ],
    "delete-survives": [*filled(), req("STREAM.DELETE.F"), kill_restart(), req("STREAM.NAMES"), pub("f.a")],
}


@pytest.mark.parametrize("name", sorted(CASES))
async def test_persistence_matches_nats_server(name: str, target_pair: dict) -> None:
    steps = CASES[name]
    theirs = await run_case(target_pair["nats-server"], steps)
    ours = await run_case(target_pair["embedded"], steps)
    assert ours == theirs, first_difference(ours, theirs)
