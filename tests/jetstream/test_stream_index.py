"""A stream's create, update or restore beside many streams does not visit them all
(`stream_index.StreamIndex`: the streams by subject in a token trie, the reserved bytes as running
sums). The trie's candidates are a superset of the streams whose subjects collide
(`subjects_overlap`, nats-server's ``SubjectsCollide``) for random subjects with every kind of token,
and stay right through adds, updates and removes; on the embedded server the same random creates,
updates and deletes get the same answers with `stream_index.INDEXED` on and off; and a KV bucket's
create beside 100 and beside 1,000 buckets, and the look-up of a bucket's stream by subject
(``STREAM.NAMES``), visit no stream and compare no other's subjects (counted, never timed)."""

from __future__ import annotations

import random
from collections.abc import Iterator, ValuesView
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import count_calls, embedded

from pyjetstream.api.enums import StorageType
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.protocol.subjects import subjects_overlap
from pyjetstream.server.jetstream import api_stream, stream_index
from pyjetstream.server.jetstream import stream as stream_module
from pyjetstream.server.jetstream.stream_index import StreamIndex

TOKENS = ["a", "b", "c", "*", ">", "*x", ">y", "", "$KV"]


def _subject(rng: random.Random) -> str:
    return ".".join(rng.choice(TOKENS) for _ in range(rng.randint(1, 4)))


def _config(rng: random.Random, name: str) -> StreamConfig:
    subjects = sorted({_subject(rng) for _ in range(rng.randint(0, 3))})
    storage = rng.choice([StorageType.FILE, StorageType.MEMORY])
    return StreamConfig(name=name, subjects=subjects, storage=storage, max_bytes=rng.choice([-1, 0, 10, 1000]))


@pytest.mark.parametrize("seed", range(20))
def test_candidates_hold_every_colliding_stream(seed: int) -> None:
    """Random streams come, change and go; after each step every stream with a subject that
    collides with a random subject is among its candidates, and the reserved bytes are the sums."""
    rng = random.Random(seed)
    index = StreamIndex()
    streams: dict[str, StreamConfig] = {}
    for step in range(200):
        roll = rng.random()
        if roll < 0.5 or not streams:
            name = f"S{step}"
            streams[name] = _config(rng, name)
            index.add(name, streams[name])
        elif roll < 0.75:
            name = rng.choice(sorted(streams))
            new = _config(rng, name)
            index.replace(name, streams[name], new)
            streams[name] = new
        else:
            name = rng.choice(sorted(streams))
            index.remove(name, streams.pop(name))
        for _ in range(5):
            subject = _subject(rng)
            found = index.candidates(subject)
            assert found <= set(streams)
            for name, cfg in streams.items():
                if any(subjects_overlap(subject, b) for b in cfg.subjects or ()):
                    assert name in found, (subject, cfg.subjects)
        for storage in StorageType:
            want = sum(c.max_bytes for c in streams.values() if c.storage == storage and c.max_bytes > 0)
            assert index.reserved(storage) == want
    for name in list(streams):
        index.remove(name, streams.pop(name))
    assert index.candidates(">") == set()


def _valid_subject(rng: random.Random) -> str:
    tokens = [rng.choice(["a", "b", "c", "*"]) for _ in range(rng.randint(1, 3))]
    return ".".join(tokens + ([">"] if rng.random() < 0.3 else []))


async def _answers(seed: int) -> list[Any]:
    """The replies to a seeded run of creates, updates and deletes with colliding subjects and
    byte reservations against small storage limits."""
    rng = random.Random(seed)
    out: list[Any] = []
    async with embedded(max_memory_store=4000, max_file_store=6000) as server:
        nc = await RawClient.connect(server.client_url)
        try:
            for step in range(60):
                name = f"S{rng.randrange(8)}"
                roll = rng.random()
                if roll < 0.2:
                    reply = await nc.api(f"$JS.API.STREAM.DELETE.{name}")
                elif roll < 0.35:  # (a look-up of the streams of a subject)
                    reply = await nc.api("$JS.API.STREAM.NAMES", {"subject": _valid_subject(rng)})
                    out.append((step, reply.get("streams"), reply.get("total")))
                    continue
                else:
                    subjects = sorted({_valid_subject(rng) for _ in range(rng.randint(1, 2))})
                    cfg = {
                        "name": name,
                        "subjects": subjects,
                        "storage": "file" if int(name[1:]) % 2 else "memory",  # (an update keeps it)
                        "max_bytes": rng.choice([-1, 500, 1500, 2500]),
                    }
                    verb = "UPDATE" if roll < 0.6 else "CREATE"
                    reply = await nc.api(f"$JS.API.STREAM.{verb}.{name}", cfg)
                error = reply.get("error")
                out.append((step, error["err_code"] if error else reply.get("config", {}).get("subjects")))
            return out
        finally:
            await nc.close()


@pytest.mark.parametrize("seed", range(6))
async def test_the_index_answers_as_every_stream_visited(monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    indexed = await _answers(seed)
    assert any(entry[1] == 10065 for entry in indexed)  # (subjects overlap: the case exercised)
    monkeypatch.setattr(stream_index, "INDEXED", False)
    assert await _answers(seed) == indexed


class _CountingStreams(dict[str, Any]):
    """The engine's streams, counting the streams a pass over them visits."""

    visits = 0

    def values(self) -> ValuesView[Any]:
        outer = self

        class _Values(ValuesView[Any]):
            def __iter__(self) -> Iterator[Any]:
                for value in dict.values(outer):
                    _CountingStreams.visits += 1
                    yield value

        return _Values(self)


async def _bucket_create_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[int, int, int, int, int]:
    """(streams visited, subjects compared, trie nodes visited) by one KV bucket's create beside
    ``n``, then (streams visited, subjects compared) by a ``STREAM.NAMES`` of one bucket's subject."""
    async with embedded() as server:
        engine = server.jetstream
        engine.streams = _CountingStreams(engine.streams)
        nc = await RawClient.connect(server.client_url)
        try:

            def bucket(i: int) -> dict[str, Any]:
                return {"name": f"KV_b{i}", "subjects": [f"$KV.b{i}.>"], "storage": "memory", "max_bytes": 1000}

            for i in range(n):
                assert "error" not in await nc.api(f"$JS.API.STREAM.CREATE.KV_b{i}", bucket(i))
            with (
                count_calls(monkeypatch, api_stream, "subjects_overlap") as in_api,
                count_calls(monkeypatch, stream_module, "subjects_overlap") as in_stream,  # (Stream.matches)
            ):
                _CountingStreams.visits, index = 0, engine.stream_index
                nodes = index.visited
                assert "error" not in await nc.api(f"$JS.API.STREAM.CREATE.KV_b{n}", bucket(n))
                compared = in_api["subjects_overlap"] + in_stream["subjects_overlap"]
                create = (_CountingStreams.visits, compared, index.visited - nodes)
                _CountingStreams.visits = 0
                in_api.clear()
                in_stream.clear()
                names = await nc.api("$JS.API.STREAM.NAMES", {"subject": "$KV.b7.k"})
                assert (names["streams"], names["total"]) == (["KV_b7"], 1)
                compared = in_api["subjects_overlap"] + in_stream["subjects_overlap"]
                return (*create, _CountingStreams.visits, compared)
        finally:
            await nc.close()


async def test_a_bucket_create_visits_no_other_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beside 100 and 1,000 buckets: a bucket's create visits no stream and compares no subject;
    the look-up of a bucket's stream by subject compares one."""
    small = await _bucket_create_steps(monkeypatch, 100)
    assert small == await _bucket_create_steps(monkeypatch, 1000)
    assert (small[0], small[1], small[3], small[4]) == (0, 0, 0, 1)
