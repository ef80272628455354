"""One behaviour suite over the memory store and the file store variants (see conftest)."""

from __future__ import annotations

import time

import pytest

from pyjetstream.server.jetstream.store import (
    ErrInvalidSequence,
    ErrMaxBytes,
    ErrMaxMsgs,
    ErrMaxMsgsPerSubject,
    ErrMsgTooLarge,
    ErrSequenceMismatch,
    ErrStoreClosed,
    ErrStoreEOF,
    ErrStoreMsgNotFound,
    SimpleState,
    StoreConfig,
)

from .conftest import StoreFactory


def fill(store, subjects: list[str], payload: bytes = b"x") -> list[int]:
    return [store.store_msg(s, b"", payload)[0] for s in subjects]


# --- storing and loading ---------------------------------------------------------------------


def test_empty_store_state(make_store: StoreFactory) -> None:
    st = make_store().state()
    assert (st.msgs, st.bytes, st.first_seq, st.last_seq, st.first_ts, st.num_subjects) == (0, 0, 0, 0, 0, 0)


def test_store_and_load_roundtrip(make_store: StoreFactory) -> None:
    s = make_store()
    hdr = b"NATS/1.0\r\nX: 1\r\n\r\n"
    seq, ts = s.store_msg("orders.new", hdr, b"payload")
    assert seq == 1 and ts > 0
    msg = s.load_msg(1)
    assert (msg.subject, msg.seq, msg.ts, msg.hdr, msg.data) == ("orders.new", 1, ts, hdr, b"payload")
    seq2, _ = s.store_msg("orders.old", b"", b"")
    assert seq2 == 2
    assert s.load_msg(2).data == b"" and s.load_msg(2).hdr == b""
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_subjects) == (2, 1, 2, 2)
    assert st.first_ts == ts


def test_explicit_timestamp_is_kept(make_store: StoreFactory) -> None:
    s = make_store()
    _, ts = s.store_msg("a", b"", b"1", ts=123_456_789)
    assert ts == 123_456_789 and s.load_msg(1).ts == 123_456_789


def test_large_and_binary_payloads(make_store: StoreFactory) -> None:
    s = make_store()
    big = bytes(range(256)) * 400  # 100 KiB, larger than the small-block variant's blocks
    s.store_msg("bin", b"", big)
    s.store_msg("bin", b"", b"\x00\r\n" * 10)
    assert s.load_msg(1).data == big
    assert s.load_msg(2).data == b"\x00\r\n" * 10


def test_bytes_accounting_matches_nats_server(make_store: StoreFactory, store_kind: str) -> None:
    s = make_store()
    s.store_msg("a", b"", b"x" * 10)
    s.store_msg("a", b"NATS/1.0\r\n\r\n", b"x" * 10)
    # nats-server: memStoreMsgSize = subj+hdr+msg+16; fileStoreMsgSize = 22+subj+msg+8 (+4+hdr).
    expected = (1 + 10 + 16) + (1 + 12 + 10 + 16) if store_kind.startswith("memory") else (41 + 41 + 4 + 12)
    assert s.state().bytes == expected


def test_load_errors(make_store: StoreFactory) -> None:
    s = make_store()
    with pytest.raises(ErrStoreEOF):
        s.load_msg(1)
    fill(s, ["a", "b", "c"])
    s.remove_msg(2)
    with pytest.raises(ErrStoreMsgNotFound):
        s.load_msg(2)
    with pytest.raises(ErrStoreMsgNotFound):
        s.load_msg(0)
    with pytest.raises(ErrStoreEOF) as exc:
        s.load_msg(4)
    assert str(exc.value) == "stream store EOF"


def test_load_next_msg_filters(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a.1", "b.1", "a.2", "c", "a.1", "b.2.x"])
    assert s.load_next_msg(">", 1)[1] == 1
    assert s.load_next_msg("", 2)[1] == 2
    assert s.load_next_msg("a.1", 2)[1] == 5
    assert s.load_next_msg("a.*", 2)[1] == 3
    assert s.load_next_msg("b.>", 3)[1] == 6
    assert s.load_next_msg("*", 1)[1] == 4
    msg, seq = s.load_next_msg("a.1", 1)
    assert seq == msg.seq == 1 and msg.subject == "a.1"
    with pytest.raises(ErrStoreEOF):
        s.load_next_msg("a.1", 6)
    with pytest.raises(ErrStoreEOF):
        s.load_next_msg("nope", 1)
    with pytest.raises(ErrStoreEOF):
        s.load_next_msg(">", 7)
    s.remove_msg(1)
    assert s.load_next_msg(">", 0)[1] == 2  # start below first is clamped


def test_load_next_msgs_is_load_next_msg_in_a_run(make_store: StoreFactory) -> None:
    """The read-ahead of a delivery pass returns what load_next_msg would, message by message:
    gaps (removed messages) skipped, the count and byte caps honoured, empty at the end."""
    s = make_store()
    fill(s, [f"k.{i % 3}" for i in range(600)], payload=b"p" * 10)
    for seq in [*range(5, 300, 7), *range(320, 500)]:  # holes, and a long dead stretch
        s.remove_msg(seq)

    def one_by_one(filt: str, seq: int, n: int) -> list[tuple[str, int, int, bytes, bytes]]:
        got = []
        while len(got) < n:
            try:
                msg, seq = s.load_next_msg(filt, seq)
            except ErrStoreEOF:
                break
            got.append(tuple(msg))
            seq += 1
        return got

    for filt in ("", ">", "k.1", "k.*"):
        for start in (0, 1, 5, 299, 320, 501, 600, 601):
            for n in (1, 7, 1000):
                assert [tuple(m) for m in s.load_next_msgs(filt, start, n, 1 << 20)] == one_by_one(
                    filt, start, n
                )
    assert len(s.load_next_msgs(">", 1, 100, 1)) == 1  # stops after the message reaching the byte bound
    assert s.load_next_msgs(">", 601, 10, 1000) == []
    assert s.load_next_msgs("nope", 1, 10, 1000) == []


def test_consumer_walk_over_one_subject(make_store: StoreFactory) -> None:
    s = make_store()
    subjects = [f"k.{i % 7}" for i in range(300)]
    fill(s, subjects)
    for seq in range(10, 300, 5):
        s.remove_msg(seq)
    got, seq = [], 0
    while True:
        try:
            _msg, seq = s.load_next_msg("k.3", seq + 1)
        except ErrStoreEOF:
            break
        got.append(seq)
    assert got == [i + 1 for i in range(300) if i % 7 == 3 and (i + 1 < 10 or (i + 1) % 5)]


def test_load_last_and_prev(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a.1", "b", "a.2", "b", "a.1"])
    assert s.load_last_msg("b").seq == 4
    assert s.load_last_msg("a.*").seq == 5
    assert s.load_last_msg(">").seq == 5
    assert s.load_last_msg("").seq == 5
    with pytest.raises(ErrStoreMsgNotFound):
        s.load_last_msg("zzz")
    s.remove_msg(5)
    assert s.load_last_msg("a.1").seq == 1
    assert s.load_last_msg(">").seq == 4
    assert s.load_prev_msg(3).seq == 3
    assert s.load_prev_msg(100).seq == 4
    assert s.load_prev_msg(3, "b").seq == 2
    assert s.load_prev_msg(4, "a.*").seq == 3
    with pytest.raises(ErrStoreMsgNotFound):
        s.load_prev_msg(1, "b")


def test_subject_for_seq_and_seq_from_time(make_store: StoreFactory) -> None:
    s = make_store()
    for i in range(5):
        s.store_msg(f"s.{i}", b"", b"", ts=1000 * (i + 1))
    assert s.subject_for_seq(3) == "s.2"
    assert s.get_seq_from_time(0) == 1
    assert s.get_seq_from_time(2500) == 3
    assert s.get_seq_from_time(3000) == 3
    assert s.get_seq_from_time(99999) == 6
    s.remove_msg(3)
    assert s.get_seq_from_time(2500) == 4
    with pytest.raises(ErrStoreMsgNotFound):
        s.subject_for_seq(3)


# --- skip and first_seq ---------------------------------------------------------------------


def test_skip_msgs(make_store: StoreFactory) -> None:
    s = make_store()
    assert s.skip_msg() == 1
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 2, 1)
    fill(s, ["a", "b"])
    assert s.skip_msg() == 4
    s.store_msg("c", b"", b"")
    st = s.state(deleted_details=True)
    assert (st.msgs, st.first_seq, st.last_seq, st.num_deleted, st.deleted) == (3, 2, 5, 1, [4])
    s.skip_msgs(6, 3)
    assert s.state().last_seq == 8
    with pytest.raises(ErrSequenceMismatch):
        s.skip_msgs(5, 1)
    assert s.store_msg("d", b"", b"")[0] == 9


def test_first_seq_config(make_store: StoreFactory) -> None:
    s = make_store(first_seq=100)
    st = s.state()
    assert (st.first_seq, st.last_seq) == (100, 99)
    assert s.store_msg("a", b"", b"")[0] == 100


# --- limits ----------------------------------------------------------------------------------


def test_max_msgs_discard_old(make_store: StoreFactory) -> None:
    s = make_store(max_msgs=3)
    fill(s, ["a"] * 5)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (3, 3, 5)


def test_max_bytes_discard_old(make_store: StoreFactory) -> None:
    probe = make_store()
    probe.store_msg("a", b"", b"x" * 100)
    size = probe.state().bytes
    s = make_store(max_bytes=size * 3)
    fill(s, ["a"] * 5, b"x" * 100)
    st = s.state()
    assert (st.msgs, st.bytes, st.first_seq) == (3, size * 3, 3)


def test_discard_new_errors(make_store: StoreFactory) -> None:
    s = make_store(max_msgs=2, discard="new")
    fill(s, ["a", "b"])
    with pytest.raises(ErrMaxMsgs) as exc:
        s.store_msg("c", b"", b"")
    assert str(exc.value) == "maximum messages exceeded"
    assert s.state().last_seq == 2  # nothing consumed

    s = make_store(max_bytes=200, discard="new")
    stored = 0
    with pytest.raises(ErrMaxBytes) as exc2:
        for _ in range(100):
            s.store_msg("a", b"", b"x" * 10)
            stored += 1
    assert str(exc2.value) == "maximum bytes exceeded"
    assert s.state().msgs == stored and stored > 0


def test_discard_new_per_subject(make_store: StoreFactory) -> None:
    # Matches nats-server 2.9.10: per-subject limit with discard_new_per_subject rejects.
    s = make_store(max_msgs_per_subject=1, discard="new", discard_new_per_subject=True)
    s.store_msg("c.1", b"", b"")
    with pytest.raises(ErrMaxMsgsPerSubject) as exc:
        s.store_msg("c.1", b"", b"")
    assert str(exc.value) == "maximum messages per subject exceeded"
    assert s.store_msg("c.2", b"", b"")[0] == 2


def test_discard_new_max_msgs_with_per_subject_replacement(make_store: StoreFactory) -> None:
    # Observed on nats-server 2.9.10 (max_msgs 3, max_msgs_per_subject 2, discard new).
    s = make_store(max_msgs=3, max_msgs_per_subject=2, discard="new")
    for subj in ["b.1", "b.1", "b.1", "b.2"]:
        s.store_msg(subj, b"", b"x")
    for subj in ["b.3", "b.2"]:
        with pytest.raises(ErrMaxMsgs):
            s.store_msg(subj, b"", b"x")
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_subjects) == (3, 2, 4, 2)


def test_max_msgs_per_subject_discard_old(make_store: StoreFactory) -> None:
    s = make_store(max_msgs_per_subject=2)
    fill(s, ["k.a", "k.b", "k.a", "k.a", "k.b", "k.a"])
    assert s.subjects_state() == {"k.a": SimpleState(2, 4, 6), "k.b": SimpleState(2, 2, 5)}
    assert [s.load_next_msg("k.a", 1)[1]] == [4]


def test_kv_history_many_keys(make_store: StoreFactory) -> None:
    s = make_store(max_msgs_per_subject=3)
    for rnd in range(6):
        for k in range(50):
            s.store_msg(f"$KV.b.k{k}", b"", b"%d" % rnd)
    st = s.state()
    assert st.msgs == 150 and st.num_subjects == 50
    assert s.load_last_msg("$KV.b.k7").data == b"5"
    assert s.subjects_state("$KV.b.k7") == {"$KV.b.k7": SimpleState(3, 158, 258)}


def test_max_msg_size(make_store: StoreFactory) -> None:
    s = make_store(max_msg_size=10)
    s.store_msg("a", b"", b"x" * 10)
    with pytest.raises(ErrMsgTooLarge) as exc:
        s.store_msg("a", b"NATS/1.0\r\n\r\n", b"")
    assert str(exc.value) == "message to large"


def test_update_config_enforces_new_limits(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "b", "a", "c"])
    s.update_config(StoreConfig(max_msgs_per_subject=1))
    assert s.subjects_totals() == {"a": 1, "b": 1, "c": 1}
    s.update_config(StoreConfig(max_msgs=2))
    st = s.state()
    assert (st.msgs, st.first_seq) == (2, 5)
    assert s.config.max_msgs == 2


# --- expiry ----------------------------------------------------------------------------------


def test_expire_by_age(make_store: StoreFactory) -> None:
    s = make_store(max_age=1_000_000_000)
    now = time.time_ns()
    for i in range(6):
        s.store_msg("a", b"", b"", ts=now - (10 - i) * 1_000_000_000 // 2)
    # ages: 5.0, 4.5, 4.0, 3.5, 3.0, 2.5 s; plus fresh ones
    s.store_msg("a", b"", b"", ts=now)
    s.store_msg("b", b"", b"", ts=now + 500_000_000)
    assert s.next_expiry() == now - 5_000_000_000 + 1_000_000_000
    assert s.expire_msgs(now) == 6
    st = s.state()
    assert (st.msgs, st.first_seq) == (2, 7)
    assert s.next_expiry() == now + 1_000_000_000
    assert s.expire_msgs(now + 1_200_000_000) == 1
    assert s.expire_msgs(now + 10_000_000_000) == 1
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 9, 8)
    assert s.next_expiry() is None


def test_no_expiry_without_max_age(make_store: StoreFactory) -> None:
    s = make_store()
    s.store_msg("a", b"", b"", ts=1)
    assert s.next_expiry() is None
    assert s.expire_msgs() == 0


# --- deletes ---------------------------------------------------------------------------------


def test_remove_and_erase(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "b", "a"])
    assert s.remove_msg(3) is True
    assert s.remove_msg(3) is False
    assert s.erase_msg(4) is True
    assert s.erase_msg(99) is False
    st = s.state(deleted_details=True)
    assert (st.msgs, st.first_seq, st.last_seq, st.num_deleted, st.deleted) == (3, 1, 5, 2, [3, 4])
    assert s.subjects_state() == {"a": SimpleState(2, 1, 5), "b": SimpleState(1, 2, 2)}
    assert s.remove_msg(1)
    st = s.state()
    assert (st.first_seq, st.num_deleted) == (2, 2)
    assert s.remove_msg(5) and s.subjects_state("a") == {}
    assert s.remove_msg(2)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_deleted) == (0, 6, 5, 0)


def test_remove_last_of_subject_recomputes_last(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "b", "a", "b"])
    s.remove_msg(5)
    assert s.subjects_state("a") == {"a": SimpleState(2, 1, 3)}
    assert s.load_last_msg("a").seq == 3
    s.store_msg("a", b"", b"")
    s.remove_msg(1)
    assert s.subjects_state("a") == {"a": SimpleState(2, 3, 7)}
    assert [s.load_next_msg("a", 2)[1], s.load_next_msg("a", 4)[1]] == [3, 7]


# --- purge / compact / truncate --------------------------------------------------------------


def test_purge(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "c"])
    assert s.purge() == 3
    st = s.state()
    assert (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_subjects) == (0, 0, 4, 3, 0)
    assert s.store_msg("a", b"", b"")[0] == 4
    assert s.state().first_seq == 4


def test_purge_ex_by_subject(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "c", "a", "b"])
    assert s.purge_ex("a") == 3
    assert s.subjects_totals() == {"b": 2, "c": 1}
    assert s.state().first_seq == 2


def test_purge_ex_subject_keep(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "c", "a", "b", "a"])
    assert s.purge_ex("a", keep=1) == 3
    assert s.subjects_state("a") == {"a": SimpleState(1, 7, 7)}
    assert s.purge_ex("a", keep=5) == 0


def test_purge_ex_subject_below_seq(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "c", "a", "b", "a"])
    assert s.purge_ex("a", seq=5) == 2  # up to, not including, 5
    assert s.subjects_state("a") == {"a": SimpleState(2, 5, 7)}


def test_purge_ex_wildcard_keep_is_oldest_first(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["x.1", "x.2", "y", "x.1", "x.2", "x.1"])
    assert s.purge_ex("x.*", keep=2) == 3
    assert sorted(s.subjects_totals("x.*").items()) == [("x.1", 1), ("x.2", 1)]
    assert s.load_next_msg("x.*", 1)[1] == 5


def test_purge_ex_without_subject(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a"] * 10)
    assert s.purge_ex("", seq=4) == 3  # compact(4)
    assert s.state().first_seq == 4
    assert s.purge_ex(">", keep=2) == 5  # keep the last two
    st = s.state()
    assert (st.msgs, st.first_seq) == (2, 9)
    assert s.purge_ex("", keep=5) == 0
    assert s.purge_ex() == 2
    assert s.state().first_seq == 11


def test_compact(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "b", "a"])
    s.remove_msg(4)
    assert s.compact(3) == 2
    st = s.state()
    assert (st.msgs, st.first_seq) == (2, 3)
    assert s.compact(2) == 0
    assert s.compact(5) == 1  # removes 3; 4 was already gone
    assert s.state().first_seq == 5
    assert s.subjects_state() == {"a": SimpleState(1, 5, 5)}
    assert s.compact(20) == 1  # past the end: purge and move to 20
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 20, 19)
    assert s.store_msg("z", b"", b"")[0] == 20


def test_truncate(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a", "b", "a", "b", "a", "c"])
    s.remove_msg(2)
    s.truncate(4)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq, st.num_subjects) == (3, 1, 4, 2)
    assert s.subjects_state() == {"a": SimpleState(2, 1, 3), "b": SimpleState(1, 4, 4)}
    assert s.store_msg("a", b"", b"new")[0] == 5
    assert s.load_last_msg("a").data == b"new"
    assert [s.load_next_msg("a", 2)[1], s.load_next_msg("a", 4)[1]] == [3, 5]
    with pytest.raises(ErrInvalidSequence):
        s.truncate(2)
    s.truncate(0)
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (0, 0, 0)
    assert s.store_msg("a", b"", b"")[0] == 1


# --- per-subject and filtered state -----------------------------------------------------------


def test_subjects_state_and_totals(make_store: StoreFactory) -> None:
    s = make_store()
    fill(s, ["a.1", "a.2", "b.1", "a.1", "a.2.x"])
    assert s.subjects_totals() == {"a.1": 2, "a.2": 1, "b.1": 1, "a.2.x": 1}
    assert s.subjects_totals("a.*") == {"a.1": 2, "a.2": 1}
    assert s.subjects_totals("a.>") == {"a.1": 2, "a.2": 1, "a.2.x": 1}
    assert s.subjects_state("a.1") == {"a.1": SimpleState(2, 1, 4)}
    assert s.subjects_state("zz") == {}
    assert s.state().num_subjects == 4


def test_num_pending_and_filtered_state(make_store: StoreFactory) -> None:
    s = make_store()
    subjects = ["a", "b", "a", "c", "b", "a", "c", "a"]
    fill(s, subjects)
    assert s.num_pending(1) == (8, 8)
    assert s.num_pending(4, ">") == (5, 8)
    assert s.num_pending(1, "a") == (4, 8)
    assert s.num_pending(4, "a") == (2, 8)
    assert s.num_pending(9, "a") == (0, 8)
    assert s.num_pending(2, "*") == (7, 8)
    assert s.num_pending(1, "a", last_per_subject=True) == (1, 8)
    assert s.num_pending(1, ">", last_per_subject=True) == (3, 8)
    assert s.num_pending(6, ">", last_per_subject=True) == (2, 8)
    assert s.filtered_state(2, "a") == SimpleState(3, 3, 8)
    assert s.filtered_state(4, "b") == SimpleState(1, 5, 5)
    assert s.filtered_state(1, "nope") == SimpleState()
    assert s.filtered_state(4, ">") == SimpleState(5, 4, 8)
    s.remove_msg(6)
    assert s.num_pending(4, "a") == (1, 8)
    assert s.filtered_state(4, "*") == SimpleState(4, 4, 8)


def test_num_pending_wildcard_many_subjects(make_store: StoreFactory) -> None:
    s = make_store()
    subjects = [f"m.{i % 40}.x" for i in range(400)]
    fill(s, subjects)
    for seq in range(1, 401, 3):
        s.remove_msg(seq)
    live = {seq: subj for seq, subj in enumerate(subjects, 1) if (seq - 1) % 3}
    for start in (1, 57, 200, 399):
        expect = sum(1 for seq in live if seq >= start)
        assert s.num_pending(start, "m.*.x") == (expect, 400)
        first = min(seq for seq in live if seq >= start)
        assert s.filtered_state(start, "m.>").first == first
        assert s.load_next_msg("m.*.x", start)[1] == first


# --- batches, lifecycle ----------------------------------------------------------------------


def test_batch(make_store: StoreFactory) -> None:
    s = make_store(max_msgs=5)
    with s.batch():
        seqs = fill(s, ["a"] * 8)
        assert s.load_msg(8).subject == "a"
        with s.batch():
            s.remove_msg(5)
    assert seqs == list(range(1, 9))
    st = s.state()
    assert (st.msgs, st.first_seq) == (4, 4)


def test_closed_store_rejects(make_store: StoreFactory) -> None:
    s = make_store()
    s.store_msg("a", b"", b"")
    s.stop()
    s.stop()
    with pytest.raises(ErrStoreClosed):
        s.store_msg("a", b"", b"")
    with pytest.raises(ErrStoreClosed):
        s.load_msg(1)


def test_meta_and_consumer_names(make_store: StoreFactory) -> None:
    s = make_store()
    assert s.read_meta() is None
    s.write_meta(b'{"name":"S"}')
    assert s.read_meta() == b'{"name":"S"}'
    s.consumer_store("c1").write_meta(b"{}")
    s.consumer_store("c2")
    assert s.consumer_names() == ["c1", "c2"]
    s.consumer_store("c2").delete()
    assert s.consumer_names() == ["c1"]


def test_accepts_buffer_views(make_store: StoreFactory) -> None:
    # The server hands over slices of its read buffer; the store must copy what it keeps.
    s = make_store()
    buf = bytearray(b"NATS/1.0\r\n\r\n" + b"p" * 300)
    view = memoryview(buf)
    s.store_msg("a", view[:12], view[12:])
    buf[20] = ord("X")
    msg = s.load_msg(1)
    assert (msg.hdr, msg.data) == (b"NATS/1.0\r\n\r\n", b"p" * 300)
    assert type(msg.hdr) is bytes and type(msg.data) is bytes


def test_totals_are_the_states_messages_and_bytes(make_store: StoreFactory) -> None:
    """``totals()`` (what ``/jsz`` sums over the streams) is ``fast_state()``'s two fields, through
    stores, removals, a purge and a limit's trim."""
    s = make_store(max_msgs=50)
    seen = [s.totals()]
    assert seen[0] == (0, 0)
    fill(s, [f"t.{i % 7}" for i in range(80)], b"payload")
    s.remove_msg(40)
    seen.append(s.totals())
    st = s.fast_state()
    assert seen[-1] == (st.msgs, st.bytes) == (49, st.bytes) and st.bytes > 0
    s.purge_ex("t.3", 0, 0)
    st = s.fast_state()
    assert s.totals() == (st.msgs, st.bytes)
