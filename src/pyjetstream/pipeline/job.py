"""The pipeline job, start to end: server, streams, Spark, generator, query, summary."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from pyjetstream.pipeline.config import PipelineConfig
from pyjetstream.pipeline.generator import EventGenerator
from pyjetstream.pipeline.progress import ProgressDisplay
from pyjetstream.pipeline.query import SinkLog, start_query
from pyjetstream.pipeline.summary import RunSummary, collect_summary, write_outputs

__all__ = ["prepare_streams", "run_pipeline", "server_url"]


@contextmanager
def server_url(config: PipelineConfig) -> Iterator[str]:
    """The given server, or an embedded JetStream server on a random port with a temporary store."""
    if config.servers:
        yield config.servers
        return
    # Deferred: start-up speed (loaded only when this step runs).
    from pyjetstream import ServerThread

    store = tempfile.mkdtemp(prefix="pyjetstream-pipeline-")
    server = ServerThread(jetstream=True, store_dir=store, port=-1).start()
    try:
        yield server.client_url
    finally:
        server.stop()
        shutil.rmtree(store, ignore_errors=True)


def prepare_streams(config: PipelineConfig, url: str) -> None:
    """Fresh events and results streams and totals bucket (the job owns these names)."""
    # Deferred: start-up speed (loaded only when this step runs).
    from pyjetstream.api import StreamConfig
    from pyjetstream.client.jetstream import KeyValueConfig, sync
    from pyjetstream.client.jetstream.errors import StreamNotFound

    nc = sync.connect(url)
    try:
        js = nc.jetstream()
        for name in (config.events_stream, config.results_stream, f"KV_{config.bucket}"):
            try:
                js.delete_stream(name)
            except StreamNotFound:
                pass
        js.create_stream(
            StreamConfig(name=config.events_stream, subjects=[f"{config.events_subject_prefix}.>"])
        )
        js.create_stream(
            StreamConfig(name=config.results_stream, subjects=[f"{config.results_subject_prefix}.>"])
        )
        js.create_key_value(KeyValueConfig(bucket=config.bucket, history=1))
    finally:
        nc.close()


def warm_up(spark: Any, config: PipelineConfig, url: str) -> None:
    """One small batch job first, so the first micro-batch does not pay for Python worker start
    and JIT warm-up (it would show as a latency spike that says nothing about the pipeline)."""
    # Deferred: optional dependency (pyspark / matplotlib), loaded only when this runs.
    from pyspark.sql import functions as F

    df = spark.read.format("jetstream").option("servers", url).option("stream", config.events_stream).load()
    df.groupBy("subject").agg(F.count("*")).collect()


def _announce(config: PipelineConfig, url: str, say: Callable[[str], None]) -> None:
    """What is about to run, where."""
    say(f"pyjetstream pipeline: {config.events} events at {config.rate:.0f}/s -> stream {config.events_stream}")
    say(
        f"  -> Spark Structured Streaming ({config.spark_master or f'local[{config.cores}]'}):"
        f" {config.window_seconds} s totals per region"
    )
    say(
        f"  -> stream {config.results_stream} + KV bucket {config.bucket}   [server {url}"
        f"{', embedded' if config.servers is None else ''}]"
    )


def _start_session(config: PipelineConfig, say: Callable[[str], None]) -> Any:
    """A local Spark session for the run (its recent progress kept for the whole run: the summary reads it)."""
    say("starting Spark ...")
    # Deferred: start-up speed (loaded only when this step runs).
    from pyjetstream.spark import local_session

    return local_session(
        "pyjetstream-pipeline",
        cores=config.cores,
        master=config.spark_master,
        shuffle_partitions=2,
        log_level="ERROR",
        extra_conf={"spark.sql.streaming.numRecentProgressUpdates": "1000"},
    )


def _stream(
    spark: Any,
    config: PipelineConfig,
    url: str,
    checkpoint: Path,
    out: TextIO,
    say: Callable[[str], None],
    spark_start: float,
) -> tuple[RunSummary, SinkLog]:
    """The streaming query over the generated events until every one is in the results, then
    the results checked against the generator."""
    warm_up(spark, config, url)
    log = SinkLog()
    query = start_query(spark, config, url, str(checkpoint), log)
    generator = EventGenerator(config, url)
    display = ProgressDisplay(generator, log, config.events, out=out, quiet=config.quiet)
    display.query = query
    generator.start()
    display.start()
    try:
        generator.join()
        generated = time.monotonic()
        query.processAllAvailable()  # every published event is in the results
        drained = time.monotonic()
        if query.exception() is not None:
            raise RuntimeError(f"the streaming query failed: {query.exception()}")
    finally:
        display.stop()
        query.stop()
    say(display.line())
    say("checking the results ...")
    timings = {"total": 0.0, "spark_start": spark_start, "drain": drained - generated}
    return collect_summary(spark, config, url, generator, log, query.recentProgress, timings), log


def run_pipeline(config: PipelineConfig, out: TextIO = sys.stdout, spark: Any = None) -> RunSummary:
    """Run the job; ``spark``: an existing session to use (left running), else a local one."""

    def say(text: str) -> None:
        if not config.quiet:
            print(text, file=out, flush=True)

    started = time.monotonic()
    out_dir = Path(config.out_dir)
    checkpoint = out_dir / "checkpoint"
    shutil.rmtree(checkpoint, ignore_errors=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    with server_url(config) as url:
        _announce(config, url, say)
        prepare_streams(config, url)
        own_session = spark is None
        if own_session:
            spark = _start_session(config, say)
        spark_started = time.monotonic()
        try:
            summary, log = _stream(spark, config, url, checkpoint, out, say, spark_started - started)
        finally:
            if own_session:
                spark.stop()
    summary.seconds_total = time.monotonic() - started
    write_outputs(summary, log, out_dir)
    say(report(summary))
    return summary


def report(s: RunSummary) -> str:
    verdict = (
        "all match the generator exactly" if s.exact else f"{len(s.mismatches)} MISMATCHES (see summary)"
    )
    return "\n".join(
        [
            f"Pipeline finished in {s.seconds_total:.1f} s: {s.events} events -> {s.windows} windowed totals, {verdict}",
            f"  results stream: {s.results_updates} updates; KV bucket: {s.kv_keys} keys;"
            f" {s.micro_batches} micro-batches",
            f"  end-to-end latency (event stored -> totals written): p50 {s.latency_p50_s:.2f} s,"
            f" p95 {s.latency_p95_s:.2f} s, max {s.latency_max_s:.2f} s",
            f"  summary: {s.files['summary_md']}  ({s.files['summary_json']})",
            f"  plot:    {s.files['plot']}",
        ]
    )
