"""Atomic batch publish (ADR-50), ours vs nats-server 2.15.1.

Each scenario sends the same messages to both servers and compares every reply: the empty reply
to a staged message, the batch PubAck (``"batch"``, ``"count"``), each error (code, err_code,
text, field order), then what the stream holds. PubAcks are compared as ordered JSON pairs.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from tests.jetstream.differential import api_request, reset
from tests.jetstream.rawnats import RawNats, headers
from tests.support.targets import EMBEDDED, NATS_SERVER, Target, make_target

Scenario = Callable[["Session"], Awaitable[None]]


def batch_hdr(batch_id: str, seq: int | str, commit: str | None = None, *extra: tuple[str, str]) -> bytes:
    pairs = [("Nats-Batch-Id", batch_id), ("Nats-Batch-Sequence", str(seq))]
    if commit is not None:
        pairs.append(("Nats-Batch-Commit", commit))
    return headers(*pairs, *extra)


def _shape(data: bytes) -> Any:
    """A reply as ordered JSON pairs (field order kept), or the raw text."""
    if not data:
        return ""
    try:
        return json.loads(data, object_pairs_hook=list)
    except ValueError:
        return data.decode(errors="replace")


class Session:
    """One target's connection and the observations a scenario records."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.client: RawNats | None = None
        self.seen: list[Any] = []

    async def __aenter__(self) -> Session:
        self.client = await RawNats.connect(self.target.url)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.client is not None
        await self.client.close()

    @property
    def c(self) -> RawNats:
        assert self.client is not None
        return self.client

    async def api(self, subject: str, body: Any = b"") -> Any:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        return (await self.c.request("$JS.API." + subject, data, timeout=10)).json()

    async def create(self, name: str = "S", **cfg: Any) -> None:
        """Through `api_request`: nats-server may refuse a create right after the account's last
        stream was deleted (10049, its removal of the empty directories racing the create)."""
        body = json.dumps({"name": name, "subjects": [f"{name.lower()}.>"], **cfg}).encode()
        reply = (await api_request(self.c, f"$JS.API.STREAM.CREATE.{name}", body, self.target)).json()
        assert "error" not in reply, reply

    async def pub(self, subject: str, hdr: bytes | None, data: bytes = b"d", note: str = "") -> None:
        """Publish with a reply and record the answer (or that none came)."""
        try:
            msg = await self.c.request(subject, data, hdr=hdr, timeout=3)
            self.seen.append((note or subject, msg.hdr.decode() if msg.hdr else None, _shape(msg.data)))
        except TimeoutError:
            self.seen.append((note or subject, "no reply"))

    async def send(self, subject: str, hdr: bytes | None, data: bytes = b"d") -> None:
        self.c.publish(subject, data, hdr=hdr)
        await self.c.flush()

    async def wait_msgs(self, count: int, name: str = "S") -> None:
        deadline = time.monotonic() + 10
        while True:
            state = (await self.api(f"STREAM.INFO.{name}"))["state"]
            if state["messages"] == count or time.monotonic() > deadline:
                self.seen.append(("messages", state["messages"], state["last_seq"]))
                return
            await asyncio.sleep(0.02)

    async def stored(self, seq: int, name: str = "S") -> None:
        reply = await self.api(f"STREAM.MSG.GET.{name}", {"seq": seq})
        message = reply.get("message") or reply.get("error")
        if isinstance(message, dict):
            message.pop("time", None)
        self.seen.append(("stored", seq, message))


async def compare(pair: dict[str, Target], scenario: Scenario) -> list[Any]:
    results = {}
    for kind in (NATS_SERVER, EMBEDDED):
        async with Session(pair[kind]) as session:
            # (nats-server's removals of deleted stream directories done before and after its
            # deletes: else a name deleted twice in a moment keeps its blocks for the next create)
            await reset(session.c, pair[kind])
            await scenario(session)
            results[kind] = session.seen
    ours, theirs = results[EMBEDDED], results[NATS_SERVER]
    for i, (a, b) in enumerate(zip(ours, theirs, strict=False)):
        assert a == b, f"observation {i}:\n  ours:        {a}\n  nats-server: {b}"
    assert len(ours) == len(theirs)
    return ours


@pytest.fixture
def pair(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    # A fresh pair per scenario: nats-server 2.15 removes a deleted stream's files after it
    # answers STREAM.DELETE, so re-creating the same name at once can fail with 10049.
    base = tmp_path_factory.mktemp("atomic")
    started = {kind: make_target(kind, base / kind) for kind in (NATS_SERVER, EMBEDDED)}
    yield started
    for target in started.values():
        target.stop()


# --- scenarios ----------------------------------------------------------------------------------


async def commit_forms(s: Session) -> None:
    await s.create(allow_atomic=True)
    await s.pub("s.a", batch_hdr("A", 1), note="stage 1")
    await s.send("s.b", batch_hdr("A", 2))
    await s.pub("s.c", batch_hdr("A", 3, "1"), note="commit 3")
    await s.pub("s.a", batch_hdr("B", 1), note="stage B1")
    await s.pub("s.x", batch_hdr("B", 2, "eob"), b"not stored", note="commit eob")
    await s.pub("s.a", batch_hdr("C", 1, "1"), note="single")
    await s.pub("s.a", batch_hdr("y" * 64, 1, "1"), note="64-char id")
    await s.pub("s.a", batch_hdr("A", 1, "1"), note="id reused after its commit")
    await s.send("s.r", batch_hdr("R", 1))
    await s.send("s.r", batch_hdr("R", 2, "1"))
    await s.wait_msgs(9)
    for seq in (1, 3, 4, 5, 9):
        await s.stored(seq)


async def protocol_errors(s: Session) -> None:
    await s.create("N")
    await s.pub("n.a", batch_hdr("b0", 1), note="disabled")
    await s.pub("n.a", batch_hdr("b0", 1, "1"), note="disabled commit")
    await s.create(allow_atomic=True)
    await s.pub("s.a", batch_hdr("D", 1, "eob"), note="eob as first")
    await s.pub("s.a", batch_hdr("E", 2), note="starts at 2")
    await s.pub("s.a", batch_hdr("E", 2, "1"), note="starts at 2 with commit")
    await s.pub("s.a", batch_hdr("E", 1001), note="starts past the size limit")
    await s.pub("s.a", batch_hdr("E", 1001, "eob"), note="eob at the size limit")
    await s.pub("s.a", batch_hdr("F", 1), note="gap 1")
    await s.pub("s.a", batch_hdr("F", 3), note="gap 3")
    await s.pub("s.a", batch_hdr("F", 4, "1"), note="gap commit")
    await s.pub("s.a", headers(("Nats-Batch-Id", "G")), note="no sequence")
    await s.pub("s.a", batch_hdr("G", "x"), note="bad sequence")
    await s.pub("s.a", batch_hdr("G", 0), note="zero sequence")
    await s.pub("s.a", batch_hdr("x" * 65, 1), note="65-char id")
    await s.pub("s.a", batch_hdr("H", 1), note="H1")
    await s.pub("s.a", batch_hdr("H", 2, "yes"), note="bad commit value")
    await s.pub("s.a", batch_hdr("H", 3, "1"), note="after bad commit")
    await s.pub("s.a", batch_hdr("H2", 1, "0"), note="bad commit first")
    await s.pub("s.a", batch_hdr("T", 1, "1", ("Nats-TTL", "1s")), note="ttl disabled")
    await s.pub("s.a", batch_hdr("V", 1, "1", ("Nats-Required-Api-Level", "99")), note="api level")
    await s.pub("s.a", batch_hdr("V", 1, "1", ("Nats-Required-Api-Level", "1")), note="api level ok")
    await s.update_sealed()
    await s.pub("s.a", batch_hdr("Z", 1, "1"), note="sealed")
    await s.wait_msgs(1)
    await s.stored(1)


async def _update_sealed(self: Session) -> None:
    cfg = (await self.api("STREAM.INFO.S"))["config"]
    cfg["sealed"] = True
    reply = await self.api("STREAM.UPDATE.S", cfg)
    assert "error" not in reply, reply


Session.update_sealed = _update_sealed  # type: ignore[attr-defined]


async def consistency_checks(s: Session) -> None:
    await s.create(allow_atomic=True)
    await s.pub("s.a", batch_hdr("I", 1, None, ("Nats-Msg-Id", "m1")), note="dup stage")
    await s.pub("s.a", batch_hdr("I", 2, "1", ("Nats-Msg-Id", "m1")), note="dup inside batch")
    await s.pub("s.a", headers(("Nats-Msg-Id", "w1")), note="plain with id")
    await s.pub("s.a", batch_hdr("J", 1, "1", ("Nats-Msg-Id", "w1")), note="dup of window")
    await s.pub("s.a", batch_hdr("K", 1, "1", ("Nats-Expected-Last-Msg-Id", "w1")), note="unsupported header")
    await s.pub("s.a", batch_hdr("L", 1, None, ("Nats-Expected-Last-Sequence", "1")), note="exp first")
    await s.pub("s.a", batch_hdr("L", 2, "1"), note="exp first commit")
    await s.pub("s.a", batch_hdr("M", 1), note="M1")
    await s.pub("s.a", batch_hdr("M", 2, "1", ("Nats-Expected-Last-Sequence", "99")), note="exp second")
    await s.pub("s.a", batch_hdr("M2", 1), note="M2 1")
    await s.pub("s.a", batch_hdr("M2", 2, "1", ("Nats-Expected-Last-Sequence", "4")), note="exp second right")
    await s.pub("s.a", batch_hdr("M3", 1, "1", ("Nats-Expected-Last-Sequence", "1")), note="exp wrong")
    await s.pub("s.q", batch_hdr("N", 1, None, ("Nats-Expected-Last-Subject-Sequence", "0")), note="subj 1")
    await s.pub("s.q", batch_hdr("N", 2, "1", ("Nats-Expected-Last-Subject-Sequence", "0")), note="subj twice")
    await s.pub("s.q", batch_hdr("O", 1, None, ("Nats-Expected-Last-Subject-Sequence", "0")), note="subj ok")
    await s.pub(
        "s.w",
        batch_hdr(
            "O",
            2,
            None,
            ("Nats-Expected-Last-Subject-Sequence", "0"),
            ("Nats-Expected-Last-Subject-Sequence-Subject", "s.q"),
        ),
        note="subj override cached",
    )
    await s.pub("s.w", batch_hdr("O", 3, "1"), note="subj commit")
    await s.pub(
        "s.a",
        batch_hdr("P", 1, "1", ("Nats-Expected-Last-Subject-Sequence-Subject", "s.q")),
        note="override alone",
    )
    await s.pub("s.q", batch_hdr("Q", 1, "1", ("Nats-Expected-Last-Subject-Sequence", "2")), note="subj wrong")
    await s.pub("s.q", batch_hdr("X", 1, "1", ("Nats-Expected-Stream", "OTHER")), note="expected stream")
    await s.pub("s.q", batch_hdr("Y", 1, "1", ("Nats-Rollup", "sub")), note="rollup not allowed")
    await s.wait_msgs(6)


async def rollups_and_discard_new(s: Session) -> None:
    await s.create(allow_atomic=True, allow_rollup_hdrs=True, discard="new", max_msgs=6, storage="memory")
    await s.pub("s.a", None, note="plain")
    await s.pub("s.a", batch_hdr("A", 1), note="A1")
    await s.pub("s.a", batch_hdr("A", 2, "1", ("Nats-Rollup", "sub")), note="rollup sub after same subject")
    await s.pub("s.a", batch_hdr("B", 1), note="B1")
    await s.pub("s.b", batch_hdr("B", 2, "1", ("Nats-Rollup", "all")), note="rollup all not first")
    await s.pub("s.b", batch_hdr("C", 1, "1", ("Nats-Rollup", "bogus")), note="rollup bad value")
    await s.pub("s.c", batch_hdr("D", 1, None, ("Nats-Rollup", "sub")), note="D1 rollup sub")
    await s.pub("s.d", batch_hdr("D", 2, "1"), note="D commit")
    for i in range(1, 6):
        await s.pub("s.e", batch_hdr("E", i, "1" if i == 5 else None), note=f"E{i}")
    await s.pub("s.e", batch_hdr("F", 1), note="F1")
    await s.pub("s.e", batch_hdr("F", 2, "1"), note="F fits")
    await s.pub("s.f", batch_hdr("G", 1, "1"), note="over max_msgs")
    await s.wait_msgs(6)


async def after_restart(s: Session) -> None:
    await s.create(allow_atomic=True)
    await s.pub("s.a", batch_hdr("A", 1), note="A1")
    await s.pub("s.a", batch_hdr("A", 2, "1", ("Nats-Msg-Id", "id-2")), note="A commit")
    await s.pub("s.b", batch_hdr("B", 1), note="staged before the kill")
    await s.pub("s.b", batch_hdr("B", 2), note="staged 2 before the kill")
    await s.c.close()
    s.target.kill()
    s.target.start()
    s.client = await RawNats.connect(s.target.url)
    await s.wait_msgs(2)
    await s.pub("s.b", batch_hdr("B", 3, "1"), note="commit of a batch the restart dropped")
    await s.pub("s.a", batch_hdr("C", 1, "1", ("Nats-Msg-Id", "id-2")), note="dup id after restart")
    await s.pub("s.a", batch_hdr("D", 1), note="D1 after restart")
    await s.pub("s.a", batch_hdr("D", 2, "1"), note="D commit after restart")
    await s.wait_msgs(4)
    await s.stored(2)


async def ttl_counters_schedules(s: Session) -> None:
    await s.create(allow_atomic=True, allow_msg_ttl=True)
    await s.pub("s.a", batch_hdr("A", 1, None, ("Nats-TTL", "1h")), note="ttl staged")
    await s.pub("s.a", batch_hdr("A", 2, "1", ("Nats-TTL", "bogus")), note="invalid ttl")
    await s.pub("s.a", batch_hdr("B", 1, "1", ("Nats-TTL", "1h")), note="ttl committed")
    await s.stored(1)
    await s.create("C", allow_atomic=True, allow_msg_counter=True)
    await s.pub("c.a", batch_hdr("I", 1, None, ("Nats-Incr", "+2")), b"", note="incr 1")
    await s.pub("c.a", batch_hdr("I", 2, None, ("Nats-Incr", "+3")), b"", note="incr 2")
    await s.pub("c.b", batch_hdr("I", 3, "1", ("Nats-Incr", "-1")), b"", note="incr commit")
    await s.pub("c.a", batch_hdr("J", 1, "1"), b"", note="counter without incr")
    await s.pub("c.a", batch_hdr("K", 1, "1", ("Nats-Incr", "x")), b"", note="bad incr")
    await s.pub("c.a", batch_hdr("L", 1, "1", ("Nats-Incr", "+1")), b"body", note="incr with a body")
    await s.wait_msgs(3, "C")
    for seq in (1, 2, 3):
        await s.stored(seq, "C")
    await s.pub("s.a", batch_hdr("M", 1, "1", ("Nats-Schedule", "@every 1h"), ("Nats-Schedule-Target", "s.t")), note="schedules off")


async def mirror_configs(s: Session) -> None:
    await s.create("O")
    for flags in ({"allow_atomic": True}, {"allow_batched": True}, {"allow_atomic": True, "allow_batched": True}):
        cfg = {"name": "M", "mirror": {"name": "O"}, **flags}
        reply = await s.api("STREAM.CREATE.M", cfg)
        s.seen.append(("mirror", sorted(flags), reply.get("error")))


SCENARIOS = {
    "mirror-configs": mirror_configs,
    "ttl-counters-schedules": ttl_counters_schedules,
    "commit-forms": commit_forms,
    "protocol-errors": protocol_errors,
    "consistency-checks": consistency_checks,
    "rollups-and-discard-new": rollups_and_discard_new,
    "after-kill-restart": after_restart,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_atomic_batch_matches_nats_server(name: str, pair: dict[str, Target]) -> None:
    seen = await compare(pair, SCENARIOS[name])
    assert seen


# --- limits (their own servers: the limits are server config) -----------------------------------

LIMITS = {"jetstream_settings": {"limits": {"batch": {"max_msgs": 3, "max_inflight_per_stream": 2, "timeout": "1s"}}}}


async def limits_scenario(s: Session) -> None:
    await s.create(allow_atomic=True)
    await s.create("T", allow_atomic=True)
    sub_id = 900
    s.c.subscribe("$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED.>", sub_id)
    await s.c.flush()
    await s.pub("s.a", batch_hdr("A", 1), note="A1")
    await s.pub("s.a", batch_hdr("B", 1), note="B1")
    await s.pub("s.a", batch_hdr("C", 1), note="third open batch")
    await s.pub("t.a", batch_hdr("C", 1), note="other stream has room")
    await s.pub("s.a", batch_hdr("A", 2), note="A2")
    await s.pub("s.a", batch_hdr("A", 3), note="A3")
    await s.pub("s.a", batch_hdr("A", 4, "1"), note="A4 too large")
    await s.pub("s.a", batch_hdr("C", 5), note="starts past max_msgs")
    await s.pub("s.a", batch_hdr("C", 4, "eob"), note="eob just past max_msgs")
    adv = await s.c.next_msg(timeout=5)
    event = json.loads(adv.data)
    s.seen.append(("advisory", adv.subject, event["type"], event["stream"], event["batch"], event["reason"]))
    await asyncio.sleep(1.6)  # the batch timeout is what is under test
    await s.pub("s.a", batch_hdr("B", 2, "1"), note="B after its timeout")
    reasons = set()
    deadline = time.monotonic() + 5
    while len(reasons) < 1 and time.monotonic() < deadline:
        try:  # (a gap of a second is no end: the advisory can be that late on a loaded machine)
            adv = await s.c.next_msg(timeout=1)
        except TimeoutError:
            continue
        event = json.loads(adv.data)
        if event["batch"] == "B":
            reasons.add(event["reason"])
    s.seen.append(("timeout advisory", sorted(reasons)))
    await s.pub("s.a", batch_hdr("D", 1), note="D1 after the timeouts")
    await s.pub("s.a", batch_hdr("D", 2, "1"), note="D commit")
    await s.wait_msgs(2)


async def test_batch_limits_match_nats_server(tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("atomic-limits")
    started = {kind: make_target(kind, base / kind, **LIMITS) for kind in (NATS_SERVER, EMBEDDED)}
    try:
        await compare(started, limits_scenario)
    finally:
        for target in started.values():
            target.stop()


# --- a commit cut short by a crash (embedded only: nats-server completes it from its staged copy) --


async def test_partial_batch_at_the_tail_is_removed_on_recovery(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A kill -9 inside the commit's write leaves the stream ending in a batch message without
    ``Nats-Batch-Commit``; recovery removes that partial batch, keeps everything before it."""
    from pyjetstream.server.jetstream.store._fileutil import read_meta_file
    from pyjetstream.server.jetstream.store.filestore import FileStore, FileStoreConfig
    from pyjetstream.server.jetstream.stream import decode_stream_meta, store_config_for

    target = make_target(EMBEDDED, tmp_path / "srv")
    try:
        async with Session(target) as s:
            await s.create(allow_atomic=True)
            await s.pub("s.a", batch_hdr("A", 1), note="A1")
            await s.pub("s.a", batch_hdr("A", 2, "1"), note="A commit")
            await s.pub("s.p", None, note="plain")
        target.kill()
        # What a torn commit leaves: the first two of a three-message batch, no commit header.
        directory = target.store_dir / "jetstream" / "$G" / "streams" / "S"
        cfg, _ = decode_stream_meta(read_meta_file(str(directory)))
        store = FileStore(FileStoreConfig(directory=str(directory)), store_config_for(cfg))
        store.store_msg("s.b", batch_hdr("B", 1), b"x")
        store.store_msg("s.b", batch_hdr("B", 2), b"y")
        assert store.fast_state().last_seq == 5
        store.stop()
        target.start()
        async with Session(target) as s:
            await s.wait_msgs(3)
            assert s.seen[-1] == ("messages", 3, 3)
            await s.pub("s.b", batch_hdr("C", 1), note="C1")
            await s.pub("s.b", batch_hdr("C", 2, "1"), note="C commit")
            assert s.seen[-1][2] == [("stream", "S"), ("seq", 5), ("batch", "C"), ("count", 2)]
            await s.stored(3)
            assert s.seen[-1][2]["subject"] == "s.p"
    finally:
        target.stop()
