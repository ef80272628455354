"""The JetStream engine of one account: streams, the API, account usage and limits.

Each JetStream-enabled account has its own engine (handed the account as a `host.Host`);
the engine's ``server`` is that account, which offers the server's internal API scoped to the
account, so the engine's subscriptions, deliveries and interest checks never leave it. File
streams live under ``<store_dir>/jetstream/<account>/streams/<name>/`` (nats-server's layout, the
global account being ``$G``); on start every stream found there is recovered with its messages
and consumers. Limits are the account's (``max_mem``, ``max_file``, ``max_streams``,
``max_consumers``) within the server-wide ``max_memory_store``/``max_file_store``, which all
accounts share.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import stat
import time
from typing import TYPE_CHECKING, Any

from pyjetstream.api import errors as E
from pyjetstream.api.enums import PersistMode, StorageType
from pyjetstream.api.errors import JetStreamApiError
from pyjetstream.api.models_common import ApiError
from pyjetstream.api.models_stream import StreamConfig
from pyjetstream.server.jetstream import stream_index
from pyjetstream.server.jetstream.api_router import ApiRouter
from pyjetstream.server.jetstream.store._fileutil import read_meta_file, remove_deleted_trees
from pyjetstream.server.jetstream.store.base import ErrCorruptRecord, MessageStore
from pyjetstream.server.jetstream.store.filestore import (
    SYNC_ALWAYS,
    SYNC_INTERVAL,
    FileStore,
    FileStoreConfig,
)
from pyjetstream.server.jetstream.stream import (
    Stream,
    decode_stream_meta,
    encode_stream_meta,
    store_config_for,
)
from pyjetstream.server.jetstream.stream_index import StreamIndex
from pyjetstream.server.options import DEFAULT_MAX_CONSUMERS, AccountJetStreamLimits, default_store_dir

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.api_router import ApiRouter
    from pyjetstream.server.jetstream.host import Host
    from pyjetstream.server.jetstream.server_jetstream import ServerJetStream

GLOBAL_ACCOUNT = "$G"
# nats-server's defaults when no limit is configured: 75% of RAM, 75% of the disk's free space.
DEFAULT_MEMORY_FRACTION = 0.75
DEFAULT_STORAGE_FRACTION = 0.75
FALLBACK_MAX_MEMORY = 256 * 1024 * 1024
FALLBACK_MAX_STORAGE = 1024**4
DEFAULT_SYNC_INTERVAL = 120.0
# Most a store adds to subject + headers + payload for one message (file store: 30 + 4 with headers).
RECORD_OVERHEAD_BOUND = 34


def _system_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


class JetStreamEngine:
    def __init__(self, server: Host) -> None:
        """``server`` is the account (``host.Host``: the server's internal API, scoped to it)."""

        self.server: Host = server
        opts = server.options
        self.account_name: str = getattr(server, "name", GLOBAL_ACCOUNT)
        #: The account's limits as configured (plain, or per tier), and those in force here: a
        #: single node's streams are all R1, so the plain limits or the R1 tier's.
        self.configured_limits: AccountJetStreamLimits = AccountJetStreamLimits()
        self.limits: AccountJetStreamLimits = self.configured_limits
        self.set_limits(getattr(server, "js_limits", None) or AccountJetStreamLimits())
        self.domain: str = getattr(opts, "jetstream_domain", "") or ""
        #: Unknown request fields refused (``jetstream { strict }``, default on as in 2.11+).
        self.strict: bool = getattr(opts, "jetstream_strict", True)
        #: The header block of the API request being handled (set by the router around a handler).
        self.request_hdr: bytes | None = None
        base = getattr(opts, "store_dir", "") or default_store_dir()
        # Paths as text (``os.path``): no module a start imports needs ``pathlib`` (with its
        # ``urllib.parse`` and ``ipaddress``, ~4% of the instructions of an empty server's start).
        self.store_dir: str = os.path.join(base, "jetstream")
        self.streams_dir: str = os.path.join(self.store_dir, self.account_name, "streams")
        self.sync_always: bool = bool(getattr(opts, "sync_always", False))
        self.sync_interval: float = float(getattr(opts, "sync_interval", 0) or DEFAULT_SYNC_INTERVAL)
        self.max_memory = self._limit(getattr(opts, "max_memory_store", -1), self._default_memory())
        self.max_storage = self._limit(getattr(opts, "max_file_store", -1), self._default_storage())
        self.streams: dict[str, Stream] = {}
        #: The streams by subject and reserved bytes (kept with ``streams``: add, update, delete).
        self.stream_index = StreamIndex()
        self._by_name: list[Stream] | None = None  # the streams sorted by name (None: to sort again)
        self.streams_sorted = 0  # sorts of them (a step count)
        self.restoring: set[str] = set()  # names of streams a STREAM.RESTORE is uploading
        self.api_total = 0
        self.api_errors = 0
        self.router: ApiRouter = ApiRouter(self)
        self._sync_timer: asyncio.TimerHandle | None = None
        self._usage_cache: tuple[int, int] | None = None
        self._usage_estimated = False
        #: The server's JetStream (`ServerJetStream`: every account's engine and their
        #: usage summed) once this engine is one of them; ``None``: an engine alone.
        self.totals: ServerJetStream | None = None
        self.started = False
        #: The push consumers' deliver-subject interest watch (`push_delivery.DeliverInterest`),
        #: made at the first push consumer.
        self.deliver_interest: Any = None

    # --- limits ------------------------------------------------------------------------------

    @staticmethod
    def _limit(configured: int | None, default: int) -> int:
        return configured if configured and configured > 0 else default

    def _default_memory(self) -> int:
        total = _system_memory()
        return int(total * DEFAULT_MEMORY_FRACTION) if total else FALLBACK_MAX_MEMORY

    def _default_storage(self) -> int:
        """Three quarters of the space free where the store is (nats-server ``diskAvailable``,
        which makes the directory first and asks ``statfs`` of it: the nearest directory there on
        its way stands for it, the one it is made in; not the temporary directory, whose module,
        ``tempfile``, would load ``shutil``, ``bz2``, ``lzma`` and ``random`` at a first start)."""
        try:
            st = os.statvfs(_nearest_dir(self.store_dir))  # (shutil.disk_usage's free, as above)
            return int(st.f_bavail * st.f_frsize * DEFAULT_STORAGE_FRACTION)
        except OSError:
            return FALLBACK_MAX_STORAGE

    def usage(self, exact: bool = True) -> tuple[int, int]:
        """``(memory bytes, storage bytes)`` used by all streams (``exact=False``: an upper bound
        that is cheap on the publish path, see `note_write`)."""
        if exact and self._usage_estimated:
            self.account_usage_changed()
        cached = self._usage_cache
        if cached is None:
            memory = storage = 0
            for stream in self.streams.values():
                used = stream.store.totals()[1]
                if stream.cfg.storage == StorageType.MEMORY:
                    memory += used
                else:
                    storage += used
            cached = self._usage_cache = (memory, storage)
            if self.totals is not None:
                self.totals.changed(self, None, cached, False)
        return cached

    def api_answered(self, error: bool) -> None:
        """An API request answered (``error``: with an error), counted for the account and the
        server (nats-server ``trackAPI`` / ``trackAPIErr``: ``jsa.apiTotal`` and ``js.apiTotal``)."""
        self.api_total += 1
        self.api_errors += error
        if self.totals is not None:
            self.totals.api_answered(error)

    def cached_usage(self) -> tuple[int, int] | None:
        """The usage as last counted (an upper bound when `usage_is_estimate`), ``None`` if not known."""
        return self._usage_cache

    def usage_is_estimate(self) -> bool:
        return self._usage_estimated

    def account_usage_changed(self) -> None:
        old, self._usage_cache = self._usage_cache, None
        self._usage_estimated = False
        if self.totals is not None and old is not None:
            self.totals.changed(self, old, None, False)

    def usage_dropped(self) -> None:
        """A message was removed (an ack on an interest or work-queue stream): the cached usage
        is still an upper bound, so it stays, marked as an estimate (counted exactly only where
        a limit check on it fails, as after `note_write`), instead of every stream's state being
        summed again on the next publish (nats-server keeps the account's usage by deltas)."""
        if self._usage_cache is not None and not self._usage_estimated:
            self._usage_estimated = True
            if self.totals is not None:
                self.totals.changed(self, self._usage_cache, self._usage_cache, True)

    def note_write(self, storage: StorageType, size: int) -> None:
        """A message of about ``size`` bytes was stored: keep the cached usage as an upper bound
        (a stream's own limits may have removed older messages meanwhile) instead of summing
        every stream's state on each publish."""
        cached = self._usage_cache
        if cached is not None:
            size += RECORD_OVERHEAD_BOUND
            if storage == StorageType.MEMORY:
                self._usage_cache = (cached[0] + size, cached[1])
                index = 0
            else:
                self._usage_cache = (cached[0], cached[1] + size)
                index = 1
            self._usage_estimated = True
            if self.totals is not None:
                self.totals.grew(self, index, size)

    def note_writes(self, storage: StorageType, count: int, size: int) -> None:
        """`note_write` for ``count`` messages of ``size`` bytes (subject and payload)
        summed: the same cached usage as ``count`` calls."""
        if count:
            self.note_write(storage, size + (count - 1) * RECORD_OVERHEAD_BOUND)

    def room_for_run(self, storage: StorageType, count: int, records: int) -> bool:
        """Whether ``count`` writes whose `check_account_limits` records sum to ``records``
        would each pass that check in turn, with `note_write` after each (a pipelining
        publisher's run, ``Stream._store_plain_run``): the last one sees at most the cached usage
        plus every record and the overhead note_write adds per message, and the usage of the
        other accounts does not change meanwhile. False when in doubt (then they are checked one
        by one, exactly)."""
        cached = self._usage_cache
        if cached is None:  # as the first check_account_limits would
            cached = self.usage(exact=False)
        if storage == StorageType.MEMORY:
            own, limit, index, server_limit = cached[0], self.limits.max_memory, 0, self.max_memory
        else:
            own, limit, index, server_limit = cached[1], self.limits.max_store, 1, self.max_storage
        grown = own + records + count * RECORD_OVERHEAD_BOUND
        if 0 <= limit < grown:
            return False
        return self._server_usage(index, grown, exact=False) <= server_limit

    def check_account_limits(self, storage: StorageType, record: int = 0) -> ApiError | None:
        """Refuse a write that would take the account past its limit, or the server past its.

        As nats-server: the account's ``max_mem``/``max_file`` is checked with this message
        (``wouldExceedLimits``: usage + record > limit, 10002); the server-wide
        max_memory_store / max_file_store on what is stored *before* this message
        (``limitsExceeded``: usage > limit, so the message that crosses it still goes in; 10023).
        """
        cached = self._usage_cache
        if cached is not None:
            # The publish path: both checks on the cached usage (an upper bound) in one frame;
            # anything over a limit is decided by _over_limits below, exactly as before.
            if storage == StorageType.MEMORY:
                own, limit, index, server_limit = cached[0], self.limits.max_memory, 0, self.max_memory
            else:
                own, limit, index, server_limit = cached[1], self.limits.max_store, 1, self.max_storage
            if limit < 0 or own + record <= limit:
                totals = self.totals
                if (own if totals is None else own + totals.others(self, index, False)) <= server_limit:
                    return None
        error = self._over_limits(storage, record, exact=False)
        if error is not None and self._usage_estimated:  # the estimate may be high: count exactly
            error = self._over_limits(storage, record, exact=True)
        return error

    def _over_limits(self, storage: StorageType, record: int, exact: bool) -> ApiError | None:
        memory, file = self.usage(exact=exact)
        limits = self.limits
        if storage == StorageType.MEMORY:
            own, limit, index, server_limit = memory, limits.max_memory, 0, self.max_memory
        else:
            own, limit, index, server_limit = file, limits.max_store, 1, self.max_storage
        if 0 <= limit < own + record:
            return E.JSAccountResourcesExceededErr()
        if self._server_usage(index, own, exact) > server_limit:
            return E.JSInsufficientResourcesErr()
        return None

    def _server_usage(self, index: int, own: int, exact: bool) -> int:
        """What all accounts store of one kind (0 memory, 1 file); the server limits are shared:
        ``own`` and the other engines' (`ServerJetStream.others`: running sums, as nats-server's
        ``js.memUsed`` / ``js.storeUsed``, not a pass over every account)."""
        totals = self.totals
        return own if totals is None else own + totals.others(self, index, exact)

    def set_limits(self, limits: AccountJetStreamLimits) -> None:
        """Take the account's (new) limits; without an R1 tier nothing can be stored (nothing
        can be created either: `select_limits` refuses with 10120)."""
        self.configured_limits = limits
        self.limits = limits.select(1) or AccountJetStreamLimits(max_memory=0, max_store=0)

    def select_limits(self, replicas: int) -> AccountJetStreamLimits:
        """The limits of a stream of ``replicas`` (``Account.selectLimits``): 10120 when the
        account's tiers have none for it."""
        selected = self.configured_limits.select(replicas)
        if selected is None:
            raise JetStreamApiError(E.JSNoLimitsErr())
        return selected

    def max_bytes_limits(self, cfg: StreamConfig) -> tuple[bool, int]:
        """``Account.maxBytesLimits``: whether the account requires max_bytes, and the largest
        max_bytes of one stream of the config's storage (<= 0: none)."""
        selected = self.configured_limits.select(cfg.num_replicas)
        if selected is None:
            return False, 0
        if cfg.storage == StorageType.MEMORY:
            return selected.max_bytes_required, selected.memory_max_stream_bytes
        return selected.max_bytes_required, selected.store_max_stream_bytes

    def _same_tier(self, replicas: int) -> bool:
        """Whether a stream of ``replicas`` shares the tier of this node's streams (all R1);
        without tiers every stream is in the one default tier (``isSameTier``)."""
        return not self.configured_limits.tiers or max(1, replicas) == 1

    def check_stream_limit(self, name: str = "", replicas: int = 1) -> ApiError | None:
        """The limits of the stream's tier (10120 without one), then its ``max_streams``
        (nats-server: 10027 "maximum number of streams reached"); a stream of the same ``name``
        does not count (``countStreams``), nor one of another tier."""
        selected = self.configured_limits.select(replicas)
        if selected is None:
            return E.JSNoLimitsErr()
        count = len(self.streams) - (name in self.streams) if self._same_tier(replicas) else 0
        if 0 < selected.max_streams <= count:
            return E.JSMaximumStreamsLimitErr()
        return None

    def check_consumer_limit(self, public_consumers: int, stream_limit: int = -1) -> ApiError | None:
        """The account's ``max_consumers``, which nats-server applies to each stream (10026); when
        neither the stream nor the account sets one, 2.15's ``default_max_consumers`` (1000)."""
        limit = self.limits.max_consumers
        if limit <= 0 and stream_limit <= 0:  # 0 is not a limit either (a JWT without "consumer")
            limit = self.default_max_consumers()
        if 0 < limit <= public_consumers:
            return E.JSMaximumConsumersLimitErr()
        return None

    def default_max_consumers(self) -> int:
        """The server's ``jetstream { limits { default_max_consumers } }`` in force (-1 = none)."""
        limits = getattr(self.server.options, "jetstream_limits", None)
        return limits.effective_default_max_consumers() if limits is not None else DEFAULT_MAX_CONSUMERS

    def check_new_stream_limits(self, cfg: StreamConfig, *, unchecked: bool = False) -> ApiError | None:
        """nats-server's ``jsNonClusteredStreamLimitsCheck``, the first limits check of both
        ``STREAM.CREATE`` (on the config as sent: ``unchecked``) and ``STREAM.RESTORE`` (on the
        checked config): the account's max_streams and its byte limit leave a stream of the same
        name out (it is the one being created again, or refused as existing), the server's
        reservation still counts it."""
        too_many = self.check_stream_limit(cfg.name, cfg.num_replicas)
        if too_many is not None:
            return too_many
        return self.check_reservation(cfg, cfg, unchecked=unchecked, server_keeps_old=True)

    def check_reservation(
        self,
        cfg: StreamConfig,
        old: StreamConfig | None = None,
        *,
        unchecked: bool = False,
        server_keeps_old: bool = False,
    ) -> ApiError | None:
        """A stream's max_bytes must fit next to the other streams' (nats-server checkBytesLimits):
        the account's for its limit; for the server's, every account's (``js.storeReserved``).

        Streams reserve their max_bytes; an unlimited stream counts as 1 byte, so once the
        reservations fill the server limit no further stream can be created. ``old``: the stream
        this config replaces, whose reservation does not count (``server_keeps_old``: except in
        the server's total). ``unchecked``: the create request's config before checkStreamCfg, as
        jsNonClusteredStreamLimitsCheck sees it (max_bytes 0 adds nothing; the account counts
        num_replicas copies).
        """
        add = cfg.max_bytes if cfg.max_bytes > 0 else (0 if unchecked and cfg.max_bytes == 0 else 1)
        tiered = bool(self.configured_limits.tiers)
        # accountReservation: plain limits count every replica, a tier's limits are per replica.
        account_add = add * cfg.num_replicas if cfg.num_replicas > 1 and not tiered else add
        limits = self.configured_limits.select(cfg.num_replicas) or self.limits
        reserved, server_reserved = self._reserved(cfg.storage, old, self._same_tier(cfg.num_replicas))
        if not server_keeps_old:
            server_reserved = reserved
        if self.totals is not None:  # the server's limit is shared: js.memReserved / js.storeReserved
            server_reserved += self.totals.others_reserved(self, cfg.storage)
        if cfg.storage == StorageType.MEMORY:
            limit = limits.max_memory
            if 0 <= limit < reserved + account_add or server_reserved + add > self.max_memory:
                return E.JSMemoryResourcesExceededErr()
        else:
            limit = limits.max_store
            if 0 <= limit < reserved + account_add or server_reserved + add > self.max_storage:
                return E.JSStorageResourcesExceededErr()
        return None

    def reserved(self, storage: StorageType) -> int:
        """The bytes the account's streams of ``storage`` reserve (nats-server's ``reservedStorage``:
        ``$JS.API.INFO``, ``/jsz``), from the running sums as the limits checks take them."""
        return self._reserved(storage, None, True)[0]

    def _reserved(self, storage: StorageType, old: StreamConfig | None, same_tier: bool) -> tuple[int, int]:
        """The bytes the streams of ``storage`` reserve: for the account's limit (without the
        stream named as ``old``; none outside the tier) and for the server's. Running sums
        (`StreamIndex.reserved`), not a pass over every stream (`stream_index.INDEXED`)."""
        if stream_index.INDEXED:
            total = self.stream_index.reserved(storage)
            own = self.streams.get(old.name) if old is not None else None
            if own is not None and own.cfg.storage == storage and own.cfg.max_bytes > 0:
                return (total - own.cfg.max_bytes if same_tier else 0), total
            return (total if same_tier else 0), total
        reserved = server_reserved = 0
        for s in self.streams.values():
            if s.cfg.storage == storage and s.cfg.max_bytes > 0:
                server_reserved += s.cfg.max_bytes
                if (old is None or s.cfg.name != old.name) and same_tier:
                    reserved += s.cfg.max_bytes
        return reserved, server_reserved

    # --- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        # The store directory is checked once a server (nats-server's enableJetStream: a test file
        # made and removed), not once an account: 10,000 accounts made 10,000 test files at a start.
        # Each account's own directory is still made below (enableJetStream of the account: MkdirAll).
        js = getattr(getattr(self.server, "server", None), "js", None)
        if js is None or self.store_dir not in js.checked_dirs:
            problem = check_store_dir(self.store_dir)
            if problem:  # nats-server's Start() logs it fatal: "Can't start JetStream: ..."
                raise JetStreamStartError(f"Can't start JetStream: {problem}")
            if js is not None:
                js.checked_dirs.add(self.store_dir)
        os.makedirs(self.streams_dir, exist_ok=True)
        self._recover()
        self.router.subscribe()
        self._schedule_sync()
        self.started = True
        self.server.logger.info("JetStream started, store directory %s", self.store_dir)

    def signal_pull_consumers(self) -> int:
        """The server is shutting down: every pull consumer tells its waiting requests (nats-server
        ``signalPullConsumers``, before the clients are closed). Returns statuses sent."""
        sent = 0
        for stream in self.streams.values():
            for consumer in stream.consumers.values():
                if not consumer.cfg.deliver_subject and not consumer.closed:
                    sent += consumer.pull.signal_shutdown()
        return sent

    async def stop(self) -> None:
        if not self.started:
            return
        self.started = False
        self.router.shutdown()
        if self._sync_timer is not None:
            self._sync_timer.cancel()
        for stream in list(self.streams.values()):
            stream.stop()
        self.streams.clear()
        self.stream_index = self.stream_index.emptied()
        self._by_name = None
        if self.deliver_interest is not None:
            self.deliver_interest.close()
            self.deliver_interest = None

    def _schedule_sync(self) -> None:
        if self.sync_always:
            return
        self._sync_timer = self.server.loop.call_later(self.sync_interval, self._sync)

    def _sync(self) -> None:
        """The sync_interval timer: fsync what file stores wrote since the last pass, in a
        worker thread (the stores hand over duplicated descriptors), so publishing goes on."""
        loop = self.server.loop
        for stream in list(self.streams.values()):
            store: Any = stream.store  # a FileStore (checked below): needs_sync / sync_later
            if stream.closed or stream.cfg.storage != StorageType.FILE:
                continue
            try:
                if not store.needs_sync():
                    continue
                fsync = store.sync_later()
            except OSError as exc:
                self.server.logger.error("JetStream sync of stream '%s' failed: %s", stream.name, exc)
                continue
            loop.run_in_executor(None, self._run_sync, stream.name, fsync)
        self._schedule_sync()

    def _run_sync(self, name: str, fsync: Any) -> None:
        try:
            fsync()
        except OSError as exc:
            self.server.logger.error("JetStream sync of stream '%s' failed: %s", name, exc)

    # --- streams -----------------------------------------------------------------------------

    def new_store(self, cfg: StreamConfig) -> MessageStore:
        if cfg.storage == StorageType.MEMORY:
            from pyjetstream.server.jetstream.store.memstore import MemoryStore  # (not at start-up)

            return MemoryStore(store_config_for(cfg))
        store = FileStore(self._file_config(os.path.join(self.streams_dir, cfg.name), cfg), store_config_for(cfg))
        store.on_damage = functools.partial(self._log_lost, cfg.name, "a damaged record read")
        return store

    def _log_lost(self, name: str, why: str, msgs: list[int], nbytes: int) -> None:
        """Say what a stream lost (issue 27: at start, what recovery found; later, a damaged
        record found when read, in a block the stream state vouched for)."""
        self.server.logger.warning(
            "  Stream '%s > %s' lost %d messages (%s) and %d bytes to %s",
            self.account_name,
            name,
            len(msgs),
            _seq_ranges(msgs),
            nbytes,
            why,
        )

    def _file_config(self, directory: str, cfg: StreamConfig) -> FileStoreConfig:
        """The server's ``sync_interval`` / ``sync: always``, except that a ``persist_mode:
        async`` stream never fsyncs per write (nats-server ``addStreamWithAssignment`` turns
        ``SyncAlways`` off for it): its acks come before its data is on disk."""
        always = self.sync_always and cfg.persist_mode != PersistMode.ASYNC
        return FileStoreConfig(
            directory=directory,
            sync=SYNC_ALWAYS if always else SYNC_INTERVAL,
            sync_interval=self.sync_interval,
        )

    def add_stream(self, cfg: StreamConfig, store: MessageStore | None = None) -> Stream:
        """Create a stream; ``store``: one already filled (a restore)."""
        created = time.time_ns()
        if store is None:
            store = self.new_store(cfg)
        store.write_meta(encode_stream_meta(cfg, created))
        stream = Stream(self, cfg, store, created)
        self.streams[cfg.name] = stream
        self.stream_index.add(cfg.name, cfg)
        self._by_name = None
        stream.start()
        self.account_usage_changed()
        return stream

    def streams_by_name(self) -> list[Stream]:
        """The streams sorted by name, what a ``STREAM.NAMES`` / ``LIST`` page slices: sorted once
        per change of streams, not per page (nats-server's ``jsStreamNamesRequest`` sorts them
        for every request: paging through 10,000 streams sorted them 40 times)."""
        by_name = self._by_name
        if by_name is None:
            self.streams_sorted += 1
            by_name = self._by_name = sorted(self.streams.values(), key=_name_of)
        return by_name

    def delete_stream(self, name: str) -> None:
        stream = self.streams.pop(name)
        self.stream_index.remove(name, stream.cfg)
        self._by_name = None
        stream.stop(delete=True)
        self.account_usage_changed()

    def _recover(self) -> None:
        remove_deleted_trees(self.streams_dir)  # (deleted streams a stop cut short)
        for name in sorted(os.listdir(self.streams_dir)):
            directory = os.path.join(self.streams_dir, name)
            if name.startswith(".") or not os.path.isdir(directory):
                continue
            try:
                meta = read_meta_file(directory)
                if meta is None:
                    continue
            except ErrCorruptRecord as exc:  # (nats-server: a warning, and the stream is not served)
                self.server.logger.warning("  Stream %s", exc)
                continue
            try:
                cfg, created = decode_stream_meta(meta)
                store = FileStore(self._file_config(directory, cfg), store_config_for(cfg))
                store.on_damage = functools.partial(self._log_lost, cfg.name, "a damaged record read")
            except Exception as exc:  # a damaged stream must not keep the others from starting
                self.server.logger.error("JetStream could not recover stream in %s: %s", directory, exc)
                continue
            stream = Stream(self, cfg, store, created)
            self.streams[cfg.name] = stream
            self.stream_index.add(cfg.name, cfg)
            self._by_name = None
            stream.start()
            if stream.store.consumer_names():
                # Deferred: start-up imports the consumer machinery only for a stream that has some.
                from pyjetstream.server.jetstream.consumer_recovery import recover_consumers

                recover_consumers(stream)
            state = store.fast_state()
            self.server.logger.info(
                "  Restored %d messages for stream '%s > %s'", state.msgs, self.account_name, cfg.name
            )
            if store.found_lost is not None:
                found = store.found_lost
                self._log_lost(cfg.name, "damaged or missing files", found.msgs, found.bytes)
        self.account_usage_changed()

    # --- monitoring hooks (the core server's /varz and /healthz call these) --------------------

    def varz(self) -> dict[str, Any]:
        from pyjetstream.server.jetstream import monitoring  # Deferred: not imported at start.

        return monitoring.varz(self)

    def healthz(self, query: dict[str, str]) -> str | None:
        from pyjetstream.server.jetstream import monitoring  # Deferred: not imported at start.

        return monitoring.healthz(self, query)

    def num_consumers(self) -> int:
        return sum(len(s.consumers) for s in self.streams.values())


class JetStreamStartError(RuntimeError):
    """JetStream cannot start (its store directory cannot be made): nats-server logs it fatal and exits."""


def check_store_dir(store_dir: str | os.PathLike[str]) -> str:
    """Make the store directory, or say why not in nats-server's words (``enableJetStream``: a
    missing directory is made with ``os.MkdirAll``; one there must be a directory, and writable)."""
    try:
        st: os.stat_result | None = os.stat(store_dir)
    except FileNotFoundError:
        try:
            mkdir_all(store_dir)
        except OSError as exc:
            return f"could not create storage directory - {go_path_error('mkdir', exc)}"
        return ""
    except OSError:  # a file on the way (ENOTDIR), a loop: Go's Stat error, not "does not exist"
        st = None
    if st is None or not stat.S_ISDIR(st.st_mode):
        return "storage directory is not a directory"
    # os.CreateTemp(storeDir, "_test_"), closed and removed (a name of its own, as CreateTemp's;
    # not tempfile, which would load shutil, bz2, lzma and random at every start).
    test = os.path.join(store_dir, f"_test_{os.urandom(8).hex()}")
    try:
        os.close(os.open(test, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        return "storage directory is not writable"
    with contextlib.suppress(OSError):
        os.remove(test)
    return ""


def mkdir_all(path: str | os.PathLike[str]) -> None:
    """Go's ``os.MkdirAll``: make the missing directories from the top down, so a failure names the
    first directory that could not be made (``mkdir /proc/x``), as nats-server's message does."""
    if os.path.isdir(path):
        return
    parent = os.path.dirname(path)
    if parent and parent != os.fspath(path):
        mkdir_all(parent)
    try:
        os.mkdir(path)
    except FileExistsError:
        if not os.path.isdir(path):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(path)) from None


def _nearest_dir(path: str) -> str:
    """``path`` or the nearest directory above it that is there (``.`` for a relative path none of
    whose directories is)."""
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if not parent:
            return "."
        if parent == path:
            break
        path = parent
    return path


def go_path_error(op: str, exc: OSError) -> str:
    """An OSError as Go's ``*PathError`` prints: ``mkdir /proc/x: no such file or directory``."""
    reason = (exc.strerror or str(exc)).lower()
    return f"{op} {exc.filename}: {reason}" if exc.filename else f"{op}: {reason}"


def _seq_ranges(seqs: list[int], most: int = 8) -> str:
    """Sorted sequences as ranges for a log line: ``5, 9-12`` (the first ``most`` ranges)."""
    runs: list[list[int]] = []
    for q in seqs:
        if runs and q == runs[-1][1] + 1:
            runs[-1][1] = q
        else:
            runs.append([q, q])
    text = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs[:most])
    return text + (f" and {len(runs) - most} more ranges" if len(runs) > most else "")


def _name_of(stream: Stream) -> str:
    return stream.name
