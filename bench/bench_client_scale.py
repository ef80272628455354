"""Client cost as the state grows: pyjetstream.client beside nats-py, one server, one run.

    .venv/bin/python bench/bench_client_scale.py [--dim kv,objects,listing,drain,acks,fetch,ordered]
        [--scale 1.0] [--server nats-server|embedded] [--md out.md]

bench_scale.py measures the server's cost per operation as its state grows; this measures the
CLIENT's: wall time and this process's CPU (``time.process_time``; the server is another process)
per item, at three sizes ten times apart, for our client and nats-py on the same server in the same
run (nats-py only where it has the operation). ``--scale`` multiplies every size (0.1 for a quick
look). Slow (minutes at scale 1): kept out of the suite.

Dimensions (the item each cost is divided by):
- kv (1k/10k/100k keys, 10% deleted): keys() per key, watch all (initial values) per entry,
  history of one key per call while the bucket holds the keys, purge_deletes per entry walked;
- objects (100/1k/10k objects): list per object, get / put of one small object per call;
- listing (10/100/1k consumers on one stream, 10/100/1k streams; nats-server refuses 10k
  consumers on a stream): listing per item;
- drain (10k/100k/1M messages): messages() and consume() of an ack-none consumer per message;
- acks (1k/10k/100k pending): receive that many without acking, then ack them all, per message;
- fetch (batches of 1k/10k/100k): one fetch of the batch, per message;
- ordered (10k/100k/1M messages): an ordered consumer reading the stream, per message;
- subs (1k/10k/100k subscriptions on the client's connection, a tenth of them wildcards): 20,000
  messages published and received on one of them, per message (the client's dispatch by sid);
- requests (10/100/1k requests in flight at once): 20,000 requests answered by a responder on the
  same client, per request (the muxed inbox's table of waiting requests);
- spark (10k/100k/1M messages): the Spark source's partition read (``read_range``, no Spark) of the
  whole stream per row, of the last 1,000 sequences per call (a streaming micro-batch's task), and
  the streaming reader's driver-side planning per trigger (``latestOffset`` + ``partitions``);
- sparkstream (10k/100k/1M messages): a real local SparkSession's streaming query over the last
  5,000 sequences, 1,000 a micro-batch: Spark's time per micro-batch (its Python workers plan and
  read; this process's CPU is only its py4j calls);
- sparkkv (1k/10k/100k keys): the Spark source's KV table read (``option("bucket")``) per row, and
  the time until its first Arrow batch.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
from nats.js import api as napi

from pyjetstream.api import AckPolicy, StorageType
from pyjetstream.client import connect
from pyjetstream.client.jetstream import (
    ConsumerConfig,
    JetStream,
    KeyValueConfig,
    ObjectStoreConfig,
    OrderedConsumerConfig,
    StreamConfig,
    jetstream,
)
from pyjetstream.testing.process import server_command, start_on_loopback

PAYLOAD = b"x" * 64


@dataclass
class Row:
    dim: str
    op: str
    size: int
    client: str
    items: int
    wall: float
    cpu: float


@dataclass
class Run:
    url: str
    rows: list[Row] = field(default_factory=list)

    async def measure(
        self, dim: str, op: str, size: int, client: str, fn: Callable[[], Awaitable[int]]
    ) -> None:
        """Time ``fn`` (which returns how many items it handled) and keep wall and CPU per item."""
        wall0, cpu0 = time.perf_counter(), time.process_time()
        items = await fn()
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        self.rows.append(Row(dim, op, size, client, items, wall, cpu))
        print(
            f"  {dim:8} {op:34} {size:>8} {client:8} {items:>8} items "
            f"{wall / max(items, 1) * 1e6:9.2f} us wall {cpu / max(items, 1) * 1e6:9.2f} us cpu",
            flush=True,
        )


async def fill(js: JetStream, subjects: Callable[[int], str], n: int, headers: Any = None) -> None:
    """Publish ``n`` messages (pipelined, acks awaited at the end)."""
    for i in range(n):
        await js.publish_async(subjects(i), PAYLOAD, headers=headers)
        if i % 20000 == 19999:
            await js.publish_async_complete(timeout=120)
    await js.publish_async_complete(timeout=120)


async def pair(
    run: Run,
    dim: str,
    op: str,
    size: int,
    ours: Callable[[], Awaitable[int]],
    natspy: Callable[[], Awaitable[int]] | None,
) -> None:
    await run.measure(dim, op, size, "ours", ours)
    if natspy is not None:
        await run.measure(dim, op, size, "nats-py", natspy)


# --- kv ----------------------------------------------------------------------------------------------


async def build_kv(js: JetStream, bucket: str, n: int) -> None:
    await js.create_key_value(KeyValueConfig(bucket=bucket, history=5))
    await fill(js, lambda i: f"$KV.{bucket}.k{i}", n)
    await fill(js, lambda i: f"$KV.{bucket}.k0", 4)
    await fill(js, lambda i: f"$KV.{bucket}.k{i * 10 + 1}", n // 10, headers={"KV-Operation": "DEL"})


async def dim_kv(run: Run, size: int, js: JetStream, nc: Any) -> None:
    b = f"KV{size}"
    await build_kv(js, b, size)
    await build_kv(js, b + "P", size)
    await build_kv(js, b + "Q", size)
    ours, theirs = await js.key_value(b), await nc.jetstream().key_value(b)

    async def o_keys() -> int:
        return len(await ours.keys())

    async def n_keys() -> int:
        return len(await theirs.keys())

    async def o_watch() -> int:
        n = 0
        async for e in await ours.watch_all():
            if e is None:
                return n
            n += 1
        return n

    async def n_watch() -> int:
        w, n = await theirs.watchall(), 0
        while (await w.updates(timeout=30)) is not None:
            n += 1
        await w.stop()
        return n

    async def o_hist() -> int:
        for _ in range(20):
            await ours.history("k0")
        return 20

    async def n_hist() -> int:
        for _ in range(20):
            await theirs.history("k0")
        return 20

    async def o_pd() -> int:
        await (await js.key_value(b + "P")).purge_deletes(older_than=0)
        return size

    async def n_pd() -> int:
        await (await nc.jetstream().key_value(b + "Q")).purge_deletes(olderthan=-1)
        return size

    await pair(run, "kv", "keys()", size, o_keys, n_keys)
    await pair(run, "kv", "watch all, initial values", size, o_watch, n_watch)
    await pair(run, "kv", "history of one key (per call)", size, o_hist, n_hist)
    await pair(run, "kv", "purge_deletes (per key walked)", size, o_pd, n_pd)
    for name in (b, b + "P", b + "Q"):
        await js.delete_key_value(name)


# --- objects -----------------------------------------------------------------------------------------


async def dim_objects(run: Run, size: int, js: JetStream, nc: Any) -> None:
    b = f"OBJ{size}"
    ours = await js.create_object_store(ObjectStoreConfig(bucket=b, storage=StorageType.MEMORY))
    for i in range(size):
        await ours.put_bytes(f"o{i}", PAYLOAD)
    theirs = await nc.jetstream().object_store(b)

    async def o_list() -> int:
        return len(await ours.list())

    async def n_list() -> int:
        return len(await theirs.list())

    async def o_get() -> int:
        for i in range(20):
            await ours.get_bytes(f"o{i % size}")
        return 20

    async def n_get() -> int:
        for i in range(20):
            await theirs.get(f"o{i % size}")
        return 20

    async def o_put() -> int:
        for i in range(20):
            await ours.put_bytes(f"new-o{i}", PAYLOAD)
        return 20

    async def n_put() -> int:
        for i in range(20):
            await theirs.put(f"new-n{i}", PAYLOAD)
        return 20

    await pair(run, "objects", "list", size, o_list, n_list)
    await pair(run, "objects", "get one (per call)", size, o_get, n_get)
    await pair(run, "objects", "put one (per call)", size, o_put, n_put)
    await js.delete_object_store(b)


# --- listing -----------------------------------------------------------------------------------------


async def dim_listing(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"LC{size}"
    stream = await js.create_stream(
        StreamConfig(name=name, subjects=[f"lc{size}.>"], storage=StorageType.MEMORY)
    )
    for i in range(size):
        await stream.create_consumer(ConsumerConfig(durable=f"c{i}", ack_policy=AckPolicy.NONE))
    njs = nc.jetstream()

    async def o_cons() -> int:
        return len([c async for c in stream.list_consumers()])

    async def n_cons() -> int:
        found: list[Any] = []
        while len(found) < size:
            page = await njs.consumers_info(name, offset=len(found))
            if not page:
                break
            found.extend(page)
        return len(found)

    await pair(run, "listing", "list consumers of one stream", size, o_cons, n_cons)
    await js.delete_stream(name)
    for i in range(size):
        await js.create_stream(
            StreamConfig(name=f"LS{size}_{i}", subjects=[f"ls{size}.{i}"], storage=StorageType.MEMORY)
        )

    async def o_streams() -> int:
        return len([s async for s in js.list_streams()])

    async def n_streams() -> int:
        found: list[Any] = []
        while True:
            page = await njs.streams_info(offset=len(found))
            if not page:
                return len(found)
            found.extend(page)

    await pair(run, "listing", "list streams (all)", size, o_streams, n_streams)
    for i in range(size):
        await js.delete_stream(f"LS{size}_{i}")


# --- drain, acks, fetch, ordered ---------------------------------------------------------------------


async def msg_stream(js: JetStream, name: str, n: int) -> None:
    await js.create_stream(
        StreamConfig(name=name, subjects=[f"{name.lower()}.>"], storage=StorageType.MEMORY)
    )
    await fill(js, lambda i: f"{name.lower()}.{i % 100}", n)


async def dim_drain(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"DR{size}"
    await msg_stream(js, name, size)
    njs = nc.jetstream()

    async def o_messages() -> int:
        c = await js.create_consumer(name, ConsumerConfig(ack_policy=AckPolicy.NONE))
        it, n = await c.messages(), 0
        while n < size:
            await it.next(30)
            n += 1
        it.stop()
        return n

    async def o_consume() -> int:
        c = await js.create_consumer(name, ConsumerConfig(ack_policy=AckPolicy.NONE))
        done, n = asyncio.Event(), 0

        def handler(_msg: Any) -> None:
            nonlocal n
            n += 1
            if n == size:
                done.set()

        cc = await c.consume(handler)
        await asyncio.wait_for(done.wait(), 600)
        cc.stop()
        return n

    async def n_fetch() -> int:
        psub = await njs.pull_subscribe(
            f"{name.lower()}.>", config=napi.ConsumerConfig(ack_policy=napi.AckPolicy.NONE)
        )
        n = 0
        while n < size:
            n += len(await psub.fetch(500, timeout=30))
        await psub.unsubscribe()
        return n

    await pair(run, "drain", "messages() ack none (nats-py fetch 500)", size, o_messages, n_fetch)
    await run.measure("drain", "consume() ack none", size, "ours", o_consume)
    await js.delete_stream(name)


async def dim_acks(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"AK{size}"
    await msg_stream(js, name, size)
    njs = nc.jetstream()

    async def ours() -> int:
        c = await js.create_consumer(name, ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, max_ack_pending=-1))
        it, held = await c.messages(), list[Any]()
        while len(held) < size:
            held.append(await it.next(30))
        for m in held:
            await m.ack()
        await js.conn.flush()
        it.stop()
        return size

    async def theirs() -> int:
        cfg = napi.ConsumerConfig(ack_policy=napi.AckPolicy.EXPLICIT, max_ack_pending=-1)
        psub = await njs.pull_subscribe(f"{name.lower()}.>", config=cfg)
        held: list[Any] = []
        while len(held) < size:
            held.extend(await psub.fetch(500, timeout=30))
        for m in held:
            await m.ack()
        await nc.flush()
        await psub.unsubscribe()
        return size

    await pair(run, "acks", "hold N unacked, then ack all", size, ours, theirs)
    await js.delete_stream(name)


async def dim_fetch(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"FE{size}"
    await msg_stream(js, name, size)
    njs = nc.jetstream()

    async def ours() -> int:
        c = await js.create_consumer(name, ConsumerConfig(ack_policy=AckPolicy.NONE))
        return len(await (await c.fetch(size, max_wait=120)).collect())

    async def theirs() -> int:
        psub = await njs.pull_subscribe(
            f"{name.lower()}.>", config=napi.ConsumerConfig(ack_policy=napi.AckPolicy.NONE)
        )
        got = await psub.fetch(size, timeout=120)
        await psub.unsubscribe()
        return len(got)

    await pair(run, "fetch", "one fetch of the batch", size, ours, theirs)
    await js.delete_stream(name)


async def dim_ordered(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"OR{size}"
    await msg_stream(js, name, size)
    njs = nc.jetstream()

    async def ours() -> int:
        c = await js.ordered_consumer(name, OrderedConsumerConfig())
        it, n = await c.messages(), 0
        while n < size:
            await it.next(30)
            n += 1
        it.stop()
        return n

    async def theirs() -> int:
        done, n = asyncio.Event(), 0

        async def cb(_msg: Any) -> None:
            nonlocal n
            n += 1
            if n == size:
                done.set()

        sub = await njs.subscribe(f"{name.lower()}.>", cb=cb, ordered_consumer=True, pending_msgs_limit=-1)
        await asyncio.wait_for(done.wait(), 600)
        await sub.unsubscribe()
        return n

    await pair(run, "ordered", "ordered consumer read", size, ours, theirs)
    await js.delete_stream(name)


def _spark_read(url: str, stream: str, first: int, last: int) -> int:
    """A Spark partition's read (``partition.read_range``, as a task runs it), rows read."""
    from pyjetstream.spark.arrow_batch import arrow_schema
    from pyjetstream.spark.options import parse_options
    from pyjetstream.spark.partition import read_range
    from pyjetstream.spark.schema import message_schema

    opts = parse_options({"servers": url, "stream": stream})
    schema = arrow_schema(message_schema(opts))
    return sum(batch.num_rows for batch in read_range(opts, stream, first, last, (), schema))


def _spark_plan(url: str, stream: str, rounds: int) -> int:
    """The streaming reader's driver side per micro-batch: latestOffset (one STREAM.INFO) and the
    partitions of the new range, ``rounds`` times."""
    from pyjetstream.spark.options import parse_options
    from pyjetstream.spark.schema import message_schema
    from pyjetstream.spark.stream_reader import JetStreamStreamReader

    opts = parse_options({"servers": url, "stream": stream, "maxMessagesPerTrigger": "1000"})
    reader = JetStreamStreamReader(opts, message_schema(opts))
    try:
        start = reader.initialOffset()
        for _ in range(rounds):
            end = reader.latestOffset(start, reader.getDefaultReadLimit())
            reader.partitions(start, end)
        return rounds
    finally:
        reader.stop()


async def dim_spark(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"SP{size}"
    await msg_stream(js, name, size)

    async def batch() -> int:
        return await asyncio.to_thread(_spark_read, run.url, name, 1, size)

    async def micro() -> int:
        for _ in range(10):
            await asyncio.to_thread(_spark_read, run.url, name, size - 999, size)
        return 10

    async def plan() -> int:
        return await asyncio.to_thread(_spark_plan, run.url, name, 50)

    await asyncio.to_thread(_spark_read, run.url, name, 1, 10)  # imports and first connection: untimed
    await run.measure("spark", "batch read, 1 partition (per row)", size, "ours", batch)
    await run.measure("spark", "micro-batch: last 1000 seqs (per call)", size, "ours", micro)
    await run.measure("spark", "micro-batch planning (per trigger)", size, "ours", plan)
    await js.delete_stream(name)


def _spark_kv(url: str, bucket: str, first_only: bool) -> int:
    """The Spark source's KV table read (``kv_reader.read_bucket``, as its task runs it): the rows,
    or only the first Arrow batch (what Spark waits for before it can start on the rows)."""
    from pyjetstream.spark.kv_reader import read_bucket
    from pyjetstream.spark.options import parse_options

    opts = parse_options({"servers": url, "bucket": bucket})
    rows = 0
    for batch in read_bucket(opts, bucket):
        rows += batch.num_rows
        if first_only:
            return 1
    return rows


async def dim_sparkkv(run: Run, size: int, js: JetStream, nc: Any) -> None:
    b = f"SKV{size}"
    await js.create_key_value(KeyValueConfig(bucket=b, storage=StorageType.MEMORY))
    await fill(js, lambda i: f"$KV.{b}.k{i}", size)
    await asyncio.to_thread(_spark_kv, run.url, b, True)  # imports: untimed

    async def table() -> int:
        return await asyncio.to_thread(_spark_kv, run.url, b, False)

    async def first() -> int:
        return await asyncio.to_thread(_spark_kv, run.url, b, True)

    await run.measure("sparkkv", "KV table read (per row)", size, "ours", table)
    await run.measure("sparkkv", "KV table read: first batch (per call)", size, "ours", first)
    await js.delete_key_value(b)


_SPARK: list[Any] = []


def _spark_session() -> Any:
    if not _SPARK:
        from pyjetstream.spark import local_session

        _SPARK.append(local_session("bench-client-scale", cores=2, fast_start=False, log_level="ERROR"))
    return _SPARK[0]


def _spark_stream(url: str, stream: str, size: int, checkpoint: str) -> tuple[int, float]:
    """A streaming query (Trigger.AvailableNow, the default plan: a task per micro-batch) over the
    stream's last 5,000 sequences, 1,000 a micro-batch: the micro-batches and their summed
    ``triggerExecution`` time (s), as Spark reports it."""
    spark = _spark_session()
    df = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", stream)
        .option("startSequence", str(size - 4999))
        .option("maxMessagesPerTrigger", "1000")
        .load()
    )
    query = (
        df.writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(600)
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    return len(progress), sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000


async def dim_sparkstream(run: Run, size: int, js: JetStream, nc: Any) -> None:
    name = f"SS{size}"
    await msg_stream(js, name, size)
    with tempfile.TemporaryDirectory() as tmp:
        await asyncio.to_thread(_spark_stream, run.url, name, size, f"{tmp}/warm")  # session, imports
        cpu0 = time.process_time()
        batches, wall = await asyncio.to_thread(_spark_stream, run.url, name, size, f"{tmp}/run")
        cpu = time.process_time() - cpu0
    run.rows.append(
        Row("sparkstream", "micro-batch of 1,000 (Spark's trigger time)", size, "ours", batches, wall, cpu)
    )
    print(
        f"  sparkstream {size:>8} {batches} micro-batches {wall / max(batches, 1) * 1e3:8.1f} ms each, "
        f"py4j CPU {cpu / max(batches, 1) * 1e3:8.1f} ms each",
        flush=True,
    )
    await js.delete_stream(name)


# --- subs, requests -----------------------------------------------------------------------------------

CORE_MSGS = 20_000


async def dim_subs(run: Run, size: int, js: JetStream, nc: Any) -> None:
    """``size`` subscriptions on each client's connection; one of them receives ``CORE_MSGS``."""
    for client, conn in (("ours", js.conn), ("nats-py", nc)):
        await _subs_of(run, size, client, conn)


async def _subs_of(run: Run, size: int, client: str, conn: Any) -> None:
    held: list[Any] = []
    for i in range(size - 1):
        held.append(await conn.subscribe(f"u{size}.{i}.*" if i % 10 == 0 else f"u{size}.{i}.x"))
    done, got = asyncio.Event(), 0

    async def on_msg(_msg: Any) -> None:
        nonlocal got
        got += 1
        if got == CORE_MSGS:
            done.set()

    subject = f"t{size}.{client}"
    target = await conn.subscribe(subject, cb=on_msg)
    await conn.flush()
    await conn.flush()

    async def publish_all() -> int:
        for _ in range(CORE_MSGS):
            await conn.publish(subject, PAYLOAD)
        await asyncio.wait_for(done.wait(), 120)
        return CORE_MSGS

    await run.measure("subs", "publish + receive, one of N subs", size, client, publish_all)
    for sub in (target, *held):
        await sub.unsubscribe()
    await conn.flush()


async def dim_requests(run: Run, size: int, js: JetStream, nc: Any) -> None:
    """``CORE_MSGS`` requests, ``size`` of them in flight at once, answered on the same client."""
    for client, conn in (("ours", js.conn), ("nats-py", nc)):
        subject = f"rq{size}.{client}"

        async def answer(msg: Any) -> None:
            await msg.respond(b"ok")

        responder = await conn.subscribe(subject, cb=answer)
        await conn.flush()
        await conn.flush()

        async def requests(conn: Any = conn, subject: str = subject) -> int:
            async def one_lane(k: int) -> None:
                for _ in range(k):
                    await conn.request(subject, PAYLOAD, timeout=60)

            await asyncio.gather(*(one_lane(CORE_MSGS // size) for _ in range(size)))
            return CORE_MSGS // size * size

        await run.measure("requests", "request + answer, N in flight", size, client, requests)
        await responder.unsubscribe()


DIMS: dict[str, tuple[Callable[..., Awaitable[None]], tuple[int, ...]]] = {
    "kv": (dim_kv, (1000, 10000, 100000)),
    "objects": (dim_objects, (100, 1000, 10000)),
    "listing": (dim_listing, (10, 100, 1000)),
    "drain": (dim_drain, (10000, 100000, 1000000)),
    "acks": (dim_acks, (1000, 10000, 100000)),
    "fetch": (dim_fetch, (1000, 10000, 100000)),
    "ordered": (dim_ordered, (10000, 100000, 1000000)),
    "subs": (dim_subs, (1000, 10000, 100000)),
    "requests": (dim_requests, (10, 100, 1000)),
    "spark": (dim_spark, (10000, 100000, 1000000)),
    "sparkkv": (dim_sparkkv, (1000, 10000, 100000)),
    "sparkstream": (dim_sparkstream, (10000, 100000, 1000000)),
}


def markdown(rows: list[Row]) -> str:
    """One table row per (dim, op, client): cost per item at each size and the growth."""
    lines = [
        "| dim | operation | client | per item at each size: wall / client CPU (us) | CPU growth |",
        "|---|---|---|---|---|",
    ]
    keys: dict[tuple[str, str, str], list[Row]] = {}
    for r in rows:
        keys.setdefault((r.dim, r.op, r.client), []).append(r)
    for (dim, op, client), rs in keys.items():
        cells = ", ".join(
            f"{r.size:,}: {r.wall / max(r.items, 1) * 1e6:.1f} / {r.cpu / max(r.items, 1) * 1e6:.1f}"
            for r in rs
        )
        first, last = rs[0].cpu / max(rs[0].items, 1), rs[-1].cpu / max(rs[-1].items, 1)
        lines.append(f"| {dim} | {op} | {client} | {cells} | {last / first if first else 0:.2f}x |")
    return "\n".join(lines)


async def run_all(url: str, dims: list[str], scale: float) -> list[Row]:
    run = Run(url)
    nc_ours = await connect(url)
    nc_theirs = await nats.connect(url)
    js = jetstream(nc_ours)
    try:
        for dim in dims:
            fn, sizes = DIMS[dim]
            for size in sizes:
                await fn(run, max(10, int(size * scale)), js, nc_theirs)
        if _SPARK:
            _SPARK.pop().stop()
    finally:
        await nc_theirs.close()
        await nc_ours.close()
    return run.rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dim", default=",".join(DIMS))
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--server", default="nats-server", choices=["nats-server", "embedded"])
    parser.add_argument("--md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        command = [*server_command(args.server), "-js", "-sd", str(Path(tmp) / "js")]
        process, url = start_on_loopback(command, Path(tmp))
        try:
            rows = asyncio.run(run_all(url, args.dim.split(","), args.scale))
        finally:
            process.kill()
    table = markdown(rows)
    print(table)
    if args.md:
        Path(args.md).write_text(table + "\n")


if __name__ == "__main__":
    main()
