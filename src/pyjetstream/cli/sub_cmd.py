"""``pyjetstream sub SUBJECT…``: print messages as they arrive, as ``nats sub``.

Core NATS by default: wildcards (``*``, ``>``), several subjects, queue groups. A JetStream flag
(``--stream``, ``--all``, ``--new``, ``--last``, ``--since``, ``--start-sequence``,
``--last-per-subject``, ``--durable``, ``--direct``) reads a stream instead (`sub_js`), as
natscli's ``subscribe`` does. ``Subscribing …`` goes to stderr once the server has the
subscription, so stdout carries only messages: readable, ``--raw`` bodies, ``--json`` one object
per line, or ``--dump DIR`` one natscli JSON file per message (``--dump -``: to stdout, each
followed by a NUL, for ``xargs -0``). ``--count`` stops after that many messages, ``--wait``
after that long.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyjetstream.cli.app import Command, Session, run_command
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["COMMAND", "Printer", "main"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("subjects", nargs="*", metavar="SUBJECT", help="subjects to subscribe to (wildcards allowed)")
    p.add_argument("--queue", metavar="GROUP", help="join this queue group")
    p.add_argument("-i", "--inbox", action="store_true", help="subscribe to a new unique inbox subject")
    p.add_argument("-r", "--raw", action="store_true", help="print only message bodies")
    p.add_argument("--headers-only", action="store_true", help="print headers but not bodies")
    p.add_argument("--subjects-only", action="store_true", help="print only the messages' subjects")
    p.add_argument(
        "--dump",
        metavar="DIR",
        help="write each message to DIR/<n>.json as natscli does ('-': to stdout, NUL separated)",
    )
    p.add_argument("-t", "--timestamp", action="store_true", help="show when each message arrived")
    p.add_argument("-d", "--delta-time", action="store_true", help="show the time since the start")
    p.add_argument(
        "-I", "--ignore-subject", action="append", metavar="SUBJECT", help="skip messages on these subjects"
    )
    p.add_argument("--ack", action="store_true", help="acknowledge JetStream messages (those with JS metadata)")
    p.add_argument("--count", type=int, default=0, help="stop after this many messages")
    p.add_argument("--wait", metavar="DUR", help="stop after this long (an error if --count is not reached)")
    g = p.add_argument_group("JetStream (read a stream instead of core NATS)")
    g.add_argument("--stream", metavar="STREAM", help="the stream to read (default: the one storing SUBJECT)")
    g.add_argument("--durable", metavar="NAME", help="read through this durable consumer (made if missing)")
    g.add_argument("--all", action="store_true", help="from the first message in the stream")
    g.add_argument("--new", action="store_true", help="only messages that arrive from now on")
    g.add_argument("--last", action="store_true", help="from the most recent message on")
    g.add_argument("--since", metavar="DUR", help="messages received this long ago and later (e.g. 1h)")
    g.add_argument(
        "--start-sequence", "--start-seq", type=int, metavar="SEQ", help="from this stream sequence on"
    )
    g.add_argument("--last-per-subject", action="store_true", help="the most recent message of each subject")
    g.add_argument(
        "-T", "--terminate-at-end", action="store_true", help="stop once every stored message was printed"
    )
    g.add_argument(
        "--direct", action="store_true", help="read with batched direct gets instead of a consumer (2.11+)"
    )


def main(argv: Sequence[str]) -> int:
    return run_command(COMMAND, "pyjetstream sub", argv)


def wants_jetstream(args: argparse.Namespace) -> bool:
    """natscli ``validateInputs``: any JetStream flag turns the subscription into a stream read."""
    return bool(
        args.start_sequence
        or args.durable
        or args.all
        or args.new
        or args.last
        or args.since
        or args.last_per_subject
        or args.stream
        or args.direct
    )


def _validate(args: argparse.Namespace) -> bool:
    """natscli's checks, in its words where it has them; returns whether this is a JetStream read."""
    jetstream = wants_jetstream(args)
    if args.count < 0:
        raise UsageError("--count must not be negative")
    if args.start_sequence is not None and args.start_sequence < 1:
        raise UsageError(f"invalid --start-sequence {args.start_sequence}: stream sequences start at 1")
    starts = [args.start_sequence, args.all, args.new, args.last, args.since, args.last_per_subject]
    if sum(1 for s in starts if s) > 1:
        raise UsageError("--all, --new, --last, --since, --start-sequence and --last-per-subject exclude each other")
    if args.subjects and args.durable:
        raise UsageError("cannot specify both subjects and a durable consumer")
    if not args.subjects and not args.inbox and not args.stream and not args.durable:
        raise UsageError("a subject is required (or --inbox, or --stream)")
    if len(args.subjects) > 1 and jetstream:
        raise UsageError("streams subscribe support only 1 subject")
    if args.terminate_at_end and not jetstream:
        raise UsageError("--terminate-at-end is only supported for JetStream subscriptions")
    if args.inbox and jetstream:
        raise UsageError("generating inboxes is not compatible with JetStream subscriptions")
    if args.queue and jetstream:
        raise UsageError("queue group subscriptions are not supported with JetStream")
    if args.dump == "-" and args.inbox:
        raise UsageError("generating inboxes is not compatible with dumping to stdout using null terminated strings")
    if args.timestamp and args.delta_time:
        raise UsageError("timestamp and delta-time flags are mutually exclusive")
    if args.dump and args.dump != "-":
        Path(args.dump).mkdir(mode=0o700, parents=True, exist_ok=True)
    return jetstream


class Printer:
    """How each received message is shown: ``--json``, ``--dump``, ``--raw``, or natscli's text."""

    def __init__(self, session: Session, args: argparse.Namespace) -> None:
        self.json = session.json
        self.args = args
        self.count = 0
        self.start = time.monotonic()

    def _stamp(self) -> str:
        if self.args.timestamp:
            return " @ " + time.strftime("%b %d %H:%M:%S") + f".{int(time.time() * 1e6) % 1_000_000:06d}"
        if self.args.delta_time:
            return f" @ {time.monotonic() - self.start:.6f}s"
        return ""

    def show(
        self, subject: str, data: bytes, headers: Any, reply: str = "", *, title: str = "", name: str = "", **extra: Any
    ) -> None:
        """One message; ``title`` replaces the core ``Received on`` line, ``name`` its dump file's name
        (the stream sequence for JetStream, else the count), ``extra`` goes into ``--json``."""
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.msgfmt import message_json, print_message
        from pyjetstream.cli.output import print_json_line

        self.count += 1
        args = self.args
        if self.json:
            print_json_line(message_json(subject, data, headers, reply, **extra))
        elif args.dump:
            _dump(args.dump, name or str(self.count), subject, reply, headers, data)
        elif args.raw:
            print_message("", data, raw=True)
        else:
            if title:
                first = f"[#{self.count}]{self._stamp()} {title}"
            else:
                with_reply = f" with reply {json.dumps(reply)}" if reply else ""
                first = f"[#{self.count}]{self._stamp()} Received on {json.dumps(subject)}{with_reply}"
            if args.subjects_only:
                sys.stdout.write(first + "\n")
                sys.stdout.flush()
            else:
                print_message(first, data, headers, headers_only=args.headers_only)


def _dump(where: str, name: str, subject: str, reply: str, headers: Any, data: bytes) -> None:
    """natscli ``dumpMsg``: the message as Go's JSON of a ``nats.Msg`` (Data in base64)."""
    doc = {
        "Subject": subject,
        "Reply": reply,
        "Header": {k: list(v) for k, v in headers.items()} if headers else None,
        "Data": base64.b64encode(data).decode(),
        "Sub": None,
    }
    text = json.dumps(doc, separators=(",", ":"))
    if where == "-":
        sys.stdout.write(text + "\0")
        sys.stdout.flush()
    else:
        (Path(where) / f"{name}.json").write_text(text)


def ignored(subject: str, ignore: Sequence[str]) -> bool:
    """natscli ``shouldIgnore``: the subject collides with one of ``--ignore-subject``'s."""
    if not ignore:
        return False
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.protocol.subjects import subjects_overlap

    return any(subjects_overlap(subject, s) for s in ignore)


async def cmd_sub(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.values import parse_duration_seconds

    jetstream = _validate(args)
    args.ignore_subject = [s for v in args.ignore_subject or () for s in v.split(",") if s.strip()]
    wait = parse_duration_seconds(args.wait, what="--wait") if args.wait else None
    printer = Printer(session, args)
    if jetstream:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.sub_js import read_stream

        work = read_stream(session, args, printer)
    else:
        work = _core(session, args, printer)
    try:
        await asyncio.wait_for(work, wait)
    except TimeoutError:
        if args.count and printer.count < args.count:
            raise CliError(
                f"timeout: received {printer.count} of {args.count} messages within {args.wait}"
            ) from None
    return 0


async def _core(session: Session, args: argparse.Namespace, printer: Printer) -> None:
    """Core NATS subscriptions, one per subject, their messages printed as they come."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of

    client = await session.connect()
    subjects = [client.new_inbox()] if args.inbox and not args.subjects else list(args.subjects)
    arrived: asyncio.Queue[Any] = asyncio.Queue()
    subs = [await client.subscribe(s, queue=args.queue or "", cb=arrived.put_nowait) for s in subjects]
    await client.flush(session.timeout)
    queue = f" in queue group {args.queue}" if args.queue else ""
    ignoring = f" ignoring {', '.join(args.ignore_subject)}" if args.ignore_subject else ""
    # Always (natscli is quiet with --raw/--dump): it is on stderr, and scripts wait for it.
    print(f"{time.strftime('%H:%M:%S')} Subscribing on {', '.join(subjects)}{queue}{ignoring}", file=sys.stderr, flush=True)
    while not args.count or printer.count < args.count:
        msg = await arrived.get()
        if ignored(msg.subject, args.ignore_subject):
            continue
        printer.show(msg.subject, msg.data, headers_of(msg), msg.reply)
        if args.ack and msg.reply.startswith("$JS.ACK."):
            await msg.respond(b"")
    for sub in subs:
        await sub.unsubscribe()


COMMAND = Command("sub", "subscribe to subjects (or read a stream) and print messages", cmd_sub, _arguments)
