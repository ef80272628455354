"""The Spark blocks of README.md and docs/*.md (``<!-- test: with spark -->``), on both targets.

Here rather than in tests/docs so that they share the Spark tests' session (one JVM per run) and
servers; ``spark`` and ``url`` are given, and a block's ``nats://127.0.0.1:4222`` is the server.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from tests.docs import runner
from tests.docs.blocks import Block, all_blocks
from tests.spark import jsutil
from tests.support.targets import Target

pytestmark = pytest.mark.xdist_group("spark")

SPARK_BLOCKS = [pytest.param(b, id=b.id) for b in all_blocks() if b.mode == "with spark"]


def _stream_names(url: str) -> set[str]:
    with jsutil.jetstream(url) as js:
        return set(js.stream_names())


@pytest.mark.parametrize("block", SPARK_BLOCKS)
def test_spark_block(block: Block, spark: Any, js_server: Target) -> None:
    url = js_server.url
    before = _stream_names(url)
    try:
        result = runner.start_snippet(block, {"spark": spark, "url": url, "__name__": "__doc_block__"}, url)
        assert not inspect.iscoroutine(result), f"{block.id}: a Spark block is plain (blocking) code"
    finally:
        with jsutil.jetstream(url) as js:
            for name in set(js.stream_names()) - before:
                js.delete_stream(name)


def test_spark_blocks_are_found() -> None:
    assert len(SPARK_BLOCKS) >= 3
