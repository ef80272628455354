"""A block's rewrite (compaction: a ``max_msgs_per_subject: 1`` stream over 100,000 subjects
rewrites a block of ~140,000 slots once half its messages were replaced, issue 24) copies its live
records stepping over its dead slots in C, and the index it writes walks no link of a sealed block
(`seqrecover.block_slots`: a link never leaves its page; the walk was ~15 ms of every index of a
140,000-slot block, ~0.3 µs of every put). Counted at two sizes (``sys.settrace``, the calls of the
module's ``max``); no timing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.support.steps import counting

from pyjetstream.server.jetstream.store import FileStore, FileStoreConfig, StoreConfig, compaction, seqrecover

TS0 = 1_700_000_000_000_000_000


def _put(s: FileStore, subjects: list[str]) -> None:
    with s.batch():
        s.store_run(subjects, [b""] * len(subjects), [b"v"] * len(subjects), None, [TS0 + i for i in range(len(subjects))])


@pytest.mark.parametrize("msgs", [1_000, 20_000])
def test_a_sealed_blocks_index_walks_no_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, msgs: int) -> None:
    """`block_slots` of a sealed block (what its index holds) looks for no link past the block:
    a link never leaves its page, and a sealed block's page ends where the block does."""
    s = FileStore(FileStoreConfig(str(tmp_path / "s"), block_size=msgs * 40), StoreConfig())
    _put(s, [f"k.{i % 50}" for i in range(3 * msgs)])
    files = s._backend
    blk = files.blocks[0]  # type: ignore[attr-defined]
    end = files._block_end(blk)  # type: ignore[attr-defined]
    assert end <= s.state().last_seq
    walked: list[int] = []

    def counted_max(*args: Any) -> Any:  # (the module's ``max``: a walk is a call with one array)
        if len(args) == 1:
            walked.append(len(args[0]))
        return max(*args)

    monkeypatch.setattr(seqrecover, "max", counted_max, raising=False)
    slots = seqrecover.block_slots(s._index, blk.first_seq, end)
    monkeypatch.undo()
    assert walked == []
    assert max(slots.nxt) < end and sum(slots.s_msgs) == end - blk.first_seq
    s.stop()


def _rewrite_lines(d: Path, slots: int) -> int:
    """Line events of `compaction.rewrite`'s own frame for a sealed block of about ``slots``
    records, all removed but its last 500."""
    s = FileStore(FileStoreConfig(str(d), block_size=slots * 40, compact_min_bytes=1 << 30), StoreConfig())
    _put(s, [f"k.{i}" for i in range(2 * slots)])
    files = s._backend
    blk = files.blocks[0]  # type: ignore[attr-defined]
    end = files._block_end(blk)  # type: ignore[attr-defined]
    for seq in range(blk.first_seq, end - 500):
        s.remove_msg(seq)
    with counting(lines_only=True, where=lambda f: f.f_code is compaction.rewrite.__code__) as steps:
        files._rewrite_block(blk)  # type: ignore[attr-defined]
    assert blk.live_msgs == 500
    assert [s.load_msg(seq).subject for seq in (end - 500, end - 1)] == [f"k.{end - 501}", f"k.{end - 2}"]
    s.stop()
    return steps.count


def test_a_rewrite_steps_over_its_dead_slots_in_c(tmp_path: Path) -> None:
    few, many = _rewrite_lines(tmp_path / "a", 600), _rewrite_lines(tmp_path / "b", 10_000)
    assert many == few, (few, many)
