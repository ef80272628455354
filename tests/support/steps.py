"""Counting the Python a piece of the server runs (``sys.settrace``), for the tests that guard a
fixed complexity by steps rather than time: the count does not depend on the machine or its load,
and C code raises no trace events, so a step count sees exactly the Python that grows.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class Steps:
    """The trace events counted so far (`counting`)."""

    def __init__(self) -> None:
        self.count = 0


@contextmanager
def counting(lines_only: bool = False, where: Callable[[FrameType], bool] | None = None) -> Iterator[Steps]:
    """Count the trace events of the Python run in this thread while the block runs (an event loop's
    callbacks and tasks included): every call, line, return and exception event, or (``lines_only``)
    the line events; only in the frames ``where`` accepts (default: all)."""
    steps = Steps()

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        if not lines_only or event == "line":
            steps.count += 1
        return local

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        if where is not None and not where(frame):
            return None
        if not lines_only:
            steps.count += 1  # the call event
        return local

    # The cyclic collector off while counting: a collection the block happens to trigger runs the
    # finalizers (``__del__``, weakref callbacks) of whatever garbage earlier code left — another
    # test's transports, say — in this thread, and their Python would be counted as the block's
    # (a ``/jsz`` listing once counted ~90 steps more in a loaded suite than alone).
    collecting = gc.isenabled()
    gc.disable()
    sys.settrace(trace)
    try:
        yield steps
    finally:
        sys.settrace(None)
        if collecting:
            gc.enable()


def steps_of(fn: Callable[[], Any]) -> int:
    """The trace events (every kind) of one call of ``fn``."""
    with counting() as steps:
        fn()
    return steps.count
