"""The ``Nats-Msg-Id`` de-duplication window of a stream (nats-server ``ddmap``/``ddarr``).

Ids are remembered with the sequence they were stored at and the time they arrived; an id is a
duplicate while it is younger than the stream's ``duplicate_window``.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence


class DedupeWindow:
    def __init__(self, window_ns: int) -> None:
        self.window_ns = window_ns
        # Insertion order is arrival order, so expiry only ever looks at the front.
        self._ids: OrderedDict[str, tuple[int, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def lookup(self, msg_id: str, now: int | None = None) -> int | None:
        """The sequence ``msg_id`` was stored at, if it is still inside the window."""
        entry = self._ids.get(msg_id)
        if entry is None:
            return None
        seq, ts = entry
        if (now or time.time_ns()) - ts >= self.window_ns:
            return None
        return seq

    def record(self, msg_id: str, seq: int, ts: int) -> None:
        self._ids[msg_id] = (seq, ts)
        self._ids.move_to_end(msg_id)

    def first_duplicate(self, msg_ids: list[str]) -> tuple[int, int]:
        """Where the first duplicate is among messages with ``msg_ids`` (an empty id: none) about
        to be stored in turn, and what :meth:`lookup` says of it: ``(i, seq)`` for an id inside
        the window, ``(i, 0)`` for a repeat of an id before it in the list (a duplicate once that
        one is stored), ``(len(msg_ids), 0)`` for none. One set and one disjointness test for the
        lot when there is none (the common case)."""
        ids = self._ids
        given = set(msg_ids)
        given.discard("")
        if len(given) == len(msg_ids) - msg_ids.count("") and ids.keys().isdisjoint(given):
            return len(msg_ids), 0
        seen: set[str] = set()
        for i, msg_id in enumerate(msg_ids):
            if not msg_id:
                continue
            if msg_id in ids:
                seq = self.lookup(msg_id)
                if seq is not None:
                    return i, seq
            if msg_id in seen:
                return i, 0
            seen.add(msg_id)
        return len(msg_ids), 0

    def record_run(self, msg_ids: list[str], first: int, tss: Sequence[int]) -> bool:
        """:meth:`record` for messages ``first`` onwards stored at ``tss``, ``msg_ids[i]`` each
        (an empty id: none, nothing recorded); whether any was recorded."""
        ids = self._ids
        if "" not in msg_ids and ids.keys().isdisjoint(msg_ids):  # all new: appended in order
            before = len(ids)
            ids.update(zip(msg_ids, zip(range(first, first + len(tss)), tss, strict=True), strict=False))
            if len(ids) - before == len(tss):
                return bool(tss)
            # (an id given twice: the loop below puts each where its last record leaves it)
        move = ids.move_to_end
        any_id = False
        for msg_id, seq, ts in zip(msg_ids, range(first, first + len(tss)), tss, strict=False):
            if msg_id:
                ids[msg_id] = (seq, ts)
                move(msg_id)
                any_id = True
        return any_id

    def expire(self, now: int | None = None) -> int | None:
        """Forget ids older than the window; return when the next one expires (unix ns)."""
        now = now or time.time_ns()
        ids = self._ids
        while ids:
            first = next(iter(ids.values()))
            if now - first[1] < self.window_ns:
                return first[1] + self.window_ns
            ids.popitem(last=False)
        return None

    def forget_after(self, seq: int) -> None:
        """Forget the ids of messages above ``seq`` (a failed write took them back)."""
        ids = self._ids
        while ids:
            msg_id, (last, _) = next(reversed(ids.items()))
            if last <= seq:
                return
            del ids[msg_id]

    def clear(self) -> None:
        self._ids.clear()
