"""Store benchmark: append/read throughput against raw file I/O of the same bytes, and restart time.

Times are process CPU time (``time.process_time``: the store is single-threaded, and CPU time
stays steady when other work loads the machine); restarts are best of ``--rounds``.

    .venv/bin/python bench/bench_store.py [--msgs 200000] [--size 128] [--restart-msgs 1000000]

The "physical limit" baselines write and read exactly the bytes the file store put on disk:
``raw write/msg`` issues one write() per message (the syscall pattern of acknowledging each
publish once it is in the OS), ``raw buffered`` one big sequential write; reads are a plain
sequential read of the block files. Ratios are store/raw throughput (1.0 = as fast as raw).
Runs in well under two minutes; not part of the test suite.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from pyjetstream.server.jetstream.store import (
    ErrStoreEOF,
    FileStore,
    FileStoreConfig,
    MemoryStore,
    MessageStore,
    StoreConfig,
)


def timed(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def block_bytes(directory: str) -> bytes:
    msgs = Path(directory) / "msgs"
    return b"".join(p.read_bytes() for p in sorted(msgs.glob("*.blk"), key=lambda p: int(p.stem)))


def crash(store: FileStore) -> None:
    """Abandon a file store like kill -9 (fds closed, no snapshot)."""
    store.abandon()


class Report:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, str]] = []

    def add(self, name: str, n: int, seconds: float, nbytes: int, ratio: str = "") -> float:
        rate = n / seconds
        self.rows.append((name, rate, nbytes / seconds / 1e6, ratio))
        return rate

    def print(self) -> None:
        print(f"{'measurement':48} {'msgs/s':>12} {'MB/s':>9}  ratio")
        for name, rate, mbs, ratio in self.rows:
            print(f"{name:48} {rate:12,.0f} {mbs:9.1f}  {ratio}")
        self.rows.clear()


def bench_append_read(n: int, size: int, workdir: str) -> None:
    payload = os.urandom(size // 2) * 2
    subjects = [f"bench.s{i % 10}" for i in range(n)]
    rep = Report()

    def fill(store: MessageStore, batch: int = 0) -> None:
        if not batch:
            for subj in subjects:
                store.store_msg(subj, b"", payload)
            return
        for i in range(0, n, batch):
            with store.batch():
                for subj in subjects[i : i + batch]:
                    store.store_msg(subj, b"", payload)

    mem = MemoryStore(StoreConfig())
    t_mem = timed(lambda: fill(mem))

    fdir = os.path.join(workdir, "append")
    fs = FileStore(FileStoreConfig(fdir))
    t_file = timed(lambda: fill(fs))
    fs.stop()
    on_disk = block_bytes(fdir)
    rec = len(on_disk) // n

    bdir = os.path.join(workdir, "append-batch")
    fsb = FileStore(FileStoreConfig(bdir))
    t_batch = timed(lambda: fill(fsb, 256))
    fsb.stop()

    n_always = min(n, 2000)
    adir = os.path.join(workdir, "append-always")
    fsa = FileStore(FileStoreConfig(adir, sync="always"))
    t_always = timed(lambda: [fsa.store_msg(s, b"", payload) for s in subjects[:n_always]])
    fsa.stop()

    # Raw baselines over the same bytes.
    raw_path = os.path.join(workdir, "raw.dat")
    chunks = [on_disk[i : i + rec] for i in range(0, rec * n, rec)]

    def raw_per_msg(sync: bool, count: int) -> None:
        fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for c in chunks[:count]:
            os.write(fd, c)
            if sync:
                os.fdatasync(fd)
        os.close(fd)

    def raw_buffered() -> None:
        fd = os.open(raw_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        view = memoryview(on_disk)
        while view:
            view = view[os.write(fd, view[: 1 << 20]) :]
        os.close(fd)

    t_raw_msg = timed(lambda: raw_per_msg(False, n))
    t_raw_buf = timed(raw_buffered)
    t_raw_sync = timed(lambda: raw_per_msg(True, n_always))

    print(f"\n== append: {n:,} messages, {size} B payload, {rec} B per record on disk ==")
    r_msg = n / t_raw_msg
    r_buf = n / t_raw_buf
    rep.add("raw write() per message", n, t_raw_msg, rec * n)
    rep.add("raw buffered sequential write (physical limit)", n, t_raw_buf, rec * n)
    rate = rep.add("file store_msg (sync interval)", n, t_file, rec * n)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_msg:.2f} of write/msg, {rate / r_buf:.2f} of buffered")
    rate = rep.add("file store_msg in batch(256)", n, t_batch, rec * n)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_buf:.2f} of buffered")
    rate = rep.add("memory store_msg", n, t_mem, rec * n)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_buf:.2f} of buffered")
    r_sync = rep.add("raw write()+fdatasync per message", n_always, t_raw_sync, rec * n_always)
    rate = rep.add("file store_msg (sync always)", n_always, t_always, rec * n_always)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_sync:.2f} of write+fdatasync")
    rep.print()

    # Reads: a fresh open (snapshot) so sealed blocks come from the page cache, not the mirror.
    print(f"\n== read: {n:,} messages ==")
    fs = FileStore(FileStoreConfig(fdir))

    def raw_read() -> None:
        for p in sorted((Path(fdir) / "msgs").glob("*.blk")):
            with open(p, "rb", buffering=0) as f:
                while f.read(256 * 1024):
                    pass

    def seq_load(store: MessageStore) -> None:
        for seq in range(1, n + 1):
            store.load_msg(seq)

    def filtered(store: MessageStore) -> int:
        seq, got = 0, 0
        while True:
            try:
                _, seq = store.load_next_msg("bench.s3", seq + 1)
            except ErrStoreEOF:
                return got
            got += 1

    t_raw_read = timed(raw_read)
    t_load = timed(lambda: seq_load(fs))
    t_filtered = timed(lambda: filtered(fs))
    t_mem_load = timed(lambda: seq_load(mem))
    r_read = rep.add("raw sequential read of the block files", n, t_raw_read, rec * n)
    rate = rep.add("file load_msg, sequential", n, t_load, rec * n)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_read:.2f} of raw read")
    rate = rep.add("file load_next_msg filter 1-of-10 (per match)", n // 10, t_filtered, rec * n // 10)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_read:.2f} of raw read")
    rate = rep.add("memory load_msg, sequential", n, t_mem_load, rec * n)
    rep.rows[-1] = (*rep.rows[-1][:3], f"{rate / r_read:.2f} of raw read")
    rep.print()
    fs.stop()
    mem.stop()


def bench_restart(n: int, workdir: str, rounds: int) -> None:
    print(f"\n== restart with {n:,} stored messages (64 B payload, 100 subjects) ==")
    d = os.path.join(workdir, "restart")
    fs = FileStore(FileStoreConfig(d))
    payload = b"p" * 64

    def fill() -> None:
        for i in range(0, n, 1000):
            with fs.batch():
                for j in range(i, min(n, i + 1000)):
                    fs.store_msg(f"r.{j % 100}", b"", payload)

    t_fill = timed(fill)
    holder: list[FileStore] = []

    def reopen() -> FileStore:
        fs = holder.pop()
        assert fs.state().msgs == n
        return fs

    t_stop = t_snap = t_scan = t_scan_all = float("inf")
    for _ in range(rounds):
        t_stop = min(t_stop, timed(fs.stop))
        t_snap = min(t_snap, timed(lambda: holder.append(FileStore(FileStoreConfig(d)))))
        fs = reopen()
        crash(fs)
        t_scan = min(t_scan, timed(lambda: holder.append(FileStore(FileStoreConfig(d)))))
        fs = reopen()
        crash(fs)
        for idx in (Path(d) / "msgs").glob("*.idx"):
            idx.unlink()  # no block index: every block is scanned, record by record
        t_scan_all = min(t_scan_all, timed(lambda: holder.append(FileStore(FileStoreConfig(d)))))
        fs = reopen()
    fs.stop()
    raw_bytes = sum(p.stat().st_size for p in (Path(d) / "msgs").glob("*.blk"))
    t_raw = timed(lambda: block_bytes(d))
    print(f"fill (batched appends)                 {t_fill:7.2f} s  ({n / t_fill:,.0f} msgs/s)")
    print(f"clean stop (writes index snapshot)     {t_stop:7.2f} s")
    print(f"open after clean stop (snapshot)       {t_snap:7.2f} s")
    print(f"open after crash (block indexes)       {t_scan:7.2f} s")
    print(f"open after crash, every block scanned  {t_scan_all:7.2f} s  ({n / t_scan_all:,.0f} records/s)")
    print(f"raw read of the {raw_bytes / 1e6:.0f} MB of blocks          {t_raw:7.2f} s")
    print(
        f"ratio to raw-read time: crash {t_scan / t_raw:.1f}x, every block scanned {t_scan_all / t_raw:.1f}x,"
        f" snapshot {t_snap / t_raw:.2f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--msgs", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--restart-msgs", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3, help="restarts: best of this many")
    ap.add_argument("--dir", default=None, help="work directory (default: a temp dir, removed)")
    args = ap.parse_args()
    workdir = args.dir or tempfile.mkdtemp(prefix="bench-store-")
    try:
        t0 = time.perf_counter()
        bench_append_read(args.msgs, args.size, workdir)
        bench_restart(args.restart_msgs, workdir, args.rounds)
        print(f"\ntotal {time.perf_counter() - t0:.1f} s")
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
