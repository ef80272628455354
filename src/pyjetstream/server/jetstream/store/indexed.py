"""The store logic shared by the memory and file stores: limits, queries, removal.

A store is a `SeqIndex` (sequences, subjects, counters) composed with a
`PayloadBackend` (where payloads live: a dict in RAM, or records in block
files). Keeping one implementation of the semantics (nats-server's ``memstore.go`` /
``filestore.go``) means the two stores cannot drift apart. Every mutation tells the backend
first, while the index still shows what is being removed, then updates the index; outside a
``batch()`` it ends with ``backend.commit()``.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import time
from array import array
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence

from msgspec.structs import replace as _replace

from pyjetstream.protocol.subjects import compile_filter, is_match_all

from . import remove_one, seqbulk
from ._fileutil import map_large_buffers
from .backend import PayloadBackend
from .base import (
    DISCARD_NEW,
    DISCARD_OLD,
    ErrCorruptRecord,
    ErrInsufficientResources,
    ErrInvalidSequence,
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    ErrSequenceMismatch,
    ErrStoreClosed,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    ErrStoreWrite,
    LostData,
    MessageStore,
    MsgTuple,
    SimpleState,
    StoreConfig,
    StoredMsg,
    StoreError,
    StreamState,
    stored_msg,
)
from .idx_peek import SPANNED
from .pages import Page
from .seqindex import SeqIndex
from .ttls import MessageTTLs

# A removal of more messages than this at once (a subject purge) is one bulk removal.
_BULK_MIN = 64
#: The oldest messages a run's publishes push past max_msgs / max_bytes are removed together
#: (`IndexedStore._remove_trimmed`, each told to ``on_removed``); off: one `_remove_at` each.
TRIM_TOGETHER = True
# A run that the discard-old limits trim is stored whole and trimmed after (False: one by one).
TRIM_RUNS = True
# A purge drops a sealed page (a file store's block) whose every live message goes whole,
# by its counts, without loading or listing its slots (False: each message listed and removed).
WHOLE_PAGES = True
#: A read from the last message stored on (`IndexedStore.load_next_msgs`: a consumer at the end of its
#: stream, one message a pass) is answered with that message as it was stored (`IndexedStore._last`)
#: while it is still the stream's last and live, where the index was walked and the record read back;
#: off: the walk and the read.
LAST_STORED = True
_time_ns = time.time_ns

#: ``expire(seq, subject, last)``: a message's age or TTL is up; ``last`` says it is the only
#: message left on its subject. The stream writes a subject delete marker (which rolls the
#: message up) or removes it; the store removes it afterwards if it is still there.
ExpireHandler = Callable[[int, str, bool], bool | None]


class IndexedStore(MessageStore):
    """`MessageStore` over an index and a payload backend (see the module docstring)."""

    on_damage: Callable[[list[int], int], None] | None = None  # (damaged seqs a read dropped, bytes)

    def __init__(self, cfg: StoreConfig, index: SeqIndex, backend: PayloadBackend) -> None:
        map_large_buffers()  # the index arrays grow by reallocation
        self._cfg = _replace(cfg)
        self._limits_active = _has_limits(cfg)
        self._discard_new = cfg.discard == DISCARD_NEW
        self._closed = False
        self._batch_depth = 0
        self._lost: LostData | None = None
        self.write_error: StoreError | None = None
        self._index = index
        self._backend = backend
        self._size_base = backend.size_base
        self._size_hdr = backend.size_hdr
        # Bound once: the append and read paths are the hot ones; hooks a backend leaves as
        # the base class's no-ops are not called at all.
        self._append_payload = backend.append
        self._append_index = index.append
        self._append_index_run = index.append_run
        self._read_payload = backend.read
        self._commits = type(backend).commit is not PayloadBackend.commit
        self._first_changed = (
            backend.first_changed if type(backend).first_changed is not PayloadBackend.first_changed else None
        )
        self._note_ttl = backend.note_ttl if type(backend).note_ttl is not PayloadBackend.note_ttl else None
        self._ttl = MessageTTLs()  # per-message TTLs (nats-server's timed hash wheel)
        self._last: MsgTuple | None = None  # the last message stored, as a read gives it back (`_read_next`)

    def record_size(self, subject_len: int, hdr_len: int, data_len: int) -> int:
        if hdr_len:
            return self._size_base + subject_len + self._size_hdr + hdr_len + data_len
        return self._size_base + subject_len + data_len

    # ------------------------------------------------------------------------------------
    # Writing
    # ------------------------------------------------------------------------------------
    def store_msg(
        self, subject: str, hdr: bytes, data: bytes, ts: int | None = None, ttl: int = 0
    ) -> tuple[int, int]:
        if self._closed:
            raise ErrStoreClosed()
        if self.write_error is not None:
            raise ErrStoreWrite(str(self.write_error))
        hl = len(hdr)
        dl = len(data)
        max_size = self._cfg.max_msg_size
        if max_size > 0 and hl + dl > max_size:
            raise ErrMsgTooLarge()
        sb = subject.encode()
        size = self._size_base + len(sb) + dl + (self._size_hdr + hl if hl else 0)
        index = self._index
        if self._discard_new:
            self._check_discard_new(index.subjects.ids.get(subject, 0), hl + dl, size)
        seq = index.last_seq + 1
        if ts is None:
            ts = _time_ns()
        try:
            loc = self._append_payload(seq, ts, sb, hdr, data)
        except OSError as exc:  # e.g. a new block file could not be created
            self._write_failed(exc)
        sid = self._append_index(seq, subject, ts, size, loc)
        if type(data) is bytes and type(hdr) is bytes:  # (as a read gives them back)
            self._last = (subject, seq, ts, hdr, data)
        if ttl:
            self._ttl.track(seq, ts, ttl)
            if self._note_ttl is not None:
                self._note_ttl(seq, ttl)
        if self._limits_active:
            self._enforce_limits(sid)
        if self._commits and not self._batch_depth:
            try:
                self._backend.commit()
            except OSError as exc:
                self._write_failed(exc)
        return seq, ts

    def run_fits(self, subjects: list[str], largest: int, total: int) -> bool:
        """Whether `store_msg` would take one message on each of ``subjects`` in turn
        without refusing one, and remove none for the limits unless `trims_after_run`
        (``largest``: the largest header block and payload together; ``total``: their
        accounted sizes summed): then `store_run` may store them in one pass. Any doubt is a
        no (the caller stores them one by one)."""
        if self._closed or self.write_error is not None or (self._commits and not self._batch_depth):
            return False  # (outside a batch, each message's own commit could fail on its own)
        cfg = self._cfg
        if 0 < cfg.max_msg_size < largest:
            return False
        if _refuses_new(self._cfg) or (self._limits_active and not self.trims_after_run()):
            index = self._index
            count = len(subjects)
            if 0 < cfg.max_msgs < index.msgs + count or 0 < cfg.max_bytes < index.bytes + total:
                return False
            maxp = cfg.max_msgs_per_subject
            if maxp > 0:
                ids = index.subjects.ids
                msgs = index.subjects.msgs
                for subject, n in Counter(subjects).items():
                    sid = ids.get(subject, 0)
                    if (msgs[sid] if sid else 0) + n > maxp:
                        return False
        return True

    def trims_after_run(self) -> bool:
        """Whether a run under discard-old limits may be stored whole and trimmed after
        (`_trim_run`) instead of being refused by `run_fits`: it leaves what one by one leaves —
        each subject's newest ``max_msgs_per_subject``, then the newest that ``max_msgs`` and
        ``max_bytes`` keep (a removal for the per-subject limit always comes with a newer
        message, so it never lets an older one stay). Not with a per-subject limit and
        ``max_bytes`` together: a message replaced on its subject frees bytes one by one could
        not have used (an older message it trimmed stays trimmed)."""
        cfg = self._cfg
        return TRIM_RUNS and not (cfg.max_msgs_per_subject > 0 and cfg.max_bytes > 0)

    def store_run(
        self, subjects: list[str], hdrs: list[bytes], payloads: list[bytes], ttls: list[int] | None = None,
        stamps: Sequence[int] | None = None,
    ) -> tuple[int, Sequence[int], StoreError | None]:
        """`store_msg` ``(subjects[i], hdrs[i], payloads[i], stamps[i], ttls[i])`` for each in turn
        (``b""``: no header block; ``ttls`` None: no TTLs; ``stamps`` None: now) in one pass — a read's
        publishes: the backend frames them in one loop and the index takes them with array extends (header-less messages on one
        subject, a pipelining publisher's: ``append_run`` and ``SeqIndex.append_run``; else
        ``append_hrun`` and ``SeqIndex.append_many``). Only after `run_fits` said yes, so
        nothing is refused for the limits; what discard-old limits remove goes after the run
        (`_trim_run`; a write that fails mid-run leaves the older messages one by one would have
        trimmed before it). Returns ``(first sequence, the timestamps of those stored, the error
        that stopped the rest)``, the error being what `store_msg` would have raised for the
        message after the stored ones (a write that failed takes every message of the batch back)."""
        n = len(payloads)
        one = stamps is None and subjects.count(subjects[0]) == n and not any(hdrs)
        sbs = [subjects[0].encode()] if one else [s.encode() for s in subjects]
        first = seq = self._index.last_seq + 1
        stamped = array("q")
        sids = array("I")
        done = 0
        while done < n:
            try:
                if one:
                    tss, locs = self._backend.append_run(seq, sbs[0], payloads[done:] if done else payloads)
                else:
                    given = stamps and stamps[done:]  # a mirror's copies: the origin's (None: now)
                    tss, locs = self._backend.append_hrun(seq, sbs[done:], hdrs[done:], payloads[done:], given)
            except OSError as exc:  # e.g. a new block file could not be created
                try:
                    self._write_failed(exc)
                except StoreError as error:
                    return first, stamped, error
            except StoreError as error:
                return first, stamped, error
            hi = done + len(tss)
            if one:
                base = self._size_base + len(sbs[0])
                sizes = array("I", [base + len(p) for p in payloads[done:hi]])
                sids.extend(array("I", [self._append_index_run(seq, subjects[0], tss, sizes, locs)]) * (hi - done))
            else:
                sizes = self._run_sizes(sbs[done:hi], hdrs[done:hi], payloads[done:hi])
                sids.extend(self._index.append_many(seq, subjects[done:hi], tss, sizes, locs))
            if ttls is not None:
                self._track_run_ttls(seq, tss, ttls[done:hi])
            stamped.extend(tss)
            seq += hi - done
            done = hi
        if stamped:
            self._last = _last_of_run(subjects, hdrs, payloads, seq - 1, stamped[-1], one)
        if self._limits_active:
            self._trim_run(first, sids)
        return first, stamped, None

    def _trim_run(self, seq: int, sids: array[int]) -> None:
        """The limits `_enforce_limits` applies after each message, applied once after a run
        stored from ``seq`` on (`trims_after_run`; ``sids``: its subject ids as the index took
        them): each subject of the run down to ``max_msgs_per_subject`` (its oldest go, all
        removed together: `_remove_trimmed`), then the stream's oldest while ``max_msgs`` /
        ``max_bytes`` are passed (together too: `seqbulk.over_limits`, switch `TRIM_TOGETHER`)."""
        maxp = self._cfg.max_msgs_per_subject
        if maxp > 0:
            msgs = self._index.subjects.msgs
            counts = Counter(sids)
            over = [(sid, c) for sid, c in counts.items() if msgs[sid] > maxp]
            if over:
                gone = seqbulk.trimmed(self._index, seq, sids, over, maxp)
                gone.sort()
                self._remove_trimmed(gone, lazy=True)
        if self._cfg.discard == DISCARD_OLD:
            gone = seqbulk.over_limits(self._index, self._cfg.max_msgs, self._cfg.max_bytes) if TRIM_TOGETHER else []
            if len(gone) > 1:  # (together: the loop then finds the limits held)
                self._remove_trimmed(gone, keep_last=False)
            self._trim_to_limits()

    def _remove_trimmed(self, gone: list[tuple[int, int]], keep_last: bool = True, lazy: bool = False) -> None:
        """Remove the live messages ``(seq, sid)`` (ascending) that a limit trims (each subject's
        last stays: ``keep_last``) or that expired, together (the backend's `remove_many`,
        `seqbulk.remove_seqs`), each told to ``on_removed`` as `_remove_at` tells it: consumers
        count them out, no recount (not a bulk removal)."""
        index = self._index
        seqs = [seq for seq, _ in gone]
        self._backend.remove_many(seqs, seqbulk.locs_of(index, seqs), lazy)
        first = seqs[0] == index.first_seq
        hook = self.on_removed
        names = [index.subjects.names[sid] or "" for _, sid in gone] if hook is not None else []
        seqbulk.remove_seqs(index, seqs, keep_last=keep_last)
        if first and self._first_changed is not None:
            self._first_changed()
        if hook is not None:
            for seq, subject in zip(seqs, names, strict=True):
                hook(seq, subject)

    def _track_run_ttls(self, seq: int, tss: Sequence[int], ttls: list[int]) -> None:
        """The TTLs of messages ``seq`` onwards, just stored at ``tss`` (0: none): tracked, and
        told to the backend (before the next append may seal their block)."""
        note = self._note_ttl
        for k, ttl in enumerate(ttls):
            if ttl:
                self._ttl.track(seq + k, tss[k], ttl)
                if note is not None:
                    note(seq + k, ttl)

    def _run_sizes(self, sbs: list[bytes], hdrs: list[bytes], payloads: list[bytes]) -> array[int]:
        """The accounted size of each message of a run (`record_size`)."""
        base = self._size_base
        size_hdr = self._size_hdr
        return array(
            "I",
            [
                base + len(sb) + len(p) + (size_hdr + len(h) if h else 0)
                for sb, h, p in zip(sbs, hdrs, payloads, strict=True)
            ],
        )

    def _check_discard_new(self, sid: int, payload: int, size: int) -> None:
        # nats-server storeRawMsg: a subject at its per-subject limit will drop its oldest
        # message, so the stream-wide limits do not reject it ("asl"). As there (2.11+), the bytes
        # check adds the new message's accounted record size and refuses above max_bytes.
        cfg = self._cfg
        index = self._index
        table = index.subjects
        maxp = cfg.max_msgs_per_subject
        asl = bool(sid) and maxp > 0 and table.msgs[sid] >= maxp
        if asl and cfg.discard_new_per_subject:
            raise ErrMaxMsgsPerSubject()
        if cfg.max_msgs > 0 and index.msgs >= cfg.max_msgs and not asl:
            raise ErrMaxMsgs()
        if cfg.max_bytes > 0 and index.bytes + size > cfg.max_bytes:
            if not asl:
                raise ErrMaxBytes()
            oldest = index.size_of(table.first[sid])
            if oldest < size:
                raise ErrMaxBytes()

    def _enforce_limits(self, sid: int) -> None:
        cfg = self._cfg
        maxp = cfg.max_msgs_per_subject
        if maxp > 0 and sid:
            table = self._index.subjects
            while table.msgs[sid] > maxp:
                self._remove_at(table.first[sid], False, lazy=True)
        if cfg.discard == DISCARD_OLD:
            self._trim_to_limits()

    def _trim_to_limits(self) -> None:
        """Drop the oldest messages until max_msgs and max_bytes hold."""
        cfg, index = self._cfg, self._index
        while 0 < cfg.max_msgs < index.msgs or (0 < cfg.max_bytes < index.bytes and index.msgs):
            self._remove_at(index.first_seq, False)

    def skip_msg(self) -> int:
        if self._closed:
            raise ErrStoreClosed()
        seq = self._index.last_seq + 1
        self._skip(seq, 1)
        return seq

    def skip_msgs(self, seq: int, num: int) -> None:
        if self._closed:
            raise ErrStoreClosed()
        if seq != self._index.last_seq + 1:
            if seq > 0:
                raise ErrSequenceMismatch()
            seq = self._index.last_seq + 1
        if num > 0:
            self._skip(seq, num)

    def _skip(self, seq: int, num: int) -> None:
        if self.write_error is not None:
            raise ErrStoreWrite(str(self.write_error))
        now = time.time_ns()
        self._backend.skip(seq, num, now)
        self._index.skip(seq, num, now)
        self._commit()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if not self._batch_depth and not self._closed:
                try:
                    self._backend.commit()
                except OSError as exc:
                    self._write_failed(exc)

    def _commit(self) -> None:
        if not self._batch_depth:
            try:
                self._backend.commit()
            except OSError as exc:
                self._write_failed(exc)

    def _write_failed(self, exc: OSError) -> None:
        """A commit could not be written: take back every message appended since the last good
        commit, so the state counts only what is stored, and raise the store error (nats-server
        answers 10023 when the disk is full)."""
        point = self._backend.rollback()
        if point is not None:
            last_seq, last_ts = point
            if last_seq < self._index.last_seq:
                self._index.drop_after(last_seq, last_ts)
                self.bulk_removals += 1
                self._ttl.truncate(last_seq)
            self._backend.recount()
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise ErrInsufficientResources() from exc
        error = ErrStoreWrite(f"write failed: {exc.strerror or exc}")
        if exc.errno != errno.ENOENT:
            # nats-server setWriteErr: any other I/O error freezes the store's writes (a missing
            # file is reported but does not); a full disk does not either, it resumes by itself.
            self.write_error = error
        raise error from exc

    # ------------------------------------------------------------------------------------
    # Removal
    # ------------------------------------------------------------------------------------
    def remove_msg(self, seq: int, erase: bool = False) -> bool:
        if self._closed:
            raise ErrStoreClosed()
        removed = remove_one.remove_evicted(self, seq, erase, self._remove_at)
        if removed:
            self._commit()
        return removed

    def erase_msg(self, seq: int) -> bool:
        return self.remove_msg(seq, True)

    def _remove_at(self, seq: int, erase: bool, lazy: bool = False) -> bool:
        index = self._index
        p = index.at(seq)
        if p is None:
            return False
        k = seq - p.first
        self._backend.remove(seq, p.locs[k], erase, lazy)
        first = seq == index.first_seq
        hook = self.on_removed
        subject = index.subjects.names[p.sids[k]] or "" if hook is not None else ""
        index.remove(p, k)
        if first and self._first_changed is not None:
            self._first_changed()
        if hook is not None:
            hook(seq, subject)
        return True

    def _remove_prefix(self, hi: int) -> int:
        """Remove every live message below sequence ``hi``; return how many."""
        index = self._index
        if not index.msgs or hi <= index.first_seq:
            return 0
        self._backend.remove_range(index.first_seq, min(hi, index.last_seq + 1))
        purged = index.remove_prefix(hi)
        self.bulk_removals += 1
        if purged and self._first_changed is not None:
            self._first_changed()
        return purged

    def purge(self) -> int:
        if self._closed:
            raise ErrStoreClosed()
        return self._purge(0)

    def _purge(self, fseq: int) -> int:
        index = self._index
        purged = index.msgs
        new_first = max(index.last_seq + 1, fseq)
        self._backend.purge(new_first)
        index.purge(new_first)
        self.bulk_removals += 1
        self._ttl.clear()
        self._commit()
        return purged

    def compact(self, seq: int) -> int:
        if self._closed:
            raise ErrStoreClosed()
        index = self._index
        if seq == 0 or seq > index.last_seq:
            return self._purge(seq)
        if seq <= index.first_seq:
            return 0
        purged = self._remove_prefix(seq)
        self._commit()
        return purged

    def purge_ex(self, subject: str = "", seq: int = 0, keep: int = 0) -> int:
        if self._closed:
            raise ErrStoreClosed()
        if seq == 1:  # "up to but not including 1": nothing (nats-server 2.11+ PurgeEx)
            return 0
        index = self._index
        if is_match_all(subject):
            if keep == 0 and seq == 0:
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if keep > 0:
                if keep >= index.msgs:
                    return 0
                return self.compact(index.last_seq - keep + 1)
            return 0
        table = index.subjects
        matched = list(table.matching(subject))
        if not matched:
            return 0
        # (one subject: a roll-up's, a schedule's — most often its only message, nothing to purge)
        total = table.msgs[matched[0]] if len(matched) == 1 else sum(table.msgs[sid] for sid in matched)
        maxp = total
        if keep > 0:
            if keep >= total:
                return 0
            maxp = total - keep
        limit = seq - 1 if seq > 0 else index.last_seq
        # Oldest first across the matching subjects (matters when keeping the newest N); one is
        # the oldest of their firsts (a fired schedule's, a marker's roll-up: no page looked at).
        whole: list[Page] = []
        if maxp == 1:
            oldest = min(table.first[sid] for sid in matched)
            seqs = [oldest] if oldest <= limit else []
        else:
            seqs = seqbulk.oldest_of(index, matched, maxp, limit, whole if WHOLE_PAGES else None)
        gone = len(seqs) + sum(p.msgs for p in whole)
        if gone:
            self._remove_seqs(seqs, whole)
            self._commit()
        return gone

    def purge_subjects(self, subjects: Collection[str], keep: int = 0) -> int:
        """`purge_ex` of each literal subject, all removed at once (`seqbulk.of_subjects`)."""
        whole: list[Page] = []
        seqs = seqbulk.of_subjects(self._index, subjects, keep, whole if WHOLE_PAGES else None)
        self._remove_seqs(seqs, whole)
        self._commit()  # (nothing to write when nothing was removed)
        return len(seqs) + sum(p.msgs for p in whole)

    def _remove_seqs(self, seqs: list[int], whole: list[Page] | None = None) -> None:
        """Remove the messages at ``seqs`` (ascending, live) and every live one of the sealed
        pages ``whole`` (a purge's pages of nothing else: `seqbulk.oldest_of`): a few one by one
        (each told to `on_removed`), many at once — the backend's `remove_many` and
        `remove_pages` (a file store's blocks go whole, unread, as nats-server's ``purgeEx``
        removes a block it empties), `seqbulk.remove_seqs` — counted as a bulk removal
        (consumers recount: nats-server's ``md < -1``)."""
        if not whole and len(seqs) <= _BULK_MIN:
            for seq in seqs:
                self._remove_at(seq, False)
            return
        index = self._index
        head = index.first_seq
        if seqs:
            self._backend.remove_many(seqs, seqbulk.locs_of(index, seqs))
        if whole:
            self._backend.remove_pages([(p.first, p.end) for p in whole])
        seqbulk.remove_seqs(index, seqs, whole=whole or ())
        self.bulk_removals += 1
        if index.first_seq != head and self._first_changed is not None:
            self._first_changed()

    def truncate(self, seq: int) -> None:
        if self._closed:
            raise ErrStoreClosed()
        index = self._index
        if seq == 0:
            self._backend.reset()
            index.reset()
            self.bulk_removals += 1
            self._ttl.clear()
            self._commit()
            return
        if seq > index.last_seq or not index.live(seq):
            raise ErrInvalidSequence()
        self._backend.truncate(seq)
        index.truncate(seq)
        if self._lost is not None:  # (sequences past ``seq`` are given again: none of them is lost)
            self._lost = LostData([q for q in self._lost.msgs if q <= seq], self._lost.bytes)
        self.bulk_removals += 1
        self._ttl.truncate(seq)
        self._commit()

    # ------------------------------------------------------------------------------------
    # Expiry: max_age and per-message TTLs
    # ------------------------------------------------------------------------------------
    def msg_ttls(self) -> dict[int, int]:
        """``{seq: ttl}`` of the stored messages that have one (what a restart must restore)."""
        return self._ttl.of_live(self._index.live)

    def restore_ttls(self, ttls: dict[int, int]) -> None:
        """After recovery: TTLs of stored messages, as `msg_ttls` gave them."""
        index = self._index
        for seq, ttl in sorted(ttls.items()):
            p = index.at(seq)
            if p is not None and ttl:
                self._ttl.track(seq, p.tss[seq - p.first], ttl)

    def expire_msgs(self, now: int | None = None, expire: ExpireHandler | None = None) -> int:
        """Remove what max_age or a TTL expired at ``now`` (nats-server ``expireMsgs``).

        Messages whose TTL is "never" are kept whatever their age. With ``expire`` each
        expired message goes through it, oldest first (subject delete markers); one it answers
        True for stays, its TTL forgotten: the caller's marker rolls it up.
        """
        if self._closed:
            raise ErrStoreClosed()
        index = self._index
        if not index.msgs:
            return 0
        if now is None:
            now = time.time_ns()
        before = index.msgs
        max_age = self._cfg.max_age
        if max_age > 0:
            cutoff = now - max_age
            if not self._ttl.nevers and expire is None:
                while index.msgs:
                    hi = index.expired_bound(cutoff)
                    if not hi:
                        break
                    self._remove_prefix(hi)
            else:
                self._expire_each(self._aged_out(cutoff), expire)
        due = self._ttl.due(now)
        if due:
            self._expire_each(due, expire)
        self._ttl.compact(index.live, index.msgs)
        removed = before - index.msgs
        self._commit()
        return max(removed, 0)

    def _aged_out(self, cutoff: int) -> list[int]:
        """Sequences older than the cutoff, except those that never expire."""
        index = self._index
        out: list[int] = []
        seq = index.first_seq
        while True:
            seq = index.next_match(">", seq)
            if not seq or index.ts_of(seq) > cutoff:
                return out
            if not self._ttl.never_expires(seq):
                out.append(seq)
            seq += 1

    def _expire_each(self, seqs: list[int], expire: ExpireHandler | None) -> None:
        """Remove the expired messages ``seqs`` (ascending), each through ``expire`` first when
        there is one; many without it are removed together (`_expire_together`)."""
        if expire is None and len(seqs) > _BULK_MIN:
            self._expire_together(seqs)
            return
        index = self._index
        for seq in seqs:
            p = index.at(seq)
            if p is None:
                self._ttl.forget(seq)
                continue
            if expire is not None:
                table = index.subjects
                sid = p.sids[seq - p.first]
                if expire(seq, table.names[sid] or "", table.msgs[sid] == 1) or not index.live(seq):
                    self._ttl.forget(seq)
                    continue
            self._remove_at(seq, False)
            self._ttl.forget(seq)

    def _expire_together(self, seqs: list[int]) -> None:
        """Expired messages ``seqs`` (ascending) with nothing to write for them: those still
        there removed at once (`_remove_trimmed`, each told to ``on_removed`` as one by one: a
        TTL expiry is a removal per message in nats-server, not a purge), their TTLs forgotten."""
        index = self._index
        forget = self._ttl.forget
        gone: list[tuple[int, int]] = []
        for seq in seqs:
            forget(seq)
            p = index.at(seq)
            if p is not None and (not gone or gone[-1][0] != seq):
                gone.append((seq, p.sids[seq - p.first]))
        if gone:
            self._remove_trimmed(gone, keep_last=False)

    def next_expiry(self) -> int | None:
        """Unix ns when the next message reaches max_age or its TTL (None: nothing will)."""
        index = self._index
        if not index.msgs:
            return None
        best: int | None = None
        max_age = self._cfg.max_age
        if max_age > 0:
            if not self._ttl.nevers:
                best = index.first_ts + max_age
            else:
                seq = index.first_seq
                while True:
                    seq = index.next_match(">", seq)
                    if not seq:
                        break
                    if not self._ttl.never_expires(seq):
                        best = index.ts_of(seq) + max_age
                        break
                    seq += 1
        due = self._ttl.next_due(index.live)
        if due is not None and (best is None or due < best):
            best = due
        return best

    # ------------------------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------------------------
    def load_msg(self, seq: int) -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        index = self._index
        got = index.slot(seq, False)
        if got is None:
            if seq > index.last_seq:
                raise ErrStoreEOF()
            raise ErrStoreMsgNotFound()
        msg = _msg_in(self, seq, got)
        if msg is None:
            raise ErrStoreMsgNotFound()
        return msg

    def _msg_at(self, seq: int) -> StoredMsg | None:
        """The live message at ``seq``; None when its record turned out damaged (it is dropped
        and listed lost then: the caller looks for the next one)."""
        got = self._index.slot(seq)
        assert got is not None
        return _msg_in(self, seq, got)

    def load_next_msg(self, filter_subject: str, start_seq: int) -> tuple[StoredMsg, int]:
        if self._closed:
            raise ErrStoreClosed()
        got = _intact(self, lambda q: self._index.next_match(filter_subject, q), start_seq, 1)
        if got is None:
            raise ErrStoreEOF()
        return got

    def load_msgs(self, seqs: Sequence[int]) -> list[MsgTuple]:
        """The messages at ``seqs`` (ascending) that are there, read in one backend call."""
        if self._closed:
            raise ErrStoreClosed()
        return _checked(self, self._backend.read_run(list(seqs)))

    def load_next_msg_multi(self, filters: Sequence[str], start_seq: int) -> tuple[StoredMsg, int]:
        if self._closed:
            raise ErrStoreClosed()
        got = _intact(self, functools.partial(self._index.next_match_multi, tuple(filters)), start_seq, 1)
        if got is None:
            raise ErrStoreEOF()
        return got

    def load_next_msgs(
        self, filter_subject: str, start_seq: int, max_msgs: int, max_bytes: int
    ) -> list[MsgTuple]:
        """`load_next_msg` for a run: up to ``max_msgs`` messages from ``start_seq`` on
        matching the filter, in order, ending early after the one that brings their stored sizes
        to ``max_bytes`` (empty at the end).

        A consumer's delivery pass reads ahead with it: the slots are found in one walk over the
        index (``SeqIndex.next_slots``) and read in one backend call (``read_run``, which builds
        the plain tuples) instead of a ``load_next_msg`` → ``next_match`` → ``_msg_at`` → ``read``
        chain per message.
        """
        return _read_next(self, (filter_subject,), start_seq, max_msgs, max_bytes)

    def load_next_msgs_multi(
        self, filters: Sequence[str], start_seq: int, max_msgs: int, max_bytes: int
    ) -> list[MsgTuple]:
        """`load_next_msgs` for messages matching any of several filters (nats-server
        ``LoadNextMsgMulti``): one walk, not one per filter."""
        return _read_next(self, tuple(filters), start_seq, max_msgs, max_bytes)

    def load_last_msg(self, subject: str) -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        got = _intact(self, lambda _q: self._index.last_match(subject), 0, 0)  # (damaged: the one before)
        if got is None:
            raise ErrStoreMsgNotFound()
        return got[0]

    def last_seq_on(self, subject: str) -> int:
        """`MessageStore.last_seq_on` from the index (nats-server's per-subject state), unread."""
        if self._closed:
            raise ErrStoreClosed()
        return self._index.last_match(subject)

    def load_prev_msg(self, start_seq: int, filter_subject: str = ">") -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        got = _intact(self, lambda q: self._index.prev_match(q, filter_subject), start_seq, -1)
        if got is None:
            raise ErrStoreMsgNotFound()
        return got[0]

    def subject_for_seq(self, seq: int) -> str:
        if not self._index.live(seq):
            raise ErrStoreMsgNotFound()
        return self._index.subject_of(seq)

    def get_seq_from_time(self, ts: int) -> int:
        return self._index.seq_from_time(ts)

    # ------------------------------------------------------------------------------------
    # Per-subject and filtered state
    # ------------------------------------------------------------------------------------
    def subjects_state(self, filter_subject: str = ">") -> dict[str, SimpleState]:
        return self._index.subjects_state(filter_subject)

    def subjects_totals(self, filter_subject: str = ">") -> dict[str, int]:
        return self._index.subjects_totals(filter_subject)

    def subjects_page(self, filter_subject: str, after: int, limit: int) -> list[tuple[int, str, SimpleState]]:
        return self._index.subjects_page(filter_subject, after, limit)

    def subjects_sorted_page(self, filter_subject: str, offset: int, limit: int) -> tuple[int, dict[str, int], bool]:
        return self._index.subjects_sorted_page(filter_subject, offset, limit)

    def multi_last_seqs(self, filters: Sequence[str], max_seq: int) -> list[int]:
        return self._index.multi_last_seqs(tuple(filters), max_seq)

    def num_pending(
        self, start_seq: int, filter_subject: str = ">", last_per_subject: bool = False
    ) -> tuple[int, int]:
        return self._index.filtered(start_seq, filter_subject, last_per_subject).msgs, self._index.last_seq

    def filtered_state(self, start_seq: int, filter_subject: str = ">") -> SimpleState:
        return self._index.filtered(start_seq, filter_subject, False)

    # --- State and config ---------------------------------------------------------------
    def fast_state(self) -> StreamState:
        index = self._index
        lost = None if self._lost is None else LostData(list(self._lost.msgs), self._lost.bytes)
        return StreamState(
            msgs=index.msgs,
            bytes=index.bytes,
            first_seq=index.first_seq,
            first_ts=index.first_ts,
            last_seq=index.last_seq,
            last_ts=index.last_ts,
            num_subjects=len(index.subjects),
            num_deleted=index.num_deleted(),
            lost=lost,
        )

    def totals(self) -> tuple[int, int]:
        return self._index.msgs, self._index.bytes

    def last_seq(self) -> int:
        return self._index.last_seq

    def state(self, deleted_details: bool = False) -> StreamState:
        st = self.fast_state()
        if deleted_details:
            st.deleted = self._index.deleted() if st.num_deleted else []
        return st

    @property
    def config(self) -> StoreConfig:
        return _replace(self._cfg)

    def update_config(self, cfg: StoreConfig) -> None:
        if self._closed:
            raise ErrStoreClosed()
        old = self._cfg
        self._cfg = _replace(cfg)
        self._limits_active = _has_limits(cfg)
        self._discard_new = cfg.discard == DISCARD_NEW
        self._backend.config_changed(self._cfg)
        maxp = cfg.max_msgs_per_subject
        if maxp > 0 and (old.max_msgs_per_subject <= 0 or maxp < old.max_msgs_per_subject):
            enforce_subject_limits(self)
        # Lowered max_msgs / max_bytes apply to what is stored only with discard old (nats-server
        # 2.11+ enforceMsgLimit / enforceBytesLimit; 2.9 trimmed whatever the policy).
        if cfg.discard == DISCARD_OLD:
            self._trim_to_limits()
        if cfg.max_age > 0:
            self.expire_msgs()
        self._commit()

    def _check_open(self) -> None:
        if self._closed:
            raise ErrStoreClosed()

    # Used by tests and the file store's recovery checks.
    def _matches(self, filter_subject: str, subject: str) -> bool:
        return compile_filter(filter_subject)(subject)


def _read_next(
    store: IndexedStore, filters: tuple[str, ...], start_seq: int, max_msgs: int, max_bytes: int
) -> list[MsgTuple]:
    """`IndexedStore.load_next_msgs(_multi)`: the slots found in one walk of the index
    (``SeqIndex.next_slots``), read in one backend call (``read_run``). A read from the last message
    stored on, under one filter it matches, while that message is still the last and live (in the
    index's tail page), is answered with it as it was stored (``IndexedStore._last``, `LAST_STORED`).
    Why: a consumer at the end of its stream reads each new message in a pass of its own (a source's
    origin consumer when a publish is spread over 1,000 origins), and the walk and the record read
    back were ~60 Python steps of the ~650 a sourced message took; nats-server's reads of the last
    block come from its cache the same way."""
    if store._closed:
        raise ErrStoreClosed()
    last = store._last
    if last is not None and last[1] == start_seq and LAST_STORED and max_msgs > 0 and len(filters) == 1:
        index, f = store._index, filters[0]
        p = index.tail
        if (
            (f == last[0] or is_match_all(f))
            and start_seq == index.last_seq
            and p is not None
            and p.first <= start_seq < p.first + p.n
            and p.sids[start_seq - p.first]
        ):
            return [last]
    slots = store._index.next_slots(filters, start_seq, max_msgs, max_bytes)
    return _checked(store, store._backend.read_run(slots))


def _last_of_run(
    subjects: list[str], hdrs: list[bytes], payloads: list[bytes], seq: int, ts: int, one: bool
) -> MsgTuple | None:
    """The last message of a `IndexedStore.store_run` at ``seq``, as a read gives it back (None: not
    bytes, which a read would give)."""
    hdr, data = b"" if one else hdrs[-1], payloads[-1]
    return (subjects[-1], seq, ts, hdr, data) if type(data) is bytes and type(hdr) is bytes else None


def _has_limits(cfg: StoreConfig) -> bool:
    """Whether a limit may remove messages after a store (`IndexedStore._enforce_limits`)."""
    return cfg.max_msgs_per_subject > 0 or (cfg.discard == DISCARD_OLD and (cfg.max_msgs > 0 or cfg.max_bytes > 0))


def _refuses_new(cfg: StoreConfig) -> bool:
    """Whether discard-new limits may refuse a message (`IndexedStore._check_discard_new`):
    ``max_msgs``, ``max_bytes``, or a per-subject limit with ``discard_new_per_subject``. A KV
    bucket's stream (discard new, ``max_msgs_per_subject`` alone) refuses none: its per-subject
    limit trims the oldest, as under discard old (`IndexedStore._trim_run`)."""
    return cfg.discard == DISCARD_NEW and (
        cfg.max_msgs > 0 or cfg.max_bytes > 0 or (cfg.discard_new_per_subject and cfg.max_msgs_per_subject > 0)
    )


def _intact(
    store: IndexedStore, find: Callable[[int], int], start: int, step: int
) -> tuple[StoredMsg, int] | None:
    """The first message ``find`` gives from ``start`` on whose record is intact (a damaged
    one is dropped, and ``find`` asked again past it, ``step``: +1 forward, -1 back)."""
    while True:
        seq = find(start)
        if not seq:
            return None
        msg = store._msg_at(seq)
        if msg is not None:
            return msg, seq
        start = seq + step


def _checked(store: IndexedStore, out: list[MsgTuple]) -> list[MsgTuple]:
    """``out``, a run just read, after dropping what the read found damaged (if anything)."""
    if store._backend.damaged:
        _drop_damaged(store)
    return out


def _msg_in(store: IndexedStore, seq: int, slot: tuple[int, int, int]) -> StoredMsg | None:
    """The message at ``seq`` read by its slot (`load_msg`, `IndexedStore._msg_at`; a sid of -1:
    an evicted page's locator alone was read, the record gives the subject and timestamp; -2,
    ``SPANNED``: the record is found in the span of its block ``loc`` names); None
    when its record turned out damaged (dropped and listed lost)."""
    sid, ts, loc = slot
    try:
        if sid < 0:
            try:
                subject, ts, hdr, data = store._backend.read_msg(seq, loc, sid == SPANNED)
            except ErrCorruptRecord:
                # The locator came from an index file whose checksum was not verified: the slot
                # again by its subject id verifies the file (a damaged one is not used, the page
                # is loaded from its block), and a record still failing is the record's fault.
                store._backend.damaged.pop()
                again = store._index.slot(seq)
                return None if again is None else _msg_in(store, seq, again)
            return stored_msg((subject, seq, ts, hdr, data))
        hdr, data = store._read_payload(seq, loc)
    except ErrCorruptRecord:
        _drop_damaged(store)
        return None
    return stored_msg((store._index.subjects.names[sid], seq, ts, hdr, data))  # type: ignore[arg-type]


def _drop_damaged(store: IndexedStore) -> None:
    """Remove the messages a read found damaged (``PayloadBackend.damaged``: a record that
    fails its checksum in a block the stream state vouched for, never read at start) and list
    them in ``lost``: from then on the state counts what is served."""
    backend = store._backend
    damaged, backend.damaged = backend.damaged, []
    lost = store._lost if store._lost is not None else LostData()
    msgs = set(lost.msgs)
    found: list[int] = []
    nbytes = 0
    for seq, plen in damaged:
        if store._index.live(seq) and store._remove_at(seq, False):
            found.append(seq)
            nbytes += plen
    store._lost = LostData(sorted(msgs.union(found)), lost.bytes + nbytes)
    store._commit()
    if found and store.on_damage is not None:
        store.on_damage(sorted(found), nbytes)


def enforce_subject_limits(store: IndexedStore) -> None:
    """Every subject of ``store`` down to ``max_msgs_per_subject`` (a lowered limit; an open,
    which re-applies the trims whose lazy tombstones a crash lost: nats-server
    ``enforceMsgPerSubjectLimit``)."""
    maxp = store._cfg.max_msgs_per_subject
    if maxp <= 0:
        return
    table = store._index.subjects
    if max(table.msgs, default=0) <= maxp:  # (a C pass: a KV bucket's restart, 100,000 subjects)
        return
    for sid in [sid for sid in table.ids.values() if table.msgs[sid] > maxp]:
        while table.msgs[sid] > maxp:
            store._remove_at(table.first[sid], False)
