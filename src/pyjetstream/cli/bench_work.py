"""The benchmark workloads behind ``pyjetstream bench``: each runs against one server URL and
returns `BenchResult` rows (messages, bytes, elapsed time, latency samples).

- ``pub``: core publishes as fast as the connection takes them (throughput only).
- ``sub``: one publisher and ``clients`` subscribers; latency is publish → receive, from a
  timestamp carried in each payload (publisher and subscribers share this process's clock).
- ``js-pub``: publishes into a stream, pipelined (``--window`` acks in flight) or one by one
  (``--sync``); latency is publish → PubAck.
- ``js-consume``: fills a stream, then pulls it through a consumer in ``--batch`` fetches
  (acknowledging each message unless ``--no-ack``); latency is one fetch's round trip.
- ``kv``: puts then gets of ``--keys`` keys in a bucket; latency per operation.
"""

from __future__ import annotations

import asyncio
import struct
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyjetstream.cli.errors import CliError

__all__ = ["BenchOptions", "BenchResult", "run_workload"]

Advance = Callable[[int], None]
_STAMP = struct.Struct("<q")
YIELD_EVERY = 512  # publishes between event-loop yields (lets reads and PINGs through)


@dataclass
class BenchOptions:
    subject: str
    msgs: int
    size: int
    clients: int
    stream: str
    bucket: str
    storage: str
    window: int
    batch: int
    keys: int
    sync: bool
    ack: bool
    keep: bool
    timeout: float


@dataclass
class BenchResult:
    name: str
    target: str
    msgs: int = 0
    bytes: int = 0
    seconds: float = 0.0
    latencies_ns: array = field(default_factory=lambda: array("q"))
    note: str = ""
    client: int = 0  # which subscriber, when each has its own row

    @property
    def msgs_per_sec(self) -> float:
        return self.msgs / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_sec(self) -> float:
        return self.bytes / self.seconds / (1024 * 1024) if self.seconds > 0 else 0.0

    def percentile_us(self, p: float) -> float | None:
        if not self.latencies_ns:
            return None
        ordered = sorted(self.latencies_ns)
        index = min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))
        return ordered[index] / 1000

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "target": self.target,
            "msgs": self.msgs,
            "bytes": self.bytes,
            "seconds": round(self.seconds, 6),
            "msgs_per_sec": round(self.msgs_per_sec, 1),
            "mb_per_sec": round(self.mb_per_sec, 3),
        }
        if self.latencies_ns:
            out["latency_us"] = {
                "p50": self.percentile_us(50),
                "p90": self.percentile_us(90),
                "p99": self.percentile_us(99),
                "max": max(self.latencies_ns) / 1000,
                "samples": len(self.latencies_ns),
            }
        if self.client:
            out["client"] = self.client
        if self.note:
            out["note"] = self.note
        return out


def _split(total: int, parts: int) -> list[int]:
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


async def _pause(client: Any) -> None:
    await client.wait_writable()
    await asyncio.sleep(0)


# --------------------------------------------------------------------------- core


async def bench_pub(connect: Any, url: str, o: BenchOptions, advance: Advance) -> list[BenchResult]:
    clients = [await connect(url) for _ in range(o.clients)]
    payload = b"x" * o.size

    async def publisher(client: Any, count: int) -> None:
        for i in range(count):
            client.publish_nowait(o.subject, payload)
            if i % YIELD_EVERY == YIELD_EVERY - 1:
                advance(YIELD_EVERY)
                await _pause(client)
        advance(count % YIELD_EVERY)
        await client.flush(o.timeout)

    start = time.perf_counter()
    await asyncio.gather(*(publisher(c, n) for c, n in zip(clients, _split(o.msgs, o.clients), strict=True)))
    elapsed = time.perf_counter() - start
    await asyncio.gather(*(c.close() for c in clients))
    return [BenchResult("pub", url, o.msgs, o.msgs * o.size, elapsed)]


async def bench_sub(connect: Any, url: str, o: BenchOptions, advance: Advance) -> list[BenchResult]:
    """One publisher, ``clients`` subscribers; each subscriber should get every message."""
    size = max(o.size, _STAMP.size)
    results = [BenchResult("sub", url, client=i + 1) for i in range(o.clients)]
    done = [asyncio.Event() for _ in range(o.clients)]
    subscribers = [await connect(url) for _ in range(o.clients)]
    first = [0.0] * o.clients

    def make_cb(i: int) -> Callable[[Any], None]:
        result, lat = results[i], results[i].latencies_ns

        def cb(msg: Any) -> None:
            now = time.perf_counter_ns()
            if not result.msgs:
                first[i] = time.perf_counter()
            lat.append(now - _STAMP.unpack_from(msg.data)[0])
            result.msgs += 1
            result.bytes += len(msg.data)
            if i == 0 and result.msgs % YIELD_EVERY == 0:
                advance(YIELD_EVERY)
            if result.msgs >= o.msgs:
                result.seconds = time.perf_counter() - first[i]
                done[i].set()

        return cb

    for i, client in enumerate(subscribers):
        await client.subscribe(o.subject, cb=make_cb(i))
        await client.flush(o.timeout)
    publisher = await connect(url)
    pad = b"x" * (size - _STAMP.size)
    for n in range(o.msgs):
        publisher.publish_nowait(o.subject, _STAMP.pack(time.perf_counter_ns()) + pad)
        if n % YIELD_EVERY == YIELD_EVERY - 1:
            await _pause(publisher)
    await publisher.flush(o.timeout)
    # Wait while messages keep arriving; stop once none came for `timeout` (core NATS may drop).
    while not all(d.is_set() for d in done):
        before = sum(r.msgs for r in results)
        await asyncio.wait([asyncio.ensure_future(d.wait()) for d in done], timeout=o.timeout)
        if sum(r.msgs for r in results) == before:
            break
    for i, r in enumerate(results):
        if r.msgs < o.msgs:
            r.seconds = r.seconds or time.perf_counter() - first[i]
            r.note = f"received {r.msgs} of {o.msgs}"
    advance(o.msgs % YIELD_EVERY)
    await asyncio.gather(publisher.close(), *(c.close() for c in subscribers))
    return results


# --------------------------------------------------------------------------- JetStream


async def _ensure_stream(js: Any, o: BenchOptions) -> bool:
    """Create the bench stream if missing; True when we created it (and so should remove it)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import StreamConfig
    from pyjetstream.client.jetstream.errors import StreamNotFound

    try:
        await js.stream(o.stream)
        return False
    except StreamNotFound:
        await js.create_stream(StreamConfig(name=o.stream, subjects=[o.subject], storage=o.storage))  # type: ignore[arg-type]
        return True


def _js(client: Any, o: BenchOptions) -> Any:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client.jetstream import JetStream

    return JetStream(client, timeout=o.timeout, publish_async_max_pending=max(o.window, 1))


async def _publish_into_stream(
    js: Any, o: BenchOptions, count: int, lat: array | None, advance: Advance
) -> None:
    payload = b"x" * o.size
    if o.sync:
        for i in range(count):
            t0 = time.perf_counter_ns()
            await js.publish(o.subject, payload)
            if lat is not None:
                lat.append(time.perf_counter_ns() - t0)
            if i % 64 == 63:
                advance(64)
        advance(count % 64)
        return
    for i in range(count):
        t0 = time.perf_counter_ns()
        fut = await js.publish_async(o.subject, payload)
        if lat is not None:
            fut.add_done_callback(lambda _f, t0=t0: lat.append(time.perf_counter_ns() - t0))
        if i % YIELD_EVERY == YIELD_EVERY - 1:
            advance(YIELD_EVERY)
    await js.publish_async_complete(timeout=max(o.timeout, 30.0))
    advance(count % YIELD_EVERY)


async def bench_js_pub(connect: Any, url: str, o: BenchOptions, advance: Advance) -> list[BenchResult]:
    client = await connect(url)
    js = _js(client, o)
    created = await _ensure_stream(js, o)
    result = BenchResult("js-pub", url)
    try:
        start = time.perf_counter()
        await _publish_into_stream(js, o, o.msgs, result.latencies_ns, advance)
        result.seconds = time.perf_counter() - start
        result.msgs, result.bytes = o.msgs, o.msgs * o.size
    finally:
        if created and not o.keep:
            await js.delete_stream(o.stream)
        await client.close()
    return [result]


async def bench_js_consume(connect: Any, url: str, o: BenchOptions, advance: Advance) -> list[BenchResult]:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import ConsumerConfig

    client = await connect(url)
    js = _js(client, o)
    created = await _ensure_stream(js, o)
    result = BenchResult("js-consume", url)
    try:
        stored = (await js.stream(o.stream)).cached_info().state.messages
        if stored < o.msgs:
            await _publish_into_stream(js, o, o.msgs - stored, None, lambda _n: None)
        config = ConsumerConfig(
            ack_policy="explicit" if o.ack else "none",  # type: ignore[arg-type]
            filter_subject=o.subject,
            max_ack_pending=-1,
            inactive_threshold=60 * 10**9,
        )
        consumer = await js.create_consumer(o.stream, config)
        start = time.perf_counter()
        while result.msgs < o.msgs:
            t0 = time.perf_counter_ns()
            batch = await consumer.fetch(min(o.batch, o.msgs - result.msgs), max_wait=o.timeout)
            got = 0
            async for msg in batch:
                got += 1
                result.bytes += len(msg.data)
                if o.ack:
                    await msg.ack()
            if not got:
                result.note = f"received {result.msgs} of {o.msgs}"
                break
            result.latencies_ns.append(time.perf_counter_ns() - t0)
            result.msgs += got
            advance(got)
        await client.flush(o.timeout)
        result.seconds = time.perf_counter() - start
        await js.delete_consumer(o.stream, consumer.name)
    finally:
        if created and not o.keep:
            await js.delete_stream(o.stream)
        await client.close()
    return [result]


async def bench_kv(connect: Any, url: str, o: BenchOptions, advance: Advance) -> list[BenchResult]:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client.jetstream import KeyValueConfig
    from pyjetstream.client.jetstream.errors import BucketNotFound

    clients = [await connect(url) for _ in range(o.clients)]
    contexts = [_js(c, o) for c in clients]
    try:
        await contexts[0].key_value(o.bucket)
        created = False
    except BucketNotFound:
        await contexts[0].create_key_value(KeyValueConfig(bucket=o.bucket, storage=o.storage))  # type: ignore[arg-type]
        created = True
    payload = b"x" * o.size
    put, get = BenchResult("kv put", url), BenchResult("kv get", url)
    buckets = [await js.key_value(o.bucket) for js in contexts]
    shares = _split(o.msgs, o.clients)

    async def putter(kv: Any, offset: int, count: int) -> None:
        for i in range(count):
            t0 = time.perf_counter_ns()
            await kv.put(f"k{(offset + i) % o.keys}", payload)
            put.latencies_ns.append(time.perf_counter_ns() - t0)
            if i % 64 == 63:
                advance(64)
        advance(count % 64)

    async def getter(kv: Any, offset: int, count: int) -> None:
        for i in range(count):
            t0 = time.perf_counter_ns()
            entry = await kv.get(f"k{(offset + i) % min(o.keys, o.msgs)}")
            get.latencies_ns.append(time.perf_counter_ns() - t0)
            get.bytes += len(entry.value)
            if i % 64 == 63:
                advance(64)
        advance(count % 64)

    try:
        offsets = [sum(shares[:i]) for i in range(o.clients)]
        for result, work in ((put, putter), (get, getter)):
            start = time.perf_counter()
            await asyncio.gather(
                *(work(kv, off, n) for kv, off, n in zip(buckets, offsets, shares, strict=True))
            )
            result.seconds = time.perf_counter() - start
            result.msgs = o.msgs
        put.bytes = o.msgs * o.size
    finally:
        if created and not o.keep:
            await contexts[0].delete_key_value(o.bucket)
        await asyncio.gather(*(c.close() for c in clients))
    return [put, get]


WORKLOADS = {
    "pub": bench_pub,
    "sub": bench_sub,
    "js-pub": bench_js_pub,
    "js-consume": bench_js_consume,
    "kv": bench_kv,
}


def describe_options(kind: str, o: BenchOptions) -> str:
    """The settings that shape a run, for the results' title."""
    parts = [f"{o.msgs:,} msgs of {o.size:,} B"]
    if kind in ("pub", "sub", "kv") and o.clients > 1:
        parts.append(f"{o.clients} {'subscribers' if kind == 'sub' else 'clients'}")
    if kind == "js-pub":
        parts.append("sync" if o.sync else f"window {o.window}")
    if kind == "js-consume":
        parts.append(f"batch {o.batch}" + (", acked" if o.ack else ""))
    if kind in ("js-pub", "js-consume", "kv"):
        parts.append(f"{o.storage} storage")
    return ", ".join(parts)


def total_work(kind: str, o: BenchOptions) -> int:
    """How many progress steps a workload reports (for the progress bar's total)."""
    return 2 * o.msgs if kind == "kv" else o.msgs


async def run_workload(
    kind: str, connect: Any, url: str, o: BenchOptions, advance: Advance
) -> list[BenchResult]:
    workload = WORKLOADS.get(kind)
    if workload is None:
        raise CliError(f"unknown benchmark {kind!r}")
    return await workload(connect, url, o, advance)
