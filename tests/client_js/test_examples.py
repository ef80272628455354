"""Every example in examples/ runs to completion against both targets."""

from __future__ import annotations

import asyncio
import importlib.util
import inspect
from pathlib import Path
from types import ModuleType

import pytest
from tests.client_js.features import needs
from tests.support.targets import Target

from pyjetstream.client import connect
from pyjetstream.client.jetstream import jetstream

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("js_*.py"))


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
async def test_example_runs(path: Path, server: Target, capsys: pytest.CaptureFixture[str]) -> None:
    module = _load(path)
    features = getattr(module, "FEATURES", ())
    if features:  # newer-server examples skip where the embedded server lacks the feature
        nc = await connect(server.url)
        try:
            await needs(jetstream(nc), server, *features)
        finally:
            await nc.close()
    main = module.main
    if inspect.iscoroutinefunction(main):
        await asyncio.wait_for(main(server.url), 60)
    else:
        await asyncio.wait_for(asyncio.to_thread(main, server.url), 60)
    assert capsys.readouterr().out  # every example reports what it did


def test_examples_exist() -> None:
    assert len(EXAMPLES) >= 15
