"""A run's stretch takes publishes whose only ``Nats-`` header to check is
``Nats-Expected-Last-Subject-Sequence`` (what a KV ``create`` / ``update`` sends:
``ingest_run.Run._expected``), each checked against its subject's last sequence as the stretch
stands; a mismatch goes through ``StreamIngest.process`` (10071 "wrong last sequence: N").

Differential: the same pipelined traffic (mixed subjects, a subject repeated within one read,
right and wrong expectations, with and without ``…-Subject`` naming a literal subject or a
filter, other headers, message ids) and concurrent KV creates / updates from our client into
the embedded server with runs on, with runs off (``PYJETSTREAM_RUNS=0``: each publish through
``process`` alone) and into nats-server 2.15.1: every PubAck and every stored message the same.
Then steps, not time: a read of KV updates is one ``store_run`` and reads no message, and the
expectations look up each subject once in the index, at 500 keys as at 10,000."""

from __future__ import annotations

import asyncio
import base64
import json
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from tests.jetstream.scale_steps import count_calls, embedded
from tests.server.runs_world import frame, read_replies
from tests.support.targets import EMBEDDED, NATS_SERVER, make_target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import KeyValue, KeyValueConfig, errors, jetstream
from pyjetstream.server.jetstream.store.blockfiles import BlockFiles
from pyjetstream.server.jetstream.store.filestore import FileStore
from pyjetstream.server.jetstream.store.indexed import IndexedStore
from pyjetstream.server.jetstream.store.seqquery import SeqQueries
from pyjetstream.server.jetstream.stream_ingest import StreamIngest
from pyjetstream.server.server import Server

SUBJECTS = ["e.k0", "e.k1", "e.k2", "e.k3", "e.x.1"]
EXPECT = "Nats-Expected-Last-Subject-Sequence"


def _hdr(*pairs: tuple[str, str]) -> bytes:
    return ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in pairs) + "\r\n").encode()


class Model:
    """What the stream should hold, to make most expectations right (the servers are compared
    with each other, not with this)."""

    def __init__(self) -> None:
        self.seq = 0
        self.last: dict[str, int] = {}

    def last_on(self, on: str) -> int:
        if on == "e.*":
            return max((v for k, v in self.last.items() if k.count(".") == 1), default=0)
        return self.last.get(on, 0)

    def message(self, rng: random.Random, n: int) -> tuple[str, bytes | None]:
        subject = rng.choice(SUBJECTS)
        kind = rng.randrange(10)
        ok = True
        hdr: bytes | None = None
        if kind == 0:
            hdr = None
        elif kind == 1:
            hdr = _hdr(("Foo", "bar"))
        elif kind == 2:
            hdr = _hdr(("Nats-Msg-Id", f"id{n}"))
        elif kind in (3, 4, 5):  # right
            hdr = _hdr(("Foo", "x"), (EXPECT, str(self.last_on(subject))))
        elif kind == 6:  # wrong
            hdr, ok = _hdr((EXPECT, str(self.last_on(subject) + rng.choice((1, 2, 7))))), False
        elif kind == 7:  # not a number
            hdr, ok = _hdr((EXPECT, "abc")), False
        else:  # on another subject or a filter, right or wrong
            on = rng.choice(["e.*", "e.k0", "e.none"])
            want = self.last_on(on) + (0 if kind == 8 else 1)
            hdr, ok = _hdr((EXPECT, str(want)), (EXPECT + "-Subject", on)), kind == 8
        if ok:
            self.seq += 1
            self.last[subject] = self.seq
        return subject, hdr


def traffic(seed: int, rounds: int, per_round: int) -> list[list[tuple[str, bytes | None]]]:
    rng = random.Random(seed)
    model = Model()
    return [[model.message(rng, r * per_round + i) for i in range(per_round)] for r in range(rounds)]


async def run_traffic(
    url: str, rounds: list[list[tuple[str, bytes | None]]], republish: bool, transform: bool = False
) -> list[Any]:
    host, port = url.removeprefix("nats://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        await reader.readline()  # INFO
        connect_opts = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "protocol": 1}
        writer.write(f"CONNECT {json.dumps(connect_opts)}\r\nSUB r.> 1\r\nSUB rp.> 2\r\n".encode())
        cfg: dict[str, Any] = {"name": "E", "subjects": ["e.>"], "duplicate_window": 60_000_000_000}
        if republish:  # (e.x.1 is not republished)
            cfg["republish"] = {"src": "e.*", "dest": "rp.{{wildcard(1)}}"}
        if transform:  # (e.k0 stored as e.t0, the rest as they are)
            cfg["subject_transform"] = {"src": "e.k0", "dest": "e.t0"}
        writer.write(f"PUB $JS.API.STREAM.CREATE.E r.create {len(json.dumps(cfg))}\r\n{json.dumps(cfg)}\r\n".encode())
        assert "error" not in (await read_replies(reader, 1))["r.create"]
        answers: list[Any] = []
        events: list[Any] = []
        n = 0
        for msgs in rounds:  # each round one write: the server reads it together
            data = bytearray()
            for subject, hdr in msgs:
                payload = f"p{n}".encode()
                data += frame(subject, f"r.{n}", hdr, payload)
                n += 1
            writer.write(bytes(data))
            got = await read_replies(reader, len(msgs), events)
            answers += [got[f"r.{i}"] for i in range(n - len(msgs), n)]
        subjects = [subject for msgs in rounds for subject, _ in msgs]
        copies = sum(1 for a, subject in zip(answers, subjects, strict=True) if "error" not in a and subject.count(".") == 1)
        while republish and sum(isinstance(e, tuple) for e in events) < copies:  # the last copies
            await read_replies(reader, 1, events)
        return [answers, await _contents(reader, writer, "E"), events]
    finally:
        writer.close()


async def _contents(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stream: str) -> list[Any]:
    """The stream's messages (subject, sequence, headers, data) by ``STREAM.MSG.GET``."""
    out = []
    seq = 1
    while True:
        body = json.dumps({"seq": seq})
        writer.write(f"PUB $JS.API.STREAM.MSG.GET.{stream} r.get{seq} {len(body)}\r\n{body}\r\n".encode())
        got = (await read_replies(reader, 1))[f"r.get{seq}"]
        if "error" in got:
            return out
        m = got["message"]
        out.append((m["subject"], m["seq"], base64.b64decode(m.get("hdrs", "")), base64.b64decode(m.get("data", ""))))
        seq += 1


async def kv_traffic(url: str) -> list[Any]:
    """Concurrent KV creates and updates (right and wrong revisions, one key several times in
    one read) from our client; the results and the bucket's messages."""
    nc = await connect(url)
    try:
        js = jetstream(nc)
        kv = await js.create_key_value(KeyValueConfig(bucket="B", history=3))

        async def attempt(coro: Any) -> Any:
            try:
                return await coro
            except errors.KeyExists as exc:
                return ("exists", exc.err_code, exc.description)

        results: list[Any] = []
        results += await asyncio.gather(*(attempt(kv.create(f"k{i % 5}", b"c")) for i in range(8)))
        for _ in range(4):
            revs = [await kv.get(f"k{i}") for i in range(5)]
            ops = [kv.update(f"k{i % 5}", b"u", revs[i % 5].revision + (i // 5)) for i in range(12)]
            results += await asyncio.gather(*(attempt(op) for op in ops))
        await kv.delete("k1")
        # (one after the other: a create over a delete marker reads the key, then retries)
        results += [await attempt(kv.create("k1", b"again")), await attempt(kv.create("k1", b"twice"))]
        reader, writer = await asyncio.open_connection(*url.removeprefix("nats://").split(":"))
        try:
            await reader.readline()
            writer.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"protocol":1}\r\nSUB r.> 1\r\n')
            contents = await _contents(reader, writer, "KV_B")
        finally:
            writer.close()
        return [results, contents]
    finally:
        await nc.close()


@pytest.mark.parametrize(
    ("seed", "republish", "transform"), [(1, False, False), (2, False, False), (3, True, False), (4, True, False),
                                         (5, False, True), (6, True, True)]
)
def test_expectation_stretches_equal_one_by_one_and_nats_server(
    seed: int, republish: bool, transform: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``republish``: stream E republishes ``e.*`` to ``rp.*`` (a run's stretch republishes its
    stored messages, `Run._republish`), the copies received on the publishing connection;
    ``transform``: E's input transform stores ``e.k0`` as ``e.t0`` (a stretch takes each message
    under its transformed subject)."""
    rounds = traffic(seed, rounds=6, per_round=40)
    seen = {}
    for name, kind, runs in (("on", EMBEDDED, "1"), ("off", EMBEDDED, "0"), ("nats", NATS_SERVER, "1")):
        monkeypatch.setenv("PYJETSTREAM_RUNS", runs)
        target = make_target(kind, tmp_path / name)
        try:
            seen[name] = asyncio.run(_both(target.url, rounds, republish, transform))
        finally:
            target.stop()
    assert seen["on"] == seen["off"]  # (every PubAck and copy in the same order)
    (answers, contents, events), kv = seen["on"]
    (nats_answers, nats_contents, nats_events), nats_kv = seen["nats"]
    assert (answers, contents, kv) == (nats_answers, nats_contents, nats_kv)
    copies = [e for e in events if isinstance(e, tuple)]
    assert copies == [e for e in nats_events if isinstance(e, tuple)]
    assert len(copies) > 50 if republish else not copies
    assert any(a.get("error", {}).get("err_code") == 10071 for a in answers)
    assert sum("error" not in a for a in answers) > len(answers) // 3  # (the model knows no transform)


async def _both(
    url: str, rounds: list[list[tuple[str, bytes | None]]], republish: bool, transform: bool
) -> list[Any]:
    return [await run_traffic(url, rounds, republish, transform), await kv_traffic(url)]


@asynccontextmanager
async def _bucket() -> AsyncIterator[tuple[Server, KeyValue]]:
    """An embedded server (`embedded`) and a KV bucket ``B`` on it."""
    async with embedded() as server:
        nc = await connect(server.client_url)
        try:
            yield server, await jetstream(nc).create_key_value(KeyValueConfig(bucket="B"))
        finally:
            await nc.close()


def test_a_read_of_kv_updates_is_one_store_run_and_reads_no_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps: 200 KV updates (right revisions) in one read, at two sizes of the bucket — one
    ``store_run`` for the lot, no ``process``, no message read (``load_last_msg``)."""

    async def run() -> list[dict[str, int]]:
        async with _bucket() as (_server, kv):
            out = []
            for size in (200, 2_000):
                revs = await asyncio.gather(*(kv.put(f"k{i}", b"v") for i in range(size)))
                store.clear()
                ingest.clear()
                await asyncio.gather(*(kv.update(f"k{i}", b"u", revs[i]) for i in range(200)))
                out.append({"run": store["store_run"], "process": ingest["process"], "load_last": store["load_last_msg"]})
            return out

    with (
        count_calls(monkeypatch, IndexedStore, "store_run", "load_last_msg") as store,
        count_calls(monkeypatch, StreamIngest, "process") as ingest,
    ):
        small, large = asyncio.run(run())
    assert small == large, (small, large)
    assert small["load_last"] == 0 and small["process"] <= 2 and small["run"] <= 3, small


def test_an_expected_subject_sequence_reads_only_the_index_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps at two sizes of a file-stored bucket (500 and 10,000 keys): 200 KV updates of distinct
    keys in flight together look up each key's last sequence once in the per-subject index
    (`SeqQueries.last_match`, a dict and an array read: nats-server's ``LoadLastMsg`` from its
    per-subject state) and load no page of the sequence index, no block and no message, however
    many subjects the stream holds (issue 24: the publish's growth from 1k to 100k subjects is the
    memory's, not steps)."""
    rng = random.Random(24)

    async def run() -> list[dict[str, int]]:
        async with _bucket() as (server, kv):
            store = server.jetstream.streams["KV_B"].store
            assert isinstance(store, FileStore) and isinstance(store._backend, BlockFiles)
            out, revs = [], []
            for size in (500, 10_000):
                for lo in range(len(revs), size, 1_000):
                    hi = min(size, lo + 1_000)
                    revs += await asyncio.gather(*(kv.put(f"k{i}", b"v") for i in range(lo, hi)))
                keys = rng.sample(range(size), 200)
                pages, blocks = store._index.loads, store._backend._whole.loads
                lookups.clear()
                loads.clear()
                done = await asyncio.gather(*(kv.update(f"k{i}", b"u", revs[i]) for i in keys))
                for i, rev in zip(keys, done, strict=True):
                    revs[i] = rev
                pages, blocks = store._index.loads - pages, store._backend._whole.loads - blocks
                counted = {"lookup": lookups["last_match"], "load_last": loads["load_last_msg"]}
                out.append({**counted, "pages": pages, "blocks": blocks})
            return out

    with (
        count_calls(monkeypatch, SeqQueries, "last_match") as lookups,
        count_calls(monkeypatch, IndexedStore, "load_last_msg") as loads,
    ):
        small, large = asyncio.run(run())
    assert small == large == {"lookup": 200, "load_last": 0, "pages": 0, "blocks": 0}, (small, large)
