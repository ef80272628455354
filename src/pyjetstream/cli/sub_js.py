"""``sub`` on a stream: natscli ``subscribe``'s JetStream modes (``jetStreamSubscribe`` and
``directSubscribe`` in its ``sub_command.go``).

The stream is ``--stream`` or the one storing the subject. Three ways to read it, as natscli:

- an ephemeral consumer without acks (an ordered consumer here, which also survives a lost
  server-side consumer), starting where ``--all`` / ``--new`` / ``--last`` / ``--since`` /
  ``--start-sequence`` / ``--last-per-subject`` say (default: all);
- ``--durable NAME``: that pull consumer (made, with no acks, when missing), acknowledging what it
  delivers when its ack policy wants acks;
- batched direct gets (``--direct``, and always for a work-queue or interest stream without
  ``--durable``: a consumer there would take the messages away from their real consumers).

``-T`` stops once the messages stored when it started are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.cli.errors import CliError, UsageError

if TYPE_CHECKING:
    from pyjetstream.cli.app import Session
    from pyjetstream.cli.sub_cmd import Printer

__all__ = ["read_stream"]

DIRECT_BATCH = 256
DIRECT_POLL = 0.25  # seconds between direct gets once the stream is read to its end


async def read_stream(session: Session, args: argparse.Namespace, printer: Printer) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client.jetstream.errors import StreamNotFound

    js = await session.jetstream()
    subject = args.subjects[0] if args.subjects else ""
    name = args.stream
    if not name:
        try:
            name = await js.stream_name_by_subject(subject)
        except StreamNotFound:
            raise CliError(f"no stream found with subject: {subject}") from None
    stream = await js.stream(name)
    config = stream.cached_info().config
    if args.direct and args.durable:
        raise UsageError("cannot use direct get when a durable name is supplied")
    direct = not args.durable and (args.direct or str(config.retention) in ("workqueue", "interest"))
    if direct:
        if not config.allow_direct:
            raise CliError(f"cannot enable direct gets: allow_direct is not set to true for stream {name}")
        await _direct(stream, args, printer, subject)
    elif args.durable:
        await _durable(session, js, name, args, printer)
    else:
        await _ordered(js, name, args, printer, subject)


def _log(text: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {text}", file=sys.stderr, flush=True)


def _start(args: argparse.Namespace) -> tuple[str, int, int | None, str]:
    """(deliver policy, start sequence, start time ns, natscli's words for it)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.values import parse_duration

    if args.start_sequence:
        return "by_start_sequence", args.start_sequence, None, f"starting at sequence {args.start_sequence}"
    if args.last:
        return "last", 0, None, "from last received message"
    if args.new:
        return "new", 0, None, "for new messages"
    if args.since:
        ago = parse_duration(args.since, what="--since")
        return "by_start_time", 0, time.time_ns() - ago, f"since {args.since}"
    if args.last_per_subject:
        return "last_per_subject", 0, None, "for last message per subject"
    return "all", 0, None, "from first received message"


def _show(printer: Printer, msg: Any, *, ack: bool = False) -> Any:
    """Print one consumer delivery as natscli's ``printJetStreamMsg``; returns its metadata."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of
    from pyjetstream.cli.output import human_time

    meta = msg.metadata()
    summary = (
        f"stream: {meta.stream} seq: {meta.stream_seq:,} / pending: {meta.num_pending:,} / "
        f"subject: {msg.subject} / time: {human_time(meta.timestamp)}"
    )
    printer.show(
        msg.subject,
        msg.data,
        headers_of(msg),
        title=f"Received JetStream message: {summary}",
        name=str(meta.stream_seq),
        stream=meta.stream,
        seq=meta.stream_seq,
        pending=meta.num_pending,
        time=meta.timestamp.isoformat(),
    )
    return meta


def _done(args: argparse.Namespace, printer: Printer, pending: int) -> bool:
    return bool((args.count and printer.count >= args.count) or (args.terminate_at_end and pending == 0))


async def _ordered(js: Any, stream: str, args: argparse.Namespace, printer: Printer, subject: str) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import NanoTime
    from pyjetstream.cli.sub_cmd import ignored
    from pyjetstream.client.jetstream.ordered import OrderedConsumerConfig

    policy, seq, start_time, words = _start(args)
    # Last per subject needs a filter: natscli's is ">" when no subject is given.
    filters = [subject] if subject else [">"] if policy == "last_per_subject" else []
    cfg = OrderedConsumerConfig(
        filter_subjects=filters,
        deliver_policy=policy,  # type: ignore[arg-type]
        opt_start_seq=seq,
        opt_start_time=NanoTime(start_time) if start_time is not None else None,
        headers_only=args.headers_only or args.subjects_only,
        inactive_threshold=5.0,  # the server forgets the consumer soon after we exit
    )
    consumer = await js.ordered_consumer(stream, cfg)
    messages = await consumer.messages()
    try:
        _log(f"Subscribing to subject {subject or '>'} {words}")
        if args.terminate_at_end and consumer.cached_info().num_pending == 0:
            return
        async for msg in messages:
            if ignored(msg.subject, args.ignore_subject):
                continue
            meta = _show(printer, msg)
            if _done(args, printer, meta.num_pending):
                return
    finally:
        messages.stop()


async def _durable(session: Session, js: Any, stream: str, args: argparse.Namespace, printer: Printer) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import ConsumerConfig, NanoTime
    from pyjetstream.cli.sub_cmd import ignored
    from pyjetstream.client.jetstream.errors import ConsumerNotFound

    try:
        consumer = await js.consumer(stream, args.durable)
        _log(f"Subscribing to JetStream Stream {stream!r} using existing pull consumer {args.durable!r}")
    except ConsumerNotFound:
        policy, seq, start_time, words = _start(args)
        cfg = ConsumerConfig(
            durable_name=args.durable,
            ack_policy="none",  # type: ignore[arg-type]
            deliver_policy=policy,  # type: ignore[arg-type]
            opt_start_seq=seq,
            opt_start_time=NanoTime(start_time) if start_time is not None else None,
            headers_only=args.headers_only or args.subjects_only,
        )
        consumer = await js.create_consumer(stream, cfg)
        _log(f"Subscribing to JetStream Stream {stream!r} with durable consumer {args.durable!r} {words}")
    info = consumer.cached_info()
    filters = info.config.filter_subjects or ([info.config.filter_subject] if info.config.filter_subject else [])
    if len(filters) > 1:
        raise CliError("cannot subscribe to multi filter consumers")
    if info.config.deliver_subject:
        raise CliError(f"consumer {args.durable!r} is a push consumer: sub reads pull consumers")
    acks = str(info.config.ack_policy) != "none"
    if args.terminate_at_end and info.num_pending == 0:
        return
    messages = await consumer.messages()
    try:
        async for msg in messages:
            if acks:
                await msg.ack()
            if ignored(msg.subject, args.ignore_subject):
                continue
            meta = _show(printer, msg)
            if _done(args, printer, meta.num_pending):
                return
    finally:
        messages.stop()


async def _direct(stream: Any, args: argparse.Namespace, printer: Printer, subject: str) -> None:
    """Batched direct gets from the start position on; at the end of the stream, poll for more."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from datetime import UTC, datetime

    from pyjetstream.cli.msgfmt import DIRECT_GET_HEADERS, headers_of
    from pyjetstream.cli.output import human_time
    from pyjetstream.cli.sub_cmd import ignored
    from pyjetstream.client.jetstream.errors import MsgNotFound

    state = (await stream.info()).state
    policy, seq, start_time, words = _start(args)
    label = subject or ", ".join(stream.cached_info().config.subjects) or ">"
    _log(f"Subscribing to JetStream Stream (direct) holding messages with subject {label} {words}")
    last_per_subject = policy == "last_per_subject"
    starts = {"by_start_sequence": seq, "last": state.last_seq, "new": state.last_seq + 1}
    starts["by_start_time"] = state.last_seq + 1  # after the messages since then, read by time
    next_seq = starts.get(policy, state.first_seq)
    since = datetime.fromtimestamp(start_time / 1e9, UTC) if start_time is not None else None
    end = state.last_seq  # what -T waits for
    while True:
        got = 0
        try:
            if last_per_subject:
                batch = stream.get_last_msgs_for([subject or ">"], up_to_seq=end)
            elif since is not None:
                batch = stream.get_batch(DIRECT_BATCH, start_time=since, subject=subject or None)
            else:
                batch = stream.get_batch(DIRECT_BATCH, seq=max(next_seq, 1), subject=subject or None)
            async for msg in batch:
                got += 1
                next_seq = msg.sequence + 1
                if ignored(msg.subject, args.ignore_subject):
                    continue
                printer.show(
                    msg.subject,
                    msg.data,
                    headers_of(msg, drop=DIRECT_GET_HEADERS),
                    title=(
                        f"Received JetStream message (direct): stream: {stream.name} seq {msg.sequence} / "
                        f"subject: {msg.subject} / time: {human_time(msg.time)}"
                    ),
                    name=str(msg.sequence),
                    stream=stream.name,
                    seq=msg.sequence,
                    time=msg.time.isoformat(),
                )
                if args.count and printer.count >= args.count:
                    return
        except MsgNotFound:
            pass
        since = None
        if last_per_subject:
            last_per_subject, next_seq = False, end + 1  # then carry on with what arrives after
        if args.terminate_at_end and (next_seq > end or got == 0):
            return
        if got == 0:
            await asyncio.sleep(DIRECT_POLL)
