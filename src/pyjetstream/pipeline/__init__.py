"""The end-to-end pipeline job (the README's first command):

    python -m pyjetstream.pipeline [--servers URL] [--events N] [--out DIR]

Synthetic orders are published to a JetStream stream; a Spark Structured Streaming query
reads them with the ``jetstream`` data source, sums them per region in event-time windows,
and writes every update to a results stream and the latest totals to a KV bucket; a progress
line runs meanwhile; at the end the totals are checked against what was generated and a
summary (Markdown + JSON) and a plot image are written. Embedded server and local Spark by
default; the same job against any nats-server URL.
"""

from pyjetstream.pipeline.config import PipelineConfig
from pyjetstream.pipeline.job import run_pipeline

__all__ = ["PipelineConfig", "run_pipeline"]
