"""S2 streams (klauspost/compress ``s2``), the compression around stream snapshots.

nats-server writes snapshots with ``s2.NewWriter`` and reads them with ``s2.NewReader``. The S2
stream format is Snappy's framing format (chunks of ``type, 3-byte length, body``; compressed and
uncompressed chunks carry a masked CRC-32C of their data) with its own stream identifier
(``S2sTwO``) and a block format that extends Snappy's by *repeat* copies (a 1-byte-offset copy
with offset 0 reuses the previous offset, with a longer length encoding) and larger blocks.

Writing: a Snappy-framed stream (cramjam's Rust codec) — S2 readers take Snappy streams, and
Snappy blocks are valid S2 blocks. Reading: both identifiers; each block is decoded by cramjam's
Snappy decoder, and by `decode_block` (the full S2 block format, in Python) when the block
uses S2's extensions. Checksums are not verified on reading (the archive inside is length-checked).
"""

from __future__ import annotations

import cramjam

__all__ = ["S2Error", "compress_stream", "decode_block", "decompress_stream"]

_STREAM_IDENTIFIER = 0xFF
_COMPRESSED = 0x00
_UNCOMPRESSED = 0x01
_MAGICS = (b"S2sTwO", b"sNaPpY")


class S2Error(ValueError):
    """The bytes are not a valid (or complete) S2 / Snappy stream."""


def compress_stream(data: bytes) -> bytes:
    """``data`` as a Snappy-framed stream, which S2 readers (nats-server's) accept."""
    return bytes(cramjam.snappy.compress(data))


def decompress_stream(data: bytes | bytearray | memoryview) -> bytes:
    """The data of a whole S2 (or Snappy-framed) stream."""
    view = memoryview(data)
    out = bytearray()
    pos = 0
    seen_identifier = False
    end = len(view)
    while pos < end:
        if pos + 4 > end:
            raise S2Error("s2: truncated chunk header")
        kind = view[pos]
        length = view[pos + 1] | view[pos + 2] << 8 | view[pos + 3] << 16
        pos += 4
        if pos + length > end:
            raise S2Error("s2: truncated chunk")
        body = view[pos : pos + length]
        pos += length
        if kind == _STREAM_IDENTIFIER:
            if bytes(body) not in _MAGICS:
                raise S2Error("s2: unknown stream identifier")
            seen_identifier = True
            continue
        if not seen_identifier:
            raise S2Error("s2: missing stream identifier")
        if kind == _COMPRESSED:
            if length < 4:
                raise S2Error("s2: short compressed chunk")
            out += _block(body[4:])
        elif kind == _UNCOMPRESSED:
            if length < 4:
                raise S2Error("s2: short uncompressed chunk")
            out += body[4:]
        elif kind < 0x80:  # reserved unskippable chunk
            raise S2Error(f"s2: unsupported chunk type {kind:#x}")
        # 0x80-0xfe: padding, S2 index and other skippable chunks.
    return bytes(out)


def _block(block: memoryview) -> bytes:
    try:
        return bytes(cramjam.snappy.decompress_raw(bytes(block)))
    except Exception:  # S2 extensions (repeat copies) are not Snappy: decode them here
        return decode_block(block)


def _uvarint(src: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(src) or shift > 63:
            raise S2Error("s2: corrupt block length")
        byte = src[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def decode_block(src: bytes | memoryview) -> bytes:
    """One S2 block (klauspost/compress ``s2Decode``): literals, 1/2/4-byte-offset copies and
    repeat copies."""
    src = memoryview(src)
    size, s = _uvarint(src, 0)
    dst = bytearray()
    offset = 0
    n = len(src)
    try:
        while s < n:
            tag = src[s]
            kind = tag & 0x03
            if kind == 0:  # literal
                x = tag >> 2
                if x < 60:
                    s += 1
                else:
                    width = x - 59
                    x = int.from_bytes(src[s + 1 : s + 1 + width], "little")
                    s += 1 + width
                length = x + 1
                if s + length > n:
                    raise S2Error("s2: corrupt literal")
                dst += src[s : s + length]
                s += length
                continue
            if kind == 1:  # copy with a 1-byte offset, or a repeat of the last offset
                toffset = ((tag & 0xE0) << 3) | src[s + 1]
                length = (tag >> 2) & 0x07
                s += 2
                if toffset == 0:
                    if length == 5:
                        length = src[s] + 4
                        s += 1
                    elif length == 6:
                        length = (src[s] | src[s + 1] << 8) + (1 << 8)
                        s += 2
                    elif length == 7:
                        length = (src[s] | src[s + 1] << 8 | src[s + 2] << 16) + (1 << 16)
                        s += 3
                else:
                    offset = toffset
                length += 4
            elif kind == 2:
                offset = src[s + 1] | src[s + 2] << 8
                length = 1 + (tag >> 2)
                s += 3
            else:
                offset = int.from_bytes(src[s + 1 : s + 5], "little")
                length = 1 + (tag >> 2)
                s += 5
            d = len(dst)
            if offset <= 0 or d < offset or d + length > size:
                raise S2Error("s2: corrupt copy")
            if offset >= length:
                dst += dst[d - offset : d - offset + length]
            else:
                while length > 0:  # an overlapping copy repeats the last `offset` bytes
                    step = min(offset, length)
                    start = len(dst) - offset
                    dst += dst[start : start + step]
                    length -= step
    except IndexError:
        raise S2Error("s2: corrupt block") from None
    if len(dst) != size:
        raise S2Error("s2: corrupt block size")
    return bytes(dst)
