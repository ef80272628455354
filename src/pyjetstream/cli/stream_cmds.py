"""``pyjetstream stream …``: manage and inspect streams, as ``nats stream``.

``add`` / ``edit`` (every config field as a flag, see `stream_config`), ``info``, ``ls``,
``rm``, ``purge``, ``get`` (one stored message), ``rmm`` (delete one), ``view`` (read messages
through an ordered consumer), ``report`` (all streams in a table). ``--json`` prints the
server's wire JSON.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.backup_cmds import BACKUP, RESTORE
from pyjetstream.cli.errors import CliError, UsageError
from pyjetstream.cli.stream_config import add_stream_arguments

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _name_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", nargs="?", help="stream name")


def _stream_name(args: argparse.Namespace) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask

    return args.stream or ask("Stream Name", flag="a stream name")


# --------------------------------------------------------------------------- add / edit


def _add_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    add_stream_arguments(p, edit=False)


def _edit_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    add_stream_arguments(p, edit=True)


async def cmd_add(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import interactive
    from pyjetstream.cli.stream_config import stream_config_from_args

    # With --config the file names the stream (a name given here wins, as in the nats CLI).
    name = args.stream or ("" if args.config else _stream_name(args))
    ask = interactive() and not args.defaults
    config = stream_config_from_args(args, name, ask=ask)
    if not config.name:
        raise UsageError(f"--config {args.config} has no stream name: give one (stream add NAME --config FILE)")
    if args.output:
        return _write_config(session, args.output, config)
    js = await session.jetstream()
    stream = await js.create_stream(config)
    info = stream.cached_info()
    if session.json:
        _print_json(info)
    else:
        print(f"Stream {info.config.name} was created\n")
        show_stream_info(info)
    return 0


async def cmd_edit(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm
    from pyjetstream.cli.stream_config import config_changes, stream_config_from_args

    name = _stream_name(args)
    js = await session.jetstream()
    current = (await js.stream(name)).cached_info().config
    config = stream_config_from_args(args, name, current)
    changes = config_changes(current, config)
    if args.output:
        return _write_config(session, args.output, config)
    if not changes:
        raise UsageError(f"no changes to stream {name}: give the flags of the fields to change")
    if not session.json:
        print(f"Differences (-old +new) for stream {name}:")
        for field, old, new in changes:
            print(f"  - {field}: {old!r}\n  + {field}: {new!r}")
        print()
    confirm(f"Really edit stream {name}?", force=args.force)
    info = (await js.update_stream(config)).cached_info()
    if session.json:
        _print_json(info)
    else:
        print(f"Stream {name} was updated\n")
        show_stream_info(info)
    return 0


def _write_config(session: Session, path: str, config: Any) -> int:
    """``--output``: save the configuration (wire JSON) instead of applying it."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import to_jsonable

    with open(path, "w") as f:
        json.dump(to_jsonable(config), f, indent=2)
        f.write("\n")
    if session.json:
        _print_json({"config": config, "written": path})
    else:
        print(f"Configuration written to {path}")
    return 0


# --------------------------------------------------------------------------- info / ls / report


def _render_source(src: Any) -> str:
    """A mirror or source as the nats CLI's ``renderSource`` shows it: the origin, then its start,
    external prefixes and (ADR-60) the durable consumer it is read through."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_time

    parts = [src.name]
    if src.opt_start_seq:
        parts.append(f"Start Seq: {src.opt_start_seq:,}")
    if src.opt_start_time is not None:
        parts.append(f"Start Time: {human_time(src.opt_start_time)}")
    if src.external is not None:
        if src.external.api:
            parts.append(f"API Prefix: {src.external.api}")
        if src.external.deliver:
            parts.append(f"Delivery Prefix: {src.external.deliver}")
    if src.consumer is not None:
        deliver = f" ({src.consumer.deliver_subject})" if src.consumer.deliver_subject else ""
        parts.append(f"Consumer Name: {src.consumer.name}{deliver}")
    return ", ".join(parts)


def _info_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument(
        "--subjects", metavar="FILTER", help="also list message counts of subjects matching FILTER"
    )
    p.add_argument("--deleted", action="store_true", help="also list deleted sequences")


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    name = _stream_name(args)
    js = await session.jetstream()
    stream = await js.stream(name)
    info = await stream.info(subject_filter=args.subjects, deleted_details=args.deleted)
    if session.json:
        _print_json(info)
    else:
        show_stream_info(info)
    return 0


def _config_rows(cfg: Any) -> list[tuple[str, Any]]:
    """The Configuration section of ``stream info``: what the stream's config says, as natscli lists it."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_duration, limit

    retention = {"limits": "Limits", "interest": "Interest", "workqueue": "WorkQueue"}[str(cfg.retention)]
    storage = str(cfg.storage).capitalize() + (f" ({cfg.compression})" if cfg.compression else "")
    discard = str(cfg.discard).capitalize() + (" Per Subject" if cfg.discard_new_per_subject else "")
    marker_ttl = cfg.subject_delete_marker_ttl
    rows: list[tuple[str, Any]] = [
        ("Subjects", ", ".join(cfg.subjects) or None),
        ("Description", cfg.description or None),
        ("Replicas", cfg.num_replicas),
        ("Storage", storage),
        ("Retention", retention),
        ("Acknowledgements", "no" if cfg.no_ack else "yes"),
        ("Discard Policy", discard),
        ("Duplicate Window", human_duration(cfg.duplicate_window)),
        ("Direct Get", "yes" if cfg.allow_direct else "no"),
        ("Mirror Direct Get", "yes" if cfg.mirror_direct else None),
        ("Allows Msg Delete", "no" if cfg.deny_delete else "yes"),
        ("Allows Purge", "no" if cfg.deny_purge else "yes"),
        ("Allows Rollups", "yes" if cfg.allow_rollup_hdrs else "no"),
        ("Allows Msg TTL", "yes" if cfg.allow_msg_ttl else None),
        ("Subject Delete Markers TTL", human_duration(marker_ttl) if marker_ttl else None),
        ("Allows Counters", "yes" if cfg.allow_msg_counter else None),
        ("Allows Atomic Batches", "yes" if cfg.allow_atomic else None),
        ("Allows Fast Batches", "yes" if cfg.allow_batched else None),
        ("Allows Schedules", "yes" if cfg.allow_msg_schedules else None),
        ("Persist Mode", str(getattr(cfg, "persist_mode", "") or "") or None),
        ("Sealed", "yes" if cfg.sealed else None),
        ("First Sequence", cfg.first_seq or None),
        ("Maximum Messages", limit(cfg.max_msgs)),
        ("Maximum Per Subject", limit(cfg.max_msgs_per_subject)),
        ("Maximum Bytes", limit(cfg.max_bytes, human_bytes)),
        ("Maximum Age", human_duration(cfg.max_age, zero="unlimited")),
        ("Maximum Message Size", limit(cfg.max_msg_size, human_bytes)),
        ("Maximum Consumers", limit(cfg.max_consumers)),
    ]
    return rows + _linked_rows(cfg)


def _linked_rows(cfg: Any) -> list[tuple[str, Any]]:
    """The rows of what the stream is linked to or labelled with: republish, transform, mirror,
    sources, placement, metadata."""
    rows: list[tuple[str, Any]] = []
    if cfg.republish is not None:
        rp = cfg.republish
        rows.append(("Republishing", f"{rp.src} → {rp.dest}" + (" (headers only)" if rp.headers_only else "")))
    if cfg.subject_transform is not None:
        rows.append(("Subject Transform", f"{cfg.subject_transform.src} → {cfg.subject_transform.dest}"))
    if cfg.mirror is not None:
        rows.append(("Mirror", _render_source(cfg.mirror)))
    for src in cfg.sources:
        rows.append(("Source", _render_source(src)))
    if cfg.placement is not None:
        rows.append(("Placement", f"cluster {cfg.placement.cluster or '-'} tags {', '.join(cfg.placement.tags or [])}"))
    rows.extend((f"Metadata {key}", value) for key, value in sorted(cfg.metadata.items()))
    return rows


def show_stream_info(info: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, human_time, print_sections

    cfg, state = info.config, info.state
    state_rows = [
        ("Messages", human_count(state.messages)),
        ("Bytes", human_bytes(state.bytes)),
        ("First Sequence", f"{state.first_seq} @ {human_time(state.first_ts)}" if state.messages else state.first_seq),
        ("Last Sequence", f"{state.last_seq} @ {human_time(state.last_ts)}" if state.last_seq else state.last_seq),
        ("Deleted Messages", human_count(state.num_deleted) if state.num_deleted else None),
        ("Deleted Sequences", ", ".join(map(str, state.deleted)) if state.deleted else None),
        ("Active Consumers", state.consumer_count),
        ("Number of Subjects", state.num_subjects or None),
    ]
    sections = [("Configuration", _config_rows(cfg)), ("State", state_rows)]
    if state.subjects:
        sections.append(("Subjects", [(s, human_count(n)) for s, n in sorted(state.subjects.items())]))
    print_sections(f"Information for Stream {cfg.name} created {human_time(info.created)}", sections)


def _ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subject", help="only streams that store this subject")
    p.add_argument("-n", "--names", action="store_true", help="print only the names")


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_age, human_bytes, human_count, print_table, short_time

    js = await session.jetstream()
    if args.names:
        names = sorted([n async for n in js.stream_names(subject=args.subject)])
        if session.json:
            _print_json(names)
        else:
            print("\n".join(names))
        return 0
    infos = sorted([i async for i in js.list_streams(subject=args.subject)], key=lambda i: i.config.name)
    if session.json:
        _print_json(infos)
        return 0
    if not infos:
        print("No Streams defined")
        return 0
    rows = [
        (
            i.config.name,
            i.config.description,
            short_time(i.created),
            human_count(i.state.messages),
            human_bytes(i.state.bytes),
            human_age(i.state.last_ts) if i.state.last_seq else "never",
        )
        for i in infos
    ]
    columns = ("Name", "Description", "Created", "Messages", "Size", "Last Message")
    print_table(
        f"Streams ({len(infos)})", columns, rows, justify=("left", "left", "left", "right", "right", "left")
    )
    return 0


async def cmd_report(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_count, print_table

    js = await session.jetstream()
    infos = sorted([i async for i in js.list_streams(subject=args.subject)], key=lambda i: i.config.name)
    if session.json:
        _print_json(
            [
                {
                    "stream": i.config.name,
                    "storage": str(i.config.storage),
                    "replicas": i.config.num_replicas,
                    "consumers": i.state.consumer_count,
                    "messages": i.state.messages,
                    "bytes": i.state.bytes,
                    "deleted": i.state.num_deleted,
                    "first_seq": i.state.first_seq,
                    "last_seq": i.state.last_seq,
                    "subjects": i.config.subjects,
                }
                for i in infos
            ]
        )
        return 0
    rows = [
        (
            i.config.name,
            str(i.config.storage).capitalize(),
            i.config.num_replicas,
            i.state.consumer_count,
            human_count(i.state.messages),
            human_bytes(i.state.bytes),
            human_count(i.state.num_deleted),
            ", ".join(i.config.subjects),
        )
        for i in infos
    ]
    columns = ("Stream", "Storage", "Replicas", "Consumers", "Messages", "Bytes", "Deleted", "Subjects")
    justify = ("left", "left", "right", "right", "right", "right", "right", "left")
    print_table("Stream Report", columns, rows, justify=justify)
    return 0


def _report_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subject", help="only streams that store this subject")


# --------------------------------------------------------------------------- rm / purge


def _rm_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_rm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    name = _stream_name(args)
    confirm(f"Really delete stream {name}?", force=args.force)
    js = await session.jetstream()
    await js.delete_stream(name)
    if session.json:
        _print_json({"stream": name, "deleted": True})
    else:
        print(f"Stream {name} was deleted")
    return 0


def _purge_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("--subject", help="only purge messages on this subject")
    p.add_argument("--seq", type=int, help="purge messages before this sequence")
    p.add_argument("--keep", type=int, help="keep this many of the newest messages")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_purge(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    name = _stream_name(args)
    if args.seq is not None and args.keep is not None:
        raise UsageError("--seq and --keep cannot be combined")
    confirm(f"Really purge stream {name}?", force=args.force)
    js = await session.jetstream()
    stream = await js.stream(name)
    purged = await stream.purge(subject=args.subject, sequence=args.seq, keep=args.keep)
    if session.json:
        _print_json({"stream": name, "purged": purged})
    else:
        print(f"Purged {purged} messages from stream {name}\n")
        show_stream_info(await stream.info())
    return 0


# --------------------------------------------------------------------------- get / rmm / view


def _get_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("seq", nargs="?", type=int, help="stream sequence of the message")
    p.add_argument("--last-for", metavar="SUBJECT", help="the newest message on SUBJECT instead")
    p.add_argument("--raw", action="store_true", help="print only the body")


async def cmd_get(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import DIRECT_GET_HEADERS, headers_of, message_json, print_message
    from pyjetstream.cli.output import human_time, print_json
    from pyjetstream.cli.prompts import ask

    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.client.jetstream.errors import MsgNotFound

    name = _stream_name(args)
    seq = None
    if not args.last_for:
        seq = _sequence(args.seq if args.seq is not None else int(_digits(ask("Message Sequence", flag="a sequence"))))
    js = await session.jetstream()
    stream = await js.stream(name)
    try:
        if args.last_for:
            msg = await stream.get_last_msg_for_subject(args.last_for)
        else:
            msg = await stream.get_msg(seq)
    except MsgNotFound as exc:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.errors import describe

        where = f"on subject {args.last_for}" if args.last_for else f"with sequence {seq}"
        raise CliError(f"stream {name} has no message {where} ({describe(exc)})") from None
    headers = headers_of(msg, drop=DIRECT_GET_HEADERS)
    if session.json:
        print_json(message_json(msg.subject, msg.data, headers, seq=msg.sequence, time=msg.time.isoformat()))
        return 0
    title = f"Item: {name}#{msg.sequence} received {human_time(msg.time)} on Subject {msg.subject}"
    print_message(title, msg.data, headers, raw=args.raw)
    return 0


def _sequence(seq: int) -> int:
    """Stream sequences start at 1 (the server answers 0 with a bare "Empty Request" status)."""
    if seq < 1:
        raise UsageError(f"invalid sequence {seq}: stream sequences start at 1")
    return seq


def _digits(text: str) -> str:
    if not text.strip().isdigit():
        raise UsageError(f"invalid sequence {text!r}")
    return text


def _rmm_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("seq", nargs="?", type=int, help="stream sequence of the message")
    p.add_argument("--erase", action="store_true", help="overwrite the message data (secure delete)")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_rmm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask, confirm

    name = _stream_name(args)
    seq = _sequence(args.seq if args.seq is not None else int(_digits(ask("Message Sequence", flag="a sequence"))))
    confirm(f"Really remove message {seq} from stream {name}?", force=args.force)
    js = await session.jetstream()
    stream = await js.stream(name)
    if args.erase:
        await stream.secure_delete_msg(seq)
    else:
        await stream.delete_msg(seq)
    if session.json:
        _print_json({"stream": name, "seq": seq, "deleted": True})
    else:
        print(f"Message {seq} was removed from stream {name}")
    return 0


def _view_arguments(p: argparse.ArgumentParser) -> None:
    _name_arg(p)
    p.add_argument("--id", type=int, metavar="SEQ", help="start at this stream sequence")
    p.add_argument("--since", metavar="DUR", help="start with messages received this long ago")
    p.add_argument("--subject", help="only messages on this subject (wildcards allowed)")
    p.add_argument("--count", type=int, default=0, help="show at most this many messages")
    p.add_argument("--raw", action="store_true", help="print only bodies")


async def cmd_view(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of, message_json, print_message
    from pyjetstream.cli.output import human_time, print_json_line
    from pyjetstream.cli.values import parse_start

    name = _stream_name(args)
    if args.id is not None and args.since:
        raise UsageError("--id and --since cannot be combined")
    if args.count < 0:
        raise UsageError("--count must not be negative")
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import NanoTime
    from pyjetstream.client.jetstream.ordered import OrderedConsumerConfig

    # A short inactive threshold: the server forgets the consumer soon after we exit.
    cfg = OrderedConsumerConfig(
        filter_subjects=[args.subject] if args.subject else [], inactive_threshold=5.0
    )
    if args.id is not None:
        policy, seq, start = parse_start(str(args.id), what="--id")
        cfg.deliver_policy, cfg.opt_start_seq = policy, seq or 0  # type: ignore[assignment]
    elif args.since:
        policy, seq, start = parse_start(args.since, what="--since")
        cfg.deliver_policy, cfg.opt_start_time = policy, NanoTime(start or 0)  # type: ignore[assignment]
    js = await session.jetstream()
    await js.stream(name)  # a clear "stream not found" before consuming
    consumer = await js.ordered_consumer(name, cfg)
    shown = 0
    while not args.count or shown < args.count:
        want = min(args.count - shown, 256) if args.count else 256
        batch = await consumer.fetch_no_wait(want)
        got = 0
        last_pending = None
        async for msg in batch:
            got += 1
            shown += 1
            meta = msg.metadata()
            last_pending = meta.num_pending
            headers = headers_of(msg)
            if session.json:
                print_json_line(
                    message_json(
                        msg.subject, msg.data, headers, seq=meta.stream_seq, time=meta.timestamp.isoformat()
                    )
                )
            else:
                title = f"[{meta.stream_seq}] Subject: {msg.subject} Received: {human_time(meta.timestamp)}"
                print_message(title, msg.data, headers, raw=args.raw)
        if got == 0 or last_pending == 0:
            break
    if not shown and not session.json:
        print(f"No messages in stream {name}" + (f" on subject {args.subject}" if args.subject else ""))
    return 0


def _print_json(value: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json

    print_json(value)


GROUP = Group(
    "pyjetstream stream",
    "manage and inspect JetStream streams",
    [
        Command("add", "create a stream", cmd_add, _add_arguments, aliases=("create", "new")),
        Command("edit", "change a stream's configuration", cmd_edit, _edit_arguments, aliases=("update",)),
        Command("info", "show a stream's configuration and state", cmd_info, _info_arguments),
        Command("ls", "list streams", cmd_ls, _ls_arguments, aliases=("list",)),
        Command("rm", "delete a stream and its messages", cmd_rm, _rm_arguments, aliases=("delete", "del")),
        Command("purge", "remove messages from a stream", cmd_purge, _purge_arguments),
        Command("get", "print one stored message", cmd_get, _get_arguments),
        Command("rmm", "remove one message from a stream", cmd_rmm, _rmm_arguments),
        Command("view", "print the messages in a stream", cmd_view, _view_arguments),
        Command("report", "report on all streams", cmd_report, _report_arguments),
        BACKUP,
        RESTORE,
    ],
)
