"""Store fixtures: every behaviour test runs over the memory store and file-store variants."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import (
    FileStore,
    FileStoreConfig,
    MemoryStore,
    MessageStore,
    StoreConfig,
    StoredMsg,
)

# "file-small" uses tiny blocks so that multi-block paths (rollover, unlink, compaction,
# cross-block reads) are exercised by the same behaviour tests; "file-evict" also keeps a single
# sealed block's index slots in memory, so nearly every look at an older block loads its page
# again (and evicts, saving it first when it changed); "memory-small" uses tiny index pages (a
# page boundary every few sequences); "file-s2" compresses.
STORE_KINDS = ["memory", "memory-small", "file", "file-small", "file-evict", "file-s2"]

StoreFactory = Callable[..., MessageStore]


def file_options(kind: str, directory: Path) -> FileStoreConfig:
    if kind == "file-small":
        return FileStoreConfig(str(directory), block_size=1024, compact_min_bytes=256)
    if kind == "file-evict":
        return FileStoreConfig(str(directory), block_size=1024, compact_min_bytes=256, cache_slots=1)
    return FileStoreConfig(str(directory))


def crash(store: MessageStore) -> None:
    """Drop a file store as ``kill -9`` would: fds closed, nothing flushed or snapshotted.

    Everything a call returned for has already been handed to the OS, which is exactly what
    survives a process crash.
    """
    assert isinstance(store, FileStore)
    store.abandon()


def small_pages(kind: str) -> dict[str, int]:
    """MemoryStore's options for a store kind ("memory-small": index pages of 5 sequences)."""
    return {"page_slots": 5} if kind == "memory-small" else {}


@pytest.fixture(params=STORE_KINDS)
def store_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_store(store_kind: str, tmp_path: Path) -> Iterator[StoreFactory]:
    """``make_store(cfg=None, **StoreConfig fields)`` -> a fresh store of the test's kind."""
    opened: list[MessageStore] = []
    counter = iter(range(1_000_000))

    def make(cfg: StoreConfig | None = None, **limits: object) -> MessageStore:
        cfg = cfg or StoreConfig(**limits)  # type: ignore[arg-type]
        if store_kind.startswith("memory"):
            store: MessageStore = MemoryStore(cfg, **small_pages(store_kind))
        else:
            if store_kind == "file-s2":
                cfg.compression = "s2"
            store = FileStore(file_options(store_kind, tmp_path / f"s{next(counter)}"), cfg)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.stop()


@pytest.fixture
def file_dir(tmp_path: Path) -> Path:
    return tmp_path / "stream"


def observed_state(s: FileStore, pending_filter: str, ttls: bool = False) -> tuple[object, ...]:
    """A comparable picture of a file store's observable state, for before/after-restart checks:
    (state, subjects state, every message, num_pending(1, pending_filter)[, the TTL table])."""
    st = s.state(deleted_details=True)
    msgs: list[StoredMsg] = []
    seq = 0
    while True:
        try:
            msg, seq = s.load_next_msg(">", seq + 1)
        except Exception:
            break
        msgs.append(msg)
    picture: tuple[object, ...] = (st, s.subjects_state(), msgs, s.num_pending(1, pending_filter))
    return (*picture, s.msg_ttls()) if ttls else picture
