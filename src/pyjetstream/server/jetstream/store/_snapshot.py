"""The index snapshot (``msgs/index.snap``) written on clean shutdown to make restart fast.

Layout: ``"PJSI" | u32 json_len | json header | raw arrays | crc32``. The header carries the
scalar state, the block list (index, first seq, size, live counts, crc32 of the file's tail)
and the byte length of every array that follows. The snapshot is trusted only if every block
file still has exactly the recorded size and tail; it is deleted as soon as it is loaded, so
a later crash can never pair it with blocks that changed since.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from array import array
from itertools import accumulate, chain, pairwise
from typing import Any, TypeAlias

from ._fileutil import Buffer
from ._index import positions

MAGIC = b"PJSI"
VERSION = 4  # 2: one locator array in the index instead of offsets and lengths; 3: the floor; 4: names as lines
#: The versions read: 3's names are joined without a separator (``_names``), 4's may be lines (``_lines``).
READABLE = (3, 4)
_LEN = struct.Struct("<I")
TAIL_CHECK = 64
#: Names with free ids (None) written in `_names`' C-speed passes too (off: one by one, as before).
FAST_FREE_NAMES = True
# `_names`' C passes: a free id's line and length (``get(name, default)``: a name's own default).
_LINE_OF: dict[str | None, str] = {None: ""}
_LEN_OF: dict[str | None, int] = {None: -1}


def encode(header: dict[str, Any], arrays: dict[str, array[int]], names: list[str | None]) -> list[Buffer]:
    """Serialise the header, arrays (by name) and the subject-name table (None = free id), as
    parts to write in order (``_fileutil.write_file``): the arrays go out as they are, so a
    large index is never copied whole into one bytes object."""
    parts: list[Buffer] = []
    lengths: dict[str, list[Any]] = {}
    for key, arr in arrays.items():
        lengths[key] = [arr.typecode, len(arr) * arr.itemsize]
        parts.append(arr)
    name_lens, joined, lines = _names(names)
    lengths["_name_lens"] = ["q", len(name_lens) * name_lens.itemsize]
    parts.append(name_lens)
    lengths["_lines" if lines else "_names"] = ["B", len(joined)]
    parts.append(joined)
    head = json.dumps({"version": VERSION, "header": header, "arrays": lengths}).encode()
    parts[:0] = [MAGIC + _LEN.pack(len(head)) + head]
    crc = 0
    for part in parts:
        crc = zlib.crc32(part, crc)
    parts.append(crc.to_bytes(4, "little"))
    return parts


def _names(names: list[str | None]) -> tuple[array[int], bytes, bool]:
    """Each name's length in bytes (-1: None), the names' bytes joined, and whether they are
    joined as lines (a newline between each two: no name holds one — a subject never does —,
    so that a read splits them in one C call, `_line_names`). ASCII names in C-speed passes
    (their characters are their bytes), a free id (None) as an empty line of length -1, taken
    by a dict's ``get`` in a ``map``; others one by one. A stream state's table always holds a
    free id (id 0), so its names went one by one until `FAST_FREE_NAMES`: 100,000 subjects'
    state took ~0.1 s at every sync, most of it ``b"\\n" in e`` (in CPython 3.11 a ``bytes in
    bytes`` first tries the needle as an int: a formatted TypeError raised and cleared, ~2,000
    instructions each; ``find`` does not)."""
    if FAST_FREE_NAMES or None not in names:
        plain: list[str] = list(map(_LINE_OF.get, names, names))  # type: ignore[arg-type]  # (free id: "")
        text = "\n".join(plain)
        joined = text.encode()
        if len(joined) == len(text) and text.count("\n") == max(len(names) - 1, 0):
            return array("q", map(_LEN_OF.get, names, map(len, plain))), joined, True  # (a free id: -1)
    encoded = [b"" if n is None else n.encode() for n in names]
    name_lens = array("q", [-1 if n is None else len(e) for n, e in zip(names, encoded, strict=True)])
    lines = all(e.find(b"\n") < 0 for e in encoded)  # (find: no TypeError raised and cleared)
    return name_lens, (b"\n" if lines else b"").join(encoded), lines


Layout: TypeAlias = "tuple[dict[str, Any], dict[str, tuple[str, int, int]]]"
# Bytes of a snapshot file read at a time by `file_layout`, and for its header alone.
_CHUNK = 256 * 1024
_HEAD = 4096


def layout(buf: bytes | mmap.mmap) -> Layout | None:
    """The header and where each array lies (typecode, byte offset, byte length) in a valid
    snapshot's bytes, without decoding the arrays (to read single items of them later); None
    when the bytes are not a valid snapshot."""
    if len(buf) < 12 or buf[:4] != MAGIC:
        return None
    if zlib.crc32(memoryview(buf)[:-4]) != int.from_bytes(buf[-4:], "little"):
        return None
    (hlen,) = _LEN.unpack_from(buf, 4)
    return _where(buf[8 : 8 + hlen], len(buf))


def file_layout(path: str, check: bool = True) -> Layout | None:
    """`layout` of a snapshot file, read in chunks into one buffer and checked as they come: a
    block index (~5 MB for 8 MiB of small messages) read whole to find where its arrays lie cost
    ~3 ms of CPU, most of it a fresh buffer's pages; so read, ~1.3 ms. ``check`` False: the
    header alone, one small read, the checksum not verified (a reader that checks what it reads
    otherwise: `idx_peek`'s locators, each pointing at a record with its own CRC and sequence).
    Raises OSError."""
    buf = bytearray(_CHUNK if check else _HEAD)
    mv = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        body = size - 4
        if body < 8:
            return None
        got = f.readinto(mv[: min(len(buf), body)])
        if got < 8 or buf[:4] != MAGIC:
            return None
        (hlen,) = _LEN.unpack_from(buf, 4)
        if 8 + hlen > got:  # (a header longer than a chunk: not a block index's)
            return None
        head = bytes(mv[8 : 8 + hlen])
        if not check:
            return _where(head, size)
        crc = zlib.crc32(mv[:got])
        pos = got
        while pos < body:
            got = f.readinto(mv[: min(_CHUNK, body - pos)])
            if not got:
                return None
            crc = zlib.crc32(mv[:got], crc)
            pos += got
        if crc != int.from_bytes(f.read(4), "little"):
            return None
    return _where(head, size)


def _where(head: bytes, size: int) -> Layout | None:
    """The header and the arrays' places from a snapshot's JSON header (``size``: the file's)."""
    try:
        meta = json.loads(head)
    except ValueError:
        return None
    if meta.get("version") not in READABLE:
        return None
    off = 8 + len(head)
    where: dict[str, tuple[str, int, int]] = {}
    for key, (code, n) in meta["arrays"].items():
        where[key] = (code, off, n)
        off += n
    return (meta["header"], where) if off == size - 4 else None


def decode(buf: bytes | mmap.mmap) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]] | None:
    """Inverse of `encode`; None when the bytes are not a valid snapshot."""
    found = layout(buf)
    if found is None:
        return None
    header, where = found
    arrays: dict[str, array[int]] = {}
    joined = b""
    lines = False
    mv = memoryview(buf)
    for key, (code, off, n) in where.items():
        if key in ("_names", "_lines"):
            joined = buf[off : off + n]
            lines = key == "_lines"
        else:
            arr = array(code)
            arr.frombytes(mv[off : off + n])  # one copy, straight into the array
            arrays[key] = arr
    lens = arrays.pop("_name_lens")
    if lines:
        return _line_names(header, arrays, lens, joined)
    names = _ascii_names(lens, joined)
    if names is None:
        names = []
        pos = 0
        for ln in lens:
            if ln < 0:
                names.append(None)
            else:
                names.append(joined[pos : pos + ln].decode())
                pos += ln
    return header, arrays, names


def _line_names(
    header: dict[str, Any], arrays: dict[str, array[int]], lens: array[int], joined: bytes
) -> tuple[dict[str, Any], dict[str, array[int]], list[str | None]] | None:
    """`decode`'s end for names written as lines: one ``split`` makes them (~8 ms for 100,000
    subjects, where cutting each from the joined text took ~20), the free ids' (length -1) set to
    None; None when there are not as many lines as lengths."""
    names: list[str | None] = joined.decode().split("\n") if len(lens) else []  # type: ignore[assignment]
    if len(names) != len(lens):
        return None
    for at in positions(lens, -1):
        names[at] = None
    return header, arrays, names


def _ascii_names(lens: array[int], joined: bytes) -> list[str | None] | None:
    """The names when all are ASCII (a stream state's subjects, as a rule): cut from one decoded
    text, the free ids' (length -1) then set to None — ~12 ms for 100,000 subjects, where one
    ``decode`` each took ~24; None otherwise (then one by one)."""
    text = joined.decode()
    if len(text) != len(joined) or (lens and min(lens) < -1):
        return None
    free = positions(lens, -1)
    sizes = lens
    if free:
        sizes = array("q", lens)
        for at in free:
            sizes[at] = 0
    ends = accumulate(sizes)
    names: list[str | None] = [text[a:b] for a, b in pairwise(chain((0,), ends))]
    for at in free:
        names[at] = None
    return names
