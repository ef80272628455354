"""docs/spark.md lists every option the data source reads (spark/options.py is the truth)."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from pyjetstream.spark import options

from .blocks import ROOT


def _option_names(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every name ``parse_options`` looks up (with its aliases), recorded as it reads an empty map."""
    seen: list[tuple[str, ...]] = []
    read = options._get

    def recording(opts: Mapping[str, str], *names: str) -> str | None:
        seen.append(names)
        return read(opts, *names)

    monkeypatch.setattr(options, "_get", recording)
    options.parse_options({})
    return seen


def _options_section() -> str:
    text = (ROOT / "docs" / "spark.md").read_text()
    return text[text.index("## Options") : text.index("\n## ", text.index("## Options") + 1)]


def test_every_option_is_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    section = _options_section()
    documented = set(re.findall(r"^\| (.+?) \|", section, re.M))
    cells = " ".join(documented)
    names = _option_names(monkeypatch)
    assert len(names) > 30
    missing = [name for group in names for name in group if f"`{name}`" not in cells]
    assert not missing, f"docs/spark.md's option tables do not name {missing}"


def test_no_documented_option_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    known = {name.lower() for group in _option_names(monkeypatch) for name in group}
    section = _options_section()
    first_cells = re.findall(r"^\| (.+?) \|", section, re.M)
    named = {n for cell in first_cells for n in re.findall(r"`([\w.]+)`", cell)}
    named -= {"option"}
    unknown = sorted(n for n in named if n.lower() not in known)
    assert not unknown, f"docs/spark.md documents options the source does not read: {unknown}"
