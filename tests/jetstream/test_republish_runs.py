"""A stretch's republished copies are routed as one run of the server's own (`republish.RUNS`:
`Host.publish_run`, `Router.route_msgs`), as nats-server's stream ``outq`` is sent by its internal loop:
every subscriber of the destinations gets the bytes the copies routed one by one give it
(`republish.RUNS` off), and a read's copies are one routing call, not one per copy. In-process on the
embedded server (``runs_world``: each connection's whole output); the copies' headers against
nats-server 2.15.1 are in test_expected_stretches.py."""

from __future__ import annotations

import asyncio
import json
import random
import re
from typing import Any

import pytest
from tests.server.runs_world import World

from pyjetstream.server.jetstream import republish

# A copy's time stamp differs between two runs (and its length with it): taken out of the frame.
_STAMP = re.compile(rb"Nats-Time-Stamp: [^\r]*\r\n")


def frames(out: bytes) -> list[tuple[bytes, ...]]:
    """``out``'s MSG/HMSG frames as (subject, sid, reply, headers without the time stamp, payload)."""
    got = []
    at = 0
    while at < len(out):
        end = out.index(b"\r\n", at)
        op, *args = out[at:end].split(b" ")
        at = end + 2
        if op not in (b"MSG", b"HMSG"):
            continue
        size = int(args[-1])
        hlen = int(args[-2]) if op == b"HMSG" else 0
        reply = args[2] if len(args) == (5 if op == b"HMSG" else 4) else b""
        hdr = _STAMP.sub(b"", out[at : at + hlen])
        got.append((args[0], args[1], reply, hdr, out[at + hlen : at + size]))
        at += size + 2
    return got


def _traffic(seed: int) -> list[bytes]:
    """Reads of publishes into stream E (``e.>``): plain and with headers, some on subjects the
    republish source does not take (``e.x.*``)."""
    rng = random.Random(seed)
    reads = []
    for _ in range(8):
        parts = []
        for _ in range(rng.randrange(1, 120)):
            subject = rng.choice([f"e.{rng.randrange(20)}", f"e.x.{rng.randrange(3)}"])
            payload = b"p%d" % rng.randrange(1000)
            if rng.random() < 0.3:
                hdr = b"NATS/1.0\r\nK: %d\r\n\r\n" % rng.randrange(9)
                parts.append(
                    b"HPUB %s _A.1 %d %d\r\n%b%b\r\n"
                    % (subject.encode(), len(hdr), len(hdr) + len(payload), hdr, payload)
                )
            else:
                parts.append(b"PUB %s _A.1 %d\r\n%b\r\n" % (subject.encode(), len(payload), payload))
        reads.append(b"".join(parts))
    return reads


async def _republished(seed: int, headers_only: bool, runs: bool) -> tuple[list[Any], int, int]:
    """Each receiving connection's frames, and the `Server.route` and `Server.route_msgs` calls that
    routed copies (to ``rp.*``)."""
    saved = republish.RUNS
    republish.RUNS = runs
    world = World(runs=True)
    await world.start()
    try:
        pub, plain, queue = world.connect(), world.connect(), world.connect()
        world.feed(pub, b"SUB _A.* 1\r\n")
        world.feed(plain, b"SUB rp.> 1\r\nSUB rp.3 2\r\n")
        world.feed(queue, b"SUB rp.* g 1\r\nSUB rp.* g 2\r\nSUB rp.* g 3\r\n")
        cfg = {
            "name": "E",
            "subjects": ["e.>"],
            "storage": "file",
            "republish": {"src": "e.*", "dest": "rp.{{wildcard(1)}}", "headers_only": headers_only},
        }
        body = json.dumps(cfg).encode()
        world.feed(pub, b"PUB $JS.API.STREAM.CREATE.E _A.0 %d\r\n%b\r\n" % (len(body), body))
        await world.settle()
        server: Any = world.server
        calls = [0, 0]
        route, route_msgs = server.route, server.route_msgs

        def one(*args: Any) -> Any:  # (subject, reply, hdr, payload, client, show, account)
            calls[0] += args[0].startswith("rp.")
            return route(*args)

        def run(*args: Any) -> Any:  # (subjects, replies, hdrs, payloads, client, account)
            calls[1] += any(s.startswith("rp.") for s in args[0])
            return route_msgs(*args)

        server.route, server.route_msgs = one, run
        for data in _traffic(seed):
            world.feed(pub, data)
            await world.settle()
        server.route, server.route_msgs = route, route_msgs
        return [frames(world.output(c)) for c in (plain, queue)], calls[0], calls[1]
    finally:
        republish.RUNS = saved
        await world.stop()


@pytest.mark.parametrize(("seed", "headers_only"), [(1, False), (2, False), (3, True)])
def test_a_stretch_republished_as_a_run_equals_one_by_one(seed: int, headers_only: bool) -> None:
    on, routed_on, runs_on = asyncio.run(_republished(seed, headers_only, True))
    off, routed_off, runs_off = asyncio.run(_republished(seed, headers_only, False))
    assert on == off
    plain, queue = on
    assert plain and queue and all(f[0].startswith(b"rp.") for f in plain + queue)
    assert len({f[1] for f in queue}) == 3  # (each member picked: the queue draws are the same)
    if headers_only:
        assert all(f[4] == b"" and b"Nats-Msg-Size: " in f[3] for f in plain)
    # One by one: a route per copy; as runs: a read's copies together (its first message is stored
    # on its own, before the run's stretch: two calls a read at most).
    copies = sum(1 for f in plain if f[1] == b"1")
    assert (routed_off, runs_off) == (copies, 0)
    assert routed_on + runs_on <= 2 * 8 < copies // 5, (routed_on, runs_on, copies)
