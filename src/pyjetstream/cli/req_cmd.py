"""``pyjetstream req SUBJECT [BODY]``: send requests and print replies, as ``nats request``.

``--count`` sends that many requests (``{{Count}}`` in the body numbers them); ``--replies``
waits for several replies to each request (scatter-gather) until ``--timeout``. No responders
is an error (exit 1), as is a request nobody answers in time.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Session, run_command
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["main"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", help="subject to send the request to")
    p.add_argument("body", nargs="?", help="request body (default: stdin when it is not a terminal)")
    p.add_argument("-H", "--header", action="append", metavar="NAME:VALUE", help="add a header (repeatable)")
    p.add_argument("--count", type=int, default=1, help="send this many requests (default 1)")
    p.add_argument(
        "--replies", type=int, default=1, help="wait for this many replies per request (0: all until timeout)"
    )
    p.add_argument("--raw", action="store_true", help="print only reply bodies")
    p.add_argument("--no-templates", action="store_true", help="send bodies and headers as written")
    p.add_argument("--force-stdin", action="store_true", help="read the body from stdin even on a terminal")


def main(argv: Sequence[str]) -> int:
    return run_command(COMMAND, "pyjetstream req", argv)


async def cmd_req(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import Template, header_templates, render_headers
    from pyjetstream.cli.pub_cmd import read_body
    from pyjetstream.cli.values import parse_headers

    if args.count < 1:
        raise UsageError("--count must be at least 1")
    if args.replies < 0:
        raise UsageError("--replies must not be negative")
    templates = not args.no_templates
    body = Template(
        read_body(args.body, args.force_stdin).decode("utf-8", "surrogateescape"), enabled=templates
    )
    hdr_templates = header_templates(parse_headers(args.header), enabled=templates)
    client = await session.connect()
    results: list[dict[str, Any]] = []
    for n in range(1, args.count + 1):
        data = body.render(n).encode("utf-8", "surrogateescape")
        headers = render_headers(hdr_templates, n)
        start = time.perf_counter()
        if args.replies == 1:
            replies = [await client.request(args.subject, data, timeout=session.timeout, headers=headers)]
        else:
            replies = await _gather(client, args.subject, data, headers, args.replies, session.timeout)
        elapsed = time.perf_counter() - start
        for reply in replies:
            _show(session, args, reply, elapsed, results)
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json(results[0] if len(results) == 1 and args.count == 1 and args.replies == 1 else results)
    return 0


async def _gather(
    client: Any, subject: str, data: bytes, headers: Any, want: int, timeout: float
) -> list[Any]:
    """Publish with a private inbox and collect up to ``want`` replies (0: all) within ``timeout``."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client import NoRespondersError

    inbox = client.new_inbox()
    sub = await client.subscribe(inbox, max_msgs=want)
    replies: list[Any] = []
    try:
        await client.publish(subject, data, reply=inbox, headers=headers)

        async def collect() -> None:
            async for msg in sub.messages:
                if msg.is_no_responders():
                    raise NoRespondersError(f"no responders on {subject!r}")
                replies.append(msg)
                if want and len(replies) >= want:
                    return

        try:
            await asyncio.wait_for(collect(), timeout)
        except TimeoutError:
            if not replies:
                raise CliError(f"timeout: no reply to request on {subject!r} within {timeout:g}s") from None
    finally:
        if not sub.is_closed:
            await sub.unsubscribe()
    return replies


def _show(session: Session, args: argparse.Namespace, reply: Any, elapsed: float, results: list[Any]) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of, message_json, print_message

    headers = headers_of(reply)
    if session.json:
        results.append(message_json(reply.subject, reply.data, headers, rtt_ms=round(elapsed * 1000, 3)))
        return
    title = f"Received with rtt {elapsed * 1000:.3f}ms"
    print_message(title, reply.data, headers, raw=args.raw)


COMMAND = Command("req", "send a request and wait for the reply", cmd_req, _arguments)
