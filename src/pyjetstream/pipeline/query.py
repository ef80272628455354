"""The Structured Streaming query: events in, windowed totals out to a stream and a KV bucket.

    events stream --readStream jetstream (JSON decoded)--> windowed sum/count per region
        --foreachBatch--> results stream (every update, a changelog)  [write jetstream]
                      --> KV bucket (latest totals per region.window)  [write jetstream, bucket]

Both writes of a micro-batch use ``writeId = <query id>-<batch id>``: if the job dies after
writing and restarts from its checkpoint, the re-run batch publishes the same message ids
and the stream and bucket drop the copies.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from pyjetstream.pipeline.config import PipelineConfig

__all__ = ["BatchRecord", "SinkLog", "start_query"]

EVENT_SCHEMA = "id long, region string, product string, amount_cents long, event_time_ms long"


@dataclass
class BatchRecord:
    batch_id: int
    rows: int  # windows updated
    written_at: float  # time.time()
    latency_s: float  # newest event's store time -> its totals written


@dataclass
class SinkLog:
    batches: list[BatchRecord] = field(default_factory=list)


def start_query(spark: Any, config: PipelineConfig, url: str, checkpoint: str, log: SinkLog) -> Any:
    # Deferred: optional dependency (pyspark / matplotlib), loaded only when this runs.
    from pyspark.sql import functions as F

    events = _events(spark, config, url)
    orders = events.select(
        "data.region",
        "data.amount_cents",
        F.timestamp_millis("data.event_time_ms").alias("event_time"),
        F.col("timestamp").alias("stored_at"),
    )
    totals = (
        orders.withWatermark("event_time", "30 seconds")
        .groupBy(F.window("event_time", f"{config.window_seconds} seconds"), "region")
        .agg(
            F.count("*").alias("events"),
            F.sum("amount_cents").alias("total_cents"),
            F.max("stored_at").alias("last_stored_at"),
        )
    )

    def write_batch(batch: Any, batch_id: int) -> None:
        batch.persist()
        try:
            stats = batch.agg(
                F.count("*").alias("n"), F.max(F.unix_micros("last_stored_at")).alias("newest_us")
            ).collect()[0]
            if not stats.n:
                return
            started.wait(60)  # the query id is known once start() returned
            write_id = f"{query_id[0]}-{batch_id}"
            payload = F.to_json(
                F.struct(
                    "region",
                    F.unix_millis("window.start").alias("window_start_ms"),
                    F.unix_millis("window.end").alias("window_end_ms"),
                    "events",
                    "total_cents",
                )
            )
            results = batch.select(
                F.concat(F.lit(f"{config.results_subject_prefix}."), "region").alias("subject"),
                payload.alias("data"),
            )
            _save(results.write, url, writeId=write_id, stream=config.results_stream)
            kv = batch.select(
                F.concat("region", F.lit("."), F.unix_millis("window.start").cast("string")).alias("key"),
                payload.alias("value"),
            )
            _save(kv.write, url, writeId=write_id, bucket=config.bucket)
            now = time.time()
            log.batches.append(BatchRecord(batch_id, stats.n, now, max(0.0, now - stats.newest_us / 1e6)))
        finally:
            batch.unpersist()

    query_id: list[str] = [""]
    started = threading.Event()
    writer = (
        totals.writeStream.outputMode("update")
        .foreachBatch(write_batch)
        .option("checkpointLocation", checkpoint)
        .queryName("pipeline_totals")
    )
    if config.trigger_seconds > 0:
        writer = writer.trigger(processingTime=f"{config.trigger_seconds} seconds")
    query = writer.start()
    query_id[0] = str(query.id)
    started.set()
    return query


def _events(spark: Any, config: PipelineConfig, url: str) -> Any:
    """The events stream, JSON decoded. A stream of modest rate: by default the driver reads each
    micro-batch (no Python task for it, the lower latency; docs/spark.md "Latency: driverReads")."""
    reader = (
        spark.readStream.format("jetstream")
        .option("servers", url)
        .option("stream", config.events_stream)
        .option("decode", "json")
        .option("dataSchema", EVENT_SCHEMA)
    )
    if config.partitions:
        return reader.option("partitions", config.partitions).load()
    return reader.option("driverReads", "true").load()


def _save(writer: Any, url: str, **options: str) -> None:
    writer = writer.format("jetstream").mode("append").option("servers", url)
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save()
