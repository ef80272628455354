"""Per-message TTLs in the stores (nats-server's StoreMsg ttl and timed wheel): expiry, "never"
against max_age, the expiry handler subject delete markers use, and TTLs surviving a restart
and a crash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pyjetstream.server.jetstream.store import (
    FileStore,
    FileStoreConfig,
    MessageStore,
    StoreConfig,
    indexed,
    seqbulk,
)

from .conftest import StoreFactory, crash

S = 1_000_000_000
TTL_HDR = b"NATS/1.0\r\nNats-TTL: %d\r\n\r\n"


def test_ttl_expires_at_its_time(make_store: StoreFactory) -> None:
    s = make_store()
    s.store_msg("a", TTL_HDR % 2, b"1", ts=10 * S, ttl=2)
    s.store_msg("b", b"", b"2", ts=10 * S)
    s.store_msg("c", TTL_HDR % 5, b"3", ts=10 * S, ttl=5)
    assert s.next_expiry() == 12 * S
    assert s.expire_msgs(now=12 * S - 1) == 0
    assert s.expire_msgs(now=12 * S) == 1
    assert s.next_expiry() == 15 * S
    assert s.expire_msgs(now=15 * S) == 1
    assert s.next_expiry() is None
    st = s.state()
    assert (st.msgs, st.first_seq, st.last_seq) == (1, 2, 3)


def test_never_outlives_max_age(make_store: StoreFactory) -> None:
    s = make_store(max_age=10 * S)
    s.store_msg("a", b"", b"1", ts=100 * S, ttl=-1)
    s.store_msg("b", b"", b"2", ts=101 * S)
    s.store_msg("c", b"", b"3", ts=102 * S, ttl=3)
    assert s.next_expiry() == 105 * S  # c's TTL comes before b's max_age
    assert s.expire_msgs(now=105 * S) == 1
    assert s.next_expiry() == 111 * S  # a never expires: b's age is next
    assert s.expire_msgs(now=200 * S) == 1
    st = s.state()
    assert (st.msgs, st.first_seq) == (1, 1)
    assert s.next_expiry() is None


def test_expire_handler_sees_the_last_message_of_a_subject(make_store: StoreFactory) -> None:
    s = make_store(max_age=10 * S)
    for subj in ("a", "a", "b"):
        s.store_msg(subj, b"", b"x", ts=100 * S)
    seen: list[tuple[int, str, bool]] = []
    assert s.expire_msgs(now=200 * S, expire=lambda seq, subj, last: seen.append((seq, subj, last))) == 3
    assert seen == [(1, "a", False), (2, "a", True), (3, "b", True)]


def test_ttls_survive_clean_restart_and_crash(tmp_path: Path) -> None:
    for how in ("stop", "crash"):
        d = tmp_path / how
        s = FileStore(FileStoreConfig(str(d)), StoreConfig())
        s.store_msg("a", TTL_HDR % 7, b"1", ts=10 * S, ttl=7)
        s.store_msg("b", b"NATS/1.0\r\nNats-TTL: never\r\n\r\n", b"2", ts=10 * S, ttl=-1)
        s.store_msg("c", b"", b"3", ts=10 * S)
        if how == "stop":
            s.stop()
        else:
            crash(s)
        s2 = FileStore(FileStoreConfig(str(d)), StoreConfig())
        assert s2.msg_ttls() == {1: 7, 2: -1}, how
        assert s2.next_expiry() == 17 * S
        assert s2.expire_msgs(now=17 * S) == 1
        s2.update_config(StoreConfig(max_age=S))  # applies max_age now: c goes, b never expires
        st = s2.state()
        assert (st.msgs, st.first_seq, st.last_seq) == (1, 2, 3), how
        assert s2.load_msg(2).data == b"2"
        s2.stop()


@pytest.mark.parametrize("compression", ["none", "s2"])
def test_ttl_found_in_compressed_records_after_crash(tmp_path: Path, compression: str) -> None:
    s = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig(compression=compression))
    s.store_msg("a", TTL_HDR % 9, b"x" * 200, ts=10 * S, ttl=9)
    crash(s)
    s2 = FileStore(FileStoreConfig(str(tmp_path)), StoreConfig(compression=compression))
    assert s2.msg_ttls() == {1: 9}
    s2.stop()


def _expire_many(s: MessageStore) -> tuple[object, ...]:
    """300 TTL'd messages among others (some subjects keep a message, some lose their last),
    expired at once; what is left, and what the store told ``on_removed``."""
    told: list[tuple[int, str]] = []
    s.on_removed = lambda seq, subject: told.append((seq, subject))
    for i in range(400):
        if i % 4 == 3:
            s.store_msg(f"k.{i % 7}", b"", b"kept", ts=10 * S)
        else:
            s.store_msg(f"e.{i % 50}", TTL_HDR % 2, b"x" * (i % 9), ts=10 * S + i, ttl=2)
    assert s.expire_msgs(now=20 * S) == 300
    st = s.state()
    subjects = s.subjects_totals()  # type: ignore[attr-defined]
    left = [s.load_next_msg(">", 1)[0].seq, s.load_last_msg("k.3").seq]
    return (st.msgs, st.bytes, st.first_seq, st.last_seq, st.num_deleted, subjects, left, told, s.next_expiry())  # type: ignore[attr-defined]


def test_many_expiries_at_once_leave_what_one_by_one_leaves(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Expired messages without a marker to write are removed together (the backend's
    ``remove_many``), each still told to ``on_removed``: the same store as removing each."""
    together = _expire_many(make_store())
    monkeypatch.setattr(indexed, "_BULK_MIN", 10**9)
    one_by_one = _expire_many(make_store())
    assert together == one_by_one
    assert len(together[7]) == 300  # type: ignore[arg-type]


def _marker_rollup_scans(tmp_path: Path, between: int, monkeypatch: pytest.MonkeyPatch) -> int:
    """Slots searched (``find_value``) by the roll-up a subject delete marker makes, ``between``
    messages after the expired message it replaces (in the same block)."""
    s = FileStore(FileStoreConfig(str(tmp_path / str(between))), StoreConfig())
    s.store_msg("e.x", TTL_HDR % 1, b"x", ttl=1)
    for i in range(between):
        s.store_msg(f"o.{i}", b"", b"y")
    s.store_msg("e.x", b"NATS/1.0\r\nNats-Rollup: sub\r\n\r\n", b"")
    scanned = 0
    search = seqbulk.find_value

    def counted(arr: Any, value: int, lo: int, hi: int) -> int:
        nonlocal scanned
        at = search(arr, value, lo, hi)
        scanned += (at - lo + 1) if at >= 0 else hi - lo
        return at

    monkeypatch.setattr(seqbulk, "find_value", counted)
    assert s.purge_ex("e.x", keep=1) == 1
    s.stop()
    return scanned


def test_a_markers_rollup_does_not_search_the_messages_in_between(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The roll-up finds the subject's next message by its link in the page, not by a search of
    every slot up to it (each marker scanned the messages stored since the one it replaces)."""
    assert _marker_rollup_scans(tmp_path, 100, monkeypatch) == _marker_rollup_scans(tmp_path, 5000, monkeypatch) <= 2
