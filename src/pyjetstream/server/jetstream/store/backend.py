"""The payload side of a store: where message bodies live, behind a small interface.

A store (``indexed.IndexedStore``) composes a `SeqIndex` (sequences,
subjects, counters) with one backend (payloads): the memory backend here, the block files
in ``blockfiles.py`` (nats-server's ``memstore.go`` / ``filestore.go`` split the same way
between their indexes and ``msgBlock``). The store always tells the backend first — while
the index still shows what is being removed — and then updates the index.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from array import array
from collections.abc import Sequence

from .base import MsgTuple, StoreConfig
from .seqindex import SeqIndex

_NONE: array[int] = array("Q")


class PayloadBackend(ABC):
    """Payload storage for the messages a `SeqIndex` indexes.

    ``loc`` is the backend's own 64-bit locator of a payload, kept by the index per slot.
    """

    # Accounted size = size_base + subject + payload (+ size_hdr + headers when present):
    # the stream ``bytes`` formula of the nats-server store this backend stands for.
    size_base = 0
    size_hdr = 0

    def __init__(self, index: SeqIndex) -> None:
        self.index = index
        #: ``(seq, record bytes)`` of live messages a read found damaged (their record fails its
        #: checksum or no longer matches the index): the store drops them and lists them lost.
        self.damaged: list[tuple[int, int]] = []

    @abstractmethod
    def append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> int:
        """Keep the payload of message ``seq``; return its locator."""

    def append_run(self, seq: int, subject: bytes, payloads: list[bytes]) -> tuple[array[int], array[int]]:
        """Keep header-less payloads as messages ``seq`` onwards, each stamped with the time it
        is taken in (`append`'s work, in one call: ``IndexedStore.store_run``). Returns
        their timestamps and locators, for as many as were taken — all unless the file
        backend's active block filled up after the first (the index must catch up before a
        block is sealed: the caller indexes those and calls again with the rest)."""
        tss = array("q")
        locs = array("Q")
        for payload in payloads:
            ts = time.time_ns()
            locs.append(self.append(seq, ts, subject, b"", payload))
            tss.append(ts)
            seq += 1
        return tss, locs

    def append_hrun(
        self,
        seq: int,
        subjects: list[bytes],
        hdrs: list[bytes],
        payloads: list[bytes],
        stamps: Sequence[int] | None = None,
    ) -> tuple[array[int], array[int]]:
        """`append_run` for messages with a subject and a header block each
        (``IndexedStore.store_run``: a read's publishes on several subjects or with headers);
        the same contract. ``stamps``: their timestamps (a mirror's copies), None: now."""
        tss = array("q")
        locs = array("Q")
        for k, (subject, hdr, payload) in enumerate(zip(subjects, hdrs, payloads, strict=True)):
            ts = stamps[k] if stamps is not None else time.time_ns()
            locs.append(self.append(seq, ts, subject, hdr, payload))
            tss.append(ts)
            seq += 1
        return tss, locs

    @abstractmethod
    def read(self, seq: int, loc: int) -> tuple[bytes, bytes]:
        """``(headers, payload)`` of a live message."""

    def read_msg(self, seq: int, loc: int, spanned: bool = False) -> tuple[str, int, bytes, bytes]:
        """``(subject, timestamp, headers, payload)`` of a live message whose subject id and
        timestamp the index did not read (`SeqIndex.slot` with ``names`` False: only a backend
        whose payloads hold them gives it a peeker that answers so). ``spanned``: ``loc`` is a
        span of the payloads that holds the message's among others (``idx_peek.SPANNED``)."""
        raise NotImplementedError

    def read_located(self, seq: int, span: int) -> tuple[str, int, int, int, int]:
        """What the removal of a message in ``span`` needs of it: ``(subject, subject length in
        bytes, header length, payload length, locator)`` — its real locator, where its record was
        found, never a guess (a secure erase overwrites those bytes); the lengths give its
        `IndexedStore.record_size`, so the header and payload are not copied out."""
        raise NotImplementedError

    def read_run(self, seqs: list[int]) -> list[MsgTuple]:
        """The messages at ``seqs`` (ascending; those that are not there are left out), in order,
        as `MsgTuple` (a consumer's read-ahead: ``IndexedStore.load_next_msgs``); a backend may
        do it in one loop."""
        index = self.index
        names, read = index.subjects.names, self.read
        out: list[MsgTuple] = []
        lo = hi = 0
        sids = tss = locs = _NONE
        for seq in seqs:
            if not lo <= seq < hi:
                p = index.page(seq)
                if p is None:
                    continue
                lo, hi, sids, tss, locs = p.first, p.first + p.n, p.sids, p.tss, p.locs
            k = seq - lo
            sid = sids[k]
            if sid:
                hdr, data = read(seq, locs[k])
                out.append((names[sid], seq, tss[k], hdr, data))  # type: ignore[arg-type]  # live: named
        return out

    @abstractmethod
    def remove(self, seq: int, loc: int, erase: bool, lazy: bool = False) -> None:
        """Message ``seq`` is being removed (``erase``: overwrite its bytes). ``lazy``: a
        ``max_msgs_per_subject`` trim, which the store enforces again when it opens, so its
        record of the removal need not reach the OS before the call returns."""

    def remove_many(self, seqs: list[int], locs: list[int], lazy: bool = False) -> None:
        """Messages ``seqs`` (ascending) are being removed at once (a subject purge): `remove`
        each, unless a backend does better."""
        remove = self.remove
        for seq, loc in zip(seqs, locs, strict=True):
            remove(seq, loc, False, lazy)

    @abstractmethod
    def remove_pages(self, spans: list[tuple[int, int]]) -> None:
        """Every live message of each ``[lo, hi)`` is being removed, each span a whole sealed page
        of the index (ascending; a purge's pages of nothing else, not the first of them)."""

    @abstractmethod
    def remove_range(self, lo: int, hi: int) -> None:
        """The live messages of sequences [lo, hi) are being removed (``lo`` is the first)."""

    def first_changed(self) -> None:
        """The first sequence advanced past removed messages (the floor moved)."""
        return None

    def note_ttl(self, seq: int, ttl: int) -> None:
        """Message ``seq`` (just appended) carries a ``Nats-TTL`` of ``ttl`` seconds (-1: never):
        the store tells a backend that keeps TTLs (the file store's block indexes) what the
        stream already parsed, so that no backend parses a header again."""
        return None

    def skip(self, seq: int, num: int, ts: int) -> None:
        """Sequences [seq, seq + num) are consumed without a message (index not updated yet)."""
        return None

    @abstractmethod
    def purge(self, new_first: int) -> None:
        """Everything is gone; the next message will be ``new_first`` or later."""

    @abstractmethod
    def reset(self) -> None:
        """Back to an empty, never-written store (truncate(0))."""

    @abstractmethod
    def truncate(self, seq: int) -> None:
        """Every message above ``seq`` is being removed (index not updated yet)."""

    def commit(self) -> None:
        """End of a mutation outside any batch: make it durable per the sync policy.

        Raises OSError when writing fails; the store then calls `rollback`."""
        return None

    def rollback(self) -> tuple[int, int] | None:
        """After a failed commit: drop every append since the last good commit and return that
        commit's ``(last_seq, last_ts)`` for the index (None: nothing to undo)."""
        return None

    def recount(self) -> None:
        """After a rollback, once the index is back: recount what the backend derives from it."""
        return None

    def config_changed(self, cfg: StoreConfig) -> None:
        """The stream's limits or compression changed."""
        return None


class MemoryPayloads(PayloadBackend):
    """Payloads in a list by sequence (nats-server ``memstore.go``'s ``msgs`` map).

    ``payloads[seq - base]``, None where there is no message; ``base + len(payloads)`` is
    always the next sequence, so an append is a plain list append. The leading dead part is
    cut as the first sequence advances, like the index's slots.
    """

    # memStoreMsgSize: subject + headers + payload + 16 (seq and timestamp).
    size_base = 16
    size_hdr = 0
    _TRIM_MIN = 4096

    def __init__(self, index: SeqIndex) -> None:
        super().__init__(index)
        self.payloads: list[tuple[bytes, bytes] | None] = []
        self.base = 1

    def append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> int:
        # Copy only what is not immutable bytes already (a type check is half a bytes() call).
        self.payloads.append(
            (hdr if type(hdr) is bytes else bytes(hdr), data if type(data) is bytes else bytes(data))
        )
        return 0

    def append_run(self, seq: int, subject: bytes, payloads: list[bytes]) -> tuple[array[int], array[int]]:
        time_ns = time.time_ns
        tss = array("q", [time_ns() for _ in payloads])
        self.payloads.extend([(b"", p if type(p) is bytes else bytes(p)) for p in payloads])
        return tss, array("Q", bytes(8 * len(payloads)))

    def append_hrun(
        self,
        seq: int,
        subjects: list[bytes],
        hdrs: list[bytes],
        payloads: list[bytes],
        stamps: Sequence[int] | None = None,
    ) -> tuple[array[int], array[int]]:
        time_ns = time.time_ns
        tss = array("q", stamps if stamps is not None else [time_ns() for _ in payloads])
        self.payloads.extend(
            [
                (h if type(h) is bytes else bytes(h), p if type(p) is bytes else bytes(p))
                for h, p in zip(hdrs, payloads, strict=True)
            ]
        )
        return tss, array("Q", bytes(8 * len(payloads)))

    def read(self, seq: int, loc: int) -> tuple[bytes, bytes]:
        return self.payloads[seq - self.base]  # type: ignore[return-value]  # the index says it is live

    def read_run(self, seqs: list[int]) -> list[MsgTuple]:
        index = self.index
        payloads, base, names = self.payloads, self.base, index.subjects.names
        out: list[MsgTuple] = []
        append = out.append
        lo = hi = 0
        sids = tss = _NONE
        for seq in seqs:
            if not lo <= seq < hi:
                p = index.page(seq)
                if p is None:
                    continue
                lo, hi, sids, tss = p.first, p.first + p.n, p.sids, p.tss
            k = seq - lo
            sid = sids[k]
            if sid:
                hdr, data = payloads[seq - base]  # type: ignore[misc]  # the index says it is live
                append((names[sid], seq, tss[k], hdr, data))  # type: ignore[arg-type]
        return out

    def remove(self, seq: int, loc: int, erase: bool, lazy: bool = False) -> None:
        # Erase: nothing else references the bytes once dropped (Python bytes are immutable,
        # so there is no buffer to scribble over as memstore.go does).
        self.payloads[seq - self.base] = None
        if not seq & 0xFFF:  # now and then, not on every removal
            self._trim()

    def remove_many(self, seqs: list[int], locs: list[int], lazy: bool = False) -> None:
        payloads, base = self.payloads, self.base
        for seq in seqs:
            payloads[seq - base] = None
        self._trim()

    def remove_pages(self, spans: list[tuple[int, int]]) -> None:
        payloads, base = self.payloads, self.base
        for lo, hi in spans:
            a, b = max(lo - base, 0), min(hi - base, len(payloads))
            if b > a:
                payloads[a:b] = [None] * (b - a)
        self._trim()

    def remove_range(self, lo: int, hi: int) -> None:
        a = max(lo - self.base, 0)
        b = min(hi - self.base, len(self.payloads))
        if b > a:
            self.payloads[a:b] = [None] * (b - a)
            self._trim(hi)

    def _trim(self, first: int = 0) -> None:
        """Cut the dead front once it is large and half the list (``first``: the first
        sequence still wanted, when the index has not caught up yet)."""
        k = max(self.index.first_seq, first) - self.base
        if k < self._TRIM_MIN or 2 * k < len(self.payloads):
            return
        del self.payloads[:k]
        self.base += k

    def skip(self, seq: int, num: int, ts: int) -> None:
        if self.index.msgs:
            self.payloads.extend([None] * num)
        else:
            self.payloads.clear()
            self.base = seq + num

    def purge(self, new_first: int) -> None:
        self.payloads.clear()
        self.base = new_first

    def reset(self) -> None:
        self.payloads.clear()
        self.base = 1

    def truncate(self, seq: int) -> None:
        del self.payloads[seq + 1 - self.base :]
