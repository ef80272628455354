"""The JetStream engine talks to the server through `server/jetstream/host.py`'s protocols: none of its
modules imports the server's own modules (not even for type annotations), so the server and the engine
are two layers, not one import circle (issue 25). What it may import from `pyjetstream.server` is a
short list of leaves that import nothing of the server back."""

from __future__ import annotations

import ast
from pathlib import Path

import pyjetstream.server.jetstream as engine_package

ENGINE = Path(engine_package.__file__).parent
#: Server modules the engine may use: each imports nothing of the server's own (checked below).
ALLOWED = {"options", "sink", "subject_transform", "sublist", "subscription", "version"}


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _server_modules(names: set[str]) -> set[str]:
    """The top-level ``pyjetstream.server`` modules named (not the engine's own)."""
    out = set()
    for name in names:
        parts = name.split(".")
        if parts[:2] == ["pyjetstream", "server"] and len(parts) > 2 and parts[2] != "jetstream":
            out.add(parts[2])
    return out


def test_the_engine_names_no_module_of_the_server_but_a_few_leaves() -> None:
    found = {}
    for path in sorted(ENGINE.rglob("*.py")):
        used = _server_modules(_imports(path)) - ALLOWED
        if used:
            found[str(path.relative_to(ENGINE))] = sorted(used)
    assert found == {}


def test_the_leaves_the_engine_uses_import_nothing_of_the_server() -> None:
    server = ENGINE.parent
    for leaf in sorted(ALLOWED):
        used = _server_modules(_imports(server / f"{leaf}.py"))
        assert used <= ALLOWED, (leaf, used)
