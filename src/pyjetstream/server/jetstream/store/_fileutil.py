"""Small durable-file helpers: atomic replace, directory fsync, checksummed metadata files."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import zlib
from array import array
from collections.abc import Callable
from typing import TypeAlias

from .base import ErrCorruptRecord

# What write_file takes: bytes-like, including the index's arrays (written without a copy).
Buffer: TypeAlias = "bytes | bytearray | memoryview | array[int]"


def fsync_dir(path: str) -> None:
    """Make a directory's entries (creates, renames, unlinks) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_file(path: str, data: Buffer | list[Buffer], fsync: bool) -> None:
    """Write ``data`` (or its parts in order, not joined: no copy of a large whole) to ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for part in data if isinstance(data, list) else [data]:
            view = memoryview(part).cast("B")
            while view:
                n = os.write(fd, view)
                view = view[n:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: str, data: bytes, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` so a crash leaves either the old or the new content."""
    tmp = path + ".tmp"
    write_file(tmp, data, fsync)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(os.path.dirname(path) or ".")


def _sum(data: bytes) -> bytes:
    return b"%08x" % zlib.crc32(data)


def write_meta_file(directory: str, data: bytes, name: str = "meta") -> None:
    """Write ``<name>.inf`` (the bytes) and ``<name>.sum`` (their checksum), crash-safely.

    Both temp files are written and fsynced before either rename; the data file is renamed
    first, so after a crash between the renames the pending ``.sum.tmp`` still vouches for it.
    """
    inf = os.path.join(directory, name + ".inf")
    sumf = os.path.join(directory, name + ".sum")
    write_file(sumf + ".tmp", _sum(data), True)
    write_file(inf + ".tmp", data, True)
    os.replace(inf + ".tmp", inf)
    os.replace(sumf + ".tmp", sumf)
    fsync_dir(directory)


def read_meta_file(directory: str, name: str = "meta") -> bytes | None:
    inf = os.path.join(directory, name + ".inf")
    try:
        with open(inf, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    expected = _sum(data)
    for candidate in (name + ".sum", name + ".sum.tmp"):
        with contextlib.suppress(FileNotFoundError), open(os.path.join(directory, candidate), "rb") as f:
            if f.read().strip() == expected:
                return data
    raise ErrCorruptRecord(f"{inf}: checksum mismatch")


def _load_malloc_trim() -> Callable[[int], int] | None:
    # The process's own symbols (dlopen(NULL)), libc's among them: ctypes.util.find_library would
    # run ``ldconfig -p`` in a subprocess at every start-up (a fork under load costs milliseconds).
    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
        return None
    return trim


_malloc_trim = _load_malloc_trim() if sys.platform.startswith("linux") else None


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the OS (glibc ``malloc_trim``). A recovery reads
    and frees tens of MiB of block and index buffers; glibc keeps such freed memory in the
    process, where it counts as resident memory for as long as the server runs."""
    if _malloc_trim is not None:
        _malloc_trim(0)
