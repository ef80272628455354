"""A run's stretch takes a header block whose other ``Nats-`` headers are ones nothing on the way in
reads (``ingest_rules.INERT_HEADERS``: ``Nats-Stream``, ``-Subject``, ``-Sequence``, ``-Time-Stamp``,
``-Last-Sequence``, ``-Msg-Size``: what a republished copy and a direct get's answer carry), as
nats-server's ``processJetStreamMsg`` stores such a message like any other. Before, each such message
went through ``StreamIngest.process`` on its own: a stream republishing into a stream with a
per-subject limit cost 2.5x nats-server's CPU a publish (--dim probe, session 14).

Differential: the same reads (copies republished from ``A`` into ``B``, which keeps one message a
subject; publishes into ``C`` with inert headers beside message ids, duplicates, right and wrong
expected streams, TTLs valid and not, a roll-up the stream refuses, an inert header twice, ``Nats-``
inside a value) into the embedded server with ``INERT_IN_STRETCH`` on and off and into nats-server
2.15.1: every answer and every stored message the same. Then steps: a read of 200 publishes
republished into ``B`` takes no ``process`` and no ``store_msg`` but its first, with ``B`` holding
100 subjects as with 5,000 (off: one each a copy)."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.scale_steps import count_calls, embedded
from tests.server.runs_world import STAMP, frame, read_replies
from tests.support.targets import NATS_SERVER, make_target

from pyjetstream.server.jetstream import ingest_rules
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.stream_ingest import StreamIngest

STREAMS = [
    {"name": "A", "subjects": ["a.>"], "republish": {"src": "a.*", "dest": "b.{{wildcard(1)}}"}},
    {"name": "B", "subjects": ["b.>"], "max_msgs_per_subject": 1},
    {"name": "C", "subjects": ["c.>"], "duplicate_window": 60_000_000_000, "allow_msg_ttl": True},
]


def _hdr(*pairs: tuple[str, str]) -> bytes:
    return ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in pairs) + "\r\n").encode()


def _inert(rng: random.Random) -> list[tuple[str, str]]:
    """Some of the inert headers, as a copy or a direct get's answer would carry them."""
    pairs = [
        ("Nats-Stream", rng.choice(["A", "C", "OTHER"])),
        ("Nats-Subject", f"x.{rng.randrange(9)}"),
        ("Nats-Sequence", str(rng.randrange(1, 99))),
        ("Nats-Time-Stamp", "2026-11-29T17:00:00.123456789Z"),
        ("Nats-Last-Sequence", str(rng.randrange(99))),
        ("Nats-Msg-Size", str(rng.randrange(99))),
    ]
    return rng.sample(pairs, rng.randrange(1, len(pairs) + 1))


def _c_block(rng: random.Random, n: int) -> bytes | None:
    kind = rng.randrange(12)
    pairs = _inert(rng)
    if kind == 0:
        return None
    if kind in (1, 2):
        pairs.append(("Nats-Msg-Id", f"id{rng.randrange(n + 1)}"))  # (duplicates among them)
    elif kind == 3:
        pairs.append(("Nats-Expected-Stream", rng.choice(["C", "C", "A"])))
    elif kind == 4:
        pairs.append(("Nats-TTL", rng.choice(["1m", "2h", "x"])))
    elif kind == 5:
        pairs.append(("Nats-Rollup", "sub"))  # (C does not allow roll-ups: 10068)
    elif kind == 6:
        pairs += [("Nats-Sequence", "1"), ("Nats-Sequence", "2")]
    elif kind == 7:
        pairs.append(("X-Note", "Nats-Stream: C"))
    elif kind == 8:
        pairs.insert(0, ("Foo", "bar"))
    return _hdr(*pairs)


def traffic(seed: int, reads: int, per_read: int) -> list[list[tuple[str, bytes | None]]]:
    rng = random.Random(seed)
    out = []
    for r in range(reads):
        msgs: list[tuple[str, bytes | None]] = []
        for i in range(per_read):
            if rng.random() < 0.4:
                msgs.append((f"a.{rng.randrange(20)}", None))
            else:
                msgs.append((f"c.{rng.randrange(5)}", _c_block(rng, r * per_read + i)))
        out.append(msgs)
    return out


async def _request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, subject: str, body: Any) -> Any:
    data = json.dumps(body)
    writer.write(f"PUB {subject} r.req {len(data)}\r\n{data}\r\n".encode())
    return (await read_replies(reader, 1))["r.req"]


async def _contents(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str) -> list[Any]:
    """The stream's messages (subject, sequence, headers without a time stamp, data)."""
    info = await _request(reader, writer, f"$JS.API.STREAM.INFO.{stream}", {})
    out = []
    for seq in range(info["state"]["first_seq"], info["state"]["last_seq"] + 1):
        got = await _request(reader, writer, f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": seq})
        if "error" in got:
            out.append(("gone", seq))
            continue
        m = got["message"]
        hdr = STAMP.sub(b"", base64.b64decode(m.get("hdrs", "")))
        out.append((m["subject"], m["seq"], hdr, base64.b64decode(m.get("data", ""))))
    return out


async def run_traffic(url: str, reads: list[list[tuple[str, bytes | None]]]) -> list[Any]:
    host, port = url.removeprefix("nats://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        await reader.readline()  # INFO
        connect = {"verbose": False, "pedantic": False, "headers": True, "protocol": 1}
        writer.write(f"CONNECT {json.dumps(connect)}\r\nSUB r.> 1\r\n".encode())
        for cfg in STREAMS:
            created = await _request(reader, writer, f"$JS.API.STREAM.CREATE.{cfg['name']}", cfg)
            assert "error" not in created, created
        answers: list[Any] = []
        n = 0
        for msgs in reads:  # each read one write
            data = bytearray()
            for subject, hdr in msgs:
                payload = f"p{n}".encode()
                data += frame(subject, f"r.{n}", hdr, payload)
                n += 1
            writer.write(bytes(data))
            got = await read_replies(reader, len(msgs))
            answers += [got[f"r.{i}"] for i in range(n - len(msgs), n)]
        copies = sum(1 for msgs in reads for subject, _ in msgs if subject.startswith("a."))
        for _ in range(200):  # (the copies are at most once: wait until B has them all)
            state = (await _request(reader, writer, "$JS.API.STREAM.INFO.B", {}))["state"]
            if state["last_seq"] == copies:
                break
            await asyncio.sleep(0.05)
        return [answers, await _contents(reader, writer, "B"), await _contents(reader, writer, "C")]
    finally:
        writer.close()


async def _embedded_traffic(reads: list[list[tuple[str, bytes | None]]]) -> list[Any]:
    async with embedded() as server:
        return await run_traffic(server.client_url, reads)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_inert_headers_in_a_stretch_equal_one_by_one_and_nats_server(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads = traffic(seed, reads=6, per_read=60)
    seen = {}
    for name, on in (("on", True), ("off", False)):
        monkeypatch.setattr(ingest_rules, "INERT_IN_STRETCH", on)
        seen[name] = asyncio.run(_embedded_traffic(reads))
    target = make_target(NATS_SERVER, tmp_path / "nats")
    try:
        seen["nats"] = asyncio.run(run_traffic(target.url, reads))
    finally:
        target.stop()
    assert seen["on"] == seen["off"]
    assert seen["on"] == seen["nats"]
    answers, b, c = seen["on"]
    kept = [m for m in b if m[0] != "gone"]  # (one a subject)
    assert len(kept) == 20 and all(m[0].startswith("b.") and b"Nats-Stream: A\r\n" in m[2] for m in kept)
    errors = {a["error"]["err_code"] for a in answers if "error" in a}
    assert {10111, 10060, 10165} <= errors, errors  # (the roll-up refused, a wrong expected stream, a bad TTL)
    assert any(a.get("duplicate") for a in answers)
    assert sum(b"Nats-Sequence: " in m[2] for m in c) > 20


def test_a_read_republished_into_a_limited_stream_takes_no_process_at_either_size(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Steps: 200 publishes into ``A`` in one read, republished into ``B`` (one message a subject)
    holding 100 and 5,000 subjects: the copies take no ``StreamIngest.process`` and no
    ``IndexedStore.store_msg`` but the read's first (off: one of each a copy)."""

    async def run(on: bool) -> list[dict[str, int]]:
        monkeypatch.setattr(ingest_rules, "INERT_IN_STRETCH", on)
        async with embedded() as server:
            host, port = server.client_url.removeprefix("nats://").split(":")
            reader, writer = await asyncio.open_connection(host, int(port))
            await reader.readline()
            writer.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nSUB r.> 1\r\n')
            for cfg in STREAMS[:2]:
                await _request(reader, writer, f"$JS.API.STREAM.CREATE.{cfg['name']}", cfg)
            out, held, sent = [], 0, 0
            for size in (100, 5_000):
                writer.write(b"".join(b"PUB a.%d 1\r\nx\r\n" % j for j in range(held, size)))
                sent += size - held
                held = size
                await _wait_copies(reader, writer, sent)
                ingest.clear()
                store.clear()
                rng = random.Random(size)
                writer.write(b"".join(b"PUB a.%d r.%d 1\r\nx\r\n" % (rng.randrange(size), i) for i in range(200)))
                await read_replies(reader, 200)
                sent += 200
                await _wait_copies(reader, writer, sent)
                out.append({"process": ingest["process"], "store_msg": store["store_msg"]})
            writer.close()
            return out

    with (
        count_calls(monkeypatch, StreamIngest, "process") as ingest,
        count_calls(monkeypatch, IndexedStore, "store_msg") as store,
    ):
        small, large = asyncio.run(run(True))
        off = asyncio.run(run(False))
    # (A read's first publish is stored on its own, before the run's stretch, and so is its copy.)
    assert small == large and small["process"] <= 2 and small["store_msg"] <= 2, (small, large)
    assert all(o["process"] >= 200 and o["store_msg"] >= 200 for o in off), off


async def _wait_copies(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, copies: int) -> None:
    for _ in range(400):
        state = (await _request(reader, writer, "$JS.API.STREAM.INFO.B", {}))["state"]
        if state["last_seq"] == copies:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"B has {state['last_seq']} of {copies} copies")


def test_only_these_nats_headers_ends_early_with_the_same_answer() -> None:
    """`only_these_nats_headers` returns once every ``Nats-`` of the block is accounted for: the
    answer of counting every line (each line's ``Nats-`` is at a place no other line matches)."""
    from pyjetstream.api.headers import NATS_PREFIX, only_these_nats_headers

    lines = ingest_rules.inert_too(ingest_rules.ID_TTL_HEADERS)

    def counted(hdr: bytes) -> bool:
        return hdr.count(NATS_PREFIX) - sum(line in hdr for line in lines) == 0

    rng = random.Random(24)
    names = ["Nats-Msg-Id", "Nats-TTL", "Nats-Stream", "Nats-Stream-Source", "Nats-Sequence", "Nats-Rollup",
             "Nats-Expected-Last-Sequence", "Nats-Last-Sequence", "Foo", "X-Nats-Stream"]  # fmt: skip
    values = ["1", "Nats-Stream: S", "Nats-", "a b"]
    for _ in range(3000):
        pairs = [(rng.choice(names), rng.choice(values)) for _ in range(rng.randrange(6))]
        hdr = _hdr(*pairs)
        assert only_these_nats_headers(hdr, lines) == counted(hdr), hdr
