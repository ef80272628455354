"""A stream's config update and its consumers: told only when the update changed what the stream holds.

``Stream.update`` told every consumer to recount its pending messages and look again after any update
(a description change beside 10,000 consumers: ~7 ms, nats-server's ~0.5 flat); nats-server's update
touches the consumers for a retention change alone. Now they are told when the update changed the
stream's messages (a lowered limit removed some) or its retention (switch
``stream.UPDATE_SIGNALS_CHANGES_ONLY``): counted here at two sizes, and the consumers' state after a
run of updates compared with the switch on and off.
"""

from __future__ import annotations

import json
from typing import Any

import nats
import nats.errors
import pytest
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream import stream as stream_module
from pyjetstream.server.jetstream.consumer import Consumer


async def _api(nc: Any, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(
        (await nc.request(f"$JS.API.{subject}", json.dumps(body).encode(), timeout=30)).data
    )
    assert "error" not in answer, answer
    return answer


def _config(**extra: Any) -> dict[str, Any]:
    return {"name": "U", "subjects": ["u.>"], "storage": "file", **extra}


async def _stream_with_consumers(nc: Any, consumers: int) -> None:
    await _api(nc, "STREAM.CREATE.U", _config())
    for i in range(200):
        await nc.publish(f"u.{i % 20}.{i}", b"m")
    await nc.flush()
    for i in range(consumers):
        body = {
            "stream_name": "U",
            "config": {"durable_name": f"c{i}", "ack_policy": "explicit", "filter_subject": f"u.{i % 20}.*"},
        }
        await _api(nc, f"CONSUMER.CREATE.U.c{i}", body)


async def _update_steps(consumers: int, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    async with embedded() as server:
        nc = await nats.connect(server.client_url)
        await _stream_with_consumers(nc, consumers)
        with count_calls(monkeypatch, Consumer, "signal_new", "_stream_num_pending") as counts:
            for i in range(5):
                await _api(nc, "STREAM.UPDATE.U", _config(description=f"d{i}"))
                await _api(nc, "STREAM.UPDATE.U", _config(subjects=["u.>", f"more{i}.>"]))
        await nc.close()
        return counts["signal_new"], counts["_stream_num_pending"]


async def test_an_update_that_keeps_the_messages_tells_no_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    assert await _update_steps(10, monkeypatch) == (0, 0)
    assert await _update_steps(100, monkeypatch) == (0, 0)
    monkeypatch.setattr(stream_module, "UPDATE_SIGNALS_CHANGES_ONLY", False)
    assert (await _update_steps(10, monkeypatch))[0] == 10 * 10  # the switch off: each told at each update


async def _consumers_after_updates(on: bool, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Consumers at different places (some fetched and acked), a run of updates — a description, a
    subject added, max_msgs and max_msgs_per_subject lowered, max_age set — each followed by every
    consumer's info and a fetch of what it would get next."""
    monkeypatch.setattr(stream_module, "UPDATE_SIGNALS_CHANGES_ONLY", on)
    seen: list[Any] = []
    async with embedded() as server:
        nc = await nats.connect(server.client_url)
        js = nc.jetstream()
        await _stream_with_consumers(nc, 6)
        for i in range(3):
            sub = await js.pull_subscribe_bind(f"c{i}", "U")
            for msg in await sub.fetch(3 + i, timeout=5):
                if msg.metadata.sequence.stream % 2:
                    await msg.ack()
        updates = [
            _config(description="d"),
            _config(subjects=["u.>", "x.>"]),
            _config(subjects=["u.>", "x.>"], max_msgs=150),
            _config(subjects=["u.>", "x.>"], max_msgs=150, max_msgs_per_subject=3),
            _config(subjects=["u.>", "x.>"], max_msgs=150, max_msgs_per_subject=3, max_age=3600 * 10**9),
            _config(subjects=["u.>"], max_msgs=120, max_msgs_per_subject=3, max_age=3600 * 10**9),
        ]
        for config in updates:
            await _api(nc, "STREAM.UPDATE.U", config)
            for i in range(6):
                info = await _api(nc, f"CONSUMER.INFO.U.c{i}", {})
                seen.append([info[k] for k in ("num_pending", "num_ack_pending", "num_redelivered")])
                seen.append([info["delivered"]["stream_seq"], info["ack_floor"]["stream_seq"]])
            sub = await js.pull_subscribe_bind("c5", "U")
            try:
                seen.append([m.metadata.sequence.stream for m in await sub.fetch(1, timeout=2)])
            except nats.errors.TimeoutError:
                seen.append([])
        await nc.close()
    return seen


async def test_consumers_after_updates_are_the_same_with_the_switch_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert await _consumers_after_updates(True, monkeypatch) == await _consumers_after_updates(
        False, monkeypatch
    )
