"""Runs on = runs off (issue 25's proof): the embedded server routes a read's publishes together
(``Server.route_msgs``: a ``PubRun``, one lookup per distinct subject, a connection's deliveries
framed in one call, an internal subscription's stretch in one ``run``) and each one alone
(``ServerOptions.runs`` off: ``Server.route`` per message). Hypothesis drives the same random traffic
into both — wildcard and queue subscribers (the queue pick seeded alike), reply subjects with and
without a responder, header blocks, message ids, JetStream publishes to a file and a memory stream,
message TTLs (valid, raised, invalid, refused), pull requests, every ack kind, auto-unsubscribes, reads cut at any byte, a consumer whose socket
takes little (early writes, producer stalls, the slow-consumer cut) — and every byte each client
receives must be the same, and so must the streams' messages and the consumers' states.

``scripts/runs_difffuzz.py`` runs the same with a large budget.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.server.runs_world import World, frame, request, stalls_by_count

from pyjetstream.server.options import MapDest, Permissions, SubjectPermission, User

# Clients: 0 publishes (and gets replies, PubAcks, pull deliveries), 1 and 2 subscribe (1 may not
# receive a.c or js.b.*: a deliver filter; 1 also takes message traces, 2 the push consumer's
# deliveries), 3 subscribes over a socket that takes little.
ECHO = (True, False, True, True)
USERS = ("u", "d", "u", "u")
OPTIONS = {
    "users": [
        User(username="u", password="p"),
        User(username="d", password="p", permissions=Permissions(subscribe=SubjectPermission(deny=["a.c", "js.b.>"]))),
    ]
}
SUBJECTS = ["a.b", "a.c", "a.b.c", "b", "q.1", "q.2", "js.a.1", "js.a.2", "js.b.x", "js.b.y.z", "svc"]
PATTERNS = [
    ("a.b", ""),
    ("a.*", ""),
    ("a.>", ""),
    (">", ""),
    ("*.b", ""),
    ("js.>", ""),
    ("q.1", "g"),
    ("q.*", "g"),
    ("q.*", "h"),
    ("a.b", "g"),
    ("svc", ""),
]
REPLIES = ["", "", "_INBOX.c0.{n}", "nobody.{n}"]
HDRS: list[bytes | None] = [
    None,
    None,
    b"NATS/1.0\r\n\r\n",
    b"NATS/1.0\r\nFoo: bar\r\n\r\n",
    b"",
    b"NATS/1.0\r\nNats-Msg-Id: m{n}\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: m{n}\r\nNats-Expected-Stream: S1\r\n\r\n",
    b"NATS/1.0\r\nNats-Expected-Stream: S2\r\n\r\n",
    b"NATS/1.0\r\nNats-Trace-Dest: trace.out\r\n\r\n",
    b"NATS/1.0\r\nNats-Trace-Dest: trace.out\r\nNats-Trace-Only: true\r\n\r\n",
    b"NATS/1.0\r\nNats-TTL: 1h\r\n\r\n",
    b"NATS/1.0\r\nNats-Msg-Id: m{n}\r\nNats-TTL: 2h\r\n\r\n",
    b"NATS/1.0\r\nNats-TTL: never\r\nNats-Expected-Stream: S1\r\n\r\n",
    b"NATS/1.0\r\nNats-TTL: 30\r\n\r\n",  # S1: raised to its markers' TTL (60 s)
    b"NATS/1.0\r\nNats-TTL: soon\r\n\r\n",  # invalid
]
ACKS = [b"+ACK", b"+ACK", b"-NAK", b"+TERM", b"+WPI", b"", b'+NXT {"batch":1}']


@dataclass(frozen=True)
class Pub:
    subject: str
    reply: str
    hdr: bytes | None
    payload: bytes


@dataclass(frozen=True)
class Ack:
    client: int  # whose deliveries: 0 (pull) or 2 (push)
    k: int  # which of the deliveries it received so far (modulo)
    payload: bytes
    reply: bool


@dataclass(frozen=True)
class Pull:
    batch: int


@dataclass(frozen=True)
class Step:
    client: int
    frames: tuple[Pub | Ack | Pull, ...]
    cuts: tuple[int, ...]
    drain: bool


pubs = st.builds(
    Pub,
    st.sampled_from(SUBJECTS),
    st.sampled_from(REPLIES).map(lambda r: r.replace("{n}", "")) | st.integers(0, 3).map(lambda n: f"_INBOX.c0.{n}"),
    st.sampled_from(HDRS)
    | st.integers(0, 5).map(lambda n: b"NATS/1.0\r\nNats-Msg-Id: m%d\r\n\r\n" % n)
    | st.integers(0, 5).map(lambda n: b"NATS/1.0\r\nNats-Msg-Id: t%d\r\nNats-TTL: 1h\r\n\r\n" % n),
    st.binary(max_size=24) | st.sampled_from([b"x" * 3000, b"y" * 9000]),
)
frames = st.one_of(
    pubs,
    pubs,
    pubs,
    st.builds(Ack, st.sampled_from([0, 2]), st.integers(0, 50), st.sampled_from(ACKS), st.booleans()),
    st.builds(Pull, st.integers(1, 4)),
)
steps = st.lists(
    st.builds(
        Step,
        st.sampled_from([0, 0, 0, 1, 2]),
        st.lists(frames, min_size=1, max_size=12).map(tuple),
        st.lists(st.integers(0, 10_000), max_size=4).map(tuple),
        st.booleans(),
    ),
    min_size=1,
    max_size=8,
)
subscriptions = st.lists(
    st.tuples(st.integers(0, 3), st.sampled_from(PATTERNS), st.sampled_from([0, 0, 0, 1, 3])),
    min_size=1,
    max_size=8,
)


def _resolve(world: World, client: int, frm: Pub | Ack | Pull) -> bytes:
    """The bytes of a frame for this world (an ack names one of the deliveries it made)."""
    if isinstance(frm, Pub):
        return frame(frm.subject, frm.reply, frm.hdr, frm.payload)
    if isinstance(frm, Pull):
        body = {"batch": frm.batch, "no_wait": True}
        return request("$JS.API.CONSUMER.MSG.NEXT.S1.P", "_INBOX.c0.pull", body)
    acks = world.ack_subjects(frm.client)
    if not acks:
        return b""
    subject = acks[frm.k % len(acks)].decode()
    return frame(subject, f"_INBOX.c{client}.ack" if frm.reply else "", None, frm.payload)


async def _setup(world: World, subs: list[tuple[int, tuple[str, str], int]]) -> None:
    await world.start()
    for i, echo in enumerate(ECHO):
        world.connect(echo=echo, no_responders=i == 0, tight=8192 if i == 3 else 0, user=USERS[i])
    world.feed(0, b"SUB _INBOX.c0.* 1\r\n")
    world.feed(1, b"SUB trace.out 1\r\n")
    world.feed(2, b"SUB deliver.b 1\r\n")
    # S1 takes TTLs (and raises those below its markers' TTL), S2 refuses them.
    ttls = {"allow_msg_ttl": True, "subject_delete_marker_ttl": 60_000_000_000}
    for stream, subjects, storage, extra in (("S1", ["js.a.*"], "file", ttls), ("S2", ["js.b.>"], "memory", {})):
        cfg = {"name": stream, "subjects": subjects, "storage": storage, "duplicate_window": 60_000_000_000, **extra}
        world.feed(0, request(f"$JS.API.STREAM.CREATE.{stream}", "_INBOX.c0.setup", cfg))
    pull = {"durable_name": "P", "ack_policy": "explicit", "filter_subject": "js.a.*", "max_deliver": 3}
    world.feed(0, request("$JS.API.CONSUMER.CREATE.S1.P", "_INBOX.c0.setup", {"stream_name": "S1", "config": pull}))
    push = {"durable_name": "D", "ack_policy": "explicit", "deliver_subject": "deliver.b", "max_ack_pending": 5}
    world.feed(0, request("$JS.API.CONSUMER.CREATE.S2.D", "_INBOX.c0.setup", {"stream_name": "S2", "config": push}))
    for sid, (client, (subject, queue), max_msgs) in enumerate(subs, start=10):
        q = f" {queue}" if queue else ""
        world.feed(client, f"SUB {subject}{q} {sid}\r\n".encode())
        if max_msgs:
            world.feed(client, f"UNSUB {sid} {max_msgs}\r\n".encode())
    await world.settle()
    world.clear()


def _first_difference(a: bytes, b: bytes) -> str:
    k = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"at byte {k} runs on: {a[max(0, k - 300) : k + 200]!r} runs off: {b[max(0, k - 300) : k + 200]!r}"


async def _run(
    subs: list[tuple[int, tuple[str, str], int]], traffic: list[Step], writes: bool = False, options: Any = None
) -> None:
    """Runs on vs off; ``writes``: each client's writes (their sizes: the early writes) and the
    producer stalls each caused must be the same too (traffic without advisories)."""
    options = OPTIONS if options is None else options
    worlds = [World(runs=True, options=options), World(runs=False, options=options)]
    try:
        for world in worlds:
            await _setup(world, subs)
        for n, step in enumerate(traffic):
            for world in worlds:
                data = b"".join(_resolve(world, step.client, f) for f in step.frames)
                last = 0
                for cut in [*sorted({c % (len(data) + 1) for c in step.cuts}), len(data)]:
                    if cut > last:
                        world.feed(step.client, data[last:cut])
                    last = cut
                await world.settle()
                if step.drain:
                    world.drain()
                    await world.settle()
            on, off = worlds
            for i in range(len(ECHO)):
                a, b = on.output(i), off.output(i)
                assert a == b, f"client {i} after step {n}: {_first_difference(a, b)}"
        on, off = worlds
        assert [s[:-1] for s in on.conn_stats()] == [s[:-1] for s in off.conn_stats()]
        if writes:
            for a, b in zip(on.clients, off.clients, strict=True):
                assert (sum(a.transport.writes), a.conn.stalls) == (sum(b.transport.writes), b.conn.stalls)
        assert on.js_state() == off.js_state()
    finally:
        for world in worlds:
            await world.stop()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subscriptions, steps)
def test_runs_on_and_off_give_every_client_the_same_bytes(
    subs: list[tuple[int, tuple[str, str], int]], traffic: list[Step]
) -> None:
    with stalls_by_count():
        asyncio.run(_run(subs, traffic))


#: Subject mappings (none by chance): a run is mapped whole, a message alone in ``_slow_pub``.
MAPPED = {
    **OPTIONS,
    "mappings": {
        "a.c": [MapDest(subject="a.b")],
        "b": [MapDest(subject="a.b.c")],
        "js.b.*": [MapDest(subject="js.a.{{wildcard(1)}}")],
        "q.*": [MapDest(subject="q.{{partition(2,1)}}")],
    },
}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(subscriptions, steps)
def test_runs_on_and_off_with_subject_mappings(subs: list[tuple[int, tuple[str, str], int]], traffic: list[Step]) -> None:
    with stalls_by_count():
        asyncio.run(_run(subs, traffic, options=MAPPED))


def test_the_worlds_see_traffic() -> None:
    """The harness itself: a publish reaches a subscriber, a JetStream publish is acknowledged."""

    async def run() -> dict[str, Any]:
        world = World(runs=True, options=OPTIONS)
        try:
            await _setup(world, [(1, ("a.*", ""), 0)])
            world.feed(0, frame("a.b", "", None, b"hi") + frame("js.a.1", "_INBOX.c0.9", None, b"x"))
            await world.settle()
            return {"sub": world.output(1), "pub": world.output(0), "js": world.js_state()}
        finally:
            await world.stop()

    got = asyncio.run(run())
    assert got["sub"] == b"MSG a.b 10 2\r\nhi\r\n"
    assert got["pub"] == b'MSG _INBOX.c0.9 1 23\r\n{"stream":"S1","seq":1}\r\n'
    assert got["js"]["S1"]["msgs"] == [(1, "js.a.1", b"", b"x")]


def test_queue_groups_in_long_runs() -> None:
    """Queue groups over long runs of one subject (a queue segment: the members picked message by
    message with the same draws), members on every client — the one with a deliver filter, the one
    whose socket takes little (early writes, stalls, the slow-consumer cut mid-segment), two groups
    on one subject, a plain subscriber beside a group, several members of a group on one client
    and members of both groups on one client (their frames in message order, varying sids), a
    member that unsubscribes after 1 (picked mid-segment: that message routed alone) — the same
    bytes with runs on and off."""
    many = tuple(Pub("q.1", "", None, b"c" * 20) for _ in range(30))  # long segments of one subject
    many += tuple(Pub("q.2", "", None, b"d" * 6000) for _ in range(12))
    many += tuple(Pub(s, "", None, p) for s, p in [("q.1", b"a" * 20), ("q.2", b"b" * 60000)] * 12)
    subs = [(1, ("q.*", "g"), 0), (2, ("q.*", "g"), 0), (3, ("q.*", "g"), 0), (0, ("q.1", "g"), 0)]
    two_on_one = [(2, ("q.*", "g"), 0), (3, ("q.*", "g"), 0), (3, ("q.1", "g"), 0)]
    both_groups = [(2, ("q.*", "h"), 0), (3, ("q.*", "h"), 0)]
    unsub = [(3, ("q.*", "g"), 1), (0, ("q.*", "h"), 0)]  # auto-unsubscribe mid-segment; the producer's own
    for extra in ([], both_groups, [(1, ("q.1", ""), 0)], two_on_one, two_on_one + both_groups, unsub):
        traffic = [Step(0, many + many[::-1], cuts, drain) for cuts, drain in [((), False), ((77, 5000), True)] * 3]
        with stalls_by_count():
            asyncio.run(_run(subs + extra, traffic, writes=True))
