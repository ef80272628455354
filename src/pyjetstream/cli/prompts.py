"""Interactive questions, asked only when a person is at a terminal.

As the nats CLI: a missing required value (a stream name, its subjects …) is asked for when
stdin and stdout are terminals; in scripts (or with ``--defaults``) the command fails with a
clear message instead of hanging. Destructive commands ask for confirmation unless ``--force``.
"""

from __future__ import annotations

import sys

from pyjetstream.cli.errors import UsageError

__all__ = ["ask", "confirm", "interactive"]


def interactive() -> bool:
    try:
        return sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def ask(question: str, *, flag: str, default: str | None = None, required: bool = True) -> str:
    """The answer to ``question`` (``default`` on an empty answer); without a terminal, fail naming ``flag``."""
    if not interactive():
        if default is not None:
            return default
        raise UsageError(f"{flag} is required (no terminal to ask on)")
    suffix = f" [{default}]" if default else ""
    while True:
        try:
            answer = _input(f"? {question}{suffix}: ").strip()
        except EOFError:
            raise UsageError(f"{flag} is required") from None
        if answer:
            return answer
        if default is not None:
            return default
        if not required:
            return ""
        print(f"  {question} is required", file=sys.stderr)


def confirm(question: str, *, force: bool) -> None:
    """Proceed when ``force`` or the user answers yes; raise otherwise (and without a terminal)."""
    if force:
        return
    if not interactive():
        raise UsageError(f"{question.rstrip('?')}: refusing without confirmation (use --force)")
    try:
        answer = _input(f"? {question} (y/N) ").strip().lower()
    except EOFError:
        answer = ""
    if answer not in ("y", "yes"):
        raise UsageError("cancelled")


def _input(prompt: str) -> str:
    """Questions go to stderr, so stdout stays clean for --json."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return input()
