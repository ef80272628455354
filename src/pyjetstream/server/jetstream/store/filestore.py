"""FileStore: messages in append-only block files (nats-server ``filestore.go``, simplified).

Directory layout (``FileStoreConfig.directory`` is the stream's directory):

    meta.inf, meta.sum          stream definition (write_meta / read_meta), crash-safe
    msgs/<n>.blk                message blocks (format in ``_records``)
    msgs/<n>.idx                a sealed block's index: its slots, size and CRC (``blockindex``)
    msgs/index.db               the stream state: the index's resident part and the block list
    obs/<consumer>/             consumer definition (meta.inf/.sum) and state (o.dat)

Durability. Every mutation is written to the OS (``pwrite``) before the call returns, or when
the outermost ``batch()`` exits; a process crash loses nothing that was acknowledged after
that. ``sync="always"`` also fsyncs before returning; ``sync="interval"`` (default, as
nats-server's ``sync_interval``) leaves fsync to `FileStore.sync`, which the caller runs
every ``sync_interval`` seconds (no background thread: the store is single-threaded).

The store is a `SeqIndex` composed with `BlockFiles`
(the payload backend: block format, deletes, compaction); this module adds the directory, the
stream and consumer metadata, sync, and recovery.

Memory. The index keeps resident what nats-server's file store keeps — per block (page) its
live counts, last timestamp and each subject's count, per subject its count and first and last
sequence, the stream's counters — and the slots of the active block and of a few sealed ones
(``cache_slots``, least recently used first); a sealed block's slots are loaded again from its
index file when a query needs them.

Recovery. A clean stop, and each sync that follows a change, writes the stream state
(``index.db``, nats-server's ``writeFullState``): the index's resident part and the block list,
each block with its size and tail CRC. A start loads it and vouches for every block whose file is
still as the state saw it — O(blocks + subjects), no block read — and reads the others (after
``kill -9``, the active block — which took every removal's tombstone — and any block a trim's
tombstone or an erase changed since): from the block's saved index
when it matches the block byte for byte, else from a scan; the index fixes what they change.
Without a state (or with one that cannot be read) every block is read. What was dropped is
reported in ``StreamState.lost``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from msgspec import Struct, field
from msgspec.structs import replace

from . import _snapshot, prior_tombs
from ._fileutil import (
    fsync_dir,
    fsync_paths,
    read_meta_file,
    release_free_memory,
    remove_deleted_trees,
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
from .blockindex import STATE_FILE, mapped
from .indexed import IndexedStore, enforce_subject_limits
from .seqindex import SeqIndex
from .seqstate import StateView

if TYPE_CHECKING:
    from .consumer_store import FileConsumerStore

SYNC_INTERVAL = "interval"
SYNC_ALWAYS = "always"
DEFAULT_BLOCK_SIZE = 8 * 1024 * 1024
MIN_BLOCK_SIZE = 1024
# Rewrite a sealed block once its dead bytes exceed its live bytes and this much (capped by
# half a block): nats-server compacts at 2 MiB of waste.
COMPACT_MIN_BYTES = 2 * 1024 * 1024

MSGS_DIR = "msgs"
OBS_DIR = "obs"
OLD_SNAPSHOT = "index.snap"  # the whole-index snapshot of earlier versions (ignored, removed)
# A recovery of at least this many messages gives the heap's free pages back to the OS.
TRIM_AFTER_MSGS = 100_000
# Sealed blocks whose index is stale get a fresh one at most this many per sync (all at stop).
REFRESH_PER_SYNC = 4
#: The stream state keeps its TTLs as three columns (`MessageTTLs.columns`: C passes), where it
#: kept a JSON row per TTL (off): ~0.2 s a state write at 100,000 TTLs, at every sync.
TTL_COLUMNS = True
_TTL_ARRAYS = ("ttl_seqs", "ttl_vals", "ttl_exps")
# The file store's index pages are its blocks: a page is never cut by its length.
FILE_PAGE = 1 << 62
# Sealed blocks' slots kept in memory (least recently used first): ~32 bytes each.
CACHE_SLOTS = 1 << 19


class FileStoreConfig(Struct):
    """Storage options of a file store (the limits are in `StoreConfig`)."""

    directory: str
    block_size: int = DEFAULT_BLOCK_SIZE
    sync: str = SYNC_INTERVAL
    sync_interval: float = 120.0  # seconds; the caller's timer calls FileStore.sync()
    compact_min_bytes: int = COMPACT_MIN_BYTES
    cache_slots: int = CACHE_SLOTS  # sealed blocks' index slots kept in memory
    #: A consumer's read-ahead skips the CRC of records this process wrote (`BlockFiles.read_run`);
    #: off (or PYJETSTREAM_TRUST_OWN_RECORDS=0): every read checks every record's CRC.
    trust_own_records: bool = field(
        default_factory=lambda: os.environ.get("PYJETSTREAM_TRUST_OWN_RECORDS", "1") != "0"
    )

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
        self._fcfg = replace(fcfg, directory=os.fspath(fcfg.directory))
        self._dir = self._fcfg.directory
        self._msgs_dir = os.path.join(self._dir, MSGS_DIR)
        self._obs_dir = os.path.join(self._dir, OBS_DIR)
        self._sync_always = self._fcfg.sync == SYNC_ALWAYS
        index = SeqIndex(page_max=FILE_PAGE)  # the pages are the blocks
        index.cache_max = max(1, self._fcfg.cache_slots)
        blocks = BlockFiles(
            index,
            self._msgs_dir,
            self._fcfg.block_size,
            min(self._fcfg.compact_min_bytes, self._fcfg.block_size // 2),
            self._sync_always,
            cfg.compression == COMPRESSION_S2,
        )
        blocks.trust_own = self._fcfg.trust_own_records
        super().__init__(cfg, index, blocks)
        self._consumers: dict[str, FileConsumerStore] = {}
        self._state_mark: tuple[int, ...] | None = None  # what the stream state on disk saw
        #: What this open found damaged or missing (the caller logs it; ``state().lost`` also
        #: keeps what earlier opens found).
        self.found_lost: LostData | None = None

        os.makedirs(self._msgs_dir, exist_ok=True)
        remove_deleted_trees(self._dir)  # (old blocks a purge renamed aside, if a stop cut it short)
        existed = self._recover()
        blocks.open_active()
        found = self.found_lost
        top = found.msgs[-1] if found is not None and found.msgs else 0
        if top > self._index.last_seq:  # (the end of the last block was lost: its sequences stay used)
            self._skip(self._index.last_seq + 1, top - self._index.last_seq)
        blocks.keep_ttls(dict(self._ttl.by_seq))
        if self._index.msgs >= TRIM_AFTER_MSGS:
            release_free_memory()
        if not existed and cfg.first_seq > 0:  # nats-server purges to first_seq, 1 included
            self._purge(cfg.first_seq)
        if self._sync_always:
            self.sync()
        if cfg.max_age > 0:
            self.expire_msgs()
        enforce_subject_limits(self)  # (trims whose lazy tombstones a crash lost)
        self._enforce_limits(0)
        blocks.commit()
        blocks.mark_good()

    @property
    def directory(self) -> str:
        return self._dir

    @property
    def file_config(self) -> FileStoreConfig:
        return replace(self._fcfg)

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
        if self._state_mark != self._mark():
            with contextlib.suppress(OSError):
                self._write_state(fsync=False)
        fds: list[int] = []
        dirs: list[str] = []
        self._backend.collect_sync(fds, dirs)
        files: list[str] = []
        for cs in self._consumers.values():
            if not cs.closed:
                cs.collect_sync(files, dirs)

        def run() -> None:
            try:
                for fd in fds:
                    os.fdatasync(fd)
            finally:
                for fd in fds:
                    os.close(fd)
            fsync_paths(files, dirs)

        return run

    def stop(self) -> None:
        if self._closed:
            return
        for cs in list(self._consumers.values()):
            cs.stop()
        with contextlib.suppress(OSError):
            self._backend.refresh_indexes()
            self.flush()
            self._write_state(fsync=True)
        self.sync()
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
        """Write the stream's definition, fsynced only with ``sync="always"``.

        As nats-server's ``writeStreamMeta`` (``writeFileWithOptionalSync``): the files are written
        to the OS (they survive ``kill -9``) and renamed into place; an fsync per create cost ~2 ms
        of CPU and made 300 creates take seconds on a busy disk (nats.py's
        ``test_jsm_stream_management_with_offset``)."""
        self._check_open()
        write_meta_file(self._dir, data, fsync=self._sync_always)

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
            from .consumer_store import FileConsumerStore  # (the first consumer: not at start-up)

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
    # Stream state and recovery
    # ------------------------------------------------------------------------------------
    def _mark(self) -> tuple[int, ...]:
        """What a change to the store changes (the state is written again when it moved)."""
        index, blocks = self._index, self._backend.blocks
        return (
            index.last_seq,
            index.msgs,
            index.first_seq,
            len(blocks),
            blocks[-1].written,
            self.bulk_removals,
            self._backend.state_drops,
        )

    def _write_state(self, fsync: bool) -> None:
        """Write the stream state (nats-server ``writeFullState``): every sealed page gets an image
        first (so that any page can be evicted after a restart), then the index's resident part,
        the block list, what earlier starts lost, and the TTLs."""
        self._backend.save_images()
        header, arrays, names = self._index.state()
        arrays.update(prior_tombs.state_arrays(self._backend.blocks))  # (a block vouched for is not read)
        if TTL_COLUMNS:
            rows: list[list[int]] = []  # (a state written before the columns kept its TTLs here)
            arrays.update(zip(_TTL_ARRAYS, self._ttl.columns(), strict=True))
        else:
            expires = {seq: at for at, seq in self._ttl.heap}
            rows = [[seq, ttl, expires.get(seq, 0)] for seq, ttl in self._ttl.by_seq.items()]
        header.update(
            self._backend.state(), lost=None if self._lost is None else [self._lost.msgs, self._lost.bytes], ttls=rows
        )
        path = os.path.join(self._msgs_dir, STATE_FILE)
        write_file(path + ".tmp", _snapshot.encode(header, arrays, names), fsync=fsync)
        os.replace(path + ".tmp", path)
        if fsync:
            fsync_dir(self._msgs_dir)
        self._state_mark = self._mark()

    def _read_state(self) -> tuple[dict[str, Any], StateView] | None:
        """The stream state on disk, if it can be read (else it is removed)."""
        path = os.path.join(self._msgs_dir, STATE_FILE)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self._msgs_dir, OLD_SNAPSHOT))
        try:
            with mapped(path) as buf:  # (not read: the arrays are copied out of the file's pages once)
                decoded = _snapshot.decode(buf)
            if decoded is not None:
                header, arrays, names = decoded
                if _TTL_ARRAYS[0] in arrays:  # (rows made when restored: the state read is checked first)
                    cols = [arrays.pop(k) for k in _TTL_ARRAYS]
                    if len({len(c) for c in cols}) != 1:
                        raise ValueError("ttl columns")
                    header["ttl_columns"] = cols
                header["priors"] = prior_tombs.state_rows(arrays, header.get("priors"))  # (for `load`)
                return header, StateView(header, arrays, names)
        except FileNotFoundError:
            return None
        except (KeyError, ValueError, TypeError, OSError):
            pass
        with contextlib.suppress(OSError):
            os.unlink(path)
        return None

    def _recover(self) -> bool:
        """Build the index from the stream state and the blocks; return whether any block existed."""
        blocks = self._backend
        files = blocks.list_files()
        got = self._read_state()
        if not files:
            return False
        header, view = got if got is not None else (None, None)
        gone = self._index.recover(blocks.load(files, header, view.names if view else None), view, blocks.kept_deletes)
        blocks.kept_deletes = []
        blocks.replay_tail()  # (the active block's records after the state's, after kill -9)
        blocks.account()
        found = blocks.lost(gone)
        self.found_lost = found
        earlier = header["lost"] if header is not None and header.get("lost") else None
        if earlier is not None or found is not None:
            msgs = set(earlier[0] if earlier else []) | set(found.msgs if found else [])
            self._lost = LostData(
                sorted(msgs), (earlier[1] if earlier else 0) + (found.bytes if found else 0)
            )
        if header is not None:
            cols = header.get("ttl_columns")
            self._ttl.restore(zip(*cols, strict=True) if cols else header.get("ttls", []))
        self.restore_ttls(blocks.found_ttls)
        blocks.found_ttls = {}
        return True


def _nothing() -> None:
    pass
