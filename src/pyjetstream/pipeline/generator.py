"""The event generator: synthetic orders published to the events stream at a steady rate.

Runs in its own thread with its own event loop and connection (pipelined async publishes,
every one acknowledged by the stream). It keeps the exact totals per region and event-time
window of what it published, which the summary checks the pipeline's results against.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

from pyjetstream.client import connect
from pyjetstream.client.jetstream import jetstream
from pyjetstream.pipeline.config import PipelineConfig

__all__ = ["EventGenerator", "WindowTotal"]

# Publish in small slices so the rate is smooth at the scale of a trigger interval.
SLICE_SECONDS = 0.05


@dataclass
class WindowTotal:
    events: int = 0
    total_cents: int = 0


@dataclass
class GeneratorStats:
    published: int = 0
    last_seq: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    error: BaseException | None = None
    expected: dict[tuple[str, int], WindowTotal] = field(default_factory=lambda: defaultdict(WindowTotal))


class EventGenerator:
    """``start()`` begins publishing in the background; ``join()`` waits for the last ack."""

    def __init__(self, config: PipelineConfig, url: str) -> None:
        self.config = config
        self.url = url
        self.stats = GeneratorStats()
        self._thread = threading.Thread(target=self._run, name="pipeline-generator", daemon=True)
        self._random = random.Random(config.seed)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
        if self.stats.error is not None:
            raise RuntimeError(f"the event generator failed: {self.stats.error}") from self.stats.error

    @property
    def done(self) -> bool:
        return not self._thread.is_alive()

    def _run(self) -> None:
        try:
            asyncio.run(self._publish_all())
        except BaseException as exc:  # reported by join()
            self.stats.error = exc

    def _event(self, i: int) -> tuple[str, bytes]:
        cfg = self.config
        region = self._random.choice(cfg.regions)
        product = self._random.choice(cfg.products)
        amount = self._random.randint(100, 20_000)  # cents: integer sums are exact
        now_ms = time.time_ns() // 1_000_000
        window_ms = cfg.window_seconds * 1000
        total = self.stats.expected[(region, now_ms - now_ms % window_ms)]
        total.events += 1
        total.total_cents += amount
        body = {
            "id": i,
            "region": region,
            "product": product,
            "amount_cents": amount,
            "event_time_ms": now_ms,
        }
        return f"{cfg.events_subject_prefix}.{region}.{product}", json.dumps(body).encode()

    async def _publish_all(self) -> None:
        cfg = self.config
        nc = await connect(self.url, name="pipeline-generator")
        try:
            js = jetstream(nc, publish_async_max_pending=2_000)
            per_slice = max(1, round(cfg.rate * SLICE_SECONDS))
            self.stats.started_at = time.monotonic()
            futures = []
            i = 0
            while i < cfg.events:
                due = self.stats.started_at + i / cfg.rate
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                for _ in range(min(per_slice, cfg.events - i)):
                    subject, data = self._event(i)
                    futures.append(await js.publish_async(subject, data))
                    i += 1
                done = [f for f in futures if f.done()]
                for fut in done:
                    self.stats.last_seq = max(self.stats.last_seq, fut.result().seq)
                self.stats.published += len(done)
                futures = [f for f in futures if not f.done()]
            await js.publish_async_complete(timeout=60)
            for fut in futures:
                self.stats.last_seq = max(self.stats.last_seq, fut.result().seq)
            self.stats.published += len(futures)
            self.stats.finished_at = time.monotonic()
        finally:
            await nc.close()
