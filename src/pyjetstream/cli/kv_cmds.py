"""``pyjetstream kv …``: key-value buckets, as ``nats kv``.

``add`` a bucket, ``put`` / ``create`` / ``update`` (compare-and-set on a revision) / ``get`` a key,
``del`` / ``purge`` a key, ``watch`` changes, ``history`` of a key, ``ls`` buckets or keys,
``status`` of a bucket and ``rm`` a bucket. Values come from the argument or stdin.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.buckets import add_bucket_arguments, read_value, value_fields
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _print_json(value: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json

    print_json(value)


def entry_json(entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "bucket": entry.bucket,
        "key": entry.key,
        "revision": entry.revision,
        "operation": str(entry.operation),
        "created": entry.created.isoformat(),
    }
    if str(entry.operation) == "PUT":
        out.update(value_fields(entry.value))
    return out


async def _bucket(session: Session, name: str) -> Any:
    return await (await session.jetstream()).key_value(name)


def _bucket_key(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("key", help="key")


def _bucket_key_value(p: argparse.ArgumentParser) -> None:
    _bucket_key(p)
    p.add_argument("value", nargs="?", help="value (default: stdin)")


# --------------------------------------------------------------------------- buckets


def _add_arguments(p: argparse.ArgumentParser) -> None:
    add_bucket_arguments(p)
    p.add_argument("--history", type=int, default=1, help="revisions kept per key (1-64, default 1)")
    p.add_argument("--max-value-size", metavar="SIZE", help="largest value accepted (default unlimited)")
    p.add_argument("--republish-source", metavar="SUBJECT", help="republish keys matching this subject")
    p.add_argument("--republish-destination", metavar="SUBJECT", help="republish to this subject")
    p.add_argument("--republish-headers", action="store_true", help="republish headers only")
    p.add_argument(
        "--marker-ttl", metavar="DUR", help="enable per-key TTLs and limit markers that live this long (2.11+)"
    )


def _ttl_seconds(value: str | None, flag: str) -> float | None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.values import parse_duration

    return None if value is None else parse_duration(value, what=flag) / 1e9


async def cmd_add(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.api import RePublish
    from pyjetstream.cli.buckets import bucket_settings
    from pyjetstream.cli.values import parse_size
    from pyjetstream.client.jetstream import KeyValueConfig

    if not 1 <= args.history <= 64:
        raise UsageError("--history must be between 1 and 64")
    republish = None
    if args.republish_source or args.republish_destination:
        if not args.republish_destination:
            raise UsageError("--republish-source needs --republish-destination")
        republish = RePublish(
            src=args.republish_source or ">",
            dest=args.republish_destination,
            headers_only=args.republish_headers,
        )
    max_value = parse_size(args.max_value_size, what="--max-value-size") if args.max_value_size else 0
    marker_ttl = _ttl_seconds(args.marker_ttl, "--marker-ttl") or 0.0
    config = KeyValueConfig(
        history=args.history,
        max_value_size=max_value,
        republish=republish,
        limit_marker_ttl=marker_ttl,
        **bucket_settings(args),
    )
    kv = await (await session.jetstream()).create_key_value(config)
    await _show_status(session, await kv.status())
    return 0


async def cmd_status(session: Session, args: argparse.Namespace) -> int:
    kv = await _bucket(session, args.bucket)
    await _show_status(session, await kv.status())
    return 0


async def _show_status(session: Session, status: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import (
        human_bytes,
        human_count,
        human_duration,
        human_time,
        limit,
        print_sections,
    )

    info = status.stream_info
    cfg = info.config
    if session.json:
        _print_json(
            {
                "bucket": status.bucket,
                "values": status.values,
                "history": status.history,
                "ttl": int(status.ttl * 1e9),
                "limit_marker_ttl": int(status.limit_marker_ttl * 1e9),
                "bytes": status.bytes,
                "is_compressed": status.is_compressed,
                "backing_store": status.backing_store,
                "stream_info": info,
            }
        )
        return
    config = [
        ("Bucket Name", status.bucket),
        ("Description", cfg.description or None),
        ("History Kept", status.history),
        ("Values Stored", human_count(status.values)),
        ("Compressed", "yes" if status.is_compressed else "no"),
        ("Backing Store Kind", status.backing_store),
        ("Backing Stream", cfg.name),
        ("Bucket Size", human_bytes(status.bytes)),
        ("Maximum Bucket Size", limit(cfg.max_bytes, human_bytes)),
        ("Maximum Value Size", limit(cfg.max_msg_size, human_bytes)),
        ("Maximum Age", human_duration(cfg.max_age, zero="unlimited")),
        ("Limit Marker TTL", human_duration(int(status.limit_marker_ttl * 1e9)) if status.limit_marker_ttl else None),
        ("JetStream Stream", cfg.name),
        ("Storage", str(cfg.storage).capitalize()),
        ("Replicas", cfg.num_replicas),
    ]
    if cfg.republish is not None:
        config.append(("Republishing", f"{cfg.republish.src} → {cfg.republish.dest}"))
    for key, value in sorted(cfg.metadata.items()):
        config.append((f"Metadata {key}", value))
    print_sections(
        f"Information for Key-Value Store Bucket {status.bucket} created {human_time(info.created)}",
        [("Configuration", config)],
    )


def _rm_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_rm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    confirm(f"Really delete bucket {args.bucket} and all its keys?", force=args.force)
    await (await session.jetstream()).delete_key_value(args.bucket)
    if session.json:
        _print_json({"bucket": args.bucket, "deleted": True})
    else:
        print(f"Bucket {args.bucket} was deleted")
    return 0


def _ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", nargs="?", help="list this bucket's keys (default: list buckets)")
    p.add_argument("filters", nargs="*", metavar="KEY", help="only keys matching these filters (2.10+)")
    p.add_argument("-n", "--names", action="store_true", help="print only names")


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_age, human_bytes, human_count, print_table, short_time

    js = await session.jetstream()
    if args.bucket:
        kv = await js.key_value(args.bucket)
        keys = sorted([k async for k in kv.list_keys(*args.filters)])
        if session.json:
            _print_json(keys)
        elif keys:
            print("\n".join(keys))
        else:
            print(f"No keys found in bucket {args.bucket}", file=sys.stderr)
        return 0
    if args.names:
        names = sorted([n async for n in js.key_value_store_names()])
        _print_json(names) if session.json else print("\n".join(names))
        return 0
    stores = sorted([s async for s in js.key_value_stores()], key=lambda s: s.bucket)
    if session.json:
        _print_json(
            [
                {
                    "bucket": s.bucket,
                    "description": s.stream_info.config.description,
                    "values": s.values,
                    "bytes": s.bytes,
                    "history": s.history,
                }
                for s in stores
            ]
        )
        return 0
    if not stores:
        print("No Key-Value buckets found")
        return 0
    rows = [
        (
            s.bucket,
            s.stream_info.config.description,
            short_time(s.stream_info.created),
            human_bytes(s.bytes),
            human_count(s.values),
            human_age(s.stream_info.state.last_ts) if s.stream_info.state.last_seq else "never",
        )
        for s in stores
    ]
    columns = ("Bucket", "Description", "Created", "Size", "Values", "Last Update")
    print_table(
        "Key-Value Buckets", columns, rows, justify=("left", "left", "left", "right", "right", "left")
    )
    return 0


# --------------------------------------------------------------------------- keys


async def cmd_put(session: Session, args: argparse.Namespace) -> int:
    kv = await _bucket(session, args.bucket)
    value = read_value(args.value)
    revision = await kv.put(args.key, value)
    _written(session, args, revision, value)
    return 0


def _create_arguments(p: argparse.ArgumentParser) -> None:
    _bucket_key_value(p)
    p.add_argument("--ttl", metavar="DUR", help="remove the key after this long (2.11+, bucket --marker-ttl)")


async def cmd_create(session: Session, args: argparse.Namespace) -> int:
    kv = await _bucket(session, args.bucket)
    value = read_value(args.value)
    revision = await kv.create(args.key, value, ttl=_ttl_seconds(args.ttl, "--ttl"))
    _written(session, args, revision, value)
    return 0


def _update_arguments(p: argparse.ArgumentParser) -> None:
    _bucket_key_value(p)
    p.add_argument("revision", nargs="?", type=int, help="the revision the key must be at")
    p.add_argument("--revision", dest="revision_flag", type=int, metavar="N", help="same, as a flag")


async def cmd_update(session: Session, args: argparse.Namespace) -> int:
    revision = args.revision_flag if args.revision_flag is not None else args.revision
    if revision is None:
        raise UsageError("the revision the key must be at is required (update BUCKET KEY VALUE REVISION)")
    kv = await _bucket(session, args.bucket)
    value = read_value(args.value)
    new_revision = await kv.update(args.key, value, revision)
    _written(session, args, new_revision, value)
    return 0


def _written(session: Session, args: argparse.Namespace, revision: int, value: bytes) -> None:
    if session.json:
        _print_json({"bucket": args.bucket, "key": args.key, "revision": revision})
    else:
        sys.stdout.buffer.write(value + b"\n")


def _get_arguments(p: argparse.ArgumentParser) -> None:
    _bucket_key(p)
    p.add_argument("--revision", type=int, metavar="N", help="this revision instead of the latest")
    p.add_argument("--raw", action="store_true", help="print only the value")


async def cmd_get(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_time

    kv = await _bucket(session, args.bucket)
    entry = await kv.get(args.key, revision=args.revision)
    if session.json:
        _print_json(entry_json(entry))
    elif args.raw:
        sys.stdout.buffer.write(entry.value + b"\n")
    else:
        print(
            f"{args.bucket} > {entry.key} revision: {entry.revision} created @ {human_time(entry.created)}\n"
        )
        sys.stdout.flush()
        sys.stdout.buffer.write(entry.value + b"\n")
    return 0


def _del_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("key", nargs="?", help="key to delete (without: delete the whole bucket)")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_del(session: Session, args: argparse.Namespace) -> int:
    if not args.key:
        return await cmd_rm(session, args)
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    confirm(f"Really delete key {args.bucket} > {args.key}?", force=args.force)
    kv = await _bucket(session, args.bucket)
    await kv.delete(args.key)
    _done(session, args, "deleted")
    return 0


def _purge_arguments(p: argparse.ArgumentParser) -> None:
    _bucket_key(p)
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")
    p.add_argument("--ttl", metavar="DUR", help="remove the purge marker after this long (2.11+)")


async def cmd_purge(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    confirm(f"Really purge key {args.bucket} > {args.key} and its history?", force=args.force)
    kv = await _bucket(session, args.bucket)
    await kv.purge(args.key, ttl=_ttl_seconds(args.ttl, "--ttl"))
    _done(session, args, "purged")
    return 0


def _done(session: Session, args: argparse.Namespace, what: str) -> None:
    if session.json:
        _print_json({"bucket": args.bucket, "key": args.key, what: True})
    else:
        print(f"Key {args.bucket} > {args.key} was {what}")


async def cmd_history(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, print_table, short_time

    kv = await _bucket(session, args.bucket)
    entries = await kv.history(args.key)
    if session.json:
        _print_json([entry_json(e) for e in entries])
        return 0
    rows = []
    for e in entries:
        value = e.value.decode("utf-8", "replace")
        rows.append(
            (
                e.key,
                e.revision,
                str(e.operation),
                short_time(e.created),
                human_bytes(len(e.value)),
                value[:40] + ("…" if len(value) > 40 else ""),
            )
        )
    columns = ("Key", "Revision", "Op", "Created", "Length", "Value")
    print_table(
        f"History for {args.bucket} > {args.key}",
        columns,
        rows,
        justify=("left", "right", "left", "left", "right", "left"),
    )
    return 0


def _watch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("keys", nargs="*", metavar="KEY", help="keys or filters to watch (default: all keys)")
    p.add_argument(
        "--history", action="store_true", help="start with every kept revision, not only the latest"
    )
    p.add_argument("--updates-only", action="store_true", help="only changes from now on")
    p.add_argument("--ignore-deletes", action="store_true", help="do not show deletes and purges")
    p.add_argument("--count", type=int, default=0, help="stop after this many entries")


async def cmd_watch(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_time, print_json_line

    if args.history and args.updates_only:
        raise UsageError("--history and --updates-only exclude each other")
    kv = await _bucket(session, args.bucket)
    keys = args.keys or [">"]
    watcher = await kv.watch(
        keys if len(keys) > 1 else keys[0],
        include_history=args.history,
        updates_only=args.updates_only,
        ignore_deletes=args.ignore_deletes,
    )
    print(f"Watching bucket {args.bucket} key {' '.join(keys)}", file=sys.stderr, flush=True)
    shown = 0
    try:
        async for entry in watcher:
            if entry is None:
                continue  # the end of the initial values
            shown += 1
            if session.json:
                print_json_line(entry_json(entry))
            else:
                op = str(entry.operation)
                line = f"[{human_time(entry.created)}] {op} {args.bucket} > {entry.key}"
                if op == "PUT":
                    line += ": " + entry.value.decode("utf-8", "replace")
                print(line, flush=True)
            if args.count and shown >= args.count:
                break
    finally:
        watcher.stop()
    if args.count and shown < args.count:
        raise CliError(f"the watch ended after {shown} of {args.count} entries")
    return 0


GROUP = Group(
    "pyjetstream kv",
    "key-value buckets",
    [
        Command("add", "create a bucket", cmd_add, _add_arguments, aliases=("new",)),
        Command("put", "set a key's value", cmd_put, _bucket_key_value),
        Command("get", "print a key's value", cmd_get, _get_arguments),
        Command("create", "set a key only if it has no value", cmd_create, _create_arguments),
        Command("update", "set a key only if it is at the given revision", cmd_update, _update_arguments),
        Command(
            "del",
            "delete a key (or, without a key, the bucket)",
            cmd_del,
            _del_arguments,
            aliases=("delete",),
        ),
        Command("purge", "remove a key and its history", cmd_purge, _purge_arguments),
        Command("watch", "print changes to keys as they happen", cmd_watch, _watch_arguments),
        Command("history", "every kept revision of a key", cmd_history, _bucket_key),
        Command("ls", "list buckets, or the keys of a bucket", cmd_ls, _ls_arguments, aliases=("list",)),
        Command(
            "status",
            "a bucket's configuration and state",
            cmd_status,
            lambda p: p.add_argument("bucket"),
            aliases=("info",),
        ),
        Command("rm", "delete a bucket", cmd_rm, _rm_arguments),
    ],
)
