"""Every verb of the CLI, walked from the parsers themselves: for the generated CLI reference
(``scripts/cli_reference.py`` → ``docs/cli-reference.md``) and the tests that must cover each
verb (global flags before and after every one of them).

Importing this module imports every command module: it is for tools and tests, not for the
``pyjetstream`` command's start-up.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass

from pyjetstream.cli.app import Command, Group
from pyjetstream.cli.main import SUBCOMMANDS

__all__ = ["Verb", "top_level", "verbs"]


@dataclass(frozen=True)
class Verb:
    """One runnable command line prefix: ``("stream", "add")`` and its `Command`."""

    path: tuple[str, ...]
    command: Command
    aliases: tuple[str, ...]


def top_level() -> Iterator[tuple[str, str, Command | Group | None, tuple[str, ...]]]:
    """``(name, help, GROUP or COMMAND or None for serve, aliases)`` for each subcommand, aliases
    (``object`` for ``obj``) folded into their first name."""
    seen: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}
    for name, (module, _) in SUBCOMMANDS.items():
        if module in seen:
            aliases[seen[module]].append(name)
        else:
            seen[module] = name
            aliases[name] = []
    for module, name in seen.items():
        mod = importlib.import_module(module)
        entry = getattr(mod, "GROUP", None) or getattr(mod, "COMMAND", None)
        yield name, SUBCOMMANDS[name][1], entry, tuple(aliases[name])


def verbs() -> Iterator[Verb]:
    """Every leaf command under every subcommand, depth first, in the order the groups list them
    (``serve``, which takes nats-server's flags rather than a parser of ours, is not one)."""
    for name, _, entry, aliases in top_level():
        if isinstance(entry, Command):
            yield Verb((name,), entry, aliases)
        elif isinstance(entry, Group):
            yield from _walk(entry, (name,))


def _walk(group: Group, path: tuple[str, ...]) -> Iterator[Verb]:
    for entry in group.commands:
        if isinstance(entry, Group):
            yield from _walk(entry, (*path, entry.name))
        else:
            yield Verb((*path, entry.name), entry, entry.aliases)
