"""The ``Nats-Msg-Id`` de-duplication window of a stream (nats-server ``ddmap``/``ddarr``).

Ids are remembered with the sequence they were stored at and the time they arrived; an id is a
duplicate while it is younger than the stream's ``duplicate_window``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import is_not
from typing import TYPE_CHECKING

from pyjetstream.protocol.headers import get_header
from pyjetstream.server.jetstream.store.base import ErrStoreEOF, ErrStoreMsgNotFound, MessageStore

if TYPE_CHECKING:
    import asyncio

HDR_MSG_ID = b"Nats-Msg-Id"
MIN_FIRE_NS = 50_000_000  # the window's timer fires at most this often


def msg_id_of(raw: bytes) -> str:
    """A ``Nats-Msg-Id`` value as the window keys it: Go compares the bytes, so every byte
    sequence maps to its own string (invalid UTF-8 kept by ``surrogateescape``)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape")


class DedupeWindow:
    """Ids by the sequence they were stored at (nats-server's ``ddmap``), and the order they came
    in with their time (``ddarr`` from ``ddindex``), which expiry walks from the front: a plain
    dict and a list, where an ordered dict would cost a linked node per id and a rebuild of its
    node table whenever the dict grows.

    The dict holds a bare sequence, not ``(seq, time)``: a lookup among 100,000 ids touches the
    dict's slot, the key and the sequence — the tuple and its time were two more cache misses
    per lookup. An id is in the window while the dict has it: a lookup that finds the oldest
    arrival outside the window expires first (`expire`, amortized O(1): each arrival is passed
    once), so it answers as a time check per id would."""

    __slots__ = ("_head", "_ids", "_order", "window_ns")

    def __init__(self, window_ns: int) -> None:
        self.window_ns = window_ns
        self._ids: dict[str, int] = {}
        # (id, seq, time) in arrival order from _head on; an entry whose id was recorded again
        # since is stale (its sequence is not the id's): expiry and forget_after pass over it.
        self._order: list[tuple[str, int, int]] = []
        self._head = 0

    def __len__(self) -> int:
        return len(self._ids)

    def lookup(self, msg_id: str, now: int | None = None) -> int | None:
        """The sequence ``msg_id`` was stored at, if it is still inside the window."""
        seq = self._ids.get(msg_id)
        if seq is None:
            return None
        now = now or time.time_ns()
        if now - self._order[self._head][2] >= self.window_ns:  # some ids left the window
            self.expire(now)
            return self._ids.get(msg_id)
        return seq

    def record(self, msg_id: str, seq: int, ts: int) -> None:
        self._ids[msg_id] = seq
        self._order.append((msg_id, seq, ts))

    def duplicates(self, msg_ids: list[str]) -> list[tuple[int, int]]:
        """Where the duplicates are among messages with ``msg_ids`` (an empty id: none) about to be
        stored in turn, and what `lookup` says of each: ``(i, seq)`` for an id inside the
        window, ``(i, 0)`` for a repeat of an id before it in the list that is not (a duplicate
        once that one is stored). One set and one disjointness test for the lot when there are
        none (the common case), else one pass."""
        ids = self._ids
        given = set(msg_ids)
        given.discard("")
        repeats = len(given) != len(msg_ids) - msg_ids.count("")
        if not repeats and ids.keys().isdisjoint(given):
            return []
        if "" not in ids:  # (always: no message without an id is recorded)
            return self._found(msg_ids, repeats)
        found: list[tuple[int, int]] = []
        seen: dict[str, int] = {}
        now = time.time_ns()
        for i, msg_id in enumerate(msg_ids):
            if not msg_id:
                continue
            before = seen.get(msg_id)
            if before is not None:
                found.append((i, before))
                continue
            seq = self.lookup(msg_id, now) if msg_id in ids else None
            if seq is not None:
                found.append((i, seq))
            seen[msg_id] = 0 if seq is None else seq
        return found

    def _found(self, msg_ids: list[str], repeats: bool) -> list[tuple[int, int]]:
        """`duplicates` in passes at C speed: the ids inside the window (`lookup`'s test,
        ``ts > now - window``), then, when an id comes more than once, its later comings that
        the window does not answer (``(i, 0)``)."""
        self.expire()  # (what is left is inside the window)
        seqs = list(map(self._ids.get, msg_ids))
        found: list[tuple[int, int]]
        if None not in seqs:  # (all of them: a publisher's retries)
            found = list(enumerate(seqs))  # type: ignore[arg-type]  # (no None in it)
        else:
            inside = list(map(is_not, seqs, repeat(None)))
            found = list(zip(compress(range(len(seqs)), inside), compress(seqs, inside), strict=True))  # type: ignore[arg-type]
        if not repeats:
            return found
        n = len(msg_ids)
        firsts = dict(zip(reversed(msg_ids), range(n - 1, -1, -1), strict=True))  # each id's first place
        answered = {msg_ids[i] for i, _ in found}
        later = [(i, 0) for i, m in enumerate(msg_ids) if m and firsts[m] != i and m not in answered]
        return sorted(found + later) if later else found

    def record_run(self, msg_ids: list[str], first: int, tss: Sequence[int]) -> bool:
        """`record` for messages ``first`` onwards stored at ``tss``, ``msg_ids[i]`` each
        (an empty id: none, nothing recorded); whether any was recorded."""
        n = len(tss)
        if len(msg_ids) > n:
            msg_ids = msg_ids[:n]
        if "" in msg_ids:
            kept = [(i, msg_id) for i, msg_id in enumerate(msg_ids) if msg_id]
            if not kept:
                return False
            msg_ids = [msg_id for _, msg_id in kept]
            tss = [tss[i] for i, _ in kept]
            seqs: Sequence[int] = [first + i for i, _ in kept]
        else:
            seqs = range(first, first + n)
        self._ids.update(zip(msg_ids, seqs, strict=True))
        self._order.extend(zip(msg_ids, seqs, tss, strict=True))
        return bool(msg_ids)

    def expire(self, now: int | None = None) -> int | None:
        """Forget ids older than the window; return when the next one expires (unix ns)."""
        now = now or time.time_ns()
        ids = self._ids
        order = self._order
        head = self._head
        window = self.window_ns
        when = None
        while head < len(order):
            msg_id, seq, ts = order[head]
            if now - ts < window:
                when = ts + window
                break
            if ids.get(msg_id) == seq:
                del ids[msg_id]
            head += 1
        if head > 1024 and head * 2 > len(order):
            del order[:head]
            head = 0
        self._head = head
        return when

    def forget_after(self, seq: int) -> None:
        """Forget the ids of messages above ``seq`` (a failed write took them back)."""
        ids = self._ids
        order = self._order
        while len(order) > self._head:
            msg_id, at, _ = order[-1]
            if ids.get(msg_id) == at:
                if at <= seq:
                    return
                del ids[msg_id]
            order.pop()

    def clear(self) -> None:
        self._ids.clear()
        self._order.clear()
        self._head = 0


class StreamDedupe(DedupeWindow):
    """A stream's message ids: the duplicate window, and the id of the last stored message
    (``Nats-Expected-Last-Msg-Id``; nats-server's ``mset.lmsgId``). A recovered stream rebuilds
    the window from its messages on first need (nats-server's ``ddloaded``: scanning every
    message inside the window would slow every restart). Ids are forgotten on a timer."""

    __slots__ = ("__dict__", "_call_later", "_timer", "last", "loaded", "store")

    def __init__(
        self,
        store: MessageStore,
        window_ns: int,
        call_later: Callable[[float, Callable[[], None]], asyncio.TimerHandle],
    ) -> None:
        super().__init__(window_ns or 1)
        self.store = store
        self.last = ""
        self.loaded = False  # (rebuilt on first need: at once for an empty store)
        self._call_later = call_later
        self._timer: asyncio.TimerHandle | None = None
        # Until the window is loaded, a lookup loads it first (then the class's lookup is used:
        # no check per message).
        self.lookup = self._load_then_lookup  # type: ignore[method-assign]

    def configure(self, window_ns: int) -> None:
        self.window_ns = window_ns or 1

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _load_then_lookup(self, msg_id: str, now: int | None = None) -> int | None:
        self.rebuild()
        return self.lookup(msg_id, now)

    def last_id(self) -> str:
        """The id of the last stored message (after a restart: read back from the store)."""
        if not self.loaded:
            self.rebuild()
        return self.last

    def duplicates(self, msg_ids: list[str]) -> list[tuple[int, int]]:
        """`DedupeWindow.duplicates`, the window loaded first if need be."""
        if not self.loaded:
            self.rebuild()
        return super().duplicates(msg_ids)

    def record(self, msg_id: str, seq: int, ts: int) -> None:
        """A message was stored (or its sequence skipped) with ``msg_id`` (``""``: none)."""
        self.last = msg_id
        if msg_id:
            self._ids[msg_id] = seq
            self._order.append((msg_id, seq, ts))
            if self._timer is None:
                self._arm()

    def record_run(self, msg_ids: list[str], first: int, tss: Sequence[int]) -> bool:
        """`record` for messages ``first`` onwards stored at ``tss``."""
        self.last = msg_ids[len(tss) - 1]
        if super().record_run(msg_ids, first, tss):
            self._arm()
            return True
        return False

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = self._call_later(self.window_ns / 1e9, self._expire)

    def _expire(self) -> None:
        """Forget the ids that left the window; come back for the next one, but not sooner than
        50 ms (nats-server ``purgeMsgIds``): a timer per id would be a timer per publish."""
        self._timer = None
        when = self.expire()
        if when is not None:
            delay = max(MIN_FIRE_NS, when - time.time_ns()) / 1e9
            self._timer = self._call_later(delay, self._expire)

    def rebuild(self) -> None:
        """After a restart: the window from the stored messages still inside it, and the last
        message's id."""
        self.loaded = True
        del self.lookup  # (the class's from now on)
        store = self.store
        state = store.fast_state()
        if not state.msgs:
            return
        seq = store.get_seq_from_time(time.time_ns() - self.window_ns)
        while seq <= state.last_seq:
            try:
                msg, seq = store.load_next_msg(">", seq)
            except ErrStoreEOF:
                break
            raw = get_header(msg.hdr, HDR_MSG_ID) if msg.hdr else None
            if raw:
                DedupeWindow.record(self, msg_id_of(raw), seq, msg.ts)
            seq += 1
        try:
            last = store.load_msg(state.last_seq)
            raw = get_header(last.hdr, HDR_MSG_ID) if last.hdr else None
            self.last = msg_id_of(raw) if raw else ""
        except (ErrStoreMsgNotFound, ErrStoreEOF):
            pass
        if len(self):
            self._arm()
