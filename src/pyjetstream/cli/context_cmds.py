"""``pyjetstream context add | select | ls | info | rm``: nats CLI contexts, written as ``nats`` writes them.

A context is ``<config>/nats/context/<name>.json`` and the selected one is named in
``<config>/nats/context.txt`` (`contexts` reads them). These verbs write the same files with
the same keys and permissions as the nats CLI (jsm.go's ``natscontext``: files 0600, directory 0700,
two-space JSON), so ``nats`` and ``pyjetstream`` share their contexts both ways. As in natscontext,
the selected context cannot be removed, and selecting an unknown one is an error.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.contexts import config_dir, context_path, known_contexts, load_context, selected_context
from pyjetstream.cli.errors import CliError

__all__ = ["GROUP", "main"]

# natscontext's settings, in its field order: JSON key → the common flag it is taken from.
_SETTINGS: tuple[tuple[str, str | None], ...] = (
    ("description", None),
    ("url", "server"),
    ("socks_proxy", None),
    ("token", "token"),
    ("user", "user"),
    ("password", "password"),
    ("creds", "creds"),
    ("nkey", "nkey"),
    ("cert", "tlscert"),
    ("key", "tlskey"),
    ("ca", "tlsca"),
    ("nsc", None),
    ("jetstream_domain", "js_domain"),
    ("jetstream_api_prefix", "js_api_prefix"),
    ("jetstream_event_prefix", None),
    ("inbox_prefix", "inbox_prefix"),
    ("user_jwt", None),
    ("color_scheme", None),
    ("tls_first", None),
)
_DEFAULT_URL = "nats://127.0.0.1:4222"  # natscontext saves nats.DefaultURL when no --server is given


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by the owner only (contexts may hold passwords and tokens)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)


def _select(name: str) -> None:
    if not context_path(name).exists():
        raise CliError(f"unknown context {name!r}")
    _write_private(config_dir() / "context.txt", name)


def _configure_add(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the context's name")
    p.add_argument("--description", default="", help="a description for the context")
    p.add_argument("--select", action="store_true", help="select the context once saved")


async def cmd_add(session: Session, args: argparse.Namespace) -> int:
    """Save a context from the connection flags (an existing one is replaced, as ``nats context add``)."""
    path = context_path(args.name)
    data: dict[str, Any] = {}
    for key, flag in _SETTINGS:
        if key == "tls_first":
            data[key] = False
        elif key == "description":
            data[key] = args.description or ""
        elif flag is None:
            data[key] = ""
        else:
            data[key] = getattr(args, flag, None) or ""
    data["url"] = data["url"] or _DEFAULT_URL
    _write_private(path, json.dumps(data, indent=2))
    if args.select:
        _select(args.name)
    if session.json:
        print(json.dumps(data, indent=2))
    else:
        print(f"NATS Configuration Context {args.name!r} saved to {path}")
    return 0


def _configure_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", help="the context's name")


def _configure_optional_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", nargs="?", help="the context's name (default: the selected one)")


async def cmd_select(session: Session, args: argparse.Namespace) -> int:
    _select(args.name)
    if not session.json:
        print(f"Selected context {args.name!r}")
    return 0


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_table

    names = known_contexts()
    selected = selected_context()
    if session.json:
        print(json.dumps(names))
        return 0
    if not names:
        print("No known contexts")
        return 0
    rows = []
    for name in names:
        try:
            description = str(load_context(name).get("description") or "")
        except CliError:
            description = "(unreadable)"
        rows.append((f"{name}*" if name == selected else name, description))
    print_table("Known Contexts", ("Name", "Description"), rows)
    return 0


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_sections

    name = args.name or selected_context()
    if not name:
        raise CliError("no context is selected: name one")
    data = load_context(name)
    if session.json:
        print(json.dumps(data, indent=2))
        return 0
    shown = [(key.replace("_", " ").title(), _shown(key, data.get(key))) for key, _ in _SETTINGS]
    shown.append(("Path", str(context_path(name))))
    print_sections(f"NATS Configuration Context {name!r}", [("Settings", [(k, v) for k, v in shown if v])])
    return 0


def _shown(key: str, value: Any) -> str | None:
    if value in (None, "", False):
        return None
    if key in ("password", "token"):
        return "*********"
    return str(value)


def _configure_rm(p: argparse.ArgumentParser) -> None:
    _configure_name(p)
    p.add_argument("-f", "--force", action="store_true", help="remove without asking")


async def cmd_rm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    path = context_path(args.name)
    if selected_context() == args.name:
        raise CliError("cannot remove the current active context")
    if not path.exists():
        raise CliError(f"unknown context {args.name!r}")
    confirm(f"Really delete context {args.name!r}?", force=args.force)
    path.unlink()
    if not session.json:
        print(f"Removed context {args.name!r}")
    return 0


GROUP = Group(
    "pyjetstream context",
    "manage nats CLI contexts (shared with the nats command)",
    [
        Command("add", "save a context from the connection flags", cmd_add, _configure_add, aliases=("save", "create")),
        Command("select", "select the default context", cmd_select, _configure_name),
        Command("ls", "list the known contexts", cmd_ls, aliases=("list",)),
        Command("info", "show a context's settings", cmd_info, _configure_optional_name, aliases=("show",)),
        Command("rm", "remove a context", cmd_rm, _configure_rm, aliases=("delete",)),
    ],
)
