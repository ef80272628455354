"""The end of the run: check the results against the generator, write the summary and the plot.

Three views of the same totals must agree exactly: what the generator published (its own
count), the KV bucket (latest value per region and window) and the results stream (the
last update per region and window, read back with a Spark batch read).
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyjetstream.pipeline.config import PipelineConfig
from pyjetstream.pipeline.generator import EventGenerator
from pyjetstream.pipeline.query import SinkLog

__all__ = ["RunSummary", "collect_summary", "write_outputs"]

RESULT_SCHEMA = "region string, window_start_ms long, window_end_ms long, events long, total_cents long"

Totals = dict[tuple[str, int], tuple[int, int]]  # (region, window start ms) -> (events, cents)


@dataclass
class RunSummary:
    servers: str
    embedded_server: bool
    events: int
    windows: int
    results_updates: int
    kv_keys: int
    exact: bool
    mismatches: list[str]
    seconds_total: float
    seconds_spark_start: float
    seconds_generating: float
    seconds_to_drain: float
    publish_rate: float
    micro_batches: int
    latency_p50_s: float
    latency_p95_s: float
    latency_max_s: float
    batches: list[dict[str, Any]] = field(default_factory=list)
    totals: list[dict[str, Any]] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)


def kv_totals(url: str, bucket: str) -> Totals:
    # Deferred: start-up speed (loaded only when this step runs).
    from pyjetstream.client.jetstream import sync

    nc = sync.connect(url)
    try:
        kv = nc.jetstream().key_value(bucket)
        out: Totals = {}
        for key in kv.keys():
            doc = json.loads(kv.get(key).value)
            out[(doc["region"], doc["window_start_ms"])] = (doc["events"], doc["total_cents"])
        return out
    finally:
        nc.close()


def stream_totals(spark: Any, url: str, stream: str) -> tuple[Totals, int]:
    """Latest update per region and window in the results stream, and how many updates there are."""
    df = (
        spark.read.format("jetstream")
        .option("servers", url)
        .option("stream", stream)
        .option("decode", "json")
        .option("dataSchema", RESULT_SCHEMA)
        .load()
    )
    latest: dict[tuple[str, int], tuple[int, int, int]] = {}
    count = 0
    for row in df.select("sequence", "data.*").collect():
        count += 1
        key = (row.region, row.window_start_ms)
        if key not in latest or latest[key][0] < row.sequence:
            latest[key] = (row.sequence, row.events, row.total_cents)
    return {k: (v[1], v[2]) for k, v in latest.items()}, count


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def collect_summary(
    spark: Any,
    config: PipelineConfig,
    url: str,
    generator: EventGenerator,
    log: SinkLog,
    progress: list[dict[str, Any]],
    timings: dict[str, float],
) -> RunSummary:
    expected: Totals = {k: (v.events, v.total_cents) for k, v in generator.stats.expected.items()}
    in_kv = kv_totals(url, config.bucket)
    in_stream, updates = stream_totals(spark, url, config.results_stream)
    mismatches = []
    for name, seen in (("KV bucket", in_kv), ("results stream", in_stream)):
        for key in sorted(set(expected) | set(seen)):
            if expected.get(key) != seen.get(key):
                mismatches.append(
                    f"{name}: {key[0]} window {key[1]}: expected {expected.get(key)}, got {seen.get(key)}"
                )
    latencies = [b.latency_s for b in log.batches]
    gen = generator.stats
    return RunSummary(
        servers=url,
        embedded_server=config.servers is None,
        events=gen.published,
        windows=len(expected),
        results_updates=updates,
        kv_keys=len(in_kv),
        exact=not mismatches,
        mismatches=mismatches[:20],
        seconds_total=timings["total"],
        seconds_spark_start=timings["spark_start"],
        seconds_generating=gen.finished_at - gen.started_at,
        seconds_to_drain=timings["drain"],
        publish_rate=gen.published / max(1e-9, gen.finished_at - gen.started_at),
        micro_batches=len([p for p in progress if p.get("numInputRows", 0) > 0]),
        latency_p50_s=_percentile(latencies, 50),
        latency_p95_s=_percentile(latencies, 95),
        latency_max_s=max(latencies, default=0.0),
        batches=[
            {
                "batch_id": p["batchId"],
                "input_rows": p["numInputRows"],
                "rows_per_s": round(p.get("processedRowsPerSecond", 0.0), 1),
                "duration_ms": p["durationMs"].get("triggerExecution", 0),
                "timestamp": p["timestamp"],
            }
            for p in progress
            if p.get("numInputRows", 0) > 0
        ],
        totals=[
            {"region": r, "window_start_ms": w, "events": e, "total_cents": c}
            for (r, w), (e, c) in sorted(in_kv.items(), key=lambda kv: (kv[0][1], kv[0][0]))
        ],
    )


def write_outputs(summary: RunSummary, log: SinkLog, out_dir: Path) -> RunSummary:
    out_dir.mkdir(parents=True, exist_ok=True)
    plot = out_dir / "pipeline.png"
    draw_plot(summary, log, plot)
    md = out_dir / "summary.md"
    js = out_dir / "summary.json"
    summary.files = {"summary_md": str(md), "summary_json": str(js), "plot": str(plot)}
    md.write_text(markdown(summary))
    js.write_text(json.dumps(asdict(summary), indent=2) + "\n")
    return summary


def markdown(s: RunSummary) -> str:
    verdict = (
        "all windowed totals match the generator exactly (KV bucket and results stream)"
        if s.exact
        else f"{len(s.mismatches)} MISMATCHES"
    )
    lines = [
        "# pyjetstream pipeline run",
        "",
        f"- server: {s.servers} ({'embedded' if s.embedded_server else 'external'})",
        f"- events: {s.events} published at {s.publish_rate:.0f}/s over {s.seconds_generating:.1f} s",
        f"- result: {s.windows} windowed totals; {verdict}",
        f"- results stream: {s.results_updates} updates; KV bucket: {s.kv_keys} keys",
        f"- micro-batches with data: {s.micro_batches}; caught up {s.seconds_to_drain:.1f} s after the last event",
        f"- end-to-end latency (event stored → its totals written to stream and KV):"
        f" p50 {s.latency_p50_s:.2f} s, p95 {s.latency_p95_s:.2f} s, max {s.latency_max_s:.2f} s",
        f"- run time: {s.seconds_total:.1f} s (Spark start {s.seconds_spark_start:.1f} s)",
        "",
        "| window start (UTC) | region | events | total |",
        "| --- | --- | ---: | ---: |",
    ]
    for t in s.totals:
        start = datetime.fromtimestamp(t["window_start_ms"] / 1000, tz=UTC).strftime("%H:%M:%S")
        lines.append(f"| {start} | {t['region']} | {t['events']} | {t['total_cents'] / 100:,.2f} |")
    if s.mismatches:
        lines += ["", "## Mismatches", "", *[f"- {m}" for m in s.mismatches]]
    return "\n".join(lines) + "\n"


def draw_plot(s: RunSummary, log: SinkLog, path: Path) -> None:
    # Deferred: optional dependency (pyspark / matplotlib), loaded only when this runs.
    import matplotlib

    matplotlib.use("Agg")
    # Deferred: optional dependency (pyspark / matplotlib), loaded only when this runs.
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), constrained_layout=True)
    windows = sorted({t["window_start_ms"] for t in s.totals})
    regions = sorted({t["region"] for t in s.totals})
    first = windows[0] if windows else 0
    xs = [(w - first) / 1000 for w in windows]
    width = (xs[1] - xs[0]) * 0.8 if len(xs) > 1 else 4.0
    bottoms = [0.0] * len(windows)
    by_key = {(t["region"], t["window_start_ms"]): t["total_cents"] / 100 for t in s.totals}
    for region in regions:
        values = [by_key.get((region, w), 0.0) for w in windows]
        top.bar(xs, values, width=width, bottom=bottoms, label=region, align="edge")
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    top.set_title(
        f"Windowed order totals per region ({s.events} events, {s.windows} totals, exact={s.exact})"
    )
    top.set_xlabel("window start (s since the first window)")
    top.set_ylabel("total")
    top.legend(ncol=len(regions) or 1)

    # Micro-batches on one clock: progress reports carry their trigger time (UTC ISO).
    starts = [datetime.fromisoformat(b["timestamp"].replace("Z", "+00:00")).timestamp() for b in s.batches]
    t0 = min(starts + [b.written_at for b in log.batches], default=0.0)
    bottom.bar(
        [t - t0 for t in starts],
        [b["input_rows"] for b in s.batches],
        width=0.5,
        align="edge",
        color="tab:gray",
        label="events per micro-batch",
    )
    bottom.set_xlabel("time (s since the first micro-batch)")
    bottom.set_ylabel("events per micro-batch")
    lat = bottom.twinx()
    lat.plot(
        [b.written_at - t0 for b in log.batches],
        [b.latency_s for b in log.batches],
        color="tab:red",
        marker="o",
        label="end-to-end latency",
    )
    lat.set_ylabel("end-to-end latency (s)", color="tab:red")
    bottom.set_title(
        f"{s.micro_batches} micro-batches; latency p50 {s.latency_p50_s:.2f} s, p95 {s.latency_p95_s:.2f} s "
        "(event stored → totals in stream and KV)"
    )
    fig.savefig(path, dpi=110)
    plt.close(fig)
