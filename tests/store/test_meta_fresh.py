"""Issue 24, ``--consumers-10k``: a consumer's first definition is written where it goes, in the
directory its create just made (`_fileutil.write_meta_file` with ``fresh``, switch
``_fileutil.DIRECT_FRESH_META``), as nats-server's ``writeConsumerMeta`` does — no temporary file,
no rename — and reads back, after a crash at any point, as the write through temporary files does.

Creating a consumer made four file-system calls more than nats-server (two renames, and the two
exchanges that fail without a target); the system time of a create among 10,000 consumers (ext4
directory operations) is most of its cost on this machine. Counted, not timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.test_scale_consumer_create import _create_calls
from tests.support.fs_calls import dies_after

from pyjetstream import Server
from pyjetstream.server.jetstream.store import _fileutil
from pyjetstream.server.jetstream.store._fileutil import read_meta_file, write_meta_file


async def test_with_the_switch_off_a_create_goes_through_temporary_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """tests/jetstream/test_scale_consumer_create.py counts a create's calls with the switch on (a
    directory, two files written): off, each file is a temporary one renamed into place."""
    monkeypatch.setattr(_fileutil, "DIRECT_FRESH_META", False)
    calls = await _create_calls(monkeypatch, 10, "all")
    assert calls == {"mkdir": 1, "open": 2, "write": 2, "replace": 2, "state writes due": 0}, calls


@pytest.mark.parametrize("direct", [True, False])
@pytest.mark.parametrize("crash_after", [None, 0, 1])
def test_a_first_write_reads_back_as_through_temporary_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, direct: bool, crash_after: int | None
) -> None:
    """The switch on = off: no definition after a crash before the data file is in place (the
    direct write's first file is the checksum), the definition after the whole write; a rewrite
    after it goes through the temporary files either way."""
    monkeypatch.setattr(_fileutil, "DIRECT_FRESH_META", direct)
    with monkeypatch.context() as m:
        if crash_after is not None:
            dies_after(m, _fileutil, "write_file", crash_after)  # (after that many whole files)
        try:
            write_meta_file(str(tmp_path), b'{"v":1}', fsync=False, fresh=True)
        except SystemExit:
            pass
    assert read_meta_file(str(tmp_path)) == (None if crash_after is not None else b'{"v":1}')
    write_meta_file(str(tmp_path), b'{"v":22}', fsync=True)
    assert read_meta_file(str(tmp_path)) == b'{"v":22}'


async def test_a_directory_left_with_a_checksum_alone_is_dropped_at_recovery(tmp_path: Path) -> None:
    """A crash between a create's two files: the consumer was never answered; the next start drops
    its directory and recovers the others."""
    async with Server(port=-1, jetstream=True, store_dir=str(tmp_path)) as server:
        nc = await RawClient.connect(server.client_url)
        await nc.add_stream("CR", ["cr.>"], storage="file")
        assert "error" not in await nc.add_consumer("CR", "kept", durable_name="kept")
        await nc.close()
        obs = Path(server.jetstream.streams_dir) / "CR" / "obs"
    (obs / "torn").mkdir()
    (obs / "torn" / "meta.sum").write_bytes(b"0badf00d")
    async with Server(port=-1, jetstream=True, store_dir=str(tmp_path)) as server:
        nc = await RawClient.connect(server.client_url)
        names = await nc.api("$JS.API.CONSUMER.NAMES.CR", {})
        await nc.close()
    assert names["consumers"] == ["kept"], names
    assert not (obs / "torn").exists()
