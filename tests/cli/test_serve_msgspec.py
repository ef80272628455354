"""``pyjetstream serve`` imports msgspec with ``typing_extensions`` out of sight (`cli.main.import_msgspec`):
msgspec reads every model of the package as it does with ``typing_extensions`` importable, and the
module can be imported afterwards. Compared by the models' JSON schemas, not by time."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# Every msgspec Struct of the package's API models, and msgspec's JSON schema of them: how msgspec
# read each field's annotation. Printed last with whether typing_extensions was imported by then.
SCHEMAS = """
import importlib, json, pkgutil, sys
import msgspec
import pyjetstream.api as api
structs = set()
for info in pkgutil.iter_modules(api.__path__, "pyjetstream.api."):
    module = importlib.import_module(info.name)
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, msgspec.Struct) and value.__module__ == info.name:
            structs.add(value)
ordered = sorted(structs, key=lambda t: (t.__module__, t.__qualname__))
schemas, components = msgspec.json.schema_components(
    ordered, schema_hook=lambda t: {"x-python": repr(t)}, ref_template="#/{name}"
)
print(json.dumps({"count": len(ordered), "typing_extensions": "typing_extensions" in sys.modules,
                  "schemas": schemas, "components": components}, sort_keys=True, default=repr))
"""
HIDDEN = "from pyjetstream.cli.main import import_msgspec\nimport_msgspec()\n"


def _run(prefix: str, env: dict[str, str] | None = None) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", prefix + SCHEMAS], capture_output=True, text=True, check=True, env=env)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_msgspec_reads_every_api_model_the_same_without_typing_extensions() -> None:
    pytest.importorskip("typing_extensions")
    plain = _run("")
    hidden = _run(HIDDEN)
    assert plain["typing_extensions"] is True  # msgspec imported it: the comparison means something
    assert hidden["typing_extensions"] is False
    assert isinstance(plain["count"], int) and plain["count"] > 100
    assert hidden == {**plain, "typing_extensions": False}


def test_typing_extensions_is_importable_after_msgspec() -> None:
    pytest.importorskip("typing_extensions")
    code = HIDDEN + (
        "import sys\nassert 'msgspec' in sys.modules and 'typing_extensions' not in sys.modules\n"
        "import typing_extensions\nprint(typing_extensions.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "typing_extensions"


def test_the_switch_leaves_msgspecs_import_as_it_is() -> None:
    pytest.importorskip("typing_extensions")
    import os

    env = {**os.environ, "PYJETSTREAM_TYPING_EXTENSIONS": "on"}
    assert _run(HIDDEN, env)["typing_extensions"] is True


# After `defer_modules`: msgspec.inspect stands deferred, then each way of reaching it works and
# loads it once, after which the real module is in sys.modules and on the package.
DEFERRED = """
from pyjetstream.cli.main import defer_modules, import_msgspec
deferred = defer_modules()
import_msgspec()
import sys
import msgspec
from pyjetstream.cli.main import DeferredModule
said = [isinstance(sys.modules["msgspec.inspect"], DeferredModule), isinstance(msgspec.inspect, DeferredModule)]
import msgspec.inspect as mi
from msgspec import inspect as mi2
said.append(repr(mi.type_info(int)))
said.append(repr(mi2.type_info(str)))
said.append(type(sys.modules["msgspec.inspect"]).__name__ + " " + type(msgspec.inspect).__name__)
said.append(msgspec.inspect.IntType is mi.IntType)
print(repr(said))
"""


def test_msgspec_inspect_is_loaded_at_its_first_use() -> None:
    out = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, check=True)
    said = out.stdout.strip().splitlines()[-1]
    assert said == repr(
        [
            True,
            True,
            "IntType(gt=None, ge=None, lt=None, le=None, multiple_of=None)",
            "StrType(min_length=None, max_length=None, pattern=None)",
            "module module",
            True,
        ]
    ), said


# The standard library's deferred modules at their first uses: a traceback's source line
# (linecache, tokenize), a function's source (inspect: tokenize, token), the locale, a dedent.
STDLIB = """
import sys
from pyjetstream.cli.main import DEFERRED_MODULES, DeferredModule, defer_modules
deferred = defer_modules()
import asyncio, inspect, subprocess, traceback  # (what imports them at a server's start)
waiting = sorted(n for n in DEFERRED_MODULES if isinstance(sys.modules.get(n), DeferredModule))
def failing():
    raise ValueError("boom")
try:
    failing()
except ValueError:
    text = traceback.format_exc()
import locale, textwrap
said = [
    deferred == list(DEFERRED_MODULES),
    waiting == sorted(DEFERRED_MODULES),
    'raise ValueError("boom")' in text,
    inspect.getsource(failing).splitlines()[0],
    isinstance(locale.getlocale(), tuple),
    textwrap.dedent("  a\\n  b"),
    sorted(n for n in DEFERRED_MODULES if n != "msgspec.inspect" and isinstance(sys.modules[n], DeferredModule)),
]
print(repr(said))
"""


def test_the_standard_librarys_deferred_modules_work_at_their_first_use(tmp_path: Path) -> None:
    script = tmp_path / "first_use.py"  # (a file: the traceback and inspect read its lines)
    script.write_text(STDLIB)
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True)
    said = out.stdout.strip().splitlines()[-1]
    assert said == repr([True, True, True, "def failing():", True, "a\nb", []]), said


def test_the_switch_defers_no_module() -> None:
    import os

    code = "from pyjetstream.cli.main import defer_modules\nprint(defer_modules())"
    env = {**os.environ, "PYJETSTREAM_DEFER": "off"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"


def test_a_deferred_module_answers_a_modules_optional_names_without_loading() -> None:
    from pyjetstream.cli.main import DeferredModule

    stub = DeferredModule("pyjetstream_no_such_module")
    assert not hasattr(stub, "__file__") and not hasattr(stub, "__path__")
    assert stub.__spec__ is not None and stub.__spec__.name == "pyjetstream_no_such_module"
    with pytest.raises(ModuleNotFoundError):
        stub.__all__  # noqa: B018  # (``from ... import *`` asks for it: that loads, and there is none)
