"""The parsed tree: every value with the place it was written, so errors can point at it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class Node:
    """A parsed value and where it was written (map entries: where the key is)."""

    __slots__ = ("col", "file", "line", "raw", "used", "value")

    def __init__(self, value: Any, file: str, line: int, col: int, raw: str | None = None) -> None:
        self.value = value
        self.file = file
        self.line = line
        self.col = col
        self.raw = raw  # source text of numbers, to explain `2m` surprises
        self.used = False  # referenced as a $variable: not an unknown key


def plain(value: Any) -> Any:
    """A node (or tree of nodes) as plain Python values."""
    if isinstance(value, Node):
        value = value.value
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def wrap_plain(value: Any, filename: str) -> Node:
    """Plain values (e.g. from json.load) as position-less nodes."""
    if isinstance(value, Node):
        return value
    if isinstance(value, Mapping):
        value = {str(k): wrap_plain(v, filename) for k, v in value.items()}
    elif isinstance(value, list | tuple):
        value = [wrap_plain(v, filename) for v in value]
    return Node(value, filename, 0, 0)
