"""A page loaded while the cache is full of pages that cannot be evicted is not itself evicted.

While a file store recovers, no page can be saved (SeqIndex._rebuilding), so the pages already
cached stay; the cache then took the page it had just loaded as the one to evict, and the caller
read its dropped arrays (IndexError in recovery after a crash: found by
test_store_properties[file-evict], a cache of one page)."""

from __future__ import annotations

from pathlib import Path

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig


def _open(tmp_path: Path) -> FileStore:
    fcfg = FileStoreConfig(str(tmp_path / "s"), block_size=1024, compact_min_bytes=128, cache_slots=1)
    return FileStore(fcfg, StoreConfig(name="S"))


def _read_all(store: FileStore) -> list[tuple[str, bytes]]:
    st = store.state()
    return [(m.subject, m.data) for m in (store.load_msg(s) for s in range(st.first_seq, st.last_seq + 1))]


def test_recovery_with_a_one_page_cache_after_a_crash(tmp_path: Path) -> None:
    """The shrunk case the property test found, as it ran."""
    store = _open(tmp_path)
    for _ in range(3):
        store.store_msg("a", b"", b"", ts=1000)
    store.stop()
    store = _open(tmp_path)
    store.purge_ex("a")
    for _ in range(3):
        store.store_msg("a", b"", b"", ts=1000)
    store.store_msg("b", b"", b"y" * 40, ts=1000)
    store.purge_ex("*")
    store.store_msg("b", b"", b"y" * 40, ts=1000)
    store.store_msg("a.x", b"", b"zz" * 300, ts=1000)
    store.store_msg("a", b"", b"zz" * 300, ts=1000)
    store.store_msg("a", b"", b"", ts=1000)
    want = _read_all(store)
    store.abandon()  # kill -9: nothing flushed or snapshotted
    again = _open(tmp_path)
    try:
        assert _read_all(again) == want
    finally:
        again.stop()
