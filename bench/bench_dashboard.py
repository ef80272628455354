"""The dashboard's two promises (issue 29), measured outside the suite.

Run: ``.venv/bin/python bench/bench_dashboard.py [--msgs N] [--subjects N] [--keys N] [--skip-paging]
[--skip-overhead]``.

- paging: an embedded server with a stream of ``--msgs`` messages (10 M by default) over 1000
  subjects, a stream of ``--subjects`` subjects (100k) and a KV bucket of ``--keys`` keys (100k);
  each page the dashboard asks for (first, middle, last, by time, filtered, subjects, keys, a key's
  history) is fetched over HTTP as the page fetches it, 5 times; the median and worst milliseconds
  of each, against the 200 ms a page may take. The streams are filled through their stores
  (``store_run`` on the server's loop: a client would take minutes to publish 10 M messages; what
  is measured is reading).
- overhead: ``pyjetstream serve`` without ``-m``, with ``-m`` (nobody looking), and with ``-m`` and
  a dashboard open (the overview's and a stream's live views connected), measured in turns: the raw
  pipelined pub→sub rate of ``bench_core.py`` and the server's CPU µs per message (``/proc``). The
  ratios to "without -m" are what count: the dashboard runs nothing until a page asks.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pyjetstream as pjs
from bench_core import RunningServer, _cpu_seconds, bench_raw_pub_sub
from pyjetstream.server.thread import ServerThread
from pyjetstream.testing.process import server_command, start_on_loopback

RUN = 10_000


def _fill(thread: ServerThread, stream: str, subjects: list[str], count: int, payload: bytes) -> None:
    """``count`` messages cycling over ``subjects``, stored through the stream's store on its loop."""

    async def fill() -> None:
        store = thread.server.accounts["$G"].jetstream.streams[stream].store
        done, n = 0, len(subjects)
        while done < count:
            k = min(RUN, count - done)
            store.store_run([subjects[(done + i) % n] for i in range(k)], [b""] * k, [payload] * k)
            done += k
            await asyncio.sleep(0)

    thread.call(fill, timeout=3600)


def _time_get(url: str, repeat: int = 5) -> tuple[float, float, int]:
    times, size = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as resp:
            body = resp.read()
        times.append((time.perf_counter() - start) * 1000)
        size = len(body)
    return statistics.median(times), max(times), size


def paging(args: argparse.Namespace) -> list[tuple[str, float, float, int]]:
    tmp = tempfile.mkdtemp(prefix="bench-dash-")
    thread = ServerThread(jetstream=True, store_dir=tmp, port=-1, http_port=-1, host="127.0.0.1")
    thread.start()
    try:
        with pjs.sync.connect(thread.url) as nc:
            js = nc.jetstream()
            mem = pjs.StorageType.MEMORY
            js.create_stream(pjs.StreamConfig(name="BIG", subjects=["big.>"], storage=mem))
            js.create_stream(pjs.StreamConfig(name="WIDE", subjects=["wide.>"], storage=mem))
            js.create_key_value(pjs.KeyValueConfig(bucket="keys", storage=mem))
        started = time.perf_counter()
        _fill(thread, "BIG", [f"big.{i}" for i in range(1000)], args.msgs, b"x" * 64)
        _fill(thread, "WIDE", [f"wide.{i}" for i in range(args.subjects)], args.subjects, b"{}")
        _fill(thread, "KV_keys", [f"$KV.keys.key{i}" for i in range(args.keys)], args.keys, b"value")
        print(f"filled in {time.perf_counter() - started:.0f} s", flush=True)
        api = f"http://127.0.0.1:{thread.http_port}/dashboard/api/"
        with urllib.request.urlopen(f"{api}messages?stream=BIG&limit=1&seq={args.msgs // 2}") as resp:
            mid_time = urllib.parse.quote(json.loads(resp.read())["messages"][0]["time"])
        cases = {
            f"{args.msgs:,} msgs: first page (50)": "messages?stream=BIG&limit=50",
            "... middle page by sequence": f"messages?stream=BIG&limit=50&seq={args.msgs // 2}",
            "... last page": "messages?stream=BIG&limit=50&dir=prev",
            "... page by time (middle)": f"messages?stream=BIG&limit=50&time={mid_time}",
            "... filtered big.7 from the middle": f"messages?stream=BIG&limit=50&filter=big.7&seq={args.msgs // 2}",
            "... filtered big.7, last page": "messages?stream=BIG&limit=50&filter=big.7&dir=prev",
            "... stream info": "stream?stream=BIG",
            f"{args.subjects:,} subjects: first page (100)": "subjects?stream=WIDE&limit=100",
            "... middle page (cursor)": f"subjects?stream=WIDE&limit=100&after={args.subjects // 2}",
            "... wildcard filter wide.* (whole match)": "subjects?stream=WIDE&limit=100&filter=wide.*",
            "... literal filter": "subjects?stream=WIDE&limit=100&filter=wide.77",
            f"{args.keys:,} keys: first page (50)": "kv_keys?bucket=keys&limit=50",
            "... middle page": f"kv_keys?bucket=keys&limit=50&after={args.keys // 2}",
            "... a key's history": "kv_history?bucket=keys&key=key777",
            "streams list": "streams",
            "overview": "overview",
        }
        return [(name, *_time_get(api + path)) for name, path in cases.items()]
    finally:
        thread.stop()
        shutil.rmtree(tmp, ignore_errors=True)


class _Watcher:
    """A dashboard left open: the overview's and a stream's server-sent events, read as a browser does."""

    def __init__(self, base: str) -> None:
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._read, args=(base + path,), daemon=True)
                        for path in ("/dashboard/api/events?view=rates", "/dashboard/api/events?view=overview")]  # fmt: skip
        for t in self.threads:
            t.start()

    def _read(self, url: str) -> None:
        with urllib.request.urlopen(url, timeout=60) as resp:
            while not self.stop.is_set() and resp.readline():
                pass


def _start(monitor: bool) -> tuple[RunningServer, str]:
    workdir = Path(tempfile.mkdtemp(prefix="bench-dash-"))
    cmd = [*server_command("embedded"), *(["-m", "-1"] if monitor else [])]
    process, url = start_on_loopback(cmd, workdir)
    base = ""
    if monitor:
        ports = json.loads(next((workdir / "ports").glob("*.ports")).read_text())
        base = ports["monitoring"][0].replace("0.0.0.0", "127.0.0.1")
    return RunningServer("embedded", process, url, workdir), base


def overhead(args: argparse.Namespace) -> dict[str, list[tuple[float, float]]]:
    configs = {
        "no -m": (False, False),
        "-m, nobody looking": (True, False),
        "-m, dashboard open": (True, True),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in configs}
    running = {name: _start(monitor) for name, (monitor, _) in configs.items()}
    watcher = _Watcher(running["-m, dashboard open"][1])
    try:
        for _ in range(args.rounds):
            for name, (server, _) in running.items():
                before = _cpu_seconds(server.process.pid)
                rate = bench_raw_pub_sub(server.port, args.count)
                cpu = (_cpu_seconds(server.process.pid) - before) / args.count * 1e6
                results[name].append((rate, cpu))
    finally:
        watcher.stop.set()
        for server, _ in running.values():
            server.process.stop()
            shutil.rmtree(server.workdir, ignore_errors=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--msgs", type=int, default=10_000_000)
    parser.add_argument("--subjects", type=int, default=100_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--count", type=int, default=200_000, help="messages per overhead run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-paging", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    print(f"load average before: {Path('/proc/loadavg').read_text().split()[:3]}")
    if not args.skip_paging:
        print(f"\n{'page':48} {'median ms':>10} {'worst ms':>10} {'bytes':>9}")
        for name, median, worst, size in paging(args):
            flag = "" if worst < 200 else "  > 200 ms"
            print(f"{name:48} {median:10.1f} {worst:10.1f} {size:9,}{flag}")
    if not args.skip_overhead:
        results = overhead(args)
        base_rate = max(r for r, _ in results["no -m"])
        base_cpu = min(c for _, c in results["no -m"])
        print(f"\n{'server':24} {'best msgs/s':>12} {'ratio':>6} {'best CPU µs/msg':>16} {'ratio':>6}")
        for name, runs in results.items():
            rate, cpu = max(r for r, _ in runs), min(c for _, c in runs)
            print(f"{name:24} {rate:12,.0f} {rate / base_rate:6.2f} {cpu:16.2f} {cpu / base_cpu:6.2f}")
    print(f"\nload average after: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    main()
