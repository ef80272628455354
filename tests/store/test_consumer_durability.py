"""A consumer's files are fsynced as nats-server's consumerFileStore fsyncs them: when written only
with ``sync: always`` (its ``MkdirAll`` and ``writeFileWithOptionalSync``); otherwise the stream's
interval sync covers them (nats-server leaves them to the OS). Counted fsyncs, no timing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pyjetstream.server.jetstream.store import _fileutil, consumer_store
from pyjetstream.server.jetstream.store.base import StoreConfig
from pyjetstream.server.jetstream.store.filestore import (
    SYNC_ALWAYS,
    SYNC_INTERVAL,
    FileStore,
    FileStoreConfig,
)


def _count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(_fileutil.os, "fsync", counting)
    monkeypatch.setattr(consumer_store.os, "fsync", counting)
    monkeypatch.setattr(consumer_store.os, "fdatasync", counting)  # a state slot rewritten in place
    return calls


def _create(tmp_path: Path, sync: str) -> tuple[FileStore, consumer_store.FileConsumerStore]:
    fs = FileStore(FileStoreConfig(directory=str(tmp_path / "s"), sync=sync), StoreConfig(name="S"))
    cs = fs.consumer_store("C")
    assert isinstance(cs, consumer_store.FileConsumerStore)
    return fs, cs


def test_a_consumer_is_created_without_fsync_then_synced_by_the_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = _create(tmp_path, SYNC_INTERVAL)  # (the stream's own files: before counting)
    calls = _count_fsyncs(monkeypatch)
    cs = fs.consumer_store("D")
    cs.write_meta(b'{"name":"D"}')
    cs.set_starting(0)
    assert calls == []
    assert fs.needs_sync()
    files: list[str] = []
    dirs: list[str] = []
    cs.collect_sync(files, dirs)  # what the interval sync fsyncs: the definition, the state, the entries
    assert sorted(os.path.basename(f) for f in files) == ["meta.inf", "meta.sum", "o.dat"]
    assert os.path.dirname(cs.directory) in dirs and cs.directory in dirs
    assert not cs.needs_sync()


def test_the_interval_sync_holds_one_descriptor_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Consumers created within one sync interval are fsynced by path, one open descriptor at a
    time: 10,000 of them once held 30,000 descriptors together (EMFILE in bench_scale's
    consumers dimension, whose limit was 20,000)."""
    fs, _ = _create(tmp_path, SYNC_INTERVAL)
    for i in range(50):
        cs = fs.consumer_store(f"C{i}")
        cs.write_meta(b"{}")
        cs.set_starting(0)
    real_open, real_close = os.open, os.close
    opened: set[int] = set()
    most = 0

    def counting_open(path: str, flags: int, *args: int) -> int:
        nonlocal most
        fd = real_open(path, flags, *args)
        opened.add(fd)
        most = max(most, len(opened))
        return fd

    def counting_close(fd: int) -> None:
        opened.discard(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", counting_open)
    monkeypatch.setattr(os, "close", counting_close)
    fs.sync_later()()
    assert 0 < most <= 2  # the stream's own block file beside one consumer file
    assert not fs.needs_sync()


def test_with_sync_always_a_consumer_is_fsynced_when_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fs, _ = _create(tmp_path, SYNC_ALWAYS)
    calls = _count_fsyncs(monkeypatch)
    cs = fs.consumer_store("D")
    cs.write_meta(b'{"name":"D"}')
    cs.set_starting(0)
    # the parent directory's entry; meta.sum, meta.inf and their directory; o.dat and its directory
    assert len(calls) == 6
    assert fs.consumer_store("D").read_meta() == b'{"name":"D"}'
