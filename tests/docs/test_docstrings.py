"""Docstrings are markdown for mkdocstrings, not reStructuredText: no Sphinx roles anywhere in src/.

The site renders only part of the package, so tests/docs/test_site.py (which greps the built pages) would
let a role through in a module that is not on it today and shows up tomorrow. Write `[`Foo`][]` (resolved
in the docstring's scope), `[`Foo`][pyjetstream.full.path]`, or a plain `` `Foo` `` code span.
"""

from __future__ import annotations

import ast
import re

from .blocks import ROOT

ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|mod|exc|obj|const):`[^`]*`")

# Files exempted while another helper had them in flight (none left: every docstring of src/ is markdown).
PENDING: set[str] = set()


def _docstrings(tree: ast.Module) -> list[ast.Constant]:
    """Every string statement: module, class and function docstrings, and attribute docstrings."""
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    ]


def test_no_sphinx_roles_in_docstrings() -> None:
    src = ROOT / "src" / "pyjetstream"
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src).as_posix()
        if rel in PENDING:
            continue
        for doc in _docstrings(ast.parse(path.read_text())):
            found += [f"src/pyjetstream/{rel}:{doc.lineno}: {m.group(0)}" for m in ROLE.finditer(doc.value)]
    assert not found, "Sphinx roles in docstrings (write markdown: [`Foo`][] or `Foo`):\n" + "\n".join(found)


def test_pending_files_exist() -> None:
    src = ROOT / "src" / "pyjetstream"
    assert not [rel for rel in PENDING if not (src / rel).exists()]
