"""``pyjetstream bench pub|sub|js-pub|js-consume|kv``: throughput and latency, as ``nats bench``.

Each benchmark runs against the server (``-s``/``NATS_URL``) and, with ``--compare URL``, the same
way against a second server right after, printing both and the ratio of their message rates
(first ÷ second) — how this project states speed: a ratio against nats-server in one run.
Progress bars go to stderr on a terminal; the results table (msgs/s, MB/s, latency p50/p90/p99/max)
to stdout, or JSON with ``--json``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from pyjetstream.cli.app import Command, Group, Session
from pyjetstream.cli.errors import UsageError

__all__ = ["GROUP", "main"]

DEFAULT_SUBJECT = "pyjetstream.bench"


def main(argv: Sequence[str]) -> int:
    return GROUP.main(argv)


def _arguments(kind: str) -> Any:
    def configure(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "subject", nargs="?", default=DEFAULT_SUBJECT, help=f"subject to use (default {DEFAULT_SUBJECT})"
        )
        p.add_argument("--msgs", type=int, default=100_000, help="number of messages (default 100000)")
        p.add_argument("--size", default="128", metavar="SIZE", help="message size in bytes (default 128)")
        p.add_argument("--compare", metavar="URL", help="run the same benchmark against this server too")
        p.add_argument("--no-progress", action="store_true", help="no progress bars")
        if kind in ("pub", "sub", "kv"):
            p.add_argument(
                "--clients", type=int, default=1, help="concurrent publishers/subscribers (default 1)"
            )
        if kind in ("js-pub", "js-consume", "kv"):
            p.add_argument(
                "--storage", choices=["file", "memory"], default="memory", help="storage (default memory)"
            )
            p.add_argument("--keep", action="store_true", help="keep the stream/bucket the benchmark created")
        if kind in ("js-pub", "js-consume"):
            p.add_argument("--stream", default="benchstream", help="stream to use (default benchstream)")
        if kind == "js-pub":
            p.add_argument(
                "--window", type=int, default=256, help="acks in flight when pipelining (default 256)"
            )
            p.add_argument("--sync", action="store_true", help="wait for each ack before the next publish")
        if kind == "js-consume":
            p.add_argument("--batch", type=int, default=500, help="messages per fetch (default 500)")
            p.add_argument(
                "--ack", action=argparse.BooleanOptionalAction, default=True, help="acknowledge (default)"
            )
        if kind == "kv":
            p.add_argument("--bucket", default="benchbucket", help="bucket to use (default benchbucket)")
            p.add_argument("--keys", type=int, default=100, help="distinct keys (default 100)")

    return configure


def _options(session: Session, args: argparse.Namespace) -> Any:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.bench_work import BenchOptions
    from pyjetstream.cli.values import parse_size

    size = parse_size(args.size, what="--size")
    checks = [
        (args.msgs >= 1, "--msgs must be at least 1"),
        (size >= 0, "--size must not be negative"),
        (getattr(args, "clients", 1) >= 1, "--clients must be at least 1"),
        (getattr(args, "window", 1) >= 1, "--window must be at least 1"),
        (getattr(args, "batch", 1) >= 1, "--batch must be at least 1"),
        (getattr(args, "keys", 1) >= 1, "--keys must be at least 1"),
    ]
    for ok, message in checks:
        if not ok:
            raise UsageError(message)
    return BenchOptions(
        subject=args.subject,
        msgs=args.msgs,
        size=size,
        clients=getattr(args, "clients", 1),
        stream=getattr(args, "stream", "benchstream"),
        bucket=getattr(args, "bucket", "benchbucket"),
        storage=getattr(args, "storage", "memory"),
        window=getattr(args, "window", 256),
        batch=getattr(args, "batch", 500),
        keys=getattr(args, "keys", 100),
        sync=getattr(args, "sync", False),
        ack=getattr(args, "ack", True),
        keep=getattr(args, "keep", False),
        timeout=session.timeout,
    )


def _handler(kind: str) -> Any:
    async def handler(session: Session, args: argparse.Namespace) -> int:
        return await run_bench(kind, session, args)

    return handler


async def run_bench(kind: str, session: Session, args: argparse.Namespace) -> int:
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.bench_work import run_workload, total_work
    from pyjetstream.cli.output import progress_bar

    options = _options(session, args)
    targets = [session.url] + ([args.compare] if args.compare else [])
    results: list[Any] = []
    progress = progress_bar(not (args.no_progress or session.json), "count")
    try:
        for url in targets:
            advance = _advance(progress, f"{kind} {url}", total_work(kind, options))
            results += await run_workload(kind, lambda u: session.connect(u), url, options, advance)
    finally:
        if progress is not None:
            progress.stop()
    ratios = _ratios(results, targets) if args.compare else []
    if session.json:
        # Deferred: CLI start-up speed (loaded only when this command runs).
        from pyjetstream.cli.output import print_json

        print_json(
            {
                "benchmark": kind,
                "msgs": options.msgs,
                "size": options.size,
                "results": [r.to_json() for r in results],
                "ratios": ratios,
            }
        )
    else:
        _print_results(kind, options, results, ratios, targets)
    return 0


def _advance(progress: Any, label: str, total: int) -> Any:
    if progress is None:
        return lambda _n: None
    task = progress.add_task(label, total=total)
    return lambda n: progress.advance(task, n)


def _ratios(results: list[Any], targets: list[str]) -> list[dict[str, Any]]:
    """For each benchmark row name: first target's msgs/s ÷ second's (summed over clients)."""
    rates: dict[tuple[str, str], float] = {}
    for r in results:
        rates[(r.name, r.target)] = rates.get((r.name, r.target), 0.0) + r.msgs_per_sec
    out = []
    for name in dict.fromkeys(r.name for r in results):
        a, b = rates.get((name, targets[0]), 0.0), rates.get((name, targets[1]), 0.0)
        out.append(
            {"name": name, "ratio": round(a / b, 3) if b else None, "first": targets[0], "second": targets[1]}
        )
    return out


def _print_results(
    kind: str, o: Any, results: list[Any], ratios: list[dict[str, Any]], targets: list[str]
) -> None:
    """A table narrow enough for an 80-column terminal: servers as A/B with a legend when comparing,
    the run's settings in the title, latency percentiles in one column."""
    # Deferred: CLI start-up speed (loaded only when this command runs).
    from pyjetstream.cli.bench_work import describe_options
    from pyjetstream.cli.output import print_table

    compare = len(targets) > 1
    label = {url: "AB"[i] for i, url in enumerate(targets)}

    def latency(r: Any) -> str:
        if not r.latencies_ns:
            return "-"
        values = [r.percentile_us(p) for p in (50, 90, 99)] + [max(r.latencies_ns) / 1000]
        if max(values) >= 10_000:
            return " / ".join(f"{v / 1000:.1f}" for v in values) + " ms"
        return " / ".join(f"{v:.0f}" for v in values) + " µs"

    rows = []
    for r in results:
        name = r.name + (f" #{r.client}" if r.client and o.clients > 1 else "")
        row = [name + (f" ({r.note})" if r.note else "")]
        if compare:
            row.append(label[r.target])
        row += [f"{r.msgs:,}", f"{r.msgs_per_sec:,.0f}", f"{r.mb_per_sec:,.2f}", latency(r)]
        rows.append(row)
    columns = [
        "Benchmark",
        *(["Server"] if compare else []),
        "Msgs",
        "Msgs/s",
        "MB/s",
        "Latency p50/p90/p99/max",
    ]
    justify = ["left", *(["center"] if compare else []), "right", "right", "right", "right"]
    where = "" if compare else f" on {targets[0]}"
    print_table(f"bench {kind}{where}: {describe_options(kind, o)}", columns, rows, justify=justify)
    if compare:
        for url in targets:
            print(f"  {label[url]} = {url}")
    for ratio in ratios:
        value = f"{ratio['ratio']:.2f}x" if ratio["ratio"] is not None else "n/a"
        print(f"{ratio['name']}: msgs/s A ÷ B = {value}")


GROUP = Group(
    "pyjetstream bench",
    "benchmark core NATS, JetStream and KV (optionally side by side with a second server)",
    [
        Command("pub", "core NATS publish throughput", _handler("pub"), _arguments("pub")),
        Command(
            "sub",
            "core NATS publish → subscribers: throughput and latency",
            _handler("sub"),
            _arguments("sub"),
        ),
        Command(
            "js-pub",
            "JetStream publish: throughput and ack latency",
            _handler("js-pub"),
            _arguments("js-pub"),
        ),
        Command(
            "js-consume",
            "JetStream pull consumer: throughput and fetch latency",
            _handler("js-consume"),
            _arguments("js-consume"),
        ),
        Command("kv", "key-value put and get: throughput and latency", _handler("kv"), _arguments("kv")),
    ],
)
