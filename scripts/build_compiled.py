"""Compile the hot modules with mypyc into ``src/pyjetstream/.compiled/`` (see ``pyjetstream._compiled``).

Run by ``scripts/setup.sh`` with the venv's Python (mypyc comes with mypy, in the dev extra; it
needs a C compiler and the Python headers, which the setup installs). It compiles a *copy* of the
sources in a temporary directory, so no extension module ever lands next to a ``.py`` file, then
puts the extensions and a manifest of the copied sources' SHA-256 in place in one rename. Nothing
is rebuilt while the build matches the source (``--force`` rebuilds). A failed build leaves pure
Python in use (exit status 1, the reason printed); it never breaks an installation.

    .venv/bin/python scripts/build_compiled.py [--force] [--check]
"""

from __future__ import annotations

import argparse
import importlib.machinery
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "pyjetstream"

sys.path.insert(0, str(PACKAGE.parent))
from pyjetstream import _compiled  # noqa: E402  (this checkout's copy, whatever is installed)

SETUP = """\
from setuptools import setup
from mypyc.build import mypycify

setup(
    name={group!r},
    ext_modules=mypycify({paths!r}, group_name={group!r}, opt_level="3"),
    script_args=["build_ext", "--inplace"],
)
"""


MYPY_INI = """\
[mypy]
python_version = 3.11
follow_imports = skip
ignore_missing_imports = True
"""


def build(package: Path) -> str:
    """Compile and install the build; returns what was done (raises on failure)."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    with tempfile.TemporaryDirectory(prefix="pyjetstream-mypyc-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(
            package, src / "pyjetstream", ignore=shutil.ignore_patterns("__pycache__", _compiled.BUILD_DIR, "*.so")
        )
        paths = [str(_compiled.source_path(Path("pyjetstream"), m)) for m in _compiled.MODULES]
        (src / "setup.py").write_text(SETUP.format(group=_compiled.GROUP, paths=paths))
        # The group is closed (it imports only itself and the standard library): mypy need not
        # follow the rest of the package, whose type checking is scripts/test.sh's job.
        (src / "mypy.ini").write_text(MYPY_INI)
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "setup.py"], cwd=src, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise RuntimeError(f"mypyc failed:\n{tail}")
        # What was compiled is the copy: its hashes go into the manifest.
        sources = {m: _compiled.source_digest(_compiled.source_path(src / "pyjetstream", m)) for m in _compiled.MODULES}
        staging = package / (_compiled.BUILD_DIR + ".new")
        shutil.rmtree(staging, ignore_errors=True)
        for module in _compiled.MODULES:
            rel = module.replace(".", "/") + suffix
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src / rel, staging / rel)
        group = _compiled.GROUP_MODULE + suffix
        shutil.copy2(src / group, staging / group)
        manifest = {"suffix": suffix, "python": sys.version.split()[0], "sources": sources, "stats": _stats(package, sources)}
        _write_manifest(staging / _compiled.MANIFEST, manifest)
        final = package / _compiled.BUILD_DIR
        old = package / (_compiled.BUILD_DIR + ".old")
        shutil.rmtree(old, ignore_errors=True)
        if final.exists():
            final.rename(old)  # a running process keeps its mapped copies
        staging.rename(final)
        shutil.rmtree(old, ignore_errors=True)
        return f"compiled {len(_compiled.MODULES)} modules in {time.monotonic() - started:.0f} s into {final}"


def _stats(package: Path, sources: dict[str, str]) -> dict[str, list[int]]:
    """The size and modification time of each package source that is the compiled one (hashes to
    its digest), for `_compiled.check` to accept without hashing. Not for a source modified in the
    last 2 s: a second change within the file system's timestamp tick could keep both (git's "racy"
    files), so such a source is hashed at every start instead."""
    stats: dict[str, list[int]] = {}
    recent = time.time_ns() - 2_000_000_000
    for module, digest in sources.items():
        path = _compiled.source_path(package, module)
        stat = _compiled.source_stat(path)
        if stat[1] < recent and _compiled.source_digest(path) == digest and _compiled.source_stat(path) == stat:
            stats[module] = stat
    return stats


def _refresh_stats(package: Path) -> None:
    """Record again the sources' sizes and times in an up-to-date build's manifest (a checkout
    that rewrote a file with the same content, a build made before the manifest had them)."""
    path = package / _compiled.BUILD_DIR / _compiled.MANIFEST
    manifest = json.loads(path.read_text())
    stats = _stats(package, manifest["sources"])
    if manifest.get("stats") != stats:
        manifest["stats"] = stats
        _write_manifest(path, manifest)


def _write_manifest(path: Path, manifest: dict[str, Any]) -> None:
    """Write a build's manifest (a temporary file renamed over ``path``: a start reads the old one
    or the new one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1) + "\n")
    tmp.replace(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force", action="store_true", help="rebuild even when the build matches the source")
    parser.add_argument("--check", action="store_true", help="only say whether the build matches (exit 1 if not)")
    args = parser.parse_args()
    files, why = _compiled.check(PACKAGE)
    if args.check:
        print(why)
        return 0 if files is not None else 1
    if files is not None and not args.force:
        _refresh_stats(PACKAGE)
        print(f"build_compiled: up to date ({why})")
        return 0
    try:
        print(f"build_compiled: {build(PACKAGE)}")
    except Exception as exc:  # a missing compiler, a mypyc error: pure Python stays in use
        print(f"build_compiled: no compiled modules, pure Python is used ({exc})", file=sys.stderr)
        return 1
    files, why = _compiled.check(PACKAGE)
    if files is None:
        print(f"build_compiled: the new build is not usable: {why}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
