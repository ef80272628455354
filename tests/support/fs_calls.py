"""Counting the file-system calls a server makes under a directory (tests that count steps, not time)."""

from __future__ import annotations

import collections
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest


@contextmanager
def fs_calls(monkeypatch: pytest.MonkeyPatch, root: str, names: Sequence[str]) -> Iterator[collections.Counter[str]]:
    """Count the ``os`` functions ``names`` called on paths under ``root`` (and every call by descriptor)."""
    counts: collections.Counter[str] = collections.Counter()
    with monkeypatch.context() as m:
        for name in names:
            original = getattr(os, name)

            def wrapper(*args: Any, __name: str = name, __original: Any = original, **kw: Any) -> Any:
                target = args[0] if args else None
                if isinstance(target, int) or str(target).startswith(root):
                    counts[__name] += 1
                return __original(*args, **kw)

            m.setattr(os, name, wrapper)
        yield counts


def dies_after(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, calls: int) -> None:
    """The process "dies" (``SystemExit``) at the call after ``calls`` whole calls of ``owner``'s
    function ``name``: what a crash at that point leaves on disk, the calls before it done."""
    original = getattr(owner, name)
    done = [0]

    def dying(*args: Any, **kw: Any) -> Any:
        if done[0] == calls:
            raise SystemExit("crash")
        done[0] += 1
        return original(*args, **kw)

    monkeypatch.setattr(owner, name, dying)
