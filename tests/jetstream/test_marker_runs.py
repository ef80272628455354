"""Subject delete markers of one expiry pass are written together (issue 24, dimension 1): the
expired messages the markers roll up are taken from the store's expiry (`Stream._expire_with_marker`)
and their markers stored in one pass with the roll-ups purged together
(`StreamIngest.store_markers`), not each through the per-message path (`store_internal`,
`commit`, a subject purge each). Embedded server, calls counted, not timed; the markers' contents
and what consumers see are tests/jetstream/test_stream_msg_ttl.py's, on both servers."""

from __future__ import annotations

from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient, headers, wait_for
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.server.jetstream.stream import Stream
from pyjetstream.server.jetstream.stream_ingest import StreamIngest

PER_MESSAGE = ("store_internal", "commit")


async def _expire_with_markers(n: int, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, int], dict[str, Any]]:
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("TM", ["tm.>"], allow_msg_ttl=True, subject_delete_marker_ttl=10**9)
            inbox = nc.new_inbox()
            sub = nc.subscribe(inbox + ".*")
            for i in range(n):
                nc.publish(f"tm.{i}", b"x", f"{inbox}.{i}", headers(("Nats-TTL", "1s")))
            await sub.collect(n, timeout=30)
            with (
                count_calls(monkeypatch, StreamIngest, *PER_MESSAGE) as calls,
                count_calls(monkeypatch, Stream, "purge") as purges,
            ):

                async def expired() -> bool:
                    info = await nc.api("$JS.API.STREAM.INFO.TM", {})
                    return bool(info["state"]["last_seq"] >= 2 * n)  # (each marker written)

                await wait_for(expired, timeout=30)
            info = await nc.api("$JS.API.STREAM.INFO.TM", {})
            return {**calls, **purges}, info["state"]
        finally:
            await nc.close()


@pytest.mark.parametrize("n", [20, 200])
async def test_an_expiry_pass_writes_its_markers_together(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    calls, state = await _expire_with_markers(n, monkeypatch)
    assert state["last_seq"] == 2 * n and state["first_seq"] > n, state  # a marker each, the expired gone
    assert calls.get("store_internal", 0) + calls.get("commit", 0) + calls.get("purge", 0) == 0, calls
