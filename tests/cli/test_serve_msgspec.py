"""``pyjetstream serve`` imports msgspec with ``typing_extensions`` out of sight (`cli.main.import_msgspec`):
msgspec reads every model of the package as it does with ``typing_extensions`` importable, and the
module can be imported afterwards. Compared by the models' JSON schemas, not by time."""

from __future__ import annotations

import json
import subprocess
import sys

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
