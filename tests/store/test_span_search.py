"""`run_reader.find_in_span` — a random get's search for its record in a span of its sealed block
(the bytes between the offsets of every 64th record, `IndexPeeks`) — walks the records from the
span's start by their lengths to the one holding the sequence, and takes it only where that walk
leads: a payload can hold a whole valid record of another sequence, CRC and all. Its answer equals
an independent reading (every record start from the span's, by four-byte lengths, with
``struct``), over records of every size (64 KiB boundaries, over 16 MiB), records erased or not a
message's, damaged CRCs and lengths, spans within a larger buffer (a block kept whole), and copies
of the asked record inside earlier payloads."""

from __future__ import annotations

import random
import struct

import pytest

from pyjetstream.server.jetstream.store import run_reader
from pyjetstream.server.jetstream.store._records import (
    CRC_RESIDUE,
    FLAG_ERASED,
    KIND_MSG,
    REC_HDR,
    REC_OVERHEAD,
    SPAN_LAYOUT,
    _crc32,
    append_record,
)

Found = tuple[bytes, int, int, int, int, int] | None


def reference(data: bytes, seq: int, lo: int, hi: int) -> Found:
    """The first record start from ``lo`` (lengths read whole) holding ``seq`` as a live message
    with a good CRC; None past a length under the overhead or reaching past ``hi``."""
    at = lo
    while at + REC_HDR.size <= hi:
        total, kind, rseq, ts, slen, hlen = REC_HDR.unpack_from(data, at)
        if total < REC_OVERHEAD or at + total > hi:
            return None
        rec = data[at : at + total]
        if rseq == seq and kind == KIND_MSG and _crc32(rec) == CRC_RESIDUE:
            return rec, kind, ts, slen, hlen, at
        at += total
    return None


def record(seq: int, body: bytes, kind: int = KIND_MSG, subject: bytes = b"m.1") -> bytes:
    out = bytearray()
    append_record(out, kind, seq, seq % 1000, subject, 0, body)
    return bytes(out)


def search(data: bytes, seq: int, lo: int, hi: int) -> Found:
    return run_reader.find_in_span(data, seq, lo, hi, SPAN_LAYOUT, _crc32)


@pytest.mark.parametrize("seed", range(5))
def test_the_search_answers_as_a_reading_of_every_record_start(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [0, 1, 40, 200, 65_535 - REC_OVERHEAD - 3, 65_536 - REC_OVERHEAD - 3, 70_000]
    for _ in range(40):
        first = rng.choice([1, 255, 256, 1 << 32, (1 << 64) - 100])
        recs = []
        for i in range(rng.randrange(1, 20)):
            seq = first + i
            body = bytes(rng.choice(sizes) if rng.random() < 0.2 else rng.randrange(0, 60))
            if rng.random() < 0.15 and i:  # an earlier record's payload holds a copy of this one
                recs[-1] = record(seq - 1, record(seq, b"copy") + body)
            kind = rng.choice([KIND_MSG, KIND_MSG, KIND_MSG, FLAG_ERASED, 1])
            recs.append(record(seq, body, kind))
        spoilt = bytearray(b"".join(recs))
        if rng.random() < 0.3:  # a flipped byte: a CRC fails, or a length lies
            spoilt[rng.randrange(len(spoilt))] ^= 1 << rng.randrange(8)
        pad = bytes(rng.randrange(0, 50))
        data = pad + bytes(spoilt) + bytes(rng.randrange(0, 50))  # (a span inside a kept block)
        lo, hi = len(pad), len(pad) + len(spoilt)
        for seq in range(first - 1, first + len(recs) + 1):
            got, want = search(data, seq, lo, hi), reference(data, seq, lo, hi)
            assert got == want, (seed, seq)


def test_a_copy_inside_an_earlier_payload_is_passed_over() -> None:
    real = record(7, b"the real one")
    data = record(6, record(7, b"a copy") + b"!") + real
    got = search(data, 7, 0, len(data))
    assert got is not None and got[0] == real and got[5] == len(data) - len(real)


def test_a_record_over_16_mib_is_walked_past() -> None:
    """A length whose highest byte is set (the records of a large message)."""
    big = record(1, bytes((1 << 24) + 300))
    assert struct.unpack_from("<I", big)[0] >> 24
    data = record(0, b"x") + big + record(2, b"after")
    got = search(data, 2, 0, len(data))
    assert got is not None and got[5] == len(data) - len(record(2, b"after"))
    assert search(data, 3, 0, len(data)) is None
