"""The executor-side range reader on its own (no Spark): exact ranges, filters, a consumer lost
mid-read, and that a partition asks for no more than its range."""

from __future__ import annotations

from typing import Any

from tests.support.targets import Target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import StreamConfig, jetstream
from pyjetstream.spark.arrow_batch import arrow_schema
from pyjetstream.spark.options import parse_options
from pyjetstream.spark.range_reader import RangeReader
from pyjetstream.spark.schema import message_schema


async def _fill(url: str, n: int) -> None:
    nc = await connect(url)
    try:
        js = jetstream(nc)
        await js.create_stream(StreamConfig(name="RR", subjects=["rr.>"]))
        for i in range(n):
            await js.publish_async(f"rr.{i % 4}", str(i).encode())
        await js.publish_async_complete(timeout=30)
    finally:
        await nc.close()


async def _read(reader: RangeReader, after_first: Any = None) -> list[tuple[str, int]]:
    rows: list[tuple[str, int]] = []
    await reader.open()
    try:
        while (batch := await reader.next_batch()) is not None:
            d = batch.to_pydict()
            rows += list(zip(d["subject"], d["sequence"], strict=True))
            if after_first is not None:
                await after_first(reader)
                after_first = None
    finally:
        await reader.close()
        await reader.nc.close()
    return rows


async def _reader(url: str, first: int, last: int, subjects: tuple[str, ...] = (), batch: int = 100) -> RangeReader:
    opts = parse_options({"servers": url, "stream": "RR", "batchSize": str(batch)})
    nc = await connect(url)
    return RangeReader(nc, opts, "RR", first, last, subjects, arrow_schema(message_schema(opts)))


async def test_exact_ranges_and_filters(server: Target) -> None:
    await _fill(server.url, 1000)
    assert [s for _, s in await _read(await _reader(server.url, 101, 350))] == list(range(101, 351))
    assert [s for _, s in await _read(await _reader(server.url, 995, 2000))] == list(range(995, 1001))
    assert await _read(await _reader(server.url, 1001, 2000)) == []
    rows = await _read(await _reader(server.url, 1, 200, subjects=("rr.1", "rr.2")))
    assert [s for _, s in rows] == [s for s in range(1, 201) if (s - 1) % 4 in (1, 2)]
    rows = await _read(await _reader(server.url, 1, 200, subjects=("rr.>", "rr.3")))  # overlapping: filtered here
    assert len(rows) == 200


async def test_a_partition_stops_at_its_end(server: Target) -> None:
    """Pull requests never ask for more messages than sequences left in the range."""
    await _fill(server.url, 1000)
    reader = await _reader(server.url, 1, 250, batch=100)
    rows = await _read(reader)
    assert [s for _, s in rows] == list(range(1, 251))
    assert reader.cursor.cursor == 250  # nothing beyond the range was delivered


async def test_consumer_deleted_mid_read_is_recreated(server: Target) -> None:
    await _fill(server.url, 600)

    async def delete_consumer(reader: RangeReader) -> None:
        nc = await connect(server.url)
        try:
            await jetstream(nc).delete_consumer("RR", reader._consumer)
        finally:
            await nc.close()

    rows = await _read(await _reader(server.url, 1, 600, batch=100), after_first=delete_consumer)
    assert [s for _, s in rows] == list(range(1, 601))


async def test_deliveries_with_and_without_headers_in_one_batch(server: Target) -> None:
    """A delivery without headers comes as a MSG frame with a reply subject, one with headers as an
    HMSG frame; runs of both kinds, mixed in one batch, give each row its subject, sequence, headers
    (null without) and payload, as stored."""
    nc = await connect(server.url)
    try:
        js = jetstream(nc)
        await js.create_stream(StreamConfig(name="RR", subjects=["rr.>"]))
        for i in range(300):
            headers = {"K": str(i)} if (i // 7) % 2 else None  # runs of 7 of each kind
            await js.publish_async(f"rr.{i % 3}", b"p%d" % i, headers=headers)
        await js.publish_async_complete(timeout=30)
    finally:
        await nc.close()
    reader = await _reader(server.url, 1, 300, batch=128)
    await reader.open()
    rows: list[tuple[str, int, Any, bytes]] = []
    try:
        while (batch := await reader.next_batch()) is not None:
            d = batch.to_pydict()
            rows += list(zip(d["subject"], d["sequence"], d["headers"], d["data"], strict=True))
    finally:
        await reader.close()
        await reader.nc.close()
    assert rows == [
        (f"rr.{i % 3}", i + 1, [("K", [str(i)])] if (i // 7) % 2 else None, b"p%d" % i) for i in range(300)
    ]
