"""Step counters for the suite's complexity guards (issue 24): a function patched, in every module
that bound it by name, with a wrapper that counts its calls and returns what it returned.

Counting calls, not time, is how the suite shows a cost does not grow with the state; the
wrapper is one place so that each guard states only what it counts and where."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


class Calls:
    """How many calls the patched function took since the last `reset`."""

    def __init__(self) -> None:
        self.n = 0

    def reset(self) -> None:
        self.n = 0


def count_calls(monkeypatch: pytest.MonkeyPatch, name: str, *owners: object) -> Calls:
    """Patch ``name`` in each of ``owners`` — modules that bound one function by that name (the
    first one's), or a class whose method it is — with a counting wrapper; ``monkeypatch.undo()`` or
    the test's end restores them."""
    real: Callable[..., Any] = getattr(owners[0], name)
    calls = Calls()

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.n += 1
        return real(*args, **kwargs)

    for owner in owners:
        monkeypatch.setattr(owner, name, counting)
    return calls
