"""Message shapes no other benchmark names: the embedded server against nats-server 2.15.1, raw sockets.

    .venv/bin/python bench/bench_shapes.py [--quick] [--rounds 3] [--only wildcards,queue] [--json out.json]

Issue #25's table: each shape's throughput (msgs/s, wall clock, best of ``--rounds``, the two servers
alternating) and the server's CPU per message (user + system from ``/proc/<pid>/stat`` around the run,
best of the rounds — the steady figure on a shared machine), as ratios ours / nats-server. The clients
are raw sockets (``bench/rawnats.py``: frames counted with ``bytes.count``, replies and acks found with
a regex) so the server, not the client, is the bottleneck. The shapes (the "per" column of the table
says what one message is):

- ``wildcards``: two subscribers, ``a.*.x`` and ``a.>``, publishes cycling over 500 subjects ``a.<i>.x``
  (each message delivered twice);
- ``queue``: a queue group of 4 subscribers (each message delivered once);
- ``fanout``: 4 subscribers on one subject (each message delivered four times);
- ``reqrep``: request/reply, 200 requests in flight, each with its own reply subject ``_INBOX.r.<n>``,
  a raw responder answering each (per request: two routed messages);
- ``mixed``: payloads cycling 16 B … 64 KiB (mean ≈ 14 KiB) to one subscriber;
- ``16k``: 16 KiB payloads to one subscriber;
- ``js_msgid``: JetStream publishes (file stream) with ``Nats-Msg-Id`` over 1,000 subjects, 1,000 in flight;
- ``js_headers``: JetStream publishes with other headers (``Content-Type``, ``X-Trace-Id``) over
  10,000 subjects, 1,000 in flight;
- ``push_wild`` / ``pull_wild``: a push (ack none) or pull (batches of 1,000, two in flight, ack none)
  consumer filtered on ``pc.*.x`` over a stream of 1,000 subjects where half the messages match (per
  delivered message);
- ``push_all``: the push consumer filtered on ``pc.>``, which every message matches (nats-server then
  reads the stream as if unfiltered);
- ``pull_ack_wild``: the pull consumer with explicit acks, each message acked (``+ACK``) as it arrives.

Targets flagged (issue #25): throughput ≥ 0.8× nats-server's, server CPU per message ≤ 2× nats-server's.
Not part of the test suite; ``bench/run_all.sh`` runs it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rawnats import (
    EMBEDDED,
    NATS_SERVER,
    RawConn,
    Target,
    header_block,
    load_average,
    pub_frame,
    publish_window,
    server_cpu,
    servers,
    stop_on_signals,
)

P16 = b"x" * 16
MIXED_SIZES = (16, 100, 1000, 4000, 16384, 65536)
TARGET_RATE, TARGET_CPU = 0.8, 2.0


@dataclass
class Closing:
    """Something to do when a shape's run is over (before its connections close)."""

    action: Callable[[], object]

    def close(self) -> None:
        self.action()


Prepared = tuple[
    Callable[[], int], list[RawConn | Closing]
]  # (the measured run: messages it handled; to close)


def _send_cycled(conn: RawConn, chunk: bytes, per_chunk: int, n: int) -> None:
    for _ in range(n // per_chunk):
        conn.send(chunk)


def _subscribers(port: int, specs: list[tuple[str, str]], mode: str = "count") -> list[RawConn]:
    conns = []
    for subject, queue in specs:
        conn = RawConn(port, mode)
        conn.sub(subject, 1, queue)
        conn.flush()
        conns.append(conn)
    return conns


# ----------------------------------------------------------------------------- core shapes


def shape_wildcards(port: int, n: int) -> Prepared:
    subs = _subscribers(port, [("a.*.x", ""), ("a.>", "")])
    pub = RawConn(port)
    chunk = b"".join(pub_frame(f"a.{i % 500}.x", P16) for i in range(1000))

    def run() -> int:
        _send_cycled(pub, chunk, 1000, n)
        for s in subs:
            s.wait_msgs(n)
        return n

    return run, [*subs, pub]


def _one_subject(
    port: int, n: int, specs: list[tuple[str, str]], deliveries: int, payloads: list[bytes]
) -> Prepared:
    # Large payloads: the subscriber walks the frames (counting scans every byte: it, not the server,
    # was the bottleneck — ~65 µs of client CPU per 16 KiB message against ~10 µs of either server's).
    big = max(map(len, payloads)) >= 4096
    subs = _subscribers(port, specs, "walk" if big else "count")
    pub = RawConn(port)
    per = 1000 if len(payloads[0]) < 4096 or len(payloads) > 1 else 100
    chunk = b"".join(pub_frame("one.x", payloads[i % len(payloads)]) for i in range(per))

    def run() -> int:
        _send_cycled(pub, chunk, per, n)
        want = n * deliveries
        subs[0].wait(lambda: sum(s.msgs for s in subs) >= want, 300, f"{want} deliveries")
        return n

    return run, [*subs, pub]


def shape_queue(port: int, n: int) -> Prepared:
    return _one_subject(port, n, [("one.x", "g")] * 4, 1, [P16])


def shape_fanout(port: int, n: int) -> Prepared:
    return _one_subject(port, n, [("one.x", "")] * 4, 4, [P16])


def shape_mixed(port: int, n: int) -> Prepared:
    return _one_subject(port, n, [("one.x", "")], 1, [b"m" * size for size in MIXED_SIZES])


def shape_16k(port: int, n: int) -> Prepared:
    return _one_subject(port, n, [("one.x", "")], 1, [b"k" * 16384])


REQUEST = re.compile(rb"MSG svc 1 (\S+) 16\r\n.{16}\r\n", re.DOTALL)


def shape_reqrep(port: int, n: int, in_flight: int = 200) -> Prepared:
    rest = b""

    def respond(conn: RawConn, data: bytes) -> None:
        nonlocal rest
        buf = rest + data
        end = 0
        replies = []
        for m in REQUEST.finditer(buf):
            replies.append(b"PUB " + m.group(1) + b" 16\r\n" + P16 + b"\r\n")
            end = m.end()
        rest = buf[end:] if end else buf
        if replies:
            conn.send(b"".join(replies))

    responder = RawConn(port, on_data=respond)
    responder.sub("svc", 1)
    responder.flush()
    requests = [pub_frame("svc", P16, f"_INBOX.r.{i}") for i in range(n)]
    sent = 0

    def more(conn: RawConn, k: int) -> None:
        nonlocal sent
        take = min(k, n - sent)
        if take > 0:
            conn.send(b"".join(requests[sent : sent + take]))
            sent += take

    requester = RawConn(port, on_count=more)
    requester.sub("_INBOX.r.*", 1)
    requester.flush()

    def run() -> int:
        nonlocal sent
        sent = in_flight
        requester.send(b"".join(requests[:in_flight]))
        requester.wait_msgs(n, 300)
        return n

    return run, [responder, requester]


# ----------------------------------------------------------------------------- JetStream


def _fresh_stream(api: RawConn, name: str, subjects: list[str]) -> None:
    api.api(f"STREAM.DELETE.{name}", check=False)
    api.api(f"STREAM.CREATE.{name}", {"name": name, "subjects": subjects, "storage": "file"})


def _js_publishes(port: int, n: int, name: str, frames: list[bytes]) -> Prepared:
    api = RawConn(port, "frames")
    _fresh_stream(api, name, [f"{name.lower()}.>"])
    pub = RawConn(port)
    pub.sub("_INBOX.pa.*", 1)
    pub.flush()

    def run() -> int:
        publish_window(pub, frames, n, window=1000)
        if pub.json_errors:
            raise SystemExit(f"{pub.json_errors} publishes failed on {name}")
        return n

    return run, [api, pub]


def shape_js_msgid(port: int, n: int) -> Prepared:
    stamp = time.monotonic_ns()
    frames = [
        pub_frame(f"jsm.{i % 1000}", P16, "_INBOX.pa.1", header_block(Nats_Msg_Id=f"{stamp}-{i}"))
        for i in range(n)
    ]
    return _js_publishes(port, n, "JSM", frames)


def shape_js_headers(port: int, n: int) -> Prepared:
    frames = [
        pub_frame(
            f"jsh.{i % 10_000}",
            P16,
            "_INBOX.pa.1",
            header_block(Content_Type="application/json", X_Trace_Id=f"{i:08x}"),
        )
        for i in range(n)
    ]
    return _js_publishes(port, n, "JSH", frames)


@dataclass
class ConsumerStream:
    """A stream ``PC`` of ``n`` messages over ``pc.<i>.x`` / ``pc.<i>.y`` (1,000 each), filled once per server."""

    filled: dict[int, int] = field(default_factory=dict)

    def ensure(self, port: int, n: int) -> None:
        if self.filled.get(port) == n:
            return
        api = RawConn(port, "frames")
        _fresh_stream(api, "PC", ["pc.>"])
        pub = RawConn(port)
        pub.sub("_INBOX.pa.*", 1)
        pub.flush()
        frames = (pub_frame(f"pc.{(i // 2) % 1000}.{'xy'[i % 2]}", P16, "_INBOX.pa.1") for i in range(2 * n))
        publish_window(pub, frames, 2 * n, window=2000)
        api.close()
        pub.close()
        self.filled[port] = n


PC = ConsumerStream()
_consumer_ids = itertools.count()


def shape_push_wild(port: int, n: int, filter_subject: str = "pc.*.x") -> Prepared:
    """``pc.*.x`` matches half of the stream's ``2n`` messages, ``pc.>`` all of them."""
    PC.ensure(port, n)
    want = n if filter_subject == "pc.*.x" else 2 * n
    api = RawConn(port, "frames")
    sub = RawConn(port)
    sub.sub("_DLV.push", 1)
    sub.flush()

    def run() -> int:
        name = f"PW{next(_consumer_ids)}"
        api.api(
            f"CONSUMER.CREATE.PC.{name}",
            {
                "stream_name": "PC",
                "config": {
                    "name": name,
                    "deliver_subject": "_DLV.push",
                    "ack_policy": "none",
                    "filter_subject": filter_subject,
                    "inactive_threshold": 60_000_000_000,
                },
            },
        )
        sub.wait_msgs(want, 300)
        api.api(f"CONSUMER.DELETE.PC.{name}")
        return want

    return run, [api, sub]


def shape_push_all(port: int, n: int) -> Prepared:
    return shape_push_wild(port, n, "pc.>")


ACKABLE = re.compile(
    rb"MSG \S+ 1 (\$JS\.ACK\.\S+) 16\r\n.{16}\r\n", re.DOTALL
)  # pull deliveries keep their subject


def shape_pull_wild(port: int, n: int, ack: bool = False, batch: int = 1000) -> Prepared:
    PC.ensure(port, n)
    api = RawConn(port, "frames")
    name = f"PL{next(_consumer_ids)}"
    api.api(
        f"CONSUMER.CREATE.PC.{name}",
        {
            "stream_name": "PC",
            "config": {
                "durable_name": name,
                "ack_policy": "explicit" if ack else "none",
                "filter_subject": "pc.*.x",
                "max_ack_pending": 20_000,
            },
        },
    )
    nxt = pub_frame(
        f"$JS.API.CONSUMER.MSG.NEXT.PC.{name}",
        json.dumps({"batch": batch, "expires": 30_000_000_000}).encode(),
        "_DLV.pull",
    )
    got = 0
    rest = b""

    def on_count(conn: RawConn, k: int) -> None:
        nonlocal got
        before, got = got, got + k
        requests = got // batch - before // batch
        if requests and got + batch < n + batch:
            conn.send(nxt * requests)

    def on_data(conn: RawConn, data: bytes) -> None:  # ack mode: +ACK every message, count them
        nonlocal rest
        buf = rest + data
        end = 0
        acks = []
        for m in ACKABLE.finditer(buf):
            acks.append(b"PUB " + m.group(1) + b" 4\r\n+ACK\r\n")
            end = m.end()
        rest = buf[end:] if end else buf
        if acks:
            conn.send(b"".join(acks))

    sub = RawConn(port, on_count=on_count, on_data=on_data if ack else None)
    sub.sub("_DLV.pull", 1)
    sub.flush()

    def run() -> int:
        sub.send(nxt * 2)
        sub.wait_msgs(n, 300)
        if ack:  # until the ack floor reaches the end
            deadline = time.monotonic() + 120
            while api.api(f"CONSUMER.INFO.PC.{name}")["num_ack_pending"] and time.monotonic() < deadline:
                time.sleep(0.002)
        return n

    return run, [Closing(lambda: api.api(f"CONSUMER.DELETE.PC.{name}", check=False)), api, sub]


def shape_pull_ack_wild(port: int, n: int) -> Prepared:
    return shape_pull_wild(port, n, ack=True)


# ----------------------------------------------------------------------------- driver


@dataclass
class Shape:
    key: str
    label: str
    per: str
    n: int  # messages at full size
    prepare: Callable[[int, int], Prepared]


SHAPES = [
    Shape(
        "wildcards", "2 wildcard subs (a.*.x, a.>), 500 subjects", "published msg", 500_000, shape_wildcards
    ),
    Shape("queue", "queue group of 4 subscribers", "msg", 500_000, shape_queue),
    Shape("fanout", "fan-out, 4 subscribers on one subject", "published msg", 500_000, shape_fanout),
    Shape("reqrep", "request/reply, 200 in flight, distinct inboxes", "request", 200_000, shape_reqrep),
    Shape("mixed", "mixed payloads 16 B..64 KiB, one subscriber", "msg", 100_000, shape_mixed),
    Shape("16k", "16 KiB payloads, one subscriber", "msg", 100_000, shape_16k),
    Shape("js_msgid", "JS publish, Nats-Msg-Id, 1,000 subjects", "publish", 100_000, shape_js_msgid),
    Shape("js_headers", "JS publish, other headers, 10,000 subjects", "publish", 100_000, shape_js_headers),
    Shape(
        "push_wild",
        "push consumer, filter pc.*.x (1,000 of 2,000 subj.)",
        "delivered msg",
        100_000,
        shape_push_wild,
    ),
    Shape(
        "push_all",
        "push consumer, filter pc.> (all 2,000 subjects)",
        "delivered msg",
        100_000,
        shape_push_all,
    ),
    Shape(
        "pull_wild", "pull consumer, filter pc.*.x, batch 1,000", "delivered msg", 100_000, shape_pull_wild
    ),
    Shape(
        "pull_ack_wild", "pull consumer + ack, filter pc.*.x", "delivered msg", 100_000, shape_pull_ack_wild
    ),
]


def measure(target: Target, shape: Shape, n: int) -> tuple[float, float]:
    """(msgs/s, server CPU µs per message) of one run of ``shape`` on ``target``."""
    run, conns = shape.prepare(target.port, n)
    try:
        before, start = server_cpu(target), time.perf_counter()
        count = run()
        wall, cpu = time.perf_counter() - start, server_cpu(target) - before
    finally:
        for conn in conns:
            conn.close()
    return count / wall, cpu / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a tenth of the messages, one round (smoke run)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--only", default="", help="comma-separated shape keys: " + ",".join(s.key for s in SHAPES)
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--md", metavar="PATH", help="also write the table as Markdown")
    args = parser.parse_args()
    stop_on_signals()
    rounds = 1 if args.quick else args.rounds
    chosen = [s for s in SHAPES if not args.only or s.key in args.only.split(",")]
    load_before = load_average()
    started = time.perf_counter()
    results: dict[str, dict[str, dict[str, float]]] = {}
    with servers() as targets:
        for shape in chosen:
            n = max(shape.n // 10, 1000) if args.quick else shape.n
            best: dict[str, dict[str, float]] = {}
            for _ in range(rounds):
                for kind, target in targets.items():
                    rate, cpu = measure(target, shape, n)
                    b = best.setdefault(kind, {"rate": 0.0, "cpu": float("inf")})
                    b["rate"], b["cpu"] = max(b["rate"], rate), min(b["cpu"], cpu)
            results[shape.key] = best
            print(f"  {shape.key}: done ({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    report(chosen, results, rounds, load_before, time.perf_counter() - started)
    if args.md:
        header = (
            f"bench_shapes — {time.strftime('%Y-%m-%d %H:%MZ', time.gmtime())}, best of {rounds}, "
            f"load before {load_before}, after {load_average()}"
        )
        Path(args.md).write_text(markdown(chosen, results, header))
    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "load_before": load_before,
                    "load_after": load_average(),
                    "rounds": rounds,
                    "quick": args.quick,
                    "shapes": {s.key: {"label": s.label, "per": s.per, **results[s.key]} for s in chosen},
                },
                indent=2,
            )
        )


def report(
    chosen: list[Shape], results: dict[str, dict[str, dict[str, float]]], rounds: int, load: str, took: float
) -> None:
    print(
        f"\nmessage shapes, raw sockets — best of {rounds}, load before {load}, after {load_average()}, "
        f"{took:.0f} s"
    )
    head = (
        f"{'shape':52} {'ours msgs/s':>12} {'nats msgs/s':>12} {'ratio':>6} "
        f"{'ours CPU':>9} {'nats CPU':>9} {'ratio':>6}  per"
    )
    print(head)
    print("-" * len(head))
    missed = []
    for shape in chosen:
        ours, theirs = results[shape.key][EMBEDDED], results[shape.key][NATS_SERVER]
        rate_ratio = ours["rate"] / theirs["rate"]
        cpu_ratio = ours["cpu"] / theirs["cpu"] if theirs["cpu"] else float("inf")
        flags = []
        if rate_ratio < TARGET_RATE:
            flags.append(f"rate<{TARGET_RATE}x")
        if cpu_ratio > TARGET_CPU:
            flags.append(f"CPU>{TARGET_CPU:.0f}x")
        if flags:
            missed.append(f"{shape.key} ({', '.join(flags)})")
        print(
            f"{shape.label:52} {ours['rate']:>12,.0f} {theirs['rate']:>12,.0f} {rate_ratio:>6.2f} "
            f"{ours['cpu']:>7.2f}µs {theirs['cpu']:>7.2f}µs {cpu_ratio:>6.2f}  {shape.per}"
            f"{'  <-- ' + ', '.join(flags) if flags else ''}"
        )
    print(
        f"\nratio: msgs/s ours / nats-server (target ≥ {TARGET_RATE}), server CPU per message ours / nats-server "
        f"(target ≤ {TARGET_CPU:.0f})"
    )
    print("missing a target: " + ("; ".join(missed) if missed else "none"))


def markdown(chosen: list[Shape], results: dict[str, dict[str, dict[str, float]]], header: str) -> str:
    lines = [
        header,
        "",
        "| shape | per | ours msgs/s | nats-server msgs/s | ratio | ours CPU µs | nats-server CPU µs | ratio | misses |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for shape in chosen:
        ours, theirs = results[shape.key][EMBEDDED], results[shape.key][NATS_SERVER]
        rate, cpu = ours["rate"] / theirs["rate"], ours["cpu"] / theirs["cpu"] if theirs["cpu"] else float("inf")
        misses = [f"**rate < {TARGET_RATE}×**"] if rate < TARGET_RATE else []
        misses += [f"**CPU > {TARGET_CPU:.0f}×**"] if cpu > TARGET_CPU else []
        lines.append(
            f"| {shape.label} | {shape.per} | {ours['rate']:,.0f} | {theirs['rate']:,.0f} | {rate:.2f} | "
            f"{ours['cpu']:.2f} | {theirs['cpu']:.2f} | {cpu:.2f} | {' '.join(misses)} |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
