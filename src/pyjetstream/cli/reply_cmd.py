"""``pyjetstream reply SUBJECT [BODY]``: answer requests, as ``nats reply``.

Responders join queue group ``NATS-RPLY-22`` (the nats CLI's default) so several share the
load. The reply is BODY (a template: ``{{Request}}`` is the request body, ``{{Count}}`` the
request number), the request itself with ``--echo``, or the output of ``--command`` run with
the request body on stdin. ``Listening on …`` goes to stderr once the subscription is live.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Session, run_command
from pyjetstream.cli.errors import UsageError

__all__ = ["DEFAULT_QUEUE", "main"]

DEFAULT_QUEUE = "NATS-RPLY-22"


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", help="subject to listen on (wildcards allowed)")
    p.add_argument("body", nargs="?", default="", help="reply body (a template; {{Request}} is the request)")
    p.add_argument("-H", "--header", action="append", metavar="NAME:VALUE", help="add a header to replies")
    p.add_argument("--queue", default=DEFAULT_QUEUE, help=f"queue group (default {DEFAULT_QUEUE})")
    p.add_argument("--echo", action="store_true", help="reply with the request's body and headers")
    p.add_argument(
        "--command", metavar="CMD", help="reply with the output of this shell command (request on stdin)"
    )
    p.add_argument("--count", type=int, default=0, help="stop after this many requests")
    p.add_argument("--sleep", metavar="DUR", help="wait this long before replying")
    p.add_argument("--no-templates", action="store_true", help="send the body as written")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print requests")


def main(argv: Sequence[str]) -> int:
    return run_command(COMMAND, "pyjetstream reply", argv)


async def cmd_reply(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import Template, header_templates, headers_of, message_json, render_headers
    from pyjetstream.cli.output import print_json_line
    from pyjetstream.cli.values import parse_duration, parse_headers

    if args.count < 0:
        raise UsageError("--count must not be negative")
    if args.echo and args.command:
        raise UsageError("--echo and --command cannot be combined")
    templates = not args.no_templates
    body = Template(args.body, enabled=templates, allow_request=True)
    hdr_templates = header_templates(parse_headers(args.header), enabled=templates)
    pause = parse_duration(args.sleep, what="--sleep") / 1e9 if args.sleep else 0.0
    client = await session.connect()
    sub = await client.subscribe(args.subject, queue=args.queue or "")
    await client.flush(session.timeout)
    group = f" in group {args.queue}" if args.queue else ""
    print(f"{time.strftime('%H:%M:%S')} Listening on {args.subject}{group}", file=sys.stderr, flush=True)

    handled = 0
    async for msg in sub.messages:
        if not msg.reply:
            continue  # a plain publish, not a request: nothing to answer
        handled += 1
        headers = headers_of(msg)
        if session.json:
            print_json_line(message_json(msg.subject, msg.data, headers, msg.reply, count=handled))
        elif not args.quiet:
            print(
                f'{time.strftime("%H:%M:%S")} [#{handled}] Received on subject "{msg.subject}":', flush=True
            )
            if headers:
                for name, values in headers.items():
                    for value in values:
                        print(f"{name}: {value}")
            print(msg.data.decode("utf-8", "replace") + "\n", flush=True)
        if pause:
            await asyncio.sleep(pause)
        if args.echo:
            data, reply_headers = msg.data, headers
        elif args.command:
            data, reply_headers = (
                await _run_command(args.command, msg.data),
                render_headers(hdr_templates, handled),
            )
        else:
            data = body.render(handled, msg.data).encode("utf-8", "surrogateescape")
            reply_headers = render_headers(hdr_templates, handled, msg.data)
        await client.publish(msg.reply, data, headers=reply_headers)
        if args.count and handled >= args.count:
            break
    await client.flush(session.timeout)
    return 0


async def _run_command(command: str, request: bytes) -> Any:
    proc = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await proc.communicate(request)
    return out


COMMAND = Command("reply", "answer requests on a subject", cmd_reply, _arguments)
