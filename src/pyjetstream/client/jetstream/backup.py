"""Stream backup and restore: the client side of ``$JS.API.STREAM.SNAPSHOT`` / ``STREAM.RESTORE``.

A backup is a directory as the nats CLI writes it (jsm.go's ``SnapshotToDirectory``): ``backup.json``
holds the stream's ``config`` and ``state`` as the server reported them, and ``stream.tar.s2`` the
snapshot bytes exactly as the server streamed them (an S2 stream around a tar, or from 2.15 on the
``NATSARC1`` v2 archive: the client never looks inside, so either travels unchanged). Backups made
here restore with ``nats stream restore`` and the other way round.

The protocol (nats-server ``jsStreamSnapshotRequest`` / ``streamSnapshot``): the server answers the
request, then sends chunks to the deliver subject; a chunk with a reply subject is acknowledged with
an empty message (the server's flow-control window); an empty message ends the snapshot, and a
message with a status header reports a failure. Restore sends ``{config, state}``, then each chunk
as a request to the deliver subject the server names (each answered, so a failure stops at once),
and finally an empty request, answered with a ``stream_create_response`` once the server has
restored the stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from pyjetstream.api import (
    StreamCreateResponse,
    StreamInfo,
    StreamRestoreResponse,
    StreamSnapshotRequest,
    StreamSnapshotResponse,
    codec,
)
from pyjetstream.api.durations import Duration, seconds
from pyjetstream.client.jetstream.errors import JetStreamError, api_exception

if TYPE_CHECKING:
    from pyjetstream.client.jetstream.context import JetStream

__all__ = ["BACKUP_DATA", "BACKUP_META", "BackupProgress", "backup_stream", "restore_stream"]

BACKUP_META = "backup.json"
BACKUP_DATA = "stream.tar.s2"
SNAPSHOT_CHUNK = 128 * 1024  # jsm.go's default chunk size for backups
RESTORE_CHUNK = 64 * 1024  # and for restores
RESTORE_FINISH_TIMEOUT = 3600.0  # the server restores the whole stream before it answers


@dataclass
class BackupProgress:
    """What a backup or restore has moved so far (``expected``: the stream's bytes, a rough total)."""

    bytes: int = 0
    chunks: int = 0
    expected: int = 0
    done: bool = False


ProgressCallback = Callable[[BackupProgress], None]


async def backup_stream(
    js: JetStream,
    stream: str,
    directory: str | Path,
    *,
    consumers: bool = True,
    check: bool = False,
    chunk_size: int = SNAPSHOT_CHUNK,
    progress: ProgressCallback | None = None,
    timeout: Duration = 30.0,
) -> BackupProgress:
    """Snapshot ``stream`` into ``directory`` (created), with its consumers unless ``consumers=False``;
    ``check`` asks the server to verify every message's checksum first. ``timeout`` bounds the wait
    for each chunk, not the whole backup."""
    timeout = seconds(timeout)
    folder = _backup_folder(directory)
    nc = js.nc
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox, pending_msgs_limit=0, pending_bytes_limit=0)
    state = BackupProgress()
    try:
        await nc.flush()
        body = StreamSnapshotRequest(
            deliver_subject=inbox, no_consumers=not consumers, chunk_size=chunk_size, jsck=check
        )
        reply = await nc.request(js.api.stream_snapshot(stream), codec.encode(body), timeout=js.timeout)
        resp = codec.decode_response(reply.data, StreamSnapshotResponse)
        if resp.error is not None:
            raise api_exception(resp.error)
        raw = json.loads(reply.data)
        state.expected = int(raw.get("state", {}).get("bytes", 0))
        if progress:
            progress(state)
        with (folder / BACKUP_DATA).open("wb") as data:
            while True:
                try:
                    msg = await sub.next_msg(timeout=timeout)
                except TimeoutError:
                    raise JetStreamError(f"backup of {stream!r} stalled: no data for {timeout:g}s") from None
                status = msg.status
                if status and status != 204:
                    raise JetStreamError(f"backup of {stream!r} failed: {status} {msg.description or ''}".strip())
                if not msg.data:
                    break
                data.write(msg.data)
                state.bytes += len(msg.data)
                state.chunks += 1
                if msg.reply:
                    await nc.publish(msg.reply, b"")
                if progress:
                    progress(state)
        meta = {"config": raw.get("config", {}), "state": raw.get("state", {})}
        (folder / BACKUP_META).write_text(json.dumps(meta, indent=2))
        state.done = True
        if progress:
            progress(state)
        return state
    finally:
        await sub.unsubscribe()


def _backup_folder(directory: str | Path) -> Path:
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder


def read_backup_meta(directory: str | Path) -> dict[str, Any]:
    """``backup.json`` of a backup directory, as the raw JSON object (every field kept)."""
    path = Path(directory) / BACKUP_META
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise JetStreamError(f"{directory} is not a stream backup: no {BACKUP_META}") from None
    except ValueError as exc:
        raise JetStreamError(f"invalid {path}: {exc}") from None
    if not isinstance(meta, dict) or not isinstance(meta.get("config"), dict) or not meta["config"].get("name"):
        raise JetStreamError(f"invalid {path}: no stream config")
    if not (Path(directory) / BACKUP_DATA).is_file():
        raise JetStreamError(f"{directory} is not a stream backup: no {BACKUP_DATA}")
    return meta


async def restore_stream(
    js: JetStream,
    directory: str | Path,
    *,
    config: dict[str, Any] | None = None,
    chunk_size: int = RESTORE_CHUNK,
    progress: ProgressCallback | None = None,
) -> StreamInfo:
    """Restore the backup in ``directory`` into a new stream of the same name (``config`` replaces the
    saved configuration, as ``nats stream restore --config``; the name cannot change). Returns the
    restored stream's info."""
    meta = read_backup_meta(directory)
    name = meta["config"]["name"]
    if config is not None:
        if config.get("name") != name:
            raise JetStreamError("stream name may not be changed during restore")
        meta["config"] = config
    if meta["config"].get("storage") == "memory":
        raise JetStreamError("memory streams do not support snapshots")
    nc = js.nc
    reply = await nc.request(js.api.stream_restore(name), json.dumps(meta).encode(), timeout=js.timeout)
    resp = codec.decode_response(reply.data, StreamRestoreResponse)
    if resp.error is not None:
        raise api_exception(resp.error)
    path = Path(directory) / BACKUP_DATA
    state = BackupProgress(expected=path.stat().st_size)
    with path.open("rb") as data:
        while chunk := data.read(chunk_size):
            answer = await nc.request(resp.deliver_subject, chunk, timeout=js.timeout)
            _raise_if_error(answer.data)
            state.bytes += len(chunk)
            state.chunks += 1
            if progress:
                progress(state)
    final = await nc.request(resp.deliver_subject, b"", timeout=RESTORE_FINISH_TIMEOUT)
    try:
        created = codec.decode_response(final.data, StreamCreateResponse)
    except msgspec.DecodeError as exc:
        raise JetStreamError(f"invalid final restore response: {exc}") from None
    if created.error is not None:
        raise api_exception(created.error)
    state.done = True
    if progress:
        progress(state)
    return created.payload()


def _raise_if_error(data: bytes) -> None:
    """A chunk's answer is empty, or an API error (then the restore has failed)."""
    if not data:
        return
    try:
        raw = json.loads(data)
    except ValueError:
        return
    if isinstance(raw, dict) and raw.get("error"):
        err = raw["error"]
        raise JetStreamError(f"restore failed: {err.get('description', err)}")
