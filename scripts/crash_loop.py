"""Crash loop (issue #15): ``kill -9`` a server again and again under mixed load and check, after
every restart, that nothing acknowledged was lost.

Load, all over real TCP with nats-py, while the server is killed every ``--seconds``:
publishers with ``Nats-Msg-Id`` into stream ORDERS (a publish that gets no answer is retried with
the same id until acknowledged); a pull consumer and a push consumer on ORDERS acking with
``ack_sync`` (the ack is answered, so it is durable); a KV bucket whose keys are updated; stream
SCRATCH published to, with messages deleted and the stream purged.

Checks after each restart (incremental, so cycle 100 costs what cycle 1 does):
- every ORDERS message acknowledged since the last check is at its acknowledged sequence with its
  payload, and ``--samples`` randomly chosen older ones still are; ORDERS (never deleted from) still
  counts one message per sequence, so an old message that vanished shows up even if not sampled;
- no msg id is stored twice (all retries happen well inside the 2 min duplicate window): the
  stream is read once, each cycle from where the last read stopped, and every payload seen is kept;
- a consumer's ack floor never moves back by more than ``--ack-window`` (0: an answered ack is
  durable in the embedded server; nats-server writes consumer state asynchronously: its figures
  are reported, pass ``--ack-window`` to bound them);
- each KV key's revision is at least its last acknowledged one (revisions monotonic);
- SCRATCH's first sequence never falls below an acknowledged purge, a deleted message stays gone.

Usage: ``python scripts/crash_loop.py --cycles 100`` (``--target nats-server`` for the control).
Prints the figures; exits 1 on any violation.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nats
import nats.errors
from nats.js.errors import APIError, NotFoundError

from pyjetstream.testing.process import ServerProcess, free_port, port_answers, server_command

RETRYABLE = (
    TimeoutError,
    asyncio.TimeoutError,
    nats.errors.TimeoutError,
    nats.errors.NoRespondersError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    APIError,
    OSError,
)


class Server:
    """One server process on a fixed port and store directory; ``kill()`` is ``kill -9``."""

    def __init__(self, target: str, workdir: Path) -> None:
        self.target = target
        self.workdir = workdir
        self.port = free_port()
        args = [*server_command(target), "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", str(workdir / "store")]
        self.process = ServerProcess(args, workdir / "server.log")

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self) -> None:
        if not self.process.start(lambda: port_answers(self.port), timeout=60):
            raise RuntimeError(f"{self.target} did not start; see {self.workdir / 'server.log'}")

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.stop()


@dataclass
class Record:
    """What the server acknowledged (the truth the checks hold it to)."""

    acked: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # msg id -> (seq, payload)
    log: list[tuple[str, int, bytes]] = field(default_factory=list)  # the same, in acknowledgement order
    checked: int = 0  # log entries verified by a check
    read_upto: int = 0  # ORDERS read (for duplicates) up to this sequence
    seen: dict[bytes, int] = field(default_factory=dict)  # payload -> the sequence it was read at
    ack_floor: dict[str, int] = field(default_factory=dict)  # consumer -> highest floor seen
    kv_rev: dict[str, int] = field(default_factory=dict)  # key -> last acknowledged revision
    purged_to: int = 0  # SCRATCH first seq after the last acknowledged purge
    deleted: set[int] = field(default_factory=set)  # SCRATCH seqs deleted with an answer
    publishes: int = 0
    acks: int = 0
    kv_puts: int = 0
    retries: int = 0


@dataclass
class Figures:
    cycles: int = 0
    lost: int = 0
    duplicates: int = 0
    ack_floor_back: int = 0  # the largest step back seen
    kv_back: int = 0
    scratch_violations: int = 0
    lost_reported: int = 0  # messages the server itself reported in `lost`
    verified_new: int = 0  # acknowledged messages checked the cycle after they were acknowledged
    verified_samples: int = 0  # older acknowledged messages checked again at random
    read_msgs: int = 0  # stream messages read for the duplicate check
    holes: int = 0  # checks where ORDERS counted fewer messages than sequences
    check_s: list[float] = field(default_factory=list)
    recovery_s: list[float] = field(default_factory=list)


async def _quiet(exc: Exception) -> None:
    """The connection drops at every kill: expected, not worth a traceback."""


async def connect(url: str) -> nats.NATS:
    return await nats.connect(
        url,
        reconnect_time_wait=0.05,
        max_reconnect_attempts=-1,
        connect_timeout=2,
        allow_reconnect=True,
        error_cb=_quiet,
    )


async def wait_ready(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            nc = await nats.connect(url, allow_reconnect=False, connect_timeout=1)
            try:
                await nc.jetstream(timeout=2).account_info()
                return
            finally:
                await nc.close()
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def setup(url: str) -> None:
    nc = await nats.connect(url)
    js = nc.jetstream(timeout=5)
    await js.add_stream(name="ORDERS", subjects=["orders.>"])
    await js.add_stream(name="SCRATCH", subjects=["scratch.>"])
    await js.add_consumer("ORDERS", durable_name="PULL", ack_policy="explicit")
    await js.add_consumer("ORDERS", durable_name="PUSH", ack_policy="explicit", deliver_subject="push.orders")
    await js.create_key_value(bucket="cl", history=1)
    await nc.close()


async def publisher(url: str, n: int, rec: Record, stop: asyncio.Event, rate: float) -> None:
    pause = 1.0 / rate if rate > 0 else 0.0
    nc = await connect(url)
    js = nc.jetstream(timeout=1.0)
    i = 0
    try:
        while not stop.is_set():
            msg_id = f"p{n}-{len(rec.acked)}-{i}"
            payload = msg_id.encode()
            while not stop.is_set():
                try:
                    ack = await js.publish(f"orders.{n}", payload, headers={"Nats-Msg-Id": msg_id})
                    rec.acked[msg_id] = (ack.seq, payload)
                    rec.log.append((msg_id, ack.seq, payload))
                    rec.publishes += 1
                    if pause:
                        await asyncio.sleep(pause)
                    break
                except RETRYABLE:
                    rec.retries += 1
                    await asyncio.sleep(0.05)
            i += 1
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def pull_worker(url: str, rec: Record, stop: asyncio.Event) -> None:
    nc = await connect(url)
    js = nc.jetstream(timeout=2.0)
    try:
        sub = await js.pull_subscribe_bind("PULL", stream="ORDERS")
        while not stop.is_set():
            try:
                for m in await sub.fetch(20, timeout=0.5):
                    await m.ack_sync(timeout=1.0)
                    rec.acks += 1
            except Exception:  # RETRYABLE ones and any other answer a restarting server gives
                await asyncio.sleep(0.05)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def push_worker(url: str, rec: Record, stop: asyncio.Event) -> None:
    nc = await connect(url)
    try:
        sub = await nc.subscribe("push.orders")
        while not stop.is_set():
            try:
                m = await sub.next_msg(timeout=0.5)
            except RETRYABLE:
                continue
            if not m.reply:
                continue
            with contextlib.suppress(*RETRYABLE):
                await nc.request(m.reply, b"+ACK", timeout=1.0)  # ack_sync: answered, so durable
                rec.acks += 1
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def kv_worker(url: str, rec: Record, stop: asyncio.Event) -> None:
    nc = await connect(url)
    js = nc.jetstream(timeout=1.0)
    try:
        kv = None
        while not stop.is_set():
            try:
                if kv is None:
                    kv = await js.key_value("cl")
                key = f"k{random.randrange(5)}"
                rev = await kv.put(key, str(time.time_ns()).encode())
                if rev < rec.kv_rev.get(key, 0):
                    rec.kv_rev[f"!{key}"] = rev  # an answered revision below an earlier one
                rec.kv_rev[key] = max(rev, rec.kv_rev.get(key, 0))
                rec.kv_puts += 1
            except RETRYABLE:
                await asyncio.sleep(0.05)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def scratch_worker(url: str, rec: Record, stop: asyncio.Event) -> None:
    nc = await connect(url)
    js = nc.jetstream(timeout=1.0)
    try:
        while not stop.is_set():
            try:
                acks = [await js.publish("scratch.x", b"s") for _ in range(5)]
                roll = random.random()
                if roll < 0.1:
                    await js.purge_stream("SCRATCH")
                    info = await js.stream_info("SCRATCH")
                    rec.purged_to = max(rec.purged_to, info.state.last_seq + 1 if not info.state.messages else 0)
                elif roll < 0.5:
                    seq = acks[random.randrange(len(acks))].seq
                    if await js.delete_msg("SCRATCH", seq):
                        rec.deleted.add(seq)
            except Exception:  # RETRYABLE ones and any other answer a restarting server gives
                await asyncio.sleep(0.05)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def read_range(js: Any, stream: str, first: int, last: int) -> dict[int, bytes]:
    """The stream's messages ``first..last`` by sequence, through an ephemeral AckNone pull consumer
    starting at ``first``."""
    out: dict[int, bytes] = {}
    if last < first:
        return out
    config = nats.js.api.ConsumerConfig(
        ack_policy="none", deliver_policy="by_start_sequence", opt_start_seq=first, inactive_threshold=30
    )
    sub = await js.pull_subscribe("", stream=stream, config=config)
    top = first - 1
    try:
        while top < last:
            try:
                msgs = await sub.fetch(500, timeout=2.0)
            except nats.errors.TimeoutError:
                break
            for m in msgs:
                seq = m.metadata.sequence.stream
                top = max(top, seq)
                if seq <= last:
                    out[seq] = m.data
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
    return out


async def check(url: str, rec: Record, fig: Figures, ack_window: int, samples: int) -> list[str]:
    problems: list[str] = []
    nc = await nats.connect(url, allow_reconnect=False)
    js = nc.jetstream(timeout=5)
    t0 = time.monotonic()
    try:
        info = await js.stream_info("ORDERS")
        if info.state.lost is not None and info.state.lost.msgs:
            fig.lost_reported += len(info.state.lost.msgs)
        state = info.state
        if state.messages and state.messages != state.last_seq - state.first_seq + 1:
            fig.holes += 1
            problems.append(
                f"ORDERS counts {state.messages} messages for sequences {state.first_seq}..{state.last_seq}"
            )
        # What was acknowledged since the last check (the log only grows; later entries wait for
        # the next check), and the stream from where the last read stopped up to the highest of them.
        new = rec.log[rec.checked :]
        upto = max((seq for _, seq, _ in new), default=0)
        first = min([rec.read_upto + 1, *(seq for _, seq, _ in new)])
        stored = await read_range(js, "ORDERS", first, upto)
        fig.read_msgs += len(stored)
        dups = 0
        for seq, data in stored.items():
            at = rec.seen.setdefault(data, seq)
            if at != seq:
                dups += 1
        rec.read_upto = max(rec.read_upto, upto)
        lost = [mid for mid, seq, payload in new if stored.get(seq) != payload]
        # Older acknowledged messages, at random: each still at its sequence (STREAM.MSG.GET).
        old = rec.log[: rec.checked]
        for mid, seq, payload in random.sample(old, min(samples, len(old))):
            try:
                got = (await js.get_msg("ORDERS", seq)).data
            except NotFoundError:
                got = None
            if got != payload:
                lost.append(mid)
            fig.verified_samples += 1
        rec.checked += len(new)
        fig.verified_new += len(new)
        fig.duplicates += dups
        fig.lost += len(lost)
        if lost:
            problems.append(f"{len(lost)} acknowledged messages lost, e.g. {lost[:3]}")
        if dups:
            problems.append(f"{dups} duplicate msg ids stored")
        for name in ("PULL", "PUSH"):
            try:
                ci = await js.consumer_info("ORDERS", name)
            except NotFoundError:
                problems.append(f"consumer {name} is gone")
                continue
            floor = ci.ack_floor.stream_seq if ci.ack_floor else 0
            before = rec.ack_floor.get(name, 0)
            back = before - floor
            if back > 0:
                fig.ack_floor_back = max(fig.ack_floor_back, back)
                if back > ack_window:
                    problems.append(f"consumer {name} ack floor moved back {before} -> {floor}")
            rec.ack_floor[name] = max(before, floor)
        kv = await js.key_value("cl")
        for key, rev in list(rec.kv_rev.items()):
            if key.startswith("!"):
                problems.append(f"KV {key[1:]} answered revision {rev} below an earlier one")
                del rec.kv_rev[key]
                continue
            try:
                entry = await kv.get(key)
                got = entry.revision or 0
            except Exception:
                got = 0
            if got < rev:
                fig.kv_back += 1
                problems.append(f"KV {key} revision {got} < acknowledged {rev}")
        sinfo = await js.stream_info("SCRATCH")
        if sinfo.state.messages and sinfo.state.first_seq < rec.purged_to:
            fig.scratch_violations += 1
            problems.append(f"SCRATCH first seq {sinfo.state.first_seq} below purge point {rec.purged_to}")
        sample = sorted(s for s in rec.deleted if s >= sinfo.state.first_seq)[-20:]
        for seq in sample:
            with contextlib.suppress(NotFoundError):
                await js.get_msg("SCRATCH", seq)
                fig.scratch_violations += 1
                problems.append(f"SCRATCH message {seq} deleted, back after restart")
    finally:
        await nc.close()
    fig.check_s.append(time.monotonic() - t0)
    return problems


async def run(args: argparse.Namespace, workdir: Path) -> int:
    server = Server(args.target, workdir)
    server.start()
    await wait_ready(server.url)
    await setup(server.url)
    rec, fig = Record(), Figures()
    stop = asyncio.Event()
    tasks = [asyncio.create_task(publisher(server.url, n, rec, stop, args.rate)) for n in range(args.publishers)]
    tasks += [
        asyncio.create_task(pull_worker(server.url, rec, stop)),
        asyncio.create_task(push_worker(server.url, rec, stop)),
        asyncio.create_task(kv_worker(server.url, rec, stop)),
        asyncio.create_task(scratch_worker(server.url, rec, stop)),
    ]
    failures: list[str] = []
    started = time.monotonic()
    finished = False
    try:
        for cycle in range(1, args.cycles + 1):
            await asyncio.sleep(args.seconds * random.uniform(0.5, 1.5))
            server.kill()
            t0 = time.monotonic()
            server.start()
            await wait_ready(server.url)
            fig.recovery_s.append(time.monotonic() - t0)
            problems = await check(server.url, rec, fig, args.ack_window, args.samples)
            fig.cycles = cycle
            if problems:
                failures += [f"cycle {cycle}: {p}" for p in problems]
                print(f"cycle {cycle}: " + "; ".join(problems), flush=True)
            elif args.verbose:
                print(
                    f"cycle {cycle}: ok ({len(rec.acked)} acked, restart {fig.recovery_s[-1]:.2f} s,"
                    f" check {fig.check_s[-1]:.2f} s)",
                    flush=True,
                )
            if failures and args.stop_on_failure:
                break
        finished = True
    finally:
        stop.set()
        await asyncio.wait(tasks, timeout=10)
        server.stop()
        if not args.workdir and finished and not failures:
            shutil.rmtree(workdir, ignore_errors=True)
    elapsed = time.monotonic() - started
    rs = sorted(fig.recovery_s) or [0.0]
    cs = sorted(fig.check_s) or [0.0]
    summary = {
        "target": args.target,
        "cycles": fig.cycles,
        "seconds": round(elapsed, 1),
        "load_avg_1m": round(os.getloadavg()[0], 1),
        "acked_publishes": len(rec.acked),
        "publish_retries": rec.retries,
        "consumer_acks": rec.acks,
        "kv_puts": rec.kv_puts,
        "scratch_deletes": len(rec.deleted),
        "verified_new": fig.verified_new,
        "verified_samples": fig.verified_samples,
        "read_for_duplicates": fig.read_msgs,
        "lost_acknowledged": fig.lost,
        "duplicates": fig.duplicates,
        "max_ack_floor_step_back": fig.ack_floor_back,
        "kv_revisions_back": fig.kv_back,
        "scratch_violations": fig.scratch_violations,
        "server_reported_lost": fig.lost_reported,
        "sequence_holes": fig.holes,
        "restart_s_median": round(rs[len(rs) // 2], 2),
        "restart_s_max": round(rs[-1], 2),
        "check_s_median": round(cs[len(cs) // 2], 2),
        "check_s_max": round(cs[-1], 2),
        "failures": len(failures),
    }
    print(json.dumps(summary, indent=1))
    return 1 if failures else 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=100)
    p.add_argument("--seconds", type=float, default=1.0, help="mean load time between kills")
    p.add_argument("--publishers", type=int, default=3)
    p.add_argument("--rate", type=float, default=200.0, help="max publishes/s per publisher (0: no limit)")
    p.add_argument("--target", choices=["embedded", "nats-server"], default="embedded")
    p.add_argument("--ack-window", type=int, default=0, help="allowed ack floor step back")
    p.add_argument("--samples", type=int, default=200, help="older acknowledged messages re-read per check")
    p.add_argument("--workdir", default="")
    p.add_argument("--stop-on-failure", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="crash_loop_"))
    workdir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(run(args, workdir))


if __name__ == "__main__":
    sys.exit(main())
