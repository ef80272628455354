"""Per-message TTLs in the stores (nats-server's StoreMsg ttl and timed wheel): expiry, "never"
against max_age, the expiry handler subject delete markers use, and TTLs surviving a restart
and a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig

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
