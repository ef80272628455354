"""docs/cli-reference.md is generated from the parsers (scripts/gen_cli_reference.py) and current:
every verb, each of its options with its default and help, and the global options once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pyjetstream.cli.global_flags import GLOBAL_OPTIONS
from pyjetstream.cli.registry import verbs

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli-reference.md"


def test_the_page_is_current() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_cli_reference.py"), "--check"], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_every_verb_and_option_is_on_the_page() -> None:
    text = PAGE.read_text()
    for verb in verbs():
        path = " ".join(verb.path)
        assert f"pyjetstream {path}\n" in text, path
        section = text.split(f"pyjetstream {path}\n", 1)[1].split("\n#", 1)[0]
        parser = verb.command.parser(f"pyjetstream {path}")
        for action in parser._actions:
            own = [f for f in action.option_strings if f not in ("-h", "--help")]
            if own and not any(f in opt.flags for opt in GLOBAL_OPTIONS for f in own):
                assert any(f.removeprefix("--") in section for f in own), (path, own)
    for opt in GLOBAL_OPTIONS:
        assert f"| `{', '.join(opt.flags)}" in text
    assert "Usage: pyjetstream serve [options]" in text
