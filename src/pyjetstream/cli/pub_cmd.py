"""``pyjetstream pub SUBJECT [BODY]``: publish one or many messages, as ``nats pub``.

The body is the argument, or stdin when it is omitted and stdin is not a terminal (or with
``--force-stdin``). Bodies and header values are templates (``{{Count}}``, ``{{ID}}`` …, see
`msgfmt`). ``-J/--jetstream`` publishes to a stream and waits for each PubAck.
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

__all__ = ["main", "read_body"]


def read_body(body: str | None, force_stdin: bool) -> bytes:
    if body is not None and not force_stdin:
        return body.encode()
    if force_stdin or not sys.stdin.isatty():
        return sys.stdin.buffer.read()
    return b""


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subject", help="subject to publish to")
    p.add_argument("body", nargs="?", help="message body (default: stdin when it is not a terminal)")
    p.add_argument("-H", "--header", action="append", metavar="NAME:VALUE", help="add a header (repeatable)")
    p.add_argument("--reply", metavar="SUBJECT", help="reply subject to send with the message")
    p.add_argument("--count", type=int, default=1, help="publish this many messages (default 1)")
    p.add_argument("--sleep", metavar="DUR", help="wait this long between messages")
    p.add_argument("--no-templates", action="store_true", help="send bodies and headers as written")
    p.add_argument("--force-stdin", action="store_true", help="read the body from stdin even on a terminal")
    p.add_argument("-J", "--jetstream", action="store_true", help="publish to JetStream and wait for acks")
    p.add_argument("--msg-id", metavar="ID", help="JetStream deduplication id (Nats-Msg-Id; a template)")
    p.add_argument("--expect-stream", metavar="STREAM", help="JetStream: fail unless this stream stores it")
    p.add_argument(
        "--expect-last-seq", type=int, metavar="SEQ", help="JetStream: expected last stream sequence"
    )
    p.add_argument(
        "--send-on",
        choices=["eof", "newline"],
        default="eof",
        help="stdin: send one message at EOF (default) or one per line",
    )
    p.add_argument(
        "--atomic", action="store_true", help="JetStream: publish every message as one atomic batch (2.12+)"
    )
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")


def main(argv: Sequence[str]) -> int:
    return run_command(COMMAND, "pyjetstream pub", argv)


async def cmd_pub(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import Template, header_templates, render_headers
    from pyjetstream.cli.values import parse_duration, parse_headers

    if args.count < 1:
        raise UsageError("--count must be at least 1")
    if (args.msg_id or args.expect_stream or args.expect_last_seq) and not args.jetstream:
        raise UsageError("--msg-id, --expect-stream and --expect-last-seq need -J/--jetstream")
    if args.atomic:
        args.jetstream = True
    templates = not args.no_templates
    raw = read_body(args.body, args.force_stdin)
    if args.send_on == "newline" and (args.body is None or args.force_stdin):
        lines = [line for line in raw.decode("utf-8", "surrogateescape").splitlines() if line]
        if not lines:
            raise UsageError("no lines to publish on standard input")
        bodies = [Template(line, enabled=templates) for line in lines]
        args.count = len(bodies)
    else:
        bodies = [Template(raw.decode("utf-8", "surrogateescape"), enabled=templates)]
    headers = dict(parse_headers(args.header))
    if args.msg_id:
        headers["Nats-Msg-Id"] = [args.msg_id]
    if args.expect_stream:
        headers["Nats-Expected-Stream"] = [args.expect_stream]
    if args.expect_last_seq is not None:
        headers["Nats-Expected-Last-Sequence"] = [str(args.expect_last_seq)]
    hdr_templates = header_templates(headers, enabled=templates)
    pause = parse_duration(args.sleep, what="--sleep") / 1e9 if args.sleep else 0.0

    client = await session.connect()
    js = await session.jetstream() if args.jetstream else None
    if args.atomic:  # one batch, one PubAck: no progress bar
        assert js is not None
        return await _publish_atomic(session, args, js, bodies, hdr_templates)
    progress = _progress(args, session)
    acks: list[Any] = []
    total_bytes = 0
    start = time.perf_counter()
    try:
        for n in range(1, args.count + 1):
            body = bodies[(n - 1) % len(bodies)]
            data = body.render(n).encode("utf-8", "surrogateescape")
            hdrs = render_headers(hdr_templates, n)
            total_bytes += len(data)
            if js is not None:
                ack = await js.publish(args.subject, data, headers=hdrs)
                acks.append(ack)
                if not session.json and not args.quiet and progress is None:
                    dup = " (duplicate)" if ack.duplicate else ""
                    print(f">>> Stream: {ack.stream} Sequence: {ack.seq}{dup}")
            else:
                await client.publish(args.subject, data, reply=args.reply or "", headers=hdrs)
                if not session.json and not args.quiet and progress is None:
                    print(f'{time.strftime("%H:%M:%S")} Published {len(data)} bytes to "{args.subject}"')
            if progress is not None:
                progress[0].advance(progress[1])
            if pause and n < args.count:
                await asyncio.sleep(pause)
        await client.flush(session.timeout)
    finally:
        if progress is not None:
            progress[0].stop()
    elapsed = time.perf_counter() - start
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        out: dict[str, Any] = {"subject": args.subject, "published": args.count, "bytes": total_bytes}
        if js is not None:
            out["acks"] = acks
        print_json(out)
    elif progress is not None and not args.quiet:
        print(f'Published {args.count} messages ({total_bytes} bytes) to "{args.subject}" in {elapsed:.2f}s')
    return 0


async def _publish_atomic(
    session: Session, args: argparse.Namespace, js: Any, bodies: list[Any], hdr_templates: Any
) -> int:
    """Every message in one atomic batch (ADR-50): all are stored, or none; one PubAck for the batch."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import render_headers

    messages = [
        (bodies[(n - 1) % len(bodies)].render(n).encode("utf-8", "surrogateescape"), render_headers(hdr_templates, n))
        for n in range(1, args.count + 1)
    ]
    async with js.batch_publisher(timeout=session.timeout) as batch:
        for data, hdrs in messages[:-1]:
            await batch.add(args.subject, data, headers=hdrs)
        data, hdrs = messages[-1]
        ack = await batch.commit(args.subject, data, headers=hdrs)
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json({"subject": args.subject, "published": len(messages), "ack": ack})
    elif not args.quiet:
        print(f">>> Stream: {ack.stream} Sequence: {ack.seq} Batch: {ack.batch} Messages: {ack.count}")
    return 0


def _progress(args: argparse.Namespace, session: Session) -> Any:
    """A progress bar for many messages on a terminal (none for one message, JSON or pipes)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import progress_bar

    bar = progress_bar(args.count >= 2 and not args.quiet and not session.json, transient=True)
    if bar is None:
        return None
    return bar, bar.add_task("Publishing", total=args.count)


COMMAND = Command("pub", "publish messages to a subject", cmd_pub, _arguments)
