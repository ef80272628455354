"""A read's publishes to many subscriptions of one connection (issue 24, dimension 7: bench_scale's
"publish, 100 subjects"): each message is a segment of its own (another receiver), and the read's
output passes the connection's early-write limit (``FrameSink.limit``). The segment whose last
message may pass it is checked there (`Router`'s ``end_segment``: the connection writes early), so
the messages after it are routed against fresh room — not each one bisected against the spent
room until the read ends. Counted, not timed: the tight segments per early write (each frame's
bound overestimates it, so the room is found in a few halvings: ~log2 of the limit over a frame).

And a read's publishes to a queue group whose members share one connection (bench_scale's
``--dim queue``, "all members on one connection"): a queue segment like any other group's, no
message routed alone (``Router.lone_msgs``), the members still picked per message, and only the
picked members looked at (``Router.members_looked_at``: one per pick, the same for 10 members as for
1,000 — not the whole group per read, nor a member table per read)."""

from __future__ import annotations

import asyncio

from tests.server.runs_world import World

PAYLOAD = b"0123456789abcdef"


async def _routed(n: int, runs: bool) -> tuple[int, int, bytes]:
    world = World(runs=runs)
    await world.start()
    try:
        sub, pub = world.connect(), world.connect()
        world.feed(sub, b"".join(b"SUB s.%d %d\r\n" % (i, i) for i in range(100)))
        await world.settle()
        world.clear()
        router = world.server.router  # type: ignore[union-attr]
        before = router.tight_segments
        world.feed(pub, b"".join(b"PUB s.%d 16\r\n%b\r\n" % (i % 100, PAYLOAD) for i in range(n)))
        await world.settle()
        writes = len(world.clients[sub].transport.writes)
        return router.tight_segments - before, writes, world.output(sub)
    finally:
        await world.stop()


def test_a_read_to_many_subscriptions_checks_the_room_once_per_early_write() -> None:
    for n in (20_000, 60_000):  # ~0.6 and ~1.9 MB of MSG frames: 2 and 7 early writes of 256 KiB
        tight, writes, out = asyncio.run(_routed(n, True))
        assert writes >= n * 30 // (256 * 1024), (n, writes)
        assert tight <= 16 * writes, (n, tight, writes)  # (every message after the first write: thousands)
        alone = asyncio.run(_routed(n, False))
        assert out == alone[2] and writes == alone[1], n  # the same bytes and writes, message by message


async def _looked_at(members: int, reads: int, per: int) -> int:
    world = World(runs=True)
    await world.start()
    try:
        sub, pub = world.connect(), world.connect()
        world.feed(sub, b"".join(b"SUB q g %d\r\n" % i for i in range(members)))
        await world.settle()
        router = world.server.router  # type: ignore[union-attr]
        before = router.members_looked_at
        for _ in range(reads):
            world.feed(pub, b"PUB q 16\r\n%b\r\n" % PAYLOAD * per)
            await world.settle()
            world.clear()
        return router.members_looked_at - before
    finally:
        await world.stop()


def test_a_queue_segment_looks_at_the_members_it_picks() -> None:
    # One member looked at per pick, whatever the group's size (nats-server's processMsgResults):
    # was every member per read, then one per member a read picked (a table and an object each,
    # so a read to 1,000 members made ~60 times those of a read to 10).
    for members in (10, 1_000):
        looked = asyncio.run(_looked_at(members, 20, 50))
        assert looked == 20 * 50, (members, looked)


async def _queued(members: int, n: int, runs: bool) -> tuple[int, int, bytes]:
    world = World(runs=runs)  # (queue_seed 7: the same picks on and off)
    await world.start()
    try:
        sub, pub = world.connect(), world.connect()
        world.feed(sub, b"".join(b"SUB q g %d\r\n" % i for i in range(members)))
        await world.settle()
        world.clear()
        router = world.server.router  # type: ignore[union-attr]
        before = router.lone_msgs
        world.feed(pub, b"PUB q 16\r\n%b\r\n" % PAYLOAD * n)
        await world.settle()
        return router.lone_msgs - before, len(world.clients[sub].transport.writes), world.output(sub)
    finally:
        await world.stop()


def test_a_queue_group_on_one_connection_is_routed_as_a_segment() -> None:
    for members in (10, 1_000):
        lone, writes, out = asyncio.run(_queued(members, 5_000, True))
        assert lone <= writes + 1, (members, lone, writes)  # (was 5,000: every message alone)
        sids = {line.split(b" ")[2] for line in out.split(b"\r\n") if line.startswith(b"MSG ")}
        assert len(sids) > members // 2, (members, len(sids))  # picked per message, not a member per run
        alone = asyncio.run(_queued(members, 5_000, False))
        assert out == alone[2] and writes == alone[1], members
