"""Compiled hot modules (mypyc), used only when built from the very source beside them.

A few modules on the per-message path are compiled ahead of time with mypyc (issue #14; the
measurements are in bench/README.md): :data:`MODULES`. Their pure-Python source stays the one
truth — it is what every other checkout runs, what mypy checks and what a stale or missing build
falls back to. ``scripts/build_compiled.py`` (run by ``scripts/setup.sh``) compiles a copy of those
sources and puts the extension modules in ``.compiled/`` inside this package directory (never next
to the ``.py`` files, where a stale one would shadow an edited source), with a manifest of the
SHA-256 of every source it compiled.

At ``import pyjetstream`` :func:`install` reads that manifest. Only when the interpreter matches
the build and every listed source hashes as it did when compiled (all or nothing: compiled modules
call each other natively, so one stale module would leave its compiled callers with its old code)
does it put a finder first on ``sys.meta_path`` that loads those names from ``.compiled/``; else
the ordinary ``.py`` files are imported, and :data:`status` says why. ``PYJETSTREAM_PURE=1`` in the
environment forces pure Python (the test suite's pure pass does, and subprocess servers inherit it).

The compiled group is closed: its modules import only each other and the standard library
(tests/test_compiled.py checks it), so its sources' hashes cover everything compiled into it.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

__all__ = ["BUILD_DIR", "MANIFEST", "MODULES", "active", "check", "install", "source_digest", "status"]

#: The compiled modules (dotted names; their sources are ``<name>.py`` under the package root).
MODULES = (
    "pyjetstream.protocol.events",
    "pyjetstream.protocol.limits",
    "pyjetstream.protocol.parser",
    "pyjetstream.protocol.writers",
    "pyjetstream.protocol.headers",
    "pyjetstream.protocol.subjects",
    "pyjetstream.server.sublist",
)
#: The mypyc shared library's module name (``mypycify(group_name=...)``): the group's code lives in
#: it, each module above is a small shim that imports it.
GROUP = "pyjetstream_hot"
#: Inside the package directory.
BUILD_DIR = ".compiled"
MANIFEST = "manifest.json"
#: Forces pure Python when set to anything but "" or "0".
PURE_ENV = "PYJETSTREAM_PURE"

#: Why the compiled modules are (not) in use, for diagnostics (``scripts/build_compiled.py --check``).
status = "not checked"
#: Whether :func:`install` put the compiled modules in place.
active = False


def source_path(package_dir: Path, module: str) -> Path:
    """The source file of ``module`` (``pyjetstream.x.y`` → ``<package_dir>/x/y.py``)."""
    parts = module.split(".")[1:]
    return package_dir.joinpath(*parts[:-1], parts[-1] + ".py")


def source_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def check(package_dir: Path) -> tuple[dict[str, Path] | None, str]:
    """The extension file of every compiled module (and of the group library), or None and why not.

    A build is used only when it is complete, was made for this interpreter (its extension
    suffix) and every module's source is byte-for-byte the one it was compiled from."""
    build = package_dir / BUILD_DIR
    try:
        manifest = json.loads((build / MANIFEST).read_text())
    except FileNotFoundError:
        return None, "pure Python: no compiled build (scripts/build_compiled.py makes one)"
    except (OSError, ValueError) as exc:
        return None, f"pure Python: unreadable build manifest ({exc})"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("suffix") != suffix:
        return None, f"pure Python: the build is for {manifest.get('suffix')!r}, this interpreter loads {suffix!r}"
    sources: dict[str, str] = manifest.get("sources", {})
    if set(sources) != set(MODULES):
        return None, "pure Python: the build compiled other modules than this source lists"
    files: dict[str, Path] = {}
    for module in MODULES:
        try:
            digest = source_digest(source_path(package_dir, module))
        except OSError:
            return None, f"pure Python: {module} has no source"
        if digest != sources[module]:
            return None, f"pure Python: {module} changed since it was compiled (run scripts/build_compiled.py)"
        files[module] = build / (module.replace(".", "/") + suffix)
    files[GROUP] = build / (GROUP + "__mypyc" + suffix)
    missing = [str(path) for path in files.values() if not path.is_file()]
    if missing:
        return None, f"pure Python: the build lacks {', '.join(missing)}"
    return files, f"compiled: {len(MODULES)} modules from {build}"


class _Finder(importlib.abc.MetaPathFinder):
    """Finds exactly the compiled names, in the build directory (a meta path finder)."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = {(GROUP + "__mypyc" if name == GROUP else name): path for name, path in files.items()}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def install(package_dir: Path | None = None) -> bool:
    """Use the compiled modules when the build matches the source (see the module docstring)."""
    global status, active
    if active:
        return True
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        status = f"pure Python: {PURE_ENV} is set"
        return False
    if package_dir is None:
        package_dir = Path(__file__).resolve().parent
    files, status = check(package_dir)
    if files is None:
        return False
    already = [name for name in MODULES if name in sys.modules]
    if already:  # imported before pyjetstream itself: cannot swap them under their users
        status = f"pure Python: {', '.join(already)} imported before pyjetstream"
        return False
    sys.meta_path.insert(0, _Finder(files))
    active = True
    return True

