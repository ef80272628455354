"""Record compression for ``compression: "s2"`` streams.

There is no maintained S2 codec for Python. S2 (klauspost/compress) is a superset of Snappy:
every Snappy block is a valid S2 block and S2 decoders read it. So "s2" records are written as
Snappy blocks (cramjam's Rust implementation) — the S2-compatible subset. Compression is a
storage detail invisible to clients; records that would not shrink are stored plain.
"""

from __future__ import annotations

from typing import Any

# Below this many bytes of headers + payload compression rarely pays for its CPU time.
MIN_COMPRESS = 64

_snappy: Any = None  # cramjam.snappy, once a compressed record is written or read


def snappy() -> Any:
    """cramjam's Snappy codec, imported on first use: a server whose streams are not compressed
    never loads cramjam (a restart's CPU is mostly imports; tests/server/test_startup_imports.py)."""
    global _snappy
    if _snappy is None:
        import cramjam  # Deferred: start-up imports only what the streams use.

        _snappy = cramjam.snappy
    return _snappy


def compress(data: bytes) -> bytes | None:
    """The compressed form, or None when it would not be smaller."""
    if len(data) < MIN_COMPRESS:
        return None
    out = bytes((_snappy or snappy()).compress_raw(data))
    return out if len(out) < len(data) else None


def decompressed_len(data: bytes | memoryview) -> int:
    """The length a compressed record's body decompresses to (read from its preamble)."""
    return int((_snappy or snappy()).decompress_raw_len(data))


def decompress(data: bytes | memoryview) -> bytes:
    return bytes((_snappy or snappy()).decompress_raw(data))
