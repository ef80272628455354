"""The README's main job, small: events -> stream -> streaming totals -> stream + KV, checked exactly."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.targets import NATS_SERVER, Target

from pyjetstream.pipeline import PipelineConfig, run_pipeline
from pyjetstream.pipeline.__main__ import parse_args

pytestmark = pytest.mark.xdist_group("spark")


def _check(summary: Any, out_dir: Path, events: int) -> None:
    assert summary.exact, summary.mismatches
    assert summary.events == events
    assert summary.windows == summary.kv_keys > 0
    assert summary.results_updates >= summary.windows
    data = json.loads((out_dir / "summary.json").read_text())
    assert data["exact"] and data["events"] == events
    assert "match the generator exactly" in (out_dir / "summary.md").read_text()
    assert (out_dir / "pipeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_pipeline_on_the_embedded_server(spark: Any, tmp_path: Path) -> None:
    """No --servers: the job starts the embedded server itself."""
    config = PipelineConfig(events=1500, rate=1500, out_dir=tmp_path, window_seconds=1, trigger_seconds=0.5)
    out = io.StringIO()
    summary = run_pipeline(config, out=out, spark=spark)
    _check(summary, tmp_path, 1500)
    assert summary.embedded_server
    text = out.getvalue()
    assert "published" in text and "Pipeline finished" in text and str(tmp_path / "pipeline.png") in text


def test_pipeline_against_a_nats_server_url(spark: Any, js_server: Target, tmp_path: Path) -> None:
    if js_server.kind != NATS_SERVER:
        pytest.skip("the embedded server's run is the test above")
    config = parse_args(
        ["--servers", js_server.url, "--events", "1000", "--rate", "2000", "--out", str(tmp_path), "--quiet"]
    )
    summary = run_pipeline(config, spark=spark)
    _check(summary, tmp_path, 1000)
    assert not summary.embedded_server
