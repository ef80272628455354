"""docs/cli.md's table of commands names every command and verb the CLI has (cli/registry.py is the truth)."""

from __future__ import annotations

import re

from pyjetstream.cli import registry

from .blocks import ROOT


def test_every_command_and_verb_is_in_the_table() -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    rows = {}
    for cells in re.findall(r"^\| (.+?) \| (.+?) \|$", text, re.M):
        for command in re.findall(r"`(?:pyjetstream )?([\w-]+)`", cells[0]):
            rows[command] = cells[1]
    missing = []
    for verb in registry.verbs():
        words = verb.path.split() if isinstance(verb.path, str) else list(verb.path)
        command, rest = words[0], words[1:]
        if command not in rows:
            missing.append(command)
        elif rest and not re.search(rf"\b{re.escape(rest[0])}\b", rows[command]):
            missing.append(" ".join(words[:2]))
    assert not missing, f"docs/cli.md's table lacks {sorted(set(missing))}"
