"""The store logic shared by the memory and file stores: index, limits, queries, removal.

Both stores keep the same in-memory index; they differ only in where payloads live (a list in
RAM, or records in block files). Keeping one implementation of the semantics (nats-server's
``memstore.go`` / ``filestore.go``) means the two cannot drift apart.

Index layout: one *slot* per sequence in ``[base, last_seq]``, held in parallel arrays —

* ``_sids``  array("I"): interned subject id, 0 when the sequence holds no message
  (deleted, skipped, purged, lost);
* ``_tss``   array("q"): timestamp (kept after deletion so the array stays sorted for bisect);
* ``_sizes`` array("I"): accounted size (nats-server's formula of each store), 0 when deleted;
* ``_nxt``   array("Q"): the next sequence stored on the same subject (a singly linked list
  per subject threaded through the slots), so "the subject's next message" after removing its
  first is O(1) instead of a scan — what per-subject limits (KV history) do on every publish.

Per-subject ``msgs/first/last`` live in a :class:`SubjectTable`. Leading dead slots are
trimmed in amortised O(1) as the first sequence advances.

Subclasses implement the ``_p_*`` hooks (the physical side) and the lifecycle methods.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import heapq
import time
from array import array
from collections import Counter
from collections.abc import Iterator

from pyjetstream.protocol.subjects import compile_filter, has_wildcard, is_match_all

from ._index import (
    SubjectTable,
    find_value,
    next_nonzero,
    prev_nonzero,
    rfind_value,
    zero_fill,
    zeros,
)
from .base import (
    DISCARD_NEW,
    DISCARD_OLD,
    ErrInvalidSequence,
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    ErrSequenceMismatch,
    ErrStoreClosed,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    LostData,
    MessageStore,
    SimpleState,
    StoreConfig,
    StoredMsg,
    StreamState,
)

# Trim leading dead slots once at least this many accumulate and they are half the arrays.
_TRIM_MIN = 4096
# A wildcard filter matching at most this many subjects is resolved per subject (C scans);
# more subjects are handled by one Python pass over the slots.
_PER_SUBJECT_MAX = 16


class IndexedStore(MessageStore):
    """Shared implementation of :class:`MessageStore` over the slot index."""

    # Accounted size = _SIZE_BASE + subject + payload (+ _SIZE_HDR + headers when present).
    _SIZE_BASE = 0
    _SIZE_HDR = 0

    def __init__(self, cfg: StoreConfig) -> None:
        self._cfg = dataclasses.replace(cfg)
        self._limits_active = self._has_limits(cfg)
        self._closed = False
        self._batch_depth = 0
        self._msgs = 0
        self._bytes = 0
        self._first_seq = 0
        self._first_ts = 0
        self._last_seq = 0
        self._last_ts = 0
        self._lost: LostData | None = None
        self._subjects = SubjectTable()
        self._base = 1
        self._sids: array[int] = array("I")
        self._tss: array[int] = array("q")
        self._sizes: array[int] = array("I")
        self._nxt: array[int] = array("Q")

    # ------------------------------------------------------------------------------------
    # Physical hooks (subclasses)
    # ------------------------------------------------------------------------------------
    def _record_size(self, subject_len: int, hdr_len: int, data_len: int) -> int:
        if hdr_len:
            return self._SIZE_BASE + subject_len + self._SIZE_HDR + hdr_len + data_len
        return self._SIZE_BASE + subject_len + data_len

    @staticmethod
    def _has_limits(cfg: StoreConfig) -> bool:
        return cfg.max_msgs_per_subject > 0 or (
            cfg.discard == DISCARD_OLD and (cfg.max_msgs > 0 or cfg.max_bytes > 0)
        )

    def _p_append(self, seq: int, ts: int, subject: bytes, hdr: bytes, data: bytes) -> None:
        """Persist a message and append its per-slot physical data."""
        raise NotImplementedError

    def _p_read(self, idx: int, seq: int) -> tuple[bytes, bytes]:
        raise NotImplementedError

    def _p_remove(self, seq: int, idx: int, erase: bool) -> None:
        """A live message is being removed (slot still populated)."""
        raise NotImplementedError

    def _p_remove_range(self, lo: int, hi: int) -> None:
        """Live messages in slots [lo, hi) are being removed (slots still populated)."""
        raise NotImplementedError

    def _p_first_changed(self) -> None:
        """The first sequence advanced past removed messages (floor moved)."""

    def _p_skip(self, seq: int, num: int, ts: int) -> None:
        """Sequences [seq, seq+num) were consumed without a message."""
        raise NotImplementedError

    def _p_purge(self, new_first: int) -> None:
        """Everything is gone; the next message will be ``new_first`` or later."""
        raise NotImplementedError

    def _p_truncate(self, seq: int) -> None:
        """Messages above ``seq`` were removed (slots past seq still populated, dead)."""
        raise NotImplementedError

    def _p_reset(self) -> None:
        """Back to an empty, never-written store (truncate(0))."""
        raise NotImplementedError

    def _p_slots_extend(self, n: int) -> None:
        raise NotImplementedError

    def _p_slots_trim(self, k: int) -> None:
        raise NotImplementedError

    def _p_slots_cut(self, n: int) -> None:
        """Keep only the first n slots."""
        raise NotImplementedError

    def _p_commit(self) -> None:
        """End of a mutation outside any batch: make it durable per the sync policy."""

    def _p_config_changed(self, old: StoreConfig) -> None:
        """Hook for storage-specific reactions to a config update."""

    # ------------------------------------------------------------------------------------
    # Writing
    # ------------------------------------------------------------------------------------
    def store_msg(self, subject: str, hdr: bytes, data: bytes, ts: int | None = None) -> tuple[int, int]:
        if self._closed:
            raise ErrStoreClosed()
        cfg = self._cfg
        hl = len(hdr)
        dl = len(data)
        if cfg.max_msg_size > 0 and hl + dl > cfg.max_msg_size:
            raise ErrMsgTooLarge()
        sb = subject.encode()
        table = self._subjects
        sid = table.ids.get(subject, 0)
        size = self._SIZE_BASE + len(sb) + dl + (self._SIZE_HDR + hl if hl else 0)
        if cfg.discard == DISCARD_NEW:
            self._check_discard_new(sid, hl + dl, size)
        seq = self._last_seq + 1
        if ts is None:
            ts = time.time_ns()
        self._p_append(seq, ts, sb, hdr, data)
        if not sid:
            sid = table.intern(subject)
        # Index append (slots cover [base, last_seq], so this slot is seq's).
        self._sids.append(sid)
        self._tss.append(ts)
        self._sizes.append(size)
        self._nxt.append(0)
        smsgs = table.msgs[sid]
        if smsgs:
            self._nxt[table.last[sid] - self._base] = seq
            table.msgs[sid] = smsgs + 1
        else:
            table.msgs[sid] = 1
            table.first[sid] = seq
        table.last[sid] = seq
        if not self._msgs:
            self._first_seq = seq
            self._first_ts = ts
        self._msgs += 1
        self._bytes += size
        self._last_seq = seq
        self._last_ts = ts
        if self._limits_active:
            self._enforce_limits(sid)
        if not self._batch_depth:
            self._p_commit()
        return seq, ts

    def _check_discard_new(self, sid: int, payload: int, size: int) -> None:
        # nats-server storeRawMsg: a subject at its per-subject limit will drop its oldest
        # message, so the stream-wide limits do not reject it ("asl"). As there, the bytes
        # check adds the new headers + payload (not the accounted record size) and uses >=.
        cfg = self._cfg
        table = self._subjects
        maxp = cfg.max_msgs_per_subject
        asl = bool(sid) and maxp > 0 and table.msgs[sid] >= maxp
        if asl and cfg.discard_new_per_subject:
            raise ErrMaxMsgsPerSubject()
        if cfg.max_msgs > 0 and self._msgs >= cfg.max_msgs and not asl:
            raise ErrMaxMsgs()
        if cfg.max_bytes > 0 and self._bytes + payload >= cfg.max_bytes:
            if not asl:
                raise ErrMaxBytes()
            oldest = self._sizes[table.first[sid] - self._base]
            if oldest < size:
                raise ErrMaxBytes()

    def _enforce_limits(self, sid: int) -> None:
        cfg = self._cfg
        maxp = cfg.max_msgs_per_subject
        if maxp > 0 and sid:
            table = self._subjects
            while table.msgs[sid] > maxp:
                self._remove_at(table.first[sid], False)
        if cfg.discard == DISCARD_OLD:
            self._trim_to_limits()

    def _trim_to_limits(self) -> None:
        """Drop the oldest messages until max_msgs and max_bytes hold."""
        cfg = self._cfg
        if cfg.max_msgs > 0:
            while self._msgs > cfg.max_msgs:
                self._remove_at(self._first_seq, False)
        if cfg.max_bytes > 0:
            while self._bytes > cfg.max_bytes and self._msgs:
                self._remove_at(self._first_seq, False)

    def skip_msg(self) -> int:
        if self._closed:
            raise ErrStoreClosed()
        seq = self._last_seq + 1
        self._skip(seq, 1)
        return seq

    def skip_msgs(self, seq: int, num: int) -> None:
        if self._closed:
            raise ErrStoreClosed()
        if seq != self._last_seq + 1:
            if seq > 0:
                raise ErrSequenceMismatch()
            seq = self._last_seq + 1
        if num > 0:
            self._skip(seq, num)

    def _skip(self, seq: int, num: int) -> None:
        now = time.time_ns()
        self._p_skip(seq, num, now)
        last = seq + num - 1
        if self._msgs:
            self._extend_dead(num, now)
        self._last_seq = last
        self._last_ts = now
        if not self._msgs:
            self._first_seq = last + 1
            self._first_ts = 0
            self._clear_slots()
        if not self._batch_depth:
            self._p_commit()

    @contextlib.contextmanager
    def batch(self) -> Iterator[None]:
        self._batch_depth += 1
        try:
            yield
        finally:
            self._batch_depth -= 1
            if not self._batch_depth and not self._closed:
                self._p_commit()

    def _commit(self) -> None:
        if not self._batch_depth:
            self._p_commit()

    # ------------------------------------------------------------------------------------
    # Slot maintenance
    # ------------------------------------------------------------------------------------
    def _extend_dead(self, n: int, ts: int) -> None:
        self._sids.extend(zeros("I", n))
        self._tss.extend(array("q", [ts]) * n)
        self._sizes.extend(zeros("I", n))
        self._nxt.extend(zeros("Q", n))
        self._p_slots_extend(n)

    def _clear_slots(self) -> None:
        """No message left: drop every slot; the next stored seq is last_seq + 1."""
        n = len(self._sids)
        if n:
            del self._sids[:], self._tss[:], self._sizes[:], self._nxt[:]
            self._p_slots_trim(n)
        self._base = self._last_seq + 1

    def _maybe_trim(self) -> None:
        k = self._first_seq - self._base
        if k >= _TRIM_MIN and 2 * k >= len(self._sids):
            del self._sids[:k], self._tss[:k], self._sizes[:k], self._nxt[:k]
            self._base += k
            self._p_slots_trim(k)

    # ------------------------------------------------------------------------------------
    # Removal
    # ------------------------------------------------------------------------------------
    def remove_msg(self, seq: int) -> bool:
        if self._closed:
            raise ErrStoreClosed()
        removed = self._remove_at(seq, False)
        if removed:
            self._commit()
        return removed

    def erase_msg(self, seq: int) -> bool:
        if self._closed:
            raise ErrStoreClosed()
        removed = self._remove_at(seq, True)
        if removed:
            self._commit()
        return removed

    def _remove_at(self, seq: int, erase: bool) -> bool:
        i = seq - self._base
        sids = self._sids
        if i < 0 or i >= len(sids):
            return False
        sid = sids[i]
        if not sid:
            return False
        self._p_remove(seq, i, erase)
        sids[i] = 0
        self._msgs -= 1
        self._bytes -= self._sizes[i]
        self._sizes[i] = 0
        self._subject_drop_one(sid, seq)
        if seq == self._first_seq:
            self._advance_first_from(i + 1)
        return True

    def _subject_drop_one(self, sid: int, seq: int) -> None:
        table = self._subjects
        m = table.msgs[sid] - 1
        if not m:
            table.release(sid)
            return
        table.msgs[sid] = m
        if seq == table.first[sid]:
            table.first[sid] = table.last[sid] if m == 1 else self._subj_next(seq)
        elif seq == table.last[sid]:
            if m == 1:
                table.last[sid] = table.first[sid]
            else:
                base = self._base
                table.last[sid] = base + rfind_value(self._sids, sid, table.first[sid] - base, seq - base)

    def _subj_next(self, seq: int) -> int:
        """Next live sequence on the same subject as (the possibly dead) slot ``seq``."""
        base = self._base
        nxt = self._nxt
        sids = self._sids
        n = nxt[seq - base]
        while n and not sids[n - base]:
            n = nxt[n - base]
        nxt[seq - base] = n  # path compression over dead links
        return n

    def _advance_first_from(self, i: int) -> None:
        j = next_nonzero(self._sids, i, len(self._sids)) if self._msgs else -1
        if j < 0:
            self._first_seq = self._last_seq + 1
            self._first_ts = 0
            self._clear_slots()
        else:
            self._first_seq = self._base + j
            self._first_ts = self._tss[j]
            self._maybe_trim()
        self._p_first_changed()

    def _remove_prefix(self, hi: int) -> int:
        """Remove every live message in slots below ``hi``; return how many."""
        sids = self._sids
        lo = self._first_seq - self._base
        hi = min(hi, len(sids))
        if not self._msgs or hi <= lo:
            return 0
        counts = Counter(sids[lo:hi])
        counts.pop(0, None)
        purged = sum(counts.values())
        if not purged:
            return 0
        removed_bytes = sum(self._sizes[lo:hi])
        self._p_remove_range(lo, hi)
        zero_fill(sids, lo, hi)
        zero_fill(self._sizes, lo, hi)
        self._msgs -= purged
        self._bytes -= removed_bytes
        table = self._subjects
        for sid, c in counts.items():
            m = table.msgs[sid] - c
            if m <= 0:
                table.release(sid)
                continue
            table.msgs[sid] = m
            table.first[sid] = table.last[sid] if m == 1 else self._subj_next(table.first[sid])
        self._advance_first_from(hi)
        return purged

    def purge(self) -> int:
        if self._closed:
            raise ErrStoreClosed()
        return self._purge(0)

    def _purge(self, fseq: int) -> int:
        purged = self._msgs
        new_first = max(self._last_seq + 1, fseq)
        self._p_purge(new_first)
        self._subjects.clear()
        self._msgs = 0
        self._bytes = 0
        self._first_seq = new_first
        self._first_ts = 0
        self._last_seq = max(self._last_seq, new_first - 1)
        self._clear_slots()
        self._commit()
        return purged

    def compact(self, seq: int) -> int:
        if self._closed:
            raise ErrStoreClosed()
        if seq == 0 or seq > self._last_seq:
            return self._purge(seq)
        if seq <= self._first_seq:
            return 0
        purged = self._remove_prefix(seq - self._base)
        self._commit()
        return purged

    def purge_ex(self, subject: str = "", seq: int = 0, keep: int = 0) -> int:
        if self._closed:
            raise ErrStoreClosed()
        if is_match_all(subject):
            if keep == 0 and seq in (0, 1):
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if keep > 0:
                if keep >= self._msgs:
                    return 0
                return self.compact(self._last_seq - keep + 1)
            return 0
        table = self._subjects
        matched = [sid for sid in table.matching(subject)]
        if not matched:
            return 0
        total = sum(table.msgs[sid] for sid in matched)
        maxp = total
        if keep > 0:
            if keep >= total:
                return 0
            maxp = total - keep
        limit = seq - 1 if seq > 0 else self._last_seq
        purged = 0
        # Oldest first across the matching subjects (matters when keeping the newest N).
        heap = [(table.first[sid], sid) for sid in matched]
        heapq.heapify(heap)
        while heap and purged < maxp:
            first, sid = heapq.heappop(heap)
            if first > limit:
                break
            more = table.msgs[sid] > 1
            self._remove_at(first, False)
            purged += 1
            if more:
                heapq.heappush(heap, (table.first[sid], sid))
        if purged:
            self._commit()
        return purged

    def truncate(self, seq: int) -> None:
        if self._closed:
            raise ErrStoreClosed()
        if seq == 0:
            self._p_reset()
            self._subjects.clear()
            self._msgs = self._bytes = 0
            self._first_seq = self._first_ts = self._last_seq = self._last_ts = 0
            self._clear_slots()
            self._base = 1
            self._commit()
            return
        base = self._base
        i = seq - base
        sids = self._sids
        if seq > self._last_seq or i < 0 or not sids[i]:
            raise ErrInvalidSequence()
        lo, hi = i + 1, len(sids)
        if hi > lo:
            counts = Counter(sids[lo:hi])
            counts.pop(0, None)
            self._msgs -= sum(counts.values())
            self._bytes -= sum(self._sizes[lo:hi])
            zero_fill(sids, lo, hi)
            zero_fill(self._sizes, lo, hi)
            table = self._subjects
            for sid, c in counts.items():
                m = table.msgs[sid] - c
                if m <= 0:
                    table.release(sid)
                    continue
                table.msgs[sid] = m
                first = table.first[sid]
                table.last[sid] = first if m == 1 else base + rfind_value(sids, sid, first - base, lo)
        self._p_truncate(seq)
        if hi > lo:
            del sids[lo:], self._tss[lo:], self._sizes[lo:], self._nxt[lo:]
            self._p_slots_cut(lo)
            nxt = self._nxt
            for k in range(len(nxt)):
                if nxt[k] > seq:
                    nxt[k] = 0
        self._last_seq = seq
        self._last_ts = self._tss[i]
        self._commit()

    # ------------------------------------------------------------------------------------
    # Expiry
    # ------------------------------------------------------------------------------------
    def expire_msgs(self, now: int | None = None) -> int:
        if self._closed:
            raise ErrStoreClosed()
        max_age = self._cfg.max_age
        if max_age <= 0 or not self._msgs:
            return 0
        cutoff = (time.time_ns() if now is None else now) - max_age
        total = 0
        tss = self._tss
        while self._msgs:
            lo = self._first_seq - self._base
            if tss[lo] > cutoff:
                break
            hi = max(bisect.bisect_right(tss, cutoff, lo, len(tss)), lo + 1)
            total += self._remove_prefix(hi)
        if total:
            self._commit()
        return total

    def next_expiry(self) -> int | None:
        if self._cfg.max_age <= 0 or not self._msgs:
            return None
        return self._first_ts + self._cfg.max_age

    # ------------------------------------------------------------------------------------
    # Reading
    # ------------------------------------------------------------------------------------
    def load_msg(self, seq: int) -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        i = seq - self._base
        if i < 0 or i >= len(self._sids) or not self._sids[i]:
            if seq > self._last_seq:
                raise ErrStoreEOF()
            raise ErrStoreMsgNotFound()
        return self._msg_at(i, seq)

    def _msg_at(self, i: int, seq: int) -> StoredMsg:
        hdr, data = self._p_read(i, seq)
        name = self._subjects.names[self._sids[i]]
        assert name is not None
        return StoredMsg(name, seq, self._tss[i], hdr, data)

    def load_next_msg(self, filter_subject: str, start_seq: int) -> tuple[StoredMsg, int]:
        if self._closed:
            raise ErrStoreClosed()
        if start_seq < self._first_seq:
            start_seq = self._first_seq
        if start_seq > self._last_seq or not self._msgs:
            raise ErrStoreEOF()
        j = self._next_match(filter_subject, start_seq)
        if j < 0:
            raise ErrStoreEOF()
        seq = self._base + j
        return self._msg_at(j, seq), seq

    def _next_match(self, filter_subject: str, start_seq: int) -> int:
        """Slot index of the first message >= start_seq matching the filter, or -1."""
        base = self._base
        sids = self._sids
        lo = start_seq - base
        if is_match_all(filter_subject):
            return next_nonzero(sids, lo, len(sids))
        table = self._subjects
        if not has_wildcard(filter_subject):
            sid = table.ids.get(filter_subject)
            return self._next_of_subject(sid, start_seq) if sid else -1
        matched = table.matching(filter_subject)
        if len(matched) <= _PER_SUBJECT_MAX:
            best = -1
            for sid in matched:
                j = self._next_of_subject(sid, start_seq)
                if j >= 0 and (best < 0 or j < best):
                    best = j
            return best
        hi = max((table.last[sid] for sid in matched), default=0) - base + 1
        step = 64
        while lo < hi:
            end = min(hi, lo + step)
            for k, sid in enumerate(sids[lo:end]):
                if sid and sid in matched:
                    return lo + k
            lo, step = end, min(step * 4, 65536)
        return -1

    def _next_of_subject(self, sid: int, start_seq: int) -> int:
        table = self._subjects
        last = table.last[sid]
        if last < start_seq:
            return -1
        base = self._base
        first = table.first[sid]
        if first >= start_seq:
            return first - base
        prev = start_seq - 1 - base
        if prev >= 0 and self._sids[prev] == sid:
            # A consumer walking the subject: follow the link from what it just got.
            return self._subj_next(start_seq - 1) - base
        return find_value(self._sids, sid, start_seq - base, last - base + 1)

    def load_last_msg(self, subject: str) -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        if not self._msgs:
            raise ErrStoreMsgNotFound()
        base = self._base
        if is_match_all(subject):
            j = prev_nonzero(self._sids, self._first_seq - base, len(self._sids))
            return self._msg_at(j, base + j)
        table = self._subjects
        if not has_wildcard(subject):
            sid = table.ids.get(subject)
            if not sid:
                raise ErrStoreMsgNotFound()
            seq = table.last[sid]
        else:
            seq = max((table.last[sid] for sid in table.matching(subject)), default=0)
            if not seq:
                raise ErrStoreMsgNotFound()
        return self._msg_at(seq - base, seq)

    def load_prev_msg(self, start_seq: int, filter_subject: str = ">") -> StoredMsg:
        if self._closed:
            raise ErrStoreClosed()
        if start_seq > self._last_seq:
            start_seq = self._last_seq
        if not self._msgs or start_seq < self._first_seq:
            raise ErrStoreMsgNotFound()
        base = self._base
        sids = self._sids
        lo, hi = self._first_seq - base, start_seq - base + 1
        j = -1
        if is_match_all(filter_subject):
            j = prev_nonzero(sids, lo, hi)
        elif not has_wildcard(filter_subject):
            sid = self._subjects.ids.get(filter_subject)
            if sid:
                table = self._subjects
                if table.last[sid] <= start_seq:
                    j = table.last[sid] - base
                elif table.first[sid] <= start_seq:
                    j = rfind_value(sids, sid, table.first[sid] - base, hi)
        else:
            matched = self._subjects.matching(filter_subject)
            for k in range(hi - 1, lo - 1, -1):
                if sids[k] and sids[k] in matched:
                    j = k
                    break
        if j < 0:
            raise ErrStoreMsgNotFound()
        return self._msg_at(j, base + j)

    def subject_for_seq(self, seq: int) -> str:
        i = seq - self._base
        if i < 0 or i >= len(self._sids) or not self._sids[i]:
            raise ErrStoreMsgNotFound()
        name = self._subjects.names[self._sids[i]]
        assert name is not None
        return name

    def get_seq_from_time(self, ts: int) -> int:
        if not self._msgs:
            return self._last_seq + 1
        base = self._base
        lo = self._first_seq - base
        tss = self._tss
        if ts <= tss[lo]:
            return self._first_seq
        j = bisect.bisect_left(tss, ts, lo, len(tss))
        j = next_nonzero(self._sids, j, len(self._sids))
        return self._last_seq + 1 if j < 0 else base + j

    # ------------------------------------------------------------------------------------
    # Per-subject and filtered state
    # ------------------------------------------------------------------------------------
    def subjects_state(self, filter_subject: str = ">") -> dict[str, SimpleState]:
        table = self._subjects
        names = table.names
        out: dict[str, SimpleState] = {}
        for sid in table.matching(filter_subject):
            name = names[sid]
            assert name is not None
            out[name] = SimpleState(table.msgs[sid], table.first[sid], table.last[sid])
        return out

    def subjects_totals(self, filter_subject: str = ">") -> dict[str, int]:
        table = self._subjects
        names = table.names
        return {names[sid]: table.msgs[sid] for sid in table.matching(filter_subject)}  # type: ignore[misc]

    def num_pending(
        self, start_seq: int, filter_subject: str = ">", last_per_subject: bool = False
    ) -> tuple[int, int]:
        return self._filtered(start_seq, filter_subject, last_per_subject).msgs, self._last_seq

    def filtered_state(self, start_seq: int, filter_subject: str = ">") -> SimpleState:
        return self._filtered(start_seq, filter_subject, False)

    def _filtered(self, sseq: int, filt: str, last_per_subject: bool) -> SimpleState:
        if sseq < self._first_seq:
            sseq = self._first_seq
        if sseq > self._last_seq or not self._msgs:
            return SimpleState()
        table = self._subjects
        base = self._base
        sids = self._sids
        match_all = is_match_all(filt)
        if match_all and not last_per_subject:
            # "last" is the last stored message (last_seq itself may be a skip or a delete).
            last = base + prev_nonzero(sids, 0, len(sids))
            if sseq <= self._first_seq:
                return SimpleState(self._msgs, self._first_seq, last)
            lo = sseq - base
            j = next_nonzero(sids, lo, len(sids))
            if j < 0:
                return SimpleState()
            return SimpleState(len(sids) - lo - sids[lo:].count(0), base + j, last)
        matched = table.ids.values() if match_all else table.matching(filt)
        total = first = last = 0
        partial: list[int] = []
        for sid in matched:
            s_last = table.last[sid]
            if s_last < sseq:
                continue
            if last_per_subject:
                total += 1
                if not first or s_last < first:
                    first = s_last
            else:
                s_first = table.first[sid]
                if s_first >= sseq:
                    total += table.msgs[sid]
                    if not first or s_first < first:
                        first = s_first
                else:
                    partial.append(sid)
            if s_last > last:
                last = s_last
        if partial:
            total += self._count_from(partial, sseq)
            j = -1
            for sid in partial[:_PER_SUBJECT_MAX]:
                k = self._next_of_subject(sid, sseq)
                if k >= 0 and (j < 0 or k < j):
                    j = k
            if len(partial) > _PER_SUBJECT_MAX:
                pset = set(partial)
                stop = j if j >= 0 else len(sids)
                for k in range(sseq - base, stop):
                    if sids[k] in pset:
                        j = k
                        break
            if j >= 0 and (not first or base + j < first):
                first = base + j
        return SimpleState(total, first, last)

    def _count_from(self, sids_wanted: list[int], sseq: int) -> int:
        """Messages with seq >= sseq on each of the (partially covered) subjects."""
        table = self._subjects
        base = self._base
        sids = self._sids
        lo = sseq - base
        if len(sids_wanted) == 1:
            sid = sids_wanted[0]
            f, last = table.first[sid] - base, table.last[sid] - base + 1
            # Count whichever side of sseq is shorter.
            if last - lo <= lo - f:
                return sids[lo:last].count(sid)
            return table.msgs[sid] - sids[f:lo].count(sid)
        first = min(table.first[sid] for sid in sids_wanted) - base
        last = max(table.last[sid] for sid in sids_wanted) - base + 1
        if last - lo <= lo - first:
            counts = Counter(sids[lo:last])
            return sum(counts[sid] for sid in sids_wanted)
        counts = Counter(sids[first:lo])
        return sum(table.msgs[sid] - counts[sid] for sid in sids_wanted)

    # ------------------------------------------------------------------------------------
    # State and config
    # ------------------------------------------------------------------------------------
    def fast_state(self) -> StreamState:
        num_deleted = 0
        if self._msgs and self._last_seq > self._first_seq:
            num_deleted = self._last_seq - self._first_seq + 1 - self._msgs
        lost = None
        if self._lost is not None:
            lost = LostData(list(self._lost.msgs), self._lost.bytes)
        return StreamState(
            msgs=self._msgs,
            bytes=self._bytes,
            first_seq=self._first_seq,
            first_ts=self._first_ts,
            last_seq=self._last_seq,
            last_ts=self._last_ts,
            num_subjects=len(self._subjects),
            num_deleted=num_deleted,
            lost=lost,
        )

    def state(self, deleted_details: bool = False) -> StreamState:
        st = self.fast_state()
        if deleted_details:
            deleted: list[int] = []
            if st.num_deleted:
                base = self._base
                lo = self._first_seq - base
                seg = self._sids[lo:]
                deleted = [base + lo + k for k, sid in enumerate(seg) if not sid]
            st.deleted = deleted
        return st

    @property
    def config(self) -> StoreConfig:
        return dataclasses.replace(self._cfg)

    def update_config(self, cfg: StoreConfig) -> None:
        if self._closed:
            raise ErrStoreClosed()
        old = self._cfg
        self._cfg = dataclasses.replace(cfg)
        self._limits_active = self._has_limits(cfg)
        self._p_config_changed(old)
        maxp = cfg.max_msgs_per_subject
        if maxp > 0 and (old.max_msgs_per_subject <= 0 or maxp < old.max_msgs_per_subject):
            table = self._subjects
            for sid in [sid for sid in table.ids.values() if table.msgs[sid] > maxp]:
                while table.msgs[sid] > maxp:
                    self._remove_at(table.first[sid], False)
        # Lowered limits apply to what is stored whatever the discard policy (nats-server does the same).
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
