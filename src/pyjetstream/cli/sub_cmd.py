"""``pyjetstream sub SUBJECT``: print messages as they arrive, as ``nats sub``.

Wildcards (``*``, ``>``) and queue groups work as in NATS. ``Subscribing on …`` goes to stderr
once the server has the subscription, so stdout carries only messages (``--raw``: bodies only;
``--json``: one JSON object per line). ``--count`` stops after that many messages, ``--wait``
after that long.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence

from pyjetstream.cli.app import Command, Session, run_command
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["main"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", nargs="?", help="subject to subscribe to (wildcards allowed)")
    p.add_argument("--queue", metavar="GROUP", help="join this queue group")
    p.add_argument("--inbox", action="store_true", help="subscribe to a new unique inbox subject")
    p.add_argument("--raw", action="store_true", help="print only message bodies")
    p.add_argument("--headers-only", action="store_true", help="print headers but not bodies")
    p.add_argument("--count", type=int, default=0, help="stop after this many messages")
    p.add_argument("--wait", metavar="DUR", help="stop after this long (an error if --count is not reached)")


def main(argv: Sequence[str]) -> int:
    return run_command(COMMAND, "pyjetstream sub", argv)


async def cmd_sub(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of, message_json, print_message
    from pyjetstream.cli.output import print_json_line
    from pyjetstream.cli.values import parse_duration_seconds

    if args.count < 0:
        raise UsageError("--count must not be negative")
    if not args.subject and not args.inbox:
        raise UsageError("a subject (or --inbox) is required")
    wait = parse_duration_seconds(args.wait, what="--wait") if args.wait else None
    client = await session.connect()
    subject = client.new_inbox() if args.inbox else args.subject
    sub = await client.subscribe(subject, queue=args.queue or "", max_msgs=args.count)
    await client.flush(session.timeout)
    queue = f" in queue group {args.queue}" if args.queue else ""
    print(f"{time.strftime('%H:%M:%S')} Subscribing on {subject}{queue}", file=sys.stderr, flush=True)

    received = 0

    async def consume() -> None:
        nonlocal received
        async for msg in sub.messages:
            received += 1
            headers = headers_of(msg)
            if session.json:
                print_json_line(message_json(msg.subject, msg.data, headers, msg.reply))
            else:
                reply = f' with reply "{msg.reply}"' if msg.reply else ""
                title = f'[#{received}] Received on "{msg.subject}"{reply}'
                print_message(title, msg.data, headers, raw=args.raw, headers_only=args.headers_only)
            if args.count and received >= args.count:
                return

    try:
        await asyncio.wait_for(consume(), wait)
    except TimeoutError:
        if args.count and received < args.count:
            raise CliError(
                f"timeout: received {received} of {args.count} messages within {args.wait}"
            ) from None
    return 0


COMMAND = Command("sub", "subscribe to a subject and print messages", cmd_sub, _arguments)
