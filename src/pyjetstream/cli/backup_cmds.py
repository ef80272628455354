"""``pyjetstream stream backup STREAM DIR`` / ``stream restore DIR``, as the nats CLI's.

The backup directory is the nats CLI's (``backup.json`` + ``stream.tar.s2``, see
`pyjetstream.client.jetstream.backup`), so a backup made by either tool restores with the other,
against the embedded server or a nats-server. A progress bar shows on a terminal (``--no-progress``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pyjetstream.cli.app import Command, Session
from pyjetstream.cli.errors import CliError, UsageError

__all__ = ["BACKUP", "RESTORE"]


def _backup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("stream", help="the stream to back up")
    p.add_argument("target", help="the directory to write the backup into")
    p.add_argument(
        "--consumers", action=argparse.BooleanOptionalAction, default=True, help="include consumers (default)"
    )
    p.add_argument("--check", action="store_true", help="have the server verify every message first")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _bar(session: Session, args: argparse.Namespace, label: str) -> tuple[Any, Any]:
    """A progress bar on a terminal, and the callback that moves it (both None elsewhere)."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import progress_bar

    bar = progress_bar(not (args.no_progress or session.json), "bytes")
    if bar is None:
        return None, None
    task = bar.add_task(label, total=None)

    def update(state: Any) -> None:
        bar.update(task, completed=state.bytes, total=max(state.expected, state.bytes) or None)

    return bar, update


async def cmd_backup(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, print_json

    js = await session.jetstream()
    bar, update = _bar(session, args, f"Backing up {args.stream}")
    try:
        state = await js.backup_stream(
            args.stream, args.target, consumers=args.consumers, check=args.check, progress=update
        )
    finally:
        if bar is not None:
            bar.stop()
    if session.json:
        print_json({"stream": args.stream, "directory": args.target, "bytes": state.bytes, "chunks": state.chunks})
    else:
        print(
            f"Received {human_bytes(state.bytes)} in {state.chunks} chunks for stream {args.stream!r} "
            f"into {args.target}"
        )
    return 0


def _restore_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", help="a backup directory (from stream backup or nats stream backup)")
    p.add_argument("--config", metavar="FILE", help="restore with this stream configuration (same name)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _read_config(path: str) -> dict[str, Any]:
    try:
        with open(path) as f:
            config = json.load(f)
    except (OSError, ValueError) as exc:
        raise UsageError(f"could not read --config {path}: {exc}") from None
    if not isinstance(config, dict):
        raise UsageError(f"--config {path} is not a JSON object")
    return config


async def cmd_restore(session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.output import human_bytes, print_json
    from pyjetstream.cli.stream_cmds import show_stream_info

    config = _read_config(args.config) if args.config else None
    js = await session.jetstream()
    bar, update = _bar(session, args, "Restoring")
    try:
        stream = await js.restore_stream(args.directory, config=config, progress=update)
    finally:
        if bar is not None:
            bar.stop()
    info = stream.cached_info()
    if session.json:
        print_json(info)
        return 0
    if info.state is None:
        raise CliError("the server answered the restore without the stream's state")
    print(f"Restored stream {info.config.name!r}: {info.state.messages} messages, {human_bytes(info.state.bytes)}\n")
    show_stream_info(info)
    return 0


BACKUP = Command("backup", "back a stream up into a directory (nats CLI format)", cmd_backup, _backup_arguments)
RESTORE = Command("restore", "restore a stream from a backup directory", cmd_restore, _restore_arguments)
