"""A one-line progress display while the pipeline runs (redrawn in place on a terminal,
one line every few seconds otherwise)."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, TextIO

from pyjetstream.pipeline.generator import EventGenerator
from pyjetstream.pipeline.query import SinkLog

__all__ = ["ProgressDisplay", "processed_seq"]


def processed_seq(progress: dict[str, Any] | None) -> int:
    """The last events-stream sequence a query progress report says was processed."""
    if not progress or not progress.get("sources"):
        return 0
    end = progress["sources"][0].get("endOffset")
    if isinstance(end, str):
        end = json.loads(end)
    return int(end.get("seq", 0)) if isinstance(end, dict) else 0


class ProgressDisplay:
    def __init__(
        self,
        generator: EventGenerator,
        log: SinkLog,
        total: int,
        out: TextIO = sys.stdout,
        quiet: bool = False,
    ) -> None:
        self.generator = generator
        self.log = log
        self.total = total
        self.out = out
        self.quiet = quiet
        self.query: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="pipeline-progress", daemon=True)
        self._started = time.monotonic()
        self._tty = out.isatty()

    def start(self) -> None:
        if not self.quiet:
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
            if self._tty:
                self.out.write("\n")
                self.out.flush()

    def line(self) -> str:
        elapsed = time.monotonic() - self._started
        gen = self.generator.stats
        rate = gen.published / max(1e-9, time.monotonic() - gen.started_at) if gen.started_at else 0.0
        processed = 0
        batch = "-"
        if self.query is not None:
            try:
                progress = self.query.lastProgress
            except Exception:
                progress = None
            processed = processed_seq(progress)
            if progress:
                batch = str(progress.get("batchId", "-"))
        latency = f"{self.log.batches[-1].latency_s:4.1f}s" if self.log.batches else "  - "
        return (
            f"[{elapsed:5.1f}s] published {gen.published:>7}/{self.total} ({rate:6.0f}/s)"
            f" | processed {processed:>7} (batch {batch:>3}) | windows written {sum(b.rows for b in self.log.batches):>5}"
            f" | latency {latency}"
        )

    def _run(self) -> None:
        every = 0.5 if self._tty else 5.0
        while not self._stop.wait(every):
            text = self.line()
            if self._tty:
                self.out.write("\r" + text)
            else:
                self.out.write(text + "\n")
            self.out.flush()
