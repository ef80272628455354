"""``pyjetstream consumer …``: manage, inspect and read from consumers, as ``nats consumer``.

``add`` / ``edit`` (every config field as a flag, see `consumer_config`), ``info``, ``ls``,
``rm``, ``next`` (pull and acknowledge messages), ``report`` (all consumers of a stream), and the
2.11+ operations ``pause`` / ``resume`` / ``unpin`` / ``reset``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.consumer_config import add_consumer_arguments
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _names(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", nargs="?", help="stream name")
    p.add_argument("consumer", nargs="?", help="consumer name")


def _stream(args: argparse.Namespace) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask

    return args.stream or ask("Stream Name", flag="a stream name")


def _consumer(args: argparse.Namespace) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask

    return args.consumer or ask("Consumer Name", flag="a consumer name")


def _print_json(value: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json

    print_json(value)


# --------------------------------------------------------------------------- add / edit


def _add_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    add_consumer_arguments(p, edit=False)


def _edit_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    add_consumer_arguments(p, edit=True)


async def cmd_add(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.consumer_config import consumer_config_from_args
    from pyjetstream.cli.prompts import interactive

    stream = _stream(args)
    # With --config the file names the consumer (durable_name or name; a name given here wins).
    name = args.consumer or ("" if args.ephemeral or args.config else _consumer(args))
    config = consumer_config_from_args(args, name, ask=interactive() and not args.defaults)
    if args.output:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.stream_cmds import _write_config

        return _write_config(session, args.output, config)
    js = await session.jetstream()
    info = (await js.create_consumer(stream, config)).cached_info()
    if session.json:
        _print_json(info)
    else:
        show_consumer_info(info)
    return 0


async def cmd_edit(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.consumer_config import consumer_config_from_args
    from pyjetstream.cli.prompts import confirm
    from pyjetstream.cli.stream_config import config_changes

    stream, name = _stream(args), _consumer(args)
    js = await session.jetstream()
    current = (await js.consumer(stream, name)).cached_info().config
    config = consumer_config_from_args(args, name, current)
    if args.output:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.stream_cmds import _write_config

        return _write_config(session, args.output, config)
    changes = config_changes(current, config)
    if not changes:
        raise UsageError(f"no changes to consumer {name}: give the flags of the fields to change")
    if not session.json:
        print(f"Differences (-old +new) for consumer {stream} > {name}:")
        for field, old, new in changes:
            print(f"  - {field}: {old!r}\n  + {field}: {new!r}")
        print()
    confirm(f"Really edit consumer {stream} > {name}?", force=args.force)
    info = (await js.update_consumer(stream, config)).cached_info()
    if session.json:
        _print_json(info)
    else:
        show_consumer_info(info)
    return 0


# --------------------------------------------------------------------------- info / ls / report


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    stream, name = _stream(args), _consumer(args)
    js = await session.jetstream()
    info = await (await js.consumer(stream, name)).info()
    if session.json:
        _print_json(info)
    else:
        show_consumer_info(info)
    return 0


def show_consumer_info(info: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import (
        human_bytes,
        human_count,
        human_duration,
        human_time,
        limit,
        print_sections,
    )

    cfg = info.config
    filters = cfg.filter_subjects or ([cfg.filter_subject] if cfg.filter_subject else [])
    start = str(cfg.deliver_policy)
    if cfg.opt_start_seq:
        start += f" from sequence {cfg.opt_start_seq}"
    if cfg.opt_start_time is not None:
        start += f" from {human_time(cfg.opt_start_time)}"
    config = [
        ("Name", info.name),
        ("Durable Name", cfg.durable_name or None),
        ("Description", cfg.description or None),
        ("Pull Mode", "true" if cfg.is_pull else None),
        ("Delivery Subject", cfg.deliver_subject or None),
        ("Deliver Queue Group", cfg.deliver_group or None),
        ("Filter Subjects", ", ".join(filters) or None),
        ("Deliver Policy", start),
        ("Ack Policy", str(cfg.ack_policy).capitalize()),
        ("Ack Wait", human_duration(cfg.ack_wait) if str(cfg.ack_policy) != "none" else None),
        ("Replay Policy", str(cfg.replay_policy).capitalize()),
        ("Maximum Deliveries", limit(cfg.max_deliver)),
        ("Backoff", ", ".join(human_duration(b) for b in cfg.backoff) or None),
        ("Sampling Rate", cfg.sample_freq or None),
        ("Max Ack Pending", limit(cfg.max_ack_pending)),
        ("Max Waiting Pulls", cfg.max_waiting if cfg.is_pull else None),
        ("Max Pull Batch", cfg.max_batch or None),
        ("Max Pull Expires", human_duration(cfg.max_expires) if cfg.max_expires else None),
        ("Max Pull Bytes", human_bytes(cfg.max_bytes) if cfg.max_bytes else None),
        ("Headers Only", "true" if cfg.headers_only else None),
        ("Inactive Threshold", human_duration(cfg.inactive_threshold) if cfg.inactive_threshold else None),
        ("Idle Heartbeat", human_duration(cfg.idle_heartbeat) if cfg.idle_heartbeat else None),
        ("Flow Control", "true" if cfg.flow_control else None),
        ("Rate Limit", f"{cfg.rate_limit_bps} bps" if cfg.rate_limit_bps else None),
        ("Replicas", cfg.num_replicas or None),
        ("Memory Storage", "yes" if cfg.mem_storage else None),
        ("Priority Groups", ", ".join(cfg.priority_groups) or None),
        ("Priority Policy", str(cfg.priority_policy) if cfg.priority_groups else None),
        ("Pinned Client TTL", human_duration(cfg.priority_timeout) if cfg.priority_timeout else None),
        ("Paused Until", human_time(cfg.pause_until) if info.paused and cfg.pause_until else None),
    ]
    for key, value in sorted(cfg.metadata.items()):
        config.append((f"Metadata {key}", value))
    d, a = info.delivered, info.ack_floor
    state = [
        (
            "Last Delivered Message",
            f"Consumer sequence: {d.consumer_seq} Stream sequence: {d.stream_seq}"
            + (f" Last delivery: {human_time(d.last_active)}" if d.last_active else ""),
        ),
        (
            "Acknowledgment Floor",
            f"Consumer sequence: {a.consumer_seq} Stream sequence: {a.stream_seq}"
            + (f" Last Ack: {human_time(a.last_active)}" if a.last_active else ""),
        ),
        ("Outstanding Acks", f"{info.num_ack_pending} out of maximum {limit(cfg.max_ack_pending)}"),
        ("Redelivered Messages", human_count(info.num_redelivered)),
        ("Unprocessed Messages", human_count(info.num_pending)),
        ("Waiting Pulls", f"{info.num_waiting} of maximum {cfg.max_waiting}" if cfg.is_pull else None),
        ("Active Interest", ("Active" if info.push_bound else "No interest") if not cfg.is_pull else None),
        ("Paused", f"{human_duration(info.pause_remaining)} remaining" if info.paused else None),
    ]
    for group in info.priority_groups:
        if group.pinned_client_id:
            state.append((f"Pinned Client {group.group}", group.pinned_client_id))
    print_sections(
        f"Information for Consumer {info.stream_name} > {info.name} created {human_time(info.created)}",
        [("Configuration", config), ("State", state)],
    )


def _stream_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", nargs="?", help="stream name")


def _ls_arguments(p: argparse.ArgumentParser) -> None:
    _stream_arg(p)
    p.add_argument("-n", "--names", action="store_true", help="print only the names")


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_age, human_count, print_table, short_time

    stream = _stream(args)
    js = await session.jetstream()
    if args.names:
        names = sorted([n async for n in js.consumer_names(stream)])
        if session.json:
            _print_json(names)
        else:
            print("\n".join(names))
        return 0
    infos = sorted([i async for i in js.list_consumers(stream)], key=lambda i: i.name)
    if session.json:
        _print_json(infos)
        return 0
    if not infos:
        print(f"No Consumers defined on stream {stream}")
        return 0
    rows = [
        (
            i.name,
            i.config.description,
            short_time(i.created),
            human_count(i.num_ack_pending),
            human_count(i.num_pending),
            human_age(i.delivered.last_active),
        )
        for i in infos
    ]
    columns = ("Name", "Description", "Created", "Ack Pending", "Unprocessed", "Last Delivery")
    print_table(
        f"Consumers ({len(infos)})", columns, rows, justify=("left", "left", "left", "right", "right", "left")
    )
    return 0


async def cmd_report(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_count, human_duration, print_table

    stream = _stream(args)
    js = await session.jetstream()
    infos = sorted([i async for i in js.list_consumers(stream)], key=lambda i: i.name)
    if session.json:
        _print_json(
            [
                {
                    "consumer": i.name,
                    "mode": "pull" if i.config.is_pull else "push",
                    "ack_policy": str(i.config.ack_policy),
                    "ack_wait": getattr(i.config.ack_wait, "ns", i.config.ack_wait),  # ns, as the wire
                    "ack_pending": i.num_ack_pending,
                    "redelivered": i.num_redelivered,
                    "unprocessed": i.num_pending,
                    "waiting": i.num_waiting,
                    "ack_floor": i.ack_floor.stream_seq,
                }
                for i in infos
            ]
        )
        return 0
    rows = [
        (
            i.name,
            "Pull" if i.config.is_pull else "Push",
            str(i.config.ack_policy).capitalize(),
            human_duration(i.config.ack_wait) if str(i.config.ack_policy) != "none" else "-",
            human_count(i.num_ack_pending),
            human_count(i.num_redelivered),
            human_count(i.num_pending),
            i.ack_floor.stream_seq,
        )
        for i in infos
    ]
    columns = (
        "Consumer",
        "Mode",
        "Ack Policy",
        "Ack Wait",
        "Ack Pending",
        "Redelivered",
        "Unprocessed",
        "Ack Floor",
    )
    justify = ("left", "left", "left", "right", "right", "right", "right", "right")
    print_table(f"Consumer report for {stream} with {len(infos)} consumers", columns, rows, justify=justify)
    return 0


# --------------------------------------------------------------------------- rm / next


def _rm_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_rm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    stream, name = _stream(args), _consumer(args)
    confirm(f"Really delete consumer {stream} > {name}?", force=args.force)
    js = await session.jetstream()
    await js.delete_consumer(stream, name)
    if session.json:
        _print_json({"stream": stream, "consumer": name, "deleted": True})
    else:
        print(f"Consumer {stream} > {name} was deleted")
    return 0


def _next_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("--count", type=int, default=1, help="number of messages to retrieve (default 1)")
    p.add_argument("--ack", action=argparse.BooleanOptionalAction, default=True, help="acknowledge (default)")
    p.add_argument("--wait", default="5s", metavar="DUR", help="how long to wait for messages (default 5s)")
    p.add_argument("--raw", action="store_true", help="print only bodies")


async def cmd_next(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.msgfmt import headers_of, message_json, print_message
    from pyjetstream.cli.output import print_json_line
    from pyjetstream.cli.values import parse_duration_seconds

    stream, name = _stream(args), _consumer(args)
    if args.count < 1:
        raise UsageError("--count must be at least 1")
    wait = parse_duration_seconds(args.wait, what="--wait")
    js = await session.jetstream()
    consumer = await js.consumer(stream, name)
    cfg = consumer.cached_info().config
    if not cfg.is_pull:
        raise CliError(
            f"consumer {stream} > {name} is push based: subscribe to {cfg.deliver_subject!r} instead"
        )
    received = 0
    while received < args.count:
        batch = await consumer.fetch(args.count - received, max_wait=wait)
        got = 0
        async for msg in batch:
            got += 1
            received += 1
            meta = msg.metadata()
            headers = headers_of(msg)
            if session.json:
                print_json_line(
                    message_json(
                        msg.subject,
                        msg.data,
                        headers,
                        seq=meta.stream_seq,
                        consumer_seq=meta.consumer_seq,
                        delivered=meta.num_delivered,
                        pending=meta.num_pending,
                        time=meta.timestamp.isoformat(),
                    )
                )
            else:
                title = (
                    f"[{meta.timestamp.to_datetime().strftime('%H:%M:%S')}] subj: {msg.subject} / "
                    f"tries: {meta.num_delivered} / cons seq: {meta.consumer_seq} / "
                    f"str seq: {meta.stream_seq} / pending: {meta.num_pending}"
                )
                print_message(title, msg.data, headers, raw=args.raw)
            if args.ack and str(cfg.ack_policy) != "none":
                await msg.double_ack(session.timeout)
                if not session.json and not args.raw:
                    print("Acknowledged message\n")
        if got == 0:
            if batch.error is not None and received == 0:
                raise batch.error
            break
    if received == 0:
        raise CliError(f"no message received from {stream} > {name} within {args.wait}")
    return 0


# --------------------------------------------------------------------------- pause / resume / unpin / reset


def _pause_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("until", nargs="?", help="a duration (1h) or a time (2030-01-02 15:04, RFC3339)")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


def _remaining(ns: int) -> str:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_duration

    return human_duration(ns)


async def cmd_pause(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_time
    from pyjetstream.cli.prompts import ask, confirm
    from pyjetstream.cli.values import parse_until

    stream, name = _stream(args), _consumer(args)
    until = parse_until(args.until or ask("Pause until (1h, 2030-01-02 15:04)", flag="an until time"))
    confirm(f"Pause Consumer {stream} > {name} until {until.isoformat()}?", force=args.force)
    resp = await (await session.jetstream()).pause_consumer(stream, name, until)
    if session.json:
        _print_json(resp)
    else:
        print(
            f"Paused {stream} > {name} until {human_time(resp.pause_until)} "
            f"({_remaining(resp.pause_remaining)})"
        )
    return 0


def _resume_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_resume(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    stream, name = _stream(args), _consumer(args)
    js = await session.jetstream()
    info = await (await js.consumer(stream, name)).info()
    if not info.paused:
        raise CliError(f"consumer {stream} > {name} is not paused")
    confirm(f"Resume Consumer {stream} > {name}?", force=args.force)
    resp = await js.resume_consumer(stream, name)
    if session.json:
        _print_json(resp)
    else:
        print(f"Consumer {stream} > {name} was resumed")
    return 0


def _unpin_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("group", nargs="?", help="the priority group to unpin")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_unpin(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import ask, confirm

    stream, name = _stream(args), _consumer(args)
    js = await session.jetstream()
    info = await (await js.consumer(stream, name)).info()
    groups = list(info.config.priority_groups)
    if str(info.config.priority_policy) != "pinned_client" or not groups:
        raise CliError(f"consumer {stream} > {name} is not a pinned client priority consumer")
    group = args.group or (groups[0] if len(groups) == 1 else ask("Priority group", flag="a group"))
    if group not in groups:
        raise CliError(f"consumer {stream} > {name} has no priority group {group!r} (groups: {', '.join(groups)})")
    confirm(f"Unpin the client of group {group} on {stream} > {name}?", force=args.force)
    await js.unpin_consumer(stream, name, group)
    if session.json:
        _print_json({"stream": stream, "consumer": name, "group": group, "unpinned": True})
    else:
        print(f"Unpinned client of group {group} on {stream} > {name}")
    return 0


def _reset_arguments(p: argparse.ArgumentParser) -> None:
    _names(p)
    p.add_argument("seq", nargs="?", type=int, help="the stream sequence to deliver from (default: just after the ack floor)")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_reset(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    stream, name = _stream(args), _consumer(args)
    if args.seq is not None and args.seq < 1:
        raise UsageError("the sequence to reset to must be at least 1")
    where = f"sequence {args.seq}" if args.seq else "its ack floor"
    confirm(f"Reset Consumer {stream} > {name} to {where}?", force=args.force)
    result = await (await session.jetstream()).reset_consumer(stream, name, args.seq)
    if session.json:
        _print_json({"reset_seq": result.reset_seq, "info": result.info})
    else:
        print(f"Consumer {stream} > {name} was reset: delivery restarts at stream sequence {result.reset_seq}")
    return 0


GROUP = Group(
    "pyjetstream consumer",
    "manage, inspect and read from JetStream consumers",
    [
        Command("add", "create a consumer", cmd_add, _add_arguments, aliases=("create", "new")),
        Command("edit", "change a consumer's configuration", cmd_edit, _edit_arguments, aliases=("update",)),
        Command("info", "show a consumer's configuration and state", cmd_info, _names),
        Command("ls", "list the consumers of a stream", cmd_ls, _ls_arguments, aliases=("list",)),
        Command("rm", "delete a consumer", cmd_rm, _rm_arguments, aliases=("delete", "del")),
        Command("next", "retrieve (and acknowledge) the next messages", cmd_next, _next_arguments),
        Command("report", "report on the consumers of a stream", cmd_report, _stream_arg),
        Command("pause", "pause a consumer until a time (2.11+)", cmd_pause, _pause_arguments),
        Command("resume", "resume a paused consumer (2.11+)", cmd_resume, _resume_arguments, aliases=("unpause",)),
        Command("unpin", "unpin the pinned client of a priority group (2.11+)", cmd_unpin, _unpin_arguments),
        Command("reset", "deliver again from a stream sequence (2.14+)", cmd_reset, _reset_arguments),
    ],
)
