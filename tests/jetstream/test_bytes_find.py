"""A bytes needle is looked for with ``find``, not ``in``, in the server, the API vocabulary and the
protocol modules.

In CPython 3.11 ``needle in haystack`` on bytes first tries the needle as an integer (a byte
value): for a bytes needle ``PyNumber_AsSsize_t`` raises a TypeError with a formatted message,
which is then cleared — ~2,000 machine instructions for the look-up of a few bytes
(callgrind), where ``haystack.find(needle) >= 0`` takes ~150. A publish with a
``Nats-Expected-Last-Subject-Sequence`` made 4 such look-ups (~10,000 of its ~52,000
instructions), a stream state write one per subject. Scanned here: every ``in`` / ``not in``
whose left side is a bytes literal or a module-level name bound to bytes; the right sides that
are dicts of headers (`schedules.Found`) are listed.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pyjetstream

PACKAGES = ("pyjetstream.server", "pyjetstream.api", "pyjetstream.protocol")
#: Right sides that are dicts keyed by header names (a dict look-up: no search).
DICTS = frozenset({"found"})


def _modules() -> list[ModuleType]:
    mods = []
    for info in pkgutil.walk_packages(pyjetstream.__path__, "pyjetstream."):
        if info.name.startswith(PACKAGES) and not info.ispkg:
            mods.append(importlib.import_module(info.name))
    return mods


def _bytes_value(mod: ModuleType, node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, bytes)
    if isinstance(node, ast.Name):
        return isinstance(getattr(mod, node.id, None), bytes)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return isinstance(getattr(getattr(mod, node.value.id, None), node.attr, None), bytes)
    return False


def test_no_bytes_needle_is_looked_for_with_in() -> None:
    found = []
    mods = _modules()
    assert len(mods) > 100
    for mod in mods:
        # (the source, also of a compiled module)
        path = Path(pyjetstream.__file__).parent.parent / (mod.__name__.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                if (
                    isinstance(op, ast.In | ast.NotIn)
                    and _bytes_value(mod, left)
                    and not (isinstance(right, ast.Name) and right.id in DICTS)
                ):
                    found.append(f"{mod.__name__}:{node.lineno}: {ast.unparse(node)}")
                left = right
    assert not found, "\n".join(found)
