"""A run that discard-old limits trim (`IndexedStore.trims_after_run`): stored whole and trimmed
after (`_trim_run`) it leaves exactly what ``store_msg`` one by one leaves — the messages, the
subject table, the state, the removals each told to ``on_removed``, what a restart finds — over
random runs under ``max_msgs_per_subject``, ``max_msgs``, ``max_bytes`` and their combinations,
on every store kind. ``TRIM_RUNS = False`` is the switch (then ``run_fits`` says no). The oldest
messages a run pushes past ``max_msgs`` / ``max_bytes`` go together (`seqbulk.over_limits`, one
`_remove_trimmed`); ``TRIM_TOGETHER = False`` removes them one by one, the same."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    ErrStoreMsgNotFound,
    FileStore,
    FileStoreConfig,
    MessageStore,
    StoreConfig,
    indexed,
)

from .conftest import StoreFactory, crash, observed_state

LIMITS = [
    {"max_msgs_per_subject": 1},
    {"max_msgs_per_subject": 3},
    {"max_msgs": 40},
    {"max_bytes": 3000},
    {"max_msgs": 30, "max_bytes": 2500},
    {"max_msgs_per_subject": 2, "max_msgs": 25},
    {"max_msgs_per_subject": 1, "max_msgs": 7},
]


def _stored(s: MessageStore) -> list[tuple[int, str, bytes, bytes]]:
    out = []
    st = s.state()
    for seq in range(st.first_seq, st.last_seq + 1):
        try:
            m = s.load_msg(seq)
        except ErrStoreMsgNotFound:
            continue
        out.append((m.seq, m.subject, m.hdr, m.data))
    return out


def _picture(s: MessageStore) -> tuple[object, ...]:
    st = s.state()
    firsts = {subj: s.load_next_msg(subj, 0)[1] for subj in s.subjects_totals()}
    lasts = {subj: s.load_last_msg(subj).seq for subj in s.subjects_totals()}
    state = (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_subjects, st.num_deleted)
    return state, s.subjects_totals(), firsts, lasts, _stored(s)


def _runs(rng: random.Random, k: int) -> list[tuple[list[str], list[bytes], list[bytes]]]:
    runs = []
    for _ in range(k):
        n = rng.choice([1, 2, 5, 20, 60])
        spread = rng.choice([1, 3, 12, 40])
        subjects = [f"s.{rng.randrange(spread)}" for _ in range(n)]
        hdrs = [b"NATS/1.0\r\nX: y\r\n\r\n" if rng.random() < 0.3 else b"" for _ in range(n)]
        payloads = [b"p" * rng.randrange(1, 120) for _ in range(n)]
        runs.append((subjects, hdrs, payloads))
    return runs


@pytest.mark.parametrize("limits", LIMITS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_a_trimmed_run_leaves_what_one_by_one_leaves(make_store: StoreFactory, limits: dict[str, int]) -> None:
    rng = random.Random(repr(limits))
    one, run = make_store(**limits), make_store(**limits)
    removed: dict[str, list[tuple[int, str]]] = {"one": [], "run": []}
    one.on_removed = lambda seq, subject: removed["one"].append((seq, subject))
    run.on_removed = lambda seq, subject: removed["run"].append((seq, subject))
    trimmed_runs = 0
    for subjects, hdrs, payloads in _runs(rng, 40):
        with one.batch():
            for subject, hdr, p in zip(subjects, hdrs, payloads, strict=True):
                one.store_msg(subject, hdr, p)
        with run.batch():
            total = sum(run.record_size(len(s), len(h), len(p)) for s, h, p in zip(subjects, hdrs, payloads, strict=True))
            assert run.run_fits(subjects, max(map(len, payloads)) + 60, total)
            before = run.state().msgs
            _, tss, error = run.store_run(subjects, hdrs, payloads)
            trimmed_runs += run.state().msgs < before + len(subjects)
        assert (len(tss), error) == (len(subjects), None)
        assert _picture(run) == _picture(one)
        assert sorted(removed["run"]) == sorted(removed["one"])
    assert trimmed_runs > 10
    for s in (one, run):  # the subject links hold after the trims
        for seq in range(s.state().first_seq, s.state().last_seq + 1, 3):
            s.remove_msg(seq)
    assert _picture(run) == _picture(one)


@pytest.mark.parametrize("limits", LIMITS[2:5], ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()))
def test_trimmed_together_equals_one_by_one(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch, limits: dict[str, int]
) -> None:
    """``TRIM_TOGETHER`` on and off, over runs with messages removed between them: the same
    picture, the same removals told to ``on_removed`` in the same order. Step count: on, a
    run's trim of several messages calls no `_remove_at` (one `_remove_trimmed`); off, one each."""
    rng = random.Random(repr(limits) + "together")
    stores = {True: make_store(**limits), False: make_store(**limits)}
    removed: dict[bool, list[tuple[int, str]]] = {True: [], False: []}
    singles: dict[bool, int] = {True: 0, False: 0}
    for key, s in stores.items():
        s.on_removed = lambda seq, subject, key=key: removed[key].append((seq, subject))  # type: ignore[misc]
        real = s._remove_at  # type: ignore[attr-defined]

        def counting(seq: int, erase: bool, lazy: bool = False, key: bool = key, real=real) -> bool:  # type: ignore[no-untyped-def]
            singles[key] += 1
            return bool(real(seq, erase, lazy))

        s._remove_at = counting  # type: ignore[attr-defined]
    big_trims = 0
    for subjects, hdrs, payloads in _runs(rng, 40):
        before = {key: singles[key] for key in stores}
        gone = {}
        for key, s in stores.items():
            monkeypatch.setattr(indexed, "TRIM_TOGETHER", key)
            n = len(removed[key])
            with s.batch():
                s.store_run(subjects, hdrs, payloads)
            gone[key] = len(removed[key]) - n
        assert _picture(stores[True]) == _picture(stores[False])
        assert removed[True] == removed[False]
        if gone[True] > 1:
            big_trims += 1
            assert singles[True] == before[True] and singles[False] - before[False] == gone[False]
        victim = rng.randrange(stores[True].state().first_seq, stores[True].state().last_seq + 1)
        for s in stores.values():
            s.remove_msg(victim)
    assert big_trims > 5


@pytest.mark.parametrize("how", ["clean", "kill -9"])
@pytest.mark.parametrize("block_size", [1024, 1 << 20])
@pytest.mark.parametrize("limits", [{"max_msgs_per_subject": 1, "max_msgs": 50}, {"max_bytes": 3000}])
def test_a_trimmed_run_survives_a_restart(tmp_path: Path, how: str, block_size: int, limits: dict[str, int]) -> None:
    cfg = StoreConfig(**limits)  # type: ignore[arg-type]
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=block_size, compact_min_bytes=256)
    s = FileStore(fcfg, cfg)
    rng = random.Random(7)
    for subjects, hdrs, payloads in _runs(rng, 30):
        with s.batch():
            assert s.run_fits(subjects, 200, 10**9)
            s.store_run(subjects, hdrs, payloads)
    before = observed_state(s, "s.1")
    if how == "clean":
        s.stop()
    else:
        crash(s)
    s2 = FileStore(fcfg, StoreConfig(**limits))  # type: ignore[arg-type]
    try:
        assert observed_state(s2, "s.1") == before
        assert s2.state().lost is None
    finally:
        s2.stop()
