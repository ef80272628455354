"""The fenced code blocks of README.md and docs/*.md, with the setup each one declares.

A block's setup is an HTML comment on the line before its fence (invisible on GitHub and on the
site), ``<!-- test: WORDS -->``:

- no comment: a ``python`` block is a whole program, run as a script; a ``bash`` block is run with
  ``bash -e``. ``nats://127.0.0.1:4222`` in either is the server the reader runs: the test replaces
  it with a fresh server of each kind (embedded and nats-server 2.15.1) and sets ``NATS_URL`` for the
  CLI; a block that names no server runs once. ``pyjetstream serve ...`` lines in a bash block are
  started by the test on random ports (with their own flags) and the block's other lines talk to them.
- ``with js``: a Python snippet run with top-level ``await`` and ``pjs``, ``nc``, ``js`` and ``url``
  (a connected client and its JetStream context) defined, on both kinds of server.
- ``with spark``: a Python snippet run in the Spark tests' worker with ``spark`` and ``url`` defined
  (tests/spark/test_doc_blocks.py), on both kinds of server.
- ``pytest``: a test module, run by pytest with the plugin on both kinds of server.
- ``covered-by PATH``: run by that test file, which names this page (checked).
- ``skip: REASON``: not run (a cluster, the suite itself, minutes of Spark); it still has to parse
  (``compile`` / ``bash -n``) and the number of skips per page is pinned in test_code_blocks.py.

Blocks that are not programs say what they are by their language, and each is checked for it:
``text`` (output or a listing: must not be a shell session or a Python program), ``nats`` (a NATS
server configuration: loaded by our config parser and by ``nats-server -t``), ``toml``, ``json``,
``javascript`` (``node --check``). A block whose content is ``--8<-- "examples/..."`` shows a file
of examples/, which tests/client_js/test_examples.py runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = "nats://127.0.0.1:4222"

_FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)(?P<info>.*)$")
_MARKER = re.compile(r"^\s*<!--\s*test:\s*(?P<words>.*?)\s*-->\s*$")
_SNIPPET = re.compile(r'^--8<--\s+"(?P<path>[^"]+)"\s*$')


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language and its text (indentation removed)."""

    path: str  # relative to the repository root
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  # the words of the <!-- test: ... --> comment before it

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def mode(self) -> str:
        """``program`` (the default), ``with js``, ``with spark``, ``pytest``, ``covered-by`` or ``skip``."""
        if self.marker is None:
            return "program"
        for mode in ("with js", "with spark", "pytest", "covered-by", "skip"):
            if (
                self.marker == mode
                or self.marker.startswith(mode + " ")
                or self.marker.startswith(mode + ":")
            ):
                return mode
        raise ValueError(f"{self.id}: unknown test marker {self.marker!r}")

    @property
    def argument(self) -> str:
        """What follows the mode in the marker (the reason of a skip, the path of covered-by)."""
        assert self.marker is not None
        return self.marker[len(self.mode) :].lstrip(": ").strip()

    @property
    def snippet_path(self) -> str | None:
        """The file a ``--8<--`` block shows, if that is all it holds."""
        lines = [line for line in self.text.splitlines() if line.strip()]
        if len(lines) == 1 and (match := _SNIPPET.match(lines[0].strip())):
            return match["path"]
        return None

    @property
    def needs_server(self) -> bool:
        """True when the block talks to the reader's server (and so runs on both kinds)."""
        if DEFAULT_URL in self.text:
            return True
        if self.lang == "bash":
            return any(_cli_command(line) for line in self.text.splitlines())
        return False


def _cli_command(line: str) -> bool:
    """A ``pyjetstream`` command that needs a server (``serve`` and ``--help`` do not)."""
    words = line.split("#", 1)[0].split()
    return bool(words) and words[0] == "pyjetstream" and words[1:2] != ["serve"] and "--help" not in words


def doc_files() -> list[Path]:
    """README.md and every page of the site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def parse_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, in order (a fence inside a list item may be indented)."""
    lines = path.read_text().splitlines()
    rel = path.relative_to(ROOT).as_posix()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence = match["indent"], match["fence"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{re.escape(fence)}\s*$", lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{rel}:{i + 1}: a fence that is never closed")
        k = i - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        marker = _MARKER.match(lines[k]) if k >= 0 else None
        blocks.append(
            Block(
                rel, i + 1, match["lang"].lower(), "\n".join(body) + "\n", marker["words"] if marker else None
            )
        )
        i = j + 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in doc_files() for block in parse_blocks(path)]


RUN_LANGS = ("python", "bash")
CHECKED_LANGS = ("text", "nats", "toml", "json", "javascript")
