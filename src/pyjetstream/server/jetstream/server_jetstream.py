"""The server's JetStream (nats-server's ``jetStream``, ``s.js`` in ``jetstream.go``): the accounts'
JetStream engines (`engine.JetStreamEngine`, nats-server's ``jsAccount``) and what they hold together,
kept as running sums so that a question about the whole server does not ask every account.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyjetstream.api.enums import StorageType

if TYPE_CHECKING:
    from pyjetstream.server.jetstream.engine import JetStreamEngine

#: `ServerJetStream` keeps the server's usage as running sums; False: each read walks every
#: account's engine (the general path; the differential test proves the same answers either way).
TOTALS = True


class ServerJetStream:
    """The JetStream accounts of one server and what they store together.

    nats-server keeps one ``jetStream`` per server (``s.js``): the JetStream accounts
    (``js.accounts``) and the server-wide usage (``js.memUsed`` / ``js.storeUsed``), each account's
    delta added as it stores or removes (``jsAccount.updateUsage``), so that the server-wide limit
    check of a publish (``jsAccount.limitsExceeded`` -> ``js.limitsExceeded``) and the question "is
    JetStream on" (``JetStreamEnabled``) cost the same beside 10 and 10,000 accounts.

    Ours asked every account instead: `Server.jetstream` built the list of every account's engine
    when the global account had none (each CONNECT's INFO, each ``$SYS`` answer), and a publish's
    check of ``max_memory_store`` / ``max_file_store`` summed every other account's usage
    (`JetStreamEngine.check_account_limits`): 10,000 steps a publish beside 10,000 accounts. This
    holds the engines (added when an account's JetStream starts, removed when it is disabled) and
    the sum of their cached usage (`JetStreamEngine.usage`), told of each change of an engine's
    cache. An engine whose usage is not known (its cache dropped: a stream created, deleted,
    expired) is counted at the next read, once; one whose cache is an upper bound (written since it
    was counted) is counted again only by an exact read (a limit exceeded, ``/varz``), as the walk
    did. The sum is then what the walk (`TOTALS` off) finds, at the cost of the engines that changed
    since the last read, not of all of them.
    """

    def __init__(self) -> None:
        #: The engines by account name, in the order their JetStream started.
        self.engines: dict[str, JetStreamEngine] = {}
        #: Memory and file bytes: the sum of every engine's cached usage (none counted as 0).
        self.used = [0, 0]
        #: Memory and file bytes the engines' streams reserve (their `StreamIndex` keeps it).
        self.reserved = [0, 0]
        #: API requests answered, and with an error, by every engine (`JetStreamEngine.api_answered`).
        self.api_total = 0
        self.api_errors = 0
        self._unknown: set[JetStreamEngine] = set()  # no cached usage: counted at the next read
        self._estimated: set[JetStreamEngine] = set()  # an upper bound: counted at an exact read
        #: Engines whose usage a read counted or looked at (a step count: a test's).
        self.counted = 0
        #: The store directories checked (`check_store_dir`): once a server, as nats-server.
        self.checked_dirs: set[str] = set()

    def first(self) -> JetStreamEngine | None:
        """An engine for server-wide questions (the one started first), ``None`` when there is none."""
        for engine in self.engines.values():
            return engine
        return None

    # ------------------------------------------------------------------ membership

    def add(self, engine: JetStreamEngine) -> None:
        """An account's JetStream started: its usage counts from now on (an engine it replaces no
        longer does)."""
        replaced = self.engines.get(engine.account_name)
        if replaced is not None and replaced is not engine:
            self.remove(replaced)
        self.engines[engine.account_name] = engine
        engine.totals = self
        self.changed(engine, None, engine.cached_usage(), engine.usage_is_estimate())
        self._count_in(engine, 1)

    def remove(self, engine: JetStreamEngine) -> None:
        """An account's JetStream was disabled: its usage no longer counts."""
        if self.engines.get(engine.account_name) is not engine:
            return
        del self.engines[engine.account_name]
        self.changed(engine, engine.cached_usage(), None, False)
        self._unknown.discard(engine)
        self._count_in(engine, -1)
        engine.totals = None

    def _count_in(self, engine: JetStreamEngine, sign: int) -> None:
        """Add (``sign`` 1) or take out (-1) the engine's reservations and API counts."""
        index = engine.stream_index
        self.reserved[0] += sign * index.reserved(StorageType.MEMORY)
        self.reserved[1] += sign * index.reserved(StorageType.FILE)
        index.server_reserved = self.reserved if sign > 0 else None
        self.api_total += sign * engine.api_total
        self.api_errors += sign * engine.api_errors

    def api_answered(self, error: bool) -> None:
        self.api_total += 1
        self.api_errors += error

    def others_reserved(self, engine: JetStreamEngine, storage: StorageType) -> int:
        """What the streams of ``storage`` of every engine but ``engine`` reserve (their
        ``max_bytes``), for a stream create's check of the server's limit (nats-server
        ``checkBytesLimits``: ``js.storeReserved``, every account's)."""
        if TOTALS:
            own = engine.stream_index.reserved(storage) if engine.totals is self else 0
            return self.reserved[0 if storage == StorageType.MEMORY else 1] - own
        total = 0
        for other in self.engines.values():
            if other is not engine:
                self.counted += 1
                total += other.reserved(storage)
        return total

    # ------------------------------------------------------------------ an engine's cache

    def changed(
        self, engine: JetStreamEngine, old: tuple[int, int] | None, new: tuple[int, int] | None, estimated: bool
    ) -> None:
        """``engine``'s cached usage went from ``old`` to ``new`` (``None``: not known)."""
        used = self.used
        if old is not None:
            used[0] -= old[0]
            used[1] -= old[1]
        if new is None:
            self._unknown.add(engine)
            self._estimated.discard(engine)
            return
        self._unknown.discard(engine)
        used[0] += new[0]
        used[1] += new[1]
        if estimated:
            self._estimated.add(engine)
        else:
            self._estimated.discard(engine)

    def grew(self, engine: JetStreamEngine, index: int, size: int) -> None:
        """A write: ``engine``'s cached usage of one kind (0 memory, 1 file) grew by ``size``, an
        upper bound from now on (`JetStreamEngine.note_write`)."""
        self.used[index] += size
        self._estimated.add(engine)

    # ------------------------------------------------------------------ reads

    def others(self, engine: JetStreamEngine, index: int, exact: bool) -> int:
        """What every engine but ``engine`` uses of one kind (0 memory, 1 file): the sum of their
        ``usage(exact)``, as the walk of `TOTALS` off finds it."""
        if not TOTALS:
            total = 0
            for other in self.engines.values():
                if other is not engine:
                    self.counted += 1
                    total += other.usage(exact)[index]
            return total
        self._settle(exact)
        own = engine.cached_usage() if engine.totals is self else None
        return self.used[index] - (own[index] if own is not None else 0)

    def total(self) -> tuple[int, int]:
        """Memory and file bytes of every engine, counted exactly (``/varz``, STATSZ, ``/jsz``)."""
        if not TOTALS:
            memory = storage = 0
            for engine in self.engines.values():
                self.counted += 1
                used = engine.usage()
                memory += used[0]
                storage += used[1]
            return memory, storage
        self._settle(True)
        return self.used[0], self.used[1]

    def stats(self) -> tuple[int, int, int, int, int, int]:
        """Memory and file used (exactly), reserved, API requests and errors, over every engine,
        from the running sums: nats-server's ``js.usageStats`` (``/varz``, STATSZ; the walk of
        `TOTALS` off is `monitoring._stats`)."""
        memory, storage = self.total()
        return memory, storage, self.reserved[0], self.reserved[1], self.api_total, self.api_errors

    def _settle(self, exact: bool) -> None:
        """Count the engines whose usage is not known (and, ``exact``, those with an estimate).

        Each set is swapped for a new one before it is walked, not emptied in place: a set keeps
        its table when emptied, and a walk of it visits every slot, so once 10,000 engines had
        been unknown (a start) each later read walked 10,000 empty slots."""
        if self._unknown:
            unknown, self._unknown = self._unknown, set()
            for engine in unknown:
                self.counted += 1
                engine.usage(False)
        if exact and self._estimated:
            estimated, self._estimated = self._estimated, set()
            for engine in estimated:
                self.counted += 1
                engine.usage(True)
