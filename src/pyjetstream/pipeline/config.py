"""What the pipeline job runs with (every field has a command-line flag in ``__main__``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PipelineConfig"]


@dataclass(frozen=True)
class PipelineConfig:
    servers: str | None = None  # None: start the embedded server
    events: int = 20_000
    rate: float = 1_000.0  # events published per second
    out_dir: Path = Path("pipeline-out")
    window_seconds: int = 5
    trigger_seconds: float = 0.0  # 0: Spark's default trigger (micro-batches back to back)
    partitions: int = 0  # 0: the driver reads each micro-batch (driverReads); N: N read tasks per micro-batch
    cores: int = 2
    spark_master: str | None = None  # None: local[cores]; else e.g. spark://host:7077
    events_stream: str = "PIPELINE_EVENTS"
    results_stream: str = "PIPELINE_RESULTS"
    bucket: str = "pipeline_totals"
    regions: tuple[str, ...] = ("eu", "us", "ap", "sa")
    products: tuple[str, ...] = field(default=("book", "game", "music", "film"))
    seed: int = 42
    quiet: bool = False

    @property
    def events_subject_prefix(self) -> str:
        return "events"

    @property
    def results_subject_prefix(self) -> str:
        return "results"
