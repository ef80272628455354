"""Issue 24, ``--dim pauses``: rewriting a consumer's (or a stream's) ``meta.inf`` / ``meta.sum``
allocates and frees no inode once its spare files exist, at any number of consumers; and the swap
(`_fileutil.swap_into`, switch ``_fileutil.EXCHANGE_META``) reads back exactly as the rename it
replaces, after a crash at any point of a write.

Each ``CONSUMER.PAUSE`` / resume rewrites the consumer's metadata (nats-server's ``updateConfig`` ->
``writeConsumerMeta``, two files written through a temporary file and a rename each). A rename
over a file frees its inode, and on ext4 an inode freed less than a minute ago is not reused: every
allocation after it skips them all, so system time per rewrite grew with the rewrites of the last
minute (0.5-1.3 ms for the two files on this machine; swapped, 0.1-0.2 ms). Here the file-system
calls and the inodes are counted, not timed.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import count_calls, embedded
from tests.support.fs_calls import dies_after, fs_calls

from pyjetstream.server.jetstream.store import _fileutil
from pyjetstream.server.jetstream.store._fileutil import read_meta_file, write_meta_file

SMALL, LARGE = 10, 200
FS_CALLS = ("open", "mkdir", "replace", "rename", "unlink", "remove", "write", "stat", "fsync")
swaps_here = pytest.mark.skipif(_fileutil._renameat2 is None, reason="no renameat2 (not Linux glibc)")


def _inodes(directory: Path) -> set[int]:
    return {entry.stat().st_ino for entry in directory.iterdir()}


async def _pause_resume_steps(monkeypatch: pytest.MonkeyPatch, n: int) -> tuple[dict[str, float], bool]:
    """File-system calls per ``CONSUMER.PAUSE`` or resume of 5 consumers among ``n`` (each paused and
    resumed once before: its spare files exist), and whether their directories kept their inodes."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("PZ", ["pz.>"], storage="file", max_consumers=-1)
            for i in range(n):
                resp = await nc.add_consumer("PZ", f"p{i}", durable_name=f"p{i}")
                assert "error" not in resp, resp
            until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
            picked = [f"p{i * n // 5}" for i in range(5)]
            for name in picked:  # the first rewrite of each makes its spares
                for body in ({"pause_until": until}, {}):
                    assert "error" not in await nc.api(f"$JS.API.CONSUMER.PAUSE.PZ.{name}", body)
            obs = Path(server.jetstream.streams_dir) / "PZ" / "obs"
            before = {name: _inodes(obs / name) for name in picked}
            with fs_calls(monkeypatch, str(server.jetstream.store_dir), FS_CALLS) as calls:
                with count_calls(monkeypatch, _fileutil, "swap_into") as swaps:
                    for name in picked:
                        for body in ({"pause_until": until}, {}):
                            resp = await nc.api(f"$JS.API.CONSUMER.PAUSE.PZ.{name}", body)
                            assert "error" not in resp, resp
            kept = all(_inodes(obs / name) == before[name] for name in picked)
            return {**{k: v / 10 for k, v in calls.items()}, **{k: v / 10 for k, v in swaps.items()}}, kept
        finally:
            await nc.close()


@swaps_here
async def test_a_pause_or_resume_allocates_no_inode_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    small, small_kept = await _pause_resume_steps(monkeypatch, SMALL)
    large, large_kept = await _pause_resume_steps(monkeypatch, LARGE)
    assert small == large, (small, large)
    # meta.sum.tmp and meta.inf.tmp truncated and written in place, then swapped with meta.inf, meta.sum.
    assert small == {"open": 2, "write": 2, "swap_into": 2}, small
    assert small_kept and large_kept


@swaps_here
async def test_with_the_switch_off_each_rewrite_renames(monkeypatch: pytest.MonkeyPatch) -> None:
    """``EXCHANGE_META`` off: nats-server's temporary file and rename (two inodes made, two freed;
    the file system may hand a freed inode's number out again, so only the calls tell)."""
    monkeypatch.setattr(_fileutil, "EXCHANGE_META", False)
    calls, _ = await _pause_resume_steps(monkeypatch, SMALL)
    assert calls == {"open": 2, "write": 2, "replace": 2, "swap_into": 2}, calls


@pytest.mark.parametrize("exchange", [True, False])
@pytest.mark.parametrize("crash_after", [None, 0, 1])
def test_a_write_reads_back_as_with_the_rename(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool, crash_after: int | None
) -> None:
    """The switch on = off: what `read_meta_file` returns after each of several writes, and after a
    crash before the first swap (the old content), between the two (the new) or after both."""
    monkeypatch.setattr(_fileutil, "EXCHANGE_META", exchange)
    seen: list[bytes | None] = []
    for i, data in enumerate([b'{"v":1}', b'{"v":22}', b'{"v":333}', b'{"v":4}']):
        with monkeypatch.context() as m:
            if i == 3 and crash_after is not None:
                dies_after(m, _fileutil, "swap_into", crash_after)  # (after that many swaps)
            try:
                write_meta_file(str(tmp_path), data, fsync=i % 2 == 0)
            except SystemExit:
                pass
        seen.append(read_meta_file(str(tmp_path)))
    last = b'{"v":333}' if crash_after == 0 else b'{"v":4}'
    assert seen == [b'{"v":1}', b'{"v":22}', b'{"v":333}', last]
    assert (tmp_path / "meta.inf").read_bytes() == last


def test_the_swap_falls_back_to_the_rename_without_a_target(tmp_path: Path) -> None:
    """The first write (no ``meta.inf`` yet): a rename; no file but the two written is left."""
    write_meta_file(str(tmp_path), b"{}", fsync=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["meta.inf", "meta.sum"]
