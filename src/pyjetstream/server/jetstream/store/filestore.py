"""FileStore: messages in append-only block files (nats-server ``filestore.go``, simplified).

Directory layout (``FileStoreConfig.directory`` is the stream's directory):

    meta.inf, meta.sum          stream definition (write_meta / read_meta), crash-safe
    msgs/<n>.blk                message blocks (format in ``_records``)
    msgs/<n>.idx                a sealed block's index: its slots, size and CRC (``blockfiles``)
    msgs/index.snap             index snapshot, only between a clean stop and the next start
    obs/<consumer>/             consumer definition (meta.inf/.sum) and state (o.dat)

Durability. Every mutation is written to the OS (``pwrite``) before the call returns, or when
the outermost ``batch()`` exits; a process crash loses nothing that was acknowledged after
that. ``sync="always"`` also fsyncs before returning; ``sync="interval"`` (default, as
nats-server's ``sync_interval``) leaves fsync to `FileStore.sync`, which the caller runs
every ``sync_interval`` seconds (no background thread: the store is single-threaded).

The store is a `SeqIndex` composed with `BlockFiles`
(the payload backend: block format, deletes, compaction); this module adds the directory, the
stream and consumer metadata, sync, and recovery.

Recovery. A clean stop leaves an index snapshot (the index's arrays plus the block list) that
is loaded if it matches the block files. Otherwise (``kill -9``) the backend hands over every
block's slots — from the block's saved index when it matches the block byte for byte, else
from a scan of the block (the active one, or one changed since its index was written) — the
index appends them whole, and the backend recounts its blocks from the index. What was dropped
is reported in ``StreamState.lost``. The snapshot stays beside the block indexes because it is
still the faster start (one file, no block read: 0.04 s of CPU for 1 M messages against 0.22 s
with the active block scanned) and it carries what no block holds (``lost`` of earlier starts).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import _snapshot
from ._fileutil import (
    fsync_dir,
    read_meta_file,
    release_free_memory,
    remove_tree_later,
    write_file,
    write_meta_file,
)
from .base import (
    ACK_EXPLICIT,
    COMPRESSION_S2,
    ConsumerStoreBase,
    LostData,
    StoreConfig,
    StoreError,
)
from .blockfiles import BlockFiles
from .consumer_store import FileConsumerStore
from .indexed import IndexedStore
from .seqindex import SeqIndex

SYNC_INTERVAL = "interval"
SYNC_ALWAYS = "always"
DEFAULT_BLOCK_SIZE = 8 * 1024 * 1024
MIN_BLOCK_SIZE = 1024
# Rewrite a sealed block once its dead bytes exceed its live bytes and this much (capped by
# half a block): nats-server compacts at 2 MiB of waste.
COMPACT_MIN_BYTES = 2 * 1024 * 1024

MSGS_DIR = "msgs"
OBS_DIR = "obs"
SNAPSHOT_FILE = "index.snap"
# A recovery of at least this many messages gives the heap's free pages back to the OS.
TRIM_AFTER_MSGS = 100_000
# Sealed blocks whose index is stale get a fresh one at most this many per sync (all at stop).
REFRESH_PER_SYNC = 4
# The file store's index pages are its blocks: a page is never cut by its length.
FILE_PAGE = 1 << 62


@dataclass(slots=True)
class FileStoreConfig:
    """Storage options of a file store (the limits are in `StoreConfig`)."""

    directory: str
    block_size: int = DEFAULT_BLOCK_SIZE
    sync: str = SYNC_INTERVAL
    sync_interval: float = 120.0  # seconds; the caller's timer calls FileStore.sync()
    compact_min_bytes: int = COMPACT_MIN_BYTES

    def __post_init__(self) -> None:
        if self.sync not in (SYNC_INTERVAL, SYNC_ALWAYS):
            raise ValueError(f"sync must be 'interval' or 'always', not {self.sync!r}")
        if self.block_size < MIN_BLOCK_SIZE:
            raise ValueError(f"block_size must be at least {MIN_BLOCK_SIZE}")


class FileStore(IndexedStore):
    """Durable message store; see the module docstring for format and guarantees."""

    storage_type = "file"
    _backend: BlockFiles

    def __init__(self, fcfg: FileStoreConfig, cfg: StoreConfig | None = None) -> None:
        cfg = cfg or StoreConfig(name=os.path.basename(os.fspath(fcfg.directory)))
        self._fcfg = dataclasses.replace(fcfg, directory=os.fspath(fcfg.directory))
        self._dir = self._fcfg.directory
        self._msgs_dir = os.path.join(self._dir, MSGS_DIR)
        self._obs_dir = os.path.join(self._dir, OBS_DIR)
        self._sync_always = self._fcfg.sync == SYNC_ALWAYS
        index = SeqIndex(page_max=FILE_PAGE)  # the pages are the blocks
        blocks = BlockFiles(
            index,
            self._msgs_dir,
            self._fcfg.block_size,
            min(self._fcfg.compact_min_bytes, self._fcfg.block_size // 2),
            self._sync_always,
            cfg.compression == COMPRESSION_S2,
        )
        super().__init__(cfg, index, blocks)
        self._consumers: dict[str, FileConsumerStore] = {}
        self._missing: LostData | None = None  # messages of block files gone since the snapshot

        os.makedirs(self._msgs_dir, exist_ok=True)
        existed = self._recover()
        blocks.open_active()
        blocks.keep_ttls(self.msg_ttls())
        if self._index.msgs >= TRIM_AFTER_MSGS:
            release_free_memory()
        if not existed and cfg.first_seq > 0:  # nats-server purges to first_seq, 1 included
            self._purge(cfg.first_seq)
        if self._sync_always:
            self.sync()
        if cfg.max_age > 0:
            self.expire_msgs()
        self._enforce_limits(0)
        blocks.commit()
        blocks.mark_good()

    @property
    def directory(self) -> str:
        return self._dir

    @property
    def file_config(self) -> FileStoreConfig:
        return dataclasses.replace(self._fcfg)

    # ------------------------------------------------------------------------------------
    # Lifecycle
    # ------------------------------------------------------------------------------------
    def flush(self) -> None:
        if self._closed:
            return
        self._backend.flush()

    def sync(self) -> None:
        """Flush and fsync everything written since the last sync (interval policy timer)."""
        self.sync_later()()

    def sync_later(self) -> Callable[[], None]:
        """Flush now and return a function that fsyncs everything flushed so far.

        The function works on duplicated descriptors only, so an event loop can run it in a
        worker thread (``loop.run_in_executor(None, store.sync_later())``) and keep using the
        store meanwhile; what is written after this call is left for the next sync.
        """
        if self._closed:
            return _nothing
        self.flush()
        with contextlib.suppress(OSError):
            self._backend.refresh_indexes(REFRESH_PER_SYNC)
        fds: list[int] = []
        dirs: list[str] = []
        self._backend.collect_sync(fds, dirs)
        for cs in self._consumers.values():
            if not cs.closed:
                cs.collect_sync(fds, dirs)

        def run() -> None:
            try:
                for fd in fds:
                    os.fdatasync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
            for d in dirs:
                with contextlib.suppress(FileNotFoundError):
                    fsync_dir(d)

        return run

    def stop(self) -> None:
        if self._closed:
            return
        for cs in list(self._consumers.values()):
            cs.stop()
        with contextlib.suppress(OSError):
            self._backend.refresh_indexes()
        self.sync()
        with contextlib.suppress(OSError):
            self._write_snapshot()
        self._backend.close_all()
        self._closed = True

    def abandon(self) -> None:
        """Drop the store as ``kill -9`` would: descriptors closed, nothing flushed or
        snapshotted (tests and benchmarks simulate crashes with it)."""
        self._backend.close_all()
        self._closed = True

    def delete(self) -> None:
        if not self._closed:
            for cs in list(self._consumers.values()):
                cs.stop()
            self._backend.close_all()
            self._closed = True
        # Renamed aside at once, removed in the background (its consumers' directories with it).
        remove_tree_later(self._dir)

    # ------------------------------------------------------------------------------------
    # Metadata and consumers
    # ------------------------------------------------------------------------------------
    def write_meta(self, data: bytes) -> None:
        self._check_open()
        write_meta_file(self._dir, data)

    def read_meta(self) -> bytes | None:
        return read_meta_file(self._dir)

    def consumer_store(
        self, name: str, ack_policy: str = ACK_EXPLICIT, max_deliver: int = -1
    ) -> ConsumerStoreBase:
        self._check_open()
        if not name or "/" in name or "\\" in name or name in (".", ".."):
            raise StoreError(f"invalid consumer name {name!r}")
        cs = self._consumers.get(name)
        if cs is None or cs.closed:
            cs = FileConsumerStore(
                os.path.join(self._obs_dir, name), name, self._sync_always, ack_policy, max_deliver
            )
            self._consumers[name] = cs
        else:
            cs.update_config(ack_policy, max_deliver)
        return cs

    def needs_sync(self) -> bool:
        """Whether anything was written since the last fsync (lets a sync timer skip work)."""
        if self._backend.fsync_pending or self._backend.dir_dirty:
            return True
        return any(cs.needs_sync() for cs in self._consumers.values() if not cs.closed)

    def consumer_names(self) -> list[str]:
        try:
            entries = os.listdir(self._obs_dir)
        except FileNotFoundError:
            return []
        return sorted(e for e in entries if os.path.isdir(os.path.join(self._obs_dir, e)))

    # ------------------------------------------------------------------------------------
    # Snapshot and recovery
    # ------------------------------------------------------------------------------------
    def _write_snapshot(self) -> None:
        scalars, arrays, names = self._index.snapshot()
        header = {
            **scalars,
            **self._backend.snapshot(),
            "lost": None if self._lost is None else [self._lost.msgs, self._lost.bytes],
            "ttls": [[seq, ttl] for seq, ttl in self.msg_ttls().items()],
        }
        path = os.path.join(self._msgs_dir, SNAPSHOT_FILE)
        write_file(path + ".tmp", _snapshot.encode(header, arrays, names), fsync=True)
        os.replace(path + ".tmp", path)
        fsync_dir(self._msgs_dir)

    def _load_snapshot(self, files: list[tuple[int, str]]) -> bool:
        path = os.path.join(self._msgs_dir, SNAPSHOT_FILE)
        try:
            with open(path, "rb") as f:
                buf = f.read()
        except FileNotFoundError:
            return False
        try:
            decoded = _snapshot.decode(buf)
            if decoded is None:
                return False
            header, arrays, names = decoded
            if not self._backend.restore(header, files):
                self._missing = _missing_blocks(header, arrays, names, files)
                return False
            if not self._index.restore(header, arrays, names):
                self._backend.blocks = []
                return False
            if header["lost"] is not None:
                self._lost = LostData(list(header["lost"][0]), header["lost"][1])
            self.restore_ttls({int(seq): int(ttl) for seq, ttl in header.get("ttls", [])})
            return True
        except (KeyError, ValueError, TypeError, OSError):
            return False
        finally:
            # Never trust it twice: the blocks change from here on.
            os.unlink(path)
            fsync_dir(self._msgs_dir)

    def _missing_lost(self, missing: LostData) -> LostData:
        """``lost`` after a rebuild, with the messages of missing block files that no remaining
        block holds (a copy may survive in a block that was being rewritten)."""
        index = self._index
        gone = [seq for seq in missing.msgs if not index.live(seq)]
        found = self._lost
        msgs = sorted(set(gone) | set(found.msgs if found is not None else []))
        nbytes = (found.bytes if found is not None else 0) + (missing.bytes if gone else 0)
        return LostData(msgs, nbytes)

    def _recover(self) -> bool:
        """Rebuild the index from disk; return whether any block existed."""
        blocks = self._backend
        files = blocks.list_files()
        if self._load_snapshot(files):
            return True
        if not files:
            return False
        self._index.rebuild(blocks.load(files))
        blocks.account()
        self._lost = blocks.lost(with_missing=self._missing is None)
        if self._missing is not None:
            self._lost = self._missing_lost(self._missing)
            self._missing = None
        self.restore_ttls(blocks.found_ttls)
        blocks.found_ttls = {}
        return True


def _missing_blocks(
    header: dict[str, Any],
    arrays: dict[str, array[int]],
    names: list[str | None],
    files: list[tuple[int, str]],
) -> LostData | None:
    """The messages a clean stop's snapshot placed in block files that are now gone (deleted
    under the server, or after it stopped): (seq, size) of each, for ``lost`` once the blocks
    that remain have been scanned (nats-server reports such messages in LostStreamData)."""
    present = {idx for idx, _ in files}
    listed = header["blocks"]
    if all(b[0] in present for b in listed):
        return None
    probe = SeqIndex(page_max=FILE_PAGE)
    if not probe.restore(header, arrays, names):
        return None
    seqs: list[int] = []
    size = 0
    for i, b in enumerate(listed):
        if b[0] in present:
            continue
        hi = listed[i + 1][1] if i + 1 < len(listed) else probe.last_seq + 1
        for seq in range(max(b[1], probe.first_seq), hi):
            p = probe.at(seq)
            if p is not None:
                seqs.append(seq)
                size += p.sizes[seq - p.first]
    return LostData(seqs, size) if seqs else None


def _nothing() -> None:
    pass
