"""Crash loop (issues #15, #27): ``kill -9`` a server again and again under mixed load and check,
after every restart, that nothing acknowledged was lost — confirmed consumer acks included.

Load, all over real TCP with nats-py, while the server is killed every ``--min-seconds`` to
``--max-seconds`` (uniform) and restarted on the same store directory: ``--publishers`` (2)
publishers with ``Nats-Msg-Id`` into stream ORDERS (a publish that gets no answer is retried with
the same id until acknowledged); a pull consumer PULL on ORDERS acking with ``ack_sync`` (each ack
confirmed by the server); a push consumer PUSH on ORDERS acking without a reply (plain acks, a
PING/PONG after each ten: the server has received them); a KV bucket whose keys are updated;
stream SCRATCH published to, with messages deleted and the stream purged. The load pauses from the
kill until the check after the restart is done, so the check sees what survived.

Figures after each restart (the check is incremental, so cycle 100 costs what cycle 1 does):
- confirmed acks lost: how far PULL's ack floor is below the highest sequence up to which every
  ack was confirmed (``ack_sync`` answered) — must be 0 on the embedded server, which answers an
  ack only once it is written; nats-server 2.15.1 answers at once and writes its consumer state up
  to 100 ms later, so there it is reported, not a failure (``--ack-window``: the loss allowed, -1
  any; default 0 embedded, -1 nats-server);
- ack-floor lag: the same for PUSH against the plain acks the server received (written lazily by
  both servers), mean and max over the restarts; a sequence counted at one restart and still below
  the floor at the next (its redelivery not due yet) is not counted again;
- acked messages lost: every ORDERS message acknowledged since the last check is at its
  acknowledged sequence with its payload, ``--samples`` randomly chosen older ones still are, and
  ORDERS (never deleted from) still counts one message per sequence;
- duplicates: no msg id is stored twice (all retries happen well inside the 2 min duplicate
  window): the stream is read once, each cycle from where the last read stopped;
- each KV key's revision is at least its last acknowledged one (revisions monotonic);
- SCRATCH's first sequence never falls below an acknowledged purge, a deleted message stays gone.

Usage: ``python scripts/crash_loop.py --cycles 100`` (``--target nats-server`` for the control).
Prints the figures as JSON; exits 1 on any violation.
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
class AckedUpTo:
    """The acks a client knows reached the server (confirmed, or received: sent before a
    PING/PONG), by stream sequence; ``floor``: every sequence up to it is among them."""

    floor: int = 0
    above: set[int] = field(default_factory=set)

    def add(self, seq: int) -> None:
        if seq <= self.floor:
            return
        self.above.add(seq)
        self._climb()

    def raise_to(self, floor: int) -> None:
        """The server showed ``floor`` in the state it recovered: every ack up to it reached it,
        including those whose answer (or PONG) the kill cut off — without this they would stay
        holes here, never delivered again, and every later lag would read 0."""
        if floor > self.floor:
            self.floor = floor
            self.above = {s for s in self.above if s > floor}
            self._climb()

    def _climb(self) -> None:
        while self.floor + 1 in self.above:
            self.floor += 1
            self.above.discard(self.floor)


@dataclass
class Lag:
    """How far a consumer's ack floor after each restart was below what its client knew was acked."""

    samples: list[int] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        s = self.samples or [0]
        return {"mean": round(sum(s) / len(s), 1), "max": max(s), "total": sum(s)}


@dataclass
class Record:
    """What the server acknowledged (the truth the checks hold it to)."""

    acked: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # msg id -> (seq, payload)
    log: list[tuple[str, int, bytes]] = field(default_factory=list)  # the same, in acknowledgement order
    checked: int = 0  # log entries verified by a check
    read_upto: int = 0  # ORDERS read (for duplicates) up to this sequence
    seen: dict[bytes, int] = field(default_factory=dict)  # payload -> the sequence it was read at
    # consumer -> (acked up to, ack floor) at the last check
    last_seen: dict[str, tuple[int, int]] = field(default_factory=dict)
    acked_up_to: dict[str, AckedUpTo] = field(default_factory=lambda: {"PULL": AckedUpTo(), "PUSH": AckedUpTo()})
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
    lag: dict[str, Lag] = field(default_factory=lambda: {"PULL": Lag(), "PUSH": Lag()})
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
    # A short ack wait: what a kill left unacknowledged comes back soon, so the floors move on.
    await js.add_consumer("ORDERS", durable_name="PULL", ack_policy="explicit", ack_wait=2)
    await js.add_consumer(
        "ORDERS", durable_name="PUSH", ack_policy="explicit", ack_wait=2, deliver_subject="push.orders"
    )
    await js.create_key_value(bucket="cl", history=1)
    await nc.close()


@dataclass
class Load:
    """What every worker shares: the server's URL, the record, the stop flag and the gate (clear
    from a kill until the check after the restart is done)."""

    url: str
    rec: Record
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    gate: asyncio.Event = field(default_factory=asyncio.Event)


async def publisher(load: Load, n: int, rate: float) -> None:
    pause = 1.0 / rate if rate > 0 else 0.0
    rec = load.rec
    nc = await connect(load.url)
    js = nc.jetstream(timeout=1.0)
    i = 0
    try:
        while not load.stop.is_set():
            msg_id = f"p{n}-{len(rec.acked)}-{i}"
            payload = msg_id.encode()
            while not load.stop.is_set():
                await load.gate.wait()
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


async def pull_worker(load: Load) -> None:
    """Fetch from PULL and ack each message with ``ack_sync``: an answered ack is confirmed."""
    nc = await connect(load.url)
    js = nc.jetstream(timeout=2.0)
    confirmed = load.rec.acked_up_to["PULL"]
    try:
        sub = await js.pull_subscribe_bind("PULL", stream="ORDERS")
        while not load.stop.is_set():
            await load.gate.wait()
            try:
                for m in await sub.fetch(20, timeout=0.5):
                    if not load.gate.is_set():
                        break  # killed meanwhile: the rest come back after the restart
                    await m.ack_sync(timeout=1.0)
                    confirmed.add(m.metadata.sequence.stream)
                    load.rec.acks += 1
            except Exception:  # RETRYABLE ones and any other answer a restarting server gives
                await asyncio.sleep(0.05)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def push_worker(load: Load) -> None:
    """Ack PUSH's deliveries without a reply (plain acks), a PING/PONG after every ten: the acks
    before a PONG were received. Deliveries queued before a kill are dropped (the new server may
    not know of them: their ack would be ignored, not lag; they come again)."""
    nc = await connect(load.url)
    rec = load.rec
    received = rec.acked_up_to["PUSH"]
    sent: list[int] = []
    try:
        sub = await nc.subscribe("push.orders")
        while not load.stop.is_set():
            if not load.gate.is_set():
                sent.clear()
                await load.gate.wait()
                for _ in range(sub.pending_msgs):  # what the killed server delivered
                    with contextlib.suppress(*RETRYABLE):
                        await sub.next_msg(timeout=0.01)
            try:
                m = await sub.next_msg(timeout=0.2)
            except RETRYABLE:
                m = None
            if m is not None and m.reply:
                tokens = m.reply.split(".")  # $JS.ACK.<stream>.<consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>
                if len(tokens) == 9:
                    with contextlib.suppress(*RETRYABLE):
                        await nc.publish(m.reply, b"+ACK")
                        sent.append(int(tokens[5]))
            if len(sent) >= 10 or (m is None and sent):
                batch, sent = sent, []
                with contextlib.suppress(*RETRYABLE):
                    await nc.flush(timeout=1)
                    if load.gate.is_set():  # (not a PONG of the killed server's)
                        for seq in batch:
                            received.add(seq)
                        rec.acks += len(batch)
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def kv_worker(load: Load) -> None:
    rec = load.rec
    nc = await connect(load.url)
    js = nc.jetstream(timeout=1.0)
    try:
        kv = None
        while not load.stop.is_set():
            await load.gate.wait()
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


async def scratch_worker(load: Load) -> None:
    rec = load.rec
    nc = await connect(load.url)
    js = nc.jetstream(timeout=1.0)
    try:
        while not load.stop.is_set():
            await load.gate.wait()
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
            known = rec.acked_up_to[name].floor
            # The sequences acked but above the floor, less those the last restart counted and
            # that are still there (redelivered only after the ack wait): each loss counted once.
            before_known, before_floor = rec.last_seen.get(name, (0, 0))
            again = max(0, min(known, before_known) - max(floor, before_floor))
            lag = max(0, known - floor) - again
            rec.last_seen[name] = (known, floor)
            fig.lag[name].samples.append(lag)
            if name == "PULL" and 0 <= ack_window < lag:
                problems.append(f"{lag} confirmed acks lost: PULL's ack floor {floor}, all acks up to {known} confirmed")
            rec.acked_up_to[name].raise_to(floor)
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


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """The loop; its figures (`summarize`), ``failures`` counting the violations."""
    server = Server(args.target, workdir)
    server.start()
    await wait_ready(server.url)
    await setup(server.url)
    rec, fig = Record(), Figures()
    load = Load(server.url, rec)
    load.gate.set()
    tasks = [asyncio.create_task(publisher(load, n, args.rate)) for n in range(args.publishers)]
    tasks += [asyncio.create_task(w(load)) for w in (pull_worker, push_worker, kv_worker, scratch_worker)]
    failures: list[str] = []
    started = time.monotonic()
    finished = False
    try:
        for cycle in range(1, args.cycles + 1):
            await asyncio.sleep(random.uniform(args.min_seconds, args.max_seconds))
            server.kill()
            load.gate.clear()  # (no await between: the load runs up to the kill)
            t0 = time.monotonic()
            server.start()
            await wait_ready(server.url)
            fig.recovery_s.append(time.monotonic() - t0)
            problems = await check(server.url, rec, fig, args.ack_window, args.samples)
            load.gate.set()
            fig.cycles = cycle
            if problems:
                failures += [f"cycle {cycle}: {p}" for p in problems]
                print(f"cycle {cycle}: " + "; ".join(problems), flush=True)
            elif args.verbose:
                print(
                    f"cycle {cycle}: ok ({len(rec.acked)} acked, lag PULL {fig.lag['PULL'].samples[-1]}"
                    f" PUSH {fig.lag['PUSH'].samples[-1]}, restart {fig.recovery_s[-1]:.2f} s,"
                    f" check {fig.check_s[-1]:.2f} s)",
                    flush=True,
                )
            if failures and args.stop_on_failure:
                break
        finished = True
    finally:
        load.stop.set()
        load.gate.set()
        await asyncio.wait(tasks, timeout=10)
        server.stop()
        if not args.workdir and finished and not failures:
            shutil.rmtree(workdir, ignore_errors=True)
    return summarize(args, rec, fig, time.monotonic() - started, len(failures))


def summarize(args: argparse.Namespace, rec: Record, fig: Figures, elapsed: float, failures: int) -> dict[str, Any]:
    """The figures of a run (what the README's table quotes)."""
    rs = sorted(fig.recovery_s) or [0.0]
    cs = sorted(fig.check_s) or [0.0]
    return {
        "target": args.target,
        "cycles": fig.cycles,
        "seconds": round(elapsed, 1),
        "load_avg_1m": round(os.getloadavg()[0], 1),
        "acked_publishes": len(rec.acked),
        "publish_retries": rec.retries,
        "consumer_acks": rec.acks,
        "confirmed_acks": rec.acked_up_to["PULL"].floor,
        "kv_puts": rec.kv_puts,
        "scratch_deletes": len(rec.deleted),
        "verified_new": fig.verified_new,
        "verified_samples": fig.verified_samples,
        "read_for_duplicates": fig.read_msgs,
        "confirmed_acks_lost": fig.lag["PULL"].summary(),
        "plain_ack_floor_lag": fig.lag["PUSH"].summary(),
        "lost_acknowledged": fig.lost,
        "duplicates": fig.duplicates,
        "kv_revisions_back": fig.kv_back,
        "scratch_violations": fig.scratch_violations,
        "server_reported_lost": fig.lost_reported,
        "sequence_holes": fig.holes,
        "restart_s_median": round(rs[len(rs) // 2], 2),
        "restart_s_max": round(rs[-1], 2),
        "check_s_median": round(cs[len(cs) // 2], 2),
        "check_s_max": round(cs[-1], 2),
        "failures": failures,
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=100)
    p.add_argument("--min-seconds", type=float, default=0.5, help="least load time between kills")
    p.add_argument("--max-seconds", type=float, default=2.5, help="most load time between kills")
    p.add_argument("--publishers", type=int, default=2)
    p.add_argument("--rate", type=float, default=0.0, help="max publishes/s per publisher (0: no limit)")
    p.add_argument("--target", choices=["embedded", "nats-server"], default="embedded")
    p.add_argument(
        "--ack-window", type=int, default=None, help="confirmed acks a restart may lose (-1: any; default 0 embedded)"
    )
    p.add_argument("--samples", type=int, default=200, help="older acknowledged messages re-read per check")
    p.add_argument("--workdir", default="")
    p.add_argument("--stop-on-failure", action="store_true")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    if args.ack_window is None:
        args.ack_window = 0 if args.target == "embedded" else -1
    return args


def crash_loop(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the loop as the command line says; its figures."""
    args = parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="crash_loop_"))
    workdir.mkdir(parents=True, exist_ok=True)
    return asyncio.run(run(args, workdir))


def main(argv: list[str] | None = None) -> int:
    summary = crash_loop(argv)
    print(json.dumps(summary, indent=1))
    return 1 if summary["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
