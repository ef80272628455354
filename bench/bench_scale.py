"""Cost per operation as the state grows: the embedded server against nats-server 2.15.1 (issue #24).

    .venv/bin/python bench/bench_scale.py [--quick] [--dim subjects,consumers] [--rounds 2]
        [--budget 90] [--consumers-10k] [--messages-50m] [--json out.json] [--md out.md]

Each dimension is measured at three sizes, ten times apart. For each size both servers are started
fresh side by side (raw sockets, ``bench/rawnats.py``), the state is built on each, then every
operation is run on each in turn (best of ``--rounds``, the servers alternating; destructive ones
once; a restart ``--restarts`` times, 5, the servers alternating, and the median taken: see
`median`). Per operation: the wall time and the server's CPU (user + system of all its threads, read
to the nanosecond from the process's CPU-time clock, ``rawnats.process_cpu``; until session 13 from
``/proc/<pid>/stat``'s 10 ms ticks, each truncated) divided by the operations done, in µs; a figure
made of under 100 ms of CPU (10 clock ticks' worth: short, so noisy) is marked ``~``. Per size the
server's resident memory (VmRSS) after the build and at the end. An operation still running after
``--budget`` seconds is cut and its figure, from what it did, marked ``≥``.

The two servers take turns going first: at each size the one that did not build first at the last
size builds first, and each round of an operation starts with the other one, so neither always
inherits what the other left (freed inodes, dirty pages, warm caches). A size whose servers created
and removed many files (over 1,000: a size's consumer directories) is followed by ``os.sync()`` and a
wait of ``--fs-settle`` seconds (65) before the next size starts: on ext4 without a journal (this
machine's) an inode deleted less than 60 s ago is not reused, and creating files right after tens of
thousands were removed costs the creator system time skipping them (``recently_deleted`` in
``fs/ext4/ialloc.c``), the first server to build paying the most.

The two servers' builds are interleaved: each runs in its own thread, one at a time, and a build that
creates many like things (the ``consumers`` and ``pulls`` consumer creates) passes the turn to the
other server's after each batch of 250 (``BUILD_BATCH``), once that batch's answers are all in. Both
servers thus create their files under the same file-system conditions, and a timed build step
(a row ``build: …``) counts each server's wall time and CPU over its own batches only. The other
builds (publishes, subscribes, one purge) have no batch points and run whole in one turn.

The growth column is the CPU per operation at the largest size over the smallest, or over the middle
size (marked ``ᵐ``) when either server's figure at the smallest is under 10 clock ticks: a build of
1,000 things is a tick or two, and a growth from it measures the tick. Flagged:
``GROWS`` where ours grows more than 1.5× while nats-server's stays within 1.5×, and ``CPU>2x`` where
our CPU per operation at the largest size is more than twice nats-server's (issue #24's targets).

Dimensions (``--dim``; sizes in the normal run):

- ``subjects`` (1k / 10k / 100k subjects or keys; a stream of 100,000 messages over them): push
  consumers filtered on ``k.>`` (all) and ``k.3.*`` (a tenth), a pull consumer on ``k.3.*``, an ordered
  consumer (flow control, heartbeats) on ``k.>``; a KV bucket's watch-all and ``keys()`` (last per
  subject, headers only for keys), ``history`` of a key, ``purge_deletes``' purge of a deleted key;
  puts of new keys into a bucket kept at its size (``max_msgs``: each put's oldest key goes);
  ``STREAM.INFO`` with ``subjects_filter`` ``k.*.<j>`` (10 subjects), a direct ``multi_last`` get of
  ``k.*.<j>``; publishes onto existing subjects of a ``max_msgs_per_subject: 1`` stream; TTL expiry of
  5,000 messages without and with subject delete markers;
- ``consumers`` (10 / 100 / 1k; ``--consumers-10k``: 100 / 1k / 10k), each filtered to its own subject:
  publishes into an interest and a work-queue stream, fetch + ack until the interest stream is empty
  (ack floor movement), ``STREAM.INFO``, ``CONSUMER.INFO``, ``STREAM.UPDATE`` of a stream with them all
  (a description change), ``CONSUMER.LIST`` / ``NAMES`` paging (per
  consumer listed), creating consumers, deleting a stream with them all (per consumer);
- ``messages`` (100k / 1M / 10M file-stored, 16 B over 1,000 subjects; ``--messages-50m``: 500k / 5M /
  50M): resident memory per stored message, the fill, gets by sequence / last by subject / first by
  subject, ``STREAM.INFO``, restart after a clean stop and after ``kill -9`` (until ``STREAM.INFO``
  answers with every message; the new process's CPU), restart after ``kill -9`` with 100k messages
  published since the stream state was written (per such message: read from the blocks, `UNSYNCED`),
  compaction (purge up to the middle) and purge
  (per removed message, until its blocks are off the disk: both servers remove them out of band). The 50 M run needs ~4 GiB of disk for the embedded server and ~2.5 GiB for
  nats-server, ~2 GiB of memory for the embedded server's index plus page cache, and about an hour
  (the embedded server fills ~45k msgs/s under load, nats-server ~170k): see bench/README.md;
- ``gaps`` (10k / 100k / 1M deleted sequences between 1,000 and 1,000 kept): ``STREAM.INFO``, push and
  pull consumers delivering across the gap, a get of the next message after the gap and of a deleted
  sequence, a restart;
- ``acks`` (1k / 10k / 100k pending acks on a push consumer at ``max_ack_pending``): an ack that lets
  the next message through, a nak and its redelivery, a publish while the consumer is blocked, and
  ack-wait redelivery timers (1 s) of all of them;
- ``pulls`` (100 / 1k / 10k waiting pull requests on one consumer, and 10 / 100 / 1k pull consumers with
  a waiting request each on one stream): a publish that one waiting request takes (and a new request);
- ``conns`` (10 / 100 / 1k connections, 1k / 10k / 100k subscriptions — literal, ``*``, ``>`` and queue
  group — on one connection): a publish to one of the connections, connect + close, publishes matching
  one subscription cycling over 100 subjects (the match cache hits) and over all of them (misses),
  subscribe + unsubscribe;
- ``timers`` (1k / 10k / 100k messages with a 1 h TTL, message ids in the dedupe window, pending
  schedules): publishes with a TTL, with new and with duplicate message ids, plain and of new
  schedules; 5,000 TTL expiries and 2,000 schedules firing with that state in place.

More dimensions — ``streams``, ``sources``, ``watchers``, ``filters``, ``objects``, ``ephemerals``,
``queue``, ``subjects2``, ``deletes``, ``pauses``, ``kvhist``, ``interest``, ``buckets``, ``expiry``,
``monitor``, ``jsz``, ``objstore``, ``mappings``, ``imports``, ``sysreq``, ``kvops``, ``nsources``,
``dgroup``, ``kvbuckets``, ``ordered``, ``republish``, ``accounts`` and the restarts ``rconsumers``, ``rkeys``, ``rstreams``, ``racks``:
shapes users run that the ones above do not name — are in ``bench/scale_more.py`` (its doc says what
each measures), run and printed the same way.

``--quick`` divides sizes and operation counts by ten and runs one round (a smoke run). Took an hour in
full on 2 cores at load 7-21; not part of the test suite nor of ``run_all.sh``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rawnats import (
    EMBEDDED,
    KINDS,
    NATS_SERVER,
    ManyConns,
    RawConn,
    Target,
    disk_mib,
    header_block,
    load_average,
    pub_frame,
    server_cpu,
    server_rss_mib,
    servers,
    stop_on_signals,
    wait_for,
)

P16 = b"x" * 16
GROWTH_LIMIT, CPU_LIMIT = 1.5, 2.0
SECOND = 1_000_000_000


class Partial(Exception):
    """An operation cut at its time budget, after ``done`` operations."""

    def __init__(self, done: int) -> None:
        super().__init__(done)
        self.done = done


@dataclass
class Figure:
    wall_us: float
    cpu_us: float
    ops: int
    ticks: int  # server CPU clock ticks the figure is made of
    partial: bool = False


@dataclass
class Op:
    key: str
    label: str
    per: str
    run: Callable[[Ctx], int]  # the measured part: how many operations it did
    prepare: Callable[[Ctx], None] | None = None
    cleanup: Callable[[Ctx], None] | None = None
    once: bool = False  # changes the state for good: one round
    wall: bool = True  # False: the wall time is a timer's (TTL, ack wait), not the server's speed
    restart: bool = False  # restarts the server: the CPU is the new process's until it is ready
    repeat: bool = False  # leaves the state as it found it: run again until --min-time has passed


# ---------------------------------------------------------------------------------------------- context


class Ctx:
    """One server at one size: its connections, the dimension's state, the operations' budget."""

    _ids = itertools.count()

    def __init__(
        self, kind: str, target: Target, size: Any, scale: float, budget: float, min_time: float
    ) -> None:
        self.kind, self.target, self.size, self.scale, self.budget = kind, target, size, scale, budget
        self.min_time = min_time
        self.state: dict[str, Any] = {}
        self.deadline = time.monotonic() + 3600
        self.restart_cpu = 0.0
        self.conns: list[Any] = []
        self.turns: Turns | None = None  # set while the servers' builds run interleaved
        self._clock: list[float] | None = None  # a timed build step: [wall, cpu] of its own batches
        self._since = (0.0, 0.0)  # the current batch's start (perf_counter, server CPU)
        self.connect()

    @property
    def port(self) -> int:
        return self.target.port

    def connect(self) -> None:
        self.api = RawConn(self.port, "frames")
        self.pub = RawConn(self.port)  # PubAcks come back here
        self.pub.sub("_PA.*", "pa")
        self.pub.flush()

    def conn(self, **kw: Any) -> RawConn:
        c = RawConn(self.port, **kw)
        self.conns.append(c)
        return c

    def close(self) -> None:
        for c in [self.api, self.pub, *self.conns]:
            c.close()
        self.conns.clear()

    def n(self, count: int) -> int:
        """An operation count, scaled for ``--quick``."""
        return max(int(count * self.scale), 10)

    def uid(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids)}"

    # -------------------------------------------------------------------- a build's batches

    def start_clock(self) -> None:
        """A timed build step starts: its wall and server CPU add up over this server's own batches."""
        self._clock = [0.0, 0.0]
        self._since = (time.perf_counter(), server_cpu(self.target))

    def stop_clock(self) -> tuple[float, float]:
        """The step's wall time and server CPU over its own batches (see `take_turn`)."""
        clock, self._clock = self._clock, None
        assert clock is not None
        wall, cpu = time.perf_counter() - self._since[0], server_cpu(self.target) - self._since[1]
        return clock[0] + wall, clock[1] + cpu

    def take_turn(self) -> None:
        """A batch of a build is done (its answers all in): the other server's build runs its next
        batch, then this one goes on. Why: both servers then build under the same file-system conditions
        (see `Turns`); a timed step's clock stops while the other server has the turn."""
        if self.turns is None:
            return
        if self._clock is not None:
            self._clock[0] += time.perf_counter() - self._since[0]
            self._clock[1] += server_cpu(self.target) - self._since[1]
        self.turns.pass_on(self.kind)
        if self._clock is not None:
            self._since = (time.perf_counter(), server_cpu(self.target))

    # -------------------------------------------------------------------- waiting within the budget

    def left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.0)

    def wait(self, count: Callable[[], int], n: int) -> int:
        """Until ``count() >= n``; :class:`Partial` when the budget runs out first."""
        if not wait_for(lambda: count() >= n, self.left()):
            raise Partial(count())
        return n

    def publish(self, frames: Iterable[bytes], n: int, window: int = 1000) -> int:
        """``n`` publishes with their reply on ``_PA.*``, at most ``window`` unanswered."""
        conn, it, sent = self.pub, iter(frames), 0
        base, errors = conn.deliveries, conn.json_errors
        while sent < n:
            room = window - (sent - (conn.deliveries - base))
            step = min(256, n - sent)
            if room < step:
                self.wait(lambda: conn.deliveries - base, sent - window + step)
                continue
            take = min(room, n - sent)
            conn.send(b"".join(itertools.islice(it, take)))
            sent += take
        self.wait(lambda: conn.deliveries - base, n)
        if conn.json_errors > errors:
            raise RuntimeError(f"{conn.json_errors - errors} of {n} publishes failed")
        return n

    def requests(self, calls: list[tuple[str, dict[str, Any]]], window: int = 100) -> list[dict[str, Any]]:
        frames = self.api.requests(calls, timeout=max(self.left(), 1.0), window=window)
        return [json.loads(f.payload) if f.payload else {} for f in frames]

    def stream_state(self, stream: str) -> dict[str, Any]:
        state: dict[str, Any] = self.api.api(f"STREAM.INFO.{stream}")["state"]
        return state

    def wait_messages(self, stream: str, messages: int, poll: float = 0.2) -> None:
        """Until the stream holds exactly ``messages`` (expiries, acks: polled)."""
        while self.stream_state(stream)["messages"] != messages:
            if not self.left():
                raise Partial(0)
            time.sleep(poll)

    # -------------------------------------------------------------------- restarts

    def restart_until(self, kill: bool, ready: Callable[[], bool]) -> None:
        """Stop (or ``kill -9``) and start again; ready when ``ready()`` (asked on fresh connections)
        says so. The new process's CPU until then is kept in ``restart_cpu``."""
        self.close()
        if kill:
            self.target.kill()
        else:
            self.target.stop()
        self.target.start()
        while True:
            try:
                self.connect()
                if ready():
                    break
            except (OSError, TimeoutError):
                pass
            self.api.close()
            self.pub.close()
            if not self.left():
                raise Partial(0)
            time.sleep(0.02)
        self.restart_cpu = server_cpu(self.target)


# ---------------------------------------------------------------------------------------------- clients

FC = re.compile(rb"HMSG \S+ \S+ (\$JS\.FC\.\S+) \d+ \d+\r\n")
ACKABLE = re.compile(rb"MSG \S+ \S+ (\$JS\.ACK\.\S+) 16\r\n.{16}\r\n", re.DOTALL)


class Deliveries:
    """A connection receiving a consumer's messages: answers flow control; with ``acks`` collects
    each message's ack subject (``pending``), with ``auto_ack`` acks each one as it arrives."""

    def __init__(self, ctx: Ctx, collect: bool = False, auto_ack: bool = False) -> None:
        self.collect, self.auto_ack = collect, auto_ack
        self.pending: list[bytes] = []
        self.acked = 0
        self._rest = b""
        self._fc_tail = b""
        self.conn = ctx.conn(on_data=self._on_data)

    def _on_data(self, conn: RawConn, data: bytes) -> None:
        both = self._fc_tail + data
        if b"$JS.FC." in both:  # answer flow control (a request split across reads: once, when it ends)
            start = len(self._fc_tail)
            replies = [b"PUB " + m.group(1) + b" 0\r\n\r\n" for m in FC.finditer(both) if m.end() > start]
            if replies:
                conn.send(b"".join(replies))
        self._fc_tail = both[-200:]
        if not (self.collect or self.auto_ack):
            return
        buf = self._rest + data
        end = 0
        found = []
        for m in ACKABLE.finditer(buf):
            found.append(m.group(1))
            end = m.end()
        self._rest = buf[end:] if end else buf
        if self.auto_ack and found:
            conn.send(b"".join(b"PUB " + s + b" 4\r\n+ACK\r\n" for s in found))
            self.acked += len(found)
        elif found:
            self.pending.extend(found)


def consume_push(ctx: Ctx, stream: str, config: dict[str, Any], expected: int) -> int:
    """An ephemeral push consumer (deleted after): until ``expected`` messages arrived."""
    dlv = Deliveries(ctx)
    name = ctx.uid("P")
    dlv.conn.sub(f"_DLV.{name}", 1)
    dlv.conn.flush()
    cfg = {
        "name": name,
        "deliver_subject": f"_DLV.{name}",
        "ack_policy": "none",
        "inactive_threshold": 300 * SECOND,
        **config,
    }
    ctx.api.api(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": cfg})
    try:
        return ctx.wait(lambda: dlv.conn.deliveries, expected)
    finally:
        ctx.api.api(f"CONSUMER.DELETE.{stream}.{name}", check=False)
        dlv.conn.close()


def consume_pull(ctx: Ctx, stream: str, config: dict[str, Any], expected: int, batch: int = 1000) -> int:
    """An ephemeral pull consumer, requests of ``batch`` two in flight: until ``expected`` arrived."""
    name = ctx.uid("L")
    cfg = {"name": name, "ack_policy": "none", "inactive_threshold": 300 * SECOND, **config}
    ctx.api.api(f"CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": cfg})
    nxt = pub_frame(
        f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{name}",
        json.dumps({"batch": batch, "expires": 60 * SECOND}).encode(),
        f"_PULL.{name}",
    )
    asked = 2 * batch

    def more(conn: RawConn, _: int) -> None:
        nonlocal asked
        while conn.deliveries + batch >= asked and asked < expected + batch:
            asked += batch
            conn.send(nxt)

    conn = ctx.conn(on_count=more)
    conn.sub(f"_PULL.{name}", 1)
    conn.flush()
    try:
        conn.send(nxt * 2)
        return ctx.wait(lambda: conn.deliveries, expected)
    finally:
        ctx.api.api(f"CONSUMER.DELETE.{stream}.{name}", check=False)
        conn.close()


def create_stream(ctx: Ctx, name: str, **config: Any) -> None:
    ctx.api.api(f"STREAM.CREATE.{name}", {"name": name, "storage": "file", **config})


def create_kv_bucket(ctx: Ctx, bucket: str, history: int, **config: Any) -> None:
    """A KV bucket's stream ``KV_<bucket>`` as nats.go's ``CreateKeyValue`` makes it (``history``
    revisions a key), with ``config`` added."""
    create_stream(
        ctx,
        f"KV_{bucket}",
        subjects=[f"$KV.{bucket}.>"],
        max_msgs_per_subject=history,
        allow_direct=True,
        allow_rollup_hdrs=True,
        deny_delete=True,
        discard="new",
        **config,
    )


def pubs(
    subjects: Iterable[str], headers: Callable[[int], bytes] | None = None, payload: bytes = P16
) -> Iterable[bytes]:
    """Publish frames with their reply on ``_PA.1`` (the context's PubAck connection)."""
    for i, subject in enumerate(subjects):
        yield pub_frame(subject, payload, "_PA.1", headers(i) if headers else b"")


#: Requests per batch of a build that creates many like things (consumers): see `Turns`.
BUILD_BATCH = 250


def batched_requests(ctx: Ctx, calls: list[tuple[str, dict[str, Any]]], what: str) -> None:
    """``calls`` in batches of `BUILD_BATCH`, the turn passed to the other server's build after each
    batch's answers are in (`Ctx.take_turn`)."""
    for i in range(0, len(calls), BUILD_BATCH):
        errors = [a for a in ctx.requests(calls[i : i + BUILD_BATCH]) if "error" in a]
        if errors:
            raise RuntimeError(f"{what}: {errors[0]}")
        ctx.take_turn()


def timed_build(ctx: Ctx, key: str, label: str, per: str, fn: Callable[[], int]) -> None:
    """A measured step of a build (its figure joins the dimension's table as ``build: <label>``)."""
    ctx.deadline = time.monotonic() + 4 * 3600
    ctx.start_clock()
    try:
        done = fn()
    finally:
        wall, cpu = ctx.stop_clock()
    ctx.state.setdefault("_builds", []).append(
        (Op(f"build_{key}", f"build: {label}", per, lambda c: 0), _figure(wall, cpu, done, False))
    )


def _figure(wall: float, cpu: float, done: int, partial: bool) -> Figure:
    import os

    ticks = round(cpu * os.sysconf("SC_CLK_TCK"))
    per = max(done, 1)
    return Figure(wall / per * 1e6, cpu / per * 1e6, done, ticks, partial or done == 0)


# ---------------------------------------------------------------------------------------------- dimensions


@dataclass
class Dimension:
    key: str
    title: str
    sizes: list[Any]
    quick_sizes: list[Any]
    build: Callable[[Ctx], None]
    ops: list[Op] = field(default_factory=list)
    size_label: Callable[[Any], str] = lambda s: f"{s:,}"
    settings: dict[str, Any] = field(default_factory=dict)  # both servers' config beyond the defaults
    #: the config that depends on the size (mappings, imports), added to ``settings``
    sized_settings: Callable[[Any], dict[str, Any]] | None = None


# ---- 1. subjects and keys


def subject_of(i: int) -> str:
    """Subject ``i`` of the subjects stream: ``k.*.<j>`` matches exactly 10 subjects, ``k.3.*`` a tenth."""
    return f"k.{i % 10}.{i // 10}"


def build_subjects(ctx: Ctx) -> None:
    n, m = ctx.size, ctx.n(100_000)
    ctx.state["m"] = m
    create_stream(ctx, "S1", subjects=["k.>"], allow_direct=True)
    timed_build(
        ctx,
        "fill",
        f"publish {m:,} msgs over the subjects",
        "publish",
        lambda: ctx.publish(pubs(subject_of(j % n) for j in range(m)), m),
    )
    create_kv_bucket(ctx, "B", 5, duplicate_window=120 * SECOND)
    ctx.publish(pubs(f"$KV.B.k{i}" for i in range(n)), n)
    # Bucket N stays at n keys while each put adds a new one (its oldest key goes: max_msgs, discard
    # old), so its put of a new key is measured with enough puts at every size (the build's n puts
    # were a tick or two at 1,000 keys, and the growth of that row the wall time's).
    create_stream(
        ctx,
        "KV_N",
        subjects=["$KV.N.>"],
        max_msgs_per_subject=1,
        max_msgs=n,
        discard="old",
        allow_direct=True,
        allow_rollup_hdrs=True,
        deny_delete=True,
        duplicate_window=120 * SECOND,
    )
    ctx.publish(pubs(f"$KV.N.k{i}" for i in range(n)), n)
    history = [f"$KV.B.h{i}" for i in range(100)] * 5
    deleted = [f"$KV.B.d{i}" for i in range(100)]
    ctx.publish(pubs(history + deleted), 600)
    ctx.publish(pubs(deleted, lambda i: header_block(KV_Operation="DEL"), b""), 100)
    ctx.state["keys"] = n + 200
    create_stream(ctx, "MP", subjects=["mp.>"], max_msgs_per_subject=1)
    ctx.publish(pubs(f"mp.{i}" for i in range(n)), n)
    create_stream(ctx, "TT", subjects=["tt.>"], allow_msg_ttl=True)
    ctx.publish(pubs(f"tt.p.{i}" for i in range(n)), n)
    create_stream(ctx, "TM", subjects=["tm.>"], allow_msg_ttl=True, subject_delete_marker_ttl=SECOND)
    ctx.publish(pubs(f"tm.p.{i}" for i in range(n)), n)


def kv_watch(ctx: Ctx, bucket: str, keys: int, headers_only: bool) -> int:
    """A watch of every key of ``bucket`` as nats.go's ``WatchAll`` / ``Keys`` (``headers_only``)
    makes it: an ordered push consumer on the last message per subject, until ``keys`` came."""
    return kv_watch_filtered(ctx, bucket, f"$KV.{bucket}.>", keys, headers_only)


def kv_watch_filtered(ctx: Ctx, bucket: str, filter_subject: str, keys: int, headers_only: bool) -> int:
    """`kv_watch` of the keys ``filter_subject`` matches (nats.go's ``ListKeysFiltered``, ``Watch``)."""
    cfg = {
        "filter_subject": filter_subject,
        "deliver_policy": "last_per_subject",
        "flow_control": True,
        "idle_heartbeat": 5 * SECOND,
        "mem_storage": True,
        "headers_only": headers_only,
        "max_deliver": 1,
    }
    return consume_push(ctx, f"KV_{bucket}", cfg, keys)


def kv_history(ctx: Ctx, bucket: str, calls: int, revisions: int) -> int:
    """``calls`` histories of keys ``h0`` .. ``h99`` of ``bucket``, ``revisions`` each."""
    for i in range(calls):
        cfg = {"filter_subject": f"$KV.{bucket}.h{i % 100}", "deliver_policy": "all"}
        consume_push(ctx, f"KV_{bucket}", cfg, revisions)
    return calls


def _kv_watch(ctx: Ctx, headers_only: bool) -> int:
    return kv_watch(ctx, "B", ctx.state["keys"], headers_only)


def _history(ctx: Ctx) -> int:
    return kv_history(ctx, "B", ctx.n(200), 5)


def _kv_put_new(ctx: Ctx) -> int:
    """Puts of new keys into bucket ``N``, which keeps its ``n`` keys (the oldest goes with each):
    50,000 puts, ~150 ms of CPU, at every size."""
    k, tag = ctx.n(50_000), ctx.uid("p")
    return ctx.publish(pubs(f"$KV.N.{tag}.{i}" for i in range(k)), k)


def _info_wild(ctx: Ctx) -> int:
    # 5,000 requests: ~40 µs each is 20 clock ticks (500 were 2, the figure and its growth noise).
    k, groups = ctx.n(5000), ctx.size // 10
    answers = ctx.requests(
        [("$JS.API.STREAM.INFO.S1", {"subjects_filter": f"k.*.{random.randrange(groups)}"}) for _ in range(k)]
    )
    if any(len(a.get("state", {}).get("subjects") or {}) != 10 for a in answers):
        raise RuntimeError(f"STREAM.INFO subjects_filter: not 10 subjects: {str(answers[0])[:200]}")
    return k


def _multi_last(ctx: Ctx) -> int:
    # 3,000 requests: ~60 µs each is 18 clock ticks (300 were under 2).
    k, groups = ctx.n(3000), ctx.size // 10
    conn = ctx.conn()
    conn.sub("_ML.*", 1)
    conn.flush()
    frames = [
        pub_frame(
            "$JS.API.DIRECT.GET.S1",
            json.dumps({"multi_last": [f"k.*.{random.randrange(groups)}"]}).encode(),
            f"_ML.{i}",
        )
        for i in range(k)
    ]
    for i in range(0, k, 50):  # 50 in flight
        conn.send(b"".join(frames[i : i + 50]))
        ctx.wait(lambda: conn.statuses, min(i + 50, k))
    if conn.deliveries != 10 * k:
        raise RuntimeError(f"multi_last: {conn.deliveries} messages for {k} requests of 10 subjects")
    return k


def _ttl_expiry(ctx: Ctx, stream: str, markers: bool = False) -> int:
    """``k`` messages with a 1 s TTL, until they expired (and, with ``markers``, their subject delete
    markers were stored and expired in turn: the last sequence tells the markers were written)."""
    k = ctx.n(5000)
    state = ctx.stream_state(stream)
    base, last = state["messages"], state["last_seq"]
    prefix = stream.lower() + ".e." + ctx.uid("")
    ctx.publish(pubs((f"{prefix}.{j}" for j in range(k)), lambda i: header_block(Nats_TTL="1s")), k)
    while True:
        state = ctx.stream_state(stream)
        if state["messages"] == base and (not markers or state["last_seq"] >= last + 2 * k):
            return k
        if not ctx.left():
            raise Partial(0)
        time.sleep(0.2)


def ops_subjects() -> list[Op]:
    return [
        Op(
            "push_all",
            "push consumer, filter k.> (all)",
            "delivered msg",
            lambda c: consume_push(c, "S1", {"filter_subject": "k.>"}, c.state["m"]),
        ),
        Op(
            "push_tenth",
            "push consumer, filter k.3.* (a tenth)",
            "delivered msg",
            lambda c: consume_push(c, "S1", {"filter_subject": "k.3.*"}, c.state["m"] // 10),
        ),
        Op(
            "pull_tenth",
            "pull consumer, filter k.3.*",
            "delivered msg",
            lambda c: consume_pull(c, "S1", {"filter_subject": "k.3.*"}, c.state["m"] // 10),
        ),
        Op(
            "ordered",
            "ordered consumer (flow control), filter k.>",
            "delivered msg",
            lambda c: consume_push(
                c,
                "S1",
                {
                    "filter_subject": "k.>",
                    "flow_control": True,
                    "idle_heartbeat": 5 * SECOND,
                    "mem_storage": True,
                    "max_deliver": 1,
                },
                c.state["m"],
            ),
        ),
        Op("kv_put_new", "KV put of a new key (the oldest goes: max_msgs)", "put", _kv_put_new),
        Op("kv_watch", "KV watch-all (last per subject)", "key", lambda c: _kv_watch(c, False)),
        Op("kv_keys", "KV keys() (headers only)", "key", lambda c: _kv_watch(c, True)),
        Op("kv_history", "KV history of a key (5 revisions)", "call", _history),
        Op("info_wild", "STREAM.INFO subjects_filter k.*.<j> (10 subj.)", "request", _info_wild),
        Op("multi_last", "direct get multi_last k.*.<j> (10 subj.)", "request", _multi_last),
        Op(
            "max_per_subject",
            "publish, max_msgs_per_subject 1 (existing subj.)",
            "publish",
            lambda c: c.publish(
                pubs(f"mp.{random.randrange(c.size)}" for _ in range(c.n(50_000))), c.n(50_000)
            ),
        ),
        Op("ttl_expiry", "5,000 TTL 1 s expiries", "expired msg", lambda c: _ttl_expiry(c, "TT"), wall=False),
        Op(
            "marker_expiry",
            "5,000 TTL expiries + delete markers (1 s)",
            "expired msg",
            lambda c: _ttl_expiry(c, "TM", markers=True),
            wall=False,
        ),
        Op(
            "purge_deletes",
            "purge_deletes: purge one deleted key",
            "purge",
            lambda c: len(
                c.requests([("$JS.API.STREAM.PURGE.KV_B", {"filter": f"$KV.B.d{i}"}) for i in range(100)])
            ),
            once=True,
        ),
    ]


# ---- 2. consumers


def build_consumers(ctx: Ctx) -> None:
    c = ctx.size
    room = c + 1000  # nats-server 2.15 allows 1,000 consumers per stream unless the stream says more
    create_stream(ctx, "IN", subjects=["in.>"], retention="interest", max_consumers=room)
    create_stream(ctx, "WQ", subjects=["wq.>"], retention="workqueue", max_consumers=room)
    create_stream(ctx, "DL", subjects=["dl.>"], max_consumers=room)

    def consumers(stream: str, prefix: str) -> int:
        calls = [
            (
                f"$JS.API.CONSUMER.CREATE.{stream}.c{i}",
                {
                    "stream_name": stream,
                    "config": {
                        "durable_name": f"c{i}",
                        "ack_policy": "explicit",
                        "filter_subject": f"{prefix}.{i}",
                        "max_ack_pending": -1,
                    },
                },
            )
            for i in range(c)
        ]
        batched_requests(ctx, calls, "consumer create")
        return c

    timed_build(ctx, "create", "consumer create (interest stream)", "consumer", lambda: consumers("IN", "in"))
    consumers("WQ", "wq")
    consumers("DL", "dl")


def _spread(prefix: str, c: int, k: int) -> Iterable[str]:
    return (f"{prefix}.{i % c}" for i in range(k))


def _fetch_ack_all(ctx: Ctx) -> int:
    """Each consumer fetches its messages and acks each: until the interest stream is empty."""
    k, c = ctx.n(20_000), ctx.size
    dlv = Deliveries(ctx, auto_ack=True)
    dlv.conn.sub("_AK.*", 1)
    dlv.conn.flush()
    per = -(-k // c)
    dlv.conn.send(
        b"".join(
            pub_frame(
                f"$JS.API.CONSUMER.MSG.NEXT.IN.c{i}",
                json.dumps({"batch": per, "no_wait": True}).encode(),
                f"_AK.{i}",
            )
            for i in range(c)
        )
    )
    ctx.wait(lambda: dlv.acked, k)
    ctx.wait_messages("IN", 0, poll=0.01)
    return k


def list_pages(ctx: Ctx, api: str, key: str) -> int:
    """Page through ``$JS.API.<api>`` (a NAMES or LIST request) from offset 0 to the end, again
    until ~2,000 items were listed; returns how many were."""
    listed = 0
    while listed < ctx.n(2000):
        offset = 0
        while offset < ctx.size:
            page = ctx.api.api(api, {"offset": offset})
            got = len(page[key] or [])
            listed, offset = listed + got, offset + got
            if not got:
                break
    return listed


def _create_more(ctx: Ctx) -> int:
    k = ctx.n(200)
    tag = ctx.uid("m")
    ctx.state["more"] = [f"{tag}x{i}" for i in range(k)]
    answers = ctx.requests(
        [
            (
                f"$JS.API.CONSUMER.CREATE.IN.{name}",
                {
                    "stream_name": "IN",
                    "config": {
                        "durable_name": name,
                        "ack_policy": "explicit",
                        "filter_subject": f"in.{name}",
                    },
                },
            )
            for name in ctx.state["more"]
        ]
    )
    if any("error" in a for a in answers):
        raise RuntimeError(f"consumer create: {answers[0]}")
    return k


def _delete_stream(ctx: Ctx) -> int:
    ctx.api.api("STREAM.DELETE.DL")
    return int(ctx.size)


def _purge_stream(name: str) -> Callable[[Ctx], None]:
    def purge(ctx: Ctx) -> None:
        ctx.api.api(f"STREAM.PURGE.{name}")

    return purge


def _fill_interest(ctx: Ctx) -> None:
    ctx.publish(pubs(_spread("in", ctx.size, ctx.n(20_000))), ctx.n(20_000))


def _delete_more(ctx: Ctx) -> None:
    ctx.requests([(f"$JS.API.CONSUMER.DELETE.IN.{name}", {}) for name in ctx.state["more"]])


def _update_stream(ctx: Ctx) -> int:
    """``STREAM.UPDATE`` of stream ``DL`` (its consumers in place), its description changed each time."""
    room = ctx.size + 1000
    k = ctx.n(200)
    calls = [
        ("$JS.API.STREAM.UPDATE.DL", {"name": "DL", "subjects": ["dl.>"], "storage": "file", "max_consumers": room,
                                      "description": f"update {i}"})
        for i in range(k)
    ]  # fmt: skip
    answers = ctx.requests(calls, window=1)
    if any("error" in a for a in answers):
        raise RuntimeError(f"stream update: {next(a for a in answers if 'error' in a)}")
    return k


def ops_consumers() -> list[Op]:
    return [
        Op(
            "pub_interest",
            "publish, interest stream",
            "publish",
            lambda c: c.publish(pubs(_spread("in", c.size, c.n(50_000))), c.n(50_000)),
            cleanup=_purge_stream("IN"),
        ),
        Op(
            "pub_workqueue",
            "publish, work-queue stream",
            "publish",
            lambda c: c.publish(pubs(_spread("wq", c.size, c.n(50_000))), c.n(50_000)),
            cleanup=_purge_stream("WQ"),
        ),
        Op(
            "stream_info",
            "STREAM.INFO",
            "request",
            lambda c: len(c.requests([("$JS.API.STREAM.INFO.IN", {})] * c.n(500))),
        ),
        Op(
            "consumer_info",
            "CONSUMER.INFO",
            "request",
            lambda c: len(
                c.requests(
                    [(f"$JS.API.CONSUMER.INFO.IN.c{random.randrange(c.size)}", {}) for _ in range(c.n(500))]
                )
            ),
        ),
        Op("stream_update", "STREAM.UPDATE of their stream (description)", "request", _update_stream),
        Op("list", "CONSUMER.LIST pages", "consumer listed", lambda c: list_pages(c, "CONSUMER.LIST.IN", "consumers")),
        Op("names", "CONSUMER.NAMES pages", "name listed", lambda c: list_pages(c, "CONSUMER.NAMES.IN", "consumers")),
        Op("create", "create a durable consumer", "consumer", _create_more, cleanup=_delete_more),
        # Last but one: nats-server's can run past the budget at 10k consumers (its acks go on
        # after the cut and would be billed to the operations after it).
        Op(
            "ack_floor",
            "fetch + ack until the interest stream is empty",
            "acked msg",
            _fetch_ack_all,
            prepare=_fill_interest,
        ),
        Op("delete_stream", "delete a stream with them all", "consumer", _delete_stream, once=True),
    ]


# ---- 3. messages


def build_messages(ctx: Ctx) -> None:
    n = ctx.size
    ctx.state["rss_empty"] = server_rss_mib(ctx.target)
    create_stream(ctx, "M", subjects=["m.>"])
    timed_build(
        ctx,
        "fill",
        "publish (fill)",
        "publish",
        lambda: ctx.publish(pubs(f"m.{i % 1000}" for i in range(n)), n, window=5000),
    )
    ctx.state["disk_mib"] = disk_mib(ctx.target.store_dir)


def _gets(ctx: Ctx, body: Callable[[], dict[str, Any]], count: int = 10_000) -> int:
    """``count`` MSG.GET requests (10,000: at 10-20 µs of server CPU each, 2,000 were 2-4 clock
    ticks, a figure ±25% from tick to tick)."""
    k = ctx.n(count)
    answers = ctx.requests([("$JS.API.STREAM.MSG.GET.M", body()) for _ in range(k)])
    bad = [a for a in answers if "message" not in a]
    if bad:
        raise RuntimeError(f"get: {bad[0]}")
    return k


def holds(ctx: Ctx, stream: str, messages: int) -> bool:
    """``stream`` reports ``messages`` (a restart's readiness)."""
    info = ctx.api.api(f"STREAM.INFO.{stream}", timeout=max(ctx.left(), 1.0), check=False)
    return bool(info.get("state", {}).get("messages") == messages)


def restart_ops(
    ready: Callable[[Ctx], bool], per: str, units: Callable[[Ctx], int] = lambda c: int(c.size)
) -> list[Op]:
    """A clean restart and a ``kill -9`` one, each until ``ready``, counted in ``units`` of ``per``
    (the dimension's state, or one restart), with the resident memory after."""

    def run(kill: bool) -> Callable[[Ctx], int]:
        def restart(ctx: Ctx) -> int:
            ctx.restart_until(kill, lambda: ready(ctx))
            ctx.state["rss_restart"] = server_rss_mib(ctx.target)
            return units(ctx)

        return restart

    return [
        Op("restart", "restart after a clean stop", per, run(False), once=True, restart=True),
        Op("restart_kill", "restart after kill -9", per, run(True), once=True, restart=True),
    ]


def _compact(ctx: Ctx) -> int:
    half = ctx.size // 2
    ctx.api.api("STREAM.PURGE.M", {"seq": half + 1})
    return half


def _purge(ctx: Ctx) -> int:
    """Purge the rest, until its blocks are gone from the disk as well.

    Why the wait: nats-server's purge renames its msgs directory aside and answers, a goroutine
    removing it afterwards (``fileStore.purgeLocked``); ours renames a large purge's blocks aside
    for a thread (4c5a674). Read at the answer, nats-server's figure was under a tick and ours
    whatever of the removal our thread had done by then (the 50 M run's CPU>2x, 0.01 against
    ~0.00 µs a message): both servers' removals are counted, each to its end."""
    left = ctx.stream_state("M")["messages"]
    before = disk_mib(ctx.target.store_dir)
    ctx.api.api("STREAM.PURGE.M", timeout=max(ctx.left(), 1.0))
    files_removed(ctx, before)
    return int(left)


def files_removed(ctx: Ctx, before: float) -> None:
    """Until the store's disk use is under a tenth of ``before`` (+1 MiB of what a stream keeps)
    and has stopped falling, or the budget runs out: a removal done out of band has ended."""
    last = before
    while ctx.left() > 0:
        now = disk_mib(ctx.target.store_dir)
        if now <= before / 10 + 1 and now >= last:
            return
        last = now
        time.sleep(0.01)


#: Messages published just before a ``kill -9`` (`restart_unsynced`): the stream state (our
#: ``index.db``, nats-server's) is written at a stop or a sync (every ``sync_interval``, 2 min by
#: default on both, a new process's timer just started), so a crash restart reads them from the
#: blocks — ours the active block's records after its sealed blocks' indexes (``scan_run``),
#: nats-server's ``recoverFullState`` the blocks written after its ``index.db``.
UNSYNCED = 100_000


def _publish_unsynced(ctx: Ctx) -> None:
    """A clean restart (the state written, on both servers: each of the row's restarts reads the
    same messages since it, not those of the restarts before too), then the messages."""
    total = ctx.state.get("m_total", ctx.size)
    ctx.restart_until(False, lambda: holds(ctx, "M", total))
    k = ctx.n(UNSYNCED)
    ctx.publish(pubs(f"m.{i % 1000}" for i in range(k)), k, window=5000)
    ctx.state["unsynced"] = k
    ctx.state["m_total"] = total + k


def _restart_unsynced(ctx: Ctx) -> int:
    ctx.restart_until(True, lambda: holds(ctx, "M", ctx.state["m_total"]))
    return int(ctx.state["unsynced"])


def ops_messages() -> list[Op]:
    return [
        Op(
            "get_seq",
            "get by sequence (random)",
            "get",
            lambda c: _gets(c, lambda: {"seq": random.randrange(1, c.size + 1)}),
        ),
        Op(
            "get_last",
            "get last by subject",
            "get",
            lambda c: _gets(c, lambda: {"last_by_subj": f"m.{random.randrange(1000)}"}),
        ),
        Op(
            "get_first",
            "get first by subject (next_by_subj from 1)",
            "get",
            lambda c: _gets(c, lambda: {"seq": 1, "next_by_subj": f"m.{random.randrange(1000)}"}),
        ),
        Op(
            "info",
            "STREAM.INFO",
            "request",
            lambda c: len(c.requests([("$JS.API.STREAM.INFO.M", {})] * c.n(500))),
        ),
        *restart_ops(lambda c: holds(c, "M", c.size), "restart", lambda c: 1),
        Op(
            "restart_unsynced",
            "restart after kill -9, 100k msgs published since the state",
            "msg since",
            _restart_unsynced,
            prepare=_publish_unsynced,
            once=True,
            restart=True,
        ),
        Op("compact", "compact: purge up to the middle", "removed msg", _compact, once=True),
        Op("purge", "purge the rest", "removed msg", _purge, once=True),
    ]


# ---- 4. interior deletes


def build_gaps(ctx: Ctx) -> None:
    g = ctx.size
    create_stream(ctx, "G", subjects=["g.>"])
    ctx.publish(pubs(["g.edge"] * 1000), 1000)
    ctx.publish(pubs(itertools.repeat("g.mid", g)), g, window=5000)
    ctx.publish(pubs(["g.edge"] * 1000), 1000)
    timed_build(
        ctx,
        "purge",
        "purge the middle (filter)",
        "removed msg",
        lambda: int(ctx.api.api("STREAM.PURGE.G", {"filter": "g.mid"}, timeout=3600)["purged"]),
    )


def ops_gaps() -> list[Op]:
    def across(pull: bool) -> Callable[[Ctx], int]:
        def run(c: Ctx) -> int:
            fn = consume_pull if pull else consume_push
            return sum(fn(c, "G", {"deliver_policy": "all"}, 2000) for _ in range(3))

        return run

    return [
        Op(
            "info",
            "STREAM.INFO",
            "request",
            lambda c: len(c.requests([("$JS.API.STREAM.INFO.G", {})] * c.n(500))),
        ),
        Op("push_across", "push consumer across the gap", "delivered msg", across(False)),
        Op("pull_across", "pull consumer across the gap", "delivered msg", across(True)),
        Op(
            "next_after",
            "get next g.edge after the gap's start",
            "get",
            lambda c: len(
                c.requests([("$JS.API.STREAM.MSG.GET.G", {"seq": 1001, "next_by_subj": "g.edge"})] * c.n(500))
            ),
        ),
        Op(
            "get_deleted",
            "get a deleted sequence (404)",
            "get",
            lambda c: len(
                c.requests(
                    [
                        ("$JS.API.STREAM.MSG.GET.G", {"seq": 1001 + random.randrange(c.size)})
                        for _ in range(c.n(500))
                    ]
                )
            ),
        ),
        *restart_ops(lambda c: holds(c, "G", 2000), "restart", lambda c: 1),
    ]


# ---- 5. pending acks


def build_acks(ctx: Ctx) -> None:
    p, k = ctx.size, ctx.n(100_000)
    ctx.state["k"] = k
    total = p + 3 * k + 1000  # two rounds of k acks each let k new messages through
    create_stream(ctx, "PA", subjects=["pa.>"])
    ctx.publish(pubs(itertools.repeat("pa.x", total)), total, window=5000)
    dlv = Deliveries(ctx, collect=True)
    dlv.conn.sub("_PAD", 1)
    dlv.conn.flush()
    ctx.state["dlv"] = dlv

    def deliver() -> int:
        ctx.api.api(
            "CONSUMER.CREATE.PA.A",
            {
                "stream_name": "PA",
                "config": {
                    "durable_name": "A",
                    "deliver_subject": "_PAD",
                    "ack_policy": "explicit",
                    "ack_wait": 3600 * SECOND,
                    "max_ack_pending": p,
                },
            },
        )
        return ctx.wait(lambda: len(dlv.pending), p)

    timed_build(ctx, "deliver", "deliver up to max_ack_pending", "delivered msg", deliver)


def _ack_some(ctx: Ctx, reply: bytes) -> int:
    """Ack (or nak) ``k`` random pending messages, at most half of them at a time; each one lets
    another through (or comes back), which the next turn may pick."""
    k, dlv = ctx.state["k"], ctx.state["dlv"]
    base = dlv.conn.deliveries
    pending = dlv.pending
    turn = max(ctx.size // 2, 1)
    done = 0
    while done < k:
        frames = []
        with RawConn.COND:
            for _ in range(min(turn, k - done)):
                i = random.randrange(len(pending))
                pending[i], pending[-1] = pending[-1], pending[i]
                frames.append(b"PUB " + pending.pop() + b" %d\r\n%b\r\n" % (len(reply), reply))
        dlv.conn.send(b"".join(frames))
        done += len(frames)
        ctx.wait(lambda: dlv.conn.deliveries - base, done)  # the pending list is full again
    return k


def _redeliver_all(ctx: Ctx) -> int:
    p = ctx.size
    last = ctx.stream_state("PA")["last_seq"]
    dlv = Deliveries(ctx)
    dlv.conn.sub("_PAR", 1)
    dlv.conn.flush()
    name = ctx.uid("R")
    ctx.api.api(
        f"CONSUMER.CREATE.PA.{name}",
        {
            "stream_name": "PA",
            "config": {
                "durable_name": name,
                "deliver_subject": "_PAR",
                "ack_policy": "explicit",
                "ack_wait": SECOND,
                "max_deliver": 2,
                "max_ack_pending": p,
                "deliver_policy": "by_start_sequence",
                "opt_start_seq": last - p + 1,
            },
        },
    )
    try:
        ctx.wait(lambda: dlv.conn.deliveries, 2 * p)
    finally:
        ctx.api.api(f"CONSUMER.DELETE.PA.{name}", check=False)
    return p


def ops_acks() -> list[Op]:
    return [
        Op("ack_next", "ack one (random) + the next delivered", "ack", lambda c: _ack_some(c, b"+ACK")),
        Op("nak", "nak one (random) + its redelivery", "nak", lambda c: _ack_some(c, b"-NAK")),
        Op(
            "pub_blocked",
            "publish while the consumer is at max_ack_pending",
            "publish",
            lambda c: c.publish(pubs(itertools.repeat("pa.x", c.state["k"])), c.state["k"]),
        ),
        Op(
            "redeliver", "ack-wait (1 s) redelivery of all of them", "pending msg", _redeliver_all, wall=False
        ),
    ]


# ---- 6. waiting pull requests, pull consumers


def build_pulls(ctx: Ctx) -> None:
    r, c = ctx.size
    create_stream(ctx, "WP", subjects=["wp.>"])
    ctx.api.api(
        "CONSUMER.CREATE.WP.W",
        {"stream_name": "WP", "config": {"durable_name": "W", "ack_policy": "none", "max_waiting": r + 100}},
    )
    asked = itertools.count()
    request = json.dumps({"batch": 1, "expires": 900 * SECOND}).encode()

    def refill(conn: RawConn, k: int) -> None:  # a new request for each one used
        conn.send(
            b"".join(
                pub_frame("$JS.API.CONSUMER.MSG.NEXT.WP.W", request, f"_WPR.{next(asked)}") for _ in range(k)
            )
        )

    wp = ctx.conn(on_count=refill)
    wp.sub("_WPR.*", 1)
    wp.flush()
    ctx.state["wp"] = wp

    def wait_requests() -> int:
        for i in range(0, r, 1000):
            wp.send(
                b"".join(
                    pub_frame("$JS.API.CONSUMER.MSG.NEXT.WP.W", request, f"_WPR.{next(asked)}")
                    for _ in range(min(1000, r - i))
                )
            )
        wp.flush()
        return r

    timed_build(ctx, "requests", "queue a waiting pull request", "request", wait_requests)
    create_stream(ctx, "PC", subjects=["pc.>"], max_consumers=c + 1000)
    pc = ctx.conn()
    pc.sub("_PCR.*", 1)
    pc.flush()
    ctx.state["pc"] = pc

    def consumers() -> int:
        batched_requests(
            ctx,
            [
                (
                    f"$JS.API.CONSUMER.CREATE.PC.p{i}",
                    {
                        "stream_name": "PC",
                        "config": {
                            "durable_name": f"p{i}",
                            "ack_policy": "none",
                            "filter_subject": f"pc.{i}",
                        },
                    },
                )
                for i in range(c)
            ],
            "consumer create",
        )
        big = json.dumps({"batch": 10_000_000, "expires": 900 * SECOND}).encode()
        pc.send(b"".join(pub_frame(f"$JS.API.CONSUMER.MSG.NEXT.PC.p{i}", big, f"_PCR.{i}") for i in range(c)))
        pc.flush()
        return c

    timed_build(ctx, "consumers", "pull consumer create + its request", "consumer", consumers)


def _pub_delivered(ctx: Ctx, conn_key: str, subjects: Iterable[str], k: int) -> int:
    conn = ctx.state[conn_key]
    base = conn.deliveries
    ctx.publish(pubs(subjects), k)
    return ctx.wait(lambda: conn.deliveries - base, k)


def ops_pulls() -> list[Op]:
    return [
        Op(
            "waiting",
            "publish taken by a waiting request (+ a new one)",
            "msg",
            lambda c: _pub_delivered(c, "wp", itertools.repeat("wp.x"), c.n(20_000)),
        ),
        Op(
            "consumers",
            "publish into one of the pull consumers",
            "msg",
            lambda c: _pub_delivered(c, "pc", _spread("pc", c.size[1], c.n(50_000)), c.n(50_000)),
        ),
    ]


# ---- 7. connections and subscriptions


def sub_line(i: int) -> bytes:
    """Subscription ``i``: literal, ``*``, ``>`` or a queue group, each matching only ``s.<i>.x``."""
    kind = i % 4
    subject = (f"s.{i}.x", f"s.{i}.*", f"s.{i}.>", f"s.{i}.x q")[kind]
    return f"SUB {subject} {i}\r\n".encode()


def build_conns(ctx: Ctx) -> None:
    k, s = ctx.size
    many = ManyConns(ctx.port, k)
    ctx.conns.append(many)
    for i in range(k):
        many.send(i, f"SUB c.{i} 1\r\n".encode())
    many.flush()
    ctx.state["many"] = many
    subs = ctx.conn()
    ctx.state["subs"] = subs

    def subscribe() -> int:
        for i in range(0, s, 10_000):
            subs.send(b"".join(sub_line(j) for j in range(i, min(i + 10_000, s))))
        subs.flush()
        return s

    timed_build(ctx, "subscribe", "subscribe (mixed kinds, one connection)", "sub", subscribe)


def _prepare_blast(subjects: Callable[[Ctx], list[str]], count: int) -> Callable[[Ctx], None]:
    """Frame the publishes before the run: ``count`` messages cycling over ``subjects``."""

    def prepare(ctx: Ctx) -> None:
        names, k = subjects(ctx), ctx.n(count) // 1000 * 1000
        ctx.state["blast"] = [
            b"".join(pub_frame(names[(c + i) % len(names)], P16) for i in range(1000))
            for c in range(0, k, 1000)
        ]
        ctx.state["blast_conn"] = ctx.conn()

    return prepare


def _blast(ctx: Ctx, received: Callable[[], int]) -> int:
    chunks: list[bytes] = ctx.state.pop("blast")
    pub: RawConn = ctx.state["blast_conn"]
    base = received()
    for chunk in chunks:
        pub.send(chunk)
    return ctx.wait(lambda: received() - base, 1000 * len(chunks))


def _connect_close(ctx: Ctx) -> int:
    k = ctx.n(200)
    for _ in range(k):
        RawConn(ctx.port).close()
    return k


def _sub_unsub(ctx: Ctx) -> int:
    k = ctx.n(10_000)
    conn = ctx.conn()
    conn.send(b"".join(f"SUB u.{i}.* {i}\r\n".encode() for i in range(k)))
    conn.send(b"".join(f"UNSUB {i}\r\n".encode() for i in range(k)))
    conn.flush(max(ctx.left(), 1.0))
    return k


def ops_conns() -> list[Op]:
    def hot(c: Ctx) -> list[str]:
        s = c.size[1]
        return [f"s.{j * (s // 100)}.x" for j in range(100)]

    many = lambda c: c.state["many"].msgs  # noqa: E731
    subs = lambda c: c.state["subs"].msgs  # noqa: E731
    return [
        Op(
            "route_conns",
            "publish to one of the connections",
            "msg",
            lambda c: _blast(c, lambda: many(c)),
            prepare=_prepare_blast(lambda c: [f"c.{i}" for i in range(c.size[0])], 200_000),
        ),
        Op("connect", "connect + close", "connection", _connect_close),
        Op(
            "match_hot",
            "publish, 100 subjects (match cache hits)",
            "msg",
            lambda c: _blast(c, lambda: subs(c)),
            # 2,000,000: nats-server takes ~0.3 µs of CPU per message here, 200,000 were under 10 ticks
            prepare=_prepare_blast(hot, 2_000_000),
        ),
        Op(
            "match_cold",
            "publish, all the subjects (cache misses)",
            "msg",
            lambda c: _blast(c, lambda: subs(c)),
            prepare=_prepare_blast(lambda c: [f"s.{i}.x" for i in range(c.size[1])], 500_000),
        ),
        Op("sub_unsub", "subscribe + unsubscribe", "sub", _sub_unsub),
    ]


# ---- 8. TTL timers, dedupe window, schedules


def _at(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def build_timers(ctx: Ctx) -> None:
    x = ctx.size
    create_stream(ctx, "TT", subjects=["tt.>"], allow_msg_ttl=True)
    timed_build(
        ctx,
        "ttl",
        "publish with a 1 h TTL",
        "publish",
        lambda: ctx.publish(pubs((f"tt.{i}" for i in range(x)), lambda i: header_block(Nats_TTL="1h")), x),
    )
    create_stream(ctx, "DD", subjects=["dd.>"], duplicate_window=3600 * SECOND)
    timed_build(
        ctx,
        "ids",
        "publish with a new message id",
        "publish",
        lambda: ctx.publish(
            pubs((f"dd.{i % 1000}" for i in range(x)), lambda i: header_block(Nats_Msg_Id=f"id-{i}")), x
        ),
    )
    create_stream(ctx, "SC", subjects=["sc.>"], allow_msg_schedules=True)
    timed_build(
        ctx,
        "schedules",
        "publish a schedule (@at 2099)",
        "publish",
        lambda: ctx.publish(
            pubs(
                (f"sc.s.{i}" for i in range(x)),
                lambda i: header_block(
                    Nats_Schedule="@at 2099-01-01T00:00:00Z", Nats_Schedule_Target=f"sc.t.{i}"
                ),
            ),
            x,
        ),
    )


def _fire(ctx: Ctx) -> int:
    k = ctx.n(2000)
    tag = ctx.uid("f")
    dlv = Deliveries(ctx)
    dlv.conn.sub("_SCF", 1)
    dlv.conn.flush()
    name = ctx.uid("F")
    ctx.api.api(
        f"CONSUMER.CREATE.SC.{name}",
        {
            "stream_name": "SC",
            "config": {
                "name": name,
                "deliver_subject": "_SCF",
                "ack_policy": "none",
                "filter_subject": f"sc.{tag}.t.>",
                "deliver_policy": "new",
                "inactive_threshold": 300 * SECOND,
            },
        },
    )
    at = _at(2)
    try:
        ctx.publish(
            pubs(
                (f"sc.{tag}.s.{j}" for j in range(k)),
                lambda j: header_block(Nats_Schedule=f"@at {at}", Nats_Schedule_Target=f"sc.{tag}.t.{j}"),
            ),
            k,
        )
        return ctx.wait(lambda: dlv.conn.deliveries, k)
    finally:
        ctx.api.api(f"CONSUMER.DELETE.SC.{name}", check=False)


def _publish(c: Ctx, subject: Callable[[int], str], headers: Callable[[int], bytes] | None, k: int) -> int:
    return c.publish(pubs((subject(j) for j in range(k)), headers), k)


def _pub_ttl(c: Ctx) -> int:
    t = c.uid("r")
    return _publish(c, lambda j: f"tt.n.{t}.{j}", lambda i: header_block(Nats_TTL="1h"), c.n(50_000))


def _pub_id_new(c: Ctx) -> int:
    t = c.uid("r")
    return _publish(
        c, lambda j: f"dd.{j % 1000}", lambda j: header_block(Nats_Msg_Id=f"{t}-{j}"), c.n(50_000)
    )


def _pub_schedule(c: Ctx) -> int:
    t = c.uid("r")

    def headers(j: int) -> bytes:
        return header_block(Nats_Schedule="@at 2099-01-01T00:00:00Z", Nats_Schedule_Target=f"sc.t2.{t}.{j}")

    return _publish(c, lambda j: f"sc.s2.{t}.{j}", headers, c.n(5000))


#: Publishes of an operation that adds no timer, id or schedule: 200,000, ~60 clock ticks at 3 µs
#: (50,000 were ~15, and each of session 10's runs flagged a different one of these rows).
PLAIN_PUBS = 200_000


def ops_timers() -> list[Op]:
    publish = _publish
    return [
        Op(
            "pub_ttl",
            "publish with a 1 h TTL",
            "publish",
            _pub_ttl,
        ),
        Op(
            "pub_plain_ttl",
            "publish without a TTL (TTL stream)",
            "publish",
            lambda c: publish(c, lambda j: f"tt.p.{j % 1000}", None, c.n(PLAIN_PUBS)),
        ),
        Op(
            "pub_id_new",
            "publish with a new message id",
            "publish",
            _pub_id_new,
        ),
        Op(
            "pub_id_dup",
            "publish with a duplicate message id",
            "publish",
            lambda c: publish(
                c,
                lambda j: f"dd.{j % 1000}",
                lambda j: header_block(Nats_Msg_Id=f"id-{random.randrange(c.size)}"),
                c.n(PLAIN_PUBS),
            ),
        ),
        Op(
            "pub_plain_sched",
            "publish, plain (schedules stream)",
            "publish",
            lambda c: publish(c, lambda j: f"sc.p.{j % 1000}", None, c.n(PLAIN_PUBS)),
        ),
        Op(
            "pub_schedule",
            "publish a new schedule (@at 2099)",
            "publish",
            _pub_schedule,
        ),
        Op("ttl_expiry", "5,000 TTL 1 s expiries", "expired msg", lambda c: _ttl_expiry(c, "TT"), wall=False),
        Op("sched_fire", "2,000 schedules firing (@at +2 s)", "fired", _fire, wall=False),
    ]


# Operations that leave the state as they found it: repeated until --min-time, so that a quick one is
# made of enough CPU clock ticks.
REPEATED = {
    "subjects": {
        "push_all",
        "push_tenth",
        "pull_tenth",
        "ordered",
        "kv_watch",
        "kv_keys",
        "kv_history",
        "info_wild",
        "multi_last",
    },
    "consumers": {"stream_info", "consumer_info", "stream_update", "list", "names"},
    "messages": {"get_seq", "get_last", "get_first", "info"},
    "gaps": {"info", "push_across", "pull_across", "next_after", "get_deleted"},
    "conns": {"connect", "sub_unsub"},
}


def dimensions(args: argparse.Namespace) -> list[Dimension]:
    pulls = lambda s: f"{s[0]:,} requests + {s[1]:,} consumers"  # noqa: E731
    conns = lambda s: f"{s[0]:,} conns + {s[1]:,} subs"  # noqa: E731
    consumers = [100, 1000, 10_000] if args.consumers_10k else [10, 100, 1000]
    messages = [500_000, 5_000_000, 50_000_000] if args.messages_50m else [100_000, 1_000_000, 10_000_000]
    dims = [
        Dimension(
            "subjects",
            "subjects / keys",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_subjects,
            ops_subjects(),
        ),
        Dimension(
            "consumers",
            "consumers on a stream",
            consumers,
            [c // 10 for c in consumers],
            build_consumers,
            ops_consumers(),
        ),
        Dimension(
            "messages",
            "file-stored messages",
            messages,
            [m // 100 for m in messages],
            build_messages,
            ops_messages(),
        ),
        Dimension(
            "gaps",
            "interior deletes (deleted sequences)",
            [10_000, 100_000, 1_000_000],
            [1000, 10_000, 100_000],
            build_gaps,
            ops_gaps(),
        ),
        Dimension(
            "acks", "pending acks", [1000, 10_000, 100_000], [100, 1000, 10_000], build_acks, ops_acks()
        ),
        Dimension(
            "pulls",
            "waiting pull requests / pull consumers",
            [(100, 10), (1000, 100), (10_000, 1000)],
            [(10, 10), (100, 10), (1000, 100)],
            build_pulls,
            ops_pulls(),
            pulls,
        ),
        Dimension(
            "conns",
            "connections / subscriptions",
            [(10, 1000), (100, 10_000), (1000, 100_000)],
            [(10, 100), (10, 1000), (100, 10_000)],
            build_conns,
            ops_conns(),
            conns,
        ),
        Dimension(
            "timers",
            "TTL timers, dedupe ids, schedules",
            [1000, 10_000, 100_000],
            [100, 1000, 10_000],
            build_timers,
            ops_timers(),
        ),
    ]
    for dim in dims:
        for op in dim.ops:
            op.repeat = op.key in REPEATED.get(dim.key, set())
    # (here, not at the top: scale_more builds on this module)
    from scale_more import more_dimensions

    return dims + more_dimensions()


# ---------------------------------------------------------------------------------------------- driver


def settle(target: Target, limit: float = 30.0) -> None:
    """Wait until the server is idle (< 10 % of a core over 0.25 s): leftover work of the last
    operation must not count in the next one."""
    end = time.monotonic() + limit
    prev = server_cpu(target)
    while time.monotonic() < end:
        time.sleep(0.25)
        cur = server_cpu(target)
        if cur - prev <= 0.025:
            return
        prev = cur


def measure(ctx: Ctx, op: Op) -> Figure | str:
    try:
        ctx.deadline = time.monotonic() + 2 * ctx.budget
        if op.prepare:
            op.prepare(ctx)
        settle(ctx.target)
        ctx.deadline = time.monotonic() + ctx.budget
        cpu0, t0 = server_cpu(ctx.target), time.perf_counter()
        done, partial = 0, False
        while True:
            try:
                done += op.run(ctx)
            except Partial as cut:
                done, partial = done + cut.done, True
            if partial or not op.repeat or time.perf_counter() - t0 >= ctx.min_time:
                break
        wall = time.perf_counter() - t0
        cpu = ctx.restart_cpu if op.restart else server_cpu(ctx.target) - cpu0
        ctx.deadline = time.monotonic() + 2 * ctx.budget
        if op.cleanup and not partial:
            op.cleanup(ctx)
        return _figure(wall, cpu, done, partial)
    except Exception as exc:  # one failing operation must not end the run
        return f"error: {type(exc).__name__}: {str(exc)[:200]}"


def better(old: Figure | str | None, new: Figure | str) -> Figure | str:
    if not isinstance(old, Figure):
        return new
    if not isinstance(new, Figure):
        return old
    return Figure(
        min(old.wall_us, new.wall_us),
        min(old.cpu_us, new.cpu_us),
        max(old.ops, new.ops),
        max(old.ticks, new.ticks),
        old.partial and new.partial,
    )


def median(figs: list[Figure | str]) -> Figure | str:
    """The median of a restart's samples (the CPU's and, apart, the wall time's), the error when none
    has a figure. Why the median and not the best: a restart is one start of a process, whose CPU
    varies with the machine's load by ±25% (nats-server's Go runtime, our interpreter), and the
    least of a few such samples is the luckiest, while the median of five moves little."""
    good = sorted((f for f in figs if isinstance(f, Figure)), key=lambda f: f.cpu_us)
    if not good:
        return figs[-1]
    mid = good[(len(good) - 1) // 2]
    walls = sorted(f.wall_us for f in good)
    partial = any(f.partial for f in good)
    return Figure(walls[(len(walls) - 1) // 2], mid.cpu_us, mid.ops, mid.ticks, partial)


#: When the last size's stores were removed (monotonic seconds) and how many files they held.
_removed: tuple[float, int] = (0.0, 0)
#: Files removed at once past which the next size waits for the file system (see `fs_settle`).
MANY_FILES = 1000


def fs_settle(seconds: float) -> None:
    """Before a size's servers start: write back what the file system holds dirty and, when the last
    size removed many files, wait until ``seconds`` have passed since.

    Why: this machine's ext4 has no journal, and without one ext4 does not reuse an inode deleted less
    than 60 s ago (300 s more while its inode table block is dirty: ``recently_deleted`` in
    ``fs/ext4/ialloc.c``). Each file created just after tens of thousands were removed — the previous
    size's consumer directories — first skips over them, in system time billed to the creating server,
    and the server that builds first pays the most. Both targets build on a file system whose deletes
    are at least ``seconds`` old and written back."""
    os.sync()
    when, files = _removed
    if files >= MANY_FILES and seconds > 0:
        wait = when + seconds - time.monotonic()
        if wait > 0:
            progress(
                f"waiting {wait:.0f} s: {files:,} files removed (ext4 reuses no inode deleted < 60 s ago)"
            )
            time.sleep(wait)


def _forget(root: Path) -> None:
    """Remove a size's stores now and note when and how many files (for `fs_settle`)."""
    global _removed
    files = sum(1 for _ in root.rglob("*"))
    shutil.rmtree(root, ignore_errors=True)
    os.sync()
    _removed = (time.monotonic(), files)


def turns_order(kinds: Iterable[str], turn: int) -> list[str]:
    """The targets in the order they take turn ``turn``: each goes first every other turn (a size's
    build, an operation's round), so neither always inherits what the other left (freed inodes,
    dirty pages, a warm or cold cache)."""
    order = list(kinds)
    return order[turn % len(order) :] + order[: turn % len(order)]


class Turns:
    """Whose turn it is to build: the servers' builds run in threads, one at a time, each passing the
    turn at the end of a batch (`Ctx.take_turn`) to the next server still building.

    Why: a build that creates thousands of files (a size's consumers) costs the server system time
    that depends on the file system's state. On this machine's ext4 without a journal an inode deleted
    less than 60 s ago is not reused, and whoever creates files first after many were removed skips
    them; built one after the other, the first server paid for it (the consumer-create build row at
    10k consumers: 1,231 µs against nats-server's 443, ours first; in alternating batches of 250 it
    was 912 against 1,187). In alternating batches both build on the same file system at the same
    time, and each server's timed steps count only its own batches."""

    def __init__(self, order: list[str]) -> None:
        self._cond = threading.Condition()
        self._order = order
        self._building = set(order)
        self._turn = order[0]

    def wait(self, kind: str) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._turn == kind)

    def _next(self, kind: str) -> None:
        """(Under the lock) the turn goes to the next server after ``kind`` still building."""
        i = self._order.index(kind)
        for other in self._order[i + 1 :] + self._order[: i + 1]:
            if other in self._building:
                self._turn = other
                break
        self._cond.notify_all()

    def pass_on(self, kind: str) -> None:
        with self._cond:
            self._next(kind)
            self._cond.wait_for(lambda: self._turn == kind)

    def done(self, kind: str) -> None:
        with self._cond:
            self._building.discard(kind)
            self._next(kind)


def _build(dim: Dimension, ctx: Ctx, turns: Turns, out: dict[str, Any]) -> None:
    """One server's build, in its own thread, taking turns with the other's (`Turns`)."""
    label = f"{dim.key} {dim.size_label(ctx.size)}: {ctx.kind}"
    turns.wait(ctx.kind)
    ctx.turns = turns
    rss0 = server_rss_mib(ctx.target)
    t0 = time.perf_counter()
    try:
        dim.build(ctx)
    except Exception as exc:  # measure what can be: the other server, the other sizes
        ctx.state["build_error"] = f"error: build: {type(exc).__name__}: {str(exc)[:200]}"
        progress(f"{label} {ctx.state['build_error']}")
    finally:
        ctx.turns = None
        turns.done(ctx.kind)
    settle(ctx.target)
    out["rss"][ctx.kind] = {"start": rss0, "built": server_rss_mib(ctx.target)}
    extra = {k: v for k, v in ctx.state.items() if k in ("rss_empty", "disk_mib")}
    out["extra"][ctx.kind] = {"build_s": time.perf_counter() - t0, **extra}
    for op, fig in ctx.state.get("_builds", []):
        out["ops"].setdefault(op.key, {"op": op, "figs": {}})["figs"][ctx.kind] = fig
    progress(f"{label} built in {time.perf_counter() - t0:.0f} s")


def build_both(dim: Dimension, ctxs: dict[str, Ctx], index: int, out: dict[str, Any]) -> None:
    """Both servers' builds, interleaved batch by batch (`Turns`), the first turn alternating by size."""
    turns = Turns(turns_order(ctxs, index))
    threads = [
        threading.Thread(target=_build, args=(dim, ctx, turns, out), daemon=True) for ctx in ctxs.values()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_size(
    dim: Dimension, size: Any, args: argparse.Namespace, rounds: int, index: int = 0
) -> dict[str, Any]:
    scale = 0.1 if args.quick else 1.0
    out: dict[str, Any] = {"ops": {}, "rss": {}, "extra": {}}
    fs_settle(args.fs_settle)
    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    settings = {**dim.settings, **(dim.sized_settings(size) if dim.sized_settings else {})}
    with servers(workdir=root, **settings) as targets:
        ctxs = {kind: Ctx(kind, t, size, scale, args.budget, args.min_time) for kind, t in targets.items()}
        try:
            build_both(dim, ctxs, index, out)
            for op in dim.ops:
                entry = out["ops"].setdefault(op.key, {"op": op, "figs": {}})
                samples: dict[str, list[Figure | str]] = {}
                for r in range(args.restarts if op.restart else 1 if op.once else rounds):
                    for kind in turns_order(ctxs, index + r):
                        ctx = ctxs[kind]
                        prev = entry["figs"].get(kind)
                        if isinstance(prev, Figure) and prev.partial:
                            continue  # cut once: not again
                        if "build_error" in ctx.state:
                            entry["figs"][kind] = ctx.state["build_error"]
                            continue
                        fig = measure(ctx, op)
                        samples.setdefault(kind, []).append(fig)
                        entry["figs"][kind] = median(samples[kind]) if op.restart else better(prev, fig)
                progress(
                    f"{dim.key} {dim.size_label(size)}: {op.key} "
                    + " | ".join(f"{k} {fmt_fig(entry['figs'].get(k), True)}" for k in KINDS)
                )
            for kind, ctx in ctxs.items():
                out["rss"][kind]["end"] = server_rss_mib(ctx.target)
                if "rss_restart" in ctx.state:
                    out["extra"][kind]["rss_restart"] = ctx.state["rss_restart"]
        finally:
            for ctx in ctxs.values():
                ctx.close()
            for target in targets.values():
                target.stop()
            _forget(root)
    return out


def size_or_error(dim: Dimension, size: Any, args: argparse.Namespace, rounds: int, index: int) -> dict[str, Any]:
    """`run_size`, or every operation an error when a server does not start at that size (the
    embedded server with 10,000 subject mappings took minutes before session 13: the other sizes
    and dimensions are still measured)."""
    try:
        return run_size(dim, size, args, rounds, index)
    except RuntimeError as exc:
        error = f"error: {str(exc).splitlines()[0][:200]}"
        progress(f"{dim.key} {dim.size_label(size)}: {error}")
        return {
            "ops": {op.key: {"op": op, "figs": dict.fromkeys(KINDS, error)} for op in dim.ops},
            "rss": {kind: {"start": 0.0, "built": 0.0, "end": 0.0} for kind in KINDS},
            "extra": {kind: {} for kind in KINDS},
        }


# ---------------------------------------------------------------------------------------------- report


def progress(text: str) -> None:
    print(
        f"  [{time.strftime('%H:%M:%S')} load {load_average().split()[0]}] {text}",
        file=sys.stderr,
        flush=True,
    )


def fmt_us(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:,.2f} s"
    if v >= 100:
        return f"{v:,.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


def fmt_fig(fig: Figure | str | None, cpu: bool) -> str:
    if fig is None:
        return "—"
    if isinstance(fig, str):
        return "error"
    mark = "≥" if fig.partial else ("~" if cpu and fig.ticks < 10 else "")
    return mark + fmt_us(fig.cpu_us if cpu else fig.wall_us)


def growth_base(figs: dict[str, list[Any]]) -> int:
    """The size the growth is measured from: the smallest at which both servers' CPU figures are made
    of at least 10 clock ticks, else the smallest. A build of 1,000 things is a tick or two, and a
    growth from it measures the tick, not the server; from the middle size the growth is still over
    a 10× growth of the state, which is what issue 24's target is about."""
    n = min(len(f) for f in figs.values())
    for i in range(n - 1):
        if all(isinstance(f[i], Figure) and not f[i].partial and f[i].ticks >= 10 for f in figs.values()):
            return i
    return 0


#: Read a growth from the wall time where a CPU figure is under 3 clock ticks (`growth`): what the
#: CPU figures needed while they were read from ``/proc``'s 10 ms ticks (until session 13).
WALL_UNDER_3_TICKS = False


def growth(figs: list[Any], wall_ok: bool = True, base: int = 0) -> float | None:
    """CPU per operation at the largest size over the ``base`` size's.

    Always the CPU: since session 13 it is read from the process's CPU clock to the nanosecond
    (`rawnats.process_cpu`), so a figure of 1-3 ticks' worth is short but not rounded. Until then
    such a figure was read as 0-30 ms, and the growth came from the wall time instead (unless the
    wall time is a timer's: ``wall_ok``). But the wall time per operation is the driver's
    pipelining and the machine's load as much as the server: the timers build's 1,000 publishes
    with message ids took 9-27 µs of wall and 7-12 of CPU in four runs, and of the saved runs of
    sessions 13-17, 13 rows flagged GROWS on a wall-time growth had a CPU growth under the line
    (the timers and pulls builds, a stream import's publish). ``WALL_UNDER_3_TICKS`` brings the
    wall-time rule back (a ``--render`` of a run older than session 13)."""
    first, last = figs[base], figs[-1]
    if not isinstance(first, Figure) or not isinstance(last, Figure):
        return None
    a, b = first.cpu_us, last.cpu_us
    if WALL_UNDER_3_TICKS and wall_ok and (first.ticks < 3 or last.ticks < 3):
        a, b = first.wall_us, last.wall_us
    return b / a if a > 0 else None


def op_rows(dim: Dimension, sizes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per operation: the figures by server and size, growths, ratio at the largest size, flags."""
    rows = []
    keys = list(dict.fromkeys(k for s in sizes for k in s["ops"]))
    for key in keys:
        op: Op = next(s["ops"][key]["op"] for s in sizes if key in s["ops"])
        figs = {kind: [s["ops"].get(key, {}).get("figs", {}).get(kind) for s in sizes] for kind in KINDS}
        base = growth_base(figs)
        g = {kind: growth(figs[kind], op.wall, base) for kind in KINDS}
        last = {kind: figs[kind][-1] for kind in KINDS}
        ratio = None
        if all(isinstance(last[k], Figure) for k in KINDS) and last[NATS_SERVER].cpu_us > 0:
            ratio = last[EMBEDDED].cpu_us / last[NATS_SERVER].cpu_us
        flags = []
        ours_g, theirs_g = g[EMBEDDED], g[NATS_SERVER]
        if ours_g is not None and theirs_g is not None and ours_g > GROWTH_LIMIT >= theirs_g:
            flags.append("GROWS")
        if ratio is not None and ratio > CPU_LIMIT:
            flags.append("CPU>2x")
        if any(isinstance(f, str) for k in KINDS for f in figs[k]):
            flags.append("ERROR")
        if any(isinstance(f, Figure) and f.partial for f in figs[EMBEDDED]):
            flags.append("CUT")
        rows.append({"op": op, "figs": figs, "growth": g, "base": base, "ratio": ratio, "flags": flags})
    return rows


def _g(v: float | None, base: int = 0) -> str:
    """A growth; ``ᵐ`` when it is from the middle size (the smallest was under 10 ticks)."""
    return "—" if v is None else f"{v:.2f}×" + ("ᵐ" if base else "")


def print_dimension(dim: Dimension, sizes_run: list[Any], sizes: list[dict[str, Any]]) -> None:
    labels = " / ".join(dim.size_label(s) for s in sizes_run)
    print(f"\n== {dim.title}: {labels} ==")
    head = (
        f"{'operation':52} {'per':15} {'ours CPU µs':>26} {'growth':>7} {'nats CPU µs':>26} {'growth':>7} "
        f"{'ratio':>6} {'ours wall µs':>26} {'nats wall µs':>26}  flags"
    )
    print(head)
    for row in op_rows(dim, sizes):
        op = row["op"]
        cells = {}
        for kind in KINDS:
            cells[kind, True] = " / ".join(fmt_fig(f, True) for f in row["figs"][kind])
            cells[kind, False] = " / ".join(
                fmt_fig(f, False) if op.wall else "n/a" for f in row["figs"][kind]
            )
        ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}"
        print(
            f"{op.label[:52]:52} {op.per[:15]:15} {cells[EMBEDDED, True]:>26} {_g(row['growth'][EMBEDDED], row['base']):>7} "
            f"{cells[NATS_SERVER, True]:>26} {_g(row['growth'][NATS_SERVER], row['base']):>7} {ratio:>6} "
            f"{cells[EMBEDDED, False]:>26} {cells[NATS_SERVER, False]:>26}  {' '.join(row['flags'])}"
        )
    for kind in KINDS:
        rss = " / ".join(f"{s['rss'][kind]['built']:.0f}" for s in sizes)
        end = " / ".join(f"{s['rss'][kind].get('end', 0):.0f}" for s in sizes)
        print(f"  resident memory, {kind}: after the build {rss} MiB; at the end {end} MiB")
    errors = [
        (k, f) for s in sizes for e in s["ops"].values() for k, f in e["figs"].items() if isinstance(f, str)
    ]
    for kind, err in errors[:5]:
        print(f"  {kind}: {err}")


def markdown(dims: list[tuple[Dimension, list[Any], list[dict[str, Any]]]], header: str) -> str:
    out = [header]
    for dim, sizes_run, sizes in dims:
        labels = " / ".join(dim.size_label(s) for s in sizes_run)
        out += [
            f"\n### {dim.title}: {labels}\n",
            "| operation | per | ours CPU µs | growth | nats-server CPU µs | growth | ours/nats at max | "
            "ours wall µs | nats-server wall µs | flags |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
        ]
        for row in op_rows(dim, sizes):
            op = row["op"]
            c = {kind: " / ".join(fmt_fig(f, True) for f in row["figs"][kind]) for kind in KINDS}
            w = {
                kind: " / ".join(fmt_fig(f, False) if op.wall else "n/a" for f in row["figs"][kind])
                for kind in KINDS
            }
            ratio = "—" if row["ratio"] is None else f"{row['ratio']:.2f}"
            flags = " ".join(f"**{f}**" for f in row["flags"])
            out.append(
                f"| {op.label} | {op.per} | {c[EMBEDDED]} | {_g(row['growth'][EMBEDDED], row['base'])} | {c[NATS_SERVER]} | "
                f"{_g(row['growth'][NATS_SERVER], row['base'])} | {ratio} | {w[EMBEDDED]} | {w[NATS_SERVER]} | {flags} |"
            )
        for kind in KINDS:
            rss = " / ".join(f"{s['rss'][kind]['built']:.0f}" for s in sizes)
            end = " / ".join(f"{s['rss'][kind].get('end', 0):.0f}" for s in sizes)
            out.append(f"\nResident memory, {kind}: after the build {rss} MiB; at the end {end} MiB.")
        extra = [(kind, s["extra"].get(kind, {})) for s in sizes for kind in KINDS]
        if any("rss_restart" in e or "disk_mib" in e for _, e in extra):
            for kind in KINDS:
                parts = []
                for s, size in zip(sizes, sizes_run, strict=True):
                    e = s["extra"].get(kind, {})
                    built = s["rss"][kind]["built"] - e.get("rss_empty", s["rss"][kind]["start"])
                    per_msg = built * (1 << 20) / size if isinstance(size, int) else 0
                    parts.append(
                        f"{dim.size_label(size)}: {per_msg:.0f} B/msg resident, disk "
                        f"{e.get('disk_mib', 0):.0f} MiB, after restarts {e.get('rss_restart', 0):.0f} MiB"
                    )
                out.append(f"{kind}: " + "; ".join(parts) + ".")
        errors = [
            (k, f)
            for s in sizes
            for e in s["ops"].values()
            for k, f in e["figs"].items()
            if isinstance(f, str)
        ]
        for kind, err in errors[:5]:
            out.append(f"\n{kind}: `{err}`")
    return "\n".join(out) + "\n"


def to_json(
    dims: list[tuple[Dimension, list[Any], list[dict[str, Any]]]], meta: dict[str, Any]
) -> dict[str, Any]:
    result: dict[str, Any] = {**meta, "dimensions": {}}
    for dim, sizes_run, sizes in dims:
        ops = {}
        for row in op_rows(dim, sizes):
            op = row["op"]
            ops[op.key] = {
                "label": op.label,
                "per": op.per,
                "growth": row["growth"],
                "growth_from_size": row["base"],
                "ratio_at_max": row["ratio"],
                "flags": row["flags"],
                "figures": {
                    kind: [f.__dict__ if isinstance(f, Figure) else f for f in row["figs"][kind]]
                    for kind in KINDS
                },
            }
        result["dimensions"][dim.key] = {
            "title": dim.title,
            "sizes": sizes_run,
            "ops": ops,
            "rss": [s["rss"] for s in sizes],
            "extra": [s["extra"] for s in sizes],
        }
    return result


def _no_run(ctx: Ctx) -> int:
    return 0


def render(path: str, args: argparse.Namespace) -> list[tuple[Dimension, list[Any], list[dict[str, Any]]]]:
    """The dimensions of a ``--json`` file, to print or write as Markdown again (``--render``)."""
    data = json.loads(Path(path).read_text())
    known = {d.key: d for d in dimensions(args)}
    done = []
    for key, saved in data["dimensions"].items():
        dim = known[key]
        sizes: list[dict[str, Any]] = [
            {"ops": {}, "rss": rss, "extra": extra}
            for rss, extra in zip(saved["rss"], saved["extra"], strict=True)
        ]
        for op_key, o in saved["ops"].items():
            op = next((op for op in dim.ops if op.key == op_key), None) or Op(
                op_key, o["label"], o["per"], _no_run
            )
            for kind, figs in o["figures"].items():
                for i, f in enumerate(figs):
                    if f is not None:
                        entry = sizes[i]["ops"].setdefault(op_key, {"op": op, "figs": {}})
                        entry["figs"][kind] = Figure(**f) if isinstance(f, dict) else f
        sizes_run = [tuple(s) if isinstance(s, list) else s for s in saved["sizes"]]
        done.append((dim, sizes_run, sizes))
    return done


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="sizes and counts / 10, one round (smoke run)")
    parser.add_argument("--dim", default="", help="comma-separated dimensions (default: all)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--budget", type=float, default=90.0, help="seconds before an operation is cut")
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.5,
        help="seconds a read-only operation is repeated for (CPU ticks)",
    )
    parser.add_argument(
        "--restarts",
        type=int,
        default=5,
        help="restarts a restart row makes on each server, alternating; its figure is their median",
    )
    parser.add_argument("--consumers-10k", action="store_true", help="consumers at 100 / 1k / 10k")
    parser.add_argument(
        "--messages-50m", action="store_true", help="messages at 500k / 5M / 50M (see the doc)"
    )
    parser.add_argument(
        "--fs-settle",
        type=float,
        default=65.0,
        help="seconds a size waits after the last one removed over 1,000 files (0: no wait)",
    )
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--md", metavar="PATH", help="also write the tables as Markdown")
    parser.add_argument(
        "--render", metavar="JSON", help="no run: print (and --md) the tables of a --json file"
    )
    args = parser.parse_args()
    stop_on_signals()
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        again = render(args.render, args)
        for dim, sizes_run, sizes in again:
            print_dimension(dim, sizes_run, sizes)
        if args.md:
            Path(args.md).write_text(markdown(again, saved["header"]))
        if args.json:
            Path(args.json).write_text(
                json.dumps(to_json(again, {k: saved[k] for k in ("header", "quick")}), indent=1)
            )
        return
    rounds = 1 if args.quick else args.rounds
    chosen = [d for d in dimensions(args) if not args.dim or d.key in args.dim.split(",")]
    unknown = set(args.dim.split(",")) - {d.key for d in dimensions(args)} - {""}
    if unknown:
        parser.error(f"unknown dimension(s): {', '.join(sorted(unknown))}")
    load0, started = load_average(), time.perf_counter()
    done: list[tuple[Dimension, list[Any], list[dict[str, Any]]]] = []
    for dim in chosen:
        sizes_run = dim.quick_sizes if args.quick else dim.sizes
        results = [size_or_error(dim, size, args, rounds, i) for i, size in enumerate(sizes_run)]
        done.append((dim, sizes_run, results))
        print_dimension(dim, sizes_run, results)
        sys.stdout.flush()
    header = (
        f"bench_scale — {time.strftime('%Y-%m-%d %H:%MZ', time.gmtime())}, best of {rounds}, "
        f"a restart the median of {args.restarts}, "
        f"budget {args.budget:.0f} s per operation, load before {load0}, after {load_average()}, "
        f"{(time.perf_counter() - started) / 60:.0f} min"
    )
    print(
        f"\n{header}\nCPU and wall: µs per operation, smallest / middle / largest size; growth: largest / smallest "
        f"(CPU; ᵐ from the middle size: the smallest under 10 ticks); ratio: ours / nats-server CPU at the largest; ~ under 100 ms of CPU (10 ticks); ≥ cut at the budget"
    )
    if args.json:
        Path(args.json).write_text(
            json.dumps(to_json(done, {"header": header, "quick": args.quick}), indent=1)
        )
    if args.md:
        Path(args.md).write_text(markdown(done, header))


if __name__ == "__main__":
    sys.modules.setdefault("bench_scale", sys.modules["__main__"])  # one module for scale_more's dimensions
    main()
