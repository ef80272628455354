"""A subject purge and the consumers it concerns, on both targets (nats-server ``stream.purge``):
a consumer whose filters include one inside the purged subject is moved past what was removed
(``isEqualOrSubsetMatch``: any of its filters); one whose filters are wider than the purged subject
(``isFilteredMatch``; no filter is widest) drops the pending acks of messages the purge removed
(``consumer.purge`` with ``isWider``); the others are not touched."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.test_consumer_policies import drain
from tests.support.targets import Target

CONSUMERS: dict[str, dict[str, Any]] = {
    "ALL": {},
    "WIDE": {"filter_subject": "s.>"},
    "STAR": {"filter_subject": "s.*"},
    "A": {"filter_subject": "s.a"},
    "AB": {"filter_subjects": ["s.a", "s.b"]},
    "B": {"filter_subject": "s.b"},
}


@pytest.fixture
async def client(server: Target) -> AsyncIterator[RawClient]:
    c = await RawClient.connect(server.url)
    yield c
    await c.close()


def _view(info: dict[str, Any]) -> tuple[int, int, int, int, int]:
    return (
        info["num_ack_pending"],
        info["num_pending"],
        info["ack_floor"]["stream_seq"],
        info["ack_floor"]["consumer_seq"],
        info["delivered"]["stream_seq"],
    )


async def test_subject_purge_moves_the_consumers_it_concerns(client: RawClient) -> None:
    await client.add_stream("S", ["s.>"])
    for subject in ("s.a", "s.b", "s.a", "s.b", "s.c", "s.a"):
        await client.publish_js(subject, subject.encode())
    delivered = {}
    for name, spec in CONSUMERS.items():
        await client.add_consumer("S", name, **spec)
        delivered[name] = await drain(client, name)
    resp = await client.api("$JS.API.STREAM.PURGE.S", {"filter": "s.a"})
    assert resp["purged"] == 3, resp
    views = {name: _view(await client.consumer_info("S", name)) for name in CONSUMERS}
    # (acks pending, pending, ack floor stream / consumer sequence, delivered stream sequence)
    assert views == {
        # wider: the floor moves to below the stream's first message; the pending acks of the
        # purged messages 1, 3 and 6 go, the floor's consumer sequence the highest of theirs
        "ALL": (3, 0, 1, 6, 6),
        "WIDE": (3, 0, 1, 6, 6),
        "STAR": (3, 0, 1, 6, 6),
        # inside: past the stream's last message, since nothing is left on s.a
        "A": (0, 0, 6, 3, 6),
        # s.a and s.b: not every filter inside s.a, so it is wider
        "AB": (2, 0, 1, 5, 6),
        "B": (2, 0, 0, 0, 4),
    }
