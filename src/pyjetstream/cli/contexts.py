"""nats CLI contexts: named connection settings shared with the ``nats`` command.

A context is ``$XDG_CONFIG_HOME/nats/context/<name>.json`` (default ``~/.config/nats``) with keys
such as ``url``, ``user``, ``password``, ``token``, ``creds``, ``nkey``, ``cert``, ``key``, ``ca``,
``inbox_prefix``, ``jetstream_domain``; the selected one is named in ``nats/context.txt``. We
read them here and write them in `context_cmds` (as ``nats context add`` does); contexts are optional: without any, the flags,
``NATS_URL`` and friends, or the default URL apply.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from pyjetstream.cli.errors import CliError

__all__ = ["config_dir", "context_path", "known_contexts", "load_context", "selected_context"]

_NAME = re.compile(r"^[\w.\-]+$")


def config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "nats"


def context_path(name: str) -> Path:
    """Where context ``name`` lives; an invalid name (a path, ``..``) is an error."""
    if not _NAME.match(name):
        raise CliError(f"invalid context name {name!r}")
    return config_dir() / "context" / f"{name}.json"


def known_contexts() -> list[str]:
    """The names of the saved contexts, sorted (empty files are skipped, as natscontext does)."""
    folder = config_dir() / "context"
    try:
        files = [f for f in folder.iterdir() if f.suffix == ".json" and f.is_file() and f.stat().st_size]
    except OSError:
        return []
    return sorted(f.stem for f in files)


def selected_context() -> str:
    try:
        return (config_dir() / "context.txt").read_text().strip()
    except OSError:
        return ""


def load_context(name: str | None) -> dict[str, Any]:
    """The settings of context ``name`` (or the selected one); ``{}`` when none is selected.

    Naming a context that does not exist is an error; a selected one that vanished is ignored.
    """
    explicit = bool(name)
    name = name or selected_context()
    if not name:
        return {}
    path = context_path(name)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        if explicit:
            raise CliError(f"unknown context {name!r} (no {path})") from None
        return {}
    except (OSError, ValueError) as exc:
        raise CliError(f"could not read context {name!r} from {path}: {exc}") from None
    if not isinstance(data, dict):
        raise CliError(f"context file {path} is not a JSON object")
    return data
