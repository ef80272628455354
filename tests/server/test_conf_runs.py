"""The configuration scanner reads a string's ordinary characters a stretch at a time
(`scanner.RUNS`): the same trees, positions and errors as one character at a time, over random
texts made of the characters the string rules stop at (quotes, escapes, blanks, new lines,
``;,]}``, a single quote) among ordinary ones."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyjetstream.server.conf import ConfigError, scanner
from pyjetstream.server.conf.nodes import Node
from pyjetstream.server.conf.parser import parse_tree

#: Pieces a random value is made of: ordinary text, escapes (good and bad), the ends of strings.
_PIECES = [
    "abc", "x", "é", "日本", "1", "2k", "foo.bar", "$2a$", "{{wildcard(1)}}", "\\n", "\\t", "\\\\", '\\"',
    "\\x41", "\\xc3\\xa9", "\\xzz", "\\q", "\\", '"', "'", " ", "\t", "\n", "\r\n", ";", ",", "]", "}", "[", "{",
    ":", "=", "#c", "//c",
]  # fmt: skip


def _text(rng: random.Random) -> str:
    """A few entries whose values are quoted, unquoted or in lists and maps, with random pieces."""

    def value() -> str:
        body = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(6)))
        shape = rng.randrange(5)
        if shape == 0:
            return f'"{body}"'
        if shape == 1:
            return f"[{body}, {body}]"
        if shape == 2:
            return f"{{k: {body}}}"
        return body

    return "".join(f"k{i}{rng.choice([': ', ' = ', ' '])}{value()}\n" for i in range(rng.randrange(1, 4)))


def _tree(value: Any) -> Any:
    """The parsed tree with every node's place."""
    if isinstance(value, Node):
        return (_tree(value.value), value.line, value.col, value.raw)
    if isinstance(value, dict):
        return {k: _tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tree(v) for v in value]
    return value


def _parse(text: str) -> Any:
    try:
        return _tree(parse_tree(text, "t.conf", {}))
    except ConfigError as exc:
        return ("error", str(exc))


def test_runs_read_what_characters_one_at_a_time_read(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(20261129)
    parsed = errors = 0
    for _ in range(4000):
        text = _text(rng)
        monkeypatch.setattr(scanner, "RUNS", True)
        on = _parse(text)
        monkeypatch.setattr(scanner, "RUNS", False)
        off = _parse(text)
        assert on == off, text
        errors += isinstance(on, tuple) and on[0] == "error"
        parsed += not (isinstance(on, tuple) and on[0] == "error")
    assert parsed > 500 and errors > 500, (parsed, errors)  # (both kinds of text were made)
