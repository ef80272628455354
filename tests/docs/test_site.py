"""The documentation site: it builds --strict, renders no raw Sphinx roles, and its API reference has
every public name of the package, the configurations page being the one the classes generate."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import types
import zlib
from pathlib import Path

import pytest

from .blocks import ROOT

# Sphinx/reST roles that mkdocstrings does not render (they show as ":class:`Foo`" on the page)
RAW_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const|ref|term|doc|any):`?")
# reST left in a docstring: a literal-block marker or a directive
RAW_REST = re.compile(r"\w::</p>|^\.\. \w+::", re.M)
# a cross-reference autorefs could not resolve is left as text
UNRESOLVED = re.compile(r"\[`?[\w.]+`?\]\[[\w.]*\]")

PUBLIC_MODULES = (
    "pyjetstream",
    "pyjetstream.client",
    "pyjetstream.client.jetstream",
    "pyjetstream.testing",
    "pyjetstream.spark",
)

pytestmark = pytest.mark.xdist_group("docs-site")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}\n{result.stderr}"
    return out


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_no_raw_roles(site: Path) -> None:
    found = []
    for page in _pages(site):
        text = page.read_text()
        for pattern in (RAW_ROLE, RAW_REST, UNRESOLVED):
            for match in pattern.finditer(text):
                context = text[max(0, match.start() - 60) : match.end() + 40].replace("\n", " ")
                found.append(f"{page.relative_to(site)}: …{context}…")
    assert not found, "docstrings in a form mkdocstrings does not render:\n" + "\n".join(found[:40])


def _inventory(site: Path) -> set[str]:
    *header, data = (site / "objects.inv").read_bytes().split(b"\n", 4)
    assert header[0].startswith(b"# Sphinx inventory")
    return {line.split(" ", 1)[0] for line in zlib.decompress(data).decode().splitlines() if line}


def _where(obj: object) -> str | None:
    """The path the reference documents ``obj`` under (None: a value, found by name)."""
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    qualname = getattr(obj, "__qualname__", None)
    owner = getattr(obj, "__module__", None)
    if isinstance(obj, type | types.FunctionType) and qualname and owner:
        return f"{owner}.{qualname}"
    return None


def test_every_public_name_is_in_the_reference(site: Path) -> None:
    inventory = _inventory(site)
    missing = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            path = _where(getattr(module, name))
            if path is None:  # a constant: documented in the module that defines it
                if not any(
                    entry.endswith(f".{name}") and entry.startswith(module_name) for entry in inventory
                ):
                    missing.append(f"{module_name}.{name}")
            elif path not in inventory:
                missing.append(f"{module_name}.{name} ({path})")
    assert not missing, "public names missing from docs/reference/: " + ", ".join(missing)


def test_configuration_page_is_generated_from_the_classes() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_config_reference.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_reference_pages_are_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    missing = [page for page in pages if page not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"


def _slug(heading: str) -> str:
    """The anchor mkdocs (and GitHub) give a heading: lower case, punctuation dropped, spaces as dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s+", "-", re.sub(r"[^\w\s-]", "", text))


def test_readme_links_resolve() -> None:
    """The README is read on GitHub, outside the site's link checking: its relative links must point at files
    (and headings) that exist."""
    text = (ROOT / "README.md").read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"\w+://", target):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path if path else ROOT / "README.md"
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md":
            slugs = {_slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.M)}
            if anchor not in slugs:
                broken.append(target)
    assert not broken, f"README.md links to what is not there: {broken}"
