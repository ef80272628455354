"""Issue 24, the get by sequence at random over a file stream larger than its caches (bench
``--dim messages``: 10M messages, 62 sealed blocks, the index pages evicted): what one get reads
does not grow with the stored messages — counted, not timed, on an embedded server, at ~27 and
~270 sealed blocks (4 KiB blocks, two or three blocks' slots kept in memory).

Per ``STREAM.MSG.GET``: one ``pread`` of a block file (the span of 64 records holding the record,
`IndexPeeks`; nats-server's ``msgForSeq`` reads the block it has not cached), at most a span's
bytes, no index page loaded (the slot's span comes from the block's spans in memory, the page's
arrays stay evicted) and no block read whole; and the same Python in the store's modules at both
sizes (`run_reader.find_in_span` walks the span's records from its start: its steps depend on the
record's place in its span, not on the stream): ~2,650 bytes read (a span of 64 records; ~780 with
spans of 16, which cost 4x the resident offsets: `idx_peek.SPAN`), at both sizes."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from tests.jetstream.consumer_helpers import RawClient
from tests.jetstream.scale_steps import embedded
from tests.support.steps import counting

from pyjetstream.server.jetstream import engine
from pyjetstream.server.jetstream.store import FileStoreConfig
from pyjetstream.server.jetstream.store._records import CRC_LEN, REC_HDR_LEN
from pyjetstream.server.jetstream.store.idx_peek import SPAN, SPAN_MAX

BLOCK = 4096
CACHE = 200
GETS = 300
STORE_DIR = os.sep + os.path.join("jetstream", "store") + os.sep
#: The longest record `_publish` stores (subject ``g.999``, a 14-byte payload, no header).
RECORD_MAX = REC_HDR_LEN + len("g.999") + len(b"payload-000000") + CRC_LEN


def _small_blocks(**kwargs: Any) -> FileStoreConfig:
    return FileStoreConfig(**kwargs, block_size=BLOCK, cache_slots=CACHE)


async def _publish(nc: RawClient, n: int) -> None:
    inbox = nc.new_inbox()
    sub = nc.subscribe(inbox + ".*")
    for i in range(n):
        nc.publish(f"g.{i % 1000}", b"payload-%06d" % i, f"{inbox}.{i}")
        if i % 2000 == 1999 or i == n - 1:
            await sub.collect(i % 2000 + 1, timeout=60)
    sub.unsubscribe()


async def _per_get(n: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """Random gets over a file stream of ``n`` messages: block preads, bytes read, index pages
    loaded, blocks read whole and the store's trace events, each per get."""
    monkeypatch.setattr(engine, "FileStoreConfig", _small_blocks)
    async with embedded() as server:
        nc = await RawClient.connect(server.client_url)
        try:
            await nc.add_stream("G", ["g.>"], storage="file")
            await _publish(nc, n)
            store: Any = server.jetstream.streams["G"].store
            index, files = store._index, store._backend
            assert len(files.blocks) > n // 100
            rng = random.Random(n)
            seqs = [s for s in rng.sample(range(1, files._firsts[-1]), 3 * GETS) if not index._covering(s).loaded]
            seqs = seqs[:GETS]
            assert len(seqs) == GETS
            for seq in seqs[:50]:  # (the server's first requests)
                await nc.api("$JS.API.STREAM.MSG.GET.G", {"seq": seq})
            files._forget_reads(None)
            reads = [0, 0]
            pread = os.pread

            def counted(fd: int, size: int, offset: int) -> bytes:
                reads[0] += 1
                reads[1] += size
                return pread(fd, size, offset)

            loads, whole, peeks = index.loads, files._whole.loads, index.peeks
            monkeypatch.setattr(os, "pread", counted)
            with counting(where=lambda frame: STORE_DIR in frame.f_code.co_filename) as steps:
                got = [await nc.api("$JS.API.STREAM.MSG.GET.G", {"seq": seq}) for seq in seqs]
            monkeypatch.setattr(os, "pread", pread)
            for seq, answer in zip(seqs, got, strict=True):
                assert answer["message"]["seq"] == seq and answer["message"]["subject"] == f"g.{(seq - 1) % 1000}"
            return {
                "preads": reads[0] / GETS,
                "bytes": reads[1] / GETS,
                "loads": (index.loads - loads) / GETS,
                "whole": (files._whole.loads - whole) / GETS,
                "peeks": (index.peeks - peeks) / GETS,
                "steps": steps.count / GETS,
            }
        finally:
            await nc.close()


async def test_a_random_get_reads_one_span_at_both_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    small = await _per_get(2_000, monkeypatch)
    large = await _per_get(20_000, monkeypatch)
    for got in (small, large):
        # (a get whose span the one before it read is sliced from that read: no pread)
        assert 0.9 <= got["preads"] <= 1 and got["loads"] == got["whole"] == 0, (small, large)
        assert got["peeks"] == 1, (small, large)  # (each slot from its evicted page's spans)
        # (one span: `SPAN` records from a kept offset, the records walked to the get's own)
        assert got["bytes"] <= min(SPAN * RECORD_MAX, SPAN_MAX), (small, large)
    assert large["bytes"] < 1.1 * small["bytes"], (small, large)
    assert abs(large["steps"] - small["steps"]) < 0.05 * small["steps"], (small, large)
