"""Record compression for ``compression: "s2"`` streams.

There is no maintained S2 codec for Python. S2 (klauspost/compress) is a superset of Snappy:
every Snappy block is a valid S2 block and S2 decoders read it. So "s2" records are written as
Snappy blocks (cramjam's Rust implementation) — the S2-compatible subset. Compression is a
storage detail invisible to clients; records that would not shrink are stored plain.
"""

from __future__ import annotations

import cramjam

# Below this many bytes of headers + payload compression rarely pays for its CPU time.
MIN_COMPRESS = 64


def compress(data: bytes) -> bytes | None:
    """The compressed form, or None when it would not be smaller."""
    if len(data) < MIN_COMPRESS:
        return None
    out = bytes(cramjam.snappy.compress_raw(data))
    return out if len(out) < len(data) else None


def decompress(data: bytes | memoryview) -> bytes:
    return bytes(cramjam.snappy.decompress_raw(data))
