"""``pyjetstream serve``: run the server from nats-server's flags and config file, like nats-server.

Logs as nats-server does (``-D``/``-V``/``-l``), writes the pid and ports files, and acts on
nats-server's signals (``server/signal.go`` ``handleSignal``): SIGINT and SIGTERM shut down
gracefully (clients drained, JetStream stopped) with exit code 0 — SIGTERM not while in lame duck
mode —, SIGHUP reloads the configuration (the file read again, the command line's flags over it),
SIGUSR1 reopens the log file, SIGUSR2 enters lame duck mode. ``--signal`` sends them. Uses uvloop
when it is installed.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli import generated_code, module_paths
from pyjetstream.cli.serve_args import ServeArgsExit, parse_serve_args, reload_serve_args
from pyjetstream.server.log import configure_logging, reopen_log_file
from pyjetstream.server.options import ServerOptions
from pyjetstream.server.thread import new_event_loop

__all__ = ["main", "raise_open_files", "serve", "tune_gc"]


# The signals serve acts on, with the names Go's os.Signal prints in nats-server's "Trapped" line.
# nats-server's signal.Notify (in NewServer, before Start) makes Go deliver them whatever the
# process inherited: an ignored disposition (a shell's `cmd &`, nohup) is replaced and the signal
# is unblocked — else SIGHUP, SIGUSR1 and SIGUSR2 would keep their default action and kill the
# process. asyncio's add_signal_handler replaces the disposition; the mask is unblocked here —
# both before the server starts, so a signal sent during start-up is kept for after it.
SIGNAL_NAMES = {
    signal.SIGINT: "interrupt",
    signal.SIGTERM: "terminated",
    signal.SIGHUP: "hangup",
    signal.SIGUSR1: "user defined signal 1",
    signal.SIGUSR2: "user defined signal 2",
}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

# The serve process's collector thresholds (CPython's defaults are 700, 10, 10), see `tune_gc`: the
# young generation's size, the young collections per middle one, the middle ones per full one.
GC_YOUNG = 10_000
GC_MIDDLE = 1
GC_OLD = 50


def tune_gc() -> bool:
    """Tune CPython's cyclic collector for a process that is only this server (``pyjetstream serve``;
    a server embedded in an application leaves the application's collector alone).

    Why: a full (oldest generation) collection walks every tracked object — every subscription,
    trie node, consumer and stream the server holds — so with 100,000 subscriptions most of a
    SUB's cost was full collections (~9 of 11 µs, measured with ``gc.callbacks``). Two measured
    changes: the objects there before the server starts (modules, classes, the configuration,
    ~30,000; not the streams it recovers, which may be deleted) are frozen out of every later
    collection (``gc.freeze``: they live as long as the process), and the young generation holds
    ``GC_YOUNG`` objects instead of 700, so a full collection is considered every ~1,000,000 net
    allocations instead of ~70,000 (CPython still waits until the objects kept since the last one
    are a quarter of those it holds). And the middle generation is collected after every other
    young collection (``GC_MIDDLE``; ``GC_OLD`` of them per full one keeps that ~1,000,000): it
    then holds the survivors of two young collections, still in the CPU's caches, where ten of
    them (~100,000 objects, tens of MB) made each survivor a cache miss to visit — with 100,000
    subscriptions a SUB's middle collections cost ~0.6 µs, now ~0.3 (each object kept is visited
    there once either way). Reference counting frees everything as before; only garbage
    in reference cycles waits longer (at most those allocations). nats-server's Go collector runs
    beside its goroutines. ``PYJETSTREAM_GC=default`` keeps CPython's settings. Returns whether
    it tuned.

    No collection comes first: among the objects of a start-up (~30,000) a full collection found
    a handful of garbage and cost ~7 ms, a tenth of the start; those few stay frozen."""
    if os.environ.get("PYJETSTREAM_GC", "") == "default":
        return False
    gc.freeze()
    gc.set_threshold(GC_YOUNG, GC_MIDDLE, GC_OLD)
    return True


# glibc mallopt parameters (malloc.h) and the values set.
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
MALLOC_TRIM = 64 << 20
MALLOC_MMAP = 16 << 20
MALLOC_TOP_PAD = 64 << 20


def tune_malloc() -> bool:
    """Keep large buffers' memory in the process (``pyjetstream serve`` only, glibc only).

    Why: each read of large payloads makes buffers of 256 KiB and more (the read, the parser's
    joined buffer, the payload slices, a subscriber's output), above glibc's mmap threshold or
    its heap-trim threshold: freed, they went back to the kernel and the next one faulted its
    pages in again (0.25-0.9 minor faults per 16 KiB message). With allocations up to
    ``MALLOC_MMAP`` served from the heap and up to ``MALLOC_TRIM`` of free heap kept, 0-0.15, and
    server CPU per message of bench_shapes' mixed payloads 8.8-9.1 -> 7.1 µs (16 KiB: 8.4 ->
    8.2-8.4; interleaved, load ~14). And a file store's active block (its bytes mirrored in a
    ``bytearray`` growing by reallocation to the 8 MiB block) written with large records kept
    landing on fresh pages while the heap grew by glibc's 128 KiB top pad: one minor fault per
    4 KiB written (32 per 128 KiB record of an object put; 82% in ``memmove``, the reallocation's
    copy). With the heap grown ``MALLOC_TOP_PAD`` at a time, 2.3 a record, and ``store_msg`` of
    128 KiB records 270-320 -> 165-245 µs of CPU (in process, alternating, load ~4). Go's allocator
    (nats-server) keeps freed spans as well and returns them minutes later.
    ``PYJETSTREAM_MALLOC=default`` keeps glibc's settings. Returns whether it tuned."""
    if os.environ.get("PYJETSTREAM_MALLOC", "") == "default" or not sys.platform.startswith("linux"):
        return False
    import ctypes  # Deferred: CLI start-up speed (loaded only when this command runs).

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    return (
        bool(mallopt(M_MMAP_THRESHOLD, MALLOC_MMAP))
        and bool(mallopt(M_TRIM_THRESHOLD, MALLOC_TRIM))
        and bool(mallopt(M_TOP_PAD, MALLOC_TOP_PAD))
    )


def raise_open_files() -> bool:
    """Raise the soft open-file limit to the hard one (``pyjetstream serve`` only), as Go's runtime
    does at every start since Go 1.19 (``os/rlimit.go``), so nats-server can hold as many
    connections, block files and consumer files as the hard limit allows. Many systems start
    processes with a soft limit of 1,024 (or 256) and a hard one of hundreds of thousands: a
    thousand clients, or a store keeping its blocks open (`_fileutil.open_fds_max`), would
    otherwise meet ``EMFILE`` where nats-server does not. The event loop polls with epoll, not
    select, so no descriptor limit of ``select`` applies. Returns whether it raised it."""
    try:
        import resource  # Deferred: CLI start-up speed (loaded only when this command runs).

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == hard:
            return False
        if hard == resource.RLIM_INFINITY and sys.platform == "darwin":
            hard = 10_240  # OPEN_MAX: macOS refuses more for RLIMIT_NOFILE (Go caps it the same)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, OSError, ValueError):
        return False
    return True


class _Signals:
    """What each signal does to the running server (nats-server ``handleSignal``)."""

    def __init__(self, server: Any, argv: Sequence[str]) -> None:
        self.server = server
        self.argv = list(argv)
        self.loop = asyncio.get_running_loop()
        self.early: list[int] = []  # received while the server was starting
        self.tasks: set[asyncio.Task[None]] = set()

    def install(self) -> None:
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, set(SIGNAL_NAMES))
        for signum in SIGNAL_NAMES:
            self.loop.add_signal_handler(signum, self.on_signal, signum)

    def on_signal(self, signum: int) -> None:
        self.server.logger.info('Trapped "%s" signal', SIGNAL_NAMES[signal.Signals(signum)])
        if self.server.running:
            self.act(signum)
        else:
            self.early.append(signum)

    def started(self) -> None:
        for signum in self.early:
            self.act(signum)
        self.early.clear()

    def act(self, signum: int) -> None:
        server = self.server
        if signum == signal.SIGINT or (signum == signal.SIGTERM and not server.ldm):
            self._spawn(server.shutdown())
        elif signum == signal.SIGUSR1:
            reopen_log_file(server.options)
        elif signum == signal.SIGUSR2:
            self._spawn(server.lame_duck_mode())
        elif signum == signal.SIGHUP:
            self._spawn(self.reload())

    async def reload(self) -> None:
        """nats-server ``Reload``; what cannot be reloaded is logged, the server goes on as it was."""
        # Deferred: only a reload needs its errors.
        from pyjetstream.server.reload import ReloadError

        try:
            await self.server.reload(reload_serve_args(self.argv))
        except (ReloadError, ValueError, OSError) as exc:
            self.server.logger.error("Failed to reload server configuration: %s", exc)

    def _spawn(self, work: Any) -> None:
        task = self.loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def serve(options: ServerOptions, argv: Sequence[str] = ()) -> int:
    """Run a server until a signal stops it; ``argv`` (serve's command line) is what a reload
    reads the configuration with."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.server.server import Server

    server = Server(options)
    signals = _Signals(server, argv)
    signals.install()
    tune_gc()
    gc.enable()  # (the command paused it while it imported the server: `pyjetstream.cli.main`)
    tune_malloc()
    raise_open_files()
    try:
        await server.start()
    except OSError as exc:
        server.logger.critical("Error listening on port: %s:%d, %s", options.host, options.port, exc)
        return 1
    signals.started()
    generated_code.save()  # (what this start compiled, for the next one; again at the end for later imports)
    module_paths.save()  # (where this start found its modules)
    module_paths.done()  # (later imports look in the directories as they are then)
    try:
        await server.wait_closed()
    finally:
        generated_code.save()
        module_paths.save()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        options = parse_serve_args(args, prog="pyjetstream")
    except ServeArgsExit as exc:
        return exc.emit()
    configure_logging(options)
    loop = new_event_loop()
    try:
        return loop.run_until_complete(serve(options, args))
    except Exception as exc:  # a start-up failure nats-server would log as fatal
        # Deferred: CLI start-up speed (loaded only when this command runs).
        import logging

        logging.getLogger("pyjetstream.server").critical("%s", exc)
        return 1
    finally:
        loop.close()
