"""Issue 24, dimension 2: the cost of a publish, an ack, a listing page and a stream delete does not
grow with the number of consumers on the stream (embedded server, steps counted, not timed).

nats-server keeps a stream's consumers in a subject sublist (``csl``): a stored message reaches
the consumers whose filter takes its subject, an interest stream asks it whether anyone wants a
message. The embedded server's ``ConsumerIndex`` does the same; these tests count the consumers
each operation calls into at two sizes.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, wait_for
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream.consumer import Consumer
from pyjetstream.server.jetstream.consumer_index import ConsumerIndex
from pyjetstream.server.jetstream.delivery_state import DeliveryState
from pyjetstream.server.jetstream.subject_filter import SubjectFilter

SMALL, LARGE = 8, 80
VISITS = ("signal_new", "signal_matched", "needs_ack", "matches_subject", "on_stream_purged")


async def _stream_with_consumers(nc: RawClient, retention: str, n: int) -> None:
    await nc.add_stream("S", ["s.>"], retention=retention, storage="memory", max_consumers=-1)
    for i in range(n):
        resp = await nc.add_consumer("S", f"c{i}", durable_name=f"c{i}", filter_subject=f"s.{i}")
        assert "error" not in resp, resp


async def _publish_steps(monkeypatch: pytest.MonkeyPatch, retention: str, n: int) -> dict[str, int]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await _stream_with_consumers(nc, retention, n)
            with count_calls(monkeypatch, Consumer, *VISITS) as calls:
                await nc.publish_many("s.1", 20)
                await nc.publish_many(f"s.{n + 5}", 5)  # nobody's subject: an interest stream skips it
            info = await nc.stream_info("S")
            assert info["state"]["messages"] == (20 if retention == "interest" else 25), info
            assert info["state"]["consumer_count"] == n
            return dict(calls)
        finally:
            await nc.close()


@pytest.mark.parametrize("retention", ["interest", "workqueue", "limits"])
async def test_publish_visits_only_the_matching_consumers(
    monkeypatch: pytest.MonkeyPatch, retention: str
) -> None:
    small = await _publish_steps(monkeypatch, retention, SMALL)
    large = await _publish_steps(monkeypatch, retention, LARGE)
    assert small == large, (small, large)
    assert small.get("signal_matched") == 20  # one consumer takes s.1; nobody takes the other subject


async def _many_consumers(nc: RawClient, n: int) -> None:
    """A work-queue stream with ``n`` consumers filtered to ``w.<i>``, their creates pipelined."""
    await nc.add_stream("W", ["w.>"], retention="workqueue", storage="memory", max_consumers=n + 1)
    inbox = nc.new_inbox()
    sub = nc.subscribe(inbox)
    for i in range(n):
        body = {
            "stream_name": "W",
            "config": {"durable_name": f"c{i}", "ack_policy": "explicit", "filter_subject": f"w.{i}"},
        }
        nc.publish(f"$JS.API.CONSUMER.CREATE.W.c{i}", json.dumps(body).encode(), inbox)
    answers = await sub.collect(n, timeout=120)
    sub.unsubscribe()
    assert not [a for a in answers if "error" in a.json()], answers[0].json()


async def _work_queue_publish_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, int]:
    """What 100 publishes over 100 consumers' subjects (spread over all ``n`` of them) touch."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await _many_consumers(nc, n)
            with (
                count_calls(monkeypatch, Consumer, *VISITS) as calls,
                count_calls(monkeypatch, SubjectFilter, "matches") as filters,
                count_calls(monkeypatch, DeliveryState, "needs") as states,
            ):
                for i in range(100):
                    await nc.publish_many(f"w.{i * (n // 100)}", 1)
            info = await nc.stream_info("W")
            assert info["state"]["messages"] == 100, info
            return {
                **calls,
                **{f"filter.{k}": v for k, v in filters.items()},
                **{f"state.{k}": v for k, v in states.items()},
            }
        finally:
            await nc.close()


async def test_work_queue_publish_touches_one_consumer_at_100_and_1000(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A publish into a work-queue stream signals the one consumer its subject reaches, without
    asking its filter again (the consumer index matched it) or its delivery state (nobody waits):
    the same calls with 100 and 1,000 consumers (issue 24 dim 2, ``publish, work-queue stream``;
    10,000 would take minutes to create: each create on a work-queue stream checks the others' filters)."""
    small = await _work_queue_publish_steps(monkeypatch, 100)
    large = await _work_queue_publish_steps(monkeypatch, 1000)
    assert small == large == {"signal_matched": 100}, (small, large)


async def _ack_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[dict[str, int], Any]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await _stream_with_consumers(nc, "interest", n)
            await nc.publish_many("s.1", 10)
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox)
            nc.pull("S", "c1", inbox, {"batch": 10, "expires": 5_000_000_000})
            msgs = await sub.collect(10)
            with count_calls(monkeypatch, Consumer, *VISITS) as calls:
                for m in msgs:
                    nc.publish(m.reply, b"+ACK")
                await nc.flush()
                info: Any = None

                async def floor() -> bool:
                    nonlocal info
                    info = await nc.consumer_info("S", "c1")
                    return bool(info["ack_floor"]["stream_seq"] == 10)

                await wait_for(floor)
            state = (await nc.stream_info("S"))["state"]
            return dict(calls), state
        finally:
            await nc.close()


async def test_interest_ack_asks_only_the_matching_consumers(monkeypatch: pytest.MonkeyPatch) -> None:
    small, state_small = await _ack_steps(monkeypatch, SMALL)
    large, state_large = await _ack_steps(monkeypatch, LARGE)
    assert small == large, (small, large)
    assert state_small["messages"] == state_large["messages"] == 0  # acked by their one consumer


async def test_listing_sorts_once_per_change(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page costs its own size: the names are sorted once per change of consumers, not per page."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await _stream_with_consumers(nc, "limits", LARGE)
            with count_calls(monkeypatch, ConsumerIndex, "_sort_names") as calls:
                pages = [
                    await nc.api("$JS.API.CONSUMER.LIST.S", {"offset": off}) for off in range(0, LARGE, 20)
                ]
                names = [
                    await nc.api("$JS.API.CONSUMER.NAMES.S", {"offset": off}) for off in range(0, LARGE, 20)
                ]
            assert calls["_sort_names"] <= 1
            assert [c["name"] for c in pages[1]["consumers"][:2]] == sorted(f"c{i}" for i in range(LARGE))[
                20:22
            ]
            assert names[-1]["consumers"][0] == sorted(f"c{i}" for i in range(LARGE))[LARGE - 20]
            assert pages[0]["total"] == names[0]["total"] == LARGE
        finally:
            await nc.close()


async def _delete_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, int]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await _stream_with_consumers(nc, "interest", n)
            await nc.publish_many("s.1", 5)
            with count_calls(monkeypatch, Consumer, *VISITS, "stop") as calls:
                resp = await nc.api("$JS.API.STREAM.DELETE.S")
            assert resp.get("success"), resp
            return dict(calls)
        finally:
            await nc.close()


async def test_stream_delete_stops_each_consumer_once(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _delete_steps(monkeypatch, SMALL)
    large = await _delete_steps(monkeypatch, LARGE)
    assert small == {"stop": SMALL}, small
    assert large == {"stop": LARGE}, large


async def _ack_all_calls(monkeypatch: pytest.MonkeyPatch, gap: int) -> tuple[int, int]:
    """An AckAll consumer on ``s.a`` of an interest stream where ``gap`` messages of ``s.b`` (kept
    by another consumer) follow each of its 10: the stream calls it acks and what stays."""
    from pyjetstream.server.jetstream.stream import Stream

    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], retention="interest", storage="memory")
            await nc.add_consumer("S", "A", durable_name="A", filter_subject="s.a", ack_policy="all")
            await nc.add_consumer("S", "B", durable_name="B", filter_subject="s.b")
            for _ in range(10):
                await nc.publish_many("s.a", 1)
                await nc.publish_many("s.b", gap)
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox)
            nc.pull("S", "A", inbox, {"batch": 10, "expires": 5_000_000_000})
            msgs = await sub.collect(10)
            with count_calls(monkeypatch, Stream, "ack_msg") as calls:
                assert (await nc.request(msgs[-1].reply, b"+ACK")).data == b""
            return calls["ack_msg"], (await nc.stream_info("S"))["state"]["messages"]
        finally:
            await nc.close()


async def test_ack_all_tells_the_stream_what_it_retired(monkeypatch: pytest.MonkeyPatch) -> None:
    """nats-server's ackAllSeqs: the retired pending acks, not every sequence below the ack."""
    assert await _ack_all_calls(monkeypatch, 1) == (10, 10)
    assert await _ack_all_calls(monkeypatch, 9) == (10, 90)


async def test_stream_delete_leaves_consumer_files_to_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """A file stream deleted with its consumers removes its directory once: no consumer removes
    (and fsyncs) its own first (nats-server ``consumerFileStore.StreamDelete``)."""
    from pyjetstream.server.jetstream.store.consumer_store import FileConsumerStore

    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("F", ["f.>"], max_consumers=-1)
            for i in range(SMALL):
                resp = await nc.add_consumer("F", f"c{i}", durable_name=f"c{i}", filter_subject=f"f.{i}")
                assert "error" not in resp, resp
            with count_calls(monkeypatch, FileConsumerStore, "delete", "stream_delete") as calls:
                assert (await nc.api("$JS.API.STREAM.DELETE.F")).get("success")
            assert dict(calls) == {"stream_delete": SMALL}
            # Renamed aside at once (the name is free again), removed in the background.
            streams_dir = server.jetstream.streams_dir
            assert "F" not in os.listdir(streams_dir)
            await nc.add_stream("F", ["f.>"])
            assert (await nc.stream_info("F"))["state"]["messages"] == 0

            async def removed() -> bool:
                return os.listdir(streams_dir) == ["F"]

            await wait_for(removed, timeout=20)
        finally:
            await nc.close()


async def test_a_deleted_stream_left_by_a_crash_is_removed_at_start(tmp_path: Any) -> None:
    """A stream directory renamed aside for removal (a crash before the removal finished) is
    neither recovered as a stream nor kept."""
    import shutil

    from pyjetstream.server.server import Server

    store_dir = str(tmp_path / "js")
    async with Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1") as server:
        nc = await RawClient.connect(server.client_url)
        await nc.add_stream("K", ["k.>"])
        await nc.publish_many("k.x", 3)
        await nc.close()
        streams_dir = server.jetstream.streams_dir
    shutil.copytree(os.path.join(streams_dir, "K"), os.path.join(streams_dir, ".K.deleted.0123abcd"))
    shutil.rmtree(os.path.join(streams_dir, "K"))
    async with Server(port=-1, jetstream=True, store_dir=store_dir, host="127.0.0.1") as server:
        assert "K" not in server.jetstream.streams

        async def removed() -> bool:
            return not os.listdir(streams_dir)

        await wait_for(removed, timeout=20)


async def _work_queue_sums(monkeypatch: pytest.MonkeyPatch, streams: int) -> int:
    """Publish + fetch + ack through a work-queue stream beside ``streams`` others: how many
    times a stream's state is read to sum the account's usage."""
    from pyjetstream.server.jetstream.store.indexed import IndexedStore

    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            for i in range(streams):
                await nc.add_stream(f"O{i}", [f"o{i}.>"], storage="memory")
            await nc.add_stream("W", ["w.>"], retention="workqueue", storage="memory")
            await nc.add_consumer("W", "C", durable_name="C")
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox)
            await nc.publish_many("w.x", 1)  # (the first publish sums the account once)
            with count_calls(monkeypatch, IndexedStore, "fast_state") as calls:
                for _ in range(10):
                    await nc.publish_many("w.x", 1)
                    nc.pull("W", "C", inbox, {"batch": 1, "expires": 5_000_000_000})
                    msg = await sub.next()
                    assert (await nc.request(msg.reply, b"+ACK")).data == b""
            assert (await nc.stream_info("W"))["state"]["messages"] == 1
            return calls["fast_state"]
        finally:
            await nc.close()


async def test_work_queue_acks_do_not_resum_the_account(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ack that removes a message keeps the account's cached usage (an upper bound) instead
    of making the next publish sum every stream's state."""
    assert await _work_queue_sums(monkeypatch, 2) == await _work_queue_sums(monkeypatch, 20)
