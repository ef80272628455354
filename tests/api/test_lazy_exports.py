"""``pyjetstream.api`` loads its names on first use (``_EXPORTS``: name -> submodule): every name it
lists resolves to the object its submodule defines, and nothing is listed twice or left out."""

from __future__ import annotations

import importlib

import pyjetstream.api as api


def test_every_listed_name_comes_from_its_submodule() -> None:
    assert sorted(api.__all__) == sorted({*api._EXPORTS, *api._SUBMODULES})
    for name, module in api._EXPORTS.items():
        assert getattr(api, name) is getattr(importlib.import_module(f"pyjetstream.api.{module}"), name), name
    for name in api._SUBMODULES:
        assert getattr(api, name) is importlib.import_module(f"pyjetstream.api.{name}"), name
