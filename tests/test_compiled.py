"""The compiled hot modules (``pyjetstream._compiled``): used only when built from the very source,
never a stale build, and pure Python on demand. The suite itself runs on the compiled modules when
scripts/setup.sh built them, and scripts/test.sh runs a pure-Python pass (``PYJETSTREAM_PURE=1``)."""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pyjetstream
from pyjetstream import _compiled

PACKAGE = Path(pyjetstream.__file__).resolve().parent
SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def _imports(path: Path) -> set[str]:
    """The modules a source imports at run time (``if TYPE_CHECKING:`` blocks left out: the build
    type-checks without following them, so an annotation-only class is ``Any`` to the compiled code)."""
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            node.body = []
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


def test_the_compiled_group_is_closed() -> None:
    """Its modules import only each other and the standard library, so the sources' hashes in the
    manifest cover everything compiled into the group (nothing else can go stale under it)."""
    for module in _compiled.MODULES:
        for name in _imports(Path(_compiled.source_path(PACKAGE, module))):
            if name.startswith("pyjetstream"):
                assert name in _compiled.MODULES, f"{module} imports {name}, which is not compiled with it"
            else:
                assert name.split(".")[0] in sys.stdlib_module_names, f"{module} imports {name}"


def _fake_build(root: Path, sources: dict[str, str] | None = None, suffix: str = SUFFIX) -> Path:
    """A package directory holding copies of the compiled modules' sources and a build of empty
    extension files whose manifest records ``sources`` (default: the copies' hashes)."""
    package = root / "pyjetstream"
    build = package / _compiled.BUILD_DIR
    for module in _compiled.MODULES:
        target = Path(_compiled.source_path(package, module))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(_compiled.source_path(PACKAGE, module)).read_bytes())
        ext = build / (module.replace(".", "/") + SUFFIX)
        ext.parent.mkdir(parents=True, exist_ok=True)
        ext.write_bytes(b"")
    (build / (_compiled.GROUP_MODULE + SUFFIX)).write_bytes(b"")
    if sources is None:
        sources = {m: _compiled.source_digest(_compiled.source_path(package, m)) for m in _compiled.MODULES}
    (build / _compiled.MANIFEST).write_text(json.dumps({"suffix": suffix, "sources": sources}))
    return package


def test_a_build_matching_the_source_is_used(tmp_path: Path) -> None:
    files, why = _compiled.check(_fake_build(tmp_path))
    assert files is not None, why
    assert set(files) == {*_compiled.MODULES, _compiled.GROUP_MODULE}
    assert why.startswith("compiled")


def test_an_edited_source_makes_the_whole_build_unused(tmp_path: Path) -> None:
    package = _fake_build(tmp_path)
    parser = Path(_compiled.source_path(package, "pyjetstream.protocol.parser"))
    parser.write_text(parser.read_text() + "\n# edited\n")
    files, why = _compiled.check(package)
    assert files is None
    assert "pyjetstream.protocol.parser changed since it was compiled" in why


def _with_stats(package: Path) -> None:
    """Record every source's size and time in the fake build's manifest, as the build does."""
    path = package / _compiled.BUILD_DIR / _compiled.MANIFEST
    manifest = json.loads(path.read_text())
    manifest["stats"] = {m: _compiled.source_stat(_compiled.source_path(package, m)) for m in _compiled.MODULES}
    path.write_text(json.dumps(manifest))


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources `check` hashes from now on."""
    hashed: list[str] = []
    digest = _compiled.source_digest

    def counting(path: str | os.PathLike[str]) -> str:
        hashed.append(str(path))
        return digest(path)

    monkeypatch.setattr(_compiled, "source_digest", counting)
    return hashed


def test_a_source_with_the_builds_size_and_time_is_not_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The build records each source's size and modification time: a start then stats the sources
    instead of hashing them (no ``hashlib`` at a server's start); one whose time changed is hashed,
    and used when its content is the compiled one."""
    package = _fake_build(tmp_path)
    _with_stats(package)
    hashed = _hashed(monkeypatch)
    files, why = _compiled.check(package)
    assert files is not None, why
    assert hashed == []
    parser = Path(_compiled.source_path(package, "pyjetstream.protocol.parser"))
    os.utime(parser, ns=(parser.stat().st_atime_ns, parser.stat().st_mtime_ns + 10**9))  # touched, same content
    files, why = _compiled.check(package)
    assert files is not None, why
    assert hashed == [str(parser)]
    parser.write_text(parser.read_text() + "\n# edited\n")
    files, why = _compiled.check(package)
    assert files is None and "pyjetstream.protocol.parser changed since it was compiled" in why


def test_the_build_records_no_time_for_a_source_changed_in_the_last_two_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source written just now could change again within the file system's timestamp tick with the
    same size (git's racy files): the build leaves its time out, so every start hashes it. A source
    that is not the compiled one gets none either."""
    monkeypatch.setattr(sys, "path", list(sys.path))  # (the script puts its checkout's src first)
    spec = importlib.util.spec_from_file_location("build_compiled", PACKAGE.parent.parent / "scripts" / "build_compiled.py")
    assert spec is not None and spec.loader is not None
    build_compiled = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_compiled)
    package = _fake_build(tmp_path)
    sources = json.loads((package / _compiled.BUILD_DIR / _compiled.MANIFEST).read_text())["sources"]
    old = {m: Path(_compiled.source_path(package, m)) for m in _compiled.MODULES}
    for path in old.values():
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns - 10 * 10**9))
    parser = old["pyjetstream.protocol.parser"]
    parser.touch()
    events = Path(_compiled.source_path(package, "pyjetstream.protocol.events"))
    events.write_text(events.read_text() + "\n# not the compiled one\n")
    os.utime(events, ns=(events.stat().st_atime_ns, events.stat().st_mtime_ns - 10 * 10**9))
    stats = build_compiled._stats(package, sources)
    assert set(stats) == set(_compiled.MODULES) - {"pyjetstream.protocol.parser", "pyjetstream.protocol.events"}


def test_a_build_for_another_interpreter_or_module_list_is_unused(tmp_path: Path) -> None:
    files, why = _compiled.check(_fake_build(tmp_path / "a", suffix=".cpython-399-x86_64-linux-gnu.so"))
    assert files is None and "this interpreter loads" in why
    files, why = _compiled.check(_fake_build(tmp_path / "b", sources={"pyjetstream.protocol.parser": "0" * 64}))
    assert files is None and "other modules" in why


def test_an_incomplete_or_missing_build_is_unused(tmp_path: Path) -> None:
    package = _fake_build(tmp_path)
    (package / _compiled.BUILD_DIR / (_compiled.GROUP_MODULE + SUFFIX)).unlink()
    files, why = _compiled.check(package)
    assert files is None and "lacks" in why
    files, why = _compiled.check(tmp_path / "nothing")
    assert files is None and "no compiled build" in why


def test_a_build_that_does_not_load_leaves_pure_python(tmp_path: Path) -> None:
    """The hashes match but the library is damaged (here: empty files): loading it fails cleanly."""
    files, why = _compiled.check(_fake_build(tmp_path))
    assert files is not None, why
    error = _compiled.load_group(files)
    assert error is not None and "ImportError" in error
    assert _compiled.GROUP_MODULE not in sys.modules or _compiled.active


def _loaded_from(env: dict[str, str]) -> list[str]:
    code = (
        "from pyjetstream import _compiled\n"
        "import pyjetstream.protocol.parser as p, pyjetstream.protocol.events as e\n"
        "print(_compiled.status); print(p.__file__); print(e.__file__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    return out.splitlines()


def test_pure_python_is_forced_by_the_environment() -> None:
    env = {**os.environ, _compiled.PURE_ENV: "1"}
    status, parser, events = _loaded_from(env)
    assert status == "pure Python: PYJETSTREAM_PURE is set"
    assert parser.endswith("parser.py") and events.endswith("events.py")


def test_this_checkout_runs_compiled_when_its_build_matches() -> None:
    """With a current build and no PYJETSTREAM_PURE, this process and the servers it starts use
    the compiled modules; else pure Python (this test then says why)."""
    import pyjetstream.protocol.parser  # noqa: F401  (the first import decides)

    files, _ = _compiled.check(PACKAGE)
    pure = os.environ.get(_compiled.PURE_ENV, "") not in ("", "0")
    if files is None or pure:
        assert not _compiled.active
        pytest.skip(_compiled.status)
    assert _compiled.active, _compiled.status
    env = {k: v for k, v in os.environ.items() if k != _compiled.PURE_ENV}
    status, parser, events = _loaded_from(env)
    assert status.startswith("compiled"), status
    build = str(PACKAGE / _compiled.BUILD_DIR)
    assert parser.startswith(build) and parser.endswith(SUFFIX)
    assert events.startswith(build) and events.endswith(SUFFIX)
