"""Issue 24, dimension 8: schedules, TTL expiry and the duplicate window cost the same per event
with many of them as with few (embedded server, steps counted, not timed).

- A new schedule and a run look at the schedules' heap (``MsgSchedules.steps``), not every
  schedule (nats-server keeps them in a timing wheel); a read's new schedules and a firing's
  messages are stored in one pass each, none through the per-message path.
- A TTL expiry tells only the consumers with something below the new first message, not every
  consumer of the stream.
- The duplicate window's timer fires at most every 50 ms (nats-server ``purgeMsgIds``), however
  many ids arrive.
"""

from __future__ import annotations

import asyncio
import datetime
from collections import Counter
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, headers, publish_acked, wait_for
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.dedupe import DedupeWindow
from pyjetstream.server.jetstream.stream_ingest import StreamIngest


def _schedule(target: str, pattern: str = "@every 1h") -> bytes:
    return headers(("Nats-Schedule", pattern), ("Nats-Schedule-Target", target))


#: What a new schedule and a firing call on the per-message paths (none: a read's schedules and a
#: firing's messages are stored in one pass each, ``Run._schedules``, `store_internal_run`).
PER_MESSAGE = ("process", "store_internal", "commit")


async def _schedule_steps(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[float, float, dict[str, int]]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("SC", ["sc.>"], storage="memory", allow_msg_schedules=True, allow_rollup_hdrs=True)
            await publish_acked(nc, [f"sc.s.{i}" for i in range(n)], [_schedule(f"sc.t.{i}") for i in range(n)])
            schedules: Any = server.jetstream.streams["SC"].schedules
            before = schedules.steps
            with count_calls(monkeypatch, StreamIngest, *PER_MESSAGE) as calls:
                await publish_acked(nc, [f"sc.n.{i}" for i in range(20)], [_schedule(f"sc.u.{i}") for i in range(20)])
            per_publish = (schedules.steps - before) / 20
            at = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
            pattern = "@at " + at.strftime("%Y-%m-%dT%H:%M:%SZ")
            await publish_acked(nc, [f"sc.f.{i}" for i in range(20)], [_schedule(f"sc.ft.{i}", pattern) for i in range(20)])
            before = schedules.steps

            async def fired() -> bool:
                info = await nc.api("$JS.API.STREAM.INFO.SC", {"subjects_filter": "sc.ft.>"})
                return len(info["state"].get("subjects") or {}) == 20

            with count_calls(monkeypatch, StreamIngest, *PER_MESSAGE) as fire_calls:
                await wait_for(fired, timeout=20)
            calls.update({f"fire {name}": count for name, count in fire_calls.items()})
            return per_publish, (schedules.steps - before) / 20, dict(calls)
        finally:
            await nc.close()


async def test_schedules_cost_per_publish_and_run_does_not_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _schedule_steps(100, monkeypatch)
    large = await _schedule_steps(1000, monkeypatch)
    assert small[0] == large[0] == 0, (small, large)  # a new schedule: pushed, nothing looked at
    assert small[1] <= 2 and large[1] <= 2, (small, large)  # a run: its own heap entries
    assert small[2] == large[2] == {}, (small, large)  # no schedule or fired message one by one


async def _expiry_visits(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, int]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("T", ["t.>"], storage="memory", allow_msg_ttl=True)
            await publish_acked(nc, [f"t.{i}" for i in range(30)], [headers(("Nats-TTL", "1s"))] * 30)
            for i in range(n):  # caught up: nothing of theirs expires
                resp = await nc.add_consumer("T", f"c{i}", durable_name=f"c{i}", deliver_policy="new")
                assert "error" not in resp, resp
            with count_calls(monkeypatch, Consumer, "on_stream_purged") as calls:

                async def expired() -> bool:
                    return bool((await nc.stream_info("T"))["state"]["messages"] == 0)

                await wait_for(expired, timeout=20)
            return dict(calls)
        finally:
            await nc.close()


async def test_ttl_expiry_tells_only_the_consumers_it_concerns(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _expiry_visits(monkeypatch, 5) == await _expiry_visits(monkeypatch, 50) == {}


async def _dedupe_fires(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("D", ["d.>"], storage="memory", duplicate_window=400_000_000)
            with count_calls(monkeypatch, DedupeWindow, "expire") as calls:
                for chunk in range(0, n, n // 10):  # ids arriving over ~0.2 s
                    ids = range(chunk, chunk + n // 10)
                    await publish_acked(nc, ["d.x"] * len(ids), [headers(("Nats-Msg-Id", f"id{i}")) for i in ids])
                    await asyncio.sleep(0.02)
                window: Any = server.jetstream.streams["D"].dedupe
                await wait_for(lambda: _is(len(window) == 0), timeout=20)
            return calls["expire"]
        finally:
            await nc.close()


async def _is(value: bool) -> bool:
    return value


async def test_duplicate_window_timer_fires_at_most_every_50_ms(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _dedupe_fires(monkeypatch, 100)
    large = await _dedupe_fires(monkeypatch, 1000)
    # ~0.6 s from the first id to the last one's expiry: at most one fire per 50 ms, whatever n.
    assert small <= 16 and large <= 16, (small, large)


async def _rollup_visits(monkeypatch: pytest.MonkeyPatch, n: int) -> int:
    """Schedules published (each rolls its subject up) into a stream with ``n`` consumers: how
    many consumers the roll-up purges look at."""
    from pyjetstream.server.jetstream import stream as stream_module

    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("SC", ["sc.>"], storage="memory", allow_msg_schedules=True, allow_rollup_hdrs=True)
            for i in range(n):
                resp = await nc.add_consumer("SC", f"c{i}", durable_name=f"c{i}", filter_subject=f"sc.t.{i}")
                assert "error" not in resp, resp
            looked = 0
            original = stream_module.filters_of

            def counting(cfg: Any) -> list[str]:
                nonlocal looked
                looked += 1
                return original(cfg)

            monkeypatch.setattr(stream_module, "filters_of", counting)
            # new schedules, then each replaced (its roll-up removes the one before)
            for _ in range(2):
                await publish_acked(nc, [f"sc.s.{i}" for i in range(10)], [_schedule(f"sc.t.{i}") for i in range(10)])
            monkeypatch.setattr(stream_module, "filters_of", original)
            return looked
        finally:
            await nc.close()


async def test_a_roll_up_looks_only_at_the_consumers_of_its_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _rollup_visits(monkeypatch, 5) == await _rollup_visits(monkeypatch, 50) == 0


async def _schedule_publish_reads(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, float]:
    """Per schedule publish into a stream holding ``n`` schedules: how often its header block is
    split for its schedule headers, how many subjects its roll-up's purge looks up (a purge's
    ``matching``, a stretch's ``seqbulk.of_subjects``), and how many messages it removes — new
    schedules, then each of them replaced."""
    from pyjetstream.server.jetstream import schedules as schedules_module
    from pyjetstream.server.jetstream.store import seqbulk
    from pyjetstream.server.jetstream.store._index import SubjectTable
    from pyjetstream.server.jetstream.store.indexed import IndexedStore

    of_subjects = seqbulk.of_subjects
    stretched: Counter[str] = Counter()

    def counted(index: Any, subjects: Any, *args: Any) -> Any:  # (a lookup per subject)
        stretched["matching"] += len(subjects)
        return of_subjects(index, subjects, *args)

    monkeypatch.setattr(seqbulk, "of_subjects", counted)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("SC", ["sc.>"], storage="file", allow_msg_schedules=True, allow_rollup_hdrs=True)
            await publish_acked(nc, [f"sc.s.{i}" for i in range(n)], [_schedule(f"sc.t.{i}") for i in range(n)])
            with (
                count_calls(monkeypatch, SubjectTable, "matching") as looked,
                count_calls(monkeypatch, IndexedStore, "_remove_at") as removed,
                count_calls(monkeypatch, schedules_module, "schedule_headers") as split,
            ):
                stretched.clear()
                await publish_acked(nc, [f"sc.n.{i}" for i in range(20)], [_schedule(f"sc.u.{i}") for i in range(20)])
                looked.update(stretched)
                new = {"split": split["schedule_headers"] / 20, "looked": looked["matching"] / 20}
                new["removed"] = removed["_remove_at"] / 20
                looked.clear(), removed.clear(), split.clear(), stretched.clear()
                await publish_acked(nc, [f"sc.s.{i}" for i in range(20)], [_schedule(f"sc.v.{i}") for i in range(20)])
                looked.update(stretched)
                again = {"split": split["schedule_headers"] / 20, "looked": looked["matching"] / 20}
                again["removed"] = removed["_remove_at"] / 20
            return {**{f"new {k}": v for k, v in new.items()}, **{f"replaced {k}": v for k, v in again.items()}}
        finally:
            await nc.close()


async def test_a_schedule_publish_reads_its_headers_once_and_purges_by_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 dim 8: a schedule's headers are split at most once per publish (its checks hand
    them to the store hook), and the roll-up that replaces the subject's previous schedule is one subject
    lookup and one removal, however many schedules the stream holds."""
    small = await _schedule_publish_reads(monkeypatch, 100)
    large = await _schedule_publish_reads(monkeypatch, 2000)
    # At most one split: a read's schedules of one shape are compared around their target
    # (`schedules.same_schedule`), only the first of each read (or of a shape) is split.
    splits = [v for k, v in [*small.items(), *large.items()] if k.endswith("split")]
    assert all(0 < v <= 1 for v in splits), (small, large)
    rest = {k: v for k, v in small.items() if not k.endswith("split")}
    assert rest == {k: v for k, v in large.items() if not k.endswith("split")}, (small, large)
    assert rest == {"new looked": 1, "new removed": 0, "replaced looked": 1, "replaced removed": 1}, small
