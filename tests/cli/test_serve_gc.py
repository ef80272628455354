"""``pyjetstream serve`` tunes CPython's collector for its own process (`serve.tune_gc`): start-up
objects frozen, a larger young generation, a middle one collected after every other young one;
``PYJETSTREAM_GC=default`` leaves it as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from pyjetstream.cli import serve


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_tune_gc_freezes_start_up_and_grows_the_young_generation(
    restored_gc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYJETSTREAM_GC", raising=False)
    assert serve.tune_gc()
    assert gc.get_threshold() == (serve.GC_YOUNG, serve.GC_MIDDLE, serve.GC_OLD)
    assert gc.get_freeze_count() > 0


def test_tune_gc_switched_off(restored_gc: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYJETSTREAM_GC", "default")
    gc.unfreeze()
    threshold = gc.get_threshold()
    assert not serve.tune_gc()
    assert gc.get_threshold() == threshold
    assert gc.get_freeze_count() == 0
