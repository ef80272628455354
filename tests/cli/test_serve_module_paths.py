"""``pyjetstream serve`` keeps where its modules were found across starts (`pyjetstream.cli.module_paths`):
a start with the table finds every module in the file ``PathFinder`` finds it in, the table is
dropped when a directory it depends on changes (a module shadowing another appears), and nothing is
written while a directory is newer than the start by less than ``RACY``. Counted in modules and
files found, not in time."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyjetstream.cli import module_paths
from pyjetstream.cli.module_paths import CachedPathFinder

NAMES = ("mp_top", "mp_pkg", "mp_pkg.sub")


def _past(*paths: Path) -> None:
    """Date ``paths`` a minute back: no longer racy (`module_paths.RACY`)."""
    then = time.time() - 60
    for path in paths:
        os.utime(path, (then, then))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    """Two directories on ``sys.path`` (``early`` first), the modules of NAMES in ``late``; the
    module's state reset around the test and its finder taken off ``sys.meta_path`` after it."""
    early, late = tmp_path / "early", tmp_path / "late"
    (late / "mp_pkg").mkdir(parents=True)
    early.mkdir()
    (late / "mp_top.py").write_text("WHERE = 'late'\n")
    (late / "mp_pkg" / "__init__.py").write_text("")
    (late / "mp_pkg" / "sub.py").write_text("X = 1\n")
    _past(late / "mp_pkg", late, early)
    monkeypatch.setattr(sys, "path", [str(early), str(late), *sys.path])
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # (no __pycache__ made in the tree)
    for name in ("active", "_path", "_loaded", "_started"):
        monkeypatch.setattr(module_paths, name, getattr(module_paths, name))
    monkeypatch.setattr(module_paths, "active", None)
    monkeypatch.delenv(module_paths.ENV, raising=False)
    yield early, late
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CachedPathFinder)]
    for name in NAMES:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()


def _import_all() -> dict[str, str]:
    for name in NAMES:
        sys.modules.pop(name, None)
    return {name: importlib.import_module(name).__file__ or "" for name in NAMES}


def _write_table(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start: install (no table yet), import NAMES, save; then a fresh process's state."""
    module_paths.install(str(path))
    _import_all()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert module_paths.save() and path.exists()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, CachedPathFinder)]
    monkeypatch.setattr(module_paths, "active", None)


def test_a_second_start_finds_its_modules_in_the_same_files(
    tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = tmp_path / "paths.marshal"
    _write_table(table, monkeypatch)
    plain = _import_all()

    finder = module_paths.install(str(table))
    assert finder is not None and set(NAMES) <= set(finder.table)
    assert sys.meta_path.index(finder) == sys.meta_path.index(importlib.machinery.PathFinder) - 1
    assert _import_all() == plain and finder.hits == len(NAMES)
    assert importlib.import_module("mp_pkg").__path__ == [str(tree[1] / "mp_pkg")]
    module_paths.done()  # (the start is over: later imports are the path finder's, not asked of it)
    assert finder not in sys.meta_path and _import_all() == plain and finder.hits == len(NAMES)
    sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), finder)
    importlib.invalidate_caches()  # (files may have come: the path finder answers again)
    assert finder.table == {} and _import_all() == plain and finder.hits == len(NAMES)


def test_a_module_shadowing_one_in_the_table_drops_it(
    tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module made in an earlier ``sys.path`` directory changes that directory's time: the table
    is not used, and the new module is the one imported (as the path finder finds it)."""
    early, _late = tree
    table = tmp_path / "paths.marshal"
    _write_table(table, monkeypatch)
    (early / "mp_top.py").write_text("WHERE = 'early'\n")
    assert module_paths.install(str(table)) is None
    sys.modules.pop("mp_top", None)
    assert importlib.import_module("mp_top").WHERE == "early"


def test_nothing_is_written_while_a_directory_is_racy(
    tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _early, late = tree
    os.utime(late / "mp_pkg")  # (modified now: the start may not have seen the change)
    table = tmp_path / "paths.marshal"
    module_paths.install(str(table))
    _import_all()
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert not module_paths.save() and not table.exists()
    _past(late / "mp_pkg")
    monkeypatch.setattr(module_paths, "_started", time.time_ns())
    assert module_paths.save() and table.exists()


def test_off_in_the_environment(tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    table = tmp_path / "paths.marshal"
    _write_table(table, monkeypatch)
    monkeypatch.setenv(module_paths.ENV, "off")
    assert module_paths.install(str(table)) is None
    assert not any(isinstance(f, CachedPathFinder) for f in sys.meta_path)


# A server's start through the command's dispatcher (which installs the table before it imports the
# server) with the table at argv[1], stopped with SIGINT once it wrote its ports file; with argv[2]
# "write" it writes the table even where directories are newer than ``RACY`` (a fresh checkout's
# are). At exit it prints the file of every module imported and the finder's hits.
SCRIPT = """
import atexit, json, os, signal, sys, threading, time
from pyjetstream.cli import main, module_paths

table, mode, ports, *args = sys.argv[1:]
install = module_paths.install
module_paths.install = lambda path=None: install(table)
if mode == "write":
    module_paths.RACY = -1e9

def report():
    files = {n: getattr(m, "__file__", None) for n, m in sorted(sys.modules.items())}
    active = module_paths.active
    print(json.dumps([files, None if active is None else active.hits]), flush=True)

def stop():
    while not os.listdir(ports):
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGINT)

atexit.register(report)
threading.Thread(target=stop, daemon=True).start()
sys.exit(main.main(["serve", "--ports_file_dir", ports, *args]))
"""


def _serve_modules(table: Path, mode: str, tmp_path: Path, **env: str) -> tuple[dict[str, str | None], int | None]:
    ports = tmp_path / f"ports-{mode}"
    ports.mkdir()
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", module_paths.ENV)}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(table), mode, str(ports), "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", str(tmp_path / "store")],
        capture_output=True,
        text=True,
        timeout=60,
        env={**environ, **env},
    )
    assert out.returncode == 0, out.stderr
    files, hits = json.loads(out.stdout.strip().splitlines()[-1])
    return files, hits


def test_a_server_start_imports_the_same_files_with_the_table_as_without(tmp_path: Path) -> None:
    """The differential: a real start with the table finds every module (~330) in the file a start
    with ``PYJETSTREAM_MODULE_PATHS=off`` finds it in, and the table answered most of them."""
    table = tmp_path / "paths.marshal"
    _files, hits = _serve_modules(table, "write", tmp_path)
    assert hits is None and table.exists()
    cached, hits = _serve_modules(table, "use", tmp_path)
    plain, off_hits = _serve_modules(table, "off", tmp_path, **{module_paths.ENV: "off"})
    assert off_hits is None
    assert hits is not None and hits > 100, hits
    assert cached == plain and len(plain) > 250, (len(cached), len(plain))


def test_a_save_stats_each_directory_once(
    tree: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Saving the table asks each directory's time once, not once per module found in it (a start
    imports ~100 modules from a handful of directories)."""
    table = tmp_path / "paths.marshal"
    module_paths.install(str(table))
    _import_all()
    asked: list[str] = []
    real = module_paths._mtime

    def counted(path: str) -> int:
        asked.append(path)
        return real(path)

    monkeypatch.setattr(module_paths, "_mtime", counted)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    assert module_paths.save() and table.exists()
    assert asked and len(asked) == len(set(asked))
