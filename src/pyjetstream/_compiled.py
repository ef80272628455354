"""Compiled hot modules (mypyc), used only when built from the very source beside them.

A few modules on the per-message path are compiled ahead of time with mypyc (issue #14; the
measurements are in bench/README.md): `MODULES`. Their pure-Python source stays the one
truth — it is what every other checkout runs, what mypy checks and what a stale or missing build
falls back to. ``scripts/build_compiled.py`` (run by ``scripts/setup.sh``) compiles a copy of those
sources and puts the extension modules in ``.compiled/`` inside this package directory (never next
to the ``.py`` files, where a stale one would shadow an edited source), with a manifest of the
SHA-256 of every source it compiled.

At ``import pyjetstream`` `install` puts a finder first on ``sys.meta_path`` for exactly those
names; the first import of one of them reads the manifest (`decide`: nothing is read or hashed
before, so ``pyjetstream --help`` pays nothing). Only when the interpreter matches the build and
every listed source is the one compiled — it hashes as it did, or has the size and modification time the
build recorded for it (`_source_is`) — (all or nothing: compiled modules call each other
natively, so one stale module would leave its compiled callers with its old code) does the finder
load those names from ``.compiled/``; else the ordinary ``.py`` files are imported, and
`status` says why. ``PYJETSTREAM_PURE=1`` in the
environment forces pure Python (the test suite's pure pass does, and subprocess servers inherit it).

The compiled group is closed: its modules import only each other and the standard library
(tests/test_compiled.py checks it), so its sources' hashes cover everything compiled into it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Sequence

TYPE_CHECKING = False  # (typing's own, not imported: see pyjetstream/__init__.py)

if TYPE_CHECKING:
    from types import ModuleType

    #: A path given to these functions (what they return is text: ``os.path``, not ``pathlib``,
    #: which nothing else a server's start imports, see `decide`).
    PathArg = str | os.PathLike[str]

__all__ = [
    "BUILD_DIR",
    "MANIFEST",
    "MODULES",
    "active",
    "check",
    "decide",
    "install",
    "load_group",
    "source_digest",
    "source_stat",
    "status",
]

#: The compiled modules (dotted names; their sources are ``<name>.py`` under the package root).
MODULES = (
    "pyjetstream.protocol.events",
    "pyjetstream.protocol.limits",
    "pyjetstream.protocol.parser",
    "pyjetstream.protocol.writers",
    "pyjetstream.protocol.headers",
    "pyjetstream.protocol.subjects",
    "pyjetstream.protocol.gsl",
    "pyjetstream.server.sublist",
    "pyjetstream.server.subscription",
    "pyjetstream.server.sink",
    "pyjetstream.server.router",
    "pyjetstream.server.jetstream.delivery_pass",
    "pyjetstream.server.jetstream.store.run_reader",
    "pyjetstream.server.jetstream.store.scan_run",
    "pyjetstream.server.jetstream.store.blockcache",
)
#: The mypyc shared library's module name (``mypycify(group_name=...)``): the group's code lives in
#: it, each module above is a small shim that imports it.
GROUP = "pyjetstream_hot"
GROUP_MODULE = GROUP + "__mypyc"
#: Inside the package directory.
BUILD_DIR = ".compiled"
MANIFEST = "manifest.json"
#: Forces pure Python when set to anything but "" or "0".
PURE_ENV = "PYJETSTREAM_PURE"

#: Why the compiled modules are (not) in use (:func:`decide` first), for diagnostics.
status = "not checked"
#: Whether the compiled modules are in use (:func:`decide` first).
active = False
# The package directory install() was given, until decide() has looked at it.
_pending: str | None = None


def source_path(package_dir: PathArg, module: str) -> str:
    """The source file of ``module`` (``pyjetstream.x.y`` → ``<package_dir>/x/y.py``)."""
    parts = module.split(".")[1:]
    return os.path.join(package_dir, *parts[:-1], parts[-1] + ".py")


def source_digest(path: PathArg) -> str:
    import hashlib  # deferred: only the first import of a compiled module needs it (CLI start-up)

    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def source_stat(path: PathArg) -> list[int]:
    """What `check` compares before hashing: the source's size and modification time (ns)."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _source_is(path: PathArg, digest: str, stat: list[int] | None) -> bool:
    """Whether the source at ``path`` is the one that hashed to ``digest``: at once when it has the
    size and modification time the build saw it with (``stat``, recorded only for a file whose
    content hashed to ``digest`` then: the rule CPython trusts a ``.pyc`` by), else by hashing it.
    The hash costs a start ~0.4 ms and loads OpenSSL's digests (``hashlib``), ~1.3% of its
    instructions."""
    if stat is not None and source_stat(path) == stat:
        return True
    return source_digest(path) == digest


def check(package_dir: PathArg) -> tuple[dict[str, str] | None, str]:
    """The extension file of every compiled module (and of the group library), or None and why not.

    A build is used only when it is complete, was made for this interpreter (its extension
    suffix) and every module's source is byte-for-byte the one it was compiled from."""
    import json  # deferred with the rest of the check (CLI start-up)

    build = os.path.join(package_dir, BUILD_DIR)
    try:
        with open(os.path.join(build, MANIFEST), encoding="utf-8") as f:
            manifest = json.loads(f.read())
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
    stats: dict[str, list[int]] = manifest.get("stats", {})
    files: dict[str, str] = {}
    for module in MODULES:
        try:
            same = _source_is(source_path(package_dir, module), sources[module], stats.get(module))
        except OSError:
            return None, f"pure Python: {module} has no source"
        if not same:
            return None, f"pure Python: {module} changed since it was compiled (run scripts/build_compiled.py)"
        files[module] = os.path.join(build, *module.split(".")[:-1], module.rsplit(".", 1)[-1] + suffix)
    files[GROUP_MODULE] = os.path.join(build, GROUP_MODULE + suffix)
    missing = [path for path in files.values() if not os.path.isfile(path)]
    if missing:
        return None, f"pure Python: the build lacks {', '.join(missing)}"
    return files, f"compiled: {len(MODULES)} modules from {build}"


class _Finder:
    """Finds exactly the compiled names, in the build directory, once `decide` has accepted
    it (a meta path finder; not derived from ``importlib.abc.MetaPathFinder``, whose import costs
    more than this whole module)."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _NAMES:
            return None
        files = _files if _pending is None else decide()
        file = None if files is None else files.get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


_NAMES = frozenset((*MODULES, GROUP_MODULE))
_files: dict[str, str] | None = None


def install(package_dir: str | None = None) -> bool:
    """Put the compiled modules' finder in place (see the module docstring); False when
    ``PYJETSTREAM_PURE`` is set. Nothing is read until one of them is imported."""
    global status, _pending
    if os.environ.get(PURE_ENV, "") not in ("", "0"):
        status = f"pure Python: {PURE_ENV} is set"
        return False
    if _pending is not None or active or any(isinstance(f, _Finder) for f in sys.meta_path):
        return True
    _pending = package_dir or os.path.dirname(os.path.abspath(__file__))
    sys.meta_path.insert(0, _Finder())
    return True


def decide() -> dict[str, str] | None:
    """Check the build once (`check`, `load_group`) and set `status` and
    `active`; the extension files to load, or None for pure Python."""
    global status, active, _pending, _files
    if _pending is None:
        return _files
    package_dir, _pending = _pending, None
    files, status = check(package_dir)
    if files is not None:
        already = [name for name in MODULES if name in sys.modules]
        if already:  # imported before the finder was in place: cannot swap them under their users
            status, files = f"pure Python: {', '.join(already)} imported before pyjetstream", None
        else:
            error = load_group(files)
            if error is not None:
                status, files = f"pure Python: the build does not load ({error})", None
    _files = files
    active = files is not None
    return files


def load_group(files: dict[str, str]) -> str | None:
    """Load the group's shared library (every compiled module imports it first); the error when
    it does not load — a damaged or foreign file then leaves pure Python in use instead of
    breaking ``import pyjetstream``."""
    try:
        file = files[GROUP_MODULE]
        loader = importlib.machinery.ExtensionFileLoader(GROUP_MODULE, str(file))
        spec = importlib.util.spec_from_file_location(GROUP_MODULE, file, loader=loader)
        assert spec is not None
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    sys.modules[GROUP_MODULE] = module
    return None

