"""Small durable-file helpers: atomic replace, directory fsync, checksummed metadata files."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import os
import sys
import threading
import zlib
from array import array
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, TypeAlias

from .base import ErrCorruptRecord

# What write_file takes: bytes-like, including the index's arrays (written without a copy).
Buffer: TypeAlias = "bytes | bytearray | memoryview | array[int]"


# Sealed-block descriptors (and, apart, block index files) a store keeps open at most: set at
# the first ask from the process's open-file limit (`open_fds_max`).
_OPEN_FDS_MAX = 0


def open_fds_max() -> int:
    """How many sealed blocks' files (and as many index files) a store keeps open: a 32nd of the
    process's soft ``RLIMIT_NOFILE``, from 32 to 512. A random get in a block whose file is not
    open pays an open and a close (~1.5 µs each under load): with 32, gets over 10M messages
    (62 blocks) paid them for one get in two, ~3 µs of their ~9 in process. nats-server (Go raises
    the soft limit to the hard one at start) opens a block's file when it loads the block."""
    global _OPEN_FDS_MAX
    if not _OPEN_FDS_MAX:
        try:
            import resource

            soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        except (ImportError, OSError, ValueError):
            soft = 1024
        if soft < 0:  # RLIM_INFINITY
            soft = 1 << 20
        _OPEN_FDS_MAX = max(32, min(512, soft // 32))
    return _OPEN_FDS_MAX


#: Whether small files rewritten in place again and again (a consumer's state slots and journal,
#: `consumer_store.FileConsumerStore`) stay open between writes (`HotFiles`). Off, every write
#: opens and closes its file; what is written is the same either way.
KEEP_HOT_FILES_OPEN = True
# How many such files one event-loop thread keeps open (the least recently written closed first).
HOT_FILES_MAX = 64


class HotFiles(threading.local):
    """The descriptors of the files written last in place by this thread's event loop, at most
    `HOT_FILES_MAX`, keyed by their owner and name: each owner writes under the paths it was
    given, so a new owner of a path (a consumer created again) never writes to an old inode.

    Why: an ack with a reply waits for its consumer's state write (issue #27), and opening the
    slot by its path (nine directories deep in a store) cost ~10 µs of the ~45 µs of that write
    in a serial ack round trip, the ``close`` ~2 µs more, the ``pwrite`` itself ~5. Only a thread
    running an event loop keeps files (`fd`); any other (the consumer-state writer thread, a
    restore) opens and closes each time, so whoever closes an owner (`drop`, in its loop) finds
    every descriptor it kept in this thread's table, and none is closed under another thread."""

    def __init__(self) -> None:
        self.fds: OrderedDict[tuple[object, str], int] = OrderedDict()

    def fd(self, owner: object, name: str, path: str) -> tuple[int, bool]:
        """A descriptor open for writing on ``path`` (created if missing), and whether it is
        kept (else the caller closes it)."""
        fds, key = self.fds, (owner, name)
        fd = fds.get(key)
        if fd is not None:  # (kept by this thread while it ran its loop: asked first, as
            fds.move_to_end(key)  # ``_get_running_loop`` costs a ``getpid`` system call each time)
            return fd, True
        if not KEEP_HOT_FILES_OPEN or asyncio._get_running_loop() is None:
            return os.open(path, os.O_WRONLY | os.O_CREAT, 0o644), False
        fd = fds[key] = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        if len(fds) > HOT_FILES_MAX:
            os.close(fds.popitem(last=False)[1])
        return fd, True

    def drop(self, owner: object, names: tuple[str, ...]) -> None:
        """Close what ``owner`` kept open under ``names`` in this thread (a failed write's file,
        or every file of a store that stops or goes)."""
        for name in names:
            fd = self.fds.pop((owner, name), None)
            if fd is not None:
                os.close(fd)


HOT_FILES = HotFiles()


def fsync_dir(path: str) -> None:
    """Make a directory's entries (creates, renames, unlinks) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_paths(files: list[str], dirs: list[str]) -> None:
    """fsync each file that still exists, one descriptor at a time, then each directory."""
    for path in files:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # removed since (the consumer was deleted): nothing to make durable
        try:
            os.fdatasync(fd)
        finally:
            os.close(fd)
    for d in dirs:
        with contextlib.suppress(FileNotFoundError):
            fsync_dir(d)


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


#: Whether `write_meta_file` swaps each temporary file with the file it replaces (`swap_into`)
#: rather than renaming it over it (``os.replace``, nats-server's ``writeAtomically``). Off, every
#: rewrite creates two files and removes two; the answers (what `read_meta_file` reads, after a
#: crash anywhere) are the same either way.
EXCHANGE_META = True


def _load_renameat2() -> Callable[[int, bytes, int, bytes, int], int] | None:
    """glibc's ``renameat2`` (2.28+), None elsewhere (then `swap_into` renames)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn: Callable[[int, bytes, int, bytes, int], int] = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    return fn


_renameat2 = _load_renameat2()
_AT_FDCWD: Final = -100
_RENAME_EXCHANGE: Final = 2
# A rename over the target is the answer to: no target yet (ENOENT), a file system or kernel
# without RENAME_EXCHANGE (EINVAL, ENOSYS, EOPNOTSUPP).
_RENAME_INSTEAD: Final = frozenset({errno.ENOENT, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP})


def swap_into(tmp: str, path: str) -> None:
    """Put the just-written ``tmp`` at ``path`` atomically, ``path``'s old content left at ``tmp``
    (Linux ``renameat2(RENAME_EXCHANGE)``), to be overwritten in place by the next rewrite.

    Why: a rename over ``path`` frees its old inode and the next rewrite allocates a new one for
    ``tmp``; on ext4 an inode freed less than a minute ago is not reused, and each allocation skips
    every such one (``recently_deleted`` in ``fs/ext4/ialloc.c``): rewriting the metadata of one
    consumer after another (``CONSUMER.PAUSE`` / resume, updates) cost 0.5-1.3 ms of system time a
    rewrite, growing with the rewrites of the last minute; swapped, 0.1-0.2 ms, no inode allocated
    or freed once the spare exists (measured on this machine, 2,000 rewrites among 100 and 10,000
    directories). The first rewrite (no ``path`` yet) and where the kernel or file system cannot
    swap fall back to the rename. Without fsync, ext4 orders the data before the swap as it does
    before a rename over a file (``auto_da_alloc`` treats the truncate of the spare as a replace)."""
    if _renameat2 is not None and EXCHANGE_META:
        if not _renameat2(_AT_FDCWD, os.fsencode(tmp), _AT_FDCWD, os.fsencode(path), _RENAME_EXCHANGE):
            return
        err = ctypes.get_errno()
        if err not in _RENAME_INSTEAD:
            raise OSError(err, os.strerror(err), tmp)
    os.replace(tmp, path)


#: Whether `write_meta_file` writes a new directory's first definition in place (the checksum first,
#: then the data: nothing to keep, so no temporary file and no rename). Off, it goes through the
#: temporary files as every rewrite does; what `read_meta_file` reads, after a crash anywhere, is the
#: same either way (tests/store/test_meta_fresh.py).
DIRECT_FRESH_META = True


def write_meta_file(
    directory: str, data: bytes, name: str = "meta", fsync: bool = True, fresh: bool = False
) -> None:
    """Write ``<name>.inf`` (the bytes) and ``<name>.sum`` (their checksum), crash-safely.

    ``fresh``: the caller made ``directory`` and wrote no definition in it yet. Then the two files
    are written where they go, the checksum first (`DIRECT_FRESH_META`), as nats-server's
    ``writeConsumerMeta`` writes a consumer's (``writeFileWithOptionalSync``, no rename): a crash
    between them leaves a checksum and no data, which `read_meta_file` reads as no definition at all
    (a consumer's directory without one is dropped at recovery: its create was never answered).
    Creating 10,000 consumers this way makes four file-system calls fewer each (two renames and the
    two exchanges that fail without a target), whose system time grows with the directory.

    Both temp files are written (and, with ``fsync``, fsynced) before either is put in place; the
    data file goes first, so after a crash between the two the pending ``.sum.tmp`` still vouches
    for it. Each is swapped in (`swap_into`): the temp files then hold the previous content, which
    `read_meta_file` never takes (the ``.sum.tmp`` it also tries is the old checksum, which the
    new data does not match) and the next write truncates. Without ``fsync`` the files reach the
    disk with the OS's writeback (or the caller's next sync), as nats-server's
    ``writeFileWithOptionalSync`` without ``sync: always``.
    """
    inf = os.path.join(directory, name + ".inf")
    sumf = os.path.join(directory, name + ".sum")
    if fresh and DIRECT_FRESH_META:
        write_file(sumf, _sum(data), fsync)
        write_file(inf, data, fsync)
    else:
        write_file(sumf + ".tmp", _sum(data), fsync)
        write_file(inf + ".tmp", data, fsync)
        swap_into(inf + ".tmp", inf)
        swap_into(sumf + ".tmp", sumf)
    if fsync:
        fsync_dir(directory)


def read_meta_file(directory: str, name: str = "meta") -> bytes | None:
    inf = os.path.join(directory, name + ".inf")
    try:
        with open(inf, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    expected = _sum(data)
    stored = b""
    for candidate in (name + ".sum", name + ".sum.tmp"):
        with contextlib.suppress(FileNotFoundError), open(os.path.join(directory, candidate), "rb") as f:
            got = f.read().strip()
            if got == expected:
                return data
            stored = stored or got
    # (nats-server's words, jetstream.go: 'Stream metafile %q: checksums do not match %q vs %q')
    raise ErrCorruptRecord(
        f'metafile "{inf}": checksums do not match "{stored.decode(errors="replace")}" vs "{expected.decode()}"'
    )


def _load_glibc() -> tuple[Callable[[int], int], Callable[[int, int], int]] | None:
    # The process's own symbols (dlopen(NULL)), libc's among them: ctypes.util.find_library would
    # run ``ldconfig -p`` in a subprocess at every start-up (a fork under load costs milliseconds).
    try:
        libc = ctypes.CDLL(None)
        trim: Callable[[int], int] = libc.malloc_trim
        mallopt: Callable[[int, int], int] = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to do
        return None
    return trim, mallopt


_glibc = _load_glibc() if sys.platform.startswith("linux") else None
_malloc_trim = _glibc[0] if _glibc is not None else None
_M_MMAP_THRESHOLD = -3
#: Allocations from this size on are mapped on their own (see :func:`map_large_buffers`).
LARGE_BUFFER = 1 << 20
_large_buffers_mapped = False


def map_large_buffers() -> None:
    """Give every allocation of `LARGE_BUFFER` or more its own mapping (glibc ``mallopt
    M_MMAP_THRESHOLD``), once per process. A store's index arrays grow by reallocation to tens
    of MiB and an active block's mirror to the block size; glibc's default raises its mapping
    threshold to the largest buffer freed so far, so after the first few growths they come
    from the heap, where each freed predecessor is left as a hole that stays resident (13 MiB
    more than the index itself for 1 M messages). Mapped, a realloc is an ``mremap`` (no copy)
    and a free goes back to the OS at once. Smaller buffers (socket reads) are unaffected."""
    global _large_buffers_mapped
    if _glibc is not None and not _large_buffers_mapped:
        _large_buffers_mapped = True
        _glibc[1](_M_MMAP_THRESHOLD, LARGE_BUFFER)


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the OS (glibc ``malloc_trim``). A recovery reads
    and frees tens of MiB of block and index buffers; glibc keeps such freed memory in the
    process, where it counts as resident memory for as long as the server runs."""
    if _malloc_trim is not None:
        _malloc_trim(0)


def remove_file(path: str, aside: str | None = None) -> None:
    """Unlink ``path``, or with ``aside`` rename it into that directory (for `remove_tree_later`);
    a file already gone is no error, and a rename that fails falls back to the unlink."""
    if aside is not None:
        try:
            os.rename(path, os.path.join(aside, os.path.basename(path)))
            return
        except FileNotFoundError:
            return
        except OSError:
            pass
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def remove_tree_later(path: str) -> None:
    """Remove a directory tree without waiting for it (nats-server ``fileStore.Delete``: the
    directory is renamed aside, then removed in the background): the tree is renamed at once to
    a hidden ``.<name>.deleted.<random>`` beside it (its name free again, no stream can be named
    so), which a thread removes; one a crash leaves behind goes at the next start
    (`remove_deleted_trees`). Removing thousands of consumer directories file by file would
    hold the event loop for seconds."""
    parent, name = os.path.split(path.rstrip(os.sep))
    aside = os.path.join(parent, f".{name}.deleted.{os.urandom(6).hex()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    except OSError:
        _rmtree(path)
        aside = ""
    with contextlib.suppress(OSError):
        fsync_dir(parent or ".")
    if aside:
        remove_in_background(aside)


def remove_in_background(path: str) -> None:
    """Remove a tree already renamed aside (a hidden ``….deleted.<random>`` name) in a thread."""
    threading.Thread(target=_rmtree, args=(path,), name="remove-tree", daemon=True).start()


def _rmtree(path: str) -> None:
    """``shutil.rmtree``, errors ignored; shutil imported on the first removal (it loads bz2 and
    lzma: a start that removes nothing does not pay for them)."""
    import shutil  # Deferred: start-up imports only what is used.

    shutil.rmtree(path, ignore_errors=True)


def remove_deleted_trees(directory: str) -> None:
    """At start: remove in the background what `remove_tree_later` left in ``directory``."""
    with contextlib.suppress(OSError):
        for entry in os.scandir(directory):
            if entry.name.startswith(".") and ".deleted." in entry.name and entry.is_dir():
                remove_in_background(entry.path)
