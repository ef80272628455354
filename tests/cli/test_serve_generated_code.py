"""``pyjetstream serve`` keeps the methods ``@dataclass`` generates compiled across starts
(`pyjetstream.cli.generated_code`): a second start compiles none of them, and a class made from
the cache is the class ``dataclasses`` makes. Counted in texts compiled, not in time."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pyjetstream.cli import generated_code
from pyjetstream.cli.generated_code import GeneratedCode

CLASSES = """
from dataclasses import dataclass, field

@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 2
    tags: tuple[str, ...] = field(default_factory=tuple)

@dataclass(order=True)
class Named:
    name: str
    size: int = 0
"""


@pytest.fixture
def uninstalled(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # (PYTHONDONTWRITEBYTECODE may be set)
    yield
    GeneratedCode.uninstall()


def _define(cache: GeneratedCode | None) -> dict[str, Any]:
    """CLASSES made in a new module, with ``cache`` installed (None: dataclasses' own exec)."""
    module = types.ModuleType("generated_code_classes")
    sys.modules[module.__name__] = module  # (dataclasses looks the class's module up)
    if cache is not None:
        cache.install()
    try:
        exec(CLASSES, module.__dict__)
        return module.__dict__
    finally:
        GeneratedCode.uninstall()
        del sys.modules[module.__name__]


def test_a_second_process_compiles_nothing_and_gets_the_same_classes(tmp_path: Path, uninstalled: None) -> None:
    path = tmp_path / "cache.marshal"
    first = GeneratedCode(path)
    made = _define(first)
    assert first.compiled > 0 and first.hits == 0
    assert first.save() and not first.save()  # (nothing new the second time)

    second = GeneratedCode(path)
    again = _define(second)
    assert second.compiled == 0 and second.hits == first.compiled
    plain = _define(None)
    for ns in (made, again, plain):
        point, named = ns["Point"], ns["Named"]
        assert repr(point(1)) == "Point(x=1, y=2, tags=())"
        assert point(1, 3) == point(1, 3) and hash(point(1, 3)) == hash(point(1, 3))
        with pytest.raises(dataclasses.FrozenInstanceError):
            point(1).x = 5
        assert named("a") < named("b", 1)
        assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags"]


def _forward_refs(cache: GeneratedCode) -> list[Any]:
    """Resolve string annotations as msgspec does (``typing.ForwardRef``), with ``cache`` installed."""
    cache.install()
    try:
        refs = [typing.ForwardRef("list[int]"), typing.ForwardRef("dict[str, Path] | None")]
        return [typing._eval_type(ref, {"Path": Path}, None) for ref in refs]  # type: ignore[attr-defined]
    finally:
        GeneratedCode.uninstall()


def test_forward_references_are_compiled_once(tmp_path: Path, uninstalled: None) -> None:
    path = tmp_path / "cache.marshal"
    first = GeneratedCode(path)
    resolved = _forward_refs(first)
    assert first.compiled == 2 and first.hits == 0 and first.save()
    second = GeneratedCode(path)
    assert _forward_refs(second) == resolved == [list[int], dict[str, Path] | None]
    assert second.compiled == 0 and second.hits == 2
    assert "compile" not in vars(typing)  # (uninstalled: the builtin again)
    second.install()
    try:
        with pytest.raises(SyntaxError):  # (as without the cache)
            typing.ForwardRef("not valid(")
    finally:
        GeneratedCode.uninstall()


PATTERNS = [(r"(?P<name>[a-z]+)-(\d+)?", re.IGNORECASE), (r"^\s*#.*$", re.MULTILINE), (rb"(a)|(?P<b>b+)", 0)]


def _compile_patterns(cache: GeneratedCode) -> list[re.Pattern[Any]]:
    cache.install()
    try:
        re.purge()  # (the re module's own cache would answer first)
        return [re.compile(p, f) for p, f in PATTERNS]
    finally:
        GeneratedCode.uninstall()
        re.purge()


def test_regular_expressions_are_compiled_once(tmp_path: Path, uninstalled: None) -> None:
    path = tmp_path / "cache.marshal"
    first = GeneratedCode(path)
    made = _compile_patterns(first)
    assert first.patterns_compiled == 3 and first.pattern_hits == 0 and first.save()
    second = GeneratedCode(path)
    again = _compile_patterns(second)
    assert second.patterns_compiled == 0 and second.pattern_hits == 3
    plain = [re.compile(p, f) for p, f in PATTERNS]  # (uninstalled: the re module's own compiler)
    for a, b, c in zip(made, again, plain, strict=True):
        assert a == b == c
        assert (a.groups, a.groupindex, a.flags) == (b.groups, b.groupindex, b.flags) == (c.groups, c.groupindex, c.flags)
    assert again[0].fullmatch("AB-12").groupdict() == {"name": "AB"}  # type: ignore[union-attr]
    assert again[1].findall("x\n  # one\n#two") == ["  # one", "#two"]
    assert again[2].fullmatch(b"bb").group("b") == b"bb"  # type: ignore[union-attr]


def test_generated_methods_and_named_tuples_are_the_plain_ones(tmp_path: Path, uninstalled: None) -> None:
    """Compiled here, a text does not take this module's ``from __future__ import annotations``:
    ``__init__``'s annotations are the objects, as dataclasses' own ``exec`` makes them."""
    path = tmp_path / "cache.marshal"
    for _ in range(2):  # (compiled, then from the file)
        cache = GeneratedCode(path)
        made = _define(cache)
        cache.install()
        try:
            pair = collections.namedtuple("pair", "a b")
        finally:
            GeneratedCode.uninstall()
        assert cache.save() or cache.compiled == 0
        plain = _define(None)
        assert made["Point"].__init__.__annotations__ == plain["Point"].__init__.__annotations__
        assert pair(1, b=2) == (1, 2) and pair._fields == ("a", "b")
    assert cache.compiled == 0 and cache.hits > 0


def test_entries_are_unmarshalled_at_their_first_hit(tmp_path: Path, uninstalled: None) -> None:
    """A read file's entries stay marshalled bytes until hit: a start unmarshals only the texts and
    patterns it uses; a later write keeps the others as they were, and a damaged entry is a miss."""
    path = tmp_path / "cache.marshal"
    first = GeneratedCode(path)
    _define(first)
    _forward_refs(first)
    _compile_patterns(first)
    assert first.save()

    second = GeneratedCode(path)
    assert second.codes and all(isinstance(v, bytes) for v in second.codes.values())
    assert len(second.patterns) == 3 and all(isinstance(v, bytes) for v in second.patterns.values())
    _forward_refs(second)
    assert second.hits == 2 and second.compiled == 0
    hit = {k for k, v in second.codes.items() if not isinstance(v, bytes)}
    assert hit == {k for k in second.codes if k.startswith(generated_code._EVAL)}  # (only the forward references)
    assert not any(isinstance(v, tuple) for v in second.patterns.values())
    second.codes[next(iter(set(second.codes) - hit))] = b"\x00 not marshalled"  # (a damaged entry)
    made = _define(second)
    assert second.compiled == 1 and repr(made["Point"](1)) == "Point(x=1, y=2, tags=())"
    assert second.save()

    third = GeneratedCode(path)
    assert set(third.codes) == set(second.codes) and len(third.patterns) == 3
    _define(third)
    _forward_refs(third)
    assert _compile_patterns(third) == _compile_patterns(GeneratedCode(None))
    assert third.compiled == 0 and third.patterns_compiled == 0 and third.pattern_hits == 3


def test_a_foreign_or_broken_file_is_a_miss(tmp_path: Path, uninstalled: None) -> None:
    path = tmp_path / "cache.marshal"
    for content in (b"", b"garbage", generated_code._HEADER + b"\x00\x01"):
        path.write_bytes(content)
        cache = GeneratedCode(path)
        assert cache.codes == {}
        assert "Point" in _define(cache) and cache.compiled > 0


def test_not_written_without_bytecode_writing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uninstalled: None
) -> None:
    path = tmp_path / "cache.marshal"
    cache = GeneratedCode(path)
    _define(cache)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert not cache.save() and not path.exists()


def test_the_file_keeps_only_used_texts_past_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uninstalled: None
) -> None:
    path = tmp_path / "cache.marshal"
    monkeypatch.setattr(generated_code, "MAX_ENTRIES", 1)
    cache = GeneratedCode(path)
    cache.codes["def old(): pass"] = compile("def old(): pass", "<string>", "exec")
    _define(cache)
    assert cache.save()
    assert "def old(): pass" not in GeneratedCode(path).codes


# `pyjetstream serve` through the command's own dispatcher (which installs the cache before the
# server is imported), stopped with SIGTERM once it wrote its ports file; at exit it prints what the
# cache did: the texts found and those compiled.
SCRIPT = """
import atexit, json, os, signal, sys, threading, time
from pathlib import Path
from pyjetstream.cli import generated_code, main

def report():
    cache = generated_code.active
    print(json.dumps(None if cache is None else [cache.hits, cache.compiled]), flush=True)

def stop_when_ready(ports):
    deadline = time.monotonic() + 60
    while not list(ports.glob("*.ports")) and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(os.getpid(), signal.SIGTERM)

atexit.register(report)
ports = Path(sys.argv[1])
threading.Thread(target=stop_when_ready, args=(ports,), daemon=True).start()
sys.exit(main.main(["serve", "--ports_file_dir", str(ports), *sys.argv[2:]]))
"""


def _serve(tmp_path: Path, env: dict[str, str]) -> list[int] | None:
    conf = tmp_path / "server.conf"
    conf.write_text(f'port: -1\njetstream {{\n  store_dir: "{tmp_path / "store"}"\n}}\n')
    ports = tmp_path / "ports"
    ports.mkdir(exist_ok=True)
    for old in ports.glob("*.ports"):
        old.unlink()
    prefix = tmp_path / "pycache"  # (this test's cache only: the package's __pycache__ is left alone)
    out = subprocess.run(
        [sys.executable, "-X", f"pycache_prefix={prefix}", "-c", SCRIPT, str(ports), "-c", str(conf), "-a", "127.0.0.1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    result: list[int] | None = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_a_second_start_compiles_no_generated_method(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", generated_code.ENV)}
    first = _serve(tmp_path, env)
    assert first is not None
    hits, compiled = first
    assert compiled > 40, first  # (each of the start's dataclasses compiles several methods)
    second = _serve(tmp_path, env)
    # (nothing compiled; found at most what the first start used: a first start into a new store
    # directory evaluates a little more, shutil's named tuple)
    assert second is not None and second[1] == 0, (first, second)
    assert hits + compiled - 5 <= second[0] <= hits + compiled, (first, second)
    assert _serve(tmp_path, {**env, generated_code.ENV: "off"}) is None
