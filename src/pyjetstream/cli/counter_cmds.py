"""``pyjetstream counter incr | get | view | ls``: distributed counters (2.12+), as ``nats counter``.

A counter is a subject of a stream with ``allow_msg_counter`` (and ``allow_direct`` for reading):
``incr`` publishes a ``Nats-Incr`` delta and prints the new total the PubAck carries, ``get`` prints
a total, ``view`` shows the last increment and, for a counter that sources others, the totals per
source, ``ls`` lists the subjects that hold counters. The stream is found from the subject unless
``--stream`` names it (natscli's ``counter_command.go``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


async def _counter(session: Session, args: argparse.Namespace) -> Any:
    js = await session.jetstream()
    name = args.stream or await js.stream_name_by_subject(args.subject or ">")
    stream = await js.stream(name)
    cfg = stream.cached_info().config
    if not (cfg.allow_msg_counter and cfg.allow_direct):
        raise CliError(f"{name!r} is not a valid counter stream (needs allow_msg_counter and allow_direct)")
    return await js.counter(name)


def _subject(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", help="the counter's subject")
    p.add_argument("--stream", help="the counter stream (default: the stream holding the subject)")


def _incr_arguments(p: argparse.ArgumentParser) -> None:
    _subject(p)
    p.add_argument("value", nargs="?", default="1", help="the increment, negative to decrement (default 1)")


async def cmd_incr(session: Session, args: argparse.Namespace) -> int:
    try:
        value = int(args.value)
    except ValueError:
        raise UsageError(f"invalid value {args.value!r}: a whole number such as 5 or -2") from None
    total = await (await _counter(session, args)).add(args.subject, value)
    print(total)
    return 0


async def cmd_get(session: Session, args: argparse.Namespace) -> int:
    print(await (await _counter(session, args)).load(args.subject))
    return 0


async def cmd_view(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json, print_sections

    entry = await (await _counter(session, args)).get(args.subject)
    if session.json:
        print_json(
            {
                "subject": entry.subject,
                "value": str(entry.value),
                "increment": str(entry.increment),
                "sources": {s: {k: str(v) for k, v in subj.items()} for s, subj in entry.sources.items()},
            }
        )
        return 0
    sections: list[tuple[str, list[tuple[str, Any]]]] = [
        ("Counter", [("Value", entry.value), ("Increment", entry.increment), ("Subject", entry.subject)])
    ]
    for source, totals in sorted(entry.sources.items()):
        sections.append((f"Source {source}", [(subject, total) for subject, total in sorted(totals.items())]))
    print_sections(f"Counter {args.subject}", sections)
    if not entry.sources:
        print("No source information found")
    return 0


def _ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", nargs="?", help="a subject pattern (default: every subject of --stream)")
    p.add_argument("--stream", help="the counter stream")


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json

    if not args.stream and not args.subject:
        raise UsageError("no stream or subject specified")
    counter = await _counter(session, args)
    info = await counter.stream.info(subject_filter=args.subject or ">")
    subjects = sorted(info.state.subjects or {})
    if not subjects:
        raise CliError("no counters found")
    if session.json:
        print_json(subjects)
    else:
        print("\n".join(subjects))
    return 0


GROUP = Group(
    "pyjetstream counter",
    "distributed counters on streams with allow_msg_counter (2.12+)",
    [
        Command("incr", "add to a counter and print the new total", cmd_incr, _incr_arguments, aliases=("increment", "i")),
        Command("get", "print a counter's total", cmd_get, _subject, aliases=("g",)),
        Command("view", "show a counter's value, last increment and sources", cmd_view, _subject, aliases=("v",)),
        Command("ls", "list the counters of a stream", cmd_ls, _ls_arguments, aliases=("list", "l")),
    ],
)
