"""Stream mirrors and sources, on both targets.

- Config answers (create/update, errors) are differential: the same requests to our server and to
  nats-server 2.9.10, replies compared. Mirror/source info is compared without ``active`` (a
  clock) and without 2.10's ``filter_subject``/``subject_transforms`` echo.
- Data flow runs the same scenario on each target and asserts the same outcome: what a mirror
  and a source store, in which order, with which sequences and ``Nats-Stream-Source`` headers,
  after origins appear late, are re-created, and after a server restart.
- 2.10 features (subject transforms, the 2.10 validation codes) and the behaviours where
  nats-server 2.9.10 has a known defect that later releases fixed (a sourced duplicate or a
  sourced ``Nats-Expected-*`` header stalls the source forever, nats-io/nats-server#4459 and
  #5253) run on our server only.

The ``Nats-Stream-Source`` value differs by design: 2.9.10 writes ``"O 5"``, we write 2.10's
``"O 5 > >"`` (origin, sequence, filter, destination); tests read its first two fields.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream import pair_fixtures
from tests.jetstream.consumer_helpers import RawClient, headers, wait_for
from tests.jetstream.differential import first_difference, removals_done, req, run_case
from tests.support.targets import EMBEDDED, KINDS, NATS_SERVER, Target, make_target

from pyjetstream.api.models_common import ExternalStream, SubjectTransformConfig
from pyjetstream.api.models_stream import StreamSource
from pyjetstream.server.jetstream.sourcing import (
    api_hash,
    index_name,
    parse_ack_reply,
    parse_source_header,
    source_header,
)

target_pair = pair_fixtures.target_pair

NS = 1_000_000_000
SYNC_TIMEOUT = 60.0  # generous: 2 loaded cores; a missing origin is retried every ~2 s, and a feed whose
# origin was deleted notices at the stream's 10 s health check (nats-server: 12-25 s in these tests)


# --- helpers ----------------------------------------------------------------------------------


@pytest.fixture
async def pair_clients(target_pair: dict[str, Target]) -> AsyncIterator[dict[str, RawClient]]:
    """A client per target of the module's pair, on an account without streams."""
    clients = {kind: await RawClient.connect(target.url) for kind, target in target_pair.items()}
    for kind, c in clients.items():
        await _delete_all(c, target_pair[kind])
    yield clients
    for kind, c in clients.items():
        await _delete_all(c, target_pair[kind])
        await c.close()


async def _delete_all(c: RawClient, target: Target) -> None:
    """Every stream deleted, with nats-server's removals of deleted directories done before and
    after (`differential.reset`: else a delete of a name deleted a moment ago leaves its blocks)."""
    names = (await c.api("$JS.API.STREAM.NAMES")).get("streams") or []
    await removals_done(target)
    for name in names:
        await c.api(f"$JS.API.STREAM.DELETE.{name}")
    await removals_done(target)


async def create(c: RawClient, name: str, **cfg: Any) -> dict[str, Any]:
    resp = await c.api(f"$JS.API.STREAM.CREATE.{name}", {"name": name, **cfg})
    assert "error" not in resp, resp
    return resp


async def info(c: RawClient, name: str) -> dict[str, Any]:
    return await c.api(f"$JS.API.STREAM.INFO.{name}")


async def publish(c: RawClient, subject: str, data: str, *hdrs: tuple[str, str]) -> int:
    ack = await c.publish_js(subject, data.encode(), headers(*hdrs) if hdrs else None)
    assert "error" not in ack, ack
    return int(ack["seq"])


async def wait_messages(c: RawClient, stream: str, count: int, last_seq: int = 0) -> dict[str, Any]:
    """Poll until ``stream`` holds ``count`` messages (and reaches ``last_seq``); its info."""
    seen: dict[str, Any] = {}

    async def reached() -> bool:
        seen.update(await info(c, stream))
        state = seen.get("state", {})
        return state.get("messages") == count and state.get("last_seq", 0) >= last_seq

    try:
        await wait_for(reached, timeout=SYNC_TIMEOUT)
    except AssertionError:
        raise AssertionError(f"{stream} never held {count} messages: {seen}") from None
    return seen


async def stored(c: RawClient, stream: str) -> list[dict[str, Any]]:
    """Every message of ``stream``: seq, subject, data, time and headers (name → value)."""
    state = (await info(c, stream))["state"]
    out = []
    for seq in range(state["first_seq"], state["last_seq"] + 1):
        resp = await c.api(f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": seq})
        msg = resp.get("message")
        if msg is None:
            continue
        raw = base64.b64decode(msg.get("hdrs") or b"").decode()
        hdrs = dict(line.split(": ", 1) for line in raw.split("\r\n")[1:] if ": " in line)
        data = base64.b64decode(msg.get("data") or b"").decode()
        out.append({"seq": seq, "subject": msg["subject"], "data": data, "time": msg["time"], "hdrs": hdrs})
    return out


def origin_of(msg: dict[str, Any]) -> tuple[str, int]:
    """(origin, origin seq) from ``Nats-Stream-Source`` (2.9's "O 5" and 2.10's "O 5 > >")."""
    name, seq = msg["hdrs"]["Nats-Stream-Source"].split(" ")[:2]
    return name, int(seq)


# --- differential: config answers ---------------------------------------------------------


def _create(name: str, **cfg: Any) -> Any:
    return req(f"STREAM.CREATE.{name}", {"name": name, **cfg})


def _update(name: str, **cfg: Any) -> Any:
    return req(f"STREAM.UPDATE.{name}", {"name": name, **cfg})


def _info(name: str) -> Any:
    return req(f"STREAM.INFO.{name}")


ORIGIN = _create("O", subjects=["o.>"], allow_direct=True, max_msg_size=100)
PLAIN = _create("P", subjects=["p.>"])

CONFIG_CASES: dict[str, list[Any]] = {
    "mirror-inherits-allow-direct": [ORIGIN, _create("M", mirror={"name": "O"}), _info("M")],
    "mirror-of-missing-origin-keeps-mirror-direct": [
        _create("M", mirror={"name": "NOPE"}, mirror_direct=True)
    ],
    "mirror-with-dupe-window-filter-seq-and-time": [
        ORIGIN,
        _create(
            "M",
            duplicate_window=30 * NS,
            mirror={
                "name": "O",
                "filter_subject": "o.a",
                "opt_start_seq": 2,
                "opt_start_time": "2020-01-01T00:00:00Z",
            },
        ),
    ],
    "mirror-memory-defaults": [PLAIN, _create("M", storage="memory", mirror={"name": "P"})],
    "err-mirror-with-subjects": [_create("M", subjects=["m"], mirror={"name": "O"})],
    "err-mirror-with-sources": [_create("M", mirror={"name": "O"}, sources=[{"name": "P"}])],
    "err-mirror-max-msg-size": [ORIGIN, _create("M", mirror={"name": "O"}, max_msg_size=50)],
    "mirror-max-msg-size-larger-ok": [ORIGIN, _create("M", mirror={"name": "O"}, max_msg_size=500)],
    "err-mirror-filter-outside-origin": [ORIGIN, _create("M", mirror={"name": "O", "filter_subject": "x.>"})],
    "err-mirror-of-itself": [_create("M", mirror={"name": "M"})],
    "sources-create-and-info": [
        ORIGIN,
        PLAIN,
        _create(
            "S",
            sources=[
                {"name": "O", "filter_subject": "o.a", "opt_start_seq": 3},
                {"name": "P", "opt_start_time": "2020-01-01T00:00:00Z"},
                {"name": "NOPE"},
            ],
        ),
        _info("S"),
    ],
    "sources-with-subjects": [PLAIN, _create("S", subjects=["s.>"], sources=[{"name": "P"}])],
    "err-source-max-msg-size": [ORIGIN, _create("S", sources=[{"name": "O"}], max_msg_size=10)],
    "err-source-filter-outside-origin": [
        ORIGIN,
        _create("S", sources=[{"name": "O", "filter_subject": "x"}]),
    ],
    "source-filter-checked-against-earlier-origins-too": [
        ORIGIN,
        PLAIN,
        _create("S", sources=[{"name": "O"}, {"name": "P", "filter_subject": "o.a"}]),
    ],
    "err-source-of-itself": [_create("S", sources=[{"name": "S"}])],
    "err-source-of-itself-with-subjects": [_create("S", subjects=["s"], sources=[{"name": "S"}])],
    "err-cycle-on-update": [
        _create("A", subjects=["a"]),
        _create("B", subjects=["b"], sources=[{"name": "A"}]),
        _update("A", subjects=["a"], sources=[{"name": "B"}]),
        _update("A", subjects=["a"], sources=[{"name": "B", "filter_subject": "b"}]),
    ],
    "err-cycle-behind-a-mirror": [
        _create("A", subjects=["a"]),
        _create("B", subjects=["b"], sources=[{"name": "A"}]),
        _create("MB", mirror={"name": "B"}),
        _update("A", subjects=["a"], sources=[{"name": "MB"}]),
    ],
    "err-external-api-wildcard": [
        _create("S", sources=[{"name": "O", "external": {"api": "$JS.*.API", "deliver": ""}}])
    ],
    "err-external-api-overlaps-local": [
        _create("S", sources=[{"name": "O", "external": {"api": "$JS.API", "deliver": ""}}])
    ],
    "err-external-deliver-wildcard": [
        _create("S", sources=[{"name": "O", "external": {"api": "$JS.x.API", "deliver": "d.*"}}])
    ],
    "err-external-deliver-overlaps-origin-subjects": [
        ORIGIN,
        _create("S", sources=[{"name": "O", "external": {"api": "$JS.x.API", "deliver": "o"}}]),
    ],
    "external-mirror": [
        _create("M", mirror={"name": "O", "external": {"api": "$JS.far.API", "deliver": "from.far"}})
    ],
    "update-mirror": [
        ORIGIN,
        _create("M", mirror={"name": "O"}),
        _update("M", mirror={"name": "O"}, max_msgs=10),
        _update("M", mirror={"name": "P"}),
        _update("M"),
        _update("M", mirror={"name": "O"}, subjects=["m"]),
    ],
    "err-update-adds-a-mirror": [
        PLAIN,
        _update("P", subjects=["p.>"], mirror={"name": "O"}),
        _update("P", mirror={"name": "O"}),
    ],
    "update-sources-added-and-removed": [
        ORIGIN,
        PLAIN,
        _create("S", sources=[{"name": "O"}]),
        _update("S", sources=[{"name": "O"}, {"name": "P"}]),
        _update("S", sources=[{"name": "P"}]),
        _update("S"),
    ],
}


def _comparable(value: Any) -> Any:
    """Mirror/source info without what depends on timing (``active``, and ``error``: the origin
    consumer is requested after the reply), without 2.10's filter echo, sources sorted by name
    (nats-server lists them in map order)."""
    if isinstance(value, dict):
        out = {k: _comparable(v) for k, v in value.items()}
        for key in ("mirror", "sources"):
            infos = out.get(key)
            entries = infos if isinstance(infos, list) else [infos] if isinstance(infos, dict) else []
            for entry in entries:
                if isinstance(entry, dict) and "lag" in entry:
                    entry["active"] = "<active>"
                    for volatile in ("error", "filter_subject", "subject_transforms"):
                        entry.pop(volatile, None)
            if isinstance(infos, list) and all(isinstance(e, dict) and "lag" in e for e in infos):
                out[key] = sorted(infos, key=lambda e: str(e.get("name")))
        return out
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


@pytest.mark.parametrize("case", sorted(CONFIG_CASES))
async def test_config_answers_match_nats_server(target_pair: dict[str, Target], case: str) -> None:
    steps = CONFIG_CASES[case]
    theirs = _comparable(await run_case(target_pair[NATS_SERVER], steps))
    ours = _comparable(await run_case(target_pair[EMBEDDED], steps))
    assert ours == theirs, first_difference(ours, theirs)


# --- data flow, both targets ----------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
async def test_mirror_keeps_origin_sequences_times_and_gaps(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    await create(c, "O", subjects=["o.>"])
    for i in range(4):
        await publish(c, "o.a" if i % 2 else "o.b", f"before{i}", ("Nats-Msg-Id", f"id{i}"))
    await c.api("$JS.API.STREAM.MSG.DELETE.O", {"seq": 2})
    await create(c, "M", mirror={"name": "O"})
    mirrored = await wait_messages(c, "M", 3, last_seq=4)
    assert mirrored["mirror"]["name"] == "O" and mirrored["mirror"]["lag"] == 0
    assert "error" not in mirrored["mirror"]
    await publish(c, "o.c", "after")
    await wait_messages(c, "M", 4, last_seq=5)

    origin, mirror = await stored(c, "O"), await stored(c, "M")
    assert mirror == origin  # same sequences, subjects, payloads, headers and times
    assert [m["seq"] for m in mirror] == [1, 3, 4, 5]
    state = (await info(c, "M"))["state"]
    assert (state["first_seq"], state["last_seq"], state["num_deleted"]) == (1, 5, 1)
    # Nobody can publish into a mirror: it has no subjects.
    assert (await info(c, "M"))["config"].get("subjects") is None


@pytest.mark.parametrize("kind", KINDS)
async def test_filtered_mirror_and_mirror_from_a_start_sequence(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    await create(c, "O", subjects=["o.>"])
    for i in range(6):
        await publish(c, "o.a" if i % 2 else "o.b", f"m{i}")
    await create(c, "MF", mirror={"name": "O", "filter_subject": "o.a"})
    await create(c, "MS", mirror={"name": "O", "opt_start_seq": 4})
    filtered = await wait_messages(c, "MF", 3, last_seq=6)
    # Filtered-out sequences are skipped: the copies keep their origin sequences.
    assert [m["seq"] for m in await stored(c, "MF")] == [2, 4, 6]
    assert (filtered["state"]["first_seq"], filtered["state"]["num_deleted"]) == (2, 2)
    started = await wait_messages(c, "MS", 3, last_seq=6)
    assert started["state"]["first_seq"] == 4
    assert [m["data"] for m in await stored(c, "MS")] == ["m3", "m4", "m5"]


@pytest.mark.parametrize("kind", KINDS)
async def test_sources_stamp_their_origin_and_interleave_with_local_publishes(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    await create(c, "O1", subjects=["one.>"])
    await create(c, "O2", subjects=["two.>"])
    for i in range(3):
        await publish(c, f"one.{i}", f"o1-{i}", ("Nats-Msg-Id", f"a{i}"))
        await publish(c, f"two.{i % 2}", f"o2-{i}")
    await create(
        c,
        "S",
        subjects=["s.>"],
        sources=[{"name": "O1", "opt_start_seq": 2}, {"name": "O2", "filter_subject": "two.1"}],
    )
    await wait_messages(c, "S", 3)
    await publish(c, "s.local", "local")
    await publish(c, "one.x", "o1-late")
    await publish(c, "two.1", "o2-late")
    await publish(c, "two.0", "o2-filtered-out")
    sourcing = await wait_messages(c, "S", 6)
    assert sorted(s["name"] for s in sourcing["sources"]) == ["O1", "O2"]
    assert all(s["lag"] == 0 and "error" not in s for s in sourcing["sources"])

    msgs = await stored(c, "S")
    assert [m["seq"] for m in msgs] == [1, 2, 3, 4, 5, 6]  # new sequences, no gaps
    by_origin: dict[str, list[tuple[int, str, str]]] = {}
    for m in msgs:
        if "Nats-Stream-Source" in m["hdrs"]:
            name, seq = origin_of(m)
            by_origin.setdefault(name, []).append((seq, m["subject"], m["data"]))
        else:
            assert (m["subject"], m["data"]) == ("s.local", "local")
    assert by_origin["O1"] == [(2, "one.1", "o1-1"), (3, "one.2", "o1-2"), (4, "one.x", "o1-late")]
    assert by_origin["O2"] == [(2, "two.1", "o2-1"), (4, "two.1", "o2-late")]
    # The origin's own headers travel along.
    assert [
        m["hdrs"].get("Nats-Msg-Id") for m in msgs if m["data"].startswith("o1-") and "late" not in m["data"]
    ] == [
        "a1",
        "a2",
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_origins_created_late_or_recreated_are_picked_up(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    await create(c, "M", mirror={"name": "O"})
    await create(c, "S", sources=[{"name": "O"}])

    async def failing() -> bool:
        mirror, source = (await info(c, "M"))["mirror"], (await info(c, "S"))["sources"][0]
        return "error" in mirror and "error" in source

    await wait_for(failing, timeout=SYNC_TIMEOUT)
    mirror = (await info(c, "M"))["mirror"]
    assert mirror["error"] == {"code": 404, "err_code": 10059, "description": "stream not found"}
    assert mirror["active"] == -1

    await create(c, "O", subjects=["o.>"])
    for i in range(3):
        await publish(c, "o.a", f"first{i}")
    picked = await wait_messages(c, "M", 3)
    assert "error" not in picked["mirror"] and picked["mirror"]["active"] >= 0
    await wait_messages(c, "S", 3)

    # Re-created with more messages than before: the mirror carries on after the last sequence it
    # took; a source sees the new identity (2.15, Nats-Stream-Identity) and takes it from the start.
    await c.api("$JS.API.STREAM.DELETE.O")
    await create(c, "O", subjects=["o.>"])
    for i in range(5):
        await publish(c, "o.b", f"second{i}")
    await wait_messages(c, "M", 5, last_seq=5)
    await wait_messages(c, "S", 8)
    assert [m["data"] for m in await stored(c, "M")] == ["first0", "first1", "first2", "second3", "second4"]
    source = await stored(c, "S")
    assert [(origin_of(m), m["data"]) for m in source][3:] == [(("O", i + 1), f"second{i}") for i in range(5)]


@pytest.mark.parametrize("kind", KINDS)
async def test_internal_consumers_are_not_listed_or_counted(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    await create(c, "O", subjects=["o.>"])
    await publish(c, "o.a", "x")
    await create(c, "M", mirror={"name": "O"})
    await create(c, "S", sources=[{"name": "O"}])
    await wait_messages(c, "M", 1)
    await wait_messages(c, "S", 1)
    names = await c.api("$JS.API.CONSUMER.NAMES.O")
    assert (names["total"], names["consumers"]) == (0, [])
    assert (await c.api("$JS.API.CONSUMER.LIST.O"))["total"] == 0
    assert (await info(c, "O"))["state"]["consumer_count"] == 0
    # The account does count them (nats-server's account info includes every consumer).
    assert (await c.api("$JS.API.INFO"))["consumers"] == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_mirror_direct_answers_direct_gets_for_the_origin(
    pair_clients: dict[str, RawClient], kind: str
) -> None:
    c = pair_clients[kind]
    # Created before its origin, the mirror keeps the mirror_direct it was given.
    await create(c, "M", mirror={"name": "O"}, mirror_direct=True)
    await create(c, "O", subjects=["o.>"])  # no allow_direct: only the mirror answers
    await publish(c, "o.a", "hello")
    await wait_messages(c, "M", 1)

    async def answered() -> bool:
        try:
            msg = await c.request("$JS.API.DIRECT.GET.O", {"seq": 1}, timeout=1)
        except TimeoutError:
            return False
        return msg.data == b"hello" and msg.header("Nats-Stream") == "M"

    await wait_for(answered, timeout=SYNC_TIMEOUT)
    # mirror_direct is about the origin's name; without allow_direct nobody serves the mirror's
    # own: 503 no responders, naming the subject (2.11+).
    reply = await c.request("$JS.API.DIRECT.GET.M", {"seq": 1}, timeout=5)
    assert (reply.status, reply.header("Nats-Subject")) == ("503", "$JS.API.DIRECT.GET.M")


@pytest.mark.parametrize("kind", KINDS)
async def test_sources_follow_updates(pair_clients: dict[str, RawClient], kind: str) -> None:
    c = pair_clients[kind]
    await create(c, "O1", subjects=["one"])
    await create(c, "O2", subjects=["two"])
    await publish(c, "one", "1a")
    await publish(c, "two", "2a")
    await create(c, "S", sources=[{"name": "O1"}])
    await wait_messages(c, "S", 1)
    updated = await c.api(
        "$JS.API.STREAM.UPDATE.S", {"name": "S", "sources": [{"name": "O1"}, {"name": "O2"}]}
    )
    assert sorted(s["name"] for s in updated["sources"]) == ["O1", "O2"]
    await wait_messages(c, "S", 2)
    updated = await c.api("$JS.API.STREAM.UPDATE.S", {"name": "S", "sources": [{"name": "O2"}]})
    assert [s["name"] for s in updated["sources"]] == ["O2"]
    await publish(c, "one", "1b")  # no longer sourced
    await publish(c, "two", "2b")
    await wait_messages(c, "S", 3)
    assert [m["data"] for m in await stored(c, "S")] == ["1a", "2a", "2b"]


async def test_restart_resumes_without_duplicates_or_gaps(server: Target) -> None:
    c = await RawClient.connect(server.url)
    try:
        await create(c, "O", subjects=["o.>"])
        await create(c, "M", mirror={"name": "O"})
        await create(c, "S", subjects=["s.>"], sources=[{"name": "O"}])
        await create(c, "SP", sources=[{"name": "O"}])
        for i in range(3):
            await publish(c, "o.a", f"a{i}")
        await wait_messages(c, "M", 3)
        await wait_messages(c, "SP", 3)
        await wait_messages(c, "S", 3)
        await publish(c, "s.local", "L1")  # the newest message of S is not a sourced one
        # SP loses every copy: after the restart it must not take them again.
        assert (await c.api("$JS.API.STREAM.PURGE.SP"))["purged"] == 3
    finally:
        await c.close()
    server.restart()
    c = await RawClient.connect(server.url)
    try:
        for i in range(2):
            await publish(c, "o.a", f"b{i}")
        await wait_messages(c, "M", 5)
        await wait_messages(c, "S", 6)
        await wait_messages(c, "SP", 2)
        assert [(m["seq"], m["data"]) for m in await stored(c, "M")] == [
            (1, "a0"),
            (2, "a1"),
            (3, "a2"),
            (4, "b0"),
            (5, "b1"),
        ]
        source = await stored(c, "S")
        assert [m["data"] for m in source] == ["a0", "a1", "a2", "L1", "b0", "b1"]
        assert [origin_of(m)[1] for m in source if m["data"] != "L1"] == [1, 2, 3, 4, 5]
        assert [(m["seq"], m["data"]) for m in await stored(c, "SP")] == [(4, "b0"), (5, "b1")]
        for name in ("M", "S", "SP"):
            i = await info(c, name)
            feeds = [i["mirror"]] if "mirror" in i else i["sources"]
            assert all(f["lag"] == 0 and "error" not in f for f in feeds), i
        # One internal consumer each on the origin: those of before the restart did not come back.
        assert (await c.api("$JS.API.INFO"))["consumers"] == 3
    finally:
        await c.close()


def _bytes_of(server: Target, stream: str) -> int:
    """What ``stream``'s first message block holds (both servers' file layout)."""
    try:
        return (server.store_dir / "jetstream" / "$G" / "streams" / stream / "msgs" / "1.blk").stat().st_size
    except FileNotFoundError:
        return 0


async def test_kill_9_while_many_sources_catch_up_neither_loses_nor_duplicates(server: Target) -> None:
    """A stream sourcing 30 origins, killed (``kill -9``) as soon as its first copies are written,
    holds every message once after the restart, each origin's in its order: the restart finds each
    source's position in copies that many feeds stored in one pass (``sourcing.SHARED_FLUSH``: ours
    writes the 12,000 of this catch-up in one write, nats-server a few hundred at a time)."""
    n, each = 30, 400
    c = await RawClient.connect(server.url)
    try:
        for i in range(n):
            await create(c, f"O{i}", subjects=[f"o.{i}.>"])
        for j in range(each):
            for i in range(n):
                c.publish(f"o.{i}.{j}", f"{i}.{j}".encode())
        await c.flush()
        for i in range(n):
            await wait_messages(c, f"O{i}", each)
        await create(c, "AGG", sources=[{"name": f"O{i}"} for i in range(n)])


        async def written() -> bool:
            return _bytes_of(server, "AGG") > 0

        await wait_for(written, SYNC_TIMEOUT, 0.001)  # (killed once it wrote the first of them)
        server.kill()
    finally:
        await c.close()
    server.start()
    c = await RawClient.connect(server.url)
    try:
        await wait_messages(c, "AGG", n * each)
        inbox = c.new_inbox()
        sub = c.subscribe(inbox)
        assert "error" not in await c.add_consumer("AGG", "all", deliver_subject=inbox, ack_policy="none")
        copies: dict[str, list[str]] = {}
        for m in await sub.collect(n * each):
            copies.setdefault((m.header("Nats-Stream-Source") or "").split(" ")[0], []).append(m.data.decode())
        assert copies == {f"O{i}": [f"{i}.{j}" for j in range(each)] for i in range(n)}
    finally:
        await c.close()


# --- ours only: 2.10 features and the fixes of later nats-server releases ---------------------


async def test_sourced_duplicates_are_dropped_and_sourcing_goes_on(
    pair_clients: dict[str, RawClient],
) -> None:
    """A copy whose Nats-Msg-Id is inside the duplicate window is dropped and sourcing goes on
    (nats-server 2.9.10 instead retried it forever, nats-io/nats-server#4459). Since 2.11 a
    sourcing stream gets no default duplicate window, so the test sets one."""
    window = 120 * 10**9
    for kind in (NATS_SERVER, EMBEDDED):
        c = pair_clients[kind]
        await create(c, "O1", subjects=["one"])
        await create(c, "O2", subjects=["two"])
        await create(c, "S", subjects=["s"], sources=[{"name": "O1"}], duplicate_window=window)
        await publish(c, "s", "local", ("Nats-Msg-Id", "x"))
        await publish(c, "one", "dup of local", ("Nats-Msg-Id", "x"))
        await publish(c, "one", "fresh", ("Nats-Msg-Id", "y"))
        await wait_messages(c, "S", 2)
        await c.api(
            "$JS.API.STREAM.UPDATE.S",
            {
                "name": "S",
                "subjects": ["s"],
                "sources": [{"name": "O1"}, {"name": "O2"}],
                "duplicate_window": window,
            },
        )
        await publish(c, "two", "dup of fresh", ("Nats-Msg-Id", "y"))
        await publish(c, "two", "last", ("Nats-Msg-Id", "z"))
        await wait_messages(c, "S", 3)
        assert [m["data"] for m in await stored(c, "S")] == ["local", "fresh", "last"], kind


async def test_sourced_copies_drop_the_publishers_expectations(pair_clients: dict[str, RawClient]) -> None:
    """As nats-server 2.10.14+: a copy does not carry ``Nats-Expected-*`` (checked at the origin);
    2.9.10 checks them against the sourcing stream and stalls."""
    c = pair_clients[EMBEDDED]
    await create(c, "O", subjects=["o"])
    await create(c, "S", subjects=["s"], sources=[{"name": "O"}])
    await publish(c, "s", "local")
    await publish(c, "o", "first", ("Nats-Expected-Last-Sequence", "0"), ("Nats-Msg-Id", "m1"))
    await publish(c, "o", "second", ("Nats-Expected-Last-Subject-Sequence", "1"))
    await wait_messages(c, "S", 3)
    copies = (await stored(c, "S"))[1:]
    assert [m["data"] for m in copies] == ["first", "second"]
    # 2.12+ append the subject at the origin, 2.15 the origin's identity.
    ident = await origin_identity(c, "O")
    assert copies[0]["hdrs"] == {"Nats-Msg-Id": "m1", "Nats-Stream-Source": f"O 1 > > o {ident}"}
    assert copies[1]["hdrs"] == {"Nats-Stream-Source": f"O 2 > > o {ident}"}


async def origin_identity(c: RawClient, stream: str) -> str:
    """The stream's ``Nats-Stream-Identity``, from a direct consumer's create reply (2.15)."""
    config = {"direct": True, "deliver_subject": c.new_inbox(), "ack_policy": "none", "mem_storage": True}
    msg = await c.request(f"$JS.API.CONSUMER.CREATE.{stream}", {"stream_name": stream, "config": config})
    ident = msg.header("Nats-Stream-Identity")
    assert ident, msg
    await c.api(f"$JS.API.CONSUMER.DELETE.{stream}.{msg.json()['name']}")
    return ident


async def test_sourced_copies_carry_the_origins_identity_across_a_restart(server: Target) -> None:
    """2.15 ``genSourceHeader``: ``<origin> <seq> <filter> <dest> <subject> <identity>``, the
    identity as the origin's consumer create answered it; after a restart the sourcing stream
    reads it back from its newest copy (``setStartingSequenceForSources``) and keeps writing it,
    and a mirror's copies carry no ``Nats-Stream-Source`` at all."""
    c = await RawClient.connect(server.url)
    try:
        await create(c, "O", subjects=["o.>"])
        await create(c, "S", subjects=["s.>"], sources=[{"name": "O", "filter_subject": "o.a"}])
        ident = await origin_identity(c, "O")
        await publish(c, "o.a", "one")
        await wait_messages(c, "S", 1)
        assert [m["hdrs"] for m in await stored(c, "S")] == [{"Nats-Stream-Source": f"O 1 o.a > o.a {ident}"}]
    finally:
        await c.close()
    server.restart()
    c = await RawClient.connect(server.url)
    try:
        await publish(c, "o.a", "two")
        await wait_messages(c, "S", 2)
        assert [m["hdrs"]["Nats-Stream-Source"] for m in await stored(c, "S")] == [
            f"O 1 o.a > o.a {ident}",
            f"O 2 o.a > o.a {ident}",
        ]
        # A recreated origin (new identity) is taken again from its start.
        await c.api("$JS.API.STREAM.DELETE.O")
        await create(c, "O", subjects=["o.>"])
        await publish(c, "o.a", "three")
        await wait_messages(c, "S", 3)
        ident2 = await origin_identity(c, "O")
        assert ident2 != ident
        assert (await stored(c, "S"))[-1]["hdrs"] == {"Nats-Stream-Source": f"O 1 o.a > o.a {ident2}"}
    finally:
        await c.close()


async def test_subject_transforms_and_one_origin_sourced_twice(pair_clients: dict[str, RawClient]) -> None:
    c = pair_clients[EMBEDDED]
    await create(c, "O", subjects=["o.>"])
    for subject in ("o.a", "o.b", "o.c"):
        await publish(c, subject, subject)
    await create(
        c,
        "S",
        sources=[
            {"name": "O", "filter_subject": "o.a"},
            {
                "name": "O",
                "subject_transforms": [{"src": "o.b", "dest": "b.moved"}, {"src": "o.c", "dest": ""}],
            },
        ],
    )
    await create(c, "M", mirror={"name": "O", "subject_transforms": [{"src": "o.*", "dest": "m.$1"}]})
    await wait_messages(c, "S", 3)
    msgs = sorted(await stored(c, "S"), key=lambda m: m["data"])
    ident = await origin_identity(c, "O")
    assert [(m["subject"], m["hdrs"]["Nats-Stream-Source"]) for m in msgs] == [
        ("o.a", f"O 1 o.a > o.a {ident}"),
        ("b.moved", f"O 2 o.b\fo.c b.moved\f> o.b {ident}"),
        ("o.c", f"O 3 o.b\fo.c b.moved\f> o.c {ident}"),
    ]
    sources = (await info(c, "S"))["sources"]
    assert {s.get("filter_subject", "") for s in sources} == {"o.a", ""}
    assert [len(s.get("subject_transforms", [])) for s in sources].count(2) == 1
    await wait_messages(c, "M", 3)
    assert [(m["seq"], m["subject"]) for m in await stored(c, "M")] == [(1, "m.a"), (2, "m.b"), (3, "m.c")]


VALIDATION_210: dict[str, tuple[dict[str, Any], int]] = {
    "mirror-first-seq": ({"mirror": {"name": "O"}, "first_seq": 5}, 10143),
    "mirror-bad-name": ({"mirror": {"name": "a.b"}}, 10142),
    "mirror-filter-and-transforms": (
        {
            "mirror": {
                "name": "O",
                "filter_subject": "o.a",
                "subject_transforms": [{"src": "o.b", "dest": ""}],
            }
        },
        10150,
    ),
    "mirror-transform-bad-source": (
        {"mirror": {"name": "O", "subject_transforms": [{"src": "o..b"}]}},
        10151,
    ),
    "mirror-transform-bad-destination": (
        {"mirror": {"name": "O", "subject_transforms": [{"src": "o.*", "dest": "x.*"}]}},
        10154,
    ),
    "mirror-overlapping-filters": (
        {"mirror": {"name": "O", "subject_transforms": [{"src": "o.*"}, {"src": "o.a"}]}},
        10152,
    ),
    "source-bad-name": ({"sources": [{"name": "a b"}]}, 10141),
    "source-duplicate": ({"sources": [{"name": "O"}, {"name": "O", "filter_subject": ">"}]}, 10140),
    "source-filter-and-transforms": (
        {"sources": [{"name": "O", "filter_subject": "o.a", "subject_transforms": [{"src": "o.b"}]}]},
        10144,
    ),
    "source-transform-bad-source": (
        {"sources": [{"name": "O", "subject_transforms": [{"src": "o..b"}]}]},
        10145,
    ),
    "source-transform-bad-destination": (
        {"sources": [{"name": "O", "subject_transforms": [{"src": "o.>", "dest": "x"}]}]},
        10146,
    ),
    "source-overlapping-filters": (
        {"sources": [{"name": "O", "subject_transforms": [{"src": "o.>"}, {"src": "o.a"}]}]},
        10147,
    ),
}


@pytest.mark.parametrize("case", sorted(VALIDATION_210))
async def test_210_validation(pair_clients: dict[str, RawClient], case: str) -> None:
    cfg, code = VALIDATION_210[case]
    c = pair_clients[EMBEDDED]
    await create(c, "O", subjects=["o.>"])
    resp = await c.api("$JS.API.STREAM.CREATE.X", {"name": "X", **cfg})
    assert resp.get("error", {}).get("err_code") == code, resp
    assert (await c.api("$JS.API.STREAM.NAMES"))["streams"] == ["O"]


async def test_external_origin_through_a_domain_prefix(tmp_path: Path) -> None:
    """A source and a mirror reaching the origin through ``$JS.<domain>.API`` with a deliver
    prefix (nats-server 2.9.10 cannot reach its own domain this way; ours routes it locally)."""
    target = make_target(EMBEDDED, tmp_path / "hub", jetstream_settings={"domain": "hub"})
    c = await RawClient.connect(target.url)
    try:
        ext = {"api": "$JS.hub.API", "deliver": "from.hub"}
        await create(c, "O", subjects=["o.>"])
        await publish(c, "o.a", "x")
        await create(c, "S", sources=[{"name": "O", "external": ext}])
        await create(c, "M", mirror={"name": "O", "external": ext})
        await publish(c, "o.b", "y")
        await wait_messages(c, "M", 2)
        sourced = await wait_messages(c, "S", 2)
        assert sourced["sources"][0]["external"] == ext
        ident = await origin_identity(c, "O")
        assert [m["hdrs"]["Nats-Stream-Source"] for m in await stored(c, "S")] == [
            f"O:{api_hash('$JS.hub.API')} 1 > > o.a {ident}",
            f"O:{api_hash('$JS.hub.API')} 2 > > o.b {ident}",
        ]
    finally:
        await c.close()
        target.stop()


# --- units ------------------------------------------------------------------------------------


def test_index_names_and_headers_as_nats_server_210() -> None:
    assert index_name(StreamSource(name="O")) == "O > >"
    assert index_name(StreamSource(name="O", filter_subject="o.a")) == "O o.a >"
    transforms = [SubjectTransformConfig(src="a.>", dest="b.>"), SubjectTransformConfig(src="c", dest="")]
    assert index_name(StreamSource(name="O", subject_transforms=transforms)) == "O a.>\fc b.>\f>"
    external = StreamSource(name="O", external=ExternalStream(api="$JS.hub.API", deliver=""))
    assert index_name(external) == f"O:{api_hash('$JS.hub.API')} > >"
    assert len(api_hash("x")) == 8 and api_hash("x") == api_hash("x") != api_hash("y")
    assert source_header("O o.a >", 42) == "O 42 o.a >"
    assert parse_source_header("O 42 o.a >") == ("O", "O o.a >", 42, "")
    assert parse_source_header("O 42 o.a > o.a") == ("O", "O o.a >", 42, "")  # 2.12
    assert parse_source_header("O 42 o.a > o.a Id3nt") == ("O", "O o.a >", 42, "Id3nt")  # 2.15
    assert source_header("O o.a >", 42, "o.a", "Id3nt") == "O 42 o.a > o.a Id3nt"
    assert parse_source_header("O 42") == ("O", "", 42, "")  # nats-server 2.9
    assert parse_source_header("$JS.ACK.O.c.1.7.3.123.0") == ("O", "", 7, "")  # before 2.2.1
    assert parse_source_header("garbage") == ("", "", 0, "")
    assert parse_source_header("O x") == ("", "", 0, "")


def test_ack_reply_parsing() -> None:
    d = parse_ack_reply("$JS.ACK.ORDERS.cons.1.12.3.1700000000000000000.4")
    assert d is not None
    assert (d.consumer, d.delivered, d.sseq, d.dseq, d.ts, d.pending) == (
        "cons",
        1,
        12,
        3,
        1700000000000000000,
        4,
    )
    d = parse_ack_reply("$JS.ACK.hub.ACCHASH.ORDERS.cons.2.12.3.17.0.rnd")
    assert d is not None and (d.consumer, d.delivered, d.sseq) == ("cons", 2, 12)
    assert parse_ack_reply("_INBOX.x") is None
    assert parse_ack_reply("$JS.ACK.O.c.1.x.3.4.5") is None
    d = parse_ack_reply("$JS.ACK.hub.ACCHASH.ORDERS.cons.2.12.3.17.5")  # 2.10 form without the token
    assert d == ("cons", 2, 12, 3, 17, 5)
    assert parse_ack_reply("$JS.ACK.ORDERS.cons.1.12.3.17.4.x") is None  # 10 tokens
    assert parse_ack_reply("$JS.NAK.ORDERS.cons.1.12.3.17.4") is None
    assert parse_ack_reply("$JS.ACK.hub.ACCHASH.ORDERS.cons.2.12.x.17.0.rnd") is None


def test_config_round_trips_through_the_stream_meta() -> None:
    """A mirror's opt_start_time (a time inside the config) survives the store's meta file."""
    from pyjetstream.api.models_stream import StreamConfig
    from pyjetstream.api.timefmt import NanoTime
    from pyjetstream.server.jetstream.stream import decode_stream_meta, encode_stream_meta

    cfg = StreamConfig(
        name="M", mirror=StreamSource(name="O", opt_start_time=NanoTime(1_700_000_000_123_456_789))
    )
    decoded, created = decode_stream_meta(encode_stream_meta(cfg, 5 * NS))
    assert decoded == cfg and created == 5 * NS
    assert json.loads(encode_stream_meta(cfg, 0))["config"]["mirror"]["opt_start_time"].startswith("2023-")
