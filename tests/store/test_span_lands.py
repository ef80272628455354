"""`run_reader._lands` — the walk of record lengths from a span's start that proves a record found
by its sequence is a record and not a copy inside a payload (`run_reader.find_in_span`) — reads a
record's length as its first four bytes, little-endian, and takes the two high bytes only where
they are not zero (a record of 64 KiB or more: a step of every random get over a file store's
evicted pages walks ~32 records of a span). The walk answers as the four-byte reading does over
records of every size, with lengths below a record's overhead, and ends that fall between
records or past them."""

from __future__ import annotations

import random
import struct

import pytest

from pyjetstream.server.jetstream.store import run_reader
from pyjetstream.server.jetstream.store._records import REC_OVERHEAD


def reference(data: bytes, at: int, end: int, overhead: int) -> bool:
    """The lengths read whole, four bytes each."""
    while at < end:
        (total,) = struct.unpack_from("<I", data, at)
        if total < overhead:
            return False
        at += total
    return at == end


def span(lengths: list[int]) -> tuple[bytes, list[int]]:
    """Records of these lengths (each its length first, then filler) and their starts."""
    out, starts, at = bytearray(), [], 0
    for n in lengths:
        starts.append(at)
        out += struct.pack("<I", n) + bytes(max(n, 4) - 4)
        at += max(n, 4)
    return bytes(out) + bytes(8), starts


@pytest.mark.parametrize("seed", range(4))
def test_the_walk_answers_as_the_four_byte_lengths(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [REC_OVERHEAD, REC_OVERHEAD + 1, 40, 255, 256, 257, 65_535, 65_536, 65_537, 0x1_00_FF, 200_000]
    for _ in range(60):
        lengths = [rng.choice(sizes) if rng.random() < 0.2 else rng.randrange(REC_OVERHEAD, 300) for _ in range(12)]
        if rng.random() < 0.3:  # a length no record has: the walk stops there
            lengths[rng.randrange(12)] = rng.choice([0, 1, REC_OVERHEAD - 1])
        data, starts = span(lengths)
        ends = [*starts, len(data) - 8, *(s + 1 for s in starts), *(s + 3 for s in starts)]
        for lo in starts[:3]:
            for end in ends:
                if end >= lo:
                    got = run_reader._lands(data, lo, end, REC_OVERHEAD)
                    assert got == reference(data, lo, end, REC_OVERHEAD), (lengths, lo, end)


def test_a_record_over_16_mib_is_walked_past() -> None:
    """A length whose highest byte is set (the records of a large message)."""
    big = (1 << 24) + 300
    data, starts = span([40, big, 50])
    assert run_reader._lands(data, 0, starts[2], REC_OVERHEAD)
    assert run_reader._lands(data, 0, starts[2] + 50, REC_OVERHEAD)
    assert not run_reader._lands(data, 0, starts[2] - 1, REC_OVERHEAD)
    assert run_reader._lands(data, 0, starts[2], REC_OVERHEAD) == reference(data, 0, starts[2], REC_OVERHEAD)
