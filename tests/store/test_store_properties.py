"""Property tests: random operation sequences against a plain-dict model of a stream store."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyjetstream.server.jetstream.store import (
    ErrInvalidSequence,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    MemoryStore,
    MessageStore,
    SimpleState,
    StoreConfig,
)

from .conftest import crash, small_pages

SUBJECTS = ["a", "b", "a.x", "a.y", "b.x.z", "c.x"]
FILTERS = [">", "", "a", "a.*", "*.x", "b.>", "a.>", "*", "c.x", "nope", "*.*.z"]


def matches(filt: str, subject: str) -> bool:
    """Independent reference matcher (token by token)."""
    if filt in ("", ">"):
        return True
    f, s = filt.split("."), subject.split(".")
    for i, tok in enumerate(f):
        if tok == ">":
            return len(s) > i
        if i >= len(s) or (tok != "*" and tok != s[i]):
            return False
    return len(f) == len(s)


@dataclass
class Model:
    max_msgs: int = -1
    max_per_subject: int = -1
    max_age: int = 0
    msgs: dict[int, tuple[str, bytes, int]] = field(default_factory=dict)
    first: int = 0
    last: int = 0

    def _settle(self) -> None:
        self.first = min(self.msgs) if self.msgs else self.last + 1

    def set_limits(self, max_msgs: int, max_per_subject: int) -> None:
        self.max_msgs, self.max_per_subject, self.max_age = max_msgs, max_per_subject, 0
        n = len(self.msgs)
        if max_per_subject > 0:
            for subject in {m[0] for m in self.msgs.values()}:
                mine = sorted(q for q, m in self.msgs.items() if m[0] == subject)
                for q in mine[: max(0, len(mine) - max_per_subject)]:
                    del self.msgs[q]
        if max_msgs > 0:
            while len(self.msgs) > max_msgs:
                del self.msgs[min(self.msgs)]
        if len(self.msgs) != n:
            self._settle()

    def store(self, subject: str, data: bytes, ts: int) -> int:
        self.last += 1
        self.msgs[self.last] = (subject, data, ts)
        if self.max_per_subject > 0:
            mine = sorted(q for q, m in self.msgs.items() if m[0] == subject)
            for q in mine[: max(0, len(mine) - self.max_per_subject)]:
                del self.msgs[q]
        if self.max_msgs > 0:
            while len(self.msgs) > self.max_msgs:
                del self.msgs[min(self.msgs)]
        self._settle()
        return self.last

    def remove(self, seq: int) -> bool:
        if seq not in self.msgs:
            return False
        del self.msgs[seq]
        self._settle()
        return True

    def skip(self) -> None:
        self.last += 1
        self._settle()

    def purge(self, fseq: int = 0) -> int:
        n = len(self.msgs)
        self.msgs.clear()
        self.first = max(self.last + 1, fseq)
        self.last = max(self.last, self.first - 1)
        return n

    def compact(self, seq: int) -> int:
        if seq == 0 or seq > self.last:
            return self.purge(seq)
        if seq <= self.first:
            return 0
        gone = [q for q in self.msgs if q < seq]
        for q in gone:
            del self.msgs[q]
        self._settle()
        return len(gone)

    def purge_ex(self, subject: str, seq: int, keep: int) -> int:
        if seq == 1:  # "up to but not including 1" (nats-server 2.11+)
            return 0
        if subject in ("", ">"):
            if keep == 0 and seq == 0:
                return self.purge()
            if seq > 1:
                return self.compact(seq)
            if keep > 0:
                return 0 if keep >= len(self.msgs) else self.compact(self.last - keep + 1)
            return 0
        matching = sorted(q for q, m in self.msgs.items() if matches(subject, m[0]))
        limit = seq - 1 if seq > 0 else self.last
        victims = [q for q in matching if q <= limit]
        if keep > 0:
            if keep >= len(matching):
                return 0
            victims = victims[: len(matching) - keep]
        for q in victims:
            del self.msgs[q]
        if victims:
            self._settle()
        return len(victims)

    def truncate(self, seq: int) -> None:
        if seq == 0:
            self.msgs.clear()
            self.first = self.last = 0
            return
        for q in [q for q in self.msgs if q > seq]:
            del self.msgs[q]
        self.last = seq

    def expire(self, now: int) -> int:
        n = 0
        while self.msgs and self.msgs[min(self.msgs)][2] <= now - self.max_age:
            del self.msgs[min(self.msgs)]
            n += 1
        if n:
            self._settle()
        return n

    # --- queries ---
    def matching(self, filt: str, start: int) -> list[int]:
        return sorted(q for q, m in self.msgs.items() if q >= start and matches(filt, m[0]))

    def totals(self, filt: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for subject, _, _ in self.msgs.values():
            if matches(filt, subject):
                out[subject] = out.get(subject, 0) + 1
        return out


def check_equal(store: MessageStore, model: Model, data: st.DataObject) -> None:
    state = store.state(deleted_details=True)
    assert state.msgs == len(model.msgs)
    assert (state.first_seq, state.last_seq) == (model.first, model.last)
    assert state.num_subjects == len({m[0] for m in model.msgs.values()})
    deleted = [q for q in range(model.first, model.last + 1) if q not in model.msgs] if model.msgs else []
    assert state.deleted == deleted and state.num_deleted == len(deleted)
    assert store.subjects_totals() == model.totals(">")
    filt = data.draw(st.sampled_from(FILTERS), label="filter")
    start = data.draw(st.integers(0, model.last + 2), label="start")
    hits = model.matching(filt, max(start, model.first))
    assert store.subjects_totals(filt) == model.totals(filt)
    assert store.num_pending(start, filt)[0] == len(hits)
    fs = store.filtered_state(start, filt)
    assert fs == (SimpleState(len(hits), hits[0], hits[-1]) if hits else SimpleState())
    lps = {model.msgs[q][0]: q for q in model.matching(filt, 0)}
    assert store.num_pending(start, filt, True)[0] == sum(1 for q in lps.values() if q >= start)
    if hits:
        msg, seq = store.load_next_msg(filt, start)
        assert seq == hits[0] and (msg.subject, msg.data) == model.msgs[seq][:2]
    else:
        with pytest.raises(ErrStoreEOF):
            store.load_next_msg(filt, start)
    every = model.matching(filt, 0)
    if every:
        assert store.load_last_msg(filt).seq == every[-1]
    else:
        with pytest.raises(ErrStoreMsgNotFound):
            store.load_last_msg(filt)
    seq = data.draw(st.integers(0, model.last + 1), label="load")
    if seq in model.msgs:
        msg = store.load_msg(seq)
        assert (msg.subject, msg.data, msg.ts) == model.msgs[seq]
    else:
        with pytest.raises((ErrStoreMsgNotFound, ErrStoreEOF)):
            store.load_msg(seq)


OPS = st.sampled_from(
    ["store"] * 12
    + ["remove", "remove", "erase", "skip", "purge", "purge_ex", "purge_ex", "purge_subjects", "compact", "truncate", "expire"]
    + ["reopen", "crash", "batch", "limits"]
)
LIMITS = [{}, {"max_msgs": 7}, {"max_msgs_per_subject": 2}, {"max_msgs": 5, "max_msgs_per_subject": 1}]


def run_ops(kind: str, data: st.DataObject) -> None:
    limits = data.draw(st.sampled_from([*LIMITS, {"max_age": 50}]), label="limits")
    compression = "s2" if kind == "file-s2" else "none"
    cfg = StoreConfig(compression=compression, **limits)  # type: ignore[arg-type]
    model = Model(
        limits.get("max_msgs", -1), limits.get("max_msgs_per_subject", -1), limits.get("max_age", 0)
    )
    tmp = tempfile.mkdtemp(prefix="store-prop-")
    fcfg = FileStoreConfig(tmp, block_size=1024, compact_min_bytes=128, cache_slots=1 if kind == "file-evict" else 1 << 19)

    def open_store() -> MessageStore:
        if kind.startswith("memory"):
            return MemoryStore(cfg, **small_pages(kind))
        fs = FileStore(fcfg, cfg)
        if kind == "file-evict":  # sealed blocks read whole at the first read out of order, 3 kept
            fs._backend._whole.load_after, fs._backend._whole.limit = 1, 3 * 1024
        return fs

    store = open_store()
    clock = 1_000
    try:
        for _ in range(data.draw(st.integers(1, 50), label="n_ops")):
            op = data.draw(OPS, label="op")
            if op == "batch":
                with store.batch():
                    for _ in range(data.draw(st.integers(1, 6))):
                        clock += 1
                        subject = data.draw(st.sampled_from(SUBJECTS))
                        assert store.store_msg(subject, b"h", b"b", ts=clock)[0] == model.store(
                            subject, b"b", clock
                        )
                    seq = data.draw(st.integers(0, model.last))
                    assert store.remove_msg(seq) == model.remove(seq)
            elif op == "limits":
                new = data.draw(st.sampled_from(LIMITS))
                cfg = StoreConfig(compression=compression, **new)  # type: ignore[arg-type]
                store.update_config(cfg)
                model.set_limits(new.get("max_msgs", -1), new.get("max_msgs_per_subject", -1))
            elif op == "store":
                subject = data.draw(st.sampled_from(SUBJECTS))
                payload = data.draw(st.sampled_from([b"", b"x", b"y" * 40, b"zz" * 300]))
                clock += data.draw(st.integers(0, 20))
                seq, _ = store.store_msg(subject, b"", payload, ts=clock)
                assert seq == model.store(subject, payload, clock)
            elif op in ("remove", "erase"):
                seq = data.draw(st.integers(0, model.last + 1))
                expected = model.remove(seq)
                assert (store.remove_msg(seq) if op == "remove" else store.erase_msg(seq)) == expected
            elif op == "skip":
                model.skip()
                assert store.skip_msg() == model.last
            elif op == "purge":
                assert store.purge() == model.purge()
            elif op == "purge_ex":
                subject = data.draw(st.sampled_from(FILTERS))
                seq = data.draw(st.sampled_from([0, 0, 1, max(1, model.last // 2), model.last + 3]))
                keep = data.draw(st.sampled_from([0, 0, 1, 3]))
                assert store.purge_ex(subject, seq, keep) == model.purge_ex(subject, seq, keep)
            elif op == "purge_subjects":  # (a firing's ended schedules)
                subjects = data.draw(st.lists(st.sampled_from(SUBJECTS), max_size=3))
                keep = data.draw(st.sampled_from([0, 0, 1, 2]))  # (1: a stretch of schedules' roll-ups)
                assert store.purge_subjects(subjects, keep) == sum(model.purge_ex(s, 0, keep) for s in set(subjects))
            elif op == "compact":
                seq = data.draw(st.integers(0, model.last + 3))
                assert store.compact(seq) == model.compact(seq)
            elif op == "truncate":
                seq = data.draw(st.integers(0, model.last))
                if seq == 0 or seq in model.msgs:
                    store.truncate(seq)
                    model.truncate(seq)
                else:
                    with pytest.raises(ErrInvalidSequence):
                        store.truncate(seq)
            elif op == "expire":
                if model.max_age:
                    assert store.expire_msgs(clock) == model.expire(clock)
            elif not kind.startswith("memory"):
                if op == "reopen":
                    store.stop()
                else:
                    crash(store)
                store = open_store()
                if model.max_age and model.msgs:
                    # Opening a store expires by wall-clock time; our clock is far in the past.
                    model.msgs.clear()
                    model._settle()
            check_equal(store, model, data)
    finally:
        store.stop()
        shutil.rmtree(tmp, ignore_errors=True)


PROPERTY_SETTINGS = settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("kind", ["memory", "memory-small", "file", "file-evict", "file-s2"])
@PROPERTY_SETTINGS
@given(data=st.data())
def test_store_matches_model(kind: str, data: st.DataObject) -> None:
    run_ops(kind, data)
