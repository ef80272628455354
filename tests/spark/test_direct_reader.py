"""The batched direct get range reader on its own (no Spark), on both targets: exact ranges over
deleted and purged sequences, a subject filter, the message's own headers only, and the fallback
to a consumer for a stream without ``allow_direct``."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.targets import Target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark.arrow_batch import arrow_schema
from pyjetstream.spark.direct_reader import DirectRangeReader
from pyjetstream.spark.options import parse_options
from pyjetstream.spark.partition import open_reader, read_range
from pyjetstream.spark.schema import message_schema

SCHEMA = arrow_schema(message_schema(parse_options({"stream": "X"})))


async def _fill(url: str, name: str, n: int, *, allow_direct: bool = True) -> None:
    nc = await connect(url)
    try:
        js = jetstream(nc)
        await js.create_stream(StreamConfig(name=name, subjects=[f"{name}.>"], allow_direct=allow_direct))
        for i in range(n):
            headers = {"X-I": str(i)} if i % 10 == 0 else None
            await js.publish_async(f"{name}.{i % 4}", str(i).encode(), headers=headers)
        await js.publish_async_complete(timeout=30)
        stream = await js.stream(name)
        for seq in (5, 6, 50):
            await stream.delete_msg(seq)
    finally:
        await nc.close()


def _rows(
    url: str, name: str, first: int, last: int, subjects: tuple[str, ...] = (), **options: str
) -> list[tuple]:
    opts = parse_options({"servers": url, "stream": name, "batchSize": "7", **options})
    rows = []
    for batch in read_range(opts, name, first, last, subjects, SCHEMA):
        d = batch.to_pydict()
        rows += list(zip(d["subject"], d["sequence"], d["data"], d["headers"], d["timestamp"], strict=True))
    return rows


def _direct_rows(url: str, name: str, first: int, last: int, subject: str = "") -> list[tuple]:
    """Read through :class:`DirectRangeReader` whatever API level the server announces (the embedded
    server answers batched direct get while it still reports level 0)."""
    opts = parse_options({"servers": url, "stream": name, "batchSize": "7"})

    async def read() -> list[tuple]:
        nc = await connect(url)
        reader = DirectRangeReader(nc, f"$JS.API.DIRECT.GET.{name}", opts, name, first, last, subject, SCHEMA)
        rows: list[tuple] = []
        try:
            await reader.open()
            while (batch := await reader.next_batch()) is not None:
                d = batch.to_pydict()
                rows += list(
                    zip(d["subject"], d["sequence"], d["data"], d["headers"], d["timestamp"], strict=True)
                )
        finally:
            await reader.close()
            await nc.close()
        return rows

    return asyncio.run(read())


async def _level(url: str) -> int:
    nc = await connect(url)
    try:
        return await jetstream(nc).api_level()
    finally:
        await nc.close()


def _uses_direct(url: str, name: str, subjects: tuple[str, ...] = ()) -> bool:
    opts = parse_options({"servers": url, "stream": name, "directGet": "true"})

    async def probe() -> bool:
        nc = await connect(url)
        try:
            reader = await open_reader(nc, opts, name, 1, 10, subjects, SCHEMA)
            await reader.close()
            return isinstance(reader, DirectRangeReader)
        finally:
            await nc.close()

    return asyncio.run(probe())


@pytest.mark.parametrize("allow_direct", [True, False])
def test_direct_and_consumer_reads_agree(js_server: Target, allow_direct: bool) -> None:
    name = f"DR{int(allow_direct)}{js_server.kind.replace('-', '')}"
    asyncio.run(_fill(js_server.url, name, 120, allow_direct=allow_direct))
    level = asyncio.run(_level(js_server.url))
    assert _uses_direct(js_server.url, name) is (allow_direct and level >= 1)
    assert not _uses_direct(js_server.url, name, (f"{name}.1", f"{name}.2"))
    consumer = _rows(js_server.url, name, 3, 100, directGet="false")
    assert _rows(js_server.url, name, 3, 100) == consumer  # the default: a consumer
    assert _rows(js_server.url, name, 3, 100, directGet="true") == consumer
    if not allow_direct:
        return
    direct = _direct_rows(js_server.url, name, 3, 100)
    assert direct == consumer
    assert [r[1] for r in direct] == [s for s in range(3, 101) if s not in (5, 6, 50)]
    assert all(r[2] == str(r[1] - 1).encode() for r in direct)
    by_seq = {r[1]: r for r in direct}
    assert by_seq[3][3] is None and dict(by_seq[11][3]) == {"X-I": ["10"]}  # its own headers only
    assert all(r[4] is not None for r in direct)
    filtered = _direct_rows(js_server.url, name, 1, 120, f"{name}.1")
    assert [r[1] for r in filtered] == [s for s in range(1, 121) if (s - 1) % 4 == 1 and s not in (5, 6, 50)]
    assert filtered == _rows(js_server.url, name, 1, 120, (f"{name}.1",), directGet="false")
    assert _rows(js_server.url, name, 1, 120, (f"{name}.1",), directGet="true") == filtered
    assert _direct_rows(js_server.url, name, 5, 6) == []
    assert [r[1] for r in _direct_rows(js_server.url, name, 118, 500)] == [118, 119, 120]
