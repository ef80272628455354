"""Issue 24, dimension 2: creating a durable consumer on a file-stored stream does the same
file-system work whatever the number of consumers the stream already has, and no more than
nats-server's ``ConsumerStore`` + ``SetStarting`` (a directory, ``meta.inf`` and ``meta.sum``
written in place, ``o.dat``): the calls are counted, not timed. (The first definition of a new
directory is written in place since session 21, tests/store/test_meta_fresh.py; through a
temporary file and a rename each, a create made four calls more.)

With 10,000 consumers a create cost ~1.4 ms of server CPU against nats-server's ~0.35, most of it
system time in the file system (every new file is an inode allocated). A deliver-all (or
from-a-sequence) consumer's state file is written at its first change: a restart that finds none
selects the same start (tests/reliability covers the crash).
"""

from __future__ import annotations

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded
from tests.support.fs_calls import fs_calls

SMALL, LARGE = 10, 200
FS_CALLS = ("open", "mkdir", "makedirs", "replace", "rename", "pwrite", "write", "stat", "fsync", "fdatasync")


async def _create_calls(monkeypatch: pytest.MonkeyPatch, n: int, deliver: str) -> dict[str, int]:
    """File-system calls per create of 5 consumers on a file stream that already has ``n``."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], storage="file", max_consumers=-1)
            await nc.publish_many("s.0", 3)
            for i in range(n):
                resp = await nc.add_consumer("S", f"c{i}", durable_name=f"c{i}", filter_subject=f"s.{i}")
                assert "error" not in resp, resp
            root = str(server.jetstream.store_dir)
            with fs_calls(monkeypatch, root, FS_CALLS) as calls:
                for i in range(5):
                    resp = await nc.add_consumer("S", f"new{i}", durable_name=f"new{i}", deliver_policy=deliver)
                    assert "error" not in resp, resp
            consumers = server.jetstream.streams["S"].consumers
            # No timed state write due: deliver all writes none yet, deliver new wrote its start.
            due = [consumers[f"new{i}"].writer._flush_handle is not None for i in range(5)]
            return {**{k: v / 5 for k, v in calls.items()}, "state writes due": sum(due) / 5}
        finally:
            await nc.close()


async def test_a_consumer_create_does_the_same_file_work_at_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _create_calls(monkeypatch, SMALL, "all")
    large = await _create_calls(monkeypatch, LARGE, "all")
    assert small == large, (small, large)
    # One directory, meta.inf and meta.sum written in place: nats-server also writes o.dat.
    assert small == {"mkdir": 1, "open": 2, "write": 2, "state writes due": 0}, small


async def test_a_deliver_new_consumer_writes_its_start_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its start would be selected elsewhere after a crash: written before the create is answered,
    as nats-server's ``SetStarting`` (one state slot file more)."""
    calls = await _create_calls(monkeypatch, SMALL, "new")
    assert calls == {"mkdir": 1, "open": 3, "write": 2, "pwrite": 1, "state writes due": 0}, calls


async def _index_copies(n: int, flt: str) -> tuple[int, int]:
    """Consumers the stream's index copies while 5 consumers are created beside ``n`` on the same
    filter (none, or one literal subject), and while a message is then stored for them."""
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("S", ["s.>"], storage="memory", max_consumers=-1)
            extra = {"filter_subject": flt} if flt else {}
            for i in range(n):
                resp = await nc.add_consumer("S", f"c{i}", durable_name=f"c{i}", **extra)
                assert "error" not in resp, resp
            index = server.jetstream.streams["S"].csl
            before = index.copied
            for i in range(5):
                resp = await nc.add_consumer("S", f"new{i}", durable_name=f"new{i}", **extra)
                assert "error" not in resp, resp
            creates = index.copied - before
            await nc.publish_many("s.one", 1)
            return creates, index.copied - before - creates
        finally:
            await nc.close()


@pytest.mark.parametrize("flt", ["", "s.one"])
async def test_a_consumer_create_does_not_copy_the_others(flt: str) -> None:
    """The pauses row ``build: durable pull consumer create`` grew 1.99x from 1,000 to 10,000
    consumers (nats-server 1.38x): each create rebuilt the tuple of all the consumers on its filter
    (py-spy: 30% of the server's samples at 10,000). Now no create copies any; the stored message
    that asks for them builds the tuple once."""
    assert await _index_copies(SMALL, flt) == (0, SMALL + 5)
    assert await _index_copies(LARGE, flt) == (0, LARGE + 5)
