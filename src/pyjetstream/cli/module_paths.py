"""Where the modules of a ``pyjetstream serve`` start were found, kept across starts.

Why: to import a module, CPython's path finder (``importlib.machinery.PathFinder``) asks each
``sys.path`` entry in turn — for a submodule each directory of its package's ``__path__`` — and each
asking stats the directory, looks the name up among its files and builds a spec. A server start
imports ~330 modules that way (the standard library's, asyncio's, msgspec's, uvloop's and the
package's ~115): 7.4% of its instructions and ~1,800 ``stat`` calls (callgrind and strace of a start
to its first answer, on a configuration file). The answers are the same at every start as long as no
file came or went in the directories searched.

So the ``serve`` command puts `CachedPathFinder` on ``sys.meta_path`` just before ``PathFinder``
(every finder before it still answers first: the compiled modules', built-in and frozen modules): it
answers a name the last start's path finder found, with a spec of the same loader and file, and
leaves every other name to ``PathFinder``. The table is used only when it was made with this very
``sys.path`` (and interpreter) and no directory it depends on changed since: every ``sys.path``
entry (a name found in a later entry is only found there while the earlier ones lack it) and every
directory a module was found in, each compared by its modification time to the nanosecond —
``FileFinder``'s own rule for refreshing its listing of a directory. A table is written only when
every directory it depends on was last modified over `RACY` seconds before the start began (none
changed while the start looked in it, and a change made within the same clock tick as the recorded
time cannot hide): else nothing is written. A file edited in place keeps its path, and its ``.pyc``
is checked against it by the loader as ever.

The finder serves the start it was checked for: `done` takes it off ``sys.meta_path`` once the server is
up, so that what a running server imports later (its consumer machinery at a first consumer, say) is
looked for by ``PathFinder`` among the directories as they are then (a package may be upgraded under a
running server).

The table (`save`) is what the start imported through the path finder, merged with the file's
(a start with other options imports other modules), written in the ``__pycache__`` that holds the
generated-code cache (`default_path`), atomically, unless ``sys.dont_write_bytecode``.
``PYJETSTREAM_MODULE_PATHS=off`` in the environment: ``PathFinder`` alone (the differential test,
tests/cli/test_serve_module_paths.py, proves the modules found the same either way).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import sys
import time
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, FileFinder, ModuleSpec, PathFinder
from importlib.machinery import SourceFileLoader as _SourceFileLoader
from importlib.util import MAGIC_NUMBER, spec_from_file_location
from types import ModuleType
from typing import Any

__all__ = [
    "ENV",
    "MAX_ENTRIES",
    "RACY",
    "CachedPathFinder",
    "active",
    "cache_file",
    "default_path",
    "done",
    "install",
    "record",
    "save",
    "write_file",
]

# ``PYJETSTREAM_MODULE_PATHS=off`` in the environment: every module is looked for by ``PathFinder``.
ENV = "PYJETSTREAM_MODULE_PATHS"
# Entries kept at most (a merged table that grew past it keeps only this start's).
MAX_ENTRIES = 4096
# A directory modified less than this many seconds before the recording is not trusted.
RACY = 2.0
# The file's first bytes: the interpreter's bytecode magic number and this format's tag.
_HEADER = MAGIC_NUMBER + b"pjs-module-paths-1\n"
# Kinds of loader: a module's source (with its .pyc), an extension module.
_SOURCE, _EXTENSION = 0, 1
# A table entry: (kind, file, whether it is a package).
Entry = tuple[int, str, bool]
# What a missing directory's time is recorded as.
_MISSING = -1


def _mtime(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return _MISSING


def _searched(entry: Entry) -> str:
    """The directory the path finder found ``entry`` in (a package's: the one holding its directory)."""
    _kind, file, package = entry
    return os.path.dirname(os.path.dirname(file) if package else file)


def _key() -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """What a table is valid for: the interpreter, ``sys.path`` and the extension suffixes."""
    return sys.version, tuple(sys.path), tuple(EXTENSION_SUFFIXES)


class CachedPathFinder:
    """A meta path finder answering the names in ``table`` as ``PathFinder`` found them (see the
    module's docstring); None for any other name. A plain class (not derived from
    ``importlib.abc.MetaPathFinder``, whose import costs more than the lookups it saves)."""

    def __init__(self, table: dict[str, Entry]) -> None:
        self.table = table
        self.hits = 0

    def find_spec(self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> ModuleSpec | None:
        entry = self.table.get(fullname)
        if entry is None:
            return None
        kind, file, package = entry
        # (A submodule's package must be where it was: its __path__ holds the directory searched.)
        if (path is None) != ("." not in fullname) or (path is not None and _searched(entry) not in path):
            return None
        loader: Any = _SourceFileLoader(fullname, file) if kind == _SOURCE else ExtensionFileLoader(fullname, file)
        locations = [os.path.dirname(file)] if package else None
        self.hits += 1
        return spec_from_file_location(fullname, file, loader=loader, submodule_search_locations=locations)

    def invalidate_caches(self) -> None:
        """``importlib.invalidate_caches()``: files may have come; ask ``PathFinder`` from now on."""
        self.table = {}


#: The finder `install` put in place, else None.
active: CachedPathFinder | None = None
# The file's path and what it held (valid for this start), and when `install` ran, for `save`.
_path: str | None = None
_loaded: dict[str, Entry] = {}
_started = 0


def default_path() -> str | None:
    """Where the table lives (`cache_file`)."""
    return cache_file("module-paths")


def cache_file(stem: str) -> str | None:
    """The file ``stem`` a ``serve`` start keeps for the next (this table, the generated-code cache):
    in ``__pycache__`` beside this module (``sys.pycache_prefix`` honoured, as for ``.pyc`` files),
    tagged with the interpreter's cache tag; None where the interpreter keeps no bytecode."""
    from importlib.util import cache_from_source

    try:
        pyc = cache_from_source(__file__)
    except (NotImplementedError, ValueError):  # (sys.implementation.cache_tag is None)
        return None
    return os.path.join(os.path.dirname(pyc), f"{stem}.{sys.implementation.cache_tag}.marshal")


def write_file(path: str, data: bytes) -> bool:
    """Write ``data`` to a temporary file renamed over ``path``, so that a server starting beside
    this one reads the old file or the new one; False when it cannot be written (left as it was)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(tmp) or ".", exist_ok=True)
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    return True


def _read(path: str) -> dict[str, Entry]:
    """The table in ``path`` when it is valid for this start (`_key`, its directories unchanged)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(_HEADER):
            return {}
        key, dirs, table = marshal.loads(data[len(_HEADER) :])
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    if key != _key() or not isinstance(dirs, dict) or not isinstance(table, dict):
        return {}
    if not all(isinstance(entry, tuple) and len(entry) == 3 for entry in table.values()):
        return {}
    for directory, mtime in dirs.items():
        if _mtime(directory) != mtime:
            return {}
    return table


def install(path: str | None = None) -> CachedPathFinder | None:
    """Put the last start's table (``path``, else `default_path`) in place for this process
    (``serve``, before it imports the server), unless `ENV` is ``off``; returns the finder (None: no
    valid table, or off). `save` writes to the same file."""
    global active, _path, _loaded, _started
    if active is not None or os.environ.get(ENV, "") == "off" or PathFinder not in sys.meta_path:
        return active
    _started = time.time_ns()
    _path = path if path is not None else default_path()
    _loaded = {} if _path is None else _read(_path)
    if _loaded:
        active = CachedPathFinder(_loaded)
        sys.meta_path.insert(sys.meta_path.index(PathFinder), active)
    return active


def done() -> None:
    """The start is over: take the finder off ``sys.meta_path`` (`active` stays, for its counts)."""
    if active is not None and active in sys.meta_path:
        sys.meta_path.remove(active)


def record(modules: dict[str, Any]) -> dict[str, Entry]:
    """The entries of ``modules`` (``sys.modules``) that ``PathFinder`` found: a source or extension
    file in a directory of ``sys.path`` (a top-level name) or of its package's ``__path__`` (a
    submodule) that a ``FileFinder`` searches."""
    entries: dict[str, Entry] = {}
    for name, module in list(modules.items()):
        entry = _entry(name, getattr(module, "__spec__", None), modules)
        if entry is not None:
            entries[name] = entry
    return entries


def _directories(table: dict[str, Entry]) -> dict[str, int] | None:
    """The times of the directories ``table`` depends on (every ``sys.path`` entry, every directory
    searched); None when one was modified later than `RACY` seconds before the start (or a
    directory searched is gone)."""
    dirs = {entry: _mtime(entry) for entry in dict.fromkeys(sys.path)}
    for entry in table.values():
        searched = _searched(entry)
        mtime = dirs.get(searched)
        if mtime is None:  # (each directory stat'ed once, however many modules it holds)
            mtime = dirs[searched] = _mtime(searched)
        if mtime == _MISSING:
            return None
    since = _started or time.time_ns()
    if any(since - mtime < RACY * 1e9 for mtime in dirs.values() if mtime != _MISSING):
        return None
    return dirs


def _entry(name: str, spec: ModuleSpec | None, modules: dict[str, Any]) -> Entry | None:
    if spec is None or spec.name != name or not spec.has_location or not isinstance(spec.origin, str):
        return None
    loader = spec.loader
    if type(loader) is _SourceFileLoader:
        kind = _SOURCE
    elif type(loader) is ExtensionFileLoader:
        kind = _EXTENSION
    else:
        return None
    package = spec.submodule_search_locations is not None
    file = spec.origin
    if package and [os.path.dirname(file)] != list(spec.submodule_search_locations or ()):
        return None
    entry = (kind, file, package)
    searched = _searched(entry)
    parent = name.rpartition(".")[0]
    if parent:
        within = getattr(modules.get(parent), "__path__", None)
        if within is None or searched not in list(within):
            return None
    elif searched not in sys.path:
        return None
    # (found by a FileFinder there, not by another path hook)
    return entry if isinstance(sys.path_importer_cache.get(searched), FileFinder) else None


def save() -> bool:
    """Write the table of what this start imported through the path finder (merged with the one
    read) when it has names the file lacks; returns whether it wrote (see the module's docstring)."""
    if os.environ.get(ENV, "") == "off" or sys.dont_write_bytecode:
        return False
    path = _path if _path is not None else default_path()
    if path is None:
        return False
    entries = record(sys.modules)
    if all(_loaded.get(name) == entry for name, entry in entries.items()):
        return False
    # (The table read was valid at `install`; none of its directories changed since: `_directories`.)
    table = {**_loaded, **entries} if len(_loaded) + len(entries) <= MAX_ENTRIES else entries
    dirs = _directories(table)
    if dirs is None:
        return False
    return write_file(path, _HEADER + marshal.dumps((_key(), dirs, table)))
