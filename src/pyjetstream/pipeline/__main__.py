"""``python -m pyjetstream.pipeline [--servers URL] [--spark-master URL] [--events N] [--out DIR]``.

The end-to-end job. ``--spark-master spark://host:7077`` runs it on a Spark cluster (executors in
the workers' JVMs) instead of ``local[--cores]``.

Without ``--servers`` it starts the embedded JetStream server itself; with a URL (a
nats-server or a NATS cluster, comma-separated URLs) the same job runs unchanged there.
The job (re)creates the streams PIPELINE_EVENTS and PIPELINE_RESULTS and the KV bucket
pipeline_totals on that server.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pyjetstream.pipeline.config import PipelineConfig
from pyjetstream.pipeline.job import run_pipeline


def parse_args(argv: list[str] | None = None) -> PipelineConfig:
    defaults = PipelineConfig()
    parser = argparse.ArgumentParser(
        prog="python -m pyjetstream.pipeline",
        description="Events -> JetStream -> Spark Structured Streaming (windowed totals) -> a stream and a KV bucket.",
    )
    parser.add_argument(
        "--servers", help="NATS URL(s) of a JetStream server; default: start the embedded server"
    )
    parser.add_argument(
        "--events", type=int, default=defaults.events, help="events to generate (%(default)s)"
    )
    parser.add_argument("--rate", type=float, default=defaults.rate, help="events per second (%(default)s)")
    parser.add_argument("--out", type=Path, default=defaults.out_dir, help="output directory (%(default)s)")
    parser.add_argument(
        "--window", type=int, default=defaults.window_seconds, help="window seconds (%(default)s)"
    )
    parser.add_argument(
        "--trigger",
        type=float,
        default=defaults.trigger_seconds,
        help="trigger seconds (%(default)s: Spark's default trigger, micro-batches back to back)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=defaults.partitions,
        help="read tasks per micro-batch (%(default)s: the driver reads each micro-batch, driverReads)",
    )
    parser.add_argument("--cores", type=int, default=defaults.cores, help="Spark local cores (%(default)s)")
    parser.add_argument(
        "--spark-master", help="a Spark cluster (spark://host:7077) instead of local[--cores]"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress display")
    args = parser.parse_args(argv)
    if args.events < 1 or args.rate <= 0:
        parser.error("--events and --rate must be positive")
    if args.trigger < 0 or args.partitions < 0:
        parser.error("--trigger and --partitions must not be negative")
    return PipelineConfig(
        servers=args.servers,
        events=args.events,
        rate=args.rate,
        out_dir=args.out,
        window_seconds=args.window,
        trigger_seconds=args.trigger,
        partitions=args.partitions,
        cores=args.cores,
        spark_master=args.spark_master,
        quiet=args.quiet,
    )


def main(argv: list[str] | None = None) -> int:
    summary = run_pipeline(parse_args(argv))
    return 0 if summary.exact else 1


if __name__ == "__main__":
    sys.exit(main())
