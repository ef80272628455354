"""The index snapshot (``msgs/index.snap``) written on clean shutdown to make restart fast.

Layout: ``"PJSI" | u32 json_len | json header | raw arrays | crc32``. The header carries the
scalar state, the block list (index, first seq, size, live counts, crc32 of the file's tail)
and the byte length of every array that follows. The snapshot is trusted only if every block
file still has exactly the recorded size and tail; it is deleted as soon as it is loaded, so
a later crash can never pair it with blocks that changed since.
"""

from __future__ import annotations

import json
import struct
import zlib
from array import array
from typing import Any

MAGIC = b"PJSI"
VERSION = 3  # 2: one locator array in the index instead of offsets and lengths; 3: the floor
_LEN = struct.Struct("<I")
TAIL_CHECK = 64


def encode(header: dict[str, Any], arrays: dict[str, array[int]], names: list[str | None]) -> bytes:
    """Serialise the header, arrays (by name) and the subject-name table (None = free id)."""
    blobs: list[bytes] = []
    lengths: dict[str, list[Any]] = {}
    for key, arr in arrays.items():
        raw = arr.tobytes()
        lengths[key] = [arr.typecode, len(raw)]
        blobs.append(raw)
    encoded = [b"" if n is None else n.encode() for n in names]
    name_lens = array("q", [-1 if n is None else len(e) for n, e in zip(names, encoded, strict=True)])
    raw = name_lens.tobytes()
    lengths["_name_lens"] = ["q", len(raw)]
    blobs.append(raw)
    joined = b"".join(encoded)
    lengths["_names"] = ["B", len(joined)]
    blobs.append(joined)
    head = json.dumps({"version": VERSION, "header": header, "arrays": lengths}).encode()
    body = b"".join([MAGIC, _LEN.pack(len(head)), head, *blobs])
    return body + zlib.crc32(body).to_bytes(4, "little")


def decode(buf: bytes) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]] | None:
    """Inverse of :func:`encode`; None when the bytes are not a valid snapshot."""
    if len(buf) < 12 or buf[:4] != MAGIC:
        return None
    if zlib.crc32(memoryview(buf)[:-4]) != int.from_bytes(buf[-4:], "little"):
        return None
    (hlen,) = _LEN.unpack_from(buf, 4)
    try:
        meta = json.loads(buf[8 : 8 + hlen])
    except ValueError:
        return None
    if meta.get("version") != VERSION:
        return None
    off = 8 + hlen
    arrays: dict[str, array[int]] = {}
    joined = b""
    for key, (code, n) in meta["arrays"].items():
        chunk = buf[off : off + n]
        off += n
        if key == "_names":
            joined = chunk
            continue
        arr = array(code)
        arr.frombytes(chunk)
        arrays[key] = arr
    if off != len(buf) - 4:
        return None
    names: list[str | None] = []
    pos = 0
    for ln in arrays.pop("_name_lens"):
        if ln < 0:
            names.append(None)
        else:
            names.append(joined[pos : pos + ln].decode())
            pos += ln
    return meta["header"], arrays, names
