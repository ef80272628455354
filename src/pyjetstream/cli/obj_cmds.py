"""``pyjetstream obj …``: object store buckets, as ``nats object``.

``add`` a bucket, ``put`` a file (its path is the object name unless ``--name``; ``-`` or no file
reads stdin), ``get`` one (written under its base name in the current directory unless
``--output``; ``--output -`` writes to stdout), ``ls`` buckets or objects, ``info`` on a bucket
or object, ``rm`` an object or a bucket, ``watch`` changes and ``seal`` a bucket. ``put`` and
``get`` show a progress bar on a terminal (output's one progress bar; not when piped, with
``--json`` or ``--no-progress``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.buckets import add_bucket_arguments
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["GROUP", "main"]


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _print_json(value: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import print_json

    print_json(value)


async def _store(session: Session, bucket: str) -> Any:
    return await (await session.jetstream()).object_store(bucket)


# --------------------------------------------------------------------------- buckets


async def cmd_add(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.buckets import bucket_settings
    from pyjetstream.client.jetstream import ObjectStoreConfig

    store = await (await session.jetstream()).create_object_store(ObjectStoreConfig(**bucket_settings(args)))
    _show_status(session, await store.status())
    return 0


def _show_status(session: Session, status: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_duration, human_time, limit, print_sections

    info = status.stream_info
    cfg = info.config
    if session.json:
        _print_json(
            {
                "bucket": status.bucket,
                "description": status.description,
                "ttl": int(status.ttl * 1e9),
                "storage": str(status.storage),
                "replicas": status.replicas,
                "sealed": status.sealed,
                "size": status.size,
                "is_compressed": status.is_compressed,
                "metadata": status.metadata,
                "backing_store": status.backing_store,
                "stream_info": info,
            }
        )
        return
    config = [
        ("Bucket Name", status.bucket),
        ("Description", status.description or None),
        ("Replicas", status.replicas),
        ("TTL", human_duration(cfg.max_age, zero="unlimited")),
        ("Sealed", "yes" if status.sealed else "no"),
        ("Size", human_bytes(status.size)),
        ("Maximum Bucket Size", limit(cfg.max_bytes, human_bytes)),
        ("Storage", str(status.storage).capitalize()),
        ("Compressed", "yes" if status.is_compressed else "no"),
        ("Backing Store Kind", status.backing_store),
        ("JetStream Stream", cfg.name),
    ]
    for key, value in sorted(status.metadata.items()):
        config.append((f"Metadata {key}", value))
    print_sections(
        f"Information for Object Store Bucket {status.bucket} created {human_time(info.created)}",
        [("Configuration", config)],
    )


def _bucket_opt_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", nargs="?", help="bucket name")
    p.add_argument("name", nargs="?", help="object name")


def _rm_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("name", nargs="?", help="object to delete (without: delete the whole bucket)")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_rm(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    js = await session.jetstream()
    if args.name:
        confirm(f"Really delete object {args.bucket} > {args.name}?", force=args.force)
        await (await js.object_store(args.bucket)).delete(args.name)
        out = {"bucket": args.bucket, "name": args.name, "deleted": True}
        text = f"Object {args.bucket} > {args.name} was deleted"
    else:
        confirm(f"Really delete bucket {args.bucket} and all its objects?", force=args.force)
        await js.delete_object_store(args.bucket)
        out, text = {"bucket": args.bucket, "deleted": True}, f"Bucket {args.bucket} was deleted"
    _print_json(out) if session.json else print(text)
    return 0


def _seal_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("-f", "--force", action="store_true", help="do not ask for confirmation")


async def cmd_seal(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm

    confirm(f"Really seal bucket {args.bucket}? (no more changes, ever)", force=args.force)
    store = await _store(session, args.bucket)
    await store.seal()
    if session.json:
        _show_status(session, await store.status())
    else:
        print(f"Bucket {args.bucket} was sealed")
    return 0


# --------------------------------------------------------------------------- objects


def _put_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("file", nargs="?", default="-", help="file to store ('-' or none: stdin, needs --name)")
    p.add_argument("--name", help="object name (default: the file path as given)")
    p.add_argument("--description", default="", help="a description of the object")
    p.add_argument("-H", "--header", action="append", metavar="NAME:VALUE", help="object header (repeatable)")
    p.add_argument("--metadata", action="append", metavar="KEY=VALUE", help="object metadata (repeatable)")
    p.add_argument("--chunk-size", metavar="SIZE", help="chunk size (default 128KiB)")
    p.add_argument("-f", "--force", action="store_true", help="replace an existing object without asking")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _bar(session: Session, args: argparse.Namespace, label: str, total: int | None) -> tuple[Any, Any]:
    """A byte progress bar on a terminal and the function that moves it (a no-op elsewhere)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import progress_bar

    bar = progress_bar(not (args.no_progress or session.json), "bytes")
    if bar is None:
        return None, lambda n: None
    task = bar.add_task(label, total=total)
    return bar, lambda n: bar.advance(task, n)


async def _read(source: Any, size: int, advance: Any) -> Any:
    """The file's bytes in ``size`` pieces, each counted on the progress bar as it is read."""
    while True:
        chunk = source.read(size)
        if not chunk:
            return
        advance(len(chunk))
        yield chunk


async def cmd_put(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.prompts import confirm
    from pyjetstream.cli.values import parse_headers, parse_metadata, parse_size
    from pyjetstream.client.jetstream import ObjectMeta
    from pyjetstream.client.jetstream.errors import ObjectNotFound

    stdin = args.file == "-"
    name = args.name or ("" if stdin else args.file)
    if not name:
        raise UsageError("--name is required when reading the object from stdin")
    if not stdin and not Path(args.file).is_file():  # noqa: ASYNC240 - a CLI, one stat
        raise UsageError(f"{args.file}: no such file")
    meta = ObjectMeta(
        name=name,
        description=args.description,
        headers=parse_headers(args.header),
        metadata=parse_metadata(args.metadata),
        max_chunk_size=parse_size(args.chunk_size, what="--chunk-size") if args.chunk_size else 0,
    )
    store = await _store(session, args.bucket)
    try:
        await store.get_info(name)
        confirm(f"Replace existing object {args.bucket} > {name}?", force=args.force)
    except ObjectNotFound:
        pass
    total = None if stdin else Path(args.file).stat().st_size  # noqa: ASYNC240 - a CLI, one stat
    bar, advance = _bar(session, args, f"Uploading {name}", total)
    piece = meta.max_chunk_size or 128 * 1024
    try:
        source = contextlib.nullcontext(sys.stdin.buffer) if stdin else open(args.file, "rb")  # noqa: ASYNC230
        with source as fh:
            info = await store.put(meta, _read(fh, piece, advance))
    finally:
        if bar is not None:
            bar.stop()
    if session.json:
        _print_json(info)
    else:
        _show_object(info)
    return 0


def _get_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("name", help="object name")
    p.add_argument(
        "--output", "-O", metavar="FILE", help="where to write it ('-': stdout; default: its base name)"
    )
    p.add_argument("-f", "--force", action="store_true", help="overwrite an existing file")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


async def cmd_get(session: Session, args: argparse.Namespace) -> int:
    store = await _store(session, args.bucket)
    result = await store.get(args.name)
    if args.output == "-":
        out = sys.stdout.buffer
        async for chunk in result:
            out.write(chunk)
        out.flush()
        return 0
    target = Path(args.output or os.path.basename(args.name.rstrip("/")) or args.name)
    if target.exists() and not args.force:  # noqa: ASYNC240 - a CLI, one stat
        result.close()
        raise CliError(f"{target} already exists (use --force to overwrite)")
    tmp = target.with_name(f".{target.name}.partial")
    bar, advance = _bar(session, args, f"Downloading {args.name}", result.info.size)
    try:
        with open(tmp, "wb") as fh:  # noqa: ASYNC230 - sequential chunk writes
            async for chunk in result:
                fh.write(chunk)
                advance(len(chunk))
        tmp.replace(target)
    finally:
        tmp.unlink(missing_ok=True)
        if bar is not None:
            bar.stop()
    info = result.info
    if session.json:
        _print_json(
            {
                "bucket": args.bucket,
                "name": info.name,
                "file": str(target),
                "size": info.size,
                "digest": info.digest,
            }
        )
    else:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import human_bytes

        print(f"Wrote: {human_bytes(info.size)} to {target}")
    return 0


async def cmd_info(session: Session, args: argparse.Namespace) -> int:
    if not args.bucket:
        raise UsageError("a bucket name is required")
    store = await _store(session, args.bucket)
    if not args.name:
        _show_status(session, await store.status())
        return 0
    info = await store.get_info(args.name)
    _print_json(info) if session.json else _show_object(info)
    return 0


def _show_object(info: Any) -> None:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_time, print_sections

    link = info.options.link if info.options is not None else None
    meta = [
        ("Name", info.name),
        ("Bucket", info.bucket),
        ("Description", info.description or None),
        ("Link", f"{link.bucket} > {link.name or '(bucket)'}" if link is not None else None),
        ("Size", human_bytes(info.size)),
        ("Chunks", info.chunks),
        ("Modification Time", human_time(info.mtime)),
        ("Digest", info.digest or None),
        ("Deleted", "yes" if info.deleted else None),
    ]
    for name, values in sorted(info.headers.items()):
        meta.append((f"Header {name}", ", ".join(values)))
    for key, value in sorted(info.metadata.items()):
        meta.append((f"Metadata {key}", value))
    print_sections(f"Object information for {info.bucket} > {info.name}", [("Object", meta)])


def _ls_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", nargs="?", help="list this bucket's objects (default: list buckets)")
    p.add_argument("-n", "--names", action="store_true", help="print only names")


async def cmd_ls(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, print_table, short_time
    from pyjetstream.client.jetstream.errors import NoObjectsFound

    js = await session.jetstream()
    if not args.bucket:
        if args.names:
            names = sorted([n async for n in js.object_store_names()])
            _print_json(names) if session.json else print("\n".join(names))
            return 0
        stores = sorted([s async for s in js.object_stores()], key=lambda s: s.bucket)
        if session.json:
            _print_json(
                [
                    {"bucket": s.bucket, "description": s.description, "size": s.size, "sealed": s.sealed}
                    for s in stores
                ]
            )
        elif not stores:
            print("No Object Store buckets found")
        else:
            rows = [
                (
                    s.bucket,
                    s.description,
                    short_time(s.stream_info.created),
                    human_bytes(s.size),
                    "yes" if s.sealed else "no",
                )
                for s in stores
            ]
            print_table("Object Store Buckets", ("Bucket", "Description", "Created", "Size", "Sealed"), rows)
        return 0
    store = await js.object_store(args.bucket)
    try:
        objects = sorted(await store.list(), key=lambda i: i.name)
    except NoObjectsFound:
        objects = []
    if session.json:
        _print_json([o.name for o in objects] if args.names else objects)
    elif args.names:
        print("\n".join(o.name for o in objects))
    elif not objects:
        print(f"No objects in bucket {args.bucket}")
    else:
        listing = [(o.name, human_bytes(o.size), short_time(o.mtime)) for o in objects]
        print_table(
            f"Bucket Contents for {args.bucket}",
            ("Name", "Size", "Time"),
            listing,
            justify=("left", "right", "left"),
        )
    return 0


def _watch_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("bucket", help="bucket name")
    p.add_argument("--updates-only", action="store_true", help="only changes from now on")
    p.add_argument("--count", type=int, default=0, help="stop after this many changes")


async def cmd_watch(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, human_time, print_json_line

    store = await _store(session, args.bucket)
    watcher = await store.watch(updates_only=args.updates_only)
    print(f"Watching bucket {args.bucket}", file=sys.stderr, flush=True)
    shown = 0
    try:
        async for info in watcher:
            if info is None:
                continue
            shown += 1
            if session.json:
                print_json_line(info)
            elif info.deleted:
                print(f"[{human_time(info.mtime)}] DEL {info.bucket} > {info.name}", flush=True)
            else:
                print(
                    f"[{human_time(info.mtime)}] PUT {info.bucket} > {info.name}: {human_bytes(info.size)} in {info.chunks} chunks",
                    flush=True,
                )
            if args.count and shown >= args.count:
                break
    finally:
        watcher.stop()
    return 0


GROUP = Group(
    "pyjetstream obj",
    "object store buckets",
    [
        Command("add", "create a bucket", cmd_add, add_bucket_arguments, aliases=("new",)),
        Command("put", "store a file as an object", cmd_put, _put_arguments),
        Command("get", "retrieve an object into a file", cmd_get, _get_arguments),
        Command("ls", "list buckets, or the objects of a bucket", cmd_ls, _ls_arguments, aliases=("list",)),
        Command(
            "info", "a bucket's or an object's information", cmd_info, _bucket_opt_name, aliases=("status",)
        ),
        Command(
            "rm",
            "delete an object (or, without a name, the bucket)",
            cmd_rm,
            _rm_arguments,
            aliases=("del", "delete"),
        ),
        Command("watch", "print changes to objects as they happen", cmd_watch, _watch_arguments),
        Command("seal", "make a bucket read-only", cmd_seal, _seal_arguments),
    ],
)
