"""Consumer API on both targets: create (every subject form), update rules, errors, info, names,
list, delete, paging, limits, workqueue rules and the create/delete advisories.

Where nats-server 2.10 changed the answer the tests branch on the advertised version: ⟨2.10+⟩
checks a one-token filter in ``CONSUMER.CREATE.<S>.<C>.<filter>`` (2.9.10 only checked filters
of two or more tokens), knows ``action`` and ``filter_subjects``, and adds ``ts`` to infos.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, speaks_210
from tests.support.targets import Target

API = "$JS.API.CONSUMER."


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


@pytest.fixture
def v210(client: RawClient, server_kind: str) -> bool:
    return speaks_210(client, server_kind)


def create_body(stream: str = "S", **cfg: Any) -> dict[str, Any]:
    cfg.setdefault("ack_policy", "explicit")
    return {"stream_name": stream, "config": cfg}


class _AnyText(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_TEXT = _AnyText("<any>")


def error_code(resp: dict[str, Any]) -> int | None:
    error = resp.get("error")
    return None if error is None else error["err_code"]


async def test_create_pull_consumer_reports_defaults_and_counters(client: RawClient, v210: bool) -> None:
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 3)
    resp = await client.api(API + "CREATE.S.C", create_body(filter_subject="s.a"))
    assert resp["type"] == "io.nats.jetstream.api.v1.consumer_create_response"
    assert resp["config"] == {
        "name": "C",
        "deliver_policy": "all",
        "ack_policy": "explicit",
        "ack_wait": 30_000_000_000,
        "max_deliver": -1,
        "filter_subject": "s.a",
        "replay_policy": "instant",
        "max_waiting": 512,
        "max_ack_pending": 1000,
        "inactive_threshold": 5_000_000_000,  # named but not durable: an ephemeral
        "num_replicas": 0,
        # ADR-44: the level the config needs, and (in replies) the server's version and level.
        "metadata": {"_nats.req.level": "0", "_nats.ver": ANY_TEXT, "_nats.level": ANY_TEXT},
    }
    assert resp["delivered"] == {"consumer_seq": 0, "stream_seq": 0}
    assert resp["ack_floor"] == {"consumer_seq": 0, "stream_seq": 0}
    assert (resp["num_ack_pending"], resp["num_redelivered"], resp["num_waiting"], resp["num_pending"]) == (
        0,
        0,
        0,
        3,
    )
    assert ("ts" in resp) == v210
    info = await client.consumer_info("S", "C")
    assert info["type"] == "io.nats.jetstream.api.v1.consumer_info_response"
    assert info["created"] == resp["created"] and info["config"] == resp["config"]

    durable = await client.api(API + "DURABLE.CREATE.S.D", create_body(durable_name="D", ack_policy="all"))
    assert durable["config"]["durable_name"] == "D" and "inactive_threshold" not in durable["config"]
    assert durable["config"]["name"] == "D"  # ⟨2.11+⟩ (2.9 left it out)
    push = await client.api(API + "CREATE.S.P", create_body(deliver_subject="d.p", ack_policy="none"))
    assert "max_waiting" not in push["config"] and "max_ack_pending" not in push["config"]
    assert "ack_wait" not in push["config"] and "push_bound" not in push

    legacy = await client.api(API + "CREATE.S", create_body())
    name = legacy["name"]
    assert len(name) == 8 and name.isalnum() and "name" not in legacy["config"]

    names = await client.api(API + "NAMES.S")
    assert names["consumers"] == sorted(["C", "D", "P", name])
    assert (names["total"], names["offset"], names["limit"]) == (4, 0, 1024)
    page = await client.api(API + "NAMES.S", {"offset": 3})
    assert page["consumers"] == sorted(["C", "D", "P", name])[3:] and page["offset"] == 3
    listing = await client.api(API + "LIST.S", {"offset": 1})
    assert [c["name"] for c in listing["consumers"]] == sorted(["C", "D", "P", name])[1:]
    assert (listing["total"], listing["offset"], listing["limit"]) == (4, 1, 256)

    deleted = await client.api(API + "DELETE.S.C")
    assert deleted == {"type": "io.nats.jetstream.api.v1.consumer_delete_response", "success": True}
    missing = await client.api(API + "INFO.S.C")
    assert missing["error"] == {"code": 404, "err_code": 10014, "description": "consumer not found"}
    assert error_code(await client.api(API + "DELETE.S.C")) == 10014
    empty = await client.api(API + "NAMES.NOPE")
    assert error_code(empty) == 10059 and empty["consumers"] == []


CREATE_ERRORS: list[tuple[str, Any, int]] = [
    ("CREATE.S.C1", create_body(durable_name="X"), 10017),
    ("CREATE.S.C1.s.b", create_body(filter_subject="s.a"), 10131),
    ("CREATE.S.C2", create_body(backoff=[1_000_000_000, 2_000_000_000], max_deliver=1), 10116),
    ("CREATE.S.C2", create_body(backoff=[-1]), 10184),
    ("CREATE.S.C2", create_body(ack_wait=-1), 10183),
    ("CREATE.S", create_body(durable_name="D"), 10020),
    ("CREATE.S", create_body(name="a.b"), 10052),
    ("DURABLE.CREATE.S.D", create_body(), 10018),
    ("DURABLE.CREATE.S.D", create_body(durable_name="E"), 10017),
    ("CREATE.S.W", create_body(filter_subject="t..x"), 10052),
    ("CREATE.S.W", create_body(deliver_subject="s.x"), 10081),
    ("CREATE.S.W", create_body(deliver_subject="x.*"), 10079),
    ("CREATE.S.W", create_body(deliver_subject="x.y", max_waiting=3), 10080),
    ("CREATE.S.W", create_body(deliver_subject="x.y", ack_policy="none", max_ack_pending=3), 10082),
    ("CREATE.S.W", create_body(deliver_subject="x.y", idle_heartbeat=1000), 10083),
    ("CREATE.S.W", create_body(deliver_policy="last_per_subject"), 10094),
    ("CREATE.S.W", create_body(deliver_policy="by_start_time"), 10094),
    ("CREATE.S.W", create_body(deliver_policy="by_start_sequence"), 10094),
    ("CREATE.S.W", create_body(opt_start_seq=3), 10094),
    ("CREATE.S.W", create_body(sample_freq="abc"), 10095),
    ("CREATE.S.W", create_body(num_replicas=3), 10074),
    ("CREATE.S.W", create_body(num_replicas=-1), 10133),
    ("CREATE.S.W", create_body(flow_control=True), 10089),
    ("CREATE.S.W", create_body(deliver_subject="x.y", flow_control=True), 10108),
    ("CREATE.S.W", create_body(idle_heartbeat=1000), 10088),
    ("CREATE.S.W", create_body(rate_limit_bps=100), 10086),
    ("CREATE.S.W", {"stream_name": "S", "config": {"max_batch": -1}, "pedantic": True}, 10157),
    ("CREATE.S.W", create_body(max_expires=10), 10115),
    ("CREATE.S.W", create_body(description="x" * 5000), 10107),
    ("CREATE.S", create_body(direct=True), 10090),
    ("CREATE.S.W", b"{bad", 10025),
    ("CREATE.S.W", b"", 10056),  # ⟨2.11+⟩ an empty body is the zero request
    ("CREATE.NOPE.W", create_body("NOPE"), 10059),
    ("CREATE.S.W", create_body("T"), 10056),
    ("INFO.S.W", b"x", 10038),
    ("DELETE.S.W", b"x", 10038),
    ("INFO.NOPE.W", b"", 10059),
]


async def test_create_errors(client: RawClient, v210: bool) -> None:
    await client.add_stream("S", ["s.>"])
    for subject, body, code in CREATE_ERRORS:
        resp = await client.api(API + subject, body)
        assert error_code(resp) == code, (subject, body, resp)
        assert set(resp["error"]) == {"code", "err_code", "description"}
    resp = await client.api(API + "CREATE.S.W", create_body(deliver_policy="all", opt_start_seq=2))
    assert (
        resp["error"]["description"]
        == "consumer delivery policy is deliver all, but optional start sequence is also set"
    )
    resp = await client.api(API + "CREATE.S.W", create_body(num_replicas=3))
    assert resp["error"]["code"] == 500
    # The consumer name in the subject wins over the one in the body.
    resp = await client.api(API + "CREATE.S.W", create_body(name="Z"))
    assert resp["name"] == "W" and resp["config"]["name"] == "W"
    # ⟨2.10+⟩ a filter need not be a subset of the stream's subjects (10093 is gone).
    resp = await client.api(API + "CREATE.S.OUT", create_body(filter_subject="t.x"))
    assert resp["config"]["filter_subject"] == "t.x" and resp["num_pending"] == 0
    # ⟨2.11+⟩ values below their minimum are corrected, or refused with pedantic.
    resp = await client.api(API + "CREATE.S.NEG", create_body(max_batch=-1, max_deliver=-5))
    assert "max_batch" not in resp["config"] and resp["config"]["max_deliver"] == -1
    # A one-token filter in the subject is checked since 2.10 (2.9.10 only checked longer ones).
    resp = await client.api(API + "CREATE.S.F.s", create_body(filter_subject="s.a"))
    assert (error_code(resp) == 10131) == v210


async def test_update_rules(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    base = create_body(durable_name="D")
    assert error_code(await client.api(API + "DURABLE.CREATE.S.D", base)) is None
    # Creating the same config again is fine (idempotent).
    assert error_code(await client.api(API + "DURABLE.CREATE.S.D", base)) is None
    updated = await client.api(
        API + "DURABLE.CREATE.S.D", create_body(durable_name="D", max_ack_pending=5, description="x")
    )
    assert updated["config"]["max_ack_pending"] == 5 and updated["config"]["description"] == "x"
    refusals = {
        "deliver policy can not be updated": dict(deliver_policy="new"),
        "ack policy can not be updated": dict(ack_policy="all"),
        "replay policy can not be updated": dict(replay_policy="original"),
        "max waiting can not be updated": dict(max_waiting=7),
    }
    for text, change in refusals.items():
        resp = await client.api(API + "DURABLE.CREATE.S.D", create_body(durable_name="D", **change))
        assert resp["error"] == {"code": 500, "err_code": 10012, "description": text}, change

    # A push consumer may move to a new deliver subject only while nobody listens on the old one.
    assert error_code(await client.api(API + "CREATE.S.P", create_body(deliver_subject="d.old"))) is None
    sub = client.subscribe("d.old")
    await client.flush()
    moved = await client.api(API + "CREATE.S.P", create_body(deliver_subject="d.new"))
    assert error_code(moved) == 10013
    sub.unsubscribe()
    await client.flush()
    moved = await client.api(API + "CREATE.S.P", create_body(deliver_subject="d.new"))
    assert moved["config"]["deliver_subject"] == "d.new"
    resp = await client.api(API + "CREATE.S.P", create_body(max_waiting=0))
    # (2.11+ checks the deliver subject before max_waiting)
    assert resp["error"]["description"] == "can not update push consumer to pull based"


async def test_actions_and_multiple_filters(client: RawClient, v210: bool) -> None:
    """⟨2.10+⟩ ``action`` and ``filter_subjects``; 2.9.10 ignores both fields."""
    await client.add_stream("S", ["s.>"])
    await client.publish_many("s.a", 2)
    await client.publish_many("s.b", 2)
    await client.publish_many("s.c", 2)
    update_missing = await client.api(API + "CREATE.S.A", {**create_body(), "action": "update"})
    assert (error_code(update_missing) == 10149) == v210
    created = await client.api(API + "CREATE.S.B", {**create_body(), "action": "create"})
    assert error_code(created) is None
    again = await client.api(API + "CREATE.S.B", {**create_body(), "action": "create"})
    # 2.11+ compares the request before an ephemeral gets its default inactive_threshold: refused.
    assert error_code(again) == 10148
    durable = {**create_body(durable_name="DB"), "action": "create"}
    assert error_code(await client.api(API + "CREATE.S.DB", durable)) is None
    assert error_code(await client.api(API + "CREATE.S.DB", durable)) is None  # same config: fine
    changed = await client.api(API + "CREATE.S.B", {**create_body(max_ack_pending=9), "action": "create"})
    assert (error_code(changed) == 10148) == v210
    if not v210:
        return
    multi = await client.api(API + "CREATE.S.M", create_body(filter_subjects=["s.a", "s.c"]))
    assert multi["config"]["filter_subjects"] == ["s.a", "s.c"] and multi["num_pending"] == 4
    inbox = client.new_inbox()
    sub = client.subscribe(inbox)
    client.pull("S", "M", inbox, {"batch": 10, "no_wait": True})
    msgs = await sub.collect(4)
    assert [m.subject for m in msgs] == ["s.a", "s.a", "s.c", "s.c"]
    assert [m.stream_seq for m in msgs] == [1, 2, 5, 6]
    assert (
        error_code(await client.api(API + "CREATE.S.X", create_body(filter_subjects=["s.a", "s.*"]))) == 10138
    )
    # Which error comes first when several apply: the first filter (in order) that is invalid or a
    # subset of another (a plain duplicate, or a plain filter inside a later wildcard).
    for filters, code in (
        (["s.a", "s.b", "s.a"], 10138),
        (["s.a.b", "s.c", "s.*.b"], 10138),
        (["s.*", "s.>"], 10138),
        (["s.a", "s.a", "s..x"], 10138),
        (["s..x", "s.a", "s.a"], 10052),
        (["s.*.c", "s.a.*"], None),
    ):
        answer = await client.api(API + "CREATE.S.F", create_body(filter_subjects=filters))
        assert error_code(answer) == code, filters
    both = create_body(filter_subject="s.a", filter_subjects=["s.b"])
    assert error_code(await client.api(API + "CREATE.S.X", both)) == 10136
    in_subject = create_body(filter_subjects=["s.a", "s.b"])
    assert error_code(await client.api(API + "CREATE.S.X.s.a", in_subject)) == 10137


async def test_limits_and_workqueue_rules(client: RawClient) -> None:
    await client.add_stream("M", ["m.>"], max_consumers=1)
    assert error_code(await client.api(API + "CREATE.M.A", create_body("M"))) is None
    assert error_code(await client.api(API + "CREATE.M.B", create_body("M"))) == 10026
    assert error_code(await client.api(API + "CREATE.M.A", create_body("M", max_ack_pending=20))) is None

    await client.add_stream("Q", ["q.>"], retention="workqueue")
    assert error_code(await client.api(API + "CREATE.Q.A", create_body("Q", ack_policy="none"))) == 10084
    assert error_code(await client.api(API + "CREATE.Q.A", create_body("Q", ack_policy="all"))) == 10098
    assert error_code(await client.api(API + "CREATE.Q.A", create_body("Q", deliver_policy="new"))) == 10101
    assert error_code(await client.api(API + "CREATE.Q.A", create_body("Q"))) is None
    assert error_code(await client.api(API + "CREATE.Q.B", create_body("Q"))) == 10099
    assert error_code(await client.api(API + "CREATE.Q.B", create_body("Q", filter_subject="q.x"))) == 10100
    assert error_code(await client.api(API + "DELETE.Q.A")) is None
    assert error_code(await client.api(API + "CREATE.Q.B", create_body("Q", filter_subject="q.x"))) is None
    assert error_code(await client.api(API + "CREATE.Q.C", create_body("Q", filter_subject="q.*"))) == 10100
    assert error_code(await client.api(API + "CREATE.Q.C", create_body("Q", filter_subject="q.y"))) is None


async def test_create_and_delete_advisories(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    adv = client.subscribe("$JS.EVENT.ADVISORY.CONSUMER.>")
    await client.flush()
    await client.api(API + "CREATE.S.C", create_body())
    await client.api(API + "DELETE.S.C")
    created, deleted = await adv.collect(2)
    assert created.subject == "$JS.EVENT.ADVISORY.CONSUMER.CREATED.S.C"
    assert deleted.subject == "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.C"
    for msg, action in ((created, "create"), (deleted, "delete")):
        event = msg.json()
        assert event["type"] == "io.nats.jetstream.advisory.v1.consumer_action"
        assert (event["stream"], event["consumer"], event["action"]) == ("S", "C", action)
        assert event["id"] and event["timestamp"]
    # Deleting the stream deletes its consumers, with their advisory.
    await client.api(API + "CREATE.S.D", create_body(durable_name="D"))
    await adv.next()
    await client.api("$JS.API.STREAM.DELETE.S")
    gone = await adv.next()
    assert gone.subject == "$JS.EVENT.ADVISORY.CONSUMER.DELETED.S.D"
